//! Per-resource exponential backoff after failed reconciles, so that bad
//! input costs a handful of calls, not a retry storm: 1 s, 2 s, 4 s, ...
//! capped at 60 s (the shape of crossplane-runtime's default rate limiter),
//! reset by the first success.
//!
//! Requeueing later is not enough on its own: a failed reconcile writes the
//! `Synced` condition and the create-failed annotation, and the watch
//! delivers those writes as new events at once. So a resource in backoff is
//! not reconciled again before its time unless the user changed what they
//! asked for (its [`Intent`]): a new generation, a pause, external-name or
//! reconcile-requested-at annotation, a deletion.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// What the user asked for, as far as it can cut a backoff short: an
/// object whose intent differs from the one it failed with is reconciled
/// at once. A controller fills in what its kind has and leaves the rest
/// default.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Intent {
    /// `metadata.generation`: a new one is a changed spec.
    pub generation: Option<i64>,
    /// The `crossplane.io/paused` annotation.
    pub paused: Option<String>,
    /// The `crossplane.io/external-name` annotation.
    pub external_name: Option<String>,
    /// Whether the object is being deleted.
    pub deleting: bool,
    /// The `crossplane.io/reconcile-requested-at` token: a new one asks
    /// for a reconcile now.
    pub reconcile_requested_at: Option<String>,
}

struct Failure {
    count: u32,
    not_before: Instant,
    intent: Intent,
}

/// Per-object exponential backoff after failed reconciles: 1 s, 2 s, 4 s,
/// ... capped at 60 s, reset by the first success, and cut short when the
/// user changes what they asked for ([`Intent`]). Every controller of a
/// provider shares one ([`crate::Context::backoff`]), keyed by object uid.
pub struct Backoff {
    base: Duration,
    cap: Duration,
    failures: Mutex<HashMap<String, Failure>>,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(60),
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl Backoff {
    /// Records one more failure of `key` and returns how long to wait.
    pub fn failed(&self, key: &str, intent: Intent) -> Duration {
        let mut failures = self.failures.lock().expect("backoff lock poisoned");
        let count = failures.get(key).map_or(0, |f| f.count);
        let delay = self
            .base
            .saturating_mul(1u32 << count.min(16))
            .min(self.cap);
        failures.insert(
            key.to_owned(),
            Failure {
                count: count + 1,
                not_before: Instant::now() + delay,
                intent,
            },
        );
        delay
    }

    /// How long `key` must still wait, if it is in backoff and the user's
    /// intent has not changed since it failed.
    pub fn remaining(&self, key: &str, intent: &Intent) -> Option<Duration> {
        let failures = self.failures.lock().expect("backoff lock poisoned");
        let failure = failures.get(key)?;
        let left = failure.not_before.saturating_duration_since(Instant::now());
        (failure.intent == *intent && !left.is_zero()).then_some(left)
    }

    /// Forgets the failures of `key`: its next failure waits the shortest
    /// time again.
    pub fn succeeded(&self, key: &str) {
        self.failures
            .lock()
            .expect("backoff lock poisoned")
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent(generation: i64) -> Intent {
        Intent {
            generation: Some(generation),
            ..Intent::default()
        }
    }

    #[test]
    fn doubles_per_failure_up_to_the_cap_and_resets() {
        let backoff = Backoff::default();
        let delays: Vec<u64> = (0..8)
            .map(|_| backoff.failed("a", intent(1)).as_secs())
            .collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(
            backoff.failed("b", intent(1)).as_secs(),
            1,
            "keys are independent"
        );
        backoff.succeeded("a");
        assert_eq!(backoff.failed("a", intent(1)).as_secs(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn holds_a_failed_resource_until_its_time_unless_the_intent_changes() {
        let backoff = Backoff::default();
        assert_eq!(backoff.remaining("a", &intent(1)), None, "never failed");
        backoff.failed("a", intent(1));
        backoff.failed("a", intent(1));
        assert_eq!(
            backoff.remaining("a", &intent(1)),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            backoff.remaining("a", &intent(2)),
            None,
            "a spec edit goes through"
        );
        let paused = Intent {
            paused: Some("true".into()),
            ..intent(1)
        };
        assert_eq!(
            backoff.remaining("a", &paused),
            None,
            "pausing goes through"
        );
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(backoff.remaining("a", &intent(1)), None, "time is up");
    }
}
