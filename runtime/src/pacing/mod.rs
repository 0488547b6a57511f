//! Pacing every server the provider calls by what it answers: the API
//! server, and each cloud endpoint with its credentials (a quota belongs to
//! an account, so two ProviderConfigs with the same key share one pacer).
//!
//! Each server has one [`Pacer`] with two adaptive limits ([`limits`]): a
//! rate, cut on 429, and calls in flight, cut on 5xx, timeouts and rising
//! latency; both grow back while answers come back good. A `Retry-After`
//! (or repeated failure) pauses every caller of that server, not only the
//! one that met it, and the call that met it is sent again once, after the
//! pause, in its turn.
//!
//! Reconciles ask before they call ([`Pacer::admit`]): while a server is
//! paused, or its rate is booked further ahead than [`ADMIT_SLACK`], the
//! reconcile ends at once with an appointment instead of waiting in flight,
//! so a throttled account does not fill the queue with reconciles that can
//! only wait, and resources of other servers go on. Appointments are
//! spaced at the server's current rate, so deferred resources come back at
//! the pace it accepts, first deferred first.

mod limits;

pub use limits::{Answer, Ceilings, Cut, MAX_PAUSE};

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;
use tokio::time::Instant;
use tracing::info;

use crate::metrics::{Metrics, PacingAnswerLabels, PacingLabels};
use limits::Limits;

/// The name of the API server's pacer, in metrics and logs.
pub const KUBE_APISERVER: &str = "kube-apiserver";

/// A reconcile whose first call would wait longer than this is deferred to
/// an appointment instead of waiting in flight.
pub const ADMIT_SLACK: Duration = Duration::from_millis(250);

/// Appointments are spaced this many calls apart at the server's rate:
/// one, the least a reconcile that calls makes, so the rate is never left
/// unused; a reconcile that makes a second call waits for its slot in
/// flight, and one woken when slots are booked is deferred again, to the
/// back, at no cost to the server.
const CALLS_PER_APPOINTMENT: f64 = 1.0;

/// How far ahead of the schedule calls may start at once: one second's
/// worth of the rate, so a pause's end or an idle server is not paced at
/// first.
const BURST: Duration = Duration::from_secs(1);

/// Every server's pacer, made on first use.
pub struct Pacers {
    metrics: Metrics,
    cloud: Ceilings,
    kube: Arc<Pacer>,
    servers: Mutex<HashMap<String, Arc<Pacer>>>,
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
        }
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
            .or_insert_with(|| Arc::new(Pacer::new(server, self.cloud, &self.metrics)))
            .clone()
    }
}

/// A reserved start for a reconcile's first call, handed out by
/// [`Pacer::admit`]: the call waits for it instead of reserving again.
#[derive(Debug, Clone, Copy)]
pub struct Ticket {
    start: Instant,
    /// The pause count when it was reserved: a pause since voids it.
    epoch: u64,
}

/// How one reconcile's calls to its cloud server are paced: the server's
/// pacer, and the start [`Pacer::admit`] reserved for the first call.
pub struct Pacing {
    pacer: Arc<Pacer>,
    ticket: Mutex<Option<Ticket>>,
}

impl Pacing {
    pub fn new(pacer: Arc<Pacer>, ticket: Ticket) -> Self {
        Self {
            pacer,
            ticket: Mutex::new(Some(ticket)),
        }
    }

    /// Pacing for calls made without admission (a query's listing).
    pub fn unadmitted(pacer: Arc<Pacer>) -> Self {
        Self {
            pacer,
            ticket: Mutex::new(None),
        }
    }

    pub fn pacer(&self) -> &Pacer {
        &self.pacer
    }

    /// The reserved start, for the first call that asks.
    pub fn take_ticket(&self) -> Option<Ticket> {
        self.ticket.lock().expect("ticket lock").take()
    }
}

/// Why a reconcile was deferred, and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deferral {
    /// When to look again.
    pub after: Duration,
    /// For the `Synced` condition: which server, and what it answered.
    pub message: String,
}

/// One server's limits and the calls waiting for them.
pub struct Pacer {
    server: String,
    state: Mutex<State>,
    /// Raised when a call ends or a limit changes.
    freed: Notify,
    metrics: ServerMetrics,
}

