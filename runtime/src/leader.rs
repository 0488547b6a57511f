//! Leader election on a `coordination.k8s.io/v1` Lease, for running several
//! replicas with one active (`--leader-election`).
//!
//! The same protocol as client-go's leader election, in its simplest form:
//! take the Lease when it is free or expired, renew it well before it
//! expires, and stop the process if renewal fails for a whole lease duration
//! (another replica may have taken over; running on would mean two writers).
//! Optimistic concurrency on the Lease's resourceVersion decides races.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use thiserror::Error;
use tracing::{info, warn};

const LEASE_DURATION: Duration = Duration::from_secs(15);
const RETRY_PERIOD: Duration = Duration::from_secs(2);
const RENEW_PERIOD: Duration = Duration::from_secs(5);

/// Why a leader stopped leading; the process must stop, since another
/// replica may be running the controllers already.
#[derive(Debug, Error)]
pub enum LeaderError {
    /// Another replica took the Lease, or this one could not renew it for
    /// a whole lease duration (15 s).
    #[error(
        "lost the leader Lease {namespace}/{name}: another replica holds it, or it could not be renewed for {LEASE_DURATION:?}"
    )]
    Lost {
        /// The Lease's namespace.
        namespace: String,
        /// The Lease's name.
        name: String,
    },
}

/// One replica's side of the election: [`Elector::acquire`] waits until it
/// holds the Lease, [`Elector::hold`] keeps it until it is lost.
/// [`crate::Provider::leader_election`] runs it for a provider's process.
pub struct Elector {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
}

impl Elector {
    /// The elector of the Lease `name` in `namespace` (created when it does
    /// not exist), competing as `identity`, which must be unique among the
    /// replicas (a pod's name).
    pub fn new(kube: kube::Client, namespace: &str, name: &str, identity: &str) -> Self {
        Self {
            api: Api::namespaced(kube, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity: identity.to_owned(),
        }
    }

    /// Waits until this replica holds the Lease.
    pub async fn acquire(&self) {
        self.acquire_standing_by(|| {}).await;
    }

    /// Waits until this replica holds the Lease, calling `standing_by`
    /// once, the first time it finds another replica holding it.
    pub async fn acquire_standing_by(&self, standing_by: impl FnOnce()) {
        let mut standing_by = Some(standing_by);
        loop {
            match self.try_take().await {
                Ok(true) => {
                    info!(lease = %self.name, identity = %self.identity, "became leader");
                    return;
                }
                Ok(false) => {
                    if let Some(call) = standing_by.take() {
                        info!(lease = %self.name, identity = %self.identity, "another replica leads; standing by");
                        call();
                    }
                }
                Err(error) => warn!(%error, "cannot take the leader Lease; retrying"),
            }
            tokio::time::sleep(RETRY_PERIOD).await;
        }
    }

    /// Renews the Lease until renewal fails for a lease duration; then
    /// returns the error that must stop the process.
    pub async fn hold(&self) -> LeaderError {
        let mut last_renewal = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(RENEW_PERIOD).await;
            match self.try_take().await {
                Ok(true) => last_renewal = tokio::time::Instant::now(),
                // Someone else holds it now: stop at once, never two writers.
                Ok(false) => return self.lost(),
                Err(error) => warn!(%error, "cannot renew the leader Lease"),
            }
            if last_renewal.elapsed() >= LEASE_DURATION {
                return self.lost();
            }
        }
    }

    fn lost(&self) -> LeaderError {
        LeaderError::Lost {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// Takes or renews the Lease if it is ours, free or expired.
    async fn try_take(&self) -> Result<bool, kube::Error> {
        let now = jiff::Timestamp::now();
        let spec = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(LEASE_DURATION.as_secs() as i32),
            renew_time: Some(MicroTime(now)),
            ..LeaseSpec::default()
        };
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    acquire_time: Some(MicroTime(now)),
                    ..spec
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let current = lease.spec.clone().unwrap_or_default();
        let ours = current.holder_identity.as_deref() == Some(self.identity.as_str());
        let expired = current.renew_time.as_ref().is_none_or(|t| {
            let duration = current
                .lease_duration_seconds
                .unwrap_or(LEASE_DURATION.as_secs() as i32);
            t.0 + jiff::SignedDuration::from_secs(i64::from(duration)) < now
        });
        if !ours && !expired {
            return Ok(false);
        }
        let acquire_time = if ours {
            current.acquire_time
        } else {
            Some(MicroTime(now))
        };
        let transitions = current.lease_transitions.unwrap_or(0) + i32::from(!ours);
        lease.spec = Some(LeaseSpec {
            acquire_time,
            lease_transitions: Some(transitions),
            ..spec
        });
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }
}
