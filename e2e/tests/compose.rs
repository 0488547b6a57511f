//! docker-compose.yml (issue 14): the images build, the project comes up
//! under a unique name, the demo service plays every story and exits 0,
//! fakecloud keeps its resources across a restart of its container, a
//! provider killed twice during a burst of 30 VPCs (its process crashing,
//! then `docker kill`) comes back and fakecloud holds exactly 30, one per
//! managed resource, and `down -v` leaves no container, network or volume of the
//! project behind, also when a test fails. Bad set-up is named, with a
//! non-zero exit.
//!
//! Needs a Docker engine with Compose (v2 or 1.29); without one these tests
//! fail, they never skip. The images are made first (scripts/images for the
//! base images, then scripts/host-images from this checkout's binaries),
//! cheaply when present. Since CI therefore never runs the Dockerfile's
//! `build` stage, a test here holds that stage to the workspace.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use apis::kinds::Vpc;
use e2e::world::{external_name, is_ready, is_synced};
use e2e::{Backend, TestCluster};
use fakecloud::client::AdminClient;
use fakecloud::model::Kind;
use futures::future::try_join_all;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

/// The dev defaults of docker-compose.yml.
const API_KEY: &str = "dev-api-key";
const ADMIN_TOKEN: &str = "dev-admin-token";
/// How long the whole project may take to come up (images built already).
const UP: Duration = Duration::from_secs(180);
const VPCS: usize = 30;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("e2e sits in the workspace")
        .to_path_buf()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// One compose project with its own name, host ports and kubeconfig folder.
