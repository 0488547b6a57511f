//! The errors of the managed reconciler, one enum per layer. Their messages
//! end up in the `Synced` condition, so each says what failed and, where it
//! can, what to do; none carries a secret value.
//!
//! The convention of every error type in the workspace: a wrapper's message
//! carries the whole story (it includes the inner error's text, `{0}` or
//! `{error}`), and its `source()` returns nothing for that inner error: no
//! `#[source]`, no `#[from]` (a hand-written `From` where `?` needs one), no
//! field named `source`. Logs and conditions print errors with Display
//! (`%error`, `to_string()`), and a condition's message must hold the whole
//! text in one string; a chain printer (anyhow's `{:#}`) would otherwise
//! print the inner error twice. `#[error(transparent)]` prints once too, and
//! a wrapper whose message leaves the inner error out may keep `#[source]`.

use thiserror::Error;

/// An error of a provider's cloud client, as the reconciler reads it. The
/// runtime knows no cloud: a provider implements this for its client's
/// error (or a newtype around it), and `?` turns it into
/// [`ExternalError::Cloud`].
pub trait CloudError: std::error::Error + Send + Sync + 'static {
    /// The HTTP status of the cloud's answer, when it answered: the
    /// `status` label of the cloud-call metrics.
    fn status(&self) -> Option<u16>;

    /// What a failed create says about whether it took effect, which
    /// decides whether a claimed external name is kept. By default, from
    /// the status alone ([`CreateFailure::of_status`]).
    fn create_failure(&self) -> CreateFailure {
        CreateFailure::of_status(self.status())
    }

    /// How long the cloud asked callers to wait (`Retry-After`), when it
    /// did: every caller of that server waits it out ([`crate::pacing`]).
    fn retry_after(&self) -> Option<std::time::Duration> {
        None
    }

    /// Whether no answer came in time (a timeout, a refused or broken
    /// connection): read as the server being short of capacity.
    fn unanswered(&self) -> bool {
        false
    }
}

/// What a failed create call says about its effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateFailure {
    /// No definitive answer (no response, a server error): the resource
    /// may exist; the next attempt's idempotency key settles it.
    Uncertain,
    /// The cloud refused the create: nothing was made.
    Refused,
    /// Refused because a resource of that name exists already.
    NameTaken,
    /// The idempotency key was sent before with another request: a create
    /// whose outcome was unknown was made from an earlier spec.
    KeyReused,
}

impl CreateFailure {
    /// What an answer's HTTP status alone says: 409 is a name taken, any
    /// other 4xx a refusal, anything else (no answer, a server error)
    /// uncertain.
    pub fn of_status(status: Option<u16>) -> Self {
        match status {
            Some(409) => CreateFailure::NameTaken,
            Some(400..=499) => CreateFailure::Refused,
            _ => CreateFailure::Uncertain,
        }
    }
}

/// Why a provider's [`crate::Connect`] cannot use a ProviderConfig's spec,
/// worded for the user who wrote it.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct UnusableConfig(pub String);

/// A failure of one call a kind makes: to the cloud, or to read a Secret it
/// needs for that call. Its message ends up in the managed resource's
/// `Synced` condition, after what the runtime was doing (`cannot create
/// external resource: ...`), and the reconcile backs off.
///
/// A cloud client's error becomes [`ExternalError::Cloud`] by `?` once the
/// provider implements [`CloudError`] for it, which lets it say everything
/// the runtime can use (a `Retry-After`, an unanswered call, what a failed
/// create made). A provider that has only a status and a message uses
/// [`ExternalError::Failed`] ([`ExternalError::failed`],
/// [`ExternalError::failed_with_status`]) instead.
#[derive(Debug, Error)]
pub enum ExternalError {
    /// The cloud's failure, as the provider's [`CloudError`] describes it.
    #[error("{0}")]
    Cloud(Box<dyn CloudError>),
    /// A cloud call failed, known only by the HTTP status of the answer
    /// (`None`: no answer, or none worth a status) and a message. It is
    /// read as a [`CloudError`] that says no more: `status` labels the
    /// cloud-call metrics, a failed create is judged by the status alone
    /// ([`CreateFailure::of_status`]), and a 429 or 5xx slows the server's
    /// pace down as any cloud error's does.
    #[error("{message}")]
    Failed {
        /// The HTTP status of the cloud's answer, when it answered.
        status: Option<u16>,
        /// What failed, for the `Synced` condition.
        message: String,
    },
    /// A Secret the call needs could not be read.
    #[error("cannot read Secret {namespace}/{name}: {error}")]
    ReadSecret {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// The API server's error.
        error: kube::Error,
    },
    /// A Secret the call needs does not exist.
    #[error("Secret {namespace}/{name} does not exist")]
    SecretMissing {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
    },
    /// A Secret the call needs lacks the key it should hold.
    #[error("Secret {namespace}/{name} has no key {key:?}")]
    SecretKeyMissing {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// The missing key.
        key: String,
    },
    /// The desired state cannot be turned into the cloud's request (a
    /// required field unset, a value of the wrong shape): the user must
    /// fix the spec. Nothing was sent, so a failed create made nothing.
    #[error("the spec cannot be sent to the cloud: {0}")]
    InvalidSpec(String),
}

