//! Taking turns, as both the reconcile-rate cap ([`crate::rate_limit`])
//! and each server's pacer ([`crate::pacing`]) do: a [`Schedule`] that
//! spaces starts at a rate, and a [`Line`] of objects deferred until their
//! turn comes. Both are plain data with no clock or lock of their own
//! (every method that needs the time takes it), so each owner keeps them
//! under its own lock and decides when a turn may be handed out.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

/// How far ahead of the schedule starts may go at once: one second's
/// worth of the rate, so a cold start, a pause's end or an idle server is
/// not paced at first, and a storm is.
const BURST: Duration = Duration::from_secs(1);

/// A GCRA-style schedule: each start reserves the next slot on a virtual
/// schedule spaced one interval apart, up to [`BURST`] ahead. The cap's
/// interval is fixed; the pacer's follows the rate its server accepts, so
/// it can be set. Hand-written because the schedule is a dozen lines.
pub struct Schedule {
    interval: Duration,
    /// The theoretical arrival time of the next start.
    next: Instant,
}

impl Schedule {
    /// A schedule of starts `interval` apart, idle at `now`.
    pub fn new(interval: Duration, now: Instant) -> Self {
        Self {
            interval,
            next: now,
        }
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Spaces the starts reserved from now on `interval` apart; those
    /// reserved already keep theirs.
    pub fn set_interval(&mut self, interval: Duration) {
        self.interval = interval;
    }

    /// When a start reserved now would begin: at `earliest` (now, or the
    /// end of a pause) or later, as the schedule allows.
    pub fn next_start(&self, earliest: Instant) -> Instant {
        earliest.max(self.next.checked_sub(BURST).unwrap_or(earliest))
    }

    /// Reserves the next start no earlier than `earliest`, and returns it.
    pub fn reserve(&mut self, earliest: Instant) -> Instant {
        let start = self.next_start(earliest);
        self.next = self.next.max(start) + self.interval;
        start
    }

    /// Reserves a start only if it begins at `now`; whether it did.
    pub fn try_reserve(&mut self, now: Instant) -> bool {
        if self.next_start(now) > now {
            return false;
        }
        self.reserve(now);
        true
    }

    /// Starts the schedule afresh at `at`, the end of a pause (which the
    /// caller waits out by passing it as `earliest`): the starts booked
    /// before it are forgotten, and a burst may start then.
    pub fn restart_at(&mut self, at: Instant) {
        self.next = at;
    }
}

/// Starts a deferred object's reconcile again once its turn comes; in the
/// provider, a send to its controller's trigger stream.
pub type Wake = Box<dyn FnOnce() + Send>;

/// How long a turn handed to an object stays its own. The woken reconcile
/// takes it within milliseconds, or seconds behind the reconcile cap; one
/// older than this belonged to an object deleted meanwhile, and is dropped.
const GRANT_TTL: Duration = Duration::from_secs(60);

/// Below this many turns handed out and not taken, none are dropped.
const PRUNE_FLOOR: usize = 1_024;

/// What a turn handed out carries (the cap's: when it was handed out; the
/// pacer's: a reserved start), and the time it ages from.
pub trait Turn {
    fn at(&self) -> Instant;
}

impl Turn for Instant {
    fn at(&self) -> Instant {
        *self
    }
}

/// An object in line, and what starts its next reconcile.
struct Waiter {
    key: String,
    wake: Wake,
}

/// Objects deferred until their turn, by key, in `LANES` lanes: first
/// come, first served within a lane, the lanes taking turns while more
/// than one waits (the cap has two, polls and other work; a pacer one).
///
/// A deferred reconcile ends instead of waiting in flight; its object
/// waits here once, however many reconciles it is handed to meanwhile,
/// and costs a few bytes. When its turn comes, the turn is remembered by
/// key for the reconcile its wake starts; turns never taken (the object
/// was deleted) are dropped after [`GRANT_TTL`], looked for only when the
/// turns kept have doubled since the last look, so a turn is O(1).
pub struct Line<T, const LANES: usize = 1> {
    lanes: [VecDeque<Waiter>; LANES],
    /// The lane served last: the lanes after it go first.
    last: usize,
    /// The keys in line.
    queued: HashSet<String>,
    /// Turns handed out and not yet taken.
    granted: HashMap<String, T>,
    /// The size of `granted` at which stale turns are next dropped.
    prune_at: usize,
}

impl<T: Turn, const LANES: usize> Default for Line<T, LANES> {
    fn default() -> Self {
        Self {
            lanes: std::array::from_fn(|_| VecDeque::new()),
            // So that the first lane goes first.
            last: LANES - 1,
            queued: HashSet::new(),
            granted: HashMap::new(),
            prune_at: 0,
        }
    }
}

impl<T: Turn, const LANES: usize> Line<T, LANES> {
    /// Whether nobody is in line.
    pub fn is_empty(&self) -> bool {
        self.queued.is_empty()
    }

