//! A VPC under full control: created once, changed with one call, and
//! deleted from the cloud, or orphaned in it (seed 003's deletion policy;
//! a namespaced VPC, which has no deletion policy, orphans by leaving
//! `Delete` out of its management policies).

use fakecloud::model::Kind;
use serde_json::{Value, json};

use crate::scope::{Scope, merged};

use super::report::{at_provider_fields, mutating, plain, status_row};
use super::{READY, REGION, ScenarioError, Stage, Verdict, collection, region, under};
use crate::managed::{at_provider, external_name, is_ready, is_synced};

/// The CIDR block of every full-control VPC.
const CIDR: &str = "10.0.0.0/16";

/// A VPC managed by the provider, as a scenario left it.
#[derive(Debug, Clone)]
pub struct ManagedVpc {
    pub name: String,
    /// fakecloud's id, the external name.
    pub id: String,
    /// `forProvider.tags` as last applied, so a later apply changes only
    /// what it means to.
    pub tags: Value,
}

impl ManagedVpc {
    fn path(&self) -> String {
        format!("{}/{}", collection("vpcs"), self.id)
    }
}

/// The VPC's manifest: the deletion behaviour as given, otherwise the
/// default management policies.
pub fn manifest<S: Scope>(name: &str, tags: &Value, orphan: bool) -> Value {
    let spec = json!({ "forProvider": { "region": REGION, "cidrBlock": CIDR, "tags": tags } });
    S::manifest(
        "network",
        "VPC",
        json!({ "name": name }),
        merged(spec, &S::deletion(orphan)),
    )
}

/// Applies a new VPC and waits until it is Ready: created with exactly one
/// POST, its external name the id fakecloud assigned, `atProvider` filled.
pub async fn create<S: Scope>(
    stage: &Stage<'_>,
    name: &str,
    tags: Value,
    verdict: &mut Verdict,
) -> Result<ManagedVpc, ScenarioError> {
    let mark = stage.audit_mark().await?;
    stage.say(format!(
        "apply VPC/{name} ({}): managementPolicies [\"*\"] (default), cidrBlock {CIDR}",
        S::NAME
    ));
    stage
        .objects
        .apply::<S::Vpc>(manifest::<S>(name, &tags, false))
        .await?;
    let ready = stage
        .objects
        .wait_for::<S::Vpc>(name, "Ready and Synced", READY, |v| {
            is_ready(v) && is_synced(v)
        })
        .await?;
    stage.say(status_row(&ready));
    stage.say(at_provider_fields(
        &ready,
        &["id", "state", "cidrBlock", "enableDnsSupport", "tags/team"],
    ));
    let vpc = ManagedVpc {
        name: name.to_owned(),
        id: external_name(&ready).unwrap_or_default(),
        tags,
    };
    let vpcs = collection("vpcs");
    let this_vpc = vpc.path();
    let calls = stage
        .audit_since(mark, |p| p == vpcs || under(p, &this_vpc))
        .await?;
    stage.audit("provider calls", &calls);

    let at = at_provider(&ready);
    verdict.check(
        format!("the external name is the cloud-assigned id ({})", vpc.id),
        vpc.id.starts_with("vpc-") && at["id"] == vpc.id.as_str(),
    );
    verdict.check(
        format!(
            "atProvider shows it available with cidrBlock {CIDR} (saw {} {})",
            at["state"], at["cidrBlock"]
        ),
        at["state"] == "available" && at["cidrBlock"] == CIDR,
    );
    // Crossplane's identifying tags (crossplane-runtime's GetExternalTags),
    // added at create beside the user's.
    let tags = &at["tags"];
    let namespace = kube::ResourceExt::namespace(&ready);
    verdict.check(
        format!(
            "Crossplane's tags on the cloud VPC (crossplane-kind {}, crossplane-name {}, crossplane-namespace {})",
            tags["crossplane-kind"], tags["crossplane-name"], tags["crossplane-namespace"]
        ),
        tags["crossplane-name"] == name
            && tags["crossplane-kind"]
                .as_str()
                .is_some_and(|k| k.starts_with("vpc.network.fakecloud."))
            && tags["crossplane-providerconfig"].is_string()
            && tags["crossplane-providerconfig-kind"].is_string()
            && tags["crossplane-namespace"].as_str() == namespace.as_deref(),
    );
    let creates = calls.iter().filter(|c| c.method == "POST").count();
    verdict.check(
        format!("created exactly once (saw {creates} POST)"),
        creates == 1,
    );
    let in_cloud = stage
        .admin
        .resource(Kind::Vpc, &vpc.id, &region())
        .await
        .is_ok();
    verdict.check("the VPC exists in fakecloud", in_cloud);
    Ok(vpc)
}

