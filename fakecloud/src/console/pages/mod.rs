//! The console's pages, one module each, and what they share: reading
//! HTML forms' fields and building links that keep a page's filters.

pub mod audit;
pub mod faults;
pub mod resource;
pub mod resources;
pub mod snapshots;
pub mod summary;

use super::error::ConsoleError;
use super::{ConsoleState, data};
use crate::kinds::ResourceKind;
use crate::kinds::database::DatabaseKind;
use crate::kinds::nodegroup::NodeGroupKind;
use crate::kinds::subnet::SubnetKind;
use crate::kinds::vpc::VpcKind;

/// A form field's value; an empty field (a form sends every field) is none.
pub fn given(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// `path?name=value&...` of the pairs that have a value, URL-encoded.
pub fn href(path: &str, pairs: &[(&str, Option<String>)]) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        if let Some(value) = value {
            query.append_pair(name, value);
        }
    }
    let query = query.finish();
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{query}")
    }
}

/// Every account the filters offer: those with an API key and those that
/// own resources.
pub async fn accounts(console: &ConsoleState) -> Result<Vec<String>, ConsoleError> {
    let mut accounts: Vec<String> = console.app.api_keys.values().cloned().collect();
    accounts.extend(data::accounts(console.pool()).await?);
    accounts.sort();
    accounts.dedup();
    Ok(accounts)
}

/// Every state any kind can be in, for the state filter.
pub fn known_states() -> Vec<&'static str> {
    let mut states = Vec::new();
    for lifecycle in [
        VpcKind::STATES,
        SubnetKind::STATES,
        NodeGroupKind::STATES,
        DatabaseKind::STATES,
    ] {
        for state in [Some(lifecycle.creating), Some(lifecycle.ready)]
            .into_iter()
            .chain([lifecycle.updating, lifecycle.deleting])
            .flatten()
        {
            if !states.contains(&state) {
                states.push(state);
            }
        }
    }
    states
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_keep_only_the_given_filters_encoded() {
        assert_eq!(
            href(
                "/console/resources",
                &[
                    ("kind", Some("vpc".into())),
                    ("state", None),
                    ("tag", Some("team=a&b".into()))
                ]
            ),
            "/console/resources?kind=vpc&tag=team%3Da%26b"
        );
        assert_eq!(
            href("/console/audit", &[("account", None)]),
            "/console/audit"
        );
    }

    #[test]
    fn every_kinds_states_can_be_chosen_once() {
        let states = known_states();
        for state in [
            "pending",
            "available",
            "CREATING",
            "ACTIVE",
            "DELETING",
            "modifying",
        ] {
            assert_eq!(states.iter().filter(|s| **s == state).count(), 1, "{state}");
        }
    }

    #[test]
    fn an_empty_field_is_not_given() {
        assert_eq!(given(&Some("  ".into())), None);
        assert_eq!(given(&None), None);
        assert_eq!(given(&Some(" a ".into())), Some("a".into()));
    }
}
