//! Writing a checked [`World`] into the state: one write transaction for
//! the tables, then the settings.
//!
//! Rows go in by the thousand, each batch one multi-row `INSERT`.

use sqlx::query_builder::Separated;
use sqlx::{AssertSqlSafe, QueryBuilder, Sqlite, SqliteConnection};

use crate::clock::now_ms;
use crate::model::LoadStrategy;
use crate::state::AppState;

use super::format::{AuditRecord, IdempotencyRecord, ResourceRecord, Sequences, World};

/// Loads `world` (checked by `snapshot::read`). `Overwrite` replaces every
/// table and setting; `Merge` replaces the rows of the file's accounts
/// (their resources, idempotency records and audit entries, which take new
/// `seq`s after the ones there are) and their own throttling, and leaves
/// every other account, the account-less audit entries and the global
/// settings as they are. Transitions under way restart their clocks: each
/// is due its time left after now. The load itself is not audited: like a
/// restart onto another database, it replaces the history the audit tells.
pub async fn apply(
    state: &AppState,
    world: &World,
    strategy: LoadStrategy,
) -> Result<(), sqlx::Error> {
    // Calls answered before the load are written first, so none of the old
    // state's entries lands in the new one.
    state.audit.flush().await;
    let gate = state.snapshots.world.write().await;
    let now = now_ms();
    let header = &world.header;
    let overwrite = strategy == LoadStrategy::Overwrite;
    let mut tx = state.db.begin_write().await?;
    let accounts =
        serde_json::to_string(&header.accounts).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    for table in ["resources", "idempotency", "audit"] {
        let delete = if overwrite {
            sqlx::query(AssertSqlSafe(format!("DELETE FROM {table}")))
        } else {
            sqlx::query(AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE account IN (SELECT value FROM json_each(?))"
            )))
            .bind(&accounts)
        };
        delete.execute(&mut *tx).await?;
    }
    insert_resources(&mut tx, &world.resources, overwrite, now).await?;
    insert_idempotency(&mut tx, &world.idempotency).await?;
    // A merge takes only the file's accounts' entries: an entry without
    // an account belongs to no account it replaces.
    let audit: Vec<&AuditRecord> = world
        .audit
        .iter()
        .filter(|entry| overwrite || entry.account.is_some())
        .collect();
    insert_audit(&mut tx, &audit, overwrite).await?;
    if overwrite {
        set_sequences(&mut tx, header.sequences).await?;
    }
    tx.commit().await?;
    if overwrite {
        state.set_timing_table(&header.timing);
        state.throttle.restore(&header.throttling);
        state.faults.restore(&header.faults);
    } else {
        state
            .throttle
            .restore_accounts(&header.accounts, &header.throttling.accounts);
    }
    drop(gate);
    state.ticker.notify_one();
    Ok(())
}

/// Most parameters one statement binds (SQLite's limit is 32,766).
const MAX_PARAMETERS: usize = 32_000;

/// Inserts `rows` with `head` (`INSERT INTO t (columns) `), as many rows
/// per statement as `columns` parameters each allow: one statement per
/// thousands of rows instead of one round trip to the database thread per
/// row, which was most of a load's time.
async fn insert_rows<'a, T>(
    conn: &mut SqliteConnection,
    head: &'static str,
    columns: usize,
    rows: &'a [T],
    mut push: impl FnMut(&mut Separated<'_, Sqlite, &'static str>, &'a T),
) -> Result<(), sqlx::Error> {
    for batch in rows.chunks(MAX_PARAMETERS / columns) {
        let mut query = QueryBuilder::new(head);
        query.push_values(batch, |mut values, row| push(&mut values, row));
        query.build().execute(&mut *conn).await?;
    }
    Ok(())
}

async fn insert_resources(
    conn: &mut SqliteConnection,
    resources: &[ResourceRecord],
    keep_seq: bool,
    now: i64,
) -> Result<(), sqlx::Error> {
    insert_rows(
        conn,
        "INSERT INTO resources (seq, account, kind, region, scope, name, parent, spec, \
         secret_hash, state, pending_state, transition_at, version, created_at, updated_at) ",
        15,
        resources,
        |values, r| {
            values
                .push_bind(keep_seq.then_some(r.seq))
                .push_bind(&r.account)
                .push_bind(r.kind.as_str())
                .push_bind(&r.region)
                .push_bind(&r.scope)
                .push_bind(&r.name)
                .push_bind(&r.parent)
                .push_bind(r.spec.get())
                .push_bind(&r.secret_hash)
                .push_bind(&r.state)
                .push_bind(&r.pending_state)
                .push_bind(r.remaining_ms.map(|ms| now + ms))
                .push_bind(r.version)
                .push_bind(r.created_at_ms)
                .push_bind(r.updated_at_ms);
        },
    )
    .await
}

async fn insert_idempotency(
    conn: &mut SqliteConnection,
    records: &[IdempotencyRecord],
) -> Result<(), sqlx::Error> {
    insert_rows(
        conn,
        "INSERT INTO idempotency (account, key, request_hash, status, body, etag, location, \
         created_at) ",
        8,
        records,
        |values, r| {
            values
                .push_bind(&r.account)
                .push_bind(&r.key)
                .push_bind(&r.request_hash)
                .push_bind(r.status)
                .push_bind(r.body.get())
                .push_bind(&r.etag)
                .push_bind(&r.location)
                .push_bind(r.created_at_ms);
        },
    )
    .await
}

async fn insert_audit(
    conn: &mut SqliteConnection,
    entries: &[&AuditRecord],
    keep_seq: bool,
) -> Result<(), sqlx::Error> {
    insert_rows(
        conn,
        "INSERT INTO audit (seq, time, account, actor, method, path, status, request_id, \
         user_agent) ",
        9,
        entries,
        |values, entry| {
            values
                .push_bind(keep_seq.then_some(entry.seq))
                .push_bind(entry.time_ms)
                .push_bind(&entry.account)
                .push_bind(&entry.actor)
                .push_bind(&entry.method)
                .push_bind(&entry.path)
                .push_bind(entry.status)
                .push_bind(&entry.request_id)
                .push_bind(&entry.user_agent);
        },
    )
    .await
}

/// Sets the `AUTOINCREMENT` counters to the file's, which inserting with
/// explicit `seq`s only raised to the largest one used.
async fn set_sequences(
    conn: &mut SqliteConnection,
    sequences: Sequences,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM sqlite_sequence WHERE name IN ('resources', 'audit')")
        .execute(&mut *conn)
        .await?;
    sqlx::query("INSERT INTO sqlite_sequence (name, seq) VALUES ('resources', ?), ('audit', ?)")
        .bind(sequences.resources)
        .bind(sequences.audit)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
