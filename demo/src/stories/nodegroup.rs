//! Story 5, ignore changes (seed 003): `initProvider.scalingConfig.desiredSize`
//! is used at create only; an outside autoscaler then owns the field and the
//! provider, without `LateInitialize`, neither reverts nor copies it.

use std::time::Duration;

use apis::kinds::NodeGroup;
use fakecloud::client::Address;
use fakecloud::model::Kind;
use serde_json::json;

use super::{READY, REGION, Shared, Verdict, under};
use crate::demo::report::{self, at_provider_fields, line, status_row};
use crate::demo::{DemoError, System};
use crate::world::{at_provider, is_ready, is_synced};

const NAME: &str = "workers";
const CLUSTER: &str = "prod";

pub(crate) async fn play(system: &mut System, shared: &Shared) -> Result<Verdict, DemoError> {
    let mut verdict = Verdict::default();
    let Some(subnet_id) = shared.subnet_id.clone() else {
        verdict.check("story 3 created a Subnet for the nodes", false);
        return Ok(verdict);
    };
    line(format!(
        "apply NodeGroup/{NAME}: managementPolicies [Observe, Create, Update, Delete], \
         initProvider desiredSize 1, forProvider minSize 1 maxSize 5, subnet {subnet_id}"
    ));
    system
        .objects
        .apply::<NodeGroup>(json!({
            "apiVersion": "compute.fakecloud.crossplane.io/v1alpha1", "kind": "NodeGroup",
            "metadata": { "name": NAME },
            "spec": {
                "managementPolicies": ["Observe", "Create", "Update", "Delete"],
                "initProvider": { "scalingConfig": { "desiredSize": 1 } },
                "forProvider": {
                    "region": REGION, "clusterName": CLUSTER, "nodeRole": "arn:role/nodes",
                    "subnetIds": [subnet_id], "scalingConfig": { "minSize": 1, "maxSize": 5 },
                },
            },
        }))
        .await?;
    let created = system
        .objects
        .wait_for::<NodeGroup>(NAME, "Ready", READY, |n| is_ready(n) && is_synced(n))
        .await?;
    line(status_row(&created));
    line(at_provider_fields(
        &created,
        &[
            "status",
            "scalingConfig/desiredSize",
            "scalingConfig/minSize",
            "scalingConfig/maxSize",
        ],
    ));
    verdict.check(
        "created with desiredSize 1 from initProvider",
        at_provider(&created)["scalingConfig"]["desiredSize"] == 1,
    );

    let mark = system.audit_mark().await?;
    line("the autoscaler (an outside actor) sets desiredSize=3 in fakecloud");
    let address = Address {
        cluster: Some(CLUSTER.to_owned()),
        region: Some(REGION.to_owned()),
        ..Address::default()
    };
    system
        .admin
        .patch_resource(
            Kind::NodeGroup,
            NAME,
            &address,
            &json!({ "scalingConfig": { "desiredSize": 3 } }),
        )
        .await?;
    let observed = system
        .objects
        .wait_for::<NodeGroup>(NAME, "desiredSize 3 observed", READY, |n| {
            is_ready(n) && at_provider(n)["scalingConfig"]["desiredSize"] == 3
        })
        .await?;
    // One more poll after the observation: a revert would show by then.
    tokio::time::sleep(system.options.poll_interval + Duration::from_secs(1)).await;
    let now = system
        .objects
        .get::<NodeGroup>(NAME)
        .await?
        .unwrap_or(observed);
    line(status_row(&now));
    line(at_provider_fields(
        &now,
        &[
            "status",
            "scalingConfig/desiredSize",
            "scalingConfig/maxSize",
        ],
    ));
    let spec_desired = now
        .spec
        .for_provider
        .scaling_config
        .as_ref()
        .and_then(|s| s.desired_size);
    line(format!(
        "spec.forProvider.scalingConfig.desiredSize: {}",
        spec_desired.map_or_else(|| "unset".to_owned(), |d| d.to_string())
    ));
    let node_groups = format!("/v1/regions/{REGION}/clusters/{CLUSTER}/nodegroups");
    let calls = system
        .audit_since(mark, |p| {
            under(p, &node_groups) || p.starts_with("/admin/resources/nodeGroup/")
        })
        .await?;
    report::audit("since the autoscaler's change", &calls);
    let provider_writes = report::mutating(&calls);
    verdict.check(
        format!("the provider did not revert desiredSize (saw {provider_writes} writes)"),
        provider_writes == 0 && at_provider(&now)["scalingConfig"]["desiredSize"] == 3,
    );
    verdict.check(
        "desiredSize was not late-initialised into forProvider",
        spec_desired.is_none(),
    );
    Ok(verdict)
}
