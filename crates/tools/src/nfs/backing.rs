//! The directory an NFS server exports, made by fsbench and undone by it: a fresh file system
//! on an image (`--image SIZE --mkfs FS`: a sparse image file, a loop device with autoclear,
//! mkfs, a mount on `STATE/mnt`) or a fresh marked directory inside a directory the user
//! names (`--dir DIR`: `DIR/fsbench-nfs-NAME/`, its marker beside the exported `export/`).
//! The user's directory itself is never exported, written or removed.
//!
//! Every step is recorded in the server's `config.json` as soon as it is done, with what
//! identifies its object (the image by device and inode, the loop device by its backing file,
//! the mount by its mountinfo entry, the directory by device and inode and its marker), and
//! undoing checks each again: what is not what fsbench made is reported and left alone.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::state::{
    BackingRecord, DirRecord, ImageRecord, NfsConfig, StateDir, MARKER, MARKER_HEADER,
};
use fsbench_base::daemon::owned::{self, Detach, FileId, MountRecord};

/// Where a new server's export lives.
#[derive(Debug, Clone)]
pub enum Backing {
    /// A new image of `size` bytes with a file system made by `mkfs.FS`.
    Image { size: u64, fs: String },
    /// A new marked directory inside this existing directory.
    Dir(PathBuf),
}

/// The record of `b` for server `name`, before anything is made, and the directory it will
/// export; refusals of what cannot be made come here, before anything exists.
pub fn plan(name: &str, b: &Backing, sd: &StateDir) -> Result<(BackingRecord, PathBuf)> {
    match b {
        Backing::Image { size, fs } => {
            if fs.is_empty() || !fs.bytes().all(|c| c.is_ascii_alphanumeric()) {
                return Err(fsbench_base::exit::usage(format!(
                    "--mkfs {fs:?}: give a file system type such as ext4 or xfs"
                )));
            }
            if *size < (16 << 20) || size % 4096 != 0 {
                return Err(fsbench_base::exit::usage(format!(
                    "--image {size}: an image is at least 16 MiB and a multiple of 4 KiB"
                )));
            }
            let image = crate::disk::state::image_root().join(format!("nfs-{name}.img"));
            if fs::symlink_metadata(&image).is_ok() {
                bail!(
                    "{} exists already; fsbench makes a new image and never reuses a file it did not make (remove it, or use another name)",
                    image.display()
                );
            }
            let rec = ImageRecord {
                image,
                size: *size,
                fs: fs.clone(),
                ..Default::default()
            };
            Ok((BackingRecord::Image(Box::new(rec)), sd.mnt().join("export")))
        }
        Backing::Dir(d) => plan_dir(name, d),
    }
}

fn plan_dir(name: &str, d: &Path) -> Result<(BackingRecord, PathBuf)> {
    fsbench_base::input::check_dir(d).with_context(|| format!("--dir {}", d.display()))?;
    let parent = d
        .canonicalize()
        .with_context(|| format!("--dir {}", d.display()))?;
    if !parent.is_dir() {
        return Err(fsbench_base::exit::usage(format!(
            "--dir {} is not a directory",
            d.display()
        )));
    }
    if let Some(kind) = fsbench_engine::engine::rundir::system_dir(&parent) {
        return Err(fsbench_base::exit::usage(format!(
            "--dir {}: {kind}; give a directory of your own (fsbench makes its export inside it)",
            parent.display()
        )));
    }
    let base = parent.join(format!("fsbench-nfs-{name}"));
    if fs::symlink_metadata(&base).is_ok() {
        bail!(
            "{} exists already; fsbench exports only a directory it makes now (remove it, or use another name)",
            base.display()
        );
    }
    let export = base.join("export");
    let rec = DirRecord {
        parent,
        base,
        base_id: None,
    };
    Ok((BackingRecord::Dir(rec), export))
}

/// Make what `c.backing` describes, recording each step in `sd`'s configuration.
pub fn set_up(sd: &StateDir, c: &mut NfsConfig) -> Result<()> {
    match c.backing.clone() {
        BackingRecord::Image(rec) => set_up_image(sd, c, *rec),
        BackingRecord::Dir(rec) => set_up_dir(sd, c, rec),
    }
}

