//! The adaptive limits of one server, as arithmetic on the answers it
//! gives: no clock of its own (every method takes `now`) and no I/O, so
//! each rule is tested answer by answer.
//!
//! Two limits, because servers push back in two ways:
//!
//! - **A rate** (calls a second), cut on 429. A quota (a cloud account's
//!   API rate, the API server's priority-and-fairness seats) is a rate:
//!   fewer calls in flight do not help when each answer comes back in a
//!   millisecond. The first cut, from the ceiling, sets the rate to 70 %
//!   of what the server accepted over the last second, so it lands near
//!   the quota in one step instead of halving from a ceiling many times
//!   (each halving costing 429s); later cuts take 70 % of the rate in
//!   force; it grows again additively while callers want more.
//! - **Calls in flight**, cut on 5xx, timeouts and rising latency. A server
//!   short of capacity slows down before it fails; fewer calls at once is
//!   what relieves it. It grows by one per window of answers (TCP's
//!   congestion avoidance) while they come back good and fast.
//!
//! Both start at their ceilings (the flags), which a healthy server never
//! reaches; a server that answers `Retry-After`, or fails repeatedly,
//! pauses every caller ([`Limits::paused_until`]).

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// What one answer says about the server's load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The server answered, success or the caller's own mistake (a 404, a
    /// 409): it had the capacity to answer.
    Good,
    /// 429: the server refuses this rate.
    Throttled { retry_after: Option<Duration> },
    /// A 5xx, a timeout or no answer at all: the server is short of
    /// capacity.
    Overloaded { retry_after: Option<Duration> },
}

/// The most a server's limits may reach, and where they start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ceilings {
    /// Calls a second.
    pub rate: f64,
    /// Calls at once.
    pub in_flight: usize,
}

/// What a bad answer changed, for the one log line and the metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    /// Why: `throttled` (429), `overloaded` (5xx, timeout), `latency`.
    pub reason: &'static str,
    /// The rate before and after, when it was cut.
    pub rate: Option<(f64, f64)>,
    /// The in-flight limit before and after, when it was cut.
    pub in_flight: Option<(usize, usize)>,
    /// A pause every caller now waits out, when one started.
    pub pause: Option<Duration>,
}

/// Calls in flight a server starts with, doubling with every window of
/// good answers up to the ceiling until the first cut (TCP's slow start):
/// a server whose quota is unknown meets a handful of calls, not a burst
/// of every caller at once (60 new VPCs on a 5/s account: 28 calls
/// refused at the start when all went out together). On a healthy server
/// the ceiling is reached within a few dozen answers.
const INITIAL_IN_FLIGHT: f64 = 4.0;
/// The lowest rate a cut leaves: one call a second still tells when the
/// server recovers.
pub const RATE_FLOOR: f64 = 1.0;
/// The fewest calls in flight a cut leaves.
pub const IN_FLIGHT_FLOOR: f64 = 1.0;
/// A cut sets the rate to this share of the rate in force, or, on the
/// first cut from the ceiling, of what the server accepted over the last
/// second ([`Limits::cut_base`]). Not 0.8: what a server accepts in
/// the second before a refusal includes its burst, so 80 % of it was still
/// above the quota (60 new VPCs on a 5/s account: 15 % of the calls
/// refused).
const RATE_BACKOFF: f64 = 0.7;
/// A cut of calls in flight keeps this share of them.
const IN_FLIGHT_BACKOFF: f64 = 0.5;
/// Rising latency cuts gently: it is a warning, not a refusal.
const LATENCY_BACKOFF: f64 = 0.9;
/// While callers want more, the rate grows by this share of itself a
/// second, and at least [`RATE_STEP_MIN`]: from a cut back to the quota in
/// several seconds, overrunning it slowly enough that an account's burst
/// absorbs seconds of it before the next refusal (at 0.5/s, 60 new VPCs on
/// a 5/s account saw 9 % of the calls refused, against 4 % at 0.2/s).
/// Replicas that share the work share the step too ([`Limits::share`]).
const RATE_STEP: f64 = 0.05;
const RATE_STEP_MIN: f64 = 0.2;
/// Good answers counted to estimate the rate the server accepts.
const ACCEPTED_WINDOW: Duration = Duration::from_secs(1);
/// The pause after a bad answer without `Retry-After`, doubling while they
/// come in a row, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_secs(1);
/// The longest pause, asked for or not: a misbehaving server cannot park
/// every caller for minutes.
pub const MAX_PAUSE: Duration = Duration::from_secs(30);
/// Latency counts as rising when the recent average is this many times
/// the long-term one...
const LATENCY_TOLERANCE: f64 = 2.0;
/// ... and above this: below it, noise on a fast server says nothing.
const LATENCY_FLOOR: Duration = Duration::from_millis(50);
/// Weights of the recent and long-term latency averages.
const RECENT_WEIGHT: f64 = 0.2;
const LONG_TERM_WEIGHT: f64 = 0.01;

