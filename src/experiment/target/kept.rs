//! Aged images kept for `--resume`. Aging a simulated disk's file system to the published
//! size takes longer than most of the runs that follow it (the aging plan: 1.3 million
//! operations a target), and its result is a function of the plan alone (seed, profile,
//! file system; writeback in operation order). So once a disk target aged once per target
//! (`per = "target"`) has been aged and unmounted, a copy of its image is kept in
//! OUTDIR/aged (NAME.img, and NAME.json: the plan it was aged for, the copy's identity and
//! the aging's facts). An interrupted experiment leaves the copies there; `--resume` starts
//! each such target from its copy instead of aging it again; an experiment that finishes
//! removes them. Nothing else is ever taken from OUTDIR/aged: a copy is used only while it is
//! the very file fsbench wrote (device, inode and birth time, owned by this user, not a
//! link) for the same plan and target.

use super::journal::{create_file, remove_owned_file};
use super::Journal;
use anyhow::{bail, Context, Result};
use fsbench_base::daemon::owned::FileId;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
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
    /// The copy's identity when written.
    image: FileId,
    /// Its length in bytes.
    size: u64,
    /// The fsbench that aged it.
    fsbench: String,
    /// The aging's facts, as the target recorded them.
    facts: Map<String, Value>,
}

fn paths(outdir: &Path, target: &str) -> (PathBuf, PathBuf) {
    let d = outdir.join(DIR);
    (
        d.join(format!("{target}.img")),
        d.join(format!("{target}.json")),
    )
}

fn read_record(json: &Path) -> Result<Record> {
    let text = fsbench_base::input::read_text(json, fsbench_base::input::RESULTS)
        .with_context(|| format!("reading {}", json.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a kept-image record", json.display()))
}

/// The kept copy of `target` is the file fsbench wrote: a regular file, not a link, of this
/// user, with the recorded identity and length.
fn is_ours(img: &Path, r: &Record) -> Result<bool> {
    let md = match std::fs::symlink_metadata(img) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("reading {}", img.display())),
    };
    Ok(md.file_type().is_file()
        && md.uid() == euid()
        && md.nlink() == 1
        && md.len() == r.size
        && FileId::of(&md) == r.image)
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// The facts of target `target`'s kept aging for `plan_hash`, when a copy usable for it is
/// there; otherwise why not (`None` when there is no record at all).
pub fn usable(
    outdir: &Path,
    plan_hash: &str,
    target: &str,
) -> Option<Result<Map<String, Value>, String>> {
    let (img, json) = paths(outdir, target);
    if !json.exists() {
        return None;
    }
    let r = match read_record(&json) {
        Ok(r) => r,
        Err(e) => return Some(Err(format!("{e:#}"))),
    };
    if r.plan_hash != plan_hash || r.target != target {
        return Some(Err(format!(
            "{} was aged for another plan or target",
            img.display()
        )));
    }
    match is_ours(&img, &r) {
        Ok(true) => Some(Ok(r.facts)),
        Ok(false) => Some(Err(format!(
            "{} is not the file fsbench kept there (gone, replaced, linked or resized)",
            img.display()
        ))),
        Err(e) => Some(Err(format!("{e:#}"))),
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
    let mut facts = match usable(outdir, plan_hash, target) {
        Some(Ok(f)) => f,
        Some(Err(why)) => bail!("{why}"),
        None => bail!("no aged image is kept for target {target}"),
    };
    let (kept, json) = paths(outdir, target);
    let r = read_record(&json)?;
    let src = std::fs::File::open(&kept).with_context(|| format!("opening {}", kept.display()))?;
    // Checked again on the open file: the one read is the one recorded.
    if FileId::of(&src.metadata()?) != r.image {
        bail!("{} changed while it was opened", kept.display());
    }
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

/// Keep a copy of target `target`'s aged image `img` (unmounted, detached), with its
/// `facts`, replacing a copy kept earlier for it.
pub fn keep(
    outdir: &Path,
    plan_hash: &str,
    target: &str,
    img: &Path,
    facts: &Map<String, Value>,
) -> Result<()> {
    let (kept, json) = paths(outdir, target);
    std::fs::create_dir_all(outdir.join(DIR))?;
    discard(outdir, target)?;
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
    copy_sparse(&src, &dst, size)
        .with_context(|| format!("copying {} to {}", img.display(), kept.display()))?;
    dst.sync_all()?;
    let r = Record {
        plan_hash: plan_hash.to_string(),
        target: target.to_string(),
        image: FileId::of(&dst.metadata()?),
        size,
        fsbench: VERSION.to_string(),
        facts: facts.clone(),
    };
    fsbench_base::owned::path::write_atomic(&json, serde_json::to_string_pretty(&r)?.as_bytes())
        .with_context(|| format!("writing {}", json.display()))?;
    Ok(())
}

/// Remove target `target`'s kept copy and record, the copy only while it is the file
/// recorded; a copy that is not is left, and said.
pub fn discard(outdir: &Path, target: &str) -> Result<()> {
    let (img, json) = paths(outdir, target);
    if !json.exists() {
        return Ok(());
    }
    match read_record(&json) {
        Ok(r) if is_ours(&img, &r)? => remove_owned_file(&img, r.image)?,
        Ok(_) if !img.exists() => {}
        _ => fsbench_base::errln!(
            "fsbench: left {}: not the file fsbench kept there",
            img.display()
        ),
    }
    fsbench_base::owned::path::remove_file(&json)
        .with_context(|| format!("removing {}", json.display()))?;
    Ok(())
}

/// Remove every kept copy (an experiment that finished needs none); the directory too once
/// empty.
pub fn discard_all(outdir: &Path) -> Result<()> {
    let d = outdir.join(DIR);
    if !d.exists() {
        return Ok(());
    }
    for target in names(outdir) {
        discard(outdir, &target)?;
    }
    let _ = fsbench_base::owned::path::remove_empty_dir(&d);
    Ok(())
}

/// The targets with a copy kept (a record written), by name.
pub fn names(outdir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(outdir.join(DIR))
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.strip_suffix(".json").map(str::to_string)
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
                return Err(std::io::Error::last_os_error().into());
            }
            if n == 0 {
                bail!("the source ended at {off_in} bytes, before {len}");
            }
        }
        at = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};

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
        keep(&out, "h1", "t", &img, &facts).unwrap();
        assert_eq!(names(&out), vec!["t".to_string()]);
        assert_eq!(usable(&out, "h1", "t").unwrap().unwrap(), facts);
        assert!(usable(&out, "h2", "t").unwrap().is_err(), "another plan");
        assert!(usable(&out, "h1", "u").is_none(), "no record");
        // Replaced by another file of the same name and length: not used, not removed.
        let kept = out.join(DIR).join("t.img");
        std::fs::remove_file(&kept).unwrap();
        std::fs::write(&kept, vec![6u8; 70_000]).unwrap();
        let why = usable(&out, "h1", "t").unwrap().unwrap_err();
        assert!(why.contains("not the file fsbench kept"), "{why}");
        discard_all(&out).unwrap();
        assert!(kept.exists(), "a file fsbench did not write is left");
        assert!(names(&out).is_empty());
        // Kept again and finished: the copy and its record go.
        std::fs::remove_file(&kept).unwrap();
        keep(&out, "h1", "t", &img, &facts).unwrap();
        discard_all(&out).unwrap();
        assert!(!out.join(DIR).exists());
        std::fs::remove_dir_all(&out).unwrap();
    }
}
