//! A headless Chromium for browser tests: Debian's `chromedriver` started
//! on a free loopback port for one test, and the WebDriver capabilities
//! that make it run Chromium headless as root in a container.
//!
//! Only the process lives here; the test drives it with a WebDriver client
//! (`fantoccini`). A missing browser or driver is an error naming the
//! packages to install, never a skip: a browser test that cannot start a
//! browser must fail.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::ClusterError;
use crate::process::ManagedProcess;

/// Where Debian's `chromium-driver` puts the driver; `CHROMEDRIVER`
/// overrides.
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// Where Debian's `chromium` puts the browser; `CHROMIUM` overrides.
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// How long the driver may take to listen.
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// The window every test sees: a laptop's.
pub const WINDOW: (u32, u32) = (1280, 900);

#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    #[error(
        "{what} not found at {path} (set {var} to use another); install Debian's \
         `chromium` and `chromium-driver` (scripts/setup test does)"
    )]
    Missing {
        what: &'static str,
        path: PathBuf,
        var: &'static str,
    },
    #[error(transparent)]
    Process(#[from] ClusterError),
    #[error("chromedriver did not listen on {addr} within {timeout:?}; its log ends:\n{tail}")]
    NotListening {
        addr: SocketAddr,
        timeout: Duration,
        tail: String,
    },
    #[error("{what}: {error}")]
    Io {
        what: &'static str,
        error: std::io::Error,
    },
}

fn binary(var: &'static str, default: &str, what: &'static str) -> Result<PathBuf, BrowserError> {
    let path = std::env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from);
    if path.is_file() {
        Ok(path)
    } else {
        Err(BrowserError::Missing { what, path, var })
    }
}

/// A running chromedriver; dropping it kills it and any browser it
/// started.
pub struct ChromeDriver {
    process: ManagedProcess,
    addr: SocketAddr,
    chromium: PathBuf,
    dir: tempfile::TempDir,
}

impl ChromeDriver {
    /// Starts chromedriver and waits until it listens.
    pub async fn start() -> Result<Self, BrowserError> {
        let driver = binary("CHROMEDRIVER", CHROMEDRIVER, "chromedriver")?;
        let chromium = binary("CHROMIUM", CHROMIUM, "chromium")?;
        let io = |what| move |error| BrowserError::Io { what, error };
        let dir = tempfile::tempdir().map_err(io("creating the browser's folder"))?;
        // A port the kernel just handed out is free for the driver to take.
        let addr = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .map_err(io("finding a free port"))?;
        let mut process = ManagedProcess::spawn(
            "chromedriver",
            &driver,
            &[format!("--port={}", addr.port())],
            dir.path().join("chromedriver.log"),
        )?;
        let started = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            process.ensure_running()?;
            if started.elapsed() > READY_TIMEOUT {
                return Err(BrowserError::NotListening {
                    addr,
                    timeout: READY_TIMEOUT,
                    tail: crate::process::log_tail(process.log()),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(Self {
            process,
            addr,
            chromium,
            dir,
        })
    }

    /// The driver's WebDriver endpoint.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The driver's log, for a failing test to point at.
    pub fn log(&self) -> PathBuf {
        self.process.log().to_path_buf()
    }

    /// New-session capabilities: Chromium headless (root in a container
    /// needs `--no-sandbox`), a laptop-sized window, a profile of its own.
    pub fn capabilities(&self) -> Map<String, Value> {
        let (width, height) = WINDOW;
        let profile = self.dir.path().join("profile");
        let options = json!({
            "binary": self.chromium,
            "args": [
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--hide-scrollbars",
                format!("--window-size={width},{height}"),
                format!("--user-data-dir={}", profile.display()),
            ],
        });
        let mut capabilities = Map::new();
        capabilities.insert("browserName".into(), json!("chrome"));
        capabilities.insert("goog:chromeOptions".into(), options);
        capabilities
    }
}
