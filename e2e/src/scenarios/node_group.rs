//! Ignore changes (seed 003): a NodeGroup's `desiredSize` is set once by
//! `spec.initProvider`; an outside autoscaler then owns it, and the
//! provider, without `LateInitialize` in its policies, neither reverts nor
//! copies it, while still applying the fields `forProvider` names.

use fakecloud::client::Address;
use fakecloud::model::Kind;
use serde_json::{Value, json};

use super::report::{at_provider_fields, drift_lines, mutating, status_row};
use super::{READY, REGION, ScenarioError, Stage, Verdict, under};
use crate::managed::{
    at_provider, condition, drifted_field, external_name, is_ready, is_synced, spec_of,
};
use crate::scope::Scope;

/// The cluster every node group joins.
const CLUSTER: &str = "prod";

fn manifest<S: Scope>(name: &str, subnet_id: &str, max_size: i64) -> Value {
    S::manifest(
        "compute",
        "NodeGroup",
        json!({ "name": name }),
        json!({
            "managementPolicies": ["Observe", "Create", "Update", "Delete"],
            "initProvider": { "scalingConfig": { "desiredSize": 1 } },
            "forProvider": {
                "region": REGION, "clusterName": CLUSTER, "nodeRole": "arn:role/nodes",
                "subnetIds": [subnet_id], "scalingConfig": { "minSize": 1, "maxSize": max_size },
            },
        }),
    )
}

/// Creates the NodeGroup in the Subnet `subnet_id`, lets the autoscaler
/// set `desiredSize` 3 in fakecloud, then raises `maxSize` in the spec.
pub async fn autoscaled<S: Scope>(
    stage: &Stage<'_>,
    name: &str,
    subnet_id: &str,
    verdict: &mut Verdict,
) -> Result<(), ScenarioError> {
    stage.say(format!(
        "apply NodeGroup/{name} ({}): managementPolicies [Observe, Create, Update, Delete], \
         initProvider desiredSize 1, forProvider minSize 1 maxSize 5, subnet {subnet_id}",
        S::NAME
    ));
    stage
        .objects
        .apply::<S::NodeGroup>(manifest::<S>(name, subnet_id, 5))
        .await?;
    let created = stage
        .objects
        .wait_for::<S::NodeGroup>(name, "Ready", READY, |n| is_ready(n) && is_synced(n))
        .await?;
    stage.say(status_row(&created));
    stage.say(at_provider_fields(
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
    verdict.check(
        "the external name defaults to metadata.name",
        external_name(&created).as_deref() == Some(name),
    );

    let mark = stage.audit_mark().await?;
    stage.say("the autoscaler (an outside actor) sets desiredSize=3 in fakecloud");
    let address = Address {
        cluster: Some(CLUSTER.to_owned()),
        region: Some(REGION.to_owned()),
        ..Address::default()
    };
    stage
        .admin
        .patch_resource(
            Kind::NodeGroup,
            name,
            &address,
            &json!({ "scalingConfig": { "desiredSize": 3 } }),
        )
        .await?;
    let observed = stage
        .objects
        .wait_for::<S::NodeGroup>(name, "desiredSize 3 observed", READY, |n| {
            is_ready(n) && at_provider(n)["scalingConfig"]["desiredSize"] == 3
        })
        .await?;
    // One more poll after the observation: a revert would show by then.
    tokio::time::sleep(stage.settle).await;
    let now = stage
        .objects
        .get::<S::NodeGroup>(name)
        .await?
        .unwrap_or(observed);
    stage.say(status_row(&now));
    stage.say(at_provider_fields(
        &now,
        &[
            "status",
            "scalingConfig/desiredSize",
            "scalingConfig/maxSize",
        ],
    ));
    let spec_desired = spec_of(&now)["forProvider"]["scalingConfig"]["desiredSize"].as_i64();
    stage.say(format!(
        "spec.forProvider.scalingConfig.desiredSize: {}",
        spec_desired.map_or_else(|| "unset".to_owned(), |d| d.to_string())
    ));
    let path = format!("/v1/regions/{REGION}/clusters/{CLUSTER}/nodegroups/{name}");
    let admin_path = format!("/admin/resources/nodeGroup/{name}");
    let calls = stage
        .audit_since(mark, |p| under(p, &path) || p.starts_with(&admin_path))
        .await?;
    stage.audit("since the autoscaler's change", &calls);
    let provider_writes = mutating(&calls);
    verdict.check(
        format!("the provider did not revert desiredSize (saw {provider_writes} writes)"),
        provider_writes == 0 && at_provider(&now)["scalingConfig"]["desiredSize"] == 3,
    );
    verdict.check(
        "desiredSize was not late-initialised into forProvider",
        spec_desired.is_none(),
    );
    for line in drift_lines(&now) {
        stage.say(line);
    }
    let desired = drifted_field(&now, "scalingConfig.desiredSize").unwrap_or(Value::Null);
    verdict.check(
        "status.drift shows desiredSize as initProvider's (declared 1, observed 3), and UpToDate stays True",
        desired["action"] == "InitProvider"
            && desired["declared"] == "1"
            && desired["observed"] == "3"
            && condition(&now, "UpToDate").is_some_and(|(s, r, _)| s == "True" && r == "NoDrift"),
    );

    stage.say("apply maxSize 6 in forProvider");
    stage
        .objects
        .apply::<S::NodeGroup>(manifest::<S>(name, subnet_id, 6))
        .await?;
    let updated = stage
        .objects
        .wait_for::<S::NodeGroup>(name, "maxSize 6", READY, |n| {
            at_provider(n)["scalingConfig"]["maxSize"] == 6
        })
        .await?;
    stage.say(at_provider_fields(
        &updated,
        &["scalingConfig/desiredSize", "scalingConfig/maxSize"],
    ));
    let calls = stage.audit_since(mark, |p| under(p, &path)).await?;
    stage.audit("provider calls for the change", &calls);
    let writes = mutating(&calls);
    verdict.check(
        format!("maxSize applied with one write, desiredSize still the autoscaler's (saw {writes} writes)"),
        writes == 1 && at_provider(&updated)["scalingConfig"]["desiredSize"] == 3,
    );
    Ok(())
}
