//! Aged images kept for `--resume`. Aging a simulated disk's file system to the published
//! size takes longer than most of the runs that follow it (the aging plan: 1.3 million
//! operations a target), and its result is a function of the plan alone (seed, profile,
//! file system; writeback in operation order). So once a disk target aged once per target
//! (`per = "target"`) has been aged and unmounted, a copy of its image is kept in
//! OUTDIR/aged (NAME.img, and NAME.json: the plan it was aged for, the copy's identity and
//! the aging's facts). An interrupted experiment leaves the copies there; `--resume` starts
//! each such target from its copy instead of aging it again; an experiment that finishes
//! removes them. Nothing else is ever taken from OUTDIR/aged: a copy is used only while it is
//! the very file fsbench wrote (inode and birth time, owned by this user, one link, not a
//! link itself) for the same plan and target.

use super::journal::{create_file, remove_owned_file};
use super::Journal;
use anyhow::{bail, Context, Result};
use fsbench_base::daemon::owned::FileId;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The directory under OUTDIR holding the copies.
pub const DIR: &str = "aged";

/// This fsbench, as a kept copy records its ager.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("FSBENCH_GIT_COMMIT"),
    ")"
);

/// What is recorded beside a kept copy.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// The plan's hash (its text and scale): a copy serves only the plan it was aged for.
    plan_hash: String,
    target: String,
    /// The copy's identity when created.
    image: FileId,
    /// Its length in bytes.
    size: u64,
    /// Whether the copy was written whole and synced (a record is written before the copy,
    /// so an interrupted copy is still known as fsbench's and removed). Records without it
    /// were written only after their copy was whole.
    #[serde(default = "whole")]
    complete: bool,
    /// The fsbench that aged it.
    fsbench: String,
    /// The aging's facts, as the target recorded them.
    facts: Map<String, Value>,
}

fn whole() -> bool {
    true
}

/// The most a record may hold.
const RECORD_MAX: u64 = 1 << 20;

fn paths(outdir: &Path, target: &str) -> (PathBuf, PathBuf) {
    let d = outdir.join(DIR);
    (
        d.join(format!("{target}.img")),
        d.join(format!("{target}.json")),
    )
}

/// Why the open file `f` (at `p`, not followed) is not a plain file of this user's with one
/// link (the owned layer's rule): `None` when it is.
fn not_plain_own(p: &Path, f: &std::fs::File) -> Option<String> {
    match fsbench_base::beneath::fstat(f.as_raw_fd()) {
        Ok(st) => fsbench_base::owned::check_own(&st)
            .err()
            .map(|why| format!("{}: {why}", p.display())),
        Err(e) => Some(format!("{}: {e}", p.display())),
    }
}

/// OUTDIR/aged, when it is there and may be trusted as fsbench's: a directory (not a link)
/// of this user's that no one else may write to.
fn trusted_dir(outdir: &Path) -> Result<Option<PathBuf>> {
    let d = outdir.join(DIR);
    let c = std::ffi::CString::new(d.as_os_str().as_encoded_bytes())
        .with_context(|| format!("{} holds a NUL", d.display()))?;
    let st = match fsbench_base::beneath::lstat_at(libc::AT_FDCWD, &c) {
        Ok(st) => st,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", d.display())),
    };
    if let Some(why) = fsbench_base::owned::trust::untrusted_dir(&st) {
        bail!("{} is left alone: {why}", d.display());
    }
    Ok(Some(d))
}

/// Open `p` without following a link or waiting on a FIFO; with its metadata.
fn open_plain(p: &Path) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(p)?;
    let md = f.metadata()?;
    Ok((f, md))
}

/// Target `target`'s record, when it is a plain file of this user's naming that target.
fn read_record(json: &Path, target: &str) -> Result<(Record, FileId)> {
    use std::io::Read;
    let (f, md) = open_plain(json).with_context(|| format!("opening {}", json.display()))?;
    if let Some(why) = not_plain_own(json, &f) {
        bail!("{why}");
    }
    let mut text = String::new();
    f.take(RECORD_MAX)
        .read_to_string(&mut text)
        .with_context(|| format!("reading {}", json.display()))?;
    let r: Record = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a kept-image record", json.display()))?;
    if r.target != target {
        bail!("{} names target {}, not {target}", json.display(), r.target);
    }
    Ok((r, FileId::of(&md)))
}

/// The same file: by inode and birth time where both are known (a device number may change
/// across a reboot or a move), else by device and inode.
fn same_file(a: &FileId, b: &FileId) -> bool {
    match (a.born, b.born) {
        (Some(x), Some(y)) => a.ino == b.ino && x == y,
        _ => a == b,
    }
}

