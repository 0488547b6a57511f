//! Serves a [`prometheus_client`] registry in the exposition format the
//! scraper asks for.
//!
//! `prometheus-client` encodes only OpenMetrics 1.0.0. A `/metrics` endpoint
//! that answers OpenMetrics to everyone misleads every client that did not
//! ask for it: `promtool check metrics`, `curl`, a browser, and any scraper
//! configured for the Prometheus text format read the body as text format
//! 0.0.4, where an OpenMetrics counter family `foo` (whose sample is
//! `foo_total`) is a family with no samples and `foo_total` a family with no
//! `# HELP` or `# TYPE`. Go's `promhttp` answers text format 0.0.4 unless
//! the client asks for OpenMetrics; this crate does the same:
//!
//! - [`Format::negotiate`] reads an `Accept` header value ([`Format::from_headers`]
//!   a request's headers) and picks [`Format::OpenMetrics`] only when the
//!   client names `application/openmetrics-text` and prefers it at least as
//!   much as `text/plain`, as Prometheus' own scrapes do; everything else,
//!   no header included, gets [`Format::Text`].
//! - [`encode`] writes a registry in either format, the text format by
//!   converting the OpenMetrics encoding ([`openmetrics_to_text`]).
//!
//! ```
//! use metrics_exposition::{Format, encode};
//! use prometheus_client::metrics::counter::Counter;
//! use prometheus_client::registry::Registry;
//!
//! let mut registry = Registry::default();
//! let requests: Counter = Counter::default();
//! registry.register("requests", "Requests answered", requests.clone());
//! requests.inc();
//!
//! let format = Format::negotiate("text/plain");
//! assert_eq!(format.content_type(), "text/plain; version=0.0.4; charset=utf-8");
//! let body = encode(&registry, format)?;
//! let expected = [
//!     "# HELP requests_total Requests answered.",
//!     "# TYPE requests_total counter",
//!     "requests_total 1",
//! ];
//! assert_eq!(body.lines().collect::<Vec<_>>(), expected);
//! # Ok::<(), metrics_exposition::Error>(())
//! ```

mod negotiate;
#[cfg(feature = "promtool")]
pub mod promtool;
mod text;

pub use text::openmetrics_to_text;

use prometheus_client::registry::Registry;

/// The content type of [`Format::OpenMetrics`].
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of [`Format::Text`].
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// An exposition format a `/metrics` endpoint answers in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Format {
    /// The Prometheus text format 0.0.4: what every Prometheus tool reads,
    /// and the answer to a client that does not ask for OpenMetrics.
    #[default]
    Text,
    /// OpenMetrics 1.0.0, `prometheus-client`'s own encoding: what
    /// Prometheus asks for first when it scrapes.
    OpenMetrics,
}

impl Format {
    /// The format to answer a request whose `Accept` header is `accept`
    /// (the header's value, or several values joined by commas).
    ///
    /// [`Format::OpenMetrics`] when a media range names
    /// `application/openmetrics-text` (with no `version`, `version=1.0.0`,
    /// or `version=0.0.1`, whose syntax is the same for everything
    /// `prometheus-client` writes) with a q-value above 0 and at least that
    /// of the best range that matches `text/plain` (`text/plain` itself,
    /// `text/*` or `*/*`); otherwise [`Format::Text`], also when nothing is
    /// acceptable: as in Go's `promhttp`, the text format is the answer of
    /// last resort, never `406 Not Acceptable`. A wildcard alone never
    /// selects OpenMetrics: `curl` and browsers send `*/*`.
    ///
    /// Prometheus' scrapes ask for OpenMetrics first and get it, from
    /// `application/openmetrics-text;version=1.0.0,...;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1`
    /// (before 2.49) to
    /// `application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,...,text/plain;version=0.0.4;q=0.3,*/*;q=0.2`
    /// (3.x). Unlike Go's `expfmt.NegotiateIncludingOpenMetrics`, a range
    /// with `q=0` is refused rather than merely sorted last.
    pub fn negotiate(accept: &str) -> Format {
        negotiate::negotiate(accept)
    }

    /// The format to answer a request with these headers: every `Accept`
    /// header read as one list, and [`Format::Text`] without any. A value
    /// that is not visible ASCII is ignored.
    pub fn from_headers(headers: &http::HeaderMap) -> Format {
        let values: Vec<&str> = headers
            .get_all(http::header::ACCEPT)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .collect();
        Format::negotiate(&values.join(","))
    }

    /// The `Content-Type` of a body in this format.
    pub const fn content_type(self) -> &'static str {
        match self {
            Format::Text => TEXT_CONTENT_TYPE,
            Format::OpenMetrics => OPENMETRICS_CONTENT_TYPE,
        }
    }

    /// [`Format::content_type`] as a header value.
    pub fn header_value(self) -> http::HeaderValue {
        http::HeaderValue::from_static(self.content_type())
    }

    /// The headers of a `/metrics` answer in this format: its
    /// `Content-Type`, and `Vary: accept`, since the body depends on the
    /// request's `Accept` and a cache must not serve one client's format to
    /// another.
    pub fn response_headers(self) -> [(http::HeaderName, http::HeaderValue); 2] {
        [
            (http::header::CONTENT_TYPE, self.header_value()),
            (http::header::VARY, http::HeaderValue::from_static("accept")),
        ]
    }
}

