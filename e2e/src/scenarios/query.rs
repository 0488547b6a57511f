//! Query resources (seed 000, Future Work, Option A): another team's VPCs,
//! made in the cloud outside Kubernetes, found by a `VPCQuery` for their
//! tag; the query owns one observe-only VPC per match, which a managed
//! Subnet selects by the query's label; matches that appear get theirs on
//! the next poll, matches that go lose theirs; deleting the query deletes
//! its managed resources and leaves the cloud as it was. The query and its
//! managed resources only ever read the cloud: every step checks
//! fakecloud's audit for it.

use std::collections::BTreeSet;
use std::time::Duration;

use apis::kinds::VpcQuery;
use apis::kinds::subnet::m::Subnet;
use apis::kinds::vpc::m::Vpc;
use crossplane_types::query::{MAX_LISTED_MATCHES, name_label};
use crossplane_types::well_known::EXTERNAL_NAME_ANNOTATION;
use fakecloud::model::Kind;
use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use super::report::{mutating, status_row};
use super::{READY, REGION, ScenarioError, Stage, Verdict, collection, region, under};
use crate::managed::{condition, external_name, is_ready, is_synced, observed_generation, spec_of};
use crate::objects::ObjectsError;

/// How often the waits below look again.
const POLL: Duration = Duration::from_millis(100);

/// The tag key every team's VPCs carry: `team=<team>`.
pub const TEAM_TAG: &str = "team";

/// A `VPCQuery` for the VPCs of `team` in [`REGION`].
pub fn query_manifest(name: &str, team: &str) -> Value {
    json!({
        "apiVersion": "query.fakecloud.m.crossplane.io/v1alpha1", "kind": "VPCQuery",
        "metadata": { "name": name },
        "spec": { "filter": { "region": REGION, "tags": [format!("{TEAM_TAG}={team}")] } },
    })
}

/// `VPCQuery/NAME  MATCHES=3  READY=True  SYNCED=True`, as the columns of
/// `kubectl get vpcquery` show them.
pub fn query_row(query: &VpcQuery) -> String {
    let status = |type_: &str| condition(query, type_).map_or_else(|| "-".to_owned(), |c| c.0);
    format!(
        "VPCQuery/{}  MATCHES={}  READY={}  SYNCED={}",
        query.name_any(),
        match_count(query).map_or_else(|| "-".to_owned(), |n| n.to_string()),
        status("Ready"),
        status("Synced"),
    )
}

/// `status.matchCount`.
pub fn match_count(query: &VpcQuery) -> Option<i64> {
    query.status.as_ref().and_then(|s| s.match_count)
}

/// The external names `status.matches` lists.
pub fn listed_matches(query: &VpcQuery) -> BTreeSet<String> {
    query
        .status
        .iter()
        .flat_map(|s| &s.matches)
        .map(|m| m.external_name.clone())
        .collect()
}

/// Team `team` makes one VPC per range in fakecloud directly, outside
/// Kubernetes; returns their ids.
pub async fn make_team_vpcs(
    stage: &Stage<'_>,
    team: &str,
    cidrs: &[&str],
) -> Result<Vec<String>, ScenarioError> {
    let mut ids = Vec::new();
    for cidr in cidrs {
        ids.push(
            stage
                .outside_vpc(json!({ "cidrBlock": cidr, "tags": { TEAM_TAG: team, "owner": format!("team-{team}") } }))
                .await?,
        );
    }
    stage.say(format!(
        "team {team} created {} VPC(s) tagged {TEAM_TAG}={team} in fakecloud directly, outside Kubernetes: {}",
        ids.len(),
        ids.join(", ")
    ));
    Ok(ids)
}

/// The observe-only VPCs carrying `query`'s label, in the stage's
/// namespace, by name.
pub async fn owned_vpcs(stage: &Stage<'_>, query: &str) -> Result<Vec<Vpc>, ScenarioError> {
    let api = Api::<Vpc>::namespaced(stage.objects.client(), stage.objects.namespace());
    let selector = format!("{}={query}", name_label::<VpcQuery>());
    let mut vpcs = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(ObjectsError::from)?
        .items;
    vpcs.sort_by_key(ResourceExt::name_any);
    Ok(vpcs)
}

