//! The reconcile-rate cap: [`LaneLimiter`], the global ceiling of
//! reconciles a second (`--max-reconcile-rate`) shared by every controller
//! so that the sum over all kinds stays under it, and of reconciles in
//! flight, which follows the API server's pacing ([`crate::pacing`]).
//!
//! Both pace with a GCRA-style schedule: each start reserves the next slot
//! on a virtual schedule spaced `1/rate` apart, with up to one second of
//! burst, so a cold start with many objects is not paced at first and a
//! storm is capped. Hand-written because the schedule is a dozen lines.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::metrics::{LaneLabels, Metrics};

pub struct RateLimiter {
    interval: Duration,
    burst: Duration,
    /// The theoretical arrival time of the next reconcile.
    next: Mutex<Instant>,
}

impl RateLimiter {
    /// A limiter allowing `per_second` starts a second (at least 1).
    pub fn new(per_second: u32) -> Self {
        let per_second = per_second.max(1);
        Self {
            interval: Duration::from_secs(1) / per_second,
            burst: Duration::from_secs(1),
            next: Mutex::new(Instant::now()),
        }
    }

    /// Reserves the next slot and returns how long until it starts; with
    /// `only_if_free`, reserves nothing (`None`) unless it starts now.
    fn reserve(&self, only_if_free: bool) -> Option<Duration> {
        let mut next = self.next.lock().expect("rate lock");
        let now = Instant::now();
        let start = (*next).max(now);
        let wait = start.saturating_duration_since(now + self.burst);
        if only_if_free && !wait.is_zero() {
            return None;
        }
        *next = start + self.interval;
        Some(wait)
    }

    /// Takes a slot if one is free now, without waiting.
    fn try_acquire(&self) -> bool {
        self.reserve(true).is_some()
    }

    /// Waits until this caller may start.
    pub async fn acquire(&self) {
        let wait = self.reserve(false).unwrap_or_default();
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

impl Lane {
    fn label(self) -> LaneLabels {
        let lane = match self {
            Lane::Poll => "poll",
            Lane::Work => "work",
        };
        LaneLabels {
            lane: lane.to_owned(),
        }
    }
}

/// One lane's metrics: slots handed out, and objects waiting.
struct LaneMetrics {
    slots: Counter,
    waiting: Gauge,
}

impl LaneMetrics {
    fn new(metrics: &Metrics, lane: Lane) -> Self {
        Self {
            slots: metrics
                .rate_limit_slots
                .get_or_create(&lane.label())
                .clone(),
            waiting: metrics
                .rate_limit_waiting
                .get_or_create(&lane.label())
                .clone(),
        }
    }
}

/// Starts a deferred object's reconcile again once its slot comes; in the
/// provider, a send to its controller's trigger stream.
pub type Wake = Box<dyn FnOnce() + Send>;

/// What [`LaneLimiter::admit`] decided for one reconcile.
pub enum Admission {
    /// Go on: a slot was free, or this object's queued slot has come. The
    /// reconcile counts as in flight until the permit is dropped.
    Now(Permit),
    /// The object waits in its lane (queued now or already); the reconcile
    /// ends, and the object's wake starts the next one when its slot comes.
    Later,
}

/// A reconcile in flight; dropping it makes room for the next.
pub struct Permit {
    shared: Arc<Shared>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.shared.queues.lock().expect("queues lock").in_flight -= 1;
        self.shared.finished.notify_one();
    }
}

/// The reconcile-rate cap with two queues, so that a burst of new resources
/// does not starve the polling of Ready ones (and polls of many resources
/// do not starve new work). Within a lane the order is first come, first
/// served; while both lanes wait, slots alternate between them, each then
/// getting half the rate; a lane alone gets all of it. One dispatcher task,
/// started on first use, hands out the slots, so a slot is O(1) however
/// many objects wait.
///
/// A reconcile that cannot start at once does not wait in flight: its
/// object is queued by key, the reconcile ends, and the object is woken
/// when its slot comes. kube-runtime's controller polls every in-flight
/// reconcile whenever any of them wakes, so thousands of reconciles
/// waiting in flight cost CPU quadratic in their number (measured: 57 % of
/// a core holding 10,000 resources at a rate below what their polling
/// needs); a queued key costs a few bytes and nothing per slot.
///
/// The cap also bounds the reconciles in flight to the same number, as
/// crossplane-runtime's providers set `MaxConcurrentReconciles` to
/// `--max-reconcile-rate`: a slot is handed out only while fewer are in
/// flight. Without that bound, reconciles admitted faster than the API
/// server's request limits let them finish piled up (about 2,700 at once
/// during a 3,000-VPC cold start, each holding its copies of the object),
/// and the cold start's memory grew with the number of resources.
pub struct LaneLimiter {
    shared: Arc<Shared>,
    dispatcher: OnceLock<JoinHandle<()>>,
}

struct Shared {
    rate: RateLimiter,
    /// At most this many reconciles in flight, asked afresh for every
    /// slot: the API server's pacing moves it ([`LaneLimiter::in_flight_by`]).
    max_in_flight: Box<dyn Fn() -> usize + Send + Sync>,
    queues: Mutex<Queues>,
    /// Raised when an object joins a queue.
    joined: Notify,
    /// Raised when a reconcile in flight ends.
    finished: Notify,
    poll: LaneMetrics,
    work: LaneMetrics,
}

impl Shared {
    /// Counts one more reconcile in flight.
    fn permit(self: &Arc<Self>, queues: &mut Queues) -> Admission {
        queues.in_flight += 1;
        Admission::Now(Permit {
            shared: self.clone(),
        })
    }