/// Why a registry could not be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `prometheus-client` failed to encode the registry: a collector
    /// returned an error, or a native-only histogram has no text form.
    #[error("encoding the registry failed (a collector or a metric returned an error)")]
    Encode(#[from] std::fmt::Error),
    /// The OpenMetrics input to [`openmetrics_to_text`] does not follow the
    /// OpenMetrics text format at this line (1-based).
    #[error("OpenMetrics line {line}: {reason}: {text:?}")]
    Malformed {
        line: usize,
        text: String,
        reason: &'static str,
    },
    /// A family whose OpenMetrics type the text format has no faithful
    /// form for (`gaugehistogram`: its buckets are not monotonic, so as a
    /// `histogram` its rates would be wrong). `prometheus-client` 0.25
    /// writes none.
    #[error(
        "metric family {family:?} is of type {kind}, which the text format 0.0.4 cannot express"
    )]
    Unsupported { family: String, kind: String },
    /// Two families would have the same name in the text format (a counter
    /// `foo` and a gauge `foo_total`, or samples of a family apart from its
    /// metadata): the text format's parsers reject the second.
    #[error("two metric families would be named {name:?} in the text format")]
    DuplicateFamily { name: String },
}

/// The exposition of every family in `registry`, in `format`.
pub fn encode(registry: &Registry, format: Format) -> Result<String, Error> {
    let mut openmetrics = String::new();
    prometheus_client::encoding::text::encode(&mut openmetrics, registry)?;
    match format {
        Format::OpenMetrics => Ok(openmetrics),
        Format::Text => openmetrics_to_text(&openmetrics),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use prometheus_client::encoding::EncodeLabelSet;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::exemplar::CounterWithExemplar;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::metrics::info::Info;
    use prometheus_client::registry::Unit;

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct Labels {
        method: String,
        status: u16,
    }

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct TraceLabels {
        trace_id: String,
    }

    /// A registry with a counter, a labelled counter family, a gauge, a
    /// histogram, an info metric, a counter with a unit, a counter with an
    /// exemplar and a prefixed sub-registry.
    fn registry() -> Registry {
        let mut registry = Registry::default();
        let counter: Counter = Counter::default();
        counter.inc_by(3);
        registry.register("jobs", "Jobs run", counter);
        let family = Family::<Labels, Counter>::default();
        family
            .get_or_create(&Labels {
                method: "GET".into(),
                status: 200,
            })
            .inc();
        family
            .get_or_create(&Labels {
                method: "POST".into(),
                status: 201,
            })
            .inc_by(2);
        registry.register("http_requests", "HTTP requests answered", family);
        let gauge: Gauge = Gauge::default();
        gauge.set(-4);
        registry.register("queue_depth", "Items waiting", gauge);
        let histogram = Histogram::new([0.1, 1.0]);
        histogram.observe(0.05);
        histogram.observe(0.5);
        histogram.observe(5.0);
        registry.register("latency_seconds", "Time to answer", histogram);
        registry.register(
            "build",
            "The build",
            Info::new(vec![("version".to_owned(), "1.2.3".to_owned())]),
        );
        let cpu: Counter<f64, std::sync::atomic::AtomicU64> = Counter::default();
        cpu.inc_by(1.5);
        registry.register_with_unit("cpu", "CPU time", Unit::Seconds, cpu);
        let traced = CounterWithExemplar::<TraceLabels>::default();
        traced.inc_by(
            1,
            Some(TraceLabels {
                trace_id: "abc".into(),
            }),
            None,
        );
        registry.register("traced", "Counted with an exemplar", traced);
        let sub = registry.sub_registry_with_prefix("sub");
        let nested: Counter = Counter::default();
        sub.register("events", "Events seen", nested);
        registry
    }

    #[test]
    fn openmetrics_is_prometheus_clients_own_encoding() {
        let registry = registry();
        let mut expected = String::new();
        prometheus_client::encoding::text::encode(&mut expected, &registry).unwrap();
        let body = encode(&registry, Format::OpenMetrics).unwrap();
        assert_eq!(body, expected);
        assert!(body.ends_with("# EOF\n"), "{body}");
        assert!(body.contains("# TYPE jobs counter\n"), "{body}");
    }

    #[test]
    fn text_renames_counters_infos_and_drops_units_exemplars_and_eof() {
        let body = encode(&registry(), Format::Text).unwrap();
        let expected = "\
# HELP jobs_total Jobs run.
# TYPE jobs_total counter
jobs_total 3
# HELP http_requests_total HTTP requests answered.
# TYPE http_requests_total counter
http_requests_total{method=\"GET\",status=\"200\"} 1
http_requests_total{method=\"POST\",status=\"201\"} 2
# HELP queue_depth Items waiting.
# TYPE queue_depth gauge
queue_depth -4
# HELP latency_seconds Time to answer.
# TYPE latency_seconds histogram
latency_seconds_sum 5.55
latency_seconds_count 3
latency_seconds_bucket{le=\"0.1\"} 1
latency_seconds_bucket{le=\"1.0\"} 2
latency_seconds_bucket{le=\"+Inf\"} 3
# HELP build_info The build.
# TYPE build_info gauge
build_info{version=\"1.2.3\"} 1
# HELP cpu_seconds_total CPU time.
# TYPE cpu_seconds_total counter
cpu_seconds_total 1.5
# HELP traced_total Counted with an exemplar.
# TYPE traced_total counter
traced_total 1
# HELP sub_events_total Events seen.
# TYPE sub_events_total counter
sub_events_total 0
";
        // The families may come in any order from a family of counters
        // (a HashMap): compare sorted lines per family instead of the text.
        assert_eq!(families(&body), families(expected), "{body}");
    }

    /// Each family's header and its samples, sorted, keyed by name.
    fn families(text: &str) -> std::collections::BTreeMap<String, Vec<String>> {
        let mut out = std::collections::BTreeMap::<String, Vec<String>>::new();
        let mut current = String::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                current = rest.split(' ').next().unwrap_or_default().to_owned();
            }
            out.entry(current.clone())
                .or_default()
                .push(line.to_owned());
        }
        for lines in out.values_mut() {
            // Header first, in order; then the samples sorted.
            let samples = lines.split_off(2.min(lines.len()));
            let mut samples = samples;
            samples.sort();
            lines.extend(samples);
        }
        out
    }

    #[test]
    fn text_keeps_every_sample_of_the_openmetrics_encoding() {
        let registry = registry();
        let om = encode(&registry, Format::OpenMetrics).unwrap();
        let text = encode(&registry, Format::Text).unwrap();
        let samples = |body: &str| -> Vec<String> {
            let mut samples: Vec<String> = body
                .lines()
                .filter(|line| !line.starts_with('#'))
                .map(|line| line.split(" # ").next().unwrap_or(line).to_owned())
                .collect();
            samples.sort();
            samples
        };
        assert_eq!(samples(&om), samples(&text));
        assert!(!text.contains("# EOF"), "{text}");
        assert!(!text.contains("# UNIT"), "{text}");
        assert!(!text.contains("trace_id"), "{text}");
    }

    #[test]
    fn every_text_sample_follows_its_familys_help_and_type() {
        let text = encode(&registry(), Format::Text).unwrap();
        let mut family: Option<(String, String)> = None;
        let mut seen = std::collections::HashSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let name = rest.split(' ').next().unwrap().to_owned();
                assert!(seen.insert(name.clone()), "{name} twice in {text}");
                family = Some((name, String::new()));
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                let (current, current_kind) = family.as_mut().unwrap();
                assert_eq!(name, current, "{text}");
                *current_kind = kind.to_owned();
            } else {
                let (name, kind) = family.as_ref().expect("a sample before any family");
                let sample = line.split(['{', ' ']).next().unwrap();
                let belongs = match kind.as_str() {
                    "histogram" => ["_bucket", "_count", "_sum"]
                        .iter()
                        .any(|s| sample.strip_suffix(s) == Some(name.as_str())),
                    _ => sample == name,
                };
                assert!(
                    belongs,
                    "{sample} is not of family {name} ({kind}) in {text}"
                );
            }
        }
    }

    #[test]
    fn an_empty_registry_is_an_empty_text_body() {
        let registry = Registry::default();
        assert_eq!(encode(&registry, Format::Text).unwrap(), "");
        assert_eq!(encode(&registry, Format::OpenMetrics).unwrap(), "# EOF\n");
    }

    #[test]
    fn content_types_are_promhttps() {
        assert_eq!(
            Format::Text.content_type(),
            "text/plain; version=0.0.4; charset=utf-8"
        );
        assert_eq!(
            Format::OpenMetrics.content_type(),
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
        assert_eq!(Format::OpenMetrics.header_value(), OPENMETRICS_CONTENT_TYPE);
    }

    #[test]
    fn headers_are_read_as_one_list() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(Format::from_headers(&headers), Format::Text);
        headers.append(http::header::ACCEPT, "text/plain;q=0.5".parse().unwrap());
        assert_eq!(Format::from_headers(&headers), Format::Text);
        headers.append(
            http::header::ACCEPT,
            "application/openmetrics-text".parse().unwrap(),
        );
        assert_eq!(Format::from_headers(&headers), Format::OpenMetrics);
        let mut opaque = http::HeaderMap::new();
        opaque.insert(
            http::header::ACCEPT,
            http::HeaderValue::from_bytes(b"application/openmetrics-text;x=\xff").unwrap(),
        );
        assert_eq!(Format::from_headers(&opaque), Format::Text);
    }
}
