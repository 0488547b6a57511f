//! The seeds' stories as code that both the e2e tests and the demo run, so
//! what the demo shows a user is exactly what CI proves.
//!
//! A scenario is a sequence of user actions (apply, delete, a change made
//! in the cloud behind the provider's back) followed by named checks in a
//! [`Verdict`]. It narrates as it goes through its [`Stage`]: the demo
//! prints the narration, a test sends it to its log. A test requires the
//! verdict to hold ([`Verdict::require`]) and may assert more of its own;
//! the demo reports which checks failed. Scenarios only use what a user has
//! (an admin kubeconfig, fakecloud's API and admin API), never the
//! provider's internals, so they run the same against an in-process
//! provider ([`crate::world::World`]) and a provider process or container
//! (the demo).

pub mod connection;
pub mod drift;
pub mod network;
pub mod node_group;
pub mod observe;
pub mod query;
pub mod report;
pub mod restore;

use std::io::Write;
use std::time::Duration;

use fakecloud::client::{Address, AdminClient, Client as CloudClient};
use fakecloud::model::{Actor, AuditEntry, AuditQuery, CreateVpc};

use crate::objects::{Objects, ObjectsError};

/// How long a managed resource may take to become Ready.
pub const READY: Duration = Duration::from_secs(30);
/// The region every scenario uses.
pub const REGION: &str = "us-east-1";

/// fakecloud's path of a region's collection, e.g. `vpcs`.
pub fn collection(name: &str) -> String {
    format!("/v1/regions/{REGION}/{name}")
}

/// Whether an audited `path` is `base` or lies below it.
pub fn under(path: &str, base: &str) -> bool {
    path.strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The admin API's address of a resource in [`REGION`].
pub fn region() -> Address {
    Address {
        region: Some(REGION.to_owned()),
        ..Address::default()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error(transparent)]
    Objects(#[from] ObjectsError),
    #[error("fakecloud: {0}")]
    Cloud(fakecloud::client::ClientError),
    #[error("invalid fakecloud request body: {0}")]
    Body(serde_json::Error),
    #[error("expectation did not hold: {}", failed.join("; "))]
    NotHeld { failed: Vec<String> },
}

impl From<fakecloud::client::ClientError> for ScenarioError {
    fn from(error: fakecloud::client::ClientError) -> Self {
        ScenarioError::Cloud(error)
    }
}

impl From<serde_json::Error> for ScenarioError {
    fn from(error: serde_json::Error) -> Self {
        ScenarioError::Body(error)
    }
}

/// Where a scenario plays: the user's view of a running system.
pub struct Stage<'a> {
    /// apply / delete / wait, as the user.
    pub objects: &'a Objects,
    /// fakecloud's API, as another team (or the user checking a result).
    pub cloud: &'a CloudClient,
    /// fakecloud's admin API: the audit of calls and outside changes.
    pub admin: &'a AdminClient,
    /// How long "nothing more happens" is watched for: a little longer than
    /// the provider's poll interval, so "no update" is not just "not yet".
    pub settle: Duration,
    /// Print the narration (the demo) or only log it (tests).
    pub narration: Narration,
}

/// Where a [`Stage`]'s narration goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Narration {
    /// Indented lines on stdout, the demo's output.
    Print,
    /// `tracing` events, in a test's captured output.
    Log,
}

