//! What the stand-in decides, as plain functions over plain data: which MRD
//! names a pattern matches, which MRDs the policies activate, the CRD an MRD
//! becomes, and the conditions Crossplane sets on MRDs and MRAPs. The
//! controller ([`super::controller`]) only reads the cluster, calls these
//! and writes what they return.

use std::collections::{BTreeMap, BTreeSet};

use crossplane_types::condition::{Condition, ConditionStatus};
use serde_json::{Value, json};

use super::crds::{API_VERSION, MRD_KIND};

/// MRD condition type: whether its CRD exists and is served.
pub const TYPE_ESTABLISHED: &str = "Established";
/// MRAP condition type: whether the policy's last activation went well.
pub const TYPE_HEALTHY: &str = "Healthy";

/// `Established=True`: the CRD is Established.
pub const REASON_ESTABLISHED: &str = "EstablishedManagedResource";
/// `Established=False`: the MRD is Inactive, so it has no CRD.
pub const REASON_INACTIVE: &str = "InactiveManagedResource";
/// `Established=Unknown`: the CRD was applied and is not Established yet;
/// `Established=False` with a message: it could not be applied.
pub const REASON_PENDING: &str = "PendingManagedResource";
/// `Healthy=True`: every MRD the policy matches is Active.
pub const REASON_RUNNING: &str = "Running";
/// `Healthy=Unknown`: some MRD could not be activated, or a pattern is not
/// supported; the message says which.
pub const REASON_ENCOUNTERED_ERRORS: &str = "EncounteredErrors";

/// Whether the MRD name `name` matches the activation pattern `pattern`.
///
/// Crossplane matches with Go's `filepath.Match`. MRD names hold no `/`,
/// so there `*` matches any run of characters (dots included) and `?` any
/// one character. Both are supported here, anywhere in the pattern:
/// `*.network.fakecloud.m.crossplane.io`, `databaseinstances.*`, `*`, and
/// exact names. `filepath.Match`'s character classes (`[...]`) and
/// backslash escapes are not; a pattern using them matches nothing (see
/// [`is_supported`]). Written here rather than taken from a glob crate
/// because those treat `/`, `**` or braces in ways Crossplane does not.
pub fn matches(pattern: &str, name: &str) -> bool {
    if !is_supported(pattern) {
        return false;
    }
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    let (mut p, mut n) = (0, 0);
    // The last `*` seen, and where in `name` its match currently ends.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                // Let the last `*` take one more character and try again.
                Some((star_p, star_n)) => {
                    star = Some((star_p, star_n + 1));
                    p = star_p + 1;
                    n = star_n + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// Whether the stand-in understands `pattern`: no `[` and no `\`.
pub fn is_supported(pattern: &str) -> bool {
    !pattern.contains(['[', '\\'])
}

/// An MRAP as the plan needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub name: String,
    /// `spec.activate`.
    pub patterns: Vec<String>,
    /// Being deleted (`deletionTimestamp` set): it activates nothing more.
    pub deleting: bool,
}

/// An MRD as the plan needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub name: String,
    /// `spec.state` is `Active`.
    pub active: bool,
}

/// What the policies ask of the MRDs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Inactive MRDs that some policy activates: to be set `Active`.
    pub activate: BTreeSet<String>,
    /// For each live policy, the existing MRDs it matches, sorted: its
    /// `status.activated`. An MRD another policy activated first is listed
    /// too, as Crossplane lists it.
    pub activated_by: BTreeMap<String, Vec<String>>,
}

