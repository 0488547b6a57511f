//! The demo's stories with the provider running as pods (issue 47):
//! `scripts/demo --on-node --once` starts the control plane with a real node (a
//! kubelet over this machine's Docker engine, kube-scheduler, kube-proxy),
//! installs the package as Crossplane installs a provider (its Deployment,
//! ServiceAccount, RBAC and webhook Service, made by the package manager's
//! stand-in from the `.xpkg`), and plays every story against that pod,
//! conversions going through the Service. Afterwards nothing is left: no
//! process, pod container, `KUBE-*` iptables chain or changed sysctl.
//!
//! Needs what the node test needs (root, a Docker engine with cgroup v1,
//! the node's binaries from `e2e/control-plane/install.sh`); without them
//! it fails, never skips. Runs alone (.config/nextest.toml): one node per
//! machine. Built with the `demo` crate's `node` feature, which
//! `scripts/test` turns on (`--all-features`); without it this file is
//! empty (a `[[test]]` target with `required-features` would do the same,
//! but the images' build stubs every declared target).

#![cfg(feature = "node")]

mod common;

use common::{assert_every_story_held, assert_nothing_left, run_readme_demo};

#[test]
fn every_story_holds_with_the_provider_as_the_packages_pod_on_a_node() {
    let route_localnet = e2e::node::route_localnet();
    let tmp = tempfile::tempdir().expect("temp dir");
    // The README's command, which builds the demo with its `node` feature:
    // the demo binary the test build made is whichever build came last
    // (`scripts/test` builds it without features too, for `scripts/demo`).
    let stdout = run_readme_demo(&["--on-node", "--once"], tmp.path());
    assert_every_story_held(&stdout);
    for step in [
        "node Ready",
        "provider installed as Crossplane installs a package",
        "Ready by its readiness probe",
        "send conversions to the provider's Service",
    ] {
        assert!(stdout.contains(step), "no `{step}` step:\n{stdout}");
    }
    assert!(
        !stdout.contains("processes (pid)"),
        "no provider process: it runs as a pod\n{stdout}"
    );
    assert_nothing_left(&stdout, tmp.path());
    let leftovers = e2e::node::leftovers(None, route_localnet.as_deref());
    assert!(leftovers.is_empty(), "the node left {leftovers:?}");
}
