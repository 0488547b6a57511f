//! The `/admin` API for tests and demos: reset, inspect, change resources as
//! an outside actor, set timing, inject faults and throttling, read the audit
//! log, seed the id generator. Guarded by the admin token, never by account
//! keys. Snapshots and the recorder have modules of their own
//! (`snapshot::routes`, `recorder::routes`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::audit;
use crate::clock::now_ms;
use crate::error::ApiError;
use crate::kinds::database::DatabaseKind;
use crate::kinds::nodegroup::NodeGroupKind;
use crate::kinds::subnet::SubnetKind;
use crate::kinds::vpc::VpcKind;
use crate::kinds::{ResourceKind, validate};
use crate::layers::CallInfo;
use crate::model::{
    AccountThrottling, Actor, AdminResource, AuditEntry, AuditQuery, FaultRule, FaultRuleSpec,
    Kind, MAX_DELAY_MS, MAX_RETRY_AFTER_SECS, SeedSettings, SeedState, Throttling, Timing,
    TimingTable,
};
use crate::problem_responses::{BadRequest, Conflict, NotFound, PreconditionFailed};
use crate::query::ProblemQuery;
use crate::service;
use crate::state::SharedState;
use crate::store::{self, Location, Row};

type Result<T> = std::result::Result<T, ApiError>;

fn kind(name: &str) -> Result<Kind> {
    Kind::parse(name).ok_or_else(|| {
        ApiError::not_found(
            "UnknownKind",
            format!("kind {name:?} is not one of vpc, subnet, nodeGroup, databaseInstance"),
        )
    })
}

/// Renders a row of any kind as JSON (the admin API's views, and the
/// snapshot check that a loaded record is one a kind can read). Here
/// rather than in `kinds`: each kind uses the trait and helpers of `kinds`,
/// so `kinds` itself must not use the kinds.
pub fn render_value(kind: Kind, row: &Row) -> Result<serde_json::Value> {
    fn to_value<K: ResourceKind>(row: &Row) -> Result<serde_json::Value> {
        serde_json::to_value(K::render(row)?).map_err(|e| ApiError::internal("render", e))
    }
    match kind {
        Kind::Vpc => to_value::<VpcKind>(row),
        Kind::Subnet => to_value::<SubnetKind>(row),
        Kind::NodeGroup => to_value::<NodeGroupKind>(row),
        Kind::DatabaseInstance => to_value::<DatabaseKind>(row),
    }
}

fn admin_resource(kind: Kind, row: &Row) -> Result<AdminResource> {
    Ok(AdminResource {
        kind,
        account: row.account.clone(),
        region: row.region.clone(),
        cluster: (kind == Kind::NodeGroup).then(|| row.scope.clone()),
        id: row.name.clone(),
        etag: row.etag(),
        resource: render_value(kind, row)?,
    })
}

#[utoipa::path(post, path = "/admin/reset", tag = "admin",
    responses((status = 204, description = "Every resource, idempotency record and audit entry deleted; timing, faults and throttling back to start-up settings.")))]
pub async fn reset(State(state): State<SharedState>) -> Result<StatusCode> {
    state.audit.flush().await;
    store::reset(&state.db).await?;
    state.reset_settings();
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ResourceQuery {
    #[param(value_type = Option<Kind>)]
    kind: Option<String>,
    account: Option<String>,
}

#[utoipa::path(get, path = "/admin/resources", tag = "admin", params(ResourceQuery),
    responses(
        (status = 200, description = "Every resource of every account.", body = Vec<AdminResource>),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound)))]
pub async fn list_resources(
    State(state): State<SharedState>,
    ProblemQuery(query): ProblemQuery<ResourceQuery>,
) -> Result<Json<Vec<AdminResource>>> {
    let kind_filter = query.kind.as_deref().map(kind).transpose()?;
    let now = now_ms();
    let mut out = Vec::new();
    for row in store::list_all(&state.db.read, kind_filter).await? {
        if query.account.as_ref().is_some_and(|a| *a != row.account) {
            continue;
        }
        let Some(row) = row.settled(now) else {
            continue;
        };
        let Some(kind) = Kind::parse(&row.kind) else {
            continue;
        };
        out.push(admin_resource(kind, &row)?);
    }
    Ok(Json(out))
}

/// Narrows an admin address when a name exists in several places (node
/// groups and databases are named by their owners).
#[derive(Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AddressQuery {
    account: Option<String>,
    region: Option<String>,
    cluster: Option<String>,
}

