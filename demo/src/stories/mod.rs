//! The seeds' stories, played in order against the running system. Each
//! prints a one-line heading, what a user would check, and a verdict made
//! of named checks, so "expectation held: no" always says which part failed.

mod activation;
mod connection;
mod network;
mod nodegroup;

use e2e::scenarios::network::ManagedVpc;
use e2e::scenarios::observe::ImportedVpc;

use super::{DemoError, Progress, System};

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

/// What one story passes to the next: names and ids it created.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// The full-control VPC of story 2.
    pub web_vpc: Option<ManagedVpc>,
    /// The observed VPC of story 3.
    pub team_vpc: Option<ImportedVpc>,
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
            Story::ImportProcedure => network::import_procedure(system, &shared).await,
            Story::AutoscaledNodeGroup => nodegroup::play(system, &shared).await,
            Story::ConnectionSecret => connection::play(system).await,
            Story::OrphanDeletion => network::orphan(system, &shared).await,
        };
        let took = progress.elapsed().saturating_sub(started).as_secs_f64();
        let stage = system.stage();
        let held = match outcome {
            Ok(verdict) if verdict.held() => {
                stage.say(format!("expectation held: yes ({took:.1}s)"));
                true
            }
            Ok(verdict) => {
                stage.say(format!(
                    "expectation held: no; failed: {} ({took:.1}s)",
                    verdict.failed().join("; ")
                ));
                false
            }
            Err(error) => {
                stage.say(format!("expectation held: no; error: {error} ({took:.1}s)"));
                false
            }
        };
        results.push((story, held));
        system.ensure_healthy()?;
    }
    Ok(results)
}
