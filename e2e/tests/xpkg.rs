//! The Crossplane package (issue 15), built by `xpkg` from the real
//! provider image, checked by tools nobody here wrote (skopeo, umoci,
//! Docker, Debian's docker-registry) and read back as Crossplane's package
//! manager reads it, its CRDs installed on a real API server.
//!
//! Needs a Docker engine, the provider image `fakecloud-provider/provider:dev`
//! (made by `scripts/images`, then `scripts/host-images`, which these tests
//! run when it is missing) and Debian's `skopeo`, `umoci` and
//! `docker-registry`. Without any of them these tests fail, naming what is
//! missing; they never skip.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use apis::kinds::{DatabaseInstance, NodeGroup, Subnet, Vpc};
use crossplane_types::Managed;
use e2e::ClusterError;
use e2e::TestCluster;
use e2e::containers::{PROVIDER_IMAGE, build_images, ensure_images};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use kube::api::Api;
use serde_json::Value;
use xpkg::read::{FoundIn, read_docker_archive, read_oci_layout};
use xpkg::{BaseImage, BuildOptions, Built};

/// Builds the package from the provider image into `out`. A missing image
/// is made first, as the other Docker tests do (scripts/test makes the
/// images before any test runs, so there it is present and current).
fn build_package(out: &Path) -> Result<Built> {
    match ensure_images(&[PROVIDER_IMAGE]) {
        Err(ClusterError::ImageMissing { .. }) => {
            build_images()?;
            ensure_images(&[PROVIDER_IMAGE])?;
        }
        other => other?,
    }
    let (repository, tag) = PROVIDER_IMAGE;
    Ok(xpkg::build(&BuildOptions {
        base: BaseImage::Docker(format!("{repository}:{tag}")),
        package_dir: e2e::crds::package_dir(),
        out_dir: out.to_path_buf(),
        repository: xpkg::DEFAULT_REPOSITORY.to_owned(),
    })?)
}

/// The error of a tool that could not be started: when it is not
/// installed, which Debian package has it.
fn start_error(tool: &str, apt_package: &str, error: std::io::Error) -> anyhow::Error {
    if error.kind() == std::io::ErrorKind::NotFound {
        anyhow::anyhow!(
            "{tool} is not installed: these tests need Debian's {apt_package} (apt-get install {apt_package})"
        )
    } else {
        anyhow::anyhow!("running {tool}: {error}")
    }
}

/// Runs a tool and returns its output, failing with its stderr when it
/// exits non-zero.
fn run(tool: &str, apt_package: &str, args: &[&str]) -> Result<Output> {
    let output = Command::new(tool)
        .args(args)
        .output()
        .map_err(|e| start_error(tool, apt_package, e))?;
    ensure!(
        output.status.success(),
        "{tool} {} failed ({}): {}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(output)
}

fn run_json(tool: &str, apt_package: &str, args: &[&str]) -> Result<Value> {
    let output = run(tool, apt_package, args)?;
    serde_json::from_slice(&output.stdout)
        .with_context(|| format!("{tool} {}: output is not JSON", args.join(" ")))
}

/// Every file under `blobs/sha256` of an OCI image layout, by digest.
fn blobs(layout: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    let dir = layout.join("blobs/sha256");
    let mut blobs = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("listing {dir:?}"))? {
        let path = entry?.path();
        let name = path
            .file_name()
            .context("blob without a name")?
            .to_string_lossy()
            .into_owned();
        blobs.insert(name, std::fs::read(&path)?);
    }
    Ok(blobs)
}

