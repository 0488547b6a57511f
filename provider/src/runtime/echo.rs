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
//! The reconcile looks again shortly instead, without a call. No ordering of
//! resourceVersions is assumed (they are opaque); only "we wrote a version
//! after this one".

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// How many recent versions are remembered per object: a create makes
/// about five writes in one reconcile.
const REMEMBERED: usize = 8;

/// See the module documentation.
#[derive(Default)]
pub struct OwnWrites {
    by_uid: Mutex<HashMap<String, VecDeque<String>>>,
}

impl OwnWrites {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, VecDeque<String>>> {
        self.by_uid.lock().expect("own-writes lock poisoned")
    }

    /// Remembers that this process reconciled from, or wrote, version
    /// `resource_version` of the object `uid`: its newest handled version.
    pub fn handled(&self, uid: &str, resource_version: &str) {
        let mut by_uid = self.lock();
        let versions = by_uid.entry(uid.to_owned()).or_default();
        if versions.back().is_some_and(|v| v == resource_version) {
            return;
        }
        if versions.len() == REMEMBERED {
            versions.pop_front();
        }
        versions.push_back(resource_version.to_owned());
    }

    /// Whether this process handled this version of the object already.
    pub fn is_echo(&self, uid: &str, resource_version: &str) -> bool {
        self.lock()
            .get(uid)
            .is_some_and(|versions| versions.iter().any(|v| v == resource_version))
    }

    /// Whether this version was handled and a newer one was since: a copy
    /// from a cache that has not caught up with our own write.
    pub fn is_superseded(&self, uid: &str, resource_version: &str) -> bool {
        self.lock().get(uid).is_some_and(|versions| {
            versions.back().is_some_and(|v| v != resource_version)
                && versions.iter().any(|v| v == resource_version)
        })
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
        assert!(own.is_echo("a", "10"));
        assert!(own.is_echo("a", "11"));
        assert!(!own.is_echo("a", "12"), "someone else's write");
        assert!(!own.is_echo("b", "10"), "another object");
    }

    #[test]
    fn a_handled_version_older_than_the_newest_is_superseded() {
        let own = OwnWrites::default();
        own.handled("a", "7");
        own.handled("a", "9");
        own.handled("a", "8");
        assert!(own.is_superseded("a", "7"));
        assert!(
            own.is_superseded("a", "9"),
            "handled before 8: order is ours, not numeric"
        );
        assert!(!own.is_superseded("a", "8"), "the newest we handled");
        assert!(!own.is_superseded("a", "10"), "someone else's: not known");
        assert!(!own.is_superseded("b", "7"));
        own.handled("a", "8");
        assert!(
            !own.is_superseded("a", "8"),
            "handling it again keeps it newest"
        );
    }

    #[test]
    fn old_versions_and_deleted_objects_are_forgotten() {
        let own = OwnWrites::default();
        for version in 0..=REMEMBERED {
            own.handled("a", &version.to_string());
        }
        assert!(!own.is_echo("a", "0"), "the oldest was dropped");
        assert!(own.is_echo("a", &REMEMBERED.to_string()));
        own.forget("a");
        assert!(!own.is_echo("a", &REMEMBERED.to_string()));
    }
}
