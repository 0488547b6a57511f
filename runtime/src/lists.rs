//! The semantics of each list field of a kind's `forProvider`, as its CRD
//! declares them: Kubernetes' `x-kubernetes-list-type` and
//! `x-kubernetes-list-map-keys`, which a provider writes on its types with
//! [`crossplane_types::rules::list_set`] and
//! [`crossplane_types::rules::list_map`].
//!
//! Why: a cloud may return a list in an order of its own (ingress rules
//! sorted by port, CIDR blocks sorted as text). Compared in order, such a
//! list drifts for ever and costs an update on every poll. Declared a set
//! or a map list, it is compared as Kubernetes merges it: a set regardless
//! of order and duplicates, a map list item by item, matched by key (when
//! the runtime looks for drift and builds an update's patch).
//!
//! Why from the CRD: the semantics are declared once, on the type, and
//! the API server enforces them (no duplicate set elements, no two items
//! with one key); reading them back from the kind's own CRD
//! ([`kube::CustomResourceExt::crd`], which every [`Managed`] kind has)
//! means the runtime and the API server cannot disagree, and no kind
//! declares them a second time. [`for_kind`] builds them once per kind and
//! keeps them for the life of the process.

use std::any::TypeId;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{OnceLock, PoisonError, RwLock};

use crossplane_types::Managed;
use crossplane_types::rules::{LIST_MAP_KEYS, LIST_TYPE};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;
use tracing::warn;

/// How a list field is compared with the cloud's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// In order and whole (`x-kubernetes-list-type: atomic`, and any list
    /// that says nothing): the default, as in Kubernetes.
    Atomic,
    /// Order and duplicates mean nothing: the declared and the observed
    /// list hold the same elements (`x-kubernetes-list-type: set`).
    Set,
    /// Items are objects identified by the values of `keys`; order means
    /// nothing, each declared item is compared with the observed item of
    /// the same key, field by field as objects are (a field the declared
    /// item leaves unset is not drift), and the observed list holds no
    /// item beyond the declared ones (`x-kubernetes-list-type: map` with
    /// `x-kubernetes-list-map-keys`).
    Map {
        /// The fields whose values identify an item.
        keys: Vec<String>,
    },
}

impl fmt::Display for ListType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListType::Atomic => f.write_str("atomic"),
            ListType::Set => f.write_str("set"),
            ListType::Map { keys } => write!(f, "map keyed by {}", keys.join(", ")),
        }
    }
}

/// Why a schema's list semantics cannot be read. The API server refuses
/// such a CRD too, so these are a provider's mistakes, found by its tests
/// (and logged by [`for_kind`], which then compares the kind's lists whole,
/// as before list semantics existed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListTypesError {
    /// An `x-kubernetes-list-type` other than `atomic`, `set` or `map`.
    #[error("{path}: x-kubernetes-list-type {value} is not atomic, set or map")]
    UnknownListType {
        /// Where in the schema.
        path: String,
        /// The value found.
        value: Value,
    },
    /// A map list without `x-kubernetes-list-map-keys`.
    #[error("{path}: a map list needs x-kubernetes-list-map-keys, a non-empty list of field names")]
    MapWithoutKeys {
        /// Where in the schema.
        path: String,
    },
    /// Two declarations of the same list that disagree.
    #[error("{path}: declared both as {first} and as {second}")]
    Conflicting {
        /// Where in the schema.
        path: String,
        /// The declaration met first.
        first: ListType,
        /// The other one.
        second: ListType,
    },
    /// A `$ref` to a definition the schema does not have.
    #[error("{path}: $ref {reference} points nowhere in the schema")]
    UnresolvedRef {
        /// Where in the schema.
        path: String,
        /// The reference.
        reference: String,
    },
    /// The CRD does not serve the kind's version (given).
    #[error("the CRD serves no version {0}")]
    NoVersion(String),
    /// The CRD's schema of the version given has no `spec.forProvider`.
    #[error("version {0} of the CRD has no schema for spec.forProvider")]
    NoForProvider(String),
}

