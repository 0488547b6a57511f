//! Story 5, ignore changes (seed 003): the scenario
//! [`e2e::scenarios::node_group::autoscaled`], in story 3's Subnet.

use e2e::scenarios::{Verdict, node_group};

use super::Shared;
use crate::{DemoError, System};

const NAME: &str = "workers";

pub(crate) async fn play(system: &System, shared: &Shared) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    match &shared.subnet_id {
        Some(subnet_id) => {
            node_group::autoscaled::<e2e::scope::Legacy>(
                &system.stage(),
                NAME,
                subnet_id,
                &mut verdict,
            )
            .await?;
        }
        None => {
            verdict.check("story 3 created a Subnet for the nodes", false);
        }
    }
    Ok(verdict)
}
