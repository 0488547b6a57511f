//! The recording file: JSON lines, uncompressed (a recording is for
//! reading and grepping, and small next to a snapshot). Line 1 is the
//! [`RecordingHeader`], then one [`RecordedCall`] per line in the order the
//! calls were answered. Versioned by the rule of `jsonl`.

use serde::{Deserialize, Serialize};

use crate::jsonl::{FileError, FileKind};
use crate::model::SeedState;

/// Recording files.
pub const RECORDING: FileKind = FileKind {
    format: "fakecloud-recording",
    version: 1,
    what: "recording",
};
/// Most bytes a recording may hold.
pub const MAX_BYTES: u64 = 1 << 30;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordingHeader {
    /// Always `fakecloud-recording`.
    pub format: String,
    pub format_version: u32,
    pub fakecloud_version: String,
    pub started_at_ms: i64,
    /// The id generator when the recording started: a replay sets its
    /// target's to it, so the replayed creates draw the ids these drew.
    pub seed: SeedState,
}

/// One `/v1` call, as the service received it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordedCall {
    /// When it arrived, in milliseconds since the recording started.
    pub offset_ms: u64,
    /// The account its API key acts for.
    pub account: String,
    pub method: String,
    pub path: String,
    /// The query string, without `?`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_match: Option<String>,
    /// The JSON body, its secrets replaced (see `redact`); absent without
    /// a body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The body was not JSON: left out, and replayed as a body that is not
    /// JSON either.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub malformed_body: bool,
    /// The status it was answered with.
    pub status: u16,
}

/// A body that is not JSON, which a replay sends for a malformed one.
pub const MALFORMED_BODY: &str = "{";

/// A whole recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    pub header: RecordingHeader,
    pub calls: Vec<RecordedCall>,
}

/// Writes a recording's header and calls. They hold only strings and
/// numbers, so serializing them cannot fail.
pub fn encode(header: &RecordingHeader, calls: &[RecordedCall]) -> Vec<u8> {
    let mut out = serde_json::to_vec(header).expect("a recording header serializes");
    out.push(b'\n');
    for call in calls {
        serde_json::to_writer(&mut out, call).expect("a recorded call serializes");
        out.push(b'\n');
    }
    out
}

/// Reads a recording (also gzip'd, should someone compress one).
pub fn decode(file: &[u8]) -> Result<Recording, FileError> {
    let mut lines = RECORDING.lines(file, MAX_BYTES);
    let header = RECORDING.header(lines.next()?)?;
    let mut calls = Vec::new();
    while let Some(call) = lines.record()? {
        calls.push(call);
    }
    Ok(Recording { header, calls })
}
