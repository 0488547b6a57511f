//! What the console reads from the database: pages of resources with their
//! counts per state, one resource and the audit entries about it, audit
//! entries by filter, the last minute's calls, and fingerprints that tell
//! the live pages when to refresh.
//!
//! Its own queries rather than `store`'s and `audit`'s: the API lists one
//! kind of one account oldest first, while a person wants every kind,
//! newest first, filtered by state and counted, one page at a time however
//! many rows there are (keyset paging on `seq`, never `OFFSET`).

use std::collections::BTreeMap;

use sqlx::{QueryBuilder, Sqlite, SqlitePool};

use crate::clock::now_ms;
use crate::model::Kind;
use crate::store::{GONE, Row};

/// Rows on one page of the resources table.
pub const PAGE_SIZE: i64 = 50;
/// Audit entries a page shows, and the most one live update sends.
pub const AUDIT_ROWS: i64 = 100;

/// Each resource as it is now: a transition whose deadline has passed counts
/// as done (as `Row::settled` does), so a filter on state matches what the
/// page shows even before the ticker has written the transition.
const LIVE: &str = "WITH live AS (SELECT seq, account, kind, region, scope, name, spec, created_at, \
     CASE WHEN transition_at IS NOT NULL AND transition_at <= ";
const LIVE_END: &str = " THEN pending_state ELSE state END AS state FROM resources) ";

/// A tag filter: the tag exists and, when a value is given, has it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TagFilter {
    pub key: String,
    pub value: Option<String>,
}

impl TagFilter {
    /// `key=value` or `key`; `None` for an empty string.
    pub fn parse(text: &str) -> Option<TagFilter> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        Some(match text.split_once('=') {
            Some((key, value)) => TagFilter {
                key: key.trim().to_owned(),
                value: Some(value.trim().to_owned()),
            },
            None => TagFilter {
                key: text.to_owned(),
                value: None,
            },
        })
    }
}

/// What the resources page is narrowed to.
#[derive(Clone, Debug, Default)]
pub struct ResourceFilter {
    pub kind: Option<Kind>,
    pub state: Option<String>,
    pub account: Option<String>,
    pub region: Option<String>,
    pub tag: Option<TagFilter>,
}

/// Which page of the newest-first table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cursor {
    Newest,
    /// The page of rows older than this `seq`.
    Before(i64),
    /// The page of rows newer than this `seq`.
    After(i64),
}

/// One row of the resources table.
#[derive(sqlx::FromRow, Clone, Debug)]
struct LiveRow {
    seq: i64,
    account: String,
    kind: String,
    region: String,
    scope: String,
    name: String,
    spec: String,
    created_at: i64,
    state: String,
}

#[derive(Clone, Debug)]
pub struct Listed {
    pub seq: i64,
    pub kind: Kind,
    pub account: String,
    pub region: String,
    /// The node group's cluster; empty for other kinds.
    pub scope: String,
    pub name: String,
    pub state: String,
    pub tags: BTreeMap<String, String>,
    pub created_at: i64,
}

/// The `tags` of a stored spec (every kind keeps them there).
pub fn tags_of(spec: &str) -> BTreeMap<String, String> {
    serde_json::from_str::<serde_json::Value>(spec)
        .ok()
        .and_then(|spec| serde_json::from_value(spec.get("tags")?.clone()).ok())
        .unwrap_or_default()
}

/// One page, newest first, with the cursors of its neighbours.
#[derive(Debug, Default)]
pub struct ResourcePage {
    pub rows: Vec<Listed>,
    /// Cursor of the next older page, when there is one.
    pub older: Option<i64>,
    /// Cursor of the next newer page, when there is one.
    pub newer: Option<i64>,
}

/// How many resources of a kind are in a state.
#[derive(sqlx::FromRow, Clone, Debug, PartialEq, Eq)]
pub struct StateCount {
    pub kind: String,
    pub state: String,
    pub count: i64,
}

fn live_query(now: i64, select: &str) -> QueryBuilder<Sqlite> {
    let mut query = QueryBuilder::new(LIVE);
    query.push_bind(now).push(LIVE_END).push(select);
    query.push(" FROM live WHERE state <> ").push_bind(GONE);
    query
}

