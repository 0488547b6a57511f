//! Replicas that share the work: each holds a Lease of its own, one of
//! them (the holder of the leader Lease) assigns every managed and query
//! resource to a live replica with a label, and each replica watches, and
//! so caches and reconciles, only the objects carrying its own label.
//! Kubernetes is the whole of the machinery: Leases for membership,
//! labels for assignment, label-selected watches for the division of the
//! caches; no store, webhook or coordinator of the provider's own.
//!
//! ```text
//!  membership       Lease <leader>.<identity>   renewed every retry period by its replica,
//!                   label <domain>/shard-member  watched by every replica
//!  assignment       the leader labels objects <domain>/shard=<identity>
//!                   by rendezvous hash of group/kind/namespace/name over the live members
//!  each replica     watches <domain>/shard=<itself> only
//!  handover         leader: annotate <domain>/shard-next=<new>  (object stays with the old owner)
//!    (both live)    old owner: its reconcile in flight ends, the next one relabels to <new>
//!                   new owner: its watch sees the object appear; reconciles it
//!  takeover         leader: a member's Lease unchanged for a lease duration -> delete it
//!    (owner gone)   (precondition: the version it saw), then relabel its objects
//! ```
//!
//! Fencing (the private `fence` module): a replica mutates the cloud only
//! while its last renewal is younger than the renew deadline and its Lease
//! has not been revoked, and only objects its own label names.

mod assign;
pub(crate) mod assigner;
mod fence;
pub(crate) mod membership;
pub(crate) mod shared;
mod slim;

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube::api::ObjectMeta;
use thiserror::Error;

pub(crate) use assign::{object_key, owner};
pub(crate) use fence::{Fence, Fenced};

/// The timing of the membership Leases: client-go's leader-election
/// defaults unless set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTiming {
    /// How long after the last renewal they saw the others may take a
    /// replica's objects (15 s).
    pub lease_duration: Duration,
    /// How long after its last renewal was sent a replica that could not
    /// renew stops every cloud mutation (10 s). Below `lease_duration`,
    /// so that it stops before anyone may take over.
    pub renew_deadline: Duration,
    /// How often a replica renews its Lease, and retries a failed
    /// renewal (2 s).
    pub retry_period: Duration,
}

impl Default for LeaseTiming {
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// Why a sharding configuration cannot be used.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ShardError {
    /// The identity must be usable as a label value and in a Lease's name.
    #[error(
        "the replica identity {identity:?} cannot be a label value and part of a Lease name: {reason} (set --identity or POD_NAME)"
    )]
    Identity {
        /// The identity given.
        identity: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The timing breaks `retry period < renew deadline < lease duration`.
    #[error(
        "the lease timing must have retry period < renew deadline < lease duration; got {retry_period:?}, {renew_deadline:?}, {lease_duration:?}"
    )]
    Timing {
        /// The lease duration given.
        lease_duration: Duration,
        /// The renew deadline given.
        renew_deadline: Duration,
        /// The retry period given.
        retry_period: Duration,
    },
}

/// How a provider's replicas share the work ([`crate::Provider::sharding`]).
#[derive(Debug, Clone)]
pub struct Sharding {
    domain: String,
    namespace: String,
    leader_lease: String,
    identity: String,
    timing: LeaseTiming,
}

impl Sharding {
    /// Replicas that label objects `<domain>/shard=<identity>`, hold their
    /// membership Leases `<leader_lease>.<identity>` in `namespace` and
    /// elect the replica that assigns on the Lease `leader_lease` there.
    /// The identity (a pod's name) must be unique among the replicas, at
    /// most 63 characters of lower-case letters, digits, `-` and `.`,
    /// starting and ending with a letter or digit.
    ///
    /// ```
    /// use crossplane_managed_runtime::shard::Sharding;
    ///
    /// let sharding = Sharding::new("example.org", "crossplane-system", "provider-example", "pod-0").unwrap();
    /// assert_eq!(sharding.label(), "example.org/shard");
    /// assert!(Sharding::new("example.org", "crossplane-system", "provider-example", "Pod_0").is_err());
    /// ```
    pub fn new(
        domain: &str,
        namespace: &str,
        leader_lease: &str,
        identity: &str,
    ) -> Result<Self, ShardError> {
        check_identity(identity)?;
        Ok(Self {
            domain: domain.to_owned(),
            namespace: namespace.to_owned(),
            leader_lease: leader_lease.to_owned(),
            identity: identity.to_owned(),
            timing: LeaseTiming::default(),
        })
    }

    /// Other Lease timing than client-go's defaults.
    pub fn timing(mut self, timing: LeaseTiming) -> Result<Self, ShardError> {
        if !(timing.retry_period < timing.renew_deadline
            && timing.renew_deadline < timing.lease_duration)
        {
            return Err(ShardError::Timing {
                lease_duration: timing.lease_duration,
                renew_deadline: timing.renew_deadline,
                retry_period: timing.retry_period,
            });
        }
        self.timing = timing;
        Ok(self)
    }

