//! A real fakecloud on an ephemeral port over a temp SQLite file.

#![allow(dead_code)] // each test binary uses a different part

use std::time::Duration;

use fakecloud::client::{AdminClient, Client, ClientError, RetryPolicy, Versioned};
use fakecloud::model::{CreateNodeGroup, CreateSubnet, CreateVpc, NodeGroup, Subnet, Vpc};
use fakecloud::{ApiKey, Config, RunningServer};

pub const REGION: &str = "us-east-1";
pub const KEY_A: &str = "key-a";
pub const KEY_B: &str = "key-b";
pub const ACCOUNT_A: &str = "acct-a";
pub const ACCOUNT_B: &str = "acct-b";
pub const ADMIN: &str = "admin-token";

pub struct Cloud {
    pub server: RunningServer,
    pub a: Client,
    pub b: Client,
    pub admin: AdminClient,
    pub http: reqwest::Client,
    pub base: String,
    pub db_path: String,
    pub _dir: Option<tempfile::TempDir>,
}

pub fn config(db_path: &str, delay: Duration) -> Config {
    Config {
        api_keys: vec![ApiKey::new(KEY_A, ACCOUNT_A), ApiKey::new(KEY_B, ACCOUNT_B)],
        admin_token: Some(ADMIN.into()),
        default_delay: delay,
        ..Config::new(db_path)
    }
}

impl Cloud {
    /// Provisioning is immediate unless a test asks for a delay.
    pub async fn start() -> Cloud {
        Cloud::start_with_delay(Duration::ZERO).await
    }

    pub async fn start_with_delay(delay: Duration) -> Cloud {
        let dir = tempfile::tempdir().expect("temp dir");
        let db_path = dir.path().join("fakecloud.db").display().to_string();
        let mut cloud = Cloud::start_on(&db_path, delay).await;
        cloud._dir = Some(dir);
        cloud
    }

    /// A server over an existing database file (restart tests).
    pub async fn start_on(db_path: &str, delay: Duration) -> Cloud {
        Cloud::start_with(config(db_path, delay)).await
    }

    /// A server with the usual settings (immediate provisioning, a temp
    /// file) as `change` changes them.
    pub async fn start_configured(change: impl FnOnce(&mut Config)) -> Cloud {
        let dir = tempfile::tempdir().expect("temp dir");
        let db_path = dir.path().join("fakecloud.db").display().to_string();
        let mut config = config(&db_path, Duration::ZERO);
        change(&mut config);
        let mut cloud = Cloud::start_with(config).await;
        cloud._dir = Some(dir);
        cloud
    }

    /// A server as `config` says.
    pub async fn start_with(config: Config) -> Cloud {
        let db_path = config.database.clone();
        let server = fakecloud::spawn(config).await.expect("server starts");
        let base = server.base_url();
        Cloud {
            a: Client::new(&base, KEY_A).with_retry(RetryPolicy::none()),
            b: Client::new(&base, KEY_B).with_retry(RetryPolicy::none()),
            admin: AdminClient::new(&base, ADMIN),
            http: reqwest::Client::new(),
            base,
            db_path,
            server,
            _dir: None,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn vpc(&self, cidr: &str) -> Vpc {
        self.a
            .create_vpc(
                REGION,
                &CreateVpc {
                    cidr_block: cidr.into(),
                    ..Default::default()
                },
                None,
            )
            .await
            .expect("create vpc")
            .resource
    }

    pub async fn subnet(&self, vpc: &str, cidr: &str) -> Subnet {
        self.a
            .create_subnet(
                REGION,
                &CreateSubnet {
                    vpc_id: vpc.into(),
                    cidr_block: cidr.into(),
                    ..Default::default()
                },
                None,
            )
            .await
            .expect("create subnet")
            .resource
    }

    /// Account A's node group `name` in cluster `c1`, on one subnet, sent
    /// with `idempotency_key` when given.
    pub async fn node_group(
        &self,
        name: &str,
        subnet: &str,
        idempotency_key: Option<&str>,
    ) -> Versioned<NodeGroup> {
        self.a
            .create_node_group(
                REGION,
                "c1",
                &CreateNodeGroup {
                    name: name.into(),
                    subnet_ids: vec![subnet.into()],
                    node_role: "role".into(),
                    ..Default::default()
                },
                idempotency_key,
            )
            .await
            .expect("create node group")
    }

    /// Raw request with account A's key and a raw body.
    pub async fn raw(&self, method: reqwest::Method, path: &str, body: &str) -> reqwest::Response {
        self.http
            .request(method, self.url(path))
            .bearer_auth(KEY_A)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("request")
    }
}

/// Asserts an API error's status, code and (optionally) field.
#[track_caller]
pub fn assert_problem(err: &ClientError, status: u16, code: &str, field: Option<&str>) {
    assert_eq!(err.status(), Some(status), "{err}");
    assert_eq!(err.code(), Some(code), "{err}");
    if field.is_some() {
        assert_eq!(err.field(), field, "{err}");
    }
    assert!(!err.request_id().unwrap_or_default().is_empty(), "{err}");
}

/// Checks a raw problem response; returns its JSON.
pub async fn problem(response: reqwest::Response, status: u16, code: &str) -> serde_json::Value {
    assert_eq!(response.status().as_u16(), status);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let header_id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();
    let body: serde_json::Value = response.json().await.expect("problem json");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["status"], status);
    assert_eq!(body["requestId"], header_id.as_str());
    assert!(body["type"].is_string() && body["title"].is_string() && body["detail"].is_string());
    body
}

/// Polls until `check` holds or two seconds pass.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}

/// A snapshot file's lines as JSON (header first), gzip'd or not.
pub fn snapshot_lines(file: &[u8]) -> Vec<serde_json::Value> {
    use std::io::Read;
    let mut text = String::new();
    if file.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .expect("gzip");
    } else {
        text = String::from_utf8(file.to_vec()).expect("utf-8");
    }
    text.lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// Gzips `text` as a snapshot file is.
pub fn gzip(text: &str) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(text.as_bytes()).expect("gzip");
    encoder.finish().expect("gzip")
}

/// Lines back into a file's text.
pub fn to_text(lines: &[serde_json::Value]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// Every resource as the admin API shows it, by kind, account and id, for
/// comparing two states.
pub async fn resources(admin: &AdminClient) -> Vec<fakecloud::model::AdminResource> {
    let mut all = admin.resources(None, None).await.expect("resources");
    all.sort_by(|a, b| {
        (a.kind.as_str(), &a.account, &a.id).cmp(&(b.kind.as_str(), &b.account, &b.id))
    });
    all
}

/// `resources` without the times of day they were made and changed, which
/// a replay cannot repeat: what "the same state" compares.
pub fn timeless(resources: &[fakecloud::model::AdminResource]) -> Vec<serde_json::Value> {
    resources
        .iter()
        .map(|r| {
            let mut value = serde_json::to_value(r).expect("resource");
            let body = value["resource"].as_object_mut().expect("object");
            body.remove("createdAt");
            body.remove("updatedAt");
            value
        })
        .collect()
}
