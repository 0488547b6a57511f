//! The per-kind contract: the little a kind must say so that the generic
//! reconciler can manage it.
//!
//! Everything Crossplane-shaped (policies, conditions, finalizer, external
//! name, create annotations, connection secret, usage tracking) lives in the
//! generic reconciler; a kind only maps its `forProvider` to cloud calls.

use std::future::Future;

use crossplane_types::Managed;
use serde_json::{Map, Value};

use crate::connect::Connect;
use crate::error::ExternalError;
use crate::session::{Details, Session};
use crate::tags::TagsField;

/// The cloud's readiness of an observed resource
/// ([`CloudKind::readiness`]): it sets the `Ready` condition and decides
/// when the resource is looked at again. Every state but `Available` is
/// looked at again after the pending interval
/// ([`crate::Settings::pending_poll_interval`]), so a resource on its way
/// is followed closely and a settled one costs one observe a poll. Only
/// `Deleting` changes what a reconcile does besides: in any other state a
/// resource that drifted is updated (as the management policies allow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Ready for use: `Ready=True` (reason `Available`). Observed again
    /// after the resource's poll interval ([`crate::Settings::poll_interval`],
    /// or its `crossplane.io/poll-interval` annotation), jittered; sooner,
    /// after the pending interval, when this reconcile has just updated it.
    /// When `Ready` turns true, the resource's time to ready (since its
    /// creation) is recorded in the metrics.
    Available,
    /// Being provisioned: `Ready=False` (reason `Creating`). Observed again
    /// after the pending interval.
    Creating,
    /// The cloud is deleting it: `Ready=False` (reason `Deleting`). It is
    /// never updated and its drift is not reported, and a managed resource
    /// being deleted waits for it to be gone without another delete call.
    /// Observed again after the pending interval.
    Deleting,
    /// Exists but cannot be used (failed, stopped, degraded): `Ready=False`
    /// (reason `Unavailable`). Observed again after the pending interval.
    Unavailable,
}

/// What a create call made, with `O` the kind's
/// [`CloudKind::Observation`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created<O> {
    /// The new resource's external name.
    pub external_name: String,
    /// Connection details the create settled that only the provider knows
    /// (a password from a Secret reference): the runtime records them.
    pub connection_details: Details,
    /// The cloud's model of the new resource as the create call answered
    /// it, when the answer holds one (a `POST` that returns the created
    /// resource does, at no extra call). The runtime treats it as the first
    /// observation: it late-initialises `forProvider` from it in the same
    /// write that records the external name, and sets `status.atProvider`,
    /// `Ready` and the drift report in the create's own status write. That
    /// spares every new resource the next reconcile's late-init write and
    /// its status write (and, when the cloud answers "available", a
    /// reconcile: `Ready` is true at once). `None` leaves all of that to
    /// the next reconcile's observe, as for a cloud whose create answers
    /// only an id.
    pub observed: Option<O>,
}

impl<O> Created<O> {
    /// A create with nothing to record but the external name, whose answer
    /// shows nothing of the resource.
    pub fn named(external_name: String) -> Self {
        Self {
            external_name,
            connection_details: Details::new(),
            observed: None,
        }
    }

    /// A create whose answer is the new resource as the cloud holds it:
    /// its external name and that first observation.
    ///
    /// ```
    /// use crossplane_managed_runtime::Created;
    ///
    /// let only_id: Created<String> = Created::named("sg-1".to_owned());
    /// assert!(only_id.observed.is_none());
    /// let whole = Created::answered("sg-2".to_owned(), "available".to_owned());
    /// assert_eq!(whole.observed.as_deref(), Some("available"));
    /// assert!(whole.connection_details.is_empty());
    /// ```
    pub fn answered(external_name: String, observed: O) -> Self {
        Self {
            observed: Some(observed),
            ..Self::named(external_name)
        }
    }
}

