//! The provider's two small HTTP endpoints: `/healthz` + `/readyz` on the
//! health address, `/metrics` on the metrics address.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::watch;

use runtime::metrics::Metrics;

/// Serves `/healthz` (the process runs) and `/readyz` (the CRD gate has
/// listed CRDs once, so controllers are where they should be).
pub async fn health(
    addr: SocketAddr,
    ready: watch::Receiver<bool>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(ready);
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "serving /healthz and /readyz");
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn readyz(State(ready): State<watch::Receiver<bool>>) -> (StatusCode, &'static str) {
    if *ready.borrow() {
        (StatusCode::OK, "ok")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "CRD gate has not listed CRDs yet",
        )
    }
}

/// Serves `/metrics` in the OpenMetrics text format.
pub async fn metrics(
    addr: SocketAddr,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(encode))
        .with_state(metrics);
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "serving /metrics");
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn encode(State(metrics): State<Metrics>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.encode(),
    )
}