pub struct Limits {
    ceilings: Ceilings,
    rate: f64,
    in_flight: f64,
    /// When recent good answers came, for the accepted rate.
    accepted: VecDeque<Instant>,
    /// The last cut of each limit: answers to calls sent before it say
    /// nothing new of that limit (the window-of-flight rule of TCP), so one
    /// burst of refusals cuts once. One for each: a latency cut of calls in
    /// flight says nothing of the rate, and must not shield the rate from
    /// the first 429 that follows it (which once let a whole second burst
    /// of calls through after the pause).
    last_rate_cut: Option<Instant>,
    last_in_flight_cut: Option<Instant>,
    /// Up to when the rate's growth is accounted.
    grown: Instant,
    paused_until: Option<Instant>,
    /// Bad answers in a row.
    strikes: u32,
    /// No cut yet: calls in flight grow by one per good answer.
    slow_start: bool,
    recent_latency: Option<f64>,
    long_term_latency: Option<f64>,
    /// Processes that call this server with their own limits (replicas
    /// sharing the work): each grows its rate by one over its square of
    /// the step ([`Limits::share`]).
    sharers: f64,
    /// Whether any answer came yet.
    answered: bool,
}

impl Limits {
    pub fn new(ceilings: Ceilings, now: Instant) -> Self {
        let ceilings = Ceilings {
            rate: ceilings.rate.max(RATE_FLOOR),
            in_flight: ceilings.in_flight.max(1),
        };
        Self {
            ceilings,
            rate: ceilings.rate,
            in_flight: (ceilings.in_flight as f64).min(INITIAL_IN_FLIGHT),
            accepted: VecDeque::new(),
            last_rate_cut: None,
            last_in_flight_cut: None,
            grown: now,
            paused_until: None,
            strikes: 0,
            slow_start: true,
            recent_latency: None,
            long_term_latency: None,
            sharers: 1.0,
            answered: false,
        }
    }

    /// Says how many processes call this server, each with limits of its
    /// own learnt from its own answers: the replicas that share the work,
    /// whose objects (spread by a hash of their keys) use every account.
    /// Each grows its rate by `1 / sharers²` of the step. A refusal
    /// reaches the replica whose call overran the quota, and its cut (to
    /// 70 % of its own rate, about `1 / sharers` of the total) takes only
    /// `0.3 / sharers` off what they send together, where one process's
    /// cut takes 0.3. Growing together at one process's step, N replicas
    /// would overrun the quota N times as often: three on an account of 5
    /// calls a second had 9.0 to 12.3 % of their calls refused, against
    /// one process's 3 to 6 % (21.6 % at the full step each). At a step
    /// N times smaller again, the total climbs back from its smaller cut
    /// in the time one process takes from its larger one, so they meet
    /// the quota as often as one process does, and run closer under it.
    /// Before its first answer, a server's calls in flight start at
    /// their share of [`INITIAL_IN_FLIGHT`] too (at least one): three
    /// replicas' first calls all at once were twelve against an account
    /// whose burst was five.
    pub fn share(&mut self, sharers: usize) {
        self.sharers = sharers.max(1) as f64;
        if self.slow_start && !self.answered {
            self.in_flight = (INITIAL_IN_FLIGHT / self.sharers)
                .max(IN_FLIGHT_FLOOR)
                .min(self.ceilings.in_flight as f64);
        }
    }

