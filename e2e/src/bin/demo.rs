//! `demo`: starts the whole system on this machine (control plane,
//! fakecloud, the provider binary) and plays the seeds' stories; see
//! `e2e::demo`. `scripts/demo` provisions, builds and runs it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use clap::Parser;
use e2e::demo::{self, DemoOptions, Mode, Progress, RunDir};

#[derive(Debug, Parser)]
#[command(
    name = "demo",
    about = "Run etcd + kube-apiserver, fakecloud and the provider here, and play the seeds' stories"
)]
struct Args {
    /// Exit after the stories: status 0 only if every story's expectation held.
    #[arg(long)]
    once: bool,
    /// The provider binary. Default: `provider` next to this binary (both
    /// are built into the same target folder).
    #[arg(long, env = "DEMO_PROVIDER_BIN")]
    provider_bin: Option<PathBuf>,
    /// fakecloud's provisioning delay in milliseconds.
    #[arg(long, default_value_t = 1000)]
    provisioning_delay_ms: u64,
    /// The provider's poll interval in milliseconds: how soon outside
    /// changes show.
    #[arg(long, default_value_t = 2000)]
    poll_interval_ms: u64,
    /// Milliseconds already spent before this process started (set by
    /// `scripts/demo` for its provisioning and build), so progress lines
    /// show the time since the command was typed.
    #[arg(long, default_value_t = 0, hide = true)]
    clock_offset_ms: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let progress = Progress::started_ago(Duration::from_millis(args.clock_offset_ms));
    let run_dir = match RunDir::create() {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(demo::EXIT_ERROR);
        }
    };
    if let Err(error) = log_to(run_dir.path().join("demo.log")) {
        eprintln!("error: {error}");
        return ExitCode::from(demo::EXIT_ERROR);
    }
    let provider_bin = match args.provider_bin {
        Some(path) => path,
        None => match beside_this_binary("provider") {
            Ok(path) => path,
            Err(error) => {
                eprintln!("error: locating the provider binary: {error}");
                return ExitCode::from(demo::EXIT_ERROR);
            }
        },
    };
    println!("fakecloud provider demo: the whole system on this machine, then the seeds' stories");
    progress.step(format!("logs in {}", run_dir.path().display()));
    let options = DemoOptions {
        provider_bin,
        provisioning_delay: Duration::from_millis(args.provisioning_delay_ms),
        poll_interval: Duration::from_millis(args.poll_interval_ms),
    };
    let mode = if args.once {
        Mode::Once
    } else {
        Mode::UntilInterrupted
    };
    ExitCode::from(demo::run(options, mode, run_dir, progress).await)
}

/// The demo's own log (kube client, fakecloud's server) goes to a file so
/// the terminal shows only the stories.
fn log_to(path: PathBuf) -> std::io::Result<()> {
    let file = std::fs::File::create(&path)?;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(e2e::DEFAULT_LOG_FILTER));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .init();
    Ok(())
}

fn beside_this_binary(name: &str) -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    Ok(exe.with_file_name(name))
}
