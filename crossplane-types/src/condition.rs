//! Status conditions in Crossplane's vocabulary, `Ready` and `Synced`, and
//! the runtime's own `UpToDate` (drift, see [`crate::drift`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Condition type: whether the external resource is usable.
pub const TYPE_READY: &str = "Ready";
/// Condition type: whether the last reconcile succeeded.
pub const TYPE_SYNCED: &str = "Synced";
/// Condition type: whether the cloud holds what the resource declares
/// (`status.drift` lists the fields that differ). Not a Crossplane type:
/// the Rust runtime's own, beside `Ready` and `Synced`.
pub const TYPE_UP_TO_DATE: &str = "UpToDate";

/// `Ready=True`: the external resource is available.
pub const REASON_AVAILABLE: &str = "Available";
/// `Ready=False`: the external resource is being created.
pub const REASON_CREATING: &str = "Creating";
/// `Ready=False`: the external resource is being deleted.
pub const REASON_DELETING: &str = "Deleting";
/// `Ready=False`: the external resource exists but is not usable.
pub const REASON_UNAVAILABLE: &str = "Unavailable";
/// `Synced=True`: the last reconcile succeeded.
pub const REASON_RECONCILE_SUCCESS: &str = "ReconcileSuccess";
/// `Synced=False`: the last reconcile failed; the message says why.
pub const REASON_RECONCILE_ERROR: &str = "ReconcileError";
/// `Synced=False`: reconciliation is paused by annotation or by
/// `managementPolicies: []`.
pub const REASON_RECONCILE_PAUSED: &str = "ReconcilePaused";
/// `Synced=False`: the cloud server asked callers to wait (it throttles or
/// is overloaded); the reconcile comes back at the pace it accepts. Not an
/// error: the message names the server and what it answered.
pub const REASON_WAITING: &str = "Waiting";

/// `UpToDate=True`: no `forProvider` field differs from the cloud (fields
/// only `initProvider` sets may).
pub const REASON_NO_DRIFT: &str = "NoDrift";
/// `UpToDate=False`: fields differ and the provider is updating them.
pub const REASON_DRIFTED: &str = "Drifted";
/// `UpToDate=False`: fields differ and the provider leaves them (the
/// policies lack `Update` or `Create`, or the fields are create-only).
pub const REASON_DRIFT_IGNORED: &str = "DriftIgnored";

/// The status of a condition, as Kubernetes spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Not known yet.
    Unknown,
}

/// One entry of `status.conditions`.
// `type` and `reason` are strings rather than enums so that an object whose
// conditions were written by another tool still deserializes; the `TYPE_*`
// and `REASON_*` constants name the values this provider writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `Ready` or `Synced`; on managed resources also `UpToDate`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: ConditionStatus,
    /// A CamelCase word saying why the condition has this status.
    pub reason: String,
    /// What happened, and what the user can do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the condition last changed status or reason.
    pub last_transition_time: Time,
    /// The `metadata.generation` the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl Condition {
    /// A condition stamped with the current time and no message.
    pub fn new(type_: &str, status: ConditionStatus, reason: &str) -> Self {
        Self {
            type_: type_.to_owned(),
            status,
            reason: reason.to_owned(),
            message: None,
            last_transition_time: Time(Timestamp::now()),
            observed_generation: None,
        }
    }

    /// `Ready=True`, reason `Available`.
    pub fn available() -> Self {
        Self::new(TYPE_READY, ConditionStatus::True, REASON_AVAILABLE)
    }

    /// `Ready=False`, reason `Creating`.
    pub fn creating() -> Self {
        Self::new(TYPE_READY, ConditionStatus::False, REASON_CREATING)
    }

    /// `Ready=False`, reason `Deleting`.
    pub fn deleting() -> Self {
        Self::new(TYPE_READY, ConditionStatus::False, REASON_DELETING)
    }

    /// `Ready=False`, reason `Unavailable`.
    pub fn unavailable() -> Self {
        Self::new(TYPE_READY, ConditionStatus::False, REASON_UNAVAILABLE)
    }

    /// `Synced=True`, reason `ReconcileSuccess`.
    pub fn reconcile_success() -> Self {
        Self::new(TYPE_SYNCED, ConditionStatus::True, REASON_RECONCILE_SUCCESS)
    }

    /// `Synced=False`, reason `ReconcileError`, with the error as message.
    pub fn reconcile_error(message: impl Into<String>) -> Self {
        Self::new(TYPE_SYNCED, ConditionStatus::False, REASON_RECONCILE_ERROR).with_message(message)
    }

    /// `Synced=False`, reason `Waiting`, with the server and its answer as
    /// message.
    pub fn waiting(message: impl Into<String>) -> Self {
        Self::new(TYPE_SYNCED, ConditionStatus::False, REASON_WAITING).with_message(message)
    }

    /// `Synced=False`, reason `ReconcilePaused`.
    pub fn reconcile_paused() -> Self {
        Self::new(TYPE_SYNCED, ConditionStatus::False, REASON_RECONCILE_PAUSED)
    }

    /// The same condition with a message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// The same condition, computed from `generation`.
    pub fn with_observed_generation(mut self, generation: i64) -> Self {
        self.observed_generation = Some(generation);
        self
    }

    /// The same condition with a fixed transition time (for tests and for
    /// replaying recorded state).
    pub fn with_transition_time(mut self, time: Timestamp) -> Self {
        self.last_transition_time = Time(time);
        self
    }

    /// Whether `other` says the same thing, ignoring when it was said.
    pub fn same_as(&self, other: &Condition) -> bool {
        self.type_ == other.type_
            && self.status == other.status
            && self.reason == other.reason
            && self.message == other.message
            && self.observed_generation == other.observed_generation
    }

    /// Whether the condition is `True`.
    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }
}

