//! Completes due state transitions in the database.
//!
//! Readers already see due transitions as done (`Row::settled`); the ticker
//! makes it durable, sleeping until the next stored deadline or until a
//! write announces a new one. Deadlines live in the database, so after a
//! restart the first tick completes whatever came due while it was down.

use std::time::Duration;

use crate::clock::now_ms;
use crate::state::SharedState;
use crate::store;

/// Longest sleep when no deadline is pending; bounds the cost of a missed wake.
const IDLE: Duration = Duration::from_secs(5);

pub async fn run(state: SharedState) {
    loop {
        let wait = match tick(&state).await {
            Ok(Some(deadline)) => {
                Duration::from_millis(u64::try_from(deadline - now_ms()).unwrap_or(0)).min(IDLE)
            }
            Ok(None) => IDLE,
            Err(err) => {
                tracing::error!(%err, "completing transitions");
                Duration::from_secs(1)
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = state.ticker.notified() => {}
        }
    }
}

/// Checkpoints the WAL every second (see `Db::open`).
pub async fn checkpoint(state: SharedState) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    loop {
        every.tick().await;
        if let Err(err) = state.db.checkpoint().await {
            tracing::warn!(%err, "WAL checkpoint");
        }
    }
}

/// Settles what is due; returns the next deadline.
async fn tick(state: &SharedState) -> Result<Option<i64>, sqlx::Error> {
    let now = now_ms();
    if store::next_deadline(&state.db.read)
        .await?
        .is_some_and(|d| d <= now)
    {
        let mut tx = state.db.begin_write().await?;
        let settled = store::settle_due(&mut tx, now).await?;
        tx.commit().await?;
        tracing::debug!(settled, "transitions completed");
    }
    store::next_deadline(&state.db.read).await
}
