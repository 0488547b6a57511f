//! What the demo's tests share: running it with its own TMPDIR, and
//! checking that every story held and that nothing outlived it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The stories' count, as the demo announces them (`1.` to `15.`): late
/// activation, six stories on each scope, and drift and the query on the
/// namespaced one.
pub const STORIES: usize = 17;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("demo sits in the workspace")
        .to_path_buf()
}

/// Runs `command` with its own TMPDIR, so every process it starts (etcd's
/// data dir, the API server's certificates, the provider's kubeconfig) can
/// be recognised by that path afterwards.
pub fn run_with_own_tmpdir(mut command: Command, tmp: &Path) -> Output {
    command
        .env("TMPDIR", tmp)
        .output()
        .expect("the demo starts")
}

/// Runs the README's command, `scripts/demo` with `args`, with its own
/// TMPDIR `tmp`; asserts that it exited 0 and returns what it printed.
pub fn run_readme_demo(args: &[&str], tmp: &Path) -> String {
    let mut command = Command::new(repo_root().join("scripts/demo"));
    command.args(args).current_dir(repo_root());
    let output = run_with_own_tmpdir(command, tmp);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "scripts/demo {} failed ({}):\n{stdout}\n{stderr}",
        args.join(" "),
        output.status
    );
    stdout
}

/// Process ids the demo printed on its `processes (pid): ...` line.
pub fn announced_pids(stdout: &str) -> Vec<i32> {
    stdout
        .lines()
        .filter(|l| l.contains("processes (pid):"))
        .flat_map(|l| l.split_whitespace().filter_map(|w| w.parse().ok()))
        .collect()
}

/// Whether `pid` runs (a zombie still has a /proc entry but does not run).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

/// Live processes whose command line or environment mentions `tmp`: what
/// the demo started and left behind.
pub fn processes_mentioning(tmp: &Path) -> Vec<String> {
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

pub fn assert_nothing_left(stdout: &str, tmp: &Path) {
    let pids = announced_pids(stdout);
    let survivors: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    assert!(
        survivors.is_empty(),
        "processes outlived the demo: {survivors:?}"
    );
    let strays = processes_mentioning(tmp);
    assert!(strays.is_empty(), "processes outlived the demo: {strays:?}");
}

/// Asserts that the demo's output has every story's heading, each held,
/// and the closing count.
pub fn assert_every_story_held(stdout: &str) {
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
}
