//! Activation latency: from a kind's CRD seen Established (the CRD gate
//! starts its controller) to the first reconcile of that kind. Its own
//! module so the gate and the reconciler both use it without depending on
//! each other.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// When each kind's controller was started, until its first reconcile
/// records the activation latency (CRD seen Established -> first reconcile
/// started).
#[derive(Default)]
pub struct Activations {
    started: std::sync::Mutex<HashMap<String, Instant>>,
}

impl Activations {
    pub(crate) fn mark(&self, kind: &str, at: Instant) {
        self.started
            .lock()
            .expect("activations lock poisoned")
            .insert(kind.to_owned(), at);
    }

    pub(crate) fn forget(&self, kind: &str) {
        self.started
            .lock()
            .expect("activations lock poisoned")
            .remove(kind);
    }

    /// Called at the start of every reconcile; returns the latency the first
    /// time after an activation.
    pub fn first_reconcile(&self, kind: &str) -> Option<Duration> {
        let mut started = self.started.lock().expect("activations lock poisoned");
        if started.is_empty() {
            return None;
        }
        started.remove(kind).map(|at| at.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activation_latency_is_recorded_once_per_activation() {
        let activations = Activations::default();
        assert_eq!(activations.first_reconcile("VPC"), None);
        activations.mark("VPC", Instant::now());
        assert!(activations.first_reconcile("VPC").is_some());
        assert_eq!(activations.first_reconcile("VPC"), None);
    }
}
