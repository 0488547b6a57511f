//! Prometheus' own linter, `promtool check metrics`, for tests of a
//! `/metrics` endpoint (feature `promtool`).
//!
//! Where it is found: `$PROMTOOL`, else the copy `scripts/setup test`
//! unpacks into `~/.cache/fakecloud-provider/promtool/` (from Debian's
//! `prometheus` package, without installing the package, which would also
//! start a Prometheus server listening on every interface), else `promtool`
//! on the `PATH`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Why `promtool check metrics` did not pass a body.
#[derive(Debug, thiserror::Error)]
pub enum PromtoolError {
    /// promtool could not be started.
    #[error(
        "cannot run {path} ({source}): install it with scripts/setup test, or name it in $PROMTOOL"
    )]
    Missing {
        /// Where it was looked for last.
        path: PathBuf,
        /// Why it did not start.
        source: std::io::Error,
    },
    /// Writing the body to it, or waiting for it, failed.
    #[error("talking to promtool: {0}")]
    Io(#[source] std::io::Error),
    /// It ran and reported findings, or failed.
    #[error("promtool check metrics ({status}) reports:\n{report}")]
    Findings {
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it printed.
        report: String,
    },
}

/// Where promtool is, as the module's documentation says.
pub fn locate() -> PathBuf {
    if let Some(path) = std::env::var_os("PROMTOOL").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")));
    if let Some(cached) = cache.map(|c| c.join("fakecloud-provider/promtool/promtool"))
        && cached.is_file()
    {
        return cached;
    }
    PathBuf::from("promtool")
}

/// Runs `promtool check metrics` on `text` (the text format 0.0.4):
/// `Ok` only when it exits 0 and prints nothing.
pub fn check_metrics(text: &str) -> Result<(), PromtoolError> {
    let path = locate();
    let mut child = Command::new(&path)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| PromtoolError::Missing { path, source })?;
    child
        .stdin
        .take()
        .expect("stdin was asked to be piped")
        .write_all(text.as_bytes())
        .map_err(PromtoolError::Io)?;
    let out = child.wait_with_output().map_err(PromtoolError::Io)?;
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && report.trim().is_empty() {
        Ok(())
    } else {
        Err(PromtoolError::Findings {
            status: out.status,
            report,
        })
    }
}
