//! The portable snapshot file: gzip'd JSON lines.
//!
//! Line 1 is the [`Header`]: what the file is, its format version, the
//! fakecloud that wrote it, the accounts it holds, how many records follow,
//! and the settings (timing, throttling, faults, id sequences). Every other
//! line is one [`Record`]: the resources by `seq`, then the idempotency
//! records in the order they were stored, then the audit by `seq`. The header is
//! written by serde, the records by SQLite (`capture`), each in that fixed
//! order with its keys in a fixed order, so one state always gives the
//! same bytes (and a gzip header without a time or a file name).
//!
//! JSON lines so that `zcat FILE | head -1` shows what a file is and a
//! person can read or edit one with ordinary tools; gzip because the
//! records repeat the same keys and shrink several times over. A file may
//! also be uploaded uncompressed (it is told apart by gzip's magic bytes).
//!
//! Versioning follows the rule of `jsonl`: [`FORMAT_VERSION`] grows
//! whenever a change would make an older fakecloud misread a file; a
//! fakecloud reads every version up to its own (version 1 is the first, so
//! there is nothing to upgrade yet) and refuses a newer one.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::jsonl::FileKind;
pub use crate::jsonl::{FAKECLOUD_VERSION, FileError as SnapshotError, GZIP_MAGIC};
use crate::model::{AccountThrottling, FaultRule, Kind, ResourceCounts, Throttling, TimingTable};

/// The format version this fakecloud writes, and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;
/// Snapshot files.
pub const SNAPSHOT: FileKind = FileKind {
    format: "fakecloud-snapshot",
    version: FORMAT_VERSION,
    what: "snapshot",
};
/// Most bytes a file may decompress to: well above a million resources.
pub const MAX_DECOMPRESSED: u64 = 1 << 30;

/// Line 1 of a file.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Header {
    /// Always `fakecloud-snapshot`.
    pub format: String,
    pub format_version: u32,
    pub fakecloud_version: String,
    /// Sorted, each once: the accounts whose state the file holds (the ones
    /// with an API key where it was saved, and any with data), which a
    /// `merge` load replaces.
    pub accounts: Vec<String>,
    /// The records that follow, so a truncated file is always noticed.
    pub counts: Counts,
    pub sequences: Sequences,
    /// Provisioning delay of every kind.
    pub timing: TimingTable,
    pub throttling: ThrottlingSettings,
    pub faults: FaultSettings,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Counts {
    pub resources: ResourceCounts,
    pub idempotency: u64,
    pub audit: u64,
}

/// The last `seq` handed out (SQLite's `AUTOINCREMENT` counters), so that a
/// loaded state goes on numbering where the saved one would have: page
/// tokens and the audit's `afterSeq` stay meaningful.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sequences {
    pub resources: i64,
    pub audit: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThrottlingSettings {
    /// The default bucket (`/admin/throttling`); `null`: off.
    pub default: Option<Throttling>,
    /// Accounts' own buckets, by account.
    pub accounts: Vec<AccountThrottling>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultSettings {
    /// The id the next added rule gets, so ids are never reused.
    pub next_id: u64,
    /// By id, with how often each fired.
    pub rules: Vec<FaultRule>,
}

/// Every line after the header.
#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Record {
    Resource(ResourceRecord),
    Idempotency(IdempotencyRecord),
    Audit(AuditRecord),
}

/// One resource, as stored, with a transition's time left instead of its
/// deadline: a load restarts the clock. Absent optional fields may also be
/// `null` (as SQLite writes them).
#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceRecord {
    pub seq: i64,
    pub account: String,
    pub kind: Kind,
    pub region: String,
    /// A node group's cluster; empty for the other kinds.
    pub scope: String,
    /// Cloud id, node group name or database identifier.
    pub name: String,
    /// A subnet's VPC id; empty for the other kinds.
    pub parent: String,
    /// The normalized configuration, as the exact JSON text stored.
    pub spec: Box<RawValue>,
    /// A database's salted password hash (never the password), so that
    /// `authenticate` still works after a load.
    #[serde(default)]
    pub secret_hash: Option<String>,
    pub state: String,
    /// With `remainingMs`: a transition under way (`<gone>`: the resource
    /// disappears).
    #[serde(default)]
    pub pending_state: Option<String>,
    /// Milliseconds until `pendingState`, counted from the load.
    #[serde(default)]
    pub remaining_ms: Option<i64>,
    /// The ETag.
    pub version: i64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// The first answer to a create sent with an idempotency key.
