//! Typed HTTP client for fakecloud (feature `client`).
//!
//! `Client` speaks the `/v1` API with an account's key: one method per
//! operation, typed errors carrying the problem `code`, retries with backoff
//! on 429/5xx that honour `Retry-After`, and an idempotency key on every
//! create so a retried create never makes a second resource. `AdminClient`
//! speaks `/admin` with the admin token.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::model::{
    AdminResource, AuditEntry, AuditQuery, CreateDatabaseInstance, CreateNodeGroup, CreateSubnet,
    CreateVpc, Credentials, DatabaseInstance, FaultRule, FaultRuleSpec, Kind, LoadResult,
    LoadSnapshot, LoadStrategy, NodeGroup, Page, Problem, RecorderStatus, SaveSnapshot,
    SeedSettings, SeedState, SnapshotInfo, Subnet, Throttling, Timing, TimingTable, Vpc,
};

/// Longest `Retry-After` the client will sleep for; a longer one is capped
/// so a misbehaving server cannot park a caller for minutes.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with a problem document.
    #[error("{0}")]
    Api(Box<ApiFailure>),
    #[error("{method} {path}: {error}")]
    Transport {
        method: String,
        path: String,
        error: reqwest::Error,
    },
    #[error("{method} {path}: decoding the {status} response: {message}")]
    Decode {
        method: String,
        path: String,
        status: u16,
        message: String,
    },
}

/// A problem answered by the server, with the call it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiFailure {
    pub method: String,
    pub path: String,
    pub status: u16,
    pub code: String,
    pub detail: String,
    pub field: Option<String>,
    pub request_id: String,
    pub retry_after: Option<Duration>,
}

impl std::fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {} {}: {} (request {})",
            self.method, self.path, self.status, self.code, self.detail, self.request_id
        )
    }
}

impl ClientError {
    /// The problem `code` (`InvalidVpcID.NotFound`, ...), for API errors.
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Api(failure) => Some(&failure.code),
            _ => None,
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api(failure) => Some(failure.status),
            ClientError::Decode { status, .. } => Some(*status),
            ClientError::Transport { error, .. } => error.status().map(|s| s.as_u16()),
        }
    }

    pub fn request_id(&self) -> Option<&str> {
        match self {
            ClientError::Api(failure) => Some(&failure.request_id),
            _ => None,
        }
    }

    /// The request field the server blamed, for 400s.
    pub fn field(&self) -> Option<&str> {
        match self {
            ClientError::Api(failure) => failure.field.as_deref(),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    pub fn is_precondition_failed(&self) -> bool {
        self.status() == Some(412)
    }

    /// Throttling, server errors and connection failures: worth a retry.
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Api(failure) => failure.status == 429 || failure.status >= 500,
            ClientError::Transport { error, .. } => error.is_connect() || error.is_timeout(),
            ClientError::Decode { .. } => false,
        }
    }

    /// How long the server asked callers to wait (`Retry-After`).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ClientError::Api(failure) => failure.retry_after,
            _ => None,
        }
    }

    /// No answer came: the connection failed, broke or timed out.
    pub fn is_unanswered(&self) -> bool {
        matches!(self, ClientError::Transport { .. })
    }
}

pub type Result<T> = std::result::Result<T, ClientError>;

/// How the client retries retryable failures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 disables retrying.
    pub max_retries: usize,
    pub min_delay: Duration,
    pub max_delay: Duration,
}

impl RetryPolicy {
    pub fn none() -> RetryPolicy {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }
}

impl Default for RetryPolicy {
    /// 4 retries, 100 ms doubling up to 5 s (with jitter).
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 4,
            min_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
        }
    }
}

/// A resource with the ETag to send back as `If-Match`.
#[derive(Clone, Debug, PartialEq)]
pub struct Versioned<T> {
    pub resource: T,
    pub etag: String,
}

/// List paging and tag filters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListOptions {
    pub page_size: Option<u32>,
    pub page_token: Option<String>,
    /// `(key, Some(value))` must equal; `(key, None)` must exist.
    pub tags: Vec<(String, Option<String>)>,
}

impl ListOptions {
    fn query(&self) -> Vec<(String, String)> {
        let mut query = Vec::new();
        if let Some(size) = self.page_size {
            query.push(("pageSize".to_string(), size.to_string()));
        }
        if let Some(token) = &self.page_token {
            query.push(("pageToken".to_string(), token.clone()));
        }
        for (key, value) in &self.tags {
            let filter = match value {
                Some(value) => format!("{key}={value}"),
                None => key.clone(),
            };
            query.push(("tag".to_string(), filter));
        }
        query
    }
}