/// Dropping it runs `down -v`, also when the test panicked.
struct Project {
    name: String,
    apiserver_port: u16,
    fakecloud_port: u16,
    kubeconfig_dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        e2e::containers::build_images().expect("building the images");
        Self {
            name: e2e::unique_name("fcp-compose").replace('-', ""),
            apiserver_port: free_port(),
            fakecloud_port: free_port(),
            kubeconfig_dir: tempfile::tempdir().expect("a temp folder"),
        }
    }

    /// `scripts/compose -p NAME ARGS` with this project's ports and folder.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(repo_root().join("scripts/compose"));
        command
            .arg("-p")
            .arg(&self.name)
            .args(args)
            .current_dir(repo_root())
            .env("APISERVER_PORT", self.apiserver_port.to_string())
            .env("FAKECLOUD_PORT", self.fakecloud_port.to_string())
            .env("KUBECONFIG_DIR", self.kubeconfig_dir.path());
        command
    }

    fn run(&self, args: &[&str]) -> String {
        let output = self.command(args).output().expect("scripts/compose runs");
        let out = text(&output);
        assert!(
            output.status.success(),
            "scripts/compose {} failed ({}):\n{out}",
            args.join(" "),
            output.status
        );
        out
    }

    fn container(&self, service: &str) -> String {
        let id = self.run(&["ps", "-a", "-q", service]);
        let id = id.lines().last().unwrap_or_default().trim().to_owned();
        assert!(!id.is_empty(), "no container for service {service}");
        id
    }

    fn logs(&self, service: &str) -> String {
        self.run(&["logs", "--no-color", service])
    }

    fn admin(&self) -> AdminClient {
        AdminClient::new(
            format!("http://127.0.0.1:{}", self.fakecloud_port),
            ADMIN_TOKEN,
        )
    }

    /// Waits until `service`'s container reports `healthy`.
    fn wait_healthy(&self, service: &str, timeout: Duration) {
        let began = Instant::now();
        loop {
            let status = docker(&[
                "inspect",
                "--format",
                "{{.State.Health.Status}}",
                &self.container(service),
            ]);
            if status.trim() == "healthy" {
                return;
            }
            assert!(
                began.elapsed() < timeout,
                "{service} not healthy after {timeout:?} (status {status}); its log:\n{}",
                self.logs(service)
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Containers, networks and volumes labelled with this project.
    fn leftovers(&self) -> Vec<String> {
        let label = format!("label=com.docker.compose.project={}", self.name);
        let mut found = Vec::new();
        for (what, args) in [
            ("container", vec!["ps", "-a", "-q", "--filter", &label]),
            ("network", vec!["network", "ls", "-q", "--filter", &label]),
            ("volume", vec!["volume", "ls", "-q", "--filter", &label]),
        ] {
            found.extend(
                docker(&args)
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|id| format!("{what} {id}")),
            );
        }
        found
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let down = self
            .command(&["down", "-v", "--remove-orphans", "--timeout", "5"])
            .output();
        let left = self.leftovers();
        if !std::thread::panicking() {
            let down = down.expect("scripts/compose down runs");
            assert!(down.status.success(), "down -v failed:\n{}", text(&down));
            assert!(left.is_empty(), "down -v left {left:?}");
        } else if !left.is_empty() {
            eprintln!("down -v after a failure left {left:?}");
        }
    }
}

fn docker(args: &[&str]) -> String {
    let output = Command::new("docker")
        .args(args)
        .output()
        .expect("the docker CLI runs");
    assert!(
        output.status.success(),
        "docker {} failed:\n{}",
        args.join(" "),
        text(&output)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn the_demo_plays_every_story_and_fakecloud_keeps_its_data_across_a_restart() {
    let project = Project::new();
    project.run(&["up", "-d"]);
    let demo = project.container("demo");
    let code = tokio::time::timeout(
        UP,
        tokio::task::spawn_blocking(move || docker(&["wait", &demo])),
    )
    .await
    .expect("the demo finishes in time")
    .expect("docker wait runs");
    let demo_log = project.logs("demo");
    assert_eq!(code.trim(), "0", "the demo failed; its output:\n{demo_log}");
    assert!(demo_log.contains("17 of 17 stories held"), "{demo_log}");

    // The provider started before any CRD existed and started each
    // controller when that kind's CRD appeared (the stand-in creates the
    // managed kinds' CRDs as MRAPs activate their MRDs): the eight managed
    // kinds of both scopes, the three ProviderConfig kinds and the four
    // query kinds.
    let provider_log = project.logs("provider");
    let started: Vec<&str> = provider_log
        .lines()
        .filter(|l| l.contains("CRD established; starting controller"))
        .collect();
    assert_eq!(started.len(), 15, "{provider_log}");

    // fakecloud's resources survive a restart of its container.
    let admin = project.admin();
    let ids = |resources: Vec<fakecloud::model::AdminResource>| -> BTreeSet<String> {
        resources
            .into_iter()
            .map(|r| format!("{:?} {}", r.kind, r.id))
            .collect()
    };
    let before = ids(admin
        .resources(None, None)
        .await
        .expect("listing resources"));
    assert!(before.len() >= 4, "the demo made resources: {before:?}");
    project.run(&["restart", "fakecloud"]);
    project.wait_healthy("fakecloud", Duration::from_secs(60));
    // A new client: the old one's pooled connection died with the container.
    let after = ids(project
        .admin()
        .resources(None, None)
        .await
        .expect("listing resources after the restart"));
    assert_eq!(
        before, after,
        "fakecloud lost or changed resources across a restart"
    );
}

#[tokio::test]
async fn a_provider_killed_during_a_burst_of_30_vpcs_comes_back_and_creates_each_once() {
    let project = Project::new();
    project.run(&["up", "-d", "provider", "fakecloud"]);
    project.wait_healthy("provider", UP);
    project.wait_healthy("fakecloud", UP);

    let kubeconfig = project.kubeconfig_dir.path().join("kubeconfig");
    let cluster = TestCluster::options()
        .backend(Backend::Kubeconfig(kubeconfig))
        .start()
        .await
        .expect("the host kubeconfig reaches the API server; CRDs installed");
    let client = cluster.client();
    let apply = PatchParams::apply("compose-test").force();
    Api::<Secret>::namespaced(client.clone(), "crossplane-system")
        .patch(
            "default-credentials",
            &apply,
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": { "name": "default-credentials", "namespace": "crossplane-system" },
                "stringData": { "apiKey": API_KEY },
            })),
        )
        .await
        .expect("credentials Secret");
    let objects = e2e::objects::Objects::new(client.clone(), "compose-test");
    objects
        .apply::<apis::kinds::provider_config::ProviderConfig>(json!({
            "apiVersion": "fakecloud.crossplane.io/v1alpha1", "kind": "ProviderConfig",
            "metadata": { "name": "default" },
            "spec": {
                "endpoint": "http://fakecloud:8787",
                "credentials": { "source": "Secret",
                    "secretRef": { "namespace": "crossplane-system", "name": "default-credentials", "key": "apiKey" } },
            },
        }))
        .await
        .expect("ProviderConfig");

    let provider = project.container("provider");
    let restarts = || {
        docker(&["inspect", "--format", "{{.RestartCount}}", &provider])
            .trim()
            .parse::<u32>()
            .expect("a restart count")
    };
    let restarts_before = restarts();
    let names: Vec<String> = (0..VPCS).map(|i| format!("burst-{i}")).collect();
    let vpc = |name: &str| {
        json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": name },
            "spec": { "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
        })
    };
    // The burst in three parts: a crash of the provider process while the
    // first part's creates are in flight (its restart policy brings it
    // back), a `docker kill` of its container during the second (an
    // operator's `up -d` brings it back: Docker leaves a container killed
    // by the user alone), and the rest while it comes back.
    let thirds: Vec<&[String]> = names.chunks(VPCS / 3).collect();
    let apply_all = |part: &[String]| {
        let applies: Vec<_> = part.iter().map(|n| objects.apply::<Vpc>(vpc(n))).collect();
        try_join_all(applies)
    };
    apply_all(thirds[0]).await.expect("first part applied");
    tokio::time::sleep(Duration::from_millis(300)).await;
    kill_provider(&provider);
    apply_all(thirds[1]).await.expect("second part applied");
    project.wait_healthy("provider", UP);
    assert!(
        restarts() > restarts_before,
        "the crashed provider's container was not restarted"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    docker(&["kill", &provider]);
    apply_all(thirds[2]).await.expect("last part applied");
    project.run(&["up", "-d", "provider"]);
    project.wait_healthy("provider", UP);

    let mut external_names = BTreeSet::new();
    for name in &names {
        let ready = objects
            .wait_for::<Vpc>(name, "Ready", UP, |v| is_ready(v) && is_synced(v))
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "VPC {name}: {e}\nprovider log:\n{}",
                    project.logs("provider")
                )
            });
        external_names.insert(external_name(&ready).expect("an external name"));
    }
    let in_cloud: BTreeSet<String> = project
        .admin()
        .resources(Some(Kind::Vpc), None)
        .await
        .expect("listing VPCs")
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(
        in_cloud.len(),
        VPCS,
        "fakecloud holds {} VPCs for {VPCS} managed resources",
        in_cloud.len()
    );
    assert_eq!(
        external_names, in_cloud,
        "each managed resource names its own VPC"
    );
}

