//! Fault injection: admin-defined rules that make matching calls fail or
//! slow down, so clients' error handling can be tested against real HTTP.

use std::sync::Mutex;

use crate::model::{FaultRule, FaultRuleSpec};
use crate::snapshot::format::FaultSettings;

#[derive(Default)]
pub struct Faults {
    inner: Mutex<Rules>,
}

#[derive(Default)]
struct Rules {
    next_id: u64,
    rules: Vec<FaultRule>,
}

/// What a matching rule asks for.
pub struct Firing {
    pub latency_ms: u64,
    /// `(status, code, retry_after)` when the call must fail.
    pub error: Option<(u16, String, Option<u64>)>,
    /// Serve the call, then answer with `error` instead of its result.
    pub after_call: bool,
}

impl Faults {
    pub fn add(&self, spec: FaultRuleSpec) -> FaultRule {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.next_id += 1;
        let rule = FaultRule {
            id: inner.next_id,
            spec,
            fired: 0,
        };
        inner.rules.push(rule.clone());
        rule
    }

    pub fn list(&self) -> Vec<FaultRule> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .rules
            .clone()
    }

    pub fn remove(&self, id: u64) -> bool {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let before = inner.rules.len();
        inner.rules.retain(|r| r.id != id);
        inner.rules.len() != before
    }

    pub fn clear(&self) {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .rules
            .clear();
    }

    /// The rules and the id the next one gets, for a snapshot.
    pub fn export(&self) -> FaultSettings {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        FaultSettings {
            next_id: inner.next_id + 1,
            rules: inner.rules.clone(),
        }
    }

    /// Replaces every rule by a snapshot's (checked: ids below `next_id`).
    pub fn restore(&self, settings: &FaultSettings) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.next_id = settings.next_id.saturating_sub(1);
        inner.rules = settings.rules.clone();
    }

    /// The first rule matching `method` and `path` that fires this time;
    /// rules limited to N calls are used up and then dropped.
    pub fn check(&self, method: &str, path: &str) -> Option<Firing> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let index = inner.rules.iter().position(|rule| {
            let spec = &rule.spec;
            spec.method
                .as_deref()
                .is_none_or(|m| m.eq_ignore_ascii_case(method))
                && path.starts_with(&spec.path_prefix)
                && spec.probability.is_none_or(|p| rand::random::<f64>() < p)
        })?;
        let rule = &mut inner.rules[index];
        rule.fired += 1;
        let spec = rule.spec.clone();
        if spec.times.is_some_and(|n| rule.fired >= u64::from(n)) {
            inner.rules.remove(index);
        }
        Some(Firing {
            latency_ms: spec.latency_ms.unwrap_or(0),
            error: spec.status.map(|status| {
                (
                    status,
                    spec.code.unwrap_or_else(|| "InjectedFault".into()),
                    spec.retry_after_secs,
                )
            }),
            after_call: spec.after_call,
        })
    }
}
