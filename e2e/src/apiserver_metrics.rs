//! The API server's own request counters, as the benchmarks read them:
//! what the provider costs it, and what it failed to answer.

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
    let text = world
        .kube()
        .request_text(http::Request::get("/metrics").body(Vec::new())?)
        .await?;
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
    {
        let Some((labels, value)) = line.rsplit_once(' ') else {
            continue;
        };
        // `{name="` or `,name="`, so that `resource` is not found inside
        // `subresource`.
        let label = |name: &str| {
            ['{', ',']
                .iter()
                .find_map(|before| labels.split(&format!("{before}{name}=\"")).nth(1))
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_default()
                .to_owned()
        };
        let key = Request {
            verb: label("verb"),
            code: label("code"),
            resource: label("resource"),
            subresource: label("subresource"),
        };
        *out.entry(key).or_default() += value.parse::<f64>().unwrap_or(0.0);
    }
    Ok(out)
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
