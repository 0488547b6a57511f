//! The `/admin/snapshots` handlers.

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use crate::error::ApiError;
use crate::kinds::validate;
use crate::layers::Unaudited;
use crate::model::{LoadResult, LoadSnapshot, Problem, SaveSnapshot, SnapshotInfo};
use crate::problem_responses::{BadRequest, Conflict, NotFound};
use crate::state::SharedState;

use super::catalog;
use super::format::{self, SnapshotError};
use super::{apply, capture, read};

type Result<T> = std::result::Result<T, ApiError>;

/// Largest file an upload takes (a million resources is about 150 MB).
pub const MAX_UPLOAD_BYTES: usize = 256 << 20;

/// A snapshot file in a request or answer: gzip'd JSON lines (see the
/// README), or the same lines uncompressed.
pub struct SnapshotFile;

impl PartialSchema for SnapshotFile {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .description(Some(
                "A snapshot file: gzip'd JSON lines, a header line then one record per line.",
            ))
            .into()
    }
}

impl ToSchema for SnapshotFile {}

/// A file the snapshot routes cannot take: `400` with a code per fault.
impl From<SnapshotError> for ApiError {
    fn from(error: SnapshotError) -> ApiError {
        let code = match error {
            SnapshotError::NotThisFormat { .. } => "NotASnapshot",
            SnapshotError::NewerFormat { .. } => "UnsupportedSnapshotVersion",
            SnapshotError::Corrupt { .. } => "CorruptSnapshot",
        };
        ApiError::new(StatusCode::BAD_REQUEST, code, error.to_string())
    }
}

/// Runs the CPU-bound work of a file (encoding, decoding) off the async
/// workers, so the API keeps answering beside a save or a load.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::internal("snapshot worker", e))
}

#[utoipa::path(post, path = "/admin/snapshots", tag = "admin", request_body = SaveSnapshot,
    responses(
        (status = 201, description = "The whole state, saved under the name: every account's resources (transitions under way with their time left), idempotency records and audit, timing, faults and throttling. Consistent as of one instant; the API keeps serving meanwhile.",
            body = SnapshotInfo,
            headers(("Location" = String, description = "Where to download the file.")),
            links(
                ("GetSnapshot" = (operation_id = "get_snapshot", parameters(("name" = "$response.body#/name")))),
                ("DeleteSnapshot" = (operation_id = "delete_snapshot", parameters(("name" = "$response.body#/name")))),
            )),
        (status = 400, response = BadRequest),
        (status = 409, response = Conflict)))]
// No link to the load: a load replaces the state, so what a scenario made
// before it (a fault rule, a resource) may be gone after it, which stateful
// testing (scripts/schemathesis) would take for a lost resource.
pub async fn save_snapshot(State(state): State<SharedState>, body: Bytes) -> Result<Response> {
    let SaveSnapshot { name } = validate::parse_body(&body)?;
    catalog::check_name(&name)?;
    // Before the work of a save, not only at its end.
    if catalog::exists(&state.db.read, &name).await? {
        return Err(catalog::already_exists(&name));
    }
    let (header, file) = capture(&state).await?;
    let stored = catalog::store(&state.db, &name, &header, &file, false).await?;
    Ok(created(stored.info))
}

fn created(info: SnapshotInfo) -> Response {
    let location = format!("/admin/snapshots/{}", info.name);
    (
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(info),
    )
        .into_response()
}

#[utoipa::path(get, path = "/admin/snapshots", tag = "admin",
    responses((status = 200, description = "Every stored snapshot, by name.", body = Vec<SnapshotInfo>)))]
pub async fn list_snapshots(State(state): State<SharedState>) -> Result<Json<Vec<SnapshotInfo>>> {
    Ok(Json(catalog::list(&state.db.read).await?))
}

