//! `fsbench scan DIR --per-user`: the metadata-log build of the elastic-quota study's
//! cleaner. Every top-level directory of DIR is a user's tree, walked by a worker of its own
//! (one walker thread each, as the paper ran one process per user), which `lstat`s every
//! entry below it; the workers run in parallel, at most `-j` at a time (all at once by
//! default). The summary is `scan`'s, with the walk's user and system time and the number of
//! workers.
//!
//! It reuses the walker as it is (one [`fsbench_base::walk::walk`] per top-level directory): only
//! the roots are partitioned.

use super::summary::TreeStats;
use super::ScanSummary;
use crate::scan::snapshot::Kind;
use anyhow::{Context, Result};
use fsbench_base::walk::{self, Visitor, WalkEntry, WalkOptions, WalkStats};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// A worker's tally of its user's tree, depths counted from DIR.
#[derive(Default)]
struct Tally {
    stats: TreeStats,
}

impl Visitor for Tally {
    type Error = fsbench_base::cancel::Interrupted;
    fn entry(&mut self, e: &WalkEntry<'_>) -> Result<(), Self::Error> {
        fsbench_base::cancel::check()?;
        let st = e.stat;
        self.stats.add(
            e.name.to_bytes(),
            e.depth + 1,
            Kind::from_mode(st.st_mode),
            st.st_size as u64,
            st.st_blocks as u64,
        );
        Ok(())
    }
    fn dir_done(&mut self, _path: &[u8], _depth: u32, entries: u64) -> Result<(), Self::Error> {
        self.stats.dir_entries.add(entries);
        Ok(())
    }
}

/// The top-level entries of `root`: the users' directories (on `root`'s file system unless
/// `cross_mounts`), and the statistics of everything else at the top.
fn top_level(
    root: &Path,
    cross_mounts: bool,
    stats: &mut TreeStats,
    walked: &mut WalkStats,
) -> Result<Vec<PathBuf>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::symlink_metadata(root)
        .with_context(|| format!("cannot read {}", root.display()))?
        .dev();
    let root_fd =
        std::fs::File::open(root).with_context(|| format!("cannot open {}", root.display()))?;
    let root_mnt = fsbench_base::beneath::mount_of(root_fd.as_raw_fd())?.1;
    // A bind mount of the root's own file system has its device: the mount id tells.
    let other_mount = |name: &std::ffi::OsStr| {
        let Ok(c) = fsbench_base::beneath::component(name) else {
            return false;
        };
        root_mnt.is_some()
            && fsbench_base::beneath::mount_id_at(root_fd.as_raw_fd(), &c)
                .ok()
                .flatten()
                != root_mnt
    };
    let mut users = Vec::new();
    let mut n = 0;
    for e in std::fs::read_dir(root)
        .with_context(|| format!("cannot open directory {}", root.display()))?
    {
        let e = e?;
        n += 1;
        let md = match std::fs::symlink_metadata(e.path()) {
            Ok(m) => m,
            Err(error) => {
                walked.problem_count += 1;
                walked.problems.push(walk::EntryProblem {
                    path: e.file_name().into(),
                    error,
                });
                continue;
            }
        };
        let kind = Kind::from_mode(md.mode());
        stats.add(e.file_name().as_bytes(), 0, kind, md.size(), md.blocks());
        if kind == Kind::Dir {
            if (md.dev() != dev || other_mount(&e.file_name())) && !cross_mounts {
                walked.mount_points_skipped += 1;
            } else {
                users.push(e.path());
            }
        }
    }
    stats.dir_entries.add(n);
    users.sort();
    Ok(users)
}

/// Scan `root` with one worker per top-level directory, at most `max_workers` at a time.
pub fn scan(
    root: &Path,
    cross_mounts: bool,
    max_workers: Option<usize>,
    top: usize,
) -> Result<ScanSummary> {
    let started = Instant::now();
    let cpu0 = fsbench_results::stats::process_cpu();
    let mut stats = TreeStats::default();
    let mut walked = WalkStats::default();
    let users = top_level(root, cross_mounts, &mut stats, &mut walked)?;
    let workers = max_workers
        .unwrap_or(users.len())
        .clamp(1, users.len().max(1));
    let queue = Mutex::new(users.iter());
    let results = Mutex::new(Vec::new());
    let opts = WalkOptions {
        cross_mounts,
        threads: 1,
    };
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let Some(dir) = queue.lock().unwrap().next() else {
                    break;
                };
                let out = walk::walk(dir, &opts, |_| Tally::default());
                results.lock().unwrap().push((dir.clone(), out));
            });
        }
    });
    for (dir, out) in results.into_inner().unwrap() {
        match out {
            Ok(o) => {
                for v in o.visitors {
                    stats.merge(v.stats);
                }
                let name = dir.strip_prefix(root).unwrap_or(&dir).to_path_buf();
                walked.mount_points_skipped += o.stats.mount_points_skipped;
                walked.problem_count += o.stats.problem_count;
                for mut p in o.stats.problems {
                    p.path = name.join(&p.path);
                    walked.problems.push(p);
                }
            }
            Err(e) => {
                walked.problem_count += 1;
                walked.problems.push(walk::EntryProblem {
                    path: dir.strip_prefix(root).unwrap_or(&dir).to_path_buf(),
                    error: std::io::Error::other(e.to_string()),
                });
            }
        }
    }
    walked.problems.truncate(walk::MAX_PROBLEMS);
    fsbench_base::cancel::check()?;
    let cpu1 = fsbench_results::stats::process_cpu();
    let opts = WalkOptions {
        cross_mounts,
        threads: workers,
    };
    let counts = super::Counts {
        tree: stats,
        walk: walked,
        ..Default::default()
    };
    let mut s = super::summary(root, None, &opts, top, None, started, &counts);
    s.per_user = Some(super::PerUser {
        users: users.len() as u64,
        workers: workers as u64,
        user_s: cpu1.0 - cpu0.0,
        system_s: cpu1.1 - cpu0.1,
    });
    for p in &counts.walk.problems {
        fsbench_base::errln!("scan: {}: {}", root.join(&p.path).display(), p.error);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_per_user_counts_what_one_walk_counts() {
        let d = std::env::temp_dir().join(format!("fsbench-peruser-{}", std::process::id()));
        for u in 0..3 {
            for s in 0..2 {
                let p = d.join(format!("u{u}/s{s}"));
                std::fs::create_dir_all(&p).unwrap();
                for f in 0..4 {
                    std::fs::write(p.join(format!("f{f}.c")), vec![1u8; 100 * (f + 1)]).unwrap();
                }
            }
        }
        std::fs::write(d.join("top.txt"), b"x").unwrap();
        let per = scan(&d, false, None, 5).unwrap();
        let one = super::super::scan(
            &d,
            None,
            &WalkOptions {
                cross_mounts: false,
                threads: 1,
            },
            5,
            None,
        )
        .unwrap();
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(
            (per.files, per.dirs, per.bytes),
            (one.files, one.dirs, one.bytes)
        );
        assert_eq!((per.files, per.dirs), (25, 9));
        assert_eq!(per.depth.len(), one.depth.len());
        for (a, b) in per.depth.iter().zip(&one.depth) {
            assert_eq!((a.files, a.dirs), (b.files, b.dirs));
        }
        let pu = per.per_user.unwrap();
        assert_eq!((pu.users, pu.workers), (3, 3));
        assert!(one.per_user.is_none());
    }
}