struct State {
    limits: Limits,
    in_flight: usize,
    /// The schedule's next start (GCRA's theoretical arrival time).
    next_slot: Instant,
    /// The next free appointment for a deferred reconcile.
    next_appointment: Instant,
    /// Pauses so far: a reservation made before the latest one is void.
    epoch: u64,
    /// What the server last pushed back with, for deferral messages.
    pushback: Option<&'static str>,
    /// When a reconcile was last deferred: callers want more than the
    /// rate gives, though none of them waits in flight.
    deferred_at: Option<Instant>,
}

/// A deferral this recent still counts as callers wanting more.
const DEMAND_MEMORY: Duration = Duration::from_secs(1);

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

impl State {
    /// The interval between starts at the current rate.
    fn interval(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.limits.rate())
    }

    /// When a call reserved now would start: after any pause, and on the
    /// schedule allowing [`BURST`] ahead.
    fn start(&self, now: Instant) -> Instant {
        let earliest = self.limits.paused_until(now).unwrap_or(now);
        earliest.max(self.next_slot.checked_sub(BURST).unwrap_or(earliest))
    }

    fn reserve(&mut self, now: Instant) -> Ticket {
        let start = self.start(now);
        self.next_slot = self.next_slot.max(start) + self.interval();
        Ticket {
            start,
            epoch: self.epoch,
        }
    }
}

impl Pacer {
    pub fn new(server: &str, ceilings: Ceilings, metrics: &Metrics) -> Self {
        let now = Instant::now();
        let limits = Limits::new(ceilings, now);
        let metrics = ServerMetrics::new(server, metrics);
        metrics.show(&limits);
        Self {
            server: server.to_owned(),
            state: Mutex::new(State {
                limits,
                in_flight: 0,
                next_slot: now,
                next_appointment: now,
                epoch: 0,
                pushback: None,
                deferred_at: None,
            }),
            freed: Notify::new(),
            metrics,
        }
    }

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

    /// Whether a reconcile may call this server now: a [`Ticket`] for its
    /// first call when that call would start within [`ADMIT_SLACK`],
    /// otherwise a [`Deferral`] to the next free appointment.
    pub fn admit(&self) -> Result<Ticket, Deferral> {
        let mut state = self.lock();
        let now = Instant::now();
        let start = state.start(now);
        if start.saturating_duration_since(now) <= ADMIT_SLACK {
            return Ok(state.reserve(now));
        }
        state.deferred_at = Some(now);
        let appointment = state.next_appointment.max(start);
        state.next_appointment = appointment + state.interval().mul_f64(CALLS_PER_APPOINTMENT);
        let message = self.waiting_message(state.pushback);
        drop(state);
        self.metrics.deferred.inc();
        Err(Deferral {
            after: appointment.saturating_duration_since(now),
            message,
        })
    }

    fn waiting_message(&self, pushback: Option<&'static str>) -> String {
        let answered = match pushback {
            Some("throttled") => "answers 429 Too Many Requests",
            Some("overloaded") => "answers 5xx or does not answer in time",
            Some(_) => "answers slowly",
            None => "is busy",
        };
        format!(
            "waiting for {}, which {answered}: this resource's calls wait their turn at the pace it accepts",
            self.server
        )
    }

    /// Makes the call `call` makes, once, under the limits, and learns from
    /// `answer`'s reading of the result. Starts at `ticket` when given (and
    /// still valid).
    pub async fn run_once<T, E, F>(
        &self,
        ticket: Option<Ticket>,
        call: F,
        answer: impl Fn(&Result<T, E>) -> Answer,
    ) -> Result<T, E>
    where
        F: Future<Output = Result<T, E>>,
    {
        let wanted = self.acquire(ticket).await;
        let sent = Instant::now();
        let result = call.await;
        self.release(answer(&result), sent, wanted);
        result
    }

    /// As [`Self::run_once`], for a call that may be sent again: when the
    /// server pushes back (429, 5xx, a timeout), it is sent once more,
    /// after the pause that answer started, in its turn.
    pub async fn run<T, E, F, Fut>(
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
        if answer(&result) == Answer::Good {
            return result;
        }
        self.run_once(None, call(), &answer).await
    }

