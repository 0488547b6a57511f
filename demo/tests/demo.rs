//! The demo (issue 7): the README's first command, `scripts/demo --once`,
//! plays every story to "expectation held: yes", exits 0 and leaves no
//! process behind; a demo that cannot start fails loudly, keeps its logs and
//! also leaves nothing behind.

mod common;

use std::path::Path;
use std::process::Command;

use common::{
    announced_pids, assert_every_story_held, assert_nothing_left, repo_root, run_readme_demo,
    run_with_own_tmpdir,
};

#[test]
fn the_readme_command_plays_every_story_to_held_and_leaves_no_process() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let stdout = run_readme_demo(&["--once"], tmp.path());
    assert_every_story_held(&stdout);
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
