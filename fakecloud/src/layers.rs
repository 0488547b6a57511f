//! Middleware: authentication, throttling, fault injection, and the
//! observation (audit log and metrics) of every call.

use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::audit::{self, Entry};
use crate::clock::now_ms;
use crate::error::ApiError;
use crate::metrics::{RequestLabels, RouteLabels};
use crate::model::Actor;
use crate::request_id;
use crate::state::SharedState;

/// The account a request acts for, set by `api_auth`.
#[derive(Clone, Debug)]
pub struct Account(pub String);

/// Who a call was made by, attached to the response for the audit log.
#[derive(Clone, Debug)]
pub struct CallInfo {
    pub account: Option<String>,
    pub actor: Actor,
}

/// Marks an answer whose call the audit does not record: a snapshot load,
/// which replaces the history the audit tells (as a restart onto another
/// database would), so that the audit after it is the file's.
#[derive(Clone, Copy, Debug)]
pub struct Unaudited;

/// Paths probed by orchestrators; recording them would drown the log.
const UNAUDITED: [&str; 4] = ["/healthz", "/readyz", "/metrics", "/openapi.json"];

fn bearer(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

fn with_info(mut response: Response, info: CallInfo) -> Response {
    if response.extensions().get::<CallInfo>().is_none() {
        response.extensions_mut().insert(info);
    }
    response
}

/// `/v1`: bearer API key -> account, then throttling, then fault rules.
pub async fn api_auth(
    State(state): State<SharedState>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(account) = bearer(&request)
        .and_then(|key| state.api_keys.get(key))
        .cloned()
    else {
        let error =
            ApiError::unauthorized("missing or unknown API key (Authorization: Bearer <key>)");
        return with_info(
            error.into_response(),
            CallInfo {
                account: None,
                actor: Actor::Anonymous,
            },
        );
    };
    let info = CallInfo {
        account: Some(account.clone()),
        actor: Actor::Api,
    };
    if let Err(retry_after) = state.throttle.take(&account) {
        let mut error = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "Throttling",
            format!("rate exceeded for account {account}"),
        );
        error.retry_after = Some(retry_after);
        return with_info(error.into_response(), info);
    }
    let method = request.method().as_str().to_string();
    let path = request.uri().path().to_string();
    request.extensions_mut().insert(Account(account));
    let Some(firing) = state.faults.check(&method, &path) else {
        return with_info(next.run(request).await, info);
    };
    if firing.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(firing.latency_ms)).await;
    }
    let Some((status, code, retry_after)) = firing.error else {
        return with_info(next.run(request).await, info);
    };
    if firing.after_call {
        // The call takes effect; only its answer is lost.
        let _served = next.run(request).await;
    }
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut error = ApiError::new(status, code, format!("injected fault on {method} {path}"));
    error.retry_after = retry_after;
    with_info(error.into_response(), info)
}

/// `/admin`: the admin bearer token.
pub async fn admin_auth(
    State(state): State<SharedState>,
    request: Request,
    next: Next,
) -> Response {
    if bearer(&request) != Some(state.admin_token.as_str()) {
        return with_info(
            ApiError::unauthorized("missing or wrong admin token").into_response(),
            CallInfo {
                account: None,
                actor: Actor::Anonymous,
            },
        );
    }
    with_info(
        next.run(request).await,
        CallInfo {
            account: None,
            actor: Actor::Admin,
        },
    )
}

/// Records every call in the audit log and the metrics.
pub async fn observe(State(state): State<SharedState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_string();
    let path = request.uri().path().to_string();
    let audited = !UNAUDITED.contains(&path.as_str());
    // Read before the call: the handler takes the request, headers and all.
    let user_agent = audited
        .then(|| audit::user_agent(request.headers()))
        .flatten();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |m| m.as_str())
        .to_string();
    let response = next.run(request).await;
    let status = response.status().as_u16();
    state
        .metrics
        .latency
        .get_or_create(&RouteLabels {
            method: method.clone(),
            route: route.clone(),
        })
        .observe(started.elapsed().as_secs_f64());
    state
        .metrics
        .requests
        .get_or_create(&RequestLabels {
            method: method.clone(),
            route,
            status,
        })
        .inc();
    if audited && response.extensions().get::<Unaudited>().is_none() {
        let info = response
            .extensions()
            .get::<CallInfo>()
            .cloned()
            .unwrap_or(CallInfo {
                account: None,
                actor: Actor::Anonymous,
            });
        state.audit.record(Entry {
            time: now_ms(),
            account: info.account,
            actor: info.actor,
            method,
            path,
            status,
            request_id: request_id::current(),
            user_agent,
        });
    }
    response
}
