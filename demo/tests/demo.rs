//! The demo (issue 7): the README's first command, `scripts/demo --once`,
//! plays every story to "expectation held: yes", exits 0 and leaves no
//! process behind; a demo that cannot start fails loudly, keeps its logs and
//! also leaves nothing behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The stories' count, as the demo announces them (`1.` to `15.`): late
/// activation, six stories on each scope, and drift and the query on the
/// namespaced one.
const STORIES: usize = 17;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("demo sits in the workspace")
        .to_path_buf()
}

/// Runs `command` with its own TMPDIR, so every process it starts (etcd's
/// data dir, the API server's certificates, the provider's kubeconfig) can
/// be recognised by that path afterwards.
fn run_with_own_tmpdir(mut command: Command, tmp: &Path) -> Output {
    command
        .env("TMPDIR", tmp)
        .output()
        .expect("the demo starts")
}

/// Process ids the demo printed on its `processes (pid): ...` line.
fn announced_pids(stdout: &str) -> Vec<i32> {
    stdout
        .lines()
        .filter(|l| l.contains("processes (pid):"))
        .flat_map(|l| l.split_whitespace().filter_map(|w| w.parse().ok()))
        .collect()
}

/// Whether `pid` runs (a zombie still has a /proc entry but does not run).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

/// Live processes whose command line or environment mentions `tmp`: what
/// the demo started and left behind.
fn processes_mentioning(tmp: &Path) -> Vec<String> {
    let needle = tmp.display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() as i32 || !alive(pid) {
            continue;
        }
        let read = |file: &str| {
            std::fs::read(entry.path().join(file))
                .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                .unwrap_or_default()
        };
        let cmdline = read("cmdline");
        if cmdline.contains(&needle) || read("environ").contains(&needle) {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}

fn assert_nothing_left(stdout: &str, tmp: &Path) {
    let pids = announced_pids(stdout);
    let survivors: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    assert!(
        survivors.is_empty(),
        "processes outlived the demo: {survivors:?}"
    );
    let strays = processes_mentioning(tmp);
    assert!(strays.is_empty(), "processes outlived the demo: {strays:?}");
}

#[test]
fn the_readme_command_plays_every_story_to_held_and_leaves_no_process() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut command = Command::new(repo_root().join("scripts/demo"));
    command.arg("--once").current_dir(repo_root());
    let output = run_with_own_tmpdir(command, tmp.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "demo failed ({}):\n{stdout}\n{stderr}",
        output.status
    );

    for number in 1..=STORIES {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("{number}. "))),
            "no heading for story {number}:\n{stdout}"
        );
    }
    let held = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("expectation held: yes"))
        .count();
    assert_eq!(held, STORIES, "not every story held:\n{stdout}");
    assert!(!stdout.contains("expectation held: no"), "{stdout}");
    assert!(
        stdout.contains(&format!("{STORIES} of {STORIES} stories held")),
        "{stdout}"
    );
    assert_eq!(
        announced_pids(&stdout).len(),
        4,
        "etcd, kube-apiserver, kube-controller-manager and the provider: {stdout}"
    );
    assert!(
        stdout.contains("(values not shown)") && !stdout.to_lowercase().contains("password="),
        "the connection secret is shown by key names only:\n{stdout}"
    );
    assert_nothing_left(&stdout, tmp.path());
    // A clean run removes its own folder too.
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("temp dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(leftovers.is_empty(), "files left behind: {leftovers:?}");
}

#[test]
fn a_demo_that_cannot_start_the_provider_fails_with_its_logs_and_leaves_no_process() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let missing = tmp.path().join("no-such-provider");
    let mut command = Command::new(env!("CARGO_BIN_EXE_demo"));
    command
        .args(["--once", "--provider-bin"])
        .arg(&missing)
        .current_dir(repo_root());
    let output = run_with_own_tmpdir(command, tmp.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("no-such-provider") && stderr.contains("cargo build -p provider"),
        "the error names the binary and how to build it:\n{stderr}"
    );
    let kept = stderr
        .lines()
        .find_map(|l| l.strip_prefix("logs kept in "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no log folder named:\n{stderr}"));
    assert!(
        Path::new(kept).join("demo.log").is_file(),
        "{kept} holds the demo's log"
    );
    assert!(
        Path::new(kept).join("kube-apiserver.log").is_file(),
        "{kept} holds the control plane's logs"
    );
    assert!(
        !stdout.contains("expectation held"),
        "no story ran: {stdout}"
    );
    assert_nothing_left(&stdout, tmp.path());
}