    /// Calls a second allowed now.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Calls at once allowed now.
    pub fn in_flight(&self) -> usize {
        self.in_flight as usize
    }

    /// Until when every caller waits, if the server asked for a pause.
    pub fn paused_until(&self, now: Instant) -> Option<Instant> {
        self.paused_until.filter(|until| *until > now)
    }

    /// Learns from the answer to a call sent at `sent` that took `latency`.
    /// `wanted` says whether callers wanted more than the limits gave when
    /// it was sent (they waited, or half the in-flight limit was in use):
    /// only then do good answers grow the limits, so an idle server's
    /// limits do not drift up to where a burst would overrun it.
    pub fn learn(
        &mut self,
        answer: Answer,
        sent: Instant,
        latency: Duration,
        wanted: bool,
        now: Instant,
    ) -> Option<Cut> {
        self.answered = true;
        let after = |cut: Option<Instant>| cut.is_none_or(|cut| sent >= cut);
        let (rate_fresh, in_flight_fresh) =
            (after(self.last_rate_cut), after(self.last_in_flight_cut));
        match answer {
            Answer::Good => {
                self.strikes = 0;
                self.accepted.push_back(now);
                self.forget_accepted(now);
                if let Some(cut) = self.observe_latency(latency, in_flight_fresh && wanted, now) {
                    return Some(cut);
                }
                self.grow(wanted, now);
                None
            }
            Answer::Throttled { retry_after } => {
                let pause = self.pause(retry_after, now);
                let rate = rate_fresh.then(|| self.cut_rate(now));
                Self::report("throttled", rate, None, pause)
            }
            Answer::Overloaded { retry_after } => {
                let pause = self.pause(retry_after, now);
                let in_flight = in_flight_fresh.then(|| self.cut_in_flight(IN_FLIGHT_BACKOFF, now));
                Self::report("overloaded", None, in_flight, pause)
            }
        }
    }

    fn report(
        reason: &'static str,
        rate: Option<(f64, f64)>,
        in_flight: Option<(usize, usize)>,
        pause: Option<Duration>,
    ) -> Option<Cut> {
        (rate.is_some() || in_flight.is_some() || pause.is_some()).then_some(Cut {
            reason,
            rate,
            in_flight,
            pause,
        })
    }

    /// After a cut of either limit: growth is additive from here, and
    /// accounted from now.
    fn cut_at(&mut self, now: Instant) {
        self.slow_start = false;
        self.grown = now;
    }

    /// What a 429 cuts the rate from. At the ceiling the rate in force
    /// says nothing of the server, and what it accepted over the last
    /// second is the estimate (the first cut lands near the quota in one
    /// step). Below it, the rate in force, as TCP cuts its window: one
    /// second's count is a noisy sample (a pause, a busy machine, callers
    /// between turns), and cutting to it at every refusal once spiralled a
    /// 5/s account down to the floor of 1/s, a quarter of a minute's
    /// growth below its quota.
    fn cut_base(&self, accepted: f64) -> f64 {
        if self.rate >= self.ceilings.rate {
            self.rate.min(accepted)
        } else {
            self.rate
        }
    }

    /// Cuts the rate under what the server accepted ([`Self::cut_base`]).
    fn cut_rate(&mut self, now: Instant) -> (f64, f64) {
        self.forget_accepted(now);
        let accepted = self.accepted.len() as f64 / ACCEPTED_WINDOW.as_secs_f64();
        let before = self.rate;
        self.rate = (self.cut_base(accepted) * RATE_BACKOFF).max(RATE_FLOOR);
        self.last_rate_cut = Some(now);
        self.cut_at(now);
        (before, self.rate)
    }

    fn cut_in_flight(&mut self, keep: f64, now: Instant) -> (usize, usize) {
        let before = self.in_flight();
        self.in_flight = (self.in_flight * keep).max(IN_FLIGHT_FLOOR);
        self.last_in_flight_cut = Some(now);
        self.cut_at(now);
        (before, self.in_flight())
    }