/// One HTTP exchange's result.
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

/// What both clients share: base URL, bearer token, retry policy.
#[derive(Clone, Debug)]
struct Transport {
    http: reqwest::Client,
    base: String,
    token: String,
    retry: RetryPolicy,
}

struct Call {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    /// The body and its content type.
    body: Option<(Vec<u8>, &'static str)>,
    headers: Vec<(HeaderName, String)>,
}

impl Call {
    fn new(method: Method, path: String) -> Self {
        Call {
            method,
            path,
            query: Vec::new(),
            body: None,
            headers: Vec::new(),
        }
    }

    /// A body that is not JSON (a snapshot file).
    fn bytes(mut self, body: Vec<u8>, content_type: &'static str) -> Self {
        self.body = Some((body, content_type));
        self
    }

    fn json(mut self, body: &impl Serialize) -> Result<Self> {
        let encoded = serde_json::to_vec(body).map_err(|e| ClientError::Decode {
            method: self.method.to_string(),
            path: self.path.clone(),
            status: 0,
            message: format!("encoding the request: {e}"),
        })?;
        self.body = Some((encoded, "application/json"));
        Ok(self)
    }

    fn header(mut self, name: &'static str, value: Option<&str>) -> Self {
        if let Some(value) = value {
            self.headers
                .push((HeaderName::from_static(name), value.to_string()));
        }
        self
    }

    fn query(mut self, query: Vec<(String, String)>) -> Self {
        self.query = query;
        self
    }
}

impl Transport {
    fn new(base_url: String, token: String, retry: RetryPolicy) -> Transport {
        Transport {
            http: reqwest::Client::new(),
            base: base_url.trim_end_matches('/').to_string(),
            token,
            retry,
        }
    }

    async fn attempt(&self, call: &Call) -> Result<Reply> {
        let mut request = self
            .http
            .request(call.method.clone(), format!("{}{}", self.base, call.path))
            .bearer_auth(&self.token);
        if !call.query.is_empty() {
            request = request.query(&call.query);
        }
        for (name, value) in &call.headers {
            if let Ok(value) = HeaderValue::from_str(value) {
                request = request.header(name.clone(), value);
            }
        }
        if let Some((body, content_type)) = &call.body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, *content_type)
                .body(body.clone());
        }
        let transport = |error| ClientError::Transport {
            method: call.method.to_string(),
            path: call.path.clone(),
            error,
        };
        let response = request.send().await.map_err(transport)?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(transport)?.to_vec();
        if status.is_success() {
            return Ok(Reply {
                status,
                headers,
                body,
            });
        }
        let retry_after = headers
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
            .map(Duration::from_secs);
        let problem: Option<Problem> = serde_json::from_slice(&body).ok();
        let request_id = headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        Err(ClientError::Api(Box::new(match problem {
            Some(p) => ApiFailure {
                method: call.method.to_string(),
                path: call.path.clone(),
                status: status.as_u16(),
                code: p.code,
                detail: p.detail,
                field: p.field,
                request_id: if p.request_id.is_empty() {
                    request_id
                } else {
                    p.request_id
                },
                retry_after,
            },
            None => ApiFailure {
                method: call.method.to_string(),
                path: call.path.clone(),
                status: status.as_u16(),
                code: "Unknown".to_string(),
                detail: String::from_utf8_lossy(&body).chars().take(200).collect(),
                field: None,
                request_id,
                retry_after,
            },
        })))
    }

    async fn send(&self, call: Call) -> Result<Reply> {
        if self.retry.max_retries == 0 {
            return self.attempt(&call).await;
        }
        let backoff = ExponentialBuilder::default()
            .with_min_delay(self.retry.min_delay)
            .with_max_delay(self.retry.max_delay)
            .with_max_times(self.retry.max_retries)
            .with_jitter();
        (|| self.attempt(&call))
            .retry(backoff)
            .when(ClientError::is_retryable)
            .adjust(|err, delay| {
                // Out of attempts stays out; otherwise the server's word wins.
                delay.map(|d| err.retry_after().map_or(d, |r| r.min(MAX_RETRY_AFTER)))
            })
            .notify(|err, delay| tracing::debug!(%err, ?delay, "retrying fakecloud call"))
            .await
    }

    fn decode<T: DeserializeOwned>(&self, call_path: &str, reply: &Reply) -> Result<T> {
        serde_json::from_slice(&reply.body).map_err(|e| ClientError::Decode {
            method: String::new(),
            path: call_path.to_string(),
            status: reply.status.as_u16(),
            message: e.to_string(),
        })
    }

    async fn json<T: DeserializeOwned>(&self, call: Call) -> Result<T> {
        let path = call.path.clone();
        let reply = self.send(call).await?;
        self.decode(&path, &reply)
    }

    async fn versioned<T: DeserializeOwned>(&self, call: Call) -> Result<Versioned<T>> {
        let path = call.path.clone();
        let reply = self.send(call).await?;
        let etag = reply
            .headers
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        Ok(Versioned {
            resource: self.decode(&path, &reply)?,
            etag,
        })
    }
}

