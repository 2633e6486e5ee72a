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
mod journal;
pub mod kept;
pub mod nfs;
pub mod overlay;
pub mod remote;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::plan::{Plan, Target, TargetKind};
pub use journal::{create_dir, create_file, make_marked_dir, Journal, QueueValue, Undo, MARKER};

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
    /// A merged overlay not yet mounted: its layers, until its trees are made.
    #[serde(skip)]
    pub pending: Option<overlay::Pending>,
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
    // The mount ids before: the journal follows each mount to its new id.
    let ids: Vec<Option<u64>> = set
        .iter()
        .map(|m| fsbench_base::daemon::owned::mount_at(&m.mount_point).map(|e| e.mount_id))
        .collect();
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
    for (m, old) in set.iter().zip(&ids).skip(set.len() - down) {
        m.mount().with_context(|| {
            format!("mounting {} on {} again", m.source, m.mount_point.display())
        })?;
        let new = fsbench_base::daemon::owned::mount_at(&m.mount_point);
        if let (Some(old), Some(new)) = (old, new) {
            journal::note_remount(&m.mount_point, *old, new.mount_id, new.majmin);
        }
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
    /// Start aged disk targets from the copies an interrupted run of this plan kept
    /// (`--resume`, first set-up), see [`kept`].
    pub reuse_aged: bool,
}

