//! The runtime's per-kind contract, proved on a kind it has never heard of.
//!
//! Everything a provider writes for a kind is in this file, and nothing
//! else: a namespaced `Bucket` (group `storage.example.m.crossplane.io`)
//! with its Kubernetes types and [`Managed`] impl, the cloud calls of its
//! `forProvider` type ([`CloudKind`]), and a [`Connect`] that hands out a
//! client of an in-memory object store. The real reconciler
//! ([`reconcile_once`]) runs it on the in-memory cluster, and each test
//! checks what the store and the cluster hold after every step.
//!
//! Read top to bottom, this is a worked example of what `README.md`'s
//! "Declaring a kind" and `CloudKind` sections describe, written out by
//! hand (without the derive):
//! 1. the fake cloud (a real provider has a client library instead);
//! 2. the Kubernetes types and their `Managed` impl;
//! 3. the cloud side (`CloudKind`) and the connection (`Connect`);
//! 4. the fixture and the tests.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossplane_types::condition::{TYPE_READY, TYPE_SYNCED};
use crossplane_types::well_known::{EXTERNAL_NAME_ANNOTATION, MANAGED_RESOURCE_FINALIZER};
use crossplane_types::{
    ConnectionDetail, ExternalNameOrigin, Managed, ManagedStatus, Namespaced,
    NamespacedResourceSpec, ProviderConfigKey, ReferenceField, Scope,
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crossplane_managed_runtime::cluster::ObjectKey;
use crossplane_managed_runtime::testing::{self, MemoryCluster, Next, Outcome, reconcile_once};
use crossplane_managed_runtime::{
    CloudError, CloudKind, Connect, Context, Created, Details, ExternalError, ProviderConfigTypes,
    Readiness, Session, Settings, UnusableConfig,
};

// ---------------------------------------------------------------------------
// 1. The fake cloud: an object store in a `Mutex<HashMap>`. It counts every
// call, and the tests change it "behind the provider's back" to make drift.
// ---------------------------------------------------------------------------

/// A bucket's state in the cloud.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum BucketState {
    #[default]
    Creating,
    Available,
}

/// A bucket as the store reports it. It doubles as the kind's
/// `status.atProvider` type; a real provider's observation is its client's
/// wire type and the status type is its own, with the same field names.
/// (`Default` because `ManagedStatus`'s `Deserialize` asks it of
/// `atProvider`.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BucketObservation {
    pub name: String,
    pub region: String,
    pub versioning: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    pub state: BucketState,
    /// Where clients reach the bucket: published as a connection detail.
    pub endpoint: String,
}

/// What a create or an update may set.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BucketBody {
    #[serde(default)]
    versioning: bool,
    #[serde(default)]
    tags: BTreeMap<String, String>,
}

/// How many calls of each sort the store answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Calls {
    pub get: usize,
    pub create: usize,
    pub update: usize,
    pub delete: usize,
}

#[derive(Default)]
struct StoreState {
    buckets: HashMap<String, BucketObservation>,
    /// The idempotency key of each bucket's create, so that a repeated
    /// create answers with the bucket the first one made.
    create_keys: HashMap<String, String>,
    calls: Calls,
    /// The body of every update call, in order.
    updates: Vec<Map<String, Value>>,
    /// Creates answer with the bucket's name only, as some clouds' do.
    minimal_answers: bool,
    /// New buckets are available at once rather than `Creating`.
    instant: bool,
}

/// What a create answers: the new bucket's name, and the bucket as the
/// store made it unless the store answers minimally.
pub struct CreateAnswer {
    pub name: String,
    pub bucket: Option<BucketObservation>,
}

/// The external system. Its client, handed to the kind's calls, is an
/// `Arc` of it.
#[derive(Default)]
pub struct ObjectStore {
    state: Mutex<StoreState>,
}

/// The store's errors: an HTTP-like status and a message.
#[derive(Debug, thiserror::Error)]
#[error("object store answered {status}: {message}")]
pub struct StoreError {
    status: u16,
    message: String,
}

/// How the reconciler reads a store error: a 409 on create is a name
/// taken, another 4xx a refusal (the default of [`CloudError`]).
impl CloudError for StoreError {
    fn status(&self) -> Option<u16> {
        Some(self.status)
    }
}