#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IdempotencyRecord {
    pub account: String,
    pub key: String,
    pub request_hash: String,
    pub status: i64,
    /// The answer, as the exact JSON text it was (and will be replayed).
    pub body: Box<RawValue>,
    pub etag: String,
    pub location: String,
    pub created_at_ms: i64,
}

/// One audit entry.
#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditRecord {
    pub seq: i64,
    pub time_ms: i64,
    #[serde(default)]
    pub account: Option<String>,
    pub actor: String,
    pub method: String,
    pub path: String,
    pub status: i64,
    pub request_id: String,
    #[serde(default)]
    pub user_agent: Option<String>,
}

/// A whole state: what one file holds.
#[derive(Clone, Debug)]
pub struct World {
    pub header: Header,
    pub resources: Vec<ResourceRecord>,
    pub idempotency: Vec<IdempotencyRecord>,
    pub audit: Vec<AuditRecord>,
}

/// Writes a file: the header, then sections of record lines as they come
/// (`capture` writes those). Fast compression: a save's time goes on
/// compressing, and level 1 keeps most of gzip's gain on these records.
pub struct Encoder {
    gzip: GzEncoder<Vec<u8>>,
}

impl Encoder {
    pub fn new(header: &Header) -> std::io::Result<Encoder> {
        let mut gzip = GzEncoder::new(Vec::new(), Compression::fast());
        serde_json::to_writer(&mut gzip, header).map_err(std::io::Error::other)?;
        gzip.write_all(b"\n")?;
        Ok(Encoder { gzip })
    }

    /// Record lines, each ending in a newline.
    pub fn section(&mut self, lines: &str) -> std::io::Result<()> {
        self.gzip.write_all(lines.as_bytes())
    }

    pub fn finish(self) -> std::io::Result<Vec<u8>> {
        self.gzip.finish()
    }
}

/// Reads a file's header and records, in order. Checks the file's form
/// (header, version, order, counts); `check` checks its content.
pub fn decode(file: &[u8]) -> Result<World, SnapshotError> {
    let mut lines = SNAPSHOT.lines(file, MAX_DECOMPRESSED);
    let header: Header = SNAPSHOT.header(lines.next()?)?;
    let mut world = World {
        header,
        resources: Vec::new(),
        idempotency: Vec::new(),
        audit: Vec::new(),
    };
    while let Some(record) = lines.record::<Record>()? {
        let out_of_order = match record {
            Record::Resource(record) => {
                world.resources.push(record);
                !world.idempotency.is_empty() || !world.audit.is_empty()
            }
            Record::Idempotency(record) => {
                world.idempotency.push(record);
                !world.audit.is_empty()
            }
            Record::Audit(record) => {
                world.audit.push(record);
                false
            }
        };
        if out_of_order {
            return Err(SNAPSHOT.corrupt(
                lines.number(),
                "records out of order: resources first, then idempotency records, then the audit",
            ));
        }
    }
    let counts = &world.header.counts;
    let found = (
        world.resources.len() as u64,
        world.idempotency.len() as u64,
        world.audit.len() as u64,
    );
    let announced = (counts.resources.total(), counts.idempotency, counts.audit);
    if found != announced {
        return Err(SNAPSHOT.corrupt(
            lines.number(),
            format!(
                "the header announces {} resources, {} idempotency records and {} audit entries, \
                 the file holds {}, {} and {} (truncated?)",
                announced.0, announced.1, announced.2, found.0, found.1, found.2
            ),
        ));
    }
    Ok(world)
}
