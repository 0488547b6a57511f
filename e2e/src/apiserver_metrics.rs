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
}

/// Requests counted, by series.
pub type Requests = BTreeMap<Request, f64>;

/// The API server's request counters, summed by verb, code and resource.
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
        let label = |name: &str| {
            labels
                .split(&format!("{name}=\""))
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_default()
                .to_owned()
        };
        let key = Request {
            verb: label("verb"),
            code: label("code"),
            resource: label("resource"),
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