fn set_up_dir(sd: &StateDir, c: &mut NfsConfig, mut rec: DirRecord) -> Result<()> {
    fs::DirBuilder::new()
        .mode(0o755)
        .create(&rec.base)
        .with_context(|| format!("creating {}", rec.base.display()))?;
    rec.base_id = Some(FileId::of_path(&rec.base)?);
    c.backing = BackingRecord::Dir(rec.clone());
    sd.write_config(c)?;
    let mut m = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(rec.base.join(MARKER))
        .with_context(|| format!("marking {}", rec.base.display()))?;
    writeln!(
        m,
        "{MARKER_HEADER} of `fsbench nfs create {}`: removed by `fsbench nfs remove {}`",
        c.name, c.name
    )?;
    fs::create_dir(&c.export).with_context(|| format!("creating {}", c.export.display()))
}

fn set_up_image(sd: &StateDir, c: &mut NfsConfig, mut rec: ImageRecord) -> Result<()> {
    if let Some(p) = rec.image.parent() {
        fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
    }
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&rec.image)
        .with_context(|| format!("creating image {}", rec.image.display()))?;
    rec.image_id = Some(FileId::of(&f.metadata()?));
    record(sd, c, &rec)?;
    f.set_len(rec.size)
        .with_context(|| format!("sizing image {}", rec.image.display()))?;
    fsbench_base::cancel::check()?;
    let lo = crate::disk::loopdev::attach(
        &f,
        crate::disk::loopdev::LO_FLAGS_AUTOCLEAR,
        &rec.image.to_string_lossy(),
    )
    .context("attaching the image to a loop device")?;
    let dev = lo.path();
    rec.loop_dev = Some(dev.clone());
    rec.loop_backing = owned::loop_backing(&dev)?;
    record(sd, c, &rec)?;
    let mut mkfs = Command::new(format!("mkfs.{}", rec.fs));
    mkfs.args(crate::disk::cli::mkfs_args(&rec.fs)).arg(&dev);
    run(&mut mkfs)?;
    fsbench_base::cancel::check()?;
    fs::create_dir(sd.mnt()).with_context(|| format!("creating {}", sd.mnt().display()))?;
    run(Command::new("mount")
        .args(["-t", &rec.fs])
        .arg(&dev)
        .arg(sd.mnt()))?;
    rec.mount = Some(MountRecord::capture(&sd.mnt(), rec.loop_backing)?);
    record(sd, c, &rec)?;
    drop(lo);
    fs::create_dir(&c.export).with_context(|| format!("creating {}", c.export.display()))
}

fn record(sd: &StateDir, c: &mut NfsConfig, rec: &ImageRecord) -> Result<()> {
    c.backing = BackingRecord::Image(Box::new(rec.clone()));
    sd.write_config(c)
}

