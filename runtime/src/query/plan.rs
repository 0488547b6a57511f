//! What a query's reconcile should do, decided apart from I/O: which
//! matches it keeps ([`select`]), what each one's managed resource is
//! named ([`managed_name`]), and which managed resources to apply and which
//! to release ([`plan`]). Plain functions over plain data, unit-tested
//! without a cluster or a cloud.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use crossplane_types::Selection;
use crossplane_types::well_known::EXTERNAL_NAME_ANNOTATION;
use jiff::Timestamp;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The longest managed-resource name a query makes: a DNS label, so the
/// name also works where Kubernetes wants one (and reads well in
/// `kubectl get`).
pub const MAX_MANAGED_NAME: usize = 63;

/// Hex digits of the hash that keeps a shortened or rewritten name unique.
const HASH_DIGITS: usize = 10;

/// One cloud resource a query's filter matched, as the provider's list call
/// reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// The resource's id in the cloud: its managed resource's
    /// `crossplane.io/external-name`.
    pub external_name: String,
    /// When the cloud created it: orders the matches for `mostRecent` and
    /// `limit`.
    pub created_at: Timestamp,
    /// The managed resource's `spec.forProvider`: the fields that locate
    /// the resource (its region, its cluster), nothing else, since an
    /// observe-only resource needs no more.
    pub for_provider: Value,
}

/// The matches a query keeps, oldest first (ties broken by external
/// name, so the order never depends on the cloud's paging), and how many
/// matched before the selection. A resource listed twice (it moved between
/// pages while they were read) counts once.
pub fn select(found: Vec<Found>, selection: Selection) -> (Vec<Found>, usize) {
    let unique: BTreeMap<(Timestamp, String), Found> = found
        .into_iter()
        .map(|f| ((f.created_at, f.external_name.clone()), f))
        .collect();
    let mut seen = HashSet::new();
    let mut ordered: Vec<Found> = unique
        .into_values()
        .filter(|f| seen.insert(f.external_name.clone()))
        .collect();
    let total = ordered.len();
    match selection {
        Selection::All => {}
        Selection::MostRecent => {
            ordered = ordered.pop().into_iter().collect();
        }
        Selection::First(n) => ordered.truncate(n),
    }
    (ordered, total)
}

/// The name of the managed resource that observes `external_name` for the
/// query `query`: `<query>-<external name>`, the same on every run, so a
/// restarted provider applies the same object again rather than a second
/// one.
///
/// An external name that is not already a DNS label fragment (upper case,
/// `_`) is lowered and its other characters become `-`; since that can map
/// two names to one, such a name, and one too long for
/// [`MAX_MANAGED_NAME`], is cut and ends in a hash of the query and
/// external name instead.
pub fn managed_name(query: &str, external_name: &str) -> String {
    let cleaned: String = external_name
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '-') => c,
            _ => '-',
        })
        .collect();
    let cleaned = cleaned.trim_matches('-');
    let name = format!("{query}-{cleaned}");
    if cleaned == external_name && name.len() <= MAX_MANAGED_NAME {
        return name;
    }
    let digest = Sha256::digest(format!("{query}/{external_name}").as_bytes());
    let hash: String = digest
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .chars()
        .take(HASH_DIGITS)
        .collect();
    let keep = MAX_MANAGED_NAME - HASH_DIGITS - 1;
    let prefix: String = name.chars().take(keep).collect();
    format!("{}-{hash}", prefix.trim_end_matches('-'))
}

/// A managed resource a query owns, as the plan sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owned {
    pub name: String,
    /// Its `crossplane.io/external-name`.
    pub external_name: Option<String>,
    /// Whether `spec.managementPolicies` is exactly `["Observe"]`.
    pub observe_only: bool,
    /// Its `resourceVersion`, the precondition of its release.
    pub resource_version: Option<String>,
    /// Whether Kubernetes is deleting it.
    pub deleting: bool,
}