    fn metrics(&self, lane: Lane) -> &LaneMetrics {
        match lane {
            Lane::Poll => &self.poll,
            Lane::Work => &self.work,
        }
    }
}

struct Waiter {
    key: String,
    wake: Wake,
}

/// How long a slot handed to an object stays its own. The woken reconcile
/// takes it within milliseconds; a slot older than this belonged to an
/// object deleted meanwhile, and is dropped.
const GRANT_TTL: Duration = Duration::from_secs(60);

/// Below this many outstanding slots, none are pruned.
const PRUNE_FLOOR: usize = 1_024;

#[derive(Default)]
struct Queues {
    poll: VecDeque<Waiter>,
    work: VecDeque<Waiter>,
    /// The lane served last: the other goes first when both wait.
    last: Option<Lane>,
    /// The keys in either queue: an object waits once, however many
    /// reconciles it is handed to meanwhile.
    queued: HashSet<String>,
    /// Objects whose slot has come, and when: their next reconcile goes on.
    granted: HashMap<String, Instant>,
    /// The size of `granted` at which stale slots are next dropped.
    prune_at: usize,
    /// Reconciles admitted and not yet ended.
    in_flight: usize,
}

impl Queues {
    fn is_empty(&self) -> bool {
        self.poll.is_empty() && self.work.is_empty()
    }

    /// The next waiter and its lane: alternating while both lanes wait.
    fn pop(&mut self) -> Option<(Lane, Waiter)> {
        let lane = match (self.poll.is_empty(), self.work.is_empty()) {
            (true, true) => return None,
            (false, true) => Lane::Poll,
            (true, false) => Lane::Work,
            (false, false) if self.last == Some(Lane::Poll) => Lane::Work,
            (false, false) => Lane::Poll,
        };
        self.last = Some(lane);
        let waiter = match lane {
            Lane::Poll => self.poll.pop_front(),
            Lane::Work => self.work.pop_front(),
        }?;
        self.queued.remove(&waiter.key);
        Some((lane, waiter))
    }

    /// Records that `key`'s slot has come.
    fn grant(&mut self, key: String) {
        let now = Instant::now();
        if self.granted.len() >= self.prune_at.max(PRUNE_FLOOR) {
            self.granted
                .retain(|_, at| now.saturating_duration_since(*at) < GRANT_TTL);
            self.prune_at = self.granted.len() * 2;
        }
        self.granted.insert(key, now);
    }
}

impl LaneLimiter {
    /// A cap of `per_second` reconciles a second (at least 1), both lanes
    /// together, and as many in flight at once; counted in `metrics`.
    pub fn new(per_second: u32, metrics: &Metrics) -> Self {
        Self {
            shared: Arc::new(Shared {
                rate: RateLimiter::new(per_second),
                max_in_flight: Box::new(move || per_second.max(1) as usize),
                queues: Mutex::default(),
                joined: Notify::new(),
                finished: Notify::new(),
                poll: LaneMetrics::new(metrics, Lane::Poll),
                work: LaneMetrics::new(metrics, Lane::Work),
            }),
            dispatcher: OnceLock::new(),
        }
    }

    /// Bounds the reconciles in flight by `bound` as well as by the rate
    /// (the smaller of the two, asked afresh for every slot): the provider
    /// passes the API server's current allowance, so that admission follows
    /// the API server's pace instead of a constant.
    pub fn in_flight_by(mut self, bound: impl Fn() -> usize + Send + Sync + 'static) -> Self {
        let shared = Arc::get_mut(&mut self.shared).expect("bounded before first use");
        let rate = (shared.max_in_flight)();
        shared.max_in_flight = Box::new(move || bound().clamp(1, rate));
        self
    }