#[utoipa::path(get, path = "/admin/snapshots/{name}", tag = "admin",
    params(("name" = String, Path, description = "The snapshot's name.")),
    responses(
        (status = 200, description = "The file, as saved or uploaded: portable to any fakecloud that reads its format version.",
            content(
                (SnapshotFile = "application/gzip"),
                (SnapshotFile = "application/x-ndjson"),
            ),
            headers(("Content-Disposition" = String, description = "`attachment` with a file name."))),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound)))]
pub async fn get_snapshot(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Response> {
    catalog::check_name(&name)?;
    let file = catalog::file(&state.db.read, &name)
        .await?
        .ok_or_else(|| catalog::not_found(&name))?;
    // Uploads may be uncompressed; each is served as it came.
    let (content_type, extension) = if file.starts_with(&format::GZIP_MAGIC) {
        ("application/gzip", "jsonl.gz")
    } else {
        ("application/x-ndjson", "jsonl")
    };
    let disposition = format!("attachment; filename=\"{name}.{extension}\"");
    let mut response = file.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

#[utoipa::path(put, path = "/admin/snapshots/{name}", tag = "admin",
    params(("name" = String, Path, description = "The name to store the file under.")),
    request_body(content = SnapshotFile, content_type = "application/octet-stream",
        description = "A snapshot file (any content type), at most 256 MiB. Checked whole before it is stored."),
    responses(
        (status = 201, description = "Stored under a new name.", body = SnapshotInfo,
            headers(("Location" = String, description = "Where to download the file."))),
        (status = 200, description = "Stored, replacing the snapshot of that name.", body = SnapshotInfo),
        (status = 400, response = BadRequest),
        (status = 413, description = "The file is larger than 256 MiB (`SnapshotTooLarge`).",
            body = Problem, content_type = "application/problem+json")))]
pub async fn put_snapshot(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    body: Body,
) -> Result<Response> {
    catalog::check_name(&name)?;
    let file = axum::body::to_bytes(body, MAX_UPLOAD_BYTES)
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "SnapshotTooLarge",
                format!("a snapshot file may be at most {MAX_UPLOAD_BYTES} bytes"),
            )
        })?;
    let (header, file) = blocking(move || read(&file).map(|world| (world.header, file))).await??;
    let stored = catalog::store(&state.db, &name, &header, &file, true).await?;
    Ok(if stored.replaced {
        Json(stored.info).into_response()
    } else {
        created(stored.info)
    })
}

#[utoipa::path(post, path = "/admin/snapshots/{name}/load", tag = "admin",
    params(("name" = String, Path, description = "The snapshot to load.")),
    request_body = LoadSnapshot,
    responses(
        (status = 200, description = "Loaded, all at once: `overwrite` replaced the whole state, `merge` the file's accounts. Transitions under way restart with their time left. Not audited: the audit is now the file's.", body = LoadResult),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub async fn load_snapshot(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response> {
    catalog::check_name(&name)?;
    let LoadSnapshot { strategy } = validate::parse_body(&body)?;
    let _loading = state.snapshots.loading.try_lock().map_err(|_| {
        ApiError::conflict(
            "LoadInProgress",
            "another load is under way; load again once it has finished",
        )
    })?;
    let file = catalog::file(&state.db.read, &name)
        .await?
        .ok_or_else(|| catalog::not_found(&name))?;
    let world = blocking(move || read(&file)).await??;
    apply(&state, &world, strategy).await?;
    tracing::info!(snapshot = %name, ?strategy, "snapshot loaded");
    let result = LoadResult {
        name,
        strategy,
        accounts: world.header.accounts.clone(),
        resources: world.header.counts.resources,
    };
    blocking(move || drop(world)).await?;
    let mut response = Json(result).into_response();
    response.extensions_mut().insert(Unaudited);
    Ok(response)
}

#[utoipa::path(delete, path = "/admin/snapshots/{name}", tag = "admin",
    params(("name" = String, Path, description = "The snapshot to delete.")),
    responses(
        (status = 204, description = "Deleted; the state is untouched."),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound)))]
pub async fn delete_snapshot(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<StatusCode> {
    catalog::check_name(&name)?;
    if catalog::delete(&state.db, &name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(catalog::not_found(&name))
    }
}
