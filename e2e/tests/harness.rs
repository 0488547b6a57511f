//! The harness itself: a cluster starts, serves, installs and deletes CRDs,
//! tears down without leftovers, keeps logs of a failed test, and fails
//! loudly when no control plane can be had.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, ensure};
use e2e::{Backend, TestCluster};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, GroupVersionKind, PostParams};
use kube::discovery::ApiResource;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[tokio::test]
async fn an_empty_cluster_serves_and_its_kubeconfig_reaches_the_same_server() -> Result<()> {
    e2e::init_tracing();
    let cluster = TestCluster::start_empty().await?;
    eprintln!(
        "cluster {:?} ready in {:?}",
        cluster.server_version().git_version,
        cluster.startup_time()
    );
    assert!(cluster.installed_crds().is_empty());
    if *cluster.backend() == Backend::Local {
        let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
        assert!(crds.list(&Default::default()).await?.items.is_empty());
    }

    let namespace = cluster.create_namespace("harness").await?;
    let name = e2e::unique_name("cm");
    let config_maps: Api<ConfigMap> = Api::namespaced(cluster.client(), &namespace);
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.clone());
    cm.data = Some([("answer".to_owned(), "42".to_owned())].into());
    config_maps.create(&PostParams::default(), &cm).await?;

    // A second client, built only from the kubeconfig file, sees the object:
    // the file is what a provider binary or kubectl would be given.
    let kubeconfig = kube::config::Kubeconfig::read_from(cluster.kubeconfig())?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    let other: Api<ConfigMap> = Api::namespaced(kube::Client::try_from(config)?, &namespace);
    let read = other.get(&name).await?;
    assert_eq!(read.data.unwrap()["answer"], "42");
    Ok(())
}

#[tokio::test]
async fn a_single_crd_installs_serves_objects_and_deletes_with_them() -> Result<()> {
    e2e::init_tracing();
    let cluster = TestCluster::start_empty().await?;
    let names = cluster
        .install_crd_files(&[fixture("widgets.e2e.fakecloud.dev.yaml")])
        .await?;
    assert_eq!(names, ["widgets.e2e.fakecloud.dev"]);

    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("e2e.fakecloud.dev", "v1", "Widget"),
        "widgets",
    );
    let namespace = cluster.create_namespace("widgets").await?;
    let widgets: Api<DynamicObject> = Api::namespaced_with(cluster.client(), &namespace, &resource);
    let name = e2e::unique_name("widget");
    let widget: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "e2e.fakecloud.dev/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": 3},
    }))?;
    widgets.create(&PostParams::default(), &widget).await?;

    // The schema is enforced: a wrong type is rejected by the server.
    let mut bad = widget.clone();
    bad.metadata.name = Some(e2e::unique_name("bad"));
    bad.data["spec"]["size"] = "three".into();
    let err = widgets
        .create(&PostParams::default(), &bad)
        .await
        .expect_err("a string size must be rejected");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422),
        "unexpected error {err}"
    );

    cluster.delete_crd("widgets.e2e.fakecloud.dev").await?;
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    assert!(crds.get_opt("widgets.e2e.fakecloud.dev").await?.is_none());
    let gone = widgets.list(&Default::default()).await;
    assert!(
        matches!(&gone, Err(kube::Error::Api(s)) if s.code == 404),
        "the kind must no longer be served: {gone:?}"
    );
    // Deleting what is already gone is not an error.
    cluster.delete_crd("widgets.e2e.fakecloud.dev").await?;
    Ok(())
}

#[tokio::test]
async fn a_typed_crd_installs_with_cel_rules_kept_or_stripped_by_server_version() -> Result<()> {
    e2e::init_tracing();
    let cluster = TestCluster::start_empty().await?;
    let yaml = std::fs::read_to_string(fixture("widgets.e2e.fakecloud.dev.yaml"))?;
    let typed: CustomResourceDefinition = serde_yaml::from_str(&yaml)?;
    let name = cluster.install_crd(&typed).await?;
    assert_eq!(name, "widgets.e2e.fakecloud.dev");

    let served = Api::<CustomResourceDefinition>::all(cluster.client())
        .get(&name)
        .await?;
    let established = served
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Established" && c.status == "True");
    assert!(established, "{name} is not Established");
    let rules = e2e::crds::strip_cel_rules(&mut serde_json::to_value(&served.spec)?);
    let expected = if cluster.supports_cel_rules() { 1 } else { 0 };
    assert_eq!(
        rules,
        expected,
        "CEL rules on a {:?} server",
        cluster.server_version().git_version
    );
    cluster.delete_crd(&name).await?;
    Ok(())
}

