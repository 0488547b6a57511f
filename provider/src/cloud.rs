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
///
/// Every call carries a `User-Agent` ([`FakecloudConnect::with_user_agent`])
/// that fakecloud keeps in its audit: with several replicas sharing the
/// work, it is how the audit tells which replica made each call.
pub struct FakecloudConnect {
    clients: Mutex<HashMap<(String, String), Client>>,
    timeout: Duration,
    user_agent: String,
}

impl Default for FakecloudConnect {
    /// Calls time out after 30 s, the flag's default.
    fn default() -> Self {
        Self::new(Duration::from_secs(30))
    }
}

impl FakecloudConnect {
    /// Clients whose calls time out after `timeout` and send the
    /// anonymous [`FakecloudConnect::default_user_agent`].
    pub fn new(timeout: Duration) -> Self {
        Self {
            clients: Mutex::default(),
            timeout,
            user_agent: Self::default_user_agent(),
        }
    }

    /// The `User-Agent` every call sends. The provider sends
    /// `fakecloud-provider/<version> (<identity>)`
    /// ([`FakecloudConnect::replica_user_agent`]) so fakecloud's audit
    /// (`userAgent`, filterable with `GET /admin/audit?userAgent=`) shows
    /// which replica made each call.
    ///
    /// Characters a header cannot carry (control characters) become `?`,
    /// so any identity gives a usable client rather than every connect
    /// failing on it. Set it before the first `connect`: clients already
    /// made keep the agent they were made with.
    pub fn with_user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = user_agent
            .into()
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        self
    }

    /// `fakecloud-provider/<version>`: what calls send unless told more.
    /// Chosen over reqwest's default (no `User-Agent` at all) so that even
    /// a provider that was not given its identity is told apart in the
    /// audit from tests, scripts and the console.
    pub fn default_user_agent() -> String {
        format!("fakecloud-provider/{}", env!("CARGO_PKG_VERSION"))
    }

    /// `fakecloud-provider/<version> (<identity>)`: the agent of the
    /// replica known as `identity` (its pod, its lease holder name).
    pub fn replica_user_agent(identity: &str) -> String {
        format!("{} ({identity})", Self::default_user_agent())
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
            .user_agent(&self.user_agent)
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

#[cfg(test)]
mod tests {
    use crossplane_types::ProviderConfigKind;
    use fakecloud::client::{AdminClient, ListOptions};
    use fakecloud::model::AuditQuery;
    use fakecloud::{ApiKey, Config, IN_MEMORY};
    use serde_json::json;

    use super::*;

    #[test]
    fn a_replicas_agent_names_the_provider_its_version_and_the_replica() {
        assert_eq!(
            FakecloudConnect::replica_user_agent("provider-7f9c-x2"),
            format!(
                "fakecloud-provider/{} (provider-7f9c-x2)",
                env!("CARGO_PKG_VERSION")
            )
        );
    }

    /// What fakecloud's audit shows: each replica's own agent, the plain
    /// default for a provider not told its identity, and a control
    /// character in an identity costs the agent one `?`, not the client.
    #[tokio::test]
    async fn fakeclouds_audit_shows_which_connect_made_each_call() {
        let mut config = Config::new(IN_MEMORY);
        config.admin_token = Some("admin".into());
        config.api_keys = vec![ApiKey::new("key", "acct")];
        let server = fakecloud::spawn(config).await.unwrap();
        let spec = json!({ "endpoint": server.base_url() });
        let key = ProviderConfigKey {
            kind: ProviderConfigKind::Legacy,
            namespace: None,
            name: "default".into(),
        };
        let connects = [
            FakecloudConnect::default()
                .with_user_agent(FakecloudConnect::replica_user_agent("replica-0")),
            FakecloudConnect::default()
                .with_user_agent(FakecloudConnect::replica_user_agent("replica-1")),
            FakecloudConnect::default(),
            FakecloudConnect::default().with_user_agent("line\nbreak"),
        ];
        for connect in &connects {
            let client = connect.connect(&key, &spec, "key".into()).unwrap();
            client
                .list_vpcs("us-east-1", &ListOptions::default())
                .await
                .unwrap();
        }
        let admin = AdminClient::new(server.base_url(), "admin");
        let audit = admin.audit(&AuditQuery::default()).await.unwrap();
        let agents: Vec<_> = audit.iter().map(|e| e.user_agent.clone()).collect();
        assert_eq!(
            agents,
            [
                Some(FakecloudConnect::replica_user_agent("replica-0")),
                Some(FakecloudConnect::replica_user_agent("replica-1")),
                Some(FakecloudConnect::default_user_agent()),
                Some("line?break".to_owned()),
            ]
        );
        server.shutdown().await.unwrap();
    }
}
