//! fakecloud as the generic runtime meets it: the client a ProviderConfig
//! makes ([`FakecloudConnect`]) and the client's errors as the reconciler
//! reads them ([`CloudFailure`]). The runtime knows no cloud; this is the
//! whole of what it learns about ours.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use crossplane_types::ProviderConfigKey;
use fakecloud::client::{Client, ClientError, RetryPolicy};
use runtime::{CloudError, Connect, CreateFailure, UnusableConfig};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// fakecloud's answer to an idempotency key sent again with another body.
const IDEMPOTENT_PARAMETER_MISMATCH: &str = "IdempotentParameterMismatch";

/// Makes fakecloud clients from ProviderConfigs (`spec.endpoint`, and the
/// API key the runtime read from `spec.credentials`), reusing one client,
/// and its connection pool, per endpoint and key.
///
/// The clients never retry on their own: a 429 or 5xx goes back to the
/// runtime's pacing, which pauses every caller of that account and sends
/// the call again once ([`runtime::pacing`]). A client that retried by
/// itself would keep calling a throttled account while the others wait.
pub struct FakecloudConnect {
    clients: Mutex<HashMap<(String, String), Client>>,
    timeout: Duration,
}

impl Default for FakecloudConnect {
    /// Calls time out after 30 s, the flag's default.
    fn default() -> Self {
        Self::new(Duration::from_secs(30))
    }
}

impl FakecloudConnect {
    /// Clients whose calls time out after `timeout`.
    pub fn new(timeout: Duration) -> Self {
        Self {
            clients: Mutex::default(),
            timeout,
        }
    }
}

impl Connect for FakecloudConnect {
    type Client = Client;

    fn connect(
        &self,
        _config: &ProviderConfigKey,
        spec: &Value,
        api_key: String,
    ) -> Result<Client, UnusableConfig> {
        let endpoint = endpoint(spec)?;
        let mut clients = self.clients.lock().expect("client cache lock poisoned");
        if let Some(client) = clients.get(&(endpoint.to_owned(), api_key.clone())) {
            return Ok(client.clone());
        }
        let http = reqwest::Client::builder()
            .timeout(self.timeout)
            .build()
            .map_err(|e| UnusableConfig(format!("cannot build an HTTP client: {e}")))?;
        let client = Client::new(endpoint, api_key.clone())
            .with_http_client(http)
            .with_retry(RetryPolicy::none());
        clients.insert((endpoint.to_owned(), api_key), client.clone());
        Ok(client)
    }

    /// One fakecloud account at one endpoint is one server: its quota is
    /// the account's, whichever ProviderConfig names it. The key itself is
    /// a secret, so the name holds a fingerprint of it (the first 8 hex
    /// digits of its SHA-256), enough to tell accounts apart in metrics.
    fn server(&self, config: &ProviderConfigKey, spec: &Value, api_key: &str) -> String {
        let Ok(endpoint) = endpoint(spec) else {
            // connect refuses this config: no call will be paced.
            return format!("{config:?}");
        };
        let digest = Sha256::digest(api_key.as_bytes());
        let fingerprint: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        format!("{endpoint} key:{fingerprint}")
    }
}

/// The ProviderConfig's `spec.endpoint`.
fn endpoint(spec: &Value) -> Result<&str, UnusableConfig> {
    spec.get("endpoint")
        .and_then(Value::as_str)
        .ok_or_else(|| UnusableConfig("spec.endpoint is not set".to_owned()))
}

/// A failed fakecloud call, as the runtime reads it. A newtype because
/// neither the runtime's trait nor fakecloud's error is this crate's: the
/// kinds write `.map_err(CloudFailure)?`.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct CloudFailure(pub ClientError);

impl CloudError for CloudFailure {
    fn status(&self) -> Option<u16> {
        self.0.status()
    }

    fn retry_after(&self) -> Option<Duration> {
        self.0.retry_after()
    }

    fn unanswered(&self) -> bool {
        self.0.is_unanswered()
    }

    fn create_failure(&self) -> CreateFailure {
        if self.0.code() == Some(IDEMPOTENT_PARAMETER_MISMATCH) {
            CreateFailure::KeyReused
        } else {
            CreateFailure::of_status(self.0.status())
        }
    }
}
