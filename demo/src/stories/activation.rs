//! Story 1, late activation (seed 002): the provider runs with none of its
//! CRDs; installing them one kind at a time starts exactly that kind's
//! controller, as `provider_active_controllers` shows. The namespaced kinds
//! (`VPC.m`, ...) come first, then the legacy cluster-scoped ones.

use std::time::{Duration, Instant};

use apis::kinds::provider_config::ProviderConfig;
use apis::kinds::provider_config::m::ClusterProviderConfig;
use serde_json::json;

use e2e::crds::package_crds_dir;
use e2e::scenarios::Verdict;

use crate::system::{CREDENTIALS_SECRET, NAMESPACE};
use crate::{DemoError, System};

/// How long the gate may take to start a controller after its CRD is
/// Established.
const GATE: Duration = Duration::from_secs(10);

/// The controllers (by their metrics label) each group of CRD files
/// switches on, in install order.
const KINDS: [(&[&str], &[&str]); 10] = [
    (
        &["ClusterProviderConfig.m", "ProviderConfig.m"],
        &[
            "fakecloud.m.crossplane.io_providerconfigs.yaml",
            "fakecloud.m.crossplane.io_providerconfigusages.yaml",
            "fakecloud.m.crossplane.io_clusterproviderconfigs.yaml",
            "fakecloud.m.crossplane.io_clusterproviderconfigusages.yaml",
        ],
    ),
    (&["VPC.m"], &["network.fakecloud.m.crossplane.io_vpcs.yaml"]),
    (
        &["Subnet.m"],
        &["network.fakecloud.m.crossplane.io_subnets.yaml"],
    ),
    (
        &["NodeGroup.m"],
        &["compute.fakecloud.m.crossplane.io_nodegroups.yaml"],
    ),
    (
        &["DatabaseInstance.m"],
        &["database.fakecloud.m.crossplane.io_databaseinstances.yaml"],
    ),
    (
        &["ProviderConfig"],
        &[
            "fakecloud.crossplane.io_providerconfigs.yaml",
            "fakecloud.crossplane.io_providerconfigusages.yaml",
        ],
    ),
    (&["VPC"], &["network.fakecloud.crossplane.io_vpcs.yaml"]),
    (
        &["Subnet"],
        &["network.fakecloud.crossplane.io_subnets.yaml"],
    ),
    (
        &["NodeGroup"],
        &["compute.fakecloud.crossplane.io_nodegroups.yaml"],
    ),
    (
        &["DatabaseInstance"],
        &["database.fakecloud.crossplane.io_databaseinstances.yaml"],
    ),
];

pub(crate) async fn play(system: &mut System) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    let before = system.active_controllers().await?;
    system.stage().say(format!(
        "provider ready with 0 CRDs; active controllers: {}",
        list(&before)
    ));
    verdict.check("no controller runs before its CRD", before.is_empty());

    let mut expected: Vec<String> = Vec::new();
    for (kinds, files) in KINDS {
        let paths: Vec<_> = files.iter().map(|f| package_crds_dir().join(f)).collect();
        let names = system.cluster.install_crd_files(&paths).await?;
        let established = Instant::now();
        expected.extend(kinds.iter().map(|k| (*k).to_owned()));
        expected.sort();
        let kind = kinds.join(" and ");
        let active = wait_for_controllers(system, &expected).await?;
        let started = active == expected;
        system.stage().say(format!(
            "+ CRD {} Established -> {kind} controller{} {} {:.2}s later",
            names.join(" + "),
            if kinds.len() > 1 { "s" } else { "" },
            if started { "active" } else { "NOT active" },
            established.elapsed().as_secs_f64(),
        ));
        verdict.check(
            format!(
                "only the installed kinds run after {kind} (saw {})",
                list(&active)
            ),
            started,
        );
    }

    default_config::<ClusterProviderConfig>(system, "what namespaced resources use by default")
        .await?;
    default_config::<ProviderConfig>(system, "legacy, for the cluster-scoped kinds").await?;
    Ok(verdict)
}

/// The config `default` of kind `K` (a ClusterProviderConfig or a legacy
/// ProviderConfig, both cluster-scoped with the same spec), pointing at
/// fakecloud with the credentials Secret; `role` says who uses it.
async fn default_config<K: e2e::objects::Kind>(
    system: &System,
    role: &str,
) -> Result<(), DemoError> {
    system
        .objects
        .apply::<K>(json!({
            "apiVersion": K::api_version(&()), "kind": K::kind(&()),
            "metadata": { "name": "default" },
            "spec": {
                "endpoint": system.cloud_url(),
                "credentials": { "source": "Secret",
                    "secretRef": { "namespace": NAMESPACE, "name": CREDENTIALS_SECRET, "key": "apiKey" } },
            },
        }))
        .await?;
    system.stage().say(format!(
        "{}/default ({role}) -> {} with the API key from Secret {NAMESPACE}/{CREDENTIALS_SECRET} (key apiKey)",
        K::kind(&()),
        system.cloud_url(),
    ));
    Ok(())
}

/// Polls the provider's metrics until exactly `expected` run, or [`GATE`]
/// passes; returns what ran last.
async fn wait_for_controllers(
    system: &System,
    expected: &[String],
) -> Result<Vec<String>, DemoError> {
    let deadline = tokio::time::Instant::now() + GATE;
    loop {
        let active = system.active_controllers().await?;
        if active == expected || tokio::time::Instant::now() >= deadline {
            return Ok(active);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn list(kinds: &[String]) -> String {
    if kinds.is_empty() {
        "none".to_owned()
    } else {
        kinds.join(", ")
    }
}
