//! What Crossplane may do to the external resource (seed 003).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One action Crossplane may take on the external resource.
// The list replaces the old single `managementPolicy` (seed 003): `["*"]`
// (the default) allows everything, `["Observe"]` is observe-only, and `[]`
// pauses the resource.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum ManagementAction {
    /// Update `status.atProvider` from the external resource.
    Observe,
    /// Create the external resource from `forProvider` merged over
    /// `initProvider`.
    Create,
    /// Update the external resource from `forProvider`.
    Update,
    /// Delete the external resource when the MR is deleted.
    Delete,
    /// Fill unset `forProvider` fields from the external resource.
    LateInitialize,
    /// Every action, including ones added in the future.
    #[serde(rename = "*")]
    All,
}

impl ManagementAction {
    /// Whether a policy list allows `self`, counting `*` as every action.
    pub fn allowed_by(self, policies: &[ManagementAction]) -> bool {
        policies
            .iter()
            .any(|p| *p == self || *p == ManagementAction::All)
    }
}

/// The default of `spec.managementPolicies`: `["*"]`.
pub fn default_management_policies() -> Vec<ManagementAction> {
    vec![ManagementAction::All]
}

/// What happens to the external resource when the managed resource is deleted.
// `Orphan` wins over a `Delete` in `managementPolicies` (seed 003,
// "Deletion policy"): the side that leaves the resource alone wins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum DeletionPolicy {
    /// Delete the external resource (the default).
    #[default]
    Delete,
    /// Leave the external resource in the cloud.
    Orphan,
}

#[cfg(test)]
mod tests {
    use super::ManagementAction::*;

    #[test]
    fn star_allows_every_action() {
        for action in [Observe, Create, Update, Delete, LateInitialize] {
            assert!(action.allowed_by(&[All]), "{action:?}");
        }
    }

    #[test]
    fn an_explicit_list_allows_only_its_members() {
        let policies = [Observe, Create, Update, Delete];
        assert!(Create.allowed_by(&policies));
        assert!(!LateInitialize.allowed_by(&policies));
        assert!(!Observe.allowed_by(&[]));
    }

    #[test]
    fn star_is_spelled_as_a_star_on_the_wire() {
        assert_eq!(serde_json::to_string(&All).unwrap(), r#""*""#);
        assert_eq!(
            serde_json::from_str::<super::ManagementAction>(r#""LateInitialize""#).unwrap(),
            LateInitialize
        );
        assert!(serde_json::from_str::<super::ManagementAction>(r#""FullControl""#).is_err());
    }
}
