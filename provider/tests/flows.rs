//! The reconciler's flows, without a cluster: the generic reconciler runs on
//! the in-memory [`Cluster`](runtime::testing::MemoryCluster) against
//! a real fakecloud served in-process (HTTP on loopback, SQLite in memory),
//! and every test counts what fakecloud holds. The e2e suite runs the same
//! flows on a real API server; these pin down each step's writes and
//! decisions, and run in milliseconds.

use std::sync::Arc;
use std::time::Duration;

use apis::kinds::provider_config::{ProviderConfig, ProviderConfigUsage};
use apis::kinds::{DatabaseInstance, Vpc};
use crossplane_types::condition::{TYPE_READY, TYPE_SYNCED, TYPE_UP_TO_DATE};
use crossplane_types::well_known::{
    EXTERNAL_CREATE_FAILED_ANNOTATION, EXTERNAL_CREATE_PENDING_ANNOTATION,
    EXTERNAL_CREATE_SUCCEEDED_ANNOTATION, EXTERNAL_NAME_ANNOTATION, MANAGED_RESOURCE_FINALIZER,
    POLL_INTERVAL_ANNOTATION, RECONCILE_REQUESTED_AT_ANNOTATION,
};
use fakecloud::client::{AdminClient, Client};
use fakecloud::model::{Credentials, FaultRuleSpec, Kind};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use serde_json::{Value, json};

use runtime::cluster::ObjectKey;
use runtime::testing::{
    CATCH_UP_LIMIT, MemoryCluster, Next, Outcome, idempotency_key, reconcile_once,
    watch_event_triggers,
};
use runtime::{CONFLICT_RETRY, Context, ManagedKind, Settings};

use provider::cloud::FakecloudConnect;

const REGION: &str = "us-east-1";
const PENDING_POLL: Duration = Duration::from_millis(500);
const MIN_POLL: Duration = Duration::from_secs(2);

/// One provider's worth of state: the in-memory cluster with a
/// ProviderConfig and its credentials, a fakecloud, and the context every
/// reconcile shares.
struct Fixture {
    cluster: Arc<MemoryCluster>,
    ctx: Context,
    connect: FakecloudConnect,
    cloud: fakecloud::RunningServer,
    admin: AdminClient,
    client: Client,
}

impl Fixture {
    async fn new() -> Self {
        let mut config = fakecloud::Config::new(fakecloud::IN_MEMORY);
        config.default_delay = Duration::ZERO;
        let cloud = fakecloud::spawn(config).await.expect("fakecloud starts");
        let cluster = Arc::new(MemoryCluster::default());
        let credentials = Secret {
            data: Some([("apiKey".to_owned(), ByteString(cloud.api_key().into()))].into()),
            ..Secret::default()
        };
        cluster.insert(
            &ObjectKey::of::<Secret>(Some("crossplane-system"), "fakecloud-creds"),
            serde_json::to_value(credentials).unwrap(),
        );
        cluster.insert(
            &ObjectKey::of::<ProviderConfig>(None, "default"),
            json!({ "spec": {
                "endpoint": cloud.base_url(),
                "credentials": { "source": "Secret", "secretRef": {
                    "namespace": "crossplane-system", "name": "fakecloud-creds", "key": "apiKey",
                } },
            } }),
        );
        let ctx = context(&cluster);
        Self {
            admin: AdminClient::new(cloud.base_url(), cloud.admin_token()),
            client: Client::new(cloud.base_url(), cloud.api_key()),
            cluster,
            ctx,
            connect: FakecloudConnect::default(),
            cloud,
        }
    }

    /// Creates a VPC managed resource as a user would; `spec` is merged
    /// over a minimal one.
    fn vpc(&self, name: &str, spec: Value) -> Vpc {
        let mut object = json!({ "spec": {
            "forProvider": { "region": REGION, "cidrBlock": "10.0.0.0/16" },
        } });
        json_patch::merge(&mut object, &json!({ "spec": spec }));
        serde_json::from_value(self.cluster.insert(&key::<Vpc>(name), object)).unwrap()
    }

    /// The managed resource as the API server holds it now.
    fn current<K: ManagedKind<FakecloudConnect>>(&self, name: &str) -> Option<K> {
        self.current_at(&key::<K>(name))
    }

    /// The managed resource at `at` (of any scope) as the API server holds
    /// it now.
    fn current_at<K: ManagedKind<FakecloudConnect>>(&self, at: &ObjectKey) -> Option<K> {
        self.cluster
            .object(at)
            .map(|o| serde_json::from_value(o).unwrap())
    }

    /// One reconcile of the current copy.
    async fn reconcile<K: ManagedKind<FakecloudConnect>>(&self, name: &str) -> Outcome {
        self.reconcile_at::<K>(&key::<K>(name)).await
    }

    /// One reconcile of the current copy of the resource at `at`.
    async fn reconcile_at<K: ManagedKind<FakecloudConnect>>(&self, at: &ObjectKey) -> Outcome {
        let mr: K = self.current_at(at).expect("the managed resource exists");
        reconcile_once(&mr, &self.ctx, &self.connect).await
    }

    /// How many resources of `kind` fakecloud holds.
    async fn cloud_count(&self, kind: Kind) -> usize {
        self.admin.resources(Some(kind), None).await.unwrap().len()
    }

    fn annotation<K: ManagedKind<FakecloudConnect>>(
        &self,
        name: &str,
        annotation: &str,
    ) -> Option<String> {
        self.cluster
            .object(&key::<K>(name))?
            .pointer(&format!(
                "/metadata/annotations/{}",
                annotation.replace('/', "~1")
            ))?
            .as_str()
            .map(str::to_owned)
    }

    /// `(status, message)` of a condition of the current copy.
    fn condition<K: ManagedKind<FakecloudConnect>>(
        &self,
        name: &str,
        type_: &str,
    ) -> Option<(String, String)> {
        self.condition_at(&key::<K>(name), type_)
    }

    /// `(status, message)` of a condition of the object at `at`.
    fn condition_at(&self, at: &ObjectKey, type_: &str) -> Option<(String, String)> {
        let object = self.cluster.object(at)?;
        let conditions = object.pointer("/status/conditions")?.as_array()?.clone();
        conditions
            .into_iter()
            .find(|c| c["type"] == type_)
            .map(|c| {
                (
                    c["status"].as_str().unwrap_or_default().to_owned(),
                    c["message"].as_str().unwrap_or_default().to_owned(),
                )
            })
    }

    /// What a provider that stopped mid-create leaves: the cloud accepted a
    /// create of a VPC in `cidr` under the resource's first idempotency key,
    /// and the resource records create-pending but no external name.
    /// Returns the cloud's id.
    async fn lost_create(&self, name: &str, cidr: &str) -> String {
        let mr: Vpc = self.current(name).unwrap();
        let uid = mr.metadata.uid.unwrap();
        let made = self
            .client
            .create_vpc(
                REGION,
                &serde_json::from_value(json!({ "cidrBlock": cidr, "tags": provider_tags(name) }))
                    .unwrap(),
                Some(&idempotency_key(&uid, None)),
            )
            .await
            .unwrap()
            .resource
            .id;
        self.cluster.edit(
            &key::<Vpc>(name),
            &json!({ "metadata": { "annotations": {
                EXTERNAL_CREATE_PENDING_ANNOTATION: jiff::Timestamp::now().to_string(),
            } } }),
        );
        made
    }

    /// The reasons of the Events written so far.
    fn event_reasons(&self) -> Vec<String> {
        self.cluster
            .all("v1", "Event")
            .iter()
            .filter_map(|e| e["reason"].as_str().map(str::to_owned))
            .collect()
    }
}

/// What one provider process shares between reconciles.
fn context(cluster: &Arc<MemoryCluster>) -> Context {
    runtime::testing::context(
        cluster.clone(),
        provider::provider_config::types(),
        Settings {
            provider_name: provider::PROVIDER_NAME.to_owned(),
            poll_interval: Duration::from_secs(60),
            min_poll_interval: MIN_POLL,
            pending_poll_interval: PENDING_POLL,
            poll_jitter: None,
            sync_interval: Duration::ZERO,
            external_tags: true,
            management_policies_enabled: true,
        },
    )
}

fn key<K: ManagedKind<FakecloudConnect>>(name: &str) -> ObjectKey {
    ObjectKey::of::<K>(None, name)
}

