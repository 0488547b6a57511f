//! Story 5 of each scope, ignore changes (seed 003): the scenario
//! [`e2e::scenarios::node_group::autoscaled`], in the observe-only story's
//! Subnet.

use e2e::scenarios::{Verdict, node_group};
use e2e::scope::Scope;

use super::Shared;
use crate::{DemoError, System};

const NAME: &str = "workers";

pub(crate) async fn play<S: Scope>(system: &System, shared: &Shared) -> Result<Verdict, DemoError> {
    let objects = S::objects(&system.objects);
    let mut verdict = Verdict::default();
    match &shared.subnet_id {
        Some(subnet_id) => {
            node_group::autoscaled::<S>(
                &system.stage().with(&objects),
                &super::cloud_name::<S>(NAME),
                subnet_id,
                &mut verdict,
            )
            .await?;
        }
        None => {
            verdict.check(
                "the observe-only story created a Subnet for the nodes",
                false,
            );
        }
    }
    Ok(verdict)
}
