//! The package's ClusterRole (`package/rbac/clusterrole.yaml`) against what
//! the provider really does: the provider runs as a ServiceAccount bound to
//! that role alone, through VPC, Subnet (a reference) and DatabaseInstance
//! (connection Secret) lifecycles of the legacy kinds, a namespaced VPC on a
//! ClusterProviderConfig and a namespaced DatabaseInstance on its
//! namespace's ProviderConfig, a VPCQuery that creates an observe-only VPC,
//! with sharding on (leader election included). Every request it
//! sends is recorded. A missing permission fails the lifecycle (or shows as
//! a request outside the role, for calls whose failure is only logged, such
//! as events); a permission no request used fails the exactness check.
//!
//! The same lifecycle also runs on the ClusterRole Crossplane itself grants
//! a safe-start provider package, which is what the provider gets when
//! Crossplane installs it: no request may fall outside that grant.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apis::kinds::database_instance::m as m_db;
use apis::kinds::vpc::m as m_vpc;
use apis::kinds::{DatabaseInstance, Subnet, Vpc};
use e2e::scope::APP;
use e2e::world::{NAMESPACE, World, is_ready, is_synced};
use k8s_openapi::api::core::v1::{Event, Pod, Secret};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const READY: Duration = Duration::from_secs(60);
const SERVICE_ACCOUNT: &str = "provider-fakecloud";

/// One permission: API group, resource (with `/subresource`), verb.
type Permission = (String, String, String);

/// The kinds of managed resource share one generic runtime, so they make
/// the same calls; both the role and the requests are compared with each
/// managed resource replaced by this placeholder, after checking the role
/// names every managed kind.
const MANAGED: &str = "<managed>";

/// `(group, plural)` of each CRD name of `provider`'s kinds.
fn resources_of(provider: &runtime::Provider) -> impl Iterator<Item = (String, String)> + '_ {
    provider.crd_names().map(|name| {
        let (plural, group) = name.split_once('.').expect("<plural>.<group>");
        (group.to_owned(), plural.to_owned())
    })
}

/// The provider as the binary builds it, with no kinds yet.
fn bare_provider() -> runtime::Provider {
    runtime::Provider::new("rbac-test", "0.0.0", provider::provider_config::types())
}

fn managed_resources() -> BTreeSet<(String, String)> {
    let provider = provider::kinds::add(bare_provider(), &Default::default());
    resources_of(&provider)
        .filter(|(_, plural)| !plural.ends_with("providerconfigs"))
        .collect()
}

/// The query kinds share one generic controller too: compared as this
/// placeholder, after checking the role names every query kind.
const QUERY: &str = "<query>";

fn query_resources() -> BTreeSet<(String, String)> {
    let provider = provider::queries::add(bare_provider(), &Default::default());
    resources_of(&provider).collect()
}

fn generalise(permission: &Permission, managed: &BTreeSet<(String, String)>) -> Permission {
    let (group, resource, verb) = permission;
    let (base, sub) = match resource.split_once('/') {
        Some((base, sub)) => (base, Some(sub)),
        None => (resource.as_str(), None),
    };
    let key = (group.clone(), base.to_owned());
    let placeholder = if managed.contains(&key) {
        MANAGED
    } else if query_resources().contains(&key) {
        QUERY
    } else {
        return permission.clone();
    };
    let resource = sub.map_or_else(|| placeholder.to_owned(), |s| format!("{placeholder}/{s}"));
    (placeholder.to_owned(), resource, verb.clone())
}

fn role() -> ClusterRole {
    let path = e2e::crds::package_dir().join("rbac/clusterrole.yaml");
    let text = std::fs::read_to_string(&path).expect("package/rbac/clusterrole.yaml is readable");
    serde_yaml::from_str(&text).expect("the ClusterRole parses")
}

