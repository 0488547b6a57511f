//! Disaster recovery rehearsed with fakecloud's snapshots (issue 43): a
//! managed VPC and an observed one, a snapshot of the cloud, both VPCs
//! deleted behind the provider's back, then the snapshot loaded.
//!
//! What the provider does, and why:
//! - After the deletions it creates the managed VPC again, once, under a
//!   new id (its policies include `Create`), and reports the observed one
//!   missing (`Synced=False`), looking again at its poll interval.
//! - The load brings back both old VPCs and takes away the replacement.
//!   The managed VPC's recorded id is now missing, so the provider would
//!   create it a third time; before that second create it looks for a
//!   cloud VPC carrying its identifying tags, finds the restored one and
//!   adopts it (`AdoptedExternalResource`): no duplicate, nothing
//!   untracked, no create. The observed VPC is simply found again.
//!
//! The load replaces the whole cloud state (`overwrite`), the audit too:
//! the story's audit marks are taken after it.

use fakecloud::client::ListOptions;
use fakecloud::model::LoadStrategy;
use serde_json::{Value, json};

use super::observe::observed_manifest;
use super::report::{mutating, status_row};
use super::{READY, REGION, ScenarioError, Stage, Verdict, collection, under};
use crate::managed::{condition, external_name, is_ready, is_synced};
use crate::scope::Scope;

/// The names a play of the story uses: the managed VPC, the observed one
/// and the snapshot.
#[derive(Debug, Clone)]
pub struct Names {
    pub managed: String,
    pub observed: String,
    pub snapshot: String,
}

/// The managed VPC's manifest.
fn managed_manifest<S: Scope>(name: &str) -> Value {
    S::manifest(
        "network",
        "VPC",
        json!({ "name": name }),
        json!({ "forProvider": { "region": REGION, "cidrBlock": "10.71.0.0/16" } }),
    )
}

/// Plays the story on the stage's objects (see the module's docs).
pub async fn play<S: Scope>(stage: &Stage<'_>, names: &Names) -> Result<Verdict, ScenarioError> {
    let mut verdict = Verdict::default();
    let objects = stage.objects;

    // Two VPCs: one the provider manages, one another team made that it
    // only observes.
    let theirs = stage
        .outside_vpc(json!({ "cidrBlock": "10.72.0.0/16", "tags": { "owner": "team-b" } }))
        .await?;
    stage.say(format!(
        "apply VPC/{} (managed) and VPC/{} (observe-only, team B's {theirs})",
        names.managed, names.observed
    ));
    objects
        .apply::<S::Vpc>(managed_manifest::<S>(&names.managed))
        .await?;
    objects
        .apply::<S::Vpc>(observed_manifest::<S>(&names.observed, &theirs))
        .await?;
    let managed = objects
        .wait_for::<S::Vpc>(&names.managed, "Ready", READY, |v| {
            is_ready(v) && is_synced(v)
        })
        .await?;
    let first = external_name(&managed).unwrap_or_default();
    objects
        .wait_for::<S::Vpc>(&names.observed, "observed", READY, |v| {
            is_ready(v) && is_synced(v)
        })
        .await?;
    stage.say(status_row(&managed));

    let saved = stage.admin.save_snapshot(&names.snapshot).await?;
    stage.say(format!(
        "fakecloud: snapshot {:?} saved ({} bytes)",
        saved.name, saved.size
    ));

    // Lost behind the provider's back.
    let before_loss = stage.audit_mark().await?;
    stage.cloud.delete_vpc(REGION, &first).await?;
    stage.cloud.delete_vpc(REGION, &theirs).await?;
    stage.say(format!(
        "in fakecloud, outside Kubernetes: delete {first} (managed) and {theirs} (observed)"
    ));
    let recreated = objects
        .wait_for::<S::Vpc>(&names.managed, "created again", READY, |v| {
            is_ready(v) && external_name(v).is_some_and(|id| id != first)
        })
        .await?;
    let second = external_name(&recreated).unwrap_or_default();
    let missing = objects
        .wait_for::<S::Vpc>(&names.observed, "reported missing", READY, |v| {
            condition(v, "Synced").is_some_and(|(status, ..)| status == "False")
        })
        .await?;
    stage.say(status_row(&recreated));
    stage.say(status_row(&missing));
    let creates = stage
        .audit_since(before_loss, |path| under(path, &collection("vpcs")))
        .await?
        .into_iter()
        .filter(|e| e.method == "POST")
        .count();
    verdict.check(
        "the managed VPC was created again once, under a new id",
        creates == 1 && second != first,
    );
    verdict.check(
        "the observed VPC is reported missing, not created",
        condition(&missing, "Synced")
            .is_some_and(|(_, _, message)| message.contains("does not exist")),
    );

    // The cloud goes back to the snapshot: the old VPCs return, the
    // replacement goes.
    let loaded = stage
        .admin
        .load_snapshot(&names.snapshot, LoadStrategy::Overwrite)
        .await?;
    let after_load = stage.audit_mark().await?;
    stage.say(format!(
        "fakecloud: snapshot {:?} loaded (overwrite): {} VPCs",
        names.snapshot, loaded.resources.vpc
    ));
    let adopted = objects
        .wait_for::<S::Vpc>(&names.managed, "adopted", READY, |v| {
            is_ready(v) && is_synced(v) && external_name(v).as_deref() == Some(first.as_str())
        })
        .await?;
    let found = objects
        .wait_for::<S::Vpc>(&names.observed, "observed again", READY, |v| {
            is_ready(v) && is_synced(v)
        })
        .await?;
    stage.say(status_row(&adopted));
    stage.say(status_row(&found));
    // One poll more, so that a late create would show.
    tokio::time::sleep(stage.settle).await;
    // This story's calls: on its three VPCs, and lists of the collection
    // (the search by tags); other stories' polls are left out.
    let vpcs = collection("vpcs");
    let ours: Vec<String> = [&first, &second, &theirs]
        .iter()
        .map(|id| format!("{vpcs}/{id}"))
        .collect();
    let calls = stage
        .audit_since(after_load, |path| {
            path == vpcs || ours.iter().any(|vpc| under(path, vpc))
        })
        .await?;
    stage.audit("after the load", &calls);
    verdict.check(
        "the restored VPC is managed again under its old id, adopted, not created",
        mutating(&calls) == 0,
    );
    let tagged = ListOptions {
        tags: vec![("crossplane-name".to_owned(), Some(names.managed.clone()))],
        ..ListOptions::default()
    };
    let carrying: Vec<String> = stage
        .cloud
        .list_vpcs(REGION, &tagged)
        .await?
        .items
        .into_iter()
        .map(|vpc| vpc.id)
        .collect();
    stage.say(format!("cloud VPCs carrying its tags: {carrying:?}"));
    verdict.check(
        "the cloud holds one VPC of the managed resource, the restored one",
        carrying == [first.clone()],
    );
    let theirs_path = format!("{vpcs}/{theirs}");
    let on_theirs: Vec<_> = calls.iter().filter(|e| e.path == theirs_path).collect();
    verdict.check(
        "the observed VPC is read from the cloud again, and only read",
        !on_theirs.is_empty() && on_theirs.iter().all(|e| e.method == "GET"),
    );
    Ok(verdict)
}
