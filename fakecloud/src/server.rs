//! Building the router and running the server, embeddable in-process.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use metrics_exposition::Format;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use utoipa::OpenApi;

use crate::audit::AuditLog;
use crate::db::Db;
use crate::error::{ApiError, Error};
use crate::ids::Ids;
use crate::model::LoadStrategy;
use crate::state::{AppState, SharedState};
use crate::{admin, api, console, layers, openapi, recorder, request_id, snapshot, ticker};

/// An API key and the account it acts for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKey {
    pub key: String,
    pub account: String,
}

impl ApiKey {
    pub fn new(key: impl Into<String>, account: impl Into<String>) -> ApiKey {
        ApiKey {
            key: key.into(),
            account: account.into(),
        }
    }

    /// Parses `KEY=ACCOUNT`.
    pub fn parse(spec: &str) -> Result<ApiKey, Error> {
        match spec.split_once('=') {
            Some((key, account)) if !key.is_empty() && !account.is_empty() => {
                Ok(ApiKey::new(key.trim(), account.trim()))
            }
            _ => Err(Error::ApiKeySpec(spec.to_string())),
        }
    }
}

/// Account of the key minted when none is configured.
pub const DEV_ACCOUNT: &str = "dev";

#[derive(Clone, Debug)]
pub struct Config {
    /// Address to bind; port 0 picks a free one.
    pub listen: SocketAddr,
    /// SQLite file path, or `:memory:`.
    pub database: String,
    /// Empty: one random key for account `dev` is minted.
    pub api_keys: Vec<ApiKey>,
    /// `None`: a random token is minted.
    pub admin_token: Option<String>,
    /// Provisioning delay of every kind until the admin API changes it.
    pub default_delay: Duration,
    /// Seeds the id generator from the start (`--seed`): the same requests
    /// then make the same ids and secrets. `None`: random.
    pub seed: Option<u64>,
    /// A snapshot file to load (`overwrite`) before serving (`--load`), so
    /// that a demo or a test begins from a known world.
    pub load: Option<PathBuf>,
}

impl Config {
    /// A server on a free loopback port over `database`, 2 s provisioning.
    pub fn new(database: impl Into<String>) -> Config {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            database: database.into(),
            api_keys: Vec::new(),
            admin_token: None,
            default_delay: Duration::from_secs(2),
            seed: None,
            load: None,
        }
    }
}

/// A started server. Dropping it without `shutdown` leaves the task running
/// until the runtime ends.
pub struct RunningServer {
    addr: SocketAddr,
    api_keys: Vec<ApiKey>,
    admin_token: String,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), Error>>,
}