/// Kills the provider process the way a crash would: SIGKILL to the
/// provider, not to the container's init. `docker kill` marks the container
/// as stopped by the user, which its restart policy then leaves alone (seen
/// on Docker 20.10); a process that dies is what the policy is for.
fn kill_provider(container: &str) {
    docker(&[
        "exec",
        container,
        "bash",
        "-c",
        "kill -KILL $(pidof provider)",
    ]);
}

#[test]
fn bad_set_up_is_named_with_a_non_zero_exit() {
    // No Docker engine.
    let output = Command::new(repo_root().join("scripts/compose"))
        .args(["up", "-d"])
        .current_dir(repo_root())
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .expect("scripts/compose runs");
    assert!(!output.status.success());
    assert!(
        text(&output).contains("cannot reach the Docker engine"),
        "{}",
        text(&output)
    );

    // A host port taken (the base images are present, so that is what fails).
    let project = Project::new();
    let taken = TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("an address").port();
    let output = project
        .command(&["up", "-d"])
        .env("FAKECLOUD_PORT", port.to_string())
        .output()
        .expect("scripts/compose runs");
    assert!(!output.status.success());
    assert!(
        text(&output).contains(&format!(
            "127.0.0.1:{port} (FAKECLOUD_PORT) is already in use"
        )),
        "{}",
        text(&output)
    );

    // A base image missing: the same script, on files naming one that no
    // engine has.
    let dir = tempfile::tempdir().expect("a temp folder");
    std::fs::create_dir(dir.path().join("scripts")).expect("scripts/");
    // scripts/compose installs what it needs through scripts/setup first.
    for script in ["scripts/compose", "scripts/setup"] {
        std::fs::copy(repo_root().join(script), dir.path().join(script))
            .unwrap_or_else(|e| panic!("copying {script}: {e}"));
    }
    std::fs::write(
        dir.path().join("Dockerfile"),
        "FROM fakecloud-provider-test/missing-base:none AS build\nFROM build AS app\n",
    )
    .expect("Dockerfile");
    std::fs::write(
        dir.path().join("docker-compose.yml"),
        "services:\n  app:\n    image: fakecloud-provider-test/app:none\n    build:\n      context: .\n      target: app\n",
    )
    .expect("docker-compose.yml");
    let output = Command::new(dir.path().join("scripts/compose"))
        .args(["build"])
        .output()
        .expect("scripts/compose runs");
    let out = text(&output);
    assert!(!output.status.success(), "{out}");
    assert!(
        out.contains("fakecloud-provider-test/missing-base:none") && out.contains("scripts/images"),
        "{out}"
    );
}

