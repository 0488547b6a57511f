//! Row-level access to the `resources` and `idempotency` tables.
//!
//! Kinds differ only in their JSON spec, so storage, listing, versions and
//! state transitions are handled here once for all of them.

use sqlx::{AssertSqlSafe, SqliteConnection, SqlitePool};

use crate::model::Kind;

/// `pending_state` value meaning "the row disappears at `transition_at`".
pub const GONE: &str = "<gone>";

#[derive(sqlx::FromRow, serde::Deserialize, Clone, Debug)]
pub struct Row {
    pub seq: i64,
    pub account: String,
    pub kind: String,
    pub region: String,
    pub scope: String,
    pub name: String,
    pub parent: String,
    pub spec: String,
    pub secret_hash: Option<String>,
    pub state: String,
    pub pending_state: Option<String>,
    pub transition_at: Option<i64>,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Row {
    /// The row as it is at `now`: a due transition counts as done, so a
    /// reader never sees a state whose deadline has passed, even before the
    /// ticker has written it. `None` when the row is due to be gone.
    pub fn settled(mut self, now: i64) -> Option<Row> {
        match (self.pending_state.take(), self.transition_at) {
            (Some(pending), Some(at)) if at <= now => {
                if pending == GONE {
                    return None;
                }
                self.state = pending;
                self.updated_at = at;
                self.transition_at = None;
            }
            (pending, _) => self.pending_state = pending,
        }
        Some(self)
    }

    pub fn etag(&self) -> String {
        format!("\"{}\"", self.version)
    }
}

/// Where a resource lives: account, kind, region and (node groups) cluster.
#[derive(Clone, Debug)]
pub struct Location {
    pub account: String,
    pub kind: Kind,
    pub region: String,
    pub scope: String,
}

const COLUMNS: &str = "seq, account, kind, region, scope, name, parent, spec, secret_hash, state, \
     pending_state, transition_at, version, created_at, updated_at";

/// Writes every transition whose deadline has passed; returns rows touched.
pub async fn settle_due(conn: &mut SqliteConnection, now: i64) -> Result<u64, sqlx::Error> {
    let gone = sqlx::query(
        "DELETE FROM resources WHERE transition_at IS NOT NULL AND transition_at <= ? \
         AND pending_state = ?",
    )
    .bind(now)
    .bind(GONE)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    let done = sqlx::query(
        "UPDATE resources SET state = pending_state, updated_at = transition_at, \
         pending_state = NULL, transition_at = NULL \
         WHERE transition_at IS NOT NULL AND transition_at <= ?",
    )
    .bind(now)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(gone + done)
}

/// The earliest pending deadline, so the ticker knows when to wake.
pub async fn next_deadline(pool: &SqlitePool) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar("SELECT MIN(transition_at) FROM resources WHERE transition_at IS NOT NULL")
        .fetch_one(pool)
        .await
}

pub async fn find<'e, E>(
    executor: E,
    loc: &Location,
    name: &str,
) -> Result<Option<Row>, sqlx::Error>
where
    E: sqlx::SqliteExecutor<'e>,
{
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM resources \
         WHERE account = ? AND kind = ? AND region = ? AND scope = ? AND name = ?"
    )))
    .bind(&loc.account)
    .bind(loc.kind.as_str())
    .bind(&loc.region)
    .bind(&loc.scope)
    .bind(name)
    .fetch_optional(executor)
    .await
}

/// A tag filter: the tag must exist and, when a value is given, equal it.
pub type TagFilter = (String, Option<String>);

/// Up to `limit` rows after `after_seq`, oldest first.
pub async fn list(
    pool: &SqlitePool,
    loc: &Location,
    after_seq: i64,
    limit: i64,
    tags: &[TagFilter],
) -> Result<Vec<Row>, sqlx::Error> {
    let mut sql = format!(
        "SELECT {COLUMNS} FROM resources \
         WHERE account = ? AND kind = ? AND region = ? AND scope = ? AND seq > ?"
    );
    for (_, value) in tags {
        sql.push_str(match value {
            Some(_) => {
                " AND EXISTS (SELECT 1 FROM json_each(spec, '$.tags') WHERE key = ? AND value = ?)"
            }
            None => " AND EXISTS (SELECT 1 FROM json_each(spec, '$.tags') WHERE key = ?)",
        });
    }
    sql.push_str(" ORDER BY seq LIMIT ?");
    let mut query = sqlx::query_as(AssertSqlSafe(sql))
        .bind(&loc.account)
        .bind(loc.kind.as_str())
        .bind(&loc.region)
        .bind(&loc.scope)
        .bind(after_seq);
    for (key, value) in tags {
        query = query.bind(key);
        if let Some(value) = value {
            query = query.bind(value);
        }
    }
    query.bind(limit).fetch_all(pool).await
}

/// Every row of every account (admin inspection, snapshots), optionally
/// one kind.
pub async fn list_all<'e, E>(executor: E, kind: Option<Kind>) -> Result<Vec<Row>, sqlx::Error>
where
    E: sqlx::SqliteExecutor<'e>,
{
    match kind {
        Some(kind) => {
            sqlx::query_as(AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM resources WHERE kind = ? ORDER BY seq"
            )))
            .bind(kind.as_str())
            .fetch_all(executor)
            .await
        }
        None => {
            sqlx::query_as(AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM resources ORDER BY seq"
            )))
            .fetch_all(executor)
            .await
        }
    }
}