    /// Extends the pause of every caller; `Some` with its length when a
    /// new pause starts (not when one in force is extended).
    fn pause(&mut self, retry_after: Option<Duration>, now: Instant) -> Option<Duration> {
        let backoff = FIRST_PAUSE.saturating_mul(1 << self.strikes.min(5));
        let wait = retry_after.unwrap_or(backoff).min(MAX_PAUSE);
        self.strikes += 1;
        let until = now + wait;
        let started = self.paused_until(now).is_none();
        if self.paused_until.is_none_or(|u| u < until) {
            self.paused_until = Some(until);
        }
        started.then_some(wait)
    }

    fn forget_accepted(&mut self, now: Instant) {
        while self
            .accepted
            .front()
            .is_some_and(|at| now.saturating_duration_since(*at) > ACCEPTED_WINDOW)
        {
            self.accepted.pop_front();
        }
    }

    /// Folds one latency into the averages; a cut when the recent one has
    /// risen well above the long-term one.
    fn observe_latency(&mut self, latency: Duration, may_cut: bool, now: Instant) -> Option<Cut> {
        let sample = latency.as_secs_f64();
        let average = |old: Option<f64>, weight: f64| {
            Some(old.map_or(sample, |old| old + (sample - old) * weight))
        };
        self.recent_latency = average(self.recent_latency, RECENT_WEIGHT);
        self.long_term_latency = average(self.long_term_latency, LONG_TERM_WEIGHT);
        let (recent, long_term) = (self.recent_latency?, self.long_term_latency?);
        let rising = recent > long_term * LATENCY_TOLERANCE && recent > LATENCY_FLOOR.as_secs_f64();
        if !(rising && may_cut) {
            return None;
        }
        let in_flight = self.cut_in_flight(LATENCY_BACKOFF, now);
        Some(Cut {
            reason: "latency",
            rate: None,
            in_flight: Some(in_flight),
            pause: None,
        })
    }