/// A managed-resource kind the generic reconciler can run, in either scope,
/// for the provider whose [`Connect`] is `C`: a
/// [`crossplane_types::Managed`] resource whose `forProvider` type knows
/// its cloud calls ([`CloudKind`]).
pub trait ManagedKind<C: Connect>: Managed<ForProvider: CloudKind<C>> {}

impl<C: Connect, K: Managed<ForProvider: CloudKind<C>>> ManagedKind<C> for K {}

/// What the cloud reports of a kind `K`.
pub type Observation<K, C> = <<K as Managed>::ForProvider as CloudKind<C>>::Observation;

/// The cloud side of a kind, implemented on its `forProvider` type for the
/// provider whose [`Connect`] is `C` (which also lets a provider implement
/// it on types of its API crate: the type parameter is the provider's own
/// type, so the orphan rule allows the impl). The
/// calls read nothing of the resource but its desired state and the
/// [`Session`], so one implementation serves the namespaced and the
/// cluster-scoped resource alike (the scope only changes where the session
/// finds Secrets).
///
/// The kind never writes the connection Secret: it reads what it holds from
/// the [`Session`] and returns the details to keep; the runtime is the
/// Secret's only reader and writer.
///
/// The type facts (spec fields, external-name origin, references,
/// connection-detail keys) come from [`crossplane_types::Managed`]; this trait adds the
/// cloud calls.
pub trait CloudKind<C: Connect>: Sized {
    /// The cloud's own model of the resource (its client's wire type): what
    /// observe returns and what readiness and connection details read, so a
    /// renamed field or state in the cloud's model fails to compile in the
    /// kind instead of silently breaking readiness. Serialized, it becomes
    /// `status.atProvider`.
    type Observation: serde::Serialize + Send + Sync;

