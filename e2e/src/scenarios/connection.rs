//! Connection secrets: a DatabaseInstance publishes exactly the keys its
//! MRD documents, and the credentials in them authenticate against
//! fakecloud. Only key names are ever narrated, never values.

use std::collections::BTreeSet;
use std::time::Duration;

use crossplane_types::well_known::CONNECTION_SECRET_TYPE;
use fakecloud::model::Credentials;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use serde_json::json;

use super::report::{at_provider_fields, status_row};
use super::{REGION, ScenarioError, Stage, Verdict, collection, under};
use crate::managed::{is_ready, is_synced};
use crate::objects::ObjectsError;
use crate::scope::Scope;

/// Databases take longer than networks in fakecloud.
const READY: Duration = Duration::from_secs(40);

/// Applies a postgres DatabaseInstance that writes its connection Secret
/// `namespace/secret` (a namespaced one's own namespace, which must then be
/// the stage's); checks the keys and that they authenticate. Returns the
/// Secret as published.
pub async fn publish_and_authenticate<S: Scope>(
    stage: &Stage<'_>,
    name: &str,
    namespace: &str,
    secret: &str,
    verdict: &mut Verdict,
) -> Result<Secret, ScenarioError> {
    let mark = stage.audit_mark().await?;
    stage.say(format!(
        "apply DatabaseInstance/{name} ({}): postgres, masterUsername app, writeConnectionSecretToRef {namespace}/{secret}",
        S::NAME
    ));
    stage
        .objects
        .apply::<S::DatabaseInstance>(S::manifest(
            "database",
            "DatabaseInstance",
            json!({ "name": name }),
            json!({
                "forProvider": {
                    "region": REGION, "engine": "postgres", "instanceClass": "db.t3.micro",
                    "allocatedStorage": 20, "masterUsername": "app",
                },
                "writeConnectionSecretToRef": S::connection_secret_ref(namespace, secret),
            }),
        ))
        .await?;
    let db = stage
        .objects
        .wait_for::<S::DatabaseInstance>(name, "Ready", READY, |d| is_ready(d) && is_synced(d))
        .await?;
    stage.say(status_row(&db));
    stage.say(at_provider_fields(
        &db,
        &["status", "engine", "endpoint/address", "endpoint/port"],
    ));
    // The provider's calls, before the scenario itself authenticates.
    let databases = collection("databaseInstances");
    let calls = stage.audit_since(mark, |p| under(p, &databases)).await?;
    stage.audit("provider calls", &calls);

    let published = Api::<Secret>::namespaced(stage.objects.client(), namespace)
        .get(secret)
        .await
        .map_err(ObjectsError::from)?;
    let data = published.data.clone().unwrap_or_default();
    let keys: BTreeSet<&str> = data.keys().map(String::as_str).collect();
    let documented: BTreeSet<&str> = apis::kinds::database_instance::CONNECTION_DETAILS
        .iter()
        .map(|d| d.name)
        .collect();
    stage.say(format!(
        "Secret {namespace}/{secret} (type {}): keys {} (values not shown)",
        published.type_.as_deref().unwrap_or("-"),
        keys.iter().copied().collect::<Vec<_>>().join(", ")
    ));
    verdict.check(
        format!("the Secret holds exactly the keys the MRD documents ({documented:?})"),
        keys == documented,
    );
    verdict.check(
        "the Secret has the connection type",
        published.type_.as_deref() == Some(CONNECTION_SECRET_TYPE),
    );

    let text = |key: &str| {
        data.get(key)
            .map(|v| String::from_utf8_lossy(&v.0).into_owned())
            .unwrap_or_default()
    };
    verdict.check(
        format!(
            "the published port is postgres' 5432 (saw {})",
            text("port")
        ),
        text("port") == "5432",
    );
    let credentials = Credentials {
        username: text("username"),
        password: text("password"),
    };
    let accepted = stage
        .cloud
        .authenticate_database_instance(REGION, name, &credentials)
        .await?;
    let wrong = Credentials {
        password: format!("{}-wrong", credentials.password),
        ..credentials.clone()
    };
    let rejected = !stage
        .cloud
        .authenticate_database_instance(REGION, name, &wrong)
        .await?;
    stage.say(format!(
        "authenticate against fakecloud with username + password from the Secret: {}; with a wrong password: {}",
        if accepted { "accepted" } else { "REFUSED" },
        if rejected { "refused" } else { "ACCEPTED" },
    ));
    verdict.check("the published credentials authenticate", accepted);
    verdict.check("a wrong password is refused", rejected);
    Ok(published)
}
