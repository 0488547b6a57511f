//! Snapshots: the whole state saved under a name as one portable file
//! ([`format`]), listed, downloaded, uploaded, and loaded back, whole
//! (`overwrite`) or account by account (`merge`).
//!
//! **Where they live.** In the `snapshots` table of fakecloud's own database
//! (migration 0003), one row per name holding the file and what the list
//! shows. So snapshots need no folder or path handling of their own, work
//! the same over `:memory:` (where they last as long as the process, like
//! the state), survive restarts with the database file, and a save is
//! stored or not, never half-written. They are not part of the state: a
//! reset or a load leaves them as they are.
//!
//! **Consistency while serving.** A save ([`capture`]) reads the tables in
//! read transactions that all see one commit: in WAL mode a reader sees the
//! state as of its first read throughout while the writer carries on, and
//! the save's readers begin while writers are held off (for the moment
//! that takes), so the API keeps answering (and writing) during a save and
//! the file is the state as of one instant. The in-memory settings are
//! copied just before, and a load holds a gate that saves wait on, so a
//! save never sees half a load.
//!
//! **Loads are all or nothing.** A file is decoded and checked whole
//! ([`read`]) before anything changes, then written in one write
//! transaction ([`apply`]); only then do the settings change. One load at
//! a time: a second one is refused (`409 LoadInProgress`), as waiting behind
//! one would load a state onto one that the caller has not seen.

mod apply;
mod capture;
pub mod catalog;
mod check;
pub mod format;
pub mod routes;

use tokio::sync::{Mutex, RwLock};

pub use apply::apply;
pub use capture::capture;
use format::{ResourceRecord, SnapshotError, World};

use crate::store::Row;

/// What orders saves and loads.
#[derive(Default)]
pub struct Gate {
    /// Held by the load under way.
    loading: Mutex<()>,
    /// Written by a load while it changes the state, read by a save while
    /// it copies it.
    world: RwLock<()>,
}

/// Decodes a file and checks it through: a world that can be loaded.
pub fn read(file: &[u8]) -> Result<World, SnapshotError> {
    let world = format::decode(file)?;
    check::check(&world)?;
    Ok(world)
}

impl ResourceRecord {
    /// The stored row of this record, its transition due at `transition_at`.
    pub fn to_row(&self, transition_at: Option<i64>) -> Row {
        Row {
            seq: self.seq,
            account: self.account.clone(),
            kind: self.kind.as_str().to_string(),
            region: self.region.clone(),
            scope: self.scope.clone(),
            name: self.name.clone(),
            parent: self.parent.clone(),
            spec: self.spec.get().to_string(),
            secret_hash: self.secret_hash.clone(),
            state: self.state.clone(),
            pending_state: self.pending_state.clone(),
            transition_at,
            version: self.version,
            created_at: self.created_at_ms,
            updated_at: self.updated_at_ms,
        }
    }
}
