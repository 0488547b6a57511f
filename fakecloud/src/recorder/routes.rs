//! The `/admin/recorder` handlers.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use crate::error::ApiError;
use crate::model::RecorderStatus;
use crate::problem_responses::{Conflict, NotFound};
use crate::state::SharedState;

/// A recording file in an answer.
pub struct RecordingFile;

impl PartialSchema for RecordingFile {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some(
                "JSON lines: a header (format, version, the id generator's seed and position), \
                 then one recorded call per line.",
            ))
            .into()
    }
}

impl ToSchema for RecordingFile {}

#[utoipa::path(post, path = "/admin/recorder/start", tag = "admin",
    responses(
        (status = 200, description = "Recording: every `/v1` call served from now on is kept (secrets replaced). The last recording is discarded.", body = RecorderStatus),
        (status = 409, response = Conflict)))]
pub async fn start_recorder(
    State(state): State<SharedState>,
) -> Result<Json<RecorderStatus>, ApiError> {
    state
        .recorder
        .start(state.ids.state())
        .map(Json)
        .ok_or_else(|| {
            ApiError::conflict(
                "RecorderRunning",
                "a recording runs already; stop it (and download it) first",
            )
        })
}

#[utoipa::path(post, path = "/admin/recorder/stop", tag = "admin",
    responses((status = 200, description = "Not recording (also when it was not); the recording is kept for download.", body = RecorderStatus)))]
pub async fn stop_recorder(State(state): State<SharedState>) -> Json<RecorderStatus> {
    Json(state.recorder.stop())
}

#[utoipa::path(get, path = "/admin/recorder", tag = "admin",
    responses(
        (status = 200, description = "The current or last recording, for `fakecloud replay`.",
            body = RecordingFile, content_type = "application/x-ndjson"),
        (status = 404, response = NotFound)))]
pub async fn get_recording(State(state): State<SharedState>) -> Result<Response, ApiError> {
    let file = state
        .recorder
        .file()
        .ok_or_else(|| ApiError::not_found("NoRecording", "nothing was recorded yet"))?;
    let mut response = file.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    Ok(response)
}