/// Percent-encodes one path segment (names are validated server-side, but
/// a caller's typo must not turn into another path).
fn segment(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Client of the `/v1` API for one account.
#[derive(Clone, Debug)]
pub struct Client {
    transport: Transport,
}

impl Client {
    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> Client {
        Client {
            transport: Transport::new(base_url.into(), api_key.into(), RetryPolicy::default()),
        }
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Client {
        self.transport.retry = retry;
        self
    }

    /// Uses a caller-built reqwest client (timeouts, pools).
    pub fn with_http_client(mut self, http: reqwest::Client) -> Client {
        self.transport.http = http;
        self
    }

    async fn create<T: DeserializeOwned>(
        &self,
        path: String,
        body: &impl Serialize,
        idempotency_key: Option<&str>,
    ) -> Result<Versioned<T>> {
        // Without a caller key, one per logical call still makes retries safe.
        let generated = uuid::Uuid::new_v4().to_string();
        let key = idempotency_key.unwrap_or(&generated);
        let call = Call::new(Method::POST, path)
            .json(body)?
            .header("idempotency-key", Some(key));
        self.transport.versioned(call).await
    }

    async fn get<T: DeserializeOwned>(&self, path: String) -> Result<Versioned<T>> {
        self.transport.versioned(Call::new(Method::GET, path)).await
    }

    async fn list<T: DeserializeOwned>(
        &self,
        path: String,
        options: &ListOptions,
    ) -> Result<Page<T>> {
        self.transport
            .json(Call::new(Method::GET, path).query(options.query()))
            .await
    }

    async fn patch<T: DeserializeOwned>(
        &self,
        path: String,
        patch: &impl Serialize,
        if_match: Option<&str>,
    ) -> Result<Versioned<T>> {
        let call = Call::new(Method::PATCH, path)
            .json(patch)?
            .header("if-match", if_match);
        self.transport.versioned(call).await
    }

    async fn delete(&self, path: String) -> Result<()> {
        self.transport
            .send(Call::new(Method::DELETE, path))
            .await
            .map(|_| ())
    }

    /// `Ok(true)` when the credentials are the instance's master
    /// credentials, `Ok(false)` when the server answers 401.
    pub async fn authenticate_database_instance(
        &self,
        region: &str,
        identifier: &str,
        credentials: &Credentials,
    ) -> Result<bool> {
        let collection = collection(Kind::DatabaseInstance, region, None);
        let path = format!("{}/authenticate", item(collection, identifier));
        match self
            .transport
            .send(Call::new(Method::POST, path).json(credentials)?)
            .await
        {
            Ok(_) => Ok(true),
            Err(err) if err.status() == Some(401) => Ok(false),
            Err(err) => Err(err),
        }
    }
}

/// Path of a kind's collection: `/v1/regions/{region}/{collection}`, or
/// below `/clusters/{cluster}` for the kinds that live in a cluster.
fn collection(kind: Kind, region: &str, cluster: Option<&str>) -> String {
    debug_assert_eq!(kind.in_cluster(), cluster.is_some(), "{kind}");
    let mut path = format!("/v1/regions/{}", segment(region));
    if let Some(cluster) = cluster {
        path.push_str(&format!("/clusters/{}", segment(cluster)));
    }
    format!("{path}/{}", kind.collection())
}

/// Path of one resource in `collection`.
fn item(collection: String, key: &str) -> String {
    format!("{collection}/{}", segment(key))
}

/// `Some` of the cluster argument for kinds that have one, else `None`.
macro_rules! cluster {
    () => {
        None
    };
    ($cluster:ident) => {
        Some($cluster)
    };
}

/// Writes one kind's methods over the generic ones above: every kind's
/// calls are the same code and differ only in the kind, its model type
/// (named like the kind), its create body and whether it lives in a cluster.
macro_rules! kind_methods {
    (
        $kind:ident created from $create_body:ident, at ($region:ident $(, $cluster:ident)?),
        key $key:ident: $create:ident, $get:ident, $list:ident, $patch:ident, $delete:ident
    ) => {
        impl Client {
            #[doc = concat!("One page of the `", stringify!($kind), "`s of a collection, with tag filters.")]
            pub async fn $list(
                &self,
                $region: &str,
                $($cluster: &str,)?
                options: &ListOptions,
            ) -> Result<Page<$kind>> {
                self.list(collection(Kind::$kind, $region, cluster!($($cluster)?)), options)
                    .await
            }

            #[doc = concat!("`POST`s a new `", stringify!($kind), "`.")]
            pub async fn $create(
                &self,
                $region: &str,
                $($cluster: &str,)?
                body: &$create_body,
                idempotency_key: Option<&str>,
            ) -> Result<Versioned<$kind>> {
                let path = collection(Kind::$kind, $region, cluster!($($cluster)?));
                self.create(path, body, idempotency_key).await
            }

            pub async fn $get(
                &self,
                $region: &str,
                $($cluster: &str,)?
                $key: &str,
            ) -> Result<Versioned<$kind>> {
                let collection = collection(Kind::$kind, $region, cluster!($($cluster)?));
                self.get(item(collection, $key)).await
            }

            #[doc = concat!("`patch`: a `", stringify!($kind), "Patch` or any JSON merge patch.")]
            pub async fn $patch(
                &self,
                $region: &str,
                $($cluster: &str,)?
                $key: &str,
                patch: &impl Serialize,
                if_match: Option<&str>,
            ) -> Result<Versioned<$kind>> {
                let collection = collection(Kind::$kind, $region, cluster!($($cluster)?));
                self.patch(item(collection, $key), patch, if_match).await
            }

            /// Deletes the resource, or for kinds with a deleting state
            /// starts deleting it: it shows that state until it is gone.
            pub async fn $delete(
                &self,
                $region: &str,
                $($cluster: &str,)?
                $key: &str,
            ) -> Result<()> {
                let collection = collection(Kind::$kind, $region, cluster!($($cluster)?));
                self.delete(item(collection, $key)).await
            }
        }
    };
}

kind_methods!(Vpc created from CreateVpc, at (region),
    key id: create_vpc, get_vpc, list_vpcs, patch_vpc, delete_vpc);
kind_methods!(Subnet created from CreateSubnet, at (region),
    key id: create_subnet, get_subnet, list_subnets, patch_subnet, delete_subnet);
kind_methods!(NodeGroup created from CreateNodeGroup, at (region, cluster),
    key name: create_node_group, get_node_group, list_node_groups, patch_node_group,
    delete_node_group);
kind_methods!(DatabaseInstance created from CreateDatabaseInstance, at (region),
    key identifier: create_database_instance, get_database_instance,
    list_database_instances, patch_database_instance, delete_database_instance);

/// Narrows an admin address when a name exists in several accounts,
/// regions or clusters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Address {
    pub account: Option<String>,
    pub region: Option<String>,
    pub cluster: Option<String>,
}

impl Address {
    fn query(&self) -> Vec<(String, String)> {
        [
            ("account", &self.account),
            ("region", &self.region),
            ("cluster", &self.cluster),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k.to_string(), v.clone())))
        .collect()
    }
}

