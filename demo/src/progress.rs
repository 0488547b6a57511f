//! Progress lines: what the demo is doing, with the time since it started,
//! so a slow step is visibly slow rather than silently hanging.

use std::io::Write;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Progress {
    started: Instant,
}

impl Progress {
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
        }
    }

    /// A clock that started `ago`: `scripts/demo` passes the time its
    /// provisioning and build took, so the demo's lines continue its count.
    pub fn started_ago(ago: Duration) -> Self {
        let now = Instant::now();
        Self {
            started: now.checked_sub(ago).unwrap_or(now),
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// `[  5.1s] message` on stdout, flushed at once.
    pub fn step(&self, message: impl std::fmt::Display) {
        println!("[{:>6.1}s] {message}", self.elapsed().as_secs_f64());
        let _ = std::io::stdout().flush();
    }
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}
