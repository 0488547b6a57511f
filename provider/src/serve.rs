//! The provider's two small HTTP endpoints: `/healthz` + `/readyz` on the
//! health address, `/metrics` on the metrics address.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exposition::Format;
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

/// Serves `/metrics` on `addr`, in the format each scrape asks for (see
/// [`serve_metrics`]).
pub async fn metrics(
    addr: SocketAddr,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    serve_metrics(listener, metrics, shutdown).await
}

/// Serves `/metrics` on a bound listener (a test binds port 0 and reads
/// the port back). The format follows the request's `Accept` header
/// ([`Format::negotiate`]): OpenMetrics 1.0.0 to a client that asks for
/// it, as Prometheus does, and the text format 0.0.4 to everything else
/// (promtool, curl, a browser), as Go's promhttp answers.
pub async fn serve_metrics(
    listener: TcpListener,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(encode))
        .with_state(metrics);
    tracing::info!(addr = %listener.local_addr()?, "serving /metrics");
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn encode(State(metrics): State<Metrics>, headers: HeaderMap) -> Response {
    let format = Format::from_headers(&headers);
    match metrics.encode_as(format) {
        Ok(body) => (format.response_headers(), body).into_response(),
        Err(err) => {
            tracing::error!(%err, ?format, "encoding /metrics");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("encoding metrics: {err}\n"),
            )
                .into_response()
        }
    }
}
