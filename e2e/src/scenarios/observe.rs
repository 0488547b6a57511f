//! Observe-only resources (seed 000): another team's VPC imported
//! read-only, a managed Subnet created inside it by reference, the import
//! procedure that takes it over with zero updates, and letting it go again.
//! Namespaced, the imported VPC can live in another team's namespace and the
//! Subnet reference it across namespaces.

use crossplane_types::well_known::EXTERNAL_NAME_ANNOTATION;
use fakecloud::model::Kind;
use serde_json::{Value, json};

use super::report::{at_provider_fields, drift_lines, mutating, status_row};
use super::{READY, REGION, ScenarioError, Stage, Verdict, collection, region, under};
use crate::managed::{
    at_provider, drift_count, external_name, is_ready, is_synced, observed_generation, spec_of,
};
use crate::objects::Objects;
use crate::scope::Scope;

/// A VPC another team made, imported read-only.
#[derive(Debug, Clone)]
pub struct ImportedVpc {
    pub name: String,
    /// The namespace it was imported in, when namespaced (the [`Stage`]'s
    /// objects' namespace at the import).
    pub namespace: String,
    /// fakecloud's id, the external name.
    pub id: String,
    /// The audit mark taken before the import: every call after it is the
    /// provider's doing on the import's behalf.
    pub since: i64,
}

impl ImportedVpc {
    fn path(&self) -> String {
        format!("{}/{}", collection("vpcs"), self.id)
    }

    /// The stage's objects, in the VPC's namespace.
    fn objects(&self, stage: &Stage<'_>) -> Objects {
        stage.objects.in_namespace(&self.namespace)
    }
}

/// The observe-only manifest: the external name and the region, nothing
/// else.
pub fn observed_manifest<S: Scope>(name: &str, id: &str) -> Value {
    S::manifest(
        "network",
        "VPC",
        json!({ "name": name, "annotations": { EXTERNAL_NAME_ANNOTATION: id } }),
        json!({ "managementPolicies": ["Observe"], "forProvider": { "region": REGION } }),
    )
}

/// Team B creates a VPC in fakecloud directly, outside Kubernetes; it is
/// imported with `managementPolicies: ["Observe"]`. `atProvider` then holds
/// the full observed state (more than `forProvider` names) and the spec is
/// left as written.
pub async fn import<S: Scope>(
    stage: &Stage<'_>,
    name: &str,
    cidr: &str,
    verdict: &mut Verdict,
) -> Result<ImportedVpc, ScenarioError> {
    let id = stage
        .outside_vpc(json!({ "cidrBlock": cidr, "tags": { "owner": "team-b" } }))
        .await?;
    stage.say(format!(
        "team B created {id} ({cidr}) in fakecloud directly, outside Kubernetes"
    ));

    let since = stage.audit_mark().await?;
    stage.say(format!(
        "apply VPC/{name} ({}): managementPolicies [\"Observe\"], external-name {id}, forProvider only the region",
        S::NAME
    ));
    let applied = stage
        .objects
        .apply::<S::Vpc>(observed_manifest::<S>(name, &id))
        .await?;
    let observed = stage
        .objects
        .wait_for::<S::Vpc>(name, "observed", READY, |v| {
            is_ready(v) && is_synced(v) && at_provider(v)["id"] == id.as_str()
        })
        .await?;
    stage.say(status_row(&observed));
    stage.say(at_provider_fields(
        &observed,
        &["cidrBlock", "state", "enableDnsSupport", "tags/owner"],
    ));
    let at = at_provider(&observed);
    verdict.check(
        "atProvider holds the full observed state (cidrBlock, tags, enableDnsSupport)",
        at["cidrBlock"] == cidr
            && at["tags"]["owner"] == "team-b"
            && at["enableDnsSupport"] == true,
    );
    verdict.check(
        "the observed VPC carries no tag of Crossplane's (only a create adds them)",
        at["tags"]
            .as_object()
            .is_some_and(|tags| !tags.keys().any(|k| k.starts_with("crossplane-"))),
    );
    verdict.check(
        "observe-only left spec.forProvider as written (no late-init)",
        spec_of(&observed) == spec_of(&applied),
    );
    Ok(ImportedVpc {
        name: name.to_owned(),
        namespace: stage.objects.namespace().to_owned(),
        id,
        since,
    })
}