    /// Waits for a start on the schedule, for any pause to end, and for a
    /// place in flight; whether the caller wanted more than the limits
    /// gave (it waited, or half the in-flight limit was in use).
    async fn acquire(&self, ticket: Option<Ticket>) -> bool {
        let began = Instant::now();
        let mut ticket = ticket;
        let mut waited = false;
        loop {
            let reserved = {
                let mut state = self.lock();
                match ticket.take().filter(|t| t.epoch == state.epoch) {
                    Some(ticket) => ticket,
                    None => state.reserve(Instant::now()),
                }
            };
            if reserved.start > Instant::now() {
                waited = true;
                tokio::time::sleep_until(reserved.start).await;
            }
            // A pause that began meanwhile voids the reservation.
            if self.lock().epoch == reserved.epoch {
                break;
            }
        }
        let wanted = loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut state = self.lock();
                let limit = state.limits.in_flight();
                if state.in_flight < limit {
                    state.in_flight += 1;
                    break waited || state.in_flight * 2 >= limit;
                }
            }
            waited = true;
            freed.await;
        };
        let took = began.elapsed();
        if !took.is_zero() {
            self.metrics.waited.inc_by(took.as_secs_f64());
        }
        wanted
    }

    fn release(&self, answer: Answer, sent: Instant, wanted: bool) {
        let now = Instant::now();
        let cut = {
            let mut state = self.lock();
            state.in_flight -= 1;
            // Deferred reconciles want the rate too, though they wait
            // outside: without them, a rate cut while every caller is
            // deferred would never grow back.
            let deferring = state
                .deferred_at
                .is_some_and(|at| now.saturating_duration_since(at) < DEMAND_MEMORY);
            let wanted = wanted || deferring;
            let cut = state.limits.learn(
                answer,
                sent,
                now.saturating_duration_since(sent),
                wanted,
                now,
            );
            if let Some(cut) = &cut {
                state.pushback = Some(cut.reason);
                if cut.pause.is_some() {
                    state.epoch += 1;
                    if let Some(until) = state.limits.paused_until(now) {
                        state.next_slot = until;
                    }
                }
            }
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

    fn pacer(rate: f64, in_flight: usize) -> (Pacer, Metrics) {
        let metrics = Metrics::new();
        let pacer = Pacer::new("cloud-a", Ceilings { rate, in_flight }, &metrics);
        (pacer, metrics)
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
        let pacer = Arc::new(pacer);
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
        let pacer = Arc::new(pacer);
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
    async fn accept_then_refuse(pacer: &Pacer, accepted: usize) {
        for _ in 0..accepted {
            pacer
                .run_once(None, async { Ok(()) }, classify)
                .await
                .unwrap();
        }
        let _ = pacer.run_once(None, async { Err(429) }, classify).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_paused_server_defers_reconciles_to_appointments_at_its_pace() {
        let (pacer, metrics) = pacer(100.0, 8);
        // Ten calls accepted, then a refusal: the rate is cut to 7/s and
        // every caller paused for 2 s.
        accept_then_refuse(&pacer, 10).await;
        assert!((pacer.rate() - 7.0).abs() < 1e-9, "{}", pacer.rate());
        let deferrals: Vec<Deferral> = (0..4).map(|_| pacer.admit().unwrap_err()).collect();
        // The first at the pause's end, the next one call (1/7 s) apart.
        let after: Vec<u128> = deferrals.iter().map(|d| d.after.as_millis()).collect();
        assert_eq!(after, [2_000, 2_142, 2_285, 2_428]);
        assert!(
            deferrals[0].message.contains("cloud-a, which answers 429"),
            "{}",
            deferrals[0].message
        );
        assert_eq!(metrics.total("provider_pacing_deferred_total"), 4.0);
        // At the pause's end, a reconcile is admitted with a ticket.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let ticket = pacer.admit().expect("admitted");
        let start = Instant::now();
        pacer
            .run_once(Some(ticket), async { Ok(()) }, classify)
            .await
            .unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn deferred_reconciles_count_as_demand_and_the_rate_grows_back() {
        let (pacer, _metrics) = pacer(100.0, 64);
        accept_then_refuse(&pacer, 5).await;
        assert!((pacer.rate() - 3.5).abs() < 1e-9, "{}", pacer.rate());
        // For ten seconds, reconciles are admitted or deferred, never
        // waiting in flight; the calls that go out find a free slot.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(12) {
            match pacer.admit() {
                Ok(ticket) => pacer
                    .run_once(Some(ticket), async { Ok(()) }, classify)
                    .await
                    .unwrap(),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        // +0.2/s a second for the ten seconds after the pause.
        assert!(pacer.rate() > 5.0, "{}", pacer.rate());
    }

    #[tokio::test(start_paused = true)]
    async fn a_healthy_server_admits_at_once() {
        let (pacer, metrics) = pacer(1_000.0, 64);
        for _ in 0..500 {
            let ticket = pacer.admit().expect("admitted");
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
