//! The versions of each object this process has handled (reconciled from,
//! or written), remembered so that neither their echoes nor a lagging cache
//! cost an API call.
//!
//! Every write a reconcile makes (finalizer, create annotations, status)
//! comes back through the watch as a new version of the object. Reconciling
//! that version again decides nothing new: the reconcile that wrote it
//! already chose when to look next. So the watch drops an event whose
//! resourceVersion this process handled; any other writer's change has
//! another resourceVersion and is reconciled as usual.
//!
//! And when a requeued reconcile is handed a copy that this process has
//! handled but that is not the newest it handled, the cache lags behind a
//! write of ours: every guarded write from that copy would be answered 409.
//! The reconcile makes no call and waits for the watch to catch up: the
//! event of our newest version, normally dropped as an echo, is let through
//! once for an object whose reconcile is waiting for it. Polling for it
//! instead cost 255 call-free reconciles per resource at 10,000 resources,
//! where the watch lagged by tens of seconds. No ordering of
//! resourceVersions is assumed (they are opaque); only "we wrote a version
//! after this one".

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// How many recent versions are remembered per object: a create makes
/// about five writes in one reconcile.
const REMEMBERED: usize = 8;

/// What this process knows of one object.
#[derive(Default)]
struct Seen {
    /// Handled versions, oldest first; the last is the newest.
    versions: VecDeque<String>,
    /// The watch has delivered the newest version: the cache holds it.
    caught_up: bool,
    /// A reconcile was handed an older copy and waits for the newest.
    waiting: bool,
}

/// How a reconcile handed a superseded copy goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lag {
    /// The cache has caught up since this copy was handed out: look again
    /// at once.
    CaughtUp,
    /// The cache has not caught up: the watch event of the newest version
    /// will trigger the next reconcile.
    Waiting,
}

/// See the module documentation.
#[derive(Default)]
pub struct OwnWrites {
    by_uid: Mutex<HashMap<String, Seen>>,
}

impl OwnWrites {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Seen>> {
        self.by_uid.lock().expect("own-writes lock poisoned")
    }

    /// Remembers that this process wrote version `resource_version` of the
    /// object `uid`: its newest handled version, which the watch has not
    /// delivered yet.
    pub fn handled(&self, uid: &str, resource_version: &str) {
        self.remember(uid, resource_version, false);
    }

    /// Remembers that a reconcile starts from version `resource_version` of
    /// the object `uid`, a copy from the watch's cache: the watch has
    /// delivered it, so it is caught up ([`Seen::caught_up`]). That is what
    /// lets [`OwnWrites::triggers`] tell when this copy was older than a
    /// write of ours (see there).
    pub fn reconciling(&self, uid: &str, resource_version: &str) {
        self.remember(uid, resource_version, true);
    }

    fn remember(&self, uid: &str, resource_version: &str, delivered: bool) {
        let mut by_uid = self.lock();
        let seen = by_uid.entry(uid.to_owned()).or_default();
        if seen.versions.back().is_some_and(|v| v == resource_version) {
            seen.caught_up |= delivered;
            return;
        }
        if seen.versions.len() == REMEMBERED {
            seen.versions.pop_front();
        }
        seen.versions.push_back(resource_version.to_owned());
        seen.caught_up = delivered;
        seen.waiting = false;
    }

    /// Whether the watch event of this version should trigger a reconcile:
    /// not for a version this process handled (an echo), except the newest
    /// when a reconcile waits for it.
    ///
    /// The order of `versions` is the order in which they were handled,
    /// which is not always the server's: a reconcile that re-read the object
    /// (after a 409) writes on top of a version this process never handled,
    /// and the next reconcile may start from that older version (already
    /// delivered, so caught up) before our write's echo arrives. The watch
    /// delivers in the server's order, so an echo of ours that arrives once
    /// the newest is caught up is newer than it: it becomes the newest.
    /// Otherwise that newer copy would look superseded by the older one
    /// forever, and every look at the object would wait for an event that
    /// had already come ([`Lag::Waiting`], issue 28).
    pub fn triggers(&self, uid: &str, resource_version: &str) -> bool {
        let mut by_uid = self.lock();
        let Some(seen) = by_uid.get_mut(uid) else {
            return true;
        };
        if seen.versions.back().is_some_and(|v| v == resource_version) {
            seen.caught_up = true;
            return std::mem::take(&mut seen.waiting);
        }
        let Some(at) = seen.versions.iter().position(|v| v == resource_version) else {
            return true;
        };
        if seen.caught_up {
            let newer = seen.versions.remove(at).expect("found above");
            seen.versions.push_back(newer);
        }
        false
    }

