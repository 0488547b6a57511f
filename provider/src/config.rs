//! The provider's command-line flags, each with an environment fallback so
//! the same binary runs from a shell, a Deployment or the demo.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "provider",
    about = "Crossplane provider for fakecloud",
    version
)]
pub struct Config {
    /// How often a healthy resource is observed again. Each requeue adds up
    /// to 10% random jitter so resources created together spread out.
    #[arg(long, env = "PROVIDER_POLL_INTERVAL", default_value = "1m", value_parser = humantime::parse_duration)]
    pub poll_interval: Duration,

    /// The shortest poll period a managed resource's
    /// `crossplane.io/poll-interval` annotation may ask for: shorter ones
    /// are clamped up to it, so no one resource hammers the cloud.
    #[arg(long, env = "PROVIDER_MIN_POLL_INTERVAL", default_value = "1s", value_parser = humantime::parse_duration)]
    pub min_poll_interval: Duration,

    /// How often a resource that is not Ready yet (creating, deleting) is
    /// observed again, so it reaches Ready soon after the cloud finishes.
    #[arg(long, env = "PROVIDER_PENDING_POLL_INTERVAL", default_value = "1s", value_parser = humantime::parse_duration)]
    pub pending_poll_interval: Duration,

    /// Ceiling of reconciles started a second, summed over every kind. The
    /// reconciles in flight follow the API server's pacing (twice the
    /// requests it allows in flight), so on a healthy server this never
    /// binds; lower it to cap the provider's CPU.
    #[arg(long, env = "PROVIDER_MAX_RECONCILE_RATE", default_value_t = 1_000)]
    pub max_reconcile_rate: u32,

    /// Ceiling of requests to the API server at once (watches apart). The
    /// limit in force starts here and is cut on 5xx, on no answer and on
    /// rising latency, and grows back while answers are good.
    #[arg(long, env = "PROVIDER_KUBE_MAX_IN_FLIGHT", default_value_t = 64)]
    pub kube_max_in_flight: usize,

    /// Ceiling of requests to the API server a second, with one second of
    /// burst. The rate in force is cut on 429 (API Priority and Fairness)
    /// to a little under what the server accepted, and grows back while
    /// answers are good; a 429 or 5xx also pauses every request for its
    /// Retry-After, or 1 s doubling to 30 s.
    #[arg(long, env = "PROVIDER_KUBE_QPS", default_value_t = 2_000)]
    pub kube_qps: u32,

    /// Ceiling of calls a second to each cloud server (an endpoint and the
    /// credentials it is called with: one account's quota). The rate in
    /// force is learnt from its answers as for the API server.
    #[arg(long, env = "PROVIDER_CLOUD_MAX_RATE", default_value_t = 1_000)]
    pub cloud_max_rate: u32,

    /// Ceiling of calls in flight to each cloud server.
    #[arg(long, env = "PROVIDER_CLOUD_MAX_IN_FLIGHT", default_value_t = 64)]
    pub cloud_max_in_flight: usize,

    /// How long a cloud call may take before it counts as unanswered
    /// (and as a sign of overload).
    #[arg(long, env = "PROVIDER_CLOUD_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub cloud_timeout: Duration,

    /// Honour `spec.managementPolicies`. When false the field is ignored and
    /// `deletionPolicy` alone decides deletion (seed 000, "Feature Gating").
    #[arg(long, env = "PROVIDER_ENABLE_MANAGEMENT_POLICIES", default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_management_policies: bool,

    /// Run controllers only while holding a coordination.k8s.io Lease, so
    /// that several replicas can run with one active.
    #[arg(long, env = "PROVIDER_LEADER_ELECTION", default_value_t = false, action = clap::ArgAction::Set)]
    pub leader_election: bool,

    /// Namespace of the leader-election Lease. Default: the pod's own
    /// namespace (`POD_NAMESPACE`, which Crossplane sets on a provider's
    /// pod), else `crossplane-system`.
    #[arg(long, env = "PROVIDER_LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,

    /// Where `/metrics` (Prometheus) is served.
    #[arg(long, env = "PROVIDER_METRICS_ADDR", default_value = "127.0.0.1:8080")]
    pub metrics_addr: SocketAddr,

    /// Where `/healthz` and `/readyz` are served.
    #[arg(long, env = "PROVIDER_HEALTH_ADDR", default_value = "127.0.0.1:8081")]
    pub health_addr: SocketAddr,

    /// Log as JSON lines instead of human-readable text.
    #[arg(long, env = "PROVIDER_LOG_JSON", default_value_t = false, action = clap::ArgAction::Set)]
    pub log_json: bool,