#[test]
fn the_package_builds_reproducibly_and_skopeo_and_umoci_read_it() -> Result<()> {
    let first_dir = tempfile::tempdir()?;
    let second_dir = tempfile::tempdir()?;
    let first = build_package(first_dir.path())?;
    let second = build_package(second_dir.path())?;

    // Built twice from the same inputs: the same bytes, so the same digests.
    assert_eq!(
        first.image.manifest_digest(),
        second.image.manifest_digest()
    );
    assert_eq!(blobs(&first.oci_layout)?, blobs(&second.oci_layout)?);
    assert_eq!(std::fs::read(&first.xpkg)?, std::fs::read(&second.xpkg)?);

    let layout = format!("oci:{}:{}", first.oci_layout.display(), first.tag);
    // skopeo reads the OCI layout: the manifest marks exactly the package's
    // two layers, on top of the provider image's.
    let manifest = run_json("skopeo", "skopeo", &["inspect", "--raw", &layout])?;
    let layers = manifest["layers"].as_array().context("manifest layers")?;
    let marks: Vec<Option<&str>> = layers
        .iter()
        .map(|l| l["annotations"]["io.crossplane.xpkg"].as_str())
        .collect();
    let base_layers = layers.len() - 2;
    ensure!(
        base_layers > 0,
        "no provider layer under the package layers"
    );
    assert!(
        marks[..base_layers].iter().all(Option::is_none),
        "{marks:?}"
    );
    assert_eq!(marks[base_layers..], [Some("base"), Some("upbound")]);
    let inspected = run_json("skopeo", "skopeo", &["inspect", &layout])?;
    assert_eq!(
        inspected["Digest"],
        format!("sha256:{}", first.image.manifest_digest())
    );

    // ... and the docker archive: its config labels name the same layers
    // by digest, which is all a docker archive can carry.
    let archive = format!("docker-archive:{}", first.xpkg.display());
    let config = run_json("skopeo", "skopeo", &["inspect", "--config", &archive])?;
    for (layer, mark) in layers[base_layers..].iter().zip(["base", "upbound"]) {
        let digest = layer["digest"].as_str().context("layer digest")?;
        assert_eq!(
            config["config"]["Labels"][format!("io.crossplane.xpkg:{digest}")],
            mark,
            "{config}"
        );
    }
    assert_eq!(
        config["rootfs"]["diff_ids"]
            .as_array()
            .map(Vec::len)
            .unwrap_or_default(),
        layers.len()
    );

    // umoci unpacks the layout into a tree holding the package's files and
    // the provider binary.
    let unpacked = tempfile::tempdir()?;
    let bundle = unpacked.path().join("bundle");
    run(
        "umoci",
        "umoci",
        &[
            "unpack",
            "--rootless",
            "--image",
            &format!("{}:{}", first.oci_layout.display(), first.tag),
            &bundle.to_string_lossy(),
        ],
    )?;
    let rootfs = bundle.join("rootfs");
    let package_yaml = std::fs::read_to_string(rootfs.join("package.yaml"))?;
    let expected = xpkg::contents::read_package_dir(&e2e::crds::package_dir())?;
    assert_eq!(package_yaml, expected.package_yaml);
    assert_eq!(
        std::fs::read_to_string(rootfs.join(".up/examples.yaml"))?,
        expected.examples_yaml
    );
    assert!(rootfs.join("usr/local/bin/provider").is_file());
    Ok(())
}

/// Debian's docker-registry on a free loopback port with its storage in a
/// temporary folder, killed when dropped.
struct Registry {
    child: Child,
    address: String,
    _dir: tempfile::TempDir,
}

