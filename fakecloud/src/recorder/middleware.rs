//! The recorder's middleware: what sees each `/v1` call on its way in and
//! out. Apart from the recorder itself (`super`), which the shared state
//! holds, so that the state does not depend on the service and layers this
//! reads.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::layers::Account;
use crate::service::IDEMPOTENCY_KEY;
use crate::state::SharedState;

use super::MAX_BODY_BYTES;
use super::format::RecordedCall;
use super::redact::RecordedBody;

/// Records `/v1` calls while a recording runs (inside `api_auth`, which
/// names the account); otherwise only passes them on.
pub async fn record(State(state): State<SharedState>, request: Request, next: Next) -> Response {
    let Some(ticket) = state.recorder.ticket() else {
        return next.run(request).await;
    };
    let Some(Account(account)) = request.extensions().get::<Account>().cloned() else {
        return next.run(request).await;
    };
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "RequestTooLarge",
            format!("the body is larger than {MAX_BODY_BYTES} bytes, or could not be read"),
        )
        .into_response();
    };
    let header_value = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let idempotency_key = header_value(IDEMPOTENCY_KEY);
    let if_match = header_value(header::IF_MATCH.as_str());
    let method = parts.method.to_string();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().map(str::to_string);
    let response = next
        .run(Request::from_parts(parts, Body::from(body.clone())))
        .await;
    let status = response.status().as_u16();
    state.recorder.keep(ticket, |redactor, offset_ms| {
        let (body, malformed_body) = match redactor.body(&body) {
            RecordedBody::Empty => (None, false),
            RecordedBody::Json(text) => (Some(text), false),
            RecordedBody::Malformed => (None, true),
        };
        RecordedCall {
            offset_ms,
            account,
            method,
            path,
            query,
            idempotency_key,
            if_match,
            body,
            malformed_body,
            status,
        }
    });
    response
}
