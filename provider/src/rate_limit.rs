//! Rate caps: [`RateLimiter`] for the API-server guard's requests, and
//! [`LaneLimiter`], the global reconcile-rate cap (`--max-reconcile-rate`)
//! shared by every controller so that the sum over all kinds stays under
//! it.
//!
//! Both pace with a GCRA-style schedule: each start reserves the next slot
//! on a virtual schedule spaced `1/rate` apart, with up to one second of
//! burst, so a cold start with many objects is not paced at first and a
//! storm is capped. Hand-written because the schedule is a dozen lines.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{Mutex, Notify, oneshot};
use tokio::task::JoinHandle;
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

/// Which queue a reconcile waits in for [`LaneLimiter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// The periodic look at a resource that is Ready, Synced and observed
    /// at its current generation: drift detection, no expected writes.
    Poll,
    /// Everything else: new, changed, not yet Ready, failing or deleting.
    Work,
}

/// The reconcile-rate cap with two queues, so that a burst of new resources
/// does not starve the polling of Ready ones (and polls of many resources
/// do not starve new work). Within a lane the order is first come, first
/// served; while both lanes wait, grants alternate between them, each then
/// getting half the rate; a lane alone gets all of it. One dispatcher task,
/// started on first use, hands out the slots, so a grant is O(1) however
/// many reconciles wait.
pub struct LaneLimiter {
    shared: Arc<Shared>,
    dispatcher: OnceLock<JoinHandle<()>>,
}

struct Shared {
    rate: RateLimiter,
    queues: std::sync::Mutex<Queues>,
    /// Raised when a waiter joins a queue.
    joined: Notify,
}

#[derive(Default)]
struct Queues {
    poll: VecDeque<oneshot::Sender<()>>,
    work: VecDeque<oneshot::Sender<()>>,
    /// The lane granted last: the other goes first when both wait.
    last: Option<Lane>,
}

impl Queues {
    fn is_empty(&self) -> bool {
        self.poll.is_empty() && self.work.is_empty()
    }

    /// The next waiter: alternating while both lanes wait.
    fn pop(&mut self) -> Option<oneshot::Sender<()>> {
        let lane = match (self.poll.is_empty(), self.work.is_empty()) {
            (true, true) => return None,
            (false, true) => Lane::Poll,
            (true, false) => Lane::Work,
            (false, false) if self.last == Some(Lane::Poll) => Lane::Work,
            (false, false) => Lane::Poll,
        };
        self.last = Some(lane);
        match lane {
            Lane::Poll => self.poll.pop_front(),
            Lane::Work => self.work.pop_front(),
        }
    }
}

impl LaneLimiter {
    /// A cap of `per_second` reconciles a second (at least 1), both lanes
    /// together.
    pub fn new(per_second: u32) -> Self {
        Self {
            shared: Arc::new(Shared {
                rate: RateLimiter::new(per_second),
                queues: std::sync::Mutex::default(),
                joined: Notify::new(),
            }),
            dispatcher: OnceLock::new(),
        }
    }

    /// Waits until this caller may start a reconcile in `lane`.
    pub async fn acquire(&self, lane: Lane) {
        self.dispatcher
            .get_or_init(|| tokio::spawn(dispatch(self.shared.clone())));
        let (granted, wait) = oneshot::channel();
        {
            let mut queues = self.shared.queues.lock().expect("queues lock");
            match lane {
                Lane::Poll => queues.poll.push_back(granted),
                Lane::Work => queues.work.push_back(granted),
            }
        }
        self.shared.joined.notify_one();
        // An error means the dispatcher is gone with the limiter: shutdown.
        let _ = wait.await;
    }
}

impl Drop for LaneLimiter {
    fn drop(&mut self) {
        if let Some(dispatcher) = self.dispatcher.get() {
            dispatcher.abort();
        }
    }
}

/// Hands out one slot of the schedule at a time to the next waiter. A
/// waiter that gave up (its reconcile was dropped) passes its slot on to
/// the next one, however late that one comes.
async fn dispatch(shared: Arc<Shared>) {
    let mut slot = false;
    loop {
        while shared.queues.lock().expect("queues lock").is_empty() {
            shared.joined.notified().await;
        }
        if !slot {
            shared.rate.acquire().await;
            slot = true;
        }
        let next = shared.queues.lock().expect("queues lock").pop();
        if next.is_some_and(|waiter| waiter.send(()).is_ok()) {
            slot = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Starts `count` waiters in `lane`, each recording when it was granted.
    fn waiters(
        limiter: &Arc<LaneLimiter>,
        lane: Lane,
        count: usize,
    ) -> Vec<tokio::task::JoinHandle<Instant>> {
        (0..count)
            .map(|_| {
                let limiter = limiter.clone();
                tokio::spawn(async move {
                    limiter.acquire(lane).await;
                    Instant::now()
                })
            })
            .collect()
    }

    /// When each waiter was granted, counted from `start`.
    async fn times(
        handles: Vec<tokio::task::JoinHandle<Instant>>,
        start: Instant,
    ) -> Vec<Duration> {
        let mut out = Vec::new();
        for handle in handles {
            let at = handle.await.expect("waiter ran");
            out.push(at.saturating_duration_since(start));
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_work_does_not_starve_polls() {
        let limiter = Arc::new(LaneLimiter::new(10));
        let start = Instant::now();
        // 100 new resources queue first: at 10/s they take 10 s (less the
        // 1 s burst) in one FIFO queue.
        let work = waiters(&limiter, Lane::Work, 100);
        tokio::time::sleep(Duration::from_millis(1)).await;
        let polls = waiters(&limiter, Lane::Poll, 5);
        let polled = times(polls, start).await;
        // Alternating with the work, the 5 polls are through within about
        // 10 slots (1 s at 10/s) after the burst, not after the 100.
        let last = *polled.iter().max().expect("polls");
        assert!(
            last <= Duration::from_millis(2_100),
            "polls waited {last:?}"
        );
        let done = times(work, start).await;
        let last_work = *done.iter().max().expect("work");
        // The cap still holds for both lanes together: 105 at 10/s with a
        // 1 s burst end near 9.5 s.
        assert!(last_work >= Duration::from_millis(9_000), "{last_work:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_lane_alone_gets_the_whole_rate_and_a_dropped_waiter_passes_its_slot() {
        let limiter = Arc::new(LaneLimiter::new(10));
        let start = Instant::now();
        // A waiter that gives up before its slot (its reconcile dropped).
        let gave_up = tokio::time::timeout(Duration::ZERO, limiter.acquire(Lane::Poll)).await;
        assert!(
            gave_up.is_err(),
            "no slot is granted before the dispatcher runs"
        );
        let done = times(waiters(&limiter, Lane::Poll, 30), start).await;
        // 30 slots at the full 10/s after a 1 s burst: the 30th starts at
        // 1.9 s, not 2.0 s as it would had the dropped waiter used one.
        let last = *done.iter().max().expect("polls");
        assert!(last >= Duration::from_millis(1_850), "{last:?}");
        assert!(last <= Duration::from_millis(1_950), "{last:?}");
    }

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