impl Registry {
    fn start() -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let address = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {address}\n",
                dir.path().join("storage").display()
            ),
        )?;
        let log = std::fs::File::create(dir.path().join("registry.log"))?;
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| start_error("docker-registry", "docker-registry", e))?;
        let mut registry = Self {
            child,
            address,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(&registry.address).is_err() {
            if let Some(status) = registry.child.try_wait()? {
                let log = std::fs::read_to_string(registry._dir.path().join("registry.log"))
                    .unwrap_or_default();
                bail!("docker-registry exited ({status}): {log}");
            }
            ensure!(
                Instant::now() < deadline,
                "docker-registry did not listen on {} within 20 s",
                registry.address
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(registry)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_loaded_image_runs_the_provider_and_a_registry_round_trip_keeps_every_byte() -> Result<()> {
    let out = tempfile::tempdir()?;
    let built = build_package(out.path())?;

    // docker load takes the .xpkg file as is, under the tag it names, and
    // its image id is the config's digest.
    let loaded = run(
        "docker",
        "docker.io",
        &["load", "--input", &built.xpkg.to_string_lossy()],
    )?;
    let loaded = String::from_utf8_lossy(&loaded.stdout);
    assert!(
        loaded.contains(&format!("Loaded image: {}", built.repo_tag)),
        "{loaded}"
    );
    let id = run(
        "docker",
        "docker.io",
        &["image", "inspect", "--format", "{{.Id}}", &built.repo_tag],
    )?;
    assert_eq!(
        String::from_utf8_lossy(&id.stdout).trim(),
        format!(
            "sha256:{}",
            xpkg::layer::sha256_hex(&built.image.config_json)
        )
    );
    // Its entrypoint is the provider binary.
    let help = run(
        "docker",
        "docker.io",
        &["run", "--rm", &built.repo_tag, "--help"],
    )?;
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("--poll-interval") && help.contains("--max-reconcile-rate"),
        "not the provider's --help: {help}"
    );

    // A push to a registry and a pull back by digest give the same bytes.
    let registry = Registry::start()?;
    let repository = format!("{}/provider-fakecloud", registry.address);
    let digest = format!("sha256:{}", built.image.manifest_digest());
    run(
        "skopeo",
        "skopeo",
        &[
            "copy",
            "--quiet",
            "--preserve-digests",
            "--dest-tls-verify=false",
            &format!("oci:{}:{}", built.oci_layout.display(), built.tag),
            &format!("docker://{repository}:{}", built.tag),
        ],
    )?;
    let served = run_json(
        "skopeo",
        "skopeo",
        &[
            "inspect",
            "--tls-verify=false",
            &format!("docker://{repository}:{}", built.tag),
        ],
    )?;
    assert_eq!(
        served["Digest"],
        digest.as_str(),
        "the tag serves another manifest"
    );

    let pulled = out.path().join("pulled");
    run(
        "skopeo",
        "skopeo",
        &[
            "copy",
            "--quiet",
            "--src-tls-verify=false",
            &format!("docker://{repository}@{digest}"),
            &format!("oci:{}:pulled", pulled.display()),
        ],
    )?;
    let index: Value = serde_json::from_slice(&std::fs::read(pulled.join("index.json"))?)?;
    assert_eq!(index["manifests"][0]["digest"], digest.as_str());
    assert_eq!(blobs(&pulled)?, blobs(&built.oci_layout)?);
    drop(registry);
    Ok(())
}

/// The CRD Crossplane makes from an MRD: same name, its spec without the
/// MRD's own fields.
fn crd_of_mrd(mrd: &Value) -> Result<Value> {
    let name = mrd["metadata"]["name"].as_str().context("MRD name")?;
    let mut spec = mrd["spec"].clone();
    let fields = spec.as_object_mut().context("MRD spec is an object")?;
    for mrd_only in ["connectionDetails", "state"] {
        fields.remove(mrd_only);
    }
    Ok(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": spec,
    }))
}

/// The connection Secret keys the provider writes, per MRD (= CRD) name.
/// The connection keys of every managed kind, by CRD name, in both scopes.
fn connection_keys_by_crd() -> BTreeMap<String, Vec<&'static str>> {
    fn entry<M: Managed>() -> (String, Vec<&'static str>) {
        let keys = M::CONNECTION_DETAILS.iter().map(|d| d.name).collect();
        (M::crd_name().to_owned(), keys)
    }
    BTreeMap::from([
        entry::<Vpc>(),
        entry::<Subnet>(),
        entry::<NodeGroup>(),
        entry::<DatabaseInstance>(),
        entry::<apis::kinds::vpc::m::Vpc>(),
        entry::<apis::kinds::subnet::m::Subnet>(),
        entry::<apis::kinds::nodegroup::m::NodeGroup>(),
        entry::<apis::kinds::database_instance::m::DatabaseInstance>(),
    ])
}

