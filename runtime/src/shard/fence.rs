//! The ownership clock: whether this replica may mutate the cloud now.
//!
//! A replica may act only while its membership Lease is surely its own:
//! the start of its last successful renewal was less than the renew
//! deadline ago, and no one has revoked the Lease since. The others take
//! its objects only after the lease duration has passed since the last
//! renewal they saw, and only by revoking the Lease first, so a replica
//! cut off from the API server stops at least `lease duration - renew
//! deadline` (5 s by default) before anyone else may start.
//!
//! The clock is a monotonic [`Instant`], taken when the renewal was sent
//! (its answer may come late; the API server may have written it as soon
//! as it was sent). A process frozen (SIGSTOP) and resumed finds its last
//! renewal long past and refuses until it renews, and a renewal after a
//! revocation fails, so it never acts on objects that moved meanwhile: it
//! leaves, drops its caches and joins again as a new member.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Why a mutation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Fenced {
    /// The replica has not joined yet, or is joining again.
    #[error("this replica holds no membership Lease yet")]
    NotJoined,
    /// The last renewal started longer ago than the renew deadline.
    #[error(
        "this replica's membership Lease was last renewed {ago:?} ago, past its renew deadline"
    )]
    Expired {
        /// Since the last renewal was sent.
        ago: Duration,
    },
    /// Another replica revoked the Lease: the objects may have moved.
    #[error("this replica's membership Lease was revoked; it is joining again")]
    Revoked,
    /// The object is no longer labelled this replica's.
    #[error("the object is no longer this replica's")]
    NotOwner,
}

#[derive(Debug)]
struct State {
    /// When the last successful renewal was sent, in this membership.
    renewed: Option<Instant>,
    revoked: bool,
}

/// The ownership clock of one replica.
#[derive(Debug)]
pub(crate) struct Fence {
    renew_deadline: Duration,
    state: Mutex<State>,
}

impl Fence {
    /// A fence that refuses until the first renewal.
    pub(crate) fn new(renew_deadline: Duration) -> Self {
        Self {
            renew_deadline,
            state: Mutex::new(State {
                renewed: None,
                revoked: false,
            }),
        }
    }

    /// A new membership begins: refused until its first renewal.
    pub(crate) fn join(&self) {
        *self.lock() = State {
            renewed: None,
            revoked: false,
        };
    }

    /// A renewal sent at `sent` succeeded. Ignored once revoked: only a
    /// new membership ([`Fence::join`]) opens the fence again.
    pub(crate) fn renewed(&self, sent: Instant) {
        let mut state = self.lock();
        if !state.revoked {
            state.renewed = Some(state.renewed.map_or(sent, |at| at.max(sent)));
        }
    }

    /// The Lease is no longer ours.
    pub(crate) fn revoke(&self) {
        self.lock().revoked = true;
    }

    /// Whether a mutation may go out at `now`.
    pub(crate) fn check(&self, now: Instant) -> Result<(), Fenced> {
        let state = self.lock();
        if state.revoked {
            return Err(Fenced::Revoked);
        }
        let renewed = state.renewed.ok_or(Fenced::NotJoined)?;
        let ago = now.saturating_duration_since(renewed);
        if ago >= self.renew_deadline {
            return Err(Fenced::Expired { ago });
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("fence lock poisoned")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEADLINE: Duration = Duration::from_secs(10);

    #[test]
    fn refuses_before_the_first_renewal() {
        let fence = Fence::new(DEADLINE);
        assert_eq!(fence.check(Instant::now()), Err(Fenced::NotJoined));
    }

    #[test]
    fn allows_until_the_renew_deadline_after_the_renewal_was_sent() {
        let fence = Fence::new(DEADLINE);
        let sent = Instant::now();
        fence.renewed(sent);
        assert_eq!(fence.check(sent), Ok(()));
        assert_eq!(fence.check(sent + Duration::from_millis(9_999)), Ok(()));
        assert_eq!(
            fence.check(sent + DEADLINE),
            Err(Fenced::Expired { ago: DEADLINE })
        );
    }

    /// A process frozen for twice the lease duration resumes and tries a
    /// mutation before its renewal task has run: refused.
    #[test]
    fn a_frozen_process_that_resumes_is_refused_until_it_renews() {
        let fence = Fence::new(DEADLINE);
        let sent = Instant::now();
        fence.renewed(sent);
        let resumed = sent + Duration::from_secs(30);
        assert!(matches!(fence.check(resumed), Err(Fenced::Expired { .. })));
        fence.renewed(resumed);
        assert_eq!(fence.check(resumed + Duration::from_secs(1)), Ok(()));
    }

    #[test]
    fn a_late_answer_to_an_older_renewal_does_not_move_the_clock_back() {
        let fence = Fence::new(DEADLINE);
        let first = Instant::now();
        let second = first + Duration::from_secs(2);
        fence.renewed(second);
        fence.renewed(first);
        assert_eq!(fence.check(second + Duration::from_secs(9)), Ok(()));
    }

    #[test]
    fn a_revoked_lease_stays_refused_until_a_new_membership() {
        let fence = Fence::new(DEADLINE);
        let sent = Instant::now();
        fence.renewed(sent);
        fence.revoke();
        assert_eq!(fence.check(sent), Err(Fenced::Revoked));
        // A renewal racing the revocation does not reopen it.
        fence.renewed(sent + Duration::from_secs(1));
        assert_eq!(
            fence.check(sent + Duration::from_secs(1)),
            Err(Fenced::Revoked)
        );
        fence.join();
        assert_eq!(fence.check(sent), Err(Fenced::NotJoined));
        fence.renewed(sent + Duration::from_secs(2));
        assert_eq!(fence.check(sent + Duration::from_secs(3)), Ok(()));
    }
}
