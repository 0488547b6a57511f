//! The provider's real `/metrics` server, over TCP, answers each client in
//! the format it asks for, and what it serves in the text format passes
//! Prometheus' own linter, `promtool check metrics` (Debian's `prometheus`
//! package, installed by `scripts/setup test`). Without promtool this test
//! fails: it does not skip.

use std::time::Duration;

use runtime::metrics::standard::format_gvk;
use runtime::metrics::{
    ChangeLogErrorLabels, KindLabels, LaneLabels, Metrics, PacingAnswerLabels, PacingLabels,
};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What Prometheus 2.49 to 2.55 sends, and 3.x.
const PROMETHEUS_2: &str = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
const PROMETHEUS_3: &str = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";

/// A registry with something recorded in every family, through the
/// recording methods where the runtime has one.
fn recorded() -> Metrics {
    let metrics = Metrics::new();
    let kind = "VPC";
    let gvk = format_gvk("network.fakecloud.m.crossplane.io", "v1alpha1", kind);
    let controller = "managed/vpc.network.fakecloud.m.crossplane.io";
    let created = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(30);

    metrics.record_reconcile(kind, "success", Duration::from_millis(12));
    metrics.record_reconcile(kind, "error", Duration::from_millis(40));
    metrics.record_cloud_call(kind, "observe", "200");
    metrics.record_time_to_ready(kind, 3.5);
    metrics.kube_write(kind, "status");
    let by_kind = KindLabels { kind: kind.into() };
    metrics.active_controllers.get_or_create(&by_kind).set(1);
    metrics
        .activation_latency
        .get_or_create(&by_kind)
        .observe(0.2);
    metrics
        .drift_correction
        .get_or_create(&by_kind)
        .observe(61.0);
    let poll = LaneLabels {
        lane: "poll".into(),
    };
    metrics.rate_limit_slots.get_or_create(&poll).inc();
    metrics.rate_limit_waiting.get_or_create(&poll).set(2);
    metrics
        .changelog_errors
        .get_or_create(&ChangeLogErrorLabels {
            reason: "send".into(),
        })
        .inc();
    let server = PacingLabels {
        server: "kube-apiserver".into(),
    };
    metrics.pacing_rate.get_or_create(&server).set(12.5);
    metrics.pacing_in_flight.get_or_create(&server).set(4);
    metrics
        .pacing_answers
        .get_or_create(&PacingAnswerLabels {
            server: "kube-apiserver".into(),
            answer: "throttled".into(),
        })
        .inc();
    metrics.pacing_wait.get_or_create(&server).inc_by(0.25);
    metrics.pacing_deferred.get_or_create(&server).inc();

    let standard = &metrics.standard;
    standard.reconcile_started(&gvk, "uid-1", false, Some(created));
    standard.reconcile_ended(&gvk, "uid-1", (true, true), Some(created));
    standard.observed(&gvk, "uid-1", false);
    standard.observed(&gvk, "uid-1", true);
    standard.arrived(controller, "uid-1", true);
    standard.reconciled(controller, "success", true, Duration::from_millis(12));
    standard.reconciled(controller, "error", false, Duration::from_millis(40));
    standard.finalizer_removed(&gvk, "uid-2", Some(created));
    metrics
}

struct Server {
    url: String,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn serve(metrics: Metrics) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/metrics", listener.local_addr().expect("addr"));
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(provider::serve::serve_metrics(
        listener,
        metrics,
        async move {
            let _ = stopped.await;
        },
    ));
    Server { url, stop, task }
}

/// GETs `url` with this `Accept` (none for `None`): the Content-Type, the
/// Vary header and the body.
async fn scrape(url: &str, accept: Option<&str>) -> (String, String, String) {
    let mut request = reqwest::Client::new().get(url);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let response = request.send().await.expect("GET /metrics");
    assert_eq!(response.status(), 200, "Accept: {accept:?}");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let (content_type, vary) = (header("content-type"), header("vary"));
    let body = response.text().await.expect("body");
    (content_type, vary, body)
}

#[tokio::test]
async fn metrics_endpoint_negotiates_and_its_text_passes_promtool() {
    let server = serve(recorded()).await;

    let (content_type, vary, text) = scrape(&server.url, None).await;
    assert_eq!(content_type, TEXT);
    assert_eq!(vary, "accept");
    let families = metrics_exposition::promtool::check_text(&text);
    for (family, kind) in [
        ("provider_reconciles_total", "counter"),
        ("provider_pacing_wait_seconds_total", "counter"),
        ("provider_reconcile_duration_seconds", "histogram"),
        ("provider_pacing_rate", "gauge"),
        ("controller_runtime_reconcile_total", "counter"),
        ("workqueue_adds_total", "counter"),
        ("crossplane_managed_resource_exists", "gauge"),
        ("process_cpu_seconds_total", "counter"),
        ("process_resident_memory_bytes", "gauge"),
    ] {
        assert!(
            families.contains(&(family.to_owned(), kind.to_owned())),
            "no {kind} {family} in:\n{text}"
        );
    }
    promtool_is_silent(&text);

    for accept in ["text/plain", "text/plain;version=0.0.4", "*/*"] {
        let (content_type, _, body) = scrape(&server.url, Some(accept)).await;
        assert_eq!(content_type, TEXT, "Accept: {accept}");
        assert_eq!(without_process(&body), without_process(&text));
    }

    let (content_type, vary, openmetrics) = scrape(
        &server.url,
        Some("application/openmetrics-text; version=1.0.0"),
    )
    .await;
    assert_eq!(content_type, OPENMETRICS);
    assert_eq!(vary, "accept");
    assert!(openmetrics.ends_with("# EOF\n"), "{openmetrics}");
    assert_eq!(openmetrics.matches("# EOF").count(), 1, "{openmetrics}");
    assert!(
        openmetrics.contains("# TYPE provider_reconciles counter\n"),
        "{openmetrics}"
    );
    // The same samples in both formats (the process's own figures move
    // between scrapes).
    assert_eq!(samples(&openmetrics), samples(&text));

    for accept in [PROMETHEUS_2, PROMETHEUS_3] {
        let (content_type, _, body) = scrape(&server.url, Some(accept)).await;
        assert_eq!(content_type, OPENMETRICS, "Accept: {accept}");
        assert!(body.ends_with("# EOF\n"));
    }
    let (content_type, _, _) = scrape(&server.url, Some("application/openmetrics-text;q=0")).await;
    assert_eq!(content_type, TEXT);

    let _ = server.stop.send(());
    server
        .task
        .await
        .expect("server task")
        .expect("server ends cleanly");
}

/// `promtool check metrics` reads `text` on its standard input and finds
/// nothing to report.
#[track_caller]
fn promtool_is_silent(text: &str) {
    if let Err(error) = metrics_exposition::promtool::check_metrics(text) {
        panic!("{error}\non:\n{text}");
    }
}

/// The sample lines, sorted, without exemplars and without the process's
/// own figures.
fn samples(body: &str) -> Vec<String> {
    let mut samples: Vec<String> = without_process(body)
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.split(" # ").next().unwrap_or(line).to_owned())
        .collect();
    samples.sort();
    samples
}

fn without_process(body: &str) -> String {
    body.lines()
        .filter(|line| {
            !line.starts_with("process_")
                && !line.starts_with("# HELP process_")
                && !line.starts_with("# TYPE process_")
        })
        .map(|line| format!("{line}\n"))
        .collect()
}
