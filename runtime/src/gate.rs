//! The CRD gate: late managed-resource activation.
//!
//! The provider starts with none of its CRDs required. The gate watches
//! CustomResourceDefinitions and starts a kind's controller once its CRD is
//! `Established` and serves the version we speak. Going beyond Crossplane
//! (whose controller-runtime cannot stop a controller), it also stops a
//! kind's controller when the CRD is deleted, and starts it again if the
//! CRD returns.
//!
//! A CRD being deleted (with a deletion timestamp) keeps its controller: the
//! API server deletes the CRD's objects first, and their finalizers need the
//! controller to release the external resources.
//!
//! [`crate::Provider`] runs the gate; a provider meets it only when it adds
//! a controller of its own ([`crate::Provider::controller`]), which the
//! gate starts with a [`Starter`] and stops with its [`Shutdown`].

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, ResourceExt};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::context::Context;
use crate::metrics::KindLabels;
use crate::shard::assigner::ShardedKind;

/// Starts a kind's controller, watching through the client given; it must
/// return once `shutdown` resolves. A closure, so that it can hold what the
/// kind's controller needs besides the [`Context`] (the provider's
/// [`crate::Connect`]).
pub type Starter = Arc<
    dyn Fn(Arc<Context>, kube::Client, Shutdown) -> Pin<Box<dyn Future<Output = ()> + Send>>
        + Send
        + Sync,
>;

/// A future that resolves when the controller must stop.
pub type Shutdown = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;

/// One kind the gate can start: which CRD and version switch it on.
#[derive(Clone)]
pub(crate) struct Gated {
    /// `<plural>.<group>`, the CRD's name.
    pub crd_name: String,
    /// The version whose being served switches it on: the kind's own.
    pub version: String,
    /// For logs and metrics.
    pub kind: String,
    /// Starts the kind's controller.
    pub start: Starter,
    /// How its objects are assigned when replicas share the work; `None`
    /// for a provider's own controllers, which run on the leader only.
    pub sharded: Option<ShardedKind>,
}

struct Running {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// How long a stopping controller may take to finish in-flight reconciles
/// before its task is aborted.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Watches CRDs and keeps exactly one controller per established kind.
pub(crate) struct Gate {
    ctx: Arc<Context>,
    kube: kube::Client,
    kinds: Vec<Gated>,
    running: HashMap<String, Running>,
    ready: watch::Sender<bool>,
}

impl Gate {
    /// `ready` turns true once the gate has listed the CRDs once, for `/readyz`.
    pub(crate) fn new(
        ctx: Arc<Context>,
        kube: kube::Client,
        kinds: Vec<Gated>,
        ready: watch::Sender<bool>,
    ) -> Self {
        Self {
            ctx,
            kube,
            kinds,
            running: HashMap::new(),
            ready,
        }
    }

