//! The global reconcile-rate cap (`--max-reconcile-rate`), shared by every
//! controller so that the sum over all kinds stays under it.
//!
//! A GCRA-style limiter: each reconcile reserves the next slot on a virtual
//! schedule spaced `1/rate` apart, with up to one second of burst, so a cold
//! start with many objects is not paced at first and a storm is capped.
//! Hand-written because it is a dozen lines and needs no background task.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

pub struct RateLimiter {
    interval: Duration,
    burst: Duration,
    /// The theoretical arrival time of the next reconcile.
    next: Mutex<Instant>,
}

impl RateLimiter {
    /// A limiter allowing `per_second` reconciles a second (at least 1).
    pub fn new(per_second: u32) -> Self {
        let per_second = per_second.max(1);
        Self {
            interval: Duration::from_secs(1) / per_second,
            burst: Duration::from_secs(1),
            next: Mutex::new(Instant::now()),
        }
    }

    /// Waits until this caller may start a reconcile.
    pub async fn acquire(&self) {
        let wait = {
            let mut next = self.next.lock().await;
            let now = Instant::now();
            let start = (*next).max(now);
            *next = start + self.interval;
            start.saturating_duration_since(now + self.burst)
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn allows_a_one_second_burst_then_paces() {
        let limiter = RateLimiter::new(10);
        let start = Instant::now();
        for _ in 0..10 {
            limiter.acquire().await;
        }
        assert!(
            start.elapsed() < Duration::from_millis(5),
            "burst was paced"
        );
        for _ in 0..20 {
            limiter.acquire().await;
        }
        // 30 acquisitions at 10/s with a 1 s burst: the last one starts near 2 s.
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(1_900), "{elapsed:?}");
        assert!(elapsed <= Duration::from_millis(2_100), "{elapsed:?}");
    }
}