/// A managed Subnet inside the imported VPC, found by `vpcIdRef`: the
/// reference resolves to the VPC's id, the Subnet is created there, and the
/// imported VPC sees no mutating call. Returns the Subnet's cloud id.
pub async fn subnet_by_reference<S: Scope>(
    stage: &Stage<'_>,
    vpc: &ImportedVpc,
    name: &str,
    cidr: &str,
    verdict: &mut Verdict,
) -> Result<String, ScenarioError> {
    let mark = stage.audit_mark().await?;
    let reference = S::reference(&vpc.name, &vpc.namespace);
    stage.say(format!(
        "apply Subnet/{name} ({}): vpcIdRef {reference}, cidrBlock {cidr}",
        S::NAME
    ));
    stage
        .objects
        .apply::<S::Subnet>(S::manifest(
            "network",
            "Subnet",
            json!({ "name": name }),
            json!({ "forProvider": {
                "region": REGION, "vpcIdRef": reference,
                "cidrBlock": cidr, "availabilityZone": "us-east-1a",
            } }),
        ))
        .await?;
    let subnet = stage
        .objects
        .wait_for::<S::Subnet>(name, "Ready", READY, |s| is_ready(s) && is_synced(s))
        .await?;
    stage.say(status_row(&subnet));
    let resolved = spec_of(&subnet)["forProvider"]["vpcId"]
        .as_str()
        .unwrap_or("-")
        .to_owned();
    stage.say(format!(
        "spec.forProvider.vpcId resolved from the ref: {resolved}"
    ));
    stage.say(at_provider_fields(
        &subnet,
        &["vpcId", "cidrBlock", "state", "availableIpAddressCount"],
    ));
    verdict.check(
        format!("vpcIdRef resolved to {} (saw {resolved})", vpc.id),
        resolved == vpc.id,
    );
    let subnet_id = external_name(&subnet).unwrap_or_default();
    let vpc_path = vpc.path();
    let subnets = collection("subnets");
    let subnet_path = format!("{subnets}/{subnet_id}");
    let calls = stage
        .audit_since(mark, |p| {
            under(p, &vpc_path) || p == subnets || under(p, &subnet_path)
        })
        .await?;
    stage.audit("provider calls", &calls);

    let in_cloud = stage
        .admin
        .resource(Kind::Subnet, &subnet_id, &region())
        .await?;
    verdict.check(
        format!("the Subnet was created inside {}", vpc.id),
        in_cloud.resource["vpcId"] == vpc.id.as_str(),
    );
    // A /24 has 256 addresses, 5 of which the cloud reserves.
    let free = &at_provider(&subnet)["availableIpAddressCount"];
    verdict.check(
        format!("atProvider counts the /24's 251 free addresses (saw {free})"),
        !cidr.ends_with("/24") || *free == 251,
    );
    let touched = calls
        .iter()
        .filter(|c| under(&c.path, &vpc_path) && c.method != "GET")
        .count();
    verdict.check(
        format!("zero mutating calls on the imported VPC (saw {touched})"),
        touched == 0,
    );
    let mutations = mutating(&calls);
    verdict.check(
        format!("the only mutating call created the Subnet (saw {mutations})"),
        mutations == 1,
    );
    Ok(subnet_id)
}