impl RunningServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`, no trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The first configured key (the dev key when none was configured).
    pub fn api_key(&self) -> &str {
        &self.api_keys[0].key
    }

    /// The account of `api_key()`.
    pub fn account(&self) -> &str {
        &self.api_keys[0].account
    }

    pub fn api_keys(&self) -> &[ApiKey] {
        &self.api_keys
    }

    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// Stops accepting, finishes in-flight requests, flushes the audit log
    /// and closes the database.
    pub async fn shutdown(self) -> Result<(), Error> {
        let _ = self.stop.send(());
        match self.task.await {
            Ok(result) => result,
            Err(err) => Err(Error::Serve(std::io::Error::other(err))),
        }
    }
}

/// Opens the database, loads the snapshot given (if any), binds and serves
/// in a background task.
pub async fn spawn(config: Config) -> Result<RunningServer, Error> {
    let db = Db::open(&config.database).await?;
    // Minted keys come from the generator too: a seeded server's are the
    // same on every start, which a scripted demo can rely on.
    let ids = Ids::new(config.seed);
    let mut api_keys = config.api_keys.clone();
    if api_keys.is_empty() {
        api_keys.push(ApiKey::new(ids.token("fcdev_"), DEV_ACCOUNT));
    }
    let admin_token = config
        .admin_token
        .clone()
        .unwrap_or_else(|| ids.token("fcadmin_"));
    let key_map: HashMap<String, String> = api_keys
        .iter()
        .map(|k| (k.key.clone(), k.account.clone()))
        .collect();
    let (audit, audit_task) = AuditLog::start(db.clone());
    let default_delay_ms = u64::try_from(config.default_delay.as_millis()).unwrap_or(u64::MAX);
    let state: SharedState = Arc::new(AppState::new(
        db.clone(),
        key_map,
        admin_token.clone(),
        default_delay_ms,
        audit.clone(),
        ids,
    ));
    if let Some(path) = &config.load
        && let Err(error) = load_at_start(&state, path).await
    {
        audit_task.abort();
        db.close().await;
        return Err(error);
    }
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|error| Error::Bind {
            addr: config.listen,
            error,
        })?;
    let addr = listener.local_addr().map_err(|error| Error::Bind {
        addr: config.listen,
        error,
    })?;
    let ticker_task = tokio::spawn(ticker::run(state.clone()));
    let checkpoint_task = tokio::spawn(ticker::checkpoint(state.clone()));
    // Tells the console's event streams to end, so that they do not hold
    // the graceful shutdown open.
    let (closing, closing_rx) = watch::channel(false);
    let app = router(state, closing_rx);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        // The client's address: the console slows failed logins per client.
        let app = app.into_make_service_with_connect_info::<SocketAddr>();
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
                let _ = closing.send(true);
            })
            .await;
        ticker_task.abort();
        checkpoint_task.abort();
        audit.flush().await;
        audit_task.abort();
        db.close().await;
        served.map_err(Error::Serve)
    });
    tracing::info!(%addr, database = %config.database, "fakecloud listening");
    Ok(RunningServer {
        addr,
        api_keys,
        admin_token,
        stop,
        task,
    })
}

/// Loads the snapshot file at `path` over whatever the database holds.
async fn load_at_start(state: &AppState, path: &std::path::Path) -> Result<(), Error> {
    let shown = path.display().to_string();
    let file = std::fs::read(path).map_err(|error| Error::ReadSnapshot {
        path: shown.clone(),
        error,
    })?;
    let world = snapshot::read(&file).map_err(|error| Error::Snapshot {
        path: shown.clone(),
        error,
    })?;
    snapshot::apply(state, &world, LoadStrategy::Overwrite)
        .await
        .map_err(|error| Error::LoadSnapshot {
            path: shown.clone(),
            error,
        })?;
    tracing::info!(snapshot = %shown, resources = world.resources.len(), "snapshot loaded at start");
    Ok(())
}

pub fn router(state: SharedState, closing: watch::Receiver<bool>) -> Router {
    // The recorder inside authentication: it records the calls the service
    // serves, each with the account its key acts for.
    let v1 = api::routes()
        .route_layer(from_fn_with_state(
            state.clone(),
            recorder::middleware::record,
        ))
        .route_layer(from_fn_with_state(state.clone(), layers::api_auth));
    let admin = Router::new()
        .route("/admin/reset", post(admin::reset))
        .route("/admin/resources", get(admin::list_resources))
        .route(
            "/admin/resources/{kind}/{id}",
            get(admin::get_resource).patch(admin::patch_resource),
        )
        .route("/admin/timing", get(admin::get_timing))
        .route("/admin/timing/{kind}", put(admin::set_timing))
        .route(
            "/admin/faults",
            get(admin::list_faults)
                .post(admin::add_fault)
                .delete(admin::clear_faults),
        )
        .route(
            "/admin/faults/{id}",
            axum::routing::delete(admin::remove_fault),
        )
        .route(
            "/admin/throttling",
            get(admin::get_throttling)
                .put(admin::set_throttling)
                .delete(admin::clear_throttling),
        )
        .route(
            "/admin/throttling/accounts",
            get(admin::list_account_throttling),
        )
        .route(
            "/admin/throttling/accounts/{account}",
            put(admin::set_account_throttling).delete(admin::clear_account_throttling),
        )
        .route("/admin/audit", get(admin::get_audit))
        .route(
            "/admin/seed",
            get(admin::get_seed)
                .put(admin::set_seed)
                .delete(admin::clear_seed),
        )
        .route(
            "/admin/snapshots",
            get(snapshot::routes::list_snapshots).post(snapshot::routes::save_snapshot),
        )
        .route(
            "/admin/snapshots/{name}",
            get(snapshot::routes::get_snapshot)
                .put(snapshot::routes::put_snapshot)
                .delete(snapshot::routes::delete_snapshot),
        )
        .route(
            "/admin/snapshots/{name}/load",
            post(snapshot::routes::load_snapshot),
        )
        .route("/admin/recorder", get(recorder::routes::get_recording))
        .route(
            "/admin/recorder/start",
            post(recorder::routes::start_recorder),
        )
        .route(
            "/admin/recorder/stop",
            post(recorder::routes::stop_recorder),
        )
        .route_layer(from_fn_with_state(state.clone(), layers::admin_auth));
    Router::new()
        .merge(v1)
        .merge(admin)
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi_json))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(from_fn_with_state(state.clone(), layers::observe))
        .layer(from_fn_with_state(
            state.ids.clone(),
            request_id::from_generator,
        ))
        // After the layers: a console page is not an API call to audit.
        .merge(console::router(state.clone(), closing))
        .with_state(state)
}

async fn readyz(State(state): State<SharedState>) -> Response {
    match sqlx::query("SELECT 1").execute(&state.db.read).await {
        Ok(_) => "ready".into_response(),
        Err(err) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "NotReady", err.to_string())
            .into_response(),
    }
}

/// `/metrics` in the format the request's `Accept` header asks for:
/// OpenMetrics 1.0.0 to a client that names it (Prometheus), the text
/// format 0.0.4 to everything else (promtool, curl), as Go's promhttp does.
async fn metrics(State(state): State<SharedState>, headers: HeaderMap) -> Response {
    let format = Format::from_headers(&headers);
    match state.metrics.encode_as(format) {
        Ok(body) => (format.response_headers(), body).into_response(),
        Err(err) => {
            tracing::error!(%err, ?format, "encoding /metrics");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "MetricsEncoding",
                err.to_string(),
            )
            .into_response()
        }
    }
}

async fn openapi_json() -> Response {
    static DOC: OnceLock<String> = OnceLock::new();
    let doc = DOC.get_or_init(|| openapi::ApiDoc::openapi().to_json().unwrap_or_default());
    ([(header::CONTENT_TYPE, "application/json")], doc.clone()).into_response()
}

async fn not_found() -> ApiError {
    ApiError::not_found("NotFound", "no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        "method not allowed on this route",
    )
}
