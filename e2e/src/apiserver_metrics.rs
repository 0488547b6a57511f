//! The API server's own counters, as the benchmarks read them: its
//! requests (what the provider costs it, and what it failed to answer)
//! and its calls to the conversion webhook.

use std::collections::BTreeMap;

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
    for (labels, value) in samples(text, "apiserver_request_total") {
        let key = Request {
            verb: label(labels, "verb"),
            code: label(labels, "code"),
            resource: label(labels, "resource"),
            subresource: label(labels, "subresource"),
        };
        *out.entry(key).or_default() += value;
    }
    out
}

/// The conversion webhook calls the API server made, by the version it
/// converted to: how many, and their time in seconds.
pub type Conversions = BTreeMap<String, (f64, f64)>;

/// The API server's own count of its conversion webhook calls
/// (`apiserver_crd_webhook_conversion_duration_seconds`), by version
/// converted to. They include the ones no client asked for: the API server
/// keeps a watch cache for every version of a CRD and fills each from
/// etcd, so every write of an object stored at `v1beta1` is converted to
/// `v1alpha1` once for the `v1alpha1` cache while that version is listed.
pub async fn webhook_conversions(world: &World) -> anyhow::Result<Conversions> {
    Ok(conversions_in(&metrics_text(world).await?))
}

/// [`webhook_conversions`] of one `/metrics` page.
fn conversions_in(text: &str) -> Conversions {
    const FAMILY: &str = "apiserver_crd_webhook_conversion_duration_seconds";
    let mut out = Conversions::new();
    for (labels, value) in samples(text, &format!("{FAMILY}_count")) {
        out.entry(label(labels, "to_version")).or_default().0 += value;
    }
    for (labels, value) in samples(text, &format!("{FAMILY}_sum")) {
        out.entry(label(labels, "to_version")).or_default().1 += value;
    }
    out
}

/// The calls counted between two readings of the same API server.
pub fn conversions_since(before: &Conversions, after: &Conversions) -> Conversions {
    after
        .iter()
        .map(|(version, (count, seconds))| {
            let (count_before, seconds_before) = before.get(version).copied().unwrap_or_default();
            (
                version.clone(),
                (count - count_before, seconds - seconds_before),
            )
        })
        .filter(|(_, (count, _))| *count > 0.0)
        .collect()
}

/// The samples of the series `name` on a `/metrics` page: each one's
/// labels (between the braces) and value.
fn samples<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = (&'a str, f64)> + 'a {
    text.lines().filter_map(move |line| {
        let labels = line.strip_prefix(name)?.strip_prefix('{')?;
        let (labels, value) = labels.rsplit_once("} ")?;
        Some((labels, value.trim().parse().unwrap_or(0.0)))
    })
}

/// The value of label `name` in a sample's labels, empty when absent.
fn label(labels: &str, name: &str) -> String {
    // At the start or after a comma, so that `resource` is not found
    // inside `subresource`.
    let quoted = format!("{name}=\"");
    labels
        .strip_prefix(&quoted)
        .or_else(|| labels.split(&format!(",{quoted}")).nth(1))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
        .to_owned()
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
        let before = conversions_in(PAGE);
        let mut after = before.clone();
        after.insert("v1alpha1".into(), (20.0, 1.0));
        assert_eq!(
            conversions_since(&before, &after),
            Conversions::from([("v1alpha1".to_owned(), (8.0, 0.25))])
        );
    }

    #[test]
    fn a_label_absent_or_only_a_suffix_of_another_is_empty() {
        assert_eq!(label(r#"subresource="status",verb="GET""#, "resource"), "");
        assert_eq!(
            label(r#"subresource="status",resource="pods""#, "resource"),
            "pods"
        );
        assert_eq!(label(r#"resource="pods""#, "resource"), "pods");
        assert_eq!(label("", "verb"), "");
    }
}