/// The steps a target's set-up takes, for --dry-run and the root check.
pub fn steps(t: &Target) -> Vec<(String, bool)> {
    let mut s: Vec<(String, bool)> = match &t.kind {
        TargetKind::Dir { path } => vec![(format!("measure in the existing directory {}", path.display()), false)],
        TargetKind::Image { size, fs, mkfs_options, mount_options } => vec![
            (format!("create a {} MiB image under OUTDIR/images", size >> 20), false),
            ("attach it to a free loop device with direct I/O on the image (as losetup --direct-io=on)".into(), true),
            (format!("mkfs.{fs} {} LOOPDEV", image::mkfs_force(fs).iter().map(|s| s.to_string()).chain(mkfs_options.iter().cloned()).collect::<Vec<_>>().join(" ")), true),
            (format!("mount it under OUTDIR/mnt (options: {})", if mount_options.is_empty() { "defaults" } else { mount_options }), true),
        ],
        TargetKind::Overlay { over, merged: false } => vec![(format!("mount overlayfs with lower, upper and work directories on target {over} (the lower layer empty)"), true)],
        TargetKind::Overlay { over, merged: true } => vec![(format!("make lower, upper and work directories on target {over}; the plan's trees in the lower layer, their directories in the upper layer; then mount overlayfs (every tree directory merged)"), true)],
        TargetKind::Disk { size, fs, model, params, mkfs_options, mount_options } if t.age.is_some() => vec![
            (format!("create a {} MiB image under OUTDIR/images, attach it to a free loop device, mkfs.{fs} {} LOOPDEV, mount it on OUTDIR/mnt/{}", size >> 20, disk::mkfs_argv(fs, mkfs_options).join(" "), t.name), true),
            ("age it there (below), then unmount it and detach the loop device".into(), true),
            (
                format!(
                    "fsbench disk create fsbx-{name}-PID --model {model} --size {size} --image OUTDIR/images/{name}.img{} (the aged image served by the disk model under a loop device with direct I/O)",
                    params.iter().map(|(k, v)| format!(" --{} {v}", k.replace('_', "-"))).collect::<String>(),
                    name = t.name
                ),
                true,
            ),
            (format!("mount it on OUTDIR/mnt/{} (options: {})", t.name, if mount_options.is_empty() { "defaults" } else { mount_options }), true),
        ],
        TargetKind::Disk { size, fs, model, params, mkfs_options, mount_options } => vec![
            (
                format!(
                    "fsbench disk create fsbx-{name}-PID --model {model} --size {size} --image OUTDIR/images/{name}.img{} (a simulated disk of {} MiB under a loop device with direct I/O)",
                    params.iter().map(|(k, v)| format!(" --{} {v}", k.replace('_', "-"))).collect::<String>(),
                    size >> 20,
                    name = t.name
                ),
                true,
            ),
            (format!("mkfs.{fs} {} LOOPDEV", disk::mkfs_argv(fs, mkfs_options).join(" ")), true),
            (format!("mount it on OUTDIR/mnt/{} (options: {})", t.name, if mount_options.is_empty() { "defaults" } else { mount_options }), true),
        ],
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
        TargetKind::Nfs { .. } => nfs::steps(t),
    };
    let d = &device_settings(t);
    if let Some(v) = &d.scheduler {
        let why = if t.device.scheduler.is_none() {
            " (the plan names none: fsbench's default)"
        } else {
            ""
        };
        s.push((format!("set the I/O scheduler to {v}{why}"), true));
    }
    for (k, v) in &d.tunables {
        s.push((format!("set iosched/{k} = {v}"), true));
    }
    if let Some(v) = d.read_ahead_kb {
        let why = if t.device.read_ahead_kb.is_none() {
            " (the plan names none: fsbench's default)"
        } else {
            ""
        };
        s.push((format!("set read_ahead_kb = {v}{why}"), true));
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
                "age: {} (once per {})",
                a.describe(),
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

/// The device settings set-up writes: the target's own, with the scheduler and the
/// read-ahead set explicitly on the devices fsbench makes (images, simulated disks): the
/// ones named, else `none` and 128 KiB, so that no target runs under whatever a device's
/// last user left (a loop device keeps its scheduler across detach and attach) or under a
/// read-ahead the kernel derived from the host's disk.
pub fn device_settings(t: &Target) -> crate::experiment::plan::Device {
    let mut d = t.device.clone();
    if matches!(t.kind, TargetKind::Image { .. } | TargetKind::Disk { .. }) {
        if d.scheduler.is_none() {
            d.scheduler = Some(crate::experiment::plan::schedulers::DEFAULT_SCHEDULER.into());
        }
        if d.read_ahead_kb.is_none() {
            d.read_ahead_kb = Some(crate::experiment::plan::DEFAULT_READ_AHEAD_KB);
        }
    }
    d
}

/// Set up one target, registering every undo step in `j`.
pub fn set_up(t: &Target, ctx: &Ctx, j: &mut Journal) -> Result<Ready> {
    let mut ready = match &t.kind {
        TargetKind::Dir { path } => dir::set_up(t, path)?,
        TargetKind::Image { .. } => image::set_up(t, ctx, j)?,
        TargetKind::Overlay { over, merged } => {
            let lower = ctx
                .ready
                .iter()
                .find(|r| &r.name == over)
                .expect("lower target set up first");
            overlay::set_up(t, lower, *merged, ctx, j)?
        }
        TargetKind::Disk { .. } => disk::set_up(t, ctx, j)?,
        TargetKind::Remote { .. } => remote::set_up(t, ctx, j)?,
        TargetKind::Nfs { .. } => nfs::set_up(t, ctx, j)?,
    };
    let settings = device_settings(t);
    if !settings.is_empty() {
        device::apply(&settings, &mut ready, j)
            .with_context(|| format!("target {}: device settings", t.name))?;
    } else if let Some(dev) = ready.device.clone() {
        // A device fsbench does not set (an existing directory's): what it runs under.
        if let Ok(now) = device::current(&dev) {
            ready
                .applied
                .insert("scheduler".into(), now.scheduler.unwrap_or_default().into());
        }
    }
    if ready.pending.is_none() {
        mount_facts(&mut ready);
    }
    Ok(ready)
}

/// What the file system under a target reports, once it is mounted.
pub fn mount_facts(ready: &mut Ready) {
    if let Some((mp, fstype, opts, source)) = fsbench_results::stats::host::mount_of(&ready.dir) {
        ready.applied.insert("mount_point".into(), mp.into());
        ready.applied.insert("fs_type".into(), fstype.into());
        ready.applied.insert("mount_options".into(), opts.into());
        ready.applied.insert("source".into(), source.into());
    }
}
