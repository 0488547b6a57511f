//! Pacing every server the provider calls by what it answers: the API
//! server, and each cloud endpoint with its credentials (a quota belongs to
//! an account, so two ProviderConfigs with the same key share one pacer).
//!
//! Each server has one [`Pacer`] with two adaptive limits: a
//! rate, cut on 429, and calls in flight, cut on 5xx, timeouts and rising
//! latency; both grow back while answers come back good. A `Retry-After`
//! (or repeated failure) pauses every caller of that server, not only the
//! one that met it, and the call that met it is sent again once, after the
//! pause, in its turn.
//!
//! Reconciles ask before they call: while a server is paused, or its rate
//! is booked further ahead than a quarter of a second, the
//! reconcile ends at once instead of waiting in flight, and its object
//! joins the server's line, so a throttled account does not fill the
//! reconcile queue with reconciles that can only wait, and resources of
//! other servers go on. An admitted reconcile's call gives way the same
//! way when a pause voids its start before it goes out, when its own
//! call is answered 429 with a pause (instead of sending it again after
//! the pause in flight), and a create before its create-pending mark:
//! a burst admitted before an account's first 429 does not wait out the
//! account's pace in the queue either. The pacer wakes the objects in
//! line, first come first served, each with a start reserved on the same schedule as every
//! other call, at the pace the server accepts now: a line booked while the
//! rate was low is not held to that rate once it grows back, and a woken
//! object's start cannot be taken by a newcomer.

mod limits;

pub(crate) use limits::Answer;
pub use limits::Ceilings;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::info;

use crate::metrics::{Metrics, PacingAnswerLabels, PacingLabels};
use crate::turns::{Line, Schedule, Wake};
use limits::Limits;

/// The name of the API server's pacer, in metrics and logs.
pub const KUBE_APISERVER: &str = "kube-apiserver";

/// A reconcile whose first call would wait longer than this joins its
/// server's line instead of waiting in flight.
pub(crate) const ADMIT_SLACK: Duration = Duration::from_millis(250);

/// A deferred reconcile comes back after its estimated turn plus this
/// even if its wake never comes: the wake is what brings it back, this
/// only bounds the cost of a wake lost with a stopped controller's queue.
const WAKE_SAFETY_NET: Duration = Duration::from_secs(10);

/// Every server's pacer, made on first use.
pub struct Pacers {
    metrics: Metrics,
    cloud: Ceilings,
    kube: Arc<Pacer>,
    servers: Mutex<HashMap<String, Arc<Pacer>>>,
    /// The replicas that share the work, this one included (1 alone):
    /// they share every cloud server ([`Self::share_clouds`]).
    sharers: Arc<AtomicUsize>,
}

impl Pacers {
    /// The pacers of a process whose API server may take at most `kube`
    /// and each cloud server at most `cloud`.
    pub fn new(metrics: &Metrics, kube: Ceilings, cloud: Ceilings) -> Self {
        Self {
            kube: Arc::new(Pacer::new(KUBE_APISERVER, kube, metrics)),
            metrics: metrics.clone(),
            cloud,
            servers: Mutex::default(),
            sharers: Arc::new(AtomicUsize::new(1)),
        }
    }

    /// Says how many replicas share the work now: each cloud server's
    /// limits then grow by that share of their step ([`Limits::share`]).
    /// The API server's do not: its limits are guarded by its own flow
    /// control, and its answers reach every replica alike.
    pub(crate) fn share_clouds(&self, replicas: usize) {
        self.sharers.store(replicas.max(1), Ordering::Relaxed);
    }

    /// The API server's pacer.
    pub fn kube(&self) -> &Arc<Pacer> {
        &self.kube
    }

    /// The pacer of the cloud server named `server` (never a secret: it is
    /// a metric label).
    pub fn cloud(&self, server: &str) -> Arc<Pacer> {
        let mut servers = self.servers.lock().expect("pacers lock");
        servers
            .entry(server.to_owned())
            .or_insert_with(|| {
                let mut pacer = Pacer::new(server, self.cloud, &self.metrics);
                pacer.share(self.sharers.clone());
                Arc::new(pacer)
            })
            .clone()
    }
}

/// A reserved start for a reconcile's first call, handed out by
/// [`Pacer::admit`]: the call waits for it instead of reserving again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    start: Instant,
    /// The pause count when it was reserved: a pause since voids it.
    epoch: u64,
}

/// A start reserved for a woken object ages from the start itself.
impl crate::turns::Turn for Ticket {
    fn at(&self) -> Instant {
        self.start
    }
}

/// Where an admitted reconcile's object goes when its next call could not
/// start soon (a pause voided its reserved start, or the rate is booked
/// ahead) and it has sent nothing it must finish: back to the front of its
/// server's line, to be woken by `wake`, instead of waiting in flight.
pub(crate) struct GiveWay<'a> {
    key: String,
    wake: &'a (dyn Fn() -> Wake + Send + Sync),
}

impl<'a> GiveWay<'a> {
    pub(crate) fn new(key: String, wake: &'a (dyn Fn() -> Wake + Send + Sync)) -> Self {
        Self { key, wake }
    }
}

