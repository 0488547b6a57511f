//! Request ids: every response carries `x-request-id`, and problem bodies
//! repeat it. The id lives in a task-local so an error built deep inside a
//! handler can name it without threading it through every call.

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

use std::sync::Arc;

use crate::ids::Ids;

pub const HEADER: &str = "x-request-id";

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The id of the request being served, or empty outside a request.
pub fn current() -> String {
    REQUEST_ID.try_with(Clone::clone).unwrap_or_default()
}

/// Keeps a caller-supplied id when it is a sane token, otherwise mints a
/// random one (the console's pages).
pub async fn middleware(request: Request, next: Next) -> Response {
    let id = callers(&request).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    serve(id, request, next).await
}

/// Like [`middleware`], minting from the id generator, so that a seeded
/// server's request ids are reproducible too (the API and admin routes).
pub async fn from_generator(State(ids): State<Arc<Ids>>, request: Request, next: Next) -> Response {
    let id = callers(&request).unwrap_or_else(|| ids.request_id());
    serve(id, request, next).await
}

/// The caller's own id, when it is a sane token.
fn callers(request: &Request) -> Option<String> {
    request
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= 128
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
        })
        .map(str::to_owned)
}

/// Serves `request` with `id` as its id, in the header both ways.
async fn serve(id: String, mut request: Request, next: Next) -> Response {
    if let Ok(value) = HeaderValue::from_str(&id) {
        request.headers_mut().insert(HEADER, value);
    }
    let mut response = REQUEST_ID.scope(id.clone(), next.run(request)).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, value);
    }
    response
}
