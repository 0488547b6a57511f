//! Change logs, as crossplane-runtime v2 sends them: with change logs on
//! (the provider's `--enable-changelogs`), every create, update and delete
//! the reconciler makes in the cloud, successful or not, becomes one
//! `ChangeLogEntry` sent over gRPC to Crossplane's change-log sidecar on a
//! Unix socket (`ChangeLogService.SendChangeLog`, defined in
//! `runtime/proto/changelog.proto`, written from crossplane-runtime's
//! published definition).
//!
//! Sending never blocks or fails a reconcile: [`ChangeLogger::record`]
//! puts the entry on a bounded queue (a full queue drops it, counted in
//! `provider_changelog_errors_total{reason="dropped"}`) and one background
//! task sends the entries in order, each within a timeout, connecting to
//! the socket lazily and again after a failure. An entry that does not get
//! through is counted (`reason="send"`) and dropped; the log says so once
//! when the service starts failing and once when it works again, never
//! per entry, and never shows a snapshot.
//!
//! The messages are written by hand with prost's derive rather than
//! generated, so that building needs no `protoc`; a test checks their field
//! numbers against the `.proto` file.

use std::collections::HashMap;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use http::uri::PathAndQuery;
use hyper_util::rt::TokioIo;
use kube::Resource;
use prometheus_client::metrics::counter::Counter;
use serde_json::Value;
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tonic::transport::{Channel, Endpoint, Uri};
use tracing::{info, warn};

use crate::metrics::{ChangeLogErrorLabels, Metrics};

/// Where Crossplane's change-log sidecar listens, by default.
pub const DEFAULT_SOCKET_PATH: &str = "/var/run/changelogs/changelogs.sock";

/// The gRPC method every entry is sent to.
pub const SEND_CHANGE_LOG: &str = "/changelogs.proto.v1alpha1.ChangeLogService/SendChangeLog";

/// Entries waiting to be sent at most; more are dropped (and counted).
pub const DEFAULT_QUEUE: usize = 1024;

/// How long one entry may take to send, waiting for the service to be
/// there included (crossplane-runtime's `defaultSendTimeout`).
pub const DEFAULT_SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a send waiting for the service tries to connect again.
const RECONNECT_EVERY: Duration = Duration::from_millis(250);

/// `changelogs.proto.v1alpha1.OperationType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum OperationType {
    /// No operation given; never sent.
    Unspecified = 0,
    /// The cloud resource was created (or its create was tried).
    Create = 1,
    /// The cloud resource was updated (or its update was tried).
    Update = 2,
    /// The cloud resource was deleted (or its delete was tried).
    Delete = 3,
}

/// `changelogs.proto.v1alpha1.ChangeLogEntry`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ChangeLogEntry {
    /// When the change was made.
    #[prost(message, optional, tag = "1")]
    pub timestamp: Option<prost_types::Timestamp>,
    /// The provider's name and version, as `provider-x:v1.2.3`.
    #[prost(string, tag = "2")]
    pub provider: String,
    /// The managed resource's `apiVersion`.
    #[prost(string, tag = "3")]
    pub api_version: String,
    /// The managed resource's kind.
    #[prost(string, tag = "4")]
    pub kind: String,
    /// The managed resource's name.
    #[prost(string, tag = "5")]
    pub name: String,
    /// The cloud resource's external name (empty before a create has one).
    #[prost(string, tag = "6")]
    pub external_name: String,
    /// The change: an [`OperationType`], as its number.
    #[prost(enumeration = "OperationType", tag = "7")]
    pub operation: i32,
    /// The managed resource as it was right before the change.
    #[prost(message, optional, tag = "8")]
    pub snapshot: Option<prost_types::Struct>,
    /// Why the change failed, if it did.
    #[prost(string, optional, tag = "9")]
    pub error_message: Option<String>,
    /// Here, the resource's `namespace` (the message has no field for it).
    #[prost(map = "string, string", tag = "10")]
    pub additional_details: HashMap<String, String>,
}

/// `changelogs.proto.v1alpha1.SendChangeLogRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SendChangeLogRequest {
    /// The entry to record.
    #[prost(message, optional, tag = "1")]
    pub entry: Option<ChangeLogEntry>,
}