    /// Top-level `forProvider` keys that locate the resource or feed a call
    /// (region, cluster, secret references) rather than describe it: never
    /// sent in a body, never compared as drift. Reference and selector
    /// fields are added from [`crossplane_types::Managed::REFERENCES`].
    const STEERING_FIELDS: &'static [&'static str];

    /// Top-level `forProvider` keys the cloud accepts at create only (its
    /// update call refuses them): never sent in an update; a difference is
    /// reported in `status.drift` as `CreateOnly` instead.
    const CREATE_ONLY_FIELDS: &'static [&'static str] = &[];

    /// Top-level `forProvider` keys whose values are secrets: `status.drift`
    /// says only that they differ, never a value. Write-only fields (see
    /// [`Self::write_only_drift`]) are always treated so.
    const SENSITIVE_FIELDS: &'static [&'static str] = &[];

    /// Where the kind keeps its cloud tags, if it has any: created
    /// resources get Crossplane's identifying tags there, under the user's
    /// ([`crate::tags`]; the provider's `--no-external-tags` turns it off).
    const TAGS: Option<TagsField> = None;

    /// Reads the external resource; `None` when the cloud does not know it.
    fn observe(
        &self,
        session: &Session<'_, C::Client>,
        external_name: &str,
    ) -> impl Future<Output = Result<Option<Self::Observation>, ExternalError>> + Send;

    /// Connection details that only the provider knows and that the create
    /// call will use (a generated password). The runtime keeps them in the
    /// connection Secret before calling [`Self::create`], which finds them
    /// in [`Session::connection_data`], so that neither a crash nor a retry
    /// loses or changes them.
    fn details_before_create(
        &self,
        _session: &Session<'_, C::Client>,
    ) -> impl Future<Output = Result<Details, ExternalError>> + Send {
        async { Ok(Details::new()) }
    }

    /// Creates the external resource from `desired` (forProvider with
    /// initProvider merged under it, steering fields removed) and returns
    /// its external name, and the created resource when the cloud's answer
    /// holds it ([`Created::observed`]: return it whenever it comes free,
    /// as it saves the next reconcile's writes). `idempotency_key` goes with
    /// the create call: every attempt of one create (a retry after a lost
    /// answer, a replica racing another, a restart before the external name
    /// was written) sends the same key, so the cloud answers a repeat with
    /// the resource the first attempt made. The key changes once a create
    /// is recorded as succeeded, so a resource deleted behind the
    /// provider's back is created anew.
    fn create(
        &self,
        session: &Session<'_, C::Client>,
        external_name: Option<&str>,
        desired: Value,
        idempotency_key: &str,
    ) -> impl Future<Output = Result<Created<Self::Observation>, ExternalError>> + Send;

    /// The external names of the cloud resources that carry all of
    /// `tags`: Crossplane's identifying tags of this managed resource
    /// ([`crate::tags`]), which the runtime put on at its create.
    ///
    /// Asked only before a resource that was created once and is now
    /// missing is created again (deleted behind the provider's back, or a
    /// backup of the cloud restored since): a resource the cloud got back
    /// under its old id is then adopted instead of duplicated. One found
    /// is recorded as the external name; several stop the create with an
    /// error naming them, for a human to choose. The default finds none:
    /// right for a kind named by `metadata.name` (observe already finds
    /// it) or whose cloud cannot search by tag.
    fn find_tagged(
        &self,
        _session: &Session<'_, C::Client>,
        _tags: &[(&'static str, String)],
    ) -> impl Future<Output = Result<Vec<String>, ExternalError>> + Send {
        async { Ok(Vec::new()) }
    }

    /// Applies `patch`, the drifted `forProvider` fields only. Returns the
    /// connection details the cloud now holds (a rotated password), which
    /// the runtime records only because the cloud accepted them.
    fn update(
        &self,
        session: &Session<'_, C::Client>,
        external_name: &str,
        patch: Map<String, Value>,
    ) -> impl Future<Output = Result<Details, ExternalError>> + Send;

    /// Deletes the external resource, or asks the cloud to. The runtime
    /// calls it while the managed resource is being deleted (unless its
    /// policies orphan the external resource), then observes until
    /// [`Self::observe`] finds nothing, and only then removes its
    /// finalizer. An answer that the resource is already gone should be
    /// `Ok`, so that a retry after a lost answer is no error.
    fn delete(
        &self,
        session: &Session<'_, C::Client>,
        external_name: &str,
    ) -> impl Future<Output = Result<(), ExternalError>> + Send;

    /// Write-only fields (a master password) whose desired value differs
    /// from the one the provider last applied. The cloud never returns them,
    /// so comparing with the observation cannot see a change; the kind
    /// compares with its own record. Asked whenever the resource exists and
    /// is not being deleted; merged into the update patch when the policies
    /// allow `Update`, and reported in `status.drift` either way.
    fn write_only_drift(
        &self,
        _session: &Session<'_, C::Client>,
    ) -> impl Future<Output = Result<Map<String, Value>, ExternalError>> + Send {
        async { Ok(Map::new()) }
    }

    /// Maps the cloud's state onto `Ready`.
    fn readiness(observed: &Self::Observation) -> Readiness;

    /// The connection details to publish, keyed exactly as the kind's MRD
    /// documents them (`apis`' connection-detail list): the whole Secret,
    /// which the runtime publishes. The session gives what the Secret holds
    /// now, so a value only the provider knows (a generated password)
    /// survives.
    fn connection_details(
        &self,
        _session: &Session<'_, C::Client>,
        _observed: &Self::Observation,
    ) -> impl Future<Output = Result<Details, ExternalError>> + Send {
        async { Ok(Details::new()) }
    }
}

/// Every top-level `forProvider` key of `K` that is not part of the cloud
/// resource: its steering fields plus its reference and selector fields.
pub fn non_cloud_fields<K: ManagedKind<C>, C: Connect>() -> Vec<&'static str> {
    let mut fields = <K::ForProvider as CloudKind<C>>::STEERING_FIELDS.to_vec();
    for reference in K::REFERENCES {
        fields.push(reference.reference_field);
        fields.push(reference.selector_field);
    }
    fields
}
