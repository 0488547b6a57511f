//! Stories 2, 3, 4 and 7 of each scope: the network scenarios the e2e tests
//! play too ([`e2e::scenarios`]), on fixed names a user can look up
//! afterwards. Namespaced, they play in namespace `app`, with the observed
//! VPC in another team's namespace, `net`.

use e2e::scenarios::{Verdict, network, observe};
use e2e::scope::{NET, Scope};
use serde_json::json;

use super::Shared;
use crate::{DemoError, System};

const WEB_VPC: &str = "web-vpc";
const TEAM_VPC: &str = "team-b-vpc";
const SUBNET: &str = "app-subnet";

/// A VPC under full control.
pub(crate) async fn full_control<S: Scope>(
    system: &System,
    shared: &mut Shared,
) -> Result<Verdict, DemoError> {
    let objects = S::objects(&system.objects);
    let mut verdict = Verdict::default();
    let vpc = network::create::<S>(
        &system.stage().with(&objects),
        WEB_VPC,
        json!({ "team": "web" }),
        &mut verdict,
    )
    .await?;
    shared.web_vpc = Some(vpc);
    Ok(verdict)
}

/// Team B's VPC imported read-only (in its own namespace, when namespaced),
/// and a managed Subnet in it.
pub(crate) async fn observe_only<S: Scope>(
    system: &System,
    shared: &mut Shared,
) -> Result<Verdict, DemoError> {
    let app = S::objects(&system.objects);
    let net = app.in_namespace(NET);
    let stage = system.stage();
    let mut verdict = Verdict::default();
    let vpc =
        observe::import::<S>(&stage.with(&net), TEAM_VPC, "10.1.0.0/16", &mut verdict).await?;
    let subnet = observe::subnet_by_reference::<S>(
        &stage.with(&app),
        &vpc,
        SUBNET,
        "10.1.1.0/24",
        &mut verdict,
    )
    .await?;
    shared.team_vpc = Some(vpc);
    shared.subnet_id = Some(subnet);
    Ok(verdict)
}

/// The import procedure on the observed VPC.
pub(crate) async fn import_procedure<S: Scope>(
    system: &System,
    shared: &Shared,
) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    match &shared.team_vpc {
        Some(vpc) => observe::take_over::<S>(&system.stage(), vpc, &mut verdict).await?,
        None => {
            verdict.check("the observe-only story imported a VPC to take over", false);
        }
    }
    Ok(verdict)
}

/// The full-control VPC deleted, orphaning it (`deletionPolicy: Orphan`,
/// or policies without `Delete` when namespaced).
pub(crate) async fn orphan<S: Scope>(
    system: &System,
    shared: &Shared,
) -> Result<Verdict, DemoError> {
    let objects = S::objects(&system.objects);
    let mut verdict = Verdict::default();
    match &shared.web_vpc {
        Some(vpc) => {
            network::orphan::<S>(&system.stage().with(&objects), vpc, &mut verdict).await?;
        }
        None => {
            verdict.check("the full-control story created a VPC to delete", false);
        }
    }
    Ok(verdict)
}
