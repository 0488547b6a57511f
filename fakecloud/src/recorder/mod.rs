//! The request recorder: while it runs, every `/v1` call the service
//! serves is kept (method, path and query, body with its secrets replaced,
//! idempotency key, `If-Match`, account, arrival time, status), and
//! `GET /admin/recorder` gives the recording as a file (`format`) that
//! `fakecloud replay` sends to a fakecloud again (`crate::replay`).
//!
//! It sits inside the authentication layer: a call it records has passed
//! authentication, throttling and fault injection, so a recording is what
//! changed the state, and replaying it onto a fakecloud without those
//! settings makes the same state. Calls refused before the service (no key,
//! throttled, an injected fault) are not recorded; with an `afterCall`
//! fault the call was served, and is.
//!
//! Recordings live in memory, one at a time: starting a new one discards
//! the last.

pub mod format;
pub mod middleware;
mod redact;
pub mod routes;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::clock::now_ms;
use crate::kinds::timestamp;
use crate::model::{RecorderStatus, SeedState};

use format::{RECORDING, RecordedCall, RecordingHeader};
use redact::Redactor;

/// The largest body a recorded call may have: axum's default body limit,
/// which the handlers apply anyway.
const MAX_BODY_BYTES: usize = 2 << 20;

#[derive(Default)]
pub struct Recorder {
    /// Whether a recording runs: the one thing a call checks when none does.
    active: AtomicBool,
    inner: Mutex<Sessions>,
}

#[derive(Default)]
struct Sessions {
    /// Counts recordings, so a call is kept only by the one it arrived in.
    generation: u64,
    current: Option<Session>,
}

struct Session {
    header: RecordingHeader,
    started: Instant,
    redactor: Redactor,
    calls: Vec<RecordedCall>,
    running: bool,
}

/// A call that arrived while a recording ran.
struct Ticket {
    generation: u64,
    arrived: Instant,
}

impl Recorder {
    /// Starts a recording from the generator's `seed` state; `None` when one
    /// runs already.
    pub fn start(&self, seed: SeedState) -> Option<RecorderStatus> {
        let mut inner = self.lock();
        if inner.current.as_ref().is_some_and(|s| s.running) {
            return None;
        }
        inner.generation += 1;
        inner.current = Some(Session {
            header: RecordingHeader {
                format: RECORDING.format.to_string(),
                format_version: RECORDING.version,
                fakecloud_version: crate::jsonl::FAKECLOUD_VERSION.to_string(),
                started_at_ms: now_ms(),
                seed,
            },
            started: Instant::now(),
            redactor: Redactor::new(),
            calls: Vec::new(),
            running: true,
        });
        self.active.store(true, Ordering::SeqCst);
        Some(status(&inner))
    }

    /// Stops the recording, keeping it for download.
    pub fn stop(&self) -> RecorderStatus {
        let mut inner = self.lock();
        if let Some(session) = &mut inner.current {
            session.running = false;
        }
        self.active.store(false, Ordering::SeqCst);
        status(&inner)
    }

    /// Whether a recording runs, since when and how many calls it holds
    /// (the last one's, once stopped).
    pub fn status(&self) -> RecorderStatus {
        status(&self.lock())
    }

    /// The current or last recording as a file.
    pub fn file(&self) -> Option<Vec<u8>> {
        let inner = self.lock();
        let session = inner.current.as_ref()?;
        Some(format::encode(&session.header, &session.calls))
    }

    fn ticket(&self) -> Option<Ticket> {
        if !self.active.load(Ordering::SeqCst) {
            return None;
        }
        Some(Ticket {
            generation: self.lock().generation,
            arrived: Instant::now(),
        })
    }

    /// Keeps a served call, in the recording it arrived in (also when that
    /// one stopped meanwhile: the call changed the state it recorded).
    fn keep(&self, ticket: Ticket, call: impl FnOnce(&Redactor, u64) -> RecordedCall) {
        let mut inner = self.lock();
        let generation = inner.generation;
        let Some(session) = inner
            .current
            .as_mut()
            .filter(|_| generation == ticket.generation)
        else {
            return;
        };
        let offset = ticket.arrived.saturating_duration_since(session.started);
        let offset_ms = u64::try_from(offset.as_millis()).unwrap_or(u64::MAX);
        let call = call(&session.redactor, offset_ms);
        session.calls.push(call);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn status(inner: &Sessions) -> RecorderStatus {
    match &inner.current {
        None => RecorderStatus {
            recording: false,
            started_at: None,
            requests: 0,
        },
        Some(session) => RecorderStatus {
            recording: session.running,
            started_at: Some(timestamp(session.header.started_at_ms)),
            requests: session.calls.len() as u64,
        },
    }
}