    /// How many are in line, all lanes together.
    pub fn len(&self) -> usize {
        self.queued.len()
    }

    /// The turn handed to `key`, if it came: taken once.
    pub fn take(&mut self, key: &str) -> Option<T> {
        self.granted.remove(key)
    }

    /// How many turns were handed out and not taken yet.
    pub fn granted(&self) -> usize {
        self.granted.len()
    }

    /// Drops the turns handed out `held` ago or more and not taken:
    /// their objects were deleted meanwhile (or will join the line again
    /// should their reconcile come after all); how many.
    pub fn expire(&mut self, now: Instant, held: Duration) -> usize {
        let before = self.granted.len();
        self.granted
            .retain(|_, turn| now.saturating_duration_since(turn.at()) < held);
        before - self.granted.len()
    }

    /// Puts `key` at the back of `lane` with the wake `wake` makes, unless
    /// it is in line already; whether it joined.
    pub fn join(&mut self, lane: usize, key: &str, wake: impl FnOnce() -> Wake) -> bool {
        self.enter(lane, key, wake, false)
    }

    /// As [`Self::join`], at the front: for an object whose turn was
    /// voided before it took it.
    pub fn join_first(&mut self, lane: usize, key: &str, wake: impl FnOnce() -> Wake) -> bool {
        self.enter(lane, key, wake, true)
    }

    fn enter(&mut self, lane: usize, key: &str, wake: impl FnOnce() -> Wake, first: bool) -> bool {
        if self.queued.contains(key) {
            return false;
        }
        self.queued.insert(key.to_owned());
        let waiter = Waiter {
            key: key.to_owned(),
            wake: wake(),
        };
        if first {
            self.lanes[lane].push_front(waiter);
        } else {
            self.lanes[lane].push_back(waiter);
        }
        true
    }

