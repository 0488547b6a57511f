//! The provider's command-line flags, each with an environment fallback so
//! the same binary runs from a shell, a Deployment or the demo.
//!
//! Flags are written as Crossplane users write them for Go providers (a
//! `DeploymentRuntimeConfig`'s `args`, copied from Crossplane's docs and
//! provider-template): every boolean works bare (`--debug` means true), with
//! a value (`--debug=false`, `--debug false`) and from its variable, as
//! kingpin's booleans do; provider-template's names (`--poll`, `--sync`,
//! `--debug`) are accepted beside ours.

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
    /// How often a healthy resource is observed again (provider-template's
    /// `--poll`). Each requeue is moved by a random jitter either side (see
    /// `--poll-jitter`) so resources created together spread out.
    #[arg(long, visible_alias = "poll", env = "PROVIDER_POLL_INTERVAL", default_value = "1m", value_parser = humantime::parse_duration)]
    pub poll_interval: Duration,

    /// The most a healthy resource's next poll moves, earlier or later, at
    /// random (crossplane-runtime's poll jitter hook). Unset: 5 % of the
    /// resource's poll interval, as the upjet providers set it. A poll is
    /// never sooner than `--min-poll-interval`. Pending resources keep
    /// `--pending-poll-interval`, without jitter.
    #[arg(long, env = "PROVIDER_POLL_JITTER", value_parser = humantime::parse_duration)]
    pub poll_jitter: Option<Duration>,

    /// How often every watched object is reconciled again, whether or not
    /// anything changed (provider-template's `--sync`, controller-runtime's
    /// sync period): a safety net for a change a watch missed. `0s` turns
    /// it off.
    #[arg(long, visible_alias = "sync", env = "PROVIDER_SYNC_INTERVAL", default_value = "1h", value_parser = humantime::parse_duration)]
    pub sync_interval: Duration,

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
    #[arg(long, env = "PROVIDER_ENABLE_MANAGEMENT_POLICIES", default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub enable_management_policies: bool,

    /// Run controllers only while holding a coordination.k8s.io Lease, so
    /// that several replicas can run with one active.
    #[arg(long, env = "PROVIDER_LEADER_ELECTION", default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub leader_election: bool,

    /// Share the work between replicas (see docs/operating/sharding.md): each replica holds a Lease of its own and reconciles only
    /// the managed and query resources labelled
    /// `fakecloud.crossplane.io/shard=<its identity>`; the holder of the
    /// leader Lease assigns them and runs the ProviderConfig controllers.
    /// Off, the provider runs as before (`--leader-election` included).
    #[arg(long, env = "PROVIDER_SHARDING", default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub sharding: bool,

    /// This replica's identity among the replicas (`--sharding`), unique
    /// among them: a label value and part of a Lease's name. Default: the
    /// pod's name (`POD_NAME`), else the host name.
    #[arg(long, env = "PROVIDER_IDENTITY")]
    pub identity: Option<String>,

    /// How long after a replica's last renewal the others may take its
    /// objects (`--sharding`; client-go's lease duration).
    #[arg(long, env = "PROVIDER_LEASE_DURATION", default_value = "15s", value_parser = humantime::parse_duration)]
    pub lease_duration: Duration,

    /// How long after its last renewal a replica that cannot renew stops
    /// every cloud mutation (`--sharding`; below `--lease-duration`).
    #[arg(long, env = "PROVIDER_RENEW_DEADLINE", default_value = "10s", value_parser = humantime::parse_duration)]
    pub renew_deadline: Duration,

    /// How often a replica renews its Lease (`--sharding`).
    #[arg(long, env = "PROVIDER_RETRY_PERIOD", default_value = "2s", value_parser = humantime::parse_duration)]
    pub retry_period: Duration,

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

    /// The port of the conversion webhook (`/convert`, TLS), which the
    /// API server calls to convert the namespaced kinds between `v1alpha1`
    /// and `v1beta1`; Crossplane's package manager points the CRDs at the
    /// provider's Service on 9443.
    #[arg(long, env = "PROVIDER_WEBHOOK_PORT", default_value_t = 9443)]
    pub webhook_port: u16,

    /// The address the conversion webhook listens on: every interface by
    /// default, since the API server reaches a provider pod through its
    /// Service.
    #[arg(long, env = "PROVIDER_WEBHOOK_HOST", default_value = "0.0.0.0")]
    pub webhook_host: std::net::IpAddr,

    /// The folder holding the webhook's serving certificate (`tls.crt`,
    /// `tls.key`); Crossplane mounts the provider's TLS Secret there and
    /// sets `WEBHOOK_TLS_CERT_DIR`. Unset, no conversion is served, and
    /// the API server refuses reads and writes of the deprecated
    /// `v1alpha1` namespaced kinds.
    #[arg(long, env = "WEBHOOK_TLS_CERT_DIR")]
    pub webhook_tls_cert_dir: Option<std::path::PathBuf>,

    /// Log at debug level (provider-template's `--debug`, short `-d`).
    /// `RUST_LOG`, when set, wins over it.
    #[arg(short = 'd', long, env = "PROVIDER_DEBUG", default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub debug: bool,

    /// Do not give created cloud resources Crossplane's identifying tags
    /// (`crossplane-kind`, `crossplane-name`, `crossplane-providerconfig`,
    /// `crossplane-providerconfig-kind`, `crossplane-namespace`), which are
    /// otherwise merged under the user's tags at create.
    #[arg(long, env = "PROVIDER_NO_EXTERNAL_TAGS", default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub no_external_tags: bool,

    /// Log as JSON lines instead of human-readable text.
    #[arg(long, env = "PROVIDER_LOG_JSON", default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub log_json: bool,

    /// Send an entry for every create, update and delete of an external
    /// resource to Crossplane's change-log sidecar (crossplane-runtime's
    /// change logs), over gRPC on `--changelogs-socket-path`. Delivery never
    /// holds up a reconcile; entries it cannot deliver are counted in
    /// `provider_changelog_errors_total`.
    #[arg(long, env = "PROVIDER_ENABLE_CHANGELOGS", default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub enable_changelogs: bool,

    /// The Unix socket of the change-log sidecar.
    #[arg(long, env = "PROVIDER_CHANGELOGS_SOCKET_PATH", default_value = runtime::changelog::DEFAULT_SOCKET_PATH)]
    pub changelogs_socket_path: std::path::PathBuf,
}