/// Path of snapshot `name`.
fn snapshot_path(name: &str) -> String {
    format!("/admin/snapshots/{}", segment(name))
}

/// Client of the `/admin` API. Never retries: tests want to see each call.
#[derive(Clone, Debug)]
pub struct AdminClient {
    transport: Transport,
}

impl AdminClient {
    pub fn new(base_url: impl Into<String>, admin_token: impl Into<String>) -> AdminClient {
        AdminClient {
            transport: Transport::new(base_url.into(), admin_token.into(), RetryPolicy::none()),
        }
    }

    async fn no_content(&self, call: Call) -> Result<()> {
        self.transport.send(call).await.map(|_| ())
    }

    /// Deletes every resource, idempotency record and audit entry; timing,
    /// faults and throttling return to start-up settings.
    pub async fn reset(&self) -> Result<()> {
        self.no_content(Call::new(Method::POST, "/admin/reset".into()))
            .await
    }

    pub async fn resources(
        &self,
        kind: Option<Kind>,
        account: Option<&str>,
    ) -> Result<Vec<AdminResource>> {
        let mut query = Vec::new();
        if let Some(kind) = kind {
            query.push(("kind".to_string(), kind.as_str().to_string()));
        }
        if let Some(account) = account {
            query.push(("account".to_string(), account.to_string()));
        }
        self.transport
            .json(Call::new(Method::GET, "/admin/resources".into()).query(query))
            .await
    }

