//! The versions story, on the namespaced kinds (the ones with two
//! versions): a VPC written at the deprecated `v1alpha1`, as a user with
//! an old manifest would, reads at `v1beta1` with its DNS settings grouped
//! and its tenancy renamed; the provider, which works at `v1beta1`, makes
//! it once; an edit at `v1alpha1` reaches the cloud under the new name;
//! and nothing else is asked of the cloud. Every conversion is the API
//! server calling the conversion webhook: the provider's own under
//! compose, the harness's stand-in for Crossplane's wiring locally.

use std::time::Duration;

use apis::kinds::vpc;
use e2e::scenarios::{Verdict, collection, under};
use e2e::scope::{Namespaced, Scope};
use e2e::world::{is_ready, is_synced};
use serde_json::json;

use crate::{DemoError, System};

const NAME: &str = "versioned";
const WAIT: Duration = Duration::from_secs(60);

pub(crate) async fn play(system: &System) -> Result<Verdict, DemoError> {
    let app = Namespaced::objects(&system.objects);
    let stage = system.stage();
    let stage = stage.with(&app);
    let mut verdict = Verdict::default();
    let mark = stage.audit_mark().await?;

    stage.say(format!(
        "apply VPC/{NAME} at network.fakecloud.m.crossplane.io/v1alpha1 (deprecated): enableDnsSupport true, enableDnsHostnames false, instanceTenancy default"
    ));
    app.apply::<vpc::m::Vpc>(json!({
        "apiVersion": "network.fakecloud.m.crossplane.io/v1alpha1", "kind": "VPC",
        "metadata": {"name": NAME},
        "spec": {"forProvider": {"region": e2e::scenarios::REGION, "cidrBlock": "10.60.0.0/16",
            "enableDnsSupport": true, "enableDnsHostnames": false, "instanceTenancy": "default"}},
    }))
    .await?;
    let beta = app
        .wait_for::<vpc::v1beta1::Vpc>(NAME, "Ready at v1beta1", WAIT, |v| {
            is_ready(v) && is_synced(v)
        })
        .await?;
    let dns = beta.spec.for_provider.dns.clone().unwrap_or_default();
    stage.say(format!(
        "read at v1beta1: dns.resolution {:?}, dns.hostnames {:?}, tenancy {:?}; Ready",
        dns.resolution, dns.hostnames, beta.spec.for_provider.tenancy
    ));
    verdict.check(
        "v1alpha1's DNS booleans read as v1beta1's dns group",
        dns.resolution == Some(true) && dns.hostnames == Some(false),
    );
    verdict.check(
        "instanceTenancy reads as tenancy",
        beta.spec.for_provider.tenancy == Some(vpc::InstanceTenancy::Default),
    );

    stage.say("patch it at v1alpha1: enableDnsHostnames true");
    app.patch::<vpc::m::Vpc>(
        NAME,
        json!({"spec": {"forProvider": {"enableDnsHostnames": true}}}),
    )
    .await?;
    let applied = app
        .wait_for::<vpc::v1beta1::Vpc>(NAME, "dns.hostnames in the cloud", WAIT, |v| {
            v.status
                .as_ref()
                .and_then(|s| s.at_provider.as_ref())
                .and_then(|o| o.dns.as_ref())
                .is_some_and(|d| d.hostnames == Some(true))
        })
        .await;
    verdict.check("an edit at v1alpha1 reaches the cloud", applied.is_ok());
    let alpha = app.get::<vpc::m::Vpc>(NAME).await?;
    verdict.check(
        "read back at v1alpha1, the old names hold the new value",
        alpha.is_some_and(|v| v.spec.for_provider.enable_dns_hostnames == Some(true)),
    );

    tokio::time::sleep(stage.settle).await;
    let id = e2e::world::external_name(&beta).unwrap_or_default();
    let item = format!("{}/{id}", collection("vpcs"));
    let calls = stage
        .audit_since(mark, |path| {
            path == collection("vpcs") || under(path, &item)
        })
        .await?;
    let mutating: Vec<_> = calls.into_iter().filter(|c| c.method != "GET").collect();
    stage.audit("the VPC's mutating calls", &mutating);
    let count = |method: &str| mutating.iter().filter(|c| c.method == method).count();
    verdict.check(
        "one create and one update, nothing from the conversions",
        count("POST") == 1 && count("PATCH") == 1 && mutating.len() == 2,
    );
    Ok(verdict)
}
