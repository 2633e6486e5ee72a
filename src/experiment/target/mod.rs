//! Environments an experiment measures in: each kind sets itself up, reads back what was
//! actually applied, and registers how to undo every step in a [`Journal`].
//!
//! The journal is the teardown guard: every step that changes the system (a file created,
//! a loop device attached, a mount, a sysfs value written, a simulated disk started) pushes
//! its undo action *before* returning, the journal is saved to OUTDIR after each change,
//! and dropping the journal undoes everything in reverse order. So teardown runs on success,
//! on an error (the `?` that leaves the runner drops it), on Ctrl-C (the runner stops and
//! returns), and after a crash or a second Ctrl-C `fsbench experiment --cleanup OUTDIR`
//! replays the saved journal.

pub mod age;
pub mod device;
pub mod dir;
pub mod disk;
pub mod image;
pub mod overlay;
pub mod remote;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::plan::{Plan, Target, TargetKind};

/// One step to undo.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum Undo {
    /// Remove a file fsbench created.
    RemoveFile(PathBuf),
    /// Remove an empty directory fsbench created.
    RemoveEmptyDir(PathBuf),
    /// Remove a directory tree fsbench created and marked (the marker is checked first).
    RemoveMarkedTree { dir: PathBuf, marker: String },
    /// Detach a loop device.
    DetachLoop(String),
    /// Unmount a mount point.
    Unmount(PathBuf),
    /// Write back a sysfs value.
    Restore { path: PathBuf, value: String },
    /// `fsbench disk remove NAME`.
    RemoveDisk(String),
    /// `fsbench remote remove NAME`.
    RemoveRemote(String),
}

impl std::fmt::Display for Undo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Undo::RemoveFile(p) => write!(f, "remove {}", p.display()),
            Undo::RemoveEmptyDir(p) => write!(f, "remove directory {}", p.display()),
            Undo::RemoveMarkedTree { dir, .. } => write!(f, "remove tree {}", dir.display()),
            Undo::DetachLoop(d) => write!(f, "detach {d}"),
            Undo::Unmount(p) => write!(f, "unmount {}", p.display()),
            Undo::Restore { path, value } => write!(f, "restore {} = {value}", path.display()),
            Undo::RemoveDisk(n) => write!(f, "remove simulated disk {n}"),
            Undo::RemoveRemote(n) => write!(f, "remove simulated remote {n}"),
        }
    }
}

/// Run a command; its standard error becomes the error message when it fails.
pub fn sh(prog: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(prog)
        .args(args)
        .output()
        .with_context(|| format!("running {prog} (is it installed?)"))?;
    if !out.status.success() {
        bail!(
            "`{prog} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl Undo {
    fn run(&self) -> Result<()> {
        match self {
            Undo::RemoveFile(p) => match std::fs::remove_file(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(e).with_context(|| format!("removing {}", p.display()))
                }
                _ => Ok(()),
            },
            Undo::RemoveEmptyDir(p) => match std::fs::remove_dir(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(e).with_context(|| format!("removing {}", p.display()))
                }
                _ => Ok(()),
            },
            Undo::RemoveMarkedTree { dir, marker } => {
                if !dir.exists() {
                    return Ok(());
                }
                if !dir.join(marker).exists() {
                    bail!(
                        "not removing {}: it lacks fsbench's marker {marker}",
                        dir.display()
                    );
                }
                std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))
            }
            Undo::DetachLoop(dev) => {
                if !Path::new(dev).exists() || !loop_backing(dev) {
                    return Ok(());
                }
                sh("losetup", &["-d", dev]).map(|_| ())
            }
            Undo::Unmount(p) => {
                if !is_mount_point(p) {
                    return Ok(());
                }
                // A benchmark child killed a moment ago may still hold files: retry briefly.
                let s = p.to_string_lossy();
                for _ in 0..20 {
                    if sh("umount", &[&s]).is_ok() {
                        return Ok(());
                    }
                    std::thread::sleep(std::time::Duration::from_millis(250));
                }
                sh("umount", &[&s]).map(|_| ())
            }
            Undo::Restore { path, value } => match std::fs::write(path, value) {
                // A scheduler tunable whose scheduler has been switched away since (its
                // restore is undone first): it went with its scheduler.
                Err(e)
                    if e.kind() == std::io::ErrorKind::NotFound
                        && path.parent().is_some_and(|p| p.ends_with("iosched")) =>
                {
                    Ok(())
                }
                r => r.with_context(|| format!("restoring {} to {value}", path.display())),
            },
            Undo::RemoveDisk(name) => {
                let exe = crate::experiment::self_exe()?;
                let out = Command::new(exe).args(["disk", "remove", name]).output()?;
                if !out.status.success() {
                    let e = String::from_utf8_lossy(&out.stderr);
                    if e.contains("no disk") || e.contains("No such") || e.contains("not found") {
                        return Ok(());
                    }
                    bail!("`fsbench disk remove {name}` failed: {}", e.trim());
                }
                Ok(())
            }
            Undo::RemoveRemote(name) => {
                let exe = crate::experiment::self_exe()?;
                let out = Command::new(exe)
                    .args(["remote", "remove", name])
                    .output()?;
                if !out.status.success() {
                    let e = String::from_utf8_lossy(&out.stderr);
                    if e.contains("no remote named") {
                        return Ok(());
                    }
                    bail!("`fsbench remote remove {name}` failed: {}", e.trim());
                }
                Ok(())
            }
        }
    }
}

