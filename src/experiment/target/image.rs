//! A loop-mounted image: a sparse file under OUTDIR/images, `mkfs`, a loop device, a mount
//! under OUTDIR/mnt. Torn down in reverse: unmount, detach, remove.

use super::{sh, Ctx, Journal, Ready, Undo};
use crate::experiment::plan::{Target, TargetKind};
use anyhow::{Context, Result};
use fsbench_base::daemon::owned::{FileId, MountRecord};
use std::collections::BTreeMap;
use std::path::Path;

/// `mkfs.TYPE` arguments that make it quiet and overwrite without asking.
pub fn mkfs_force(fs: &str) -> &'static [&'static str] {
    match fs {
        "ext4" => &["-q", "-F"],
        "xfs" => &["-q", "-f"],
        "btrfs" => &["-q", "-f"],
        _ => &[],
    }
}

/// Make the mount point OUTDIR/mnt/NAME (registered for removal).
pub fn mount_point(ctx: &Ctx, name: &str, j: &mut Journal) -> Result<std::path::PathBuf> {
    let mnt_root = ctx.outdir.join("mnt");
    std::fs::create_dir_all(&mnt_root)?;
    let mnt = mnt_root.join(name);
    super::create_dir(&mnt, j)?;
    Ok(mnt.canonicalize()?)
}

pub fn set_up(t: &Target, ctx: &Ctx, j: &mut Journal) -> Result<Ready> {
    let TargetKind::Image {
        size,
        fs,
        mkfs_options,
        mount_options,
    } = &t.kind
    else {
        unreachable!("image target")
    };
    let images = ctx.outdir.join("images");
    std::fs::create_dir_all(&images)?;
    let img = images.join(format!("{}.img", t.name));
    let f = super::create_file(&img, j)?;
    f.set_len(*size)
        .with_context(|| format!("sizing {} to {size} bytes", img.display()))?;
    let (dev, backing, direct_io) = attach_loop(&f, &img, j)?;
    drop(f);
    // Checked when the plan was read; again here, right before they reach mkfs.
    crate::experiment::options::check_mkfs(fs, mkfs_options)
        .map_err(|(i, why)| anyhow::anyhow!("target {}: mkfs_options[{i}]: {why}", t.name))?;
    crate::experiment::options::check_mount(mount_options)
        .map_err(|why| anyhow::anyhow!("target {}: mount_options: {why}", t.name))?;
    let mkfs = format!("mkfs.{fs}");
    let mut args: Vec<&str> = mkfs_force(fs).to_vec();
    args.extend(mkfs_options.iter().map(|s| s.as_str()));
    args.push(&dev);
    sh(&mkfs, &args).with_context(|| format!("target {}: making the file system", t.name))?;
    let mnt = mount_point(ctx, &t.name, j)?;
    mount(fs, &dev, &mnt, mount_options)?;
    j.push(Undo::Unmount(MountRecord::capture(&mnt, Some(backing))?))?;
    let mut applied = BTreeMap::new();
    applied.insert("image".into(), img.display().to_string().into());
    applied.insert("image_bytes".into(), (*size).into());
    applied.insert("loop_device".into(), dev.clone().into());
    // Read back from sysfs: a backing file system without O_DIRECT (tmpfs) leaves it off.
    applied.insert("loop_direct_io".into(), direct_io.into());
    applied.insert(
        "mkfs".into(),
        format!("{mkfs} {}", args[..args.len() - 1].join(" ")).into(),
    );
    applied.extend(fs_facts(fs, &dev));
    Ok(Ready {
        name: t.name.clone(),
        mounts: vec![super::MountSpec {
            fstype: fs.clone(),
            source: dev.clone(),
            mount_point: mnt.clone(),
            options: mount_options.clone(),
        }],
        dir: mnt,
        device: Some(dev),
        disk: None,
        applied,
        pending: None,
    })
}

/// Attach `f` (the image `img`) to a free loop device, registering its detachment with the
/// identity of the image, which is checked again before the device is ever detached.
///
/// The loop device does direct I/O on its backing file (as `losetup --direct-io=on`), so
/// what the image's file system reads reaches the host's disk instead of the host's page
/// cache of the image file: a cold cell's reads are the device's, not the cache's. Returns
/// the device, the image's identity and whether the kernel kept direct I/O on.
pub fn attach_loop(
    f: &std::fs::File,
    img: &Path,
    j: &mut Journal,
) -> Result<(String, FileId, bool)> {
    let backing = FileId::of(&f.metadata()?);
    let lo = fsbench_tools::disk::loopdev::attach(
        f,
        fsbench_tools::disk::loopdev::LO_FLAGS_DIRECT_IO,
        &img.to_string_lossy(),
    )
    .with_context(|| format!("attaching {} to a loop device", img.display()))?;
    let direct_io = lo.direct_io();
    let dev = lo.path();
    j.push(Undo::DetachLoop {
        dev: dev.clone(),
        backing,
        found: lo.found.clone(),
    })?;
    let seen = fsbench_base::daemon::owned::loop_backing(&dev)
        .with_context(|| format!("reading back {dev}"))?;
    if seen != Some(backing) {
        anyhow::bail!(
            "{dev} reports its backing file as {seen:?}, not {} ({backing})",
            img.display()
        );
    }
    Ok((dev, backing, direct_io))
}

pub fn mount(fs: &str, dev: &str, mnt: &Path, options: &str) -> Result<()> {
    let m = mnt.to_string_lossy();
    let mut args = vec!["-t", fs];
    if !options.is_empty() {
        args.extend(["-o", options]);
    }
    args.extend([dev, &m]);
    sh("mount", &args).map(|_| ())
}

/// Facts the file system's own tools report (ext4 features and block size), where the tool
/// is there.
pub fn fs_facts(fs: &str, dev: &str) -> BTreeMap<String, serde_json::Value> {
    let mut out = BTreeMap::new();
    if fs == "ext4" {
        if let Ok(text) = sh("dumpe2fs", &["-h", dev]) {
            for line in text.lines() {
                for key in [
                    "Filesystem features",
                    "Block size",
                    "Inode size",
                    "Journal size",
                ] {
                    if let Some(v) = line
                        .strip_prefix(key)
                        .and_then(|r| r.trim_start().strip_prefix(':'))
                    {
                        out.insert(
                            format!("ext4 {}", key.to_lowercase()),
                            v.trim().to_string().into(),
                        );
                    }
                }
            }
        }
    }
    out
}