/// Why the open copy `f` (with metadata `md`) of `img` is not the one `r` records (`None`
/// when it is).
fn not_recorded(
    img: &Path,
    (f, md): (&std::fs::File, &std::fs::Metadata),
    r: &Record,
    whole: bool,
) -> Option<String> {
    if let Some(why) = not_plain_own(img, f) {
        return Some(why);
    }
    if !same_file(&FileId::of(md), &r.image) {
        return Some(format!(
            "{} is not the file fsbench kept there (replaced since)",
            img.display()
        ));
    }
    if whole && (!r.complete || md.len() != r.size) {
        return Some(format!(
            "{} was not copied whole (the copy was interrupted)",
            img.display()
        ));
    }
    None
}

/// The facts of target `target`'s kept aging for `plan_hash`, when a whole copy usable for
/// it is there; otherwise why not (`None` when there is no record at all).
pub fn usable(
    outdir: &Path,
    plan_hash: &str,
    target: &str,
) -> Option<Result<Map<String, Value>, String>> {
    let (img, json) = paths(outdir, target);
    match trusted_dir(outdir) {
        Ok(Some(_)) => {}
        Ok(None) => return None,
        Err(e) => return Some(Err(format!("{e:#}"))),
    }
    if std::fs::symlink_metadata(&json).is_err() {
        return None;
    }
    Some(checked(&img, &json, plan_hash, target).map(|(_, r)| r.facts))
}

/// The copy, opened and checked against its record.
fn checked(
    img: &Path,
    json: &Path,
    plan_hash: &str,
    target: &str,
) -> Result<(std::fs::File, Record), String> {
    let (r, _) = read_record(json, target).map_err(|e| format!("{e:#}"))?;
    if r.plan_hash != plan_hash {
        return Err(format!("{} was aged for another plan", img.display()));
    }
    let (f, md) = open_plain(img).map_err(|e| format!("opening {}: {e}", img.display()))?;
    match not_recorded(img, (&f, &md), &r, true) {
        Some(why) => Err(why),
        None => Ok((f, r)),
    }
}

/// Start target `target`'s image `img` (created here, registered for removal in `j`) from
/// its kept copy; the aging's facts. Errors when there is no usable copy.
pub fn take(
    outdir: &Path,
    plan_hash: &str,
    target: &str,
    img: &Path,
    j: &mut Journal,
) -> Result<Map<String, Value>> {
    trusted_dir(outdir)?.with_context(|| format!("no aged image is kept for target {target}"))?;
    let (kept, json) = paths(outdir, target);
    let (src, r) = checked(&kept, &json, plan_hash, target).map_err(|why| anyhow::anyhow!(why))?;
    let dst = create_file(img, j)?;
    copy_sparse(&src, &dst, r.size)
        .with_context(|| format!("copying {} to {}", kept.display(), img.display()))?;
    dst.sync_all()?;
    if r.fsbench != VERSION {
        fsbench_base::errln!(
            "fsbench: note: target {target}'s kept image was aged by fsbench {} (this is {})",
            r.fsbench,
            VERSION
        );
    }
    let mut facts = r.facts;
    facts.insert(
        "resumed_from".into(),
        format!(
            "{}, kept when the target was aged before the interruption",
            kept.display()
        )
        .into(),
    );
    Ok(facts)
}

/// Keep a copy of target `target`'s aged image `img` (unmounted, detached) with its
/// `facts`, unless one usable for this plan is kept already (aging is a function of the
/// plan). Best effort: a copy that cannot be made is said and left out (what was made of it
/// removed), and the experiment goes on.
pub fn keep(outdir: &Path, plan_hash: &str, target: &str, img: &Path, facts: &Map<String, Value>) {
    if let Err(e) = try_keep(outdir, plan_hash, target, img, facts) {
        fsbench_base::errln!(
            "fsbench: warning: target {target}: no copy of the aged image kept for --resume: {e:#}"
        );
    }
}

fn try_keep(
    outdir: &Path,
    plan_hash: &str,
    target: &str,
    img: &Path,
    facts: &Map<String, Value>,
) -> Result<()> {
    if matches!(usable(outdir, plan_hash, target), Some(Ok(_))) {
        return Ok(());
    }
    if trusted_dir(outdir)?.is_none() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(outdir.join(DIR))
            .with_context(|| format!("creating {}", outdir.join(DIR).display()))?;
        trusted_dir(outdir)?;
    }
    let (kept, json) = paths(outdir, target);
    discard(outdir, target)?;
    if std::fs::symlink_metadata(&json).is_ok() || std::fs::symlink_metadata(&kept).is_ok() {
        bail!(
            "{} or {} is there and is not a copy fsbench recorded",
            kept.display(),
            json.display()
        );
    }
    let src = std::fs::File::open(img).with_context(|| format!("opening {}", img.display()))?;
    let size = src.metadata()?.len();
    let dst = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&kept)
            .with_context(|| format!("creating {}", kept.display()))?
    };
    let mut r = Record {
        plan_hash: plan_hash.to_string(),
        target: target.to_string(),
        image: FileId::of(&dst.metadata()?),
        size,
        complete: false,
        fsbench: VERSION.to_string(),
        facts: facts.clone(),
    };
    // Recorded before it is written: an interrupted copy is still known as fsbench's.
    let copied = write_record(&json, &r)
        .and_then(|()| {
            copy_sparse(&src, &dst, size)
                .with_context(|| format!("copying {} to {}", img.display(), kept.display()))
        })
        .and_then(|()| dst.sync_all().map_err(Into::into))
        .and_then(|()| {
            r.complete = true;
            write_record(&json, &r)
        });
    if copied.is_err() {
        let _ = discard(outdir, target);
    }
    copied
}

