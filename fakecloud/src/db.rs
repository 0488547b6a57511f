//! The SQLite database: one writer connection, several readers.
//!
//! SQLite allows one writer at a time. Funnelling every write through a
//! one-connection pool makes writers queue in-process instead of spinning in
//! SQLite's busy handler, which keeps tail latency flat under load; readers
//! use WAL snapshots in parallel.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::error::Error;

/// `:memory:` selects a private in-memory database.
pub const IN_MEMORY: &str = ":memory:";

#[derive(Clone, Debug)]
pub struct Db {
    pub read: SqlitePool,
    pub write: SqlitePool,
}

impl Db {
    pub async fn open(path: &str) -> Result<Db, Error> {
        let open_err = |source| Error::OpenDatabase {
            path: path.to_string(),
            source,
        };
        let db = if path == IN_MEMORY {
            // One connection holds the whole database; it must never be
            // recycled or the data goes with it.
            let options = SqliteConnectOptions::from_str("sqlite::memory:").map_err(open_err)?;
            let pool = SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .connect_with(options)
                .await
                .map_err(open_err)?;
            Db {
                read: pool.clone(),
                write: pool,
            }
        } else {
            if let Some(parent) = std::path::Path::new(path).parent()
                && !parent.as_os_str().is_empty()
            {
                std::fs::create_dir_all(parent).map_err(|source| Error::CreateDir {
                    path: parent.display().to_string(),
                    source,
                })?;
            }
            let options = SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(10));
            let write = SqlitePoolOptions::new()
                .max_connections(1)
                .connect_with(options.clone())
                .await
                .map_err(open_err)?;
            let read = SqlitePoolOptions::new()
                .max_connections(8)
                .connect_with(options)
                .await
                .map_err(open_err)?;
            Db { read, write }
        };
        sqlx::migrate!("./migrations")
            .run(&db.write)
            .await
            .map_err(|source| Error::Migrate {
                path: path.to_string(),
                source,
            })?;
        Ok(db)
    }

    pub async fn close(&self) {
        self.read.close().await;
        self.write.close().await;
    }
}
