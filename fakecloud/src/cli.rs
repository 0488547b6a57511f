//! The `fakecloud` binary's command line: serving flags, or the `replay`
//! subcommand. In the library rather than in `main.rs` so that the flags
//! reference (docs/reference/flags.md, written by the e2e crate's
//! `reference-docs`) is generated from the same definitions `--help`
//! prints.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    version,
    about = "A small SQLite-backed fake cloud",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: Serve,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Sends a recording (`GET /admin/recorder`) to a fakecloud, call by
    /// call; exits 1 when any call is answered otherwise than recorded.
    Replay(Replay),
}

/// Serving (no subcommand).
#[derive(Args, Debug)]
pub struct Serve {
    /// Address to listen on (port 0: any free port).
    #[arg(long, env = "FAKECLOUD_LISTEN", default_value = "127.0.0.1:8787")]
    pub listen: SocketAddr,
    /// SQLite database file (WAL mode), or `:memory:`. Default:
    /// fakecloud/fakecloud.db under the platform data dir.
    #[arg(long, env = "FAKECLOUD_DATABASE")]
    pub database: Option<String>,
    /// API key as KEY=ACCOUNT (a key maps to an account); repeatable.
    /// FAKECLOUD_API_KEYS takes a comma-separated list. None: one dev key
    /// (account `dev`) is minted and printed.
    #[arg(long = "api-key", env = "FAKECLOUD_API_KEYS", value_delimiter = ',')]
    pub api_keys: Vec<String>,
    /// Bearer token of the /admin API. None: one is minted and printed.
    #[arg(long, env = "FAKECLOUD_ADMIN_TOKEN")]
    pub admin_token: Option<String>,
    /// Default provisioning delay of every kind in milliseconds (0: immediate).
    #[arg(long, env = "FAKECLOUD_DELAY_MS", default_value_t = 2000)]
    pub delay_ms: u64,
    /// Seeds every generated id and secret, so that the same requests make
    /// the same ids. None: random.
    #[arg(long, env = "FAKECLOUD_SEED")]
    pub seed: Option<u64>,
    /// A snapshot file to load (overwriting the database's state) before
    /// serving.
    #[arg(long, env = "FAKECLOUD_LOAD")]
    pub load: Option<PathBuf>,
}

/// `fakecloud replay FILE --target URL`.
#[derive(Args, Debug)]
pub struct Replay {
    /// The recording.
    pub file: PathBuf,
    /// Base URL of the fakecloud to send it to.
    #[arg(long)]
    pub target: String,
    /// The target's key of a recorded account, as KEY=ACCOUNT; repeatable.
    /// FAKECLOUD_API_KEYS takes a comma-separated list, as the server does.
    #[arg(long = "api-key", env = "FAKECLOUD_API_KEYS", value_delimiter = ',')]
    pub api_keys: Vec<String>,
    /// The target's admin token: sets its id generator to the recording's
    /// seed and position, so the replayed creates get the recorded ids.
    #[arg(long, env = "FAKECLOUD_ADMIN_TOKEN")]
    pub admin_token: Option<String>,
    /// Sends each call once the last is answered, not at its recorded time.
    #[arg(long)]
    pub as_fast_as_possible: bool,
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
