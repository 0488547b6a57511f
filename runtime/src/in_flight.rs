//! Requests in flight are finished, not cancelled.
//!
//! Dropping a kube request's future while it is in flight cancels it, and
//! the API server counts each one so cancelled as a 500 (`context
//! canceled`). Work that stops at once when its replica stops leading
//! (the sharding assigner, the leader Lease's renewal) runs its writes
//! through [`finished`], so that stopping leaves them to end. At 100,000
//! VPCs the assigner's writes cancelled at changes of leader were 108
//! answers 5xx, in five bursts of up to 32.

use std::future::Future;

/// Runs `request` to its end on a task of its own, even if the caller
/// stops waiting for it. Returns `None` only if that task panicked.
pub(crate) async fn finished<T: Send + 'static>(
    request: impl Future<Output = T> + Send + 'static,
) -> Option<T> {
    tokio::spawn(request).await.ok()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Api;
    use kube::api::{Patch, PatchParams};
    use serde_json::json;

    use super::finished;

    #[tokio::test(start_paused = true)]
    async fn a_write_in_flight_is_finished_when_its_caller_stops_waiting() {
        // A server that answers each request after 100 ms, and counts the
        // requests it answered: one cancelled in flight is never answered.
        let answered = Arc::new(AtomicUsize::new(0));
        let counter = answered.clone();
        let service = tower::service_fn(move |_: http::Request<kube::client::Body>| {
            let counter = counter.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                counter.fetch_add(1, Ordering::SeqCst);
                let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "a", "namespace": "ns"}});
                Ok::<_, std::convert::Infallible>(http::Response::new(http_body_util::Full::new(
                    hyper::body::Bytes::from(body.to_string()),
                )))
            }
        });
        let client = kube::Client::new(service, "ns");
        let write = |api: Api<ConfigMap>| async move {
            let patch = json!({"metadata": {"labels": {"shard": "a"}}});
            api.patch_metadata("a", &PatchParams::default(), &Patch::Merge(&patch))
                .await
        };
        // The caller stops 10 ms into each write.
        let stopped = Duration::from_millis(10);
        let cut =
            tokio::time::timeout(stopped, write(Api::default_namespaced(client.clone()))).await;
        assert!(cut.is_err());
        let kept =
            tokio::time::timeout(stopped, finished(write(Api::default_namespaced(client)))).await;
        assert!(kept.is_err());
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            answered.load(Ordering::SeqCst),
            1,
            "only the write run by `finished` reached its answer"
        );
    }
}
