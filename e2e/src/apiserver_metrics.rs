//! The API server's own counters, as the benchmarks read them: its
//! requests (what the provider costs it, and what it failed to answer),
//! its calls to the conversion webhook, and the events it replayed to
//! watches as they opened.

use std::collections::BTreeMap;

use runtime::metrics::sum_samples;

use crate::world::World;

/// One `apiserver_request_total` series, by the labels the benchmarks use.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Request {
    pub verb: String,
    pub code: String,
    pub resource: String,
    /// Empty for the object itself; `status` for its status.
    pub subresource: String,
}

/// Requests counted, by series.
pub type Requests = BTreeMap<Request, f64>;

/// The API server's request counters, summed by verb, code, resource and
/// subresource.
pub async fn apiserver_requests(world: &World) -> anyhow::Result<Requests> {
    Ok(requests_in(&metrics_text(world).await?))
}

/// The API server's `/metrics` page.
async fn metrics_text(world: &World) -> anyhow::Result<String> {
    Ok(world
        .kube()
        .request_text(http::Request::get("/metrics").body(Vec::new())?)
        .await?)
}

/// [`apiserver_requests`] of one `/metrics` page.
fn requests_in(text: &str) -> Requests {
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
    {
        let Some((labels, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let label = |name: &str| label_value(labels, name).to_owned();
        let key = Request {
            verb: label("verb"),
            code: label("code"),
            resource: label("resource"),
            subresource: label("subresource"),
        };
        *out.entry(key).or_default() += value.parse::<f64>().unwrap_or(0.0);
    }
    out
}

/// The value of label `name` in a sample's labels (`{a="x",b="y"}`), or
/// `""` without it. It is looked for after `{` or `,`, so that
/// `resource` is not found inside `subresource`.
fn label_value<'a>(labels: &'a str, name: &str) -> &'a str {
    ['{', ',']
        .iter()
        .find_map(|before| labels.split(&format!("{before}{name}=\"")).nth(1))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
}

/// The samples of `family` on a `/metrics` page (the API server's or a
/// provider's), summed by the value of their label `label`.
pub fn sum_by_label(text: &str, family: &str, label: &str) -> BTreeMap<String, f64> {
    let mut sums = BTreeMap::new();
    let prefix = format!("{family}{{");
    for line in text.lines().filter(|line| line.starts_with(&prefix)) {
        let Some((labels, value)) = line.rsplit_once(' ') else {
            continue;
        };
        *sums
            .entry(label_value(labels, label).to_owned())
            .or_default() += value.parse::<f64>().unwrap_or(0.0);
    }
    sums
}

/// The versions a conversion goes to: the namespaced kinds' two.
const CONVERTED_TO: [&str; 2] = ["v1alpha1", "v1beta1"];

/// The conversion webhook calls the API server made, by the version it
/// converted to: how many, and their time in seconds.
pub type Conversions = BTreeMap<&'static str, (f64, f64)>;

/// [`Conversions`] of one `/metrics` page, from the API server's own
/// `apiserver_crd_webhook_conversion_duration_seconds`. They include the
/// ones no client asked for: the API server keeps a watch cache for every
/// version of a CRD and fills each from etcd, so every write of an object
/// stored at `v1beta1` is converted to `v1alpha1` once for the `v1alpha1`
/// cache while that version is listed.
fn conversions_in(text: &str) -> Conversions {
    const FAMILY: &str = "apiserver_crd_webhook_conversion_duration_seconds";
    CONVERTED_TO
        .into_iter()
        .map(|version| {
            let to = [("to_version", version)];
            let calls = sum_samples(text, &format!("{FAMILY}_count"), &to);
            let seconds = sum_samples(text, &format!("{FAMILY}_sum"), &to);
            (version, (calls, seconds))
        })
        .collect()
}

/// The events the API server replayed to watches as they opened
/// (`apiserver_init_events_total`): each watch that opens at an older
/// version than the present gets every event of its kind since that
/// version first. kube-apiserver 1.20 labels the counter by the cache's
/// object type, the same for every custom resource, so in a benchmark of
/// VPCs it is the VPCs' watches (and the few of other kinds, which see
/// few events). 1.20 counts no closed watcher; its log says each at
/// `--v=1` (`E2E_APISERVER_VERBOSITY`).
fn replayed_in(text: &str) -> f64 {
    sum_samples(text, "apiserver_init_events_total", &[])
}

/// What the API server counted, from one reading of its `/metrics`.
#[derive(Debug, Clone, PartialEq)]
pub struct Counters {
    pub requests: Requests,
    pub conversions: Conversions,
    /// Events replayed to watches opening, all kinds ([`replayed_in`]).
    pub replayed: f64,
}

impl Counters {
    /// Reads the API server's `/metrics` once.
    pub async fn read(world: &World) -> anyhow::Result<Self> {
        let text = metrics_text(world).await?;
        Ok(Self {
            requests: requests_in(&text),
            conversions: conversions_in(&text),
            replayed: replayed_in(&text),
        })
    }

    /// The conversions counted since `before`, by version, leaving out the
    /// versions not called in between.
    pub fn conversions_since(&self, before: &Self) -> Conversions {
        self.conversions
            .iter()
            .map(|(version, (calls, seconds))| {
                let (calls_before, seconds_before) =
                    before.conversions.get(version).copied().unwrap_or_default();
                (*version, (calls - calls_before, seconds - seconds_before))
            })
            .filter(|(_, (calls, _))| *calls > 0.0)
            .collect()
    }
}

/// The series of answers 5xx, each as `VERB resource code: count`.
pub fn server_errors(requests: &Requests) -> Vec<(String, f64)> {
    requests
        .iter()
        .filter(|(request, count)| request.code.starts_with('5') && **count > 0.0)
        .map(|(r, count)| (format!("{} {} {}", r.verb, r.resource, r.code), *count))
        .collect()
}

