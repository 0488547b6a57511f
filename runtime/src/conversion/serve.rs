//! `/convert` over TLS: the conversion webhook's server.
//!
//! Crossplane's package manager makes a serving certificate for each
//! provider, mounts it where `WEBHOOK_TLS_CERT_DIR` says (`tls.crt`,
//! `tls.key`), points the CRDs' conversion at the provider's Service on
//! port 9443 and gives them the certificate as their CA bundle. The files
//! are read at start and again when they change (Kubernetes swaps a
//! mounted Secret's files in place), checked at most once a second on a
//! new connection, so a renewed certificate is served without a restart;
//! a renewal that cannot be read keeps the one that could, and says so.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::{self, ServerConfig};

use super::Conversions;

/// The certificate's file in the folder, as Kubernetes names a TLS Secret's keys.
const CERT_FILE: &str = "tls.crt";
/// The key's file in the folder.
const KEY_FILE: &str = "tls.key";
/// The path the CRDs' conversion calls.
pub const CONVERT_PATH: &str = "/convert";
/// The largest review body read: the API server converts whole lists.
const MAX_BODY: usize = 64 << 20;
/// How often a new connection may look at the files again.
const RECHECK: Duration = Duration::from_secs(1);

/// Where the webhook listens and finds its certificate.
#[derive(Clone, Debug)]
pub struct WebhookSettings {
    /// The address to listen on; in a pod, every interface (the API server
    /// comes through the provider's Service).
    pub addr: SocketAddr,
    /// The folder holding `tls.crt` and `tls.key` (`WEBHOOK_TLS_CERT_DIR`).
    pub cert_dir: PathBuf,
}

/// Why the webhook could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The certificate or key could not be read or used.
    #[error("cannot use the webhook certificate in {dir}: {reason}")]
    Certificate {
        /// The folder.
        dir: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// The conversion webhook, bound and with its certificate read: [`Webhook::run`]
/// serves it.
pub struct Webhook {
    conversions: Arc<Conversions>,
    acceptor: TlsAcceptor,
    listener: TcpListener,
}

impl Webhook {
    /// Reads the certificate and binds the address; fails at once if
    /// either cannot be done, so a provider that cannot serve conversions
    /// says so at start rather than at the API server's first call.
    pub async fn bind(
        conversions: Conversions,
        settings: &WebhookSettings,
    ) -> Result<Self, ServeError> {
        let resolver = Arc::new(ReloadingCert::load(&settings.cert_dir)?);
        let mut config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| ServeError::Certificate {
                dir: settings.cert_dir.clone(),
                reason: e.to_string(),
            })?
            .with_no_client_auth()
            .with_cert_resolver(resolver);
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let listener =
            TcpListener::bind(settings.addr)
                .await
                .map_err(|source| ServeError::Bind {
                    addr: settings.addr,
                    source,
                })?;
        tracing::info!(
            addr = %listener.local_addr().unwrap_or(settings.addr),
            dir = %settings.cert_dir.display(),
            "serving the conversion webhook"
        );
        Ok(Self {
            conversions: Arc::new(conversions),
            acceptor: TlsAcceptor::from(Arc::new(config)),
            listener,
        })
    }

    /// The address it listens on (a test binds port 0 and reads it back).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves `/convert` until `shutdown` resolves, then closes every
    /// connection (the API server keeps them open between reviews); a
    /// connection's failure is logged and the server goes on.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) {
        tokio::pin!(shutdown);
        let mut connections = tokio::task::JoinSet::new();
        loop {
            // Reap the connections that ended, so the set stays small.
            while connections.try_join_next().is_some() {}
            let (stream, peer) = tokio::select! {
                () = &mut shutdown => {
                    connections.abort_all();
                    return;
                }
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "accepting a webhook connection failed");
                        continue;
                    }
                },
            };
            let (acceptor, conversions) = (self.acceptor.clone(), self.conversions.clone());
            connections.spawn(async move {
                let tls = match acceptor.accept(stream).await {
                    Ok(tls) => tls,
                    Err(error) => {
                        tracing::debug!(%error, %peer, "webhook TLS handshake failed");
                        return;
                    }
                };
                let service = service_fn(move |request| handle(conversions.clone(), request));
                if let Err(error) = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await
                {
                    tracing::debug!(%error, %peer, "webhook connection ended with an error");
                }
            });
        }
    }
}