/// The role's rules expanded to single permissions. Wildcards are refused:
/// they would grant what nobody checked.
fn role_permissions(role: &ClusterRole) -> BTreeSet<Permission> {
    let mut out = BTreeSet::new();
    for rule in role.rules.iter().flatten() {
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    assert!(
                        !(group.contains('*') || resource.contains('*') || verb.contains('*')),
                        "wildcard in {rule:?}"
                    );
                    out.insert((group.clone(), resource.clone(), verb.clone()));
                }
            }
        }
    }
    out
}

/// The permissions a request to the API server needs, from its method,
/// path (`/api/v1/...` or `/apis/<group>/<version>/...`) and content type.
/// A server-side apply to an object (not a subresource) may create it, and
/// the API server then also checks `create`.
fn permissions_of(request: &http::Request<kube::client::Body>) -> Vec<Permission> {
    let apply = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"application/apply-patch"));
    let Some(permission) = permission_of(request.method(), request.uri()) else {
        return Vec::new();
    };
    let creates = apply.then(|| {
        (
            permission.0.clone(),
            permission.1.clone(),
            "create".to_owned(),
        )
    });
    let mut out = vec![permission];
    out.extend(creates.filter(|(_, resource, _)| !resource.contains('/')));
    out
}

/// The permission a request needs by its method and path alone.
fn permission_of(method: &http::Method, uri: &http::Uri) -> Option<Permission> {
    let segments: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return None,
    };
    let rest = match rest {
        ["namespaces", _ns, rest @ ..] if !rest.is_empty() => rest,
        other => other,
    };
    let (resource, named) = match rest {
        [resource] => ((*resource).to_owned(), false),
        [resource, _name] => ((*resource).to_owned(), true),
        [resource, _name, sub] => (format!("{resource}/{sub}"), true),
        _ => return None,
    };
    let watch = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let verb = match (method.as_str(), named) {
        ("GET", _) if watch => "watch",
        ("GET", true) => "get",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => return None,
    };
    Some((group.to_owned(), resource, verb.to_owned()))
}

#[test]
fn requests_map_to_the_permissions_rbac_checks() {
    let p = |m: &str, u: &str| {
        permission_of(&m.parse().unwrap(), &u.parse().unwrap())
            .map(|(g, r, v)| format!("{g}|{r}|{v}"))
    };
    assert_eq!(
        p("GET", "/api/v1/namespaces/ns/secrets/creds").as_deref(),
        Some("|secrets|get")
    );
    assert_eq!(
        p(
            "GET",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?watch=true&resourceVersion=1"
        )
        .as_deref(),
        Some("apiextensions.k8s.io|customresourcedefinitions|watch")
    );
    assert_eq!(
        p(
            "PATCH",
            "/apis/network.fakecloud.crossplane.io/v1alpha1/vpcs/a/status?fieldManager=x"
        )
        .as_deref(),
        Some("network.fakecloud.crossplane.io|vpcs/status|patch")
    );
    assert_eq!(
        p("POST", "/apis/events.k8s.io/v1/namespaces/default/events").as_deref(),
        Some("events.k8s.io|events|create")
    );
    assert_eq!(
        p("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l").as_deref(),
        Some("coordination.k8s.io|leases|update")
    );
    assert_eq!(
        p("GET", "/api/v1/namespaces").as_deref(),
        Some("|namespaces|list")
    );
    assert_eq!(p("GET", "/version"), None);

    let apply = |uri: &str| {
        let request = http::Request::patch(uri)
            .header(http::header::CONTENT_TYPE, "application/apply-patch+yaml")
            .body(kube::client::Body::empty())
            .unwrap();
        permissions_of(&request)
            .into_iter()
            .map(|(_, r, v)| format!("{r}|{v}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        apply("/api/v1/namespaces/ns/secrets/s"),
        ["secrets|patch", "secrets|create"]
    );
    assert_eq!(
        apply("/apis/network.fakecloud.crossplane.io/v1alpha1/vpcs/a/status"),
        ["vpcs/status|patch"]
    );
}

/// Every permission the client's requests needed, recorded as they are sent.
#[derive(Clone, Default)]
struct Recorded(Arc<Mutex<BTreeSet<Permission>>>);

impl Recorded {
    fn set(&self) -> BTreeSet<Permission> {
        self.0.lock().expect("recorded lock").clone()
    }
}

/// A client for the cluster that authenticates with `token` and records
/// every request's permission into `recorded`.
async fn client_with_token(
    world: &World,
    token: &str,
    recorded: Recorded,
) -> anyhow::Result<kube::Client> {
    let mut doc: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(world.cluster.kubeconfig())?)?;
    let users = doc["users"]
        .as_sequence_mut()
        .expect("kubeconfig has users");
    for user in users {
        user["user"] = serde_yaml::to_value(json!({ "token": token }))?;
    }
    let kubeconfig = Kubeconfig::from_yaml(&serde_yaml::to_string(&doc)?)?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let record =
        tower::util::MapRequestLayer::new(move |request: http::Request<kube::client::Body>| {
            recorded
                .0
                .lock()
                .expect("recorded lock")
                .extend(permissions_of(&request));
            request
        });
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&record)
        .build())
}

