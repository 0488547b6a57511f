//! How scenarios show results: kubectl-like status rows, chosen
//! `status.atProvider` fields, and fakecloud's audit of calls, grouped.

use fakecloud::model::{Actor, AuditEntry};
use kube::Resource;
use serde::Serialize;
use serde_json::Value;

use crate::managed::{at_provider, condition, drift, drift_count, external_name};

/// `KIND/NAME  READY=True  SYNCED=True  DRIFT=0  EXTERNAL-NAME=vpc-...`,
/// as the columns of `kubectl get managed` show them.
pub fn status_row<K: Resource<DynamicType = ()> + Serialize>(object: &K) -> String {
    let status = |type_: &str| condition(object, type_).map_or_else(|| "-".to_owned(), |c| c.0);
    format!(
        "{}/{}  READY={}  SYNCED={}  DRIFT={}  EXTERNAL-NAME={}",
        K::kind(&()),
        object.meta().name.as_deref().unwrap_or_default(),
        status("Ready"),
        status("Synced"),
        drift_count(object).map_or_else(|| "-".to_owned(), |n| n.to_string()),
        external_name(object).unwrap_or_else(|| "-".into()),
    )
}

/// `status.drift`, one line per listed field, as a user reads it with
/// `kubectl get -o yaml`: `tags.env: declared prod, observed dev ->
/// WouldUpdate`; a first line with `UpToDate` and the count.
pub fn drift_lines<K: Serialize>(object: &K) -> Vec<String> {
    let drift = drift(object);
    let up_to_date = condition(object, "UpToDate").map_or_else(
        || "UpToDate unset".to_owned(),
        |(status, reason, _)| format!("UpToDate={status} ({reason})"),
    );
    let mut lines = vec![format!(
        "status.drift: {} field(s) differ; {up_to_date}",
        drift["count"].as_u64().unwrap_or(0)
    )];
    for field in drift["fields"].as_array().into_iter().flatten() {
        let text = |key: &str| field[key].as_str().map(str::to_owned);
        let value = |key: &str| match (text(key), field["sensitive"] == true) {
            (_, true) => "(sensitive)".to_owned(),
            (Some(v), _) => v,
            (None, _) => "(none)".to_owned(),
        };
        lines.push(format!(
            "  {}: declared {}, observed {} -> {}",
            text("path").unwrap_or_default(),
            value("declared"),
            value("observed"),
            text("action").unwrap_or_default()
        ));
    }
    lines
}

/// `atProvider: a=1, b.c=2` for the listed JSON pointers (without the
/// leading slash; `/` separates levels), skipping absent ones.
pub fn at_provider_fields<K: Serialize>(object: &K, fields: &[&str]) -> String {
    let at = at_provider(object);
    let shown: Vec<String> = fields
        .iter()
        .filter_map(|field| {
            let value = at.pointer(&format!("/{field}"))?;
            Some(format!("{}={}", field.replace('/', "."), plain(value)))
        })
        .collect();
    format!("atProvider: {}", shown.join(", "))
}

/// A JSON value without the quotes around strings.
pub fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Audit entries grouped by call, in order of first appearance:
/// `api: POST /v1/regions/us-east-1/vpcs -> 201` or `api: GET ... -> 200 (x4)`.
pub fn audit_lines(entries: &[AuditEntry]) -> Vec<String> {
    let mut grouped: Vec<(String, usize)> = Vec::new();
    for entry in entries {
        let call = format!(
            "{}: {} {} -> {}",
            entry.actor.as_str(),
            entry.method,
            entry.path,
            entry.status
        );
        match grouped.iter_mut().find(|(c, _)| *c == call) {
            Some((_, count)) => *count += 1,
            None => grouped.push((call, 1)),
        }
    }
    if grouped.is_empty() {
        return vec!["(no calls)".to_owned()];
    }
    grouped
        .into_iter()
        .map(|(call, count)| match count {
            1 => call,
            n => format!("{call} (x{n})"),
        })
        .collect()
}

/// Counts mutating calls (anything but GET/HEAD) made with an API key,
/// that is by the provider; an outside actor's changes do not count.
pub fn mutating(entries: &[AuditEntry]) -> usize {
    entries
        .iter()
        .filter(|e| e.actor == Actor::Api && e.method != "GET" && e.method != "HEAD")
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(seq: i64, method: &str, path: &str, status: u16) -> AuditEntry {
        serde_json::from_value(json!({
            "seq": seq, "time": "2026-11-22T00:00:00Z", "actor": "api",
            "method": method, "path": path, "status": status, "requestId": "r",
        }))
        .expect("valid audit entry")
    }

    #[test]
    fn audit_groups_repeated_calls_in_first_seen_order() {
        let entries = [
            entry(1, "POST", "/v1/vpcs", 201),
            entry(2, "GET", "/v1/vpcs/a", 200),
            entry(3, "GET", "/v1/vpcs/a", 200),
            entry(4, "GET", "/v1/vpcs/a", 404),
        ];
        assert_eq!(
            audit_lines(&entries),
            [
                "api: POST /v1/vpcs -> 201",
                "api: GET /v1/vpcs/a -> 200 (x2)",
                "api: GET /v1/vpcs/a -> 404"
            ]
        );
        assert_eq!(mutating(&entries), 1);
        assert_eq!(audit_lines(&[]), ["(no calls)"]);
    }

    #[test]
    fn at_provider_fields_shows_nested_fields_and_skips_absent_ones() {
        let vpc: apis::kinds::Vpc = serde_json::from_value(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": "a" },
            "spec": { "forProvider": { "region": "us-east-1" } },
            "status": { "atProvider": { "id": "vpc-1", "tags": { "owner": "team-b" } } },
        }))
        .expect("valid VPC");
        assert_eq!(
            at_provider_fields(&vpc, &["id", "tags/owner", "state"]),
            "atProvider: id=vpc-1, tags.owner=team-b"
        );
        assert_eq!(
            status_row(&vpc),
            "VPC/a  READY=-  SYNCED=-  DRIFT=-  EXTERNAL-NAME=-"
        );
    }

    #[test]
    fn drift_shows_the_count_the_condition_and_each_field_masked_where_sensitive() {
        let db: apis::kinds::Vpc = serde_json::from_value(json!({
            "apiVersion": "network.fakecloud.crossplane.io/v1alpha1", "kind": "VPC",
            "metadata": { "name": "a" },
            "spec": { "forProvider": { "region": "us-east-1" } },
            "status": {
                "conditions": [{ "type": "UpToDate", "status": "False", "reason": "DriftIgnored",
                                 "lastTransitionTime": "2026-11-24T00:00:00Z" }],
                "drift": { "count": 2, "fields": [
                    { "path": "tags.env", "declared": "prod", "observed": "dev",
                      "action": "WouldUpdate", "since": "2026-11-24T00:00:00Z" },
                    { "path": "secret", "sensitive": true,
                      "action": "WouldUpdate", "since": "2026-11-24T00:00:00Z" },
                ] },
            },
        }))
        .expect("valid VPC");
        assert_eq!(
            status_row(&db),
            "VPC/a  READY=-  SYNCED=-  DRIFT=2  EXTERNAL-NAME=-"
        );
        assert_eq!(
            drift_lines(&db),
            [
                "status.drift: 2 field(s) differ; UpToDate=False (DriftIgnored)",
                "  tags.env: declared prod, observed dev -> WouldUpdate",
                "  secret: declared (sensitive), observed (sensitive) -> WouldUpdate",
            ]
        );
    }
}
