//! The `fakecloud` binary: flags and environment into a `Config`, or
//! `fakecloud replay` to send a recording to a running fakecloud.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use fakecloud::replay::{ReplayOptions, replay};
use fakecloud::{ApiKey, Config};
use tracing_subscriber::EnvFilter;

#[derive(Parser, Debug)]
#[command(
    version,
    about = "A small SQLite-backed fake cloud",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: Serve,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Sends a recording (`GET /admin/recorder`) to a fakecloud, call by
    /// call; exits 1 when any call is answered otherwise than recorded.
    Replay(Replay),
}

/// Serving (no subcommand).
#[derive(Args, Debug)]
struct Serve {
    /// Address to listen on.
    #[arg(long, env = "FAKECLOUD_LISTEN", default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// SQLite database file, or `:memory:`. Default: fakecloud/fakecloud.db
    /// under the platform data dir.
    #[arg(long, env = "FAKECLOUD_DATABASE")]
    database: Option<String>,
    /// API key as KEY=ACCOUNT; repeatable. FAKECLOUD_API_KEYS takes a
    /// comma-separated list. None: one dev key is minted and printed.
    #[arg(long = "api-key", env = "FAKECLOUD_API_KEYS", value_delimiter = ',')]
    api_keys: Vec<String>,
    /// Bearer token of the /admin API. None: one is minted and printed.
    #[arg(long, env = "FAKECLOUD_ADMIN_TOKEN")]
    admin_token: Option<String>,
    /// Default provisioning delay of every kind in milliseconds (0: immediate).
    #[arg(long, env = "FAKECLOUD_DELAY_MS", default_value_t = 2000)]
    delay_ms: u64,
    /// Seeds every generated id and secret, so that the same requests make
    /// the same ids. None: random.
    #[arg(long, env = "FAKECLOUD_SEED")]
    seed: Option<u64>,
    /// A snapshot file to load (overwriting the database's state) before
    /// serving.
    #[arg(long, env = "FAKECLOUD_LOAD")]
    load: Option<PathBuf>,
}

/// `fakecloud replay FILE --target URL`.
#[derive(Args, Debug)]
struct Replay {
    /// The recording.
    file: PathBuf,
    /// Base URL of the fakecloud to send it to.
    #[arg(long)]
    target: String,
    /// The target's key of a recorded account, as KEY=ACCOUNT; repeatable.
    /// FAKECLOUD_API_KEYS takes a comma-separated list, as the server does.
    #[arg(long = "api-key", env = "FAKECLOUD_API_KEYS", value_delimiter = ',')]
    api_keys: Vec<String>,
    /// The target's admin token: sets its id generator to the recording's
    /// seed and position, so the replayed creates get the recorded ids.
    #[arg(long, env = "FAKECLOUD_ADMIN_TOKEN")]
    admin_token: Option<String>,
    /// Sends each call once the last is answered, not at its recorded time.
    #[arg(long)]
    as_fast_as_possible: bool,
}

#[tokio::main]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Replay(args)) => run_replay(args).await,
        None => serve(cli.serve).await.map(|()| ExitCode::SUCCESS),
    }
}

fn api_keys(specs: &[String]) -> Result<Vec<ApiKey>, fakecloud::Error> {
    specs.iter().map(|spec| ApiKey::parse(spec)).collect()
}

async fn serve(args: Serve) -> Result<(), Box<dyn std::error::Error>> {
    let database = match args.database {
        Some(path) => path,
        None => dirs::data_dir()
            .ok_or("no platform data dir; pass --database")?
            .join("fakecloud")
            .join("fakecloud.db")
            .display()
            .to_string(),
    };
    let api_keys = api_keys(&args.api_keys)?;
    let minted_key = api_keys.is_empty();
    let minted_token = args.admin_token.is_none();
    let server = fakecloud::spawn(Config {
        listen: args.listen,
        database,
        api_keys,
        admin_token: args.admin_token,
        default_delay: Duration::from_millis(args.delay_ms),
        seed: args.seed,
        load: args.load,
    })
    .await?;
    // Printed once, to stdout rather than the log, so they can be scripted.
    if minted_key {
        println!(
            "dev API key (account {}): {}",
            server.account(),
            server.api_key()
        );
    }
    if minted_token {
        println!("admin token: {}", server.admin_token());
    }
    println!("listening on {}", server.base_url());
    wait_for_signal().await?;
    server.shutdown().await?;
    Ok(())
}

async fn run_replay(args: Replay) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let file =
        std::fs::read(&args.file).map_err(|e| format!("reading {}: {e}", args.file.display()))?;
    let options = ReplayOptions {
        target: args.target,
        api_keys: api_keys(&args.api_keys)?,
        admin_token: args.admin_token,
        as_fast_as_possible: args.as_fast_as_possible,
    };
    let summary = replay(&file, &options).await?;
    match summary.seeded {
        Some(seed) => println!(
            "target's id generator set to seed {} at position {}",
            seed.seed.unwrap_or_default(),
            seed.position
        ),
        None => println!("target's id generator left as it was"),
    }
    println!(
        "replayed {} calls in {:.3} s; {} answered otherwise than recorded",
        summary.calls,
        summary.elapsed.as_secs_f64(),
        summary.diverged.len()
    );
    for call in &summary.diverged {
        println!(
            "  call {}: {} {}: recorded {}, answered {}",
            call.index, call.method, call.path, call.recorded, call.answered
        );
    }
    Ok(if summary.diverged.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Ctrl-C, or SIGTERM from a container runtime.
async fn wait_for_signal() -> std::io::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result,
        _ = term.recv() => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serving_flags_and_the_replay_subcommand_parse() {
        let cli = Cli::try_parse_from([
            "fakecloud",
            "--seed",
            "42",
            "--load",
            "world.jsonl.gz",
            "--listen",
            "127.0.0.1:0",
        ])
        .unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.serve.seed, Some(42));
        assert_eq!(cli.serve.load, Some(PathBuf::from("world.jsonl.gz")));
        let cli = Cli::try_parse_from([
            "fakecloud",
            "replay",
            "rec.jsonl",
            "--target",
            "http://127.0.0.1:1",
            "--api-key",
            "k1=a,k2=b",
            "--as-fast-as-possible",
        ])
        .unwrap();
        let Some(Command::Replay(replay)) = cli.command else {
            panic!("not a replay");
        };
        assert_eq!(replay.file, PathBuf::from("rec.jsonl"));
        assert_eq!(replay.api_keys, ["k1=a", "k2=b"]);
        assert!(replay.as_fast_as_possible && replay.admin_token.is_none());
    }

    #[test]
    fn serving_flags_do_not_go_with_replay() {
        let err = Cli::try_parse_from([
            "fakecloud",
            "--seed",
            "1",
            "replay",
            "rec.jsonl",
            "--target",
            "http://x",
        ])
        .unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict);
    }
}
