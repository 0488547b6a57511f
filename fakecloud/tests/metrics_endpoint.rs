//! fakecloud's `/metrics`, served by a real server over a real SQLite
//! file, answers each client in the format it asks for, and what it serves
//! in the text format passes Prometheus' own linter, `promtool check
//! metrics` (Debian's `prometheus` package, installed by `scripts/setup
//! test`). Without promtool this test fails: it does not skip.

mod common;

use std::collections::BTreeSet;

use common::*;

const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What Prometheus 2.5 to 2.48 sends (Debian 12's 2.42 among them), and 3.x.
const PROMETHEUS_2: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
const PROMETHEUS_3: &str = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";

/// The sample of the one VPC created below, the same in both formats.
const CREATED_VPC: &str = r#"fakecloud_http_requests_total{method="POST",route="/v1/regions/{region}/vpcs",status="201"} 1"#;

/// GETs `/metrics` with this `Accept` (none for `None`): the Content-Type,
/// the Vary header and the body.
async fn scrape(cloud: &Cloud, accept: Option<&str>) -> (String, String, String) {
    let mut request = cloud.http.get(cloud.url("/metrics"));
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
    let cloud = Cloud::start().await;
    // Samples in both families, with several label sets: a create, a read,
    // a 404.
    let vpc = cloud.vpc("10.0.0.0/16").await;
    cloud.subnet(&vpc.id, "10.0.1.0/24").await;
    cloud.a.get_vpc(REGION, &vpc.id).await.expect("get the vpc");
    let missing = cloud
        .raw(
            reqwest::Method::GET,
            "/v1/regions/us-east-1/vpcs/vpc-none",
            "",
        )
        .await;
    assert_eq!(missing.status(), 404);

    let (content_type, vary, text) = scrape(&cloud, None).await;
    assert_eq!(content_type, TEXT);
    assert_eq!(vary, "accept");
    let families = metrics_exposition::promtool::check_text(&text);
    assert_eq!(
        families,
        BTreeSet::from([
            (
                "fakecloud_http_requests_total".to_owned(),
                "counter".to_owned()
            ),
            (
                "fakecloud_http_request_duration_seconds".to_owned(),
                "histogram".to_owned()
            ),
        ]),
        "{text}"
    );
    assert!(text.lines().any(|line| line == CREATED_VPC), "{text}");
    promtool_is_silent(&text);

    for accept in ["text/plain", "text/plain;version=0.0.4", "*/*"] {
        let (content_type, _, body) = scrape(&cloud, Some(accept)).await;
        assert_eq!(content_type, TEXT, "Accept: {accept}");
        metrics_exposition::promtool::check_text(&body);
        assert!(body.lines().any(|line| line == CREATED_VPC), "{body}");
    }

    let (content_type, vary, openmetrics) =
        scrape(&cloud, Some("application/openmetrics-text; version=1.0.0")).await;
    assert_eq!(content_type, OPENMETRICS);
    assert_eq!(vary, "accept");
    assert!(openmetrics.ends_with("# EOF\n"), "{openmetrics}");
    assert_eq!(openmetrics.matches("# EOF").count(), 1, "{openmetrics}");
    assert!(
        openmetrics.contains("# TYPE fakecloud_http_requests counter\n"),
        "{openmetrics}"
    );
    assert!(
        openmetrics.lines().any(|line| line == CREATED_VPC),
        "{openmetrics}"
    );

    for accept in [PROMETHEUS_2, PROMETHEUS_3] {
        let (content_type, _, body) = scrape(&cloud, Some(accept)).await;
        assert_eq!(content_type, OPENMETRICS, "Accept: {accept}");
        assert!(body.ends_with("# EOF\n"));
    }
    let (content_type, _, _) = scrape(&cloud, Some("application/openmetrics-text;q=0")).await;
    assert_eq!(content_type, TEXT);

    cloud.server.shutdown().await.expect("shutdown");
}

/// `promtool check metrics` reads `text` on its standard input and finds
/// nothing to report.
#[track_caller]
fn promtool_is_silent(text: &str) {
    if let Err(error) = metrics_exposition::promtool::check_metrics(text) {
        panic!("{error}\non:\n{text}");
    }
}
