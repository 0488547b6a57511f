//! Errors: `ApiError` is what a handler answers (rendered as
//! `application/problem+json`); `Error` is what starting the server can fail with.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::model::Problem;
use crate::request_id;

/// Failure to start or run the server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("opening database {path}: {error}")]
    OpenDatabase { path: String, error: sqlx::Error },
    #[error("migrating database {path}: {error}")]
    Migrate {
        path: String,
        error: sqlx::migrate::MigrateError,
    },
    #[error("binding {addr}: {error}")]
    Bind {
        addr: std::net::SocketAddr,
        error: std::io::Error,
    },
    #[error("creating database folder {path}: {error}")]
    CreateDir { path: String, error: std::io::Error },
    #[error("invalid API key spec {0:?}: expected KEY=ACCOUNT")]
    ApiKeySpec(String),
    #[error("serving HTTP: {0}")]
    Serve(std::io::Error),
    #[error("reading snapshot {path}: {error}")]
    ReadSnapshot { path: String, error: std::io::Error },
    #[error("loading snapshot {path}: {error}")]
    Snapshot {
        path: String,
        error: crate::jsonl::FileError,
    },
    #[error("writing snapshot {path} into the database: {error}")]
    LoadSnapshot { path: String, error: sqlx::Error },
}

/// An error answered to a client, with a stable `code`.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: String,
    pub detail: String,
    pub field: Option<String>,
    /// Seconds for a `Retry-After` header (throttling, injected faults).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: impl Into<String>, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            code: code.into(),
            detail: detail.into(),
            field: None,
            retry_after: None,
        }
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// 400 `InvalidParameterValue` naming the field.
    pub fn invalid(field: &str, detail: impl Into<String>) -> Self {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "InvalidParameterValue",
            format!("{field}: {}", detail.into()),
        )
        .with_field(field)
    }

    pub fn not_found(code: &str, detail: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, code, detail)
    }

    pub fn conflict(code: &str, detail: impl Into<String>) -> Self {
        ApiError::new(StatusCode::CONFLICT, code, detail)
    }

    pub fn unauthorized(detail: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized", detail)
    }

    /// A storage failure: logged with its cause, answered as a plain 500.
    pub fn internal(context: &str, err: impl std::fmt::Display) -> Self {
        tracing::error!(%err, "{context}");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            format!("{context} failed"),
        )
    }

    pub fn to_problem(&self) -> Problem {
        Problem {
            type_: format!("urn:fakecloud:problem:{}", self.code),
            title: self
                .status
                .canonical_reason()
                .unwrap_or("Error")
                .to_string(),
            status: self.status.as_u16(),
            detail: self.detail.clone(),
            code: self.code.clone(),
            request_id: request_id::current(),
            field: self.field.clone(),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        ApiError::internal("database", err)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.to_problem()).unwrap_or_default();
        let mut response = (self.status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}
