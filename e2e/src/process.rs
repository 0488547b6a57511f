//! One process (etcd, kube-apiserver, kube-controller-manager, or the
//! demo's provider) whose lifetime is bound to its owner.
//!
//! Each runs in its own process group with stdout and stderr in a log file.
//! Dropping the handle kills the whole group and reaps it. When `setpriv`
//! is installed the child is also started with a parent-death signal, so
//! even a test process killed with SIGKILL (a nextest timeout) leaves no
//! etcd or kube-apiserver behind.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use rustix::process::{Pid, Signal, kill_process_group};

use crate::error::ClusterError;

/// How many trailing log bytes an error message quotes.
const TAIL_BYTES: u64 = 4096;

#[derive(Debug)]
pub struct ManagedProcess {
    component: &'static str,
    child: Child,
    log: PathBuf,
}

impl ManagedProcess {
    /// Starts `binary` with `args`, logging to `log`.
    pub fn spawn(
        component: &'static str,
        binary: &Path,
        args: &[String],
        log: PathBuf,
    ) -> Result<Self, ClusterError> {
        let out = File::create(&log)
            .map_err(|e| ClusterError::io(format!("creating {}", log.display()), e))?;
        let err = out
            .try_clone()
            .map_err(|e| ClusterError::io(format!("opening {}", log.display()), e))?;
        let mut command = match setpriv() {
            Some(setpriv) => {
                let mut c = Command::new(setpriv);
                c.args(["--pdeathsig", "KILL", "--"]).arg(binary);
                c
            }
            None => Command::new(binary),
        };
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        tracing::debug!(component, binary = %binary.display(), ?args, "starting");
        let child = command.spawn().map_err(|error| ClusterError::Spawn {
            component,
            binary: binary.to_path_buf(),
            error,
        })?;
        Ok(Self {
            component,
            child,
            log,
        })
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn component(&self) -> &'static str {
        self.component
    }

    /// The exit status, if the process has ended.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// An error carrying the log tail if the process has already exited.
    pub fn ensure_running(&mut self) -> Result<(), ClusterError> {
        match self.exit_status() {
            None => Ok(()),
            Some(status) => Err(ClusterError::ExitedEarly {
                component: self.component,
                status,
                log: self.log.clone(),
                tail: log_tail(&self.log),
            }),
        }
    }

    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Kills the process group and reaps the child; safe to call twice.
    pub fn stop(&mut self) {
        if self.exit_status().is_some() {
            return;
        }
        let pid = Pid::from_child(&self.child);
        if let Err(e) = kill_process_group(pid, Signal::KILL) {
            tracing::warn!(component = self.component, error = %e, "killing the process group failed; killing the process");
            let _ = self.child.kill();
        }
        if let Err(e) = self.child.wait() {
            tracing::warn!(component = self.component, error = %e, "reaping the process failed");
        }
    }
}

impl Drop for ManagedProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `setpriv` from util-linux, if installed: sets the parent-death signal
/// without `unsafe` pre-exec code in this crate.
fn setpriv() -> Option<&'static Path> {
    ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists())
}

/// The last few kilobytes of a log file, for error messages.
pub fn log_tail(path: &Path) -> String {
    let read = || -> std::io::Result<String> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    read().unwrap_or_else(|e| format!("(log unreadable: {e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_kills_the_process_and_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        // A shell that starts a grandchild in the same group, as a binary
        // with helper processes would.
        let script = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
        let mut process = ManagedProcess::spawn(
            "sh",
            Path::new("/bin/sh"),
            &["-c".to_owned(), script],
            dir.path().join("sh.log"),
        )
        .unwrap();
        let grandchild = wait_for_pid_file(&pid_file);
        assert!(process_alive(grandchild));
        process.stop();
        assert!(process.exit_status().is_some());
        // The grandchild is re-parented and reaped by init; give it a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while process_alive(grandchild) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(
            !process_alive(grandchild),
            "grandchild {grandchild} survived"
        );
    }

    #[test]
    fn an_exited_process_reports_its_status_and_log_tail() {
        let dir = tempfile::tempdir().unwrap();
        let mut process = ManagedProcess::spawn(
            "sh",
            Path::new("/bin/sh"),
            &["-c".to_owned(), "echo bad flag >&2; exit 3".to_owned()],
            dir.path().join("sh.log"),
        )
        .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while process.exit_status().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let err = process.ensure_running().unwrap_err();
        match &err {
            ClusterError::ExitedEarly { status, tail, .. } => {
                assert_eq!(status.code(), Some(3));
                assert!(tail.contains("bad flag"), "{tail}");
            }
            other => panic!("unexpected error {other}"),
        }
    }

    #[test]
    fn a_missing_binary_is_a_spawn_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let err = ManagedProcess::spawn(
            "etcd",
            &dir.path().join("no-such-etcd"),
            &[],
            dir.path().join("etcd.log"),
        );
        // With setpriv the exec failure surfaces as an early exit instead.
        match err {
            Err(ClusterError::Spawn { binary, .. }) => assert!(binary.ends_with("no-such-etcd")),
            Err(other) => panic!("unexpected error {other}"),
            Ok(mut process) => {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
                while process.exit_status().is_none() && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                let msg = process.ensure_running().unwrap_err().to_string();
                assert!(msg.contains("no-such-etcd"), "{msg}");
            }
        }
    }

    fn wait_for_pid_file(path: &Path) -> i32 {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            if let Ok(text) = std::fs::read_to_string(path)
                && let Ok(pid) = text.trim().parse()
            {
                return pid;
            }
            assert!(std::time::Instant::now() < deadline, "no pid file");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    fn process_alive(pid: i32) -> bool {
        // A zombie still has a /proc entry; count only live states.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false)
    }
}
