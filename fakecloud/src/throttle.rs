//! Throttling: a token bucket per account, switched on by the admin API.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::model::Throttling;

#[derive(Default)]
pub struct Throttle {
    inner: Mutex<Buckets>,
}

#[derive(Default)]
struct Buckets {
    config: Option<Throttling>,
    /// account -> (tokens, last refill)
    buckets: HashMap<String, (f64, Instant)>,
}

impl Throttle {
    pub fn set(&self, config: Option<Throttling>) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.config = config;
        inner.buckets.clear();
    }

    pub fn get(&self) -> Option<Throttling> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).config
    }

    /// Takes a token for `account`; `Err(seconds)` to wait when empty.
    pub fn take(&self, account: &str) -> Result<(), u64> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Some(config) = inner.config else {
            return Ok(());
        };
        let now = Instant::now();
        let burst = f64::from(config.burst.max(1));
        let (tokens, last) = inner
            .buckets
            .entry(account.to_string())
            .or_insert((burst, now));
        *tokens =
            (*tokens + now.duration_since(*last).as_secs_f64() * config.rate_per_second).min(burst);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else if config.rate_per_second > 0.0 {
            Err(((1.0 - *tokens) / config.rate_per_second).ceil().max(1.0) as u64)
        } else {
            Err(60)
        }
    }
}
