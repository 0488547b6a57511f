//! The seeds' stories, played in order against the running system. Each
//! prints a one-line heading, what a user would check, and a verdict made
//! of named checks, so "expectation held: no" always says which part failed.

mod activation;
mod connection;
mod import;
mod network;
mod nodegroup;
mod orphan;

use std::time::Duration;

use super::report::line;
use super::{DemoError, Progress, System};

/// How long a managed resource may take to become Ready.
pub(crate) const READY: Duration = Duration::from_secs(30);
/// The region every story uses.
pub(crate) const REGION: &str = "us-east-1";

/// fakecloud's path of a region's collection, e.g. `vpcs`.
pub(crate) fn collection(name: &str) -> String {
    format!("/v1/regions/{REGION}/{name}")
}

/// Whether an audited `path` is `base` or lies below it.
pub(crate) fn under(path: &str, base: &str) -> bool {
    path.strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// One story of the demo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Story {
    LateActivation,
    FullControlVpc,
    ObserveOnlyWithSubnet,
    ImportProcedure,
    AutoscaledNodeGroup,
    ConnectionSecret,
    OrphanDeletion,
}

impl Story {
    /// The order the demo plays them in (later ones build on earlier ones).
    pub const ALL: [Story; 7] = [
        Story::LateActivation,
        Story::FullControlVpc,
        Story::ObserveOnlyWithSubnet,
        Story::ImportProcedure,
        Story::AutoscaledNodeGroup,
        Story::ConnectionSecret,
        Story::OrphanDeletion,
    ];

    pub fn heading(self) -> &'static str {
        match self {
            Story::LateActivation => {
                "Late activation: the provider started with no CRDs; each controller starts when its CRD appears (seed 002)"
            }
            Story::FullControlVpc => {
                "Full control: a VPC created, observed and owned by the provider"
            }
            Story::ObserveOnlyWithSubnet => {
                "Observe-only: another team's VPC imported read-only, and a managed Subnet referencing it (seed 000)"
            }
            Story::ImportProcedure => {
                "Import procedure: take the observed VPC over with zero updates, then manage it (seed 000)"
            }
            Story::AutoscaledNodeGroup => {
                "Ignore changes: a NodeGroup's desiredSize set once by initProvider, then left to an outside autoscaler (seed 003)"
            }
            Story::ConnectionSecret => {
                "Connection secret: a DatabaseInstance publishes its documented keys, and they authenticate against fakecloud"
            }
            Story::OrphanDeletion => {
                "Deletion with Orphan: deleting the managed resource leaves the cloud resource alone (seed 003)"
            }
        }
    }
}

/// Whether a story's expectation held, check by check.
#[derive(Debug, Default)]
pub struct Verdict {
    checks: Vec<(String, bool)>,
}

impl Verdict {
    /// Records a check; returns `ok` so a story can stop early on failure.
    pub(crate) fn check(&mut self, what: impl Into<String>, ok: bool) -> bool {
        self.checks.push((what.into(), ok));
        ok
    }

    pub fn held(&self) -> bool {
        !self.checks.is_empty() && self.checks.iter().all(|(_, ok)| *ok)
    }

    fn failed(&self) -> Vec<&str> {
        self.checks
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(what, _)| what.as_str())
            .collect()
    }
}

/// What one story passes to the next: names and ids it created.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// The full-control VPC of story 2: (name, cloud id).
    pub web_vpc: Option<(String, String)>,
    /// The observed VPC of story 3: (name, cloud id).
    pub team_vpc: Option<(String, String)>,
    /// The managed Subnet of story 3 (cloud id).
    pub subnet_id: Option<String>,
}

/// Plays every story in order; returns each story with whether it held.
/// Stops early with an error only when the system itself broke (a process
/// died), since no later story could hold then.
pub async fn play_all(
    system: &mut System,
    progress: &Progress,
) -> Result<Vec<(Story, bool)>, DemoError> {
    let mut shared = Shared::default();
    let mut results = Vec::new();
    for (number, story) in Story::ALL.into_iter().enumerate() {
        println!();
        println!("{}. {}", number + 1, story.heading());
        let started = progress.elapsed();
        let outcome = match story {
            Story::LateActivation => activation::play(system).await,
            Story::FullControlVpc => network::full_control(system, &mut shared).await,
            Story::ObserveOnlyWithSubnet => network::observe_only(system, &mut shared).await,
            Story::ImportProcedure => import::play(system, &shared).await,
            Story::AutoscaledNodeGroup => nodegroup::play(system, &shared).await,
            Story::ConnectionSecret => connection::play(system).await,
            Story::OrphanDeletion => orphan::play(system, &shared).await,
        };
        let took = progress.elapsed().saturating_sub(started).as_secs_f64();
        let held = match outcome {
            Ok(verdict) if verdict.held() => {
                line(format!("expectation held: yes ({took:.1}s)"));
                true
            }
            Ok(verdict) => {
                line(format!(
                    "expectation held: no; failed: {} ({took:.1}s)",
                    verdict.failed().join("; ")
                ));
                false
            }
            Err(error) => {
                line(format!("expectation held: no; error: {error} ({took:.1}s)"));
                false
            }
        };
        results.push((story, held));
        system.ensure_healthy()?;
    }
    Ok(results)
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
    }
}
