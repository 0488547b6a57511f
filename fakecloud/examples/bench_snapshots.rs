//! Snapshot and replay benchmark (`scripts/bench-snapshots`, a release
//! build): against real servers on temp SQLite files over loopback,
//!
//! 1. a world of 100,000 resources (40% VPCs, 40% subnets, 10% node groups,
//!    10% database instances, two accounts) made through the API, then
//!    its save timed while concurrent GETs measure the API's latency (once
//!    at a steady 1,000 GETs a second, once with GETs back to back, which
//!    takes both cores of the build machine), the file's size, its load
//!    (`overwrite`) timed, and a second save compared with the first byte
//!    for byte;
//! 2. a recording of 10,000 calls on a seeded server, replayed as fast as
//!    possible onto an empty one, and the two states compared by a digest
//!    of every resource without its times of day.
//!
//! It is an example rather than a `[[bench]]` so that it needs no entry in
//! the manifest (the Dockerfile's dependency layer stubs every declared
//! target). `FAKECLOUD_BENCH_RESOURCES` and `FAKECLOUD_BENCH_RECORDED`
//! change the two sizes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fakecloud::client::{AdminClient, Client, RetryPolicy};
use fakecloud::model::{
    AdminResource, CreateDatabaseInstance, CreateNodeGroup, CreateSubnet, CreateVpc, Credentials,
    Engine, LoadStrategy,
};
use fakecloud::replay::{ReplayOptions, replay};
use fakecloud::{ApiKey, Config, RunningServer};
use serde_json::json;
use sha2::{Digest, Sha256};

const REGION: &str = "us-east-1";
const ADMIN: &str = "bench-admin";
/// Concurrent callers while the world is made.
const MAKERS: usize = 32;
/// Concurrent GET loops while a save runs.
const READERS: usize = 8;
/// How often each loop sends a GET in the steady run: 1,000 GETs a second
/// in all, an API in use but not flooded.
const STEADY_PACE: Duration = Duration::from_millis(8);

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn keys() -> Vec<ApiKey> {
    vec![
        ApiKey::new("key-a", "acct-a"),
        ApiKey::new("key-b", "acct-b"),
    ]
}

async fn server(dir: &std::path::Path, name: &str, seed: Option<u64>) -> RunningServer {
    fakecloud::spawn(Config {
        api_keys: keys(),
        admin_token: Some(ADMIN.into()),
        default_delay: Duration::ZERO,
        seed,
        ..Config::new(dir.join(format!("{name}.db")).display().to_string())
    })
    .await
    .expect("server starts")
}

fn clients(server: &RunningServer) -> (Client, Client, AdminClient) {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(MAKERS)
        .build()
        .expect("http client");
    let client = |key: &str| {
        Client::new(server.base_url(), key)
            .with_retry(RetryPolicy::none())
            .with_http_client(http.clone())
    };
    (
        client("key-a"),
        client("key-b"),
        AdminClient::new(server.base_url(), ADMIN),
    )
}

/// Runs `op(i)` for `i` in `0..total` over `workers` tasks.
async fn spread<F, Fut>(total: usize, workers: usize, op: F)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let (op, next) = (op.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    op(i).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("worker");
    }
}

fn vpc_body(i: usize) -> CreateVpc {
    CreateVpc {
        cidr_block: format!("10.{}.0.0/16", i % 256),
        ..Default::default()
    }
}

fn database_body(identifier: String, subnet: &str) -> CreateDatabaseInstance {
    CreateDatabaseInstance {
        identifier,
        engine: Engine::Postgres,
        master_username: "admin".into(),
        master_password: "bench-password".into(),
        subnet_ids: Some(vec![subnet.to_string()]),
        ..Default::default()
    }
}