/// The union of what every live policy activates, over the MRDs that
/// exist. Nothing is ever deactivated: an MRD no policy names keeps its
/// state, so deleting a policy leaves its MRDs Active (seed 002: a started
/// controller cannot be stopped).
pub fn plan(policies: &[Policy], definitions: &[Definition]) -> Plan {
    let mut plan = Plan::default();
    for policy in policies.iter().filter(|p| !p.deleting) {
        let matched: Vec<String> = definitions
            .iter()
            .filter(|d| policy.patterns.iter().any(|p| matches(p, &d.name)))
            .map(|d| d.name.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        for name in &matched {
            if definitions.iter().any(|d| &d.name == name && !d.active) {
                plan.activate.insert(name.clone());
            }
        }
        plan.activated_by.insert(policy.name.clone(), matched);
    }
    plan
}

/// The CRD an MRD becomes: its spec without the MRD's own two fields
/// (`connectionDetails`, `state`), named like the MRD and owned by it (not
/// as controller), as Crossplane's MRD controller makes it; deleting the
/// MRD lets the garbage collector delete the CRD.
pub fn crd_of(mrd: &Value) -> Result<Value, String> {
    let name = mrd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or("the MRD has no metadata.name")?;
    let uid = mrd
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("MRD {name} has no metadata.uid"))?;
    let mut spec = mrd
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .ok_or_else(|| format!("MRD {name} has no spec"))?;
    spec.remove("connectionDetails");
    spec.remove("state");
    Ok(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": name,
            "ownerReferences": [{
                "apiVersion": API_VERSION, "kind": MRD_KIND, "name": name, "uid": uid,
            }],
        },
        "spec": spec,
    }))
}

/// Where an active MRD's CRD stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrdState {
    /// Applied, not Established yet.
    Pending,
    /// Established: its kind is served.
    Established,
    /// Could not be applied; why.
    Failed(String),
}

/// The MRD's `Established` condition, as Crossplane's MRD controller sets
/// it: `crd` is where an active MRD's CRD stands, `None` for an inactive
/// MRD, which has no CRD of ours.
pub fn mrd_condition(crd: Option<&CrdState>, generation: Option<i64>) -> Condition {
    let condition = match crd {
        None => Condition::new(TYPE_ESTABLISHED, ConditionStatus::False, REASON_INACTIVE),
        Some(CrdState::Established) => {
            Condition::new(TYPE_ESTABLISHED, ConditionStatus::True, REASON_ESTABLISHED)
        }
        Some(CrdState::Pending) => {
            Condition::new(TYPE_ESTABLISHED, ConditionStatus::Unknown, REASON_PENDING)
        }
        Some(CrdState::Failed(why)) => {
            Condition::new(TYPE_ESTABLISHED, ConditionStatus::False, REASON_PENDING)
                .with_message(format!("cannot apply the CustomResourceDefinition: {why}"))
        }
    };
    with_generation(condition, generation)
}

/// The MRAP's `Healthy` condition: `Running` when every MRD it matches is
/// Active; otherwise `EncounteredErrors`, naming how many of its MRDs could
/// not be activated and the patterns the stand-in does not support.
pub fn policy_condition(
    failed: usize,
    matched: usize,
    unsupported: &[&str],
    generation: Option<i64>,
) -> Condition {
    let mut problems = Vec::new();
    if failed > 0 {
        problems.push(format!(
            "failed to activate {failed} of {matched} ManagedResourceDefinitions"
        ));
    }
    if !unsupported.is_empty() {
        problems.push(format!(
            "patterns with [ or \\ are not supported by this stand-in for Crossplane and match nothing: {}",
            unsupported.join(", ")
        ));
    }
    let condition = if problems.is_empty() {
        Condition::new(TYPE_HEALTHY, ConditionStatus::True, REASON_RUNNING)
    } else {
        Condition::new(
            TYPE_HEALTHY,
            ConditionStatus::Unknown,
            REASON_ENCOUNTERED_ERRORS,
        )
        .with_message(problems.join("; "))
    };
    with_generation(condition, generation)
}

fn with_generation(condition: Condition, generation: Option<i64>) -> Condition {
    match generation {
        Some(generation) => condition.with_observed_generation(generation),
        None => condition,
    }
}

/// Whether a package's `spec.capabilities` declare `safe-start`, matched as
/// Crossplane matches capabilities: letters and digits only, any case
/// (`safe-start`, `SafeStart`, `safe_start`). Such a provider's MRDs are
/// created Inactive; any other's Active.
pub fn declares_safe_start(capabilities: &[String]) -> bool {
    let fuzzy = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    capabilities.iter().any(|c| fuzzy(c) == "safestart")
}

#[cfg(test)]
mod tests {
    use super::*;

