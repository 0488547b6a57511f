//! Stories 2 and 3: a VPC under full control, and another team's VPC
//! observed read-only with a managed Subnet created inside it by reference.

use apis::kinds::{Subnet, Vpc};
use apis::well_known::EXTERNAL_NAME_ANNOTATION;
use fakecloud::client::Address;
use fakecloud::model::{CreateVpc, Kind};
use serde_json::{Value, json};

use super::{READY, REGION, Shared, Verdict, collection, under};
use crate::demo::report::{self, at_provider_fields, line, status_row};
use crate::demo::{DemoError, System};
use crate::world::{at_provider, external_name, is_ready, is_synced};

pub(crate) const WEB_VPC: &str = "web-vpc";
const TEAM_VPC: &str = "team-b-vpc";
const SUBNET: &str = "app-subnet";

/// The full-control VPC's manifest; story 7 applies it again with
/// `deletionPolicy: Orphan`.
pub(crate) fn web_vpc(deletion_policy: &str) -> Value {
    json!({
        "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
        "metadata": { "name": WEB_VPC },
        "spec": {
            "deletionPolicy": deletion_policy,
            "forProvider": { "region": REGION, "cidrBlock": "10.0.0.0/16", "tags": { "team": "web" } },
        },
    })
}

pub(crate) async fn full_control(
    system: &mut System,
    shared: &mut Shared,
) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    let mark = system.audit_mark().await?;
    line(format!(
        "apply VPC/{WEB_VPC}: managementPolicies [\"*\"] (default), cidrBlock 10.0.0.0/16"
    ));
    system.objects.apply::<Vpc>(web_vpc("Delete")).await?;
    let vpc = system
        .objects
        .wait_for::<Vpc>(WEB_VPC, "Ready", READY, |v| is_ready(v) && is_synced(v))
        .await?;
    line(status_row(&vpc));
    line(at_provider_fields(
        &vpc,
        &["id", "state", "cidrBlock", "enableDnsSupport", "tags/team"],
    ));
    let id = external_name(&vpc).unwrap_or_default();
    let vpcs = collection("vpcs");
    let this_vpc = format!("{vpcs}/{id}");
    let calls = system
        .audit_since(mark, |p| p == vpcs || under(p, &this_vpc))
        .await?;
    report::audit("provider calls", &calls);

    verdict.check(
        "external name is the cloud-assigned id",
        id.starts_with("vpc-") && at_provider(&vpc)["id"] == id.as_str(),
    );
    let creates = calls.iter().filter(|c| c.method == "POST").count();
    verdict.check(
        format!("created exactly once (saw {creates} POST)"),
        creates == 1,
    );
    let in_cloud = system
        .admin
        .resource(Kind::Vpc, &id, &region())
        .await
        .is_ok();
    verdict.check("the VPC exists in fakecloud", in_cloud);
    shared.web_vpc = Some((WEB_VPC.to_owned(), id));
    Ok(verdict)
}

pub(crate) async fn observe_only(
    system: &mut System,
    shared: &mut Shared,
) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    let body: CreateVpc = serde_json::from_value(
        json!({ "cidrBlock": "10.1.0.0/16", "tags": { "owner": "team-b" } }),
    )
    .map_err(|e| DemoError::Unexpected(format!("VPC body: {e}")))?;
    let team_id = system
        .cloud
        .create_vpc(REGION, &body, None)
        .await?
        .resource
        .id;
    line(format!(
        "team B created {team_id} (10.1.0.0/16) in fakecloud directly, outside Kubernetes"
    ));

    let mark = system.audit_mark().await?;
    line(format!(
        "apply VPC/{TEAM_VPC}: managementPolicies [\"Observe\"], external-name {team_id}, forProvider only the region"
    ));
    let applied = system
        .objects
        .apply::<Vpc>(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": TEAM_VPC, "annotations": { EXTERNAL_NAME_ANNOTATION: team_id } },
            "spec": { "managementPolicies": ["Observe"], "forProvider": { "region": REGION } },
        }))
        .await?;
    let observed = system
        .objects
        .wait_for::<Vpc>(TEAM_VPC, "observed", READY, |v| {
            is_ready(v) && is_synced(v) && at_provider(v)["id"] == team_id.as_str()
        })
        .await?;
    line(status_row(&observed));
    line(at_provider_fields(
        &observed,
        &["cidrBlock", "state", "enableDnsSupport", "tags/owner"],
    ));
    verdict.check(
        "atProvider holds the full observed state",
        at_provider(&observed)["cidrBlock"] == "10.1.0.0/16"
            && at_provider(&observed)["tags"]["owner"] == "team-b",
    );
    verdict.check(
        "observe-only left spec.forProvider as written (no late-init)",
        observed.spec == applied.spec,
    );

    line(format!(
        "apply Subnet/{SUBNET}: vpcIdRef {TEAM_VPC}, cidrBlock 10.1.1.0/24"
    ));
    system
        .objects
        .apply::<Subnet>(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "Subnet",
            "metadata": { "name": SUBNET },
            "spec": { "forProvider": {
                "region": REGION, "vpcIdRef": { "name": TEAM_VPC },
                "cidrBlock": "10.1.1.0/24", "availabilityZone": "us-east-1a",
            } },
        }))
        .await?;
    let subnet = system
        .objects
        .wait_for::<Subnet>(SUBNET, "Ready", READY, |s| is_ready(s) && is_synced(s))
        .await?;
    line(status_row(&subnet));
    line(format!(
        "spec.forProvider.vpcId resolved from the ref: {}",
        subnet.spec.for_provider.vpc_id.as_deref().unwrap_or("-")
    ));
    line(at_provider_fields(
        &subnet,
        &["vpcId", "cidrBlock", "state", "availableIpAddressCount"],
    ));
    let subnet_id = external_name(&subnet).unwrap_or_default();
    let team_path = format!("{}/{team_id}", collection("vpcs"));
    let subnets = collection("subnets");
    let subnet_path = format!("{subnets}/{subnet_id}");
    let calls = system
        .audit_since(mark, |p| {
            under(p, &team_path) || p == subnets || under(p, &subnet_path)
        })
        .await?;
    report::audit("provider calls", &calls);

    let cloud_subnet = system
        .admin
        .resource(Kind::Subnet, &subnet_id, &region())
        .await?;
    verdict.check(
        "the Subnet was created inside team B's VPC",
        cloud_subnet.resource["vpcId"] == team_id.as_str(),
    );
    let touched = calls
        .iter()
        .filter(|c| under(&c.path, &team_path) && c.method != "GET")
        .count();
    verdict.check(
        format!("zero mutating calls on team B's VPC (saw {touched})"),
        touched == 0,
    );
    let mutating = report::mutating(&calls);
    verdict.check(
        format!("the only mutating call created the Subnet (saw {mutating})"),
        mutating == 1,
    );
    shared.team_vpc = Some((TEAM_VPC.to_owned(), team_id));
    shared.subnet_id = Some(subnet_id);
    Ok(verdict)
}

pub(crate) fn region() -> Address {
    Address {
        region: Some(REGION.to_owned()),
        ..Address::default()
    }
}