/// Waits until `query` reports exactly `ids` as its matches (`status.matches`
/// lists the first 100), Ready and
/// Synced for its current generation, and exactly one observe-only VPC per
/// match exists and is Ready; returns the query and the VPCs.
pub async fn wait_for_matches(
    stage: &Stage<'_>,
    query: &str,
    ids: &BTreeSet<String>,
    timeout: Duration,
) -> Result<(VpcQuery, Vec<Vpc>), ScenarioError> {
    let reported = stage
        .objects
        .wait_for::<VpcQuery>(query, &format!("{} matches", ids.len()), timeout, |q| {
            let listed = listed_matches(q);
            match_count(q) == Some(ids.len() as i64)
                && listed.len() == ids.len().min(MAX_LISTED_MATCHES)
                && listed.is_subset(ids)
                && is_ready(q)
                && is_synced(q)
                && observed_generation(q) >= q.meta().generation.unwrap_or_default()
        })
        .await?;
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let vpcs = owned_vpcs(stage, query).await?;
        let observed: BTreeSet<String> = vpcs.iter().filter_map(external_name).collect();
        let settled = vpcs.len() == ids.len()
            && observed == *ids
            && vpcs.iter().all(|v| is_ready(v) && is_synced(v));
        if settled {
            return Ok((reported, vpcs));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ObjectsError::Timeout {
                what: format!(
                    "the observe-only VPCs of VPCQuery {query} to be {ids:?}, each Ready"
                ),
                timeout,
                last: vpcs.iter().map(status_row).collect::<Vec<_>>().join("; "),
            }
            .into());
        }
        tokio::time::sleep(POLL).await;
    }
}

/// What makes a VPC the query's own observe-only resource for `id`: its
/// deterministic name, the external name, `["Observe"]`, the query's label,
/// and the query (this one, by uid) as controlling owner.
fn is_owned_observer(vpc: &Vpc, query: &VpcQuery, id: &str) -> bool {
    let owner = vpc
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true));
    vpc.name_any() == format!("{}-{id}", query.name_any())
        && vpc
            .annotations()
            .get(EXTERNAL_NAME_ANNOTATION)
            .map(String::as_str)
            == Some(id)
        && spec_of(vpc)["managementPolicies"] == json!(["Observe"])
        && vpc.labels().get(&name_label::<VpcQuery>()) == Some(&query.name_any())
        && owner.is_some_and(|o| o.kind == "VPCQuery" && Some(&o.uid) == query.uid().as_ref())
}

/// Shows the query and its VPCs as `kubectl get` would, and the `Ready`
/// message.
fn narrate(stage: &Stage<'_>, query: &VpcQuery, vpcs: &[Vpc]) {
    stage.say(query_row(query));
    for vpc in vpcs {
        stage.say(format!("  {}", status_row(vpc)));
    }
    if let Some((_, _, message)) = condition(query, "Ready") {
        stage.say(format!("Ready: {message}"));
    }
}

/// Calls after `mark` on VPC and Subnet paths that change something:
/// there must be none, the provider only reads.
async fn mutations_since(stage: &Stage<'_>, mark: i64) -> Result<usize, ScenarioError> {
    let (vpcs, subnets) = (collection("vpcs"), collection("subnets"));
    let calls = stage
        .audit_since(mark, |p| under(p, &vpcs) || under(p, &subnets))
        .await?;
    Ok(mutating(&calls))
}

/// Applies a `VPCQuery` named `name` for team `team`'s VPCs, which are
/// `ids`: it reports them, and owns one Ready observe-only VPC for each,
/// named after the query and the match; nothing in the cloud changes.
pub async fn apply_query(
    stage: &Stage<'_>,
    name: &str,
    team: &str,
    ids: &[String],
    verdict: &mut Verdict,
) -> Result<(), ScenarioError> {
    let mark = stage.audit_mark().await?;
    stage.say(format!(
        "apply VPCQuery/{name} in namespace {}: filter region {REGION}, tags [{TEAM_TAG}={team}]",
        stage.objects.namespace()
    ));
    stage
        .objects
        .apply::<VpcQuery>(query_manifest(name, team))
        .await?;
    let expected: BTreeSet<String> = ids.iter().cloned().collect();
    let (query, vpcs) = wait_for_matches(stage, name, &expected, READY).await?;
    narrate(stage, &query, &vpcs);
    verdict.check(
        format!("the query reports {} matches", ids.len()),
        match_count(&query) == Some(ids.len() as i64),
    );
    let own = ids
        .iter()
        .filter(|id| vpcs.iter().any(|v| is_owned_observer(v, &query, id)))
        .count();
    verdict.check(
        format!(
            "one observe-only VPC per match, named <query>-<id>, labelled and controlled by the query (saw {own} of {})",
            ids.len()
        ),
        own == ids.len() && vpcs.len() == ids.len(),
    );
    let mutations = mutations_since(stage, mark).await?;
    verdict.check(
        format!("the query and its VPCs made zero mutating calls (saw {mutations})"),
        mutations == 0,
    );
    Ok(())
}

