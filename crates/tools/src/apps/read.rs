//! `fsbench read DIR`: read every regular file of an existing tree, whole, and report files
//! per second, MB/s and the per-file latency (open, read to the end, close) — the
//! measurement an aging study takes after `fsbench age`, with the cache dropped first
//! (`--cold`).
//!
//! The file list is made before timing starts (`fsbench scan`'s walker, symbolic links not
//! followed) and put in the asked order: by path name, by inode number (near on-disk order on
//! many file systems), or shuffled with the seed. `-j N` readers take files from the list in
//! that order. DIR is only read.

use super::cli::{ReadArgs, ReadOrder};
use super::{timed, AppRun, OpTable, Recorder};
use anyhow::{bail, Context, Result};
use fsbench_base::walk::{self, Visitor, WalkEntry, WalkOptions};
use fsbench_model::model::FlowopKind;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

pub const OPS: OpTable = &[("read-file", FlowopKind::ReadWholeFile)];

/// One file to read: its path, inode and size when listed.
#[derive(Debug, Clone)]
pub struct FileEntry {
    pub path: CString,
    pub ino: u64,
    pub size: u64,
}

struct Lister {
    root: Vec<u8>,
    files: Vec<FileEntry>,
}

impl Visitor for Lister {
    type Error = std::convert::Infallible;
    fn entry(&mut self, e: &WalkEntry<'_>) -> Result<(), Self::Error> {
        if e.is_file() {
            let mut p = self.root.clone();
            p.push(b'/');
            p.extend_from_slice(e.path);
            self.files.push(FileEntry {
                path: CString::new(p).expect("directory entries have no NUL"),
                ino: e.stat.st_ino,
                size: e.stat.st_size as u64,
            });
        }
        Ok(())
    }
}

/// Every regular file below `dir`, in `order`.
pub fn list(
    dir: &std::path::Path,
    order: ReadOrder,
    seed: u64,
    cross_mounts: bool,
) -> Result<Vec<FileEntry>> {
    let out = walk::walk(
        dir,
        &WalkOptions {
            cross_mounts,
            threads: 1,
        },
        |_| Lister {
            root: {
                use std::os::unix::ffi::OsStrExt;
                dir.as_os_str().as_bytes().to_vec()
            },
            files: Vec::new(),
        },
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut files: Vec<FileEntry> = out.visitors.into_iter().flat_map(|v| v.files).collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    match order {
        ReadOrder::Name => {}
        ReadOrder::Inode => files.sort_by_key(|f| f.ino),
        ReadOrder::Random => {
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
            files.shuffle(&mut rng);
        }
    }
    Ok(files)
}

struct Read<'a> {
    a: &'a ReadArgs,
    files: Vec<FileEntry>,
}

impl fsbench_harness::measure::Measurement for Read<'_> {
    fn name(&self) -> &str {
        "read"
    }
    fn target(&self) -> PathBuf {
        self.a.dir.clone()
    }
    fn run_once(&mut self) -> Result<fsbench_results::stats::Results> {
        read_once(self.a, &self.files)
    }
}

pub fn main(a: &ReadArgs) -> Result<()> {
    match fsbench_base::input::check_dir(&a.dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{} is not a directory: it does not exist", a.dir.display())
        }
        r => r.with_context(|| format!("{}", a.dir.display()))?,
    }
    // A pseudo file system's files say nothing true of their size (`/proc/self/pagemap`
    // reads hundreds of gigabytes): no tree there is read.
    if let Some(fs) = fsbench_base::input::pseudo_fs_of(&a.dir)? {
        bail!(
            "{}: {}; give a directory on a real file system",
            a.dir.display(),
            fsbench_base::input::pseudo_refusal(fs)
        );
    }
    if a.jobs == 0 {
        bail!("-j must be at least 1");
    }
    if a.block == 0 || a.block > 1 << 30 {
        return Err(fsbench_base::exit::usage(format!(
            "--block {}: expected 1 byte to 1 GiB",
            a.block
        )));
    }
    a.m.check()?;
    let files = list(&a.dir, a.order, a.seed, a.cross_mounts)?;
    if files.is_empty() {
        bail!("{} holds no regular files to read", a.dir.display());
    }
    fsbench_harness::measure::measure_and_report(&mut Read { a, files }, &a.m)?;
    Ok(())
}

