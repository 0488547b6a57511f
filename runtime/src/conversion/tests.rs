use crossplane_types::conversion::{FieldMove, KindVersions, VersionStep};
use serde_json::{Value, json};

use super::*;

static WIDGET: KindVersions = KindVersions {
    group: "example.org",
    kind: "Widget",
    oldest: "v1alpha1",
    steps: &[VersionStep {
        older: "v1alpha1",
        newer: "v1beta1",
        moves: &[FieldMove {
            older: "/size",
            newer: "/dimensions/size",
        }],
    }],
};

fn conversions() -> (Conversions, Metrics) {
    let metrics = Metrics::new();
    (Conversions::new([&WIDGET], &metrics), metrics)
}

fn review(desired: &str, objects: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u-1", "desiredAPIVersion": desired, "objects": objects},
    }))
    .unwrap()
}

fn widget(version: &str, for_provider: Value) -> Value {
    json!({
        "apiVersion": format!("example.org/{version}"),
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "n"},
        "spec": {"forProvider": for_provider},
    })
}

fn answer_json(conversions: &Conversions, body: &[u8]) -> Value {
    serde_json::to_value(conversions.answer(body)).unwrap()
}

#[test]
fn a_review_is_answered_with_its_objects_converted_in_order() {
    let (conversions, metrics) = conversions();
    let body = review(
        "example.org/v1beta1",
        vec![
            widget("v1alpha1", json!({"size": 1})),
            widget("v1beta1", json!({"dimensions": {"size": 2}})),
        ],
    );
    let answer = answer_json(&conversions, &body);
    assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(answer["kind"], "ConversionReview");
    let response = &answer["response"];
    assert_eq!(response["uid"], "u-1");
    assert_eq!(response["result"]["status"], "Success");
    assert_eq!(
        response["convertedObjects"],
        json!([
            widget("v1beta1", json!({"dimensions": {"size": 1}})),
            widget("v1beta1", json!({"dimensions": {"size": 2}})),
        ])
    );
    assert_eq!(metrics.total("provider_conversion_objects_total"), 2.0);
    assert_eq!(
        metrics.total_with(
            "provider_conversion_reviews_total",
            &[("desired", "example.org/v1beta1"), ("result", "success")]
        ),
        1.0
    );
}

#[test]
fn an_object_of_an_undeclared_kind_fails_the_review_with_its_name() {
    let (conversions, metrics) = conversions();
    let mut other = widget("v1alpha1", json!({}));
    other["kind"] = json!("Gadget");
    let body = review(
        "example.org/v1beta1",
        vec![widget("v1alpha1", json!({})), other],
    );
    let response = answer_json(&conversions, &body)["response"].clone();
    assert_eq!(response["uid"], "u-1");
    assert_eq!(response["result"]["status"], "Failure");
    let message = response["result"]["message"].as_str().unwrap();
    assert!(
        message.contains("object 1 (n/w)") && message.contains("Gadget"),
        "{message}"
    );
    assert_eq!(response["convertedObjects"], json!([]));
    assert_eq!(
        metrics.total_with(
            "provider_conversion_reviews_total",
            &[("result", "failure")]
        ),
        1.0
    );
}

#[test]
fn an_unknown_version_fails_with_the_versions_there_are() {
    let (conversions, _) = conversions();
    let body = review("example.org/v2", vec![widget("v1alpha1", json!({}))]);
    let response = answer_json(&conversions, &body)["response"].clone();
    let message = response["result"]["message"].as_str().unwrap();
    assert!(
        message.contains("no version v2") && message.contains("v1alpha1, v1beta1"),
        "{message}"
    );
}

#[test]
fn a_body_that_is_not_a_review_fails_without_a_panic() {
    let (conversions, metrics) = conversions();
    for body in [
        &b"not json"[..],
        br#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}"#,
        br#"{"request": 3}"#,
    ] {
        let response = answer_json(&conversions, body)["response"].clone();
        assert_eq!(response["result"]["status"], "Failure", "{response}");
        assert!(
            response["result"]["message"]
                .as_str()
                .unwrap()
                .starts_with("cannot read the ConversionReview"),
            "{response}"
        );
    }
    assert_eq!(
        metrics.total_with(
            "provider_conversion_reviews_total",
            &[("desired", "unknown")]
        ),
        3.0
    );
}

