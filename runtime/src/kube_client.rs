//! The Kubernetes client a paced provider should use, built from a
//! `kube::Config` in place of `kube::Client::try_from`. It differs from
//! kube's default client in two ways, both for the API server's pacing
//! ([`crate::cluster::Guard`]):
//!
//! - **HTTP/2, as client-go speaks it.** Requests share one connection
//!   to the API server, and watches another. kube's default client speaks
//!   HTTP/1.1, one request per connection, and its pool opens a new
//!   connection whenever a request finds none idle, even if one frees a
//!   millisecond later; none is closed for 90 s. Measured at a 1,000-VPC
//!   cold start with 64 requests in flight: about 850 connections open
//!   within a second, each with its TLS session and buffers (a heap
//!   profile put 15 MiB in their channels and read buffers alone, and the
//!   provider's RSS rose from 21 to 81 MiB). Requests in flight were
//!   bounded by the pacer; connections were not.
//! - **No retries of its own.** kube's default client sends a request
//!   answered 429, 503 or 504 again, up to 15 times, each on its own
//!   `Retry-After`. The pacer never saw those answers, so it could not
//!   pause the other callers, and every caller retried alone: the storm
//!   pacing exists to prevent. Here the answer reaches the pacer, which
//!   pauses every request and lets the reconcile back off.
//!
//! Watches go over a second connection of their own. On one connection
//! with the requests, the watch events a reconcile waits for queued
//! behind the answers to 64 requests in flight: at 10,000 VPCs, 2.14
//! reconciles per VPC found a copy older than their own last write, and
//! all were Ready after 197 s instead of 134 s over HTTP/1.1.
//!
//! Over plain `http://` (a `kubectl proxy`) it speaks HTTP/1.1, as the
//! API server offers HTTP/2 only through TLS negotiation (ALPN).

use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use hyper_rustls::{FixedServerNameResolver, HttpsConnector};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::{Client, ResponseFuture};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::{Body, ConfigExt};
use tower::{BoxError, Service, ServiceBuilder};

/// How long a connection may stay silent before it is pinged, and how long
/// the ping's answer may take before the connection is dropped (and its
/// requests fail, for the pacer to see): client-go's `ReadIdleTimeout`
/// and `PingTimeout`.
const PING_INTERVAL: Duration = Duration::from_secs(30);
const PING_TIMEOUT: Duration = Duration::from_secs(15);

/// Why no client could be made from a configuration.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Its TLS settings or credentials are unusable (a bad certificate, an
    /// unreadable token file).
    #[error("the Kubernetes configuration is unusable: {0}")]
    Config(kube::Error),
    /// Its `tls-server-name` is not a valid DNS name or IP address.
    #[error("tls-server-name {name:?} is not a valid server name")]
    ServerName {
        /// The `tls-server-name` as configured.
        name: String,
    },
}

impl From<kube::Error> for ClientError {
    fn from(error: kube::Error) -> Self {
        ClientError::Config(error)
    }
}

/// A client of the API server `config` names: HTTP/2 where the server
/// offers it, kube's authentication and headers, no retries.
pub fn build(config: kube::Config) -> Result<kube::Client, ClientError> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(config.connect_timeout);

    let tls = config.rustls_client_config()?;
    let mut https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    if let Some(name) = &config.tls_server_name {
        let server_name = name
            .clone()
            .try_into()
            .map_err(|_| ClientError::ServerName { name: name.clone() })?;
        https = https.with_server_name_resolver(FixedServerNameResolver::new(server_name));
    }
    let connector = https.enable_http1().enable_http2().wrap_connector(http);
    // Pings, as client-go sends them: a connection that every request
    // shares must not hang them all until TCP gives up on a dead peer.
    let connection = || {
        Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .http2_keep_alive_interval(PING_INTERVAL)
            .http2_keep_alive_timeout(PING_TIMEOUT)
            .build(connector.clone())
    };
    let client = Split {
        requests: connection(),
        watches: connection(),
    };

    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(client);
    Ok(kube::Client::new(service, config.default_namespace))
}

type Connection = Client<HttpsConnector<HttpConnector>, Body>;

/// Watches over one connection, every other request over another. Clone
/// because kube's auth layer clones the service it wraps (a clone shares
/// both connection pools).
#[derive(Clone)]
struct Split {
    requests: Connection,
    watches: Connection,
}

/// Whether `request` is a watch: kube asks for one with `watch=true`.
fn is_watch(request: &Request<Body>) -> bool {
    request.uri().query().is_some_and(|query| {
        query
            .split('&')
            .any(|p| p == "watch=true" || p == "watch=1")
    })
}

impl Service<Request<Body>> for Split {
    type Response = Response<hyper::body::Incoming>;
    type Error = hyper_util::client::legacy::Error;
    type Future = ResponseFuture;

    /// Both connections are always ready: hyper queues on its own.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if is_watch(&request) {
            self.watches.request(request)
        } else {
            self.requests.request(request)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// An API server that answers every request 429 with a `Retry-After`,
    /// counting the requests it gets.
    async fn throttling_server() -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let counted = counted.clone();
                tokio::spawn(async move {
                    let mut buffer = vec![0; 64 * 1024];
                    let mut read = 0;
                    // One request per read is enough for a bodiless GET.
                    while let Ok(n) = socket.read(&mut buffer[read..]).await {
                        if n == 0 {
                            return;
                        }
                        read += n;
                        if !buffer[..read].windows(4).any(|w| w == b"\r\n\r\n") {
                            continue;
                        }
                        read = 0;
                        counted.fetch_add(1, Ordering::SeqCst);
                        let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too many requests","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}"#;
                        let answer = format!(
                            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if socket.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (url, requests)
    }

    #[tokio::test]
    async fn a_throttled_request_is_answered_once_not_retried_by_the_client() {
        let (url, requests) = throttling_server().await;
        let client = build(kube::Config::new(url.parse().unwrap())).unwrap();
        let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);

        let answer = namespaces.list(&Default::default()).await;

        match answer {
            Err(kube::Error::Api(status)) => assert_eq!(status.code, 429, "{status:?}"),
            other => panic!("expected the 429 itself, got {other:?}"),
        }
        // kube's default client would have sent it up to 16 times, each
        // after the second the server asked for.
        assert_eq!(requests.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn watches_are_told_from_other_requests_by_their_query() {
        let request = |uri: &str| Request::get(uri).body(Body::empty()).unwrap();
        assert!(is_watch(&request(
            "/api/v1/namespaces?watch=true&resourceVersion=1"
        )));
        assert!(is_watch(&request(
            "/apis/g/v1/vpcs?labelSelector=a&watch=1"
        )));
        assert!(!is_watch(&request("/api/v1/namespaces?limit=500")));
        assert!(!is_watch(&request("/api/v1/namespaces/watch")));
        assert!(!is_watch(&request("/api/v1/namespaces?watch=false")));
    }

    #[test]
    fn an_invalid_tls_server_name_is_named_in_the_error() {
        let mut config = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
        config.tls_server_name = Some("not a name!".to_owned());
        match build(config) {
            Err(error) => assert!(error.to_string().contains("\"not a name!\""), "{error}"),
            Ok(_) => panic!("a client was built with an invalid tls-server-name"),
        }
    }
}