impl ObjectStore {
    fn state(&self) -> std::sync::MutexGuard<'_, StoreState> {
        self.state.lock().expect("store lock poisoned")
    }

    // The API the kind calls.

    pub fn get(&self, region: &str, name: &str) -> Option<BucketObservation> {
        let mut state = self.state();
        state.calls.get += 1;
        state
            .buckets
            .get(name)
            .filter(|b| b.region == region)
            .cloned()
    }

    pub fn create(
        &self,
        region: &str,
        name: &str,
        body: BucketBody,
        idempotency_key: &str,
    ) -> Result<CreateAnswer, StoreError> {
        let mut state = self.state();
        state.calls.create += 1;
        let minimal = state.minimal_answers;
        let answer = |bucket: &BucketObservation| CreateAnswer {
            name: bucket.name.clone(),
            bucket: (!minimal).then(|| bucket.clone()),
        };
        if let Some(existing) = state.buckets.get(name) {
            if state.create_keys.get(name).map(String::as_str) == Some(idempotency_key) {
                return Ok(answer(existing));
            }
            return Err(StoreError {
                status: 409,
                message: format!("bucket {name:?} exists"),
            });
        }
        let bucket = BucketObservation {
            name: name.to_owned(),
            region: region.to_owned(),
            versioning: body.versioning,
            tags: body.tags,
            state: if state.instant {
                BucketState::Available
            } else {
                BucketState::Creating
            },
            endpoint: format!("https://{name}.{region}.storage.example"),
        };
        state.buckets.insert(name.to_owned(), bucket.clone());
        state
            .create_keys
            .insert(name.to_owned(), idempotency_key.to_owned());
        Ok(answer(&bucket))
    }

    /// Applies `patch` as a JSON merge patch of the bucket's settable
    /// fields.
    pub fn update(
        &self,
        region: &str,
        name: &str,
        patch: Map<String, Value>,
    ) -> Result<(), StoreError> {
        let mut state = self.state();
        state.calls.update += 1;
        state.updates.push(patch.clone());
        let not_found = || StoreError {
            status: 404,
            message: format!("no bucket {name:?} in {region}"),
        };
        let bucket = state
            .buckets
            .get_mut(name)
            .filter(|b| b.region == region)
            .ok_or_else(not_found)?;
        let mut settable = json!({ "versioning": bucket.versioning, "tags": bucket.tags });
        json_patch::merge(&mut settable, &Value::Object(patch));
        let body: BucketBody = serde_json::from_value(settable).map_err(|e| StoreError {
            status: 400,
            message: e.to_string(),
        })?;
        bucket.versioning = body.versioning;
        bucket.tags = body.tags;
        Ok(())
    }

    /// Deletes at once; deleting a missing bucket is not an error.
    pub fn delete(&self, region: &str, name: &str) {
        let mut state = self.state();
        state.calls.delete += 1;
        if state.buckets.get(name).is_some_and(|b| b.region == region) {
            state.buckets.remove(name);
        }
    }

    // What the tests do behind the provider's back.

    /// Creates answer with the name only from now on.
    fn answer_minimally(&self) {
        self.state().minimal_answers = true;
    }

    /// New buckets are available at once from now on.
    fn provision_instantly(&self) {
        self.state().instant = true;
    }

    /// The cloud finishes making a bucket.
    fn finish(&self, name: &str) {
        self.edit(name, |b| b.state = BucketState::Available);
    }

    /// Changes a bucket without a call being counted.
    fn edit(&self, name: &str, change: impl FnOnce(&mut BucketObservation)) {
        change(self.state().buckets.get_mut(name).expect("bucket exists"));
    }

    /// A bucket made outside Crossplane.
    fn put(&self, bucket: BucketObservation) {
        self.state().buckets.insert(bucket.name.clone(), bucket);
    }

    fn bucket(&self, name: &str) -> Option<BucketObservation> {
        self.state().buckets.get(name).cloned()
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.state().buckets.keys().cloned().collect();
        names.sort();
        names
    }

    fn calls(&self) -> Calls {
        self.state().calls
    }

    fn updates(&self) -> Vec<Map<String, Value>> {
        self.state().updates.clone()
    }
}

// ---------------------------------------------------------------------------
// 2. The Kubernetes side: the custom resource, as `apis`' `managed_resource!`
// macro would emit its namespaced form, and its `Managed` impl.
// ---------------------------------------------------------------------------