fn push_filter(query: &mut QueryBuilder<Sqlite>, filter: &ResourceFilter, with_state: bool) {
    if let Some(kind) = filter.kind {
        query.push(" AND kind = ").push_bind(kind.as_str());
    }
    if let (true, Some(state)) = (with_state, &filter.state) {
        query.push(" AND state = ").push_bind(state.clone());
    }
    if let Some(account) = &filter.account {
        query.push(" AND account = ").push_bind(account.clone());
    }
    if let Some(region) = &filter.region {
        query.push(" AND region = ").push_bind(region.clone());
    }
    if let Some(tag) = &filter.tag {
        query
            .push(" AND EXISTS (SELECT 1 FROM json_each(spec, '$.tags') WHERE key = ")
            .push_bind(tag.key.clone());
        if let Some(value) = &tag.value {
            query.push(" AND value = ").push_bind(value.clone());
        }
        query.push(")");
    }
}

/// One page of the resources matching `filter`.
pub async fn resources(
    pool: &SqlitePool,
    filter: &ResourceFilter,
    cursor: Cursor,
) -> Result<ResourcePage, sqlx::Error> {
    let mut query = live_query(
        now_ms(),
        "SELECT seq, account, kind, region, scope, name, spec, created_at, state",
    );
    push_filter(&mut query, filter, true);
    match cursor {
        Cursor::Newest => query.push(" ORDER BY seq DESC"),
        Cursor::Before(seq) => query
            .push(" AND seq < ")
            .push_bind(seq)
            .push(" ORDER BY seq DESC"),
        Cursor::After(seq) => query
            .push(" AND seq > ")
            .push_bind(seq)
            .push(" ORDER BY seq ASC"),
    };
    // One more than a page tells whether another page follows.
    query.push(" LIMIT ").push_bind(PAGE_SIZE + 1);
    let mut rows: Vec<LiveRow> = query.build_query_as().fetch_all(pool).await?;
    let more = rows.len() as i64 > PAGE_SIZE;
    rows.truncate(PAGE_SIZE as usize);
    if let Cursor::After(_) = cursor {
        rows.reverse();
    }
    let first = rows.first().map(|r| r.seq);
    let last = rows.last().map(|r| r.seq);
    let (older, newer) = match cursor {
        Cursor::Newest => (last.filter(|_| more), None),
        Cursor::Before(_) => (last.filter(|_| more), first),
        Cursor::After(_) => (last, first.filter(|_| more)),
    };
    let rows = rows
        .into_iter()
        .filter_map(|row| {
            Some(Listed {
                seq: row.seq,
                kind: Kind::parse(&row.kind)?,
                tags: tags_of(&row.spec),
                account: row.account,
                region: row.region,
                scope: row.scope,
                name: row.name,
                state: row.state,
                created_at: row.created_at,
            })
        })
        .collect();
    Ok(ResourcePage { rows, older, newer })
}

/// Counts per kind and state of the resources matching `filter`, its state
/// aside (so the counts show what the state filter can choose from).
pub async fn state_counts(
    pool: &SqlitePool,
    filter: &ResourceFilter,
) -> Result<Vec<StateCount>, sqlx::Error> {
    let mut query = live_query(now_ms(), "SELECT kind, state, COUNT(*) AS count");
    push_filter(&mut query, filter, false);
    query.push(" GROUP BY kind, state ORDER BY kind, state");
    query.build_query_as().fetch_all(pool).await
}

/// Every account that owns a resource.
pub async fn accounts(pool: &SqlitePool) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT DISTINCT account FROM resources ORDER BY account")
        .fetch_all(pool)
        .await
}

/// The resource stored as `seq`, as it is now; `None` when it is gone.
pub async fn resource(pool: &SqlitePool, seq: i64) -> Result<Option<Row>, sqlx::Error> {
    let row: Option<Row> = sqlx::query_as("SELECT * FROM resources WHERE seq = ?")
        .bind(seq)
        .fetch_optional(pool)
        .await?;
    Ok(row.and_then(|row| row.settled(now_ms())))
}

/// An audit entry as the console shows it.
#[derive(sqlx::FromRow, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Call {
    pub seq: i64,
    pub time: i64,
    pub account: Option<String>,
    pub actor: String,
    pub method: String,
    pub path: String,
    pub status: i64,
    pub user_agent: Option<String>,
}

const CALL_COLUMNS: &str =
    "SELECT seq, time, account, actor, method, path, status, user_agent FROM audit";

