//! The audit log: every call, who made it and how it ended.
//!
//! Entries go through a channel to one writer task that inserts them in
//! batches, so recording a call costs the request no database write. Reads
//! flush first, so a test sees every call that has been answered.

use axum::http::{HeaderMap, header};
use sqlx::{AssertSqlSafe, SqlitePool};

use crate::db::Db;
use tokio::sync::{mpsc, oneshot};

use crate::kinds::timestamp;
use crate::model::{Actor, AuditEntry, AuditQuery};

const BATCH: usize = 512;

/// The most bytes of a `User-Agent` the audit keeps. Enough for any real
/// client's (`fakecloud-provider/0.1.0 (pod-7f9c…)`, a browser's); a caller
/// sending kilobytes would otherwise grow every row it makes.
pub const USER_AGENT_MAX_BYTES: usize = 256;

/// The caller's `User-Agent` as the audit keeps it: the first header, bytes
/// that are not UTF-8 replaced (a header may carry any opaque byte, the
/// audit is text), cut to [`USER_AGENT_MAX_BYTES`] on a character boundary.
/// `None` when the call sent none or an empty one.
pub fn user_agent(headers: &HeaderMap) -> Option<String> {
    let sent = headers.get(header::USER_AGENT)?.as_bytes();
    // Only the head is decoded, so a huge header is never copied whole. Its
    // 4 spare bytes let a character straddling the cut decode intact and go
    // whole, where slicing at the cut would leave a replacement character.
    let head = &sent[..sent.len().min(USER_AGENT_MAX_BYTES + 4)];
    let mut agent = String::from_utf8_lossy(head).into_owned();
    agent.truncate(agent.floor_char_boundary(USER_AGENT_MAX_BYTES));
    (!agent.is_empty()).then_some(agent)
}

pub struct Entry {
    pub time: i64,
    pub account: Option<String>,
    pub actor: Actor,
    pub method: String,
    pub path: String,
    pub status: u16,
    pub request_id: String,
    /// See [`user_agent`].
    pub user_agent: Option<String>,
}

enum Message {
    Entry(Entry),
    Flush(oneshot::Sender<()>),
}

#[derive(Clone)]
pub struct AuditLog {
    sender: mpsc::UnboundedSender<Message>,
}

impl AuditLog {
    /// Starts the writer task on `pool`.
    pub fn start(db: Db) -> (AuditLog, tokio::task::JoinHandle<()>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let task = tokio::spawn(write_loop(db, receiver));
        (AuditLog { sender }, task)
    }

    pub fn record(&self, entry: Entry) {
        // Fails only after shutdown, when nothing is listening any more.
        let _ = self.sender.send(Message::Entry(entry));
    }

    /// Waits until every entry recorded so far is in the database.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.sender.send(Message::Flush(done)).is_ok() {
            let _ = wait.await;
        }
    }
}

async fn write_loop(db: Db, mut receiver: mpsc::UnboundedReceiver<Message>) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut waiters = Vec::new();
    while let Some(first) = receiver.recv().await {
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match message {
                Message::Entry(entry) => batch.push(entry),
                Message::Flush(done) => waiters.push(done),
            }
            if batch.len() < BATCH {
                next = receiver.try_recv().ok();
            }
        }
        if let Err(err) = insert(&db, &batch).await {
            tracing::error!(%err, lost = batch.len(), "writing audit entries");
        }
        batch.clear();
        for done in waiters.drain(..) {
            let _ = done.send(());
        }
    }
}

