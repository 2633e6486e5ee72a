//! What fsbench's named daemons share: a simulated disk, a simulated remote (and any
//! server of the same kind: `fsbench KIND create NAME` starts `fsbench KIND serve NAME`
//! in the background, `list`, `stats` and `remove` find it again by its name).
//!
//! * [`Kind`] — one kind of daemon: its subcommand, where its state directories live, why
//!   it needs root; names checked, `list` and `create`'s refusals worded once.
//! * [`DaemonDir`] — one daemon's state directory and the files every one holds.
//! * [`state`] — JSON state files written whole and read back, the list's state word.
//! * [`process`] — starting a daemon, and its pid: alive, still that daemon (a pid file
//!   outlives its process, and the number may since name someone else's), stopping it.
//! * [`remove`] — the common steps of `remove`: stop, unmount what was recorded, delete
//!   the state directory (never with a file system mounted inside), say what was done.
//! * [`owned`] — what a daemon mounted or attached, recognised again before it is undone.

use std::path::{Path, PathBuf};

use anyhow::bail;
use serde::{Deserialize, Serialize};

pub mod owned;
pub mod process;
pub mod remove;
pub mod state;

/// One kind of named daemon, as its command line speaks of it.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// The subcommand, and the word messages use: "disk", "remote".
    pub word: &'static str,
    /// What `list` calls them: "simulated disks".
    pub plural: &'static str,
    /// The environment variable that moves the state directories (tests, unprivileged use).
    pub env: &'static str,
    /// Where the state directories are otherwise.
    pub default_root: &'static str,
    /// Why creating or removing one needs root ("FUSE mount and loop devices").
    pub root_needs: &'static str,
}

impl Kind {
    /// Root of this kind's state directories.
    pub fn state_root(&self) -> PathBuf {
        match std::env::var_os(self.env) {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => PathBuf::from(self.default_root),
        }
    }

    /// The state directory of the daemon `name` (checked: it becomes a path component).
    pub fn dir(&self, name: &str) -> anyhow::Result<DaemonDir> {
        self.check_name(name)?;
        Ok(DaemonDir {
            dir: self.state_root().join(name),
            kind: self.word,
        })
    }

    /// Names become path components: keep them tame.
    pub fn check_name(&self, name: &str) -> anyhow::Result<()> {
        if name.is_empty()
            || name.len() > 64
            || name.starts_with('.')
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        {
            bail!(
                "invalid {} name {name:?}: use letters, digits, '-', '_' and '.' (at most 64)",
                self.word
            );
        }
        Ok(())
    }

    /// Names of this kind's daemons (state directories holding a `config.json`), sorted.
    pub fn names(&self) -> Vec<String> {
        names_in(&self.state_root())
    }

    /// Refuse `fsbench KIND VERB` unless run as root.
    pub fn require_root(&self, verb: &str) -> anyhow::Result<()> {
        require_root(&format!("fsbench {} {verb}", self.word), self.root_needs)
    }

    /// The error for a name with no state directory.
    pub fn no_such(&self, name: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "no {w} named {name} (see `fsbench {w} list`)",
            w = self.word
        )
    }

    /// `create`'s refusal of a name already `taken` (the caller says what counts): running,
    /// or a stale state directory that `remove` has to clear first.
    pub fn refuse_taken(&self, d: &DaemonDir, name: &str, taken: bool) -> anyhow::Result<()> {
        if !taken {
            return Ok(());
        }
        let w = self.word;
        if d.live_pid().is_some() {
            bail!("{w} {name} already exists (see `fsbench {w} list`)");
        }
        bail!(
            "{w} {name} has a stale state directory {} (its server is not running): \
             run `fsbench {w} remove {name}` first",
            d.dir.display()
        )
    }

    /// Start `fsbench KIND serve NAME` in the background and wait for its `ready.json`.
    pub fn start(&self, d: &DaemonDir) -> anyhow::Result<()> {
        process::start(self.word, &d.dir, &d.ready(), &d.log())
    }

    /// The start of `list`: its rows as JSON with `json`, or a line saying there are none
    /// on standard error. Whether the table of `rows` is still to be printed.
    pub fn list_rows(&self, rows: &[serde_json::Value], json: bool) -> anyhow::Result<bool> {
        let none = format!(
            "no {} (state in {})",
            self.plural,
            self.state_root().display()
        );
        state::list_rows(rows, json, &none)
    }
}

/// A daemon's state directory and the files every one holds: its configuration, pid,
/// readiness, statistics and log. Each kind adds its own beside them.
#[derive(Debug, Clone)]
pub struct DaemonDir {
    pub dir: PathBuf,
    /// Its kind's subcommand: its server runs as `fsbench KIND serve NAME`.
    pub kind: &'static str,
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
    /// The daemon's name: its directory's.
    pub fn name(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
    /// The server's side, first thing: record its own pid.
    pub fn write_pid(&self) -> std::io::Result<()> {
        std::fs::write(self.pid(), format!("{}\n", std::process::id()))
    }
    /// The server's side, as it exits or gives up starting: its ready.json and pid file go
    /// (best effort: a server that cannot remove them is taken for stopped by its pid).
    pub fn clear_running(&self) {
        let _ = crate::owned::path::remove_file(self.ready());
        let _ = crate::owned::path::remove_file(self.pid());
    }
    /// The server's pid if it is running: alive, and still `fsbench KIND serve NAME`
    /// (a recycled pid is someone else's process, never signalled).
    pub fn live_pid(&self) -> Option<i32> {
        let pid: i32 = std::fs::read_to_string(self.pid())
            .ok()?
            .trim()
            .parse()
            .ok()?;
        process::is_server(pid, self.kind, &self.name()).then_some(pid)
    }
}

/// One latency of a server's statistics over all its requests, in microseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Summary {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

/// Names of the daemons whose state directories (holding a `config.json`) are in `root`,
/// sorted.
pub fn names_in(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().join("config.json").exists())
                .filter_map(|e| e.file_name().to_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Refuse `what` (a command, "fsbench disk create") unless run as root; `needs` says why.
pub fn require_root(what: &str, needs: &str) -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("{what} needs root ({needs})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Kind;

    const K: Kind = Kind {
        word: "thing",
        plural: "things",
        env: "FSBENCH_TEST_UNUSED_STATE_DIR",
        default_root: "/nonexistent/fsbench/things",
        root_needs: "nothing",
    };

    #[test]
    fn names_are_checked() {
        assert!(K.check_name("hdd0").is_ok());
        assert!(K.check_name("a-b_c.1").is_ok());
        assert!(K.check_name("").is_err());
        assert!(K.check_name("../x").is_err());
        assert!(K.check_name(".hidden").is_err());
        assert!(K.check_name("a/b").is_err());
        let e = K.check_name("a/b").unwrap_err().to_string();
        assert!(e.starts_with("invalid thing name"), "{e}");
        assert_eq!(K.dir("x").unwrap().name(), "x");
    }
}
