//! The two scopes every story runs on: Crossplane v2's namespaced managed
//! resources (groups `*.fakecloud.m.crossplane.io`, what new users start
//! with) and the legacy cluster-scoped ones. A story is written once,
//! generic over [`Scope`]; what differs between the scopes (the types, the
//! `apiVersion`, the few spec fields whose shape depends on the scope) is
//! asked of the scope.

use serde_json::{Value, json};

use crate::objects::{Kind, Objects};

/// The namespace namespaced stories apply their resources in.
pub const APP: &str = "app";
/// The namespace of the network another team shares, in the stories that
/// reference across namespaces.
pub const NET: &str = "net";

/// A scope of managed resources, as a story uses it.
pub trait Scope: Send + Sync + 'static {
    /// How narration and reports name it.
    const NAME: &'static str;
    /// Whether its managed kinds are namespaced.
    const NAMESPACED: bool;
    type Vpc: Kind;
    type Subnet: Kind;
    type NodeGroup: Kind;
    type DatabaseInstance: Kind;

    /// The `apiVersion` of the managed kinds of `group` (`network`,
    /// `compute`, `database`).
    fn api_version(group: &str) -> String;

    /// The spec fields that keep the external resource when the managed
    /// one is deleted (`orphan`) or delete it with it: `deletionPolicy` for
    /// the legacy kinds; for the namespaced ones, which have none,
    /// `managementPolicies` without `Delete`, or the default.
    fn deletion(orphan: bool) -> Value;

    /// `writeConnectionSecretToRef` for the Secret `name` in the resource's
    /// namespace `namespace` (a namespaced resource names only the Secret).
    fn connection_secret_ref(namespace: &str, name: &str) -> Value;

    /// A reference to the managed resource `name` in `namespace` (a legacy
    /// resource's target is cluster-scoped: no namespace).
    fn reference(name: &str, namespace: &str) -> Value;

    /// `objects` as this scope's stories use them: namespaced kinds in
    /// [`APP`].
    fn objects(objects: &Objects) -> Objects {
        objects.in_namespace(APP)
    }

    /// A managed resource's manifest: `apiVersion`, `kind`, `metadata` and
    /// `spec`.
    fn manifest(group: &str, kind: &str, metadata: Value, spec: Value) -> Value {
        json!({
            "apiVersion": Self::api_version(group), "kind": kind,
            "metadata": metadata, "spec": spec,
        })
    }
}

/// The legacy cluster-scoped kinds.
pub struct Legacy;

/// Crossplane v2's namespaced kinds.
pub struct Namespaced;

impl Scope for Legacy {
    const NAME: &'static str = "cluster-scoped (legacy)";
    const NAMESPACED: bool = false;
    type Vpc = apis::kinds::vpc::Vpc;
    type Subnet = apis::kinds::subnet::Subnet;
    type NodeGroup = apis::kinds::nodegroup::NodeGroup;
    type DatabaseInstance = apis::kinds::database_instance::DatabaseInstance;

    fn api_version(group: &str) -> String {
        format!("{group}.fakecloud.crossplane.io/v1alpha1")
    }

    fn deletion(orphan: bool) -> Value {
        json!({ "deletionPolicy": if orphan { "Orphan" } else { "Delete" } })
    }

    fn connection_secret_ref(namespace: &str, name: &str) -> Value {
        json!({ "namespace": namespace, "name": name })
    }

    fn reference(name: &str, _: &str) -> Value {
        json!({ "name": name })
    }
}

impl Scope for Namespaced {
    const NAME: &'static str = "namespaced";
    const NAMESPACED: bool = true;
    type Vpc = apis::kinds::vpc::m::Vpc;
    type Subnet = apis::kinds::subnet::m::Subnet;
    type NodeGroup = apis::kinds::nodegroup::m::NodeGroup;
    type DatabaseInstance = apis::kinds::database_instance::m::DatabaseInstance;

    fn api_version(group: &str) -> String {
        format!("{group}.fakecloud.m.crossplane.io/v1alpha1")
    }

    fn deletion(orphan: bool) -> Value {
        if orphan {
            json!({ "managementPolicies": ["Observe", "Create", "Update", "LateInitialize"] })
        } else {
            json!({})
        }
    }

    fn connection_secret_ref(_: &str, name: &str) -> Value {
        json!({ "name": name })
    }

    fn reference(name: &str, namespace: &str) -> Value {
        json!({ "name": name, "namespace": namespace })
    }
}

/// `base` with the fields of `extra` merged in (a JSON merge patch).
pub fn merged(mut base: Value, extra: &Value) -> Value {
    json_patch::merge(&mut base, extra);
    base
}