impl<E: CloudError> From<E> for ExternalError {
    fn from(error: E) -> Self {
        ExternalError::Cloud(Box::new(error))
    }
}

impl ExternalError {
    /// A cloud call that failed without an HTTP status (an answer that
    /// could not be read, a check of the client's own), saying `message`:
    /// [`ExternalError::Failed`] with no status. A create that fails so is
    /// uncertain: the next attempt's idempotency key settles whether it
    /// made anything. It says nothing of the server's load; a client whose
    /// calls time out should say so through [`CloudError::unanswered`].
    pub fn failed(message: impl Into<String>) -> Self {
        ExternalError::Failed {
            status: None,
            message: message.into(),
        }
    }

    /// A cloud call answered with the HTTP status `status`, saying
    /// `message`: [`ExternalError::Failed`].
    ///
    /// ```
    /// use crossplane_managed_runtime::{CreateFailure, ExternalError};
    ///
    /// let taken = ExternalError::failed_with_status(409, "bucket name taken");
    /// assert_eq!(taken.to_string(), "bucket name taken");
    /// assert_eq!(taken.create_failure(), CreateFailure::NameTaken);
    /// let refused = ExternalError::failed_with_status(400, "no such region");
    /// assert_eq!(refused.create_failure(), CreateFailure::Refused);
    /// // No answer: the resource may exist, the idempotency key settles it.
    /// assert_eq!(ExternalError::failed("reset").create_failure(), CreateFailure::Uncertain);
    /// ```
    pub fn failed_with_status(status: u16, message: impl Into<String>) -> Self {
        ExternalError::Failed {
            status: Some(status),
            message: message.into(),
        }
    }

    /// What a failed create says about its effect: a failure before any
    /// call (a Secret, the spec) made nothing.
    pub fn create_failure(&self) -> CreateFailure {
        match self {
            ExternalError::Cloud(error) => error.create_failure(),
            ExternalError::Failed { status, .. } => CreateFailure::of_status(*status),
            _ => CreateFailure::Refused,
        }
    }

