//! The provider's own writes, remembered so that their echoes cost nothing.
//!
//! Every write a reconcile makes (finalizer, create annotations, status)
//! comes back through the watch as a new version of the object. Reconciling
//! that version again decides nothing new: the reconcile that wrote it
//! already chose when to look next. Worse, the echo of an early write can
//! arrive before the cache holds a later one, so the extra reconcile works
//! from a stale copy and ends in a 409. The watch therefore drops an event
//! whose resourceVersion is one this process wrote; any other writer's
//! change has another resourceVersion and is reconciled as usual.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// How many recent versions are remembered per object: a create makes
/// about five writes in one reconcile.
const REMEMBERED: usize = 8;

#[derive(Default)]
pub struct OwnWrites {
    by_uid: Mutex<HashMap<String, VecDeque<String>>>,
}

impl OwnWrites {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, VecDeque<String>>> {
        self.by_uid.lock().expect("own-writes lock poisoned")
    }

    /// Remembers that this process wrote version `resource_version` of the
    /// object `uid`.
    pub fn wrote(&self, uid: &str, resource_version: &str) {
        let mut by_uid = self.lock();
        let versions = by_uid.entry(uid.to_owned()).or_default();
        if versions.len() == REMEMBERED {
            versions.pop_front();
        }
        versions.push_back(resource_version.to_owned());
    }

    /// Whether this version of the object is one this process wrote.
    pub fn is_echo(&self, uid: &str, resource_version: &str) -> bool {
        self.lock()
            .get(uid)
            .is_some_and(|versions| versions.iter().any(|v| v == resource_version))
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
    fn only_versions_this_process_wrote_are_echoes() {
        let own = OwnWrites::default();
        own.wrote("a", "10");
        own.wrote("a", "11");
        assert!(own.is_echo("a", "10"));
        assert!(own.is_echo("a", "11"));
        assert!(!own.is_echo("a", "12"), "someone else's write");
        assert!(!own.is_echo("b", "10"), "another object");
    }

    #[test]
    fn old_versions_and_deleted_objects_are_forgotten() {
        let own = OwnWrites::default();
        for version in 0..=REMEMBERED {
            own.wrote("a", &version.to_string());
        }
        assert!(!own.is_echo("a", "0"), "the oldest was dropped");
        assert!(own.is_echo("a", &REMEMBERED.to_string()));
        own.forget("a");
        assert!(!own.is_echo("a", &REMEMBERED.to_string()));
    }
}
