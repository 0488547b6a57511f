//! fakecloud as the generic runtime meets it: the client a ProviderConfig
//! makes ([`FakecloudConnect`]) and the client's errors as the reconciler
//! reads them ([`CloudFailure`]). The runtime knows no cloud; this is the
//! whole of what it learns about ours.

use std::collections::HashMap;
use std::sync::Mutex;

use crossplane_types::ProviderConfigKey;
use fakecloud::client::{Client, ClientError};
use runtime::{CloudError, Connect, CreateFailure, UnusableConfig};
use serde_json::Value;

/// fakecloud's answer to an idempotency key sent again with another body.
const IDEMPOTENT_PARAMETER_MISMATCH: &str = "IdempotentParameterMismatch";

/// Makes fakecloud clients from ProviderConfigs (`spec.endpoint`, and the
/// API key the runtime read from `spec.credentials`), reusing one client,
/// and its connection pool, per endpoint and key.
#[derive(Default)]
pub struct FakecloudConnect {
    clients: Mutex<HashMap<(String, String), Client>>,
}

impl Connect for FakecloudConnect {
    type Client = Client;

    fn connect(
        &self,
        _config: &ProviderConfigKey,
        spec: &Value,
        api_key: String,
    ) -> Result<Client, UnusableConfig> {
        let endpoint = spec
            .get("endpoint")
            .and_then(Value::as_str)
            .ok_or_else(|| UnusableConfig("spec.endpoint is not set".to_owned()))?;
        let mut clients = self.clients.lock().expect("client cache lock poisoned");
        Ok(clients
            .entry((endpoint.to_owned(), api_key.clone()))
            .or_insert_with(|| Client::new(endpoint, api_key))
            .clone())
    }
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

    fn create_failure(&self) -> CreateFailure {
        if self.0.code() == Some(IDEMPOTENT_PARAMETER_MISMATCH) {
            CreateFailure::KeyReused
        } else {
            CreateFailure::of_status(self.0.status())
        }
    }
}