/// A managed Subnet whose `vpcIdSelector` selects the query's VPCs by the
/// query's label: the selector takes the first by name, the Subnet is
/// created in that VPC (in its range's `x.y.1.0/24`), and the only
/// mutating call is the Subnet's create. Returns the VPC it chose.
pub async fn subnet_by_selector(
    stage: &Stage<'_>,
    query: &str,
    name: &str,
    ids: &[String],
    verdict: &mut Verdict,
) -> Result<String, ScenarioError> {
    let first = owned_vpcs(stage, query).await?.into_iter().next();
    let first_id = first.as_ref().and_then(external_name).unwrap_or_default();
    let range = first
        .as_ref()
        .map(|v| crate::managed::at_provider(v)["cidrBlock"].clone())
        .and_then(|c| c.as_str().map(str::to_owned))
        .unwrap_or_default();
    let cidr = first_subnet(&range);
    let mark = stage.audit_mark().await?;
    let label = name_label::<VpcQuery>();
    stage.say(format!(
        "apply Subnet/{name}: vpcIdSelector.matchLabels {{{label}: {query}}}, cidrBlock {cidr}"
    ));
    stage
        .objects
        .apply::<Subnet>(json!({
            "apiVersion": "network.fakecloud.m.crossplane.io/v1alpha1", "kind": "Subnet",
            "metadata": { "name": name },
            "spec": { "forProvider": {
                "region": REGION, "vpcIdSelector": { "matchLabels": { &label: query } },
                "cidrBlock": cidr, "availabilityZone": format!("{REGION}a"),
            } },
        }))
        .await?;
    let subnet = stage
        .objects
        .wait_for::<Subnet>(name, "Ready", READY, |s| is_ready(s) && is_synced(s))
        .await?;
    stage.say(status_row(&subnet));
    let chosen = spec_of(&subnet)["forProvider"]["vpcId"]
        .as_str()
        .unwrap_or("-")
        .to_owned();
    stage.say(format!(
        "spec.forProvider.vpcId resolved by the selector: {chosen} (the first of the query's VPCs by name)"
    ));
    verdict.check(
        format!("the selector chose one of the query's VPCs, the first by name (saw {chosen})"),
        ids.contains(&chosen) && chosen == first_id,
    );
    let id = external_name(&subnet).unwrap_or_default();
    let in_cloud = stage.admin.resource(Kind::Subnet, &id, &region()).await?;
    verdict.check(
        format!("the Subnet was created inside {chosen}"),
        in_cloud.resource["vpcId"] == chosen.as_str(),
    );
    let calls = stage.audit_since(mark, |p| p.starts_with("/v1/")).await?;
    let on_vpcs = calls
        .iter()
        .filter(|c| {
            ids.iter()
                .any(|id| under(&c.path, &format!("{}/{id}", collection("vpcs"))))
        })
        .filter(|c| c.method != "GET")
        .count();
    verdict.check(
        format!(
            "the only mutating call created the Subnet (saw {} mutating, {on_vpcs} on the matched VPCs)",
            mutating(&calls)
        ),
        mutating(&calls) == 1 && on_vpcs == 0,
    );
    Ok(chosen)
}

/// The first /24 of a /16 range: `10.21.0.0/16` -> `10.21.1.0/24`.
fn first_subnet(range: &str) -> String {
    let octets: Vec<&str> = range.split(['.', '/']).collect();
    match octets.as_slice() {
        [a, b, ..] => format!("{a}.{b}.1.0/24"),
        _ => range.to_owned(),
    }
}