/// Sets `new` in `conditions`, replacing the condition of the same type.
///
/// Returns whether anything changed, so that callers can skip a status
/// write that would change nothing. `lastTransitionTime` moves only on a
/// transition, a change of status or reason; a new message or generation
/// alone keeps the old time, so a repeated error with a different text does
/// not look like a new event.
pub fn set_condition(conditions: &mut Vec<Condition>, mut new: Condition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        None => {
            conditions.push(new);
            true
        }
        Some(existing) if existing.same_as(&new) => false,
        Some(existing) => {
            if existing.status == new.status && existing.reason == new.reason {
                new.last_transition_time = existing.last_transition_time.clone();
            }
            *existing = new;
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    #[test]
    fn serializes_with_crossplane_field_names() {
        let c = Condition::reconcile_error("boom")
            .with_observed_generation(3)
            .with_transition_time(at(0));
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "type": "Synced",
                "status": "False",
                "reason": "ReconcileError",
                "message": "boom",
                "lastTransitionTime": "1970-01-01T00:00:00Z",
                "observedGeneration": 3
            })
        );
        let back: Condition = serde_json::from_value(json).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn setting_a_new_type_appends_it() {
        let mut conditions = vec![Condition::available()];
        assert!(set_condition(
            &mut conditions,
            Condition::reconcile_success()
        ));
        assert_eq!(conditions.len(), 2);
    }

    #[test]
    fn setting_the_same_condition_changes_nothing() {
        let mut conditions = vec![Condition::available().with_transition_time(at(10))];
        assert!(!set_condition(
            &mut conditions,
            Condition::available().with_transition_time(at(20))
        ));
        assert_eq!(conditions[0].last_transition_time.0, at(10));
    }

    #[test]
    fn a_new_message_keeps_the_transition_time() {
        let mut conditions = vec![Condition::reconcile_error("first").with_transition_time(at(10))];
        assert!(set_condition(
            &mut conditions,
            Condition::reconcile_error("second").with_transition_time(at(20))
        ));
        assert_eq!(conditions[0].message.as_deref(), Some("second"));
        assert_eq!(conditions[0].last_transition_time.0, at(10));
    }

    #[test]
    fn a_new_reason_or_status_moves_the_transition_time() {
        let mut conditions = vec![Condition::creating().with_transition_time(at(10))];
        assert!(set_condition(
            &mut conditions,
            Condition::unavailable().with_transition_time(at(20))
        ));
        assert_eq!(conditions[0].last_transition_time.0, at(20));
        assert!(set_condition(
            &mut conditions,
            Condition::available().with_transition_time(at(30))
        ));
        assert_eq!(conditions[0].last_transition_time.0, at(30));
        assert_eq!(conditions.len(), 1);
    }
}