    /// The label naming an object's replica: `<domain>/shard`.
    pub fn label(&self) -> String {
        format!("{}/shard", self.domain)
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The namespace of the Leases.
    pub(crate) fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The leader Lease's name.
    pub(crate) fn leader_lease(&self) -> &str {
        &self.leader_lease
    }
}

fn check_identity(identity: &str) -> Result<(), ShardError> {
    let reason = if identity.is_empty() {
        Some("it is empty")
    } else if identity.len() > 63 {
        Some("it is longer than 63 characters")
    } else if !identity
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        Some("only lower-case letters, digits, '-' and '.' are allowed")
    } else if !identity.starts_with(|c: char| c.is_ascii_alphanumeric())
        || !identity.ends_with(|c: char| c.is_ascii_alphanumeric())
    {
        Some("it must start and end with a letter or digit")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(ShardError::Identity {
            identity: identity.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Where an object stands for this replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Ours: reconcile it.
    Own,
    /// Ours, and the assigner asks us to hand it to this replica.
    Drain(String),
    /// Not ours (a stale copy, or one we released): leave it.
    Foreign,
}

/// How long a released object is remembered as not ours even if a stale
/// copy says otherwise: far longer than a watch takes to deliver the
/// release, which clears it sooner.
const RELEASE_MEMORY: Duration = Duration::from_secs(120);

/// One replica's sharding state, shared by its controllers, its
/// membership and, on the leader, the assigner.
#[derive(Debug)]
pub(crate) struct Shard {
    pub config: Sharding,
    /// `<domain>/shard`.
    pub label: String,
    /// `<domain>/shard-next`: the owner the assigner hands an object to.
    pub next: String,
    /// `<domain>/shard-moved-at`: when the object's last owner let go.
    pub moved_at: String,
    /// `<domain>/shard-member`, on the membership Leases; its value is the
    /// leader Lease's name, so that two providers in one namespace keep
    /// their members apart.
    pub member_label: String,
    pub fence: Fence,
    /// The field manager the assigner's label writes are recorded under:
    /// the provider's own, whose entry in an object's managedFields
    /// already holds what its reconciles patch. A manager of the
    /// assigner's own added an entry to every object, which the API
    /// server decodes and encodes again at each of its later writes.
    pub field_manager: String,
    /// Objects (uid) this replica handed on, until its watch sees them go.
    released: Mutex<HashMap<String, Instant>>,
    /// Objects (uid) reconciled here since they last came.
    seen: Mutex<HashSet<String>>,
}

impl Shard {
    pub(crate) fn new(config: Sharding, field_manager: &str) -> Self {
        let domain = config.domain.clone();
        Self {
            label: format!("{domain}/shard"),
            next: format!("{domain}/shard-next"),
            moved_at: format!("{domain}/shard-moved-at"),
            member_label: format!("{domain}/shard-member"),
            fence: Fence::new(config.timing.renew_deadline),
            field_manager: field_manager.to_owned(),
            config,
            released: Mutex::new(HashMap::new()),
            seen: Mutex::new(HashSet::new()),
        }
    }

    pub(crate) fn identity(&self) -> &str {
        &self.config.identity
    }

    pub(crate) fn timing(&self) -> LeaseTiming {
        self.config.timing
    }

    /// The label selector of this replica's watches.
    pub(crate) fn selector(&self) -> String {
        format!("{}={}", self.label, self.identity())
    }

    /// Where the object of `meta` stands for this replica.
    pub(crate) fn standing(&self, meta: &ObjectMeta) -> Standing {
        let ours = meta
            .labels
            .as_ref()
            .and_then(|l| l.get(&self.label))
            .is_some_and(|owner| owner == self.identity());
        if !ours || meta.uid.as_ref().is_some_and(|uid| self.is_released(uid)) {
            return Standing::Foreign;
        }
        match meta.annotations.as_ref().and_then(|a| a.get(&self.next)) {
            Some(next) if next != self.identity() => Standing::Drain(next.clone()),
            _ => Standing::Own,
        }
    }

    /// Whether a cloud mutation of the object of `meta` may go out now:
    /// the fence is open and the object is still ours.
    pub(crate) fn may_mutate(&self, meta: &ObjectMeta) -> Result<(), Fenced> {
        self.fence.check(Instant::now())?;
        match self.standing(meta) {
            Standing::Foreign => Err(Fenced::NotOwner),
            // A handover waits for this reconcile to end; until then the
            // object is ours.
            Standing::Own | Standing::Drain(_) => Ok(()),
        }
    }

    /// The object of `meta` is reconciled here: the first time since it
    /// came, its time without an owner (from its `moved-at` annotation)
    /// is recorded.
    pub(crate) fn entered(
        &self,
        meta: &ObjectMeta,
        kind: impl FnOnce() -> String,
        metrics: &crate::metrics::Metrics,
    ) {
        let Some(uid) = &meta.uid else { return };
        if !self.seen.lock().expect("seen lock").insert(uid.clone()) {
            return;
        }
        let since = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(&self.moved_at))
            .and_then(|at| at.parse::<jiff::Timestamp>().ok());
        if let Some(since) = since {
            let unowned = jiff::Timestamp::now().duration_since(since);
            metrics
                .shard
                .unowned
                .get_or_create(&crate::metrics::KindLabels { kind: kind() })
                .observe(unowned.as_secs_f64().max(0.0));
        }
    }

    /// This replica handed the object `uid` on.
    pub(crate) fn released(&self, uid: &str) {
        let mut released = self.released.lock().expect("released lock");
        let now = Instant::now();
        released.retain(|_, at| now.duration_since(*at) < RELEASE_MEMORY);
        released.insert(uid.to_owned(), now);
    }

    /// The watch saw the object `uid` leave: a later copy labelled ours is
    /// newer than the release.
    pub(crate) fn left(&self, uid: &str) {
        self.released.lock().expect("released lock").remove(uid);
        self.seen.lock().expect("seen lock").remove(uid);
    }

    fn is_released(&self, uid: &str) -> bool {
        self.released
            .lock()
            .expect("released lock")
            .get(uid)
            .is_some_and(|at| at.elapsed() < RELEASE_MEMORY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn meta(owner: Option<&str>, next: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            uid: Some("uid-1".into()),
            labels: owner.map(|o| BTreeMap::from([("example.org/shard".into(), o.into())])),
            annotations: next
                .map(|n| BTreeMap::from([("example.org/shard-next".into(), n.into())])),
            ..ObjectMeta::default()
        }
    }

    fn shard() -> Shard {
        Shard::new(
            Sharding::new("example.org", "ns", "leader", "pod-a").unwrap(),
            "provider-example",
        )
    }

    #[test]
    fn identities_that_cannot_be_label_values_are_refused() {
        for bad in ["", "Pod-A", "pod_a", "-pod", "pod.", &"a".repeat(64)] {
            assert!(
                matches!(check_identity(bad), Err(ShardError::Identity { .. })),
                "{bad:?} accepted"
            );
        }
        for good in ["pod-a", "provider-7d9f8-x2x7q", "a", "10.0.0.1"] {
            assert_eq!(check_identity(good), Ok(()), "{good:?}");
        }
    }

    #[test]
    fn timing_must_order_retry_deadline_and_duration() {
        let sharding = Sharding::new("d", "ns", "l", "pod-a").unwrap();
        let bad = LeaseTiming {
            renew_deadline: Duration::from_secs(20),
            ..LeaseTiming::default()
        };
        let error = sharding.clone().timing(bad).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("retry period < renew deadline < lease duration")
        );
        assert!(sharding.timing(LeaseTiming::default()).is_ok());
    }

    #[test]
    fn standing_reads_the_label_and_the_handover_annotation() {
        let shard = shard();
        assert_eq!(shard.standing(&meta(Some("pod-a"), None)), Standing::Own);
        assert_eq!(
            shard.standing(&meta(Some("pod-b"), None)),
            Standing::Foreign
        );
        assert_eq!(shard.standing(&meta(None, None)), Standing::Foreign);
        assert_eq!(
            shard.standing(&meta(Some("pod-a"), Some("pod-b"))),
            Standing::Drain("pod-b".into())
        );
        assert_eq!(
            shard.standing(&meta(Some("pod-a"), Some("pod-a"))),
            Standing::Own
        );
    }

    #[test]
    fn a_released_object_is_foreign_until_the_watch_sees_it_leave() {
        let shard = shard();
        shard.released("uid-1");
        // A stale copy still labelled ours.
        assert_eq!(
            shard.standing(&meta(Some("pod-a"), None)),
            Standing::Foreign
        );
        shard.left("uid-1");
        assert_eq!(shard.standing(&meta(Some("pod-a"), None)), Standing::Own);
    }

    #[test]
    fn a_mutation_needs_the_fence_open_and_the_object_ours() {
        let shard = shard();
        let ours = meta(Some("pod-a"), None);
        assert_eq!(shard.may_mutate(&ours), Err(Fenced::NotJoined));
        shard.fence.renewed(Instant::now());
        assert_eq!(shard.may_mutate(&ours), Ok(()));
        assert_eq!(
            shard.may_mutate(&meta(Some("pod-a"), Some("pod-b"))),
            Ok(())
        );
        assert_eq!(
            shard.may_mutate(&meta(Some("pod-b"), None)),
            Err(Fenced::NotOwner)
        );
        shard.fence.revoke();
        assert_eq!(shard.may_mutate(&ours), Err(Fenced::Revoked));
    }
}
