//! A cell's memory limit: a memory cgroup made for one measured child and removed after it.
//!
//! The child enters the cgroup between fork and exec (it writes `0`, itself, to the cgroup's
//! `cgroup.procs`), so everything it allocates and every page it brings into the page cache
//! is charged to it from its first instruction; the target's set-up (mkfs, trees, aging) ran
//! before, outside it. cgroup v2 (`memory.max`) is used where its memory controller is
//! available; a machine whose memory controller is bound to a cgroup v1 hierarchy gets
//! `memory.limit_in_bytes` there, which limits the page cache the same way. fsbench removes
//! only the cgroup directory it made (named `fsbench-PID-...`, created with `mkdir`, which
//! fails if it exists, and marked: see [`fsbench_base::sys::cgroup`]).
//!
//! Every run has a second cgroup where cgroup v2 is mounted, [`RunCgroup`]: its backgrounds
//! run in it, and its measured child too unless a v2 memory cgroup holds it. fsbench kills
//! both (`cgroup.kill`) when the run ends, so nothing a child forked (a daemon, a
//! `setsid` job) outlives the run; the teardown journal lists them, so `--cleanup` kills
//! them after the runner itself was killed.

use anyhow::{bail, Context, Result};
use fsbench_base::sys::cgroup::OwnedCgroup;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// A memory cgroup this process made.
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: PathBuf,
    /// How it is recognised (journal, clean-up).
    pub owned: OwnedCgroup,
    /// 2 or 1.
    pub version: u8,
    pub limit: u64,
}

/// Where memory cgroups can be made: the parent directory and the hierarchy's version.
fn parent() -> Result<(PathBuf, u8), String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
    let mut v2: Option<PathBuf> = None;
    let mut v1: Option<PathBuf> = None;
    for l in info.lines() {
        let Some((left, right)) = l.split_once(" - ") else {
            continue;
        };
        let mp = left.split(' ').nth(4).unwrap_or("");
        let mut r = right.split(' ');
        let fstype = r.next().unwrap_or("");
        let opts = r.nth(1).unwrap_or("");
        if fstype == "cgroup2" && v2.is_none() {
            v2 = Some(PathBuf::from(mp));
        } else if fstype == "cgroup" && opts.split(',').any(|o| o == "memory") {
            v1 = Some(PathBuf::from(mp));
        }
    }
    let mut why = Vec::new();
    if let Some(root) = &v2 {
        let controllers =
            std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
        if controllers.split_whitespace().any(|c| c == "memory") {
            return enable_v2(root).map(|()| (root.clone(), 2));
        }
        why.push(format!(
            "cgroup v2 at {} has no memory controller (cgroup.controllers: {})",
            root.display(),
            controllers.trim()
        ));
    } else {
        why.push("no cgroup v2 file system is mounted".into());
    }
    if let Some(root) = v1 {
        // Our own group in the memory hierarchy: a child of it stays within its limits.
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let path = own
            .lines()
            .filter_map(|l| {
                let mut f = l.splitn(3, ':').skip(1);
                f.next().zip(f.next())
            })
            .find(|(c, _)| c.split(',').any(|c| c == "memory"))
            .map(|(_, p)| p.trim_start_matches('/').to_string())
            .unwrap_or_default();
        let dir = root.join(path);
        if dir.join("memory.limit_in_bytes").exists() {
            return Ok((dir, 1));
        }
        why.push(format!(
            "the cgroup v1 memory group {} is not usable",
            dir.display()
        ));
    } else {
        why.push("no cgroup v1 memory hierarchy is mounted either".into());
    }
    Err(why.join("; "))
}

/// The v2 root's children get the memory controller (the root cgroup may hold processes
/// and still delegate controllers).
fn enable_v2(root: &Path) -> Result<(), String> {
    let sub = root.join("cgroup.subtree_control");
    let have = std::fs::read_to_string(&sub).unwrap_or_default();
    if have.split_whitespace().any(|c| c == "memory") {
        return Ok(());
    }
    std::fs::write(&sub, "+memory").map_err(|e| {
        format!(
            "cannot enable the memory controller in {}: {e}",
            sub.display()
        )
    })
}

/// Why memory limits cannot be applied on this machine, if they cannot.
pub fn unavailable() -> Option<String> {
    if !fsbench_engine::engine::is_root() {
        return Some("making a memory cgroup needs root".into());
    }
    parent().err()
}

impl MemoryCgroup {
    /// Where `fsbench-PID-TAG` would be made, and in which cgroup version.
    pub fn planned(tag: &str) -> Result<(PathBuf, u8)> {
        let (parent, version) = parent().map_err(|why| anyhow::anyhow!("memory limit: {why}"))?;
        Ok((
            parent.join(format!("fsbench-{}-{tag}", std::process::id())),
            version,
        ))
    }

