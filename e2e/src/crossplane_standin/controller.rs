//! The watch loop: every change to an MRAP, an MRD or a CRD triggers one
//! reconcile of the whole picture (list the MRAPs, list the MRDs, activate,
//! apply CRDs, write the statuses that changed). With a provider's handful
//! of MRDs a whole pass is a few requests, and one pass over everything
//! cannot miss an interplay between objects that per-object reconciles
//! would have to route (an MRD applied after the MRAP that names it, a CRD
//! deleted under an active MRD).
//!
//! Idempotent: a pass that finds everything as wanted writes nothing, so
//! the events of its own writes end in a pass that does nothing.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::time::Duration;

use crossplane_types::condition::{Condition, set_condition};
use futures::stream::{BoxStream, SelectAll};
use futures::{FutureExt as _, StreamExt as _};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams, PartialObjectMeta, Patch, PatchParams};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, watcher};
use kube::{Client, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::policy::{self, CrdState, Definition, Policy};
use super::{FIELD_MANAGER, StandInError, mrap_api, mrap_resource, mrd_api, mrd_resource};
use crate::conversion::WebhookTarget;
use crate::crds::strip_cel_rules;

/// First wait before a failed pass is tried again; doubles up to
/// [`MAX_RETRY`]. A watch event retries at once.
const FIRST_RETRY: Duration = Duration::from_millis(200);
const MAX_RETRY: Duration = Duration::from_secs(10);

/// The stand-in's controller state.
pub(crate) struct Reconciler {
    mrds: Api<DynamicObject>,
    mraps: Api<DynamicObject>,
    crds: Api<CustomResourceDefinition>,
    /// The server predates CEL rules: CRDs are applied without them.
    strip_cel: bool,
    /// Where the CRDs whose conversion is a webhook send it.
    webhook: Option<WebhookTarget>,
    /// MRD name -> (uid, generation) whose CRD this process applied, so an
    /// unchanged MRD whose CRD exists is not applied again on every pass.
    applied: HashMap<String, (String, i64)>,
}

/// One pass's outcome: how many objects could not be brought where wanted
/// (they are retried with backoff).
#[derive(Debug, Default)]
pub(crate) struct Pass {
    pub failures: usize,
}

impl Reconciler {
    pub(crate) fn new(client: Client, strip_cel: bool, webhook: Option<WebhookTarget>) -> Self {
        Self {
            mrds: mrd_api(client.clone()),
            mraps: mrap_api(client.clone()),
            crds: Api::all(client),
            strip_cel,
            webhook,
            applied: HashMap::new(),
        }
    }

    /// Runs until `shutdown`: a pass at start (the watches' initial
    /// listing), then one after every batch of watch events, and again
    /// with backoff after a pass that failed.
    pub(crate) async fn run(mut self, shutdown: CancellationToken) -> Result<(), StandInError> {
        let mut triggers = self.triggers();
        let mut retry_at: Option<Instant> = None;
        let mut backoff = FIRST_RETRY;
        loop {
            let retry = async {
                match retry_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                () = retry => {}
                event = triggers.next() => if event.is_none() {
                    return Err(StandInError::WatchEnded);
                },
            }
            // The events already queued are covered by this pass too.
            while let Some(Some(())) = triggers.next().now_or_never() {}
            let outcome = self.reconcile().await;
            match outcome {
                Ok(pass) if pass.failures == 0 => {
                    retry_at = None;
                    backoff = FIRST_RETRY;
                    continue;
                }
                Ok(pass) => tracing::warn!(
                    failures = pass.failures,
                    retry_in = ?backoff,
                    "some ManagedResourceDefinitions could not be reconciled"
                ),
                Err(error) => tracing::warn!(%error, retry_in = ?backoff, "reconcile failed"),
            }
            retry_at = Some(Instant::now() + backoff);
            backoff = (backoff * 2).min(MAX_RETRY);
        }
    }

    /// One `()` per watch event of MRDs, MRAPs and CRDs (metadata only:
    /// what changed is read again by the pass).
    fn triggers(&self) -> SelectAll<BoxStream<'static, ()>> {
        fn events<K>(api: Api<K>) -> BoxStream<'static, ()>
        where
            K: kube::Resource + Clone + DeserializeOwned + Debug + Send + 'static,
        {
            watcher(api, watcher::Config::default())
                .default_backoff()
                .filter_map(|event| async move {
                    match event {
                        Ok(_) => Some(()),
                        Err(error) => {
                            tracing::debug!(%error, "watch error; retrying");
                            None
                        }
                    }
                })
                .boxed()
        }
        let client = self.crds.clone().into_client();
        futures::stream::select_all([
            events(Api::<PartialObjectMeta<DynamicObject>>::all_with(
                client.clone(),
                &mrd_resource(),
            )),
            events(Api::<PartialObjectMeta<DynamicObject>>::all_with(
                client.clone(),
                &mrap_resource(),
            )),
            events(Api::<PartialObjectMeta<CustomResourceDefinition>>::all(
                client,
            )),
        ])
    }

    /// One pass: activate what the policies name, give every active MRD its
    /// CRD, and write the MRD and MRAP statuses that changed.
    pub(crate) async fn reconcile(&mut self) -> Result<Pass, StandInError> {
        let list = ListParams::default();
        let policies = self
            .mraps
            .list(&list)
            .await
            .map_err(|e| StandInError::kube("listing ManagedResourceActivationPolicies", e))?
            .items;
        let mut mrds = self
            .mrds
            .list(&list)
            .await
            .map_err(|e| StandInError::kube("listing ManagedResourceDefinitions", e))?
            .items;
        let crds: BTreeMap<String, CustomResourceDefinition> = self
            .crds
            .list(&list)
            .await
            .map_err(|e| StandInError::kube("listing CustomResourceDefinitions", e))?
            .items
            .into_iter()
            .map(|crd| (crd.name_any(), crd))
            .collect();

        let plan = policy::plan(
            &policies.iter().map(policy_view).collect::<Vec<_>>(),
            &mrds.iter().map(definition_view).collect::<Vec<_>>(),
        );
        let mut pass = Pass::default();
        let mut not_activated = Vec::new();
        for mrd in &mut mrds {
            let name = mrd.name_any();
            if !plan.activate.contains(&name) {
                continue;
            }
            match self.activate(&name).await {
                Ok(updated) => *mrd = updated,
                Err(error) => {
                    tracing::warn!(mrd = %name, %error, "cannot activate");
                    pass.failures += 1;
                    not_activated.push(name);
                }
            }
        }
        for mrd in &mrds {
            if !self.reconcile_definition(mrd, &crds).await {
                pass.failures += 1;
            }
        }
        for mrap in policies
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
        {
            let activated = plan
                .activated_by
                .get(&mrap.name_any())
                .cloned()
                .unwrap_or_default();
            let failed = activated
                .iter()
                .filter(|name| not_activated.contains(name))
                .count();
            if let Err(error) = self.write_policy_status(mrap, activated, failed).await {
                tracing::warn!(mrap = %mrap.name_any(), %error, "cannot write status");
                pass.failures += 1;
            }
        }
        Ok(pass)
    }

    /// Sets `spec.state: Active`, the only change the stand-in makes to an
    /// MRD's spec (a merge patch of that one field, as Crossplane's MRAP
    /// controller makes it).
    async fn activate(&self, name: &str) -> Result<DynamicObject, kube::Error> {
        let updated = self
            .mrds
            .patch(
                name,
                &PatchParams {
                    field_manager: Some(FIELD_MANAGER.to_owned()),
                    ..PatchParams::default()
                },
                &Patch::Merge(json!({"spec": {"state": "Active"}})),
            )
            .await?;
        tracing::info!(mrd = %name, "ManagedResourceDefinition activated: state Inactive -> Active");
        Ok(updated)
    }

    /// Gives an active MRD its CRD and sets its `Established` condition;
    /// false when something failed.
    async fn reconcile_definition(
        &mut self,
        mrd: &DynamicObject,
        crds: &BTreeMap<String, CustomResourceDefinition>,
    ) -> bool {
        let name = mrd.name_any();
        // An inactive MRD has no CRD of ours. One that was Active and was set
        // back by hand (no CEL rule stops that before 1.25) keeps its CRD, as
        // under Crossplane: nothing deletes it.
        let crd = if definition_view(mrd).active {
            Some(self.ensure_crd(mrd, crds.get(&name)).await)
        } else {
            None
        };
        let ok = !matches!(crd, Some(CrdState::Failed(_)));
        let condition = policy::mrd_condition(crd.as_ref(), mrd.metadata.generation);
        if let Err(error) = self.write_mrd_condition(mrd, condition).await {
            tracing::warn!(mrd = %name, %error, "cannot write status");
            return false;
        }
        ok
    }

    /// Applies the CRD made from `mrd` unless this process already applied
    /// it for this generation and it still exists; returns where it stands.
    async fn ensure_crd(
        &mut self,
        mrd: &DynamicObject,
        existing: Option<&CustomResourceDefinition>,
    ) -> CrdState {
        let name = mrd.name_any();
        let key = (
            mrd.uid().unwrap_or_default(),
            mrd.metadata.generation.unwrap_or_default(),
        );
        if let Some(crd) = existing
            && self.applied.get(&name) == Some(&key)
        {
            return crd_state(crd);
        }
        let value = match serde_json::to_value(mrd) {
            Ok(value) => value,
            Err(error) => return CrdState::Failed(error.to_string()),
        };
        let mut crd = match policy::crd_of(&value) {
            Ok(crd) => crd,
            Err(why) => return CrdState::Failed(why),
        };
        if self.strip_cel {
            strip_cel_rules(&mut crd);
        }
        if let Some(webhook) = &self.webhook {
            webhook.wire(&mut crd);
        }
        match self
            .crds
            .patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&crd),
            )
            .await
        {
            Ok(applied) => {
                if existing.is_none() {
                    tracing::info!(crd = %name, "CustomResourceDefinition created from its ManagedResourceDefinition");
                }
                self.applied.insert(name, key);
                crd_state(&applied)
            }
            Err(error) => {
                tracing::warn!(crd = %name, %error, "cannot apply the CustomResourceDefinition");
                self.applied.remove(&name);
                CrdState::Failed(error.to_string())
            }
        }
    }

    /// Writes the MRD's `Established` condition when it says something new.
    async fn write_mrd_condition(
        &self,
        mrd: &DynamicObject,
        condition: Condition,
    ) -> Result<(), kube::Error> {
        let mut conditions = conditions_of(mrd);
        let became_established = condition.is_true()
            && !conditions
                .iter()
                .any(|c| c.type_ == policy::TYPE_ESTABLISHED && c.is_true());
        if !set_condition(&mut conditions, condition) {
            return Ok(());
        }
        self.mrds
            .patch_status(
                &mrd.name_any(),
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"conditions": conditions}})),
            )
            .await?;
        if became_established {
            tracing::info!(mrd = %mrd.name_any(), "ManagedResourceDefinition Established: its CRD is served");
        }
        Ok(())
    }

    /// Writes the MRAP's `status.activated` and `Healthy` condition when
    /// either changed.
    async fn write_policy_status(
        &self,
        mrap: &DynamicObject,
        activated: Vec<String>,
        failed: usize,
    ) -> Result<(), kube::Error> {
        let view = policy_view(mrap);
        let unsupported: Vec<&str> = view
            .patterns
            .iter()
            .map(String::as_str)
            .filter(|p| !policy::is_supported(p))
            .collect();
        let condition = policy::policy_condition(
            failed,
            activated.len(),
            &unsupported,
            mrap.metadata.generation,
        );
        let mut conditions = conditions_of(mrap);
        let conditions_changed = set_condition(&mut conditions, condition);
        let current: Vec<String> = mrap.data["status"]["activated"]
            .as_array()
            .map(|names| {
                names
                    .iter()
                    .filter_map(|n| n.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if !conditions_changed && current == activated {
            return Ok(());
        }
        self.mraps
            .patch_status(
                &mrap.name_any(),
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"status": {"activated": activated, "conditions": conditions}}),
                ),
            )
            .await?;
        Ok(())
    }
}

