//! What a file's records must be before any of them is loaded, so that a
//! load either takes the whole file or leaves the state as it was, and a
//! bad file is a 400 naming its first fault rather than a storage error
//! halfway through.
//!
//! Checked: the form of every record (known kinds, regions, states and
//! actors, specs a kind can read, transitions whose time left is sane),
//! that records are in the file's order with no key twice, that every
//! account is one the header lists, and the settings (as the admin API
//! would check them). Not checked: rules between resources (a subnet
//! inside its VPC's block): a file holds a state as it was stored, and a
//! hand-edited one may well bend them.

use std::collections::HashSet;

use crate::admin;
use crate::model::{Kind, MAX_DELAY_MS, REGIONS, ResourceCounts};
use crate::store::GONE;

use super::format::{
    AuditRecord, Header, IdempotencyRecord, ResourceRecord, SNAPSHOT, SnapshotError, World,
};

/// Checks `world` (as `format::decode` read it) through and through.
pub fn check(world: &World) -> Result<(), SnapshotError> {
    let header = &world.header;
    check_header(header)?;
    let accounts: HashSet<&str> = header.accounts.iter().map(String::as_str).collect();
    let known = |line: usize, account: &str| {
        if accounts.contains(account) {
            Ok(())
        } else {
            Err(SNAPSHOT.corrupt(
                line,
                format!("account {account:?} is not in the header's accounts"),
            ))
        }
    };
    for own in &header.throttling.accounts {
        known(1, &own.account)?;
    }
    let mut counts = ResourceCounts::default();
    let mut keys = HashSet::new();
    let mut last_seq = 0;
    // Line 1 is the header; records follow in the file's order.
    let mut line = 1;
    for resource in &world.resources {
        line += 1;
        let fault = |reason: String| SNAPSHOT.corrupt(line, reason);
        known(line, &resource.account)?;
        if resource.seq <= last_seq || resource.seq > header.sequences.resources {
            return Err(fault(format!(
                "seq {} must follow {last_seq} and be at most sequences.resources ({})",
                resource.seq, header.sequences.resources
            )));
        }
        last_seq = resource.seq;
        check_resource(resource).map_err(&fault)?;
        let key = (
            &resource.account,
            resource.kind,
            &resource.region,
            &resource.scope,
            &resource.name,
        );
        if !keys.insert(key) {
            return Err(fault(format!(
                "a second {} {} in {} of account {}",
                resource.kind, resource.name, resource.region, resource.account
            )));
        }
        counts.add(resource.kind, 1);
    }
    if counts != header.counts.resources {
        return Err(SNAPSHOT.corrupt(
            1,
            format!(
                "counts.resources says {:?}, the file holds {counts:?}",
                header.counts.resources
            ),
        ));
    }
    let mut keys = HashSet::new();
    for record in &world.idempotency {
        line += 1;
        known(line, &record.account)?;
        if !keys.insert((record.account.as_str(), record.key.as_str())) {
            return Err(SNAPSHOT.corrupt(
                line,
                format!(
                    "a second idempotency record of key {:?} of account {}",
                    record.key, record.account
                ),
            ));
        }
        check_idempotency(record).map_err(|reason| SNAPSHOT.corrupt(line, reason))?;
    }
    let mut last_seq = 0;
    for entry in &world.audit {
        line += 1;
        if let Some(account) = &entry.account {
            known(line, account)?;
        }
        if entry.seq <= last_seq || entry.seq > header.sequences.audit {
            return Err(SNAPSHOT.corrupt(
                line,
                format!(
                    "seq {} must follow {last_seq} and be at most sequences.audit ({})",
                    entry.seq, header.sequences.audit
                ),
            ));
        }
        last_seq = entry.seq;
        check_audit(entry).map_err(|reason| SNAPSHOT.corrupt(line, reason))?;
    }
    Ok(())
}

