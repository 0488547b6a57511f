//! The status every managed resource shares.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::condition::{Condition, set_condition};
use crate::drift::Drift;

/// The observed state of the managed resource: its conditions and everything
/// the cloud reports about the external resource.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedStatus<A> {
    /// `Ready`, `Synced` and `UpToDate`, one entry per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// Everything the cloud reports about the external resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_provider: Option<A>,
    /// The last `crossplane.io/reconcile-requested-at` token a reconcile
    /// handled: a different token on the object asks for a reconcile now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// How the cloud differs from the declaration and what the provider
    /// does about each field (see [`Drift`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
}

// Not derived: a derive would demand `A: Default`, which an empty status
// does not need.
impl<A> Default for ManagedStatus<A> {
    fn default() -> Self {
        Self {
            conditions: Vec::new(),
            at_provider: None,
            last_handled_reconcile_at: None,
            drift: None,
        }
    }
}

impl<A> ManagedStatus<A> {
    /// The condition of the given type, if set.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Sets a condition; see [`set_condition`] for when the transition time
    /// moves. Returns whether anything changed.
    pub fn set_condition(&mut self, condition: Condition) -> bool {
        set_condition(&mut self.conditions, condition)
    }
}
