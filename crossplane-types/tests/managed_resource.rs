//! `#[derive(ManagedResource)]`: every form it makes from one parameters
//! struct, for a kind in one scope and a kind in both.

use std::collections::BTreeMap;

use crossplane_managed_types::rules::{immutable, list_map, required_to_create};
use crossplane_managed_types::{ExternalNameOrigin, Managed, ManagedResource, Namespaced, Scope};
use kube::{CustomResourceExt, Resource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One inbound rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Ingress {
    /// TCP port.
    pub port: u16,
    /// Where from, in CIDR notation.
    pub cidr: String,
}

/// A kind in the namespaced scope only, with a reference, a keyed list and
/// cloud-only fields.
mod firewall {
    use super::*;

    /// The desired state of a Firewall.
    #[derive(
        Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, ManagedResource,
    )]
    #[serde(rename_all = "camelCase")]
    #[managed(
        kind = "Firewall", group = "net.example.org", version = "v1beta1",
        observed = FirewallReported, category = "example",
        rule = required_to_create("description"),
    )]
    pub struct FirewallParameters<S: Scope> {
        /// Region of the firewall. Identifies it.
        #[managed(identifier)]
        #[schemars(transform = immutable("region"))]
        pub region: String,
        /// Id of the network it guards. Set it, or let a reference fill it.
        #[managed(reference(kind = "Network", plural = "networks"))]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub network_id: Option<String>,
        /// The Network object whose id becomes `networkId`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub network_id_ref: Option<S::Reference>,
        /// Selects the Network object whose id becomes `networkId`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub network_id_selector: Option<S::Selector>,
        /// What it is for. Free text.
        #[managed(init_doc = "What it is for, at creation.")]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(transform = immutable("description"))]
        pub description: Option<String>,
        /// Inbound rules, one per port.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(transform = list_map(&["port"]))]
        pub ingress: Option<Vec<Ingress>>,
        /// Tags of the firewall.
        #[managed(observed_doc = "Tags, some maybe set by others.")]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub tags: Option<BTreeMap<String, String>>,
    }

    /// What only the cloud reports.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct FirewallReported {
        /// Cloud-assigned id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub id: Option<String>,
    }
}

/// A kind in both scopes, named by the client.
mod disk {
    use super::*;

    /// The desired state of a Disk.
    #[derive(
        Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, ManagedResource,
    )]
    #[serde(rename_all = "camelCase")]
    #[managed(
        kind = "Disk", group = "storage.m.example.org", legacy_group = "storage.example.org",
        version = "v1alpha1", external_name = MetadataName, noun = "the disk",
    )]
    pub struct DiskParameters {
        /// Size in GiB. Can grow.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 1))]
        pub size: Option<i32>,
    }
}

fn schema_of<K: CustomResourceExt>() -> Value {
    serde_json::to_value(
        K::crd().spec.versions[0]
            .schema
            .clone()
            .unwrap()
            .open_api_v3_schema,
    )
    .unwrap()
}