impl Stage<'_> {
    /// The same stage, acting through `objects` (namespaced kinds in
    /// another namespace).
    pub fn with<'b>(&'b self, objects: &'b Objects) -> Stage<'b> {
        Stage {
            objects,
            cloud: self.cloud,
            admin: self.admin,
            settle: self.settle,
            narration: self.narration,
        }
    }

    /// Another team makes a VPC in fakecloud directly, outside Kubernetes,
    /// from `body` (a `CreateVpc` as JSON); returns its id.
    pub async fn outside_vpc(&self, body: serde_json::Value) -> Result<String, ScenarioError> {
        let body: CreateVpc = serde_json::from_value(body)?;
        Ok(self
            .cloud
            .create_vpc(REGION, &body, None)
            .await?
            .resource
            .id)
    }

    /// One line of the story: what the user did or sees.
    pub fn say(&self, text: impl std::fmt::Display) {
        match self.narration {
            Narration::Print => {
                println!("    {text}");
                let _ = std::io::stdout().flush();
            }
            Narration::Log => tracing::info!(target: "scenario", "{text}"),
        }
    }

    /// fakecloud's audit of `entries` under a heading, calls grouped.
    pub fn audit(&self, heading: &str, entries: &[AuditEntry]) {
        self.say(format!("fakecloud audit, {heading}:"));
        for call in report::audit_lines(entries) {
            self.say(format!("  {call}"));
        }
    }

    /// The newest audit sequence number: calls after it are "from now on".
    pub async fn audit_mark(&self) -> Result<i64, ScenarioError> {
        let entries = self.admin.audit(&AuditQuery::default()).await?;
        Ok(entries.iter().map(|e| e.seq).max().unwrap_or(0))
    }

    /// Calls after `mark` on paths the story is about (`about`), made with
    /// an API key (the provider) or as an outside actor (an autoscaler).
    /// The scenario's own admin reads, and the provider's polls of other
    /// stories' resources, are left out.
    pub async fn audit_since(
        &self,
        mark: i64,
        about: impl Fn(&str) -> bool,
    ) -> Result<Vec<AuditEntry>, ScenarioError> {
        let entries = self
            .admin
            .audit(&AuditQuery {
                after_seq: Some(mark),
                ..AuditQuery::default()
            })
            .await?;
        Ok(entries
            .into_iter()
            .filter(|e| matches!(e.actor, Actor::Api | Actor::External) && about(&e.path))
            .collect())
    }
}

/// Whether a story's expectation held, check by check, so "it did not hold"
/// always says which part failed.
#[derive(Debug, Default)]
pub struct Verdict {
    checks: Vec<(String, bool)>,
}

impl Verdict {
    /// Records a check; returns `ok` so a story can stop early on failure.
    pub fn check(&mut self, what: impl Into<String>, ok: bool) -> bool {
        self.checks.push((what.into(), ok));
        ok
    }

    /// Every check passed, and there was at least one.
    pub fn held(&self) -> bool {
        !self.checks.is_empty() && self.checks.iter().all(|(_, ok)| *ok)
    }

    /// The checks that failed, by name.
    pub fn failed(&self) -> Vec<&str> {
        self.checks
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(what, _)| what.as_str())
            .collect()
    }

    /// A test's gate: `Ok` only if the verdict [`held`](Self::held).
    pub fn require(self) -> Result<(), ScenarioError> {
        if self.held() {
            return Ok(());
        }
        let mut failed: Vec<String> = self.failed().into_iter().map(str::to_owned).collect();
        if failed.is_empty() {
            failed.push("no check was made".to_owned());
        }
        Err(ScenarioError::NotHeld { failed })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_matches_the_path_and_below_only() {
        let vpc = "/v1/regions/us-east-1/vpcs/vpc-1";
        assert!(under(vpc, vpc));
        assert!(under(&format!("{vpc}/tags"), vpc));
        assert!(!under("/v1/regions/us-east-1/vpcs/vpc-12", vpc));
        assert!(!under("/v1/regions/us-east-1/vpcs", vpc));
    }

    #[test]
    fn a_verdict_holds_only_with_every_check_passed() {
        let mut verdict = Verdict::default();
        assert!(!verdict.held(), "no check is no evidence");
        verdict.check("created once", true);
        assert!(verdict.held());
        verdict.check("no update", false);
        assert!(!verdict.held());
        assert_eq!(verdict.failed(), ["no update"]);
        let err = verdict
            .require()
            .expect_err("a failed check fails the test");
        assert_eq!(err.to_string(), "expectation did not hold: no update");
        let empty = Verdict::default().require().expect_err("no evidence");
        assert!(
            matches!(empty, ScenarioError::NotHeld { failed } if failed == ["no check was made"])
        );
    }
}