fn check_header(header: &Header) -> Result<(), SnapshotError> {
    let fault = |reason: String| SNAPSHOT.corrupt(1, reason);
    if header.accounts.iter().any(String::is_empty) || !strictly_sorted(&header.accounts) {
        return Err(fault("accounts must be names, sorted, each once".into()));
    }
    let timing = &header.timing;
    for (kind, delay) in [
        (Kind::Vpc, timing.vpc.delay_ms),
        (Kind::Subnet, timing.subnet.delay_ms),
        (Kind::NodeGroup, timing.node_group.delay_ms),
        (Kind::DatabaseInstance, timing.database_instance.delay_ms),
    ] {
        if delay > MAX_DELAY_MS {
            return Err(fault(format!(
                "timing of {kind}: {delay} ms is more than one day"
            )));
        }
    }
    let throttling = &header.throttling;
    if let Some(default) = &throttling.default {
        admin::check_throttling(default)
            .map_err(|e| fault(format!("throttling.default: {}", e.detail)))?;
    }
    let names: Vec<&String> = throttling.accounts.iter().map(|a| &a.account).collect();
    if !strictly_sorted(&names) {
        return Err(fault(
            "throttling.accounts must be sorted by account, each once".into(),
        ));
    }
    for own in &throttling.accounts {
        admin::check_throttling(&own.throttling)
            .map_err(|e| fault(format!("throttling of {}: {}", own.account, e.detail)))?;
    }
    let faults = &header.faults;
    let ids: Vec<u64> = faults.rules.iter().map(|r| r.id).collect();
    if !strictly_sorted(&ids) || ids.first() == Some(&0) || ids.last() >= Some(&faults.next_id) {
        return Err(fault(
            "fault rules must have ids from 1, sorted, each below faults.nextId".into(),
        ));
    }
    for rule in &faults.rules {
        admin::check_fault_spec(&rule.spec)
            .map_err(|e| fault(format!("fault rule {}: {}", rule.id, e.detail)))?;
    }
    Ok(())
}

fn strictly_sorted<T: Ord>(items: &[T]) -> bool {
    items.windows(2).all(|pair| pair[0] < pair[1])
}

fn check_resource(resource: &ResourceRecord) -> Result<(), String> {
    if !REGIONS.contains(&resource.region.as_str()) {
        return Err(format!("unknown region {:?}", resource.region));
    }
    if resource.account.is_empty() || resource.name.is_empty() {
        return Err("account and name must not be empty".into());
    }
    if resource.kind.in_cluster() == resource.scope.is_empty() {
        return Err(format!(
            "scope {:?}: a node group's is its cluster, other kinds have none",
            resource.scope
        ));
    }
    if resource.version < 1 {
        return Err(format!("version {} is not 1 or more", resource.version));
    }
    match (&resource.pending_state, resource.remaining_ms) {
        (None, None) => {}
        (Some(_), Some(ms)) if (0..=MAX_DELAY_MS as i64).contains(&ms) => {}
        (Some(_), Some(ms)) => {
            return Err(format!("remainingMs {ms} is not within 0 and one day"));
        }
        _ => return Err("pendingState and remainingMs go together".into()),
    }
    if !resource.spec.get().starts_with('{') {
        return Err("spec is not an object".into());
    }
    // The kind renders the record as a `GET` would, in its state and in
    // the one it is going to: that reads the spec and both state names.
    let row = resource.to_row(None);
    let render = |row| {
        admin::render_value(resource.kind, row)
            .map(|_| ())
            .map_err(|e| {
                format!(
                    "{} {} of account {}: {}",
                    resource.kind, resource.name, resource.account, e.detail
                )
            })
    };
    render(&row)?;
    if let Some(pending) = resource.pending_state.as_deref().filter(|p| *p != GONE) {
        let mut after = row.clone();
        after.state = pending.to_string();
        render(&after)?;
    }
    Ok(())
}

fn check_idempotency(record: &IdempotencyRecord) -> Result<(), String> {
    if record.account.is_empty() || record.key.is_empty() {
        return Err("account and key must not be empty".into());
    }
    if !(100..=599).contains(&record.status) {
        return Err(format!("status {} is not an HTTP status", record.status));
    }
    Ok(())
}