fn read_once(a: &ReadArgs, files: &[FileEntry]) -> Result<fsbench_results::stats::Results> {
    let next = AtomicUsize::new(0);
    let started_at = super::now_epoch();
    let t0 = Instant::now();
    let recs: Vec<Recorder> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..a.jobs)
            .map(|_| {
                let next = &next;
                sc.spawn(move || {
                    let mut rec = super::recorder(OPS);
                    let mut buf = Vec::new();
                    let (u0, s0) = fsbench_results::stats::thread_cpu();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= files.len() || fsbench_base::cancel::interrupted() {
                            break;
                        }
                        let f = &files[i];
                        // Bytes are counted as read, so a file that changed size since it
                        // was listed is measured as it is now.
                        let mut got = 0;
                        let r = timed(
                            &mut rec.ops[0],
                            0,
                            || format!("reading {}", f.path.to_string_lossy()),
                            || super::read_file(&f.path, &mut buf, a.block),
                        );
                        if let Some(n) = r {
                            got = n;
                        }
                        rec.ops[0].bytes += got;
                    }
                    let (u1, s1) = fsbench_results::stats::thread_cpu();
                    rec.cpu_user_s = u1 - u0;
                    rec.cpu_sys_s = s1 - s0;
                    rec
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("reader panicked"))
            .collect()
    });
    let secs = t0.elapsed().as_secs_f64();
    let mut merged = super::recorder(OPS);
    for r in &recs {
        merged.merge(r);
    }
    let n = merged.ops[0].count;
    let bytes = merged.ops[0].bytes;
    let mut variables = BTreeMap::new();
    variables.insert("dir".to_string(), a.dir.display().to_string());
    variables.insert("jobs".to_string(), a.jobs.to_string());
    variables.insert("order".to_string(), format!("{:?}", a.order).to_lowercase());
    variables.insert("block".to_string(), a.block.to_string());
    let notes = vec![format!(
        "read: {n} files, {:.1} MiB in {secs:.3} s: {:.0} files/s, {:.1} MB/s ({} cache, {} order, -j {})",
        bytes as f64 / 1048576.0,
        n as f64 / secs.max(1e-9),
        bytes as f64 / secs.max(1e-9) / 1048576.0,
        if a.m.cold { "cold" } else { "warm" },
        format!("{:?}", a.order).to_lowercase(),
        a.jobs
    )];
    let mut r = super::results(
        AppRun {
            name: "read",
            variables,
            seed: a.seed,
            run_dir: &a.dir,
            started_at,
            duration_s: secs,
            threads: a.jobs as u64,
            notes,
        },
        OPS,
        &merged,
    );
    for (k, v) in [
        ("files", n as f64),
        ("bytes", bytes as f64),
        ("elapsed_s", secs),
        ("files_per_s", n as f64 / secs.max(1e-9)),
        ("mb_per_s", bytes as f64 / secs.max(1e-9) / 1048576.0),
    ] {
        r.figures.insert(k.to_string(), v);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders() {
        let d = std::env::temp_dir().join(format!("fsbench-read-unit-{}", std::process::id()));
        std::fs::create_dir_all(d.join("sub")).unwrap();
        for n in ["b", "a", "sub/c"] {
            std::fs::write(d.join(n), n).unwrap();
        }
        let names = |o| -> Vec<String> {
            list(&d, o, 3, false)
                .unwrap()
                .iter()
                .map(|f| {
                    f.path
                        .to_str()
                        .unwrap()
                        .rsplit('/')
                        .next()
                        .unwrap()
                        .to_string()
                })
                .collect()
        };
        assert_eq!(names(ReadOrder::Name), ["a", "b", "c"]);
        let by_ino = list(&d, ReadOrder::Inode, 0, false).unwrap();
        assert!(by_ino.windows(2).all(|w| w[0].ino <= w[1].ino));
        let mut r = names(ReadOrder::Random);
        r.sort();
        assert_eq!(r, ["a", "b", "c"]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