async fn resolve(state: &SharedState, kind: Kind, id: &str, address: &AddressQuery) -> Result<Row> {
    let now = now_ms();
    let rows: Vec<Row> = store::find_any_account(&state.db.read, kind, id)
        .await?
        .into_iter()
        .filter(|r| address.account.as_ref().is_none_or(|a| *a == r.account))
        .filter(|r| address.region.as_ref().is_none_or(|a| *a == r.region))
        .filter(|r| address.cluster.as_ref().is_none_or(|a| *a == r.scope))
        .filter_map(|r| r.settled(now))
        .collect();
    match rows.len() {
        0 => Err(ApiError::not_found(
            "ResourceNotFound",
            format!("no {kind} named {id}"),
        )),
        1 => Ok(rows.into_iter().next().expect("one row")),
        n => Err(ApiError::conflict(
            "AmbiguousResource",
            format!("{n} {kind}s are named {id}; narrow with ?account=&region=&cluster="),
        )),
    }
}

#[utoipa::path(get, path = "/admin/resources/{kind}/{id}", tag = "admin",
    params(("kind" = Kind, Path), ("id" = String, Path), AddressQuery),
    responses(
        (status = 200, description = "The resource.", body = AdminResource),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub async fn get_resource(
    State(state): State<SharedState>,
    Path((kind_name, id)): Path<(String, String)>,
    ProblemQuery(address): ProblemQuery<AddressQuery>,
) -> Result<Json<AdminResource>> {
    let kind = kind(&kind_name)?;
    let row = resolve(&state, kind, &id, &address).await?;
    Ok(Json(admin_resource(kind, &row)?))
}

/// An outside actor's change (an autoscaler, another team's tags): the same
/// merge patch and rules as the owner's PATCH, recorded with actor `external`.
#[utoipa::path(patch, path = "/admin/resources/{kind}/{id}", tag = "admin",
    params(("kind" = Kind, Path), ("id" = String, Path), AddressQuery,
        ("If-Match" = Option<String>, Header, description = "ETags (or `*`) the change is conditional on.")),
    request_body(content = Object, description = "A merge patch, as the owner's `PATCH` of the kind takes."),
    responses(
        (status = 200, description = "The resource as its owner now sees it.", body = Object,
            headers(("ETag" = String, description = "Version of the resource's configuration."))),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 412, response = PreconditionFailed)))]
pub async fn patch_resource(
    State(state): State<SharedState>,
    Path((kind_name, id)): Path<(String, String)>,
    ProblemQuery(address): ProblemQuery<AddressQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let kind = kind(&kind_name)?;
    let row = resolve(&state, kind, &id, &address).await?;
    let loc = Location {
        account: row.account.clone(),
        kind,
        region: row.region.clone(),
        scope: row.scope.clone(),
    };
    let result = match kind {
        Kind::Vpc => service::patch::<VpcKind>(&state, loc, &id, &headers, &body).await,
        Kind::Subnet => service::patch::<SubnetKind>(&state, loc, &id, &headers, &body).await,
        Kind::NodeGroup => service::patch::<NodeGroupKind>(&state, loc, &id, &headers, &body).await,
        Kind::DatabaseInstance => {
            service::patch::<DatabaseKind>(&state, loc, &id, &headers, &body).await
        }
    };
    let mut response = result.unwrap_or_else(IntoResponse::into_response);
    response.extensions_mut().insert(CallInfo {
        account: Some(row.account),
        actor: Actor::External,
    });
    Ok(response)
}

#[utoipa::path(get, path = "/admin/timing", tag = "admin",
    responses((status = 200, description = "Provisioning delay of every kind.", body = TimingTable)))]
pub async fn get_timing(State(state): State<SharedState>) -> Json<TimingTable> {
    Json(state.timing_table())
}

#[utoipa::path(put, path = "/admin/timing/{kind}", tag = "admin", params(("kind" = Kind, Path)), request_body = Timing,
    responses(
        (status = 200, description = "Provisioning delay of every kind.", body = TimingTable),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound)))]
pub async fn set_timing(
    State(state): State<SharedState>,
    Path(kind_name): Path<String>,
    body: Bytes,
) -> Result<Json<TimingTable>> {
    let kind = kind(&kind_name)?;
    let timing: Timing = validate::parse_body(&body)?;
    if timing.delay_ms > MAX_DELAY_MS {
        return Err(ApiError::invalid(
            "delayMs",
            format!("must be at most {MAX_DELAY_MS} (one day)"),
        ));
    }
    state.set_delay(kind, timing.delay_ms);
    Ok(Json(state.timing_table()))
}