/// Whether a loop device has a backing file.
fn loop_backing(dev: &str) -> bool {
    let name = dev.trim_start_matches("/dev/");
    Path::new(&format!("/sys/block/{name}/loop/backing_file")).exists()
}

/// Whether `p` is a mount point (listed in /proc/self/mountinfo).
pub fn is_mount_point(p: &Path) -> bool {
    let Ok(p) = p.canonicalize() else {
        return false;
    };
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines().any(|l| {
        l.split(' ')
            .nth(4)
            .is_some_and(|mp| Path::new(&unescape(mp)) == p)
    })
}

fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// The undo stack, saved to a file after every change; undone in reverse on drop.
pub struct Journal {
    file: PathBuf,
    steps: Vec<Undo>,
    /// Print each undo step.
    pub verbose: bool,
}

impl Journal {
    pub const FILE: &'static str = "teardown.json";

    /// A new journal in `outdir`. A journal left there by an interrupted run must be
    /// replayed (`--cleanup`) first.
    pub fn create(outdir: &Path) -> Result<Journal> {
        let file = outdir.join(Self::FILE);
        if let Ok(text) = std::fs::read_to_string(&file) {
            let steps: Vec<Undo> = serde_json::from_str(&text).unwrap_or_default();
            if !steps.is_empty() {
                bail!(
                    "{} lists {} set-up steps an earlier run did not undo; run `fsbench experiment --cleanup {}` first",
                    file.display(),
                    steps.len(),
                    outdir.display()
                );
            }
        }
        let j = Journal {
            file,
            steps: Vec::new(),
            verbose: false,
        };
        j.save()?;
        Ok(j)
    }

    fn save(&self) -> Result<()> {
        let tmp = self.file.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_string_pretty(&self.steps)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &self.file)
            .with_context(|| format!("writing {}", self.file.display()))
    }

    /// Register how to undo a step that has just been done.
    pub fn push(&mut self, u: Undo) -> Result<()> {
        self.steps.push(u);
        self.save()
    }

    /// Register writing back `value` to a sysfs file, unless a restore of that file is
    /// registered already (then that one holds the value from before fsbench changed it).
    pub fn push_restore(&mut self, path: PathBuf, value: String) -> Result<()> {
        if self
            .steps
            .iter()
            .any(|u| matches!(u, Undo::Restore { path: p, .. } if *p == path))
        {
            return Ok(());
        }
        self.push(Undo::Restore { path, value })
    }

    /// Undo every step down to `mark` (a length from [`Journal::len`]), newest first. Every
    /// step is attempted; the errors are returned together.
    pub fn undo_to(&mut self, mark: usize) -> Result<()> {
        let mut errors = Vec::new();
        let mut failed = Vec::new();
        while self.steps.len() > mark {
            let u = self.steps.pop().expect("non-empty");
            if self.verbose {
                crate::errln!("fsbench: teardown: {u}");
            }
            if let Err(e) = u.run() {
                errors.push(format!("{u}: {e:#}"));
                failed.push(u);
            }
            let _ = self.save();
        }
        // What could not be undone stays in the journal for --cleanup, in its order.
        failed.reverse();
        self.steps.extend(failed);
        let _ = self.save();
        if !errors.is_empty() {
            bail!("teardown left steps undone:\n  {}", errors.join("\n  "));
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Replay a journal left in `outdir` (`--cleanup`).
    pub fn cleanup(outdir: &Path) -> Result<usize> {
        let file = outdir.join(Self::FILE);
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "{} has no teardown journal ({})",
                outdir.display(),
                file.display()
            )
        })?;
        let steps: Vec<Undo> =
            serde_json::from_str(&text).with_context(|| format!("reading {}", file.display()))?;
        let n = steps.len();
        let mut j = Journal {
            file,
            steps,
            verbose: true,
        };
        j.undo_to(0)?;
        Ok(n)
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        if let Err(e) = self.undo_to(0) {
            crate::errln!("fsbench: {e:#}");
        }
    }
}

