//! The SQLite database: one writer connection, several readers.
//!
//! SQLite allows one writer at a time. Funnelling every write through a
//! one-connection pool makes writers queue in-process instead of spinning in
//! SQLite's busy handler, which keeps tail latency flat under load; readers
//! use WAL snapshots in parallel.

use std::ops::{Deref, DerefMut};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Sqlite, SqliteConnection, Transaction};
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::error::Error;

/// `:memory:` selects a private in-memory database.
pub const IN_MEMORY: &str = ":memory:";

#[derive(Clone, Debug)]
pub struct Db {
    pub read: SqlitePool,
    pub write: SqlitePool,
    /// FIFO queue in front of the writer: the pool's own wait list does not
    /// promise order, and under load some writers starved for seconds.
    write_queue: Arc<Mutex<()>>,
}

/// A write transaction (`BEGIN IMMEDIATE`) holding its place in the queue.
pub struct WriteTx {
    tx: Transaction<'static, Sqlite>,
    _turn: OwnedMutexGuard<()>,
}

impl WriteTx {
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await
    }
}

impl Deref for WriteTx {
    type Target = SqliteConnection;
    fn deref(&self) -> &SqliteConnection {
        &self.tx
    }
}

impl DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        &mut self.tx
    }
}

impl Db {
    pub async fn open(path: &str) -> Result<Db, Error> {
        let open_err = |error| Error::OpenDatabase {
            path: path.to_string(),
            error,
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
                write_queue: Arc::default(),
            }
        } else {
            if let Some(parent) = std::path::Path::new(path).parent()
                && !parent.as_os_str().is_empty()
            {
                std::fs::create_dir_all(parent).map_err(|error| Error::CreateDir {
                    path: parent.display().to_string(),
                    error,
                })?;
            }
            let options = SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(10));
            // Commits never checkpoint (a checkpoint fsyncs, and on a busy
            // disk that stalled writers for seconds); `checkpoint` runs
            // them beside the writer instead.
            let write = SqlitePoolOptions::new()
                .max_connections(1)
                .connect_with(options.clone().pragma("wal_autocheckpoint", "0"))
                .await
                .map_err(open_err)?;
            let read = SqlitePoolOptions::new()
                .max_connections(8)
                .connect_with(options)
                .await
                .map_err(open_err)?;
            Db {
                read,
                write,
                write_queue: Arc::default(),
            }
        };
        sqlx::migrate!("./migrations")
            .run(&db.write)
            .await
            .map_err(|error| Error::Migrate {
                path: path.to_string(),
                error,
            })?;
        Ok(db)
    }

    /// Waits for this writer's turn, then opens `BEGIN IMMEDIATE` (a
    /// read-then-write transaction must hold the write lock from the start).
    pub async fn begin_write(&self) -> Result<WriteTx, sqlx::Error> {
        let turn = self.write_queue.clone().lock_owned().await;
        let tx = self.write.begin_with("BEGIN IMMEDIATE").await?;
        Ok(WriteTx { tx, _turn: turn })
    }

    /// Holds every writer off (they queue behind the guard) until the guard
    /// is dropped: a moment in which several readers can begin transactions
    /// that all see one and the same state (a snapshot's parallel reads).
    pub async fn hold_writers(&self) -> OwnedMutexGuard<()> {
        self.write_queue.clone().lock_owned().await
    }

    /// How many connections read at once (1 for `:memory:`).
    pub fn readers(&self) -> u32 {
        self.read.options().get_max_connections()
    }

    /// Copies the WAL back into the database without blocking the writer.
    pub async fn checkpoint(&self) -> Result<(), sqlx::Error> {
        sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&self.read)
            .await
            .map(|_| ())
    }

    pub async fn close(&self) {
        self.read.close().await;
        self.write.close().await;
    }
}
