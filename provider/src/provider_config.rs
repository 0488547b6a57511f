//! The ProviderConfig controller: counts the ProviderConfigUsages that point
//! at each ProviderConfig into `status.users`, and holds the
//! `in-use.crossplane.io` finalizer while there are any, so credentials
//! cannot be deleted from under live managed resources.

use std::sync::Arc;
use std::time::Duration;

use apis::kinds::provider_config::{ProviderConfig, ProviderConfigUsage};
use apis::well_known::{PROVIDER_CONFIG_IN_USE_FINALIZER, PROVIDER_CONFIG_LABEL};
use futures::StreamExt;
use kube::api::ApiResource;
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use tracing::{Instrument, info, info_span, warn};

use crate::gate::Shutdown;
use crate::runtime::cluster::ObjectKey;
use crate::runtime::{CONFLICT_RETRY, Context, Intent};

/// How often a ProviderConfig is recounted. Usages come and go with managed
/// resources, which this controller does not watch (their CRDs may not
/// exist), so it polls; a deleting ProviderConfig is checked more often.
/// The count comes from a watch cache of the usages
/// ([`crate::runtime::cluster::Cluster::count_watched`]), so a poll that
/// finds the same count costs the API server nothing and can be frequent.
const RECOUNT_INTERVAL: Duration = Duration::from_secs(10);
const DELETING_RECHECK: Duration = Duration::from_secs(2);

/// The kind label of this controller's logs and metrics.
const KIND: &str = "ProviderConfig";

#[derive(Debug, thiserror::Error)]
pub enum ProviderConfigError {
    #[error("cannot {action} for ProviderConfig {name:?}: {source}")]
    Kube {
        action: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(ctx: Arc<Context>, kube: kube::Client, shutdown: Shutdown) {
    let api: Api<ProviderConfig> = Api::all(kube);
    Controller::new(api, watcher::Config::default().any_semantic())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

/// The same error path as every managed-resource controller: a stale copy
/// (409) is retried quietly after [`CONFLICT_RETRY`]; any other failure
/// backs off per object, 1 s doubling to 60 s, until a success resets it.
fn error_policy(
    config: Arc<ProviderConfig>,
    error: &ProviderConfigError,
    ctx: Arc<Context>,
) -> Action {
    let ProviderConfigError::Kube { source, .. } = error;
    if matches!(source, kube::Error::Api(status) if status.code == 409) {
        tracing::debug!(%error, "stale copy; retrying");
        ctx.metrics
            .record_reconcile(KIND, "conflict", Duration::ZERO);
        return Action::requeue(CONFLICT_RETRY);
    }
    warn!(%error, "ProviderConfig reconcile failed");
    ctx.metrics.record_reconcile(KIND, "error", Duration::ZERO);
    let intent = Intent {
        generation: config.meta().generation,
        deleting: config.meta().deletion_timestamp.is_some(),
        ..Intent::default()
    };
    Action::requeue(
        ctx.backoff
            .failed(&config.uid().unwrap_or_default(), intent),
    )
}

async fn reconcile(
    config: Arc<ProviderConfig>,
    ctx: Arc<Context>,
) -> Result<Action, ProviderConfigError> {
    let name = config.name_any();
    let span = info_span!("reconcile", kind = KIND, name = %name);
    let timer = std::time::Instant::now();
    async move {
        let kube_error = |action| {
            let name = name.clone();
            move |source| ProviderConfigError::Kube { action, name, source }
        };
        let users = ctx
            .cluster
            .count_watched(&ApiResource::erase::<ProviderConfigUsage>(&()), &format!("{PROVIDER_CONFIG_LABEL}={name}"))
            .await
            .map_err(kube_error("count ProviderConfigUsages"))?
             as i64;
        let at = ObjectKey::of::<ProviderConfig>(None, &name);

        // Writes below go in sequence; each one bumps the resourceVersion
        // that the finalizer update is guarded by.
        let mut resource_version = config.resource_version();
        if config.status.as_ref().and_then(|s| s.users) != Some(users) {
            let status = json!({
                "apiVersion": ProviderConfig::api_version(&()),
                "kind": ProviderConfig::kind(&()),
                "status": { "users": users },
            });
            let written = ctx
                .cluster
                .apply(&at, status, true)
                .await
                .map_err(kube_error("write status"))?;
            resource_version = written.pointer("/metadata/resourceVersion").and_then(|v| v.as_str()).map(str::to_owned);
            ctx.metrics.kube_write(KIND, "status");
        }

        let has_finalizer = config.finalizers().iter().any(|f| f == PROVIDER_CONFIG_IN_USE_FINALIZER);
        let deleting = config.meta().deletion_timestamp.is_some();
        let wanted: Option<Vec<String>> = match (deleting, users, has_finalizer) {
            (true, 0, true) => {
                info!("no managed resource uses it any more; releasing");
                Some(config.finalizers().iter().filter(|f| *f != PROVIDER_CONFIG_IN_USE_FINALIZER).cloned().collect())
            }
            (false, _, false) => {
                let mut finalizers = config.finalizers().to_vec();
                finalizers.push(PROVIDER_CONFIG_IN_USE_FINALIZER.to_owned());
                Some(finalizers)
            }
            _ => None,
        };
        if let Some(finalizers) = wanted {
            let patch = json!({ "metadata": { "finalizers": finalizers, "resourceVersion": resource_version } });
            ctx.cluster
                .merge_patch(&at, patch)
                .await
                .map_err(kube_error("update finalizers"))?;
            ctx.metrics.kube_write(KIND, "metadata");
        }
        ctx.backoff.succeeded(&config.uid().unwrap_or_default());
        ctx.metrics.record_reconcile(KIND, "success", timer.elapsed());
        Ok(Action::requeue(if deleting { DELETING_RECHECK } else { RECOUNT_INTERVAL }))
    }
    .instrument(span)
    .await
}