    const VPC: &str = "vpcs.network.fakecloud.m.crossplane.io";
    const SUBNET: &str = "subnets.network.fakecloud.m.crossplane.io";
    const LEGACY_VPC: &str = "vpcs.network.fakecloud.crossplane.io";
    const DB: &str = "databaseinstances.database.fakecloud.m.crossplane.io";
    const LEGACY_DB: &str = "databaseinstances.database.fakecloud.crossplane.io";

    fn definitions(active: &[&str]) -> Vec<Definition> {
        [VPC, SUBNET, LEGACY_VPC, DB, LEGACY_DB]
            .iter()
            .map(|name| Definition {
                name: (*name).to_owned(),
                active: active.contains(name),
            })
            .collect()
    }

    fn policy(name: &str, patterns: &[&str]) -> Policy {
        Policy {
            name: name.to_owned(),
            patterns: patterns.iter().map(|p| (*p).to_owned()).collect(),
            deleting: false,
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn an_exact_name_matches_only_itself() {
        assert!(matches(VPC, VPC));
        assert!(!matches(VPC, LEGACY_VPC));
        assert!(!matches(VPC, &format!("{VPC}x")));
        assert!(!matches(&format!("{VPC}x"), VPC));
    }

    #[test]
    fn a_star_matches_any_run_of_characters_dots_included() {
        assert!(matches("*.network.fakecloud.m.crossplane.io", VPC));
        assert!(matches("*.network.fakecloud.m.crossplane.io", SUBNET));
        assert!(!matches("*.network.fakecloud.m.crossplane.io", LEGACY_VPC));
        assert!(matches("*.fakecloud.m.crossplane.io", VPC));
        assert!(matches("databaseinstances.*", DB));
        assert!(matches("databaseinstances.*", LEGACY_DB));
        assert!(!matches("databaseinstances.*", VPC));
        assert!(matches("*", VPC));
        assert!(matches("vpcs.*.m.crossplane.io", VPC));
        assert!(!matches("vpcs.*.m.crossplane.io", LEGACY_VPC));
        assert!(matches("*s.*.fakecloud.*", LEGACY_DB));
        assert!(matches("**", ""));
        assert!(!matches("a*b", "a"));
        assert!(matches("a*b*b", "abxbb"));
    }

    #[test]
    fn a_question_mark_matches_one_character() {
        assert!(matches("vpc?.network.fakecloud.m.crossplane.io", VPC));
        assert!(!matches("vpcs?.network.fakecloud.m.crossplane.io", VPC));
    }

    #[test]
    fn classes_and_escapes_are_unsupported_and_match_nothing() {
        assert!(!is_supported("[v]pcs.*"));
        assert!(!matches("[v]pcs.*", VPC));
        assert!(!matches(r"vpcs\.*", VPC));
        assert!(is_supported("*.network.fakecloud.m.crossplane.io"));
    }

    #[test]
    fn a_policy_activates_the_inactive_mrds_it_matches_and_lists_all_it_matches() {
        let plan = plan(
            &[policy("net", &["*.network.fakecloud.m.crossplane.io"])],
            &definitions(&[SUBNET]),
        );
        assert_eq!(plan.activate, BTreeSet::from([VPC.to_owned()]));
        assert_eq!(plan.activated_by["net"], names(&[SUBNET, VPC]));
    }

    #[test]
    fn two_policies_activate_their_union() {
        let plan = plan(
            &[
                policy("net", &["*.network.fakecloud.m.crossplane.io"]),
                policy("db", &["databaseinstances.*", LEGACY_VPC]),
            ],
            &definitions(&[]),
        );
        assert_eq!(
            plan.activate,
            names(&[VPC, SUBNET, LEGACY_VPC, DB, LEGACY_DB])
                .into_iter()
                .collect::<BTreeSet<_>>()
        );
        assert_eq!(plan.activated_by["net"], names(&[SUBNET, VPC]));
        assert_eq!(plan.activated_by["db"], names(&[LEGACY_DB, DB, LEGACY_VPC]));
    }

    #[test]
    fn nothing_is_ever_deactivated() {
        // No policy at all, or one being deleted: active MRDs stay active.
        let mut deleting = policy("net", &["*"]);
        deleting.deleting = true;
        for policies in [vec![], vec![deleting]] {
            let plan = plan(&policies, &definitions(&[VPC, DB]));
            assert_eq!(plan, Plan::default());
        }
    }

    #[test]
    fn a_name_no_mrd_has_activates_nothing() {
        let plan = plan(
            &[policy("future", &["widgets.example.org"])],
            &definitions(&[]),
        );
        assert!(plan.activate.is_empty());
        assert_eq!(plan.activated_by["future"], Vec::<String>::new());
    }

    #[test]
    fn the_crd_is_the_mrd_spec_without_its_own_fields_owned_by_the_mrd() {
        let mrd = json!({
            "apiVersion": API_VERSION, "kind": MRD_KIND,
            "metadata": {"name": VPC, "uid": "u-1", "generation": 2},
            "spec": {
                "group": "network.fakecloud.m.crossplane.io",
                "names": {"kind": "VPC", "plural": "vpcs"},
                "scope": "Namespaced",
                "versions": [{"name": "v1alpha1", "served": true, "storage": true}],
                "connectionDetails": [{"name": "password", "description": "p"}],
                "state": "Active",
            },
            "status": {"conditions": []},
        });
        let crd = crd_of(&mrd).unwrap();
        assert_eq!(
            crd,
            json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": VPC, "ownerReferences": [{
                    "apiVersion": API_VERSION, "kind": MRD_KIND, "name": VPC, "uid": "u-1",
                }]},
                "spec": {
                    "group": "network.fakecloud.m.crossplane.io",
                    "names": {"kind": "VPC", "plural": "vpcs"},
                    "scope": "Namespaced",
                    "versions": [{"name": "v1alpha1", "served": true, "storage": true}],
                },
            })
        );
        let err = crd_of(&json!({"metadata": {"name": VPC}, "spec": {}})).unwrap_err();
        assert!(err.contains("no metadata.uid"), "{err}");
    }

    #[test]
    fn mrd_conditions_follow_crossplanes_mrd_controller() {
        let failed_crd = CrdState::Failed("no".into());
        let cases = [
            (None, ConditionStatus::False, REASON_INACTIVE),
            (
                Some(&CrdState::Pending),
                ConditionStatus::Unknown,
                REASON_PENDING,
            ),
            (
                Some(&CrdState::Established),
                ConditionStatus::True,
                REASON_ESTABLISHED,
            ),
            (Some(&failed_crd), ConditionStatus::False, REASON_PENDING),
        ];
        for (crd, status, reason) in cases {
            let condition = mrd_condition(crd, Some(3));
            assert_eq!(condition.type_, TYPE_ESTABLISHED);
            assert_eq!(
                (condition.status, condition.reason.as_str()),
                (status, reason)
            );
            assert_eq!(condition.observed_generation, Some(3));
        }
        let failed = mrd_condition(Some(&CrdState::Failed("forbidden".into())), None);
        assert_eq!(
            failed.message.as_deref(),
            Some("cannot apply the CustomResourceDefinition: forbidden")
        );
    }

    #[test]
    fn a_policy_is_healthy_until_an_activation_fails_or_a_pattern_is_unsupported() {
        let healthy = policy_condition(0, 2, &[], Some(1));
        assert_eq!(
            (
                healthy.type_.as_str(),
                healthy.status,
                healthy.reason.as_str()
            ),
            (TYPE_HEALTHY, ConditionStatus::True, REASON_RUNNING)
        );
        let failed = policy_condition(1, 2, &["[v]pcs.*"], None);
        assert_eq!(failed.status, ConditionStatus::Unknown);
        assert_eq!(failed.reason, REASON_ENCOUNTERED_ERRORS);
        let message = failed.message.unwrap();
        assert!(message.contains("failed to activate 1 of 2"), "{message}");
        assert!(message.contains("[v]pcs.*"), "{message}");
    }

    #[test]
    fn safe_start_is_matched_as_crossplane_matches_capabilities() {
        let caps = |list: &[&str]| names(list);
        assert!(declares_safe_start(&caps(&["safe-start"])));
        assert!(declares_safe_start(&caps(&[
            "late-mr-activation",
            "SafeStart"
        ])));
        assert!(declares_safe_start(&caps(&["Safe_Start"])));
        assert!(!declares_safe_start(&caps(&["late-mr-activation"])));
        assert!(!declares_safe_start(&[]));
    }
}