/// The list fields of a `forProvider` schema and their [`ListType`], by
/// path: a tree that follows object properties, map values
/// (`additionalProperties`) and list items, so nested lists (a set inside
/// the items of a map list) are known too.
///
/// The default value knows no list: every list is atomic, which is how
/// the runtime compares the lists of a kind whose CRD it cannot read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListTypes {
    root: Node,
}

/// One place in the schema: the list type of the value there, if it is a
/// list, and the places below it that lead to a list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Node {
    list: Option<ListType>,
    fields: BTreeMap<String, Node>,
    /// The values of a map (`additionalProperties`), whatever their key.
    any_field: Option<Box<Node>>,
    /// The items of a list.
    items: Option<Box<Node>>,
}

/// The node of a place the schema says nothing about: no list below.
static NOTHING: Node = Node {
    list: None,
    fields: BTreeMap::new(),
    any_field: None,
    items: None,
};

impl Node {
    /// The list type of the value here, when the schema makes it a list.
    pub(crate) fn list(&self) -> Option<&ListType> {
        self.list.as_ref()
    }

    /// The place of the object field `key` below this one.
    pub(crate) fn field(&self, key: &str) -> &Node {
        self.fields
            .get(key)
            .or(self.any_field.as_deref())
            .unwrap_or(&NOTHING)
    }

    /// The place of this list's items.
    pub(crate) fn items(&self) -> &Node {
        self.items.as_deref().unwrap_or(&NOTHING)
    }

    fn paths(&self, at: &str, out: &mut Vec<(String, ListType)>) {
        if let Some(list) = &self.list {
            out.push((at.to_owned(), list.clone()));
        }
        let below = |step: &str| {
            if at.is_empty() {
                step.to_owned()
            } else {
                format!("{at}.{step}")
            }
        };
        for (key, node) in &self.fields {
            node.paths(&below(key), out);
        }
        if let Some(node) = &self.any_field {
            node.paths(&below("*"), out);
        }
        if let Some(node) = &self.items {
            node.paths(&format!("{at}[]"), out);
        }
    }
}

impl ListTypes {
    /// The list types of a JSON schema: a kind's `forProvider` schema as it
    /// stands in its CRD, or as `schemars` generates it for the type
    /// (`$ref`s into `$defs` or `definitions` are followed, and the
    /// branches of `anyOf`, `oneOf` and `allOf`, as of an `Option`, are
    /// all read). A list without `x-kubernetes-list-type` is atomic.
    pub fn from_schema(schema: &Value) -> Result<Self, ListTypesError> {
        let mut builder = Builder::default();
        Walk::new(schema).walk(schema, &mut String::new(), &mut builder)?;
        Ok(Self {
            root: builder.build().unwrap_or_default(),
        })
    }

    /// The list types of `spec.forProvider` in `version` of `crd`, with
    /// those of `spec.initProvider` where `forProvider` has no list (the
    /// runtime compares `initProvider`'s fields too, under the same
    /// names, when it reports drift).
    pub fn from_crd(crd: &CustomResourceDefinition, version: &str) -> Result<Self, ListTypesError> {
        let schema = crd
            .spec
            .versions
            .iter()
            .find(|v| v.name == version)
            .ok_or_else(|| ListTypesError::NoVersion(version.to_owned()))?
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .map(|s| serde_json::to_value(s).expect("a CRD's schema serializes"))
            .unwrap_or_default();
        let at = |field: &str| schema.pointer(&format!("/properties/spec/properties/{field}"));
        let for_provider =
            at("forProvider").ok_or_else(|| ListTypesError::NoForProvider(version.to_owned()))?;
        let mut builder = Builder::default();
        let mut walk = Walk::new(&schema);
        walk.walk(for_provider, &mut String::new(), &mut builder)?;
        if let Some(init_provider) = at("initProvider") {
            walk.walk(init_provider, &mut String::new(), &mut builder)?;
        }
        Ok(Self {
            root: builder.build().unwrap_or_default(),
        })
    }

    /// The list types of the kind `K`, from its CRD; built anew on each
    /// call ([`for_kind`] keeps them).
    pub fn of_kind<K: Managed>() -> Result<Self, ListTypesError> {
        Self::from_crd(&K::crd(), &K::version(&()))
    }