/// A target that is set up: where to measure and what was applied, read back.
#[derive(Debug, Clone, Serialize)]
pub struct Ready {
    pub name: String,
    /// The directory measurements run in.
    pub dir: PathBuf,
    /// The block device under it, when there is one (loop device, disk).
    pub device: Option<String>,
    /// The simulated disk's name, for its statistics.
    pub disk: Option<String>,
    /// Settings read back from the system after set-up.
    pub applied: BTreeMap<String, serde_json::Value>,
    /// The mounts this target stands on, the block file system first (empty for an existing
    /// directory): what `cache = "remount"` unmounts and mounts again.
    pub mounts: Vec<MountSpec>,
}

/// One mount fsbench made, as `mount -t FSTYPE -o OPTIONS SOURCE MOUNT_POINT` makes it again.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MountSpec {
    pub fstype: String,
    pub source: String,
    pub mount_point: PathBuf,
    pub options: String,
}

impl MountSpec {
    fn mount(&self) -> Result<()> {
        image::mount(&self.fstype, &self.source, &self.mount_point, &self.options)
    }
}

/// The mounts to cycle to remount `target`'s file system: its own, and those of every other
/// target standing on the same block file system (an overlay over it holds it busy), base
/// first.
pub fn remount_set(ready: &[Ready], target: &str) -> Vec<MountSpec> {
    let Some(t) = ready.iter().find(|r| r.name == target) else {
        return Vec::new();
    };
    let Some(base) = t.mounts.first() else {
        return Vec::new();
    };
    let mut out: Vec<MountSpec> = vec![base.clone()];
    for r in ready {
        if r.mounts.first() == Some(base) {
            for m in &r.mounts[1..] {
                if !out.contains(m) {
                    out.push(m.clone());
                }
            }
        }
    }
    out
}

