//! Stories 2, 3, 4 and 7: the network scenarios the e2e tests play too
//! ([`e2e::scenarios`]), on fixed names a user can look up afterwards.

use e2e::scenarios::{Verdict, network, observe};
use e2e::scope::Legacy;
use serde_json::json;

use super::Shared;
use crate::{DemoError, System};

const WEB_VPC: &str = "web-vpc";
const TEAM_VPC: &str = "team-b-vpc";
const SUBNET: &str = "app-subnet";

/// Story 2: a VPC under full control.
pub(crate) async fn full_control(
    system: &System,
    shared: &mut Shared,
) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    let vpc = network::create::<Legacy>(
        &system.stage(),
        WEB_VPC,
        json!({ "team": "web" }),
        &mut verdict,
    )
    .await?;
    shared.web_vpc = Some(vpc);
    Ok(verdict)
}

/// Story 3: team B's VPC imported read-only, and a managed Subnet in it.
pub(crate) async fn observe_only(
    system: &System,
    shared: &mut Shared,
) -> Result<Verdict, DemoError> {
    let stage = system.stage();
    let mut verdict = Verdict::default();
    let vpc = observe::import::<Legacy>(&stage, TEAM_VPC, "10.1.0.0/16", &mut verdict).await?;
    let subnet =
        observe::subnet_by_reference::<Legacy>(&stage, &vpc, SUBNET, "10.1.1.0/24", &mut verdict)
            .await?;
    shared.team_vpc = Some(vpc);
    shared.subnet_id = Some(subnet);
    Ok(verdict)
}

/// Story 4: the import procedure on story 3's VPC.
pub(crate) async fn import_procedure(
    system: &System,
    shared: &Shared,
) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    match &shared.team_vpc {
        Some(vpc) => observe::take_over::<Legacy>(&system.stage(), vpc, &mut verdict).await?,
        None => {
            verdict.check("story 3 imported a VPC to take over", false);
        }
    }
    Ok(verdict)
}

/// Story 7: story 2's VPC deleted with `deletionPolicy: Orphan`.
pub(crate) async fn orphan(system: &System, shared: &Shared) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    match &shared.web_vpc {
        Some(vpc) => network::orphan::<Legacy>(&system.stage(), vpc, &mut verdict).await?,
        None => {
            verdict.check("story 2 created a VPC to delete", false);
        }
    }
    Ok(verdict)
}
