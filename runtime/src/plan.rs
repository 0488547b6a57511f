//! The reconciler's decisions, apart from I/O: given what the managed
//! resource asks for and what the cloud reported, what happens next.
//!
//! The shell in [`crate::reconcile`] gathers the facts, calls these
//! functions and carries out the answer; everything here is unit-tested
//! without a cluster or a cloud.

use serde_json::{Map, Value};

use crate::fields::drift_patch_with;
use crate::lists::ListTypes;
use crate::policy::Actions;

/// What the cloud said about the external resource.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed {
    /// No external name yet, or the cloud answered 404.
    Missing,
    Exists {
        /// The cloud's view of the resource, as its wire JSON: becomes
        /// `status.atProvider`.
        at_provider: Value,
        /// The cloud is already deleting it.
        deleting: bool,
    },
}

/// The next step of a reconcile of a resource that is not being deleted.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The resource does not exist and the policies do not allow creating it
    /// (observe-only, `{Observe, Update}`, ...): report, call nothing that
    /// mutates. crossplane-runtime would still call Update for
    /// `{Observe, Update}`; we do not.
    ReportMissing,
    /// Create it from `forProvider` with `initProvider` merged under it.
    Create,
    /// Call Update with this merge patch: only the drifted forProvider
    /// fields, plus write-only fields whose desired value changed.
    Update(Map<String, Value>),
    /// The cloud matches what the policies let us enforce.
    UpToDate,
}

/// Decides the step for a live (not deleting) managed resource.
///
/// `desired` is `forProvider` without its steering fields (region,
/// references): initProvider never takes part, so fields set only there are
/// never drift. `write_only` holds the fields the cloud never returns (a
/// master password) whose desired value differs from the one last applied,
/// as the kind judged it. Drift of either sort is ignored unless the
/// policies allow `Update`.
#[cfg(test)]
pub fn live_step(
    actions: Actions,
    desired: &Value,
    write_only: Map<String, Value>,
    observed: &Observed,
) -> Step {
    live_step_with(
        actions,
        desired,
        write_only,
        observed,
        &ListTypes::default(),
    )
}

/// `live_step` (above) with the kind's list semantics
/// ([`crate::lists::for_kind`]): a set or map list the cloud holds in
/// another order is not drift ([`drift_patch_with`]).
pub fn live_step_with(
    actions: Actions,
    desired: &Value,
    write_only: Map<String, Value>,
    observed: &Observed,
    lists: &ListTypes,
) -> Step {
    match observed {
        Observed::Missing if actions.create => Step::Create,
        Observed::Missing => Step::ReportMissing,
        Observed::Exists { .. } if !actions.update => Step::UpToDate,
        Observed::Exists { deleting: true, .. } => Step::UpToDate,
        Observed::Exists { at_provider, .. } => {
            let mut patch = drift_patch_with(desired, at_provider, lists);
            patch.extend(write_only);
            if patch.is_empty() {
                Step::UpToDate
            } else {
                Step::Update(patch)
            }
        }
    }
}

/// The next step of a reconcile of a managed resource being deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteStep {
    /// Leave the external resource, drop the finalizer.
    Orphan,
    /// Ask the cloud to delete it, then look again.
    Delete,
    /// The cloud is deleting it: wait and look again.
    AwaitGone,
    /// It is gone: drop the finalizer.
    Finished,
}

/// Decides the step for a managed resource that has a deletion timestamp.
pub fn delete_step(orphan: bool, observed: &Observed) -> DeleteStep {
    match observed {
        _ if orphan => DeleteStep::Orphan,
        Observed::Missing => DeleteStep::Finished,
        Observed::Exists { deleting: true, .. } => DeleteStep::AwaitGone,
        Observed::Exists {
            deleting: false, ..
        } => DeleteStep::Delete,
    }
}

/// The `crossplane.io/external-create-*` annotations, read as timestamps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CreateMarks {
    pub pending: Option<jiff::Timestamp>,
    pub succeeded: Option<jiff::Timestamp>,
    pub failed: Option<jiff::Timestamp>,
}

impl CreateMarks {
    /// A create was started and its outcome never recorded: the provider may
    /// have died after the cloud created the resource but before the
    /// external name was saved. crossplane-runtime stops here and asks a
    /// human; we retry the create with the same idempotency key instead
    /// ([`idempotency_key`]), which makes the cloud answer with what the
    /// interrupted attempt made. An observed resource settles it too
    /// ([`CreateMarks::settled_by`]).
    pub fn incomplete(&self) -> bool {
        match self.pending {
            None => false,
            Some(pending) => {
                self.succeeded.is_none_or(|t| t < pending)
                    && self.failed.is_none_or(|t| t < pending)
            }
        }
    }

    /// Whether this observation answers an incomplete create: the resource
    /// exists under the external name set before the create (a kind named
    /// by `metadata.name`), so the create happened and only its record is
    /// missing.
    pub fn settled_by(&self, observed: &Observed) -> bool {
        self.incomplete() && matches!(observed, Observed::Exists { .. })
    }
}