/// The `/v1` path of a resource: `/v1/regions/{region}/vpcs/{id}`, or
/// `.../clusters/{cluster}/nodegroups/{name}` for a node group.
pub fn api_path(kind: Kind, region: &str, scope: &str, name: &str) -> String {
    let cluster = if kind.in_cluster() {
        format!("/clusters/{scope}")
    } else {
        String::new()
    };
    format!("/v1/regions/{region}{cluster}/{}/{name}", kind.collection())
}

/// Where the console's own changes of a resource are audited.
pub fn console_path(seq: i64) -> String {
    format!("/console/resources/{seq}")
}

/// The newest calls about one resource: its `/v1` path and the paths
/// below it (its owner's calls), and its admin and console paths (outside
/// actors' changes).
pub async fn history(pool: &SqlitePool, row: &Row, kind: Kind) -> Result<Vec<Call>, sqlx::Error> {
    let api = api_path(kind, &row.region, &row.scope, &row.name);
    let admin = format!("/admin/resources/{kind}/{}", row.name);
    let console = console_path(row.seq);
    let mut query = QueryBuilder::new(CALL_COLUMNS);
    query
        .push(" WHERE (account = ")
        .push_bind(row.account.clone());
    push_at_or_below(&mut query, &api);
    query.push(") OR path = ").push_bind(admin);
    query.push(" OR (1 = 1");
    push_at_or_below(&mut query, &console);
    query
        .push(") ORDER BY seq DESC LIMIT ")
        .push_bind(AUDIT_ROWS);
    query.build_query_as().fetch_all(pool).await
}

/// ` AND (path = base OR path starts with base/)`, without `LIKE`, whose
/// wildcards an id could contain.
fn push_at_or_below(query: &mut QueryBuilder<Sqlite>, base: &str) {
    let below = format!("{base}/");
    query.push(" AND (path = ").push_bind(base.to_owned());
    query
        .push(" OR substr(path, 1, ")
        .push_bind(below.chars().count() as i64)
        .push(") = ")
        .push_bind(below)
        .push(")");
}

/// Which answers the audit page shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StatusClass {
    #[default]
    Any,
    /// 1xx to 3xx.
    Ok,
    /// Every 4xx and 5xx.
    Failed,
    Throttled,
    /// 4xx but 429.
    ClientError,
    ServerError,
}

impl StatusClass {
    pub const ALL: [StatusClass; 6] = [
        StatusClass::Any,
        StatusClass::Ok,
        StatusClass::Failed,
        StatusClass::Throttled,
        StatusClass::ClientError,
        StatusClass::ServerError,
    ];

    /// The value in the page's query.
    pub fn as_str(self) -> &'static str {
        match self {
            StatusClass::Any => "",
            StatusClass::Ok => "ok",
            StatusClass::Failed => "failed",
            StatusClass::Throttled => "429",
            StatusClass::ClientError => "4xx",
            StatusClass::ServerError => "5xx",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            StatusClass::Any => "any",
            StatusClass::Ok => "success (< 400)",
            StatusClass::Failed => "failed (>= 400)",
            StatusClass::Throttled => "throttled (429)",
            StatusClass::ClientError => "other 4xx",
            StatusClass::ServerError => "5xx",
        }
    }

    pub fn parse(text: &str) -> StatusClass {
        StatusClass::ALL
            .into_iter()
            .find(|class| class.as_str() == text)
            .unwrap_or_default()
    }

    /// Its SQL condition on `status`: constant text, no input in it.
    fn condition(self) -> Option<&'static str> {
        match self {
            StatusClass::Any => None,
            StatusClass::Ok => Some("status < 400"),
            StatusClass::Failed => Some("status >= 400"),
            StatusClass::Throttled => Some("status = 429"),
            StatusClass::ClientError => Some("status >= 400 AND status < 500 AND status <> 429"),
            StatusClass::ServerError => Some("status >= 500"),
        }
    }
}

/// What the audit page is narrowed to.
#[derive(Clone, Debug, Default)]
pub struct AuditFilter {
    pub account: Option<String>,
    /// An `Actor` as stored: `api`, `external`, `admin`, `anonymous`.
    pub actor: Option<String>,
    pub method: Option<String>,
    pub status: StatusClass,
}

fn push_audit_filter(query: &mut QueryBuilder<Sqlite>, filter: &AuditFilter) {
    if let Some(account) = &filter.account {
        query.push(" AND account = ").push_bind(account.clone());
    }
    if let Some(actor) = &filter.actor {
        query.push(" AND actor = ").push_bind(actor.clone());
    }
    if let Some(method) = &filter.method {
        query
            .push(" AND method = ")
            .push_bind(method.to_ascii_uppercase());
    }
    if let Some(condition) = filter.status.condition() {
        query.push(" AND ").push(condition);
    }
}

