//! What keeps the provider from pushing an overloaded API server further:
//! every request a reconcile makes through
//! [`KubeCluster`](super::KubeCluster) but an Event's create goes through
//! the API server's [`Pacer`], the same mechanism that paces each cloud
//! server ([`crate::pacing`]). This module says how the API
//! server's answers read as load: 429 (API Priority and Fairness) cuts the
//! rate and pauses every request for its `Retry-After`; a 5xx or no answer
//! cuts the requests in flight and pauses, 1 s doubling to 30 s while the
//! answers stay bad. The request that met the bad answer still fails (its
//! reconcile backs off, or, for a conflict-guarded write, re-reads); the
//! pause is what stops the others from piling on.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::pacing::{Answer, Pacer};

/// What paces the requests of a [`KubeCluster`](super::KubeCluster): the
/// API server's [`Pacer`], reading each answer as load. A 429 cuts the
/// rate and pauses every request for its `Retry-After`; a 5xx or no answer
/// cuts the requests in flight and pauses, 1 s doubling to 30 s while the
/// answers stay bad.
pub struct Guard {
    pacer: Arc<Pacer>,
}

/// What an API server's answer says about its load.
fn answer<T>(result: &Result<T, kube::Error>) -> Answer {
    let retry_after = |status: &kube::core::Status| {
        status
            .details
            .as_ref()
            .map(|d| d.retry_after_seconds)
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(s.into()))
    };
    match result {
        Err(kube::Error::Api(status)) if status.code == 429 => Answer::Throttled {
            retry_after: retry_after(status),
        },
        Err(kube::Error::Api(status)) if status.code >= 500 => Answer::Overloaded {
            retry_after: retry_after(status),
        },
        Err(kube::Error::HyperError(_) | kube::Error::Service(_)) => {
            Answer::Overloaded { retry_after: None }
        }
        _ => Answer::Good,
    }
}

impl Guard {
    /// Requests paced by `pacer`, the API server's.
    pub fn new(pacer: Arc<Pacer>) -> Self {
        Self { pacer }
    }

    /// Makes one request under the API server's limits.
    pub(crate) async fn run<T>(
        &self,
        request: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, kube::Error> {
        self.pacer.run_once(None, request, answer).await
    }
}

#[cfg(test)]
mod tests {
    use kube::core::Status;
    use kube::core::response::StatusDetails;
    use tokio::time::Instant;

    use super::*;
    use crate::metrics::Metrics;
    use crate::pacing::Ceilings;

    fn guard(in_flight: usize) -> (Guard, Metrics) {
        let metrics = Metrics::new();
        let ceilings = Ceilings {
            rate: 1_000.0,
            in_flight,
        };
        let pacer = Pacer::new(crate::pacing::KUBE_APISERVER, ceilings, &metrics);
        (Guard::new(Arc::new(pacer)), metrics)
    }

    fn refusal(code: u16, retry_after: u32) -> Result<(), kube::Error> {
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
    async fn a_429_pauses_every_later_request_for_retry_after_and_cuts_the_rate() {
        let (guard, metrics) = guard(4);
        let start = Instant::now();
        let _ = guard.run(async { refusal(429, 3) }).await;
        guard.run(async { Ok(()) }).await.unwrap();
        let waited = start.elapsed();
        assert!(waited >= Duration::from_secs(3), "{waited:?}");
        assert!(waited < Duration::from_millis(3_100), "{waited:?}");
        let rate = metrics.total_with("provider_pacing_rate", &[("server", "kube-apiserver")]);
        assert!(rate < 1_000.0, "{rate}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_5xx_pauses_doubling_and_halves_requests_in_flight() {
        let (guard, metrics) = guard(32);
        let mut pauses = Vec::new();
        for _ in 0..3 {
            let _ = guard.run(async { refusal(503, 0) }).await;
            let before = Instant::now();
            guard.run(async { refusal(503, 0) }).await.ok();
            pauses.push(before.elapsed().as_secs());
        }
        // Each wait is the pause the previous answer set: 1, then 4
        // (strike 3), then 16 (strike 5).
        assert_eq!(pauses, [1, 4, 16]);
        let limit = |m: &Metrics| {
            m.total_with(
                "provider_pacing_in_flight_limit",
                &[("server", "kube-apiserver")],
            )
        };
        assert!(limit(&metrics) < 32.0, "{}", limit(&metrics));
    }

    #[tokio::test(start_paused = true)]
    async fn a_user_error_pauses_nothing() {
        let (guard, _) = guard(4);
        let _ = guard.run(async { refusal(409, 0) }).await;
        let _ = guard.run(async { refusal(404, 0) }).await;
        let before = Instant::now();
        guard.run(async { Ok(()) }).await.unwrap();
        assert!(before.elapsed() < Duration::from_millis(10));
    }
}
