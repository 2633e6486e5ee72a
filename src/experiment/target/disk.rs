//! A simulated disk carrying a file system: `fsbench disk create` (a model server under a
//! loop device), then `mkfs` and the mount made here, with the plan's `mkfs_options` and
//! `mount_options` (checked as an image's are); removed with `fsbench disk remove` after the
//! unmount.
//!
//! A target aged at set-up is aged before the model serves it: the image is made, loop
//! mounted plainly and aged there, unmounted, and only then served by the disk model and
//! mounted from its device. Aging writes each block back in operation order (`--writeback
//! range`), so the layout it leaves is a function of seed, profile and file system, not of
//! the device's speed; through the model of a 1997 disk it ran at 53 operations a second
//! (seven hours for the published 1.3 million), on the plain image at 3,800.

use super::{image::mount_point, Ctx, Journal, Ready, Undo};
use crate::experiment::plan::{Target, TargetKind};
use anyhow::{bail, Context, Result};
use fsbench_base::daemon::owned::MountRecord;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The arguments of `mkfs.FS` on a simulated disk, before the device: `fsbench disk
/// create`'s own (quiet, forced, ext4's inode tables and journal initialised now so no
/// lazy-init thread writes to the simulated disk during measurements), then the plan's. A
/// plan's `-E` value joins the lazy-init one (mke2fs keeps only its last `-E`).
pub fn mkfs_argv(fs: &str, options: &[String]) -> Vec<String> {
    let mut argv: Vec<String> = fsbench_tools::disk::cli::mkfs_args(fs)
        .iter()
        .map(|s| s.to_string())
        .collect();
    let base_e = argv.iter().position(|a| a == "-E").map(|i| i + 1);
    let mut i = 0;
    while i < options.len() {
        let o = &options[i];
        let extended = match (o.as_str(), o.strip_prefix("-E")) {
            ("-E", _) => {
                i += 1;
                options.get(i).cloned()
            }
            (_, Some(v)) if !v.is_empty() => Some(v.to_string()),
            _ => None,
        };
        match (extended, base_e) {
            (Some(v), Some(at)) => argv[at] = format!("{},{v}", argv[at]),
            (Some(v), None) => argv.extend(["-E".to_string(), v]),
            (None, _) => argv.push(o.clone()),
        }
        i += 1;
    }
    argv
}

pub fn set_up(t: &Target, ctx: &Ctx, j: &mut Journal) -> Result<Ready> {
    let TargetKind::Disk {
        fs,
        model,
        params,
        mkfs_options,
        mount_options,
        ..
    } = &t.kind
    else {
        unreachable!("disk target")
    };
    // Checked when the plan was read; again here, right before they reach mkfs and mount.
    crate::experiment::options::check_mkfs(fs, mkfs_options)
        .map_err(|(i, why)| anyhow::anyhow!("target {}: mkfs_options[{i}]: {why}", t.name))?;
    crate::experiment::options::check_mount(mount_options)
        .map_err(|why| anyhow::anyhow!("target {}: mount_options: {why}", t.name))?;
    let images = ctx.outdir.join("images");
    std::fs::create_dir_all(&images)?;
    let img = images.join(format!("{}.img", t.name));
    let name = format!("fsbx-{}-{}", t.name, std::process::id());
    let mnt = mount_point(ctx, &t.name, j)?;
    let argv = mkfs_argv(fs, mkfs_options);
    let aged = match &t.age {
        Some(a) => Some(aged_image(t, a, ctx, &img, &mnt, &argv, j)?),
        None => None,
    };
    // Registered before it runs: a half-made disk is removed too.
    j.push(Undo::RemoveDisk {
        name: name.clone(),
        mount: mnt.clone(),
    })?;
    let dev = create(t, &name, &img)?;
    if aged.is_none() {
        let mut args: Vec<&str> = argv.iter().map(String::as_str).collect();
        args.push(&dev);
        super::sh(&format!("mkfs.{fs}"), &args)
            .with_context(|| format!("target {}: making the file system", t.name))?;
    }
    super::image::mount(fs, &dev, &mnt, mount_options)?;
    // Registered after the disk's removal: undone first, so the disk is removed unmounted.
    let backing = fsbench_base::daemon::owned::loop_backing(&dev)
        .with_context(|| format!("reading back {dev}"))?;
    j.push(Undo::Unmount(MountRecord::capture(&mnt, backing)?))?;
    let mut applied = BTreeMap::new();
    applied.insert("disk".into(), name.clone().into());
    applied.insert("disk_model".into(), model.clone().into());
    for (k, v) in params {
        applied.insert(format!("disk_{k}"), v.clone().into());
    }
    applied.insert("loop_device".into(), dev.clone().into());
    applied.insert(
        "mkfs".into(),
        format!("mkfs.{fs} {}", argv.join(" ")).into(),
    );
    applied.extend(super::image::fs_facts(fs, &dev));
    if let Some(facts) = aged {
        applied.insert("age".into(), serde_json::Value::Object(facts));
    }
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
        disk: Some(name),
        applied,
        pending: None,
    })
}