const GROUP: &str = "storage.example.m.crossplane.io";
const LEGACY_GROUP: &str = "storage.example.crossplane.io";

/// `spec.forProvider` of a Bucket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BucketParameters {
    /// Where the bucket is: steers every call, never sent in a body.
    pub region: String,
    /// Whether the bucket keeps old versions of its objects.
    #[serde(default)]
    pub versioning: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

/// `spec.initProvider` of a Bucket: used only to create it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BucketInitParameters {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

pub type BucketStatus = ManagedStatus<BucketObservation>;

#[derive(CustomResource, JsonSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "storage.example.m.crossplane.io",
    version = "v1alpha1",
    kind = "Bucket",
    plural = "buckets",
    namespaced,
    status = "BucketStatus",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct BucketSpec {
    /// The Crossplane fields: managementPolicies, providerConfigRef,
    /// writeConnectionSecretToRef.
    #[serde(flatten)]
    pub resource: NamespacedResourceSpec,
    pub for_provider: BucketParameters,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_provider: Option<BucketInitParameters>,
}

/// What the runtime reads of a Bucket: `apis/src/managed.rs`'s
/// `impl_managed!` writes exactly this for each of the provider's kinds.
impl Managed for Bucket {
    type Scoped = Namespaced;
    type ForProvider = BucketParameters;
    type InitProvider = BucketInitParameters;
    type AtProvider = BucketObservation;

    const CONNECTION_DETAILS: &'static [ConnectionDetail] = &[ConnectionDetail {
        name: "endpoint",
        description: "The URL clients reach the bucket at.",
    }];
    const REFERENCES: &'static [ReferenceField] = &[];
    /// Bucket names are chosen by the client: `metadata.name` unless the
    /// external-name annotation says otherwise.
    const EXTERNAL_NAME_ORIGIN: ExternalNameOrigin = ExternalNameOrigin::MetadataName;

    fn resource_spec(&self) -> &<Namespaced as Scope>::Spec {
        &self.spec.resource
    }
    fn for_provider(&self) -> &BucketParameters {
        &self.spec.for_provider
    }
    fn for_provider_mut(&mut self) -> &mut BucketParameters {
        &mut self.spec.for_provider
    }
    fn init_provider(&self) -> Option<&BucketInitParameters> {
        self.spec.init_provider.as_ref()
    }
    fn managed_status(&self) -> Option<&BucketStatus> {
        self.status.as_ref()
    }
    fn managed_status_mut(&mut self) -> &mut BucketStatus {
        self.status.get_or_insert_with(ManagedStatus::default)
    }
}

// ---------------------------------------------------------------------------
// 3. The cloud side of the kind, and how a ProviderConfig becomes a client.
// ---------------------------------------------------------------------------

/// Makes the client of a ProviderConfig: here always the one store. A real
/// provider reads the endpoint from `spec` and authenticates with
/// `credentials` (empty here: the ProviderConfig's source is `None`).
pub struct MemoryConnect {
    store: Arc<ObjectStore>,
}

impl Connect for MemoryConnect {
    type Client = Arc<ObjectStore>;

    fn connect(
        &self,
        _config: &ProviderConfigKey,
        _spec: &Value,
        credentials: String,
    ) -> Result<Arc<ObjectStore>, UnusableConfig> {
        assert!(credentials.is_empty(), "source None reads no Secret");
        Ok(self.store.clone())
    }
}

/// The body of a create or update, or the field the store would refuse.
fn body(desired: Value) -> Result<BucketBody, ExternalError> {
    serde_json::from_value(desired).map_err(|e| ExternalError::InvalidSpec(e.to_string()))
}

impl CloudKind<MemoryConnect> for BucketParameters {
    type Observation = BucketObservation;

