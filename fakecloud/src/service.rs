//! The operations every kind shares: create (with idempotency keys), get,
//! list (pages, tag filters), merge-patch (with If-Match) and delete, each
//! one SQLite transaction so nothing is ever half-written.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::SqliteConnection;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn, ParameterStyle};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};

use crate::clock::now_ms;
use crate::error::ApiError;
use crate::kinds::{ResourceKind, database, validate};
use crate::model::{AuthenticateResult, Credentials, Page};
use crate::state::AppState;
use crate::store::{self, GONE, IdempotentResult, Location, Row, TagFilter};

pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
const DEFAULT_PAGE_SIZE: i64 = 100;
const MAX_PAGE_SIZE: i64 = 1000;

fn json_response(status: StatusCode, body: String, etag: &str, location: Option<&str>) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(value) = HeaderValue::from_str(etag) {
        headers.insert(header::ETAG, value);
    }
    if let Some(value) = location.and_then(|l| HeaderValue::from_str(l).ok()) {
        headers.insert(header::LOCATION, value);
    }
    response
}

fn render<K: ResourceKind>(row: &Row) -> Result<String, ApiError> {
    serde_json::to_string(&K::render(row)?).map_err(|e| ApiError::internal("render", e))
}

fn not_found<K: ResourceKind>(loc: &Location, name: &str) -> ApiError {
    ApiError::not_found(
        K::NOT_FOUND,
        format!("{} {name} does not exist in {}", K::KIND, loc.region),
    )
}

/// The row a PATCH or DELETE is about to change, inside its write
/// transaction: a due transition counts as done (writing the row back
/// stores it), and `If-Match`, when sent, must name its current ETag.
async fn find_to_change<K: ResourceKind>(
    conn: &mut SqliteConnection,
    loc: &Location,
    name: &str,
    headers: &HeaderMap,
    now: i64,
) -> Result<Row, ApiError> {
    let row = store::find(conn, loc, name)
        .await?
        .and_then(|r| r.settled(now))
        .ok_or_else(|| not_found::<K>(loc, name))?;
    check_if_match(headers, &row)?;
    Ok(row)
}

/// `If-Match`: a list of ETags or `*`; weak prefixes are ignored.
fn check_if_match(headers: &HeaderMap, row: &Row) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::IF_MATCH) else {
        return Ok(());
    };
    let value = value.to_str().unwrap_or_default();
    let current = row.etag();
    let matches = value.split(',').map(str::trim).any(|tag| {
        tag == "*" || tag.trim_start_matches("W/") == current || tag == current.trim_matches('"')
    });
    if matches {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            format!("If-Match {value} does not match the current ETag {current}"),
        ))
    }
}

pub async fn create<K: ResourceKind>(
    state: &AppState,
    loc: Location,
    path: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let key = headers
        .get(IDEMPOTENCY_KEY)
        .map(|v| {
            v.to_str()
                .ok()
                .filter(|k| {
                    (1..=255).contains(&k.len()) && k.bytes().all(|b| (b' '..=b'~').contains(&b))
                })
                .map(str::to_owned)
                .ok_or_else(|| {
                    ApiError::invalid("Idempotency-Key", "must be 1-255 visible ASCII characters")
                })
        })
        .transpose()?;
    let request_hash = {
        let mut hasher = Sha256::new();
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update(&body);
        hex::encode(hasher.finalize())
    };
    let now = now_ms();
    let mut tx = state.db.begin_write().await?;
    if let Some(key) = &key
        && let Some(previous) = store::find_idempotent(&mut tx, &loc.account, key).await?
    {
        if previous.request_hash != request_hash {
            return Err(ApiError::conflict(
                "IdempotentParameterMismatch",
                format!("Idempotency-Key {key:?} was used with a different request"),
            ));
        }
        let status = StatusCode::from_u16(previous.status as u16).unwrap_or(StatusCode::CREATED);
        let mut response = json_response(
            status,
            previous.body,
            &previous.etag,
            Some(&previous.location),
        );
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
        return Ok(response);
    }
    let prepared = K::prepare(&mut tx, &loc, &body, &state.ids).await?;
    if let Some(existing) = store::find(&mut *tx, &loc, &prepared.name).await? {
        if existing.clone().settled(now).is_some() {
            return Err(ApiError::conflict(
                K::ALREADY_EXISTS,
                format!("{} {} already exists", K::KIND, prepared.name),
            ));
        }
        // Its deletion came due and the ticker has not removed it yet.
        store::delete(&mut tx, existing.seq).await?;
    }
    let delay = state.delay_ms(K::KIND);
    let (initial, pending, at) = if delay == 0 {
        (K::STATES.ready, None, None)
    } else {
        (K::STATES.creating, Some(K::STATES.ready), Some(now + delay))
    };
    let spec = prepared.spec.to_string();
    let row = store::insert(
        &mut tx,
        store::NewRow {
            loc: &loc,
            name: &prepared.name,
            parent: &prepared.parent,
            spec: &spec,
            secret_hash: prepared.secret_hash.as_deref(),
            state: initial,
            pending_state: pending,
            transition_at: at,
            now,
        },
    )
    .await?;
    let body = render::<K>(&row)?;
    let location = format!("{path}/{}", row.name);
    if let Some(key) = &key {
        let result = IdempotentResult {
            request_hash,
            status: i64::from(StatusCode::CREATED.as_u16()),
            body: body.clone(),
            etag: row.etag(),
            location: location.clone(),
        };
        store::save_idempotent(&mut tx, &loc.account, key, &result, now).await?;
    }
    tx.commit().await?;
    if at.is_some() {
        state.ticker.notify_one();
    }
    Ok(json_response(
        StatusCode::CREATED,
        body,
        &row.etag(),
        Some(&location),
    ))
}