fn check_audit(entry: &AuditRecord) -> Result<(), String> {
    if crate::model::Actor::parse(&entry.actor).is_none() {
        return Err(format!("unknown actor {:?}", entry.actor));
    }
    if !(100..=599).contains(&entry.status) {
        return Err(format!("status {} is not an HTTP status", entry.status));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::{Timing, TimingTable};
    use crate::snapshot::format::{Counts, Sequences};

    fn raw(value: serde_json::Value) -> Box<serde_json::value::RawValue> {
        serde_json::value::RawValue::from_string(value.to_string()).unwrap()
    }

    fn world() -> World {
        let timing = Timing { delay_ms: 0 };
        let mut world = World {
            header: Header {
                format: SNAPSHOT.format.into(),
                format_version: 1,
                fakecloud_version: "test".into(),
                accounts: vec!["a".into()],
                counts: Counts::default(),
                sequences: Sequences {
                    resources: 1,
                    audit: 0,
                },
                timing: TimingTable {
                    vpc: timing,
                    subnet: timing,
                    node_group: timing,
                    database_instance: timing,
                },
                throttling: Default::default(),
                faults: Default::default(),
            },
            resources: vec![ResourceRecord {
                seq: 1,
                account: "a".into(),
                kind: Kind::Vpc,
                region: "us-east-1".into(),
                scope: String::new(),
                name: "vpc-1".into(),
                parent: String::new(),
                spec: raw(json!({"cidrBlock": "10.0.0.0/16", "enableDnsSupport": true,
                    "enableDnsHostnames": false, "instanceTenancy": "default", "tags": {}})),
                secret_hash: None,
                state: "pending".into(),
                pending_state: Some("available".into()),
                remaining_ms: Some(500),
                version: 1,
                created_at_ms: 0,
                updated_at_ms: 0,
            }],
            idempotency: Vec::new(),
            audit: Vec::new(),
        };
        world.header.counts.resources.vpc = 1;
        world
    }

    fn refused(change: impl FnOnce(&mut World)) -> String {
        let mut world = world();
        change(&mut world);
        check(&world).unwrap_err().to_string()
    }

    #[test]
    fn a_sound_world_passes() {
        check(&world()).unwrap();
    }

    #[test]
    fn each_fault_of_a_resource_is_named() {
        for (change, expected) in [
            (
                (|r: &mut ResourceRecord| r.region = "mars-1".into()) as fn(&mut ResourceRecord),
                "unknown region",
            ),
            (|r| r.account = "b".into(), "not in the header's accounts"),
            (|r| r.scope = "c1".into(), "scope"),
            (|r| r.remaining_ms = None, "go together"),
            (|r| r.remaining_ms = Some(-1), "remainingMs"),
            (|r| r.state = "exploded".into(), "vpc vpc-1"),
            (|r| r.pending_state = Some("gone".into()), "vpc vpc-1"),
            (|r| r.spec = raw(json!({"cidrBlock": 1})), "vpc vpc-1"),
            (|r| r.spec = raw(json!([])), "spec is not an object"),
            (|r| r.seq = 2, "sequences.resources"),
            (|r| r.version = 0, "version"),
        ] {
            let message = refused(|w| change(&mut w.resources[0]));
            assert!(message.contains(expected), "{expected}: {message}");
            assert!(message.contains("line 2"), "{message}");
        }
    }

    #[test]
    fn counts_order_and_settings_are_checked() {
        assert!(refused(|w| w.header.counts.resources.subnet = 1).contains("counts"));
        assert!(refused(|w| w.header.accounts.push("0".into())).contains("sorted"));
        assert!(refused(|w| w.header.timing.vpc.delay_ms = MAX_DELAY_MS + 1).contains("one day"));
        let message = refused(|w| {
            w.header.faults.rules.push(crate::model::FaultRule {
                id: 1,
                spec: crate::model::FaultRuleSpec {
                    path_prefix: "/".into(),
                    status: Some(200),
                    ..Default::default()
                },
                fired: 0,
            });
            w.header.faults.next_id = 2;
        });
        assert!(message.contains("fault rule 1: status"), "{message}");
    }
}
