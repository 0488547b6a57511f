//! A Crossplane provider for fakecloud, on the generic [`runtime`]: this
//! crate is the binary's configuration and wiring, plus what is fakecloud's
//! own.
//!
//! - [`kinds`]: the four thin per-kind clients (VPC, Subnet, NodeGroup,
//!   DatabaseInstance) that map `forProvider` onto fakecloud calls, and
//!   the controllers the CRD gate may start;
//! - [`queries`]: the four query kinds' list calls, whose controllers the
//!   gate starts too.
//! - [`cloud`]: how a ProviderConfig becomes a fakecloud client, and how
//!   the runtime reads fakecloud's errors.
//! - [`provider_config`]: the ProviderConfig controllers (usage counts and
//!   the in-use finalizer).
//! - [`config`]: the flags; [`serve`]: the health and metrics endpoints.

pub mod cloud;
pub mod config;
pub mod kinds;
pub mod provider_config;
pub mod queries;
pub mod serve;

/// The provider's name: the `source.component` of its Events.
pub const PROVIDER_NAME: &str = "provider-fakecloud";

/// The field manager of every server-side apply the provider makes.
pub const FIELD_MANAGER: &str = "fakecloud-provider";

/// The leader-election Lease (`--leader-election`), and with `--sharding`
/// the prefix of each replica's membership Lease.
pub const LEADER_LEASE: &str = "provider-fakecloud-leader";

/// The domain of the sharding label (`fakecloud.crossplane.io/shard`) and
/// annotations.
pub const SHARD_DOMAIN: &str = "fakecloud.crossplane.io";

use std::sync::Arc;

use thiserror::Error;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use crate::config::Config;
use runtime::conversion::{Conversions, Webhook, WebhookSettings};
use runtime::metrics::Metrics;
use runtime::pacing::Ceilings;
use runtime::{Provider, Settings};