/// The world: VPCs, one subnet in each, node groups and databases in those.
async fn make_world(a: &Client, b: &Client, total: usize) -> Vec<String> {
    let vpcs = total * 4 / 10;
    let groups = total / 10;
    let databases = total - 2 * vpcs - groups;
    let made = Arc::new(std::sync::Mutex::new(vec![
        (String::new(), String::new());
        vpcs
    ]));
    let (sink, a1, b1) = (made.clone(), a.clone(), b.clone());
    spread(vpcs, MAKERS, move |i| {
        // Even VPCs are account A's, odd ones B's.
        let client = if i % 2 == 0 { a1.clone() } else { b1.clone() };
        let sink = sink.clone();
        async move {
            let vpc = client.create_vpc(REGION, &vpc_body(i), None).await;
            let vpc = vpc.expect("vpc").resource.id;
            let body = CreateSubnet {
                vpc_id: vpc.clone(),
                cidr_block: format!("10.{}.1.0/24", i % 256),
                ..Default::default()
            };
            let subnet = client.create_subnet(REGION, &body, None).await;
            sink.lock().expect("made")[i] = (vpc, subnet.expect("subnet").resource.id);
        }
    })
    .await;
    let made = Arc::new(made.lock().expect("made").clone());
    let (subnets, a2, b2) = (made.clone(), a.clone(), b.clone());
    spread(groups + databases, MAKERS, move |i| {
        let subnets = subnets.clone();
        // The resource goes in its subnet's account.
        let slot = i % subnets.len();
        let client = if slot % 2 == 0 {
            a2.clone()
        } else {
            b2.clone()
        };
        async move {
            let subnet = &subnets[slot].1;
            if i < groups {
                let body = CreateNodeGroup {
                    name: format!("ng-{i}"),
                    subnet_ids: vec![subnet.clone()],
                    node_role: "role".into(),
                    ..Default::default()
                };
                let cluster = format!("c-{}", i % 100);
                let made = client
                    .create_node_group(REGION, &cluster, &body, None)
                    .await;
                made.expect("node group");
            } else {
                let body = database_body(format!("db-{i}"), subnet);
                let made = client.create_database_instance(REGION, &body, None).await;
                made.expect("database");
            }
        }
    })
    .await;
    made.iter().map(|(vpc, _)| vpc.clone()).collect()
}

fn percentile(latencies: &mut [Duration], q: f64) -> f64 {
    if latencies.is_empty() {
        return f64::NAN;
    }
    latencies.sort();
    let index = ((latencies.len() as f64 - 1.0) * q).round() as usize;
    latencies[index].as_secs_f64() * 1000.0
}

/// GETs of random VPCs from `READERS` tasks until `stop`, each task every
/// `pace` or, without one, back to back; each latency with when the call
/// started.
fn readers(
    client: &Client,
    vpcs: Arc<Vec<String>>,
    stop: Arc<AtomicBool>,
    pace: Option<Duration>,
) -> Vec<tokio::task::JoinHandle<Vec<(Instant, Duration)>>> {
    (0..READERS)
        .map(|worker| {
            let (client, vpcs, stop) = (client.clone(), vpcs.clone(), stop.clone());
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut i = worker;
                let mut ticks = pace.map(tokio::time::interval);
                while !stop.load(Ordering::Relaxed) {
                    if let Some(ticks) = &mut ticks {
                        ticks.tick().await;
                    }
                    // Every other VPC is account A's (make_world).
                    let id = &vpcs[(i.wrapping_mul(7919) % (vpcs.len() / 2)) * 2];
                    let started = Instant::now();
                    client.get_vpc(REGION, id).await.expect("get");
                    seen.push((started, started.elapsed()));
                    i += READERS;
                }
                seen
            })
        })
        .collect()
}