    const STEERING_FIELDS: &'static [&'static str] = &["region"];

    async fn observe(
        &self,
        session: &Session<'_, Arc<ObjectStore>>,
        name: &str,
    ) -> Result<Option<BucketObservation>, ExternalError> {
        Ok(session.cloud.get(&self.region, name))
    }

    async fn create(
        &self,
        session: &Session<'_, Arc<ObjectStore>>,
        name: Option<&str>,
        desired: Value,
        idempotency_key: &str,
    ) -> Result<Created<BucketObservation>, ExternalError> {
        // `MetadataName`: the runtime always passes the name to create.
        let name = name.expect("a client-named kind is created under its name");
        let made = session
            .cloud
            .create(&self.region, name, body(desired)?, idempotency_key)?;
        // The bucket the answer holds is the runtime's first observation:
        // with it, the create's own writes already late-initialise the spec
        // and say `Ready`, which spares the next reconcile two writes.
        Ok(match made.bucket {
            Some(bucket) => Created::answered(made.name, bucket),
            None => Created::named(made.name),
        })
    }

    async fn update(
        &self,
        session: &Session<'_, Arc<ObjectStore>>,
        name: &str,
        patch: Map<String, Value>,
    ) -> Result<Details, ExternalError> {
        session.cloud.update(&self.region, name, patch)?;
        Ok(Details::new())
    }

    async fn delete(
        &self,
        session: &Session<'_, Arc<ObjectStore>>,
        name: &str,
    ) -> Result<(), ExternalError> {
        session.cloud.delete(&self.region, name);
        Ok(())
    }

    fn readiness(observed: &BucketObservation) -> Readiness {
        match observed.state {
            BucketState::Creating => Readiness::Creating,
            BucketState::Available => Readiness::Available,
        }
    }

    async fn connection_details(
        &self,
        _session: &Session<'_, Arc<ObjectStore>>,
        observed: &BucketObservation,
    ) -> Result<Details, ExternalError> {
        Ok([("endpoint".to_owned(), observed.endpoint.clone())].into())
    }
}

/// This provider's kinds of ProviderConfig and usage: the runtime reads the
/// first and writes the second. No CRD types are needed for them here.
fn provider_config_types() -> ProviderConfigTypes {
    ProviderConfigTypes::standard(GROUP, LEGACY_GROUP, "v1alpha1")
}

// ---------------------------------------------------------------------------
// 4. The fixture and the tests.
// ---------------------------------------------------------------------------

const NAMESPACE: &str = "team-a";
const REGION: &str = "eu-west-1";
const POLL: Duration = Duration::from_secs(60);
const PENDING_POLL: Duration = Duration::from_millis(500);

/// One provider's worth of state: the cluster, holding the default
/// ClusterProviderConfig; the store; and the context every reconcile
/// shares.
struct Fixture {
    cluster: Arc<MemoryCluster>,
    store: Arc<ObjectStore>,
    ctx: Context,
    connect: MemoryConnect,
}

impl Fixture {
    fn new() -> Self {
        let cluster = Arc::new(MemoryCluster::default());
        let types = provider_config_types();
        // A namespaced resource that names no ProviderConfig uses the
        // ClusterProviderConfig `default`.
        cluster.insert(
            &ObjectKey {
                resource: types.cluster.clone(),
                namespace: None,
                name: "default".to_owned(),
            },
            json!({ "spec": { "credentials": { "source": "None" } } }),
        );
        let settings = Settings {
            provider_name: "provider-storage-example".to_owned(),
            poll_interval: POLL,
            min_poll_interval: Duration::from_secs(1),
            pending_poll_interval: PENDING_POLL,
            poll_jitter: None,
            sync_interval: Duration::ZERO,
            external_tags: true,
            management_policies_enabled: true,
        };
        let ctx = testing::context(cluster.clone(), types, settings);
        let store = Arc::new(ObjectStore::default());
        Self {
            connect: MemoryConnect {
                store: store.clone(),
            },
            cluster,
            store,
            ctx,
        }
    }

    /// Applies a Bucket as a user would: `spec` is merged over one asking
    /// for a versioned bucket tagged `team: a`.
    fn apply(&self, name: &str, metadata: Value, spec: Value) -> ObjectKey {
        let mut object = json!({
            "metadata": metadata,
            "spec": { "forProvider": {
                "region": REGION, "versioning": true, "tags": { "team": "a" },
            } },
        });
        json_patch::merge(&mut object, &json!({ "spec": spec }));
        let at = key(name);
        self.cluster.insert(&at, object);
        at
    }

    /// The Bucket as the API server holds it now.
    fn current(&self, name: &str) -> Option<Bucket> {
        let object = self.cluster.object(&key(name))?;
        Some(serde_json::from_value(object).expect("a Bucket"))
    }