    /// Every list field with its type, by path: property names joined by
    /// `.`, `[]` for a list's items and `*` for a map's values
    /// (`rules`, `rules[].cidrBlocks`, `routes.*`), in path order.
    pub fn paths(&self) -> Vec<(String, ListType)> {
        let mut out = Vec::new();
        self.root.paths("", &mut out);
        out
    }

    /// Whether no list is known: every list compares whole and in order.
    pub fn is_empty(&self) -> bool {
        self.root == Node::default()
    }

    pub(crate) fn root(&self) -> &Node {
        &self.root
    }
}

/// The list types of the kind `K`, built from its CRD on first use and
/// kept for the life of the process (one small tree per kind: a CRD's
/// schema is generated anew by each `crd()` call, too dear for every
/// reconcile). A CRD whose list semantics cannot be read (see
/// [`ListTypesError`]) is logged once, and its lists compare whole.
pub fn for_kind<K: Managed>() -> &'static ListTypes {
    // A `static` in a generic function is one for all its instances, so
    // the kinds are told apart by their `TypeId`. Entries are leaked on
    // purpose: a process has a fixed, small set of kinds.
    static KINDS: OnceLock<RwLock<HashMap<TypeId, &'static ListTypes>>> = OnceLock::new();
    let kinds = KINDS.get_or_init(Default::default);
    let id = TypeId::of::<K>();
    if let Some(found) = kinds
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
    {
        return found;
    }
    let built = ListTypes::of_kind::<K>().unwrap_or_else(|error| {
        warn!(kind = %K::kind(&()), %error, "list semantics unreadable; comparing the kind's lists whole");
        ListTypes::default()
    });
    kinds
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(id)
        .or_insert_with(|| Box::leak(Box::new(built)))
}

/// A [`Node`] being gathered from the schema, which may say the same place
/// several times (the branches of an `anyOf`, `forProvider` and
/// `initProvider`).
#[derive(Default)]
struct Builder {
    /// The schema says this place holds a list.
    array: bool,
    /// Its `x-kubernetes-list-type`, when stated.
    declared: Option<ListType>,
    fields: BTreeMap<String, Builder>,
    any_field: Option<Box<Builder>>,
    items: Option<Box<Builder>>,
}

impl Builder {
    /// The node, or `None` when no list is here or below (pruned).
    fn build(self) -> Option<Node> {
        let list = self
            .declared
            .or_else(|| self.array.then_some(ListType::Atomic));
        let fields: BTreeMap<String, Node> = self
            .fields
            .into_iter()
            .filter_map(|(k, b)| Some((k, b.build()?)))
            .collect();
        let any_field = self.any_field.and_then(|b| b.build()).map(Box::new);
        let items = self.items.and_then(|b| b.build()).map(Box::new);
        let empty = list.is_none() && fields.is_empty() && any_field.is_none() && items.is_none();
        (!empty).then_some(Node {
            list,
            fields,
            any_field,
            items,
        })
    }
}

/// A walk of one schema document, `root` being what `$ref`s point into.
struct Walk<'s> {
    root: &'s Value,
    /// The `$ref`s being followed, so that a recursive type ends.
    following: Vec<&'s str>,
}

impl<'s> Walk<'s> {
    fn new(root: &'s Value) -> Self {
        Self {
            root,
            following: Vec::new(),
        }
    }

