//! `fakecloud replay`: sends a recording's calls (`GET /admin/recorder`) to
//! a fakecloud again, in order, at the recorded pace or as fast as the
//! target answers, and reports every call answered with another status
//! than the recorded one.
//!
//! With the recording's seed, replaying onto an empty fakecloud gives the
//! same resources with the same ids: the admin token, when given, sets the
//! target's id generator to where the recorded one was when the recording
//! started (`PUT /admin/seed` with its seed and position). Calls replay one
//! at a time, so the ids come out alike when the recorded calls did not
//! overlap; calls that did overlap drew their ids in the order the server
//! happened to serve them, which a replay cannot know.
//!
//! A recording names accounts, never keys. The replay is given the
//! target's keys as the server itself takes them (`--api-key KEY=ACCOUNT`,
//! `FAKECLOUD_API_KEYS`), so one environment can start a target and replay
//! onto it; every recorded account needs a key, checked before any call.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use reqwest::Method;

use crate::jsonl::FileError;
use crate::model::{SeedSettings, SeedState};
use crate::recorder::format::{self, MALFORMED_BODY, RecordedCall};
use crate::server::ApiKey;
use crate::service::IDEMPOTENCY_KEY;

/// Where and how to replay.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// Base URL of the target, e.g. `http://127.0.0.1:8787`.
    pub target: String,
    /// The target's key of each recorded account.
    pub api_keys: Vec<ApiKey>,
    /// The target's admin token, to set its id generator.
    pub admin_token: Option<String>,
    /// Send each call once the last is answered, not at its recorded time.
    pub as_fast_as_possible: bool,
}

/// What a replay did.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplaySummary {
    pub calls: usize,
    pub elapsed: Duration,
    /// The id generator the target was set to, if it was.
    pub seeded: Option<SeedState>,
    /// The calls answered otherwise than recorded, in order.
    pub diverged: Vec<Divergence>,
}

/// A call answered with another status than the recorded one.
#[derive(Clone, Debug, PartialEq)]
pub struct Divergence {
    /// Its place in the recording, from 0.
    pub index: usize,
    pub method: String,
    pub path: String,
    pub recorded: u16,
    pub answered: u16,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Recording(#[from] FileError),
    #[error("no API key for the recorded account(s) {0:?}: pass --api-key KEY=ACCOUNT")]
    NoKey(Vec<String>),
    #[error("call {index} of the recording, {method} {path}, has a method HTTP does not take")]
    Method {
        index: usize,
        method: String,
        path: String,
    },
    #[error("building the HTTP client: {0}")]
    Client(reqwest::Error),
    #[error("setting the target's id generator (PUT /admin/seed): {0}")]
    Seed(String),
    #[error("call {index} of the recording, {method} {path}: {error}")]
    Send {
        index: usize,
        method: String,
        path: String,
        error: reqwest::Error,
    },
}

/// Replays the recording `file` as `options` say.
pub async fn replay(file: &[u8], options: &ReplayOptions) -> Result<ReplaySummary, ReplayError> {
    let recording = format::decode(file)?;
    let keys: HashMap<&str, &str> = options
        .api_keys
        .iter()
        .map(|k| (k.account.as_str(), k.key.as_str()))
        .collect();
    let missing: BTreeSet<&str> = recording
        .calls
        .iter()
        .map(|call| call.account.as_str())
        .filter(|account| !keys.contains_key(account))
        .collect();
    if !missing.is_empty() {
        return Err(ReplayError::NoKey(
            missing.into_iter().map(str::to_string).collect(),
        ));
    }
    let target = options.target.trim_end_matches('/');
    let http = reqwest::Client::builder()
        .user_agent(concat!("fakecloud-replay/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(ReplayError::Client)?;
    let seeded = match (&options.admin_token, recording.header.seed.seed) {
        (Some(token), Some(seed)) => {
            let settings = SeedSettings {
                seed,
                position: recording.header.seed.position,
            };
            Some(set_seed(&http, target, token, &settings).await?)
        }
        _ => None,
    };
    let started = Instant::now();
    let mut diverged = Vec::new();
    for (index, call) in recording.calls.iter().enumerate() {
        if !options.as_fast_as_possible {
            tokio::time::sleep_until((started + Duration::from_millis(call.offset_ms)).into())
                .await;
        }
        let answered = send(&http, target, keys[call.account.as_str()], index, call).await?;
        if answered != call.status {
            diverged.push(Divergence {
                index,
                method: call.method.clone(),
                path: call.path.clone(),
                recorded: call.status,
                answered,
            });
        }
    }
    Ok(ReplaySummary {
        calls: recording.calls.len(),
        elapsed: started.elapsed(),
        seeded,
        diverged,
    })
}

async fn set_seed(
    http: &reqwest::Client,
    target: &str,
    token: &str,
    settings: &SeedSettings,
) -> Result<SeedState, ReplayError> {
    let failed = |e: reqwest::Error| ReplayError::Seed(e.to_string());
    let response = http
        .put(format!("{target}/admin/seed"))
        .bearer_auth(token)
        .json(settings)
        .send()
        .await
        .map_err(failed)?;
    let status = response.status();
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        return Err(ReplayError::Seed(format!("{status}: {body}")));
    }
    response.json().await.map_err(failed)
}

/// Sends one recorded call; the status it is answered with.
async fn send(
    http: &reqwest::Client,
    target: &str,
    key: &str,
    index: usize,
    call: &RecordedCall,
) -> Result<u16, ReplayError> {
    let method = Method::from_bytes(call.method.as_bytes()).map_err(|_| ReplayError::Method {
        index,
        method: call.method.clone(),
        path: call.path.clone(),
    })?;
    let mut url = format!("{target}{}", call.path);
    if let Some(query) = &call.query {
        url.push('?');
        url.push_str(query);
    }
    let mut request = http.request(method, url).bearer_auth(key);
    if let Some(idempotency_key) = &call.idempotency_key {
        request = request.header(IDEMPOTENCY_KEY, idempotency_key);
    }
    if let Some(if_match) = &call.if_match {
        request = request.header(reqwest::header::IF_MATCH, if_match);
    }
    let body = match (&call.body, call.malformed_body) {
        (Some(body), _) => Some(body.clone()),
        (None, true) => Some(MALFORMED_BODY.to_string()),
        (None, false) => None,
    };
    if let Some(body) = body {
        request = request
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
    }
    let response = request.send().await.map_err(|error| ReplayError::Send {
        index,
        method: call.method.clone(),
        path: call.path.clone(),
        error,
    })?;
    let status = response.status().as_u16();
    // Read to the end, so the connection serves the next call.
    let _ = response.bytes().await;
    Ok(status)
}