    /// The HTTP status of the cloud's answer, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ExternalError::Cloud(error) => error.status(),
            ExternalError::Failed { status, .. } => *status,
            _ => None,
        }
    }

    /// What this failure says about the cloud server's load, for its
    /// pacer: 429 is a refusal of the rate; a 5xx or no answer is
    /// overload; anything else (a refusal of the request, a Secret that
    /// cannot be read) says nothing of it.
    pub(crate) fn answer(&self) -> crate::pacing::Answer {
        use crate::pacing::Answer;
        let (retry_after, unanswered) = match self {
            ExternalError::Cloud(error) => (error.retry_after(), error.unanswered()),
            ExternalError::Failed { .. } => (None, false),
            _ => return Answer::Good,
        };
        match self.status() {
            Some(429) => Answer::Throttled { retry_after },
            Some(500..) => Answer::Overloaded { retry_after },
            None if unanswered => Answer::Overloaded { retry_after },
            _ => Answer::Good,
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
    #[error("cannot list or get {kind}: {error}")]
    Kube {
        kind: &'static str,
        error: kube::Error,
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
    #[error("cannot read Secret {namespace}/{name}: {error}")]
    Read {
        namespace: String,
        name: String,
        error: kube::Error,
    },
    #[error("cannot write Secret {namespace}/{name}: {error}")]
    Write {
        namespace: String,
        name: String,
        error: kube::Error,
    },
}

/// Finding the ProviderConfig and its credentials failed. `name` and
/// `provider_config` describe the ProviderConfig by kind, name and, for a
/// namespaced one, namespace.
#[derive(Debug, Error)]
pub enum ConnectError {
    #[error("{0} does not exist: create it or set spec.providerConfigRef")]
    ProviderConfigMissing(String),
    #[error("cannot get {name}: {error}")]
    ProviderConfigRead { name: String, error: kube::Error },
    #[error("{0} uses source Secret but has no credentials.secretRef")]
    SecretRefMissing(String),
    #[error("cannot read the credentials of {provider_config}: {error}")]
    Credentials {
        provider_config: String,
        error: ExternalError,
    },
    /// The provider's [`crate::Connect`] cannot use the ProviderConfig's
    /// spec; `reason` says what to fix.
    #[error("{provider_config} cannot be used: {reason}")]
    Unusable {
        provider_config: String,
        reason: UnusableConfig,
    },
    #[error("cannot record ProviderConfigUsage: {0}")]
    Usage(kube::Error),
}

/// Why one reconcile of a managed resource failed.
#[derive(Debug, Error)]
pub enum ReconcileError {
    #[error("cannot resolve references: {0}")]
    References(ReferenceError),
    #[error("cannot connect to the cloud: {0}")]
    Connect(ConnectError),
    #[error("cannot observe external resource: {0}")]
    Observe(ExternalError),
    #[error("cannot create external resource: {0}")]
    Create(ExternalError),
    #[error("cannot update external resource: {0}")]
    Update(ExternalError),
    #[error("cannot delete external resource: {0}")]
    Delete(ExternalError),
    #[error("connection Secret: {0}")]
    ConnectionSecret(ConnectionError),
    #[error("cannot gather connection details: {0}")]
    ConnectionDetails(ExternalError),
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    #[error(
        "external resource does not exist, and managementPolicies do not allow Create: check the crossplane.io/external-name annotation"
    )]
    ExternalMissing,
    /// A namespaced resource's default cloud name (its `metadata.name`) is
    /// taken by a resource it did not create.
    #[error(
        "the cloud already has a {kind} named {name:?} that this managed resource did not create (another namespace's {kind} of the same name, or one made outside Crossplane): choose another metadata.name, or set the crossplane.io/external-name annotation to {name:?} to manage that one deliberately"
    )]
    ExternalNameTaken { kind: String, name: String },
    /// The one case the idempotency key cannot settle: the cloud holds a
    /// create under this key made from another request body.
    #[error(
        "cannot determine creation result: the cloud already accepted a create for this resource from a different request (Idempotency-Key {key}); the spec changed while that create's outcome was unknown. Restore the earlier spec, or set crossplane.io/external-name to the resource that create made"
    )]
    CreateIncomplete { key: String },
    #[error(
        "created external resource {created:?}, but the managed resource now names {recorded}: {created:?} is not managed by it; delete it in the cloud if it is not wanted"
    )]
    CreateSuperseded { created: String, recorded: String },
    /// A resource to create again carries tags that several cloud
    /// resources share: adopting one at random could pick the wrong one,
    /// and creating another would add a duplicate.
    #[error(
        "the external resource is missing and {} cloud resources carry this managed resource's identifying tags ({}): set the crossplane.io/external-name annotation to the one to keep, and delete the others in the cloud",
        .found.len(),
        .found.join(", ")
    )]
    TaggedSeveral { found: Vec<String> },
    #[error("cannot {action}: {error}")]
    Kube {
        action: &'static str,
        error: kube::Error,
    },
    /// The cloud server is paused or its rate booked ahead: not a failure;
    /// the object waits in the server's line and is woken in its turn
    /// ([`crate::pacing`]).
    #[error("{}", .0.message)]
    Deferred(crate::pacing::Deferral),
}

impl From<ReferenceError> for ReconcileError {
    fn from(error: ReferenceError) -> Self {
        ReconcileError::References(error)
    }
}

impl From<ConnectError> for ReconcileError {
    fn from(error: ConnectError) -> Self {
        ReconcileError::Connect(error)
    }
}

impl From<ConnectionError> for ReconcileError {
    fn from(error: ConnectionError) -> Self {
        ReconcileError::ConnectionSecret(error)
    }
}

impl ReconcileError {
    /// A write was refused because our copy of the object was stale (HTTP
    /// 409 on a resourceVersion precondition): not a failure of the
    /// resource, only of the informer's timing.
    pub fn is_conflict(&self) -> bool {
        matches!(self, ReconcileError::Kube { error: kube::Error::Api(status), .. } if status.code == 409)
    }
}

/// The error of a controller's reconcile, never returned: the reconcilers
/// turn every failure into a condition and a backoff, so kube's
/// `Controller` error policy is unused.
#[derive(Debug, thiserror::Error)]
#[error("unreachable")]
pub enum Never {}

/// The managed resource, or its status, cannot be read as JSON: the
/// reconcile cannot decide anything from it.
#[derive(Debug, Error)]
#[error(
    "cannot read the {what} as JSON ({error}): was it written by another version of the provider? Fix or remove the offending field"
)]
pub struct Unreadable {
    /// What could not be read: `managed resource` or `status`.
    pub what: &'static str,
    /// Why.
    pub error: serde_json::Error,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::reconcile::QueryError;

    /// The error and its `source()` chain, as anyhow's `{:#}` prints them.
    fn chain(error: &dyn std::error::Error) -> String {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        text
    }

