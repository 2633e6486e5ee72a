//! overlayfs stacked on another target: lower, upper and work directories in a marked
//! directory on that target, merged under OUTDIR/mnt/NAME.

use super::{image::mount_point, make_marked_dir, sh, Ctx, Journal, Ready, Undo};
use crate::experiment::plan::Target;
use anyhow::Result;
use std::collections::BTreeMap;

pub fn set_up(t: &Target, lower: &Ready, ctx: &Ctx, j: &mut Journal) -> Result<Ready> {
    let base = lower.dir.join(format!("fsbench-overlay-{}", t.name));
    make_marked_dir(&base, j)?;
    let (lo, up, wk) = (base.join("lower"), base.join("upper"), base.join("work"));
    for d in [&lo, &up, &wk] {
        std::fs::create_dir(d)?;
    }
    let mnt = mount_point(ctx, &t.name, j)?;
    let opts = format!(
        "lowerdir={},upperdir={},workdir={}",
        lo.display(),
        up.display(),
        wk.display()
    );
    sh(
        "mount",
        &[
            "-t",
            "overlay",
            "overlay",
            "-o",
            &opts,
            &mnt.to_string_lossy(),
        ],
    )?;
    j.push(Undo::Unmount(crate::disk::owned::MountRecord::capture(
        &mnt, None,
    )?))?;
    let mut applied = BTreeMap::new();
    applied.insert("over".into(), lower.name.clone().into());
    applied.insert("upper_on".into(), lower.dir.display().to_string().into());
    if let Some(s) = lower.applied.get("scheduler") {
        applied.insert("scheduler".into(), s.clone());
    }
    let mut mounts = lower.mounts.clone();
    mounts.push(super::MountSpec {
        fstype: "overlay".into(),
        source: "overlay".into(),
        mount_point: mnt.clone(),
        options: opts.clone(),
    });
    Ok(Ready {
        name: t.name.clone(),
        mounts,
        dir: mnt,
        device: lower.device.clone(),
        disk: lower.disk.clone(),
        applied,
    })
}