/// The import procedure: `forProvider` copied from `atProvider`, the
/// policies widened to `["*"]`. Taking over makes zero updates; a change
/// made afterwards is applied with one PATCH.
pub async fn take_over<S: Scope>(
    stage: &Stage<'_>,
    vpc: &ImportedVpc,
    verdict: &mut Verdict,
) -> Result<(), ScenarioError> {
    let objects = vpc.objects(stage);
    let observed = objects
        .wait_for::<S::Vpc>(&vpc.name, "observed", READY, is_ready)
        .await?;
    let cidr = at_provider(&observed)["cidrBlock"].clone();
    let tags = at_provider(&observed)["tags"].clone();
    let manifest_with = |policies: Value, tags: &Value| {
        S::manifest(
            "network",
            "VPC",
            json!({ "name": vpc.name, "annotations": { EXTERNAL_NAME_ANNOTATION: vpc.id } }),
            json!({ "managementPolicies": policies,
                    "forProvider": { "region": REGION, "cidrBlock": cidr, "tags": tags } }),
        )
    };
    let manifest = |tags: &Value| manifest_with(json!(["*"]), tags);

    let path = vpc.path();
    let mark = stage.audit_mark().await?;
    // The plan first: still observe-only, the copied fields declared;
    // status.drift says what widening the policies would change.
    stage.say(format!(
        "apply VPC/{}: still [\"Observe\"], forProvider.cidrBlock and tags copied from atProvider, to read the plan",
        vpc.name
    ));
    let planned = objects
        .apply::<S::Vpc>(manifest_with(json!(["Observe"]), &tags))
        .await?;
    let generation = kube::Resource::meta(&planned)
        .generation
        .unwrap_or_default();
    let plan = objects
        .wait_for::<S::Vpc>(&vpc.name, "plan read", READY, |v| {
            observed_generation(v) >= generation && drift_count(v).is_some()
        })
        .await?;
    for line in drift_lines(&plan) {
        stage.say(line);
    }
    verdict.check(
        "the plan before the takeover is empty (status.drift.count 0)",
        drift_count(&plan) == Some(0),
    );
    stage.say(format!(
        "apply VPC/{}: managementPolicies [\"*\"]",
        vpc.name
    ));
    let taken = objects.apply::<S::Vpc>(manifest(&tags)).await?;
    let generation = kube::Resource::meta(&taken).generation.unwrap_or_default();
    let reconciled = objects
        .wait_for::<S::Vpc>(&vpc.name, "reconciled under full control", READY, |v| {
            is_ready(v) && is_synced(v) && observed_generation(v) >= generation
        })
        .await?;
    tokio::time::sleep(stage.settle).await;
    stage.say(status_row(&reconciled));
    let takeover = stage.audit_since(mark, |p| under(p, &path)).await?;
    stage.audit("provider calls during the takeover", &takeover);
    // Zero updates anywhere in the cloud, not only on this VPC.
    let updates = mutating(&stage.audit_since(mark, |p| p.starts_with("/v1/")).await?);
    verdict.check(
        format!("taking over made zero updates (saw {updates})"),
        updates == 0,
    );

    let mut new_tags = tags.clone();
    new_tags["env"] = json!("prod");
    stage.say("now managed: apply tag env=prod");
    let mark = stage.audit_mark().await?;
    objects.apply::<S::Vpc>(manifest(&new_tags)).await?;
    let changed = objects
        .wait_for::<S::Vpc>(&vpc.name, "env tag applied", READY, |v| {
            at_provider(v)["tags"]["env"] == "prod"
        })
        .await?;
    stage.say(at_provider_fields(&changed, &["tags/owner", "tags/env"]));
    let change = stage.audit_since(mark, |p| under(p, &path)).await?;
    stage.audit("provider calls for the change", &change);
    let patches = change.iter().filter(|c| c.method == "PATCH").count();
    verdict.check(
        format!(
            "the change was applied with one PATCH (saw {patches} PATCH, {} mutating)",
            mutating(&change)
        ),
        patches == 1 && mutating(&change) == 1,
    );
    Ok(())
}

/// Deletes the observe-only managed resource: the object goes, the VPC
/// stays, and nothing since the import mutated it.
pub async fn release<S: Scope>(
    stage: &Stage<'_>,
    vpc: &ImportedVpc,
    verdict: &mut Verdict,
) -> Result<(), ScenarioError> {
    stage.say(format!("kubectl delete vpc {}", vpc.name));
    let objects = vpc.objects(stage);
    objects.delete::<S::Vpc>(&vpc.name).await?;
    objects.wait_gone::<S::Vpc>(&vpc.name, READY).await?;
    let stays = stage.cloud.get_vpc(REGION, &vpc.id).await.is_ok();
    verdict.check(
        format!("deleting the managed resource left {}", vpc.id),
        stays,
    );
    let calls = stage
        .audit_since(vpc.since, |p| p.starts_with("/v1/"))
        .await?;
    stage.audit("provider calls since the import", &calls);
    let mutations = mutating(&calls);
    verdict.check(
        format!("observe-only made zero mutating calls (saw {mutations})"),
        mutations == 0,
    );
    Ok(())
}

/// Import and release, as the tests play it on each cluster backend: the
/// imported VPC is observed in full, and outlives its managed resource
/// untouched.
pub async fn import_and_release<S: Scope>(
    stage: &Stage<'_>,
    name: &str,
) -> Result<Verdict, ScenarioError> {
    let mut verdict = Verdict::default();
    let vpc = import::<S>(stage, name, "10.1.0.0/16", &mut verdict).await?;
    release::<S>(stage, &vpc, &mut verdict).await?;
    Ok(verdict)
}