/// Team `team` makes one more VPC: on the query's next poll it gets its
/// observe-only VPC, and the others keep theirs. Returns its id; `ids`
/// gains it.
pub async fn match_appears(
    stage: &Stage<'_>,
    query: &str,
    team: &str,
    cidr: &str,
    ids: &mut Vec<String>,
    verdict: &mut Verdict,
) -> Result<String, ScenarioError> {
    let before: Vec<String> = owned_vpcs(stage, query)
        .await?
        .iter()
        .filter_map(|v| v.uid())
        .collect();
    let id = make_team_vpcs(stage, team, &[cidr]).await?.remove(0);
    let mark = stage.audit_mark().await?;
    ids.push(id.clone());
    let expected: BTreeSet<String> = ids.iter().cloned().collect();
    let (reported, vpcs) = wait_for_matches(stage, query, &expected, READY).await?;
    stage.say(format!(
        "on the query's next poll: {} (VPC/{query}-{id} added)",
        query_row(&reported)
    ));
    let kept = before
        .iter()
        .filter(|uid| vpcs.iter().any(|v| v.uid().as_ref() == Some(uid)))
        .count();
    verdict.check(
        format!(
            "the new match got its observe-only VPC, and the {} before were kept (saw {kept})",
            before.len()
        ),
        vpcs.iter().any(|v| is_owned_observer(v, &reported, &id)) && kept == before.len(),
    );
    let mutations = mutations_since(stage, mark).await?;
    verdict.check(
        format!("zero mutating calls while the match appeared (saw {mutations})"),
        mutations == 0,
    );
    Ok(id)
}

/// Team B deletes the VPC `id` in the cloud: on the query's next poll its
/// observe-only VPC goes (the query releases it, Kubernetes deletes it)
/// and the others stay. `ids` loses it.
pub async fn match_disappears(
    stage: &Stage<'_>,
    query: &str,
    id: &str,
    ids: &mut Vec<String>,
    verdict: &mut Verdict,
) -> Result<(), ScenarioError> {
    stage.cloud.delete_vpc(REGION, id).await?;
    stage.say(format!("team B deleted {id} in fakecloud"));
    let mark = stage.audit_mark().await?;
    ids.retain(|i| i != id);
    let expected: BTreeSet<String> = ids.iter().cloned().collect();
    let name = format!("{query}-{id}");
    stage.objects.wait_gone::<Vpc>(&name, READY).await?;
    let (reported, vpcs) = wait_for_matches(stage, query, &expected, READY).await?;
    stage.say(format!(
        "on the query's next poll: {} (VPC/{name} gone)",
        query_row(&reported)
    ));
    verdict.check(
        format!(
            "the observe-only VPC of the deleted {id} is gone, the other {} stay",
            ids.len()
        ),
        vpcs.len() == ids.len(),
    );
    let mutations = mutations_since(stage, mark).await?;
    verdict.check(
        format!("zero mutating calls while the match went (saw {mutations})"),
        mutations == 0,
    );
    Ok(())
}

/// Deletes the query: Kubernetes deletes its observe-only VPCs with it,
/// and every matched VPC is still in the cloud, unchanged.
pub async fn delete_query(
    stage: &Stage<'_>,
    query: &str,
    ids: &[String],
    verdict: &mut Verdict,
) -> Result<(), ScenarioError> {
    let mark = stage.audit_mark().await?;
    stage.say(format!("kubectl delete vpcquery {query}"));
    stage.objects.delete::<VpcQuery>(query).await?;
    stage.objects.wait_gone::<VpcQuery>(query, READY).await?;
    let deadline = tokio::time::Instant::now() + READY;
    let mut left = owned_vpcs(stage, query).await?;
    while !left.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
        left = owned_vpcs(stage, query).await?;
    }
    verdict.check(
        format!(
            "deleting the query deleted its observe-only VPCs ({} left)",
            left.len()
        ),
        left.is_empty(),
    );
    let mut kept = 0;
    for id in ids {
        if stage.cloud.get_vpc(REGION, id).await.is_ok() {
            kept += 1;
        }
    }
    stage.say(format!(
        "{kept} of the {} matched VPCs are still in fakecloud",
        ids.len()
    ));
    verdict.check(
        format!(
            "every matched VPC is still in the cloud ({kept} of {})",
            ids.len()
        ),
        kept == ids.len(),
    );
    let mutations = mutations_since(stage, mark).await?;
    verdict.check(
        format!("deleting the query made zero mutating calls (saw {mutations})"),
        mutations == 0,
    );
    Ok(())
}