/// What the Dockerfile's `build` stage does, read from its instructions
/// (continuation lines joined, comments dropped).
#[derive(Default)]
struct BuildStage {
    /// Every path a COPY of the stage takes from the context.
    copied: Vec<String>,
    /// The crate folders the dependency step gives a stub `src/lib.rs`.
    stub_crates: Vec<String>,
    /// The files the dependency step writes `fn main() {}` into.
    stub_mains: Vec<String>,
    /// The packages and binaries its cargo build names (`-p`, `--bin`).
    packages: Vec<String>,
    bins: Vec<String>,
}

impl BuildStage {
    fn parse(dockerfile: &str) -> Self {
        let joined = dockerfile.replace("\\\n", " ");
        let mut stage = BuildStage::default();
        let mut in_build = false;
        let mut stubs_seen = false;
        for line in joined.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let instruction = words[0].to_ascii_uppercase();
            if instruction == "FROM" {
                in_build = words.last() == Some(&"build");
                continue;
            }
            if !in_build {
                continue;
            }
            match instruction.as_str() {
                "COPY" => {
                    let args: Vec<&str> = words[1..]
                        .iter()
                        .copied()
                        .filter(|w| !w.starts_with("--"))
                        .collect();
                    if let Some((_, sources)) = args.split_last() {
                        stage.copied.extend(sources.iter().map(|s| (*s).to_owned()));
                    }
                }
                "ARG" if line.contains("cargo build") => {
                    for pair in words.windows(2) {
                        let value = pair[1].trim_matches('"').to_owned();
                        match pair[0].trim_matches('"') {
                            "-p" => stage.packages.push(value),
                            "--bin" => stage.bins.push(value),
                            _ => {}
                        }
                    }
                }
                "RUN" if !stubs_seen => {
                    stubs_seen = true;
                    let list = |head: &str| -> Vec<String> {
                        line.split(head)
                            .nth(1)
                            .and_then(|rest| rest.split("; do").next())
                            .map(|items| items.split_whitespace().map(str::to_owned).collect())
                            .unwrap_or_default()
                    };
                    stage.stub_crates = list("for crate in ");
                    stage.stub_mains = list("for main in ");
                }
                _ => {}
            }
        }
        stage
    }

    /// Whether the context path `path` reaches the build through a COPY.
    fn copies(&self, path: &str) -> bool {
        self.copied.iter().any(|copied| {
            let copied = copied.trim_end_matches('/');
            path == copied || path.starts_with(&format!("{copied}/"))
        })
    }
}

