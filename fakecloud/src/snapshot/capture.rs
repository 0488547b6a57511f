//! Saving the whole state as a file, consistently, while the API keeps
//! serving (see the module above).
//!
//! What keeps a save of 100,000 resources within a second or two:
//!
//! - SQLite writes each table's record lines itself (`json_quote` and
//!   concatenation, stored specs and answers as the JSON they are) and
//!   joins them (`group_concat`), so a table leaves the database as one
//!   string rather than as rows, each a round trip to the database thread,
//!   decoded and encoded again;
//! - each table is read in rowid order, which its scan gives without a sort
//!   (a sort of the lines spilled to temporary files and took seconds): for
//!   resources and the audit that is `seq`, and idempotency records come in
//!   the order they were stored, which a load keeps by inserting them in
//!   the file's order, so a loaded state saves to the same file;
//! - the three tables are read at once, each in a read transaction of its
//!   own: the three begin while writers are held off (for the moment it
//!   takes to begin them), so they see one and the same state;
//! - the lines are compressed on a blocking thread as they come.
//!
//! The lines are the ones `format` reads back, which every save-and-load
//! test checks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc;

use sqlx::query::QueryScalar;
use sqlx::sqlite::SqliteArguments;
use sqlx::{Sqlite, SqliteConnection, Transaction};

use crate::clock::now_ms;
use crate::db::Db;
use crate::error::ApiError;
use crate::model::{Kind, ResourceCounts};
use crate::state::AppState;
use crate::store::GONE;

use super::format::{
    Counts, Encoder, FAKECLOUD_VERSION, FORMAT_VERSION, Header, SNAPSHOT, Sequences,
};

/// The resources' lines, as they are at `?1` (due transitions done, rows
/// due to be gone, whose pending state is `?2`, left out).
const RESOURCE_LINES: &str = "SELECT group_concat(line, char(10)) FROM (SELECT \
     '{\"resource\":{\"seq\":' || seq \
     || ',\"account\":' || json_quote(account) || ',\"kind\":' || json_quote(kind) \
     || ',\"region\":' || json_quote(region) || ',\"scope\":' || json_quote(scope) \
     || ',\"name\":' || json_quote(name) || ',\"parent\":' || json_quote(parent) \
     || ',\"spec\":' || spec || ',\"secretHash\":' || json_quote(secret_hash) \
     || ',\"state\":' || json_quote(CASE WHEN due THEN pending_state ELSE state END) \
     || ',\"pendingState\":' || json_quote(CASE WHEN due THEN NULL ELSE pending_state END) \
     || ',\"remainingMs\":' || coalesce(CASE WHEN due THEN NULL ELSE transition_at - ?1 END, 'null') \
     || ',\"version\":' || version || ',\"createdAtMs\":' || created_at \
     || ',\"updatedAtMs\":' || CASE WHEN due THEN transition_at ELSE updated_at END || '}}' AS line \
     FROM (SELECT *, transition_at IS NOT NULL AND transition_at <= ?1 AS due FROM resources) \
     WHERE NOT (due AND pending_state IS ?2) ORDER BY seq)";

const IDEMPOTENCY_LINES: &str = "SELECT group_concat(line, char(10)) FROM (SELECT \
     '{\"idempotency\":{\"account\":' || json_quote(account) || ',\"key\":' || json_quote(key) \
     || ',\"requestHash\":' || json_quote(request_hash) || ',\"status\":' || status \
     || ',\"body\":' || body || ',\"etag\":' || json_quote(etag) \
     || ',\"location\":' || json_quote(location) || ',\"createdAtMs\":' || created_at \
     || '}}' AS line FROM idempotency ORDER BY rowid)";

const AUDIT_LINES: &str = "SELECT group_concat(line, char(10)) FROM (SELECT \
     '{\"audit\":{\"seq\":' || seq || ',\"timeMs\":' || time \
     || ',\"account\":' || json_quote(account) || ',\"actor\":' || json_quote(actor) \
     || ',\"method\":' || json_quote(method) || ',\"path\":' || json_quote(path) \
     || ',\"status\":' || status || ',\"requestId\":' || json_quote(request_id) \
     || ',\"userAgent\":' || json_quote(user_agent) || '}}' AS line FROM audit ORDER BY seq)";