#[tokio::test]
async fn a_create_is_marked_pending_then_succeeded_and_makes_one_resource() {
    let f = Fixture::new().await;
    f.vpc("net", json!({}));

    let first = f.reconcile::<Vpc>("net").await;
    assert_eq!(first.result, "success");
    // fakecloud answered the create with the VPC, available (it provisions
    // instantly here): Ready at once, so the next look is a poll.
    assert_between(first.next, Duration::from_secs(57), Duration::from_secs(63));
    let id = f
        .annotation::<Vpc>("net", EXTERNAL_NAME_ANNOTATION)
        .expect("the cloud's id is recorded as the external name");
    let pending = f
        .annotation::<Vpc>("net", EXTERNAL_CREATE_PENDING_ANNOTATION)
        .expect("create-pending is written before the call");
    let succeeded = f
        .annotation::<Vpc>("net", EXTERNAL_CREATE_SUCCEEDED_ANNOTATION)
        .expect("create-succeeded is written after it");
    assert!(succeeded >= pending, "{succeeded} < {pending}");
    let mr: Vpc = f.current("net").unwrap();
    assert!(
        mr.metadata
            .finalizers
            .iter()
            .flatten()
            .any(|x| x == MANAGED_RESOURCE_FINALIZER)
    );
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1);
    assert!(f.client.get_vpc(REGION, &id).await.is_ok());
    assert_eq!(f.event_reasons(), ["CreatedExternalResource"]);
    let usage = f
        .cluster
        .object(&ObjectKey::of::<ProviderConfigUsage>(
            None,
            mr.metadata.uid.as_deref().unwrap(),
        ))
        .expect("the usage of the ProviderConfig is recorded");
    assert_eq!(usage["resourceRef"]["name"], "net");

    assert_eq!(f.condition::<Vpc>("net", TYPE_READY).unwrap().0, "True");
    assert_eq!(f.condition::<Vpc>("net", TYPE_SYNCED).unwrap().0, "True");

    // The next reconcile observes it: still Ready, nothing created again,
    // and nothing written (the steady state).
    let writes = f.cluster.writes();
    let second = f.reconcile::<Vpc>("net").await;
    assert_eq!(second.result, "success");
    assert!(matches!(second.next, Next::After(d) if d >= Duration::from_secs(57)));
    assert_eq!(f.condition::<Vpc>("net", TYPE_READY).unwrap().0, "True");
    assert_eq!(f.condition::<Vpc>("net", TYPE_SYNCED).unwrap().0, "True");
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1);
    assert_eq!(f.cluster.writes(), writes);
    assert_eq!(f.reconcile::<Vpc>("net").await.result, "success");
    assert_eq!(f.cluster.writes(), writes);
    f.cloud.shutdown().await.unwrap();
}

/// The `forProvider` of the VPC `name` as stored now.
fn for_provider(f: &Fixture, name: &str) -> Value {
    f.cluster
        .object(&key::<Vpc>(name))
        .and_then(|o| o.pointer("/spec/forProvider").cloned())
        .unwrap_or(Value::Null)
}

/// The `observedGeneration` of a condition of the VPC `name`.
fn observed_generation(f: &Fixture, name: &str, type_: &str) -> Option<i64> {
    let object = f.cluster.object(&key::<Vpc>(name))?;
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?
        .get("observedGeneration")?
        .as_i64()
}

#[tokio::test]
async fn a_create_answered_available_costs_five_writes_and_is_ready_at_once() {
    let f = Fixture::new().await;
    f.vpc("net", json!({ "forProvider": { "tags": { "team": "a" } } }));
    let mark = audit_mark(&f).await;

    let first = f.reconcile::<Vpc>("net").await;
    assert_eq!(first.result, "success");
    assert_eq!(
        f.cluster.writes(),
        5,
        "the ProviderConfigUsage; create-pending with the finalizer; the external name, \
         create-succeeded and the late-initialised spec; the Event; the status"
    );
    let calls = provider_calls_since(&f, mark).await;
    assert_eq!(calls.len(), 1, "the create only, no observe: {calls:?}");
    assert!(calls[0].starts_with("POST "), "{calls:?}");

    // The spec is late-initialised from the create's answer, the declared
    // values kept, in the one spec write (generation 2).
    let id = f
        .annotation::<Vpc>("net", EXTERNAL_NAME_ANNOTATION)
        .unwrap();
    assert_eq!(
        for_provider(&f, "net"),
        json!({
            "region": REGION, "cidrBlock": "10.0.0.0/16", "enableDnsSupport": true,
            "enableDnsHostnames": false, "instanceTenancy": "default",
            // Crossplane's tags, added at create, late-initialised into
            // the map beside the user's.
            "tags": { "team": "a", "crossplane-kind": "vpc.network.fakecloud.crossplane.io",
                      "crossplane-name": "net", "crossplane-providerconfig": "default",
                      "crossplane-providerconfig-kind": "ProviderConfig" },
        })
    );
    let mr: Vpc = f.current("net").unwrap();
    assert_eq!(mr.metadata.generation, Some(2));

    // The status already says what an observe would.
    let status = f.cluster.object(&key::<Vpc>("net")).unwrap()["status"].clone();
    assert_eq!(status["atProvider"]["id"], id.as_str());
    assert_eq!(status["atProvider"]["state"], "available");
    assert_eq!(status["drift"], json!({ "count": 0 }));
    for type_ in [TYPE_READY, TYPE_SYNCED, TYPE_UP_TO_DATE] {
        assert_eq!(
            f.condition::<Vpc>("net", type_).unwrap().0,
            "True",
            "{type_}"
        );
        assert_eq!(observed_generation(&f, "net", type_), Some(2), "{type_}");
    }
    assert_eq!(f.event_reasons(), ["CreatedExternalResource"]);
    assert_eq!(
        f.ctx.metrics().total_with(
            "crossplane_managed_resource_first_time_to_readiness_seconds_count",
            &[]
        ),
        1.0
    );

    // The next reconcile (a poll, or the watch's echo of our own writes)
    // observes the same: no write, no cloud change.
    let mark = audit_mark(&f).await;
    let second = f.reconcile::<Vpc>("net").await;
    assert_eq!(second.result, "success");
    assert_eq!(f.cluster.writes(), 5);
    let calls = provider_calls_since(&f, mark).await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].starts_with("GET "), "{calls:?}");
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1);
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_create_answered_pending_is_ready_when_an_observe_finds_it_available() {
    let f = Fixture::new().await;
    f.admin
        .set_timing(Kind::Vpc, Duration::from_millis(400))
        .await
        .unwrap();
    f.vpc("net", json!({}));

    let first = f.reconcile::<Vpc>("net").await;
    assert_eq!(first.result, "success");
    assert_eq!(
        first.next,
        Next::After(PENDING_POLL),
        "provisioning: look soon"
    );
    assert_eq!(f.cluster.writes(), 5);
    let (ready, _) = f.condition::<Vpc>("net", TYPE_READY).unwrap();
    assert_eq!(ready, "False");
    assert_eq!(f.condition::<Vpc>("net", TYPE_SYNCED).unwrap().0, "True");
    let status = f.cluster.object(&key::<Vpc>("net")).unwrap()["status"].clone();
    assert_eq!(status["atProvider"]["state"], "pending");
    assert_eq!(
        for_provider(&f, "net")["enableDnsSupport"],
        true,
        "late-initialised from the answer, pending or not"
    );

    // Still provisioning: nothing new to say.
    let again = f.reconcile::<Vpc>("net").await;
    assert_eq!(again.next, Next::After(PENDING_POLL));
    assert_eq!(f.cluster.writes(), 5);

    // Available: the observe that finds it so writes the status, once.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ready = f.reconcile::<Vpc>("net").await;
    assert_eq!(ready.result, "success");
    assert_between(ready.next, Duration::from_secs(57), Duration::from_secs(63));
    assert_eq!(f.condition::<Vpc>("net", TYPE_READY).unwrap().0, "True");
    assert_eq!(
        f.cluster.writes(),
        6,
        "the status only: the spec was filled"
    );
    assert_eq!(f.reconcile::<Vpc>("net").await.result, "success");
    assert_eq!(f.cluster.writes(), 6);
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1);
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_create_without_late_initialize_leaves_the_spec_and_is_ready_at_once() {
    let f = Fixture::new().await;
    f.vpc(
        "net",
        json!({ "managementPolicies": ["Observe", "Create", "Update", "Delete"] }),
    );

    assert_eq!(f.reconcile::<Vpc>("net").await.result, "success");
    assert_eq!(f.cluster.writes(), 5);
    assert_eq!(
        for_provider(&f, "net"),
        json!({ "region": REGION, "cidrBlock": "10.0.0.0/16" }),
        "the policies lack LateInitialize"
    );
    let mr: Vpc = f.current("net").unwrap();
    assert_eq!(mr.metadata.generation, Some(1));
    assert_eq!(f.condition::<Vpc>("net", TYPE_READY).unwrap().0, "True");

    assert_eq!(f.reconcile::<Vpc>("net").await.result, "success");
    assert_eq!(f.cluster.writes(), 5);
    assert_eq!(
        for_provider(&f, "net"),
        json!({ "region": REGION, "cidrBlock": "10.0.0.0/16" })
    );
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_reconcile_from_a_stale_copy_creates_nothing_and_retries_quietly() {
    let f = Fixture::new().await;
    f.vpc("net", json!({}));
    // A cached copy read before the first reconcile wrote. The finalizer is
    // there already in the real sequence, so the first write it leads to
    // is the guarded create-pending.
    let mut stale: Vpc = f.current("net").unwrap();
    stale.metadata.finalizers = Some(vec![MANAGED_RESOURCE_FINALIZER.to_owned()]);
    assert_eq!(f.reconcile::<Vpc>("net").await.result, "success");

    // Another replica, with its own cache, reconciles the stale copy: its
    // guarded create-pending is refused (409), and it creates nothing.
    let replica = context(&f.cluster);
    let outcome = reconcile_once(&stale, &replica, &f.connect).await;
    assert_eq!(outcome.result, "conflict");
    assert_eq!(outcome.next, Next::After(CONFLICT_RETRY));
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1, "no second VPC");
    assert_eq!(f.condition::<Vpc>("net", TYPE_SYNCED).unwrap().0, "True");
    assert_eq!(
        f.event_reasons(),
        ["CreatedExternalResource"],
        "a stale copy is no failure: no event"
    );

    // This process, handed the same copy by a cache that lags behind its
    // own writes, knows it is stale and makes no call at all.
    let writes = f.cluster.writes();
    // It waits for the watch to deliver the newer copy rather than
    // polling for it.
    let outcome = reconcile_once(&stale, &f.ctx, &f.connect).await;
    assert_eq!(outcome.result, "conflict");
    assert_eq!(outcome.next, Next::After(CATCH_UP_LIMIT));
    assert_eq!(f.cluster.writes(), writes);
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1);
    let current: Vpc = f.current("net").unwrap();
    let (uid, version) = (
        kube::ResourceExt::uid(&current).unwrap(),
        kube::ResourceExt::resource_version(&current).unwrap(),
    );
    assert!(
        watch_event_triggers(&f.ctx, &uid, &version),
        "the watch event of the newer copy, our own write, wakes it"
    );
    assert!(
        !watch_event_triggers(&f.ctx, &uid, &version),
        "and only once"
    );
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_create_whose_answer_was_lost_is_settled_by_its_idempotency_key() {
    let f = Fixture::new().await;
    f.vpc("net", json!({}));
    let made = f.lost_create("net", "10.0.0.0/16").await;

    assert_eq!(f.reconcile::<Vpc>("net").await.result, "success");
    assert_eq!(
        f.annotation::<Vpc>("net", EXTERNAL_NAME_ANNOTATION)
            .as_deref(),
        Some(made.as_str()),
        "the repeated create returned the resource the first one made"
    );
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1);
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn recording_a_create_retries_conflicts_and_a_failed_record_loses_nothing() {
    let f = Fixture::new().await;
    f.vpc("net", json!({}));
    // Two conflicts, then the record goes through: re-read and retried.
    f.cluster
        .refuse_writes_containing(EXTERNAL_CREATE_SUCCEEDED_ANNOTATION, &[409, 409]);
    assert_eq!(f.reconcile::<Vpc>("net").await.result, "success");
    assert!(
        f.annotation::<Vpc>("net", EXTERNAL_NAME_ANNOTATION)
            .is_some()
    );
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1);
    // The spec part of the record is derived again from each copy read,
    // and goes with the external name.
    assert_eq!(for_provider(&f, "net")["enableDnsSupport"], true);
    assert_eq!(f.condition::<Vpc>("net", TYPE_READY).unwrap().0, "True");

    // An overloaded API server fails the record (a 504 is not retried
    // there): the reconcile fails, and the next one repeats the create with
    // the same key.
    f.vpc("other", json!({}));
    f.cluster
        .refuse_writes_containing(EXTERNAL_CREATE_SUCCEEDED_ANNOTATION, &[504]);
    let failed = f.reconcile::<Vpc>("other").await;
    assert_eq!(failed.result, "error");
    assert_eq!(f.annotation::<Vpc>("other", EXTERNAL_NAME_ANNOTATION), None);
    assert_eq!(
        for_provider(&f, "other"),
        json!({ "region": REGION, "cidrBlock": "10.0.0.0/16" }),
        "the late-initialised spec is in the refused write, not one of its own"
    );
    assert_eq!(f.cloud_count(Kind::Vpc).await, 2);
    let (status, message) = f.condition::<Vpc>("other", TYPE_SYNCED).unwrap();
    assert_eq!(status, "False");
    assert!(message.contains("504"), "{message}");

    // Past the backoff, the retry records the same VPC: still two in all.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let retried = f.reconcile::<Vpc>("other").await;
    assert_eq!(
        retried.result,
        "success",
        "{:?}",
        f.condition::<Vpc>("other", TYPE_SYNCED)
    );
    assert!(
        f.annotation::<Vpc>("other", EXTERNAL_NAME_ANNOTATION)
            .is_some()
    );
    assert_eq!(for_provider(&f, "other")["enableDnsSupport"], true);
    assert_eq!(f.condition::<Vpc>("other", TYPE_READY).unwrap().0, "True");
    assert_eq!(f.cloud_count(Kind::Vpc).await, 2);
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_changed_spec_under_an_unknown_create_result_waits_for_a_human() {
    let f = Fixture::new().await;
    f.vpc("net", json!({}));
    // The lost create was for another CIDR block than the spec now asks.
    f.lost_create("net", "10.9.0.0/16").await;

    assert_eq!(f.reconcile::<Vpc>("net").await.result, "error");
    let (status, message) = f.condition::<Vpc>("net", TYPE_SYNCED).unwrap();
    assert_eq!(status, "False");
    assert!(
        message.contains("cannot determine creation result"),
        "{message}"
    );
    assert!(
        f.annotation::<Vpc>("net", EXTERNAL_CREATE_FAILED_ANNOTATION)
            .is_some()
    );
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1, "no second VPC");
    f.cloud.shutdown().await.unwrap();
}

