//! Story 4, the import procedure (seed 000): an observed resource is taken
//! over by copying its observed state into `forProvider` and widening the
//! policies; the takeover itself must not change the cloud resource.

use std::time::Duration;

use apis::kinds::Vpc;
use apis::well_known::EXTERNAL_NAME_ANNOTATION;
use serde_json::{Value, json};

use super::{READY, REGION, Shared, Verdict, collection, under};
use crate::demo::report::{self, at_provider_fields, line, status_row};
use crate::demo::{DemoError, System};
use crate::world::{at_provider, is_ready, is_synced};

pub(crate) async fn play(system: &mut System, shared: &Shared) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    let Some((name, id)) = shared.team_vpc.clone() else {
        verdict.check("story 3 imported a VPC to take over", false);
        return Ok(verdict);
    };
    let observed = system
        .objects
        .get::<Vpc>(&name)
        .await?
        .ok_or_else(|| DemoError::Unexpected(format!("VPC {name} is gone")))?;
    let cidr = at_provider(&observed)["cidrBlock"].clone();
    let tags = at_provider(&observed)["tags"].clone();
    let manifest = |tags: &Value| {
        json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": name, "annotations": { EXTERNAL_NAME_ANNOTATION: id } },
            "spec": { "managementPolicies": ["*"],
                      "forProvider": { "region": REGION, "cidrBlock": cidr, "tags": tags } },
        })
    };

    let path = format!("{}/{id}", collection("vpcs"));
    let mark = system.audit_mark().await?;
    line(format!(
        "apply VPC/{name}: managementPolicies [\"*\"], forProvider.cidrBlock and tags copied from atProvider"
    ));
    let taken = system.objects.apply::<Vpc>(manifest(&tags)).await?;
    let generation = taken.metadata.generation.unwrap_or_default();
    let reconciled = system
        .objects
        .wait_for::<Vpc>(&name, "reconciled under full control", READY, |v| {
            is_ready(v)
                && is_synced(v)
                && v.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .all(|c| c.observed_generation.unwrap_or_default() >= generation)
                })
        })
        .await?;
    // Let at least one more poll pass, so "no update" is not just "not yet".
    tokio::time::sleep(system.options.poll_interval + Duration::from_secs(1)).await;
    line(status_row(&reconciled));
    let takeover = system.audit_since(mark, |p| under(p, &path)).await?;
    report::audit("provider calls during the takeover", &takeover);
    let updates = report::mutating(&takeover);
    verdict.check(
        format!("taking over made zero updates (saw {updates})"),
        updates == 0,
    );

    let mut new_tags = tags.clone();
    new_tags["env"] = json!("prod");
    line("now managed: apply tag env=prod");
    let mark = system.audit_mark().await?;
    system.objects.apply::<Vpc>(manifest(&new_tags)).await?;
    let changed = system
        .objects
        .wait_for::<Vpc>(&name, "env tag applied", READY, |v| {
            at_provider(v)["tags"]["env"] == "prod"
        })
        .await?;
    line(at_provider_fields(&changed, &["tags/owner", "tags/env"]));
    let change = system.audit_since(mark, |p| under(p, &path)).await?;
    report::audit("provider calls for the change", &change);
    let patches = change.iter().filter(|c| c.method == "PATCH").count();
    verdict.check(
        format!(
            "the change was applied with one PATCH (saw {patches} PATCH, {} mutating)",
            report::mutating(&change)
        ),
        patches == 1 && report::mutating(&change) == 1,
    );
    Ok(verdict)
}
