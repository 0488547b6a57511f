//! DatabaseInstance: the identifier is the external name (default
//! `metadata.name`). The master password comes from
//! `masterPasswordSecretRef`, or is generated once and kept in the
//! connection Secret before the create call, so neither a crash nor a
//! restart rotates it. The password is write-only in the cloud, so a change
//! of it is not detected as drift.

use std::collections::BTreeMap;

use apis::kinds::DatabaseInstance;
use rand::distr::{Alphanumeric, SampleString};
use serde_json::{Map, Value};

use super::{create_body, deleted, observed, state, with_name};
use crate::runtime::error::ExternalError;
use crate::runtime::{ManagedKind, Readiness, Session};

/// Generated passwords: 32 alphanumerics, inside fakecloud's 8..128 and
/// free of its forbidden `/ " @`.
const GENERATED_PASSWORD_LENGTH: usize = 32;

/// The master password, if one is known: the referenced Secret's, else
/// the one the connection Secret keeps.
async fn known_password(
    db: &DatabaseInstance,
    session: &Session,
) -> Result<Option<String>, ExternalError> {
    if let Some(selector) = &db.spec.for_provider.master_password_secret_ref {
        return session.secret_value(selector).await.map(Some);
    }
    Ok(session.connection_data().await.get("password").cloned())
}

impl ManagedKind for DatabaseInstance {
    const STEERING_FIELDS: &'static [&'static str] = &["region", "masterPasswordSecretRef"];

    async fn observe(
        &self,
        session: &Session,
        identifier: &str,
    ) -> Result<Option<Value>, ExternalError> {
        observed(
            session
                .cloud
                .get_database_instance(&self.spec.for_provider.region, identifier)
                .await,
        )
    }

    async fn create(
        &self,
        session: &Session,
        name: Option<&str>,
        desired: Value,
    ) -> Result<String, ExternalError> {
        let password = match known_password(self, session).await? {
            Some(password) => password,
            None => {
                let generated =
                    Alphanumeric.sample_string(&mut rand::rng(), GENERATED_PASSWORD_LENGTH);
                session
                    .remember_connection_detail("password", &generated)
                    .await?;
                generated
            }
        };
        let mut desired = with_name(desired, "identifier", name)?;
        desired["masterPassword"] = Value::String(password);
        let body = create_body(desired)?;
        let created = session
            .cloud
            .create_database_instance(&self.spec.for_provider.region, &body, None)
            .await?;
        Ok(created.resource.identifier)
    }

    async fn update(
        &self,
        session: &Session,
        identifier: &str,
        patch: Map<String, Value>,
    ) -> Result<(), ExternalError> {
        session
            .cloud
            .patch_database_instance(&self.spec.for_provider.region, identifier, &patch, None)
            .await?;
        Ok(())
    }

    async fn delete(&self, session: &Session, identifier: &str) -> Result<(), ExternalError> {
        deleted(
            session
                .cloud
                .delete_database_instance(&self.spec.for_provider.region, identifier)
                .await,
        )
    }

    fn readiness(at_provider: &Value) -> Readiness {
        match state(at_provider, "status").as_str() {
            "available" => Readiness::Available,
            "creating" => Readiness::Creating,
            "deleting" => Readiness::Deleting,
            _ => Readiness::Unavailable,
        }
    }

    /// `endpoint`, `port`, `username`, `password`: the keys
    /// `apis::connection::DATABASE_INSTANCE` documents in the MRD.
    async fn connection_details(
        &self,
        session: &Session,
        at_provider: &Value,
    ) -> Result<BTreeMap<String, String>, ExternalError> {
        let mut details = BTreeMap::new();
        let text = |pointer: &str| {
            at_provider
                .pointer(pointer)
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        };
        if let Some(address) = text("/endpoint/address") {
            details.insert("endpoint".to_owned(), address);
        }
        if let Some(port) = text("/endpoint/port") {
            details.insert("port".to_owned(), port);
        }
        if let Some(username) = text("/masterUsername") {
            details.insert("username".to_owned(), username);
        }
        if let Some(password) = known_password(self, session).await? {
            details.insert("password".to_owned(), password);
        }
        Ok(details)
    }
}
