//! The difference between a managed resource's declaration and the cloud,
//! field by field, with what the provider does about each field: the
//! content of `status.drift`, the `UpToDate` condition and the drift
//! events (see [`crossplane_types::drift`] for the fields).
//!
//! Pure functions over JSON, like [`crate::fields`] whose rules they
//! report: the reconciler ([`crate::reconcile`]) gathers the inputs, these
//! decide, and the same rules that pick an update patch name every field
//! here, so the report cannot disagree with what the provider does.

use std::collections::BTreeMap;

use crossplane_types::condition::{
    REASON_DRIFT_IGNORED, REASON_DRIFTED, REASON_NO_DRIFT, TYPE_UP_TO_DATE,
};
use crossplane_types::drift::{MAX_DRIFT_FIELDS, MAX_DRIFT_VALUE_CHARS};
use crossplane_types::{Condition, ConditionStatus, Drift, DriftAction, DriftedField};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Map, Value};

use crate::fields::{drift_patch_with, merge_init_under};
use crate::lists::ListTypes;
use crate::policy::Actions;

/// What the report is computed from: one observation and the declaration.
pub struct Inputs<'a> {
    pub actions: Actions,
    /// `forProvider` without its steering and reference fields.
    pub desired: &'a Value,
    /// `initProvider`, likewise.
    pub init: &'a Value,
    /// The cloud's view (`atProvider`); `None` when the resource is missing.
    pub observed: Option<&'a Value>,
    /// Write-only fields whose desired value differs from the one last
    /// applied (the kind's [`crate::CloudKind::write_only_drift`]).
    pub write_only: &'a Map<String, Value>,
    /// Top-level fields the cloud accepts only at create.
    pub create_only: &'a [&'a str],
    /// Top-level fields whose values are secrets.
    pub sensitive: &'a [&'a str],
}

/// One differing field, before it is rendered into the status.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub path: String,
    pub declared: Option<Value>,
    pub observed: Option<Value>,
    pub sensitive: bool,
    pub action: DriftAction,
}

/// Every differing field of one observation, in no particular order.
///
/// - The resource exists: each `forProvider` field whose value the cloud
///   does not hold ([`crate::fields::drift_patch_with`]'s rule: keys the declaration does not
///   name are never drift) is `Update`, `WouldUpdate` without the `Update`
///   policy, or `CreateOnly`; each changed write-only field likewise, always
///   sensitive; each field only `initProvider` sets whose value the cloud
///   has moved away from is `InitProvider`. A field late initialisation
///   fills is no difference: it is copied into `forProvider` in the same
///   reconcile, and listing it until the next one would cost every new
///   resource a status write.
/// - It is missing and the policies lack `Create`: every field a create
///   would send (`forProvider` merged over `initProvider`) is `WouldCreate`.
/// - It is missing and may be created: nothing (it is being created).
///
/// Lists compare with the kind's list semantics `lists`
/// ([`crate::lists::for_kind`]), by the rules of
/// [`crate::fields::drift_patch_with`], which also picks the update patch:
/// a set or map list whose items the cloud holds in another order is no
/// difference, and one that differs is reported whole, at the list's path,
/// as the update sends it.
pub fn differences_with(inputs: &Inputs<'_>, lists: &ListTypes) -> Vec<Difference> {
    let sensitive = |path: &[String]| inputs.sensitive.contains(&path[0].as_str());
    let Some(observed) = inputs.observed else {
        if inputs.actions.create {
            return Vec::new();
        }
        let body = merge_init_under(inputs.desired, inputs.init);
        return leaves(&body)
            .into_iter()
            .map(|(path, value)| Difference {
                sensitive: sensitive(&path),
                path: render_path(&path),
                declared: Some(value.clone()),
                observed: None,
                action: DriftAction::WouldCreate,
            })
            .collect();
    };
    let changed = |create_only: bool| {
        if create_only {
            DriftAction::CreateOnly
        } else if inputs.actions.update {
            DriftAction::Update
        } else {
            DriftAction::WouldUpdate
        }
    };
    let mut found = Vec::new();
    let declared_drift = Value::Object(drift_patch_with(inputs.desired, observed, lists));
    for (path, want) in leaves(&declared_drift) {
        found.push(Difference {
            sensitive: sensitive(&path),
            action: changed(inputs.create_only.contains(&path[0].as_str())),
            observed: lookup(observed, &path).cloned(),
            declared: Some(want.clone()),
            path: render_path(&path),
        });
    }
    for key in inputs.write_only.keys() {
        found.push(Difference {
            path: render_path(std::slice::from_ref(key)),
            declared: None,
            observed: None,
            sensitive: true,
            action: changed(false),
        });
    }
    // Fields the merged create body holds beyond forProvider's drift: the
    // ones only initProvider sets, which the cloud now owns.
    let merged = merge_init_under(inputs.desired, inputs.init);
    let merged_drift = Value::Object(drift_patch_with(&merged, observed, lists));
    for (path, want) in leaves(&merged_drift) {
        if lookup(&declared_drift, &path).is_none() {
            found.push(Difference {
                sensitive: sensitive(&path),
                action: DriftAction::InitProvider,
                observed: lookup(observed, &path).cloned(),
                declared: Some(want.clone()),
                path: render_path(&path),
            });
        }
    }
    found
}

