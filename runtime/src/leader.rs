//! Leader election on a `coordination.k8s.io/v1` Lease, for running several
//! replicas with one active (`--leader-election`).
//!
//! The same protocol as client-go's leader election, in its simplest form:
//! take the Lease when it is free or expired, renew it every retry period
//! (2 s), and stop the process if no renewal succeeds within the renew
//! deadline (10 s), which is shorter than the lease duration (15 s) that
//! the others wait before taking over, so that two never lead at once.
//! Optimistic concurrency on the Lease's resourceVersion decides races.
//!
//! A renewal is one write, of the Lease as this replica last wrote it:
//! on a saturated API server each request can take seconds, and the
//! read before each write that taking the Lease needs doubled the time a
//! renewal took. At 100,000 objects with `--sharding` the leader's
//! renewals (a read and a write every 5 s) fell more than a lease
//! duration apart six times in 90 minutes, and each time another replica
//! took over.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use thiserror::Error;
use tracing::{info, warn};

use crate::in_flight::finished;

const LEASE_DURATION: Duration = Duration::from_secs(15);
const RENEW_DEADLINE: Duration = Duration::from_secs(10);
const RETRY_PERIOD: Duration = Duration::from_secs(2);

/// Why a leader stopped leading; the process must stop, since another
/// replica may be running the controllers already.
#[derive(Debug, Error)]
pub enum LeaderError {
    /// Another replica took the Lease, or this one could not renew it
    /// within the renew deadline (10 s).
    #[error(
        "lost the leader Lease {namespace}/{name}: another replica holds it, or it could not be renewed within {RENEW_DEADLINE:?}"
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
#[derive(Clone)]
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
                Ok(Some(_)) => {
                    info!(lease = %self.name, identity = %self.identity, "became leader");
                    return;
                }
                Ok(None) => {
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

    /// Renews the Lease every retry period until a renewal fails to
    /// succeed within the renew deadline, counted from the start of the
    /// last one that succeeded (the `renewTime` it wrote), a request that
    /// hangs included; then returns the error that must stop the process.
    pub async fn hold(&self) -> LeaderError {
        let mut written: Option<Lease> = None;
        let mut renewed = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(RETRY_PERIOD).await;
            let started = tokio::time::Instant::now();
            // A renewal past the deadline is let finish ([`finished`]).
            // If it lands, the Lease names this replica for one more lease
            // duration, and the acquire that follows the step-down takes
            // it again.
            let elector = self.clone();
            let last = written.take();
            let renewal = finished(async move {
                match last {
                    Some(lease) => elector.renew(lease).await,
                    None => elector.try_take().await,
                }
            });
            match tokio::time::timeout_at(renewed + RENEW_DEADLINE, renewal).await {
                Ok(Some(Ok(Some(lease)))) => {
                    written = Some(lease);
                    renewed = started;
                }
                // Someone else holds it now: stop at once, never two writers.
                Ok(Some(Ok(None))) => return self.lost(),
                Ok(Some(Err(error))) => warn!(%error, "cannot renew the leader Lease"),
                Ok(None) => warn!("renewing the leader Lease failed"),
                Err(_) => {
                    warn!(deadline = ?RENEW_DEADLINE, "renewing the leader Lease took past the renew deadline");
                }
            }
            if renewed.elapsed() >= RENEW_DEADLINE {
                return self.lost();
            }
        }
    }