    /// Decides whether a reconcile of the object `key` in `lane` starts
    /// now: yes if its queued slot has come, or if nothing waits, fewer
    /// than the cap are in flight and the schedule has a slot free.
    /// Otherwise the object is queued (once, with the wake `wake` makes)
    /// and the answer is [`Admission::Later`].
    pub fn admit(&self, key: &str, lane: Lane, wake: impl FnOnce() -> Wake) -> Admission {
        {
            let mut queues = self.shared.queues.lock().expect("queues lock");
            if queues.granted.remove(key).is_some() {
                return self.shared.permit(&mut queues);
            }
            if queues.queued.contains(key) {
                return Admission::Later;
            }
            if queues.is_empty()
                && queues.in_flight < (self.shared.max_in_flight)()
                && self.shared.rate.try_acquire()
            {
                self.shared.metrics(lane).slots.inc();
                return self.shared.permit(&mut queues);
            }
            let waiter = Waiter {
                key: key.to_owned(),
                wake: wake(),
            };
            queues.queued.insert(waiter.key.clone());
            match lane {
                Lane::Poll => queues.poll.push_back(waiter),
                Lane::Work => queues.work.push_back(waiter),
            }
            self.shared.metrics(lane).waiting.inc();
        }
        self.dispatcher
            .get_or_init(|| tokio::spawn(dispatch(self.shared.clone())));
        self.shared.joined.notify_one();
        Admission::Later
    }
}

impl Drop for LaneLimiter {
    fn drop(&mut self) {
        if let Some(dispatcher) = self.dispatcher.get() {
            dispatcher.abort();
        }
    }
}

/// Hands out one slot of the schedule at a time to the next waiting
/// object, while fewer than the cap are in flight, and wakes it.
async fn dispatch(shared: Arc<Shared>) {
    loop {
        while shared.queues.lock().expect("queues lock").is_empty() {
            shared.joined.notified().await;
        }
        while shared.queues.lock().expect("queues lock").in_flight >= (shared.max_in_flight)() {
            shared.finished.notified().await;
        }
        shared.rate.acquire().await;
        let next = {
            let mut queues = shared.queues.lock().expect("queues lock");
            let next = queues.pop();
            if let Some((_, waiter)) = &next {
                queues.grant(waiter.key.clone());
            }
            next
        };
        if let Some((lane, waiter)) = next {
            let metrics = shared.metrics(lane);
            metrics.waiting.dec();
            metrics.slots.inc();
            (waiter.wake)();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    /// Where the tests' wakes report: `(key, when)`.
    type Woken = mpsc::UnboundedSender<(String, Instant)>;

    /// A limiter whose one-second burst is spent (its schedule is at
    /// 1.1 s: the burst allows starts up to one second ahead), and the
    /// channel its wakes report on: `(key, when)`. It counts in `metrics`.
    fn spent(
        per_second: u32,
        metrics: &Metrics,
    ) -> (
        LaneLimiter,
        Woken,
        mpsc::UnboundedReceiver<(String, Instant)>,
    ) {
        let limiter = LaneLimiter::new(per_second, metrics);
        let mut free = 0;
        while limiter.shared.rate.try_acquire() {
            free += 1;
        }
        assert_eq!(free, per_second + 1, "one second of burst, both ends in");
        let (tx, rx) = mpsc::unbounded_channel();
        (limiter, tx, rx)
    }

    fn wake(tx: &Woken, key: &str) -> Wake {
        let (tx, key) = (tx.clone(), key.to_owned());
        Box::new(move || {
            let _ = tx.send((key, Instant::now()));
        })
    }

    /// Queues `count` objects named `prefix-N` in `lane`.
    fn queue(limiter: &LaneLimiter, tx: &Woken, lane: Lane, prefix: &str, count: usize) {
        for i in 0..count {
            let key = format!("{prefix}-{i}");
            let admitted = limiter.admit(&key, lane, || wake(tx, &key));
            assert!(matches!(admitted, Admission::Later), "{key} waits");
        }
    }

    /// The next `count` wakes, as `(key, time since start)`.
    async fn woken(
        rx: &mut mpsc::UnboundedReceiver<(String, Instant)>,
        count: usize,
        start: Instant,
    ) -> Vec<(String, Duration)> {
        let mut out = Vec::new();
        for _ in 0..count {
            let (key, at) = rx.recv().await.expect("a wake");
            out.push((key, at.saturating_duration_since(start)));
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_object_is_queued_once_and_goes_on_when_woken() {
        let metrics = Metrics::new();
        let (limiter, tx, mut rx) = spent(10, &metrics);
        let start = Instant::now();
        let mut made = 0;
        for _ in 0..3 {
            let admitted = limiter.admit("net", Lane::Poll, || {
                made += 1;
                wake(&tx, "net")
            });
            assert!(matches!(admitted, Admission::Later));
        }
        assert_eq!(made, 1, "one wake for however many reconciles");
        assert_eq!(
            metrics.total_with("provider_rate_limit_waiting", &[("lane", "poll")]),
            1.0
        );
        let wakes = woken(&mut rx, 1, start).await;
        assert_eq!(wakes[0].0, "net");
        // The burst is spent: the slot comes one interval (100 ms) later.
        assert_eq!(wakes[0].1, Duration::from_millis(100));
        assert!(
            matches!(
                limiter.admit("net", Lane::Poll, || panic!("not queued again")),
                Admission::Now(_)
            ),
            "the woken reconcile takes its slot"
        );
        assert!(
            matches!(
                limiter.admit("net", Lane::Poll, || wake(&tx, "net")),
                Admission::Later
            ),
            "a slot is used once"
        );
        assert!(rx.try_recv().is_err(), "no wake before its time");
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_work_does_not_starve_polls() {
        let metrics = Metrics::new();
        let (limiter, tx, mut rx) = spent(10, &metrics);
        let start = Instant::now();
        // 100 new resources queue first: at 10/s, 10 s in one FIFO queue.
        queue(&limiter, &tx, Lane::Work, "work", 100);
        queue(&limiter, &tx, Lane::Poll, "poll", 5);
        let wakes = woken(&mut rx, 105, start).await;
        let last_poll = wakes
            .iter()
            .filter(|(key, _)| key.starts_with("poll"))
            .map(|(_, at)| *at)
            .max()
            .expect("polls woken");
        // Alternating with the work, the 5 polls are through within 10
        // slots (1 s at 10/s), not after the 100.
        assert!(
            last_poll <= Duration::from_millis(1_000),
            "polls waited {last_poll:?}"
        );
        // The cap holds for both lanes together: the 105th slot is at 10.5 s.
        let last = wakes.iter().map(|(_, at)| *at).max().expect("wakes");
        assert_eq!(last, Duration::from_millis(10_500));
        // Within a lane, first come first served.
        let work: Vec<_> = wakes
            .iter()
            .filter(|(key, _)| key.starts_with("work"))
            .map(|(key, _)| key.clone())
            .collect();
        let expected: Vec<_> = (0..100).map(|i| format!("work-{i}")).collect();
        assert_eq!(work, expected);
        let lane = |family, lane| metrics.total_with(family, &[("lane", lane)]);
        assert_eq!(lane("provider_rate_limit_slots_total", "poll"), 5.0);
        assert_eq!(lane("provider_rate_limit_slots_total", "work"), 100.0);
        assert_eq!(lane("provider_rate_limit_waiting", "work"), 0.0);
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_jumps_the_queue_and_a_lane_alone_gets_the_whole_rate() {
        let metrics = Metrics::new();
        let (limiter, tx, mut rx) = spent(10, &metrics);
        let start = Instant::now();
        queue(&limiter, &tx, Lane::Poll, "poll", 30);
        // Later, a slot is free on the schedule, but objects still wait:
        // a newcomer queues behind them.
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(matches!(
            limiter.admit("late", Lane::Work, || wake(&tx, "late")),
            Admission::Later
        ));
        let wakes = woken(&mut rx, 31, start).await;
        // 31 slots at the full 10/s once the burst is spent.
        assert_eq!(wakes[29].1, Duration::from_millis(3_000));
        assert_eq!(wakes.iter().filter(|(k, _)| k == "late").count(), 1);
        // Nothing waits and the schedule caught up: the next one is free.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(matches!(
            limiter.admit("idle", Lane::Poll, || panic!("not queued")),
            Admission::Now(_)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn no_more_reconciles_are_in_flight_than_the_rate() {
        let metrics = Metrics::new();
        let limiter = LaneLimiter::new(10, &metrics);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut running: Vec<Permit> = (0..10)
            .map(|i| {
                match limiter.admit(&format!("run-{i}"), Lane::Work, || {
                    panic!("the first ten start at once")
                }) {
                    Admission::Now(permit) => permit,
                    Admission::Later => panic!("run-{i} was deferred"),
                }
            })
            .collect();
        // The schedule still has a slot of its burst, but ten are in flight.
        assert!(matches!(
            limiter.admit("next", Lane::Work, || wake(&tx, "next")),
            Admission::Later
        ));
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(rx.try_recv().is_err(), "no slot while ten are in flight");
        let ended = Instant::now();
        running.pop();
        let (key, at) = rx.recv().await.expect("a wake");
        assert_eq!(key, "next");
        assert_eq!(at, ended, "woken as soon as one ended");
        assert!(matches!(
            limiter.admit("next", Lane::Work, || panic!("not queued again")),
            Admission::Now(_)
        ));
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