/// Saves the world as `name` while `READERS` tasks send GETs (every `pace`
/// each, or back to back), and prints the save's time and the GETs'
/// latencies during it and before it.
async fn save_beside_gets(
    admin: &AdminClient,
    client: &Client,
    vpcs: &Arc<Vec<String>>,
    name: &str,
    pace: Option<Duration>,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let tasks = readers(client, vpcs.clone(), stop.clone(), pace);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let save_started = Instant::now();
    let info = admin.save_snapshot(name).await.expect("save");
    let save_time = save_started.elapsed();
    let save_ended = Instant::now();
    stop.store(true, Ordering::Relaxed);
    let (mut alone, mut during) = (Vec::new(), Vec::new());
    for task in tasks {
        for (at, latency) in task.await.expect("reader") {
            if at >= save_started && at <= save_ended {
                during.push(latency);
            } else if at < save_started {
                alone.push(latency);
            }
        }
    }
    let load = match pace {
        Some(pace) => format!(
            "{READERS} readers, one GET every {} ms each ({:.0} GETs/s)",
            pace.as_millis(),
            READERS as f64 / pace.as_secs_f64()
        ),
        None => format!("{READERS} readers sending GETs back to back"),
    };
    println!("{name}: {load}");
    println!(
        "save      {:>7.3} s  (target < 2 s)  {} resources, file {:.1} MB ({} bytes)",
        save_time.as_secs_f64(),
        info.resources.total(),
        info.size as f64 / 1e6,
        info.size
    );
    println!(
        "API GETs  during the save: {:>6} calls  p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms  (target p99 < 50 ms)",
        during.len(),
        percentile(&mut during, 0.5),
        percentile(&mut during, 0.99),
        percentile(&mut during, 1.0)
    );
    println!(
        "          before it:       {:>6} calls  p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        alone.len(),
        percentile(&mut alone, 0.5),
        percentile(&mut alone, 0.99),
        percentile(&mut alone, 1.0)
    );
}

/// A world's resources without their times of day, hashed.
fn digest(mut resources: Vec<AdminResource>) -> String {
    resources.sort_by(|a, b| {
        (a.kind.as_str(), &a.account, &a.id).cmp(&(b.kind.as_str(), &b.account, &b.id))
    });
    let mut hasher = Sha256::new();
    for resource in resources {
        let mut value = serde_json::to_value(resource).expect("resource");
        let body = value["resource"].as_object_mut().expect("object");
        body.remove("createdAt");
        body.remove("updatedAt");
        hasher.update(value.to_string());
        hasher.update(b"\n");
    }
    hex::encode(hasher.finalize())
}

/// A snapshot file's header (its first line).
fn header(file: &[u8]) -> serde_json::Value {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(flate2::read::GzDecoder::new(file))
        .read_line(&mut line)
        .expect("a header line");
    serde_json::from_str(&line).expect("a JSON header")
}

