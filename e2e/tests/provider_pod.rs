//! The provider's image honours Crossplane's runtime contract for a
//! provider pod (issue 15): run on the container backend's network with
//! only what Crossplane gives a pod (a ServiceAccount token, CA and
//! namespace where in-cluster clients look, `KUBERNETES_SERVICE_HOST`,
//! `POD_NAMESPACE`, `POD_NAME`, and the ClusterRole Crossplane grants a
//! safe-start package), it configures itself in-cluster, elects its leader
//! with a Lease in its own namespace, serves metrics on port 8080, and
//! plays the VPC lifecycle and the connection Secret scenarios with no
//! request denied by the API server.
//!
//! Needs a Docker engine and the project's images; without them it fails,
//! never skips.

use std::time::Duration;

use e2e::containers::{FakecloudContainer, ProviderPod};
use e2e::objects::Objects;
use e2e::scenarios::{Narration, Stage, connection, network};
use e2e::{Backend, ClusterOptions};
use fakecloud::client::{AdminClient, Client as CloudClient};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use runtime::metrics::sum_samples;
use serde_json::json;

const POD_NAME: &str = "provider-fakecloud-7d9f-x2k4q";
const SERVICE_ACCOUNT: &str = "provider-fakecloud";
/// The provider's polls, short so "nothing more happens" is seen quickly.
const POLL: Duration = Duration::from_secs(2);

/// The API server's own count of requests it answered 403 (forbidden).
async fn forbidden_answers(client: &kube::Client) -> anyhow::Result<f64> {
    let text = client
        .request_text(http::Request::get("/metrics").body(Vec::new())?)
        .await?;
    Ok(sum_samples(
        &text,
        "apiserver_request_total",
        &[("code", "403")],
    ))
}

#[tokio::test]
async fn the_image_runs_as_crossplane_runs_a_provider_pod() -> anyhow::Result<()> {
    e2e::init_tracing();
    tokio::task::spawn_blocking(e2e::containers::build_images).await??;
    let cluster = ClusterOptions::default()
        .backend(Backend::Containers)
        .start()
        .await?;
    let in_network = cluster
        .in_network()
        .expect("the container backend has a network");
    let cloud =
        FakecloudContainer::start_on(Duration::from_millis(300), Some(&in_network.network)).await?;
    let admin = cluster.client();
    let objects = Objects::new(admin.clone(), "e2e-user");

    // Not `crossplane-system`, so a Lease there proves `POD_NAMESPACE` chose it.
    let pod_namespace = cluster.create_namespace("upbound-system").await?;
    let pod_namespace = pod_namespace.as_str();
    let role = e2e::grants::crossplane_safe_start_role()?;
    let token =
        e2e::grants::bind_service_account(&admin, pod_namespace, SERVICE_ACCOUNT, &role).await?;
    objects
        .apply_namespaced::<k8s_openapi::api::core::v1::Secret>(
            pod_namespace,
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": { "name": "fakecloud-credentials", "namespace": pod_namespace },
                "stringData": { "apiKey": cloud.api_key() },
            }),
        )
        .await?;
    objects
        .apply::<apis::kinds::provider_config::ProviderConfig>(json!({
            "apiVersion": "fakecloud.crossplane.io/v1alpha1", "kind": "ProviderConfig",
            "metadata": { "name": "default" },
            "spec": {
                "endpoint": cloud.in_network_url().expect("fakecloud joined the network"),
                "credentials": { "source": "Secret", "secretRef": {
                    "namespace": pod_namespace, "name": "fakecloud-credentials", "key": "apiKey" } },
            },
        }))
        .await?;

    let forbidden_before = forbidden_answers(&admin).await?;
    let poll = format!("--poll-interval={}s", POLL.as_secs());
    let pod = ProviderPod::start(
        &in_network,
        pod_namespace,
        POD_NAME,
        &token,
        &[
            "--leader-election=true",
            &poll,
            "--pending-poll-interval=250ms",
        ],
    )
    .await?;

    let cloud_client = CloudClient::new(cloud.base_url(), cloud.api_key());
    let cloud_admin = AdminClient::new(cloud.base_url(), cloud.admin_token());
    let stage = Stage {
        objects: &objects,
        cloud: &cloud_client,
        admin: &cloud_admin,
        settle: POLL + Duration::from_secs(1),
        narration: Narration::Log,
    };
    let played = async {
        let mut verdict =
            network::lifecycle::<e2e::scope::Legacy>(&stage, &e2e::unique_name("vpc")).await?;
        connection::publish_and_authenticate::<e2e::scope::Legacy>(
            &stage,
            &e2e::unique_name("db"),
            pod_namespace,
            "db-connection",
            &mut verdict,
        )
        .await?;
        anyhow::Ok(verdict)
    }
    .await;
    let verdict = match played {
        Ok(verdict) => verdict,
        Err(error) => anyhow::bail!("{error}\nprovider log:\n{}", pod.logs().await),
    };
    if !verdict.held() {
        anyhow::bail!(
            "{:?}\nprovider log:\n{}",
            verdict.failed(),
            pod.logs().await
        );
    }

    // Leader election chose the pod's namespace, and the pod holds the Lease.
    let lease = Api::<Lease>::namespaced(admin.clone(), pod_namespace)
        .get("provider-fakecloud-leader")
        .await?;
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity).as_deref(),
        Some(POD_NAME)
    );

    // Metrics on port 8080, counting the reconciles just made.
    let metrics = reqwest::get(pod.metrics_url()).await?.text().await?;
    let vpc_reconciles = sum_samples(&metrics, "provider_reconciles_total", &[("kind", "VPC")]);
    assert!(
        vpc_reconciles >= 1.0,
        "no VPC reconcile counted on :8080/metrics:\n{metrics}"
    );

    // Nothing the provider asked for was refused.
    let forbidden = forbidden_answers(&admin).await? - forbidden_before;
    assert_eq!(
        forbidden,
        0.0,
        "the API server refused requests; provider log:\n{}",
        pod.logs().await
    );
    Ok(())
}