/// Runs the provider as a ServiceAccount bound to `role` alone, through
/// VPC, Subnet (a reference) and DatabaseInstance (connection Secret)
/// lifecycles, a ProviderConfig's finalizer and status, a repeated Event
/// and leader election. Returns the world (for the caller to shut down)
/// and every permission the provider's requests needed.
async fn lifecycle_under(
    role: &ClusterRole,
    after_upgrade: bool,
) -> anyhow::Result<(World, BTreeSet<Permission>)> {
    e2e::init_tracing();
    let mut world = World::start().await?;
    // The world's provider runs as cluster admin; replace it.
    world.stop_provider().await;
    let token =
        e2e::grants::bind_service_account(&world.kube(), NAMESPACE, SERVICE_ACCOUNT, role).await?;
    let recorded = Recorded::default();
    let restricted = client_with_token(&world, &token, recorded.clone()).await?;

    // The identity really is restricted: anything outside the role is denied.
    let denied = Api::<Pod>::all(restricted.clone())
        .list(&Default::default())
        .await;
    assert!(
        matches!(&denied, Err(kube::Error::Api(e)) if e.code == 403),
        "listing Pods must be forbidden: {denied:?}"
    );
    recorded.0.lock().expect("recorded lock").clear();

    // With `after_upgrade`, the cluster as an upgrade from v1alpha1 leaves
    // it: the namespaced VPC's CRD still lists v1alpha1 among its stored
    // versions, so the provider's storage migration runs under the role too.
    if after_upgrade {
        Api::<CustomResourceDefinition>::all(world.kube())
            .patch_status(
                "vpcs.network.fakecloud.m.crossplane.io",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"storedVersions": ["v1alpha1", "v1beta1"]}})),
            )
            .await?;
    }

    let config = <provider::config::Config as clap::Parser>::try_parse_from([
        "provider",
        "--metrics-addr=127.0.0.1:0",
        "--health-addr=127.0.0.1:0",
        "--poll-interval=30s",
        "--pending-poll-interval=250ms",
        // Sharding uses every permission leader election does, and the
        // membership Leases' besides, so one run checks both.
        "--sharding=true",
        "--identity=rbac-test",
        &format!("--leader-election-namespace={NAMESPACE}"),
    ])?;
    let shutdown = CancellationToken::new();
    let provider = tokio::spawn(provider::run(
        config,
        restricted,
        world.metrics.clone(),
        shutdown.clone(),
    ));

    // A ProviderConfig created now, so its controller's finalizer and
    // status writes are made under the role.
    let pc = e2e::unique_name("pc");
    world.create_provider_config(&pc).await?;

    let vpc = e2e::unique_name("vpc");
    world
        .apply::<Vpc>(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": vpc },
            "spec": { "providerConfigRef": { "name": pc },
                      "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16", "tags": { "team": "a" } } },
        }))
        .await?;
    let subnet = e2e::unique_name("subnet");
    world
        .apply::<Subnet>(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "Subnet",
            "metadata": { "name": subnet },
            "spec": { "providerConfigRef": { "name": pc },
                      "forProvider": { "region": "us-east-1", "vpcIdRef": { "name": vpc },
                                       "cidrBlock": "10.0.1.0/24", "availabilityZone": "us-east-1a" } },
        }))
        .await?;
    let db = e2e::unique_name("db");
    let secret = format!("{db}-connection");
    world
        .apply::<DatabaseInstance>(json!({
            "apiVersion": "database.fakecloud.crossplane.io/v1alpha1", "kind": "DatabaseInstance",
            "metadata": { "name": db },
            "spec": {
                "providerConfigRef": { "name": pc },
                "forProvider": { "region": "eu-west-1", "engine": "postgres", "engineVersion": "16.2",
                                 "instanceClass": "db.t3.micro", "allocatedStorage": 20, "masterUsername": "app",
                                 "deletionProtection": false },
                "writeConnectionSecretToRef": { "namespace": NAMESPACE, "name": secret },
            },
        }))
        .await?;
    let ready_and_synced = |what: &str| format!("{what}: Ready and Synced");
    world
        .wait_for::<Vpc>(&vpc, &ready_and_synced("VPC"), READY, |v| {
            is_ready(v) && is_synced(v)
        })
        .await?;
    world
        .wait_for::<Subnet>(&subnet, &ready_and_synced("Subnet"), READY, |s| {
            is_ready(s) && is_synced(s)
        })
        .await?;
    world
        .wait_for::<DatabaseInstance>(&db, &ready_and_synced("DatabaseInstance"), READY, |d| {
            is_ready(d) && is_synced(d)
        })
        .await?;
    let connection = Api::<Secret>::namespaced(world.kube(), NAMESPACE)
        .get(&secret)
        .await?;
    let keys: BTreeSet<String> = connection.data.unwrap_or_default().into_keys().collect();
    assert_eq!(
        keys,
        ["endpoint", "password", "port", "username"]
            .map(String::from)
            .into(),
        "connection Secret keys"
    );
    world
        .wait_for::<apis::kinds::provider_config::ProviderConfig>(
            &pc,
            "status.users 3",
            READY,
            |p| p.status.as_ref().and_then(|s| s.users) == Some(3),
        )
        .await?;
    let namespaced = namespaced_lifecycle(&world).await?;
    query_lifecycle(&world).await?;

    // A resource that keeps failing the same way: its one Event is counted
    // up (patched) rather than written again.
    let failing = e2e::unique_name("vpc");
    world
        .apply::<Vpc>(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": failing },
            "spec": { "providerConfigRef": { "name": "no-such-config" },
                      "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
        }))
        .await?;
    let events = Api::<Event>::namespaced(world.kube(), "default");
    let deadline = tokio::time::Instant::now() + READY;
    loop {
        let counted = events
            .list(&Default::default())
            .await?
            .items
            .into_iter()
            .find(|e| {
                e.involved_object.name.as_deref() == Some(failing.as_str())
                    && e.reason.as_deref() == Some("ReconcileError")
            });
        if counted.as_ref().and_then(|e| e.count).unwrap_or(0) >= 2 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the repeated failure's Event was not counted up: {counted:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    world.delete::<Vpc>(&failing).await?;
    world.wait_gone::<Vpc>(&failing, READY).await?;

    // An update, then deletes: the finalizers are released under the role.
    world
        .apply::<Vpc>(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": vpc },
            "spec": { "providerConfigRef": { "name": pc },
                      "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16", "tags": { "team": "b" } } },
        }))
        .await?;
    world
        .wait_for::<Vpc>(&vpc, "tag b applied", READY, |v| {
            e2e::world::at_provider(v)["tags"]["team"] == "b"
        })
        .await?;
    namespaced.delete(&world).await?;
    world.delete::<Subnet>(&subnet).await?;
    world.delete::<DatabaseInstance>(&db).await?;
    world.wait_gone::<Subnet>(&subnet, READY).await?;
    world.delete::<Vpc>(&vpc).await?;
    world.wait_gone::<Vpc>(&vpc, READY).await?;
    world.wait_gone::<DatabaseInstance>(&db, READY).await?;

    // Leader election renews its Lease every 2 s: wait for one renewal.
    let renewal = (
        "coordination.k8s.io".to_owned(),
        "leases".to_owned(),
        "update".to_owned(),
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !recorded.set().contains(&renewal) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    shutdown.cancel();
    provider.await??;
    let used = recorded.set();
    Ok((world, used))
}

