//! DatabaseInstance: the identifier is the external name (default
//! `metadata.name`). The master password comes from
//! `masterPasswordSecretRef`, or is generated once and handed to the
//! runtime to keep in the connection Secret before the create call
//! ([`CloudKind::details_before_create`]), so neither a crash nor a
//! restart rotates it.
//!
//! The password is write-only in the cloud, so observing cannot show that it
//! changed. The connection Secret is the provider's record of the password
//! it last applied: when the referenced Secret's value differs from that
//! record, the new password is sent as an update (rotation) and recorded
//! once the cloud accepted it. Until then the connection Secret keeps the
//! password that still works. Without `writeConnectionSecretToRef` there is
//! no record, so a rotation is not detected.

use apis::kinds::database_instance::DatabaseInstanceParameters;
use crossplane_types::Scope;
use rand::distr::{Alphanumeric, SampleString};
use serde_json::{Map, Value};

use fakecloud::client::Client;
use fakecloud::model::DatabaseStatus;

use super::{create_body, deleted, observed, with_name};
use runtime::ExternalError;
use runtime::{CloudKind, Created, Details, Readiness, Session, TagsField};

use crate::cloud::{CloudFailure, FakecloudConnect};

/// Generated passwords: 32 alphanumerics, inside fakecloud's 8..128 and
/// free of its forbidden `/ " @`.
const GENERATED_PASSWORD_LENGTH: usize = 32;

const PASSWORD_KEY: &str = "password";

/// The password the user asks for in `masterPasswordSecretRef`, if any.
async fn wanted_password<S: Scope>(
    db: &DatabaseInstanceParameters<S>,
    session: &Session<'_, Client>,
) -> Result<Option<String>, ExternalError> {
    match &db.master_password_secret_ref {
        Some(selector) => session.secret_value(selector).await.map(Some),
        None => Ok(None),
    }
}

/// The password last applied to the cloud, as the connection Secret records
/// it (a generated one included).
fn applied_password(session: &Session<'_, Client>) -> Option<String> {
    session.connection_data().get(PASSWORD_KEY).cloned()
}

/// The connection details that record `password`.
fn password_details(password: String) -> Details {
    Details::from([(PASSWORD_KEY.to_owned(), password)])
}

impl<S: Scope> CloudKind<FakecloudConnect> for DatabaseInstanceParameters<S> {
    type Observation = fakecloud::model::DatabaseInstance;

    const STEERING_FIELDS: &'static [&'static str] = &["region", "masterPasswordSecretRef"];

    const TAGS: Option<TagsField> = Some(super::TAGS);

    /// fakecloud's database update cannot change these. The password is
    /// not among the sensitive fields: it is no `forProvider` field, and
    /// its change shows through `write_only_drift`, which is always masked.
    const CREATE_ONLY_FIELDS: &'static [&'static str] = &["engine", "masterUsername", "subnetIds"];

    async fn observe(
        &self,
        session: &Session<'_, Client>,
        identifier: &str,
    ) -> Result<Option<Self::Observation>, ExternalError> {
        observed(
            session
                .cloud
                .get_database_instance(&self.region, identifier)
                .await,
        )
    }

    /// A generated password, unless the user names one or an earlier,
    /// interrupted attempt already generated and kept it.
    async fn details_before_create(
        &self,
        session: &Session<'_, Client>,
    ) -> Result<Details, ExternalError> {
        if self.master_password_secret_ref.is_some() || applied_password(session).is_some() {
            return Ok(Details::new());
        }
        Ok(password_details(Alphanumeric.sample_string(
            &mut rand::rng(),
            GENERATED_PASSWORD_LENGTH,
        )))
    }

    async fn create(
        &self,
        session: &Session<'_, Client>,
        name: Option<&str>,
        desired: Value,
        idempotency_key: &str,
    ) -> Result<Created<Self::Observation>, ExternalError> {
        let wanted = wanted_password(self, session).await?;
        let password = wanted
            .clone()
            .or_else(|| applied_password(session))
            .ok_or_else(|| {
                ExternalError::InvalidSpec(
                    "no master password: neither masterPasswordSecretRef nor a kept one".to_owned(),
                )
            })?;
        let mut desired = with_name(desired, "identifier", name)?;
        desired["masterPassword"] = Value::String(password);
        let body = create_body(desired)?;
        let created = session
            .cloud
            .create_database_instance(&self.region, &body, Some(idempotency_key))
            .await
            .map_err(CloudFailure)?
            .resource;
        // The answer is the new instance: the runtime's first observation.
        Ok(Created {
            external_name: created.identifier.clone(),
            connection_details: wanted.map(password_details).unwrap_or_default(),
            observed: Some(created),
        })
    }

    async fn update(
        &self,
        session: &Session<'_, Client>,
        identifier: &str,
        patch: Map<String, Value>,
    ) -> Result<Details, ExternalError> {
        let rotated = patch
            .get("masterPassword")
            .and_then(Value::as_str)
            .map(str::to_owned);
        session
            .cloud
            .patch_database_instance(&self.region, identifier, &patch, None)
            .await
            .map_err(CloudFailure)?;
        // Recorded only now, by the runtime: had the cloud refused it, the
        // connection Secret would still hold the password that works.
        Ok(rotated.map(password_details).unwrap_or_default())
    }

    /// A new password in `masterPasswordSecretRef` (see the module doc).
    async fn write_only_drift(
        &self,
        session: &Session<'_, Client>,
    ) -> Result<Map<String, Value>, ExternalError> {
        let mut drift = Map::new();
        if let (Some(wanted), Some(applied)) = (
            wanted_password(self, session).await?,
            applied_password(session),
        ) && wanted != applied
        {
            drift.insert("masterPassword".to_owned(), Value::String(wanted));
        }
        Ok(drift)
    }

    async fn delete(
        &self,
        session: &Session<'_, Client>,
        identifier: &str,
    ) -> Result<(), ExternalError> {
        deleted(
            session
                .cloud
                .delete_database_instance(&self.region, identifier)
                .await,
        )
    }

    fn readiness(observed: &Self::Observation) -> Readiness {
        match observed.status {
            DatabaseStatus::Available => Readiness::Available,
            DatabaseStatus::Creating => Readiness::Creating,
            DatabaseStatus::Deleting => Readiness::Deleting,
            // Available to connect to, but not what was asked for yet.
            DatabaseStatus::Modifying => Readiness::Unavailable,
        }
    }

    /// `endpoint`, `port`, `username`, `password`: the keys
    /// `apis::connection::DATABASE_INSTANCE` documents in the MRD.
    async fn connection_details(
        &self,
        session: &Session<'_, Client>,
        observed: &Self::Observation,
    ) -> Result<Details, ExternalError> {
        let mut details = Details::from([
            ("endpoint".to_owned(), observed.endpoint.address.clone()),
            ("port".to_owned(), observed.endpoint.port.to_string()),
            ("username".to_owned(), observed.master_username.clone()),
        ]);
        // The applied password, not the wanted one: during a rotation the
        // Secret keeps the password that works until the cloud has the new.
        // With no record yet (an imported instance), the wanted one.
        let password = match applied_password(session) {
            Some(applied) => Some(applied),
            None => wanted_password(self, session).await?,
        };
        if let Some(password) = password {
            details.insert(PASSWORD_KEY.to_owned(), password);
        }
        Ok(details)
    }
}