    /// Writes the Lease as this replica last wrote it, renewed now: one
    /// request. If it changed since (409), someone else wrote it, and
    /// [`Self::try_take`] reads it to decide.
    async fn renew(&self, mut lease: Lease) -> Result<Option<Lease>, kube::Error> {
        if let Some(spec) = lease.spec.as_mut() {
            spec.renew_time = Some(MicroTime(jiff::Timestamp::now()));
        }
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(lease) => Ok(Some(lease)),
            Err(kube::Error::Api(e)) if e.code == 409 => self.try_take().await,
            Err(e) => Err(e),
        }
    }

    fn lost(&self) -> LeaderError {
        LeaderError::Lost {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// Takes or renews the Lease if it is ours, free or expired: the
    /// Lease as written, or `None` if another replica holds it.
    async fn try_take(&self) -> Result<Option<Lease>, kube::Error> {
        let found = self.api.get_opt(&self.name).await?;
        // After the read: the renewTime written is as late as it can be.
        let now = jiff::Timestamp::now();
        let spec = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(LEASE_DURATION.as_secs() as i32),
            renew_time: Some(MicroTime(now)),
            ..LeaseSpec::default()
        };
        let Some(mut lease) = found else {
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
                Ok(lease) => Ok(Some(lease)),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(None),
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
            return Ok(None);
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
            Ok(lease) => Ok(Some(lease)),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    use serde_json::{Value, json};

    use super::*;

    /// What the scripted server answers a request with.
    enum Answer {
        Ok(Value),
        Status(u16),
        /// Answers with this body after this long.
        Late(Duration, Value),
    }

    fn lease(holder: &str, version: &str) -> Answer {
        Answer::Ok(lease_body(holder, version))
    }

    fn lease_body(holder: &str, version: &str) -> Value {
        json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "leader", "namespace": "ns", "resourceVersion": version},
            "spec": {
                "holderIdentity": holder, "leaseDurationSeconds": 15,
                "renewTime": MicroTime(jiff::Timestamp::now()),
            },
        })
    }

    /// An elector whose API server answers `answers` in order, the
    /// requests it was sent (the method and, for a write, the
    /// resourceVersion it was based on), and how many it answered.
    fn scripted(answers: Vec<Answer>) -> (Elector, Arc<Mutex<Vec<String>>>, Arc<AtomicUsize>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let answered = Arc::new(AtomicUsize::new(0));
        let answers = Arc::new(Mutex::new(VecDeque::from(answers)));
        let (seen, counted) = (asked.clone(), answered.clone());
        let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
            let (seen, counted) = (seen.clone(), counted.clone());
            let answer = answers.lock().unwrap().pop_front();
            async move {
                let method = request.method().to_string();
                let body = request.into_body().collect().await?.to_bytes();
                let based_on = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|b| b["metadata"]["resourceVersion"].as_str().map(str::to_owned));
                seen.lock().unwrap().push(match based_on {
                    Some(version) => format!("{method} at {version}"),
                    None => method,
                });
                let (status, body) = match answer.ok_or("the script has no more answers")? {
                    Answer::Ok(body) => (200, body),
                    Answer::Late(after, body) => {
                        tokio::time::sleep(after).await;
                        (200, body)
                    }
                    Answer::Status(code) => (
                        code,
                        json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
                            "reason": "Conflict", "code": code, "message": "changed"}),
                    ),
                };
                counted.fetch_add(1, Ordering::SeqCst);
                let mut response = http::Response::new(Full::new(Bytes::from(body.to_string())));
                *response.status_mut() = http::StatusCode::from_u16(status)?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(response)
            }
        });
        let client = kube::Client::new(service, "ns");
        (Elector::new(client, "ns", "leader", "me"), asked, answered)
    }

    #[tokio::test(start_paused = true)]
    async fn a_renewal_is_one_write_of_the_lease_as_last_written() {
        let (elector, asked, _) = scripted(vec![
            // The first renewal reads the Lease, then writes it.
            lease("me", "1"),
            lease("me", "2"),
            // Then each is one write, at the version last written.
            lease("me", "3"),
            lease("me", "4"),
            // Another replica wrote it: read it, and it holds it.
            Answer::Status(409),
            lease("other", "5"),
        ]);
        let lost = tokio::time::timeout(Duration::from_secs(60), elector.hold()).await;
        assert!(matches!(lost, Ok(LeaderError::Lost { .. })), "{lost:?}");
        assert_eq!(
            *asked.lock().unwrap(),
            ["GET", "PUT at 1", "PUT at 2", "PUT at 3", "PUT at 4", "GET"]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_renewal_past_the_renew_deadline_stops_leading_and_is_let_finish() {
        let late = Answer::Late(Duration::from_secs(20), lease_body("me", "3"));
        let (elector, asked, answered) = scripted(vec![lease("me", "1"), lease("me", "2"), late]);
        let start = tokio::time::Instant::now();
        let lost = tokio::time::timeout(Duration::from_secs(60), elector.hold()).await;
        assert!(matches!(lost, Ok(LeaderError::Lost { .. })), "{lost:?}");
        // Renewed at 2 s (read and write); the next write, sent at 4 s,
        // takes 20 s: the replica stops leading 10 s after the last
        // renewal began, before the others may take over (15 s).
        let stopped = start.elapsed();
        assert_eq!(stopped, Duration::from_secs(12), "{stopped:?}");
        assert_eq!(*asked.lock().unwrap(), ["GET", "PUT at 1", "PUT at 2"]);
        // The late write was not cancelled: it gets its answer.
        assert_eq!(answered.load(Ordering::SeqCst), 2);
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(answered.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn failing_renewals_stop_leading_at_the_renew_deadline() {
        let (elector, _, _) = scripted(vec![
            lease("me", "1"),
            lease("me", "2"),
            // Every renewal from 4 s on fails.
            Answer::Status(500),
            Answer::Status(500),
            Answer::Status(500),
            Answer::Status(500),
        ]);
        let start = tokio::time::Instant::now();
        let lost = tokio::time::timeout(Duration::from_secs(60), elector.hold()).await;
        assert!(matches!(lost, Ok(LeaderError::Lost { .. })), "{lost:?}");
        assert_eq!(start.elapsed(), Duration::from_secs(12));
    }
}
