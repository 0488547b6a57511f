//! Connection secrets: a DatabaseInstance publishes exactly the keys its MRD
//! documents, the credentials work against fakecloud (the scenario the demo
//! shows, [`e2e::scenarios::connection`]), a restart does not
//! rotate a generated password, a password changed in its referenced Secret
//! is rotated in the cloud, and the Secret goes with the MR.

use std::collections::BTreeSet;
use std::time::Duration;

use apis::kinds::DatabaseInstance;
use crossplane_types::well_known::CONNECTION_SECRET_TYPE;
use e2e::scenarios::{Verdict, connection};
use e2e::scope::{Legacy, Namespaced, Scope};
use e2e::world::{NAMESPACE, World, condition, is_ready};
use fakecloud::model::Credentials;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(40);

fn database(
    name: &str,
    secret: &str,
    password_ref: Option<serde_json::Value>,
) -> serde_json::Value {
    let mut for_provider = json!({
        "region": "us-east-1", "engine": "postgres", "instanceClass": "db.t3.micro",
        "allocatedStorage": 20, "masterUsername": "app",
    });
    if let Some(selector) = password_ref {
        for_provider["masterPasswordSecretRef"] = selector;
    }
    json!({
        "apiVersion": "database.fakecloud.crossplane.io/v1alpha1", "kind": "DatabaseInstance",
        "metadata": { "name": name },
        "spec": {
            "forProvider": for_provider,
            "writeConnectionSecretToRef": { "namespace": NAMESPACE, "name": secret },
        },
    })
}

fn text(secret: &Secret, key: &str) -> String {
    String::from_utf8(secret.data.as_ref().expect("data")[key].0.clone()).expect("utf-8")
}

#[tokio::test]
async fn connection_secret_has_the_documented_keys_authenticates_and_survives_a_restart()
-> anyhow::Result<()> {
    publish_survive_and_collect::<Legacy>(NAMESPACE).await
}

/// A namespaced DatabaseInstance's Secret is in its own namespace.
#[tokio::test]
async fn a_namespaced_connection_secret_authenticates_and_survives_a_restart() -> anyhow::Result<()>
{
    publish_survive_and_collect::<Namespaced>(e2e::scope::APP).await
}

/// The story in scope `S`, the Secret in `namespace`.
async fn publish_survive_and_collect<S: Scope>(namespace: &str) -> anyhow::Result<()> {
    let label = runtime::kind_label::<S::DatabaseInstance>();
    e2e::init_tracing();
    let mut world = World::start().await?;
    let objects = S::objects(&world.objects);
    let name = e2e::unique_name("orders");
    let secret_name = format!("{name}-conn");
    let mut verdict = Verdict::default();
    let secret = connection::publish_and_authenticate::<S>(
        &world.stage().with(&objects),
        &name,
        namespace,
        &secret_name,
        &mut verdict,
    )
    .await?;
    verdict.require()?;
    let keys: BTreeSet<&str> = secret
        .data
        .as_ref()
        .expect("data")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from(["endpoint", "port", "password", "username"])
    );
    // Every write is counted by what it wrote: the Secret (the generated
    // password before create, then the details) and the usage record.
    let writes = "provider_kube_writes_total";
    let counted = |target| {
        world
            .metrics
            .total_with(writes, &[("kind", &label), ("target", target)])
    };
    assert!(
        counted("secret") >= 2.0,
        "secret writes: {}",
        counted("secret")
    );
    assert_eq!(counted("usage"), 1.0);
    let owner = &secret.metadata.owner_references.as_ref().expect("owned")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("DatabaseInstance", name.as_str(), Some(true))
    );

    let password = text(&secret, "password");
    let secrets: Api<Secret> = Api::namespaced(world.kube(), namespace);
    // A restarted provider keeps the generated password and rewrites nothing.
    world.stop_provider().await;
    world.start_provider()?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = secrets.get(&secret_name).await?;
    assert_eq!(
        text(&after, "password"),
        password,
        "restart rotated the password"
    );
    assert_eq!(
        after.metadata.resource_version, secret.metadata.resource_version,
        "unchanged Secret rewritten"
    );

    // Deleting the MR deletes the database and garbage-collects the Secret.
    objects.delete::<S::DatabaseInstance>(&name).await?;
    objects
        .wait_gone::<S::DatabaseInstance>(&name, WAIT)
        .await?;
    let left = world
        .admin
        .resources(Some(fakecloud::model::Kind::DatabaseInstance), None)
        .await?;
    assert!(left.is_empty(), "the database is gone: {left:?}");
    let deadline = tokio::time::Instant::now() + WAIT;
    while secrets.get_opt(&secret_name).await?.is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "connection Secret not garbage-collected"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    world.shutdown().await;
    Ok(())
}

