//! A managed kind on the runtime against an in-memory cloud: a
//! `SecurityGroup` with a VPC reference, a description, ingress rules keyed
//! by port, and tags. `cargo run --example minimal_provider` rehearses it
//! on the in-memory cluster (create, rules answered in another order: no
//! drift, an edit, a delete); `-- --cluster` runs it on the cluster in
//! `KUBECONFIG` (apply `SecurityGroup::crd()` and ProviderConfig CRDs first).
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use crossplane_managed_runtime::cluster::ObjectKey;
use crossplane_managed_runtime::testing::{self, MemoryCluster, reconcile_once};
use crossplane_managed_runtime::{
    CloudKind, Connect, Created, Details, ExternalError, Provider, ProviderConfigTypes, Readiness,
    Session, Settings, UnusableConfig as Unusable,
};
use crossplane_types::rules::{immutable, list_map};
use crossplane_types::{Managed, ManagedResource, ProviderConfigKey, Scope};
use kube::api::{ApiResource, GroupVersionKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

const GROUP: &str = "network.example.org";

/// One inbound rule: a port open to a range.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Ingress {
    /// TCP port.
    pub port: u16,
    /// Source range in CIDR notation.
    pub cidr: String,
}

/// The desired state of a SecurityGroup: every field declared once.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, ManagedResource)]
#[serde(rename_all = "camelCase")]
#[managed(kind = "SecurityGroup", group = "network.example.org", version = "v1alpha1", observed = Reported)]
pub struct SecurityGroupParameters<S: Scope> {
    /// Region of the group. Identifies it.
    #[managed(identifier)]
    #[schemars(transform = immutable("region"))]
    pub region: String,
    /// Id of the VPC. Set it, or let `vpcIdRef` / `vpcIdSelector` fill it.
    #[managed(reference(kind = "VPC", plural = "vpcs"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc_id: Option<String>,
    /// The VPC whose `status.atProvider.id` becomes `vpcId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc_id_ref: Option<S::Reference>,
    /// Selects the VPC whose `status.atProvider.id` becomes `vpcId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc_id_selector: Option<S::Selector>,
    /// What the group is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Inbound rules, one per port, in any order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = list_map(&["port"]))]
    pub ingress: Option<Vec<Ingress>>,
    /// Tags of the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
}

/// What only the cloud reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reported {
    /// Cloud-assigned id; also the external name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// The cloud: security groups by id. It answers the rules sorted by port,
/// whatever order they came in, as real clouds do.
#[derive(Default)]
pub struct Cloud {
    groups: Mutex<HashMap<String, Value>>,
    /// Every call but reads, in order.
    pub writes: Mutex<Vec<String>>,
}

impl Cloud {
    fn get(&self, id: &str) -> Option<Value> {
        let mut group = self.groups.lock().unwrap().get(id)?.clone();
        if let Some(Value::Array(rules)) = group.get_mut("ingress") {
            rules.sort_by_key(|r| r["port"].as_u64());
        }
        Some(group)
    }
    /// Records a write and makes it: `fields` merged in, or the group gone.
    fn write(&self, call: &str, id: &str, fields: Map<String, Value>) {
        let keys: Vec<_> = fields.keys().cloned().collect();
        self.writes.lock().unwrap().push(format!("{call} {keys:?}"));
        let mut groups = self.groups.lock().unwrap();
        let group = groups.entry(id.to_owned()).or_insert(json!({"id": id}));
        group.as_object_mut().expect("an object").extend(fields);
        if call == "delete" {
            groups.remove(id);
        }
    }
}

/// The provider's `Connect`: every ProviderConfig reaches the same cloud.
pub struct CloudConnect(pub Arc<Cloud>);

impl Connect for CloudConnect {
    type Client = Arc<Cloud>;
    fn connect(&self, _: &ProviderConfigKey, _: &Value, _: String) -> Result<Client, Unusable> {
        Ok(self.0.clone())
    }
}

type Client = Arc<Cloud>;
type Ses<'a> = Session<'a, Client>;
type Res<T> = Result<T, ExternalError>;
type Made = Created<Value>;