pub async fn get<K: ResourceKind>(
    state: &AppState,
    loc: Location,
    name: &str,
) -> Result<Response, ApiError> {
    let row = store::find(&state.db.read, &loc, name)
        .await?
        .and_then(|r| r.settled(now_ms()))
        .ok_or_else(|| not_found::<K>(&loc, name))?;
    Ok(json_response(
        StatusCode::OK,
        render::<K>(&row)?,
        &row.etag(),
        None,
    ))
}

/// The query `list` takes, for the OpenAPI document (`params(ListParams)`).
/// `list` reads the pairs itself, as `tag` repeats, which
/// `serde_urlencoded` cannot collect into a struct.
pub struct ListParams;

impl utoipa::IntoParams for ListParams {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let query = |name: &str, description: &str, schema: ObjectBuilder| {
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some(description))
                .schema(Some(schema))
        };
        vec![
            query(
                "pageSize",
                "Items per page (default 100).",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(1))
                    .maximum(Some(MAX_PAGE_SIZE)),
            )
            .build(),
            query(
                "pageToken",
                "`nextPageToken` of the previous page.",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(PAGE_TOKEN_PATTERN)),
            )
            .build(),
            ParameterBuilder::new()
                .name("tag")
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some(
                    "`key=value` (the tag has this value) or `key` (the tag exists); \
                     repeatable, every one must match.",
                ))
                .schema(Some(
                    ArrayBuilder::new().items(ObjectBuilder::new().schema_type(Type::String)),
                ))
                .style(Some(ParameterStyle::Form))
                .explode(Some(true))
                .build(),
        ]
    }
}

/// What `page_token` accepts.
const PAGE_TOKEN_PATTERN: &str = "^[1-9][0-9]{0,17}$";

/// A page token as `list` issues it: the `seq` of the page's last row, in
/// decimal without leading zeros, 18 digits at most (`PAGE_TOKEN_PATTERN`).
fn page_token(value: &str) -> Option<i64> {
    let canonical = (1..=18).contains(&value.len())
        && !value.starts_with('0')
        && value.bytes().all(|b| b.is_ascii_digit());
    canonical.then(|| value.parse().ok()).flatten()
}