/// Write `r` as `json` and sync it.
fn write_record(json: &Path, r: &Record) -> Result<()> {
    fsbench_base::owned::path::write_atomic(json, serde_json::to_string_pretty(r)?.as_bytes())
        .with_context(|| format!("writing {}", json.display()))?;
    open_plain(json)?.0.sync_all()?;
    Ok(())
}

/// Remove target `target`'s kept copy and its record, each only while it is the file fsbench
/// wrote (the record a plain file of this user's naming the target, the copy the file it
/// records); what is not is left, and said.
pub fn discard(outdir: &Path, target: &str) -> Result<()> {
    if trusted_dir(outdir)?.is_none() {
        return Ok(());
    }
    let (img, json) = paths(outdir, target);
    if std::fs::symlink_metadata(&json).is_err() {
        return Ok(());
    }
    let (r, rid) = match read_record(&json, target) {
        Ok(x) => x,
        Err(e) => {
            fsbench_base::errln!(
                "fsbench: left {} and {}: {e:#}",
                json.display(),
                img.display()
            );
            return Ok(());
        }
    };
    match open_plain(&img) {
        Ok((f, md)) => match not_recorded(&img, (&f, &md), &r, false) {
            None => remove_owned_file(&img, FileId::of(&md))?,
            Some(why) => fsbench_base::errln!("fsbench: left {}: {why}", img.display()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => fsbench_base::errln!("fsbench: left {}: {e}", img.display()),
    }
    remove_owned_file(&json, rid)
}

/// Remove every kept copy (an experiment that finished needs none), and the directory once
/// empty.
pub fn discard_all(outdir: &Path) -> Result<()> {
    let Some(d) = trusted_dir(outdir)? else {
        return Ok(());
    };
    for target in names(outdir) {
        discard(outdir, &target)?;
    }
    let _ = fsbench_base::owned::path::remove_empty_dir(&d);
    Ok(())
}

/// "the aged images of A, B kept in OUTDIR/aged", when any are.
pub fn described(outdir: &Path) -> Option<String> {
    let kept = names(outdir);
    (!kept.is_empty()).then(|| {
        format!(
            "the aged images of {} kept in {}",
            kept.join(", "),
            outdir.join(DIR).display()
        )
    })
}

/// The targets with a record of fsbench's in OUTDIR/aged, by name.
pub fn names(outdir: &Path) -> Vec<String> {
    let Ok(Some(d)) = trusted_dir(outdir) else {
        return Vec::new();
    };
    let mut v: Vec<String> = std::fs::read_dir(&d)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    let t = n.strip_suffix(".json")?.to_string();
                    read_record(&e.path(), &t).ok().map(|_| t)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Copy the first `len` bytes of `src` to `dst` (empty, same length afterwards), leaving
/// holes where `src` has them.
fn copy_sparse(src: &std::fs::File, dst: &std::fs::File, len: u64) -> Result<()> {
    dst.set_len(len)?;
    let (s, d) = (src.as_raw_fd(), dst.as_raw_fd());
    let mut at: i64 = 0;
    while (at as u64) < len {
        // SAFETY: plain lseek on an open descriptor.
        let data = unsafe { libc::lseek(s, at, libc::SEEK_DATA) };
        if data < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENXIO) {
                break; // holes to the end
            }
            return Err(e.into());
        }
        let hole = unsafe { libc::lseek(s, data, libc::SEEK_HOLE) };
        if hole < 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        let end = (hole as u64).min(len) as i64;
        let (mut off_in, mut off_out) = (data, data);
        while off_in < end {
            // SAFETY: both descriptors open; offsets passed by pointer are ours.
            let n = unsafe {
                libc::copy_file_range(s, &mut off_in, d, &mut off_out, (end - off_in) as usize, 0)
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EXDEV | libc::EINVAL | libc::EOPNOTSUPP | libc::ENOSYS) => {
                        copy_plain(src, dst, off_in as u64, end as u64)?;
                        break;
                    }
                    _ => return Err(e.into()),
                }
            }
            if n == 0 {
                bail!("the source ended at {off_in} bytes, before {len}");
            }
        }
        at = end;
    }
    Ok(())
}

