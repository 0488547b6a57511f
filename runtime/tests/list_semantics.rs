//! List semantics end to end: a kind whose `forProvider` holds a keyed
//! list (firewall rules keyed by `port` and `protocol`, each with a set of
//! CIDR blocks), declared once on its type with
//! `crossplane_types::rules::{list_map, list_set}`, reconciled by the real
//! reconciler on the in-memory cluster against an in-memory cloud that
//! returns the rules, and each rule's blocks, in an order of its own.
//!
//! Without list semantics every poll would find the reordered list
//! drifted and update it; with them, polls make no update, and a real
//! change makes one, carrying the whole declared list (a JSON merge patch
//! replaces a list whole).
//!
//! The fixture is the smallest part of `foreign_kind.rs` this needs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossplane_types::condition::{TYPE_READY, TYPE_UP_TO_DATE};
use crossplane_types::rules::{list_map, list_set};
use crossplane_types::{
    ConnectionDetail, ExternalNameOrigin, Managed, ManagedStatus, Namespaced,
    NamespacedResourceSpec, ProviderConfigKey, ReferenceField, Scope,
};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crossplane_managed_runtime::cluster::ObjectKey;
use crossplane_managed_runtime::lists::{self, ListType};
use crossplane_managed_runtime::testing::{self, MemoryCluster, Outcome, reconcile_once};
use crossplane_managed_runtime::{
    CloudError, CloudKind, Connect, Context, Created, Details, ExternalError, ProviderConfigTypes,
    Readiness, Session, Settings, UnusableConfig,
};

// ---------------------------------------------------------------------------
// The cloud: firewalls in a `Mutex<HashMap>`, which keeps each firewall's
// rules sorted its own way (by protocol, then port, both descending) and
// each rule's blocks in reverse text order, and gives every rule an id and
// a description the user may leave unset.
// ---------------------------------------------------------------------------

/// A rule as the cloud holds it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleObservation {
    pub id: String,
    pub port: u16,
    pub protocol: String,
    pub cidr_blocks: Vec<String>,
    pub description: String,
}

/// A firewall as the cloud reports it; also the kind's `atProvider`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FirewallObservation {
    pub name: String,
    pub rules: Vec<RuleObservation>,
}

/// What a create or an update may set: the rules, as declared.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FirewallBody {
    rules: Vec<FirewallRule>,
}

#[derive(Default)]
struct CloudState {
    firewalls: HashMap<String, FirewallObservation>,
    creates: usize,
    /// The body of every update call, in order.
    updates: Vec<Map<String, Value>>,
}

#[derive(Default)]
pub struct Cloud {
    state: Mutex<CloudState>,
}

#[derive(Debug, thiserror::Error)]
#[error("cloud answered {status}: {message}")]
pub struct CloudFailure {
    status: u16,
    message: String,
}

impl CloudError for CloudFailure {
    fn status(&self) -> Option<u16> {
        Some(self.status)
    }
}

/// The rules as the cloud stores them: in its own order, with ids and
/// default descriptions.
fn stored(rules: Vec<FirewallRule>) -> Vec<RuleObservation> {
    let mut rules: Vec<RuleObservation> = rules
        .into_iter()
        .map(|rule| {
            let mut cidr_blocks = rule.cidr_blocks;
            cidr_blocks.sort_by(|a, b| b.cmp(a));
            RuleObservation {
                id: format!("rule-{}-{}", rule.protocol, rule.port),
                description: rule.description.unwrap_or_else(|| "no description".into()),
                port: rule.port,
                protocol: rule.protocol,
                cidr_blocks,
            }
        })
        .collect();
    rules.sort_by(|a, b| (&b.protocol, b.port).cmp(&(&a.protocol, a.port)));
    rules
}

