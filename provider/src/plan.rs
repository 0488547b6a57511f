//! The reconciler's decisions, apart from I/O: given what the managed
//! resource asks for and what the cloud reported, what happens next.
//!
//! The shell in [`crate::reconciler`] gathers the facts, calls these
//! functions and carries out the answer; everything here is unit-tested
//! without a cluster or a cloud.

use serde_json::{Map, Value};

use crate::fields::drift_patch;
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
pub fn live_step(
    actions: Actions,
    desired: &Value,
    write_only: Map<String, Value>,
    observed: &Observed,
) -> Step {
    match observed {
        Observed::Missing if actions.create => Step::Create,
        Observed::Missing => Step::ReportMissing,
        Observed::Exists { .. } if !actions.update => Step::UpToDate,
        Observed::Exists { deleting: true, .. } => Step::UpToDate,
        Observed::Exists { at_provider, .. } => {
            let mut patch = drift_patch(desired, at_provider);
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
    /// external name was saved. Creating again could leak a duplicate, so,
    /// like crossplane-runtime, we stop and ask a human.
    pub fn incomplete(&self) -> bool {
        match self.pending {
            None => false,
            Some(pending) => {
                self.succeeded.is_none_or(|t| t < pending)
                    && self.failed.is_none_or(|t| t < pending)
            }
        }
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
}
