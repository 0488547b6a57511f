//! The query story, on the namespaced kinds (queries exist only there):
//! another team's three VPCs, tagged `team=b`, made in the cloud outside
//! Kubernetes; a `VPCQuery` for `team=b` owns three observe-only VPCs; a
//! managed Subnet selects one of them by the query's label; a fourth VPC
//! of team B gets its observe-only VPC on the next poll; one deleted in
//! the cloud loses its. The query stays, for a user to look at
//! (`kubectl get vpcquery -n app`). The scenarios are
//! [`e2e::scenarios::query`]'s, which the e2e tests play too.

use e2e::scenarios::{Verdict, query};
use e2e::scope::{Namespaced, Scope};

use crate::{DemoError, System};

const QUERY: &str = "team-b-vpcs";
const SUBNET: &str = "team-b-subnet";
const TEAM: &str = "b";

pub(crate) async fn play(system: &System) -> Result<Verdict, DemoError> {
    let app = Namespaced::objects(&system.objects);
    let stage = system.stage();
    let stage = stage.with(&app);
    let mut verdict = Verdict::default();
    let mut ids = query::make_team_vpcs(
        &stage,
        TEAM,
        &["10.50.0.0/16", "10.51.0.0/16", "10.52.0.0/16"],
    )
    .await?;
    query::apply_query(&stage, QUERY, TEAM, &ids, &mut verdict).await?;
    let chosen = query::subnet_by_selector(&stage, QUERY, SUBNET, &ids, &mut verdict).await?;
    query::match_appears(&stage, QUERY, TEAM, "10.53.0.0/16", &mut ids, &mut verdict).await?;
    // Any VPC but the one the Subnet is in: the cloud refuses to delete a
    // VPC that still has a Subnet.
    if let Some(gone) = ids.iter().find(|id| **id != chosen).cloned() {
        query::match_disappears(&stage, QUERY, &gone, &mut ids, &mut verdict).await?;
    }
    Ok(verdict)
}
