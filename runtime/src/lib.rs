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
//! The crate's README walks through adding a kind; `tests/foreign_kind.rs`
//! runs the reconciler on a kind the runtime has never heard of.
//!
//! Modules, from the bottom up:
//! - decisions as plain functions, unit-tested without a cluster:
//!   [`policy`] (what the management policies allow), [`fields`]
//!   (initProvider merge, late-init, drift), [`plan`] (the next step),
//!   [`requests`] (the poll-interval and reconcile-request annotations);
//! - the Kubernetes side: [`kube_client`] (the client to build:
//!   HTTP/2, no retries of its own), [`cluster`] (the [`Cluster`] seam,
//!   on an API server or in memory), [`events`], [`echo`] (this
//!   process's own writes), [`leader`];
//! - the pieces of a reconcile: [`references`], [`connection`] (the
//!   connection Secret), [`session`] (what a kind's calls can reach),
//!   [`connect`] (ProviderConfig to client), [`kind`] (the per-kind
//!   contract), [`error`];
//! - pacing: [`pacing`] (every server's, by its answers), [`rate_limit`]
//!   (the reconcile cap), [`backoff`];
//! - the reconciler itself, [`reconcile`], its [`controller`], and the
//!   [`gate`] that starts controllers as CRDs come and go; [`metrics`];
//!   [`changelog`] (change logs to Crossplane's sidecar);
//! - above managed resources, [`query`]: query resources that find cloud
//!   resources by a filter and own one observe-only managed resource per
//!   match (seed 000's future work).

pub mod activation;
pub mod backoff;
pub mod changelog;
pub mod cluster;
pub mod connect;
pub mod connection;
pub mod context;
pub mod controller;
pub mod drift;
pub mod echo;
pub mod error;
pub mod events;
pub mod fields;
pub mod gate;
pub mod kind;
#[cfg(feature = "rustls-tls")]
pub mod kube_client;
pub mod leader;
pub mod lists;
pub mod metrics;
pub mod pacing;
pub mod plan;
pub mod policy;
pub mod provider;
pub mod query;
pub mod rate_limit;
pub mod reconcile;
pub mod references;
pub mod requests;
pub mod session;
pub mod tags;
#[cfg(feature = "testing")]
pub mod testing;
mod turns;

pub use backoff::{Backoff, Intent};
pub use cluster::{Cluster, KubeCluster};
pub use connect::{Connect, Connector, ProviderConfigTypes};
pub use context::{CATCH_UP_LIMIT, CONFLICT_RETRY, Context, Settings, kind_label};
pub use controller::run_controller;
pub use error::{CloudError, CreateFailure, ExternalError, UnusableConfig};
pub use events::{EventType, Recorder};
pub use kind::{CloudKind, Created, ManagedKind, Readiness};
pub use provider::Provider;
pub use session::{Details, Session};
pub use tags::TagsField;
