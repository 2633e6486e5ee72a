//! What the FUSE daemons (simulated disks and remotes) and their command lines share
//! about a daemon's state: JSON files written whole, whether its pid lives, waiting for
//! it to go, and the mount table.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};

pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> anyhow::Result<T> {
    let text = crate::input::read_text(path, crate::input::STATE)
        .with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Write JSON through a temporary file and rename, so readers never see half.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    crate::owned::path::write_atomic(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

/// True if `pid` names a live (non-zombie) process.
pub fn pid_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => match s.rfind(')') {
            Some(i) => !matches!(s[i + 1..].trim_start().chars().next(), Some('Z' | 'X')),
            None => true,
        },
        Err(_) => false,
    }
}

/// Wait up to `timeout` for process `pid` to be gone; whether it went.
pub fn wait_gone(pid: i32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while pid_alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Mount points (decoded) currently listed in /proc/self/mounts.
pub fn mount_points() -> Vec<PathBuf> {
    let text = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|m| PathBuf::from(super::unescape_mount(m)))
        .collect()
}

/// Whether `path` (or its canonical form) is a mount point now.
pub fn is_mounted(path: &Path) -> bool {
    let canon = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    mount_points().iter().any(|m| m == &canon || m == path)
}

/// A daemon's state directory and the files every one holds: its configuration, pid,
/// readiness, statistics and log. Simulated disks and remotes add their own beside them.
#[derive(Debug, Clone)]
pub struct DaemonDir {
    pub dir: PathBuf,
}

impl DaemonDir {
    pub fn config(&self) -> PathBuf {
        self.dir.join("config.json")
    }
    pub fn pid(&self) -> PathBuf {
        self.dir.join("server.pid")
    }
    pub fn ready(&self) -> PathBuf {
        self.dir.join("ready.json")
    }
    pub fn stats(&self) -> PathBuf {
        self.dir.join("stats.json")
    }
    pub fn log(&self) -> PathBuf {
        self.dir.join("server.log")
    }
    pub fn exists(&self) -> bool {
        self.config().exists()
    }
    /// The server's pid if it is running.
    pub fn live_pid(&self) -> Option<i32> {
        let pid: i32 = fs::read_to_string(self.pid()).ok()?.trim().parse().ok()?;
        pid_alive(pid).then_some(pid)
    }
}

/// A daemon's state as `list` shows it: "running", "starting" (alive, not ready yet) or
/// "stopped".
pub fn state_word(alive: bool, ready: bool) -> &'static str {
    match (alive, ready) {
        (true, true) => "running",
        (true, false) => "starting",
        (false, _) => "stopped",
    }
}

/// Refuse `what` (a command, "fsbench disk create") unless run as root; `needs` says why.
pub fn require_root(what: &str, needs: &str) -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        anyhow::bail!("{what} needs root ({needs})");
    }
    Ok(())
}

/// The start of a daemon kind's `list`: its rows as JSON with `json`, or a line saying there
/// are none (`none`) on standard error. Whether the table of `rows` is still to be printed.
pub fn list_rows(rows: &[serde_json::Value], json: bool, none: &str) -> anyhow::Result<bool> {
    if json {
        crate::outln!("{}", serde_json::to_string_pretty(rows)?);
        return Ok(false);
    }
    if rows.is_empty() {
        crate::errln!("{none}");
        return Ok(false);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_is_starting_until_it_is_ready() {
        assert_eq!(state_word(true, true), "running");
        assert_eq!(state_word(true, false), "starting");
        assert_eq!(state_word(false, true), "stopped");
        // No rows: nothing left to print as a table, with or without --json.
        assert!(!list_rows(&[], false, "none").unwrap());
        assert!(!list_rows(&[], true, "none").unwrap());
        assert!(list_rows(&[serde_json::json!({"name": "x"})], false, "none").unwrap());
    }
}