    /// Make the cgroup [`MemoryCgroup::planned`] gave, with `limit` bytes.
    pub fn create((dir, version): (PathBuf, u8), limit: u64) -> Result<MemoryCgroup> {
        let owned = OwnedCgroup::create(&dir)
            .with_context(|| format!("memory limit: creating the cgroup {}", dir.display()))?;
        let cg = MemoryCgroup {
            dir,
            owned,
            version,
            limit,
        };
        let file = if version == 2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        std::fs::write(cg.dir.join(file), limit.to_string()).with_context(|| {
            format!(
                "memory limit: writing {limit} to {}",
                cg.dir.join(file).display()
            )
        })?;
        if version == 2 {
            // Without swap the limit holds the page cache to it, not only what is swappable.
            let _ = std::fs::write(cg.dir.join("memory.swap.max"), "0");
        }
        Ok(cg)
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Make `cmd`'s process join the cgroup before it executes anything.
    pub fn attach(&self, cmd: &mut std::process::Command) -> Result<()> {
        attach(&self.dir, cmd)
    }

    /// The most memory the group held (page cache included).
    pub fn peak(&self) -> Option<u64> {
        let f = if self.version == 2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        std::fs::read_to_string(self.dir.join(f))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Whether the kernel killed a process of the group for want of memory.
    pub fn oom_killed(&self) -> bool {
        if self.version == 2 {
            let ev = std::fs::read_to_string(self.dir.join("memory.events")).unwrap_or_default();
            ev.lines()
                .any(|l| l.strip_prefix("oom_kill ").is_some_and(|n| n.trim() != "0"))
        } else {
            let c =
                std::fs::read_to_string(self.dir.join("memory.oom_control")).unwrap_or_default();
            c.lines()
                .any(|l| l.strip_prefix("oom_kill ").is_some_and(|n| n.trim() != "0"))
        }
    }

    /// Kill what is left in the cgroup (what its child forked) and remove it.
    pub fn remove(self) -> Result<()> {
        self.owned
            .remove()
            .with_context(|| format!("removing the cgroup {}", self.dir.display()))
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let _ = self.owned.remove();
    }
}

/// Make `cmd`'s process join the cgroup `dir` before it executes anything.
pub(super) fn attach(dir: &Path, cmd: &mut std::process::Command) -> Result<()> {
    let procs = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.procs"))
        .with_context(|| format!("opening {}/cgroup.procs", dir.display()))?;
    // SAFETY: between fork and exec the closure only calls write(2) on a descriptor
    // opened above (kept open by the closure), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            use std::os::fd::AsRawFd;
            if libc::write(procs.as_raw_fd(), b"0".as_ptr().cast(), 1) != 1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// The cgroup (v2) of one run's processes: its backgrounds and measured child, and all
/// they fork. Killed and removed when dropped; killed by the signal path on a third signal.
pub struct RunCgroup {
    pub owned: OwnedCgroup,
    /// `cgroup.kill`, held open for the signal handler.
    _kill: std::fs::File,
    _slot: fsbench_base::cancel::Slot,
}

impl RunCgroup {
    /// Where this run's cgroup is made: `None` where cgroup v2 is not mounted or this process
    /// may not make cgroups (then its children rely on their process groups and the
    /// parent-death signal).
    pub fn planned(tag: &str) -> Option<PathBuf> {
        let root = fsbench_base::sys::cgroup::v2_root()?;
        let ok = fsbench_engine::engine::is_root() && root.join("cgroup.procs").exists();
        ok.then(|| root.join(format!("fsbench-{}-{tag}-run", std::process::id())))
    }

    pub fn create(path: &Path) -> Result<RunCgroup> {
        let owned = OwnedCgroup::create(path)
            .with_context(|| format!("creating the run's cgroup {}", path.display()))?;
        let kill = std::fs::OpenOptions::new()
            .write(true)
            .open(path.join("cgroup.kill"));
        let kill = match kill {
            Ok(k) => k,
            Err(e) => {
                let _ = owned.remove();
                bail!("the cgroup {} has no cgroup.kill: {e}", path.display());
            }
        };
        use std::os::fd::AsRawFd;
        let slot = fsbench_base::cancel::kill_on_exit(kill.as_raw_fd());
        Ok(RunCgroup {
            owned,
            _kill: kill,
            _slot: slot,
        })
    }

    /// Make `cmd`'s process join the run's cgroup before it executes anything.
    pub fn attach(&self, cmd: &mut std::process::Command) -> Result<()> {
        attach(&self.owned.path, cmd)
    }

    /// Kill everything still in it and remove it.
    pub fn end(self) -> Result<()> {
        self.owned
            .remove()
            .with_context(|| format!("removing the cgroup {}", self.owned.path.display()))
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        let _ = self.owned.remove();
    }
}

/// The cgroups of one run: the memory cgroup when the cell has a memory limit, the run's
/// cgroup where cgroup v2 can be used. Its children also get their own process group and
/// the parent-death signal ([`fsbench_base::created::own`]), all that is left where there are no
/// cgroups.
#[derive(Default)]
pub struct RunGroup {
    pub memory: Option<MemoryCgroup>,
    pub run: Option<RunCgroup>,
}

impl RunGroup {
    /// The measured child (and the warm pass): its memory cgroup, and the run's cgroup
    /// unless the memory cgroup is a v2 one (a process is in one v2 cgroup only; that one is
    /// killed at the end too).
    pub fn attach_measured(&self, cmd: &mut std::process::Command) -> Result<()> {
        fsbench_base::created::own(cmd);
        if let Some(m) = &self.memory {
            m.attach(cmd)?;
            if m.version == 2 {
                return Ok(());
            }
        }
        match &self.run {
            Some(r) => r.attach(cmd),
            None => Ok(()),
        }
    }

    /// Where a background's processes go: the run's cgroup, if there is one.
    pub fn background_dir(&self) -> Option<PathBuf> {
        self.run.as_ref().map(|r| r.owned.path.clone())
    }

    /// Kill whatever the run's children left running and remove the run's cgroup.
    pub fn end_run(&mut self) -> Result<()> {
        match self.run.take() {
            Some(r) => r.end(),
            None => Ok(()),
        }
    }
}