/// Sets the `pw` key of the password Secret.
async fn set_password(secrets: &Api<Secret>, name: &str, password: &str) -> anyhow::Result<()> {
    secrets
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "stringData": { "pw": password } })),
        )
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_password_from_a_secret_reference_is_used_published_and_rotated() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let name = e2e::unique_name("billing");
    let secrets: Api<Secret> = Api::namespaced(world.kube(), NAMESPACE);
    let password_secret = serde_json::from_value(json!({
        "metadata": { "name": format!("{name}-password") },
        "stringData": { "pw": "s3cret-Passw0rd" },
    }))?;
    secrets
        .create(&PostParams::default(), &password_secret)
        .await?;
    let selector =
        json!({ "namespace": NAMESPACE, "name": format!("{name}-password"), "key": "pw" });
    world
        .apply::<DatabaseInstance>(database(&name, &format!("{name}-conn"), Some(selector)))
        .await?;
    world
        .wait_for::<DatabaseInstance>(&name, "Ready", WAIT, is_ready)
        .await?;
    let published = secrets.get(&format!("{name}-conn")).await?;
    assert_eq!(text(&published, "password"), "s3cret-Passw0rd");
    let credentials = |password: &str| Credentials {
        username: "app".into(),
        password: password.into(),
    };
    let authenticates = |password: &'static str| {
        let cloud = world.cloud.clone();
        let name = name.clone();
        async move {
            cloud
                .authenticate_database_instance("us-east-1", &name, &credentials(password))
                .await
        }
    };
    assert!(authenticates("s3cret-Passw0rd").await?);
    let path = format!("/v1/regions/us-east-1/databaseInstances/{name}");
    let patches = |mark| {
        let world = &world;
        let path = path.clone();
        async move {
            let calls = world.mutating_calls(&path, mark).await?;
            anyhow::Ok(
                calls
                    .into_iter()
                    .filter(|c| c.method == "PATCH")
                    .collect::<Vec<_>>(),
            )
        }
    };

    // A password the cloud refuses: the cause is reported without the
    // value, and the connection Secret keeps the password that works.
    let mark = world.audit_mark().await?;
    set_password(&secrets, &format!("{name}-password"), "not@allowed-here").await?;
    let refused = world
        .wait_for::<DatabaseInstance>(&name, "Synced=False", WAIT, |d| {
            condition(d, "Synced").is_some_and(|(status, ..)| status == "False")
        })
        .await?;
    let (_, _, message) = condition(&refused, "Synced").expect("set");
    assert!(message.contains("masterPassword"), "{message}");
    assert!(
        !message.contains("not@allowed-here"),
        "a secret leaked: {message}"
    );
    assert!(patches(mark).await?.iter().all(|c| c.status == 400));
    let kept = secrets.get(&format!("{name}-conn")).await?;
    assert_eq!(text(&kept, "password"), "s3cret-Passw0rd");
    assert!(authenticates("s3cret-Passw0rd").await?);

    // A good one: rotated in the cloud, then published.
    set_password(&secrets, &format!("{name}-password"), "n3w-Passw0rd-2").await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    while text(&secrets.get(&format!("{name}-conn")).await?, "password") != "n3w-Passw0rd-2" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "connection Secret never got the rotated password"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(authenticates("n3w-Passw0rd-2").await?);
    assert!(!authenticates("s3cret-Passw0rd").await?);
    world
        .wait_for::<DatabaseInstance>(&name, "Synced=True", WAIT, |d| {
            condition(d, "Synced").is_some_and(|(status, ..)| status == "True")
        })
        .await?;

    // Rotated once: no update loop afterwards.
    let settled = world.audit_mark().await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        patches(settled).await?,
        vec![],
        "updates after the rotation"
    );
    world.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_secret_controlled_by_another_object_is_never_overwritten() -> anyhow::Result<()> {
    e2e::init_tracing();
    let world = World::start().await?;
    let name = e2e::unique_name("taken");
    let secrets: Api<Secret> = Api::namespaced(world.kube(), NAMESPACE);
    // Its controller exists: a Secret owned by an object that does not is
    // the garbage collector's to delete, which on a busy machine it did
    // before the test read the Secret again.
    let owner: ConfigMap = Api::namespaced(world.kube(), NAMESPACE)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": "owner" } }))?,
        )
        .await?;
    let foreign = serde_json::from_value(json!({
        "metadata": { "name": "someone-elses", "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid,
            "controller": true,
        }] },
        "type": CONNECTION_SECRET_TYPE,
        "stringData": { "keep": "me" },
    }))?;
    let before = secrets.create(&PostParams::default(), &foreign).await?;
    world
        .apply::<DatabaseInstance>(database(&name, "someone-elses", None))
        .await?;
    let refused = world
        .wait_for::<DatabaseInstance>(&name, "Synced=False", WAIT, |d| {
            condition(d, "Synced").is_some_and(|(status, ..)| status == "False")
        })
        .await?;
    let (_, _, message) = condition(&refused, "Synced").expect("set");
    assert!(message.contains("refusing to overwrite"), "{message}");
    assert!(message.contains("ConfigMap owner"), "{message}");
    let after = secrets.get("someone-elses").await?;
    assert_eq!(after.data, before.data, "the foreign Secret was modified");
    world.shutdown().await;
    Ok(())
}
