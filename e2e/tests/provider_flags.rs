//! The provider binary configured as Crossplane users configure it: the
//! boolean flags bare (`args: ["--enable-changelogs"]` in a
//! `DeploymentRuntimeConfig`, as Crossplane's docs write them), a boolean
//! from its environment variable, and provider-template's flag names. Each
//! flag is checked by what it does, not only by the process starting.

use std::path::Path;
use std::time::Duration;

use e2e::provider_process::ProviderProcess;
use e2e::scope::{Namespaced, Scope};
use e2e::world::{NAMESPACE, World, is_ready};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use runtime::metrics::sum_samples;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test]
async fn bare_boolean_flags_and_template_names_configure_the_binary() -> anyhow::Result<()> {
    e2e::init_tracing();
    let mut world = World::start().await?;
    // Only the binary under test runs the controllers.
    world.stop_provider().await;
    let binary = Path::new(env!("CARGO_BIN_EXE_bench_provider")).with_file_name("provider");
    let dir = tempfile::tempdir()?;
    let socket = dir.path().join("no-sidecar.sock");
    let args: Vec<String> = [
        "--enable-changelogs",
        "--changelogs-socket-path",
        socket.to_str().expect("a UTF-8 path"),
        "--leader-election",
        &format!("--leader-election-namespace={NAMESPACE}"),
        "--log-json",
        "--enable-management-policies",
        "--debug",
        "--poll=2s",
        "--sync=1m",
        "--poll-jitter=100ms",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    // A boolean from its variable, as a Deployment's `env` sets it.
    let env = ["PROVIDER_NO_EXTERNAL_TAGS=true".to_owned()];
    let log = dir.path().join("provider.log");
    let mut process =
        ProviderProcess::start_with_env(&binary, world.cluster.kubeconfig(), &env, &args, log)?;
    process.wait_ready(WAIT).await?;

    let objects = Namespaced::objects(&world.objects);
    let name = e2e::unique_name("flags");
    objects
        .apply::<<Namespaced as Scope>::Vpc>(Namespaced::manifest(
            "network",
            "VPC",
            json!({ "name": name }),
            json!({ "forProvider": { "region": "us-east-1", "cidrBlock": "10.3.0.0/16", "tags": { "team": "a" } } }),
        ))
        .await?;
    let ready = objects
        .wait_for::<<Namespaced as Scope>::Vpc>(&name, "Ready", WAIT, is_ready)
        .await;
    let ready = match ready {
        Ok(ready) => ready,
        Err(error) => {
            let log = std::fs::read_to_string(process.log()).unwrap_or_default();
            anyhow::bail!("{error}\nprovider log:\n{log}");
        }
    };
    let tags = &e2e::world::at_provider(&ready)["tags"];

    // PROVIDER_NO_EXTERNAL_TAGS=true: only the user's tag.
    assert_eq!(tags, &json!({ "team": "a" }), "no Crossplane tags");
    let vpcs = world
        .cloud
        .list_vpcs("us-east-1", &Default::default())
        .await?;
    assert_eq!(vpcs.items.len(), 1, "exactly one cloud VPC");

    // --leader-election: the binary holds the Lease.
    let lease = Api::<Lease>::namespaced(world.kube(), NAMESPACE)
        .get("provider-fakecloud-leader")
        .await?;
    let holder = lease
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert!(!holder.is_empty(), "the Lease has a holder");

    // --enable-changelogs: entries were sent, to a socket that is not there.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let metrics = process.metrics().await?;
        let undelivered = sum_samples(&metrics, "provider_changelog_errors_total", &[]);
        if undelivered >= 1.0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "change logs enabled, yet no entry counted undelivered:\n{metrics}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // --log-json and --debug (RUST_LOG, which the harness sets, wins over
    // --debug's level): every line is a JSON object.
    let text = std::fs::read_to_string(process.log())?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "the provider logged");
    for line in &lines {
        let parsed: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| anyhow::anyhow!("not a JSON log line ({e}): {line}"))?;
        assert!(parsed.get("level").is_some(), "{line}");
    }

    process.stop().await;
    world.shutdown().await;
    Ok(())
}