/// Why the provider stopped with an error.
#[derive(Debug, Error)]
pub enum RunError {
    #[error("cannot build a Kubernetes client (is KUBECONFIG or the in-cluster config set?): {0}")]
    Kube(kube::Error),
    #[error("cannot serve {what} on {addr}: {error}")]
    Serve {
        what: &'static str,
        addr: std::net::SocketAddr,
        error: std::io::Error,
    },
    #[error(transparent)]
    Leader(#[from] runtime::leader::LeaderError),
    #[error(transparent)]
    Sharding(#[from] runtime::shard::ShardError),
    #[error(transparent)]
    Webhook(#[from] runtime::conversion::ServeError),
}

impl From<kube::Error> for RunError {
    fn from(error: kube::Error) -> Self {
        RunError::Kube(error)
    }
}

/// Runs the provider until `shutdown` is cancelled: health and metrics
/// endpoints, leader election when asked, and the CRD gate that starts the
/// controllers. Returns once every controller has stopped. `metrics` is
/// passed in so an embedding process (tests, the demo) can read it.
pub async fn run(
    config: Config,
    kube: kube::Client,
    metrics: Metrics,
    shutdown: CancellationToken,
) -> Result<(), RunError> {
    // First, so that a certificate that cannot be used stops the start.
    let webhook = match &config.webhook_tls_cert_dir {
        Some(cert_dir) => {
            let settings = WebhookSettings {
                addr: std::net::SocketAddr::new(config.webhook_host, config.webhook_port),
                cert_dir: cert_dir.clone(),
            };
            let conversions = Conversions::new(apis::kinds::CONVERSIONS, &metrics);
            match Webhook::bind(conversions, &settings).await {
                Ok(webhook) => Some(tokio::spawn(
                    webhook.run(shutdown.clone().cancelled_owned()),
                )),
                Err(error) => {
                    shutdown.cancel();
                    return Err(error.into());
                }
            }
        }
        None => {
            info!(
                "WEBHOOK_TLS_CERT_DIR is unset: no conversion webhook, so the API server \
                 cannot serve the deprecated v1alpha1 namespaced kinds"
            );
            None
        }
    };

    let (ready_tx, ready_rx) = watch::channel(false);

    let health = spawn_server(
        "health checks",
        config.health_addr,
        serve::health(
            config.health_addr,
            ready_rx,
            shutdown.clone().cancelled_owned(),
        ),
    );
    let metrics_server = spawn_server(
        "metrics",
        config.metrics_addr,
        serve::metrics(
            config.metrics_addr,
            metrics.clone(),
            shutdown.clone().cancelled_owned(),
        ),
    );

    // Objects stored at v1alpha1 are rewritten at v1beta1, once, beside
    // the controllers: reading them needs the conversion webhook, which is
    // up by now when this process serves it.
    let migration = tokio::spawn(migrate_storage(kube.clone(), metrics.clone()));

    let identity = config.replica_identity(
        std::env::var("POD_NAME").ok(),
        std::fs::read_to_string("/proc/sys/kernel/hostname").ok(),
    );
    // Which replica made each call, in fakecloud's audit.
    let connect = Arc::new(
        cloud::FakecloudConnect::new(config.cloud_timeout)
            .with_user_agent(cloud::FakecloudConnect::replica_user_agent(&identity)),
    );
    let mut provider = Provider::new(
        PROVIDER_NAME,
        env!("CARGO_PKG_VERSION"),
        provider_config::types(),
    )
    .field_manager(FIELD_MANAGER)
    .settings(Settings {
        provider_name: PROVIDER_NAME.to_owned(),
        poll_interval: config.poll_interval,
        min_poll_interval: config.min_poll_interval,
        pending_poll_interval: config.pending_poll_interval,
        poll_jitter: config.poll_jitter,
        sync_interval: config.sync_interval,
        external_tags: !config.no_external_tags,
        management_policies_enabled: config.enable_management_policies,
    })
    .kube_ceilings(Ceilings {
        rate: f64::from(config.kube_qps),
        in_flight: config.kube_max_in_flight,
    })
    .cloud_ceilings(Ceilings {
        rate: f64::from(config.cloud_max_rate),
        in_flight: config.cloud_max_in_flight,
    })
    .max_reconcile_rate(config.max_reconcile_rate);
    if config.enable_changelogs {
        provider = provider.change_logs(&config.changelogs_socket_path);
    }
    let namespace = config.lease_namespace(std::env::var("POD_NAMESPACE").ok());
    if config.sharding {
        let timing = runtime::shard::LeaseTiming {
            lease_duration: config.lease_duration,
            renew_deadline: config.renew_deadline,
            retry_period: config.retry_period,
        };
        let sharding =
            runtime::shard::Sharding::new(SHARD_DOMAIN, &namespace, LEADER_LEASE, &identity)
                .and_then(|s| s.timing(timing));
        let sharding = match sharding {
            Ok(sharding) => sharding,
            Err(error) => {
                shutdown.cancel();
                return Err(error.into());
            }
        };
        info!(identity, "sharing the work with the other replicas");
        provider = provider.sharding(sharding);
    } else if config.leader_election {
        provider = provider.leader_election(&namespace, LEADER_LEASE, &identity);
    }
    let provider = queries::add(kinds::add(provider, &connect), &connect);
    let result = provider
        .run(kube, metrics, ready_tx, shutdown.cancelled())
        .await
        .map_err(RunError::from);
    shutdown.cancel();
    for server in [health, metrics_server] {
        match server.await {
            Ok(Err(e)) => error!(error = %e, "server failed"),
            Err(e) => error!(error = %e, "server task panicked"),
            Ok(Ok(())) => {}
        }
    }
    migration.abort();
    if let Some(webhook) = webhook
        && let Err(e) = webhook.await
    {
        error!(error = %e, "conversion webhook task panicked");
    }
    info!("provider stopped");
    result
}

/// Migrates the stored objects of every kind with several versions
/// ([`runtime::conversion::storage`]); a failure is logged, and the next
/// start tries again.
async fn migrate_storage(kube: kube::Client, metrics: Metrics) {
    let kinds = apis::kinds::CONVERSIONS;
    match runtime::conversion::storage::migrate(&kube, &kinds, &metrics).await {
        Ok(results) => {
            for (kind, result) in kinds.iter().zip(results) {
                match result {
                    Ok(done) => tracing::debug!(kind = kind.kind, ?done, "storage migration"),
                    Err(error) => {
                        error!(kind = kind.kind, %error, "storage migration failed; the next start tries again")
                    }
                }
            }
        }
        Err(error) => error!(%error, "storage migration failed; the next start tries again"),
    }
}

/// Runs one of the provider's HTTP servers as a task, naming it in its error.
fn spawn_server(
    what: &'static str,
    addr: std::net::SocketAddr,
    serve: impl std::future::Future<Output = std::io::Result<()>> + Send + 'static,
) -> tokio::task::JoinHandle<Result<(), RunError>> {
    tokio::spawn(async move {
        serve
            .await
            .map_err(|error| RunError::Serve { what, addr, error })
    })
}