/// `path` with `.` and `..` taken out (without touching the file system).
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The files `source` (a file of package folder `package`) compiles in:
/// `include_str!`/`include_bytes!` (relative to the file) and sqlx's
/// `migrate!` (relative to the package). A file's test module, which this
/// workspace keeps at the end of the file, is not compiled into an image.
fn compiled_in(source: &Path, package: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(source).unwrap_or_default();
    let text = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
    let mut out = Vec::new();
    for (macro_, base) in [
        ("include_str!(\"", source.parent().unwrap_or(package)),
        ("include_bytes!(\"", source.parent().unwrap_or(package)),
        ("migrate!(\"", package),
    ] {
        for rest in text.split(macro_).skip(1) {
            if let Some(path) = rest.split('"').next() {
                out.push(normalized(&base.join(path)));
            }
        }
    }
    out
}

/// The kinds (`lib`, `bin`, `bench`, ...) of a `cargo metadata` target.
fn kinds_of(target: &serde_json::Value) -> Vec<&str> {
    target["kind"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k.as_str())
        .collect()
}

/// What the Dockerfile's `build` stage misses of the workspace that
/// `metadata` (`cargo metadata --no-deps`) describes at `root`: each gap
/// said in a sentence.
fn build_stage_gaps(dockerfile: &str, metadata: &serde_json::Value, root: &Path) -> Vec<String> {
    let stage = BuildStage::parse(dockerfile);
    let relative = |path: &Path| {
        path.strip_prefix(root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    };
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let folder = |package: &serde_json::Value| {
        Path::new(package["manifest_path"].as_str().unwrap_or_default())
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    };
    let mut gaps = Vec::new();
    if stage.packages.is_empty() || stage.bins.is_empty() || stage.stub_mains.is_empty() {
        gaps.push("no `build` stage with a cargo build and stub sources was found".to_owned());
    }
    for package in &packages {
        let dir = folder(package);
        let name = relative(&dir);
        let manifest_path = dir.join("Cargo.toml");
        if !stage.copies(&relative(&manifest_path)) {
            gaps.push(format!(
                "{name}/Cargo.toml is not copied (cargo cannot load the workspace)"
            ));
        }
        if !stage.stub_crates.contains(&name) {
            gaps.push(format!(
                "{name} gets no stub src/lib.rs in the dependency step"
            ));
        }
        // Targets a manifest declares by name need their file, stub or real.
        let manifest = std::fs::read_to_string(&manifest_path).unwrap_or_default();
        for target in package["targets"].as_array().into_iter().flatten() {
            let target_name = target["name"].as_str().unwrap_or_default();
            let kinds = kinds_of(target);
            let declared = ["bin", "bench", "example", "test"].iter().any(|kind| {
                kinds.contains(kind)
                    && manifest
                        .split(&format!("[[{kind}]]"))
                        .skip(1)
                        .any(|section| {
                            section
                                .split("\n[")
                                .next()
                                .is_some_and(|s| s.contains(&format!("name = \"{target_name}\"")))
                        })
            });
            let built_bin = kinds.contains(&"bin") && stage.bins.iter().any(|b| b == target_name);
            let src = relative(Path::new(target["src_path"].as_str().unwrap_or_default()));
            if (declared || built_bin) && !stage.stub_mains.contains(&src) {
                gaps.push(format!(
                    "{src} (target {target_name}) gets no stub in the dependency step"
                ));
            }
        }
    }
    // The packages the build compiles: those it names and their path
    // dependencies, all the way down; not dev-dependencies, and not
    // optional ones (the stage builds e2e without the feature that needs
    // xpkg, and every other optional path dependency is also a plain one
    // of another built crate).
    let mut built: BTreeSet<String> = stage.packages.iter().cloned().collect();
    loop {
        let before = built.len();
        for package in &packages {
            if !built.contains(package["name"].as_str().unwrap_or_default()) {
                continue;
            }
            for dependency in package["dependencies"].as_array().into_iter().flatten() {
                if dependency["path"].is_string()
                    && dependency["kind"].as_str() != Some("dev")
                    && dependency["optional"].as_bool() != Some(true)
                {
                    built.insert(dependency["name"].as_str().unwrap_or_default().to_owned());
                }
            }
        }
        if built.len() == before {
            break;
        }
    }
    for package in &packages {
        if !built.contains(package["name"].as_str().unwrap_or_default()) {
            continue;
        }
        let dir = folder(package);
        for target in package["targets"].as_array().into_iter().flatten() {
            let src = Path::new(target["src_path"].as_str().unwrap_or_default());
            let kinds = kinds_of(target);
            let name = target["name"].as_str().unwrap_or_default();
            let compiled = kinds.contains(&"lib")
                || kinds.contains(&"proc-macro")
                || (kinds.contains(&"bin") && stage.bins.iter().any(|b| b == name));
            if compiled && !stage.copies(&relative(src)) {
                gaps.push(format!("{} (target {name}) is not copied", relative(src)));
            }
        }
        let mut sources = Vec::new();
        rust_files(&dir.join("src"), &mut sources);
        for source in sources.iter().filter(|s| stage.copies(&relative(s))) {
            for file in compiled_in(source, &dir) {
                if !stage.copies(&relative(&file)) {
                    gaps.push(format!(
                        "{} compiles in {}, which is not copied",
                        relative(source),
                        relative(&file)
                    ));
                }
            }
        }
    }
    gaps
}

/// CI makes the images from this checkout's binaries (scripts/host-images)
/// and never runs the Dockerfile's `build` stage, which `docker compose up`
/// runs on a fresh clone. So it is held to the workspace here: every
/// member's manifest copied and stubbed, every declared target stubbed,
/// every compiled source and every file compiled in copied. And the check
/// finds each kind of gap in a Dockerfile that has it.
#[test]
fn the_dockerfiles_build_stage_covers_the_workspace() {
    let root = repo_root();
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
            "--locked",
        ])
        .current_dir(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "{}", text(&output));
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).expect("the Dockerfile");
    let gaps = build_stage_gaps(&dockerfile, &metadata, &root);
    assert!(
        gaps.is_empty(),
        "the Dockerfile's build stage misses:\n{}",
        gaps.join("\n")
    );

    for (line, gap) in [
        (
            "COPY fakecloud/migrations fakecloud/migrations\n",
            "fakecloud/migrations",
        ),
        ("COPY provider/src provider/src\n", "provider/src/lib.rs"),
        (
            "COPY metrics-exposition/Cargo.toml metrics-exposition/\n",
            "metrics-exposition/Cargo.toml",
        ),
        (
            "                provider/benches/conversion.rs \\\n",
            "provider/benches/conversion.rs",
        ),
    ] {
        assert!(dockerfile.contains(line), "the Dockerfile has {line:?}");
        let broken = dockerfile.replacen(line, "", 1);
        let gaps = build_stage_gaps(&broken, &metadata, &root);
        assert!(
            gaps.iter().any(|g| g.contains(gap)),
            "without {line:?} the check finds {gap}; it found {gaps:?}"
        );
    }
    let no_build = dockerfile.replace("AS build", "AS compile");
    assert!(!build_stage_gaps(&no_build, &metadata, &root).is_empty());
}
