//! The seeds' stories, played in order against the running system. Each
//! prints a one-line heading, what a user would check, and a verdict made
//! of named checks, so "expectation held: no" always says which part failed.
//!
//! After late activation, the stories play on the namespaced kinds first
//! (Crossplane v2's, what new users start with), then again on the legacy
//! cluster-scoped kinds.

mod activation;
mod connection;
mod drift;
mod network;
mod nodegroup;
mod query;
mod restore;
mod versions;

use e2e::scenarios::network::ManagedVpc;
use e2e::scenarios::observe::ImportedVpc;
use e2e::scope::{Legacy, Namespaced};

use super::{DemoError, Progress, System};

/// The scope a story plays on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `*.fakecloud.m.crossplane.io`, in namespaces `app` and `net`.
    Namespaced,
    /// The legacy cluster-scoped kinds.
    Legacy,
}

/// One story of the demo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Story {
    LateActivation,
    FullControlVpc(Scope),
    ObserveOnlyWithSubnet(Scope),
    ImportProcedure(Scope),
    AutoscaledNodeGroup(Scope),
    ConnectionSecret(Scope),
    OrphanDeletion(Scope),
    /// Played on the namespaced kinds only: the e2e suite plays it on both.
    Drift(Scope),
    /// Namespaced only: query kinds exist only in that scope.
    Query(Scope),
    /// Namespaced only: the legacy kinds have one version.
    Versions(Scope),
    /// Namespaced only: the e2e suite plays it too; the step it shows
    /// (adoption by tags) is the runtime's, the same in both scopes.
    Restore(Scope),
}

impl Story {
    /// The stories of one scope, in the order they build on each other.
    const fn of(scope: Scope) -> [Story; 6] {
        [
            Story::FullControlVpc(scope),
            Story::ObserveOnlyWithSubnet(scope),
            Story::ImportProcedure(scope),
            Story::AutoscaledNodeGroup(scope),
            Story::ConnectionSecret(scope),
            Story::OrphanDeletion(scope),
        ]
    }

    /// The order the demo plays them in: activation, the namespaced
    /// stories, then the legacy ones.
    pub fn all() -> Vec<Story> {
        let mut all = vec![Story::LateActivation];
        all.extend(Story::of(Scope::Namespaced));
        all.push(Story::Drift(Scope::Namespaced));
        all.push(Story::Query(Scope::Namespaced));
        all.push(Story::Versions(Scope::Namespaced));
        all.push(Story::Restore(Scope::Namespaced));
        all.extend(Story::of(Scope::Legacy));
        all
    }

    fn scope(self) -> Option<Scope> {
        match self {
            Story::LateActivation => None,
            Story::FullControlVpc(scope)
            | Story::ObserveOnlyWithSubnet(scope)
            | Story::ImportProcedure(scope)
            | Story::AutoscaledNodeGroup(scope)
            | Story::ConnectionSecret(scope)
            | Story::OrphanDeletion(scope)
            | Story::Drift(scope)
            | Story::Query(scope)
            | Story::Versions(scope)
            | Story::Restore(scope) => Some(scope),
        }
    }

    /// The heading, with the scope the story plays on.
    pub fn heading(self) -> String {
        match self.scope() {
            None => self.what().to_owned(),
            Some(Scope::Namespaced) => format!("[namespaced, v2] {}", self.what()),
            Some(Scope::Legacy) => format!("[legacy, cluster-scoped] {}", self.what()),
        }
    }

