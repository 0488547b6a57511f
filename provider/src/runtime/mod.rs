//! The generic managed-resource runtime: one reconciler for every kind,
//! plus what it needs around it (connection to the cloud, references,
//! connection Secrets, backoff). Kinds plug in through [`ManagedKind`].

mod backoff;
mod connect;
mod connection;
pub mod error;
mod events;
mod kind;
mod reconcile;
mod references;
mod session;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::Api;
use kube::runtime::{Controller, watcher};

pub use backoff::{Backoff, Intent};
pub use connect::Connector;
pub use events::{EventType, Recorder};
pub use kind::{ManagedKind, Readiness};
pub use session::Session;

use crate::metrics::Metrics;
use crate::rate_limit::RateLimiter;
use error::ExternalError;

/// The field manager of every server-side apply the provider makes.
pub const FIELD_MANAGER: &str = "fakecloud-provider";

/// How soon a reconcile that met a resourceVersion conflict (its copy was
/// stale) runs again, in every controller: quietly, without a backoff.
pub const CONFLICT_RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// Settings the reconciler reads on every run.
#[derive(Debug, Clone)]
pub struct Settings {
    pub poll_interval: Duration,
    pub pending_poll_interval: Duration,
    pub management_policies_enabled: bool,
}

/// What every controller shares.
pub struct Context {
    pub kube: kube::Client,
    pub settings: Settings,
    pub metrics: Metrics,
    pub limiter: RateLimiter,
    pub connector: Connector,
    pub recorder: Recorder,
    pub backoff: Backoff,
    pub activations: crate::activation::Activations,
}

impl Context {
    pub fn new(
        kube: kube::Client,
        settings: Settings,
        metrics: Metrics,
        max_reconcile_rate: u32,
    ) -> Self {
        let recorder = Recorder::new(kube.clone());
        Self {
            connector: Connector::new(kube.clone(), metrics.clone()),
            kube,
            settings,
            metrics,
            limiter: RateLimiter::new(max_reconcile_rate),
            recorder,
            backoff: Backoff::default(),
            activations: crate::activation::Activations::default(),
        }
    }

    /// Runs one call of a kind to the cloud, counting it by operation and
    /// outcome.
    async fn call<T>(
        &self,
        kind: &str,
        operation: &str,
        call: impl Future<Output = Result<T, ExternalError>>,
    ) -> Result<T, ExternalError> {
        let result = call.await;
        let status = match &result {
            Ok(_) => "ok".to_owned(),
            Err(ExternalError::Cloud(e)) => e
                .status()
                .map_or_else(|| "error".to_owned(), |s| s.to_string()),
            Err(_) => "error".to_owned(),
        };
        self.metrics.record_cloud_call(kind, operation, &status);
        result
    }
}

/// Runs the controller of kind `K` until `shutdown` resolves; in-flight
/// reconciles finish first.
pub async fn run_controller<K: ManagedKind>(
    ctx: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api: Api<K> = Api::all(ctx.kube.clone());
    Controller::new(api, watcher::Config::default().any_semantic())
        .graceful_shutdown_on(shutdown)
        .run(
            reconcile::reconcile::<K>,
            |_, never, _| match *never {},
            ctx,
        )
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "controller event");
            }
        })
        .await;
}