/// Target `t`'s aged image `img`: started from the copy an interrupted run kept when
/// resuming (and there is a usable one), aged otherwise, and then kept (see
/// [`keeps_aged`]); the aging's facts.
fn aged_image(
    t: &Target,
    a: &crate::experiment::plan::Age,
    ctx: &Ctx,
    img: &Path,
    mnt: &Path,
    argv: &[String],
    j: &mut Journal,
) -> Result<serde_json::Map<String, serde_json::Value>> {
    let keep = keeps_aged(ctx.plan, a);
    let hash = ctx.plan.hash();
    if keep && ctx.reuse_aged {
        match super::kept::usable(ctx.outdir, &hash, &t.name) {
            Some(Ok(_)) => {
                let facts = super::kept::take(ctx.outdir, &hash, &t.name, img, j)
                    .with_context(|| format!("target {}: the kept aged image", t.name))?;
                fsbench_base::errln!(
                    "fsbench: target {}: starting from the aged image kept in {} (not aged again)",
                    t.name,
                    ctx.outdir.join(super::kept::DIR).display()
                );
                return Ok(facts);
            }
            Some(Err(why)) => fsbench_base::errln!(
                "fsbench: target {}: aging again, the kept image is not usable: {why}",
                t.name
            ),
            None => {}
        }
    }
    let facts = age_on_image(t, a, ctx, img, mnt, argv, j)?;
    // An aging cut short by an interruption fails above; kept only what aged whole.
    if keep && !fsbench_base::cancel::interrupted() {
        super::kept::keep(ctx.outdir, &hash, &t.name, img, &facts);
    }
    Ok(facts)
}

/// Whether a disk target aged with `a` keeps its aged image for `--resume`: aged once per
/// target (one aged per repetition has been through more than one aging), on targets set up
/// once (`fresh = "repetition"` makes every round's targets anew, aging included).
pub fn keeps_aged(plan: &crate::experiment::plan::Plan, a: &crate::experiment::plan::Age) -> bool {
    a.per == crate::experiment::plan::AgePer::Target
        && plan.fresh != crate::experiment::plan::Fresh::Repetition
}

/// Make `img` (registered for removal: the disk keeps an image it did not create), make the
/// file system on it through a plain loop device, mount it at `mnt`, age it with `a`, and
/// unmount and detach it again; the aging's facts.
fn age_on_image(
    t: &Target,
    a: &crate::experiment::plan::Age,
    ctx: &Ctx,
    img: &Path,
    mnt: &Path,
    argv: &[String],
    j: &mut Journal,
) -> Result<serde_json::Map<String, serde_json::Value>> {
    let TargetKind::Disk {
        fs,
        size,
        mount_options,
        ..
    } = &t.kind
    else {
        unreachable!("disk target")
    };
    let f = super::create_file(img, j)?;
    f.set_len(*size)
        .with_context(|| format!("sizing {} to {size} bytes", img.display()))?;
    let mark = j.len();
    let (dev, backing, _) = super::image::attach_loop(&f, img, j)?;
    drop(f);
    let mut args: Vec<&str> = argv.iter().map(String::as_str).collect();
    args.push(&dev);
    super::sh(&format!("mkfs.{fs}"), &args)
        .with_context(|| format!("target {}: making the file system", t.name))?;
    let aging_options = super::age::aging_mount_options(fs, mount_options);
    super::image::mount(fs, &dev, mnt, &aging_options)?;
    j.push(Undo::Unmount(MountRecord::capture(mnt, Some(backing))?))?;
    fsbench_base::errln!(
        "fsbench: aging target {} on its image before the disk model serves it: {}",
        t.name,
        a.describe()
    );
    let mut facts =
        super::age::age_dir(a, mnt, &t.name, ctx.outdir, &format!("g{}", ctx.generation))
            .with_context(|| format!("target {}", t.name))?;
    facts.insert(
        "aged_on".into(),
        "the plain image, before the disk model served it".into(),
    );
    if fs == "ext4" {
        facts.insert("journal_commit_s".into(), super::age::AGING_COMMIT_S.into());
    }
    // Unmounted and detached now: the disk model serves the image from here on.
    j.settle_to(mark)
        .with_context(|| format!("target {}: unmounting the aged image", t.name))?;
    Ok(facts)
}

/// `fsbench disk create NAME` of target `t`'s model and size on `img`; its loop device.
fn create(t: &Target, name: &str, img: &Path) -> Result<String> {
    let TargetKind::Disk {
        size,
        model,
        params,
        ..
    } = &t.kind
    else {
        unreachable!("disk target")
    };
    let exe = crate::experiment::self_exe()?;
    let mut cmd = Command::new(exe);
    cmd.args(["disk", "create", name, "--model", model])
        .arg("--size")
        .arg(size.to_string())
        .arg("--image")
        .arg(img);
    for (k, v) in params {
        cmd.arg(format!("--{}", k.replace('_', "-"))).arg(v);
    }
    let out = cmd.output().context("running fsbench disk create")?;
    if !out.status.success() {
        bail!(
            "target {}: fsbench disk create failed: {}",
            t.name,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("/dev/loop"))
                .map(|w| w.trim_end_matches([',', ':']).to_string())
        })
        .with_context(|| {
            format!(
                "target {}: fsbench disk create printed no loop device",
                t.name
            )
        })
}

#[cfg(test)]
mod tests {
    use super::mkfs_argv;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_plans_extended_options_join_the_lazy_init_ones() {
        assert_eq!(
            mkfs_argv("ext4", &v(&["-O", "^has_journal", "-E", "stride=4"])),
            v(&[
                "-q",
                "-F",
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0,stride=4",
                "-O",
                "^has_journal"
            ])
        );
        assert_eq!(
            mkfs_argv("ext4", &v(&["-Estride=4", "-b", "4096"]))[3],
            "lazy_itable_init=0,lazy_journal_init=0,stride=4"
        );
        assert_eq!(
            mkfs_argv("xfs", &v(&["-m", "crc=1"])),
            v(&["-q", "-f", "-m", "crc=1"])
        );
    }
}