/// One request: a review on `POST /convert`, anything else refused.
async fn handle(
    conversions: Arc<Conversions>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let plain = |status: StatusCode, text: &str| {
        let mut response = Response::new(Full::new(Bytes::from(text.to_owned())));
        *response.status_mut() = status;
        response
    };
    if request.uri().path() != CONVERT_PATH {
        return Ok(plain(
            StatusCode::NOT_FOUND,
            "not found; reviews go to /convert",
        ));
    }
    if request.method() != Method::POST {
        return Ok(plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "POST a ConversionReview",
        ));
    }
    let body = match Limited::new(request.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(error) => {
            return Ok(plain(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the review: {error}"),
            ));
        }
    };
    let review = conversions.answer(&body);
    let json = serde_json::to_vec(&review).expect("a ConversionReview always serializes");
    let mut response = Response::new(Full::new(Bytes::from(json)));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// The serving certificate, read again when its files change.
#[derive(Debug)]
struct ReloadingCert {
    dir: PathBuf,
    current: Mutex<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    key: Arc<CertifiedKey>,
    modified: (Option<SystemTime>, Option<SystemTime>),
    checked: Instant,
}

impl ReloadingCert {
    fn load(dir: &Path) -> Result<Self, ServeError> {
        let key = read_certified_key(dir)?;
        Ok(Self {
            dir: dir.to_owned(),
            current: Mutex::new(Loaded {
                key: Arc::new(key),
                modified: modified(dir),
                checked: Instant::now(),
            }),
        })
    }

    /// The certificate to serve, reloaded first if its files changed.
    fn current(&self) -> Arc<CertifiedKey> {
        let mut loaded = self
            .current
            .lock()
            .expect("never poisoned: no panics inside");
        if loaded.checked.elapsed() >= RECHECK {
            loaded.checked = Instant::now();
            let now = modified(&self.dir);
            if now != loaded.modified {
                match read_certified_key(&self.dir) {
                    Ok(key) => {
                        tracing::info!(dir = %self.dir.display(), "webhook certificate reloaded");
                        loaded.key = Arc::new(key);
                        loaded.modified = now;
                    }
                    Err(error) => {
                        // Keep serving the old one; try again on the next change.
                        tracing::error!(%error, "keeping the previous webhook certificate");
                        loaded.modified = now;
                    }
                }
            }
        }
        loaded.key.clone()
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// When the two files last changed (following the symlinks of a mounted
/// Secret).
fn modified(dir: &Path) -> (Option<SystemTime>, Option<SystemTime>) {
    let of = |file| {
        std::fs::metadata(dir.join(file))
            .and_then(|m| m.modified())
            .ok()
    };
    (of(CERT_FILE), of(KEY_FILE))
}

fn read_certified_key(dir: &Path) -> Result<CertifiedKey, ServeError> {
    let bad = |reason: String| ServeError::Certificate {
        dir: dir.to_owned(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(dir.join(CERT_FILE))
        .map_err(|e| bad(format!("{CERT_FILE}: {e}")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("{CERT_FILE}: {e}")))?;
    if certs.is_empty() {
        return Err(bad(format!("{CERT_FILE} holds no certificate")));
    }
    let key = PrivateKeyDer::from_pem_file(dir.join(KEY_FILE))
        .map_err(|e| bad(format!("{KEY_FILE}: {e}")))?;
    let signing =
        ring::sign::any_supported_type(&key).map_err(|e| bad(format!("{KEY_FILE}: {e}")))?;
    let certified = CertifiedKey::new(certs, signing);
    certified
        .keys_match()
        .map_err(|e: rustls::Error| bad(format!("{CERT_FILE} and {KEY_FILE} do not match: {e}")))?;
    Ok(certified)
}