    fn walk(
        &mut self,
        schema: &'s Value,
        path: &mut String,
        into: &mut Builder,
    ) -> Result<(), ListTypesError> {
        let Value::Object(schema) = schema else {
            return Ok(()); // `true`, `false`: nothing declared
        };
        if let Some(Value::String(reference)) = schema.get("$ref")
            && !self.following.contains(&reference.as_str())
        {
            let target = reference
                .strip_prefix('#')
                .and_then(|pointer| self.root.pointer(pointer))
                .ok_or_else(|| ListTypesError::UnresolvedRef {
                    path: shown(path),
                    reference: reference.clone(),
                })?;
            self.following.push(reference);
            let walked = self.walk(target, path, into);
            self.following.pop();
            walked?;
        }
        for combinator in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(branches)) = schema.get(combinator) {
                for branch in branches {
                    self.walk(branch, path, into)?;
                }
            }
        }
        let typed_array = match schema.get("type") {
            Some(Value::String(t)) => t == "array",
            Some(Value::Array(types)) => types.iter().any(|t| t == "array"),
            _ => false,
        };
        if typed_array || schema.contains_key("items") || schema.contains_key(LIST_TYPE) {
            into.array = true;
        }
        if let Some(declared) = schema.get(LIST_TYPE) {
            let list = match declared.as_str() {
                Some("atomic") => ListType::Atomic,
                Some("set") => ListType::Set,
                Some("map") => {
                    let keys: Option<Vec<String>> = schema
                        .get(LIST_MAP_KEYS)
                        .and_then(Value::as_array)
                        .and_then(|keys| {
                            keys.iter().map(|k| k.as_str().map(str::to_owned)).collect()
                        });
                    match keys {
                        Some(keys) if !keys.is_empty() => ListType::Map { keys },
                        _ => return Err(ListTypesError::MapWithoutKeys { path: shown(path) }),
                    }
                }
                _ => {
                    return Err(ListTypesError::UnknownListType {
                        path: shown(path),
                        value: declared.clone(),
                    });
                }
            };
            match &into.declared {
                Some(first) if *first != list => {
                    return Err(ListTypesError::Conflicting {
                        path: shown(path),
                        first: first.clone(),
                        second: list,
                    });
                }
                _ => into.declared = Some(list),
            }
        }
        if let Some(items @ Value::Object(_)) = schema.get("items") {
            let at = path.len();
            path.push_str("[]");
            let walked = self.walk(items, path, into.items.get_or_insert_with(Box::default));
            path.truncate(at);
            walked?;
        }
        if let Some(Value::Object(properties)) = schema.get("properties") {
            for (key, property) in properties {
                let at = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                let walked = self.walk(property, path, into.fields.entry(key.clone()).or_default());
                path.truncate(at);
                walked?;
            }
        }
        if let Some(values @ Value::Object(_)) = schema.get("additionalProperties") {
            let at = path.len();
            path.push_str(if path.is_empty() { "*" } else { ".*" });
            let walked = self.walk(
                values,
                path,
                into.any_field.get_or_insert_with(Box::default),
            );
            path.truncate(at);
            walked?;
        }
        Ok(())
    }
}