    /// Additive increase while callers want more: one call in flight per
    /// window of answers, and [`RATE_STEP`] of the rate per second.
    fn grow(&mut self, wanted: bool, now: Instant) {
        let elapsed = now
            .saturating_duration_since(self.grown)
            .min(Duration::from_secs(1));
        self.grown = now;
        if !wanted {
            return;
        }
        let ceilings = self.ceilings;
        let step = if self.slow_start {
            1.0
        } else {
            1.0 / self.in_flight
        };
        self.in_flight = (self.in_flight + step).min(ceilings.in_flight as f64);
        let step = (self.rate * RATE_STEP).max(RATE_STEP_MIN) / (self.sharers * self.sharers);
        self.rate = (self.rate + step * elapsed.as_secs_f64()).min(ceilings.rate);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Limits whose calls in flight have grown to their ceiling.
    fn limits(rate: f64, in_flight: usize) -> (Limits, Instant) {
        let start = Instant::now();
        let mut limits = Limits::new(Ceilings { rate, in_flight }, start);
        for _ in 0..in_flight {
            limits.learn(Answer::Good, start, MS, true, start);
        }
        assert_eq!(limits.in_flight(), in_flight);
        // Later than the growth's answers count as accepted.
        (limits, start + Duration::from_secs(2))
    }

    #[test]
    fn calls_in_flight_start_at_four_and_double_each_window_until_a_cut() {
        let now = Instant::now();
        let ceilings = Ceilings {
            rate: 100.0,
            in_flight: 64,
        };
        let mut limits = Limits::new(ceilings, now);
        assert_eq!(limits.in_flight(), 4);
        assert_eq!(limits.rate(), 100.0, "the rate starts at its ceiling");
        // Answers nobody waited for grow nothing.
        limits.learn(Answer::Good, now, MS, false, now);
        assert_eq!(limits.in_flight(), 4);
        // One window of four answers doubles it.
        for _ in 0..4 {
            limits.learn(Answer::Good, now, MS, true, now);
        }
        assert_eq!(limits.in_flight(), 8);
        // After a cut, about one per window.
        let overloaded = Answer::Overloaded { retry_after: None };
        limits.learn(overloaded, now, MS, true, now);
        assert_eq!(limits.in_flight(), 4);
        for _ in 0..5 {
            limits.learn(Answer::Good, now, MS, true, now);
        }
        assert_eq!(limits.in_flight(), 5);
    }

    fn throttled(retry_after: u64) -> Answer {
        Answer::Throttled {
            retry_after: Some(Duration::from_secs(retry_after)),
        }
    }

    #[test]
    fn limits_start_at_their_ceilings_and_good_answers_keep_them_there() {
        let (mut limits, start) = limits(100.0, 8);
        for i in 1..=50 {
            let now = start + MS * i;
            assert_eq!(limits.learn(Answer::Good, now, MS, true, now), None);
        }
        assert_eq!(limits.rate(), 100.0);
        assert_eq!(limits.in_flight(), 8);
    }

    #[test]
    fn a_429_cuts_the_rate_under_what_the_server_accepted_and_pauses_for_retry_after() {
        let (mut limits, start) = limits(1_000.0, 32);
        // The account's burst of 5 goes through, then a refusal.
        for i in 0..5 {
            let now = start + MS * i;
            limits.learn(Answer::Good, now, MS, true, now);
        }
        let now = start + MS * 6;
        let cut = limits
            .learn(throttled(1), now, MS, true, now)
            .expect("a cut");
        assert_eq!(cut.reason, "throttled");
        let (before, after) = cut.rate.unwrap();
        assert_eq!(before, 1_000.0);
        assert!(
            (after - 3.5).abs() < 1e-9,
            "70 % of 5 accepted in 1 s: {after}"
        );
        assert_eq!(cut.pause, Some(Duration::from_secs(1)));
        assert_eq!(limits.paused_until(now), Some(now + Duration::from_secs(1)));
        assert_eq!(limits.in_flight(), 32, "a rate refusal leaves concurrency");
    }

    #[test]
    fn a_later_429_cuts_from_the_rate_in_force_not_a_thin_second() {
        let (mut limits, start) = limits(1_000.0, 32);
        for i in 0..5 {
            let now = start + MS * i;
            limits.learn(Answer::Good, now, MS, true, now);
        }
        let now = start + MS * 6;
        limits.learn(throttled(1), now, MS, true, now);
        assert!((limits.rate() - 3.5).abs() < 1e-9);
        // Ten seconds on, one call answered in the last second (callers
        // between turns), then a refusal: 70 % of the 3.5/s in force.
        let later = now + Duration::from_secs(10);
        limits.learn(Answer::Good, later, MS, false, later);
        let cut = limits
            .learn(throttled(1), later, MS, true, later)
            .expect("a cut");
        let (before, after) = cut.rate.unwrap();
        assert!((before - 3.5).abs() < 1e-9, "{before}");
        assert!((after - 2.45).abs() < 1e-9, "not 70 % of 1/s: {after}");
    }

    #[test]
    fn refusals_of_calls_sent_before_a_cut_do_not_cut_again() {
        let (mut limits, start) = limits(100.0, 32);
        // 20 accepted in the last second, then a burst of refusals.
        for i in 0..20 {
            let now = start + MS * (50 * i);
            limits.learn(Answer::Good, now, MS, true, now);
        }
        let sent = start + MS * 990;
        let first = start + MS * 1_000;
        limits.learn(throttled(1), sent, MS, true, first);
        let first_cut = limits.rate();
        assert!(
            (first_cut - 14.0).abs() < 1e-9,
            "70 % of 20 accepted: {first_cut}"
        );
        for i in 1..10 {
            let now = first + MS * i;
            let cut = limits.learn(throttled(1), sent, MS, true, now);
            assert!(cut.is_none(), "the pause is in force and the cut made");
        }
        assert_eq!(limits.rate(), first_cut);
        // 10 accepted after the pause, then a call sent after the cut is
        // refused: it cuts again, 70 % of the rate in force.
        let resumed = first + Duration::from_secs(1);
        for i in 0..10 {
            let now = resumed + MS * (10 * i);
            limits.learn(Answer::Good, now, MS, true, now);
        }
        let later = resumed + MS * 200;
        let cut = limits.learn(throttled(1), later, MS, true, later).unwrap();
        let (before, after) = cut.rate.unwrap();
        assert!(before > first_cut, "grown back meanwhile: {before}");
        assert!(
            (after - before * 0.7).abs() < 1e-9,
            "70 % of the {before}/s in force: {after}"
        );
    }

    #[test]
    fn a_latency_cut_does_not_shield_the_rate_from_the_429_that_follows() {
        let (mut limits, start) = limits(1_000.0, 8);
        let mut now = start;
        for _ in 0..200 {
            now += MS * 10;
            limits.learn(Answer::Good, now - MS * 20, MS * 20, true, now);
        }
        // Answers slow down: calls in flight are cut.
        let mut latency_cut = None;
        while latency_cut.is_none() {
            now += MS * 10;
            latency_cut = limits.learn(Answer::Good, now - MS * 200, MS * 200, true, now);
        }
        assert_eq!(latency_cut.unwrap().reason, "latency");
        // A call sent before that cut is refused: the rate is cut all the
        // same, for the latency cut said nothing of it.
        now += MS;
        let sent = now - MS * 300;
        let cut = limits
            .learn(throttled(1), sent, MS, true, now)
            .expect("a cut");
        let (before, after) = cut.rate.expect("the rate is cut");
        assert_eq!(before, 1_000.0);
        assert!(after < 100.0, "{after}");
        // The in-flight limit is still not cut twice by answers to calls
        // sent before its cut (the 429's pause is in force: nothing new).
        let in_flight = limits.in_flight();
        now += MS;
        let overloaded = Answer::Overloaded { retry_after: None };
        assert_eq!(limits.learn(overloaded, sent, MS, true, now), None);
        assert_eq!(limits.in_flight(), in_flight);
    }

    #[test]
    fn the_rate_never_falls_below_its_floor() {
        let (mut limits, start) = limits(10.0, 4);
        for i in 0..20 {
            let now = start + Duration::from_secs(2 * i);
            limits.learn(throttled(1), now, MS, true, now);
        }
        assert_eq!(limits.rate(), RATE_FLOOR);
    }

    #[test]
    fn the_rate_grows_back_additively_only_while_callers_want_more() {
        let (mut limits, start) = limits(100.0, 4);
        let cut = start + MS;
        limits.learn(throttled(1), cut, MS, true, cut);
        assert_eq!(limits.rate(), RATE_FLOOR);
        // Ten seconds of good answers nobody waited for: no growth.
        for i in 1..=100 {
            let now = cut + Duration::from_millis(100 * i);
            limits.learn(Answer::Good, now, MS, false, now);
        }
        assert_eq!(limits.rate(), RATE_FLOOR);
        // Ten seconds of answers to callers who waited: +0.2/s a second
        // while under 4/s.
        let from = cut + Duration::from_secs(10);
        for i in 1..=100 {
            let now = from + Duration::from_millis(100 * i);
            limits.learn(Answer::Good, now, MS, true, now);
        }
        assert!((limits.rate() - 3.0).abs() < 0.01, "{}", limits.rate());
    }

    #[test]
    fn replicas_sharing_a_server_each_grow_their_rate_by_their_share_of_the_step() {
        let (mut limits, start) = limits(100.0, 4);
        limits.share(3);
        let cut = start + MS;
        limits.learn(throttled(1), cut, MS, true, cut);
        assert_eq!(limits.rate(), RATE_FLOOR);
        // Ten seconds of answers to callers who waited: a ninth of +0.2/s
        // a second, so three such replicas together grow a third as fast
        // as one process, as each of their cuts is a third of its.
        for i in 1..=100 {
            let now = cut + Duration::from_millis(100 * i);
            limits.learn(Answer::Good, now, MS, true, now);
        }
        let grown = limits.rate() - RATE_FLOOR;
        assert!((grown - 2.0 / 9.0).abs() < 0.01, "{grown}");
    }

    #[test]
    fn replicas_sharing_a_new_server_start_with_their_share_of_calls_in_flight() {
        let now = Instant::now();
        let ceilings = Ceilings {
            rate: 100.0,
            in_flight: 64,
        };
        let mut alone = Limits::new(ceilings, now);
        alone.share(1);
        assert_eq!(alone.in_flight(), 4);
        let mut one_of_three = Limits::new(ceilings, now);
        one_of_three.share(3);
        assert_eq!(one_of_three.in_flight(), 1);
        let mut one_of_two = Limits::new(ceilings, now);
        one_of_two.share(2);
        assert_eq!(one_of_two.in_flight(), 2);
        // Once answers come, the share no longer sets calls in flight.
        one_of_two.learn(Answer::Good, now, MS, true, now);
        let grown = one_of_two.in_flight();
        one_of_two.share(4);
        assert_eq!(one_of_two.in_flight(), grown);
    }

    #[test]
    fn a_5xx_halves_calls_in_flight_and_pauses_doubling_without_retry_after() {
        let (mut limits, start) = limits(100.0, 32);
        let overloaded = Answer::Overloaded { retry_after: None };
        let mut pauses = Vec::new();
        let mut now = start;
        for _ in 0..3 {
            let cut = limits.learn(overloaded, now, MS, true, now).unwrap();
            pauses.push(cut.pause.unwrap().as_secs());
            now = limits.paused_until(now).unwrap();
        }
        assert_eq!(pauses, [1, 2, 4]);
        assert_eq!(limits.in_flight(), 4, "32 halved three times");
        assert_eq!(limits.rate(), 100.0, "overload leaves the rate");
        // A good answer ends the doubling.
        limits.learn(Answer::Good, now, MS, true, now);
        let cut = limits.learn(overloaded, now, MS, true, now).unwrap();
        assert_eq!(cut.pause, Some(Duration::from_secs(1)));
    }

    #[test]
    fn a_timeout_counts_as_overload_and_retry_after_is_capped() {
        let (mut limits, now) = limits(100.0, 8);
        let cut = limits
            .learn(
                Answer::Overloaded {
                    retry_after: Some(Duration::from_secs(3_600)),
                },
                now,
                MS,
                true,
                now,
            )
            .unwrap();
        assert_eq!(cut.pause, Some(MAX_PAUSE));
        assert_eq!(cut.in_flight, Some((8, 4)));
    }

    #[test]
    fn rising_latency_cuts_calls_in_flight_gently_and_they_grow_back() {
        let (mut limits, start) = limits(1_000.0, 20);
        let mut now = start;
        for _ in 0..200 {
            now += MS * 10;
            let sent = now - MS * 20;
            assert_eq!(limits.learn(Answer::Good, sent, MS * 20, true, now), None);
        }
        // The server slows to 200 ms an answer: the recent average passes
        // twice the long-term one, and one cut follows.
        let mut cuts = Vec::new();
        for _ in 0..20 {
            now += MS * 10;
            let sent = now - MS * 200;
            if let Some(cut) = limits.learn(Answer::Good, sent, MS * 200, true, now) {
                cuts.push(cut);
            }
        }
        assert_eq!(cuts.len(), 1, "answers sent before the cut say nothing new");
        assert_eq!(cuts[0].reason, "latency");
        assert_eq!(cuts[0].in_flight, Some((20, 18)));
        // Fast again: back to the ceiling, one call per window of answers.
        for _ in 0..2_000 {
            now += MS * 10;
            limits.learn(Answer::Good, now - MS * 20, MS * 20, true, now);
        }
        assert_eq!(limits.in_flight(), 20);
    }

    #[test]
    fn latency_under_the_floor_is_noise() {
        let (mut limits, start) = limits(1_000.0, 20);
        let mut now = start;
        for i in 0..500 {
            now += MS;
            let latency = if i < 200 { MS / 10 } else { MS * 10 };
            assert_eq!(limits.learn(Answer::Good, now, latency, true, now), None);
        }
        assert_eq!(limits.in_flight(), 20);
    }
}
