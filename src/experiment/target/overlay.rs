//! overlayfs stacked on another target: lower, upper and work directories in a marked
//! directory on that target, merged under OUTDIR/mnt/NAME.
//!
//! Two shapes. By default the lower layer is empty: whatever is made through the overlay
//! lies in its upper layer alone, so every directory has one layer (stacking without
//! merging; Linux's null stacking layer, see docs/experiments.md). A `merged` overlay has
//! the trees its plan makes (`tree_files`) in its lower layer and each of their directories
//! in its upper layer too, made before it is mounted: every lookup and directory read of a
//! tree consults both layers, as a union file system's merged directories do.

use super::{image::mount_point, make_marked_dir, sh, Ctx, Journal, MountSpec, Ready, Undo};
use crate::experiment::plan::Target;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A merged overlay's layers, until it is mounted (after its trees are made).
#[derive(Debug, Clone)]
pub struct Pending {
    pub lower: PathBuf,
    pub upper: PathBuf,
    pub spec: MountSpec,
}

pub fn set_up(
    t: &Target,
    lower: &Ready,
    merged: bool,
    ctx: &Ctx,
    j: &mut Journal,
) -> Result<Ready> {
    let base = lower.dir.join(format!("fsbench-overlay-{}", t.name));
    make_marked_dir(&base, j)?;
    let (lo, up, wk) = (base.join("lower"), base.join("upper"), base.join("work"));
    for d in [&lo, &up, &wk] {
        std::fs::create_dir(d)?;
    }
    let mnt = mount_point(ctx, &t.name, j)?;
    let spec = MountSpec {
        fstype: "overlay".into(),
        source: "overlay".into(),
        mount_point: mnt.clone(),
        options: format!(
            "lowerdir={},upperdir={},workdir={}",
            lo.display(),
            up.display(),
            wk.display()
        ),
    };
    let mut applied = BTreeMap::new();
    applied.insert("over".into(), lower.name.clone().into());
    applied.insert("upper_on".into(), lower.dir.display().to_string().into());
    applied.insert(
        "layers".into(),
        if merged {
            "merged: the trees in the lower layer, their directories in both"
        } else {
            "empty lower layer: what is made lies in the upper layer alone"
        }
        .into(),
    );
    if let Some(s) = lower.applied.get("scheduler") {
        applied.insert("scheduler".into(), s.clone());
    }
    let mut mounts = lower.mounts.clone();
    mounts.push(spec.clone());
    let pending = Pending {
        lower: lo,
        upper: up,
        spec: spec.clone(),
    };
    if !merged {
        mount(&spec, j)?;
    }
    Ok(Ready {
        name: t.name.clone(),
        mounts,
        dir: mnt,
        device: lower.device.clone(),
        disk: lower.disk.clone(),
        applied,
        pending: merged.then_some(pending),
    })
}

/// Mount an overlay as `spec` says, registering its unmount.
fn mount(spec: &MountSpec, j: &mut Journal) -> Result<()> {
    let mnt = spec.mount_point.to_string_lossy();
    sh(
        "mount",
        &["-t", "overlay", "overlay", "-o", &spec.options, &mnt],
    )?;
    j.push(Undo::Unmount(
        fsbench_base::daemon::owned::MountRecord::capture(&spec.mount_point, None)?,
    ))
}

/// Where a merged overlay not yet mounted keeps the tree `name`: in its lower layer, and
/// its directories in its upper layer.
pub fn tree_layers(ready: &Ready, name: &str) -> Option<(PathBuf, PathBuf)> {
    let p = ready.pending.as_ref()?;
    Some((p.lower.join(name), p.upper.join(name)))
}

/// Make in `upper` (marked, registered) every directory of the tree `lower`: each one
/// merged once the overlay is mounted. Returns how many directories there are.
pub fn mirror_dirs(lower: &Path, upper: &Path, j: &mut Journal) -> Result<u64> {
    make_marked_dir(upper, j)?;
    let mut n = 1;
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let rd = std::fs::read_dir(lower.join(&rel))
            .with_context(|| format!("reading {}", lower.join(&rel).display()))?;
        for e in rd {
            let e = e?;
            if e.file_type()?.is_dir() {
                let sub = rel.join(e.file_name());
                std::fs::create_dir(upper.join(&sub))
                    .with_context(|| format!("creating {}", upper.join(&sub).display()))?;
                n += 1;
                todo.push(sub);
            }
        }
    }
    Ok(n)
}

/// Mount a merged overlay whose trees are made, and read back what it stands on.
pub fn finish(ready: &mut Ready, j: &mut Journal) -> Result<()> {
    let Some(p) = ready.pending.take() else {
        return Ok(());
    };
    mount(&p.spec, j).with_context(|| format!("target {}: mounting the overlay", ready.name))?;
    super::mount_facts(ready);
    Ok(())
}