    pub async fn resource(&self, kind: Kind, id: &str, address: &Address) -> Result<AdminResource> {
        let path = format!("/admin/resources/{}/{}", kind.as_str(), segment(id));
        self.transport
            .json(Call::new(Method::GET, path).query(address.query()))
            .await
    }

    /// Changes a resource as an outside actor would (audited as `external`).
    /// Returns the resource as its owner now sees it.
    pub async fn patch_resource(
        &self,
        kind: Kind,
        id: &str,
        address: &Address,
        patch: &impl Serialize,
    ) -> Result<serde_json::Value> {
        let path = format!("/admin/resources/{}/{}", kind.as_str(), segment(id));
        let call = Call::new(Method::PATCH, path)
            .query(address.query())
            .json(patch)?;
        self.transport.json(call).await
    }

    pub async fn timing(&self) -> Result<TimingTable> {
        self.transport
            .json(Call::new(Method::GET, "/admin/timing".into()))
            .await
    }

    /// Provisioning delay of `kind`; `Duration::ZERO` makes it immediate.
    pub async fn set_timing(&self, kind: Kind, delay: Duration) -> Result<TimingTable> {
        let timing = Timing {
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        };
        let call =
            Call::new(Method::PUT, format!("/admin/timing/{}", kind.as_str())).json(&timing)?;
        self.transport.json(call).await
    }

    /// The same delay for every kind.
    pub async fn set_timing_all(&self, delay: Duration) -> Result<TimingTable> {
        let mut table = None;
        for kind in Kind::ALL {
            table = Some(self.set_timing(kind, delay).await?);
        }
        Ok(table.expect("four kinds"))
    }

    pub async fn add_fault(&self, rule: &FaultRuleSpec) -> Result<FaultRule> {
        let call = Call::new(Method::POST, "/admin/faults".into()).json(rule)?;
        self.transport.json(call).await
    }

    pub async fn faults(&self) -> Result<Vec<FaultRule>> {
        self.transport
            .json(Call::new(Method::GET, "/admin/faults".into()))
            .await
    }

    pub async fn remove_fault(&self, id: u64) -> Result<()> {
        self.no_content(Call::new(Method::DELETE, format!("/admin/faults/{id}")))
            .await
    }

    pub async fn clear_faults(&self) -> Result<()> {
        self.no_content(Call::new(Method::DELETE, "/admin/faults".into()))
            .await
    }

    /// The token bucket of every account without one of its own; `None`:
    /// those accounts are not throttled.
    pub async fn throttling(&self) -> Result<Option<Throttling>> {
        self.transport
            .json(Call::new(Method::GET, "/admin/throttling".into()))
            .await
    }

    /// `Some`: a token bucket per account; `None`: no throttling.
    pub async fn set_throttling(&self, throttling: Option<Throttling>) -> Result<()> {
        match throttling {
            Some(config) => {
                let call = Call::new(Method::PUT, "/admin/throttling".into()).json(&config)?;
                self.no_content(call).await
            }
            None => {
                self.no_content(Call::new(Method::DELETE, "/admin/throttling".into()))
                    .await
            }
        }
    }

    /// `Some`: `account`'s own token bucket, in force instead of the
    /// default one (`set_throttling`) and full; `None`: back on the default.
    /// An account no API key names is `404 UnknownAccount`.
    pub async fn set_account_throttling(
        &self,
        account: &str,
        throttling: Option<Throttling>,
    ) -> Result<()> {
        let path = format!("/admin/throttling/accounts/{}", segment(account));
        match throttling {
            Some(config) => {
                self.no_content(Call::new(Method::PUT, path).json(&config)?)
                    .await
            }
            None => self.no_content(Call::new(Method::DELETE, path)).await,
        }
    }

    /// The accounts with a token bucket of their own, by name.
    pub async fn account_throttling(&self) -> Result<Vec<crate::model::AccountThrottling>> {
        self.transport
            .json(Call::new(Method::GET, "/admin/throttling/accounts".into()))
            .await
    }