async fn snapshots(total: usize, dir: &std::path::Path) {
    let server = server(dir, "world", None).await;
    let (a, b, admin) = clients(&server);
    let started = Instant::now();
    let vpcs = Arc::new(make_world(&a, &b, total).await);
    let made = admin.resources(None, None).await.expect("resources").len();
    println!(
        "world     {made} resources made through the API in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The API at a steady rate, then at all it can take, beside a save.
    save_beside_gets(&admin, &a, &vpcs, "world", Some(STEADY_PACE)).await;
    save_beside_gets(&admin, &a, &vpcs, "world-busy", None).await;

    let before = digest(admin.resources(None, None).await.expect("resources"));
    let load_started = Instant::now();
    admin
        .load_snapshot("world", LoadStrategy::Overwrite)
        .await
        .expect("load");
    let load_time = load_started.elapsed();
    // At once: any call in between would be in the second file's audit.
    admin.save_snapshot("again").await.expect("save again");
    println!(
        "load      {:>7.3} s  (target < 5 s)  overwrite",
        load_time.as_secs_f64()
    );
    let first = admin.download_snapshot("world").await.expect("download");
    let second = admin.download_snapshot("again").await.expect("download");
    let header = header(&first);
    println!(
        "          the file holds {} idempotency records and {} audit entries besides",
        header["counts"]["idempotency"], header["counts"]["audit"]
    );
    let after = digest(admin.resources(None, None).await.expect("resources"));
    println!(
        "identity  save, load, save: files {}; resources {}",
        if first == second {
            "identical byte for byte"
        } else {
            "DIFFER"
        },
        if before == after {
            "identical"
        } else {
            "DIFFER"
        }
    );
    server.shutdown().await.expect("shutdown");
}

/// `total` calls of every sort, one at a time: ids come out of a seeded
/// generator in the order of the calls only when calls do not overlap.
async fn recorded_calls(a: &Client, b: &Client, total: usize) {
    let mut subnets: Vec<String> = Vec::new();
    // Account A's VPCs, with the second octet of their blocks.
    let mut vpcs: Vec<(String, usize)> = Vec::new();
    let mut databases = 0;
    for i in 0..total {
        let client = if i % 5 == 4 { b } else { a };
        match i % 10 {
            0 | 4 => {
                let vpc = client.create_vpc(REGION, &vpc_body(i), None).await;
                if i % 5 != 4 {
                    vpcs.push((vpc.expect("vpc").resource.id, i % 256));
                }
            }
            1 | 5 if !vpcs.is_empty() => {
                let (vpc, octet) = &vpcs[i % vpcs.len()];
                let body = CreateSubnet {
                    vpc_id: vpc.clone(),
                    cidr_block: format!("10.{octet}.{}.0/24", (i / 10) % 256),
                    ..Default::default()
                };
                // Some overlap a sibling (409): refusals replay too.
                if let Ok(subnet) = a.create_subnet(REGION, &body, None).await {
                    subnets.push(subnet.resource.id);
                }
            }
            2 if !subnets.is_empty() => {
                databases += 1;
                let body = database_body(format!("db-{databases}"), &subnets[i % subnets.len()]);
                a.create_database_instance(REGION, &body, None)
                    .await
                    .expect("database");
            }
            3 if databases > 0 => {
                let credentials = Credentials {
                    username: "admin".into(),
                    password: "bench-password".into(),
                };
                let identifier = format!("db-{}", 1 + i % databases);
                a.authenticate_database_instance(REGION, &identifier, &credentials)
                    .await
                    .expect("authenticate");
            }
            6 if !vpcs.is_empty() => {
                let (vpc, _) = &vpcs[i % vpcs.len()];
                let patch = json!({"tags": {"call": i.to_string()}});
                a.patch_vpc(REGION, vpc, &patch, None).await.expect("patch");
            }
            7 if !subnets.is_empty() => {
                // Refused (409) while a database is in it.
                let subnet = subnets.swap_remove(i % subnets.len());
                let _ = a.delete_subnet(REGION, &subnet).await;
            }
            _ => {
                let _ = client.list_vpcs(REGION, &Default::default()).await;
            }
        }
    }
}

async fn recording(total: usize, dir: &std::path::Path) {
    let original = server(dir, "recorded", Some(7)).await;
    let (a, b, admin) = clients(&original);
    admin.start_recorder().await.expect("start");
    let started = Instant::now();
    recorded_calls(&a, &b, total).await;
    let status = admin.stop_recorder().await.expect("stop");
    let file = admin.recording().await.expect("recording");
    println!(
        "record    {} calls in {:.1} s, seed 7, recording {:.1} MB",
        status.requests,
        started.elapsed().as_secs_f64(),
        file.len() as f64 / 1e6
    );
    let target = server(dir, "replayed", None).await;
    let options = ReplayOptions {
        target: target.base_url(),
        api_keys: keys(),
        admin_token: Some(ADMIN.into()),
        as_fast_as_possible: true,
    };
    let summary = replay(&file, &options).await.expect("replay");
    let resources = admin.resources(None, None).await.expect("resources");
    let count = resources.len();
    let recorded = digest(resources);
    let target_admin = AdminClient::new(target.base_url(), ADMIN);
    let replayed = digest(target_admin.resources(None, None).await.expect("resources"));
    println!(
        "replay    {} calls in {:.1} s onto an empty server, {} answered otherwise than recorded",
        summary.calls,
        summary.elapsed.as_secs_f64(),
        summary.diverged.len()
    );
    println!(
        "          state of {count} resources, digest recorded {}…, replayed {}…: {}",
        &recorded[..16],
        &replayed[..16],
        if recorded == replayed {
            "identical"
        } else {
            "DIFFER"
        }
    );
    original.shutdown().await.expect("shutdown");
    target.shutdown().await.expect("shutdown");
}

#[tokio::main]
async fn main() {
    let total = count("FAKECLOUD_BENCH_RESOURCES", 100_000);
    let recorded = count("FAKECLOUD_BENCH_RECORDED", 10_000);
    let dir = tempfile::tempdir().expect("temp dir");
    println!("fakecloud snapshots and replay, SQLite files, loopback");
    snapshots(total, dir.path()).await;
    recording(recorded, dir.path()).await;
}
