//! The ProviderConfig controllers, one per kind (the legacy
//! `ProviderConfig`, the namespaced `ProviderConfig` and the
//! `ClusterProviderConfig`): each counts the usages that point at each of
//! its objects into `status.users`, and holds the `in-use.crossplane.io`
//! finalizer while there are any, so credentials cannot be deleted from
//! under live managed resources.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use apis::kinds::provider_config::{self, m};
use apis::well_known::PROVIDER_CONFIG_LABEL;
use crossplane_types::ProviderConfigStatus;
use crossplane_types::well_known::PROVIDER_CONFIG_IN_USE_FINALIZER;
use crossplane_types::{ProviderConfigKey, ProviderConfigKind};
use futures::StreamExt;
use kube::api::ApiResource;
use kube::runtime::controller::Action;
use kube::runtime::{Controller, WatchStreamExt, predicates, reflector, watcher};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;
use tracing::{Instrument, info, info_span, warn};

use runtime::gate::Shutdown;
use runtime::{CONFLICT_RETRY, Context, Intent, ProviderConfigTypes, kind_label};

/// A kind of ProviderConfig: which one it is, and its status.
pub trait ConfigKind:
    Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static
{
    const KIND: ProviderConfigKind;
    fn config_status(&self) -> Option<&ProviderConfigStatus>;
}

macro_rules! config_kind {
    ($type:ty, $kind:expr) => {
        impl ConfigKind for $type {
            const KIND: ProviderConfigKind = $kind;
            fn config_status(&self) -> Option<&ProviderConfigStatus> {
                self.status.as_ref()
            }
        }
    };
}

/// This provider's kinds of ProviderConfig and usage, for the runtime.
pub fn types() -> ProviderConfigTypes {
    ProviderConfigTypes {
        legacy: ApiResource::erase::<provider_config::ProviderConfig>(&()),
        namespaced: ApiResource::erase::<m::ProviderConfig>(&()),
        cluster: ApiResource::erase::<m::ClusterProviderConfig>(&()),
        legacy_usage: ApiResource::erase::<provider_config::ProviderConfigUsage>(&()),
        usage: ApiResource::erase::<m::ProviderConfigUsage>(&()),
        legacy_usage_label: PROVIDER_CONFIG_LABEL.to_owned(),
    }
}

config_kind!(provider_config::ProviderConfig, ProviderConfigKind::Legacy);
config_kind!(m::ProviderConfig, ProviderConfigKind::Namespaced);
config_kind!(m::ClusterProviderConfig, ProviderConfigKind::Cluster);

/// How often a ProviderConfig is recounted. Usages come and go with managed
/// resources, which this controller does not watch (their CRDs may not
/// exist), so it polls; a deleting ProviderConfig is checked more often.
/// The count comes from a watch cache of the usages
/// ([`runtime::cluster::Cluster::count_watched`]), so a poll that
/// finds the same count costs the API server nothing and can be frequent.
const RECOUNT_INTERVAL: Duration = Duration::from_secs(10);
const DELETING_RECHECK: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum ProviderConfigError {
    #[error("cannot {action} for {name}: {error}")]
    Kube {
        action: &'static str,
        name: String,
        error: kube::Error,
    },
}

/// Runs the controller of the ProviderConfig kind `P` until `shutdown`
/// resolves.
///
/// A ProviderConfig is reconciled when it appears, when its spec changes
/// and when its deletion begins (each bumps its generation), and every
/// [`RECOUNT_INTERVAL`]; not when its status changes. Otherwise each count
/// written started another count at once, and while resources were being
/// created each found a new number to write: 7 status writes in a
/// 16-second cold start of 1,000 VPCs, where the interval allows 2.
pub async fn run<P: ConfigKind>(ctx: Arc<Context>, kube: kube::Client, shutdown: Shutdown) {
    let api: Api<P> = Api::all(kube);
    let (reader, writer) = reflector::store();
    let changes = watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default());
    Controller::for_stream(changes, reader)
        .graceful_shutdown_on(shutdown)
        .run(reconcile::<P>, error_policy::<P>, ctx)
        .for_each(|_| async {})
        .await;
}

/// The same error path as every managed-resource controller: a stale copy
/// (409) is retried quietly after [`CONFLICT_RETRY`]; any other failure
/// backs off per object, 1 s doubling to 60 s, until a success resets it.
fn error_policy<P: ConfigKind>(
    config: Arc<P>,
    error: &ProviderConfigError,
    ctx: Arc<Context>,
) -> Action {
    let kind = kind_label::<P>();
    let ProviderConfigError::Kube { error: cause, .. } = error;
    if matches!(cause, kube::Error::Api(status) if status.code == 409) {
        tracing::debug!(%error, "stale copy; retrying");
        ctx.metrics()
            .record_reconcile(&kind, "conflict", Duration::ZERO);
        return Action::requeue(CONFLICT_RETRY);
    }
    warn!(%error, "{kind} reconcile failed");
    ctx.metrics()
        .record_reconcile(&kind, "error", Duration::ZERO);
    let intent = Intent {
        generation: config.meta().generation,
        deleting: config.meta().deletion_timestamp.is_some(),
        ..Intent::default()
    };
    Action::requeue(
        ctx.backoff()
            .failed(&config.uid().unwrap_or_default(), intent),
    )
}

async fn reconcile<P: ConfigKind>(
    config: Arc<P>,
    ctx: Arc<Context>,
) -> Result<Action, ProviderConfigError> {
    let kind = kind_label::<P>();
    let key = ProviderConfigKey {
        kind: P::KIND,
        namespace: config.namespace(),
        name: config.name_any(),
    };
    let types = ctx.provider_config_types().clone();
    let described = types.describe(&key);
    let span = info_span!("reconcile", kind = %kind, namespace = key.namespace.as_deref().unwrap_or(""), name = %key.name);
    let timer = std::time::Instant::now();
    async move {
        let kube_error = |action| {
            let name = described.clone();
            move |error| ProviderConfigError::Kube { action, name, error }
        };
        // A namespaced ProviderConfig is used only from its own namespace;
        // the cluster-scoped kinds, from anywhere.
        let users = ctx
            .cluster()
            .count_watched(types.usage_resource(P::KIND), key.namespace.as_deref(), &types.usage_selector(&key))
            .await
            .map_err(kube_error("count usages"))?
             as i64;
        let at = types.object(&key);

        // Writes below go in sequence; each one bumps the resourceVersion
        // that the finalizer update is guarded by.
        let mut resource_version = config.resource_version();
        if config.config_status().and_then(|s| s.users) != Some(users) {
            let status = json!({
                "apiVersion": P::api_version(&()),
                "kind": P::kind(&()),
                "status": { "users": users },
            });
            let written = ctx
                .cluster()
                .apply(&at, status, true)
                .await
                .map_err(kube_error("write status"))?;
            resource_version = written.pointer("/metadata/resourceVersion").and_then(|v| v.as_str()).map(str::to_owned);
            ctx.metrics().kube_write(&kind, "status");
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
            ctx.cluster()
                .merge_patch(&at, patch)
                .await
                .map_err(kube_error("update finalizers"))?;
            ctx.metrics().kube_write(&kind, "metadata");
        }
        ctx.backoff().succeeded(&config.uid().unwrap_or_default());
        ctx.metrics().record_reconcile(&kind, "success", timer.elapsed());
        Ok(Action::requeue(if deleting { DELETING_RECHECK } else { RECOUNT_INTERVAL }))
    }
    .instrument(span)
    .await
}