    pub async fn audit(&self, filter: &AuditQuery) -> Result<Vec<AuditEntry>> {
        let mut query = Vec::new();
        let mut push = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                query.push((k.to_string(), v));
            }
        };
        push("account", filter.account.clone());
        push("actor", filter.actor.map(|a| a.as_str().to_string()));
        push("method", filter.method.clone());
        push("pathPrefix", filter.path_prefix.clone());
        push("mutating", filter.mutating.map(|m| m.to_string()));
        push("userAgent", filter.user_agent.clone());
        push("afterSeq", filter.after_seq.map(|s| s.to_string()));
        self.transport
            .json(Call::new(Method::GET, "/admin/audit".into()).query(query))
            .await
    }

    /// The body of a call's answer, as it came (a file).
    async fn file(&self, call: Call) -> Result<Vec<u8>> {
        self.transport.send(call).await.map(|reply| reply.body)
    }

    /// Saves the whole state as snapshot `name` (`409
    /// SnapshotAlreadyExists` when the name is taken).
    pub async fn save_snapshot(&self, name: &str) -> Result<SnapshotInfo> {
        let body = SaveSnapshot {
            name: name.to_string(),
        };
        let call = Call::new(Method::POST, "/admin/snapshots".into()).json(&body)?;
        self.transport.json(call).await
    }

    /// Every stored snapshot, by name.
    pub async fn snapshots(&self) -> Result<Vec<SnapshotInfo>> {
        self.transport
            .json(Call::new(Method::GET, "/admin/snapshots".into()))
            .await
    }

    /// The file of snapshot `name`, portable to another fakecloud.
    pub async fn download_snapshot(&self, name: &str) -> Result<Vec<u8>> {
        self.file(Call::new(Method::GET, snapshot_path(name))).await
    }

    /// Stores `file` as snapshot `name`, replacing one of that name. The
    /// server checks it whole first (`400 NotASnapshot`,
    /// `CorruptSnapshot`, `UnsupportedSnapshotVersion`).
    pub async fn upload_snapshot(&self, name: &str, file: Vec<u8>) -> Result<SnapshotInfo> {
        let call =
            Call::new(Method::PUT, snapshot_path(name)).bytes(file, "application/octet-stream");
        self.transport.json(call).await
    }

    /// Loads snapshot `name`: the whole state (`Overwrite`) or the file's
    /// accounts (`Merge`); `409 LoadInProgress` while another load runs.
    pub async fn load_snapshot(&self, name: &str, strategy: LoadStrategy) -> Result<LoadResult> {
        let path = format!("{}/load", snapshot_path(name));
        let call = Call::new(Method::POST, path).json(&LoadSnapshot { strategy })?;
        self.transport.json(call).await
    }

    pub async fn delete_snapshot(&self, name: &str) -> Result<()> {
        self.no_content(Call::new(Method::DELETE, snapshot_path(name)))
            .await
    }

    /// The id generator: its seed (`None`: random) and position.
    pub async fn seed(&self) -> Result<SeedState> {
        self.transport
            .json(Call::new(Method::GET, "/admin/seed".into()))
            .await
    }

    /// Seeds the id generator at `position` (0: from the start), so the
    /// same requests make the same ids and secrets from now on.
    pub async fn set_seed(&self, seed: u64, position: u64) -> Result<SeedState> {
        let call =
            Call::new(Method::PUT, "/admin/seed".into()).json(&SeedSettings { seed, position })?;
        self.transport.json(call).await
    }

    /// Random ids and secrets again.
    pub async fn clear_seed(&self) -> Result<()> {
        self.no_content(Call::new(Method::DELETE, "/admin/seed".into()))
            .await
    }

    /// Starts recording `/v1` calls (`409 RecorderRunning` when it records).
    pub async fn start_recorder(&self) -> Result<RecorderStatus> {
        self.transport
            .json(Call::new(Method::POST, "/admin/recorder/start".into()))
            .await
    }

    pub async fn stop_recorder(&self) -> Result<RecorderStatus> {
        self.transport
            .json(Call::new(Method::POST, "/admin/recorder/stop".into()))
            .await
    }

    /// The current or last recording, for `fakecloud::replay`.
    pub async fn recording(&self) -> Result<Vec<u8>> {
        self.file(Call::new(Method::GET, "/admin/recorder".into()))
            .await
    }
}
