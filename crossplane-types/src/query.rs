//! Query resources: the upper layer that seed 000 ("Observe Only
//! Resources", Future Work, Option A) proposes above managed resources. A
//! query (a `VPCQuery`, say) filters the cloud's resources of one kind and
//! owns one observe-only managed resource per match, created and deleted as
//! matches come and go. Each managed resource still stands for exactly one
//! external resource, and the matches can be referenced like any other
//! managed resource.
//!
//! A query is not a managed resource: it has no external resource of its
//! own, no management policies, no finalizer and no MRD. It shares with
//! managed resources only the way it names its ProviderConfig. These are
//! the parts every query kind shares, whatever its filter: the common spec
//! fields ([`QuerySpec`]), the status ([`QueryStatus`]), the label its
//! managed resources carry ([`name_label`]), its CEL rules, and the
//! [`Query`] trait through which a generic runtime reads a query kind.

use std::fmt::Debug;

use kube::core::{NamespaceResourceScope, Rule};
use kube::{CustomResourceExt, Resource};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::condition::{Condition, set_condition};
use crate::managed::Managed;
use crate::reference::NamespacedProviderConfigReference;
use crate::scope::Namespaced;

/// How many matches `status.matches` lists at most; `status.matchCount`
/// counts them all. A status is rewritten whenever a match comes or goes,
/// so its size must not grow with the cloud.
pub const MAX_LISTED_MATCHES: usize = 100;

/// The longest query name: it becomes a label value on the query's managed
/// resources, and label values hold 63 characters.
pub const MAX_QUERY_NAME: usize = 63;

/// The fields every query kind's `spec` shares, flattened beside its
/// `filter`: which ProviderConfig to list with, and which of the matches to
/// keep.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuerySpec {
    /// The ProviderConfig or ClusterProviderConfig holding the endpoint and
    /// credentials to list with; `{kind: ClusterProviderConfig, name:
    /// default}` when unset. The managed resources the query creates use
    /// the same one.
    #[serde(default)]
    pub provider_config_ref: NamespacedProviderConfigReference,
    /// Keep only the newest match (by creation time), as Terraform's
    /// `most_recent` does for the most recent image. Leave `limit` unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_recent: Option<bool>,
    /// Keep at most this many matches, the oldest first, so a new match
    /// never displaces one that already has its managed resource. Unset:
    /// every match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<i64>,
}

/// Which matches a query keeps, read from its [`QuerySpec`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Every match.
    All,
    /// The newest match only.
    MostRecent,
    /// The oldest `n` matches.
    First(usize),
}

/// What [`most_recent_or_limit`] says, and what the query controller
/// reports on `Synced` where a server without CEL (before Kubernetes 1.25)
/// let both through.
pub const MOST_RECENT_OR_LIMIT: &str =
    "set mostRecent or limit, not both: mostRecent keeps only the newest match";

impl QuerySpec {
    /// Why the selection cannot be used: `mostRecent` beside a `limit`.
    pub fn contradiction(&self) -> Option<&'static str> {
        (self.most_recent == Some(true) && self.limit.is_some()).then_some(MOST_RECENT_OR_LIMIT)
    }

    /// The selection the spec asks for ([`QuerySpec::contradiction`] says
    /// whether it may be used).
    pub fn selection(&self) -> Selection {
        match (self.most_recent, self.limit) {
            (Some(true), _) => Selection::MostRecent,
            (_, Some(limit)) => Selection::First(usize::try_from(limit).unwrap_or(0)),
            _ => Selection::All,
        }
    }
}

/// One match, as `status.matches` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryMatch {
    /// The cloud resource's id, which is its managed resource's
    /// `crossplane.io/external-name`.
    pub external_name: String,
    /// The observe-only managed resource, in the query's namespace.
    pub name: String,
}

/// The observed state of a query.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryStatus {
    /// `Ready` (every match has its managed resource) and `Synced` (the
    /// last listing succeeded), one entry per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// How many cloud resources match (after `mostRecent` and `limit`):
    /// the query owns one managed resource per match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_count: Option<i64>,
    /// The matches, oldest first: at most the first 100, `matchCount`
    /// counts them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub matches: Vec<QueryMatch>,
}

impl QueryStatus {
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

/// A query kind: its common spec, its status, and the managed kind its
/// matches become.
pub trait Query:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + CustomResourceExt
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// The namespaced managed kind each match becomes, observe-only.
    type Managed: Managed<Scoped = Namespaced, Scope = NamespaceResourceScope>;

    /// `providerConfigRef`, `mostRecent` and `limit`.
    fn query_spec(&self) -> &QuerySpec;
    /// `status`, if set.
    fn query_status(&self) -> Option<&QueryStatus>;
}

/// The label every managed resource of a query of kind `Q` carries, whose
/// value is the query's name: `<query group>/name`. Select a query's
/// matches with it (`vpcIdSelector.matchLabels`).
pub fn name_label<Q: Resource<DynamicType = ()>>() -> String {
    format!("{}/name", Q::group(&()))
}

/// The spec-level rule: `mostRecent` keeps one match, so a `limit` beside it
/// could only contradict it.
pub fn most_recent_or_limit() -> Rule {
    Rule::new("!(has(self.mostRecent) && self.mostRecent && has(self.limit))")
        .message(MOST_RECENT_OR_LIMIT)
}

/// The object-level rule: the query's name fits in a label value, since
/// each of its managed resources is labelled with it ([`name_label`]).
pub fn name_fits_a_label() -> Rule {
    Rule::new(format!("size(self.metadata.name) <= {MAX_QUERY_NAME}")).message(
        format!(
            "a query's name is at most {MAX_QUERY_NAME} characters: its managed resources carry it as a label value"
        )
        .as_str(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_bounds_the_listed_matches_as_the_constant_says() {
        let schema = serde_json::to_value(schemars::schema_for!(QueryStatus)).unwrap();
        assert_eq!(
            schema["properties"]["matches"]["maxItems"],
            MAX_LISTED_MATCHES
        );
    }

    #[test]
    fn the_selection_follows_most_recent_then_limit() {
        let spec = |most_recent, limit| QuerySpec {
            most_recent,
            limit,
            ..QuerySpec::default()
        };
        assert_eq!(spec(None, None).selection(), Selection::All);
        assert_eq!(spec(Some(false), None).selection(), Selection::All);
        assert_eq!(spec(Some(true), None).selection(), Selection::MostRecent);
        assert_eq!(spec(None, Some(3)).selection(), Selection::First(3));
        assert_eq!(spec(Some(false), Some(3)).selection(), Selection::First(3));
        assert_eq!(spec(Some(true), Some(3)).selection(), Selection::MostRecent);
        assert_eq!(
            spec(Some(true), Some(3)).contradiction(),
            Some(MOST_RECENT_OR_LIMIT)
        );
        assert_eq!(spec(Some(false), Some(3)).contradiction(), None);
        assert_eq!(spec(Some(true), None).contradiction(), None);
    }

    #[test]
    fn an_empty_spec_uses_the_default_cluster_provider_config() {
        let spec: QuerySpec = serde_json::from_str("{}").unwrap();
        assert_eq!(spec.provider_config_ref.name, "default");
        assert_eq!(spec.selection(), Selection::All);
    }
}