#[cfg(feature = "rustls-tls")]
mod over_tls {
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    use hyper_util::rt::TokioIo;
    use rcgen::{CertificateParams, KeyPair};
    use tokio::net::TcpStream;
    use tokio_rustls::TlsConnector;
    use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
    use tokio_rustls::rustls::{ClientConfig, RootCertStore, crypto::ring};

    use super::*;
    use crate::conversion::{Webhook, WebhookSettings};

    /// A self-signed certificate for `127.0.0.1`, written as a TLS Secret
    /// is mounted; returns its DER.
    fn write_certificate(dir: &Path) -> CertificateDer<'static> {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
        cert.der().clone()
    }

    async fn post(
        addr: std::net::SocketAddr,
        ca: &CertificateDer<'static>,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(u16, Value), String> {
        let mut roots = RootCertStore::empty();
        roots.add(ca.clone()).unwrap();
        let config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let tls = TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let request = http::Request::post(path)
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let json = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        Ok((status, json))
    }

    #[tokio::test]
    async fn reviews_are_answered_over_tls_and_a_renewed_certificate_is_served() {
        let dir = tempfile_dir();
        let first = write_certificate(&dir);
        let (conversions, _) = conversions();
        let webhook = Webhook::bind(
            conversions,
            &WebhookSettings {
                addr: "127.0.0.1:0".parse().unwrap(),
                cert_dir: dir.clone(),
            },
        )
        .await
        .unwrap();
        let addr = webhook.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(webhook.run(async {
            let _ = stopped.await;
        }));

        let body = review(
            "example.org/v1beta1",
            vec![widget("v1alpha1", json!({"size": 3}))],
        );
        let (status, answer) = post(addr, &first, "/convert", body.clone()).await.unwrap();
        assert_eq!(status, 200);
        assert_eq!(
            answer["response"]["convertedObjects"][0]["spec"]["forProvider"],
            json!({"dimensions": {"size": 3}})
        );
        let (status, _) = post(addr, &first, "/other", body.clone()).await.unwrap();
        assert_eq!(status, 404);

        // A renewal: the new certificate is served on new connections, and
        // a client trusting only the old one is refused.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let second = write_certificate(&dir);
        let mut served_second = false;
        for _ in 0..30 {
            if post(addr, &second, "/convert", body.clone()).await.is_ok() {
                served_second = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(served_second, "the renewed certificate was never served");
        let refused = post(addr, &first, "/convert", body.clone()).await;
        assert!(refused.is_err(), "the old certificate is still served");

        // A renewal that cannot be read keeps the last good one.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        std::fs::write(dir.join("tls.crt"), "not a certificate").unwrap();
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let (status, _) = post(addr, &second, "/convert", body).await.unwrap();
        assert_eq!(status, 200);

        stop.send(()).unwrap();
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_missing_or_mismatched_certificate_fails_at_bind() {
        let dir = tempfile_dir();
        let settings = WebhookSettings {
            addr: "127.0.0.1:0".parse().unwrap(),
            cert_dir: dir.clone(),
        };
        let error = Webhook::bind(conversions().0, &settings)
            .await
            .err()
            .unwrap();
        assert!(error.to_string().contains("tls.crt"), "{error}");
        write_certificate(&dir);
        let other = KeyPair::generate().unwrap();
        std::fs::write(dir.join("tls.key"), other.serialize_pem()).unwrap();
        let error = Webhook::bind(conversions().0, &settings)
            .await
            .err()
            .unwrap();
        assert!(error.to_string().contains("do not match"), "{error}");
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "webhook-test-{}-{}",
            std::process::id(),
            rand::random::<u64>()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
