//! Prometheus metrics: requests by route, method and status, and latency.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub method: String,
    /// The route template (`/v1/regions/{region}/vpcs/{id}`), not the path,
    /// so ids do not explode the label space.
    pub route: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub method: String,
    pub route: String,
}

pub struct Metrics {
    registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub latency: Family<RouteLabels, Histogram>,
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("fakecloud");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register("http_requests", "HTTP requests answered", requests.clone());
        let latency = Family::<RouteLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0005, 2.0, 14))
        });
        registry.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request",
            latency.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
        }
    }

    /// The exposition of every family in `format`, for `/metrics`: the
    /// format the scrape's `Accept` header asks for
    /// ([`metrics_exposition::Format::negotiate`]). OpenMetrics is
    /// `prometheus-client`'s own encoding; the text format is converted
    /// from it.
    pub fn encode_as(
        &self,
        format: metrics_exposition::Format,
    ) -> Result<String, metrics_exposition::Error> {
        metrics_exposition::encode(&self.registry, format)
    }
}

/// The OpenMetrics exposition of a new server's registry with one sample
/// in each family: prometheus-client leaves a family without samples out
/// (as Go's client does), and a registry cannot be listed otherwise. The
/// metrics reference (docs/reference/metrics.md, written by the e2e
/// crate's `reference-docs`) is generated from it, so it lists what
/// `/metrics` serves; the samples' values are placeholders.
pub fn metric_families() -> String {
    let metrics = Metrics::new();
    let route = RouteLabels {
        method: "GET".to_owned(),
        route: "/healthz".to_owned(),
    };
    metrics
        .requests
        .get_or_create(&RequestLabels {
            method: route.method.clone(),
            route: route.route.clone(),
            status: 200,
        })
        .inc();
    metrics.latency.get_or_create(&route).observe(0.001);
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &metrics.registry)
        .expect("writing to a String cannot fail");
    out
}
