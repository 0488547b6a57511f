//! Crossplane's identifying tags on the cloud resources a provider creates
//! (crossplane-runtime's `GetExternalTags`, applied by upjet providers):
//! `crossplane-kind`, `crossplane-name`, `crossplane-providerconfig`,
//! `crossplane-providerconfig-kind` and, for a namespaced resource,
//! `crossplane-namespace`.
//!
//! They go on at create only, merged under the user's tags: a key the user
//! sets keeps the user's value. Drift compares only the keys the user sets
//! in an object such as a tag map, so they are never drift, and an
//! update never sends them; an imported or observed resource is never
//! created, so it is never tagged. When the user's tags leave too little
//! room under the kind's limit, as many are added as fit, in the order
//! above, so that the provider's own additions never make a create fail.

use crossplane_types::scope::{ProviderConfigKey, ProviderConfigKind};
use crossplane_types::well_known::{
    EXTERNAL_TAG_KIND, EXTERNAL_TAG_NAME, EXTERNAL_TAG_NAMESPACE, EXTERNAL_TAG_PROVIDER_CONFIG,
    EXTERNAL_TAG_PROVIDER_CONFIG_KIND,
};
use serde_json::{Map, Value};

/// Where a kind keeps its cloud tags, and how many its cloud takes
/// ([`crate::CloudKind::TAGS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagsField {
    /// The top-level `forProvider` key of the tag map (`tags`).
    pub field: &'static str,
    /// The most entries the cloud accepts in it.
    pub max_entries: usize,
}

/// The identifying tags of a managed resource: its kind and group (the
/// group kind, lower case, as crossplane-runtime writes it), name,
/// ProviderConfig and namespace, in the order they are added.
pub fn external_tags(
    kind: &str,
    group: &str,
    name: &str,
    provider_config: &ProviderConfigKey,
    namespace: Option<&str>,
) -> Vec<(&'static str, String)> {
    let config_kind = match provider_config.kind {
        ProviderConfigKind::Legacy | ProviderConfigKind::Namespaced => "ProviderConfig",
        ProviderConfigKind::Cluster => "ClusterProviderConfig",
    };
    let mut tags = vec![
        (
            EXTERNAL_TAG_KIND,
            format!("{kind}.{group}").to_ascii_lowercase(),
        ),
        (EXTERNAL_TAG_NAME, name.to_owned()),
        (EXTERNAL_TAG_PROVIDER_CONFIG, provider_config.name.clone()),
        (EXTERNAL_TAG_PROVIDER_CONFIG_KIND, config_kind.to_owned()),
    ];
    if let Some(namespace) = namespace.filter(|ns| !ns.is_empty()) {
        tags.push((EXTERNAL_TAG_NAMESPACE, namespace.to_owned()));
    }
    tags
}

/// `desired` (a create body) with `tags` merged under its tag map at
/// `field`: the user's keys win, and tags are added only while the map has
/// room.
pub fn merge_under(desired: &mut Value, field: TagsField, tags: Vec<(&'static str, String)>) {
    let Value::Object(body) = desired else {
        return;
    };
    let entry = body
        .entry(field.field)
        .or_insert_with(|| Value::Object(Map::new()));
    if entry.is_null() {
        *entry = Value::Object(Map::new());
    }
    let Value::Object(map) = entry else {
        return;
    };
    for (key, value) in tags {
        if map.len() >= field.max_entries {
            break;
        }
        map.entry(key).or_insert(Value::String(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TAGS: TagsField = TagsField {
        field: "tags",
        max_entries: 50,
    };

    fn config(kind: ProviderConfigKind, name: &str) -> ProviderConfigKey {
        ProviderConfigKey {
            kind,
            namespace: None,
            name: name.into(),
        }
    }

    #[test]
    fn a_namespaced_resource_gets_all_five_tags() {
        let tags = external_tags(
            "VPC",
            "network.fakecloud.m.crossplane.io",
            "web",
            &config(ProviderConfigKind::Cluster, "default"),
            Some("app"),
        );
        assert_eq!(
            tags,
            vec![
                (
                    "crossplane-kind",
                    "vpc.network.fakecloud.m.crossplane.io".into()
                ),
                ("crossplane-name", "web".into()),
                ("crossplane-providerconfig", "default".into()),
                (
                    "crossplane-providerconfig-kind",
                    "ClusterProviderConfig".into()
                ),
                ("crossplane-namespace", "app".into()),
            ]
        );
    }

    #[test]
    fn a_cluster_scoped_resource_has_no_namespace_tag() {
        let tags = external_tags(
            "DatabaseInstance",
            "database.fakecloud.crossplane.io",
            "db",
            &config(ProviderConfigKind::Legacy, "team-a"),
            None,
        );
        assert_eq!(tags.len(), 4);
        assert_eq!(
            tags[0].1,
            "databaseinstance.database.fakecloud.crossplane.io"
        );
        assert_eq!(tags[3].1, "ProviderConfig");
    }

    #[test]
    fn the_users_tags_win_and_the_rest_are_added() {
        let mut body = json!({ "cidrBlock": "10.0.0.0/16", "tags": { "crossplane-name": "mine", "team": "a" } });
        merge_under(
            &mut body,
            TAGS,
            vec![
                ("crossplane-kind", "k".into()),
                ("crossplane-name", "web".into()),
            ],
        );
        assert_eq!(
            body["tags"],
            json!({ "crossplane-name": "mine", "team": "a", "crossplane-kind": "k" })
        );
    }

    #[test]
    fn a_body_without_tags_gets_a_map_of_its_own() {
        for mut body in [
            json!({ "cidrBlock": "10.0.0.0/16" }),
            json!({ "tags": null }),
        ] {
            merge_under(&mut body, TAGS, vec![("crossplane-name", "web".into())]);
            assert_eq!(body["tags"], json!({ "crossplane-name": "web" }));
        }
    }

    #[test]
    fn tags_are_added_only_while_the_map_has_room() {
        let full: Map<String, Value> = (0..49).map(|i| (format!("k{i}"), json!("v"))).collect();
        let mut body = json!({ "tags": full });
        merge_under(
            &mut body,
            TAGS,
            vec![
                ("crossplane-kind", "k".into()),
                ("crossplane-name", "web".into()),
            ],
        );
        let tags = body["tags"].as_object().unwrap();
        assert_eq!(tags.len(), 50);
        assert!(tags.contains_key("crossplane-kind"));
        assert!(!tags.contains_key("crossplane-name"));
    }
}