/// How one admitted reconcile's calls to its cloud server are paced: the
/// server's pacer, the start [`Pacer::admit`] reserved for the first call,
/// and where the object goes when a call gives way.
pub(crate) struct Pacing<'a> {
    pacer: Arc<Pacer>,
    ticket: Mutex<Option<Ticket>>,
    give_way: GiveWay<'a>,
}

impl<'a> Pacing<'a> {
    pub(crate) fn new(pacer: Arc<Pacer>, ticket: Ticket, give_way: GiveWay<'a>) -> Self {
        Self {
            pacer,
            ticket: Mutex::new(Some(ticket)),
            give_way,
        }
    }

    /// Runs a call of the reconcile under its server's limits, the first
    /// from the admitted start, as [`Pacer::run`] does, except that it
    /// gives way (it is not made) if a pause voids its start before it goes
    /// out and the next start is further off than [`ADMIT_SLACK`]: its
    /// object goes back to the front of the line, and the [`Deferral`] ends
    /// the reconcile instead of holding its place in the reconcile queue
    /// while it waits. (Sixty reconciles admitted at once, just before an
    /// account's first 429, once waited there for up to 24 s, other
    /// accounts' reconciles queued behind them.) Nothing is lost by not
    /// sending it: the next reconcile observes again, and a create whose
    /// create-pending mark is written is repeated with the same
    /// idempotency key. After a 429, the one more try gives way the same
    /// way when the pause that answer began puts its start further off
    /// than [`ADMIT_SLACK`]: a burst of reconciles admitted just before an
    /// account's first 429, each refused, once waited out the pause and the
    /// account's pace in flight (up to 12 s for 60 creates at 5 calls a
    /// second), and the objects queued behind them were not looked at
    /// meanwhile. A call answered 429 was not acted on, and the next
    /// reconcile makes it again (it observes first; a create repeats its
    /// idempotency key). After a 5xx or no answer the one more try goes out
    /// after the pause, in flight, and a second failure is the reconcile's
    /// error: a server that is down (an endpoint nothing serves) is then
    /// reported in `Synced`, also on a settled resource, whose deferrals
    /// write nothing.
    pub(crate) async fn run<T, E, F, Fut>(
        &self,
        call: F,
        answer: impl Fn(&Result<T, E>) -> Answer,
    ) -> Result<Result<T, E>, Deferral>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let ticket = self.ticket.lock().expect("ticket lock").take();
        let wanted = self
            .pacer
            .acquire_unless(ticket, || self.pacer.near_or_give_way(None, &self.give_way))
            .await?;
        let result = self.pacer.send(call(), &answer, wanted).await;
        if !matches!(answer(&result), Answer::Throttled { .. }) {
            return Ok(self.pacer.again(result, call, answer).await);
        }
        self.pacer.near_or_give_way(None, &self.give_way)?;
        let wanted = self
            .pacer
            .acquire_unless(None, || self.pacer.near_or_give_way(None, &self.give_way))
            .await?;
        Ok(self.pacer.send(call(), &answer, wanted).await)
    }

    /// Before a reconcile writes what must precede a call (a create's
    /// create-pending mark): whether that call can start within
    /// [`ADMIT_SLACK`]. If not, the object goes back to the front of the
    /// line, and the [`Deferral`] ends the reconcile with nothing written.
    pub(crate) fn before_write(&self) -> Result<(), Deferral> {
        let ticket = *self.ticket.lock().expect("ticket lock");
        self.pacer.near_or_give_way(ticket, &self.give_way)
    }
}

/// Why a reconcile was deferred, and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Deferral {
    /// When to look again.
    pub after: Duration,
    /// For the `Synced` condition: which server, and what it answered.
    pub message: String,
}

/// One server's limits, the calls waiting for them, and the line of
/// reconciles deferred until the server can take them.
pub struct Pacer {
    server: String,
    state: Mutex<State>,
    /// Raised when a call ends or a limit changes.
    freed: Notify,
    /// Raised when an object joins the line.
    joined: Notify,
    /// Wakes the objects in line at the server's pace; started when the
    /// first one joins.
    dispatcher: OnceLock<JoinHandle<()>>,
    metrics: ServerMetrics,
    /// How many replicas share this server, for a cloud server.
    sharers: Option<Arc<AtomicUsize>>,
}

struct State {
    limits: Limits,
    in_flight: usize,
    /// Starts at the rate in force: its interval follows `limits`.
    schedule: Schedule,
    /// Pauses so far: a reservation made before the latest one is void.
    epoch: u64,
    /// What the server last pushed back with, for deferral messages.
    pushback: Option<&'static str>,
    /// Objects deferred and not yet woken, first come first served (its
    /// one lane, 0), and the starts reserved for woken ones until their
    /// reconcile takes them.
    line: Line<Ticket>,
}

struct ServerMetrics {
    rate: Gauge<f64, AtomicU64>,
    in_flight_limit: Gauge,
    waited: Counter<f64, AtomicU64>,
    deferred: Counter,
    good: Counter,
    throttled: Counter,
    overloaded: Counter,
}

