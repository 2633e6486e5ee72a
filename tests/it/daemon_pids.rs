//! A daemon's `server.pid` outlives a server that died without cleaning up, and the kernel
//! hands its number on. fsbench signals a recorded pid only while it still runs
//! `fsbench KIND serve NAME`: here a state directory names a live process that is no server
//! (a `sleep` this test started, the sentinel), and `stats`, `list` and `remove` must leave
//! it running.

use crate::common::*;
use std::path::Path;
use std::process::{Child, Command};

/// A process that is none of fsbench's, killed when the test ends.
struct Sentinel(Child);

impl Sentinel {
    fn start() -> Sentinel {
        Sentinel(Command::new("sleep").arg("120").spawn().unwrap())
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
    /// Still running (not exited, not killed by a signal).
    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A remote's state directory as a crashed server leaves it: configuration, ready.json and
/// a pid file, the pid now `pid`.
fn stale_remote(state: &Path, name: &str, pid: u32) {
    let d = state.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let cfg = serde_json::json!({
        "name": name,
        "server": "/nonexistent/fsbench-server",
        "mount": "/nonexistent/fsbench-mount",
        "net": {"bandwidth_bps": 1e6, "rtt_s": 0.01},
        "preset": null,
        "protocol": "whole-file",
        "cache_size": 1048576,
        "lookaside": [],
        "writable": false
    });
    std::fs::write(d.join("config.json"), cfg.to_string()).unwrap();
    std::fs::write(d.join("ready.json"), format!("{{\"pid\": {pid}}}")).unwrap();
    std::fs::write(d.join("server.pid"), format!("{pid}\n")).unwrap();
}

#[test]
fn a_recycled_pid_is_not_a_remote_server() {
    let s = Scratch::new("stale-remote");
    let state = s.path().join("state");
    let mut sentinel = Sentinel::start();
    stale_remote(&state, "stale", sentinel.pid());
    let fsbench = |args: &[&str]| {
        bin()
            .args(args)
            .env("FSBENCH_REMOTE_STATE_DIR", &state)
            .output()
            .unwrap()
    };
    // `stats` asks a running server for fresh counts with SIGUSR1 (which ends a `sleep`).
    let o = fsbench(&["remote", "stats", "stale"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        sentinel.alive(),
        "remote stats signalled pid {}",
        sentinel.pid()
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("(stopped)"),
        "{}",
        text(&o)
    );
    let o = fsbench(&["remote", "list", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows[0]["state"], "stopped", "{}", text(&o));
    if !root_or_skip_because(
        "a_recycled_pid_is_not_a_remote_server (remove)",
        "remote remove",
    ) {
        return;
    }
    let o = fsbench(&["remote", "remove", "stale"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        sentinel.alive(),
        "remote remove signalled pid {}",
        sentinel.pid()
    );
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("stopped the"),
        "{}",
        text(&o)
    );
    assert!(!state.join("stale").exists(), "{}", text(&o));
}

#[test]
fn a_recycled_pid_is_not_a_disk_server() {
    if !root_or_skip_because("a_recycled_pid_is_not_a_disk_server", "disk remove") {
        return;
    }
    let s = Scratch::new("stale-disk");
    let state = s.path().join("state");
    let mut sentinel = Sentinel::start();
    let d = state.join("stale");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("server.pid"), format!("{}\n", sentinel.pid())).unwrap();
    let o = bin()
        .args(["disk", "remove", "stale"])
        .env("FSBENCH_STATE_DIR", &state)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        sentinel.alive(),
        "disk remove signalled pid {}",
        sentinel.pid()
    );
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("stopped the"),
        "{}",
        text(&o)
    );
    assert!(!d.exists(), "{}", text(&o));
}