impl<S: Scope> CloudKind<CloudConnect> for SecurityGroupParameters<S> {
    type Observation = Value;
    const STEERING_FIELDS: &'static [&'static str] = &["region"];
    async fn observe(&self, s: &Ses<'_>, id: &str) -> Res<Option<Value>> {
        Ok(s.cloud.get(id))
    }
    /// The id comes from the idempotency key: a repeated create (a retry,
    /// a restart) finds the group the first one made, never a second.
    async fn create(&self, s: &Ses<'_>, _: Option<&str>, v: Value, key: &str) -> Res<Made> {
        let id = format!("sg-{}", key.replace('.', "-"));
        s.cloud
            .write("create", &id, v.as_object().cloned().unwrap_or_default());
        Ok(Created::named(id))
    }
    async fn update(&self, s: &Ses<'_>, id: &str, patch: Map<String, Value>) -> Res<Details> {
        s.cloud.write("update", id, patch);
        Ok(Details::new())
    }
    async fn delete(&self, s: &Ses<'_>, id: &str) -> Res<()> {
        s.cloud.write("delete", id, Map::new());
        Ok(())
    }
    fn readiness(_: &Value) -> Readiness {
        Readiness::Available
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cloud = Arc::new(Cloud::default());
    let connect = CloudConnect(cloud.clone());
    // This provider's ProviderConfig kinds: Crossplane's, in its groups.
    let configs = ProviderConfigTypes::standard(GROUP, "legacy.example.org", "v1alpha1");
    if std::env::args().any(|a| a == "--cluster") {
        let provider = Provider::new("provider-example", "0.1.0", configs)
            .managed::<SecurityGroup, _>(Arc::new(connect));
        let kube = kube::Client::try_default().await?;
        let stop = async { tokio::signal::ctrl_c().await.unwrap_or(()) };
        let (ready, _) = tokio::sync::watch::channel(false);
        return Ok(provider.run(kube, Default::default(), ready, stop).await?);
    }
    // The rehearsal: the same reconciler, on an in-memory cluster.
    let cluster = Arc::new(MemoryCluster::default());
    let no_credentials = json!({"spec": {"credentials": {"source": "None"}}});
    let default = ObjectKey::new(&configs.cluster, None, "default");
    cluster.insert(&default, no_credentials);
    let vpc = ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, "v1alpha1", "VPC"));
    let vpc_status = json!({"status": {"atProvider": {"id": "vpc-1"}}});
    cluster.insert(&ObjectKey::new(&vpc, Some("team-a"), "main"), vpc_status);
    let settings = Settings::named("provider-example");
    let ctx = testing::context(cluster.clone(), configs, settings);
    let web = ObjectKey::of::<SecurityGroup>(Some("team-a"), "web");
    let rules = json!([{"port": 443, "cidr": "10.0.0.0/8"}, {"port": 22, "cidr": "10.1.0.0/16"}]);
    cluster.insert(&web, json!({"spec": {"forProvider": {
        "region": "eu-west-1", "vpcIdRef": {"name": "main"}, "description": "web", "ingress": rules,
    }}}));

    let writes = || cloud.writes.lock().unwrap().clone();
    let reconcile = async |step: &str| {
        let mr: SecurityGroup = cluster.typed(&web).expect("applied");
        let outcome = reconcile_once(&mr, &ctx, &connect).await;
        let mr: Option<SecurityGroup> = cluster.typed(&web);
        let drift = mr.as_ref().and_then(|m| m.managed_status()?.drift.clone());
        let (result, drifted, cloud) = (outcome.result, drift.map(|d| d.count), writes());
        println!("{step:<26} {result:<7} drift {drifted:?} cloud {cloud:?}");
        mr
    };
    let created = reconcile("apply: create").await.expect("kept");
    assert_eq!(created.for_provider().vpc_id, Some("vpc-1".into()));
    reconcile("observe: rules reordered").await;
    assert_eq!(writes().len(), 1, "a reordered list is not drift");
    let edit = json!({"spec": {"forProvider": {"description": "web and ssh"}}});
    cluster.edit(&web, &edit);
    reconcile("edit: description").await;
    assert!(writes()[1].contains("description"));
    reconcile("observe: in sync").await;
    cluster.delete(&web);
    reconcile("delete").await;
    let gone = reconcile("delete: gone from the cloud").await.is_none();
    assert!(gone && cloud.groups.lock().unwrap().is_empty());
    Ok(())
}
