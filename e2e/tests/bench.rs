//! CI's small instance of the provider benchmark: 100 VPCs applied while
//! the provider runs, mixed kinds too (with a burst of new units on top of
//! Ready ones), and the provider binary measured as a process of its own. The benchmark itself exits non-zero
//! unless fakecloud holds exactly one cloud resource per managed resource
//! and the steady state makes no API write; this test also reads those
//! figures back from its report.

use std::path::Path;
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

/// The first number after `label` on the report line that starts with it.
fn number(report: &str, label: &str) -> f64 {
    report
        .lines()
        .find_map(|l| l.strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {label:?} in:\n{report}"))
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
    assert!(
        report.contains("x the managed-writes floor") && report.contains("x create + status"),
        "both ratios are reported: {report}"
    );
    // A create's API cost per VPC: the five writes crossplane-runtime needs
    // (finalizer + create-pending, external name + create-succeeded,
    // status, usage, Event) and the ProviderConfig's recounts (0.02 here);
    // no GET of its usage: whether it exists comes from a watch cache (a
    // GET per VPC would be 1.0). Not the total of reads, which counts the
    // control plane's lists too (0.25 to 0.93 per VPC measured here).
    let writes = number(&report, "  API writes:");
    assert!(writes <= 5.1, "{writes} API writes per VPC: {report}");
    assert!(
        report.contains("\n  API GETs on its resources:\n"),
        "GETs are reported by resource: {report}"
    );
    let usage_gets = report
        .lines()
        .skip_while(|l| !l.starts_with("  API GETs on its resources:"))
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .find_map(|l| l.trim().strip_prefix("providerconfigusages:"))
        .map_or(0.0, |n| n.trim().parse().expect("a number"));
    assert!(
        usage_gets < 0.1,
        "{usage_gets} usage GETs per VPC: {report}"
    );
}

#[test]
fn mixed_units_applied_before_the_provider_starts_and_a_burst_after_make_one_cloud_resource_each() {
    let report = bench(&[
        "--count",
        "30",
        "--mix",
        "--start",
        "before",
        "--no-floor",
        "--steady",
        "3s",
        "--burst",
        "20",
    ]);
    for kind in ["vpc", "subnet", "databaseInstance"] {
        assert_eq!(
            figure(&report, &format!("{kind} in fakecloud:")),
            "30",
            "{report}"
        );
        // 20 more units applied at once on top of the Ready ones.
        assert_eq!(
            figure(&report, &format!("  {kind} in fakecloud after it:")),
            "50",
            "{report}"
        );
    }
    assert!(report.contains("polls of the Ready ones:"), "{report}");
}

#[test]
fn the_provider_binary_as_its_own_process_is_measured_from_proc() {
    // The workspace's provider binary, built beside the benchmark.
    let provider = Path::new(env!("CARGO_BIN_EXE_bench_provider")).with_file_name("provider");
    assert!(
        provider.is_file(),
        "{} is missing: build it with `cargo build -p provider`",
        provider.display()
    );
    let report = bench(&[
        "--count",
        "20",
        "--no-floor",
        "--steady",
        "3s",
        "--provider-bin",
        provider.to_str().expect("a UTF-8 path"),
    ]);
    assert_eq!(figure(&report, "vpc in fakecloud:"), "20", "{report}");
    for label in ["provider idle RSS:", "provider peak RSS to Ready:"] {
        let line = report
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} in:\n{report}"));
        let mib: f64 = line
            .trim_start_matches(label)
            .trim()
            .trim_end_matches("MiB")
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{line:?}: {e}"));
        assert!(mib > 1.0, "{line}");
    }
    assert!(report.contains("% of one core"), "{report}");
}
