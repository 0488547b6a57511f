//! The provider's Kubernetes client (`runtime::kube_client`) against a real
//! API server: it speaks HTTP/2, so a burst of requests shares one
//! connection (watches have another). kube's default client speaks HTTP/1.1 and opened about 850
//! connections in the first second of a 1,000-VPC cold start.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use e2e::TestCluster;
use futures::{StreamExt, TryStreamExt, stream};

/// Requests sent at once: more than the provider's default ceiling of
/// requests in flight (64).
const BURST: usize = 200;

/// This process's open sockets: its connections, the test cluster's
/// client's included.
fn sockets() -> Result<usize> {
    let mut count = 0;
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let target = std::fs::read_link(entry?.path()).unwrap_or_default();
        count += usize::from(target.to_string_lossy().starts_with("socket:"));
    }
    Ok(count)
}

#[tokio::test]
async fn a_burst_of_requests_shares_one_http2_connection() -> Result<()> {
    e2e::init_tracing();
    let cluster = TestCluster::start_empty().await?;
    let kubeconfig = kube::config::Kubeconfig::read_from(cluster.kubeconfig())?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    let client = runtime::kube_client::build(config)?;
    let get = |client: kube::Client| async move {
        let request = http::Request::get("/api/v1/namespaces").body(kube::client::Body::empty())?;
        let response = client.send(request).await?;
        ensure!(response.status().is_success(), "{}", response.status());
        anyhow::Ok(response.version())
    };

    // One request opens the connection the burst should share.
    let first = get(client.clone()).await?;
    ensure!(
        first == http::Version::HTTP_2,
        "the first answer came over {first:?}"
    );
    let before = sockets()?;
    let versions: Vec<http::Version> = stream::iter(0..BURST)
        .map(|_| get(client.clone()))
        .buffer_unordered(BURST)
        .try_collect()
        .await?;
    let opened = sockets()?.saturating_sub(before);

    let over_http1 = versions
        .iter()
        .filter(|v| **v != http::Version::HTTP_2)
        .count();
    ensure!(
        over_http1 == 0,
        "{over_http1} of {BURST} answers came over HTTP/1"
    );
    // Slack for a connection the cluster's own client opens meanwhile.
    ensure!(
        opened <= 2,
        "{BURST} requests at once opened {opened} connections"
    );
    // The connection is kept for the next requests, not closed after them.
    tokio::time::sleep(Duration::from_millis(200)).await;
    get(client).await.context("a request after the burst")?;
    Ok(())
}