/// A match's managed resource, as it should be.
#[derive(Clone, Debug, PartialEq)]
pub struct Desired {
    /// Its name, from [`managed_name`].
    pub name: String,
    pub found: Found,
}

/// The matches kept, each named.
pub fn desired(query: &str, kept: Vec<Found>) -> Vec<Desired> {
    kept.into_iter()
        .map(|found| Desired {
            name: managed_name(query, &found.external_name),
            found,
        })
        .collect()
}

/// What one reconcile does to a query's managed resources.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The desired resources to apply: missing ones, and owned ones that
    /// someone changed (another external name, wider policies), which a
    /// query never leaves: its resources must stay observe-only, or
    /// deleting the query could delete a cloud resource.
    pub apply: Vec<Desired>,
    /// Owned resources no match wants any more.
    pub release: Vec<Owned>,
    /// Desired resources whose name is held by one Kubernetes is still
    /// deleting: applied once it is gone.
    pub waiting: usize,
}

/// Compares the desired managed resources with those the query owns.
/// `applied` are the names this process applied recently whose watch
/// events have not arrived yet: they count as present, so a reconcile
/// between a create and its echo does not apply the same object again.
pub fn plan(desired: &[Desired], owned: &[Owned], applied: &BTreeSet<String>) -> Plan {
    let owned_by_name: BTreeMap<&str, &Owned> =
        owned.iter().map(|o| (o.name.as_str(), o)).collect();
    let wanted: HashSet<&str> = desired.iter().map(|d| d.name.as_str()).collect();
    let mut plan = Plan::default();
    for d in desired {
        match owned_by_name.get(d.name.as_str()) {
            Some(o) if o.deleting => plan.waiting += 1,
            Some(o)
                if o.external_name.as_deref() == Some(d.found.external_name.as_str())
                    && o.observe_only => {}
            Some(_) => plan.apply.push(d.clone()),
            None if applied.contains(&d.name) => {}
            None => plan.apply.push(d.clone()),
        }
    }
    plan.release = owned
        .iter()
        .filter(|o| !o.deleting && !wanted.contains(o.name.as_str()))
        .cloned()
        .collect();
    plan
}

/// What every managed resource of one query shares: its kind, where it
/// lives, and what ties it to the query.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    /// The managed kind's `apiVersion` and `kind`.
    pub api_version: String,
    pub kind: String,
    /// The query's namespace.
    pub namespace: String,
    /// The label key that names the query, and the query's name.
    pub label: String,
    pub query: String,
    /// The query as controlling owner (`ownerReferences` entry).
    pub owner: Value,
    /// The query's `providerConfigRef`, which its managed resources use too.
    pub provider_config_ref: Value,
}