#[tokio::test]
async fn dropping_the_cluster_kills_every_process_and_removes_its_files() -> Result<()> {
    e2e::init_tracing();
    let cluster = TestCluster::start_empty().await?;
    if *cluster.backend() != Backend::Local {
        // Nothing of ours runs for an existing cluster; the check below is
        // about the local control plane only, so say so rather than pass.
        anyhow::bail!("this test needs the local backend (unset E2E_KUBECONFIG/E2E_CLUSTER)");
    }
    let pids = cluster.process_ids();
    assert_eq!(
        pids.len(),
        3,
        "etcd, kube-apiserver, kube-controller-manager"
    );
    let logs = cluster.logs_dir().context("local backend has logs")?;
    assert!(logs.join("kube-apiserver.log").is_file());
    for pid in &pids {
        assert!(alive(*pid), "{pid} should run while the cluster lives");
    }
    drop(cluster);
    for pid in &pids {
        assert!(!alive(*pid), "process {pid} survived the teardown");
    }
    assert!(
        !logs.exists(),
        "{logs:?} should be removed after a passing test"
    );
    Ok(())
}

#[test]
fn a_failed_test_keeps_the_control_plane_logs() -> Result<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    let failed = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let cluster = runtime.block_on(TestCluster::start_empty()).unwrap();
        tx.send(cluster.logs_dir()).unwrap();
        panic!("a test assertion failed");
    })
    .join();
    assert!(failed.is_err(), "the thread was meant to panic");
    let logs = rx
        .recv()?
        .context("this test needs the local backend (it has logs)")?;
    let apiserver_log = std::fs::read_to_string(logs.join("kube-apiserver.log"))?;
    let kept = logs.parent().unwrap().to_path_buf();
    std::fs::remove_dir_all(&kept)?;
    ensure!(
        !apiserver_log.is_empty(),
        "kept kube-apiserver.log should hold the server's output"
    );
    Ok(())
}

/// Runs the `e2e-cluster` binary with `env` and expects it to fail at once.
fn run_cluster_binary_expecting_failure(env: &[(&str, &str)]) -> Result<String> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_e2e-cluster"));
    command
        .env_remove("E2E_KUBECONFIG")
        .env_remove("E2E_CLUSTER")
        .env_remove("KUBEBUILDER_ASSETS");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output()?;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    ensure!(
        !output.status.success(),
        "must fail, not succeed or skip; stderr:\n{stderr}"
    );
    Ok(stderr)
}

#[test]
fn missing_binaries_fail_loudly_with_the_provisioning_command() -> Result<()> {
    let empty = tempfile::tempdir()?;
    let stderr = run_cluster_binary_expecting_failure(&[
        ("KUBEBUILDER_ASSETS", empty.path().to_str().unwrap()),
        (e2e::assets::CACHE_SWITCH_ENV, "off"),
    ])?;
    assert!(
        stderr.contains("control-plane binaries not found"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{} lacks etcd, kube-apiserver, kube-controller-manager",
            empty.path().display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("e2e/control-plane/install.sh"), "{stderr}");
    Ok(())
}

#[test]
fn k3s_without_a_docker_engine_fails_loudly() -> Result<()> {
    let stderr = run_cluster_binary_expecting_failure(&[
        ("E2E_CLUSTER", "k3s"),
        ("DOCKER_HOST", "unix:///nonexistent/docker.sock"),
    ])?;
    assert!(
        stderr.contains("E2E_CLUSTER=k3s: could not start K3s"),
        "{stderr}"
    );
    assert!(stderr.contains("Docker engine"), "{stderr}");
    Ok(())
}

#[test]
fn an_unknown_backend_name_fails_loudly() -> Result<()> {
    let stderr = run_cluster_binary_expecting_failure(&[("E2E_CLUSTER", "minikube")])?;
    assert!(stderr.contains("\"minikube\" is not one of"), "{stderr}");
    Ok(())
}

fn alive(pid: u32) -> bool {
    // A zombie still has a /proc entry; only live states count.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}