/// `changelogs.proto.v1alpha1.SendChangeLogResponse`.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct SendChangeLogResponse {}

/// The sending end of change logs, which the [`crate::Context`] holds when
/// they are enabled. Cheap to call: it only queues.
pub struct ChangeLogger {
    provider: String,
    queue: mpsc::Sender<ChangeLogEntry>,
    dropped: Counter,
}

impl ChangeLogger {
    /// Starts sending to the service on `socket`, naming the provider
    /// `provider` (`name:version`) in every entry, with the default queue
    /// and timeout. Must be called within a Tokio runtime.
    pub fn start(
        socket: impl Into<PathBuf>,
        provider: impl Into<String>,
        metrics: &Metrics,
    ) -> Self {
        Self::start_with(
            socket,
            provider,
            metrics,
            DEFAULT_QUEUE,
            DEFAULT_SEND_TIMEOUT,
        )
    }

    /// [`ChangeLogger::start`] with at most `queue` entries waiting and
    /// `send_timeout` for each send.
    pub fn start_with(
        socket: impl Into<PathBuf>,
        provider: impl Into<String>,
        metrics: &Metrics,
        queue: usize,
        send_timeout: Duration,
    ) -> Self {
        let errors = |reason: &str| {
            metrics
                .changelog_errors
                .get_or_create(&ChangeLogErrorLabels {
                    reason: reason.to_owned(),
                })
                .clone()
        };
        let (sender, receiver) = mpsc::channel(queue.max(1));
        tokio::spawn(deliver(
            socket.into(),
            receiver,
            send_timeout,
            errors("send"),
        ));
        Self {
            provider: provider.into(),
            queue: sender,
            dropped: errors("dropped"),
        }
    }

    /// Queues the entry of an `operation` on `mr`, whose JSON before the
    /// change is `snapshot`, on the external resource `external_name`;
    /// `error` is why the call failed, if it did.
    pub fn record<K: Resource<DynamicType = ()>>(
        &self,
        mr: &K,
        snapshot: &Value,
        operation: OperationType,
        external_name: Option<&str>,
        error: Option<&dyn Display>,
    ) {
        let meta = mr.meta();
        let entry = ChangeLogEntry {
            timestamp: Some(SystemTime::now().into()),
            provider: self.provider.clone(),
            api_version: K::api_version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            name: meta.name.clone().unwrap_or_default(),
            external_name: external_name.unwrap_or_default().to_owned(),
            operation: operation.into(),
            snapshot: Some(to_struct(snapshot)),
            error_message: error.map(ToString::to_string),
            additional_details: meta
                .namespace
                .iter()
                .map(|ns| ("namespace".to_owned(), ns.clone()))
                .collect(),
        };
        if self.queue.try_send(entry).is_err() {
            self.dropped.inc();
        }
    }
}

/// Sends the queued entries in order until every [`ChangeLogger`] is gone.
async fn deliver(
    socket: PathBuf,
    mut entries: mpsc::Receiver<ChangeLogEntry>,
    send_timeout: Duration,
    failed: Counter,
) {
    let mut client = tonic::client::Grpc::new(channel(socket.clone()));
    // Whether the last send got through; a send while it does waits for the
    // service (as crossplane-runtime's `WaitForReady`), one during an
    // outage tries once.
    let mut reaching = true;
    while let Some(entry) = entries.recv().await {
        let request = SendChangeLogRequest { entry: Some(entry) };
        let sent = tokio::time::timeout(send_timeout, send(&mut client, request, reaching)).await;
        match sent {
            Ok(Ok(())) if !reaching => {
                info!(socket = %socket.display(), "change logs are delivered again");
                reaching = true;
            }
            Ok(Ok(())) => {}
            Ok(Err(status)) => {
                failed.inc();
                outage(&mut reaching, &socket, &status);
            }
            Err(elapsed) => {
                failed.inc();
                outage(&mut reaching, &socket, &elapsed);
            }
        }
    }
}

/// Notes a failed send: logged only when it starts an outage.
fn outage(reaching: &mut bool, socket: &Path, error: &dyn Display) {
    if std::mem::replace(reaching, false) {
        warn!(
            socket = %socket.display(),
            %error,
            "cannot send change logs; dropping them until the change-log service answers"
        );
    }
}