/// Unmount `set` (newest first) and mount it again (base first): the file system starts
/// with nothing cached, as after a reboot. A mount point still busy is an error naming it,
/// after what was unmounted has been mounted again.
pub fn remount(set: &[MountSpec]) -> Result<String> {
    if set.is_empty() {
        bail!(
            "the target has no mount fsbench made; remount needs an image, disk or overlay target"
        );
    }
    let mut down = 0;
    let mut failure = None;
    for m in set.iter().rev() {
        let p = m.mount_point.to_string_lossy();
        match sh("umount", &[&p]) {
            Ok(_) => down += 1,
            Err(e) => {
                failure = Some(anyhow::anyhow!(
                    "{} is busy (something still holds files on it): {e:#}",
                    m.mount_point.display()
                ));
                break;
            }
        }
    }
    // Mount again what was unmounted, base first, also after a failure.
    for m in &set[set.len() - down..] {
        m.mount().with_context(|| {
            format!("mounting {} on {} again", m.source, m.mount_point.display())
        })?;
    }
    if let Some(e) = failure {
        return Err(e);
    }
    let base = &set[0];
    let mut what = format!(
        "remounted {} ({} on {})",
        base.mount_point.display(),
        base.fstype,
        base.source
    );
    if set.len() > 1 {
        what.push_str(&format!(
            " with {} stacked on it",
            set[1..]
                .iter()
                .map(|m| m.mount_point.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(what)
}

/// Where set-up may put things.
pub struct Ctx<'a> {
    pub outdir: &'a Path,
    pub plan: &'a Plan,
    /// Targets already set up (an overlay finds its lower target here).
    pub ready: &'a [Ready],
    /// Distinguishes the images, mounts and disks of successive set-ups.
    pub generation: u32,
}

/// The steps a target's set-up takes, for --dry-run and the root check.
pub fn steps(t: &Target) -> Vec<(String, bool)> {
    let mut s: Vec<(String, bool)> = match &t.kind {
        TargetKind::Dir { path } => vec![(format!("measure in the existing directory {}", path.display()), false)],
        TargetKind::Image { size, fs, mkfs_options, mount_options } => vec![
            (format!("create a {} MiB image under OUTDIR/images", size >> 20), false),
            (format!("mkfs.{fs} {}", mkfs_options.join(" ")), false),
            ("attach it to a loop device (losetup)".into(), true),
            (format!("mount it under OUTDIR/mnt (options: {})", if mount_options.is_empty() { "defaults" } else { mount_options }), true),
        ],
        TargetKind::Overlay { over } => vec![(format!("mount overlayfs with lower, upper and work directories on target {over}"), true)],
        TargetKind::Disk { size, fs, model, .. } => vec![(
            format!("create a simulated disk ({model}, {} MiB) with {fs}, mounted under OUTDIR/mnt (fsbench disk)", size >> 20),
            true,
        )],
        TargetKind::Remote { server, network, protocol, lookaside, writable, .. } => {
            let mut v = Vec::new();
            match server {
                super::plan::RemoteServer::Dir(p) => v.push((format!("serve {}{}", p.display(), if *writable { " (writable)" } else { " (read-only)" }), false)),
                super::plan::RemoteServer::Source(_) => v.push(("generate a source tree to serve under OUTDIR/remote".into(), false)),
            }
            if lookaside.is_some() {
                v.push((format!("lookaside tree: {}", super::plan::Lookaside::level(lookaside.as_ref())), false));
            }
            v.push((format!("mount a simulated remote ({network}, {protocol}) under OUTDIR/mnt (fsbench remote)"), true));
            v
        }
    };
    let d = &t.device;
    if let Some(v) = &d.scheduler {
        s.push((format!("set the I/O scheduler to {v}"), true));
    }
    for (k, v) in &d.tunables {
        s.push((format!("set iosched/{k} = {v}"), true));
    }
    if let Some(v) = d.read_ahead_kb {
        s.push((format!("set read_ahead_kb = {v}"), true));
    }
    if let Some(v) = d.nr_requests {
        s.push((format!("set nr_requests = {v}"), true));
    }
    if let Some(v) = d.rotational {
        s.push((format!("set rotational = {}", v as u8), true));
    }
    if let Some(a) = &t.age {
        s.push((
            format!(
                "age: profile {} to {:.0}% then {} operations, seed {} (once per {})",
                a.profile,
                a.fill * 100.0,
                a.ops,
                a.seed,
                match a.per {
                    super::plan::AgePer::Target => "set-up",
                    super::plan::AgePer::Repetition => "repetition",
                }
            ),
            false,
        ));
    }
    s
}

/// Set up one target, registering every undo step in `j`.
pub fn set_up(t: &Target, ctx: &Ctx, j: &mut Journal) -> Result<Ready> {
    let mut ready = match &t.kind {
        TargetKind::Dir { path } => dir::set_up(t, path)?,
        TargetKind::Image { .. } => image::set_up(t, ctx, j)?,
        TargetKind::Overlay { over } => {
            let lower = ctx
                .ready
                .iter()
                .find(|r| &r.name == over)
                .expect("lower target set up first");
            overlay::set_up(t, lower, ctx, j)?
        }
        TargetKind::Disk { .. } => disk::set_up(t, ctx, j)?,
        TargetKind::Remote { .. } => remote::set_up(t, ctx, j)?,
    };
    if !t.device.is_empty() {
        device::apply(&t.device, &mut ready, j)
            .with_context(|| format!("target {}: device settings", t.name))?;
    }
    // What the file system reports, after everything.
    if let Some((mp, fstype, opts, source)) = crate::stats::host::mount_of(&ready.dir) {
        ready.applied.insert("mount_point".into(), mp.into());
        ready.applied.insert("fs_type".into(), fstype.into());
        ready.applied.insert("mount_options".into(), opts.into());
        ready.applied.insert("source".into(), source.into());
    }
    Ok(ready)
}

/// Write a marker file so that only trees fsbench made are ever removed.
pub const MARKER: &str = ".fsbench-experiment-target";

pub fn make_marked_dir(dir: &Path, j: &mut Journal) -> Result<()> {
    if dir.exists() {
        bail!(
            "{} exists already; not reusing a directory fsbench did not create",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join(MARKER), b"created by fsbench experiment\n")?;
    j.push(Undo::RemoveMarkedTree {
        dir: dir.to_path_buf(),
        marker: MARKER.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_undoes_in_reverse_and_keeps_unmarked_trees() {
        let d = std::env::temp_dir().join(format!("fsbench-journal-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        {
            let mut j = Journal::create(&d).unwrap();
            let a = d.join("a");
            make_marked_dir(&a, &mut j).unwrap();
            std::fs::write(a.join("f"), b"x").unwrap();
            let b = a.join("sub");
            std::fs::create_dir(&b).unwrap();
            j.push(Undo::RemoveEmptyDir(b.clone())).unwrap();
            assert_eq!(j.len(), 2);
            let saved: Vec<Undo> =
                serde_json::from_str(&std::fs::read_to_string(d.join(Journal::FILE)).unwrap())
                    .unwrap();
            assert_eq!(saved.len(), 2);
        }
        assert!(!d.join("a").exists());
        // An unmarked tree is refused and kept for --cleanup.
        let u = d.join("u");
        std::fs::create_dir_all(&u).unwrap();
        let mut j = Journal::create(&d).unwrap();
        j.push(Undo::RemoveMarkedTree {
            dir: u.clone(),
            marker: MARKER.into(),
        })
        .unwrap();
        assert!(j.undo_to(0).is_err());
        assert!(u.exists());
        assert_eq!(j.len(), 1);
        std::mem::forget(j);
        assert!(
            Journal::create(&d).is_err(),
            "a leftover journal is refused"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
