//! `status.drift`: how the cloud differs from what the managed resource
//! declares, field by field, and what the provider does about each field
//! under the resource's policies.
//!
//! Crossplane has no such field: users compare `forProvider` with
//! `atProvider` by eye or with client tools that cannot know the policies,
//! the create-only fields or what late initialisation fills. Only the
//! provider knows those, so the provider reports its own plan: the same
//! report serves as a preview where the policies forbid acting (an
//! observe-only resource shows what an `Update` would change; a missing one
//! without `Create` shows what a create would send).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// At most this many fields are listed; [`Drift::omitted`] counts the rest.
pub const MAX_DRIFT_FIELDS: usize = 20;
/// A value longer than this many characters is cut, ending in `…`.
pub const MAX_DRIFT_VALUE_CHARS: usize = 128;

/// The difference between the declaration and the cloud.
///
/// Written on every observation of the external resource; holds
/// `count: 0` and nothing else when nothing differs, so the `DRIFT` printer
/// column reads 0 rather than blank.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    /// How many fields differ from what `forProvider` declares (or, for a
    /// missing resource, a create would send), listed or not: the `DRIFT`
    /// column. `InitProvider` entries are listed but not counted.
    pub count: u32,
    /// The differing fields, those the provider acts on first, then by path;
    /// at most 20.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<DriftedField>,
    /// How many differing fields were left out of `fields`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One field whose declared value is not what the cloud holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DriftedField {
    /// The field's path under `forProvider` (or `initProvider` for
    /// `InitProvider`), dots between object keys: `tags.env`,
    /// `scalingConfig.maxSize`. Arrays are one field.
    pub path: String,
    /// The declared value: a string as it is, anything else as compact
    /// JSON, cut at 128 characters. Absent for a sensitive field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared: Option<String>,
    /// The value the cloud holds, written like `declared`; absent when the
    /// cloud holds none, for a sensitive field, and for `WouldCreate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<String>,
    /// A secret (a password): only that it differs is shown, never a value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sensitive: bool,
    /// What the provider does about it under the current policies.
    pub action: DriftAction,
    /// When the provider first saw this field differ with this action.
    pub since: Time,
}

/// What the provider does about one differing field.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum DriftAction {
    /// It updates the cloud to the declared value (the policies hold
    /// `Update`).
    Update,
    /// It would update it, but the policies lack `Update`: a preview.
    WouldUpdate,
    /// The external resource does not exist and the policies lack `Create`:
    /// a create would send this value. A preview of the create.
    WouldCreate,
    /// The field cannot change after create (the cloud refuses it), so the
    /// provider never sends it in an update; only a new resource would
    /// change it.
    CreateOnly,
    /// Declared only in `initProvider`, which applies at create only: the
    /// cloud owns it since (an autoscaler's `desiredSize`).
    InitProvider,
}

impl DriftAction {
    /// Whether this difference is one the declaration does not accept: the
    /// cloud does not hold what `forProvider` says. An `InitProvider`
    /// difference is the declaration's own rule at work, not drift.
    pub fn is_drift(self) -> bool {
        self != Self::InitProvider
    }
}