    /// Hands `turn` to the first in line (in the lane after the one served
    /// last that has anyone waiting) and returns its lane and wake; `None`,
    /// and `turn` unused, when nobody is in line.
    pub fn grant_next(&mut self, turn: T, now: Instant) -> Option<(usize, Wake)> {
        let lane = (1..=LANES)
            .map(|step| (self.last + step) % LANES)
            .find(|lane| !self.lanes[*lane].is_empty())?;
        self.last = lane;
        let waiter = self.lanes[lane].pop_front()?;
        self.queued.remove(&waiter.key);
        if self.granted.len() >= self.prune_at.max(PRUNE_FLOOR) {
            self.expire(now, GRANT_TTL);
            self.prune_at = self.granted.len() * 2;
        }
        self.granted.insert(waiter.key, turn);
        Some((lane, waiter.wake))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A wake that records `key` in `woken` when called.
    fn wake(woken: &Arc<Mutex<Vec<String>>>, key: &str) -> impl FnOnce() -> Wake {
        let (woken, key) = (woken.clone(), key.to_owned());
        move || Box::new(move || woken.lock().unwrap().push(key))
    }

    #[test]
    fn a_key_joins_once_and_turns_go_first_come_first_served() {
        let now = Instant::now();
        let woken = Arc::new(Mutex::new(Vec::new()));
        let mut line: Line<Instant> = Line::default();
        assert!(line.join(0, "a", wake(&woken, "a")));
        assert!(line.join(0, "b", wake(&woken, "b")));
        assert!(!line.join(0, "a", || panic!("in line already")));
        assert_eq!(line.len(), 2);
        while let Some((lane, wake)) = line.grant_next(now, now) {
            assert_eq!(lane, 0);
            wake();
        }
        assert_eq!(*woken.lock().unwrap(), ["a", "b"]);
        assert!(line.is_empty());
        assert_eq!(line.take("a"), Some(now));
        assert_eq!(line.take("a"), None, "a turn is taken once");
        // Out of line, a key may join again.
        assert!(line.join(0, "a", wake(&woken, "a")));
    }

    #[test]
    fn lanes_take_turns_while_both_wait_and_a_voided_turn_goes_first() {
        let now = Instant::now();
        let woken = Arc::new(Mutex::new(Vec::new()));
        let mut line: Line<Instant, 2> = Line::default();
        for key in ["p1", "p2", "p3"] {
            line.join(0, key, wake(&woken, key));
        }
        line.join(1, "w1", wake(&woken, "w1"));
        line.join_first(1, "w0", wake(&woken, "w0"));
        let mut lanes = Vec::new();
        while let Some((lane, wake)) = line.grant_next(now, now) {
            lanes.push(lane);
            wake();
        }
        assert_eq!(lanes, [0, 1, 0, 1, 0]);
        assert_eq!(*woken.lock().unwrap(), ["p1", "w0", "p2", "w1", "p3"]);
    }

    #[test]
    fn turns_never_taken_are_dropped_after_their_time_once_the_map_doubles() {
        let start = Instant::now();
        let mut line: Line<Instant> = Line::default();
        let grant = |line: &mut Line<Instant>, key: &str, now: Instant| {
            line.join(0, key, || Box::new(|| ()));
            let (_, wake) = line.grant_next(now, now).expect("in line");
            wake();
        };
        for i in 0..PRUNE_FLOOR {
            grant(&mut line, &format!("old-{i}"), start);
        }
        // Within their time, none is dropped: the next look is at twice as many.
        let fresh = start + GRANT_TTL - Duration::from_secs(1);
        grant(&mut line, "fresh", fresh);
        assert!(line.take("old-0").is_some(), "kept within its time");
        for i in 0..PRUNE_FLOOR {
            grant(&mut line, &format!("new-{i}"), fresh);
        }
        // Past their time, the old ones go at the next look.
        let later = start + GRANT_TTL;
        grant(&mut line, "late", later);
        assert_eq!(line.take("old-1"), None, "dropped past its time");
        assert_eq!(line.take("fresh"), Some(fresh));
        assert_eq!(line.take("late"), Some(later));
    }

    #[test]
    fn a_schedule_allows_a_second_of_burst_then_spaces_starts() {
        let now = Instant::now();
        let mut schedule = Schedule::new(Duration::from_millis(100), now);
        let starts: Vec<_> = (0..30)
            .map(|_| schedule.reserve(now).duration_since(now))
            .collect();
        // One second's burst, both ends in, at once; then 100 ms apart.
        assert!(starts[..11].iter().all(Duration::is_zero), "{starts:?}");
        assert_eq!(starts[11], Duration::from_millis(100));
        assert_eq!(starts[29], Duration::from_millis(1_900));
        assert!(!schedule.try_reserve(now), "no start free now");
        // A pause's end, waited out: the booked starts are forgotten, and
        // a second's burst at the interval set goes out then.
        let until = now + Duration::from_secs(5);
        schedule.restart_at(until);
        schedule.set_interval(Duration::from_millis(500));
        assert_eq!(schedule.next_start(until), until);
        for _ in 0..3 {
            assert_eq!(schedule.reserve(until), until);
        }
        assert_eq!(schedule.reserve(until), until + Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn allows_a_one_second_burst_then_paces() {
        let mut schedule = Schedule::new(Duration::from_secs(1) / 10, Instant::now());
        let start = Instant::now();
        for _ in 0..10 {
            tokio::time::sleep_until(schedule.reserve(Instant::now())).await;
        }
        assert!(
            start.elapsed() < Duration::from_millis(5),
            "burst was paced"
        );
        for _ in 0..20 {
            tokio::time::sleep_until(schedule.reserve(Instant::now())).await;
        }
        // 30 starts at 10/s with a 1 s burst: the last one starts near 2 s.
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(1_900), "{elapsed:?}");
        assert!(elapsed <= Duration::from_millis(2_100), "{elapsed:?}");
    }
}