/// The idempotency key of a create of the managed resource `uid` whose
/// last create was recorded as succeeded at `last_succeeded` (`None` before
/// the first).
///
/// Every attempt of one create (a retry after a lost answer, a replica
/// racing another, a restart after the cloud accepted the call but before
/// the external name was written) sends the same key, so the cloud answers
/// with the one resource the first attempt made. Once a create is recorded
/// the key changes on purpose: a resource deleted behind the provider's
/// back is then created anew, not answered with the deleted one. A uid is
/// never reused, so two managed resources never share a key.
pub fn idempotency_key(uid: &str, last_succeeded: Option<jiff::Timestamp>) -> String {
    let generation = last_succeeded.map_or(0, |t| t.as_nanosecond());
    format!("{uid}.{generation}")
}

/// What to do with a create's result when the write recording it (external
/// name + `external-create-succeeded`) found a newer copy of the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordCreated {
    /// Nothing recorded it yet: write it on the newer copy.
    Write,
    /// Another writer (a racing replica whose create got the same answer
    /// through the idempotency key) already recorded this resource.
    AlreadyRecorded,
    /// The object now names another external resource (set by hand while
    /// the create ran): leave the user's choice alone and say so.
    Superseded { recorded: String },
}

/// Decides [`RecordCreated`] from the newer copy's external name and marks.
pub fn record_created(
    created: &str,
    current_name: Option<&str>,
    current: CreateMarks,
) -> RecordCreated {
    match current_name {
        Some(name) if name == created && current.succeeded.is_some() && !current.incomplete() => {
            RecordCreated::AlreadyRecorded
        }
        Some(name) if name != created && !current.incomplete() => RecordCreated::Superseded {
            recorded: name.to_owned(),
        },
        _ => RecordCreated::Write,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn observe_only() -> Actions {
        Actions {
            observe: true,
            ..Default::default()
        }
    }

    /// The step without write-only drift.
    fn step(actions: Actions, desired: &Value, observed: &Observed) -> Step {
        live_step(actions, desired, Map::new(), observed)
    }

    fn exists(at_provider: Value) -> Observed {
        Observed::Exists {
            at_provider,
            deleting: false,
        }
    }

    #[test]
    fn missing_resource_is_created_only_with_create() {
        let desired = json!({"cidrBlock": "10.0.0.0/16"});
        assert_eq!(
            step(Actions::ALL, &desired, &Observed::Missing),
            Step::Create
        );
        assert_eq!(
            step(observe_only(), &desired, &Observed::Missing),
            Step::ReportMissing
        );
        let observe_update = Actions {
            observe: true,
            update: true,
            ..Default::default()
        };
        assert_eq!(
            step(observe_update, &desired, &Observed::Missing),
            Step::ReportMissing
        );
    }

    #[test]
    fn drift_updates_only_with_update_and_only_the_drifted_fields() {
        let desired = json!({"cidrBlock": "10.0.0.0/16", "tags": {"env": "prod"}});
        let observed = exists(
            json!({"cidrBlock": "10.0.0.0/16", "tags": {"env": "dev"}, "state": "available"}),
        );
        assert_eq!(
            step(Actions::ALL, &desired, &observed),
            Step::Update(
                json!({"tags": {"env": "prod"}})
                    .as_object()
                    .unwrap()
                    .clone()
            )
        );
        assert_eq!(step(observe_only(), &desired, &observed), Step::UpToDate);
    }

    #[test]
    fn write_only_drift_updates_only_with_update_and_only_when_not_deleting() {
        let desired = json!({"engine": "postgres"});
        let write_only = json!({"masterPassword": "rotated-secret"})
            .as_object()
            .unwrap()
            .clone();
        let observed = exists(json!({"engine": "postgres", "status": "available"}));
        assert_eq!(
            live_step(Actions::ALL, &desired, write_only.clone(), &observed),
            Step::Update(write_only.clone())
        );
        // Merged with ordinary drift into one patch.
        let drifted = exists(json!({"engine": "mysql"}));
        let mut both = write_only.clone();
        both.insert("engine".into(), json!("postgres"));
        assert_eq!(
            live_step(Actions::ALL, &desired, write_only.clone(), &drifted),
            Step::Update(both)
        );
        assert_eq!(
            live_step(observe_only(), &desired, write_only.clone(), &observed),
            Step::UpToDate
        );
        let going = Observed::Exists {
            at_provider: json!({"engine": "postgres"}),
            deleting: true,
        };
        assert_eq!(
            live_step(Actions::ALL, &desired, write_only.clone(), &going),
            Step::UpToDate
        );
        assert_eq!(
            live_step(Actions::ALL, &desired, write_only, &Observed::Missing),
            Step::Create
        );
    }

    #[test]
    fn matching_resource_is_up_to_date() {
        let desired = json!({"cidrBlock": "10.0.0.0/16"});
        let observed = exists(json!({"cidrBlock": "10.0.0.0/16", "id": "vpc-1"}));
        assert_eq!(step(Actions::ALL, &desired, &observed), Step::UpToDate);
    }

    #[test]
    fn a_resource_the_cloud_is_deleting_is_not_updated() {
        let desired = json!({"tags": {"a": "1"}});
        let observed = Observed::Exists {
            at_provider: json!({"tags": {}}),
            deleting: true,
        };
        assert_eq!(step(Actions::ALL, &desired, &observed), Step::UpToDate);
    }

    #[test]
    fn deletion_orphans_deletes_waits_and_finishes() {
        let live = exists(json!({}));
        let going = Observed::Exists {
            at_provider: json!({}),
            deleting: true,
        };
        assert_eq!(delete_step(true, &live), DeleteStep::Orphan);
        assert_eq!(delete_step(true, &Observed::Missing), DeleteStep::Orphan);
        assert_eq!(delete_step(false, &live), DeleteStep::Delete);
        assert_eq!(delete_step(false, &going), DeleteStep::AwaitGone);
        assert_eq!(delete_step(false, &Observed::Missing), DeleteStep::Finished);
    }

    #[test]
    fn create_marks_detect_an_unrecorded_outcome() {
        let t = |s: i64| Some(jiff::Timestamp::from_second(s).unwrap());
        assert!(!CreateMarks::default().incomplete());
        assert!(
            CreateMarks {
                pending: t(10),
                ..Default::default()
            }
            .incomplete()
        );
        assert!(
            !CreateMarks {
                pending: t(10),
                succeeded: t(11),
                failed: None
            }
            .incomplete()
        );
        assert!(
            !CreateMarks {
                pending: t(10),
                succeeded: None,
                failed: t(10)
            }
            .incomplete()
        );
        // An older success does not vouch for a newer attempt.
        assert!(
            CreateMarks {
                pending: t(20),
                succeeded: t(11),
                failed: None
            }
            .incomplete()
        );
    }

    fn at(s: i64) -> Option<jiff::Timestamp> {
        Some(jiff::Timestamp::from_second(s).unwrap())
    }

    #[test]
    fn retries_of_one_create_share_a_key_and_the_next_create_gets_a_new_one() {
        let uid = "6f1d0c2e-2a55-4b8e-9d1e-0c4b3a2f1e00";
        let first = idempotency_key(uid, None);
        // A retry, a racing replica, a restart: the same inputs, the same key.
        assert_eq!(first, idempotency_key(uid, None));
        // Once a create is recorded, a re-create (the resource was deleted
        // behind the provider's back) must not be answered with the old one.
        let second = idempotency_key(uid, at(100));
        assert_ne!(first, second);
        assert_eq!(second, idempotency_key(uid, at(100)));
        assert_ne!(second, idempotency_key(uid, at(101)));
        // Another managed resource never shares a key.
        assert_ne!(first, idempotency_key("another-uid", None));
        // Cloud APIs commonly take 1-255 visible ASCII characters.
        assert!(second.len() <= 255 && second.bytes().all(|b| b.is_ascii_graphic()));
    }

    #[test]
    fn an_observed_resource_settles_an_incomplete_create() {
        let incomplete = CreateMarks {
            pending: at(10),
            ..Default::default()
        };
        assert!(incomplete.settled_by(&exists(json!({}))));
        assert!(!incomplete.settled_by(&Observed::Missing));
        let complete = CreateMarks {
            pending: at(10),
            succeeded: at(11),
            failed: None,
        };
        assert!(!complete.settled_by(&exists(json!({}))));
    }

    #[test]
    fn a_create_result_is_recorded_unless_already_recorded_or_superseded() {
        let ours = CreateMarks {
            pending: at(10),
            ..Default::default()
        };
        // The newer copy is still our incomplete create: write the result.
        assert_eq!(record_created("vpc-1", None, ours), RecordCreated::Write);
        // An older create's name (that resource was deleted outside) is
        // replaced by the new one while our create is incomplete.
        let older = CreateMarks {
            pending: at(10),
            succeeded: at(5),
            failed: None,
        };
        assert_eq!(
            record_created("vpc-2", Some("vpc-1"), older),
            RecordCreated::Write
        );
        // A racing replica got the same answer and recorded it first.
        let recorded = CreateMarks {
            pending: at(10),
            succeeded: at(12),
            failed: None,
        };
        assert_eq!(
            record_created("vpc-1", Some("vpc-1"), recorded),
            RecordCreated::AlreadyRecorded
        );
        // Someone recorded another resource after our create began.
        assert_eq!(
            record_created("vpc-1", Some("vpc-9"), recorded),
            RecordCreated::Superseded {
                recorded: "vpc-9".into()
            }
        );
    }
}