/// Whether a verb writes.
pub fn is_write(verb: &str) -> bool {
    matches!(
        verb,
        "POST" | "PUT" | "PATCH" | "DELETE" | "APPLY" | "CREATE" | "UPDATE"
    )
}

/// A read that is not a watch: what a cache should have made unneeded.
pub fn is_read(verb: &str) -> bool {
    matches!(verb, "GET" | "LIST")
}

/// The requests counted between two readings of the same API server.
pub fn since(before: &Requests, after: &Requests) -> Requests {
    after
        .iter()
        .map(|(request, count)| {
            let delta = count - before.get(request).copied().unwrap_or(0.0);
            (request.clone(), delta)
        })
        .filter(|(_, delta)| *delta > 0.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_summed_by_one_label_over_the_others() {
        let text = "\
# HELP provider_reconciles_total Reconciles.
provider_reconciles_total{kind=\"VPC.m\",result=\"success\"} 40
provider_reconciles_total{kind=\"VPC\",result=\"success\"} 2
provider_reconciles_total{kind=\"VPC.m\",result=\"conflict\"} 3
provider_reconciles_total_other{kind=\"VPC.m\",result=\"error\"} 5
provider_reconcile_duration_seconds_count{kind=\"VPC.m\"} 45
";
        let sums = sum_by_label(text, "provider_reconciles_total", "result");
        assert_eq!(sums.get("success"), Some(&42.0));
        assert_eq!(sums.get("conflict"), Some(&3.0));
        assert_eq!(sums.len(), 2);
    }

    const PAGE: &str = r#"# HELP apiserver_request_total Counter of apiserver requests
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="namespace",subresource="status",verb="PATCH",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="PATCH",version="v1"} 2
apiserver_request_total{code="500",component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="PATCH",version="v1"} 1
apiserver_crd_webhook_conversion_duration_seconds_bucket{crd_name="vpcs.network.fakecloud.m.crossplane.io",from_version="v1beta1",succeeded="true",to_version="v1alpha1",le="0.005"} 7
apiserver_crd_webhook_conversion_duration_seconds_sum{crd_name="vpcs.network.fakecloud.m.crossplane.io",from_version="v1beta1",succeeded="true",to_version="v1alpha1"} 0.25
apiserver_crd_webhook_conversion_duration_seconds_count{crd_name="vpcs.network.fakecloud.m.crossplane.io",from_version="v1beta1",succeeded="true",to_version="v1alpha1"} 10
apiserver_crd_webhook_conversion_duration_seconds_sum{crd_name="subnets.network.fakecloud.m.crossplane.io",from_version="v1beta1",succeeded="false",to_version="v1alpha1"} 0.5
apiserver_crd_webhook_conversion_duration_seconds_count{crd_name="subnets.network.fakecloud.m.crossplane.io",from_version="v1beta1",succeeded="false",to_version="v1alpha1"} 2
apiserver_crd_webhook_conversion_duration_seconds_count{crd_name="vpcs.network.fakecloud.m.crossplane.io",from_version="v1alpha1",succeeded="true",to_version="v1beta1"} 4
apiserver_init_events_total{resource="*unstructured.Unstructured"} 1200
apiserver_init_events_total{resource="*core.Pod"} 30
"#;

    #[test]
    fn requests_are_summed_by_verb_code_resource_and_subresource() {
        let requests = requests_in(PAGE);
        let key = |code: &str, subresource: &str| Request {
            verb: "PATCH".into(),
            code: code.into(),
            resource: "pods".into(),
            subresource: subresource.into(),
        };
        assert_eq!(requests.len(), 3);
        assert_eq!(requests[&key("200", "status")], 3.0);
        assert_eq!(requests[&key("200", "")], 2.0);
        assert_eq!(
            server_errors(&requests),
            vec![("PATCH pods 500".to_owned(), 1.0)]
        );
    }

    #[test]
    fn conversions_are_summed_by_the_version_converted_to() {
        let conversions = conversions_in(PAGE);
        assert_eq!(conversions.len(), 2, "{conversions:?}");
        assert_eq!(conversions["v1alpha1"], (12.0, 0.75));
        assert_eq!(conversions["v1beta1"], (4.0, 0.0));
    }

    #[test]
    fn conversions_since_keeps_only_versions_called_again() {
        let before = Counters {
            requests: requests_in(PAGE),
            conversions: conversions_in(PAGE),
            replayed: replayed_in(PAGE),
        };
        let mut after = before.clone();
        after.conversions.insert("v1alpha1", (20.0, 1.0));
        assert_eq!(
            after.conversions_since(&before),
            Conversions::from([("v1alpha1", (8.0, 0.25))])
        );
    }

    #[test]
    fn events_replayed_are_summed_over_every_kind() {
        assert_eq!(replayed_in(PAGE), 1230.0);
        assert_eq!(replayed_in("apiserver_init_events_total_other 5\n"), 0.0);
    }

    #[test]
    fn a_label_absent_or_only_a_suffix_of_another_is_empty() {
        let requests = requests_in(
            r#"apiserver_request_total{subresource="status",verb="GET"} 1
apiserver_request_total{code="200",subresource="status",resource="pods"} 2
apiserver_request_total{resource="pods"} 4
"#,
        );
        let resources: Vec<_> = requests
            .iter()
            .map(|(r, n)| (r.resource.as_str(), r.verb.as_str(), *n))
            .collect();
        assert_eq!(
            resources,
            vec![("pods", "", 4.0), ("pods", "", 2.0), ("", "GET", 1.0)]
        );
    }
}