/// One send of `request`; `wait` retries while the service is unavailable
/// (the caller bounds it with the timeout).
async fn send(
    client: &mut tonic::client::Grpc<Channel>,
    request: SendChangeLogRequest,
    wait: bool,
) -> Result<(), tonic::Status> {
    loop {
        let sent = match client.ready().await {
            Ok(()) => client
                .unary(
                    tonic::Request::new(request.clone()),
                    PathAndQuery::from_static(SEND_CHANGE_LOG),
                    tonic_prost::ProstCodec::<SendChangeLogRequest, SendChangeLogResponse>::default(
                    ),
                )
                .await
                .map(drop),
            Err(error) => Err(tonic::Status::unavailable(error.to_string())),
        };
        match sent {
            Err(status) if wait && status.code() == tonic::Code::Unavailable => {
                tokio::time::sleep(RECONNECT_EVERY).await;
            }
            other => return other,
        }
    }
}

/// A channel to the gRPC server on the Unix socket `socket`, connecting at
/// its first use and again after a failure.
fn channel(socket: PathBuf) -> Channel {
    Endpoint::from_static("http://changelogs.local").connect_with_connector_lazy(tower::service_fn(
        move |_: Uri| {
            let socket = socket.clone();
            async move { UnixStream::connect(socket).await.map(TokioIo::new) }
        },
    ))
}

/// JSON as a `google.protobuf.Struct` (a non-object is wrapped under
/// `value`; never the case for a Kubernetes object).
fn to_struct(json: &Value) -> prost_types::Struct {
    match to_value(json).kind {
        Some(prost_types::value::Kind::StructValue(object)) => object,
        other => prost_types::Struct {
            fields: [("value".to_owned(), prost_types::Value { kind: other })].into(),
        },
    }
}