/// Where the Lease lives when neither the flag nor `POD_NAMESPACE` says.
pub const DEFAULT_LEASE_NAMESPACE: &str = "crossplane-system";

impl Config {
    /// This replica's identity: `--identity`, else `pod_name`, else
    /// `hostname` in lower case (a container's host name is its id).
    pub fn replica_identity(&self, pod_name: Option<String>, hostname: Option<String>) -> String {
        self.identity
            .clone()
            .or(pod_name.filter(|n| !n.is_empty()))
            .or(hostname
                .map(|h| h.trim().to_lowercase())
                .filter(|h| !h.is_empty()))
            .unwrap_or_else(|| format!("provider-{}", std::process::id()))
    }

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
        assert!(!config.leader_election && !config.sharding);
        assert_eq!(config.lease_duration, Duration::from_secs(15));
        assert_eq!(config.renew_deadline, Duration::from_secs(10));
        assert_eq!(config.retry_period, Duration::from_secs(2));
        assert!(!config.debug && !config.no_external_tags);
        assert_eq!(config.sync_interval, Duration::from_secs(3_600));
        assert_eq!(config.poll_jitter, None);
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

    /// Every boolean flag, found from the command's own definition, so a
    /// new one is covered without touching this test.
    fn boolean_flags() -> Vec<(String, bool)> {
        use clap::CommandFactory;
        let command = Config::command();
        let flags: Vec<(String, bool)> = command
            .get_arguments()
            .filter(|arg| {
                let values: Vec<String> = arg
                    .get_possible_values()
                    .iter()
                    .map(|v| v.get_name().to_owned())
                    .collect();
                values == ["true", "false"]
            })
            .map(|arg| {
                let default = arg.get_default_values()[0].to_str().unwrap() == "true";
                (arg.get_long().unwrap().to_owned(), default)
            })
            .collect();
        assert!(flags.len() >= 6, "{flags:?}");
        flags
    }