/// The namespaced resources of [`namespaced_lifecycle`], to delete.
struct NamespacedResources {
    vpc: String,
    db: String,
}

impl NamespacedResources {
    async fn delete(&self, world: &World) -> anyhow::Result<()> {
        let app = world.objects.in_namespace(APP);
        app.delete::<m_vpc::Vpc>(&self.vpc).await?;
        app.delete::<m_db::DatabaseInstance>(&self.db).await?;
        app.wait_gone::<m_vpc::Vpc>(&self.vpc, READY).await?;
        app.wait_gone::<m_db::DatabaseInstance>(&self.db, READY)
            .await?;
        Ok(())
    }
}

/// Under the role: a ClusterProviderConfig and a ProviderConfig in
/// namespace `app`, made now so their controllers' first writes are the
/// role's; a namespaced VPC on the first and a namespaced DatabaseInstance
/// (its connection Secret beside it) on the second, both Ready, and both
/// configs counting their user.
async fn namespaced_lifecycle(world: &World) -> anyhow::Result<NamespacedResources> {
    use apis::kinds::provider_config::m::{ClusterProviderConfig, ProviderConfig};
    let app = world.objects.in_namespace(APP);
    let cpc = e2e::unique_name("cpc");
    world.create_cluster_provider_config(&cpc).await?;
    let team = e2e::unique_name("team");
    app.apply_namespaced::<Secret>(
        APP,
        json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": team },
                "stringData": { "apiKey": world.api_key() } }),
    )
    .await?;
    app.apply::<ProviderConfig>(json!({
        "apiVersion": "fakecloud.m.crossplane.io/v1alpha1", "kind": "ProviderConfig",
        "metadata": { "name": team },
        "spec": { "endpoint": world.cloud_url(),
                  "credentials": { "source": "Secret", "secretRef": { "name": team, "key": "apiKey" } } },
    }))
    .await?;
    let vpc = e2e::unique_name("vpc");
    app.apply::<m_vpc::Vpc>(json!({
        "apiVersion": "network.fakecloud.m.crossplane.io/v1alpha1", "kind": "VPC",
        "metadata": { "name": vpc },
        "spec": { "providerConfigRef": { "kind": "ClusterProviderConfig", "name": cpc },
                  "forProvider": { "region": "us-east-1", "cidrBlock": "10.0.0.0/16" } },
    }))
    .await?;
    let db = e2e::unique_name("db");
    app.apply::<m_db::DatabaseInstance>(json!({
        "apiVersion": "database.fakecloud.m.crossplane.io/v1alpha1", "kind": "DatabaseInstance",
        "metadata": { "name": db },
        "spec": {
            "providerConfigRef": { "kind": "ProviderConfig", "name": team },
            "forProvider": { "region": "eu-west-1", "engine": "postgres", "instanceClass": "db.t3.micro",
                             "allocatedStorage": 20, "masterUsername": "app" },
            "writeConnectionSecretToRef": { "name": format!("{db}-connection") },
        },
    }))
    .await?;
    app.wait_for::<m_vpc::Vpc>(&vpc, "namespaced VPC Ready", READY, |v| {
        is_ready(v) && is_synced(v)
    })
    .await?;
    app.wait_for::<m_db::DatabaseInstance>(&db, "namespaced database Ready", READY, |d| {
        is_ready(d) && is_synced(d)
    })
    .await?;
    Api::<Secret>::namespaced(world.kube(), APP)
        .get(&format!("{db}-connection"))
        .await?;
    let one_user = |s: &Option<crossplane_types::ProviderConfigStatus>| {
        s.as_ref().and_then(|s| s.users) == Some(1)
    };
    world
        .wait_for::<ClusterProviderConfig>(&cpc, "status.users 1", READY, |p| one_user(&p.status))
        .await?;
    app.wait_for::<ProviderConfig>(&team, "status.users 1", READY, |p| one_user(&p.status))
        .await?;
    Ok(NamespacedResources { vpc, db })
}