/// Run a program to its end as a child that gets this command's signals passed on.
fn run(cmd: &mut Command) -> Result<()> {
    let out = fsbench_base::created::output(cmd).with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        fsbench_base::cancel::check()?;
        bail!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// What undoing did, and what it left alone (with why).
#[derive(Debug, Default)]
pub struct Undone {
    pub done: Vec<String>,
    pub left: Vec<String>,
}

/// Before anything is stopped: an error when the image's file system fsbench mounted is
/// still there under a mount stacked on it since (see [`owned::refuse_buried`]).
pub fn refuse_buried(c: &NfsConfig) -> Result<()> {
    if let BackingRecord::Image(rec) = &c.backing {
        if let Some(m) = &rec.mount {
            owned::refuse_buried(m, "nfs", &c.name)?;
        }
    }
    Ok(())
}

/// Undo what `c.backing` records, checking each object first.
pub fn tear_down(c: &NfsConfig, u: &mut Undone) {
    match &c.backing {
        BackingRecord::Image(rec) => tear_down_image(rec, u),
        BackingRecord::Dir(rec) => tear_down_dir(rec, u),
    }
}

fn tear_down_image(rec: &ImageRecord, u: &mut Undone) {
    let mut still_mounted = false;
    if let Some(m) = &rec.mount {
        match m.unmount_even_busy() {
            Ok(Some(what)) => u.done.push(what),
            Ok(None) => {}
            Err(e) => {
                still_mounted = m.state() == owned::MountState::Ours;
                u.left.push(format!("{e:#}"));
            }
        }
    }
    if let (Some(dev), Some(b)) = (&rec.loop_dev, rec.loop_backing) {
        detach(dev, b, u);
    }
    let Some(id) = rec.image_id else { return };
    if still_mounted {
        u.left.push(format!(
            "kept {}: its file system is still mounted",
            rec.image.display()
        ));
        return;
    }
    match FileId::of_path(&rec.image) {
        Ok(have) if have == id => match fsbench_base::owned::path::remove_file(&rec.image) {
            Ok(_) => u.done.push(format!("deleted image {}", rec.image.display())),
            Err(e) => u.left.push(format!("deleting {}: {e}", rec.image.display())),
        },
        Ok(have) => u.left.push(format!(
            "not deleting {}: it is another file now ({have}, not {id} that fsbench made); left alone",
            rec.image.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => u.left.push(format!("checking {}: {e}", rec.image.display())),
    }
}

/// Detach the loop device while the image fsbench attached backs it. With autoclear the
/// kernel detaches it by itself once unmounted, a moment later: an error meanwhile is tried
/// again for a second.
fn detach(dev: &str, backing: FileId, u: &mut Undone) {
    for attempt in 0.. {
        match owned::detach_if_backed_by(dev, backing) {
            Ok(Detach::Detached) => return u.done.push(format!("detached {dev}")),
            Ok(Detach::Gone) => return,
            Ok(Detach::Foreign(have)) => {
                return u.left.push(format!(
                    "not detaching {dev}: another file backs it now ({have}, not {backing}); left alone"
                ))
            }
            Err(e) if attempt >= 20 => return u.left.push(format!("detaching {dev}: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn tear_down_dir(rec: &DirRecord, u: &mut Undone) {
    let Some(id) = rec.base_id else { return };
    match FileId::of_path(&rec.base) {
        Ok(have) if have == id => {}
        Ok(have) => {
            return u.left.push(format!(
                "not removing {}: it is another directory now ({have}, not {id} that fsbench made); left alone",
                rec.base.display()
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => return u.left.push(format!("checking {}: {e}", rec.base.display())),
    }
    match remove_marked(rec) {
        Ok(()) => u.done.push(format!("removed {}", rec.base.display())),
        Err(e) => u.left.push(format!("{e:#}")),
    }
}

/// Remove `rec.base` when it is fsbench's marked directory (or still empty, made a moment
/// before its marker) with no mount inside; the user's directory around it stays.
fn remove_marked(rec: &DirRecord) -> Result<()> {
    let name = fsbench_base::beneath::component(rec.base.file_name().context("no name")?)?;
    let parent =
        fs::File::open(&rec.parent).with_context(|| format!("opening {}", rec.parent.display()))?;
    let d = fsbench_base::beneath::open_dir(parent.as_raw_fd(), &name)
        .with_context(|| format!("not removing {}", rec.base.display()))?;
    match fsbench_base::owned::trust::check_marked(d.as_raw_fd(), MARKER, MARKER_HEADER) {
        Ok(()) => {}
        Err(_) if fsbench_base::beneath::list_names(d.as_raw_fd())?.is_empty() => {
            drop(d);
            return fsbench_base::owned::path::remove_empty_dir(&rec.base)
                .with_context(|| format!("removing {}", rec.base.display()));
        }
        Err(why) => bail!("not removing {}: {why}; left alone", rec.base.display()),
    }
    let mounted = owned::mounts_under(&rec.base);
    if !mounted.is_empty() {
        bail!(
            "not removing {}: {} is mounted inside it; left alone",
            rec.base.display(),
            mounted
                .iter()
                .map(|m| m.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    drop(d);
    fsbench_base::owned::path::remove_tree(&rec.base)
        .with_context(|| format!("removing {}", rec.base.display()))
}
