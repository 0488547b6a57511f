//! Prometheus' own linter, `promtool check metrics`, for tests of a
//! `/metrics` endpoint (feature `promtool`).
//!
//! Where it is found: `$PROMTOOL`, else the copy `scripts/setup test`
//! unpacks into `~/.cache/fakecloud-provider/promtool/` (from Debian's
//! `prometheus` package, without installing the package, which would also
//! start a Prometheus server listening on every interface), else `promtool`
//! on the `PATH`.

use std::collections::{BTreeSet, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Why `promtool check metrics` did not pass a body.
#[derive(Debug, thiserror::Error)]
pub enum PromtoolError {
    /// promtool could not be started.
    #[error(
        "cannot run {path} ({error}): install it with scripts/setup test, or name it in $PROMTOOL"
    )]
    Missing {
        /// Where it was looked for last.
        path: PathBuf,
        /// Why it did not start.
        error: std::io::Error,
    },
    /// Writing the body to it, or waiting for it, failed.
    #[error("talking to promtool: {0}")]
    Io(std::io::Error),
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
        .map_err(|error| PromtoolError::Missing { path, error })?;
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

/// Checks the structure of a text-format body: every family has `# HELP`
/// then `# TYPE`, once, before its samples, every sample belongs to the
/// family above it, every family has a sample, and nothing of OpenMetrics
/// is left. Returns the families and their types. Panics, naming what is
/// wrong: it is for tests, beside [`check_metrics`].
#[track_caller]
pub fn check_text(text: &str) -> BTreeSet<(String, String)> {
    assert!(!text.is_empty());
    let mut families = BTreeSet::new();
    let mut seen = HashSet::new();
    let mut current: Option<(String, String, usize)> = None;
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        assert!(
            !line.starts_with("# EOF") && !line.starts_with("# UNIT"),
            "{line}"
        );
        if let Some(rest) = line.strip_prefix("# HELP ") {
            if let Some((name, _, 0)) = &current {
                panic!("family {name} has no sample:\n{text}");
            }
            let name = rest.split(' ').next().unwrap_or_default();
            let type_line = lines.next().unwrap_or_default();
            let (type_name, kind) = type_line
                .strip_prefix("# TYPE ")
                .and_then(|t| t.split_once(' '))
                .unwrap_or_else(|| panic!("# HELP {name} without # TYPE after it:\n{text}"));
            assert_eq!(type_name, name, "{text}");
            assert!(seen.insert(name.to_owned()), "{name} twice:\n{text}");
            families.insert((name.to_owned(), kind.to_owned()));
            current = Some((name.to_owned(), kind.to_owned(), 0));
        } else {
            assert!(!line.starts_with('#'), "stray comment {line:?}:\n{text}");
            let Some((family, kind, count)) = current.as_mut() else {
                panic!("sample {line:?} before any # HELP:\n{text}");
            };
            let sample = line.split(['{', ' ']).next().unwrap_or_default();
            let suffixes: &[&str] = match kind.as_str() {
                "histogram" => &["_bucket", "_count", "_sum"],
                "summary" => &["", "_count", "_sum"],
                _ => &[""],
            };
            assert!(
                suffixes
                    .iter()
                    .any(|s| sample.strip_suffix(s) == Some(family.as_str())),
                "sample {sample} under family {family} ({kind}):\n{text}"
            );
            *count += 1;
        }
    }
    if let Some((name, _, 0)) = &current {
        panic!("family {name} has no sample:\n{text}");
    }
    families
}