    fn value_of(args: &[&str], flag: &str) -> bool {
        use clap::CommandFactory;
        let mut argv = vec!["provider"];
        argv.extend(args);
        let matches = Config::command()
            .try_get_matches_from(&argv)
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        *matches.get_one::<bool>(&flag.replace('-', "_")).unwrap()
    }

    #[test]
    fn every_boolean_flag_works_bare_with_a_value_and_unset() {
        for (flag, default) in boolean_flags() {
            let long = format!("--{flag}");
            assert!(value_of(&[&long], &flag), "{long} bare means true");
            assert!(value_of(&[&format!("{long}=true")], &flag), "{long}=true");
            assert!(
                !value_of(&[&format!("{long}=false")], &flag),
                "{long}=false"
            );
            assert!(!value_of(&[&long, "false"], &flag), "{long} false");
            assert_eq!(value_of(&[], &flag), default, "{long} unset");
            // Bare before another flag takes nothing of it.
            assert!(value_of(&[&long, "--poll=30s"], &flag), "{long} --poll=30s");
            let error = Config::try_parse_from(["provider", &format!("{long}=maybe")]).unwrap_err();
            assert!(error.to_string().contains(&long), "{error}");
        }
    }

    #[test]
    fn the_examples_of_crossplanes_docs_parse() {
        let config = Config::try_parse_from([
            "provider",
            "--enable-changelogs",
            "--changelogs-socket-path",
            "/x.sock",
            "--leader-election",
            "--debug",
        ])
        .unwrap();
        assert!(config.enable_changelogs && config.leader_election && config.debug);
        assert_eq!(
            config.changelogs_socket_path,
            std::path::Path::new("/x.sock")
        );
        assert!(Config::try_parse_from(["provider", "-d"]).unwrap().debug);
    }

    #[test]
    fn provider_templates_flag_names_are_aliases() {
        let config = Config::try_parse_from([
            "provider",
            "--poll=30s",
            "--sync=10m",
            "--max-reconcile-rate=50",
        ])
        .unwrap();
        assert_eq!(config.poll_interval, Duration::from_secs(30));
        assert_eq!(config.sync_interval, Duration::from_secs(600));
        assert_eq!(config.max_reconcile_rate, 50);
        let long = Config::try_parse_from(["provider", "--sync-interval=0s"]).unwrap();
        assert_eq!(long.sync_interval, Duration::ZERO);
        use clap::CommandFactory;
        let help = Config::command().render_long_help().to_string();
        for alias in ["--poll", "--sync", "--debug", "--poll-jitter"] {
            assert!(help.contains(alias), "{alias} listed in --help");
        }
    }

    #[test]
    fn poll_jitter_is_a_duration_unset_by_default() {
        assert_eq!(
            Config::try_parse_from(["provider"]).unwrap().poll_jitter,
            None
        );
        let config = Config::try_parse_from(["provider", "--poll-jitter=5s"]).unwrap();
        assert_eq!(config.poll_jitter, Some(Duration::from_secs(5)));
        let error = Config::try_parse_from(["provider", "--poll-jitter=some"]).unwrap_err();
        assert!(error.to_string().contains("--poll-jitter"), "{error}");
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
    fn the_identity_is_the_flag_else_the_pods_name_else_the_host_name() {
        let default = Config::try_parse_from(["provider"]).unwrap();
        let host = Some("A1B2c3\n".to_owned());
        assert_eq!(
            default.replica_identity(Some("pod-0".into()), host.clone()),
            "pod-0"
        );
        assert_eq!(
            default.replica_identity(Some(String::new()), host.clone()),
            "a1b2c3"
        );
        let flagged = Config::try_parse_from(["provider", "--identity=replica-x"]).unwrap();
        assert_eq!(
            flagged.replica_identity(Some("pod-0".into()), host),
            "replica-x"
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