/// A path as errors show it: the root is `forProvider` itself.
fn shown(path: &str) -> String {
    if path.is_empty() {
        "forProvider".to_owned()
    } else {
        format!("forProvider.{path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossplane_types::rules::{list_atomic, list_map, list_set};
    use schemars::{JsonSchema, schema_for};
    use serde_json::json;
    use std::collections::BTreeMap;

    #[derive(JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Target {
        address: String,
        #[schemars(transform = list_set)]
        ports: Vec<u16>,
    }

    #[derive(JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Rule {
        port: u16,
        protocol: String,
        #[schemars(transform = list_set)]
        cidr_blocks: Option<Vec<String>>,
        /// A keyed list inside a keyed list's items.
        #[schemars(transform = list_map(&["address"]))]
        targets: Vec<Target>,
        description: Option<String>,
    }

    #[derive(JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Params {
        region: String,
        #[schemars(transform = list_set)]
        security_group_ids: Option<Vec<String>>,
        #[schemars(transform = list_map(&["port", "protocol"]))]
        ingress: Option<Vec<Rule>>,
        /// Unmarked: atomic.
        dns_servers: Vec<String>,
        #[schemars(transform = list_atomic)]
        ordered: Vec<String>,
        #[schemars(transform = list_set)]
        single: Option<Vec<String>>,
        /// Lists as the values of a map.
        routes: BTreeMap<String, Vec<String>>,
        tags: BTreeMap<String, String>,
        recursive: Option<Box<Recursive>>,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Recursive {
        #[schemars(transform = list_set)]
        names: Vec<String>,
        next: Option<Box<Recursive>>,
    }

    fn keys(keys: &[&str]) -> ListType {
        ListType::Map {
            keys: keys.iter().map(|k| (*k).to_owned()).collect(),
        }
    }

    #[test]
    fn the_walk_finds_every_list_with_its_type_nested_too() {
        let lists = ListTypes::from_schema(&schema_for!(Params).to_value()).unwrap();
        let paths: Vec<(String, ListType)> = [
            ("dnsServers", ListType::Atomic),
            ("ingress", keys(&["port", "protocol"])),
            ("ingress[].cidrBlocks", ListType::Set),
            ("ingress[].targets", keys(&["address"])),
            ("ingress[].targets[].ports", ListType::Set),
            ("ordered", ListType::Atomic),
            ("recursive.names", ListType::Set),
            ("routes.*", ListType::Atomic),
            ("securityGroupIds", ListType::Set),
            ("single", ListType::Set),
        ]
        .into_iter()
        .map(|(p, t)| (p.to_owned(), t))
        .collect();
        assert_eq!(lists.paths(), paths);
        // Lookups follow the same tree.
        let ingress = lists.root().field("ingress");
        assert_eq!(ingress.list(), Some(&keys(&["port", "protocol"])));
        assert_eq!(
            ingress.items().field("cidrBlocks").list(),
            Some(&ListType::Set)
        );
        assert_eq!(lists.root().field("region").list(), None);
        assert_eq!(
            lists.root().field("routes").field("any").list(),
            Some(&ListType::Atomic)
        );
    }

    #[test]
    fn a_schema_without_lists_knows_none() {
        let lists = ListTypes::from_schema(&json!({
            "type": "object",
            "properties": {"cidrBlock": {"type": "string"}, "tags": {"type": "object",
                "additionalProperties": {"type": "string"}}}
        }))
        .unwrap();
        assert!(lists.is_empty());
        assert_eq!(lists, ListTypes::default());
    }

    #[test]
    fn malformed_declarations_are_errors_that_name_the_field() {
        let schema = |ext: Value| {
            let mut list = json!({"type": "array", "items": {"type": "object"}});
            json_patch::merge(&mut list, &ext);
            json!({"type": "object", "properties": {"rules": list}})
        };
        assert_eq!(
            ListTypes::from_schema(&schema(json!({"x-kubernetes-list-type": "map"}))),
            Err(ListTypesError::MapWithoutKeys {
                path: "forProvider.rules".into()
            })
        );
        let unknown =
            ListTypes::from_schema(&schema(json!({"x-kubernetes-list-type": "bag"}))).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "forProvider.rules: x-kubernetes-list-type \"bag\" is not atomic, set or map"
        );
        let conflicting = json!({"type": "object", "properties": {"rules": {"anyOf": [
            {"type": "array", "x-kubernetes-list-type": "set"},
            {"type": "array", "x-kubernetes-list-type": "atomic"},
        ]}}});
        assert!(matches!(
            ListTypes::from_schema(&conflicting),
            Err(ListTypesError::Conflicting { .. })
        ));
        assert!(matches!(
            ListTypes::from_schema(&json!({"$ref": "#/$defs/Nowhere"})),
            Err(ListTypesError::UnresolvedRef { .. })
        ));
    }

    #[test]
    fn a_crds_for_and_init_provider_are_read_together() {
        let crd: CustomResourceDefinition = serde_json::from_value(json!({
            "metadata": {"name": "firewalls.example.io"},
            "spec": {"group": "example.io", "scope": "Namespaced",
                "names": {"kind": "Firewall", "plural": "firewalls"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "forProvider": {"type": "object", "properties": {
                                "rules": {"type": "array", "nullable": true,
                                    "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["port"],
                                    "items": {"type": "object"}}}},
                            "initProvider": {"type": "object", "properties": {
                                "rules": {"type": "array", "items": {"type": "object"}},
                                "zones": {"type": "array",
                                    "x-kubernetes-list-type": "set",
                                    "items": {"type": "string"}}}}}}}}}}]}
        }))
        .unwrap();
        let lists = ListTypes::from_crd(&crd, "v1").unwrap();
        assert_eq!(
            lists.paths(),
            [
                ("rules".to_owned(), keys(&["port"])),
                ("zones".to_owned(), ListType::Set)
            ]
        );
        assert_eq!(
            ListTypes::from_crd(&crd, "v2"),
            Err(ListTypesError::NoVersion("v2".into()))
        );
    }
}