/// Under the role: a VPCQuery in namespace `app` whose filter matches one
/// VPC made in the cloud directly; the query creates its observe-only VPC,
/// which becomes Ready, and reports the match. Deleting the query leaves
/// the VPC to the garbage collector and its finalizer to the provider.
async fn query_lifecycle(world: &World) -> anyhow::Result<()> {
    use apis::kinds::VpcQuery;
    let app = world.objects.in_namespace(APP);
    let tag = e2e::unique_name("rbac");
    let body =
        serde_json::from_value(json!({ "cidrBlock": "10.7.0.0/16", "tags": { "rbac": tag } }))?;
    let id = world
        .cloud
        .create_vpc("us-east-1", &body, None)
        .await?
        .resource
        .id;
    let query = e2e::unique_name("q");
    app.apply::<VpcQuery>(json!({
        "apiVersion": "query.fakecloud.m.crossplane.io/v1alpha1", "kind": "VPCQuery",
        "metadata": { "name": query },
        "spec": { "filter": { "region": "us-east-1", "tags": [format!("rbac={tag}")] } },
    }))
    .await?;
    app.wait_for::<VpcQuery>(&query, "one match", READY, |q| {
        q.status.as_ref().and_then(|s| s.match_count) == Some(1) && is_ready(q) && is_synced(q)
    })
    .await?;
    let observed = format!("{query}-{id}");
    app.wait_for::<m_vpc::Vpc>(&observed, "observed VPC Ready", READY, |v| {
        is_ready(v) && is_synced(v)
    })
    .await?;
    app.delete::<VpcQuery>(&query).await?;
    app.wait_gone::<m_vpc::Vpc>(&observed, READY).await?;
    Ok(())
}

