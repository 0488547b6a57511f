//! The reconcile-rate cap: [`LaneLimiter`], the global ceiling of
//! reconciles a second (`--max-reconcile-rate`) shared by every controller
//! so that the sum over all kinds stays under it, and of reconciles in
//! flight, which follows the API server's pacing ([`crate::pacing`]).
//!
//! The rate is paced with the GCRA-style schedule the pacers use too
//! (`turns::Schedule`), with up to one second of burst, so a cold start
//! with many objects is not paced at first and a storm is capped; deferred
//! objects wait in a line of the kind the pacers keep (`turns::Line`).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::metrics::{LaneLabels, Metrics};
use crate::turns::{Line, Schedule};

pub use crate::turns::Wake;

/// Which queue a reconcile waits in for [`LaneLimiter`]; in that order,
/// the lanes of its line.
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
/// flight, a slot handed out and not yet taken by its reconcile counting
/// as one (`Queues::occupied`). Without that bound, reconciles admitted
/// faster than the API server's request limits let them finish piled up
/// (about 2,700 at once during a 3,000-VPC cold start, each holding its
/// copies of the object), and the cold start's memory grew with the
/// number of resources.
pub struct LaneLimiter {
    shared: Arc<Shared>,
    dispatcher: OnceLock<JoinHandle<()>>,
}

struct Shared {
    /// At most this many reconciles in flight, asked afresh for every
    /// slot: the API server's pacing moves it ([`LaneLimiter::in_flight_by`]).
    max_in_flight: Box<dyn Fn() -> usize + Send + Sync>,
    queues: Mutex<Queues>,
    /// Raised when an object joins a queue.
    joined: Notify,
    /// Raised when a reconcile in flight ends.
    finished: Notify,
    /// By [`Lane`], in its order.
    lanes: [LaneMetrics; 2],
}

impl Shared {
    /// Counts one more reconcile in flight.
    fn permit(self: &Arc<Self>, queues: &mut Queues) -> Admission {
        queues.in_flight += 1;
        Admission::Now(Permit {
            shared: self.clone(),
        })
    }

    /// Waits until a place in flight is free: fewer than the cap are in
    /// flight, counting the turns handed out and not yet taken, which
    /// expire after [`TURN_HELD`].
    async fn place_in_flight(&self) {
        loop {
            let finished = self.finished.notified();
            {
                let mut queues = self.queues.lock().expect("queues lock");
                queues.line.expire(Instant::now(), TURN_HELD);
                if queues.occupied() < (self.max_in_flight)() {
                    return;
                }
            }
            // A turn's expiry ends the wait too, when nothing ends first.
            let _ = tokio::time::timeout(TURN_HELD, finished).await;
        }
    }
}

struct Queues {
    /// The rate's schedule.
    rate: Schedule,
    /// Objects waiting for a slot, in their [`Lane`]s, and the slots handed
    /// to them (when, for their age) until their reconcile takes them.
    line: Line<Instant, 2>,
    /// Reconciles admitted and not yet ended.
    in_flight: usize,
}

impl Queues {
    /// The places in flight taken: reconciles admitted and not yet ended,
    /// and turns handed out that their reconciles have not taken yet. A
    /// woken reconcile takes its turn a little later (milliseconds, more on
    /// a busy controller), and at a cold start the schedule's burst hands
    /// out a second's worth of turns at once: counting only the reconciles
    /// that took theirs let those turns run past the bound (a heap profile
    /// of a 3,000-VPC cold start put 23 MB in boxed reconciles at its peak,
    /// where the bound of 128 takes under 1 MB).
    fn occupied(&self) -> usize {
        self.in_flight + self.line.granted()
    }
}

/// How long a turn handed out holds its place in flight untaken: a woken
/// reconcile takes it within milliseconds; one not taken by then belonged
/// to an object deleted meanwhile, and its place is given back (should
/// its reconcile come after all, the object joins the line again).
const TURN_HELD: Duration = Duration::from_secs(10);