    /// One reconcile of the current copy, as the controller would run it.
    async fn reconcile(&self, name: &str) -> Outcome {
        let mr = self.current(name).expect("the Bucket exists");
        reconcile_once(&mr, &self.ctx, &self.connect).await
    }

    /// `(status, reason)` of a condition of the current copy.
    fn condition(&self, name: &str, type_: &str) -> (String, String) {
        let mr = self.current(name).expect("the Bucket exists");
        let condition = mr
            .managed_status()
            .and_then(|s| s.condition(type_))
            .unwrap_or_else(|| panic!("no {type_} condition"));
        (
            serde_json::to_value(condition.status)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned(),
            condition.reason.clone(),
        )
    }

    fn external_name(&self, name: &str) -> Option<String> {
        self.current(name)?
            .metadata
            .annotations?
            .get(EXTERNAL_NAME_ANNOTATION)
            .cloned()
    }

    fn has_finalizer(&self, name: &str) -> bool {
        self.current(name)
            .and_then(|mr| mr.metadata.finalizers)
            .is_some_and(|f| f.iter().any(|f| f == MANAGED_RESOURCE_FINALIZER))
    }

    /// Creates `name` and reconciles until it is Ready.
    async fn ready_bucket(&self, name: &str) {
        self.apply(name, json!({}), json!({}));
        self.reconcile(name).await;
        self.store.finish(name);
        self.reconcile(name).await;
        assert_eq!(self.condition(name, TYPE_READY).0, "True");
    }
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::of::<Bucket>(Some(NAMESPACE), name)
}

/// A condition's `(status, reason)`, as [`Fixture::condition`] gives it.
fn cond(status: &str, reason: &str) -> (String, String) {
    (status.to_owned(), reason.to_owned())
}

#[tokio::test]
async fn a_new_bucket_is_created_once_and_is_ready_once_available() {
    let f = Fixture::new();
    f.apply("photos", json!({}), json!({}));

    let first = f.reconcile("photos").await;
    assert_eq!(first.result, "success");
    assert_eq!(first.next, Next::After(PENDING_POLL));
    assert_eq!(f.store.names(), ["photos"]);
    let made = f.store.bucket("photos").unwrap();
    assert_eq!(made.region, REGION);
    assert!(made.versioning);
    assert_eq!(made.tags, BTreeMap::from([("team".into(), "a".into())]));
    assert_eq!(f.store.calls().create, 1);
    assert_eq!(f.external_name("photos").as_deref(), Some("photos"));
    assert!(f.has_finalizer("photos"));
    assert_eq!(
        f.condition("photos", TYPE_SYNCED),
        cond("True", "ReconcileSuccess")
    );
    assert_eq!(f.condition("photos", TYPE_READY), cond("False", "Creating"));

    // The runtime recorded the resource's use of its ProviderConfig.
    let usages = f
        .cluster
        .all(&format!("{GROUP}/v1alpha1"), "ProviderConfigUsage");
    assert_eq!(usages.len(), 1);
    assert_eq!(usages[0]["metadata"]["namespace"], NAMESPACE);
    assert_eq!(
        usages[0]["providerConfigRef"]["kind"],
        "ClusterProviderConfig"
    );
    assert_eq!(usages[0]["resourceRef"]["name"], "photos");

    // Still being made: observed, not made again.
    let second = f.reconcile("photos").await;
    assert_eq!(second.next, Next::After(PENDING_POLL));
    assert_eq!(f.condition("photos", TYPE_READY), cond("False", "Creating"));

    f.store.finish("photos");
    let third = f.reconcile("photos").await;
    assert_eq!(third.result, "success");
    assert!(
        matches!(third.next, Next::After(wait) if wait >= POLL.mul_f64(0.95)),
        "a Ready bucket is polled: {:?}",
        third.next
    );
    assert_eq!(f.condition("photos", TYPE_READY), cond("True", "Available"));
    let at_provider = f
        .current("photos")
        .unwrap()
        .status
        .unwrap()
        .at_provider
        .unwrap();
    assert_eq!(at_provider, f.store.bucket("photos").unwrap());

    let calls = f.store.calls();
    assert_eq!((calls.create, calls.update, calls.delete), (1, 0, 0));
    assert_eq!(f.store.names(), ["photos"]);
}