#[tokio::test]
async fn the_provider_runs_on_its_cluster_role_alone() -> anyhow::Result<()> {
    let role = role();
    let (world, used) = lifecycle_under(&role, true).await?;
    let stored = Api::<CustomResourceDefinition>::all(world.kube())
        .get("vpcs.network.fakecloud.m.crossplane.io")
        .await?
        .status
        .and_then(|s| s.stored_versions);
    assert_eq!(
        stored.as_deref(),
        Some(&["v1beta1".to_owned()][..]),
        "the storage migration ran under the role"
    );
    let managed = managed_resources();
    let role_permissions = role_permissions(&role);
    // The role names every managed kind, with the same verbs for each
    // scope's kinds: the namespaced ones are also created (by queries).
    let verbs_of = |group: &str, resource: &str| -> BTreeSet<&str> {
        role_permissions
            .iter()
            .filter(|(g, r, _)| g == group && r == resource)
            .map(|(_, _, v)| v.as_str())
            .collect()
    };
    for (group, plural) in &managed {
        let expected: BTreeSet<&str> = if group.contains(".m.") {
            ["get", "list", "watch", "create", "patch"].into()
        } else {
            ["get", "list", "watch", "patch"].into()
        };
        assert_eq!(verbs_of(group, plural), expected, "{group} {plural}");
        let status = format!("{plural}/status");
        assert_eq!(
            verbs_of(group, &status),
            ["patch"].into(),
            "{group} {status}"
        );
    }
    // And every query kind, watched, labelled with its replica under
    // --sharding, with its status written.
    for (group, plural) in query_resources() {
        assert_eq!(
            verbs_of(&group, &plural),
            ["list", "watch", "patch"].into(),
            "{plural}"
        );
        let status = format!("{plural}/status");
        assert_eq!(verbs_of(&group, &status), ["patch"].into(), "{status}");
    }
    let granted: BTreeSet<Permission> = role_permissions
        .iter()
        .map(|p| generalise(p, &managed))
        .collect();
    let used: BTreeSet<Permission> = used.iter().map(|p| generalise(p, &managed)).collect();
    let missing: Vec<_> = used.difference(&granted).collect();
    assert!(
        missing.is_empty(),
        "requests outside the role (denied): {missing:?}"
    );
    let unused: Vec<_> = granted.difference(&used).collect();
    assert!(
        unused.is_empty(),
        "role grants what the provider never used: {unused:?}"
    );
    world.shutdown().await;
    Ok(())
}

