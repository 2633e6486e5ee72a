//! `fsbench find DIR [--cold]`: a recursive walk that stats every entry, as `find DIR` does
//! on a file system whose directory entries do not carry types, reporting entries per
//! second. The elastic-quota study's worst case for a stacked file system.
//!
//! It is `fsbench scan`'s walker (`openat` + `getdents64` + `fstatat(AT_SYMLINK_NOFOLLOW)`)
//! with one thread by default, like `find`. The walker does the stat itself, so the per-entry
//! latency recorded is the time between consecutive entries in one walker thread: the cost
//! of each entry's share of directory reading plus its stat.

use super::cli::FindArgs;
use super::{AppRun, OpTable, Recorder};
use anyhow::{bail, Result};
use fsbench_base::walk::{self, Visitor, WalkEntry, WalkOptions};
use fsbench_model::model::FlowopKind;
use std::collections::BTreeMap;
use std::time::Instant;

pub const OPS: OpTable = &[("entry", FlowopKind::StatFile)];

/// What a walk counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub entries: u64,
    pub dirs: u64,
    pub files: u64,
}

struct Counter {
    c: Counts,
    rec: Recorder,
    last: Instant,
}

impl Visitor for Counter {
    type Error = std::convert::Infallible;
    fn entry(&mut self, e: &WalkEntry<'_>) -> Result<(), Self::Error> {
        let now = Instant::now();
        self.rec.ops[0].record((now - self.last).as_nanos() as u64, 0);
        self.last = now;
        self.c.entries += 1;
        if e.is_dir() {
            self.c.dirs += 1;
        } else if e.is_file() {
            self.c.files += 1;
        }
        Ok(())
    }
}

/// `fsbench find`: one walk per repetition.
struct Find<'a> {
    a: &'a FindArgs,
}

impl fsbench_harness::measure::Measurement for Find<'_> {
    fn name(&self) -> &str {
        "find"
    }
    fn target(&self) -> std::path::PathBuf {
        self.a.dir.clone()
    }
    fn run_once(&mut self) -> Result<fsbench_results::stats::Results> {
        walk_once(self.a)
    }
}

pub fn main(a: &FindArgs) -> Result<()> {
    if !a.dir.is_dir() {
        bail!("{} is not a directory", a.dir.display());
    }
    fsbench_harness::measure::guard::check_threads(
        a.threads as u64,
        1 << 20,
        &format!("--threads {}", a.threads),
    )?;
    fsbench_harness::measure::measure_and_report(&mut Find { a }, &a.m)?;
    Ok(())
}

fn walk_once(a: &FindArgs) -> Result<fsbench_results::stats::Results> {
    let opts = WalkOptions {
        cross_mounts: a.cross_mounts,
        threads: a.threads.max(1),
    };
    let started_at = super::now_epoch();
    let t0 = Instant::now();
    let cpu0 = super::process_cpu(false);
    let out = walk::walk(&a.dir, &opts, |_| Counter {
        c: Counts::default(),
        rec: super::recorder(OPS),
        last: Instant::now(),
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let secs = t0.elapsed().as_secs_f64();
    let cpu1 = super::process_cpu(false);
    let mut total = Counts::default();
    let mut merged = super::recorder(OPS);
    for v in &out.visitors {
        total.entries += v.c.entries;
        total.dirs += v.c.dirs;
        total.files += v.c.files;
        merged.merge(&v.rec);
    }
    merged.cpu_user_s = cpu1.0 - cpu0.0;
    merged.cpu_sys_s = cpu1.1 - cpu0.1;
    let mut variables = BTreeMap::new();
    variables.insert("dir".to_string(), a.dir.display().to_string());
    variables.insert("threads".to_string(), opts.threads.to_string());
    let mut notes = vec![format!(
        "find: {} entries ({} directories, {} files, {} other) in {:.3} s: {:.0} entries/s ({} cache)",
        total.entries,
        total.dirs,
        total.files,
        total.entries - total.dirs - total.files,
        secs,
        total.entries as f64 / secs.max(1e-9),
        if a.m.cold { "cold" } else { "warm" }
    )];
    if out.stats.problem_count > 0 {
        notes.push(format!(
            "{} entries could not be read (first: {})",
            out.stats.problem_count,
            out.stats
                .problems
                .first()
                .map(|p| format!("{}: {}", p.path.display(), p.error))
                .unwrap_or_default()
        ));
    }
    if out.stats.mount_points_skipped > 0 {
        notes.push(format!(
            "{} mount points not entered (--cross-mounts enters them)",
            out.stats.mount_points_skipped
        ));
    }
    let mut r = super::results(
        AppRun {
            name: "find",
            variables,
            seed: 0,
            run_dir: &a.dir,
            started_at,
            duration_s: secs,
            threads: opts.threads as u64,
            notes,
        },
        OPS,
        &merged,
    );
    for (k, v) in [
        ("entries", total.entries as f64),
        ("dirs", total.dirs as f64),
        ("files", total.files as f64),
        ("elapsed_s", secs),
        ("entries_per_s", total.entries as f64 / secs.max(1e-9)),
    ] {
        r.figures.insert(k.to_string(), v);
    }
    Ok(r)
}