/// Rows of one kind and name in any account (admin addressing).
pub async fn find_any_account<'e, E>(
    executor: E,
    kind: Kind,
    name: &str,
) -> Result<Vec<Row>, sqlx::Error>
where
    E: sqlx::SqliteExecutor<'e>,
{
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM resources WHERE kind = ? AND name = ? ORDER BY seq"
    )))
    .bind(kind.as_str())
    .bind(name)
    .fetch_all(executor)
    .await
}

/// Rows of `kind` whose parent is `parent` (a VPC's subnets).
pub async fn children(
    conn: &mut SqliteConnection,
    account: &str,
    kind: Kind,
    parent: &str,
) -> Result<Vec<Row>, sqlx::Error> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM resources WHERE account = ? AND kind = ? AND parent = ? ORDER BY seq"
    )))
    .bind(account)
    .bind(kind.as_str())
    .bind(parent)
    .fetch_all(conn)
    .await
}

/// Node groups and database instances of `account` in `region` placed in
/// subnet `subnet` (their `subnetIds` name it), whatever their state: like a
/// real cloud, a subnet stays in use until its users are really gone.
pub async fn subnet_users(
    conn: &mut SqliteConnection,
    account: &str,
    region: &str,
    subnet: &str,
) -> Result<Vec<Row>, sqlx::Error> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM resources WHERE account = ? AND region = ? AND kind IN (?, ?) \
         AND EXISTS (SELECT 1 FROM json_each(resources.spec, '$.subnetIds') AS ids WHERE ids.value = ?) \
         ORDER BY seq"
    )))
    .bind(account)
    .bind(region)
    .bind(Kind::NodeGroup.as_str())
    .bind(Kind::DatabaseInstance.as_str())
    .bind(subnet)
    .fetch_all(conn)
    .await
}

pub struct NewRow<'a> {
    pub loc: &'a Location,
    pub name: &'a str,
    pub parent: &'a str,
    pub spec: &'a str,
    pub secret_hash: Option<&'a str>,
    pub state: &'a str,
    pub pending_state: Option<&'a str>,
    pub transition_at: Option<i64>,
    pub now: i64,
}

pub async fn insert(conn: &mut SqliteConnection, new: NewRow<'_>) -> Result<Row, sqlx::Error> {
    sqlx::query_as(AssertSqlSafe(format!(
        "INSERT INTO resources (account, kind, region, scope, name, parent, spec, secret_hash, \
         state, pending_state, transition_at, version, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?) RETURNING {COLUMNS}"
    )))
    .bind(&new.loc.account)
    .bind(new.loc.kind.as_str())
    .bind(&new.loc.region)
    .bind(&new.loc.scope)
    .bind(new.name)
    .bind(new.parent)
    .bind(new.spec)
    .bind(new.secret_hash)
    .bind(new.state)
    .bind(new.pending_state)
    .bind(new.transition_at)
    .bind(new.now)
    .bind(new.now)
    .fetch_one(conn)
    .await
}

/// Writes `row`'s mutable columns back (spec, secret, state, transition,
/// version, updated_at) and returns it as stored.
pub async fn update(conn: &mut SqliteConnection, row: &Row) -> Result<Row, sqlx::Error> {
    sqlx::query_as(AssertSqlSafe(format!(
        "UPDATE resources SET spec = ?, secret_hash = ?, state = ?, pending_state = ?, \
         transition_at = ?, version = ?, updated_at = ? WHERE seq = ? RETURNING {COLUMNS}"
    )))
    .bind(&row.spec)
    .bind(&row.secret_hash)
    .bind(&row.state)
    .bind(&row.pending_state)
    .bind(row.transition_at)
    .bind(row.version)
    .bind(row.updated_at)
    .bind(row.seq)
    .fetch_one(conn)
    .await
}

pub async fn delete(conn: &mut SqliteConnection, seq: i64) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM resources WHERE seq = ?")
        .bind(seq)
        .execute(conn)
        .await?;
    Ok(())
}

/// The stored first answer to a create sent with an idempotency key.
#[derive(sqlx::FromRow, Clone, Debug)]
pub struct IdempotentResult {
    pub request_hash: String,
    pub status: i64,
    pub body: String,
    pub etag: String,
    pub location: String,
}

pub async fn find_idempotent(
    conn: &mut SqliteConnection,
    account: &str,
    key: &str,
) -> Result<Option<IdempotentResult>, sqlx::Error> {
    sqlx::query_as(
        "SELECT request_hash, status, body, etag, location FROM idempotency \
         WHERE account = ? AND key = ?",
    )
    .bind(account)
    .bind(key)
    .fetch_optional(conn)
    .await
}

pub async fn save_idempotent(
    conn: &mut SqliteConnection,
    account: &str,
    key: &str,
    result: &IdempotentResult,
    now: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO idempotency (account, key, request_hash, status, body, etag, location, \
         created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(account)
    .bind(key)
    .bind(&result.request_hash)
    .bind(result.status)
    .bind(&result.body)
    .bind(&result.etag)
    .bind(&result.location)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Empties every table (admin reset).
pub async fn reset(db: &crate::db::Db) -> Result<(), sqlx::Error> {
    let mut tx = db.begin_write().await?;
    for table in ["resources", "idempotency", "audit"] {
        sqlx::query(AssertSqlSafe(format!("DELETE FROM {table}")))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await
}
