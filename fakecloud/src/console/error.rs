//! What a console request can fail with, answered as a small HTML page
//! (the console's users are people, not API clients: no problem+json).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, html};

use crate::error::ApiError;

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("reading the database failed")]
    Database(#[from] sqlx::Error),
    /// A failure of the API code the console calls (rendering a resource).
    #[error("{}", .0.detail)]
    Api(ApiError),
    #[error("no such page or resource")]
    NotFound,
    /// The browser says the request comes from another site (`csrf`).
    #[error("refused: the request comes from another site ({0})")]
    CrossSite(&'static str),
    #[error("refused: the form's token is missing or stale; reload the page and try again")]
    FormToken,
    #[error("the request's body could not be read")]
    Body,
    /// A script's request (fragment, event stream) without a session.
    #[error("signed out: log in again")]
    SignedOut,
}

impl From<ApiError> for ConsoleError {
    fn from(err: ApiError) -> Self {
        ConsoleError::Api(err)
    }
}

impl ConsoleError {
    fn status(&self) -> StatusCode {
        match self {
            ConsoleError::Database(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ConsoleError::Api(err) => err.status,
            ConsoleError::NotFound => StatusCode::NOT_FOUND,
            ConsoleError::CrossSite(_) | ConsoleError::FormToken => StatusCode::FORBIDDEN,
            ConsoleError::Body => StatusCode::BAD_REQUEST,
            ConsoleError::SignedOut => StatusCode::UNAUTHORIZED,
        }
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        match &self {
            ConsoleError::Database(err) => tracing::error!(%err, "console: reading the database"),
            ConsoleError::CrossSite(_) | ConsoleError::FormToken => {
                tracing::warn!(reason = %self, "console: refused a form");
            }
            _ => {}
        }
        let status = self.status();
        let page = html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (status.as_u16()) " · fakecloud console" }
                    link rel="stylesheet" href="/console/assets/console.css";
                }
                body {
                    main #main .narrow {
                        h1 { (status.canonical_reason().unwrap_or("Error")) }
                        p role="alert" { (self.to_string()) }
                        p { a href="/console" { "Back to the console" } }
                    }
                }
            }
        };
        (status, page).into_response()
    }
}