impl LaneLimiter {
    /// A cap of `per_second` reconciles a second (at least 1), both lanes
    /// together, and as many in flight at once; counted in `metrics`.
    pub fn new(per_second: u32, metrics: &Metrics) -> Self {
        let per_second = per_second.max(1);
        Self {
            shared: Arc::new(Shared {
                max_in_flight: Box::new(move || per_second as usize),
                queues: Mutex::new(Queues {
                    rate: Schedule::new(Duration::from_secs(1) / per_second, Instant::now()),
                    line: Line::default(),
                    in_flight: 0,
                }),
                joined: Notify::new(),
                finished: Notify::new(),
                lanes: [
                    LaneMetrics::new(metrics, Lane::Poll),
                    LaneMetrics::new(metrics, Lane::Work),
                ],
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
        let lane = lane as usize;
        {
            let mut queues = self.shared.queues.lock().expect("queues lock");
            if queues.line.take(key).is_some() {
                return self.shared.permit(&mut queues);
            }
            // Nobody in line, this object included, a place in flight and a
            // slot free now.
            if queues.line.is_empty()
                && queues.occupied() < (self.shared.max_in_flight)()
                && queues.rate.try_reserve(Instant::now())
            {
                self.shared.lanes[lane].slots.inc();
                return self.shared.permit(&mut queues);
            }
            if !queues.line.join(lane, key, wake) {
                return Admission::Later;
            }
            self.shared.lanes[lane].waiting.inc();
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
        while shared.queues.lock().expect("queues lock").line.is_empty() {
            shared.joined.notified().await;
        }
        shared.place_in_flight().await;
        let now = Instant::now();
        let start = shared.queues.lock().expect("queues lock").rate.reserve(now);
        if start > now {
            tokio::time::sleep_until(start).await;
        }
        let next = {
            let now = Instant::now();
            let mut queues = shared.queues.lock().expect("queues lock");
            queues.line.grant_next(now, now)
        };
        if let Some((lane, wake)) = next {
            let metrics = &shared.lanes[lane];
            metrics.waiting.dec();
            metrics.slots.inc();
            wake();
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
        while limiter
            .shared
            .queues
            .lock()
            .unwrap()
            .rate
            .try_reserve(Instant::now())
        {
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

    /// As [`woken`], each woken object's reconcile taking its turn and
    /// ending at once, as the controller's would.
    async fn woken_and_run(
        limiter: &LaneLimiter,
        rx: &mut mpsc::UnboundedReceiver<(String, Instant)>,
        count: usize,
        start: Instant,
    ) -> Vec<(String, Duration)> {
        let mut out = Vec::new();
        for _ in 0..count {
            let mut wake = woken(rx, 1, start).await;
            let (key, at) = wake.pop().expect("one wake");
            match limiter.admit(&key, Lane::Work, || panic!("{key} was woken")) {
                Admission::Now(permit) => drop(permit),
                Admission::Later => panic!("{key} was woken and not admitted"),
            }
            out.push((key, at));
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
        let wakes = woken_and_run(&limiter, &mut rx, 105, start).await;
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
        let wakes = woken_and_run(&limiter, &mut rx, 31, start).await;
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

    /// The wakes sent so far, by key.
    fn drain(rx: &mut mpsc::UnboundedReceiver<(String, Instant)>) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok().map(|(key, _)| key)).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn turns_not_yet_taken_hold_their_places_in_flight_until_they_expire() {
        let metrics = Metrics::new();
        let (limiter, tx, mut rx) = spent(10, &metrics);
        queue(&limiter, &tx, Lane::Work, "new", 30);
        // Ten turns go out (the bound, 10 in flight); no reconcile has
        // taken its turn yet, so no more go out, however long the rate
        // has allowed more.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let first = drain(&mut rx);
        assert_eq!(first.len(), 10, "{first:?}");
        // One reconcile takes its turn and ends: one more turn goes out.
        match limiter.admit(&first[0], Lane::Work, || panic!("its turn came")) {
            Admission::Now(permit) => drop(permit),
            Admission::Later => panic!("{} had its turn", first[0]),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(drain(&mut rx), ["new-10"]);
        // Turns never taken (their objects were deleted, say) give their
        // places back once held for TURN_HELD: the ten out now, and ten
        // more go out.
        tokio::time::sleep(TURN_HELD - Duration::from_secs(1)).await;
        assert!(drain(&mut rx).is_empty(), "held for less than TURN_HELD");
        tokio::time::sleep(Duration::from_secs(1)).await;
        let expected: Vec<_> = (11..=20).map(|i| format!("new-{i}")).collect();
        assert_eq!(drain(&mut rx), expected);
        // A reconcile that comes for an expired turn after all joins the
        // line again.
        assert!(matches!(
            limiter.admit(&first[1], Lane::Work, || wake(&tx, &first[1])),
            Admission::Later
        ));
    }
}