/// List query: `pageSize`, `pageToken`, and `tag=key=value` / `tag=key`
/// (repeatable, all must match).
pub async fn list<K: ResourceKind>(
    state: &AppState,
    loc: Location,
    query: Vec<(String, String)>,
) -> Result<Response, ApiError> {
    let mut page_size = DEFAULT_PAGE_SIZE;
    let mut after = 0i64;
    let mut tags: Vec<TagFilter> = Vec::new();
    for (key, value) in query {
        match key.as_str() {
            "pageSize" => {
                page_size = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_PAGE_SIZE).contains(n))
                    .ok_or_else(|| {
                        ApiError::invalid("pageSize", format!("must be 1..={MAX_PAGE_SIZE}"))
                    })?;
            }
            "pageToken" => {
                after = page_token(&value)
                    .ok_or_else(|| ApiError::invalid("pageToken", "not a token this API issued"))?;
            }
            "tag" => tags.push(match value.split_once('=') {
                Some((k, v)) => (k.to_string(), Some(v.to_string())),
                None => (value, None),
            }),
            other => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "UnknownParameter",
                    format!("{other}: unknown query parameter (pageSize, pageToken, tag)"),
                )
                .with_field(other));
            }
        }
    }
    let mut rows = store::list(&state.db.read, &loc, after, page_size + 1, &tags).await?;
    let more = rows.len() as i64 > page_size;
    rows.truncate(page_size as usize);
    let next_page_token = more
        .then(|| rows.last().map(|r| r.seq.to_string()))
        .flatten();
    let now = now_ms();
    let items = rows
        .into_iter()
        .filter_map(|r| r.settled(now))
        .map(|r| K::render(&r))
        .collect::<Result<Vec<_>, _>>()?;
    let body = serde_json::to_string(&Page {
        items,
        next_page_token,
    })
    .map_err(|e| ApiError::internal("render", e))?;
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// Applies a JSON merge patch of mutable fields. Used by clients and, with
/// actor `external`, by the admin API's outside-actor changes.
pub async fn patch<K: ResourceKind>(
    state: &AppState,
    loc: Location,
    name: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let mut patch = validate::parse_object(body)?;
    if let Some(unknown) = patch.keys().find(|k| !K::FIELDS.contains(&k.as_str())) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "UnknownParameter",
            format!(
                "{unknown}: not a field of {} (settable: {})",
                K::KIND,
                K::FIELDS.join(", ")
            ),
        )
        .with_field(unknown.clone()));
    }
    let password = patch.remove("masterPassword");
    let now = now_ms();
    let mut tx = state.db.begin_write().await?;
    let mut row = find_to_change::<K>(&mut tx, &loc, name, headers, now).await?;
    if Some(row.state.as_str()) == K::STATES.deleting {
        return Err(ApiError::conflict(
            K::BUSY,
            format!("{} {name} is being deleted", K::KIND),
        ));
    }
    let old: Value = serde_json::from_str(&row.spec)
        .map_err(|e| ApiError::internal("decoding stored spec", e))?;
    let mut merged = old.clone();
    json_patch::merge(&mut merged, &Value::Object(patch));
    let revised = K::revise(&old, merged, password, &state.ids)?;
    for field in K::IMMUTABLE {
        if old.get(*field) != revised.spec.get(*field) {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "ImmutableParameter",
                format!("{field}: cannot be changed after creation"),
            )
            .with_field(*field));
        }
    }
    if revised.spec == old && revised.secret_hash.is_none() {
        // Nothing changes: no write, same ETag.
        tx.commit().await?;
        return Ok(json_response(
            StatusCode::OK,
            render::<K>(&row)?,
            &row.etag(),
            None,
        ));
    }
    row.spec = revised.spec.to_string();
    if let Some(hash) = revised.secret_hash {
        row.secret_hash = Some(hash);
    }
    row.version += 1;
    row.updated_at = now;
    let delay = state.delay_ms(K::KIND);
    let mut wake = false;
    if let (true, Some(updating), None) =
        (revised.reprovision, K::STATES.updating, &row.pending_state)
        && delay > 0
    {
        row.state = updating.to_string();
        row.pending_state = Some(K::STATES.ready.to_string());
        row.transition_at = Some(now + delay);
        wake = true;
    }
    let row = store::update(&mut tx, &row).await?;
    tx.commit().await?;
    if wake {
        state.ticker.notify_one();
    }
    Ok(json_response(
        StatusCode::OK,
        render::<K>(&row)?,
        &row.etag(),
        None,
    ))
}

/// Deletes at once (VPC, subnet: 204) or starts deleting (node group,
/// database: 202 with the resource in its deleting state).
pub async fn delete<K: ResourceKind>(
    state: &AppState,
    loc: Location,
    name: &str,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let now = now_ms();
    let mut tx = state.db.begin_write().await?;
    let mut row = find_to_change::<K>(&mut tx, &loc, name, headers, now).await?;
    let Some(deleting) = K::STATES.deleting else {
        K::check_delete(&mut tx, &row).await?;
        store::delete(&mut tx, row.seq).await?;
        tx.commit().await?;
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    if row.state != deleting {
        K::check_delete(&mut tx, &row).await?;
        let delay = state.delay_ms(K::KIND);
        row.state = deleting.to_string();
        row.updated_at = now;
        if delay == 0 {
            store::delete(&mut tx, row.seq).await?;
        } else {
            row.pending_state = Some(GONE.to_string());
            row.transition_at = Some(now + delay);
            row = store::update(&mut tx, &row).await?;
        }
        tx.commit().await?;
        state.ticker.notify_one();
    }
    Ok(json_response(
        StatusCode::ACCEPTED,
        render::<K>(&row)?,
        &row.etag(),
        None,
    ))
}

/// Checks master credentials of an available database instance.
pub async fn authenticate(
    state: &AppState,
    loc: Location,
    name: &str,
    body: &[u8],
) -> Result<Response, ApiError> {
    use database::DatabaseKind;
    let credentials: Credentials = validate::parse_body(body)?;
    let row = store::find(&state.db.read, &loc, name)
        .await?
        .and_then(|r| r.settled(now_ms()))
        .ok_or_else(|| not_found::<DatabaseKind>(&loc, name))?;
    if row.state != DatabaseKind::STATES.ready && row.state != "modifying" {
        return Err(ApiError::conflict(
            DatabaseKind::BUSY,
            format!("database instance {name} is {}, not available", row.state),
        ));
    }
    let instance = DatabaseKind::render(&row)?;
    let ok = instance.master_username == credentials.username
        && row
            .secret_hash
            .as_deref()
            .is_some_and(|h| database::password_matches(h, &credentials.password));
    if !ok {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "AuthenticationFailed",
            format!("wrong username or password for database instance {name}"),
        ));
    }
    let body = serde_json::to_string(&AuthenticateResult {
        authenticated: true,
    })
    .map_err(|e| ApiError::internal("render", e))?;
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(response)
}