impl ServerMetrics {
    fn new(server: &str, metrics: &Metrics) -> Self {
        let labels = PacingLabels {
            server: server.to_owned(),
        };
        let answer = |answer: &str| {
            metrics
                .pacing_answers
                .get_or_create(&PacingAnswerLabels {
                    server: server.to_owned(),
                    answer: answer.to_owned(),
                })
                .clone()
        };
        Self {
            rate: metrics.pacing_rate.get_or_create(&labels).clone(),
            in_flight_limit: metrics.pacing_in_flight.get_or_create(&labels).clone(),
            waited: metrics.pacing_wait.get_or_create(&labels).clone(),
            deferred: metrics.pacing_deferred.get_or_create(&labels).clone(),
            good: answer("good"),
            throttled: answer("throttled"),
            overloaded: answer("overloaded"),
        }
    }

    fn show(&self, limits: &Limits) {
        self.rate.set(limits.rate());
        self.in_flight_limit.set(limits.in_flight() as i64);
    }
}

/// The interval between starts at `limits`' rate.
fn interval(limits: &Limits) -> Duration {
    Duration::from_secs_f64(1.0 / limits.rate())
}

impl State {
    /// The earliest a call may start: after any pause.
    fn earliest(&self, now: Instant) -> Instant {
        self.limits.paused_until(now).unwrap_or(now)
    }

    /// When a call reserved now would start: after any pause, as the
    /// schedule allows.
    fn start(&self, now: Instant) -> Instant {
        self.schedule.next_start(self.earliest(now))
    }

    fn reserve(&mut self, now: Instant) -> Ticket {
        let earliest = self.earliest(now);
        Ticket {
            start: self.schedule.reserve(earliest),
            epoch: self.epoch,
        }
    }

    /// Whether a call reserved now would start within [`ADMIT_SLACK`];
    /// otherwise when to ask again. Places in flight are not asked for: a
    /// call waits for one in flight (milliseconds on a server that
    /// answers), and a reconcile deferred for one would cost the API server
    /// a status write.
    fn admits(&self, now: Instant) -> Result<(), Instant> {
        let start = self.start(now);
        if start.saturating_duration_since(now) > ADMIT_SLACK {
            return Err(start - ADMIT_SLACK);
        }
        Ok(())
    }

    /// About how long the object at `place` in line waits for its start.
    fn estimate(&self, place: usize, now: Instant) -> Duration {
        self.start(now).saturating_duration_since(now)
            + self.schedule.interval().mul_f64(place as f64)
    }
}

/// What the dispatcher does next.
enum Turn {
    Wake(Wake),
    Sleep(Instant),
    AwaitJoined,
}

impl Pacer {
    pub(crate) fn new(server: &str, ceilings: Ceilings, metrics: &Metrics) -> Self {
        let now = Instant::now();
        let limits = Limits::new(ceilings, now);
        let metrics = ServerMetrics::new(server, metrics);
        metrics.show(&limits);
        Self {
            server: server.to_owned(),
            state: Mutex::new(State {
                schedule: Schedule::new(interval(&limits), now),
                limits,
                in_flight: 0,
                epoch: 0,
                pushback: None,
                line: Line::default(),
            }),
            freed: Notify::new(),
            joined: Notify::new(),
            dispatcher: OnceLock::new(),
            metrics,
            sharers: None,
        }
    }

    /// Shares this server's limits among the replicas `sharers` counts,
    /// from its first call on ([`Limits::share`]).
    fn share(&mut self, sharers: Arc<AtomicUsize>) {
        let state = self.state.get_mut().expect("pacer lock");
        state.limits.share(sharers.load(Ordering::Relaxed));
        self.metrics.show(&state.limits);
        self.sharers = Some(sharers);
    }

    /// The server's name, as the `server` label of the pacing metrics
    /// gives it.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Calls a second allowed now.
    pub fn rate(&self) -> f64 {
        self.lock().limits.rate()
    }

    /// Calls at once allowed now.
    pub fn in_flight_limit(&self) -> usize {
        self.lock().limits.in_flight()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("pacer lock")
    }

    /// Whether a reconcile of the object `key` may call this server now:
    /// a [`Ticket`] for its first call when nobody is in line and that call
    /// would start within [`ADMIT_SLACK`], or when the object was woken
    /// from the line with a start reserved. Otherwise the object
    /// joins the line (once; `wake` makes what starts its next reconcile
    /// when its turn comes) and the answer is a [`Deferral`].
    pub(crate) fn admit(
        self: &Arc<Self>,
        key: &str,
        wake: impl FnOnce() -> Wake,
    ) -> Result<Ticket, Deferral> {
        let mut state = self.lock();
        let now = Instant::now();
        let place = match state.line.take(key) {
            Some(ticket) if ticket.epoch == state.epoch => return Ok(ticket),
            // A pause voided the start it was woken for: first in line.
            Some(_) if state.admits(now).is_ok() => return Ok(state.reserve(now)),
            Some(_) => {
                state.line.join_first(0, key, wake);
                0
            }
            // Nobody in line, this object included, and a start near.
            None if state.line.is_empty() && state.admits(now).is_ok() => {
                return Ok(state.reserve(now));
            }
            None if state.line.join(0, key, wake) => state.line.len() - 1,
            // Already in line: at most this far back.
            None => state.line.len(),
        };
        Err(self.deferral(state, place, now))
    }