    /// Runs until `shutdown` resolves, then stops every controller.
    pub(crate) async fn run(mut self, shutdown: impl Future<Output = ()>) {
        let api: Api<CustomResourceDefinition> = Api::all(self.kube.clone());
        // The watcher retries with backoff on its own; errors are logged, not fatal.
        let events = watcher::watcher(api, crate::watch::whole_list())
            .default_backoff()
            .inspect_err(|error| warn!(%error, "CRD watch failed; retrying"))
            .filter_map(|event| async move { event.ok() });
        tokio::pin!(events);
        tokio::pin!(shutdown);
        // Between `Init` and `InitDone` the watcher relists: a CRD absent
        // from the new list was deleted while the watch was down.
        let mut relisted: Option<Vec<String>> = None;
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                event = events.next() => match event {
                    None => break,
                    Some(Event::Init) => relisted = Some(Vec::new()),
                    Some(Event::InitApply(crd)) => {
                        if let Some(seen) = relisted.as_mut() {
                            seen.push(crd.name_any());
                        }
                        self.observe(&crd);
                    }
                    Some(Event::InitDone) => {
                        let seen = relisted.take().unwrap_or_default();
                        let gone: Vec<String> = self
                            .running
                            .keys()
                            .filter(|name| !seen.contains(name))
                            .cloned()
                            .collect();
                        for name in gone {
                            self.stop(&name, "CRD deleted").await;
                        }
                        let _ = self.ready.send(true);
                    }
                    Some(Event::Apply(crd)) => self.observe(&crd),
                    Some(Event::Delete(crd)) => {
                        self.stop(&crd.name_any(), "CRD deleted").await;
                    }
                },
            }
        }
        let names: Vec<String> = self.running.keys().cloned().collect();
        for name in names {
            self.stop(&name, "provider shutting down").await;
        }
    }

    /// Starts the kind of `crd` if it is ours, established, serves our
    /// version and is not running yet. Idempotent.
    fn observe(&mut self, crd: &CustomResourceDefinition) {
        let Some(gated) = self
            .kinds
            .iter()
            .find(|k| k.crd_name == crd.name_any())
            .cloned()
        else {
            return;
        };
        if self.running.contains_key(&gated.crd_name) || !is_active(crd, &gated.version) {
            return;
        }
        info!(
            kind = gated.kind,
            crd = gated.crd_name,
            "CRD established; starting controller"
        );
        self.ctx.activations.mark(&gated.kind, Instant::now());
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown: Shutdown = Box::pin(async move {
            let _ = stopped.await;
        });
        let task = tokio::spawn((gated.start)(self.ctx.clone(), self.kube.clone(), shutdown));
        self.ctx
            .metrics
            .active_controllers
            .get_or_create(&KindLabels {
                kind: gated.kind.clone(),
            })
            .set(1);
        self.running.insert(gated.crd_name, Running { stop, task });
    }

    /// Stops the controller started for `crd_name`, if one runs.
    async fn stop(&mut self, crd_name: &str, why: &'static str) {
        let Some(running) = self.running.remove(crd_name) else {
            return;
        };
        let kind = self
            .kinds
            .iter()
            .find(|k| k.crd_name == crd_name)
            .map_or("?", |k| k.kind.as_str());
        info!(kind, crd = crd_name, why, "stopping controller");
        let _ = running.stop.send(());
        let abort = running.task.abort_handle();
        if tokio::time::timeout(STOP_GRACE, running.task)
            .await
            .is_err()
        {
            warn!(
                kind,
                "controller did not stop within {STOP_GRACE:?}; aborting it"
            );
            abort.abort();
        }
        self.ctx.activations.forget(kind);
        self.ctx
            .metrics
            .active_controllers
            .get_or_create(&KindLabels {
                kind: kind.to_owned(),
            })
            .set(0);
    }
}

/// Whether a CRD is usable: `Established=True`, not being replaced by a
/// version we do not speak, and serving `version`.
fn is_active(crd: &CustomResourceDefinition, version: &str) -> bool {
    let established = crd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        });
    let served = crd
        .spec
        .versions
        .iter()
        .any(|v| v.name == version && v.served);
    established && served
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(established: &str, served: bool) -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": { "name": "vpcs.network.example.crossplane.io" },
            "spec": {
                "group": "network.example.crossplane.io",
                "names": { "kind": "VPC", "plural": "vpcs" },
                "scope": "Cluster",
                "versions": [{ "name": "v1alpha1", "served": served, "storage": true,
                               "schema": { "openAPIV3Schema": { "type": "object" } } }]
            },
            "status": { "conditions": [
                { "type": "NamesAccepted", "status": "True" },
                { "type": "Established", "status": established }
            ] }
        }))
        .unwrap()
    }

    #[test]
    fn active_only_when_established_and_served() {
        assert!(is_active(&crd("True", true), "v1alpha1"));
        assert!(!is_active(&crd("False", true), "v1alpha1"));
        assert!(!is_active(&crd("True", false), "v1alpha1"));
        assert!(!is_active(&crd("True", true), "v1beta1"));
    }
}