impl Cloud {
    fn state(&self) -> std::sync::MutexGuard<'_, CloudState> {
        self.state.lock().expect("cloud lock poisoned")
    }

    fn get(&self, name: &str) -> Option<FirewallObservation> {
        self.state().firewalls.get(name).cloned()
    }

    fn create(&self, name: &str, body: FirewallBody) -> FirewallObservation {
        let mut state = self.state();
        state.creates += 1;
        let firewall = FirewallObservation {
            name: name.to_owned(),
            rules: stored(body.rules),
        };
        state.firewalls.insert(name.to_owned(), firewall.clone());
        firewall
    }

    /// Applies `patch` as a JSON merge patch: `rules`, when present,
    /// replaces the rules whole.
    fn update(&self, name: &str, patch: Map<String, Value>) -> Result<(), CloudFailure> {
        let mut state = self.state();
        state.updates.push(patch.clone());
        let body: FirewallBody =
            serde_json::from_value(Value::Object(patch)).map_err(|e| CloudFailure {
                status: 400,
                message: e.to_string(),
            })?;
        let firewall = state.firewalls.get_mut(name).ok_or_else(|| CloudFailure {
            status: 404,
            message: format!("no firewall {name:?}"),
        })?;
        firewall.rules = stored(body.rules);
        Ok(())
    }

    /// Changes a firewall behind the provider's back.
    fn edit(&self, name: &str, change: impl FnOnce(&mut FirewallObservation)) {
        change(
            self.state()
                .firewalls
                .get_mut(name)
                .expect("firewall exists"),
        );
    }

    fn creates(&self) -> usize {
        self.state().creates
    }

    fn updates(&self) -> Vec<Map<String, Value>> {
        self.state().updates.clone()
    }
}

// ---------------------------------------------------------------------------
// The kind: the list semantics are declared here, on the type, and nowhere
// else.
// ---------------------------------------------------------------------------

const GROUP: &str = "network.example.m.crossplane.io";
const LEGACY_GROUP: &str = "network.example.crossplane.io";

/// One rule of a firewall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FirewallRule {
    pub port: u16,
    pub protocol: String,
    /// Where traffic may come from; the cloud keeps them sorted its way.
    #[serde(default)]
    #[schemars(transform = list_set)]
    pub cidr_blocks: Vec<String>,
    /// The cloud fills in a description when this is unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `spec.forProvider` of a Firewall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FirewallParameters {
    /// Steers the calls; never sent.
    pub region: String,
    /// The rules, one per port and protocol, in any order.
    #[serde(default)]
    #[schemars(transform = list_map(&["port", "protocol"]))]
    pub rules: Vec<FirewallRule>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FirewallInitParameters {}

pub type FirewallStatus = ManagedStatus<FirewallObservation>;

#[derive(CustomResource, JsonSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "network.example.m.crossplane.io",
    version = "v1alpha1",
    kind = "Firewall",
    plural = "firewalls",
    namespaced,
    status = "FirewallStatus",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct FirewallSpec {
    #[serde(flatten)]
    pub resource: NamespacedResourceSpec,
    pub for_provider: FirewallParameters,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_provider: Option<FirewallInitParameters>,
}

impl Managed for Firewall {
    type Scoped = Namespaced;
    type ForProvider = FirewallParameters;
    type InitProvider = FirewallInitParameters;
    type AtProvider = FirewallObservation;

    const CONNECTION_DETAILS: &'static [ConnectionDetail] = &[];
    const REFERENCES: &'static [ReferenceField] = &[];
    const EXTERNAL_NAME_ORIGIN: ExternalNameOrigin = ExternalNameOrigin::MetadataName;

    fn resource_spec(&self) -> &<Namespaced as Scope>::Spec {
        &self.spec.resource
    }
    fn for_provider(&self) -> &FirewallParameters {
        &self.spec.for_provider
    }
    fn for_provider_mut(&mut self) -> &mut FirewallParameters {
        &mut self.spec.for_provider
    }
    fn init_provider(&self) -> Option<&FirewallInitParameters> {
        self.spec.init_provider.as_ref()
    }
    fn managed_status(&self) -> Option<&FirewallStatus> {
        self.status.as_ref()
    }
    fn managed_status_mut(&mut self) -> &mut FirewallStatus {
        self.status.get_or_insert_with(ManagedStatus::default)
    }
}

pub struct MemoryConnect {
    cloud: Arc<Cloud>,
}

impl Connect for MemoryConnect {
    type Client = Arc<Cloud>;

    fn connect(
        &self,
        _config: &ProviderConfigKey,
        _spec: &Value,
        _credentials: String,
    ) -> Result<Arc<Cloud>, UnusableConfig> {
        Ok(self.cloud.clone())
    }
}

impl CloudKind<MemoryConnect> for FirewallParameters {
    type Observation = FirewallObservation;

