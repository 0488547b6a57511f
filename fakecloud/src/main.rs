//! The `fakecloud` binary: flags and environment into a `Config`.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use fakecloud::{ApiKey, Config};
use tracing_subscriber::EnvFilter;

#[derive(Parser, Debug)]
#[command(version, about = "A small SQLite-backed fake cloud")]
struct Args {
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
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();
    let database = match args.database {
        Some(path) => path,
        None => dirs::data_dir()
            .ok_or("no platform data dir; pass --database")?
            .join("fakecloud")
            .join("fakecloud.db")
            .display()
            .to_string(),
    };
    let api_keys = args
        .api_keys
        .iter()
        .map(|spec| ApiKey::parse(spec))
        .collect::<Result<Vec<_>, _>>()?;
    let minted_key = api_keys.is_empty();
    let minted_token = args.admin_token.is_none();
    let server = fakecloud::spawn(Config {
        listen: args.listen,
        database,
        api_keys,
        admin_token: args.admin_token,
        default_delay: Duration::from_millis(args.delay_ms),
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

/// Ctrl-C, or SIGTERM from a container runtime.
async fn wait_for_signal() -> std::io::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result,
        _ = term.recv() => Ok(()),
    }
}
