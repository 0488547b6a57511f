//! Load benchmark: creates/s and gets/s at concurrency 32 over loopback,
//! against a real server on a temp SQLite file, with p50/p99 latency.
//!
//! `cargo bench -p fakecloud --bench load` (env `FAKECLOUD_BENCH_CREATES`,
//! `FAKECLOUD_BENCH_GETS` change the request counts).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fakecloud::client::{Client, RetryPolicy};
use fakecloud::model::CreateVpc;
use fakecloud::{ApiKey, Config};

const CONCURRENCY: usize = 32;
const REGION: &str = "us-east-1";

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Report {
    name: &'static str,
    requests: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

impl Report {
    fn print(mut self) {
        self.latencies.sort();
        let at = |q: f64| {
            let index = ((self.latencies.len() as f64 - 1.0) * q).round() as usize;
            self.latencies[index].as_secs_f64() * 1000.0
        };
        println!(
            "{:<8} {:>6} requests  {:>8.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>6.2} ms",
            self.name,
            self.requests,
            self.requests as f64 / self.elapsed.as_secs_f64(),
            at(0.50),
            at(0.99),
            at(1.0),
        );
    }
}

/// Runs `total` calls of `op` spread over `CONCURRENCY` tasks.
async fn run<F, Fut>(name: &'static str, total: usize, op: F) -> Report
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let op = op.clone();
            let next = next.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break latencies;
                    }
                    let t = Instant::now();
                    op(i).await;
                    latencies.push(t.elapsed());
                }
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(total);
    for worker in workers {
        latencies.extend(worker.await.expect("worker"));
    }
    Report {
        name,
        requests: total,
        elapsed: started.elapsed(),
        latencies,
    }
}

#[tokio::main]
async fn main() {
    let creates = count("FAKECLOUD_BENCH_CREATES", 5_000);
    let gets = count("FAKECLOUD_BENCH_GETS", 20_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let server = fakecloud::spawn(Config {
        api_keys: vec![ApiKey::new("bench-key", "bench")],
        default_delay: Duration::ZERO,
        ..Config::new(dir.path().join("bench.db").display().to_string())
    })
    .await
    .expect("server starts");
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(CONCURRENCY)
        .build()
        .expect("http client");
    let client = Client::new(server.base_url(), "bench-key")
        .with_retry(RetryPolicy::none())
        .with_http_client(http);
    println!("fakecloud load, concurrency {CONCURRENCY}, SQLite file, loopback");

    let ids = Arc::new(std::sync::Mutex::new(Vec::with_capacity(creates)));
    let (c, sink) = (client.clone(), ids.clone());
    run("creates", creates, move |i| {
        let (c, sink) = (c.clone(), sink.clone());
        async move {
            let body = CreateVpc {
                cidr_block: format!("10.{}.0.0/16", i % 256),
                ..Default::default()
            };
            let vpc = c.create_vpc(REGION, &body, None).await.expect("create");
            sink.lock().expect("ids").push(vpc.resource.id);
        }
    })
    .await
    .print();

    let ids: Arc<Vec<String>> = Arc::new(ids.lock().expect("ids").clone());
    let c = client.clone();
    run("gets", gets, move |i| {
        let (c, ids) = (c.clone(), ids.clone());
        async move {
            let id = &ids[i.wrapping_mul(7919) % ids.len()];
            c.get_vpc(REGION, id).await.expect("get");
        }
    })
    .await
    .print();
    server.shutdown().await.expect("shutdown");
}