/// Applies new tags: exactly one call changes the cloud VPC, a PATCH, and
/// nothing follows it within a poll.
pub async fn change_tags<S: Scope>(
    stage: &Stage<'_>,
    vpc: &mut ManagedVpc,
    tags: Value,
    verdict: &mut Verdict,
) -> Result<(), ScenarioError> {
    let mark = stage.audit_mark().await?;
    stage.say(format!("apply VPC/{}: tags {tags}", vpc.name));
    stage
        .objects
        .apply::<S::Vpc>(manifest::<S>(&vpc.name, &tags, false))
        .await?;
    let wanted = tags.clone();
    let changed = stage
        .objects
        .wait_for::<S::Vpc>(&vpc.name, "the new tags observed", READY, |v| {
            // Crossplane's identifying tags sit beside the user's.
            let seen = &at_provider(v)["tags"];
            is_ready(v)
                && wanted
                    .as_object()
                    .is_some_and(|want| want.iter().all(|(k, w)| &seen[k] == w))
        })
        .await?;
    vpc.tags = tags;
    tokio::time::sleep(stage.settle).await;
    stage.say(at_provider_fields(&changed, &["tags/team"]));
    let path = vpc.path();
    let calls = stage.audit_since(mark, |p| under(p, &path)).await?;
    stage.audit("provider calls for the change", &calls);
    let methods: Vec<&str> = calls
        .iter()
        .filter(|c| c.method != "GET")
        .map(|c| c.method.as_str())
        .collect();
    verdict.check(
        format!("the change was exactly one PATCH (saw {methods:?})"),
        methods == ["PATCH"],
    );
    Ok(())
}

/// Deletes the managed resource: the cloud VPC goes first, then the object.
pub async fn delete<S: Scope>(
    stage: &Stage<'_>,
    vpc: &ManagedVpc,
    verdict: &mut Verdict,
) -> Result<(), ScenarioError> {
    stage.say(format!("kubectl delete vpc {}", vpc.name));
    stage.objects.delete::<S::Vpc>(&vpc.name).await?;
    stage.objects.wait_gone::<S::Vpc>(&vpc.name, READY).await?;
    stage.say(format!("VPC/{}: deleted from Kubernetes", vpc.name));
    let gone = match stage.cloud.get_vpc(REGION, &vpc.id).await {
        Err(e) => e.is_not_found(),
        Ok(_) => false,
    };
    verdict.check(format!("{} is gone from fakecloud", vpc.id), gone);
    Ok(())
}

/// Sets the VPC to orphan (`deletionPolicy: Orphan`, or policies without
/// `Delete`) and deletes the managed resource: the object goes, the cloud
/// VPC stays, and no DELETE reaches fakecloud.
pub async fn orphan<S: Scope>(
    stage: &Stage<'_>,
    vpc: &ManagedVpc,
    verdict: &mut Verdict,
) -> Result<(), ScenarioError> {
    let mark = stage.audit_mark().await?;
    stage.say(format!(
        "apply VPC/{0} with {1}, then kubectl delete vpc {0}",
        vpc.name,
        S::deletion(true)
    ));
    stage
        .objects
        .apply::<S::Vpc>(manifest::<S>(&vpc.name, &vpc.tags, true))
        .await?;
    stage.objects.delete::<S::Vpc>(&vpc.name).await?;
    stage.objects.wait_gone::<S::Vpc>(&vpc.name, READY).await?;
    stage.say(format!("VPC/{}: deleted from Kubernetes", vpc.name));
    let in_cloud = stage.admin.resource(Kind::Vpc, &vpc.id, &region()).await;
    stage.say(format!(
        "{} in fakecloud: {}",
        vpc.id,
        match &in_cloud {
            Ok(found) => format!("still there (state {})", plain(&found.resource["state"])),
            Err(e) => format!("GONE ({e})"),
        }
    ));
    let path = vpc.path();
    let calls = stage.audit_since(mark, |p| under(p, &path)).await?;
    stage.audit("provider calls", &calls);
    verdict.check("the cloud VPC still exists", in_cloud.is_ok());
    let deletes = calls.iter().filter(|c| c.method == "DELETE").count();
    verdict.check(
        format!("no DELETE reached fakecloud (saw {deletes})"),
        deletes == 0 && mutating(&calls) == 0,
    );
    Ok(())
}

/// The whole lifecycle, as the tests play it on each cluster backend:
/// created once, a tag change as one PATCH, deleted from the cloud.
pub async fn lifecycle<S: Scope>(stage: &Stage<'_>, name: &str) -> Result<Verdict, ScenarioError> {
    let mut verdict = Verdict::default();
    let mut vpc = create::<S>(stage, name, json!({ "team": "a" }), &mut verdict).await?;
    change_tags::<S>(stage, &mut vpc, json!({ "team": "b" }), &mut verdict).await?;
    delete::<S>(stage, &vpc, &mut verdict).await?;
    Ok(verdict)
}