    /// Send an entry for every create, update and delete of an external
    /// resource to Crossplane's change-log sidecar (crossplane-runtime's
    /// change logs), over gRPC on `--changelogs-socket-path`. Delivery never
    /// holds up a reconcile; entries it cannot deliver are counted in
    /// `provider_changelog_errors_total`.
    #[arg(long, env = "PROVIDER_ENABLE_CHANGELOGS", default_value_t = false, action = clap::ArgAction::Set)]
    pub enable_changelogs: bool,

    /// The Unix socket of the change-log sidecar.
    #[arg(long, env = "PROVIDER_CHANGELOGS_SOCKET_PATH", default_value = runtime::changelog::DEFAULT_SOCKET_PATH)]
    pub changelogs_socket_path: std::path::PathBuf,
}

/// Where the Lease lives when neither the flag nor `POD_NAMESPACE` says.
pub const DEFAULT_LEASE_NAMESPACE: &str = "crossplane-system";

impl Config {
    /// The leader-election Lease's namespace: the flag, else
    /// `pod_namespace` (the `POD_NAMESPACE` variable, so a provider that
    /// Crossplane installs in any namespace elects there, where its RBAC
    /// lets it), else [`DEFAULT_LEASE_NAMESPACE`].
    pub fn lease_namespace(&self, pod_namespace: Option<String>) -> String {
        self.leader_election_namespace
            .clone()
            .or(pod_namespace.filter(|ns| !ns.is_empty()))
            .unwrap_or_else(|| DEFAULT_LEASE_NAMESPACE.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_ones() {
        let config = Config::try_parse_from(["provider"]).unwrap();
        assert_eq!(config.poll_interval, Duration::from_secs(60));
        assert_eq!(config.min_poll_interval, Duration::from_secs(1));
        assert_eq!(config.max_reconcile_rate, 1_000);
        assert_eq!(config.kube_qps, 2_000);
        assert_eq!(config.kube_max_in_flight, 64);
        assert_eq!(config.cloud_max_rate, 1_000);
        assert_eq!(config.cloud_max_in_flight, 64);
        assert_eq!(config.cloud_timeout, Duration::from_secs(30));
        assert!(config.enable_management_policies);
        assert!(!config.leader_election);
    }

    #[test]
    fn flags_parse_durations_and_booleans() {
        let config = Config::try_parse_from([
            "provider",
            "--poll-interval=30s",
            "--min-poll-interval=5s",
            "--enable-management-policies=false",
            "--leader-election=true",
        ])
        .unwrap();
        assert_eq!(config.poll_interval, Duration::from_secs(30));
        assert_eq!(config.min_poll_interval, Duration::from_secs(5));
        assert!(!config.enable_management_policies);
        assert!(config.leader_election);
    }

    #[test]
    fn the_lease_namespace_is_the_flag_else_the_pods_else_crossplane_system() {
        let default = Config::try_parse_from(["provider"]).unwrap();
        assert_eq!(default.lease_namespace(None), "crossplane-system");
        assert_eq!(
            default.lease_namespace(Some(String::new())),
            "crossplane-system"
        );
        assert_eq!(
            default.lease_namespace(Some("upbound-system".into())),
            "upbound-system"
        );
        let flagged =
            Config::try_parse_from(["provider", "--leader-election-namespace=ops"]).unwrap();
        assert_eq!(
            flagged.lease_namespace(Some("upbound-system".into())),
            "ops"
        );
    }

    #[test]
    fn change_logs_are_off_by_default_and_go_to_crossplanes_socket() {
        let default = Config::try_parse_from(["provider"]).unwrap();
        assert!(!default.enable_changelogs);
        assert_eq!(
            default.changelogs_socket_path,
            std::path::Path::new("/var/run/changelogs/changelogs.sock")
        );
        let flagged = Config::try_parse_from([
            "provider",
            "--enable-changelogs=true",
            "--changelogs-socket-path=/tmp/cl.sock",
        ])
        .unwrap();
        assert!(flagged.enable_changelogs);
        assert_eq!(
            flagged.changelogs_socket_path,
            std::path::Path::new("/tmp/cl.sock")
        );
        let err = Config::try_parse_from(["provider", "--enable-changelogs=maybe"]).unwrap_err();
        assert!(err.to_string().contains("--enable-changelogs"), "{err}");
    }

    #[test]
    fn bad_values_are_rejected_with_the_flag_named() {
        let err = Config::try_parse_from(["provider", "--poll-interval=soon"]).unwrap_err();
        assert!(err.to_string().contains("--poll-interval"), "{err}");
        let err = Config::try_parse_from(["provider", "--min-poll-interval=often"]).unwrap_err();
        assert!(err.to_string().contains("--min-poll-interval"), "{err}");
        let err = Config::try_parse_from(["provider", "--max-reconcile-rate=-1"]).unwrap_err();
        assert!(err.to_string().contains("--max-reconcile-rate"), "{err}");
    }
}
