//! Resolution of cross-resource references (`*Ref`, `*Refs`, `*Selector`)
//! into `forProvider` values, driven by each kind's
//! [`crossplane_types::Managed::REFERENCES`] table, so no kind writes resolution code.
//!
//! Values come from the referenced objects (`status.atProvider.id`).
//! Observe-only resources resolve like any other: their `atProvider` is
//! filled by observation alone.
//!
//! A namespaced resource's references and selectors look in its own
//! namespace unless they name another (Crossplane v2 allows references
//! across namespaces); a legacy resource's point at cluster-scoped objects.
//! Both parse as the namespaced shape, whose `namespace` a legacy
//! reference never has.

use crossplane_types::ReferenceField;
use crossplane_types::{NamespacedReference, NamespacedSelector, ReferencePolicy};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ApiResource, GroupVersionKind};
use serde_json::Value;

use crate::cluster::{Cluster, ObjectKey};
use crate::error::ReferenceError;

/// Resolves references on behalf of one managed resource.
pub struct Resolver<'a> {
    cluster: &'a dyn Cluster,
    /// The resolving resource's controller, for `matchControllerRef`.
    controller: Option<OwnerReference>,
    /// The resolving resource's namespace (`None` when cluster-scoped).
    namespace: Option<String>,
    /// Counts the reads of referenced objects: direct reads of the API
    /// server, since the object may be in another replica's share
    /// ([`crate::shard`]) or in no watch at all.
    reads: prometheus_client::metrics::counter::Counter,
}

impl<'a> Resolver<'a> {
    pub fn new(
        cluster: &'a dyn Cluster,
        controller: Option<OwnerReference>,
        namespace: Option<String>,
        reads: prometheus_client::metrics::counter::Counter,
    ) -> Self {
        Self {
            cluster,
            controller,
            namespace,
            reads,
        }
    }

    /// Resolves every reference of `for_provider` (JSON). Returns the new
    /// `forProvider` when a value changed, `None` otherwise.
    pub async fn resolve(
        &self,
        for_provider: &Value,
        fields: &[ReferenceField],
    ) -> Result<Option<Value>, ReferenceError> {
        let mut resolved = for_provider.clone();
        for field in fields {
            if let Some(value) = self.resolve_field(for_provider, field).await? {
                resolved[field.field] = value;
            }
        }
        Ok((resolved != *for_provider).then_some(resolved))
    }

    /// The new value of one field, or `None` to leave it as it is (nothing
    /// to resolve, already set under `IfNotPresent`, or an optional
    /// reference that did not resolve).
    async fn resolve_field(
        &self,
        for_provider: &Value,
        field: &ReferenceField,
    ) -> Result<Option<Value>, ReferenceError> {
        let parse = |key: &str| for_provider.get(key).filter(|v| !v.is_null()).cloned();
        let references: Vec<NamespacedReference> = match parse(field.reference_field) {
            Some(Value::Array(items)) => items
                .into_iter()
                .filter_map(|v| serde_json::from_value(v).ok())
                .collect(),
            Some(single) => serde_json::from_value(single).into_iter().collect(),
            None => Vec::new(),
        };
        let selector: Option<NamespacedSelector> =
            parse(field.selector_field).and_then(|v| serde_json::from_value(v).ok());
        if references.is_empty() && selector.is_none() {
            return Ok(None);
        }
        let policy: ReferencePolicy = references
            .iter()
            .find_map(|r| r.policy.clone())
            .or_else(|| selector.as_ref().and_then(|s| s.policy.clone()))
            .unwrap_or_default();
        let is_set = match for_provider.get(field.field) {
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            _ => false,
        };
        if is_set && !policy.resolves_always() {
            return Ok(None);
        }

        let targets = if references.is_empty() {
            let mut names = self
                .select(field, selector.as_ref().expect("checked above"))
                .await?;
            if !field.many {
                names.truncate(1);
            }
            names
        } else {
            references
                .into_iter()
                .map(|r| Target {
                    namespace: r.namespace.or_else(|| self.namespace.clone()),
                    name: r.name,
                })
                .collect()
        };
        let mut values = Vec::with_capacity(targets.len());
        for target in &targets {
            match self.value_of(field, target).await {
                Ok(value) => values.push(value),
                Err(_) if policy.is_optional() => {}
                Err(error) => return Err(error),
            }
        }
        if values.is_empty() {
            return if policy.is_optional() {
                Ok(None)
            } else {
                Err(ReferenceError::NoMatch {
                    kind: field.target_kind,
                    field: field.field,
                })
            };
        }
        Ok(Some(if field.many {
            Value::Array(values.into_iter().map(Value::String).collect())
        } else {
            Value::String(values.swap_remove(0))
        }))
    }

    fn resource(field: &ReferenceField) -> ApiResource {
        let gvk =
            GroupVersionKind::gvk(field.target_group, field.target_version, field.target_kind);
        ApiResource::from_gvk_with_plural(&gvk, field.target_plural)
    }

    /// The referenced object's value at the field's pointer.
    async fn value_of(
        &self,
        field: &ReferenceField,
        target: &Target,
    ) -> Result<String, ReferenceError> {
        let key = ObjectKey {
            resource: Self::resource(field),
            namespace: target.namespace.clone(),
            name: target.name.clone(),
        };
        let name = target.to_string();
        self.reads.inc();
        let object = self
            .cluster
            .get(&key)
            .await
            .map_err(|error| ReferenceError::Kube {
                kind: field.target_kind,
                error,
            })?
            .ok_or_else(|| ReferenceError::NotFound {
                kind: field.target_kind,
                name: name.clone(),
            })?;
        object
            .pointer(field.target_value_pointer)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| ReferenceError::NotReady {
                kind: field.target_kind,
                name,
                pointer: field.target_value_pointer,
            })
    }

    /// The objects a selector matches, in its namespace (the resolving
    /// resource's own unless it names one), sorted by name so the result is
    /// stable from one reconcile to the next.
    async fn select(
        &self,
        field: &ReferenceField,
        selector: &NamespacedSelector,
    ) -> Result<Vec<Target>, ReferenceError> {
        let namespace = selector
            .namespace
            .clone()
            .or_else(|| self.namespace.clone());
        let labels = selector
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        self.reads.inc();
        let list = self
            .cluster
            .list(&Self::resource(field), namespace.as_deref(), &labels)
            .await
            .map_err(|error| ReferenceError::Kube {
                kind: field.target_kind,
                error,
            })?;
        let want_controller = selector.match_controller_ref == Some(true);
        let mut names: Vec<String> = list
            .iter()
            .filter(|o| !want_controller || self.same_controller(&owners(o)))
            .filter_map(|o| o.pointer("/metadata/name")?.as_str().map(str::to_owned))
            .collect();
        names.sort();
        Ok(names
            .into_iter()
            .map(|name| Target {
                namespace: namespace.clone(),
                name,
            })
            .collect())
    }

    fn same_controller(&self, owners: &[OwnerReference]) -> bool {
        let theirs = owners.iter().find(|o| o.controller == Some(true));
        match (&self.controller, theirs) {
            (Some(mine), Some(theirs)) => mine.uid == theirs.uid,
            _ => false,
        }
    }
}

/// A referenced object: its namespace (`None` when cluster-scoped) and name.
struct Target {
    namespace: Option<String>,
    name: String,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// The owner references of an object read as JSON.
fn owners(object: &Value) -> Vec<OwnerReference> {
    object
        .pointer("/metadata/ownerReferences")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}
