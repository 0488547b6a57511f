//! Membership: this replica's own Lease, renewed until it is revoked, and
//! every replica's view of the others' Leases.
//!
//! Liveness is judged as client-go's leader election judges it, by the
//! observer's own clock: a Lease is live until its lease duration has
//! passed since this replica last saw it change (its resourceVersion), so
//! clocks that disagree between machines do not matter. Every replica
//! keeps the view from its start, not only the leader, so that a new
//! leader already knows how long each Lease has been silent.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, ResourceExt};
use tokio::sync::watch;
use tracing::{info, warn};

use super::Shard;
use crate::metrics::Metrics;

/// What one replica last saw of one membership Lease.
#[derive(Debug, Clone)]
struct Seen {
    holder: String,
    version: String,
    /// When this replica saw the version change.
    changed: Instant,
    duration: Duration,
    /// The holder's own `renewTime`, for when its objects were left.
    renewed: Option<jiff::Timestamp>,
}

/// A Lease whose holder stopped renewing: the version to revoke it at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Silent {
    pub lease: String,
    pub holder: String,
    pub version: String,
    /// The holder's last `renewTime`, by its clock.
    pub renewed: Option<jiff::Timestamp>,
}

/// The membership Leases as this replica has seen them.
#[derive(Debug, Default)]
pub(crate) struct MemberView {
    leases: HashMap<String, Seen>,
}

impl MemberView {
    /// Records the Lease as seen at `now`.
    pub(crate) fn saw(&mut self, lease: &Lease, now: Instant, default_duration: Duration) {
        let spec = lease.spec.clone().unwrap_or_default();
        let (Some(holder), Some(version)) = (spec.holder_identity, lease.resource_version()) else {
            return;
        };
        let duration = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map_or(default_duration, Duration::from_secs);
        let name = lease.name_any();
        let changed = match self.leases.get(&name) {
            Some(seen) if seen.version == version => seen.changed,
            _ => now,
        };
        self.leases.insert(
            name,
            Seen {
                holder,
                version,
                changed,
                duration,
                renewed: spec.renew_time.map(|t| t.0),
            },
        );
    }

    /// The Lease is gone.
    pub(crate) fn gone(&mut self, name: &str) {
        self.leases.remove(name);
    }

    /// The identities of the live members at `now`, sorted.
    pub(crate) fn live(&self, now: Instant) -> Vec<String> {
        let live: BTreeSet<&String> = self
            .leases
            .values()
            .filter(|seen| now.saturating_duration_since(seen.changed) < seen.duration)
            .map(|seen| &seen.holder)
            .collect();
        live.into_iter().cloned().collect()
    }

    /// Whether some Lease, live or not, names `identity`: its objects may
    /// not be taken until that Lease is revoked.
    pub(crate) fn holds(&self, identity: &str) -> bool {
        self.leases.values().any(|seen| seen.holder == identity)
    }

    /// The first moment after `now` at which a Lease seen live turns
    /// silent, if one will: the membership watch looks again then, so that
    /// a member's objects wait no longer than its lease duration.
    pub(crate) fn next_expiry(&self, now: Instant) -> Option<Instant> {
        self.leases
            .values()
            .map(|seen| seen.changed + seen.duration)
            .filter(|at| *at > now)
            .min()
    }

    /// The Leases silent for their whole duration at `now`.
    pub(crate) fn silent(&self, now: Instant) -> Vec<Silent> {
        self.leases
            .iter()
            .filter(|(_, seen)| now.saturating_duration_since(seen.changed) >= seen.duration)
            .map(|(name, seen)| Silent {
                lease: name.clone(),
                holder: seen.holder.clone(),
                version: seen.version.clone(),
                renewed: seen.renewed,
            })
            .collect()
    }
}

/// The membership Leases' view, shared by the watch that keeps it and the
/// assigner that reads it, with the live members published on change.
pub(crate) struct Members {
    pub view: Mutex<MemberView>,
    pub live: watch::Sender<Vec<String>>,
}

impl Members {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            view: Mutex::new(MemberView::default()),
            live: watch::Sender::new(Vec::new()),
        })
    }

    fn publish(&self, metrics: &Metrics) {
        let live = self
            .view
            .lock()
            .expect("member view lock")
            .live(Instant::now());
        self.live.send_if_modified(|current| {
            if *current == live {
                return false;
            }
            info!(members = ?live, "shard membership changed");
            metrics.shard.members.set(live.len() as i64);
            *current = live;
            true
        });
    }
}

