//! A simulated disk carrying a file system, through `fsbench disk create` (a model server
//! under a loop device); removed with `fsbench disk remove`.

use super::{image::mount_point, Ctx, Journal, Ready, Undo};
use crate::experiment::plan::{Target, TargetKind};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::process::Command;

pub fn set_up(t: &Target, ctx: &Ctx, j: &mut Journal) -> Result<Ready> {
    let TargetKind::Disk {
        size,
        fs,
        model,
        params,
        mount_options,
    } = &t.kind
    else {
        unreachable!("disk target")
    };
    if !mount_options.is_empty() {
        bail!(
            "target {}: mount_options on a simulated disk: `fsbench disk create` mounts with defaults; remove mount_options or use an image target",
            t.name
        );
    }
    let images = ctx.outdir.join("images");
    std::fs::create_dir_all(&images)?;
    let img = images.join(format!("{}.img", t.name));
    let name = format!("fsbx-{}-{}", t.name, std::process::id());
    let mnt = mount_point(ctx, &t.name, j)?;
    let exe = crate::experiment::self_exe()?;
    let mut cmd = Command::new(exe);
    cmd.args(["disk", "create", &name, "--model", model])
        .arg("--size")
        .arg(size.to_string())
        .arg("--image")
        .arg(&img)
        .args(["--mkfs", fs])
        .arg("--mount")
        .arg(&mnt);
    for (k, v) in params {
        cmd.arg(format!("--{}", k.replace('_', "-"))).arg(v);
    }
    // Registered before it runs: a half-made disk is removed too.
    j.push(Undo::RemoveDisk {
        name: name.clone(),
        mount: mnt.clone(),
    })?;
    let out = cmd.output().context("running fsbench disk create")?;
    if !out.status.success() {
        bail!(
            "target {}: fsbench disk create failed: {}",
            t.name,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let dev = String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        l.split_whitespace()
            .find(|w| w.starts_with("/dev/loop"))
            .map(String::from)
    });
    let mut applied = BTreeMap::new();
    applied.insert("disk".into(), name.clone().into());
    applied.insert("disk_model".into(), model.clone().into());
    for (k, v) in params {
        applied.insert(format!("disk_{k}"), v.clone().into());
    }
    if let Some(d) = &dev {
        applied.insert("loop_device".into(), d.clone().into());
        applied.extend(super::image::fs_facts(fs, d));
    }
    let mounts = dev
        .iter()
        .map(|d| super::MountSpec {
            fstype: fs.clone(),
            source: d.clone(),
            mount_point: mnt.clone(),
            options: String::new(),
        })
        .collect();
    Ok(Ready {
        name: t.name.clone(),
        mounts,
        dir: mnt,
        device: dev,
        disk: Some(name),
        applied,
    })
}