    const STEERING_FIELDS: &'static [&'static str] = &["region"];

    async fn observe(
        &self,
        session: &Session<'_, Arc<Cloud>>,
        name: &str,
    ) -> Result<Option<FirewallObservation>, ExternalError> {
        Ok(session.cloud.get(name))
    }

    async fn create(
        &self,
        session: &Session<'_, Arc<Cloud>>,
        name: Option<&str>,
        desired: Value,
        _idempotency_key: &str,
    ) -> Result<Created<FirewallObservation>, ExternalError> {
        let name = name.expect("a client-named kind is created under its name");
        let body = serde_json::from_value(desired)
            .map_err(|e| ExternalError::InvalidSpec(e.to_string()))?;
        let made = session.cloud.create(name, body);
        Ok(Created::answered(made.name.clone(), made))
    }

    async fn update(
        &self,
        session: &Session<'_, Arc<Cloud>>,
        name: &str,
        patch: Map<String, Value>,
    ) -> Result<Details, ExternalError> {
        session.cloud.update(name, patch)?;
        Ok(Details::new())
    }

    async fn delete(
        &self,
        _session: &Session<'_, Arc<Cloud>>,
        _name: &str,
    ) -> Result<(), ExternalError> {
        unreachable!("these tests delete nothing")
    }

    fn readiness(_observed: &FirewallObservation) -> Readiness {
        Readiness::Available
    }
}

// ---------------------------------------------------------------------------
// The fixture and the tests.
// ---------------------------------------------------------------------------

const NAMESPACE: &str = "team-a";

struct Fixture {
    cluster: Arc<MemoryCluster>,
    cloud: Arc<Cloud>,
    ctx: Context,
    connect: MemoryConnect,
}

impl Fixture {
    fn new() -> Self {
        let cluster = Arc::new(MemoryCluster::default());
        let types = ProviderConfigTypes::standard(GROUP, LEGACY_GROUP, "v1alpha1");
        cluster.insert(
            &ObjectKey {
                resource: types.cluster.clone(),
                namespace: None,
                name: "default".to_owned(),
            },
            json!({ "spec": { "credentials": { "source": "None" } } }),
        );
        let settings = Settings {
            provider_name: "provider-network-example".to_owned(),
            poll_interval: Duration::from_secs(60),
            min_poll_interval: Duration::from_secs(1),
            pending_poll_interval: Duration::from_millis(500),
            poll_jitter: None,
            sync_interval: Duration::ZERO,
            external_tags: true,
            management_policies_enabled: true,
        };
        let ctx = testing::context(cluster.clone(), types, settings);
        let cloud = Arc::new(Cloud::default());
        Self {
            connect: MemoryConnect {
                cloud: cloud.clone(),
            },
            cluster,
            cloud,
            ctx,
        }
    }

    /// Applies a Firewall with these rules, as a user would.
    fn apply(&self, name: &str, rules: Value) {
        self.cluster.insert(
            &key(name),
            json!({
                "metadata": {},
                "spec": { "forProvider": { "region": "eu-west-1", "rules": rules } },
            }),
        );
    }

    fn current(&self, name: &str) -> Firewall {
        let object = self
            .cluster
            .object(&key(name))
            .expect("the Firewall exists");
        serde_json::from_value(object).expect("a Firewall")
    }

    async fn reconcile(&self, name: &str) -> Outcome {
        reconcile_once(&self.current(name), &self.ctx, &self.connect).await
    }

