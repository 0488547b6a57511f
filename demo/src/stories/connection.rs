//! Story 6, connection secrets: a DatabaseInstance writes exactly the keys
//! its MRD documents to its connection Secret, and the credentials in it
//! authenticate against fakecloud. Only key names are ever printed.

use std::collections::BTreeSet;
use std::time::Duration;

use apis::Managed;
use apis::kinds::DatabaseInstance;
use apis::well_known::CONNECTION_SECRET_TYPE;
use fakecloud::model::Credentials;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use serde_json::json;

use super::{REGION, Verdict, collection, under};
use crate::demo::report::{self, at_provider_fields, line, status_row};
use crate::demo::system::NAMESPACE;
use crate::demo::{DemoError, System};
use crate::world::{is_ready, is_synced};

const NAME: &str = "orders-db";
const SECRET: &str = "orders-db-conn";
/// Databases take longer than networks in fakecloud.
const READY: Duration = Duration::from_secs(40);

pub(crate) async fn play(system: &mut System) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    let mark = system.audit_mark().await?;
    line(format!(
        "apply DatabaseInstance/{NAME}: postgres, masterUsername app, writeConnectionSecretToRef {NAMESPACE}/{SECRET}"
    ));
    system
        .objects
        .apply::<DatabaseInstance>(json!({
            "apiVersion": "database.fakecloud.crossplane.io/v1alpha1", "kind": "DatabaseInstance",
            "metadata": { "name": NAME },
            "spec": {
                "forProvider": {
                    "region": REGION, "engine": "postgres", "instanceClass": "db.t3.micro",
                    "allocatedStorage": 20, "masterUsername": "app",
                },
                "writeConnectionSecretToRef": { "namespace": NAMESPACE, "name": SECRET },
            },
        }))
        .await?;
    let db = system
        .objects
        .wait_for::<DatabaseInstance>(NAME, "Ready", READY, |d| is_ready(d) && is_synced(d))
        .await?;
    line(status_row(&db));
    line(at_provider_fields(
        &db,
        &["status", "engine", "endpoint/address", "endpoint/port"],
    ));
    // Snapshot the provider's calls before the demo itself authenticates.
    let databases = collection("databaseInstances");
    let calls = system.audit_since(mark, |p| under(p, &databases)).await?;
    report::audit("provider calls", &calls);

    let secret = Api::<Secret>::namespaced(system.objects.client(), NAMESPACE)
        .get(SECRET)
        .await?;
    let data = secret.data.clone().unwrap_or_default();
    let keys: BTreeSet<&str> = data.keys().map(String::as_str).collect();
    let documented: BTreeSet<&str> = DatabaseInstance::CONNECTION_DETAILS
        .iter()
        .map(|d| d.name)
        .collect();
    line(format!(
        "Secret {NAMESPACE}/{SECRET} (type {}): keys {} (values not shown)",
        secret.type_.as_deref().unwrap_or("-"),
        keys.iter().copied().collect::<Vec<_>>().join(", ")
    ));
    verdict.check(
        "the Secret holds exactly the keys the MRD documents",
        keys == documented,
    );
    verdict.check(
        "the Secret has the connection type",
        secret.type_.as_deref() == Some(CONNECTION_SECRET_TYPE),
    );

    let text = |key: &str| {
        data.get(key)
            .map(|v| String::from_utf8_lossy(&v.0).into_owned())
            .unwrap_or_default()
    };
    let credentials = Credentials {
        username: text("username"),
        password: text("password"),
    };
    let accepted = system
        .cloud
        .authenticate_database_instance(REGION, NAME, &credentials)
        .await?;
    let wrong = Credentials {
        password: format!("{}-wrong", credentials.password),
        ..credentials.clone()
    };
    let rejected = !system
        .cloud
        .authenticate_database_instance(REGION, NAME, &wrong)
        .await?;
    line(format!(
        "authenticate against fakecloud with username + password from the Secret: {}; with a wrong password: {}",
        if accepted { "accepted" } else { "REFUSED" },
        if rejected { "refused" } else { "ACCEPTED" },
    ));
    verdict.check("the published credentials authenticate", accepted);
    verdict.check("a wrong password is refused", rejected);
    Ok(verdict)
}