/// The newest matching calls, newest first.
pub async fn newest_calls(
    pool: &SqlitePool,
    filter: &AuditFilter,
) -> Result<Vec<Call>, sqlx::Error> {
    let mut query = QueryBuilder::new(CALL_COLUMNS);
    query.push(" WHERE 1 = 1");
    push_audit_filter(&mut query, filter);
    query
        .push(" ORDER BY seq DESC LIMIT ")
        .push_bind(AUDIT_ROWS);
    query.build_query_as().fetch_all(pool).await
}

/// Matching calls after `after` up to `upto`, oldest first, at most
/// [`AUDIT_ROWS`].
pub async fn calls_between(
    pool: &SqlitePool,
    filter: &AuditFilter,
    after: i64,
    upto: i64,
) -> Result<Vec<Call>, sqlx::Error> {
    let mut query = QueryBuilder::new(CALL_COLUMNS);
    query
        .push(" WHERE seq > ")
        .push_bind(after)
        .push(" AND seq <= ")
        .push_bind(upto);
    push_audit_filter(&mut query, filter);
    query.push(" ORDER BY seq LIMIT ").push_bind(AUDIT_ROWS);
    query.build_query_as().fetch_all(pool).await
}

/// The newest audit `seq` (0 for an empty log).
pub async fn last_call(pool: &SqlitePool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM audit")
        .fetch_one(pool)
        .await
}

/// Calls in a recent window.
#[derive(sqlx::FromRow, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub calls: i64,
    pub throttled: i64,
    pub server_errors: i64,
}

/// The calls of the last `window_ms`. Found from the newest entry back
/// (`seq` follows time), so the cost is the window's entries, not the log's.
pub async fn traffic(pool: &SqlitePool, window_ms: i64) -> Result<Traffic, sqlx::Error> {
    sqlx::query_as(
        "SELECT COUNT(*) AS calls, \
         COALESCE(SUM(status = 429), 0) AS throttled, \
         COALESCE(SUM(status >= 500), 0) AS server_errors \
         FROM audit WHERE seq > COALESCE( \
           (SELECT seq FROM audit WHERE time < ? ORDER BY seq DESC LIMIT 1), 0)",
    )
    .bind(now_ms() - window_ms)
    .fetch_one(pool)
    .await
}

/// Changes whenever a resource is created, changed, moves to another state
/// or goes: the live pages refresh when it does.
pub async fn resources_fingerprint(pool: &SqlitePool) -> Result<String, sqlx::Error> {
    let (count, last, versions, updated): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COALESCE(MAX(seq), 0), COALESCE(SUM(version), 0), \
         COALESCE(SUM(updated_at), 0) FROM resources",
    )
    .fetch_one(pool)
    .await?;
    // Due transitions count as done before the ticker writes them.
    let due: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM resources WHERE transition_at IS NOT NULL AND transition_at <= ?",
    )
    .bind(now_ms())
    .fetch_one(pool)
    .await?;
    Ok(format!("{count}/{last}/{versions}/{updated}/{due}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_filter_is_a_key_or_a_key_and_its_value() {
        assert_eq!(TagFilter::parse("  "), None);
        assert_eq!(
            TagFilter::parse("team"),
            Some(TagFilter {
                key: "team".into(),
                value: None
            })
        );
        assert_eq!(
            TagFilter::parse("team = a=b"),
            Some(TagFilter {
                key: "team".into(),
                value: Some("a=b".into())
            })
        );
    }

    #[test]
    fn node_groups_live_in_their_cluster() {
        assert_eq!(
            api_path(Kind::NodeGroup, "us-east-1", "c1", "ng"),
            "/v1/regions/us-east-1/clusters/c1/nodegroups/ng"
        );
        assert_eq!(
            api_path(Kind::Vpc, "eu-west-1", "", "vpc-1"),
            "/v1/regions/eu-west-1/vpcs/vpc-1"
        );
    }

    #[test]
    fn an_unknown_status_class_shows_everything() {
        assert_eq!(StatusClass::parse("5xx"), StatusClass::ServerError);
        assert_eq!(StatusClass::parse("nonsense"), StatusClass::Any);
    }
}