    /// `None` when this copy is current as far as this process knows;
    /// otherwise it was handled and a newer version was since (a cache that
    /// has not caught up with our own write), and the answer says how to
    /// go on. [`Lag::Waiting`] arms the watch trigger for the newest version.
    pub fn lag(&self, uid: &str, resource_version: &str) -> Option<Lag> {
        let mut by_uid = self.lock();
        let seen = by_uid.get_mut(uid)?;
        let superseded = seen.versions.back().is_some_and(|v| v != resource_version)
            && seen.versions.iter().any(|v| v == resource_version);
        if !superseded {
            return None;
        }
        if seen.caught_up {
            return Some(Lag::CaughtUp);
        }
        seen.waiting = true;
        Some(Lag::Waiting)
    }

    /// Forgets an object that is gone.
    pub fn forget(&self, uid: &str) {
        self.lock().remove(uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_versions_this_process_handled_are_echoes() {
        let own = OwnWrites::default();
        own.handled("a", "10");
        own.handled("a", "11");
        assert!(!own.triggers("a", "10"));
        assert!(!own.triggers("a", "11"));
        assert!(own.triggers("a", "12"), "someone else's write");
        assert!(own.triggers("b", "10"), "another object");
    }

    #[test]
    fn a_handled_version_older_than_the_newest_is_superseded() {
        let own = OwnWrites::default();
        own.handled("a", "7");
        own.handled("a", "9");
        own.handled("a", "8");
        assert_eq!(own.lag("a", "7"), Some(Lag::Waiting));
        assert_eq!(
            own.lag("a", "9"),
            Some(Lag::Waiting),
            "handled before 8: order is ours, not numeric"
        );
        assert_eq!(own.lag("a", "8"), None, "the newest we handled");
        assert_eq!(own.lag("a", "10"), None, "someone else's: not known");
        assert_eq!(own.lag("b", "7"), None);
        own.handled("a", "8");
        assert_eq!(own.lag("a", "8"), None, "handling it again keeps it newest");
    }

    #[test]
    fn a_reconcile_waiting_for_the_cache_is_woken_by_the_newest_version_once() {
        let own = OwnWrites::default();
        own.handled("a", "1");
        own.handled("a", "2");
        // No one waits: the newest is an echo like any other.
        assert!(!own.triggers("a", "2"));

        own.handled("a", "3");
        assert_eq!(own.lag("a", "2"), Some(Lag::Waiting));
        assert!(!own.triggers("a", "2"), "an older echo does not wake it");
        assert!(own.triggers("a", "3"), "the newest wakes the waiter");
        assert!(!own.triggers("a", "3"), "once only");
    }

    #[test]
    fn a_copy_handed_out_before_the_cache_caught_up_is_retried_at_once() {
        let own = OwnWrites::default();
        own.handled("a", "1");
        own.handled("a", "2");
        // The watch delivers 2 (dropped as an echo) after the stale copy 1
        // was handed to a reconcile: waiting for 2 again would wait forever.
        assert!(!own.triggers("a", "2"));
        assert_eq!(own.lag("a", "1"), Some(Lag::CaughtUp));
        // A newer write of ours starts the wait afresh.
        own.handled("a", "3");
        assert_eq!(own.lag("a", "1"), Some(Lag::Waiting));
    }

    /// Issue 28. A reconcile that re-read the object (`record_created`
    /// after a 409) wrote 3 on top of another replica's 2, which this
    /// process never handled. The watch then delivers 2 and the next
    /// reconcile starts from it, before the watch delivers 3. Recording 2 as
    /// the newest version made the later copy 3 look superseded by it: every
    /// look from then on waited for an event of 2 that had already come,
    /// `CATCH_UP_LIMIT` after `CATCH_UP_LIMIT`, until someone else wrote.
    #[test]
    fn a_copy_read_before_the_echo_of_a_later_write_does_not_stall_the_next_look() {
        let own = OwnWrites::default();
        own.reconciling("a", "1");
        own.handled("a", "3");
        assert!(own.triggers("a", "2"), "the other replica's write");
        assert_eq!(own.lag("a", "2"), None, "not known to be older");
        own.reconciling("a", "2");
        assert!(!own.triggers("a", "3"), "our write's echo");
        assert_eq!(own.lag("a", "3"), None, "the cache holds our newest write");
        // The usual order still holds: a write's echo after an older one's.
        own.reconciling("a", "3");
        own.handled("a", "4");
        own.handled("a", "5");
        assert!(!own.triggers("a", "4"));
        assert_eq!(own.lag("a", "4"), Some(Lag::Waiting), "5 is not in yet");
        assert!(own.triggers("a", "5"), "and wakes the waiting reconcile");
        assert_eq!(own.lag("a", "5"), None);
    }

    #[test]
    fn old_versions_and_deleted_objects_are_forgotten() {
        let own = OwnWrites::default();
        for version in 0..=REMEMBERED {
            own.handled("a", &version.to_string());
        }
        assert!(own.triggers("a", "0"), "the oldest was dropped");
        assert!(!own.triggers("a", &REMEMBERED.to_string()));
        own.forget("a");
        assert!(own.triggers("a", &REMEMBERED.to_string()));
    }
}