#[utoipa::path(get, path = "/admin/faults", tag = "admin",
    responses((status = 200, description = "The fault rules, oldest first.", body = Vec<FaultRule>)))]
pub async fn list_faults(State(state): State<SharedState>) -> Json<Vec<FaultRule>> {
    Json(state.faults.list())
}

#[utoipa::path(post, path = "/admin/faults", tag = "admin", request_body = FaultRuleSpec,
    responses(
        (status = 201, description = "The rule, in force at once.", body = FaultRule,
            links(("RemoveFault" = (operation_id = "remove_fault", parameters(("id" = "$response.body#/id")))))),
        (status = 400, response = BadRequest)))]
pub async fn add_fault(State(state): State<SharedState>, body: Bytes) -> Result<Response> {
    let spec: FaultRuleSpec = validate::parse_body(&body)?;
    check_fault_spec(&spec)?;
    Ok((StatusCode::CREATED, Json(state.faults.add(spec))).into_response())
}

/// Refuses a fault rule that could not work as one (also a loaded
/// snapshot's).
pub fn check_fault_spec(spec: &FaultRuleSpec) -> Result<()> {
    if let Some(status) = spec.status
        && !(400..=599).contains(&status)
    {
        return Err(ApiError::invalid(
            "status",
            "must be an error status, 400..=599",
        ));
    }
    if spec.probability.is_some_and(|p| !(0.0..=1.0).contains(&p)) {
        return Err(ApiError::invalid("probability", "must be within 0..=1"));
    }
    if spec.times == Some(0) {
        return Err(ApiError::invalid("times", "must be at least 1"));
    }
    if spec.latency_ms.is_some_and(|ms| ms > MAX_DELAY_MS) {
        return Err(ApiError::invalid(
            "latencyMs",
            format!("must be at most {MAX_DELAY_MS} (one day)"),
        ));
    }
    if spec
        .retry_after_secs
        .is_some_and(|s| s > MAX_RETRY_AFTER_SECS)
    {
        return Err(ApiError::invalid(
            "retryAfterSecs",
            format!("must be at most {MAX_RETRY_AFTER_SECS} (one day)"),
        ));
    }
    Ok(())
}

#[utoipa::path(delete, path = "/admin/faults", tag = "admin",
    responses((status = 204, description = "Every fault rule removed.")))]
pub async fn clear_faults(State(state): State<SharedState>) -> StatusCode {
    state.faults.clear();
    StatusCode::NO_CONTENT
}

#[utoipa::path(delete, path = "/admin/faults/{id}", tag = "admin", params(("id" = u64, Path)),
    responses(
        (status = 204, description = "The rule removed."),
        (status = 404, response = NotFound)))]
pub async fn remove_fault(
    State(state): State<SharedState>,
    Path(id): Path<String>,
) -> Result<StatusCode> {
    // Parsed here so an id that is not a number is, like any unknown id,
    // a problem+json 404 rather than axum's plain-text rejection.
    if id.parse().is_ok_and(|id| state.faults.remove(id)) {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(
            "FaultRuleNotFound",
            format!("no fault rule {id}"),
        ))
    }
}

#[utoipa::path(get, path = "/admin/throttling", tag = "admin",
    responses((status = 200, description = "The token bucket of every account without one of its own, or `null` when those calls are not throttled.", body = Option<Throttling>)))]
pub async fn get_throttling(State(state): State<SharedState>) -> Json<Option<Throttling>> {
    Json(state.throttle.get())
}

/// Parses a token bucket, refusing what could not work as one.
fn throttling_body(body: &[u8]) -> Result<Throttling> {
    let config: Throttling = validate::parse_body(body)?;
    check_throttling(&config)?;
    Ok(config)
}

/// Refuses a token bucket that could not work as one (also a loaded
/// snapshot's).
pub fn check_throttling(config: &Throttling) -> Result<()> {
    if !(config.rate_per_second.is_finite() && config.rate_per_second >= 0.0) {
        return Err(ApiError::invalid(
            "ratePerSecond",
            "must be a non-negative number",
        ));
    }
    if config.burst == 0 {
        return Err(ApiError::invalid(
            "burst",
            "must be at least 1: a bucket that holds no token lets no call through \
             (ratePerSecond 0 refuses every call)",
        ));
    }
    Ok(())
}

#[utoipa::path(put, path = "/admin/throttling", tag = "admin", request_body = Throttling,
    responses(
        (status = 200, description = "The token bucket, now in force for every account without one of its own; their buckets start full.", body = Throttling),
        (status = 400, response = BadRequest)))]
