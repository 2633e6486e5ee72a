//! The steps every daemon's `remove` shares: stop its server, unmount what it recorded
//! mounting, delete its state directory, and say what was done and what was left alone.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};

use super::owned::MountRecord;
use super::DaemonDir;

/// What a `remove` did (said at the end: silence on success left users guessing) and what
/// was not fsbench's any more and was left alone (said as the error it ends with).
#[derive(Debug, Default)]
pub struct Removal {
    pub done: Vec<String>,
    pub left: Vec<String>,
}

impl Removal {
    /// Stop the server (SIGTERM, up to `grace`, then SIGKILL), if it runs.
    pub fn stop_server(&mut self, d: &DaemonDir, grace: Duration) {
        if let Some(pid) = super::process::stop(d, grace) {
            self.done
                .push(format!("stopped the {} server (pid {pid})", d.kind));
        }
    }

    /// Unmount the recorded mount if it is still the one recorded (lazily if busy).
    pub fn unmount(&mut self, rec: &MountRecord) {
        match rec.unmount_even_busy() {
            Ok(Some(what)) => self.done.push(what),
            Ok(None) => {}
            Err(e) => self.left.push(format!("{e:#}")),
        }
    }

    /// Delete the state directory (refused while a file system is mounted inside it;
    /// `mount_points`, its subdirectories where the server mounted, are removed only when
    /// empty, never recursed into), then say what was done: `fsbench KIND remove NAME`'s
    /// last line, and its error if anything was left alone.
    pub fn finish(mut self, d: &DaemonDir, mount_points: &[&str]) -> anyhow::Result<()> {
        let dir = &d.dir;
        refuse_mounts_inside(dir)?;
        for sub in mount_points {
            let p = dir.join(sub);
            if p.exists() {
                crate::owned::path::remove_empty_dir(&p)
                    .with_context(|| format!("removing {}", p.display()))?;
            }
        }
        crate::owned::path::remove_tree(dir)
            .with_context(|| format!("removing {}", dir.display()))?;
        self.done.push(format!("removed state {}", dir.display()));
        crate::outln!("{} {} removed: {}", d.kind, d.name(), self.done.join("; "));
        if !self.left.is_empty() {
            bail!("{}", self.left.join("\n"));
        }
        Ok(())
    }
}

/// A state directory is removed recursively: never with a file system mounted inside it.
pub fn refuse_mounts_inside(dir: &Path) -> anyhow::Result<()> {
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mounted = super::owned::mounts_under(&real);
    if !mounted.is_empty() {
        bail!(
            "not removing {}: {} is mounted inside it; left alone",
            dir.display(),
            mounted
                .iter()
                .map(|m| m.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}
