//! CI's small instance of the provider benchmark: 100 VPCs applied while
//! the provider runs, mixed kinds too. The benchmark itself exits non-zero
//! unless fakecloud holds exactly one cloud resource per managed resource
//! and the steady state makes no API write; this test also reads those
//! figures back from its report.

use std::process::Command;

/// Runs the benchmark binary built with this test and returns its report.
fn bench(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_bench_provider"))
        .args(args)
        .output()
        .expect("the benchmark binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "benchmark failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The number at the end of the report line that starts with `label`.
fn figure(report: &str, label: &str) -> String {
    report
        .lines()
        .find(|l| l.starts_with(label))
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("no {label:?} in:\n{report}"))
        .to_owned()
}

#[test]
fn a_hundred_vpcs_make_a_hundred_cloud_resources_and_a_quiet_steady_state() {
    let report = bench(&["--count", "100", "--steady", "5s"]);
    assert_eq!(figure(&report, "vpc in fakecloud:"), "100", "{report}");
    let steady = report
        .lines()
        .find(|l| l.starts_with("steady state:"))
        .unwrap_or_default();
    assert!(steady.contains(" 0 API writes"), "{report}");
    assert!(report.contains("x the floor"), "{report}");
}

#[test]
fn mixed_units_applied_before_the_provider_starts_make_one_cloud_resource_each() {
    let report = bench(&[
        "--count",
        "30",
        "--mix",
        "--start",
        "before",
        "--no-floor",
        "--steady",
        "3s",
    ]);
    for kind in ["vpc", "subnet", "databaseInstance"] {
        assert_eq!(
            figure(&report, &format!("{kind} in fakecloud:")),
            "30",
            "{report}"
        );
    }
}