/// Keeps `members` in step with the membership Leases until `shutdown`:
/// a watch of the Leases labelled with the group, and a timer that wakes
/// when the next Lease turns silent (between events, nothing else changes
/// who is live).
pub(crate) async fn watch_members(
    kube: kube::Client,
    shard: Arc<Shard>,
    members: Arc<Members>,
    metrics: Metrics,
    shutdown: impl Future<Output = ()>,
) {
    let api: Api<Lease> = Api::namespaced(kube, shard.config.namespace());
    let selector = format!("{}={}", shard.member_label, shard.config.leader_lease());
    let events = watcher::watcher(api, watcher::Config::default().labels(&selector))
        .default_backoff()
        .inspect_err(|error| warn!(%error, "membership Lease watch failed; retrying"))
        .filter_map(|event| async move { event.ok() });
    tokio::pin!(events);
    tokio::pin!(shutdown);
    let duration = shard.timing().lease_duration;
    let mut relisted: Option<Vec<String>> = None;
    loop {
        let next = members
            .view
            .lock()
            .expect("member view lock")
            .next_expiry(Instant::now());
        let expiry = async move {
            match next {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = &mut shutdown => return,
            () = expiry => {}
            event = events.next() => {
                let Some(event) = event else { return };
                let mut view = members.view.lock().expect("member view lock");
                let now = Instant::now();
                match event {
                    Event::Init => relisted = Some(Vec::new()),
                    Event::InitApply(lease) => {
                        if let Some(seen) = relisted.as_mut() {
                            seen.push(lease.name_any());
                        }
                        view.saw(&lease, now, duration);
                    }
                    Event::InitDone => {
                        let seen = relisted.take().unwrap_or_default();
                        view.leases.retain(|name, _| seen.contains(name));
                    }
                    Event::Apply(lease) => view.saw(&lease, now, duration),
                    Event::Delete(lease) => view.gone(&lease.name_any()),
                }
            }
        }
        members.publish(&metrics);
    }
}

/// Why this replica's membership ended.
#[derive(Debug)]
enum Ended {
    /// Another replica deleted or rewrote the Lease.
    Revoked,
    /// The process is stopping.
    Shutdown,
}

/// This replica's own Lease.
pub(crate) struct Membership {
    api: Api<Lease>,
    shard: Arc<Shard>,
    name: String,
}

impl Membership {
    pub(crate) fn new(kube: kube::Client, shard: Arc<Shard>) -> Self {
        Self {
            api: Api::namespaced(kube, shard.config.namespace()),
            name: format!("{}.{}", shard.config.leader_lease(), shard.identity()),
            shard,
        }
    }

    /// Joins (creates the Lease, or takes it back if a previous process
    /// of the same identity left it), retrying until it can; returns the
    /// Lease's version. The fence opens with the first renewal.
    pub(crate) async fn join(&self) -> String {
        self.shard.fence.join();
        loop {
            let sent = Instant::now();
            match self.take().await {
                Ok(version) => {
                    self.shard.fence.renewed(sent);
                    info!(lease = %self.name, identity = %self.shard.identity(), "joined the shard membership");
                    return version;
                }
                Err(error) => {
                    warn!(%error, lease = %self.name, "cannot take the membership Lease; retrying")
                }
            }
            tokio::time::sleep(self.shard.timing().retry_period).await;
        }
    }

    /// Renews the Lease every retry period until it is revoked or
    /// `shutdown` resolves; a renewal that fails leaves the fence to
    /// close by itself at the renew deadline.
    pub(crate) async fn renew(
        &self,
        mut version: String,
        shutdown: impl Future<Output = ()>,
    ) -> bool {
        tokio::pin!(shutdown);
        let ended = loop {
            tokio::select! {
                () = &mut shutdown => break Ended::Shutdown,
                () = tokio::time::sleep(self.shard.timing().retry_period) => {}
            }
            let sent = Instant::now();
            match self.renew_once(&version).await {
                Ok(Some(next)) => {
                    version = next;
                    self.shard.fence.renewed(sent);
                }
                Ok(None) => break Ended::Revoked,
                Err(error) => {
                    warn!(%error, lease = %self.name, "cannot renew the membership Lease")
                }
            }
        };
        match ended {
            Ended::Revoked => {
                self.shard.fence.revoke();
                info!(lease = %self.name, "membership Lease revoked by another replica; leaving to join again");
                true
            }
            Ended::Shutdown => false,
        }
    }

    /// Leaves at shutdown, once every reconcile has ended: deleting the
    /// Lease lets the leader hand this replica's objects on at once
    /// instead of after a lease duration.
    pub(crate) async fn leave(&self) {
        self.shard.fence.revoke();
        match self.api.delete(&self.name, &DeleteParams::default()).await {
            Ok(_) => info!(lease = %self.name, "left the shard membership"),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(error) => {
                warn!(%error, "cannot delete the membership Lease; the others take over after its duration")
            }
        }
    }

    fn spec(&self) -> LeaseSpec {
        let now = MicroTime(jiff::Timestamp::now());
        LeaseSpec {
            holder_identity: Some(self.shard.identity().to_owned()),
            lease_duration_seconds: Some(self.shard.timing().lease_duration.as_secs() as i32),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            ..LeaseSpec::default()
        }
    }

    async fn take(&self) -> Result<String, kube::Error> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                labels: Some(
                    [(
                        self.shard.member_label.clone(),
                        self.shard.config.leader_lease().to_owned(),
                    )]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(self.spec()),
        };
        let written = match self.api.create(&PostParams::default(), &lease).await {
            Err(kube::Error::Api(e)) if e.code == 409 => {
                // Left by an earlier process of this identity (a restarted
                // pod of the same name): it is dead, the Lease is ours.
                let existing = self.api.get(&self.name).await?;
                let mut lease = lease;
                lease.metadata.resource_version = existing.resource_version();
                self.api
                    .replace(&self.name, &PostParams::default(), &lease)
                    .await?
            }
            other => other?,
        };
        Ok(written.resource_version().unwrap_or_default())
    }

    /// `Ok(None)` when the Lease is no longer ours: deleted, or written by
    /// someone else since `version`. A merge patch guarded by `version`,
    /// not a replace: the API server creates a Lease that a replace names
    /// if it does not exist, which would bring a revoked membership back
    /// to life with its stale caches.
    async fn renew_once(&self, version: &str) -> Result<Option<String>, kube::Error> {
        let patch = serde_json::json!({
            "metadata": { "resourceVersion": version },
            "spec": { "renewTime": MicroTime(jiff::Timestamp::now()) },
        });
        match self
            .api
            .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(written) => Ok(Some(written.resource_version().unwrap_or_default())),
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(None),
            Err(error) => Err(error),
        }
    }
}