    /// The deferral of an object that is at `place` in line, now in it:
    /// the dispatcher is told, and started on the first.
    fn deferral(
        self: &Arc<Self>,
        state: std::sync::MutexGuard<'_, State>,
        place: usize,
        now: Instant,
    ) -> Deferral {
        let after = state.estimate(place, now) + WAKE_SAFETY_NET;
        let message = self.waiting_message(state.pushback);
        drop(state);
        self.metrics.deferred.inc();
        self.dispatcher
            .get_or_init(|| tokio::spawn(self.clone().dispatch()));
        self.joined.notify_one();
        Deferral { after, message }
    }

    /// Wakes the objects in line, first come first served, each with a
    /// start reserved, as the schedule allows.
    async fn dispatch(self: Arc<Self>) {
        loop {
            let joined = self.joined.notified();
            tokio::pin!(joined);
            joined.as_mut().enable();
            let turn = {
                let mut state = self.lock();
                let now = Instant::now();
                match state.admits(now) {
                    _ if state.line.is_empty() => Turn::AwaitJoined,
                    Ok(()) => {
                        let ticket = state.reserve(now);
                        match state.line.grant_next(ticket, now) {
                            Some((_, wake)) => Turn::Wake(wake),
                            None => Turn::AwaitJoined,
                        }
                    }
                    Err(at) => Turn::Sleep(at),
                }
            };
            match turn {
                Turn::Wake(wake) => wake(),
                Turn::Sleep(at) => tokio::time::sleep_until(at).await,
                Turn::AwaitJoined => joined.await,
            }
        }
    }

    fn waiting_message(&self, pushback: Option<&'static str>) -> String {
        let answered = match pushback {
            Some("throttled") => "answers 429 Too Many Requests",
            Some(_) => "answers 5xx or does not answer in time",
            None => "takes calls at the most this provider allows it",
        };
        format!(
            "waiting for {}, which {answered}: this resource's calls wait their turn at the pace it accepts",
            self.server
        )
    }

    /// Makes the call `call` makes, once, under the limits, and learns from
    /// `answer`'s reading of the result. Starts at `ticket` when given (and
    /// still valid).
    pub(crate) async fn run_once<T, E, F>(
        &self,
        ticket: Option<Ticket>,
        call: F,
        answer: impl Fn(&Result<T, E>) -> Answer,
    ) -> Result<T, E>
    where
        F: Future<Output = Result<T, E>>,
    {
        let wanted = self.acquire(ticket).await;
        self.send(call, answer, wanted).await
    }

