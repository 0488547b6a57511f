//! The errors of the managed reconciler, one enum per layer. Their messages
//! end up in the `Synced` condition, so each says what failed and, where it
//! can, what to do; none carries a secret value.

use thiserror::Error;

/// A failure of one call a kind makes: to the cloud, or to read a Secret it
/// needs for that call.
#[derive(Debug, Error)]
pub enum ExternalError {
    #[error(transparent)]
    Cloud(#[from] fakecloud::client::ClientError),
    #[error("cannot read Secret {namespace}/{name}: {source}")]
    ReadSecret {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("Secret {namespace}/{name} does not exist")]
    SecretMissing { namespace: String, name: String },
    #[error("Secret {namespace}/{name} has no key {key:?}")]
    SecretKeyMissing {
        namespace: String,
        name: String,
        key: String,
    },
    #[error("the spec cannot be sent to the cloud: {0}")]
    InvalidSpec(String),
}

impl ExternalError {
    /// The cloud's machine-readable problem code, when the cloud answered.
    pub fn code(&self) -> Option<&str> {
        match self {
            ExternalError::Cloud(error) => error.code(),
            _ => None,
        }
    }

    /// The HTTP status of the cloud's answer, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ExternalError::Cloud(error) => error.status(),
            _ => None,
        }
    }
}

/// Resolving a `*Ref` or `*Selector` failed.
#[derive(Debug, Error)]
pub enum ReferenceError {
    #[error("referenced {kind} {name:?} does not exist")]
    NotFound { kind: &'static str, name: String },
    #[error("referenced {kind} {name:?} has no value at {pointer} yet: wait until it is Ready")]
    NotReady {
        kind: &'static str,
        name: String,
        pointer: &'static str,
    },
    #[error("{field}Selector matched no {kind}")]
    NoMatch {
        kind: &'static str,
        field: &'static str,
    },
    #[error("cannot list or get {kind}: {source}")]
    Kube {
        kind: &'static str,
        #[source]
        source: kube::Error,
    },
}

/// Reading or writing the connection Secret failed or was refused.
#[derive(Debug, Error)]
pub enum ConnectionError {
    #[error(
        "Secret {namespace}/{name} is controlled by {owner}, not by this resource: refusing to overwrite it"
    )]
    ForeignOwner {
        namespace: String,
        name: String,
        owner: String,
    },
    #[error("the provider must keep a generated {keys}: set spec.writeConnectionSecretToRef")]
    Unkept { keys: String },
    #[error("cannot read Secret {namespace}/{name}: {source}")]
    Read {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot write Secret {namespace}/{name}: {source}")]
    Write {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// Finding the ProviderConfig and its credentials failed. `name` and
/// `provider_config` describe the ProviderConfig by kind, name and, for a
/// namespaced one, namespace.
#[derive(Debug, Error)]
pub enum ConnectError {
    #[error("{0} does not exist: create it or set spec.providerConfigRef")]
    ProviderConfigMissing(String),
    #[error("cannot get {name}: {source}")]
    ProviderConfigRead {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("{0} uses source Secret but has no credentials.secretRef")]
    SecretRefMissing(String),
    #[error("cannot read the credentials of {provider_config}: {source}")]
    Credentials {
        provider_config: String,
        #[source]
        source: ExternalError,
    },
    #[error("cannot record ProviderConfigUsage: {0}")]
    Usage(#[source] kube::Error),
}

/// Why one reconcile of a managed resource failed.
#[derive(Debug, Error)]
pub enum ReconcileError {
    #[error("cannot resolve references: {0}")]
    References(#[from] ReferenceError),
    #[error("cannot connect to fakecloud: {0}")]
    Connect(#[from] ConnectError),
    #[error("cannot observe external resource: {0}")]
    Observe(#[source] ExternalError),
    #[error("cannot create external resource: {0}")]
    Create(#[source] ExternalError),
    #[error("cannot update external resource: {0}")]
    Update(#[source] ExternalError),
    #[error("cannot delete external resource: {0}")]
    Delete(#[source] ExternalError),
    #[error("connection Secret: {0}")]
    ConnectionSecret(#[from] ConnectionError),
    #[error("cannot gather connection details: {0}")]
    ConnectionDetails(#[source] ExternalError),
    #[error(
        "external resource does not exist, and managementPolicies do not allow Create: check the crossplane.io/external-name annotation"
    )]
    ExternalMissing,
    /// A namespaced resource's default cloud name (its `metadata.name`) is
    /// taken by a resource it did not create.
    #[error(
        "fakecloud already has a {kind} named {name:?} that this managed resource did not create (another namespace's {kind} of the same name, or one made outside Crossplane): choose another metadata.name, or set the crossplane.io/external-name annotation to {name:?} to manage that one deliberately"
    )]
    ExternalNameTaken { kind: String, name: String },
    /// The one case the idempotency key cannot settle: the cloud holds a
    /// create under this key made from another request body.
    #[error(
        "cannot determine creation result: fakecloud already accepted a create for this resource from a different request (Idempotency-Key {key}); the spec changed while that create's outcome was unknown. Restore the earlier spec, or set crossplane.io/external-name to the resource that create made"
    )]
    CreateIncomplete { key: String },
    #[error(
        "created external resource {created:?}, but the managed resource now names {recorded}: {created:?} is not managed by it; delete it in the cloud if it is not wanted"
    )]
    CreateSuperseded { created: String, recorded: String },
    #[error("cannot {action}: {source}")]
    Kube {
        action: &'static str,
        #[source]
        source: kube::Error,
    },
}

impl ReconcileError {
    /// A write was refused because our copy of the object was stale (HTTP
    /// 409 on a resourceVersion precondition): not a failure of the
    /// resource, only of the informer's timing.
    pub fn is_conflict(&self) -> bool {
        matches!(self, ReconcileError::Kube { source: kube::Error::Api(status), .. } if status.code == 409)
    }
}
