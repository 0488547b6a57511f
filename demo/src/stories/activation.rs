//! Story 1, late activation (seed 002) with real ManagedResourceDefinitions
//! and ManagedResourceActivationPolicies. The provider runs with none of its
//! CRDs; its package is installed as Crossplane installs a `safe-start`
//! provider's (MRDs Inactive, the ProviderConfig kinds as plain CRDs); an
//! MRAP activates the namespaced network kinds and exactly those controllers
//! start; a second MRAP activates `databaseinstances.*` and that kind's
//! controllers start; then the package's own `mrap-activate-all.yaml`
//! activates the rest, which the later stories use. Crossplane's
//! activation controllers are played by the stand-in
//! (`e2e::crossplane_standin`): in this process locally, as the
//! `crossplane-standin` service in compose.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use apis::kinds::provider_config::ProviderConfig;
use apis::kinds::provider_config::m::ClusterProviderConfig;
use serde_json::{Value, json};

use e2e::crds::{installed_package_crds, load_manifests, package_examples_dir};
use e2e::crossplane_standin::{self as standin, DefinitionStatus, Package};
use e2e::scenarios::Verdict;

use crate::system::{CREDENTIALS_SECRET, DEMO_MANAGER, NAMESPACE};
use crate::{DemoError, System};

/// How long an MRAP may take to start its controllers (MRD activated, CRD
/// applied and Established, the provider's gate reacting).
const ACTIVATION: Duration = Duration::from_secs(15);

/// The ProviderConfig kinds' controllers: their CRDs come with the package,
/// not from MRDs.
const PROVIDER_CONFIGS: [&str; 3] = [
    "ClusterProviderConfig.m",
    "ProviderConfig",
    "ProviderConfig.m",
];

/// The managed-resource controllers, by their metrics label: the ones
/// activation decides.
const MANAGED_KINDS: [&str; 8] = [
    "DatabaseInstance",
    "DatabaseInstance.m",
    "NodeGroup",
    "NodeGroup.m",
    "Subnet",
    "Subnet.m",
    "VPC",
    "VPC.m",
];

/// The seed's two policies: name, `spec.activate`, the controllers they add.
const POLICIES: [(&str, &[&str], &[&str]); 2] = [
    (
        "fakecloud-network",
        &["*.network.fakecloud.m.crossplane.io"],
        &["Subnet.m", "VPC.m"],
    ),
    (
        "fakecloud-databases",
        &["databaseinstances.*"],
        &["DatabaseInstance", "DatabaseInstance.m"],
    ),
];

/// The remaining kinds, which `mrap-activate-all.yaml` adds for the later
/// stories.
const REST: [&str; 4] = ["NodeGroup", "NodeGroup.m", "Subnet", "VPC"];

pub(crate) async fn play(system: &mut System) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    let stage = system.stage();
    let kube = system.cluster.client();
    let before = system.active_controllers().await?;
    stage.say(format!(
        "provider ready with 0 CRDs; active controllers: {}",
        list(&before)
    ));
    verdict.check("no controller runs before its CRD", before.is_empty());

    let installed = Package::of_this_provider()?.install(&kube).await?;
    stage.say(format!(
        "package installed as Crossplane installs a safe-start provider's: {} MRDs, state {}; {} CRDs of the ProviderConfig kinds",
        installed.mrds.len(),
        installed.state,
        installed.crds.len(),
    ));
    let mrds = wait_definitions(&kube, |m| m.iter().all(|d| d.established.is_some())).await?;
    for mrd in &mrds {
        stage.say(format!("  {}", mrd_row(mrd)));
    }
    let mut expected: Vec<String> = Vec::new();
    let active = wait_for_controllers(system, &expected).await?;
    stage.say(format!(
        "active controllers: {}; managed-resource controllers: {}",
        list(&active),
        list(&managed(&active))
    ));
    verdict.check(
        format!("every MRD is Inactive (saw {})", inactive(&mrds).len()),
        inactive(&mrds).len() == mrds.len() && mrds.len() == installed.mrds.len(),
    );
    verdict.check(
        format!(
            "the ProviderConfig controllers and no managed-resource one run before any MRAP (saw {})",
            list(&active)
        ),
        managed(&active).is_empty() && has_provider_configs(&active),
    );

    for (name, activate, kinds) in POLICIES {
        let policy = standin::activation_policy(name, activate);
        activate_with(system, &mut verdict, &mut expected, policy, kinds).await?;
    }

    // The later stories use every kind: the package's example policy,
    // Crossplane's default (`*`), activates the rest.
    let all = load_manifests(&package_examples_dir().join("mrap-activate-all.yaml"))?
        .into_iter()
        .next()
        .ok_or_else(|| DemoError::Unexpected("mrap-activate-all.yaml is empty".into()))?;
    activate_with(system, &mut verdict, &mut expected, all, &REST).await?;

    default_config::<ClusterProviderConfig>(system, "what namespaced resources use by default")
        .await?;
    default_config::<ProviderConfig>(system, "legacy, for the cluster-scoped kinds").await?;
    Ok(verdict)
}