    /// As [`Self::run_once`], for a call that may be sent again: when the
    /// server pushes back (429, 5xx, a timeout), it is sent once more,
    /// after the pause that answer started, in its turn.
    pub(crate) async fn run<T, E, F, Fut>(
        &self,
        ticket: Option<Ticket>,
        call: F,
        answer: impl Fn(&Result<T, E>) -> Answer,
    ) -> Result<T, E>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let result = self.run_once(ticket, call(), &answer).await;
        self.again(result, call, answer).await
    }

    /// Ok when `ticket` is still valid or a call reserved now would start
    /// within [`ADMIT_SLACK`]; otherwise the object of `give_way` goes back
    /// to the front of the line, and the answer is its [`Deferral`].
    fn near_or_give_way(
        self: &Arc<Self>,
        ticket: Option<Ticket>,
        give_way: &GiveWay<'_>,
    ) -> Result<(), Deferral> {
        let mut state = self.lock();
        let now = Instant::now();
        if ticket.is_some_and(|t| t.epoch == state.epoch) || state.admits(now).is_ok() {
            return Ok(());
        }
        state.line.join_first(0, &give_way.key, give_way.wake);
        Err(self.deferral(state, 0, now))
    }

    /// Makes the call, its place acquired, and learns from its answer.
    async fn send<T, E>(
        &self,
        call: impl Future<Output = Result<T, E>>,
        answer: impl Fn(&Result<T, E>) -> Answer,
        wanted: bool,
    ) -> Result<T, E> {
        let sent = Instant::now();
        let result = call.await;
        self.release(answer(&result), sent, wanted);
        result
    }

    /// `result`, or, when the server pushed back, the call's one more try.
    async fn again<T, E, F, Fut>(
        &self,
        result: Result<T, E>,
        call: F,
        answer: impl Fn(&Result<T, E>) -> Answer,
    ) -> Result<T, E>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        if answer(&result) == Answer::Good {
            return result;
        }
        self.run_once(None, call(), &answer).await
    }

    /// Waits for a start on the schedule (`ticket`'s, when still valid),
    /// for any pause to end, and for a place in flight; whether the caller
    /// wanted more than the limits gave (it waited, or half the in-flight
    /// limit was in use).
    async fn acquire(&self, ticket: Option<Ticket>) -> bool {
        let Ok(wanted) = self
            .acquire_unless(ticket, || Ok::<_, Infallible>(()))
            .await;
        wanted
    }

    /// As [`Self::acquire`], asking `voided` whether to go on each time a
    /// pause voids the start: its error ends the wait.
    async fn acquire_unless<E>(
        &self,
        ticket: Option<Ticket>,
        mut voided: impl FnMut() -> Result<(), E>,
    ) -> Result<bool, E> {
        let began = Instant::now();
        let mut waited = false;
        let mut reserved = match ticket {
            Some(ticket) => ticket,
            None => self.lock().reserve(Instant::now()),
        };
        let wanted = loop {
            if let Some(wanted) = self.try_acquire(reserved, &mut waited).await {
                break Ok(wanted);
            }
            if let Err(error) = voided() {
                break Err(error);
            }
            reserved = self.lock().reserve(Instant::now());
        };
        let took = began.elapsed();
        if !took.is_zero() {
            self.metrics.waited.inc_by(took.as_secs_f64());
        }
        wanted
    }

    /// Waits for `reserved`'s start and a place in flight, and takes the
    /// place: whether the caller wanted more than the limits gave. `None`
    /// when a pause voids `reserved`, before or while it waits.
    async fn try_acquire(&self, reserved: Ticket, waited: &mut bool) -> Option<bool> {
        if reserved.epoch != self.lock().epoch {
            return None;
        }
        if reserved.start > Instant::now() {
            *waited = true;
            tokio::time::sleep_until(reserved.start).await;
        }
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut state = self.lock();
                let limit = state.limits.in_flight();
                // A pause that began meanwhile voids the reservation.
                if state.epoch != reserved.epoch {
                    return None;
                }
                if state.in_flight < limit {
                    state.in_flight += 1;
                    return Some(*waited || state.in_flight * 2 >= limit);
                }
            }
            *waited = true;
            freed.await;
        }
    }

    fn release(&self, answer: Answer, sent: Instant, wanted: bool) {
        let now = Instant::now();
        let cut = {
            let mut state = self.lock();
            state.in_flight -= 1;
            // Objects in line want the rate too, though they wait outside:
            // a woken object whose reserved start has passed when its call
            // goes out (it waited behind the reconcile cap) waits for
            // nothing, and without the line would not count as wanting
            // more. (The unit tests' woken calls wait for their starts, so
            // they grow the rate without this.)
            let wanted = wanted || !state.line.is_empty();
            if let Some(sharers) = &self.sharers {
                state.limits.share(sharers.load(Ordering::Relaxed));
            }
            let cut = state.limits.learn(
                answer,
                sent,
                now.saturating_duration_since(sent),
                wanted,
                now,
            );
            if let Some(cut) = &cut {
                // What defers reconciles: a rate cut or a pause, never a
                // latency cut (that one bounds calls in flight only).
                if cut.rate.is_some() || cut.pause.is_some() {
                    state.pushback = Some(cut.reason);
                }
                if cut.pause.is_some() {
                    state.epoch += 1;
                    if let Some(until) = state.limits.paused_until(now) {
                        state.schedule.restart_at(until);
                    }
                }
            }
            // Good answers grow the rate, bad ones cut it.
            let interval = interval(&state.limits);
            state.schedule.set_interval(interval);
            self.metrics.show(&state.limits);
            cut
        };
        match answer {
            Answer::Good => self.metrics.good.inc(),
            Answer::Throttled { .. } => self.metrics.throttled.inc(),
            Answer::Overloaded { .. } => self.metrics.overloaded.inc(),
        };
        if let Some(cut) = cut {
            info!(
                server = %self.server,
                reason = cut.reason,
                rate = ?cut.rate.map(|(from, to)| format!("{from:.1}/s -> {to:.1}/s")),
                in_flight = ?cut.in_flight.map(|(from, to)| format!("{from} -> {to}")),
                pause = ?cut.pause,
                "server pushed back: pacing its calls"
            );
        }
        self.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn pacer(rate: f64, in_flight: usize) -> (Arc<Pacer>, Metrics) {
        let metrics = Metrics::new();
        let pacer = Pacer::new("cloud-a", Ceilings { rate, in_flight }, &metrics);
        (Arc::new(pacer), metrics)
    }

    fn classify(result: &Result<(), u16>) -> Answer {
        match result {
            Ok(()) => Answer::Good,
            Err(429) => Answer::Throttled {
                retry_after: Some(Duration::from_secs(2)),
            },
            Err(status) if *status >= 500 => Answer::Overloaded { retry_after: None },
            Err(_) => Answer::Good,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_after_pauses_every_caller_and_the_call_goes_out_once_more() {
        let (pacer, metrics) = pacer(100.0, 8);
        let attempts = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let first = {
            let (pacer, attempts) = (pacer.clone(), attempts.clone());
            tokio::spawn(async move {
                pacer
                    .run(
                        None,
                        || {
                            let n = attempts.fetch_add(1, Ordering::SeqCst);
                            async move { if n == 0 { Err(429) } else { Ok(()) } }
                        },
                        classify,
                    )
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        // Another caller of the same server waits out the pause too.
        pacer
            .run_once(None, async { Ok(()) }, classify)
            .await
            .unwrap();
        let other = start.elapsed();
        first.await.unwrap().unwrap();
        assert_eq!(attempts.load(Ordering::SeqCst), 2, "sent again once");
        assert!(other >= Duration::from_secs(2), "{other:?}");
        assert!(other < Duration::from_millis(2_100), "{other:?}");
        let answers = |a| metrics.total_with("provider_pacing_answers_total", &[("answer", a)]);
        assert_eq!(answers("throttled"), 1.0);
        assert_eq!(answers("good"), 2.0);
        assert!(metrics.total("provider_pacing_wait_seconds_total") >= 2.0);
    }

    /// A call answered 429 (Retry-After 2 s) after 100 ms, in flight once
    /// this returns.
    async fn refused_in_flight(pacer: &Arc<Pacer>) -> JoinHandle<Result<(), u16>> {
        let pacer = pacer.clone();
        let task = tokio::spawn(async move {
            let refused = async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Err(429)
            };
            pacer.run_once(None, refused, classify).await
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        task
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_waiting_for_a_place_in_flight_waits_out_a_pause_begun_meanwhile() {
        // One call in flight at a time: the second waits for the first's
        // place, and the first's answer is a 429 asking for 2 s.
        let (pacer, metrics) = pacer(100.0, 1);
        let start = Instant::now();
        let first = refused_in_flight(&pacer).await;
        let sent = std::sync::Mutex::new(None);
        let call = async {
            *sent.lock().unwrap() = Some(start.elapsed());
            Ok(())
        };
        pacer.run_once(None, call, classify).await.unwrap();
        assert_eq!(first.await.unwrap(), Err(429));
        let sent = sent.lock().unwrap().unwrap();
        assert!(sent >= Duration::from_millis(2_100), "sent at {sent:?}");
        let answers = |a| metrics.total_with("provider_pacing_answers_total", &[("answer", a)]);
        assert_eq!((answers("throttled"), answers("good")), (1.0, 1.0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_second_refusal_is_returned_not_retried_again() {
        let (pacer, _metrics) = pacer(100.0, 8);
        let attempts = AtomicUsize::new(0);
        let result = pacer
            .run(
                None,
                || {
                    attempts.fetch_add(1, Ordering::SeqCst);
                    async { Err::<(), _>(503) }
                },
                classify,
            )
            .await;
        assert_eq!(result, Err(503));
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn calls_keep_to_the_rate_after_a_burst() {
        let (pacer, _metrics) = pacer(10.0, 64);
        let start = Instant::now();
        for _ in 0..30 {
            pacer
                .run_once(None, async { Ok(()) }, classify)
                .await
                .unwrap();
        }
        // One second of burst (10 calls), then 20 more at 10/s.
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(1_900), "{took:?}");
        assert!(took <= Duration::from_millis(2_100), "{took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn no_more_calls_are_in_flight_than_the_limit() {
        let (pacer, _metrics) = pacer(1_000.0, 3);
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let tasks: Vec<_> = (0..10)
            .map(|_| {
                let (pacer, running, most) = (pacer.clone(), running.clone(), most.clone());
                tokio::spawn(async move {
                    let call = async {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        running.fetch_sub(1, Ordering::SeqCst);
                        Ok(())
                    };
                    pacer.run_once(None, call, classify).await
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 3);
    }

    /// `accepted` calls answered, then one refused with 429 (Retry-After 2 s).
    async fn accept_then_refuse(pacer: &Arc<Pacer>, accepted: usize) {
        for _ in 0..accepted {
            pacer
                .run_once(None, async { Ok(()) }, classify)
                .await
                .unwrap();
        }
        let _ = pacer.run_once(None, async { Err(429) }, classify).await;
    }

    /// Where the tests' wakes report: the key woken.
    type Woken = tokio::sync::mpsc::UnboundedSender<String>;

    /// What makes the wake of `key`, reporting to `tx`, each time it is
    /// needed.
    fn waker(tx: &Woken, key: &str) -> impl Fn() -> Wake + Send + Sync + use<> {
        let (tx, key) = (tx.clone(), key.to_owned());
        move || {
            let (tx, key) = (tx.clone(), key.clone());
            Box::new(move || drop(tx.send(key)))
        }
    }

    fn never_woken() -> Wake {
        panic!("admitted at once, never in line")
    }

    #[tokio::test(start_paused = true)]
    async fn a_paused_server_lines_reconciles_up_and_wakes_them_in_turn_at_its_pace() {
        let (pacer, metrics) = pacer(100.0, 8);
        let began = Instant::now();
        // Ten calls accepted, then a refusal: the rate is cut to 7/s and
        // every caller paused for 2 s.
        accept_then_refuse(&pacer, 10).await;
        assert!((pacer.rate() - 7.0).abs() < 1e-9, "{}", pacer.rate());
        let (tx, mut woken) = tokio::sync::mpsc::unbounded_channel();
        let keys: Vec<String> = (0..10).map(|i| format!("vpc-{i}")).collect();
        for key in &keys {
            let deferral = pacer.admit(key, waker(&tx, key)).unwrap_err();
            assert!(
                deferral.message.contains("cloud-a, which answers 429"),
                "{}",
                deferral.message
            );
        }
        // Asking again while in line neither joins it twice nor jumps it.
        pacer.admit("vpc-3", never_woken).unwrap_err();
        assert_eq!(metrics.total("provider_pacing_deferred_total"), 11.0);
        // What the line's wakes will bring back comes first: an object that
        // waits in line is not admitted before its turn.
        pacer.admit("vpc-0", never_woken).unwrap_err();
        // Woken first come, first served, each with its start reserved:
        // the pause's end and a second's burst at 7/s, then 1/7 s apart.
        let mut starts = Vec::new();
        for key in &keys {
            assert_eq!(woken.recv().await.as_ref(), Some(key));
            let ticket = pacer.admit(key, never_woken).expect("its turn");
            starts.push(ticket.start.duration_since(began).as_millis());
        }
        assert_eq!(
            starts,
            [
                2_000, 2_000, 2_000, 2_000, 2_000, 2_000, 2_000, 2_000, 2_142, 2_285
            ]
        );
        // A woken reconcile's first call goes out at its reserved start.
        let (tx2, mut woken2) = tokio::sync::mpsc::unbounded_channel();
        pacer.admit("late", waker(&tx2, "late")).unwrap_err();
        woken2.recv().await.unwrap();
        let ticket = pacer.admit("late", never_woken).expect("its turn");
        pacer
            .run_once(Some(ticket), async { Ok(()) }, classify)
            .await
            .unwrap();
        // To the timer's millisecond.
        let late = Instant::now().duration_since(ticket.start);
        assert!(late < Duration::from_millis(1), "{late:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn admitted_reads_waiting_in_flight_give_way_when_a_pause_voids_their_starts() {
        // One call in flight at a time; the one in flight is answered 429
        // with Retry-After 2 s.
        let (pacer, metrics) = pacer(100.0, 1);
        let refused = refused_in_flight(&pacer).await;
        // Three reconciles admitted meanwhile (their starts are near), each
        // waiting for the place in flight when the 429 comes.
        let (tx, mut woken) = tokio::sync::mpsc::unbounded_channel();
        let sent = Arc::new(AtomicUsize::new(0));
        let readers: Vec<_> = ["vpc-a", "vpc-b", "vpc-c"]
            .into_iter()
            .map(|key| {
                let ticket = pacer.admit(key, never_woken).expect("admitted");
                let wake = waker(&tx, key);
                let (pacer, sent) = (pacer.clone(), sent.clone());
                tokio::spawn(async move {
                    let read = || {
                        sent.fetch_add(1, Ordering::SeqCst);
                        async { Ok(()) }
                    };
                    let pacing = Pacing::new(pacer, ticket, GiveWay::new(key.to_owned(), &wake));
                    pacing.run(read, classify).await
                })
            })
            .collect();
        assert_eq!(refused.await.unwrap(), Err(429));
        let given_way = Instant::now();
        for reader in readers {
            let deferral = reader.await.unwrap().expect_err("gave way");
            assert!(
                deferral.message.contains("answers 429"),
                "{}",
                deferral.message
            );
        }
        // None of them waited out the pause in flight, nor was sent.
        assert!(given_way.elapsed() < Duration::from_millis(1));
        assert_eq!(sent.load(Ordering::SeqCst), 0);
        assert_eq!(metrics.total("provider_pacing_deferred_total"), 3.0);
        // They wait at the front of the line and are woken after the pause,
        // each admitted with its start.
        let mut keys = Vec::new();
        for _ in 0..3 {
            let key = woken.recv().await.unwrap();
            assert!(given_way.elapsed() >= Duration::from_millis(1_750));
            pacer.admit(&key, never_woken).expect("its turn");
            keys.push(key);
        }
        keys.sort();
        assert_eq!(keys, ["vpc-a", "vpc-b", "vpc-c"]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_admitted_read_with_its_start_valid_goes_out() {
        let (pacer, _metrics) = pacer(100.0, 8);
        let (tx, _woken) = tokio::sync::mpsc::unbounded_channel();
        let ticket = pacer.admit("vpc-a", never_woken).expect("admitted");
        let wake = waker(&tx, "vpc-a");
        let pacing = Pacing::new(pacer, ticket, GiveWay::new("vpc-a".into(), &wake));
        let sent = AtomicUsize::new(0);
        let read = || {
            sent.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        };
        let result = pacing.run(read, classify).await;
        assert_eq!(result.expect("not deferred"), Ok(()));
        assert_eq!(sent.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn an_admitted_call_answered_with_a_pause_gives_way_instead_of_waiting_it_out() {
        let (pacer, metrics) = pacer(100.0, 8);
        let (tx, mut woken) = tokio::sync::mpsc::unbounded_channel();
        let ticket = pacer.admit("vpc-a", never_woken).expect("admitted");
        let wake = waker(&tx, "vpc-a");
        let pacing = Pacing::new(pacer.clone(), ticket, GiveWay::new("vpc-a".into(), &wake));
        let sent = AtomicUsize::new(0);
        let refused = || {
            sent.fetch_add(1, Ordering::SeqCst);
            async { Err(429) }
        };
        let answered = Instant::now();
        let deferral = pacing
            .run(refused, classify)
            .await
            .expect_err("gives way rather than wait 2 s in flight");
        assert!(answered.elapsed() < Duration::from_millis(1));
        assert!(
            deferral.message.contains("answers 429"),
            "{}",
            deferral.message
        );
        assert_eq!(sent.load(Ordering::SeqCst), 1, "not sent again");
        assert_eq!(metrics.total("provider_pacing_deferred_total"), 1.0);
        // First in line, woken when the pause ends, with its start.
        assert_eq!(woken.recv().await.as_deref(), Some("vpc-a"));
        assert!(answered.elapsed() >= Duration::from_millis(1_750));
        pacer.admit("vpc-a", never_woken).expect("its turn");
    }

    #[tokio::test(start_paused = true)]
    async fn an_admitted_call_answered_5xx_goes_out_once_more_after_the_pause() {
        let (pacer, metrics) = pacer(100.0, 8);
        let (tx, _woken) = tokio::sync::mpsc::unbounded_channel();
        let ticket = pacer.admit("vpc-a", never_woken).expect("admitted");
        let wake = waker(&tx, "vpc-a");
        let pacing = Pacing::new(pacer, ticket, GiveWay::new("vpc-a".into(), &wake));
        let sent = AtomicUsize::new(0);
        let twice_failing = || {
            sent.fetch_add(1, Ordering::SeqCst);
            async { Err(503) }
        };
        let began = Instant::now();
        let result = pacing.run(twice_failing, classify).await;
        // Not deferred: the failure is the reconcile's to report.
        assert_eq!(result.expect("not deferred"), Err(503));
        assert_eq!(sent.load(Ordering::SeqCst), 2, "sent again once");
        assert!(began.elapsed() >= Duration::from_secs(1), "after the pause");
        assert_eq!(metrics.total("provider_pacing_deferred_total"), 0.0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_gives_way_before_anything_is_written_while_its_server_is_paused() {
        let (pacer, metrics) = pacer(100.0, 8);
        let (tx, mut woken) = tokio::sync::mpsc::unbounded_channel();
        let ticket = pacer.admit("vpc-a", never_woken).expect("admitted");
        let wake = waker(&tx, "vpc-a");
        let pacing = Pacing::new(pacer.clone(), ticket, GiveWay::new("vpc-a".into(), &wake));
        // Its observe goes out at the admitted start.
        pacing
            .run(|| async { Ok(()) }, classify)
            .await
            .expect("its start is valid")
            .unwrap();
        assert_eq!(
            pacing.before_write(),
            Ok(()),
            "no pause: the write goes out"
        );
        // Another reconcile's call is refused: every caller pauses 2 s.
        pacer
            .run_once(None, async { Err(429) }, classify)
            .await
            .unwrap_err();
        let deferral = pacing.before_write().expect_err("gives way");
        assert!(
            deferral.message.contains("answers 429"),
            "{}",
            deferral.message
        );
        assert_eq!(metrics.total("provider_pacing_deferred_total"), 1.0);
        let paused = Instant::now();
        assert_eq!(woken.recv().await.as_deref(), Some("vpc-a"));
        assert!(paused.elapsed() >= Duration::from_millis(1_750));
    }

    #[tokio::test(start_paused = true)]
    async fn a_cut_rate_grows_back_while_objects_wait_in_line_for_their_starts() {
        let (pacer, _metrics) = pacer(100.0, 64);
        accept_then_refuse(&pacer, 5).await;
        assert!((pacer.rate() - 3.5).abs() < 1e-9, "{}", pacer.rate());
        // Twenty objects, each calling again as soon as its call is
        // answered: they are admitted or lined up, never waiting in flight.
        let (tx, mut woken) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..20 {
            tx.send(format!("vpc-{i}")).unwrap();
        }
        let start = Instant::now();
        let mut calls = 0;
        while start.elapsed() < Duration::from_secs(12) {
            let key = woken.recv().await.unwrap();
            if let Ok(ticket) = pacer.admit(&key, waker(&tx, &key)) {
                pacer
                    .run_once(Some(ticket), async { Ok(()) }, classify)
                    .await
                    .unwrap();
                calls += 1;
                tx.send(key).unwrap();
            }
        }
        // +0.2/s a second for the ten seconds after the pause.
        assert!(pacer.rate() > 5.0, "{}", pacer.rate());
        // At the rate in force: about 3.5 + 5 a second over ten seconds,
        // after the pause's one-second burst.
        assert!((40..=60).contains(&calls), "{calls} calls");
    }

    #[tokio::test(start_paused = true)]
    async fn a_healthy_server_admits_at_once() {
        let (pacer, metrics) = pacer(1_000.0, 64);
        for i in 0..500 {
            let ticket = pacer
                .admit(&format!("vpc-{i}"), never_woken)
                .expect("admitted");
            pacer
                .run_once(Some(ticket), async { Ok(()) }, classify)
                .await
                .unwrap();
        }
        assert_eq!(metrics.total("provider_pacing_deferred_total"), 0.0);
        assert_eq!(
            metrics.total_with("provider_pacing_rate", &[("server", "cloud-a")]),
            1_000.0
        );
    }
}