/// Whether `role` grants `permission`, `*` matching any verb as RBAC does.
fn allows(role: &ClusterRole, (group, resource, verb): &Permission) -> bool {
    role.rules.iter().flatten().any(|rule| {
        rule.api_groups.iter().flatten().any(|g| g == group)
            && rule.resources.iter().flatten().any(|r| r == resource)
            && rule.verbs.iter().any(|v| v == verb || v == "*")
    })
}

#[test]
fn the_crossplane_role_names_every_package_crd_and_grants_by_rbac_rules() {
    let role = e2e::grants::crossplane_safe_start_role().expect("the package's CRDs load");
    let permission = |g: &str, r: &str, v: &str| (g.to_owned(), r.to_owned(), v.to_owned());
    for (group, plural) in managed_resources() {
        assert!(
            allows(&role, &permission(&group, &plural, "watch")),
            "{plural}"
        );
        assert!(allows(
            &role,
            &permission(&group, &format!("{plural}/status"), "patch")
        ));
        assert!(
            !allows(&role, &permission(&group, &plural, "delete")),
            "{plural}"
        );
    }
    assert!(allows(
        &role,
        &permission("fakecloud.crossplane.io", "providerconfigusages", "create")
    ));
    assert!(allows(
        &role,
        &permission("", "secrets", "deletecollection")
    ));
    assert!(!allows(&role, &permission("", "pods", "list")));
    assert!(!allows(
        &role,
        &permission(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "create"
        )
    ));
}

/// Crossplane runs a provider on the role its RBAC manager grants, not on
/// `package/rbac`: the provider must never need more. Every request it
/// made there is one that role allows, so none was denied.
#[tokio::test]
async fn the_provider_needs_no_more_than_crossplane_grants_a_safe_start_provider()
-> anyhow::Result<()> {
    let role = e2e::grants::crossplane_safe_start_role()?;
    // A fresh install: Crossplane's grant has no CRD status patch, which
    // the storage migration after an upgrade needs (docs/concepts/scopes-and-versions.md,
    // "Storage migration": an administrator grants it or patches storedVersions).
    let (world, used) = lifecycle_under(&role, false).await?;
    assert!(!used.is_empty(), "the provider made requests");
    let denied: Vec<_> = used.iter().filter(|p| !allows(&role, p)).collect();
    assert!(
        denied.is_empty(),
        "requests outside Crossplane's grant (denied): {denied:?}"
    );
    world.shutdown().await;
    Ok(())
}