async fn insert(db: &Db, batch: &[Entry]) -> Result<(), sqlx::Error> {
    if batch.is_empty() {
        return Ok(());
    }
    let mut tx = db.begin_write().await?;
    for entry in batch {
        sqlx::query(
            "INSERT INTO audit \
             (time, account, actor, method, path, status, request_id, user_agent) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(entry.time)
        .bind(&entry.account)
        .bind(entry.actor.as_str())
        .bind(&entry.method)
        .bind(&entry.path)
        .bind(i64::from(entry.status))
        .bind(&entry.request_id)
        .bind(&entry.user_agent)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await
}

#[derive(sqlx::FromRow)]
struct AuditRow {
    seq: i64,
    time: i64,
    account: Option<String>,
    actor: String,
    method: String,
    path: String,
    status: i64,
    request_id: String,
    user_agent: Option<String>,
}

/// Entries matching every given filter, oldest first.
pub async fn query(pool: &SqlitePool, filter: &AuditQuery) -> Result<Vec<AuditEntry>, sqlx::Error> {
    let mut sql = String::from(
        "SELECT seq, time, account, actor, method, path, status, request_id, user_agent \
         FROM audit WHERE 1 = 1",
    );
    if filter.account.is_some() {
        sql.push_str(" AND account = ?");
    }
    if filter.actor.is_some() {
        sql.push_str(" AND actor = ?");
    }
    if filter.method.is_some() {
        sql.push_str(" AND method = ?");
    }
    if filter.path_prefix.is_some() {
        sql.push_str(" AND substr(path, 1, length(?)) = ?");
    }
    match filter.mutating {
        Some(true) => sql.push_str(" AND method NOT IN ('GET', 'HEAD')"),
        Some(false) => sql.push_str(" AND method IN ('GET', 'HEAD')"),
        None => {}
    }
    if filter.user_agent.is_some() {
        sql.push_str(" AND user_agent = ?");
    }
    if filter.after_seq.is_some() {
        sql.push_str(" AND seq > ?");
    }
    sql.push_str(" ORDER BY seq");
    let mut q = sqlx::query_as::<_, AuditRow>(AssertSqlSafe(sql));
    if let Some(account) = &filter.account {
        q = q.bind(account);
    }
    if let Some(actor) = filter.actor {
        q = q.bind(actor.as_str());
    }
    if let Some(method) = &filter.method {
        q = q.bind(method.to_ascii_uppercase());
    }
    if let Some(prefix) = &filter.path_prefix {
        q = q.bind(prefix).bind(prefix);
    }
    if let Some(agent) = &filter.user_agent {
        q = q.bind(agent);
    }
    if let Some(after) = filter.after_seq {
        q = q.bind(after);
    }
    let rows = q.fetch_all(pool).await?;
    Ok(rows
        .into_iter()
        .map(|r| AuditEntry {
            seq: r.seq,
            time: timestamp(r.time),
            account: r.account,
            actor: serde_json::from_value(serde_json::Value::String(r.actor))
                .unwrap_or(Actor::Anonymous),
            method: r.method,
            path: r.path,
            status: u16::try_from(r.status).unwrap_or(0),
            request_id: r.request_id,
            user_agent: r.user_agent,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn agent_of(value: &[u8]) -> Option<String> {
        let mut headers = HeaderMap::new();
        headers.insert(header::USER_AGENT, HeaderValue::from_bytes(value).unwrap());
        user_agent(&headers)
    }

    #[test]
    fn a_user_agent_is_kept_as_sent() {
        assert_eq!(
            agent_of(b"fakecloud-provider/0.1.0 (pod-a)").as_deref(),
            Some("fakecloud-provider/0.1.0 (pod-a)")
        );
    }

    #[test]
    fn no_or_an_empty_user_agent_is_none() {
        assert_eq!(user_agent(&HeaderMap::new()), None);
        assert_eq!(agent_of(b""), None);
    }

    #[test]
    fn a_long_user_agent_is_cut_on_a_character_boundary() {
        let ascii = "a".repeat(1000);
        assert_eq!(
            agent_of(ascii.as_bytes()).unwrap(),
            ascii[..USER_AGENT_MAX_BYTES]
        );
        // 'é' is two bytes: one at byte 255 would straddle the cut.
        let accents = format!("{}{}", "a".repeat(USER_AGENT_MAX_BYTES - 1), "é".repeat(10));
        let kept = agent_of(accents.as_bytes()).unwrap();
        assert_eq!(kept, "a".repeat(USER_AGENT_MAX_BYTES - 1));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_replaced() {
        assert_eq!(agent_of(b"curl\xff/8").as_deref(), Some("curl\u{fffd}/8"));
    }
}