#[tokio::test]
async fn drift_made_behind_the_providers_back_is_corrected_by_one_update() {
    let f = Fixture::new();
    f.ready_bucket("photos").await;

    f.store.edit("photos", |b| {
        b.versioning = false;
        b.tags.insert("team".into(), "b".into());
    });
    let outcome = f.reconcile("photos").await;
    assert_eq!(outcome.result, "success");
    assert_eq!(
        outcome.next,
        Next::After(PENDING_POLL),
        "an update is looked at soon"
    );
    assert_eq!(f.store.calls().update, 1);
    // Only the drifted fields are sent; the steering `region` never is.
    let patch = json!({ "versioning": true, "tags": { "team": "a" } });
    assert_eq!(f.store.updates(), [patch.as_object().unwrap().clone()]);
    let fixed = f.store.bucket("photos").unwrap();
    assert!(fixed.versioning);
    assert_eq!(fixed.tags, BTreeMap::from([("team".into(), "a".into())]));

    assert_eq!(f.store.names(), ["photos"]);

    // In line again: no further update.
    f.reconcile("photos").await;
    assert_eq!(f.store.calls().update, 1);
    assert_eq!(f.store.calls().create, 1);
    assert_eq!(f.condition("photos", TYPE_READY), cond("True", "Available"));
}

#[tokio::test]
async fn an_observe_only_bucket_is_read_but_never_changed_nor_deleted() {
    let f = Fixture::new();
    let archive = BucketObservation {
        name: "archive".into(),
        region: REGION.into(),
        versioning: false,
        tags: BTreeMap::new(),
        state: BucketState::Available,
        endpoint: "https://archive.eu-west-1.storage.example".into(),
    };
    f.store.put(archive.clone());
    // It asks for versioning, which the bucket lacks: drift it must not fix.
    let at = f.apply(
        "old-archive",
        json!({ "annotations": { EXTERNAL_NAME_ANNOTATION: "archive" } }),
        json!({ "managementPolicies": ["Observe"] }),
    );

    let outcome = f.reconcile("old-archive").await;
    assert_eq!(outcome.result, "success");
    assert_eq!(
        f.condition("old-archive", TYPE_READY),
        cond("True", "Available")
    );
    let mr = f.current("old-archive").unwrap();
    assert_eq!(mr.status.unwrap().at_provider, Some(archive.clone()));
    assert!(
        mr.spec.for_provider.versioning,
        "the spec is left as written"
    );

    f.cluster.delete(&at);
    f.reconcile("old-archive").await;
    assert!(
        f.current("old-archive").is_none(),
        "the finalizer is released"
    );

    let calls = f.store.calls();
    assert!(calls.get >= 1);
    assert_eq!((calls.create, calls.update, calls.delete), (0, 0, 0));
    assert_eq!(
        f.store.bucket("archive"),
        Some(archive),
        "the bucket is untouched"
    );
}

#[tokio::test]
async fn an_observe_only_bucket_that_does_not_exist_is_reported_not_created() {
    let f = Fixture::new();
    f.apply(
        "ghost",
        json!({ "annotations": { EXTERNAL_NAME_ANNOTATION: "ghost" } }),
        json!({ "managementPolicies": ["Observe"] }),
    );

    // Reported, and looked at again on the poll interval: for an observer
    // a missing resource is a state, not a failure to back off from.
    let outcome = f.reconcile("ghost").await;
    assert_eq!(outcome.result, "missing");
    assert!(
        matches!(outcome.next, Next::After(wait) if wait >= POLL.mul_f64(0.95)),
        "{:?}",
        outcome.next
    );
    let (synced, reason) = f.condition("ghost", TYPE_SYNCED);
    assert_eq!(
        (synced.as_str(), reason.as_str()),
        ("False", "ReconcileError")
    );
    assert!(f.store.names().is_empty());
    assert_eq!(f.store.calls().create, 0);
}

#[tokio::test]
async fn deleting_a_bucket_deletes_it_then_releases_the_finalizer() {
    let f = Fixture::new();
    f.ready_bucket("photos").await;

    f.cluster.delete(&key("photos"));
    let first = f.reconcile("photos").await;
    assert_eq!(first.result, "success");
    assert_eq!(f.store.calls().delete, 1);
    assert!(f.store.names().is_empty());
    assert!(
        f.has_finalizer("photos"),
        "held until the bucket is seen gone"
    );

    f.reconcile("photos").await;
    assert!(f.current("photos").is_none(), "the finalizer is released");
    assert_eq!(f.store.calls().delete, 1);
    assert_eq!(f.store.calls().create, 1);
}

