//! The stored snapshots: the `snapshots` table (migration 0003), one row per
//! name with the file and what the list shows of it, so that listing never
//! reads a file.

use sqlx::SqlitePool;

use crate::db::Db;
use crate::error::ApiError;
use crate::field_rules::SNAPSHOT_NAME_PATTERN;
use crate::kinds::timestamp;
use crate::model::{ResourceCounts, SnapshotInfo};

use super::format::Header;

/// Longest name.
const NAME_MAX: usize = 63;

/// Refuses a name that is not [`SNAPSHOT_NAME_PATTERN`]: anything that
/// could be read as a path (`/`, `..`, a hidden file) or escaped.
pub fn check_name(name: &str) -> Result<(), ApiError> {
    let valid = (1..=NAME_MAX).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if valid {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "name",
            format!(
                "{name:?} is not a snapshot name: 1-{NAME_MAX} letters, digits, '.', '_' or '-', \
                 not starting with a dot ({SNAPSHOT_NAME_PATTERN})"
            ),
        ))
    }
}

pub fn not_found(name: &str) -> ApiError {
    ApiError::not_found("SnapshotNotFound", format!("no snapshot named {name:?}"))
}

#[derive(sqlx::FromRow)]
struct InfoRow {
    name: String,
    created_at: i64,
    size: i64,
    format_version: i64,
    fakecloud_version: String,
    accounts: String,
    counts: String,
}

const INFO_COLUMNS: &str =
    "name, created_at, size, format_version, fakecloud_version, accounts, counts";

impl InfoRow {
    fn info(self) -> Result<SnapshotInfo, ApiError> {
        let decode = |e| ApiError::internal("decoding a snapshot's list entry", e);
        Ok(SnapshotInfo {
            name: self.name,
            created_at: timestamp(self.created_at),
            size: u64::try_from(self.size).unwrap_or(0),
            format_version: u32::try_from(self.format_version).unwrap_or(0),
            fakecloud_version: self.fakecloud_version,
            accounts: serde_json::from_str(&self.accounts).map_err(decode)?,
            resources: serde_json::from_str::<ResourceCounts>(&self.counts).map_err(decode)?,
        })
    }
}

/// Every snapshot, by name.
pub async fn list(pool: &SqlitePool) -> Result<Vec<SnapshotInfo>, ApiError> {
    let rows: Vec<InfoRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {INFO_COLUMNS} FROM snapshots ORDER BY name"
    )))
    .fetch_all(pool)
    .await?;
    rows.into_iter().map(InfoRow::info).collect()
}

pub async fn exists(pool: &SqlitePool, name: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM snapshots WHERE name = ?)")
        .bind(name)
        .fetch_one(pool)
        .await
}

/// The file stored under `name`.
pub async fn file(pool: &SqlitePool, name: &str) -> Result<Option<Vec<u8>>, sqlx::Error> {
    sqlx::query_scalar("SELECT file FROM snapshots WHERE name = ?")
        .bind(name)
        .fetch_optional(pool)
        .await
}

pub fn already_exists(name: &str) -> ApiError {
    ApiError::conflict(
        "SnapshotAlreadyExists",
        format!("a snapshot named {name:?} exists; delete it first or choose another name"),
    )
}

/// A stored snapshot, and whether it replaced one of its name.
pub struct Stored {
    pub info: SnapshotInfo,
    pub replaced: bool,
}

/// Stores `file` (whose header is `header`) under `name`. An existing one
/// is replaced when `replace`, else `409 SnapshotAlreadyExists`.
pub async fn store(
    db: &Db,
    name: &str,
    header: &Header,
    file: &[u8],
    replace: bool,
) -> Result<Stored, ApiError> {
    let encode = |e| ApiError::internal("encoding a snapshot's list entry", e);
    let accounts = serde_json::to_string(&header.accounts).map_err(encode)?;
    let counts = serde_json::to_string(&header.counts.resources).map_err(encode)?;
    let mut tx = db.begin_write().await?;
    let existed = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM snapshots WHERE name = ?)")
        .bind(name)
        .fetch_one(&mut *tx)
        .await?;
    if existed && !replace {
        return Err(already_exists(name));
    }
    let row: InfoRow = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT OR REPLACE INTO snapshots \
         (name, created_at, size, format_version, fakecloud_version, accounts, counts, file) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING {INFO_COLUMNS}"
    )))
    .bind(name)
    .bind(crate::clock::now_ms())
    .bind(file.len() as i64)
    .bind(i64::from(header.format_version))
    .bind(&header.fakecloud_version)
    .bind(accounts)
    .bind(counts)
    .bind(file)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Stored {
        info: row.info()?,
        replaced: existed,
    })
}

/// Deletes the snapshot `name`; whether there was one.
pub async fn delete(db: &Db, name: &str) -> Result<bool, sqlx::Error> {
    let mut tx = db.begin_write().await?;
    let deleted = sqlx::query("DELETE FROM snapshots WHERE name = ?")
        .bind(name)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok(deleted > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_plain_segment() {
        for good in ["a", "before-upgrade", "v1.2_3", "-x", &"n".repeat(63)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "a\\b",
            "a b",
            "é",
            "a%2Fb",
            &"n".repeat(64),
        ] {
            let err = check_name(bad).unwrap_err();
            assert_eq!(err.field.as_deref(), Some("name"), "{bad}");
        }
    }
}
