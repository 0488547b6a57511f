//! Drift, field by field (issue 29): what differs between a managed
//! resource's declaration and the cloud, and what the provider does about
//! it, as `status.drift`, the `UpToDate` condition, the `DRIFT` column and
//! Events show it. An outside actor changes a VPC's tags in fakecloud: an
//! observe-only copy shows the drift and calls nothing that mutates; a
//! managed copy shows it, corrects it with one update, and clears it. A
//! resource whose policies lack `Create` previews what a create would send.

use std::time::Instant;

use crossplane_types::well_known::EXTERNAL_NAME_ANNOTATION;
use fakecloud::client::ListOptions;
use fakecloud::model::Kind;
use serde_json::{Value, json};

use super::report::{drift_lines, mutating, status_row};
use super::{READY, REGION, ScenarioError, Stage, Verdict, collection, region, under};
use crate::managed::{at_provider, condition, drift_count, drifted_field, is_ready};
use crate::objects::Kind as ObjectKind;
use crate::scope::Scope;

/// Whether `UpToDate` has this status and reason.
fn up_to_date<K: serde::Serialize>(object: &K, status: &str, reason: &str) -> bool {
    condition(object, "UpToDate").is_some_and(|(s, r, _)| s == status && r == reason)
}

/// Whether the Events about `name` include one with `reason`.
async fn has_event<K: ObjectKind>(
    stage: &Stage<'_>,
    name: &str,
    reason: &str,
) -> Result<Option<String>, ScenarioError> {
    Ok(stage
        .objects
        .events::<K>(name)
        .await?
        .into_iter()
        .find(|(r, _)| r == reason)
        .map(|(_, message)| message))
}