/// Copy bytes `from..to` of `src` to the same place in `dst` by reading and writing.
fn copy_plain(src: &std::fs::File, dst: &std::fs::File, from: u64, to: u64) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 1 << 20];
    let mut at = from;
    while at < to {
        let n = ((to - at) as usize).min(buf.len());
        src.read_exact_at(&mut buf[..n], at)?;
        dst.write_all_at(&buf[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_sparse_copy_keeps_the_data_and_the_holes() {
        let dir = std::env::temp_dir().join(format!("fsbench-kept-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        let mut f = std::fs::File::create(&a).unwrap();
        f.set_len(8 << 20).unwrap();
        f.seek(SeekFrom::Start(3 << 20)).unwrap();
        f.write_all(&[7u8; 5000]).unwrap();
        f.seek(SeekFrom::Start((8 << 20) - 10)).unwrap();
        f.write_all(b"0123456789").unwrap();
        f.sync_all().unwrap();
        let g = std::fs::File::create(&b).unwrap();
        copy_sparse(&std::fs::File::open(&a).unwrap(), &g, 8 << 20).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        // Holes stay holes where the file system keeps them (tmpfs and ext4 do).
        let blocks = |p: &Path| std::fs::metadata(p).unwrap().blocks();
        assert!(
            blocks(&b) <= blocks(&a) + 16,
            "{} > {}",
            blocks(&b),
            blocks(&a)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_kept_copy_serves_only_its_plan_and_target_while_it_is_the_file_written() {
        let out = std::env::temp_dir().join(format!("fsbench-kept-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let img = out.join("t.img");
        std::fs::write(&img, vec![5u8; 70_000]).unwrap();
        let mut facts = Map::new();
        facts.insert("ops".into(), 400.into());
        keep(&out, "h1", "t", &img, &facts);
        assert_eq!(names(&out), vec!["t".to_string()]);
        assert_eq!(usable(&out, "h1", "t").unwrap().unwrap(), facts);
        assert!(usable(&out, "h2", "t").unwrap().is_err(), "another plan");
        assert!(usable(&out, "h1", "u").is_none(), "no record");
        let (kept, json) = paths(&out, "t");
        // A record from before records said whether their copy was whole: written after it.
        let mut old: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        old.as_object_mut().unwrap().remove("complete");
        fsbench_base::owned::path::write_atomic(&json, old.to_string().as_bytes()).unwrap();
        assert_eq!(usable(&out, "h1", "t").unwrap().unwrap(), facts);
        // A copy that was not written whole is not used, and goes with its record.
        let (mut r, _) = read_record(&json, "t").unwrap();
        r.complete = false;
        write_record(&json, &r).unwrap();
        let why = usable(&out, "h1", "t").unwrap().unwrap_err();
        assert!(why.contains("not copied whole"), "{why}");
        discard_all(&out).unwrap();
        assert!(!kept.exists() && !json.exists() && !out.join(DIR).exists());
        // Replaced by another file of the same name and length: not used, not removed.
        keep(&out, "h1", "t", &img, &facts);
        std::fs::remove_file(&kept).unwrap();
        std::fs::write(&kept, vec![6u8; 70_000]).unwrap();
        let why = usable(&out, "h1", "t").unwrap().unwrap_err();
        assert!(why.contains("not the file fsbench kept"), "{why}");
        // Keeping again leaves the stranger's file and keeps nothing.
        keep(&out, "h1", "t", &img, &facts);
        assert!(names(&out).is_empty() && kept.exists());
        assert_eq!(std::fs::read(&kept).unwrap(), vec![6u8; 70_000]);
        // A record that is not fsbench's (a link to one) is neither read nor removed.
        std::fs::remove_file(&kept).unwrap();
        keep(&out, "h1", "t", &img, &facts);
        let real = out.join("real.json");
        std::fs::rename(&json, &real).unwrap();
        std::os::unix::fs::symlink(&real, &json).unwrap();
        assert!(usable(&out, "h1", "t").unwrap().is_err());
        assert!(names(&out).is_empty());
        discard(&out, "t").unwrap();
        assert!(json.symlink_metadata().is_ok() && real.exists() && kept.exists());
        // A directory others may write to is not trusted.
        std::fs::remove_file(&json).unwrap();
        std::fs::rename(&real, &json).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(out.join(DIR), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(usable(&out, "h1", "t").unwrap().is_err());
        assert!(names(&out).is_empty());
        std::fs::set_permissions(out.join(DIR), std::fs::Permissions::from_mode(0o700)).unwrap();
        discard_all(&out).unwrap();
        assert!(!out.join(DIR).exists());
        std::fs::remove_dir_all(&out).unwrap();
    }
}