/// Reconciles until the managed resource is gone, at most `limit` times.
async fn reconcile_until_gone(f: &Fixture, name: &str, limit: usize) {
    for _ in 0..limit {
        if f.current::<Vpc>(name).is_none() {
            return;
        }
        f.reconcile::<Vpc>(name).await;
    }
    assert!(f.current::<Vpc>(name).is_none(), "{name} is still there");
}

#[tokio::test]
async fn a_deleted_resource_is_deleted_in_the_cloud_before_its_finalizer_goes() {
    let f = Fixture::new().await;
    f.vpc("net", json!({}));
    f.reconcile::<Vpc>("net").await;
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1);

    f.cluster.delete(&key::<Vpc>("net"));
    assert!(f.current::<Vpc>("net").is_some(), "held by its finalizer");
    let outcome = f.reconcile::<Vpc>("net").await;
    assert_eq!(outcome.result, "success");
    assert!(
        f.event_reasons()
            .contains(&"DeletedExternalResource".to_owned())
    );
    reconcile_until_gone(&f, "net", 5).await;
    assert_eq!(f.cloud_count(Kind::Vpc).await, 0);
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_orphaned_resource_stays_in_the_cloud() {
    let f = Fixture::new().await;
    f.vpc("kept", json!({ "deletionPolicy": "Orphan" }));
    f.vpc(
        "unmanaged",
        json!({ "managementPolicies": ["Observe", "Create", "Update", "LateInitialize"] }),
    );
    f.reconcile::<Vpc>("kept").await;
    f.reconcile::<Vpc>("unmanaged").await;
    assert_eq!(f.cloud_count(Kind::Vpc).await, 2);

    for name in ["kept", "unmanaged"] {
        f.cluster.delete(&key::<Vpc>(name));
        assert_eq!(f.reconcile::<Vpc>(name).await.next, Next::Change);
        assert!(
            f.current::<Vpc>(name).is_none(),
            "{name}: finalizer removed"
        );
    }
    assert_eq!(f.cloud_count(Kind::Vpc).await, 2, "both left in the cloud");
    assert!(
        !f.event_reasons()
            .contains(&"DeletedExternalResource".to_owned())
    );
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn observe_only_of_a_missing_resource_reports_it_and_creates_nothing() {
    let f = Fixture::new().await;
    f.vpc("theirs", json!({ "managementPolicies": ["Observe"] }));
    f.cluster.edit(
        &key::<Vpc>("theirs"),
        &json!({ "metadata": { "annotations": { EXTERNAL_NAME_ANNOTATION: "vpc-0000000000000000" } } }),
    );

    // Looked at again on the poll interval (60 s, jittered by 5 %), not on
    // the error backoff: for an observer a missing resource is a state.
    let poll = Duration::from_secs(57)..=Duration::from_secs(63);
    for round in 0..3 {
        let outcome = f.reconcile::<Vpc>("theirs").await;
        assert_eq!(outcome.result, "missing", "round {round}");
        assert!(
            matches!(outcome.next, Next::After(wait) if poll.contains(&wait)),
            "round {round}: {:?}",
            outcome.next
        );
        let (status, message) = f.condition::<Vpc>("theirs", TYPE_SYNCED).unwrap();
        assert_eq!(status, "False");
        assert!(
            message.contains("external resource does not exist"),
            "{message}"
        );
    }
    assert_eq!(f.cloud_count(Kind::Vpc).await, 0);
    assert_eq!(
        f.event_reasons(),
        ["ReconcileError"],
        "one Warning when it went missing, none per poll"
    );
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_unsupported_policy_set_is_reported_and_waits_for_an_edit() {
    let f = Fixture::new().await;
    f.vpc("odd", json!({ "managementPolicies": ["Create", "Delete"] }));

    let outcome = f.reconcile::<Vpc>("odd").await;
    assert_eq!(outcome.next, Next::Change);
    let (status, message) = f.condition::<Vpc>("odd", TYPE_SYNCED).unwrap();
    assert_eq!(status, "False");
    assert!(
        message.contains("unsupported managementPolicies"),
        "{message}"
    );
    assert_eq!(f.cloud_count(Kind::Vpc).await, 0);
    assert_eq!(f.cluster.writes(), 1, "the status only");
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn failures_back_off_and_an_edit_ends_the_backoff() {
    let f = Fixture::new().await;
    f.vpc(
        "lost",
        json!({ "providerConfigRef": { "name": "missing" } }),
    );

    let first = f.reconcile::<Vpc>("lost").await;
    assert_eq!(
        (first.result, first.next),
        ("error", Next::After(Duration::from_secs(1)))
    );
    let (_, message) = f.condition::<Vpc>("lost", TYPE_SYNCED).unwrap();
    assert!(
        message.contains("ProviderConfig \"missing\" does not exist"),
        "{message}"
    );

    // The status write wakes the watch at once: the backoff holds.
    let early = f.reconcile::<Vpc>("lost").await;
    assert_eq!(early.result, "backoff");
    assert!(matches!(early.next, Next::After(d) if d <= Duration::from_secs(1)));

    // Once it is over, the next failure waits twice as long.
    tokio::time::sleep(Duration::from_millis(1_050)).await;
    let second = f.reconcile::<Vpc>("lost").await;
    assert_eq!(
        (second.result, second.next),
        ("error", Next::After(Duration::from_secs(2)))
    );

    // The same failure again raised the count of its one Event.
    let events = f.cluster.all("v1", "Event");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["reason"], "ReconcileError");
    assert_eq!(events[0]["count"], 2);

    // The user fixes the spec: reconciled at once, and it succeeds.
    f.cluster.edit(
        &key::<Vpc>("lost"),
        &json!({ "spec": { "providerConfigRef": { "name": "default" } } }),
    );
    assert_eq!(f.reconcile::<Vpc>("lost").await.result, "success");
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1);
    f.cloud.shutdown().await.unwrap();
}

/// A DatabaseInstance with a generated password, and what it needs.
fn database(f: &Fixture, name: &str, secret: Option<&str>) {
    let mut spec = json!({ "forProvider": {
        "region": REGION, "engine": "postgres", "instanceClass": "db.t3.micro",
        "allocatedStorage": 20, "masterUsername": "admin",
    } });
    if let Some(secret) = secret {
        spec["writeConnectionSecretToRef"] = json!({ "namespace": "apps", "name": secret });
    }
    f.cluster
        .insert(&key::<DatabaseInstance>(name), json!({ "spec": spec }));
}

#[tokio::test]
async fn a_generated_password_is_kept_before_the_create_that_uses_it() {
    let f = Fixture::new().await;
    database(&f, "db", Some("db-conn"));
    // The create call fails after the password was kept: the password
    // survives for the retry, which sends the same one.
    f.admin
        .add_fault(&FaultRuleSpec {
            method: Some("POST".into()),
            path_prefix: format!("/v1/regions/{REGION}/databaseInstances"),
            // Not one the client retries on its own.
            status: Some(400),
            times: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(f.reconcile::<DatabaseInstance>("db").await.result, "error");
    let secret_key = ObjectKey::of::<Secret>(Some("apps"), "db-conn");
    let kept: Secret = serde_json::from_value(f.cluster.object(&secret_key).unwrap()).unwrap();
    let password = kept.data.unwrap()["password"].clone();
    assert_eq!(password.0.len(), 32);
    assert_eq!(f.cloud_count(Kind::DatabaseInstance).await, 0);

    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(
        f.reconcile::<DatabaseInstance>("db").await.result,
        "success"
    );
    assert_eq!(f.cloud_count(Kind::DatabaseInstance).await, 1);
    // The create answered the instance, available: Ready, with its
    // connection details published in the same reconcile, so the next one
    // writes nothing.
    assert_eq!(
        f.condition::<DatabaseInstance>("db", TYPE_READY).unwrap().0,
        "True"
    );
    let writes = f.cluster.writes();
    f.reconcile::<DatabaseInstance>("db").await;
    assert_eq!(f.cluster.writes(), writes);
    let published: Secret = serde_json::from_value(f.cluster.object(&secret_key).unwrap()).unwrap();
    let data = published.data.unwrap();
    assert_eq!(data["password"], password, "the kept password, unchanged");
    let keys: Vec<&String> = data.keys().collect();
    assert_eq!(keys, ["endpoint", "password", "port", "username"]);
    let credentials: Credentials = serde_json::from_value(json!({
        "username": "admin", "password": String::from_utf8(password.0).unwrap(),
    }))
    .unwrap();
    let authenticated = f
        .client
        .authenticate_database_instance(REGION, "db", &credentials)
        .await;
    assert!(matches!(authenticated, Ok(true)), "{authenticated:?}");
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_password_that_cannot_be_kept_is_refused_before_any_create() {
    let f = Fixture::new().await;
    database(&f, "db", None);

    assert_eq!(f.reconcile::<DatabaseInstance>("db").await.result, "error");
    let (status, message) = f.condition::<DatabaseInstance>("db", TYPE_SYNCED).unwrap();
    assert_eq!(status, "False");
    assert!(
        message.contains("must keep a generated password: set spec.writeConnectionSecretToRef"),
        "{message}"
    );
    assert_eq!(f.cloud_count(Kind::DatabaseInstance).await, 0);
    assert!(
        f.cluster.all("v1", "Secret").len() == 1,
        "only the credentials"
    );
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_connection_secret_of_another_owner_is_never_written() {
    let f = Fixture::new().await;
    f.cluster.insert(
        &ObjectKey::of::<Secret>(Some("apps"), "db-conn"),
        json!({ "type": "Opaque", "data": { "note": "bWluZQ==" } }),
    );
    database(&f, "db", Some("db-conn"));

    assert_eq!(f.reconcile::<DatabaseInstance>("db").await.result, "error");
    let (_, message) = f.condition::<DatabaseInstance>("db", TYPE_SYNCED).unwrap();
    assert!(message.contains("refusing to overwrite"), "{message}");
    assert!(message.starts_with("connection Secret: "), "{message}");
    let untouched = f
        .cluster
        .object(&ObjectKey::of::<Secret>(Some("apps"), "db-conn"))
        .unwrap();
    assert_eq!(untouched["data"], json!({ "note": "bWluZQ==" }));
    assert_eq!(f.cloud_count(Kind::DatabaseInstance).await, 0);
    f.cloud.shutdown().await.unwrap();
}

/// A namespaced ProviderConfig `team` in `namespace`, with its credentials
/// Secret `creds` beside it.
fn team_config(f: &Fixture, namespace: &str) {
    f.cluster.insert(
        &ObjectKey::of::<Secret>(Some(namespace), "creds"),
        secret("apiKey", f.cloud.api_key()),
    );
    f.cluster.insert(
        &ObjectKey::of::<apis::kinds::provider_config::m::ProviderConfig>(Some(namespace), "team"),
        json!({ "spec": {
            "endpoint": f.cloud.base_url(),
            "credentials": { "source": "Secret", "secretRef": { "name": "creds", "key": "apiKey" } },
        } }),
    );
}

/// The legacy `default` ProviderConfig's copy as the ClusterProviderConfig
/// `default`, which namespaced resources use unless they name another.
fn cluster_default_config(f: &Fixture) {
    let config =
        ObjectKey::of::<apis::kinds::provider_config::m::ClusterProviderConfig>(None, "default");
    if f.cluster.object(&config).is_none() {
        let legacy = f
            .cluster
            .object(&ObjectKey::of::<ProviderConfig>(None, "default"));
        f.cluster
            .insert(&config, legacy.expect("the fixture's ProviderConfig"));
    }
}

/// A Secret holding `key: value`.
fn secret(key: &str, value: &str) -> Value {
    json!({ "data": { key: ByteString(value.as_bytes().to_vec()) } })
}

#[tokio::test]
async fn a_namespaced_database_keeps_to_its_namespace() {
    use apis::kinds::database_instance::m::DatabaseInstance;
    use apis::kinds::provider_config::m;
    use crossplane_types::well_known::{PROVIDER_CONFIG_KIND_LABEL, PROVIDER_CONFIG_NAME_LABEL};
    let f = Fixture::new().await;
    team_config(&f, "app");
    f.cluster.insert(
        &ObjectKey::of::<Secret>(Some("app"), "pw"),
        secret("password", "correct-horse-9"),
    );
    let at = ObjectKey::of::<DatabaseInstance>(Some("app"), "db");
    f.cluster.insert(
        &at,
        json!({ "spec": {
            "providerConfigRef": { "kind": "ProviderConfig", "name": "team" },
            "writeConnectionSecretToRef": { "name": "db-conn" },
            "forProvider": {
                "region": REGION, "engine": "postgres", "instanceClass": "db.t3.micro",
                "allocatedStorage": 20, "masterUsername": "admin",
                "masterPasswordSecretRef": { "name": "pw", "key": "password" },
            },
        } }),
    );

    assert_eq!(
        f.reconcile_at::<DatabaseInstance>(&at).await.result,
        "success"
    );
    assert_eq!(f.cloud_count(Kind::DatabaseInstance).await, 1);
    f.reconcile_at::<DatabaseInstance>(&at).await;

    // The connection Secret is in the resource's namespace, with the
    // password read from the resource's namespace.
    let conn: Secret = serde_json::from_value(
        f.cluster
            .object(&ObjectKey::of::<Secret>(Some("app"), "db-conn"))
            .expect("the connection Secret is in namespace app"),
    )
    .unwrap();
    assert_eq!(conn.data.unwrap()["password"].0, b"correct-horse-9");
    let secrets = f.cluster.all("v1", "Secret");
    assert!(
        secrets.iter().all(|s| s["metadata"]["namespace"] == "app"
            || s["metadata"]["namespace"] == "crossplane-system"),
        "{secrets:?}"
    );
    // The usage is namespaced, beside the resource, labelled as v2 does.
    let uid = f
        .current_at::<DatabaseInstance>(&at)
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let usage = f
        .cluster
        .object(&ObjectKey::of::<m::ProviderConfigUsage>(Some("app"), &uid))
        .expect("the usage is recorded in namespace app");
    assert_eq!(
        usage["metadata"]["labels"][PROVIDER_CONFIG_NAME_LABEL],
        "team"
    );
    assert_eq!(
        usage["metadata"]["labels"][PROVIDER_CONFIG_KIND_LABEL],
        "ProviderConfig"
    );
    assert_eq!(usage["resourceRef"]["kind"], "DatabaseInstance");
    assert!(
        f.cluster
            .all("fakecloud.crossplane.io/v1alpha1", "ProviderConfigUsage")
            .is_empty()
    );
    // Its Events are in its namespace too.
    let events = f.cluster.all("v1", "Event");
    assert!(!events.is_empty());
    assert!(
        events.iter().all(|e| e["metadata"]["namespace"] == "app"),
        "{events:?}"
    );
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_namespaced_resource_cannot_reach_another_namespaces_config_or_secrets() {
    use apis::kinds::database_instance::m::DatabaseInstance;
    use apis::kinds::provider_config::m;
    use apis::kinds::vpc::m::Vpc;
    let f = Fixture::new().await;
    // Another team's ProviderConfig, credentials and password, in "other".
    team_config(&f, "other");
    f.cluster.insert(
        &ObjectKey::of::<Secret>(Some("other"), "pw"),
        secret("password", "not-yours-123"),
    );
    f.cluster.insert(
        &ObjectKey::of::<m::ClusterProviderConfig>(None, "default"),
        json!({ "spec": {
            "endpoint": f.cloud.base_url(),
            "credentials": { "source": "Secret", "secretRef": {
                "namespace": "other", "name": "creds", "key": "apiKey" } },
        } }),
    );

    let vpc = ObjectKey::of::<Vpc>(Some("app"), "net");
    f.cluster.insert(
        &vpc,
        json!({ "spec": {
            "providerConfigRef": { "kind": "ProviderConfig", "name": "team" },
            "forProvider": { "region": REGION, "cidrBlock": "10.0.0.0/16" },
        } }),
    );
    assert_eq!(f.reconcile_at::<Vpc>(&vpc).await.result, "error");
    let (status, message) = f.condition_at(&vpc, TYPE_SYNCED).unwrap();
    assert_eq!(status, "False");
    assert!(
        message.contains(r#"ProviderConfig "team" in namespace "app" does not exist"#),
        "{message}"
    );

    // The default ClusterProviderConfig serves every namespace, but a
    // password Secret is looked up in the resource's own namespace only.
    let db = ObjectKey::of::<DatabaseInstance>(Some("app"), "db");
    f.cluster.insert(
        &db,
        json!({ "spec": {
            "forProvider": {
                "region": REGION, "engine": "postgres", "instanceClass": "db.t3.micro",
                "allocatedStorage": 20, "masterUsername": "admin",
                "masterPasswordSecretRef": { "name": "pw", "key": "password" },
            },
        } }),
    );
    assert_eq!(
        f.reconcile_at::<DatabaseInstance>(&db).await.result,
        "error"
    );
    let (status, message) = f.condition_at(&db, TYPE_SYNCED).unwrap();
    assert_eq!(status, "False");
    assert!(
        message.contains("Secret app/pw does not exist"),
        "{message}"
    );
    assert_eq!(f.cloud_count(Kind::Vpc).await, 0);
    assert_eq!(f.cloud_count(Kind::DatabaseInstance).await, 0);
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_namespaced_selector_looks_in_its_namespace_unless_it_names_another() {
    use apis::kinds::subnet::m::Subnet;
    use apis::kinds::vpc::m::Vpc;
    let f = Fixture::new().await;
    cluster_default_config(&f);
    // Two VPCs carry the selected label: one in net, one in app.
    let mut ids = Vec::new();
    for (namespace, cidr) in [("net", "10.1.0.0/16"), ("app", "10.2.0.0/16")] {
        let id = f
            .client
            .create_vpc(
                REGION,
                &serde_json::from_value(json!({ "cidrBlock": cidr })).unwrap(),
                None,
            )
            .await
            .unwrap()
            .resource
            .id;
        f.cluster.insert(
            &ObjectKey::of::<Vpc>(Some(namespace), "shared"),
            json!({
                "metadata": { "labels": { "network": "shared" } },
                "spec": { "forProvider": { "region": REGION } },
                "status": { "atProvider": { "id": id } },
            }),
        );
        ids.push(id);
    }
    let subnet = |name: &str, cidr: &str, selector: Value| {
        let at = ObjectKey::of::<Subnet>(Some("app"), name);
        f.cluster.insert(
            &at,
            json!({ "spec": { "forProvider": {
                "region": REGION, "vpcIdSelector": selector,
                "cidrBlock": cidr, "availabilityZone": "us-east-1a",
            } } }),
        );
        at
    };
    let across = subnet(
        "across",
        "10.1.1.0/24",
        json!({ "matchLabels": { "network": "shared" }, "namespace": "net" }),
    );
    let local = subnet(
        "local",
        "10.2.1.0/24",
        json!({ "matchLabels": { "network": "shared" } }),
    );
    let vpc_id = |at: &ObjectKey| {
        f.cluster.object(at).unwrap()["spec"]["forProvider"]["vpcId"]
            .as_str()
            .map(str::to_owned)
    };

    f.reconcile_at::<Subnet>(&across).await;
    assert_eq!(vpc_id(&across).as_ref(), Some(&ids[0]), "selected in net");
    // The same selector without a namespace selects in the Subnet's own.
    f.reconcile_at::<Subnet>(&local).await;
    assert_eq!(vpc_id(&local).as_ref(), Some(&ids[1]), "selected in app");
    let subnets = f.admin.resources(Some(Kind::Subnet), None).await.unwrap();
    let mut in_vpcs: Vec<&str> = subnets
        .iter()
        .filter_map(|s| s.resource["vpcId"].as_str())
        .collect();
    in_vpcs.sort_unstable();
    let mut expected: Vec<&str> = ids.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(in_vpcs, expected, "one Subnet in each VPC");
    f.cloud.shutdown().await.unwrap();
}

/// A namespaced DatabaseInstance `name` in `namespace`, on the default
/// ClusterProviderConfig (the legacy default's copy), with `annotations`.
fn namespaced_database(f: &Fixture, namespace: &str, name: &str, annotations: Value) -> ObjectKey {
    use apis::kinds::database_instance::m::DatabaseInstance;
    cluster_default_config(f);
    let at = ObjectKey::of::<DatabaseInstance>(Some(namespace), name);
    f.cluster.insert(
        &at,
        json!({
            "metadata": { "annotations": annotations },
            "spec": {
                "writeConnectionSecretToRef": { "name": format!("{name}-conn") },
                "forProvider": {
                    "region": REGION, "engine": "postgres", "instanceClass": "db.t3.micro",
                    "allocatedStorage": 20, "masterUsername": "admin",
                },
            },
        }),
    );
    at
}

#[tokio::test]
async fn a_namespaced_resource_never_takes_over_another_namespaces_cloud_name() {
    use apis::kinds::database_instance::m::DatabaseInstance;
    let f = Fixture::new().await;
    let theirs = namespaced_database(&f, "team-a", "orders", json!({}));
    assert_eq!(
        f.reconcile_at::<DatabaseInstance>(&theirs).await.result,
        "success"
    );
    assert_eq!(f.cloud_count(Kind::DatabaseInstance).await, 1);

    // The same metadata.name in another namespace: the cloud name is taken,
    // so it is reported and nothing of the other one is touched.
    let mine = namespaced_database(&f, "team-b", "orders", json!({}));
    let mark = f.admin.audit(&Default::default()).await.unwrap().len();
    assert_eq!(
        f.reconcile_at::<DatabaseInstance>(&mine).await.result,
        "error"
    );
    let (status, message) = f.condition_at(&mine, TYPE_SYNCED).unwrap();
    assert_eq!(status, "False");
    assert!(
        message.contains(r#"already has a DatabaseInstance named "orders""#),
        "{message}"
    );
    let annotations = f.cluster.object(&mine).unwrap()["metadata"]["annotations"].clone();
    assert!(
        annotations.get(EXTERNAL_NAME_ANNOTATION).is_none(),
        "{annotations}"
    );
    let calls = f.admin.audit(&Default::default()).await.unwrap();
    assert!(
        calls[mark..].iter().all(|c| c.method == "GET"),
        "only a read: {:?}",
        &calls[mark..]
    );
    // Its deletion deletes nothing in the cloud.
    f.cluster.delete(&mine);
    assert!(f.cluster.object(&mine).is_none(), "no finalizer was added");
    assert_eq!(f.cloud_count(Kind::DatabaseInstance).await, 1);

    // Named deliberately by the annotation, it manages that one.
    let adopting = namespaced_database(
        &f,
        "team-c",
        "orders",
        json!({ EXTERNAL_NAME_ANNOTATION: "orders" }),
    );
    assert_eq!(
        f.reconcile_at::<DatabaseInstance>(&adopting).await.result,
        "success"
    );
    assert_eq!(f.cloud_count(Kind::DatabaseInstance).await, 1);
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_create_refused_for_a_taken_name_gives_up_the_claim() {
    use apis::kinds::database_instance::m::DatabaseInstance;
    let f = Fixture::new().await;
    let at = namespaced_database(&f, "team-b", "orders", json!({}));
    // Someone takes the name between the observation and the create.
    f.admin
        .add_fault(&FaultRuleSpec {
            method: Some("POST".into()),
            path_prefix: format!("/v1/regions/{REGION}/databaseInstances"),
            status: Some(409),
            times: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        f.reconcile_at::<DatabaseInstance>(&at).await.result,
        "error"
    );
    let (_, message) = f.condition_at(&at, TYPE_SYNCED).unwrap();
    assert!(message.contains("did not create"), "{message}");
    let annotations = f.cluster.object(&at).unwrap()["metadata"]["annotations"].clone();
    assert!(
        annotations.get(EXTERNAL_NAME_ANNOTATION).is_none(),
        "{annotations}"
    );
    assert!(
        annotations.get(EXTERNAL_CREATE_FAILED_ANNOTATION).is_some(),
        "{annotations}"
    );
    assert_eq!(f.cloud_count(Kind::DatabaseInstance).await, 0);

    // Once the name is free again, the next attempt creates it, claimed.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(
        f.reconcile_at::<DatabaseInstance>(&at).await.result,
        "success"
    );
    let annotations = f.cluster.object(&at).unwrap()["metadata"]["annotations"].clone();
    assert_eq!(annotations[EXTERNAL_NAME_ANNOTATION], "orders");
    assert_eq!(f.cloud_count(Kind::DatabaseInstance).await, 1);
    f.cloud.shutdown().await.unwrap();
}

/// A VPC named `name`, created and reconciled until Ready; returns the
/// outcome of the reconcile that found it Ready.
async fn ready_vpc(f: &Fixture, name: &str) -> Outcome {
    f.vpc(name, json!({}));
    assert_eq!(f.reconcile::<Vpc>(name).await.result, "success", "create");
    let ready = f.reconcile::<Vpc>(name).await;
    assert_eq!(ready.result, "success");
    assert_eq!(
        f.condition::<Vpc>(name, TYPE_READY)
            .map(|(s, _)| s)
            .as_deref(),
        Some("True")
    );
    ready
}

/// The tags the provider adds to a VPC `name` it creates here (a legacy
/// VPC on the ProviderConfig `default`).
fn provider_tags(name: &str) -> serde_json::Map<String, Value> {
    let config = crossplane_types::scope::ProviderConfigKey {
        kind: crossplane_types::scope::ProviderConfigKind::Legacy,
        namespace: None,
        name: "default".into(),
    };
    runtime::tags::external_tags(
        "VPC",
        "network.fakecloud.crossplane.io",
        name,
        &config,
        None,
    )
    .into_iter()
    .map(|(key, value)| (key.to_owned(), Value::String(value)))
    .collect()
}

#[tokio::test]
async fn a_created_resource_carries_crossplanes_tags_under_the_users_and_never_drifts() {
    let f = Fixture::new().await;
    f.vpc(
        "tagged",
        json!({ "forProvider": { "tags": { "team": "a", "crossplane-name": "mine" } } }),
    );
    assert_eq!(f.reconcile::<Vpc>("tagged").await.result, "success");
    let id = f
        .annotation::<Vpc>("tagged", EXTERNAL_NAME_ANNOTATION)
        .unwrap();
    let vpc = f.client.get_vpc(REGION, &id).await.unwrap().resource;
    let mut expected = provider_tags("tagged");
    expected.insert("team".into(), json!("a"));
    expected.insert("crossplane-name".into(), json!("mine"));
    assert_eq!(
        serde_json::to_value(&vpc.tags).unwrap(),
        Value::Object(expected),
        "Crossplane's tags under the user's: the user's value wins"
    );

    // Polls find nothing to change: the added tags are no drift.
    let mark = audit_mark(&f).await;
    for _ in 0..2 {
        assert_eq!(f.reconcile::<Vpc>("tagged").await.result, "success");
    }
    let calls = provider_calls_since(&f, mark).await;
    assert!(calls.iter().all(|c| c.starts_with("GET ")), "{calls:?}");
    let status = f.cluster.object(&key::<Vpc>("tagged")).unwrap()["status"].clone();
    assert_eq!(status["drift"], json!({ "count": 0 }), "{status}");
    assert_ne!(
        f.condition::<Vpc>("tagged", TYPE_UP_TO_DATE)
            .map(|(s, _)| s)
            .as_deref(),
        Some("False"),
        "nothing drifted"
    );
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_observed_resource_is_never_tagged() {
    let f = Fixture::new().await;
    let theirs = f
        .client
        .create_vpc(
            REGION,
            &serde_json::from_value(
                json!({ "cidrBlock": "10.7.0.0/16", "tags": { "owner": "them" } }),
            )
            .unwrap(),
            None,
        )
        .await
        .unwrap()
        .resource;
    let mark = audit_mark(&f).await;
    f.vpc("theirs", json!({ "managementPolicies": ["Observe"] }));
    annotate_vpc(&f, "theirs", json!({ EXTERNAL_NAME_ANNOTATION: theirs.id }));
    for _ in 0..2 {
        assert_eq!(f.reconcile::<Vpc>("theirs").await.result, "success");
    }
    let calls = provider_calls_since(&f, mark).await;
    assert!(calls.iter().all(|c| c.starts_with("GET ")), "{calls:?}");
    let now = f.client.get_vpc(REGION, &theirs.id).await.unwrap().resource;
    assert_eq!(now.tags, theirs.tags, "no tag of Crossplane's added");
    f.cloud.shutdown().await.unwrap();
}

/// Sets (or, with `null`, removes) annotations of the VPC `name` as a user.
fn annotate_vpc(f: &Fixture, name: &str, annotations: Value) {
    f.cluster.edit(
        &key::<Vpc>(name),
        &json!({ "metadata": { "annotations": annotations } }),
    );
}

/// The calls made with an API key (the provider's) after `mark`.
async fn provider_calls_since(f: &Fixture, mark: i64) -> Vec<String> {
    let query = fakecloud::model::AuditQuery {
        actor: Some(fakecloud::model::Actor::Api),
        after_seq: Some(mark),
        ..Default::default()
    };
    let entries = f.admin.audit(&query).await.unwrap();
    entries
        .iter()
        .map(|e| format!("{} {}", e.method, e.path))
        .collect()
}

/// The newest audit sequence number.
async fn audit_mark(f: &Fixture) -> i64 {
    let entries = f.admin.audit(&Default::default()).await.unwrap();
    entries.iter().map(|e| e.seq).max().unwrap_or(0)
}

fn assert_between(next: Next, low: Duration, high: Duration) {
    let Next::After(wait) = next else {
        panic!("expected a poll, got {next:?}")
    };
    assert!(
        low <= wait && wait <= high,
        "{wait:?} not in {low:?}..={high:?}"
    );
}

#[tokio::test]
async fn an_invalid_poll_interval_is_reported_and_calls_nothing_until_it_changes() {
    let f = Fixture::new().await;
    ready_vpc(&f, "net").await;
    let mark = audit_mark(&f).await;

    annotate_vpc(&f, "net", json!({ POLL_INTERVAL_ANNOTATION: "5mins" }));
    let outcome = f.reconcile::<Vpc>("net").await;
    assert_eq!(
        outcome.next,
        Next::Change,
        "no retry until the object changes"
    );
    let (status, message) = f.condition::<Vpc>("net", TYPE_SYNCED).unwrap();
    assert_eq!(status, "False");
    assert!(
        message.contains("crossplane.io/poll-interval")
            && message.contains("\"5mins\"")
            && message.contains("\"30s\""),
        "{message}"
    );
    let synced = f.cluster.object(&key::<Vpc>("net")).unwrap()["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == TYPE_SYNCED)
        .cloned()
        .unwrap();
    assert_eq!(synced["reason"], "ReconcileError");
    assert_eq!(provider_calls_since(&f, mark).await, Vec::<String>::new());

    // Zero and negative durations are refused the same way.
    for bad in ["0s", "-1m"] {
        annotate_vpc(&f, "net", json!({ POLL_INTERVAL_ANNOTATION: bad }));
        assert_eq!(f.reconcile::<Vpc>("net").await.next, Next::Change);
        let (status, message) = f.condition::<Vpc>("net", TYPE_SYNCED).unwrap();
        assert_eq!(status, "False");
        assert!(message.contains(&format!("{bad:?}")), "{message}");
    }
    assert_eq!(provider_calls_since(&f, mark).await, Vec::<String>::new());

    // A new resource with an invalid value is not created either.
    f.vpc("fresh", json!({}));
    annotate_vpc(&f, "fresh", json!({ POLL_INTERVAL_ANNOTATION: "soon" }));
    assert_eq!(f.reconcile::<Vpc>("fresh").await.next, Next::Change);
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1, "only net's VPC");

    // Fixed, the resource is reconciled and polled at its own interval.
    annotate_vpc(&f, "net", json!({ POLL_INTERVAL_ANNOTATION: "10s" }));
    let outcome = f.reconcile::<Vpc>("net").await;
    assert_eq!(outcome.result, "success");
    assert_between(
        outcome.next,
        Duration::from_millis(9_500),
        Duration::from_millis(10_500),
    );
    assert_eq!(
        f.condition::<Vpc>("net", TYPE_SYNCED).unwrap().0,
        "True",
        "the error is cleared"
    );
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_valid_poll_interval_sets_the_next_poll_never_below_the_minimum() {
    let f = Fixture::new().await;
    // Without the annotation: the provider's --poll-interval (60 s here),
    // moved by up to 5 % either side (the default jitter).
    let ready = ready_vpc(&f, "net").await;
    assert_between(ready.next, Duration::from_secs(57), Duration::from_secs(63));

    annotate_vpc(&f, "net", json!({ POLL_INTERVAL_ANNOTATION: "1h30m" }));
    let outcome = f.reconcile::<Vpc>("net").await;
    assert_eq!(outcome.result, "success");
    assert_between(
        outcome.next,
        Duration::from_secs(5_130),
        Duration::from_secs(5_670),
    );

    // Shorter than --min-poll-interval (2 s here): clamped up to it, and
    // the jitter never takes it below.
    annotate_vpc(&f, "net", json!({ POLL_INTERVAL_ANNOTATION: "500ms" }));
    let outcome = f.reconcile::<Vpc>("net").await;
    assert_between(outcome.next, MIN_POLL, MIN_POLL.mul_f64(1.05));

    // Removed: back to the provider's.
    annotate_vpc(&f, "net", json!({ POLL_INTERVAL_ANNOTATION: null }));
    let outcome = f.reconcile::<Vpc>("net").await;
    assert_between(
        outcome.next,
        Duration::from_secs(57),
        Duration::from_secs(63),
    );
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_new_reconcile_request_is_handled_and_recorded_even_in_backoff() {
    let f = Fixture::new().await;
    ready_vpc(&f, "net").await;
    let handled = |f: &Fixture| {
        f.cluster.object(&key::<Vpc>("net")).unwrap()["status"]
            .get("lastHandledReconcileAt")
            .cloned()
    };
    assert_eq!(handled(&f), None, "no request yet");

    annotate_vpc(
        &f,
        "net",
        json!({ RECONCILE_REQUESTED_AT_ANNOTATION: "t1" }),
    );
    let mark = audit_mark(&f).await;
    assert_eq!(f.reconcile::<Vpc>("net").await.result, "success");
    assert_eq!(handled(&f), Some(json!("t1")));
    assert!(
        !provider_calls_since(&f, mark).await.is_empty(),
        "the requested reconcile observed the cloud"
    );

    // A failed reconcile puts the resource in backoff; a new token cuts it
    // short, and is recorded even though that reconcile fails too.
    f.admin
        .add_fault(&FaultRuleSpec {
            method: Some("GET".into()),
            path_prefix: format!("/v1/regions/{REGION}/vpcs"),
            // Not retried by the client, unlike 5xx.
            status: Some(403),
            times: Some(2),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(f.reconcile::<Vpc>("net").await.result, "error");
    assert_eq!(f.reconcile::<Vpc>("net").await.result, "backoff");
    annotate_vpc(
        &f,
        "net",
        json!({ RECONCILE_REQUESTED_AT_ANNOTATION: "t2" }),
    );
    assert_eq!(f.reconcile::<Vpc>("net").await.result, "error");
    assert_eq!(handled(&f), Some(json!("t2")));

    // Handled tokens ask for nothing more: the backoff holds again.
    assert_eq!(f.reconcile::<Vpc>("net").await.result, "backoff");
    f.cloud.shutdown().await.unwrap();
}

/// A change-log service (Crossplane's sidecar) on a Unix socket at
/// `socket`: every request it takes arrives on the returned channel, with
/// the gRPC path it came on.
fn serve_change_logs(
    socket: &std::path::Path,
) -> tokio::sync::mpsc::UnboundedReceiver<(String, runtime::changelog::ChangeLogEntry)> {
    use runtime::changelog::{SendChangeLogRequest, SendChangeLogResponse};
    let listener = tokio::net::UnixListener::bind(socket).expect("the socket binds");
    let incoming = futures::stream::unfold(listener, |listener| async move {
        let accepted = listener.accept().await.map(|(stream, _)| stream);
        Some((accepted, listener))
    });
    let (sent, received) = tokio::sync::mpsc::unbounded_channel();
    let service = tower::service_fn(move |request: axum::http::Request<tonic::body::Body>| {
        let sent = sent.clone();
        async move {
            let path = request.uri().path().to_owned();
            let handler =
                tower::service_fn(move |request: tonic::Request<SendChangeLogRequest>| {
                    let entry = request
                        .into_inner()
                        .entry
                        .expect("a request holds an entry");
                    sent.send((path.clone(), entry)).expect("the test listens");
                    async { Ok::<_, tonic::Status>(tonic::Response::new(SendChangeLogResponse {})) }
                });
            let codec =
                tonic_prost::ProstCodec::<SendChangeLogResponse, SendChangeLogRequest>::default();
            let mut grpc = tonic::server::Grpc::new(codec);
            Ok::<_, std::convert::Infallible>(grpc.unary(handler, request).await)
        }
    });
    tokio::spawn(tonic::transport::Server::builder().serve_with_incoming(service, incoming));
    received
}

/// The next change-log entry the service received, within a few seconds.
async fn next_change_log(
    received: &mut tokio::sync::mpsc::UnboundedReceiver<(
        String,
        runtime::changelog::ChangeLogEntry,
    )>,
) -> runtime::changelog::ChangeLogEntry {
    let (path, entry) = tokio::time::timeout(Duration::from_secs(5), received.recv())
        .await
        .expect("a change-log entry arrives")
        .expect("the service runs");
    assert_eq!(
        path,
        "/changelogs.proto.v1alpha1.ChangeLogService/SendChangeLog"
    );
    entry
}

/// A `google.protobuf.Value` of a snapshot at `path` (keys), as a string.
fn snapshot_string(entry: &runtime::changelog::ChangeLogEntry, path: &[&str]) -> Option<String> {
    use prost_types::value::Kind;
    let mut fields = &entry.snapshot.as_ref()?.fields;
    let (last, parents) = path.split_last()?;
    for key in parents {
        match &fields.get(*key)?.kind {
            Some(Kind::StructValue(object)) => fields = &object.fields,
            _ => return None,
        }
    }
    match &fields.get(*last)?.kind {
        Some(Kind::StringValue(s)) => Some(s.clone()),
        _ => None,
    }
}

#[tokio::test]
async fn creates_updates_and_deletes_are_sent_to_the_change_log_service_in_order() {
    use apis::kinds::vpc::m::Vpc;
    use kube::Resource;
    use runtime::changelog::{ChangeLogger, OperationType};
    let mut f = Fixture::new().await;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("changelogs.sock");
    let mut received = serve_change_logs(&socket);
    let logger = ChangeLogger::start(&socket, "provider-fakecloud:v0.1.0", f.ctx.metrics());
    f.ctx.set_change_logger(logger);
    cluster_default_config(&f);
    let at = ObjectKey::of::<Vpc>(Some("team-a"), "net");
    f.cluster.insert(
        &at,
        json!({ "spec": { "forProvider": {
            "region": REGION, "cidrBlock": "10.0.0.0/16", "tags": { "env": "dev" },
        } } }),
    );

    // Create.
    assert_eq!(f.reconcile_at::<Vpc>(&at).await.result, "success");
    let id = f.cluster.object(&at).unwrap()["metadata"]["annotations"][EXTERNAL_NAME_ANNOTATION]
        .as_str()
        .expect("the cloud's id is recorded")
        .to_owned();
    let created = next_change_log(&mut received).await;
    assert_eq!(created.operation, OperationType::Create as i32);
    assert_eq!(created.provider, "provider-fakecloud:v0.1.0");
    assert_eq!(created.api_version, Vpc::api_version(&()));
    assert_eq!(created.kind, "VPC");
    assert_eq!(created.name, "net");
    assert_eq!(created.external_name, id);
    assert_eq!(created.error_message, None);
    assert_eq!(
        created.additional_details,
        [("namespace".to_owned(), "team-a".to_owned())].into()
    );
    assert!(created.timestamp.is_some());
    assert_eq!(
        snapshot_string(&created, &["spec", "forProvider", "tags", "env"]).as_deref(),
        Some("dev"),
        "the snapshot holds the spec"
    );
    assert_eq!(
        snapshot_string(&created, &["metadata", "namespace"]).as_deref(),
        Some("team-a")
    );

    // Observed and Ready: nothing changes, nothing is sent.
    assert_eq!(f.reconcile_at::<Vpc>(&at).await.result, "success");
    assert_eq!(f.condition_at(&at, TYPE_READY).unwrap().0, "True");

    // Update.
    f.cluster.edit(
        &at,
        &json!({ "spec": { "forProvider": { "tags": { "env": "prod" } } } }),
    );
    assert_eq!(f.reconcile_at::<Vpc>(&at).await.result, "success");
    let updated = next_change_log(&mut received).await;
    assert_eq!(updated.operation, OperationType::Update as i32);
    assert_eq!(updated.external_name, id);
    assert_eq!(updated.name, "net");
    assert_eq!(
        snapshot_string(&updated, &["spec", "forProvider", "tags", "env"]).as_deref(),
        Some("prod")
    );
    assert_eq!(updated.error_message, None);

    // A delete the cloud refuses is logged with its error, then the retry.
    f.admin
        .add_fault(&FaultRuleSpec {
            method: Some("DELETE".into()),
            path_prefix: format!("/v1/regions/{REGION}/vpcs"),
            // Not retried by the client, unlike 5xx.
            status: Some(403),
            times: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    f.cluster.delete(&at);
    assert_eq!(f.reconcile_at::<Vpc>(&at).await.result, "error");
    let refused = next_change_log(&mut received).await;
    assert_eq!(refused.operation, OperationType::Delete as i32);
    assert!(
        refused
            .error_message
            .as_deref()
            .is_some_and(|m| !m.is_empty()),
        "{refused:?}"
    );
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(f.reconcile_at::<Vpc>(&at).await.result, "success");
    let deleted = next_change_log(&mut received).await;
    assert_eq!(deleted.operation, OperationType::Delete as i32);
    assert_eq!(deleted.external_name, id);
    assert_eq!(deleted.error_message, None);
    assert_eq!(
        deleted.additional_details,
        [("namespace".to_owned(), "team-a".to_owned())].into()
    );
    assert!(
        snapshot_string(&deleted, &["metadata", "deletionTimestamp"]).is_some(),
        "the snapshot is the resource being deleted"
    );
    for _ in 0..5 {
        if f.cluster.object(&at).is_none() {
            break;
        }
        f.reconcile_at::<Vpc>(&at).await;
    }
    assert!(f.cluster.object(&at).is_none());
    assert!(received.try_recv().is_err(), "nothing else was sent");
    assert_eq!(
        f.ctx.metrics().total("provider_changelog_errors_total"),
        0.0
    );
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_missing_change_log_socket_neither_fails_nor_delays_a_reconcile() {
    use runtime::changelog::ChangeLogger;
    let mut f = Fixture::new().await;
    let dir = tempfile::tempdir().unwrap();
    let send_timeout = Duration::from_secs(3);
    let logger = ChangeLogger::start_with(
        dir.path().join("absent.sock"),
        "provider-fakecloud:v0.1.0",
        f.ctx.metrics(),
        16,
        send_timeout,
    );
    f.ctx.set_change_logger(logger);
    f.vpc("net", json!({}));

    let started = std::time::Instant::now();
    assert_eq!(f.reconcile::<Vpc>("net").await.result, "success");
    assert!(
        started.elapsed() < send_timeout,
        "the reconcile waited for the change log: {:?}",
        started.elapsed()
    );
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1);
    assert!(
        f.annotation::<Vpc>("net", EXTERNAL_NAME_ANNOTATION)
            .is_some()
    );

    // The entry that could not be sent is counted, once its send gives up.
    let errors = || {
        f.ctx
            .metrics()
            .total_with("provider_changelog_errors_total", &[("reason", "send")])
    };
    let deadline = std::time::Instant::now() + send_timeout * 3;
    while errors() < 1.0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(errors(), 1.0);

    // Once the service is there, the next change reaches it.
    let mut received = serve_change_logs(&dir.path().join("absent.sock"));
    f.vpc("other", json!({}));
    assert_eq!(f.reconcile::<Vpc>("other").await.result, "success");
    let created = next_change_log(&mut received).await;
    assert_eq!(created.name, "other");
    assert_eq!(errors(), 1.0);
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn standard_metrics_follow_a_create_a_drift_and_a_deletion() {
    let f = Fixture::new().await;
    let gvk = runtime::metrics::gvk_label::<Vpc>();
    assert_eq!(gvk, "network.fakecloud.crossplane.io/v1alpha1, Kind=VPC");
    let controller = runtime::metrics::controller_name::<Vpc>();
    assert_eq!(controller, "managed/vpc.network.fakecloud.crossplane.io");
    let metrics = f.ctx.metrics();
    let of_kind = |family: &str| metrics.total_with(family, &[("gvk", gvk.as_str())]);
    let states = || {
        ["exists", "ready", "synced"].map(|s| of_kind(&format!("crossplane_managed_resource_{s}")))
    };
    let samples = |h: &str| of_kind(&format!("crossplane_managed_resource_{h}_seconds_count"));
    let results = |r: &str| {
        metrics.total_with(
            "controller_runtime_reconcile_total",
            &[("controller", controller.as_str()), ("result", r)],
        )
    };
    let updates = || metrics.total_with("provider_cloud_calls_total", &[("operation", "update")]);

    // Created, and the create's answer shows it available: it exists and
    // is Synced and Ready, once.
    f.vpc("net", json!({ "forProvider": { "tags": { "team": "a" } } }));
    assert_eq!(f.reconcile::<Vpc>("net").await.result, "success");
    assert_eq!(states(), [1.0, 1.0, 1.0]);
    assert_eq!(samples("first_time_to_reconcile"), 1.0);
    assert_eq!(samples("first_time_to_readiness"), 1.0);
    assert_eq!(results("requeue_after"), 1.0, "a create asks to look again");

    // Later looks add no first-time samples.
    f.reconcile::<Vpc>("net").await;
    assert_eq!(states(), [1.0, 1.0, 1.0]);
    f.reconcile::<Vpc>("net").await;
    assert_eq!(samples("first_time_to_reconcile"), 1.0);
    assert_eq!(samples("first_time_to_readiness"), 1.0);
    assert_eq!(samples("drift"), 0.0);

    // An outside actor changes the tags: the next reconcile finds the
    // drift, updates the VPC, and times how long it was last in sync.
    let id = f
        .annotation::<Vpc>("net", EXTERNAL_NAME_ANNOTATION)
        .unwrap();
    let address = fakecloud::client::Address {
        region: Some(REGION.to_owned()),
        ..Default::default()
    };
    f.admin
        .patch_resource(
            Kind::Vpc,
            &id,
            &address,
            &json!({ "tags": { "team": "b" } }),
        )
        .await
        .unwrap();
    let before = updates();
    assert_eq!(f.reconcile::<Vpc>("net").await.result, "success");
    assert_eq!(updates(), before + 1.0, "the drift was corrected");
    assert_eq!(samples("drift"), 1.0);
    assert_eq!(states(), [1.0, 1.0, 1.0]);

    // Deleted: counted out, and the deletion timed once.
    f.cluster.delete(&key::<Vpc>("net"));
    reconcile_until_gone(&f, "net", 5).await;
    assert_eq!(states(), [0.0, 0.0, 0.0]);
    assert_eq!(samples("deletion"), 1.0);
    assert!(
        results("success") >= 1.0,
        "the last reconcile waits for a change"
    );
    assert_eq!(results("error"), 0.0);
    assert_eq!(
        metrics.total_with("controller_runtime_reconcile_errors_total", &[]),
        0.0
    );
    let ran = ["success", "error", "requeue", "requeue_after"]
        .map(results)
        .iter()
        .sum::<f64>();
    let queue = [("name", controller.as_str())];
    assert_eq!(metrics.total_with("workqueue_adds_total", &queue), ran);
    assert_eq!(metrics.total_with("workqueue_depth", &queue), 0.0);
    assert_eq!(
        metrics.total_with("workqueue_work_duration_seconds_count", &queue),
        ran
    );
    f.cloud.shutdown().await.unwrap();
}

/// The cloud VPCs that carry the tags the provider gives the VPC `name`.
async fn vpcs_tagged_for(f: &Fixture, name: &str) -> Vec<String> {
    let options = fakecloud::client::ListOptions {
        tags: provider_tags(name)
            .into_iter()
            .map(|(key, value)| (key, value.as_str().map(str::to_owned)))
            .collect(),
        ..Default::default()
    };
    let page = f.client.list_vpcs(REGION, &options).await.unwrap();
    page.items.into_iter().map(|vpc| vpc.id).collect()
}

#[tokio::test]
async fn a_resource_the_cloud_gets_back_is_adopted_not_created_a_third_time() {
    let f = Fixture::new().await;
    ready_vpc(&f, "restored").await;
    let first = f
        .annotation::<Vpc>("restored", EXTERNAL_NAME_ANNOTATION)
        .unwrap();
    f.admin.save_snapshot("before").await.unwrap();

    // Deleted behind the provider's back: created again, under a new id,
    // once (no tagged resource is left to adopt).
    f.client.delete_vpc(REGION, &first).await.unwrap();
    assert_eq!(f.reconcile::<Vpc>("restored").await.result, "success");
    let second = f
        .annotation::<Vpc>("restored", EXTERNAL_NAME_ANNOTATION)
        .unwrap();
    assert_ne!(second, first, "created anew");
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1);

    // The cloud goes back to the snapshot: the first VPC is back, the
    // second gone. The provider adopts the first instead of creating a
    // third, which would leave the first untracked.
    f.admin
        .load_snapshot("before", fakecloud::model::LoadStrategy::Overwrite)
        .await
        .unwrap();
    let mark = audit_mark(&f).await;
    assert_eq!(f.reconcile::<Vpc>("restored").await.result, "success");
    assert_eq!(
        f.annotation::<Vpc>("restored", EXTERNAL_NAME_ANNOTATION)
            .as_deref(),
        Some(first.as_str()),
        "the restored VPC is the managed one again"
    );
    let calls = provider_calls_since(&f, mark).await;
    assert!(
        calls.iter().all(|c| c.starts_with("GET ")),
        "adopting creates nothing: {calls:?}"
    );
    // The two creates' events are one Event of the same reason and
    // message, counted twice; the adoption is an Event of its own.
    assert_eq!(
        f.event_reasons(),
        ["CreatedExternalResource", "AdoptedExternalResource"],
        "the adoption is told as such"
    );
    assert_eq!(f.reconcile::<Vpc>("restored").await.result, "success");
    assert_eq!(
        f.condition::<Vpc>("restored", TYPE_READY)
            .map(|(s, _)| s)
            .as_deref(),
        Some("True"),
        "observed Ready under its old id"
    );
    assert_eq!(vpcs_tagged_for(&f, "restored").await, [first]);
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1, "no duplicate");
    f.cloud.shutdown().await.unwrap();
}

#[tokio::test]
async fn two_cloud_resources_with_its_tags_stop_the_create_for_a_human() {
    let f = Fixture::new().await;
    ready_vpc(&f, "twice").await;
    let id = f
        .annotation::<Vpc>("twice", EXTERNAL_NAME_ANNOTATION)
        .unwrap();
    f.client.delete_vpc(REGION, &id).await.unwrap();
    // Two resources made outside the provider with its tags (copies
    // restored from two backups, say).
    let mut copies = Vec::new();
    for cidr in ["10.1.0.0/16", "10.2.0.0/16"] {
        let body = json!({ "cidrBlock": cidr, "tags": provider_tags("twice") });
        let copy = f
            .client
            .create_vpc(REGION, &serde_json::from_value(body).unwrap(), None)
            .await
            .unwrap()
            .resource;
        copies.push(copy.id);
    }
    let mark = audit_mark(&f).await;
    let outcome = f.reconcile::<Vpc>("twice").await;
    assert_eq!(outcome.result, "error");
    let (status, message) = f.condition::<Vpc>("twice", TYPE_SYNCED).unwrap();
    assert_eq!(status, "False");
    for copy in &copies {
        assert!(message.contains(copy.as_str()), "{message}");
    }
    assert!(message.contains("crossplane.io/external-name"), "{message}");
    let calls = provider_calls_since(&f, mark).await;
    assert!(
        calls.iter().all(|c| c.starts_with("GET ")),
        "nothing created or changed: {calls:?}"
    );
    assert_eq!(f.cloud_count(Kind::Vpc).await, 2);

    // The human's choice: one named, the other deleted; it is managed.
    annotate_vpc(&f, "twice", json!({ EXTERNAL_NAME_ANNOTATION: copies[0] }));
    f.client.delete_vpc(REGION, &copies[1]).await.unwrap();
    assert_eq!(f.reconcile::<Vpc>("twice").await.result, "success");
    assert_eq!(
        f.condition::<Vpc>("twice", TYPE_SYNCED)
            .map(|(s, _)| s)
            .as_deref(),
        Some("True")
    );
    assert_eq!(f.cloud_count(Kind::Vpc).await, 1);
    f.cloud.shutdown().await.unwrap();
}