#[test]
fn a_namespaced_kind_gets_its_forms_resource_and_managed_facts() {
    use firewall::*;
    let crd = Firewall::crd();
    assert_eq!(crd.spec.group, "net.example.org");
    assert_eq!(crd.spec.scope, "Namespaced");
    assert_eq!(crd.spec.versions[0].name, "v1beta1");
    assert_eq!(
        crd.spec.names.categories.as_deref(),
        Some(&["crossplane".to_owned(), "managed".into(), "example".into()][..])
    );
    let columns: Vec<_> = crd.spec.versions[0]
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        columns,
        ["READY", "SYNCED", "DRIFT", "EXTERNAL-NAME", "AGE"]
    );
    assert_eq!(Firewall::api_version(&()), "net.example.org/v1beta1");

    let schema = schema_of::<Firewall>();
    let spec = &schema["properties"]["spec"];
    let rules = spec["x-kubernetes-validations"].to_string();
    assert!(rules.contains("description"), "{rules}");

    // initProvider: no identifier, no reference or selector; the update
    // rule (immutable) stays on forProvider, the list semantics stay.
    let init = &spec["properties"]["initProvider"]["properties"];
    let init_fields: Vec<_> = init.as_object().unwrap().keys().cloned().collect();
    assert_eq!(init_fields, ["description", "ingress", "networkId", "tags"]);
    assert_eq!(
        init["description"]["description"],
        "What it is for, at creation."
    );
    assert!(
        init["description"]
            .get("x-kubernetes-validations")
            .is_none()
    );
    assert_eq!(
        init["networkId"]["description"],
        "Id of the network it guards."
    );
    assert_eq!(init["ingress"]["x-kubernetes-list-type"], "map");
    assert_eq!(
        init["ingress"]["x-kubernetes-list-map-keys"],
        json!(["port"])
    );
    let for_provider = &spec["properties"]["forProvider"]["properties"];
    assert!(for_provider["description"]["x-kubernetes-validations"].is_array());
    assert!(for_provider["networkIdRef"].is_object());

    // atProvider: every parameter optional, the cloud's own fields in.
    let at = &schema["properties"]["status"]["properties"]["atProvider"]["properties"];
    let at_fields: Vec<_> = at.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        at_fields,
        [
            "description",
            "id",
            "ingress",
            "networkId",
            "region",
            "tags"
        ]
    );
    assert_eq!(at["tags"]["description"], "Tags, some maybe set by others.");
    assert_eq!(at["region"]["description"], "Region of the firewall.");
    assert_eq!(at["ingress"]["x-kubernetes-list-map-keys"], json!(["port"]));

    let observed: FirewallObservation = serde_json::from_value(json!({
        "id": "fw-1", "region": "eu-west-1", "ingress": [{"port": 22, "cidr": "10.0.0.0/8"}]
    }))
    .unwrap();
    assert_eq!(observed.reported.id.as_deref(), Some("fw-1"));
    assert_eq!(observed.region.as_deref(), Some("eu-west-1"));
    assert_eq!(
        serde_json::to_value(&observed).unwrap(),
        json!({"id": "fw-1", "region": "eu-west-1", "ingress": [{"port": 22, "cidr": "10.0.0.0/8"}]})
    );

    let references = <Firewall as Managed>::REFERENCES;
    assert_eq!(references.len(), 1);
    let r = references[0];
    assert_eq!(
        (r.field, r.reference_field, r.selector_field, r.many),
        ("networkId", "networkIdRef", "networkIdSelector", false)
    );
    assert_eq!(
        (
            r.target_group,
            r.target_version,
            r.target_kind,
            r.target_plural
        ),
        ("net.example.org", "v1beta1", "Network", "networks")
    );
    assert_eq!(r.target_value_pointer, "/status/atProvider/id");
    assert_eq!(
        <Firewall as Managed>::EXTERNAL_NAME_ORIGIN,
        ExternalNameOrigin::AssignedByCloud
    );
    assert!(<Firewall as Managed>::CONNECTION_DETAILS.is_empty());

    // The accessors read the spec and the status the derive laid out.
    let mut fw = Firewall::new(
        "web",
        FirewallSpec {
            resource: Default::default(),
            for_provider: FirewallParameters::<Namespaced> {
                region: "eu-west-1".into(),
                network_id: None,
                network_id_ref: None,
                network_id_selector: None,
                description: None,
                ingress: None,
                tags: None,
            },
            init_provider: Some(FirewallInitParameters {
                description: Some("web".into()),
                ..Default::default()
            }),
        },
    );
    assert_eq!(fw.for_provider().region, "eu-west-1");
    assert_eq!(
        fw.init_provider().and_then(|i| i.description.as_deref()),
        Some("web")
    );
    assert!(fw.managed_status().is_none());
    fw.managed_status_mut().at_provider = Some(observed);
    assert!(fw.managed_status().is_some());
}

#[test]
fn a_kind_in_both_scopes_gets_a_legacy_resource_and_a_namespaced_one_in_m() {
    use disk::*;
    let legacy = Disk::crd();
    let namespaced = m::Disk::crd();
    assert_eq!(
        (legacy.spec.group.as_str(), legacy.spec.scope.as_str()),
        ("storage.example.org", "Cluster")
    );
    assert_eq!(
        (
            namespaced.spec.group.as_str(),
            namespaced.spec.scope.as_str()
        ),
        ("storage.m.example.org", "Namespaced")
    );
    fn scope_of<K: Managed>() -> &'static str {
        std::any::type_name::<K::Scoped>()
    }
    assert!(scope_of::<Disk>().ends_with("ClusterScoped"));
    assert!(scope_of::<m::Disk>().ends_with("Namespaced"));
    assert_eq!(
        <m::Disk as Managed>::EXTERNAL_NAME_ORIGIN,
        ExternalNameOrigin::MetadataName
    );
    let spec = &schema_of::<m::Disk>()["properties"]["spec"]["properties"];
    assert_eq!(
        spec["forProvider"]["description"],
        "The desired state of the disk."
    );
    assert_eq!(
        spec["initProvider"]["description"],
        "Values used only when creating the disk."
    );
    // Validation attributes other than transforms stay in the init form,
    // not in the observation.
    assert_eq!(spec["initProvider"]["properties"]["size"]["minimum"], 1.0);
    let at = &schema_of::<m::Disk>()["properties"]["status"]["properties"]["atProvider"];
    assert!(at["properties"]["size"].get("minimum").is_none());
}
