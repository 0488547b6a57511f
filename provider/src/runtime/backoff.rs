//! Per-resource exponential backoff after failed reconciles, so that bad
//! input costs a handful of calls, not a retry storm: 1 s, 2 s, 4 s, ...
//! capped at 60 s (crossplane-runtime's default rate limiter has the same
//! shape), reset by the first success.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

pub struct Backoff {
    base: Duration,
    cap: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(Duration::from_secs(1), Duration::from_secs(60))
    }
}

impl Backoff {
    pub fn new(base: Duration, cap: Duration) -> Self {
        Self {
            base,
            cap,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Records one more failure of `key` and returns how long to wait.
    pub fn next(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().expect("backoff lock poisoned");
        let count = failures.entry(key.to_owned()).or_insert(0);
        let delay = self
            .base
            .saturating_mul(1u32 << (*count).min(16))
            .min(self.cap);
        *count += 1;
        delay
    }

    pub fn reset(&self, key: &str) {
        self.failures
            .lock()
            .expect("backoff lock poisoned")
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_per_failure_up_to_the_cap_and_resets() {
        let backoff = Backoff::default();
        let delays: Vec<u64> = (0..8).map(|_| backoff.next("a").as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(backoff.next("b").as_secs(), 1, "keys are independent");
        backoff.reset("a");
        assert_eq!(backoff.next("a").as_secs(), 1);
    }
}