    /// `(status, reason)` of a condition.
    fn condition(&self, name: &str, type_: &str) -> (String, String) {
        let mr = self.current(name);
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

    /// How many fields `status.drift` counts as drifting.
    fn drift_count(&self, name: &str) -> u32 {
        self.current(name)
            .managed_status()
            .and_then(|s| s.drift.as_ref())
            .map_or(0, |d| d.count)
    }
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::of::<Firewall>(Some(NAMESPACE), name)
}

/// Three rules in the user's order (the cloud keeps another), two of them
/// on port 53, told apart by protocol.
fn rules() -> Value {
    json!([
        {"port": 443, "protocol": "tcp", "cidrBlocks": ["10.0.0.0/8", "192.168.0.0/16"]},
        {"port": 53, "protocol": "udp", "cidrBlocks": ["10.0.0.0/8"], "description": "dns"},
        {"port": 53, "protocol": "tcp", "cidrBlocks": ["10.0.0.0/8"]},
    ])
}

#[test]
fn the_kinds_list_semantics_come_from_its_own_crd() {
    // The transforms reached the CRD the API server is given...
    let crd = serde_json::to_value(Firewall::crd()).unwrap();
    let rules = &crd.pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/forProvider/properties/rules").unwrap();
    assert_eq!(rules["x-kubernetes-list-type"], "map");
    assert_eq!(
        rules["x-kubernetes-list-map-keys"],
        json!(["port", "protocol"])
    );
    assert_eq!(
        rules["items"]["properties"]["cidrBlocks"]["x-kubernetes-list-type"],
        "set"
    );
    // ...and the runtime reads them back from it, once.
    let found = lists::for_kind::<Firewall>();
    assert_eq!(
        found.paths(),
        [
            (
                "rules".to_owned(),
                ListType::Map {
                    keys: vec!["port".into(), "protocol".into()]
                }
            ),
            ("rules[].cidrBlocks".to_owned(), ListType::Set),
        ]
    );
    assert!(std::ptr::eq(found, lists::for_kind::<Firewall>()));
}

// Passes once `reconcile.rs` hands the kind's list types to the decisions
// (`plan::live_step_with`, `drift::differences_with`): issue 41, item 4.
#[tokio::test]
async fn a_keyed_list_the_cloud_reorders_is_not_drift_and_a_real_change_is_one_update() {
    let f = Fixture::new();
    f.apply("edge", rules());

    f.reconcile("edge").await;
    assert_eq!(f.cloud.creates(), 1);
    let held = f.cloud.get("edge").unwrap();
    let order: Vec<(u16, &str)> = held
        .rules
        .iter()
        .map(|r| (r.port, r.protocol.as_str()))
        .collect();
    assert_eq!(
        order,
        [(53, "udp"), (443, "tcp"), (53, "tcp")],
        "the cloud holds the rules in its own order"
    );
    assert_eq!(
        held.rules[1].cidr_blocks,
        ["192.168.0.0/16", "10.0.0.0/8"],
        "and the blocks too"
    );
    assert_eq!(f.condition("edge", TYPE_READY).0, "True");
    assert_eq!(
        f.condition("edge", TYPE_UP_TO_DATE),
        ("True".to_owned(), "NoDrift".to_owned()),
        "the create's answer is no drift"
    );

    // Polls: nothing to update, nothing to report.
    for _ in 0..3 {
        let outcome = f.reconcile("edge").await;
        assert_eq!(outcome.result, "success");
    }
    assert!(f.cloud.updates().is_empty(), "{:?}", f.cloud.updates());
    assert_eq!(f.drift_count("edge"), 0);
    // The spec is as the user wrote it: late initialisation leaves a
    // declared list alone.
    assert_eq!(
        serde_json::to_value(&f.current("edge").spec.for_provider.rules).unwrap(),
        rules()
    );

    // The cloud changes what the user left unset (a description): no drift.
    f.cloud
        .edit("edge", |fw| fw.rules[2].description = "edited".into());
    f.reconcile("edge").await;
    assert!(f.cloud.updates().is_empty());

    // A real change: the user opens 443 to one more block.
    let mut changed = rules();
    changed[0]["cidrBlocks"] = json!(["10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12"]);
    f.cluster.edit(
        &key("edge"),
        &json!({ "spec": { "forProvider": { "rules": changed } } }),
    );
    f.reconcile("edge").await;
    assert_eq!(
        f.cloud.updates(),
        [json!({ "rules": changed }).as_object().unwrap().clone()],
        "one update, carrying the whole declared list"
    );
    // Applied, and in the cloud's order again: no further update.
    for _ in 0..2 {
        f.reconcile("edge").await;
    }
    assert_eq!(f.cloud.updates().len(), 1);
    assert_eq!(f.drift_count("edge"), 0);

    // A rule removed behind the provider's back: one update puts it back.
    f.cloud.edit("edge", |fw| {
        fw.rules.retain(|r| r.protocol != "udp");
    });
    f.reconcile("edge").await;
    let updates = f.cloud.updates();
    assert_eq!(updates.len(), 2);
    assert_eq!(
        Value::Object(updates[1].clone()),
        json!({ "rules": changed })
    );
    f.reconcile("edge").await;
    assert_eq!(f.cloud.updates().len(), 2);
}
