//! Console page loads with many resources: 10,000 by default (two accounts,
//! three regions, tagged, some still pending), then each console page
//! fetched over loopback, as a logged-in browser would, timing the whole
//! answer.
//!
//! `cargo bench -p fakecloud --bench console` (env
//! `FAKECLOUD_BENCH_RESOURCES` and `FAKECLOUD_BENCH_LOADS` change the
//! resource count and the loads per page).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fakecloud::client::{AdminClient, Client, RetryPolicy};
use fakecloud::model::{CreateVpc, REGIONS};
use fakecloud::{ApiKey, Config};

const CONCURRENCY: usize = 16;
const ADMIN_TOKEN: &str = "bench-admin-token";
const KEYS: [(&str, &str); 2] = [("bench-key-a", "team-a"), ("bench-key-b", "team-b")];
const TEAMS: [&str; 4] = ["payments", "search", "web", "data"];
/// How many of the resources are created last and left pending.
const PENDING: usize = 200;

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Creates VPCs `from..to` over `CONCURRENCY` tasks.
async fn create(clients: &Arc<Vec<Client>>, from: usize, to: usize) {
    let next = Arc::new(AtomicUsize::new(from));
    let workers: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (clients, next) = (clients.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= to {
                        break;
                    }
                    let body = CreateVpc {
                        cidr_block: format!("10.{}.0.0/16", i % 256),
                        tags: Some(
                            [
                                ("Name".to_owned(), format!("bench-{i}")),
                                ("team".to_owned(), TEAMS[i % TEAMS.len()].to_owned()),
                                (
                                    "env".to_owned(),
                                    if i % 3 == 0 { "prod" } else { "dev" }.to_owned(),
                                ),
                            ]
                            .into(),
                        ),
                        ..Default::default()
                    };
                    let client = &clients[i % clients.len()];
                    client
                        .create_vpc(REGIONS[i % REGIONS.len()], &body, None)
                        .await
                        .expect("create");
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.expect("worker");
    }
}

/// Loads `path` `loads` times, one after another, and prints the timings.
async fn measure(http: &reqwest::Client, base: &str, cookie: &str, path: &str, loads: usize) {
    let mut times = Vec::with_capacity(loads);
    let mut bytes = 0;
    for _ in 0..loads {
        let started = Instant::now();
        let response = http
            .get(format!("{base}{path}"))
            .header("cookie", cookie)
            .header("accept", "text/html")
            .send()
            .await
            .expect("page");
        assert_eq!(response.status(), 200, "{path}");
        bytes = response.bytes().await.expect("body").len();
        times.push(started.elapsed());
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{path:<52} p50 {:>7.1} ms  p95 {:>7.1} ms  max {:>7.1} ms  {:>6} kB",
        ms(times[times.len() / 2]),
        ms(times[(times.len() * 95 / 100).min(times.len() - 1)]),
        ms(times[times.len() - 1]),
        bytes / 1024,
    );
}

#[tokio::main]
async fn main() {
    let resources = count("FAKECLOUD_BENCH_RESOURCES", 10_000).max(PENDING + 1);
    let loads = count("FAKECLOUD_BENCH_LOADS", 20).max(1);
    let dir = tempfile::tempdir().expect("temp dir");
    let server = fakecloud::spawn(Config {
        api_keys: KEYS.iter().map(|(k, a)| ApiKey::new(*k, *a)).collect(),
        admin_token: Some(ADMIN_TOKEN.to_owned()),
        default_delay: Duration::ZERO,
        ..Config::new(dir.path().join("bench.db").display().to_string())
    })
    .await
    .expect("server starts");
    let base = server.base_url();
    let clients: Arc<Vec<Client>> = Arc::new(
        KEYS.iter()
            .map(|(key, _)| Client::new(base.clone(), *key).with_retry(RetryPolicy::none()))
            .collect(),
    );
    let started = Instant::now();
    create(&clients, 0, resources - PENDING).await;
    // The last ones stay pending for a day: the state filter has both.
    let admin = AdminClient::new(base.clone(), ADMIN_TOKEN);
    admin
        .set_timing_all(Duration::from_secs(86_400))
        .await
        .expect("timing");
    create(&clients, resources - PENDING, resources).await;
    println!(
        "fakecloud console, {resources} resources ({PENDING} pending) created in {:.1}s; \
         {loads} loads per page over loopback",
        started.elapsed().as_secs_f64()
    );

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http client");
    let login = http
        .post(format!("{base}/console/login"))
        .form(&[("token", ADMIN_TOKEN)])
        .send()
        .await
        .expect("login");
    let cookie = login.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("cookie")
        .to_owned();
    for path in [
        "/console",
        "/console/resources",
        "/console/resources?state=pending",
        "/console/resources?tag=team%3Dsearch&account=team-b",
        "/console/resources?region=eu-west-1&state=available",
        "/console/resources?before=200",
        "/console/resources/table",
        "/console/resources/1",
        "/console/audit",
        "/console/audit?status=failed",
        "/console/faults",
    ] {
        measure(&http, &base, &cookie, path, loads).await;
    }
    server.shutdown().await.expect("shutdown");
}