#[tokio::test]
async fn the_connection_secret_holds_the_endpoint() {
    let f = Fixture::new();
    f.apply(
        "photos",
        json!({}),
        json!({ "writeConnectionSecretToRef": { "name": "photos-conn" } }),
    );
    f.reconcile("photos").await;
    f.store.finish("photos");
    f.reconcile("photos").await;

    let secret = f
        .cluster
        .object(&ObjectKey::of::<k8s_openapi::api::core::v1::Secret>(
            Some(NAMESPACE),
            "photos-conn",
        ))
        .expect("the connection Secret is written");
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(secret).unwrap();
    let data = secret.data.unwrap_or_default();
    let endpoint = data.get("endpoint").map(|v| String::from_utf8_lossy(&v.0));
    assert_eq!(
        endpoint.as_deref(),
        Some("https://photos.eu-west-1.storage.example")
    );
    assert_eq!(data.len(), Bucket::CONNECTION_DETAILS.len());
}

#[tokio::test]
async fn a_bucket_the_create_answers_available_is_ready_in_the_creates_own_writes() {
    let f = Fixture::new();
    f.store.provision_instantly();
    f.apply(
        "photos",
        json!({}),
        json!({ "writeConnectionSecretToRef": { "name": "photos-conn" } }),
    );

    let first = f.reconcile("photos").await;
    assert_eq!(first.result, "success");
    assert!(
        matches!(first.next, Next::After(wait) if wait >= POLL.mul_f64(0.95)),
        "Ready at once, so polled: {:?}",
        first.next
    );
    assert_eq!(f.condition("photos", TYPE_READY), cond("True", "Available"));
    assert_eq!(
        f.condition("photos", TYPE_SYNCED),
        cond("True", "ReconcileSuccess")
    );
    let status = f.current("photos").unwrap().status.unwrap();
    assert_eq!(status.at_provider, f.store.bucket("photos"));
    let secret = f
        .cluster
        .object(&ObjectKey::of::<k8s_openapi::api::core::v1::Secret>(
            Some(NAMESPACE),
            "photos-conn",
        ))
        .expect("the connection details are published with the create");
    assert_eq!(
        secret["data"]["endpoint"],
        json!(k8s_openapi::ByteString(
            b"https://photos.eu-west-1.storage.example".to_vec()
        ))
    );
    assert_eq!(
        f.cluster.writes(),
        6,
        "the usage; create-pending with the name and finalizer; create-succeeded; \
         the connection Secret; the Event; the status"
    );

    // The next look finds what the create said: nothing to write.
    let second = f.reconcile("photos").await;
    assert_eq!(second.result, "success");
    assert_eq!(f.cluster.writes(), 6);
    let calls = f.store.calls();
    assert_eq!((calls.create, calls.update, calls.delete), (1, 0, 0));
}

#[tokio::test]
async fn a_bucket_whose_create_answers_only_its_name_is_shown_by_the_next_observe() {
    let f = Fixture::new();
    f.store.answer_minimally();
    f.store.provision_instantly();
    f.apply("photos", json!({}), json!({}));

    let first = f.reconcile("photos").await;
    assert_eq!(first.next, Next::After(PENDING_POLL));
    assert_eq!(f.condition("photos", TYPE_READY), cond("False", "Creating"));
    let status = f.current("photos").unwrap().status.unwrap();
    assert_eq!(status.at_provider, None, "nothing observed yet");
    let writes = f.cluster.writes();

    let second = f.reconcile("photos").await;
    assert!(matches!(second.next, Next::After(wait) if wait >= POLL.mul_f64(0.95)));
    assert_eq!(f.condition("photos", TYPE_READY), cond("True", "Available"));
    let status = f.current("photos").unwrap().status.unwrap();
    assert_eq!(status.at_provider, f.store.bucket("photos"));
    assert_eq!(f.cluster.writes(), writes + 1, "the status");
    assert_eq!(f.store.calls().create, 1);
}