/// Polls the Events about `name` until one with `reason` appears.
async fn wait_event<K: ObjectKind>(
    stage: &Stage<'_>,
    name: &str,
    reason: &str,
) -> Result<Option<String>, ScenarioError> {
    let deadline = Instant::now() + READY;
    loop {
        if let Some(message) = has_event::<K>(stage, name, reason).await? {
            return Ok(Some(message));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

fn say_drift<K: serde::Serialize>(stage: &Stage<'_>, object: &K) {
    for line in drift_lines(object) {
        stage.say(line);
    }
}

/// The outside actor: sets the VPC's `env` tag in fakecloud through the
/// admin API, behind the provider's back.
async fn retag(stage: &Stage<'_>, id: &str, env: &str) -> Result<(), ScenarioError> {
    stage.say(format!(
        "an outside actor sets tag env={env} on {id} in fakecloud (admin API)"
    ));
    stage
        .admin
        .patch_resource(Kind::Vpc, id, &region(), &json!({ "tags": { "env": env } }))
        .await?;
    Ok(())
}

/// An observe-only VPC whose tags an outside actor changes: `status.drift`
/// shows `tags.env` (declared `prod`, observed `dev`, `WouldUpdate`),
/// `UpToDate=False` with reason `DriftIgnored`, one `DriftDetected` Event,
/// and the provider makes no mutating call. Returns the VPC's id.
pub async fn observed<S: Scope>(
    stage: &Stage<'_>,
    name: &str,
    verdict: &mut Verdict,
) -> Result<String, ScenarioError> {
    let id = stage
        .outside_vpc(
            json!({ "cidrBlock": "10.4.0.0/16", "tags": { "owner": "team-b", "env": "prod" } }),
        )
        .await?;
    stage.say(format!(
        "team B created {id} (tags owner=team-b, env=prod) in fakecloud directly"
    ));
    let mark = stage.audit_mark().await?;
    stage.say(format!(
        "apply VPC/{name} ({}): managementPolicies [\"Observe\"], external-name {id}, forProvider.tags env=prod",
        S::NAME
    ));
    stage
        .objects
        .apply::<S::Vpc>(S::manifest(
            "network",
            "VPC",
            json!({ "name": name, "annotations": { EXTERNAL_NAME_ANNOTATION: id } }),
            json!({ "managementPolicies": ["Observe"],
                    "forProvider": { "region": REGION, "cidrBlock": "10.4.0.0/16", "tags": { "env": "prod" } } }),
        ))
        .await?;
    let matching = stage
        .objects
        .wait_for::<S::Vpc>(name, "observed with no drift", READY, |v| {
            is_ready(v) && drift_count(v) == Some(0)
        })
        .await?;
    stage.say(status_row(&matching));
    verdict.check(
        "the matching import reads UpToDate=True (NoDrift), DRIFT 0",
        up_to_date(&matching, "True", "NoDrift"),
    );

    retag(stage, &id, "dev").await?;
    let changed_at = Instant::now();
    let drifted = stage
        .objects
        .wait_for::<S::Vpc>(name, "drift shown", READY, |v| {
            drifted_field(v, "tags.env").is_some()
        })
        .await?;
    stage.say(format!(
        "the drift showed {:.1}s after the outside change (one poll, plus a second, is {:.0?} here)",
        changed_at.elapsed().as_secs_f64(),
        stage.settle
    ));
    stage.say(status_row(&drifted));
    say_drift(stage, &drifted);
    let entry = drifted_field(&drifted, "tags.env").unwrap_or(Value::Null);
    verdict.check(
        "status.drift: tags.env declared prod, observed dev, WouldUpdate",
        entry["declared"] == "prod"
            && entry["observed"] == "dev"
            && entry["action"] == "WouldUpdate",
    );
    verdict.check(
        "UpToDate=False, reason DriftIgnored, DRIFT 1",
        up_to_date(&drifted, "False", "DriftIgnored") && drift_count(&drifted) == Some(1),
    );
    let event = wait_event::<S::Vpc>(stage, name, "DriftDetected").await?;
    stage.say(format!(
        "Event DriftDetected: {}",
        event.as_deref().unwrap_or("(none)")
    ));
    verdict.check("a DriftDetected Event names tags.env", {
        event.is_some_and(|m| m.contains("tags.env"))
    });

    // Several more polls: the drift stays reported and nothing mutates.
    tokio::time::sleep(stage.settle * 2).await;
    let calls = stage.audit_since(mark, |p| p.starts_with("/v1/")).await?;
    stage.audit("provider calls since the import", &calls);
    let mutations = mutating(&calls);
    verdict.check(
        format!("observe-only made zero mutating calls (saw {mutations})"),
        mutations == 0,
    );
    let cloud = stage.cloud.get_vpc(REGION, &id).await?.resource;
    verdict.check(
        "the cloud keeps the outside actor's env=dev",
        cloud.tags.get("env").map(String::as_str) == Some("dev"),
    );
    let events = stage.objects.events::<S::Vpc>(name).await?;
    let detected = events.iter().filter(|(r, _)| r == "DriftDetected").count();
    verdict.check(
        format!("one DriftDetected Event over several polls, not one per poll (saw {detected})"),
        detected == 1,
    );
    Ok(id)
}

/// A managed VPC whose tags an outside actor changes: the provider shows
/// the drift, corrects it with one PATCH, and clears it (`DriftDetected`,
/// then `DriftCleared` "corrected tags.env"; `UpToDate=True` again).
/// Returns the VPC's id.
pub async fn corrected<S: Scope>(
    stage: &Stage<'_>,
    name: &str,
    verdict: &mut Verdict,
) -> Result<String, ScenarioError> {
    stage.say(format!(
        "apply VPC/{name} ({}): managed, forProvider.tags env=prod, purpose={name}",
        S::NAME
    ));
    stage
        .objects
        .apply::<S::Vpc>(S::manifest(
            "network",
            "VPC",
            json!({ "name": name }),
            json!({ "forProvider": { "region": REGION, "cidrBlock": "10.5.0.0/16",
                                     "tags": { "env": "prod", "purpose": name } } }),
        ))
        .await?;
    let ready = stage
        .objects
        .wait_for::<S::Vpc>(name, "Ready with no drift", READY, |v| {
            is_ready(v) && drift_count(v) == Some(0)
        })
        .await?;
    stage.say(status_row(&ready));
    let id = at_provider(&ready)["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let path = format!("{}/{id}", collection("vpcs"));

    let mark = stage.audit_mark().await?;
    retag(stage, &id, "dev").await?;
    let detected = wait_event::<S::Vpc>(stage, name, "DriftDetected").await?;
    stage.say(format!(
        "Event DriftDetected: {}",
        detected.as_deref().unwrap_or("(none)")
    ));
    verdict.check(
        "a DriftDetected Event says tags.env is being updated",
        detected.is_some_and(|m| m.contains("tags.env (updating)")),
    );
    let cleared = wait_event::<S::Vpc>(stage, name, "DriftCleared").await?;
    stage.say(format!(
        "Event DriftCleared: {}",
        cleared.as_deref().unwrap_or("(none)")
    ));
    verdict.check(
        "a DriftCleared Event says tags.env was corrected",
        cleared.is_some_and(|m| m.contains("corrected tags.env")),
    );
    let settled = stage
        .objects
        .wait_for::<S::Vpc>(name, "drift cleared", READY, |v| {
            drift_count(v) == Some(0) && up_to_date(v, "True", "NoDrift")
        })
        .await?;
    stage.say(status_row(&settled));
    say_drift(stage, &settled);
    let cloud = stage.cloud.get_vpc(REGION, &id).await?.resource;
    verdict.check(
        "the cloud holds env=prod again",
        cloud.tags.get("env").map(String::as_str) == Some("prod"),
    );
    tokio::time::sleep(stage.settle).await;
    let calls = stage.audit_since(mark, |p| under(p, &path)).await?;
    stage.audit("calls since the outside change", &calls);
    let patches = calls
        .iter()
        .filter(|c| c.method == "PATCH" && c.actor == fakecloud::model::Actor::Api)
        .count();
    verdict.check(
        format!("the provider corrected it with one PATCH (saw {patches})"),
        patches == 1 && mutating(&calls) == 1,
    );
    Ok(id)
}

/// A VPC applied with `managementPolicies: ["Observe"]` and no external
/// resource: `status.drift` shows what a create would send (forProvider
/// merged over initProvider, `WouldCreate`) and nothing is created; widened
/// to `["*"]`, it is created once and the preview clears.
pub async fn create_preview<S: Scope>(
    stage: &Stage<'_>,
    name: &str,
    verdict: &mut Verdict,
) -> Result<(), ScenarioError> {
    let manifest = |policies: Value| {
        S::manifest(
            "network",
            "VPC",
            json!({ "name": name }),
            json!({ "managementPolicies": policies,
                    "forProvider": { "region": REGION, "cidrBlock": "10.6.0.0/16", "tags": { "purpose": name } },
                    "initProvider": { "enableDnsHostnames": true } }),
        )
    };
    let tagged = ListOptions {
        tags: vec![("purpose".to_owned(), Some(name.to_owned()))],
        ..ListOptions::default()
    };
    let mark = stage.audit_mark().await?;
    stage.say(format!(
        "apply VPC/{name} ({}): managementPolicies [\"Observe\"], no external resource yet, initProvider.enableDnsHostnames",
        S::NAME
    ));
    stage
        .objects
        .apply::<S::Vpc>(manifest(json!(["Observe"])))
        .await?;
    let preview = stage
        .objects
        .wait_for::<S::Vpc>(name, "create preview", READY, |v| {
            drift_count(v).is_some_and(|n| n > 0)
        })
        .await?;
    stage.say(status_row(&preview));
    say_drift(stage, &preview);
    let would_create = |path: &str, value: &str| {
        drifted_field(&preview, path)
            .is_some_and(|f| f["action"] == "WouldCreate" && f["declared"] == value)
    };
    // `status.drift` names fields as the provider's version does: the
    // namespaced kinds' is v1beta1, where enableDnsHostnames is
    // dns.hostnames (a report's paths are text, which no conversion
    // rewrites).
    let hostnames = if S::NAMESPACED {
        "dns.hostnames"
    } else {
        "enableDnsHostnames"
    };
    verdict.check(
        format!("the preview lists cidrBlock, tags.purpose and initProvider's {hostnames} as WouldCreate"),
        would_create("cidrBlock", "10.6.0.0/16")
            && would_create("tags.purpose", name)
            && would_create(hostnames, "true")
            && drift_count(&preview) == Some(3),
    );
    verdict.check(
        "UpToDate=False (DriftIgnored) and Synced=False say nothing was created",
        up_to_date(&preview, "False", "DriftIgnored")
            && condition(&preview, "Synced").is_some_and(|(s, ..)| s == "False"),
    );
    tokio::time::sleep(stage.settle).await;
    let calls = stage.audit_since(mark, |p| p.starts_with("/v1/")).await?;
    let before = stage.cloud.list_vpcs(REGION, &tagged).await?.items.len();
    verdict.check(
        format!(
            "the preview created nothing (saw {before} VPCs, {} mutating calls)",
            mutating(&calls)
        ),
        before == 0 && mutating(&calls) == 0,
    );

    stage.say("the plan reads right: apply managementPolicies [\"*\"]");
    stage
        .objects
        .apply::<S::Vpc>(manifest(json!(["*"])))
        .await?;
    let created = stage
        .objects
        .wait_for::<S::Vpc>(name, "created, preview cleared", READY, |v| {
            is_ready(v) && drift_count(v) == Some(0)
        })
        .await?;
    stage.say(status_row(&created));
    let after = stage.cloud.list_vpcs(REGION, &tagged).await?.items;
    verdict.check(
        format!("exactly one VPC was created (saw {})", after.len()),
        after.len() == 1,
    );
    verdict.check(
        "the created VPC has the previewed initProvider field",
        after.first().is_some_and(|v| v.enable_dns_hostnames),
    );
    Ok(())
}
