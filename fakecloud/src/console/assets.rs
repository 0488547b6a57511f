//! The console's one stylesheet and one script, compiled into the binary
//! (`include_str!`) so the console needs no files beside it.

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::IntoResponse;

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

/// Revalidated on each load: a new binary's assets are never stale.
const CACHING: &str = "no-cache";

pub async fn css() -> impl IntoResponse {
    (
        [
            (CONTENT_TYPE, "text/css; charset=utf-8"),
            (CACHE_CONTROL, CACHING),
        ],
        CSS,
    )
}

pub async fn js() -> impl IntoResponse {
    (
        [
            (CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (CACHE_CONTROL, CACHING),
        ],
        JS,
    )
}