/// Applies `policy`, waits until the controllers run that `kinds` add to
/// `expected`, and narrates the MRDs it activated, the time from its
/// creation to its controllers running, and its status.
async fn activate_with(
    system: &System,
    verdict: &mut Verdict,
    expected: &mut Vec<String>,
    policy: Value,
    kinds: &[&str],
) -> Result<(), DemoError> {
    let stage = system.stage();
    let kube = system.cluster.client();
    let name = policy["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let before: BTreeSet<String> = active_names(&standin::definitions(&kube).await?);
    stage.say(format!(
        "apply MRAP {name}: activate {}",
        policy["spec"]["activate"]
    ));
    let created = Instant::now();
    standin::apply_policy(&kube, &policy, DEMO_MANAGER).await?;
    let set: BTreeSet<String> = expected
        .iter()
        .cloned()
        .chain(kinds.iter().map(|k| (*k).to_owned()))
        .collect();
    *expected = set.into_iter().collect();
    let active = wait_for_controllers(system, expected).await?;
    let took = created.elapsed().as_secs_f64();
    let started_ok = managed(&active) == *expected && has_provider_configs(&active);
    let mrds = wait_definitions(&kube, |m| {
        m.iter()
            .filter(|d| d.is_active())
            .all(DefinitionStatus::is_established)
    })
    .await?;
    for mrd in mrds
        .iter()
        .filter(|m| m.is_active() && !before.contains(&m.name))
    {
        stage.say(format!("  {}", mrd_row(mrd)));
    }
    let started = kinds.join(", ");
    stage.say(format!(
        "-> {started} controller{} {} {took:.2}s after the MRAP was created",
        if kinds.len() > 1 { "s" } else { "" },
        if started_ok { "active" } else { "NOT active" },
    ));
    let still_inactive = inactive(&mrds);
    stage.say(format!(
        "   still Inactive: {}",
        if still_inactive.is_empty() {
            "none".to_owned()
        } else {
            still_inactive.join(", ")
        }
    ));
    if let Some(status) = standin::policy_status(&kube, &name).await? {
        stage.say(format!(
            "   MRAP {name}: status.activated [{}], Healthy={}",
            status.activated.join(", "),
            status
                .healthy
                .as_ref()
                .map(|c| format!("{:?} ({})", c.status, c.reason))
                .unwrap_or_else(|| "-".to_owned()),
        ));
    }
    verdict.check(
        format!(
            "MRAP {name} starts {started} and no other managed-resource controller (running: {})",
            list(&active)
        ),
        started_ok,
    );
    // Only active MRDs have CRDs.
    let names: BTreeSet<String> = mrds.iter().map(|m| m.name.clone()).collect();
    let crds: BTreeSet<String> = installed_package_crds(&kube)
        .await?
        .into_iter()
        .filter(|crd| names.contains(crd))
        .collect();
    verdict.check(
        format!("after MRAP {name}, exactly the active MRDs have CRDs"),
        crds == active_names(&mrds),
    );
    Ok(())
}

/// `kubectl get mrd` as one line: name, state, Established.
fn mrd_row(mrd: &DefinitionStatus) -> String {
    format!(
        "MRD {}  STATE={}  ESTABLISHED={}",
        mrd.name,
        mrd.state,
        mrd.established_column()
    )
}

fn active_names(mrds: &[DefinitionStatus]) -> BTreeSet<String> {
    mrds.iter()
        .filter(|m| m.is_active())
        .map(|m| m.name.clone())
        .collect()
}

fn inactive(mrds: &[DefinitionStatus]) -> Vec<&str> {
    mrds.iter()
        .filter(|m| !m.is_active())
        .map(|m| m.name.as_str())
        .collect()
}

/// Polls the MRDs until `done` holds or [`ACTIVATION`] passes; returns them
/// as last seen.
async fn wait_definitions(
    kube: &kube::Client,
    done: impl Fn(&[DefinitionStatus]) -> bool,
) -> Result<Vec<DefinitionStatus>, DemoError> {
    let deadline = tokio::time::Instant::now() + ACTIVATION;
    loop {
        let mrds = standin::definitions(kube).await?;
        if done(&mrds) || tokio::time::Instant::now() >= deadline {
            return Ok(mrds);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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

/// The managed-resource controllers among `active`.
fn managed(active: &[String]) -> Vec<String> {
    active
        .iter()
        .filter(|kind| MANAGED_KINDS.contains(&kind.as_str()))
        .cloned()
        .collect()
}

fn has_provider_configs(active: &[String]) -> bool {
    PROVIDER_CONFIGS
        .iter()
        .all(|kind| active.iter().any(|a| a == kind))
}

/// Polls the provider's metrics until the managed-resource controllers that
/// run are exactly `expected`, beside the ProviderConfig ones, or
/// [`ACTIVATION`] passes; returns every controller that ran last.
async fn wait_for_controllers(
    system: &System,
    expected: &[String],
) -> Result<Vec<String>, DemoError> {
    let deadline = tokio::time::Instant::now() + ACTIVATION;
    loop {
        let active = system.active_controllers().await?;
        let done = managed(&active) == expected && has_provider_configs(&active);
        if done || tokio::time::Instant::now() >= deadline {
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