/// The MRAP as the plan sees it.
fn policy_view(mrap: &DynamicObject) -> Policy {
    Policy {
        name: mrap.name_any(),
        patterns: mrap.data["spec"]["activate"]
            .as_array()
            .map(|patterns| {
                patterns
                    .iter()
                    .filter_map(|p| p.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        deleting: mrap.metadata.deletion_timestamp.is_some(),
    }
}

/// The MRD as the plan sees it.
fn definition_view(mrd: &DynamicObject) -> Definition {
    Definition {
        name: mrd.name_any(),
        active: mrd.data["spec"]["state"] == "Active",
    }
}

/// `status.conditions`; entries that do not parse are dropped (and so
/// replaced on the next write).
fn conditions_of(object: &DynamicObject) -> Vec<Condition> {
    object.data["status"]["conditions"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|c| serde_json::from_value::<Condition>(c.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

fn crd_state(crd: &CustomResourceDefinition) -> CrdState {
    let established = crd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        });
    if established {
        CrdState::Established
    } else {
        CrdState::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;
    use serde_json::Value;

    fn object(data: Value) -> DynamicObject {
        DynamicObject {
            types: None,
            metadata: ObjectMeta {
                name: Some("x".into()),
                ..ObjectMeta::default()
            },
            data,
        }
    }

    #[test]
    fn views_read_state_and_patterns_and_tolerate_missing_fields() {
        assert!(definition_view(&object(json!({"spec": {"state": "Active"}}))).active);
        assert!(!definition_view(&object(json!({"spec": {"state": "Inactive"}}))).active);
        assert!(!definition_view(&object(json!({}))).active);
        assert_eq!(
            policy_view(&object(json!({"spec": {"activate": ["a", 1, "b"]}}))).patterns,
            ["a", "b"]
        );
        assert!(policy_view(&object(json!({}))).patterns.is_empty());
    }

    #[test]
    fn unparsable_conditions_are_dropped() {
        let mrd = object(json!({"status": {"conditions": [
            {"type": "Established", "status": "True", "reason": "EstablishedManagedResource",
             "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Odd"},
        ]}}));
        let conditions = conditions_of(&mrd);
        assert_eq!(conditions.len(), 1);
        assert!(conditions[0].is_true());
    }
}