fn to_value(json: &Value) -> prost_types::Value {
    use prost_types::value::Kind;
    let kind = match json {
        Value::Null => Kind::NullValue(prost_types::NullValue::NullValue.into()),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.iter().map(to_value).collect(),
        }),
        Value::Object(fields) => Kind::StructValue(prost_types::Struct {
            fields: fields
                .iter()
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect(),
        }),
    };
    prost_types::Value { kind: Some(kind) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use serde_json::json;

    /// `(field name, number)` of message `message` in the `.proto` file.
    fn proto_fields(message: &str) -> Vec<(String, u32)> {
        let proto = include_str!("../proto/changelog.proto");
        let body = proto
            .split(&format!("message {message} {{"))
            .nth(1)
            .and_then(|rest| rest.split('}').next())
            .unwrap_or_else(|| panic!("message {message} is in the proto"));
        body.lines()
            .map(str::trim)
            .filter(|line| !line.starts_with("//") && line.ends_with(';') && line.contains('='))
            .map(|line| {
                let (left, number) = line.trim_end_matches(';').split_once('=').unwrap();
                let name = left.split_whitespace().last().unwrap().to_owned();
                (name, number.trim().parse().unwrap())
            })
            .collect()
    }

    /// The field number of the only field `message` encodes.
    fn tag_of(message: &impl Message) -> u32 {
        let bytes = message.encode_to_vec();
        let key = prost::encoding::decode_varint(&mut bytes.as_slice()).expect("a field");
        (key >> 3) as u32
    }

    #[test]
    fn the_messages_match_the_proto_file() {
        let set: Vec<(&str, ChangeLogEntry)> = vec![
            (
                "timestamp",
                ChangeLogEntry {
                    timestamp: Some(prost_types::Timestamp::default()),
                    ..Default::default()
                },
            ),
            (
                "provider",
                ChangeLogEntry {
                    provider: "p".into(),
                    ..Default::default()
                },
            ),
            (
                "api_version",
                ChangeLogEntry {
                    api_version: "v".into(),
                    ..Default::default()
                },
            ),
            (
                "kind",
                ChangeLogEntry {
                    kind: "k".into(),
                    ..Default::default()
                },
            ),
            (
                "name",
                ChangeLogEntry {
                    name: "n".into(),
                    ..Default::default()
                },
            ),
            (
                "external_name",
                ChangeLogEntry {
                    external_name: "e".into(),
                    ..Default::default()
                },
            ),
            (
                "operation",
                ChangeLogEntry {
                    operation: 3,
                    ..Default::default()
                },
            ),
            (
                "snapshot",
                ChangeLogEntry {
                    snapshot: Some(prost_types::Struct::default()),
                    ..Default::default()
                },
            ),
            (
                "error_message",
                ChangeLogEntry {
                    error_message: Some(String::new()),
                    ..Default::default()
                },
            ),
            (
                "additional_details",
                ChangeLogEntry {
                    additional_details: [("a".into(), "b".into())].into(),
                    ..Default::default()
                },
            ),
        ];
        let ours: Vec<(String, u32)> = set
            .iter()
            .map(|(name, entry)| ((*name).to_owned(), tag_of(entry)))
            .collect();
        assert_eq!(ours, proto_fields("ChangeLogEntry"));
        let request = SendChangeLogRequest {
            entry: Some(ChangeLogEntry::default()),
        };
        assert_eq!(
            proto_fields("SendChangeLogRequest"),
            [("entry".to_owned(), tag_of(&request))]
        );
        let proto = include_str!("../proto/changelog.proto");
        for (name, value) in [
            ("OPERATION_TYPE_UNSPECIFIED", OperationType::Unspecified),
            ("OPERATION_TYPE_CREATE", OperationType::Create),
            ("OPERATION_TYPE_UPDATE", OperationType::Update),
            ("OPERATION_TYPE_DELETE", OperationType::Delete),
        ] {
            assert!(
                proto.contains(&format!("{name} = {};", value as i32)),
                "{name}"
            );
        }
        assert!(proto.contains("package changelogs.proto.v1alpha1;"));
        assert!(proto.contains("service ChangeLogService {"));
        assert!(
            proto.contains(
                "rpc SendChangeLog(SendChangeLogRequest) returns (SendChangeLogResponse)"
            )
        );
    }

    #[test]
    fn a_snapshot_keeps_the_objects_json() {
        let object = json!({
            "metadata": { "name": "net", "labels": { "a": "b" } },
            "spec": { "forProvider": { "cidrBlock": "10.0.0.0/16", "size": 20, "tags": [true, null] } },
        });
        assert_eq!(from_struct(&to_struct(&object)), object);
    }

    /// A `Struct` back as JSON.
    fn from_struct(object: &prost_types::Struct) -> Value {
        Value::Object(
            object
                .fields
                .iter()
                .map(|(k, v)| (k.clone(), from_value(v)))
                .collect(),
        )
    }

    fn from_value(value: &prost_types::Value) -> Value {
        use prost_types::value::Kind;
        match &value.kind {
            None | Some(Kind::NullValue(_)) => Value::Null,
            Some(Kind::BoolValue(b)) => json!(b),
            Some(Kind::NumberValue(n)) if n.fract() == 0.0 => json!(*n as i64),
            Some(Kind::NumberValue(n)) => json!(n),
            Some(Kind::StringValue(s)) => json!(s),
            Some(Kind::ListValue(list)) => {
                Value::Array(list.values.iter().map(from_value).collect())
            }
            Some(Kind::StructValue(object)) => from_struct(object),
        }
    }

    #[tokio::test]
    async fn a_full_queue_drops_and_counts_without_waiting() {
        let metrics = Metrics::new();
        let logger = ChangeLogger::start_with(
            "/nonexistent/changelogs.sock",
            "provider-test:v0",
            &metrics,
            1,
            Duration::from_secs(30),
        );
        let mr = k8s_openapi::api::core::v1::ConfigMap::default();
        let started = std::time::Instant::now();
        for _ in 0..5 {
            logger.record(&mr, &json!({}), OperationType::Create, None, None);
        }
        assert!(started.elapsed() < Duration::from_secs(1));
        // The first is being sent (waiting for the socket), one waits in the
        // queue: at least three are dropped.
        let dropped =
            metrics.total_with("provider_changelog_errors_total", &[("reason", "dropped")]);
        assert!(dropped >= 3.0, "{dropped}");
    }
}