#[tokio::test]
async fn crossplane_reads_the_package_lints_it_and_its_crds_become_established() -> Result<()> {
    e2e::init_tracing();
    let out = tempfile::tempdir()?;
    let built = tokio::task::spawn_blocking({
        let out = out.path().to_path_buf();
        move || build_package(&out)
    })
    .await??;

    // As Crossplane's package manager: the base-annotated layer of the
    // pulled image; from the .xpkg file (a docker archive, no annotations)
    // the layer its config labels `base`. Both hold the same stream.
    let from_layout = read_oci_layout(&built.oci_layout, &built.tag)?;
    let base_digest = built.image.layers[built.image.layers.len() - 2]
        .digest
        .clone();
    assert_eq!(
        from_layout.found_in,
        FoundIn::AnnotatedLayer {
            digest: base_digest.clone()
        }
    );
    let from_archive = read_docker_archive(&built.xpkg)?;
    assert_eq!(
        from_archive.found_in,
        FoundIn::LabelledLayer {
            digest: base_digest
        }
    );
    assert_eq!(from_archive.package_yaml, from_layout.package_yaml);

    let objects =
        xpkg::contents::parse_stream(&from_layout.package_yaml, Path::new("package.yaml"))?;
    // Crossplane's provider lint: one Provider meta object, the rest CRDs,
    // MRDs or webhook configurations; v2 or later; safe-start.
    xpkg::lint::lint_provider(&objects)?;
    let objects: Vec<Value> = objects
        .into_iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    let meta = &objects[0];
    assert_eq!(meta["apiVersion"], "meta.pkg.crossplane.io/v1");
    assert_eq!(meta["kind"], "Provider");
    let constraint = meta["spec"]["crossplane"]["version"]
        .as_str()
        .context("spec.crossplane.version")?;
    assert!(xpkg::lint::requires_v2(constraint), "{constraint}");
    assert!(
        meta["spec"]["capabilities"]
            .as_array()
            .is_some_and(|caps| caps.iter().any(|c| c == "safe-start")),
        "{meta}"
    );

    // Each MRD names exactly the connection Secret keys the provider
    // writes for its kind, in order; every managed kind has its MRD.
    let expected_keys = connection_keys_by_crd();
    let mut crds = Vec::new();
    let mut mrd_names = BTreeSet::new();
    for object in &objects[1..] {
        match object["kind"].as_str() {
            Some("ManagedResourceDefinition") => {
                let name = object["metadata"]["name"].as_str().context("MRD name")?;
                let documented: Vec<&str> = object["spec"]["connectionDetails"]
                    .as_array()
                    .with_context(|| format!("MRD {name} has no spec.connectionDetails"))?
                    .iter()
                    .map(|d| d["name"].as_str().unwrap_or_default())
                    .collect();
                let written = expected_keys
                    .get(name)
                    .with_context(|| format!("MRD {name} is no managed kind of the apis crate"))?;
                assert_eq!(&documented, written, "connection details of {name}");
                mrd_names.insert(name.to_owned());
                crds.push(crd_of_mrd(object)?);
            }
            Some("CustomResourceDefinition") => crds.push(object.clone()),
            other => bail!("unexpected {other:?} in package.yaml"),
        }
    }
    assert_eq!(
        mrd_names,
        expected_keys.keys().cloned().collect::<BTreeSet<_>>()
    );
    for database in [
        DatabaseInstance::crd_name(),
        apis::kinds::database_instance::m::DatabaseInstance::crd_name(),
    ] {
        assert_eq!(
            expected_keys[database],
            ["endpoint", "port", "username", "password"]
        );
    }

    // Installed together on a real API server, every CRD is Established.
    let cluster = TestCluster::options()
        .without_package_crds()
        .start()
        .await?;
    let names = cluster.install_crd_values(crds).await?;
    assert_eq!(names.len(), objects.len() - 1);
    let api: Api<CustomResourceDefinition> = Api::all(cluster.client());
    for name in &names {
        let crd = api.get(name).await?;
        let established = crd
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        assert!(established, "CRD {name} is not Established");
    }
    let all: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    for wanted in [
        "providerconfigs.fakecloud.crossplane.io",
        "providerconfigusages.fakecloud.crossplane.io",
        "providerconfigs.fakecloud.m.crossplane.io",
        "clusterproviderconfigs.fakecloud.m.crossplane.io",
        "providerconfigusages.fakecloud.m.crossplane.io",
        "clusterproviderconfigusages.fakecloud.m.crossplane.io",
    ] {
        assert!(all.contains(wanted), "{wanted} not installed: {all:?}");
    }
    Ok(())
}

#[test]
fn a_missing_tool_is_an_error_naming_its_debian_package() {
    let err = run("fakecloud-no-such-tool", "fakecloud-tools", &["--version"])
        .expect_err("the tool does not exist");
    let message = err.to_string();
    assert!(
        message.contains("apt-get install fakecloud-tools"),
        "{message}"
    );
}