    fn what(self) -> &'static str {
        match self {
            Story::LateActivation => {
                "Late activation: the package's MRDs Inactive, MRAPs activate some, and only their controllers start (seed 002)"
            }
            Story::FullControlVpc(_) => {
                "Full control: a VPC created, observed and owned by the provider"
            }
            Story::ObserveOnlyWithSubnet(_) => {
                "Observe-only: another team's VPC imported read-only, and a managed Subnet referencing it (seed 000)"
            }
            Story::ImportProcedure(_) => {
                "Import procedure: take the observed VPC over with zero updates, then manage it (seed 000)"
            }
            Story::AutoscaledNodeGroup(_) => {
                "Ignore changes: a NodeGroup's desiredSize set once by initProvider, then left to an outside autoscaler (seed 003)"
            }
            Story::ConnectionSecret(_) => {
                "Connection secret: a DatabaseInstance publishes its documented keys, and they authenticate against fakecloud"
            }
            Story::OrphanDeletion(Scope::Namespaced) => {
                "Orphaning: managementPolicies without Delete, and deleting the managed resource leaves the cloud resource alone (seed 003)"
            }
            Story::OrphanDeletion(Scope::Legacy) => {
                "Deletion with Orphan: deleting the managed resource leaves the cloud resource alone (seed 003)"
            }
            Story::Drift(_) => {
                "Drift: status.drift shows what differs from the cloud and what the provider does about it, also where its policies forbid acting"
            }
            Story::Versions(_) => {
                "Two versions: a VPC written at the deprecated v1alpha1 reads at v1beta1 through the conversion webhook, and the cloud sees no call for it (issue 46)"
            }
            Story::Restore(_) => {
                "Restore: fakecloud's snapshot loaded after VPCs were lost behind the provider's back; the restored managed VPC is adopted by its tags, not created a third time (issue 43)"
            }
            Story::Query(_) => {
                "Query: a VPCQuery finds another team's VPCs by tag and owns one observe-only VPC per match, as matches come and go (seed 000, future work)"
            }
        }
    }
}

/// The name of a resource whose kind takes `metadata.name` as its cloud
/// name (NodeGroup, DatabaseInstance): the legacy stories' get a prefix,
/// since the cloud has one namespace of names for both scopes, and two
/// managed resources of one cloud name would manage the same resource.
pub(crate) fn cloud_name<S: e2e::scope::Scope>(base: &str) -> String {
    if S::NAMESPACED {
        base.to_owned()
    } else {
        format!("legacy-{base}")
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
    let mut namespaced = Shared::default();
    let mut legacy = Shared::default();
    let mut results = Vec::new();
    for (number, story) in Story::all().into_iter().enumerate() {
        if story == Story::FullControlVpc(Scope::Namespaced) {
            println!();
            println!(
                "The namespaced kinds (Crossplane v2, groups *.fakecloud.m.crossplane.io), in namespaces app and net:"
            );
        }
        if story == Story::FullControlVpc(Scope::Legacy) {
            println!();
            println!(
                "The same stories on the legacy cluster-scoped kinds (groups *.fakecloud.crossplane.io), kept for existing users:"
            );
        }
        println!();
        println!("{}. {}", number + 1, story.heading());
        let started = progress.elapsed();
        let outcome = match story {
            Story::LateActivation => activation::play(system).await,
            Story::FullControlVpc(Scope::Namespaced) => {
                network::full_control::<Namespaced>(system, &mut namespaced).await
            }
            Story::FullControlVpc(Scope::Legacy) => {
                network::full_control::<Legacy>(system, &mut legacy).await
            }
            Story::ObserveOnlyWithSubnet(Scope::Namespaced) => {
                network::observe_only::<Namespaced>(system, &mut namespaced).await
            }
            Story::ObserveOnlyWithSubnet(Scope::Legacy) => {
                network::observe_only::<Legacy>(system, &mut legacy).await
            }
            Story::ImportProcedure(Scope::Namespaced) => {
                network::import_procedure::<Namespaced>(system, &namespaced).await
            }
            Story::ImportProcedure(Scope::Legacy) => {
                network::import_procedure::<Legacy>(system, &legacy).await
            }
            Story::AutoscaledNodeGroup(Scope::Namespaced) => {
                nodegroup::play::<Namespaced>(system, &namespaced).await
            }
            Story::AutoscaledNodeGroup(Scope::Legacy) => {
                nodegroup::play::<Legacy>(system, &legacy).await
            }
            Story::ConnectionSecret(Scope::Namespaced) => {
                connection::play::<Namespaced>(system, e2e::scope::APP).await
            }
            Story::ConnectionSecret(Scope::Legacy) => {
                connection::play::<Legacy>(system, crate::system::NAMESPACE).await
            }
            Story::OrphanDeletion(Scope::Namespaced) => {
                network::orphan::<Namespaced>(system, &namespaced).await
            }
            Story::OrphanDeletion(Scope::Legacy) => {
                network::orphan::<Legacy>(system, &legacy).await
            }
            Story::Drift(Scope::Namespaced) => drift::play::<Namespaced>(system).await,
            Story::Drift(Scope::Legacy) => drift::play::<Legacy>(system).await,
            Story::Query(_) => query::play(system).await,
            Story::Versions(_) => versions::play(system).await,
            Story::Restore(_) => restore::play(system).await,
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
        system.ensure_healthy().await?;
    }
    Ok(results)
}