    fn kube_error(message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, "Conflict")
                .with_code(409)
                .boxed(),
        )
    }

    #[derive(Debug, Error)]
    #[error("cloud said {0}")]
    struct Cloud(&'static str);

    impl CloudError for Cloud {
        fn status(&self) -> Option<u16> {
            Some(500)
        }
    }

    /// A failure known only by its status and message reads as a
    /// [`CloudError`] that says no more would: the same status, the same
    /// verdict on a failed create, the same load on its server.
    #[test]
    fn a_plain_failure_reads_as_a_cloud_error_with_its_status() {
        use crate::pacing::Answer;
        #[derive(Debug, Error)]
        #[error("status {0:?}")]
        struct Status(Option<u16>);
        impl CloudError for Status {
            fn status(&self) -> Option<u16> {
                self.0
            }
        }
        for status in [
            None,
            Some(400),
            Some(404),
            Some(409),
            Some(429),
            Some(500),
            Some(503),
        ] {
            let plain = match status {
                Some(code) => ExternalError::failed_with_status(code, "the cloud said no"),
                None => ExternalError::failed("the cloud said no"),
            };
            let cloud = ExternalError::from(Status(status));
            assert_eq!(plain.status(), status);
            assert_eq!(plain.create_failure(), cloud.create_failure(), "{status:?}");
            assert_eq!(plain.answer(), cloud.answer(), "{status:?}");
            assert_eq!(plain.to_string(), "the cloud said no");
        }
        assert_eq!(
            ExternalError::failed_with_status(409, "taken").create_failure(),
            CreateFailure::NameTaken
        );
        assert_eq!(
            ExternalError::failed("timed out").create_failure(),
            CreateFailure::Uncertain
        );
        assert_eq!(
            ExternalError::failed_with_status(429, "slow down").answer(),
            Answer::Throttled { retry_after: None }
        );
        assert_eq!(
            ExternalError::failed_with_status(404, "gone").answer(),
            Answer::Good
        );
    }

    /// The convention at the top of this module: the message carries the
    /// inner error's text, and walking `source()` adds no second copy.
    /// (kube's own Display repeats its message, so the whole text counts.)
    #[test]
    fn a_wrapped_error_is_printed_once() {
        let inner = "the-inner-message";
        let kube = kube_error(inner).to_string();
        let cloud = Cloud(inner).to_string();
        let json = serde_json::from_str::<u8>("\"x\"").unwrap_err().to_string();
        let cases: Vec<(Box<dyn std::error::Error>, String)> = vec![
            (
                Box::new(ReconcileError::Kube {
                    action: "patch the status",
                    error: kube_error(inner),
                }),
                kube.clone(),
            ),
            (
                Box::new(ReconcileError::from(ConnectError::Credentials {
                    provider_config: "ProviderConfig default".into(),
                    error: ExternalError::ReadSecret {
                        namespace: "ns".into(),
                        name: "creds".into(),
                        error: kube_error(inner),
                    },
                })),
                kube.clone(),
            ),
            (
                Box::new(ReconcileError::from(ReferenceError::Kube {
                    kind: "Vpc",
                    error: kube_error(inner),
                })),
                kube.clone(),
            ),
            (
                Box::new(ReconcileError::from(ConnectionError::Write {
                    namespace: "ns".into(),
                    name: "conn".into(),
                    error: kube_error(inner),
                })),
                kube.clone(),
            ),
            (
                Box::new(ReconcileError::Observe(Cloud(inner).into())),
                cloud.clone(),
            ),
            (
                Box::new(ReconcileError::from(ConnectError::Unusable {
                    provider_config: "ProviderConfig default".into(),
                    reason: UnusableConfig(inner.into()),
                })),
                inner.into(),
            ),
            (
                Box::new(ReconcileError::from(ConnectError::Usage(kube_error(inner)))),
                kube.clone(),
            ),
            (
                Box::new(ReconcileError::from(Unreadable {
                    what: "status",
                    error: serde_json::from_str::<u8>("\"x\"").unwrap_err(),
                })),
                json,
            ),
            (
                Box::new(QueryError::List {
                    kind: "Vpc".into(),
                    error: Cloud(inner).into(),
                }),
                cloud.clone(),
            ),
            (
                Box::new(QueryError::Status(kube_error(inner))),
                kube.clone(),
            ),
            (
                Box::new(crate::kube_client::ClientError::from(kube_error(inner))),
                kube.clone(),
            ),
        ];
        for (error, inner) in cases {
            let printed = chain(error.as_ref());
            assert_eq!(
                printed.matches(inner.as_str()).count(),
                1,
                "{inner:?} once in {printed:?}"
            );
            assert!(error.source().is_none(), "{printed}");
        }
    }
}
