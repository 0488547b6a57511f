//! What keeps the provider from pushing an overloaded API server further.
//!
//! Every request a reconcile makes through [`KubeCluster`](super::KubeCluster)
//! passes here: at most `--kube-max-in-flight` at once, at most
//! `--kube-qps` a second (with one second of burst), and when the API server
//! answers that it is overloaded (429, any 5xx) or does not answer at all,
//! every request of this process waits: for the server's `Retry-After` when
//! it gives one, otherwise 1 s doubling to 30 s while the answers stay bad.
//! The first good answer ends the doubling. The request that met the bad
//! answer still fails, so its reconcile backs off too; the pause is what
//! stops the others from piling on.

use std::future::Future;
use std::time::Duration;

use tokio::sync::{Mutex, Semaphore};
use tokio::time::Instant;

use crate::rate_limit::RateLimiter;

/// The pause after the first bad answer without a `Retry-After`.
const FIRST_PAUSE: Duration = Duration::from_secs(1);
/// The longest pause.
const MAX_PAUSE: Duration = Duration::from_secs(30);

pub struct Guard {
    in_flight: Semaphore,
    rate: RateLimiter,
    pause: Mutex<Pause>,
}

#[derive(Default)]
struct Pause {
    until: Option<Instant>,
    /// Bad answers in a row.
    strikes: u32,
}

/// How long the API server asked to wait, or `None` when the answer says
/// nothing about its load.
fn overload(error: &kube::Error) -> Option<Option<Duration>> {
    match error {
        kube::Error::Api(status) if status.code == 429 || status.code >= 500 => Some(
            status
                .details
                .as_ref()
                .map(|d| d.retry_after_seconds)
                .filter(|s| *s > 0)
                .map(|s| Duration::from_secs(s.into())),
        ),
        kube::Error::HyperError(_) | kube::Error::Service(_) => Some(None),
        _ => None,
    }
}

impl Guard {
    pub fn new(max_in_flight: usize, per_second: u32) -> Self {
        Self {
            in_flight: Semaphore::new(max_in_flight.max(1)),
            rate: RateLimiter::new(per_second),
            pause: Mutex::new(Pause::default()),
        }
    }

    /// Makes one request under the limits.
    pub async fn run<T>(
        &self,
        request: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, kube::Error> {
        let until = self.pause.lock().await.until;
        if let Some(until) = until {
            tokio::time::sleep_until(until).await;
        }
        self.rate.acquire().await;
        let _permit = self
            .in_flight
            .acquire()
            .await
            .expect("the in-flight semaphore is never closed");
        let result = request.await;
        self.learn(&result).await;
        result
    }

    async fn learn<T>(&self, result: &Result<T, kube::Error>) {
        let mut pause = self.pause.lock().await;
        match result.as_ref().err().and_then(overload) {
            None if result.is_ok() => pause.strikes = 0,
            None => {}
            Some(asked) => {
                let backoff = FIRST_PAUSE
                    .saturating_mul(1 << pause.strikes.min(5))
                    .min(MAX_PAUSE);
                let wait = asked.unwrap_or(backoff).min(MAX_PAUSE);
                pause.strikes += 1;
                let until = Instant::now() + wait;
                if pause.until.is_none_or(|u| u < until) {
                    tracing::warn!(
                        ?wait,
                        strikes = pause.strikes,
                        "API server overloaded; pausing requests"
                    );
                    pause.until = Some(until);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::core::Status;
    use kube::core::response::StatusDetails;

    use super::*;

    fn answer(code: u16, retry_after: u32) -> Result<(), kube::Error> {
        let mut status = Status::failure("busy", "TooManyRequests").with_code(code);
        if retry_after > 0 {
            status = status.with_details(StatusDetails {
                name: String::new(),
                group: String::new(),
                kind: String::new(),
                uid: String::new(),
                causes: Vec::new(),
                retry_after_seconds: retry_after,
            });
        }
        Err(kube::Error::Api(status.boxed()))
    }

    #[tokio::test(start_paused = true)]
    async fn an_overloaded_answer_pauses_every_later_request_for_retry_after() {
        let guard = Guard::new(4, 1_000);
        let start = Instant::now();
        let _ = guard.run(async { answer(429, 3) }).await;
        guard.run(async { Ok(()) }).await.unwrap();
        let waited = start.elapsed();
        assert!(waited >= Duration::from_secs(3), "{waited:?}");
        assert!(waited < Duration::from_millis(3_100), "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn bad_answers_in_a_row_double_the_pause_and_a_good_one_resets_it() {
        let guard = Guard::new(4, 1_000);
        let mut pauses = Vec::new();
        for _ in 0..3 {
            let _ = guard.run(async { answer(503, 0) }).await;
            let before = Instant::now();
            guard.run(async { answer(503, 0) }).await.ok();
            pauses.push(before.elapsed());
        }
        // Strike 1 pauses 1 s, 2 pauses 2 s, ... each wait is the previous
        // answer's pause.
        assert_eq!(
            pauses.iter().map(|p| p.as_secs()).collect::<Vec<_>>(),
            [1, 4, 16]
        );
        // A good answer ends the doubling: the next bad one pauses 1 s.
        let before = Instant::now();
        guard.run(async { Ok(()) }).await.unwrap();
        assert!(before.elapsed() >= Duration::from_secs(30));
        let _ = guard.run(async { answer(500, 0) }).await;
        let before = Instant::now();
        guard.run(async { Ok(()) }).await.unwrap();
        assert_eq!(before.elapsed().as_secs(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_user_error_pauses_nothing() {
        let guard = Guard::new(4, 1_000);
        let _ = guard.run(async { answer(409, 0) }).await;
        let _ = guard.run(async { answer(404, 0) }).await;
        let before = Instant::now();
        guard.run(async { Ok(()) }).await.unwrap();
        assert!(before.elapsed() < Duration::from_millis(10));
    }

    #[tokio::test(start_paused = true)]
    async fn no_more_than_the_limit_are_in_flight() {
        let guard = std::sync::Arc::new(Guard::new(2, 1_000));
        let running = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let most = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..6)
            .map(|_| {
                let (guard, running, most) = (guard.clone(), running.clone(), most.clone());
                tokio::spawn(async move {
                    guard
                        .run(async {
                            use std::sync::atomic::Ordering::SeqCst;
                            let now = running.fetch_add(1, SeqCst) + 1;
                            most.fetch_max(now, SeqCst);
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            running.fetch_sub(1, SeqCst);
                            Ok::<_, kube::Error>(())
                        })
                        .await
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        assert_eq!(most.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