/// The state as of now, as a file: the tables read in read transactions
/// that see one state, the settings copied just before. The audit holds
/// every call answered before the save began. Returns the file's header
/// too.
pub async fn capture(state: &AppState) -> Result<(Header, Vec<u8>), ApiError> {
    state.audit.flush().await;
    let gate = state.snapshots.world.read().await;
    let timing = state.timing_table();
    let throttling = state.throttle.export();
    let faults = state.faults.export();
    let now = now_ms();
    let mut readers = readers(&state.db).await?;
    let main = &mut readers[0];

    // The header first (it leads the file): what the tables hold, from
    // their indexes. Resources per kind: all of them but those gone by now.
    let kinds: Vec<(String, i64)> = sqlx::query_as(
        "SELECT kind, count(*) FROM resources GROUP BY kind \
         UNION ALL SELECT kind, -count(*) FROM resources \
         WHERE transition_at <= ? AND pending_state IS ? GROUP BY kind",
    )
    .bind(now)
    .bind(GONE)
    .fetch_all(&mut **main)
    .await?;
    let (idempotency, audit): (i64, i64) =
        sqlx::query_as("SELECT (SELECT count(*) FROM idempotency), (SELECT count(*) FROM audit)")
            .fetch_one(&mut **main)
            .await?;
    let with_data: Vec<String> = sqlx::query_scalar(
        "SELECT account FROM resources UNION SELECT account FROM idempotency \
         UNION SELECT account FROM audit WHERE account IS NOT NULL",
    )
    .fetch_all(&mut **main)
    .await?;
    let sequences: BTreeMap<String, i64> = sqlx::query_as(
        "SELECT name, seq FROM sqlite_sequence WHERE name IN ('resources', 'audit')",
    )
    .fetch_all(&mut **main)
    .await?
    .into_iter()
    .collect();
    let mut counts = ResourceCounts::default();
    for (kind, n) in kinds {
        let kind = Kind::parse(&kind).ok_or_else(|| {
            ApiError::internal("saving a snapshot", format!("unknown kind {kind:?}"))
        })?;
        counts.add(kind, n);
    }
    // Every account the state knows: the API keys' (an account without
    // resources is still one a merge load must empty) and any with data.
    let accounts: BTreeSet<String> = state
        .api_keys
        .values()
        .cloned()
        .chain(with_data)
        .chain(throttling.accounts.iter().map(|a| a.account.clone()))
        .collect();
    let header = Header {
        format: SNAPSHOT.format.to_string(),
        format_version: FORMAT_VERSION,
        fakecloud_version: FAKECLOUD_VERSION.to_string(),
        accounts: accounts.into_iter().collect(),
        counts: Counts {
            resources: counts,
            idempotency: idempotency as u64,
            audit: audit as u64,
        },
        sequences: Sequences {
            resources: sequences.get("resources").copied().unwrap_or(0),
            audit: sequences.get("audit").copied().unwrap_or(0),
        },
        timing,
        throttling,
        faults,
    };

    // Then the tables' lines, compressed in the file's order as they come.
    let (sections, compress) = mpsc::channel::<(usize, String)>();
    let mut encoder =
        Encoder::new(&header).map_err(|e| ApiError::internal("encoding a snapshot", e))?;
    let compressor = tokio::task::spawn_blocking(move || {
        let mut waiting: [Option<String>; 3] = Default::default();
        let mut next = 0;
        for (index, section) in compress {
            waiting[index] = Some(section);
            while let Some(section) = waiting.get_mut(next).and_then(Option::take) {
                encoder.section(&section)?;
                next += 1;
            }
        }
        encoder.finish()
    });
    let queries: [Lines; 3] = [
        sqlx::query_scalar(RESOURCE_LINES).bind(now).bind(GONE),
        sqlx::query_scalar(IDEMPOTENCY_LINES),
        sqlx::query_scalar(AUDIT_LINES),
    ];
    match readers.as_mut_slice() {
        [one] => {
            for (index, query) in queries.into_iter().enumerate() {
                section(one, query, index, &sections).await?;
            }
        }
        [first, second, third] => {
            let [resources, idempotency, audit] = queries;
            tokio::try_join!(
                section(first, resources, 0, &sections),
                section(second, idempotency, 1, &sections),
                section(third, audit, 2, &sections),
            )?;
        }
        _ => unreachable!("`readers` begins one or three transactions"),
    }
    for reader in readers {
        reader.commit().await?;
    }
    drop(gate);
    drop(sections);
    let file = compressor
        .await
        .map_err(|e| ApiError::internal("snapshot compressor", e))?
        .map_err(|e| ApiError::internal("encoding a snapshot", e))?;
    Ok((header, file))
}

/// Read transactions that see one and the same state: three, begun while
/// writers are held off, each pinned to the state by a first read; one
/// where the database has a single connection (`:memory:`).
async fn readers(db: &Db) -> Result<Vec<Transaction<'static, Sqlite>>, sqlx::Error> {
    let count = if db.readers() >= 3 { 3 } else { 1 };
    let _held = db.hold_writers().await;
    let mut readers = Vec::with_capacity(count);
    for _ in 0..count {
        let mut reader = db.read.begin().await?;
        sqlx::query("SELECT count(*) FROM sqlite_sequence")
            .execute(&mut *reader)
            .await?;
        readers.push(reader);
    }
    Ok(readers)
}

/// A query of one table's lines, joined by newlines (`None`: no record).
type Lines = QueryScalar<'static, Sqlite, Option<String>, SqliteArguments>;

/// Runs `query` and sends its lines to the compressor as section `index`.
async fn section(
    conn: &mut SqliteConnection,
    query: Lines,
    index: usize,
    sections: &mpsc::Sender<(usize, String)>,
) -> Result<(), sqlx::Error> {
    let mut lines = query.fetch_one(conn).await?.unwrap_or_default();
    if !lines.is_empty() {
        lines.push('\n');
    }
    // Fails only when the compressor failed, which it reports.
    let _ = sections.send((index, lines));
    Ok(())
}
