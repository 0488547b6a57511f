//! Crossplane's lint for a provider package, as its package manager applies
//! it before installing one: exactly one `meta.pkg.crossplane.io` Provider,
//! every other object a CRD, an MRD or a webhook configuration. On top,
//! what this provider needs of the Crossplane that installs it: v2 or later
//! (MRDs and activation policies) and the `safe-start` capability (its
//! controllers start only once their CRDs exist).

use serde_yaml::Value;

use crate::error::{Result, XpkgError};
use crate::object::{kind_of, name_of};

/// The API group of package metadata (`crossplane.yaml`).
pub const META_GROUP: &str = "meta.pkg.crossplane.io";

/// The capability that makes Crossplane v2 create the MRDs inactive and let
/// the provider start a controller only when its CRD appears.
pub const SAFE_START: &str = "safe-start";

/// The kinds a provider package may hold besides its meta object, by API
/// group.
const ALLOWED: &[(&str, &str)] = &[
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiextensions.crossplane.io", "ManagedResourceDefinition"),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
];

/// Every rule broken, in one error; `Ok` when none is.
pub fn lint_provider(objects: &[Value]) -> Result<()> {
    let mut problems = Vec::new();
    let mut metas = Vec::new();
    for object in objects {
        let group = group_of(object);
        let kind = kind_of(object);
        if group == META_GROUP {
            metas.push(object);
        } else if !ALLOWED.contains(&(group, kind)) {
            problems.push(format!(
                "{kind} {} ({}) is not a CustomResourceDefinition, ManagedResourceDefinition or webhook configuration",
                name_of(object),
                api_version_of(object)
            ));
        }
    }
    match metas.as_slice() {
        [meta] => problems.extend(meta_problems(meta)),
        _ => problems.push(format!(
            "{} {META_GROUP} objects; exactly one Provider expected",
            metas.len()
        )),
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(XpkgError::Lint(problems.join("; ")))
    }
}

fn meta_problems(meta: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if kind_of(meta) != "Provider" {
        problems.push(format!(
            "the meta object is a {}, not a Provider",
            kind_of(meta)
        ));
    }
    let spec = meta.get("spec");
    match spec
        .and_then(|s| s.get("crossplane"))
        .and_then(|c| c.get("version"))
        .and_then(Value::as_str)
    {
        None => problems.push("spec.crossplane.version is missing".to_owned()),
        Some(constraint) if !requires_v2(constraint) => problems.push(format!(
            "spec.crossplane.version {constraint:?} admits Crossplane before v2.0.0"
        )),
        Some(_) => {}
    }
    // Crossplane compares capability names without regard to case.
    let has_safe_start = spec
        .and_then(|s| s.get("capabilities"))
        .and_then(Value::as_sequence)
        .is_some_and(|caps| {
            caps.iter()
                .filter_map(Value::as_str)
                .any(|c| c.eq_ignore_ascii_case(SAFE_START))
        });
    if !has_safe_start {
        problems.push(format!("spec.capabilities does not name {SAFE_START}"));
    }
    problems
}

/// Whether a semver constraint (Masterminds syntax, as Crossplane reads
/// it) admits only v2.0.0 and later: each `||` alternative needs a lower
/// bound (`>=`, `>`, `=`, `^`, `~` or a bare version) of major 2 or more.
/// Pre-release suffixes such as `-0` (which let pre-releases match) do not
/// change the major version.
pub fn requires_v2(constraint: &str) -> bool {
    let alternatives: Vec<&str> = constraint.split("||").map(str::trim).collect();
    !alternatives.is_empty()
        && alternatives.iter().all(|alternative| {
            alternative
                .split([',', ' '])
                .filter(|c| !c.is_empty())
                .any(|comparison| {
                    let version = comparison.trim_start_matches(['>', '=', '^', '~']);
                    let is_lower_bound = !comparison.starts_with(['<', '!']);
                    is_lower_bound && major_of(version).is_some_and(|major| major >= 2)
                })
        })
}

fn major_of(version: &str) -> Option<u64> {
    let version = version.trim().trim_start_matches(['v', 'V']);
    version
        .split(['.', '-', '+'])
        .next()
        .and_then(|major| major.parse().ok())
}

fn api_version_of(object: &Value) -> &str {
    object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The API group of `apiVersion` ("" for the core group).
fn group_of(object: &Value) -> &str {
    api_version_of(object)
        .rsplit_once('/')
        .map_or("", |(group, _)| group)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(yaml: &str) -> Value {
        serde_yaml::from_str(yaml).unwrap()
    }

    fn provider(spec: &str) -> Value {
        object(&format!(
            "apiVersion: meta.pkg.crossplane.io/v1\nkind: Provider\nmetadata: {{name: p}}\nspec: {spec}\n"
        ))
    }

    const GOOD_SPEC: &str = "{crossplane: {version: '>=v2.0.0-0'}, capabilities: [safe-start]}";

    fn crd() -> Value {
        object(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\n",
        )
    }

    #[test]
    fn a_provider_with_crds_and_mrds_passes() {
        let mrd = object(
            "apiVersion: apiextensions.crossplane.io/v1alpha1\nkind: ManagedResourceDefinition\nmetadata: {name: c.d}\n",
        );
        lint_provider(&[provider(GOOD_SPEC), mrd, crd()]).unwrap();
    }

    #[test]
    fn each_broken_rule_is_named() {
        let cases: Vec<(Vec<Value>, &str)> = vec![
            (vec![crd()], "0 meta.pkg.crossplane.io objects"),
            (
                vec![provider(GOOD_SPEC), provider(GOOD_SPEC)],
                "2 meta.pkg.crossplane.io objects",
            ),
            (
                vec![
                    provider(GOOD_SPEC),
                    object("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"),
                ],
                "Secret s (v1) is not",
            ),
            (
                vec![object(
                    "apiVersion: meta.pkg.crossplane.io/v1\nkind: Configuration\nmetadata: {name: c}\nspec: {}\n",
                )],
                "not a Provider",
            ),
            (
                vec![provider("{capabilities: [safe-start]}")],
                "spec.crossplane.version is missing",
            ),
            (
                vec![provider(
                    "{crossplane: {version: '>=v1.14.0'}, capabilities: [safe-start]}",
                )],
                "admits Crossplane before v2.0.0",
            ),
            (
                vec![provider(
                    "{crossplane: {version: '>=v2.0.0'}, capabilities: [late-mr-activation]}",
                )],
                "does not name safe-start",
            ),
        ];
        for (objects, expected) in cases {
            let err = lint_provider(&objects).expect_err(expected).to_string();
            assert!(err.contains(expected), "{err} should name {expected:?}");
        }
    }

    #[test]
    fn version_constraints_must_exclude_v1() {
        for ok in [
            ">=v2.0.0-0",
            ">=2.0.0",
            "^2.1",
            "v2.0.0",
            ">= v2.0.0, <3.0.0",
            ">v2.0.0 || >=3",
        ] {
            assert!(requires_v2(ok), "{ok}");
        }
        for refused in [
            "",
            ">=v1.20.0",
            "<3.0.0",
            "^1.19",
            ">=v2.0.0 || >=1.0.0",
            "!=2.0.0",
            "garbage",
        ] {
            assert!(!requires_v2(refused), "{refused}");
        }
    }
}
