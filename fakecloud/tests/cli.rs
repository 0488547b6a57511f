//! The binary's snapshot, seed and replay flags, run as a process.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::*;
use fakecloud::client::AdminClient;
use fakecloud::model::SeedState;

const BIN: &str = env!("CARGO_BIN_EXE_fakecloud");

/// Kills the server when a test ends, passed or not.
struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `fakecloud` with `args` on a free port; waits for "listening on".
fn serve(args: &[&str]) -> Server {
    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--delay-ms", "0"])
        .args(args)
        .env_remove("FAKECLOUD_API_KEYS")
        .env_remove("FAKECLOUD_ADMIN_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("fakecloud starts");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let base = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_string))
        .expect("fakecloud prints its address");
    Server { child, base }
}

#[tokio::test]
async fn the_binary_loads_a_snapshot_seeds_and_replays() {
    // A world and a recording of how it was made, from an in-process server.
    let original = Cloud::start_configured(|config| config.seed = Some(9)).await;
    original.admin.start_recorder().await.unwrap();
    let vpc = original.vpc("10.0.0.0/16").await;
    let subnet = original.subnet(&vpc.id, "10.0.1.0/24").await;
    original.a.delete_subnet(REGION, &subnet.id).await.unwrap();
    original.admin.stop_recorder().await.unwrap();
    original.admin.save_snapshot("world").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("world.jsonl.gz");
    std::fs::write(
        &world,
        original.admin.download_snapshot("world").await.unwrap(),
    )
    .unwrap();
    let recording = dir.path().join("recording.jsonl");
    std::fs::write(&recording, original.admin.recording().await.unwrap()).unwrap();

    let key = format!("{KEY_A}={ACCOUNT_A}");
    let database = |name: &str| dir.path().join(name).display().to_string();
    let loaded = serve(&[
        "--database",
        &database("loaded.db"),
        "--api-key",
        &key,
        "--admin-token",
        ADMIN,
        "--seed",
        "5",
        "--load",
        world.to_str().unwrap(),
    ]);
    let admin = AdminClient::new(&loaded.base, ADMIN);
    assert_eq!(
        timeless(&resources(&admin).await),
        timeless(&resources(&original.admin).await)
    );
    assert_eq!(
        admin.seed().await.unwrap(),
        SeedState {
            seed: Some(5),
            position: 0
        }
    );

    let empty = serve(&[
        "--database",
        &database("empty.db"),
        "--api-key",
        &key,
        "--admin-token",
        ADMIN,
    ]);
    let output = Command::new(BIN)
        .args([
            "replay",
            recording.to_str().unwrap(),
            "--target",
            &empty.base,
        ])
        .args([
            "--api-key",
            &key,
            "--admin-token",
            ADMIN,
            "--as-fast-as-possible",
        ])
        .output()
        .expect("replay runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("replayed 3 calls"), "{stdout}");
    assert!(stdout.contains("seed 9 at position 0"), "{stdout}");
    let admin = AdminClient::new(&empty.base, ADMIN);
    assert_eq!(
        timeless(&resources(&admin).await),
        timeless(&resources(&original.admin).await)
    );

    // Replayed again: the creates replay their first answers (idempotency
    // keys), the delete finds nothing to delete: exit status 1.
    let again = Command::new(BIN)
        .args([
            "replay",
            recording.to_str().unwrap(),
            "--target",
            &empty.base,
        ])
        .args(["--api-key", &key, "--as-fast-as-possible"])
        .output()
        .expect("replay runs");
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("answered otherwise than recorded"),
        "{again:?}"
    );
}
