//! The `fakecloud` binary: flags and environment into a `Config`, or
//! `fakecloud replay` to send a recording to a running fakecloud. The flags
//! themselves are in the library ([`fakecloud::cli`]).

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use fakecloud::cli::{Cli, Command, Replay, Serve};
use fakecloud::replay::{ReplayOptions, replay};
use fakecloud::{ApiKey, Config};
use tracing_subscriber::EnvFilter;

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