/// The leaf fields of a JSON object as (path, value): objects are entered
/// (an empty one is a leaf, an explicit value), arrays and scalars are
/// leaves, `null` is unset and skipped.
fn leaves(value: &Value) -> Vec<(Vec<String>, &Value)> {
    fn walk<'v>(value: &'v Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, &'v Value)>) {
        match value {
            Value::Null => {}
            Value::Object(map) if !map.is_empty() || path.is_empty() => {
                for (key, child) in map {
                    path.push(key.clone());
                    walk(child, path, out);
                    path.pop();
                }
            }
            leaf => out.push((path.clone(), leaf)),
        }
    }
    let mut out = Vec::new();
    walk(value, &mut Vec::new(), &mut out);
    out
}

fn lookup<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter()
        .try_fold(value, |at, key| at.get(key))
        .filter(|v| !v.is_null())
}

/// `tags.env`; a key that is not a plain word (`kubernetes.io/role`) is
/// quoted, `tags["kubernetes.io/role"]`, so a path reads back unambiguously.
fn render_path(path: &[String]) -> String {
    let mut out = String::new();
    for key in path {
        let plain = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if plain {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(key);
        } else {
            out.push_str(&format!("[{}]", Value::String(key.clone())));
        }
    }
    out
}

/// A value as `status.drift` shows it: a string as it is, anything else as
/// compact JSON, cut at [`MAX_DRIFT_VALUE_CHARS`] characters.
fn render_value(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.chars().count() <= MAX_DRIFT_VALUE_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_DRIFT_VALUE_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// `status.drift` for these differences: the fields the provider acts on
/// first, then by path, at most [`MAX_DRIFT_FIELDS`], sensitive values
/// masked. A field listed in `previous` with the same action keeps its
/// `since`, so an unchanged difference writes nothing.
pub fn status(mut found: Vec<Difference>, previous: Option<&Drift>, now: &Time) -> Drift {
    found.sort_by(|a, b| (a.action, &a.path).cmp(&(b.action, &b.path)));
    let total = found.len();
    let count = found.iter().filter(|d| d.action.is_drift()).count();
    let since = |path: &str, action| {
        previous
            .and_then(|p| {
                p.fields
                    .iter()
                    .find(|f| f.path == path && f.action == action)
            })
            .map_or_else(|| now.clone(), |f| f.since.clone())
    };
    let fields = found
        .into_iter()
        .take(MAX_DRIFT_FIELDS)
        .map(|d| {
            let shown = |v: Option<Value>| v.filter(|_| !d.sensitive).map(|v| render_value(&v));
            DriftedField {
                since: since(&d.path, d.action),
                declared: shown(d.declared),
                observed: shown(d.observed),
                sensitive: d.sensitive,
                action: d.action,
                path: d.path,
            }
        })
        .collect::<Vec<_>>();
    Drift {
        count: count as u32,
        omitted: (total - fields.len()) as u32,
        fields,
    }
}

/// The `UpToDate` condition for a drift report.
pub fn condition(drift: &Drift) -> Condition {
    let of = |wanted: &[DriftAction]| -> Vec<&str> {
        drift
            .fields
            .iter()
            .filter(|f| wanted.contains(&f.action))
            .map(|f| f.path.as_str())
            .collect()
    };
    let updating = of(&[DriftAction::Update]);
    if !updating.is_empty() {
        return Condition::new(TYPE_UP_TO_DATE, ConditionStatus::False, REASON_DRIFTED)
            .with_message(format!("updating {}", listed(&updating)));
    }
    let mut ignored = Vec::new();
    let would_create = of(&[DriftAction::WouldCreate]);
    if !would_create.is_empty() {
        ignored.push(
            "the external resource does not exist and managementPolicies lack Create; \
             status.drift shows what a create would send"
                .to_owned(),
        );
    }
    let would_update = of(&[DriftAction::WouldUpdate]);
    if !would_update.is_empty() {
        ignored.push(format!(
            "{} differ{} and managementPolicies lack Update",
            listed(&would_update),
            if would_update.len() == 1 { "s" } else { "" }
        ));
    }
    let create_only = of(&[DriftAction::CreateOnly]);
    if !create_only.is_empty() {
        ignored.push(format!(
            "{} differ{} but can only be set at create",
            listed(&create_only),
            if create_only.len() == 1 { "s" } else { "" }
        ));
    }
    if drift.count == 0 {
        // Listed first, so nothing drifts among the omitted either.
        let condition = Condition::new(TYPE_UP_TO_DATE, ConditionStatus::True, REASON_NO_DRIFT);
        return match drift.fields.len() + drift.omitted as usize {
            0 => condition,
            n => condition.with_message(format!(
                "{n} field{} differ{} only where initProvider applies at create only",
                if n == 1 { "" } else { "s" },
                if n == 1 { "s" } else { "" }
            )),
        };
    }
    Condition::new(
        TYPE_UP_TO_DATE,
        ConditionStatus::False,
        REASON_DRIFT_IGNORED,
    )
    .with_message(ignored.join("; "))
}

/// Up to five paths, then how many more.
fn listed(paths: &[&str]) -> String {
    const SHOWN: usize = 5;
    let head = paths[..paths.len().min(SHOWN)].join(", ");
    match paths.len().saturating_sub(SHOWN) {
        0 => head,
        more => format!("{head} and {more} more"),
    }
}

/// How the drift changed from one report to the next: what the events say
/// and what the correction histogram observes. Only drift counts (not
/// `InitProvider`, nor a missing resource's `WouldCreate`), and only listed fields are compared.
#[derive(Debug, Default, PartialEq)]
pub struct Changes {
    /// Fields that started to drift, with what the provider does.
    pub started: Vec<(String, DriftAction)>,
    /// Fields that drifted and no longer do, with when they started and
    /// whether the provider had been updating them (a correction).
    pub ended: Vec<Ended>,
}

#[derive(Debug, PartialEq)]
pub struct Ended {
    pub path: String,
    pub since: Time,
    pub corrected: bool,
}

fn tracked(field: &DriftedField) -> bool {
    field.action.is_drift() && field.action != DriftAction::WouldCreate
}

/// Compares two successive reports.
pub fn changes(previous: Option<&Drift>, current: &Drift) -> Changes {
    let before: BTreeMap<&str, &DriftedField> = previous
        .map(|p| p.fields.iter().filter(|f| tracked(f)))
        .into_iter()
        .flatten()
        .map(|f| (f.path.as_str(), f))
        .collect();
    let after: BTreeMap<&str, DriftAction> = current
        .fields
        .iter()
        .filter(|f| tracked(f))
        .map(|f| (f.path.as_str(), f.action))
        .collect();
    Changes {
        started: after
            .iter()
            .filter(|(path, _)| !before.contains_key(*path))
            .map(|(path, action)| ((*path).to_owned(), *action))
            .collect(),
        ended: before
            .iter()
            .filter(|(path, _)| !after.contains_key(*path))
            .map(|(path, field)| Ended {
                path: (*path).to_owned(),
                since: field.since.clone(),
                corrected: field.action == DriftAction::Update,
            })
            .collect(),
    }
}

impl Changes {
    /// The Normal event reporting drift that started, if any:
    /// `("DriftDetected", message)`.
    pub fn detected_event(&self) -> Option<(&'static str, String)> {
        if self.started.is_empty() {
            return None;
        }
        let describe = |action| match action {
            DriftAction::Update => "updating",
            DriftAction::WouldUpdate => "not updating: managementPolicies lack Update",
            _ => "not updating: set at create only",
        };
        let mut by_action: BTreeMap<DriftAction, Vec<&str>> = BTreeMap::new();
        for (path, action) in &self.started {
            by_action.entry(*action).or_default().push(path);
        }
        let parts: Vec<String> = by_action
            .iter()
            .map(|(action, paths)| format!("{} ({})", listed(paths), describe(*action)))
            .collect();
        Some((
            "DriftDetected",
            format!("fields differ from the cloud: {}", parts.join("; ")),
        ))
    }

    /// The Normal event reporting drift that ended, if any:
    /// `("DriftCleared", message)`.
    pub fn cleared_event(&self) -> Option<(&'static str, String)> {
        if self.ended.is_empty() {
            return None;
        }
        let paths = |corrected: bool| -> Vec<&str> {
            self.ended
                .iter()
                .filter(|e| e.corrected == corrected)
                .map(|e| e.path.as_str())
                .collect()
        };
        let mut parts = Vec::new();
        let (fixed, gone) = (paths(true), paths(false));
        if !fixed.is_empty() {
            parts.push(format!("corrected {}", listed(&fixed)));
        }
        if !gone.is_empty() {
            let verb = if gone.len() == 1 { "differs" } else { "differ" };
            parts.push(format!("{} no longer {verb}", listed(&gone)));
        }
        Some(("DriftCleared", parts.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn all() -> Actions {
        Actions::ALL
    }

    fn observe_only() -> Actions {
        Actions {
            observe: true,
            ..Default::default()
        }
    }

    struct Case {
        actions: Actions,
        desired: Value,
        init: Value,
        observed: Option<Value>,
        write_only: Map<String, Value>,
    }

    impl Case {
        fn new(desired: Value, observed: Option<Value>) -> Self {
            Self {
                actions: all(),
                desired,
                init: Value::Null,
                observed,
                write_only: Map::new(),
            }
        }

        fn run(&self, create_only: &[&str], sensitive: &[&str]) -> Vec<Difference> {
            self.run_with(create_only, sensitive, &ListTypes::default())
        }

        fn run_with(
            &self,
            create_only: &[&str],
            sensitive: &[&str],
            lists: &ListTypes,
        ) -> Vec<Difference> {
            let mut found = differences_with(
                &Inputs {
                    actions: self.actions,
                    desired: &self.desired,
                    init: &self.init,
                    observed: self.observed.as_ref(),
                    write_only: &self.write_only,
                    create_only,
                    sensitive,
                },
                lists,
            );
            found.sort_by(|a, b| a.path.cmp(&b.path));
            found
        }
    }

    fn diff(
        path: &str,
        declared: Option<Value>,
        observed: Option<Value>,
        action: DriftAction,
    ) -> Difference {
        Difference {
            path: path.into(),
            declared,
            observed,
            sensitive: false,
            action,
        }
    }

    fn now() -> Time {
        Time(jiff::Timestamp::from_second(1_000).unwrap())
    }

    #[test]
    fn nothing_differs_when_the_cloud_holds_every_declared_field() {
        let case = Case::new(
            json!({"cidrBlock": "10.0.0.0/16", "tags": {"a": "1"}}),
            Some(
                json!({"cidrBlock": "10.0.0.0/16", "tags": {"a": "1", "other-team": "x"}, "id": "vpc-1"}),
            ),
        );
        assert!(case.run(&[], &[]).is_empty());
        let drift = status(Vec::new(), None, &now());
        assert_eq!(drift, Drift::default());
        let up_to_date = condition(&drift);
        assert_eq!(
            (up_to_date.status, up_to_date.reason.as_str()),
            (ConditionStatus::True, "NoDrift")
        );
        assert_eq!(up_to_date.message, None);
    }

    #[test]
    fn drifted_fields_are_updated_with_update_and_only_previewed_without() {
        let mut case = Case::new(
            json!({"tags": {"env": "prod"}, "enableDnsHostnames": true}),
            Some(json!({"tags": {"env": "dev"}})),
        );
        let expected = |action| {
            vec![
                diff("enableDnsHostnames", Some(json!(true)), None, action),
                diff("tags.env", Some(json!("prod")), Some(json!("dev")), action),
            ]
        };
        assert_eq!(case.run(&[], &[]), expected(DriftAction::Update));
        case.actions = observe_only();
        assert_eq!(case.run(&[], &[]), expected(DriftAction::WouldUpdate));
        let drift = status(case.run(&[], &[]), None, &now());
        let ignored = condition(&drift);
        assert_eq!(
            (ignored.status, ignored.reason.as_str()),
            (ConditionStatus::False, "DriftIgnored")
        );
        assert_eq!(
            ignored.message.as_deref(),
            Some("enableDnsHostnames, tags.env differ and managementPolicies lack Update")
        );
    }

    #[test]
    fn a_create_only_field_is_never_an_update() {
        let case = Case::new(
            json!({"cidrBlock": "10.1.0.0/16", "tags": {"a": "1"}}),
            Some(json!({"cidrBlock": "10.0.0.0/16", "tags": {"a": "2"}})),
        );
        assert_eq!(
            case.run(&["cidrBlock"], &[]),
            vec![
                diff(
                    "cidrBlock",
                    Some(json!("10.1.0.0/16")),
                    Some(json!("10.0.0.0/16")),
                    DriftAction::CreateOnly
                ),
                diff(
                    "tags.a",
                    Some(json!("1")),
                    Some(json!("2")),
                    DriftAction::Update
                ),
            ]
        );
        let drift = status(case.run(&["cidrBlock"], &[]), None, &now());
        // The provider acts on tags first; the condition says so.
        assert_eq!(drift.fields[0].action, DriftAction::Update);
        assert_eq!(condition(&drift).reason, "Drifted");
        let only_create_only = Case::new(
            json!({"cidrBlock": "10.1.0.0/16"}),
            Some(json!({"cidrBlock": "10.0.0.0/16"})),
        );
        let drift = status(only_create_only.run(&["cidrBlock"], &[]), None, &now());
        let ignored = condition(&drift);
        assert_eq!(ignored.reason, "DriftIgnored");
        assert_eq!(
            ignored.message.as_deref(),
            Some("cidrBlock differs but can only be set at create")
        );
    }

    #[test]
    fn a_field_only_init_provider_sets_is_the_clouds_and_not_drift() {
        // The autoscaler story: desiredSize was 2 at create, the cloud says 5.
        let mut case = Case::new(
            json!({"scalingConfig": {"minSize": 1, "maxSize": 10}}),
            Some(json!({"scalingConfig": {"minSize": 1, "maxSize": 10, "desiredSize": 5}})),
        );
        case.init = json!({"scalingConfig": {"desiredSize": 2, "maxSize": 3}});
        assert_eq!(
            case.run(&[], &[]),
            vec![diff(
                "scalingConfig.desiredSize",
                Some(json!(2)),
                Some(json!(5)),
                DriftAction::InitProvider
            )]
        );
        let drift = status(case.run(&[], &[]), None, &now());
        // Listed, but not counted: the DRIFT column reads 0.
        assert_eq!((drift.count, drift.fields.len()), (0, 1));
        let up_to_date = condition(&drift);
        assert_eq!(
            (up_to_date.status, up_to_date.reason.as_str()),
            (ConditionStatus::True, "NoDrift")
        );
        assert_eq!(
            up_to_date.message.as_deref(),
            Some("1 field differs only where initProvider applies at create only")
        );
        assert!(changes(None, &drift).detected_event().is_none());
    }

    #[test]
    fn write_only_and_sensitive_fields_show_only_that_they_differ() {
        let mut case = Case::new(
            json!({"engine": "postgres", "secretToken": "s3cret-declared"}),
            Some(json!({"engine": "postgres", "secretToken": "s3cret-cloud"})),
        );
        case.write_only = json!({"masterPassword": "rotated-s3cret"})
            .as_object()
            .unwrap()
            .clone();
        let found = case.run(&[], &["secretToken"]);
        assert_eq!(found.len(), 2);
        assert!(found.iter().all(|d| d.sensitive));
        let drift = status(found, None, &now());
        let text = serde_json::to_string(&drift).unwrap();
        assert!(
            !text.contains("s3cret"),
            "a secret reached the status: {text}"
        );
        assert_eq!(drift.fields[0].path, "masterPassword");
        assert_eq!(drift.fields[0].declared, None);
        assert!(drift.fields[0].sensitive);
        // A create preview masks the same way.
        let mut missing = Case::new(json!({"engine": "postgres", "secretToken": "s3cret"}), None);
        missing.actions = observe_only();
        let drift = status(missing.run(&[], &["secretToken"]), None, &now());
        assert!(!serde_json::to_string(&drift).unwrap().contains("s3cret"));
        assert_eq!(drift.count, 2);
    }

    #[test]
    fn a_missing_resource_without_create_previews_the_create_body() {
        let mut case = Case::new(
            json!({"cidrBlock": "10.0.0.0/16", "tags": {"a": "1"}}),
            None,
        );
        case.init = json!({"tags": {"b": "2"}, "enableDnsSupport": false});
        case.actions = observe_only();
        assert_eq!(
            case.run(&[], &[]),
            vec![
                diff(
                    "cidrBlock",
                    Some(json!("10.0.0.0/16")),
                    None,
                    DriftAction::WouldCreate
                ),
                diff(
                    "enableDnsSupport",
                    Some(json!(false)),
                    None,
                    DriftAction::WouldCreate
                ),
                diff("tags.a", Some(json!("1")), None, DriftAction::WouldCreate),
                diff("tags.b", Some(json!("2")), None, DriftAction::WouldCreate),
            ]
        );
        let drift = status(case.run(&[], &[]), None, &now());
        let up_to_date = condition(&drift);
        assert_eq!(up_to_date.reason, "DriftIgnored");
        assert!(up_to_date.message.unwrap().contains("lack Create"));
        // Allowed to create: it is being created, nothing to preview.
        case.actions = all();
        assert!(case.run(&[], &[]).is_empty());
    }

    #[test]
    fn the_report_is_bounded_in_fields_and_value_length() {
        let tags: Map<String, Value> = (0..30)
            .map(|i| (format!("k{i:02}"), json!("x".repeat(300))))
            .collect();
        let case = Case::new(json!({"tags": tags}), Some(json!({"tags": {}})));
        let drift = status(case.run(&[], &[]), None, &now());
        assert_eq!(
            (drift.count, drift.fields.len(), drift.omitted),
            (30, 20, 10)
        );
        let shown = drift.fields[0].declared.as_deref().unwrap();
        assert_eq!(shown.chars().count(), MAX_DRIFT_VALUE_CHARS);
        assert!(shown.ends_with('…'));
        assert_eq!(
            condition(&drift).message.as_deref(),
            Some("updating tags.k00, tags.k01, tags.k02, tags.k03, tags.k04 and 15 more")
        );
    }

    #[test]
    fn paths_quote_keys_that_are_not_plain_words() {
        let case = Case::new(
            json!({"tags": {"kubernetes.io/role": "a", "team": "b"}, "subnetIds": ["s-1"]}),
            Some(json!({"tags": {}, "subnetIds": ["s-2"]})),
        );
        let paths: Vec<String> = case.run(&[], &[]).into_iter().map(|d| d.path).collect();
        assert_eq!(
            paths,
            ["subnetIds", "tags.team", "tags[\"kubernetes.io/role\"]"]
        );
    }

    /// `ingress` keyed by port and protocol, with a set of CIDR blocks in
    /// each item; `zones` a set.
    fn firewall_lists() -> ListTypes {
        ListTypes::from_schema(&json!({"type": "object", "properties": {
            "ingress": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["port", "protocol"],
                "items": {"type": "object", "properties": {
                    "cidrs": {"type": "array", "x-kubernetes-list-type": "set"}}}},
            "zones": {"type": "array", "x-kubernetes-list-type": "set"},
        }}))
        .unwrap()
    }

    #[test]
    fn lists_the_cloud_reorders_are_no_difference_by_their_semantics() {
        let mut case = Case::new(
            json!({"ingress": [{"port": 443, "protocol": "tcp", "cidrs": ["a", "b"]},
                               {"port": 53, "protocol": "udp"}],
                   "tags": {"env": "prod"}}),
            Some(
                json!({"ingress": [{"port": 53, "protocol": "udp", "description": "dns"},
                                    {"port": 443, "protocol": "tcp", "cidrs": ["b", "a"]}],
                        "zones": ["z2", "z1"], "tags": {"env": "prod"}}),
            ),
        );
        // Only initProvider names the zones, in another order: not even
        // an InitProvider difference.
        case.init = json!({"zones": ["z1", "z2"]});
        assert!(case.run_with(&[], &[], &firewall_lists()).is_empty());
        // Without the list semantics, both lists differ, as before.
        assert_eq!(
            case.run(&[], &[])
                .into_iter()
                .map(|d| (d.path, d.action))
                .collect::<Vec<_>>(),
            [
                ("ingress".to_owned(), DriftAction::Update),
                ("zones".to_owned(), DriftAction::InitProvider)
            ]
        );
    }

    #[test]
    fn a_keyed_list_that_differs_is_reported_whole_at_its_path() {
        let desired = json!([{"port": 443, "protocol": "tcp", "cidrs": ["a", "b"]},
                             {"port": 53, "protocol": "udp"}]);
        let observed = json!([{"port": 53, "protocol": "udp"},
                              {"port": 443, "protocol": "tcp", "cidrs": ["a"]}]);
        let mut case = Case::new(
            json!({"ingress": desired}),
            Some(json!({"ingress": observed})),
        );
        assert_eq!(
            case.run_with(&[], &[], &firewall_lists()),
            vec![diff(
                "ingress",
                Some(desired.clone()),
                Some(observed.clone()),
                DriftAction::Update
            )]
        );
        case.actions = observe_only();
        let drift = status(case.run_with(&[], &[], &firewall_lists()), None, &now());
        assert_eq!((drift.count, drift.fields[0].path.as_str()), (1, "ingress"));
        assert_eq!(drift.fields[0].action, DriftAction::WouldUpdate);
    }

    #[test]
    fn an_unchanged_difference_keeps_its_since_and_changes_are_reported_once() {
        let later = Time(jiff::Timestamp::from_second(2_000).unwrap());
        let found = || {
            vec![diff(
                "tags.env",
                Some(json!("prod")),
                Some(json!("dev")),
                DriftAction::WouldUpdate,
            )]
        };
        let first = status(found(), None, &now());
        let second = status(found(), Some(&first), &later);
        assert_eq!(
            first, second,
            "an unchanged difference must not rewrite the status"
        );
        assert_eq!(
            changes(None, &first).started,
            vec![("tags.env".to_owned(), DriftAction::WouldUpdate)]
        );
        assert_eq!(changes(Some(&first), &second), Changes::default());
        let (reason, message) = changes(None, &first).detected_event().unwrap();
        assert_eq!(reason, "DriftDetected");
        assert_eq!(
            message,
            "fields differ from the cloud: tags.env (not updating: managementPolicies lack Update)"
        );
        // Policies gain Update: the same field, now updated, is new drift.
        let updating = status(
            vec![diff(
                "tags.env",
                Some(json!("prod")),
                Some(json!("dev")),
                DriftAction::Update,
            )],
            Some(&second),
            &later,
        );
        assert_eq!(updating.fields[0].since, later);
        // Corrected: it ends, as a correction, timed from when it started.
        let cleared = status(Vec::new(), Some(&updating), &later);
        let ended = changes(Some(&updating), &cleared);
        assert_eq!(
            ended.ended,
            vec![Ended {
                path: "tags.env".into(),
                since: later.clone(),
                corrected: true
            }]
        );
        assert_eq!(
            ended.cleared_event().unwrap(),
            ("DriftCleared", "corrected tags.env".to_owned())
        );
        // A preview that goes away (the user changed the spec) is no correction.
        let gone = changes(Some(&first), &cleared);
        assert_eq!(
            gone.cleared_event().unwrap().1,
            "tags.env no longer differs"
        );
    }
}