/// Revokes the silent Lease `silent`, unless it changed since: `true` when
/// it was deleted at that version (or was already gone).
pub(crate) async fn revoke(api: &Api<Lease>, silent: &Silent) -> Result<bool, kube::Error> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: Some(silent.version.clone()),
            uid: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(&silent.lease, &params).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(name: &str, holder: &str, version: &str) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(name.into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.into()),
                lease_duration_seconds: Some(15),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn a_lease_is_live_until_it_has_not_changed_for_its_duration() {
        let mut view = MemberView::default();
        let t0 = Instant::now();
        view.saw(&lease("l.a", "a", "1"), t0, Duration::from_secs(15));
        view.saw(&lease("l.b", "b", "1"), t0, Duration::from_secs(15));
        assert_eq!(view.live(t0), ["a", "b"]);
        // a renews (a new version); b does not.
        view.saw(
            &lease("l.a", "a", "2"),
            t0 + Duration::from_secs(10),
            Duration::from_secs(15),
        );
        view.saw(
            &lease("l.b", "b", "1"),
            t0 + Duration::from_secs(10),
            Duration::from_secs(15),
        );
        let later = t0 + Duration::from_secs(15);
        assert_eq!(view.live(later), ["a"]);
        let silent = view.silent(later);
        assert_eq!(silent.len(), 1);
        assert_eq!(
            (silent[0].holder.as_str(), silent[0].version.as_str()),
            ("b", "1")
        );
        // Until revoked, b's Lease still holds its objects.
        assert!(view.holds("b"));
        view.gone("l.b");
        assert!(!view.holds("b"));
    }

    #[test]
    fn the_next_expiry_is_the_first_live_lease_to_turn_silent() {
        let mut view = MemberView::default();
        let t0 = Instant::now();
        assert_eq!(view.next_expiry(t0), None);
        view.saw(&lease("l.a", "a", "1"), t0, Duration::from_secs(15));
        view.saw(
            &lease("l.b", "b", "1"),
            t0 + Duration::from_secs(4),
            Duration::from_secs(15),
        );
        let later = t0 + Duration::from_secs(5);
        assert_eq!(view.next_expiry(later), Some(t0 + Duration::from_secs(15)));
        // Once a is silent, b's is the next; once both are, none.
        assert_eq!(
            view.next_expiry(t0 + Duration::from_secs(15)),
            Some(t0 + Duration::from_secs(19))
        );
        assert_eq!(view.next_expiry(t0 + Duration::from_secs(19)), None);
        // At its expiry, a is no longer live.
        assert_eq!(view.live(t0 + Duration::from_secs(15)), ["b"]);
    }

    #[test]
    fn a_lease_first_seen_late_gets_a_whole_duration_from_then() {
        let mut view = MemberView::default();
        let t0 = Instant::now();
        view.saw(&lease("l.a", "a", "7"), t0, Duration::from_secs(15));
        assert!(view.silent(t0 + Duration::from_secs(14)).is_empty());
        assert_eq!(view.silent(t0 + Duration::from_secs(15)).len(), 1);
    }
}