pub async fn set_throttling(
    State(state): State<SharedState>,
    body: Bytes,
) -> Result<Json<Throttling>> {
    let config = throttling_body(&body)?;
    state.throttle.set(Some(config));
    Ok(Json(config))
}

#[utoipa::path(delete, path = "/admin/throttling", tag = "admin",
    responses((status = 204, description = "Calls of accounts without a token bucket of their own no longer throttled.")))]
pub async fn clear_throttling(State(state): State<SharedState>) -> StatusCode {
    state.throttle.set(None);
    StatusCode::NO_CONTENT
}

/// The account an admin path names, if an API key names it. Accounts are
/// fixed at start (`--api-key KEY=ACCOUNT`), so a setting for any other
/// name could never apply: most likely a typo, which a test should hear of.
fn known_account(state: &SharedState, account: String) -> Result<String> {
    if state.api_keys.values().any(|known| *known == account) {
        Ok(account)
    } else {
        Err(ApiError::not_found(
            "UnknownAccount",
            format!("no API key is for account {account:?}"),
        ))
    }
}

#[utoipa::path(get, path = "/admin/throttling/accounts", tag = "admin",
    responses((status = 200, description = "The accounts with a token bucket of their own, by name.", body = Vec<AccountThrottling>)))]
pub async fn list_account_throttling(
    State(state): State<SharedState>,
) -> Json<Vec<AccountThrottling>> {
    Json(state.throttle.accounts())
}

#[utoipa::path(put, path = "/admin/throttling/accounts/{account}", tag = "admin",
    params(("account" = String, Path, description = "An account, as an API key names it (`--api-key KEY=ACCOUNT`).")),
    request_body = Throttling,
    responses(
        (status = 200, description = "The account's own token bucket, now in force instead of the default one, and full; other accounts' buckets are left as they are.", body = AccountThrottling),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound)))]
pub async fn set_account_throttling(
    State(state): State<SharedState>,
    Path(account): Path<String>,
    body: Bytes,
) -> Result<Json<AccountThrottling>> {
    let account = known_account(&state, account)?;
    let throttling = throttling_body(&body)?;
    state.throttle.set_account(&account, throttling);
    Ok(Json(AccountThrottling {
        account,
        throttling,
    }))
}

#[utoipa::path(delete, path = "/admin/throttling/accounts/{account}", tag = "admin",
    params(("account" = String, Path, description = "An account, as an API key names it (`--api-key KEY=ACCOUNT`).")),
    responses(
        (status = 204, description = "The account back on the default token bucket (`/admin/throttling`), with a full bucket; also when it had none of its own."),
        (status = 404, response = NotFound)))]
pub async fn clear_account_throttling(
    State(state): State<SharedState>,
    Path(account): Path<String>,
) -> Result<StatusCode> {
    let account = known_account(&state, account)?;
    state.throttle.clear_account(&account);
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/admin/audit", tag = "admin", params(AuditQuery),
    responses(
        (status = 200, description = "Matching calls, oldest first.", body = Vec<AuditEntry>),
        (status = 400, response = BadRequest)))]
pub async fn get_audit(
    State(state): State<SharedState>,
    ProblemQuery(filter): ProblemQuery<AuditQuery>,
) -> Result<Json<Vec<AuditEntry>>> {
    state.audit.flush().await;
    Ok(Json(audit::query(&state.db.read, &filter).await?))
}

#[utoipa::path(get, path = "/admin/seed", tag = "admin",
    responses((status = 200, description = "The id generator: its seed (`null`: random) and the ids and secrets drawn since seeding.", body = SeedState)))]
pub async fn get_seed(State(state): State<SharedState>) -> Json<SeedState> {
    Json(state.ids.state())
}

#[utoipa::path(put, path = "/admin/seed", tag = "admin", request_body = SeedSettings,
    responses(
        (status = 200, description = "Seeded: from now on, the same requests in the same order make the same resource ids, password salts and request ids.", body = SeedState),
        (status = 400, response = BadRequest)))]
pub async fn set_seed(State(state): State<SharedState>, body: Bytes) -> Result<Json<SeedState>> {
    let settings: SeedSettings = validate::parse_body(&body)?;
    state.ids.seed(settings.seed, settings.position);
    Ok(Json(state.ids.state()))
}

#[utoipa::path(delete, path = "/admin/seed", tag = "admin",
    responses((status = 204, description = "Ids and secrets are random again.")))]
pub async fn clear_seed(State(state): State<SharedState>) -> StatusCode {
    state.ids.unseed();
    StatusCode::NO_CONTENT
}
