//! A generic Crossplane managed-resource runtime for providers written in
//! Rust, as crossplane-runtime is for providers written in Go: one
//! reconciler for every managed kind, and what it needs around it.
//!
//! A provider says, per kind, only what is its own: the Kubernetes type
//! (a [`crossplane_types::Managed`] resource) and the cloud calls of its
//! `forProvider` type ([`CloudKind`]: observe, create, update, delete,
//! readiness, connection details). Per provider, it says how a
//! ProviderConfig becomes a cloud client ([`Connect`]) and which kinds of
//! ProviderConfig and usage it has ([`ProviderConfigTypes`]). Everything
//! Crossplane-shaped is here: management policies, the finalizer, the
//! external-name and create annotations, `initProvider`, late
//! initialisation, drift, references and selectors, connection Secrets,
//! ProviderConfig usage, conditions and events, backoff and rate limits,
//! the CRD gate that starts each controller when its CRD appears (late
//! managed-resource activation), leader election and metrics.
//!
//! The crate's README starts from `examples/minimal_provider.rs`, a whole
//! kind in one file; `tests/foreign_kind.rs`
//! runs the reconciler on a kind the runtime has never heard of.
//!
//! # What is public, and why
//!
//! The public face is what a provider author writes against, and nothing
//! else. At the root: the per-kind contract ([`CloudKind`], [`ManagedKind`],
//! [`Created`], [`Readiness`], the [`Session`] a kind's calls get, its
//! connection [`Details`]), the per-provider contract ([`Connect`],
//! [`ProviderConfigTypes`]), the errors a kind or a [`Connect`] returns
//! ([`ExternalError`], [`CloudError`], [`CreateFailure`],
//! [`UnusableConfig`]), the process ([`Provider`], its [`Settings`] and
//! [`Metrics`]), where a kind keeps its tags ([`TagsField`]), and what a
//! provider's own controllers (added with [`Provider::controller`]) share
//! with the managed ones: the [`Context`] handle, the per-object
//! [`Backoff`] with its [`Intent`], [`CONFLICT_RETRY`] and [`kind_label`].
//! A few modules hold what belongs together: [`cluster`] (the
//! [`cluster::Cluster`] seam and [`cluster::ObjectKey`]), [`query`] (query
//! kinds), [`gate`] (what a controller of the provider's own is started
//! with), [`metrics`], [`pacing`] (the [`pacing::Ceilings`] of every
//! server), [`changelog`], [`conversion`] (a kind's versions converted for the API
//! server, and its storage migrated), [`leader`], [`lists`], [`tags`],
//! `kube_client` (feature `rustls-tls`) and `testing` (feature `testing`:
//! the in-memory cluster and one reconcile at a time, for a provider's
//! tests of its kinds).
//!
//! The rest is the engine, private to the crate: the decisions made as
//! plain functions (management policies, the `initProvider` merge, late
//! initialisation and drift, the next step of a reconcile, the
//! poll-interval and reconcile-request annotations), the reconciler and
//! its controller, references and selectors, the connection Secret,
//! Events, the echoes of this process's own writes, the reconcile-rate
//! cap and the activation measurements. A
//! provider never calls them: it states facts about its kinds and the
//! engine decides. Keeping them private lets them change in any release
//! without breaking a provider, and keeps this documentation to what a
//! provider author needs.

#![warn(missing_docs)]

mod activation;
mod backoff;
pub mod changelog;
pub mod cluster;
mod connect;
mod connection;
mod context;
mod controller;
pub mod conversion;
mod drift;
mod echo;
mod error;
mod events;
mod fields;
pub mod gate;
mod in_flight;
mod kind;
#[cfg(feature = "rustls-tls")]
pub mod kube_client;
pub mod leader;
pub mod lists;
pub mod metrics;
pub mod pacing;
mod plan;
mod policy;
mod provider;
pub mod query;
mod rate_limit;
mod reconcile;
mod references;
mod requests;
mod session;
pub mod shard;
pub mod tags;
#[cfg(feature = "testing")]
pub mod testing;
mod turns;
mod watch;

pub use backoff::{Backoff, Intent};
pub use connect::{Connect, ProviderConfigTypes};
pub use context::{CONFLICT_RETRY, Context, Settings, kind_label};
pub use error::{CloudError, CreateFailure, ExternalError, UnusableConfig};
pub use kind::{CloudKind, Created, ManagedKind, Readiness};
pub use metrics::Metrics;
pub use provider::Provider;
pub use session::{Details, Session};
pub use tags::TagsField;