impl Template {
    /// The whole managed resource of a match, to server-side apply:
    /// observe-only, on the match's external name, labelled with and
    /// controlled by the query.
    pub fn object(&self, desired: &Desired) -> Value {
        json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": {
                "name": desired.name,
                "namespace": self.namespace,
                "labels": { &self.label: self.query },
                "annotations": { EXTERNAL_NAME_ANNOTATION: desired.found.external_name },
                "ownerReferences": [self.owner],
            },
            "spec": {
                "managementPolicies": ["Observe"],
                "providerConfigRef": self.provider_config_ref,
                "forProvider": desired.found.for_provider,
            },
        })
    }

    /// The merge patch that releases an owned managed resource: the query's
    /// label goes (selectors stop finding it at once), and its only owner
    /// becomes one that does not exist, a reference to the query with the
    /// uid `absent_uid` no object has. Kubernetes' garbage collector
    /// deletes an object whose owners are all absent, as it deletes the
    /// query's resources when the query goes.
    ///
    /// Why not a DELETE: a provider installed by Crossplane may get, list,
    /// watch, create, update and patch its own kinds, but not delete them
    /// (the RBAC manager's grant). The `resourceVersion` makes the patch
    /// fail rather than release a copy someone changed meanwhile.
    pub fn release_patch(&self, owned: &Owned, absent_uid: &str) -> Value {
        let mut owner = self.owner.clone();
        owner["uid"] = json!(absent_uid);
        if let Some(owner) = owner.as_object_mut() {
            owner.remove("blockOwnerDeletion");
        }
        json!({
            "metadata": {
                "resourceVersion": owned.resource_version,
                "labels": { &self.label: null },
                "ownerReferences": [owner],
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn found(id: &str, second: i64) -> Found {
        Found {
            external_name: id.to_owned(),
            created_at: Timestamp::from_second(second).unwrap(),
            for_provider: json!({ "region": "us-east-1" }),
        }
    }

    fn ids(found: &[Found]) -> Vec<&str> {
        found.iter().map(|f| f.external_name.as_str()).collect()
    }

    #[test]
    fn matches_are_kept_oldest_first_and_counted_once() {
        let listed = vec![found("c", 3), found("a", 1), found("b", 2), found("a", 1)];
        let (all, total) = select(listed.clone(), Selection::All);
        assert_eq!((ids(&all), total), (vec!["a", "b", "c"], 3));
        let (newest, total) = select(listed.clone(), Selection::MostRecent);
        assert_eq!((ids(&newest), total), (vec!["c"], 3));
        let (first, total) = select(listed, Selection::First(2));
        assert_eq!((ids(&first), total), (vec!["a", "b"], 3));
        let (none, total) = select(Vec::new(), Selection::MostRecent);
        assert_eq!((none.len(), total), (0, 0));
    }

    #[test]
    fn equal_creation_times_are_ordered_by_external_name() {
        let (kept, _) = select(vec![found("b", 1), found("a", 1)], Selection::First(1));
        assert_eq!(ids(&kept), ["a"]);
    }

    #[test]
    fn a_cloud_id_that_fits_becomes_part_of_the_name_as_it_is() {
        assert_eq!(
            managed_name("team-b", "vpc-0123456789abcdef0"),
            "team-b-vpc-0123456789abcdef0"
        );
        assert_eq!(managed_name("q", "web-db"), "q-web-db");
    }

    #[test]
    fn a_rewritten_or_long_name_is_cut_and_keeps_a_hash_so_names_stay_apart() {
        let upper = managed_name("dbs", "Web_DB");
        let lower = managed_name("dbs", "web-db");
        assert_ne!(upper, lower, "two external names, two managed resources");
        assert!(upper.starts_with("dbs-web-db-"), "{upper}");
        assert_eq!(upper, managed_name("dbs", "Web_DB"), "deterministic");
        let long = managed_name(&"q".repeat(50), "vpc-0123456789abcdef0");
        assert_eq!(long.len(), MAX_MANAGED_NAME, "{long}");
        let other = managed_name(&"q".repeat(50), "vpc-0123456789abcdef1");
        assert_ne!(long, other);
        for name in [&upper, &long] {
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !name.ends_with('-'),
                "{name} is a DNS label"
            );
        }
    }

    fn owned(name: &str, id: &str) -> Owned {
        Owned {
            name: name.to_owned(),
            external_name: Some(id.to_owned()),
            observe_only: true,
            resource_version: Some("1".to_owned()),
            deleting: false,
        }
    }

    fn names(desired: &[Desired]) -> Vec<&str> {
        desired.iter().map(|d| d.name.as_str()).collect()
    }

    #[test]
    fn a_new_match_is_applied_a_gone_one_released_and_the_rest_left_alone() {
        let want = desired("q", vec![found("a", 1), found("b", 2)]);
        let have = [owned("q-a", "a"), owned("q-c", "c")];
        let plan = plan(&want, &have, &BTreeSet::new());
        assert_eq!(names(&plan.apply), ["q-b"]);
        assert_eq!(plan.release, [owned("q-c", "c")]);
        assert_eq!(plan.waiting, 0);
    }

    #[test]
    fn the_steady_state_plans_nothing() {
        let want = desired("q", vec![found("a", 1)]);
        let plan = plan(&want, &[owned("q-a", "a")], &BTreeSet::new());
        assert_eq!(plan, Plan::default());
    }

    #[test]
    fn a_resource_applied_but_not_yet_seen_is_not_applied_again() {
        let want = desired("q", vec![found("a", 1)]);
        let applied = BTreeSet::from(["q-a".to_owned()]);
        assert_eq!(plan(&want, &[], &applied), Plan::default());
    }

    #[test]
    fn an_edited_resource_is_applied_again_to_stay_observe_only_and_on_its_match() {
        let want = desired("q", vec![found("a", 1), found("b", 2)]);
        let widened = Owned {
            observe_only: false,
            ..owned("q-a", "a")
        };
        let renamed = owned("q-b", "other");
        let plan = plan(&want, &[widened, renamed], &BTreeSet::new());
        assert_eq!(names(&plan.apply), ["q-a", "q-b"]);
        assert!(plan.release.is_empty());
    }

    fn template() -> Template {
        Template {
            api_version: "network.example.m.crossplane.io/v1alpha1".into(),
            kind: "VPC".into(),
            namespace: "app".into(),
            label: "query.example.m.crossplane.io/name".into(),
            query: "team-b".into(),
            owner: json!({ "apiVersion": "query.example.m.crossplane.io/v1alpha1",
                "kind": "VPCQuery", "name": "team-b", "uid": "u-1",
                "controller": true, "blockOwnerDeletion": true }),
            provider_config_ref: json!({ "kind": "ClusterProviderConfig", "name": "default" }),
        }
    }

    #[test]
    fn a_match_becomes_an_observe_only_resource_labelled_and_controlled_by_its_query() {
        let want = desired("team-b", vec![found("vpc-1", 1)]);
        assert_eq!(
            template().object(&want[0]),
            json!({
                "apiVersion": "network.example.m.crossplane.io/v1alpha1", "kind": "VPC",
                "metadata": {
                    "name": "team-b-vpc-1", "namespace": "app",
                    "labels": { "query.example.m.crossplane.io/name": "team-b" },
                    "annotations": { "crossplane.io/external-name": "vpc-1" },
                    "ownerReferences": [{ "apiVersion": "query.example.m.crossplane.io/v1alpha1",
                        "kind": "VPCQuery", "name": "team-b", "uid": "u-1",
                        "controller": true, "blockOwnerDeletion": true }],
                },
                "spec": {
                    "managementPolicies": ["Observe"],
                    "providerConfigRef": { "kind": "ClusterProviderConfig", "name": "default" },
                    "forProvider": { "region": "us-east-1" },
                },
            })
        );
    }

    #[test]
    fn a_release_drops_the_label_and_leaves_only_an_absent_owner() {
        let patch = template().release_patch(&owned("team-b-vpc-1", "vpc-1"), "gone");
        assert_eq!(
            patch,
            json!({ "metadata": {
                "resourceVersion": "1",
                "labels": { "query.example.m.crossplane.io/name": null },
                "ownerReferences": [{ "apiVersion": "query.example.m.crossplane.io/v1alpha1",
                    "kind": "VPCQuery", "name": "team-b", "uid": "gone", "controller": true }],
            } })
        );
    }

    #[test]
    fn a_name_held_by_a_resource_being_deleted_waits_and_is_not_released_twice() {
        let want = desired("q", vec![found("a", 1)]);
        let going = Owned {
            deleting: true,
            ..owned("q-a", "a")
        };
        let gone_too = Owned {
            deleting: true,
            ..owned("q-z", "z")
        };
        let plan = plan(&want, &[going, gone_too], &BTreeSet::new());
        assert_eq!(plan.waiting, 1);
        assert!(plan.apply.is_empty() && plan.release.is_empty());
    }
}
