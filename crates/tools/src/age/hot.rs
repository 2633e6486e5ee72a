//! `fsbench hot DIR`: Smith & Seltzer's "hot files" benchmark on an aged file system — the
//! files the last days of aging wrote are read, all of them, then overwritten, all of them,
//! each phase timed on its own.
//!
//! Which files: aging records each live file's last write by operation clock
//! (`.fsbench-age-files`) and the length of its day (`.fsbench-age.json`); the hot files are
//! those written in the last `--days` days before aging ended, in path order. The read phase
//! reads each whole (`--cold` drops the caches first); the overwrite phase writes each file's
//! bytes again in place, through the owned-tree layer (only files of the aged tree's own,
//! one link, reached without following links or crossing mounts), and fsyncs it, so that
//! the data reaches the disk inside the phase. Overwriting in place allocates nothing on
//! ext4 and xfs, so repeating the benchmark leaves the aged layout as it was.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::args::AGED_DIR;
use super::record;
use crate::apps::{self, timed, AppRun, OpTable};
use fsbench_base::beneath;
use fsbench_base::owned::{self, Open};
use fsbench_base::sys::io::{self as sys, AlignedBuf};
use fsbench_harness::measure::{MeasureArgs, Measurement};
use fsbench_model::model::FlowopKind;

/// Arguments of `fsbench hot`.
#[derive(clap::Args, Debug)]
pub struct HotArgs {
    /// The aged directory: DIR/fsbench-aged, or DIR itself when it is one.
    pub dir: PathBuf,
    /// Hot files are those aging wrote in its last N days.
    #[arg(long, default_value_t = super::args::HOT_DAYS, value_name = "N")]
    pub days: u64,
    /// Hot files are the N live files aging wrote last, instead of a window of days: a hot
    /// set of a published size (the study's was 3,207 files) when the aging's clock turns
    /// the population over faster than the study's workload did.
    #[arg(long, value_name = "N", conflicts_with = "days")]
    pub files: Option<u64>,
    /// Request size of the reads and writes, in bytes.
    #[arg(long, default_value_t = 1 << 20, value_name = "BYTES")]
    pub block: usize,
    /// Leave out the fsync after overwriting each file.
    #[arg(long)]
    pub no_fsync: bool,
    #[command(flatten)]
    pub m: MeasureArgs,
}

fsbench_harness::outputs_of_measurement!(HotArgs);

pub const OPS: OpTable = &[
    ("read-file", FlowopKind::ReadWholeFile),
    ("overwrite-file", FlowopKind::WriteWholeFile),
];

/// One hot file: its path below the aged directory and its size.
#[derive(Debug, Clone)]
struct Hot {
    rel: String,
    size: u64,
}

/// The aged directory DIR names: DIR/fsbench-aged, else DIR if it carries aging's state.
fn aged_dir(dir: &Path) -> Result<PathBuf> {
    let inner = dir.join(AGED_DIR);
    let d = if inner.is_dir() {
        inner
    } else {
        dir.to_path_buf()
    };
    if !d.join(record::STATE_FILE).is_file() {
        bail!(
            "{} holds no aging ({} not found): age it first with `fsbench age {}`",
            d.display(),
            record::STATE_FILE,
            dir.display()
        );
    }
    Ok(d)
}

/// Open the aged directory, trusted as fsbench's (its marker, its owner).
fn open_aged(d: &Path) -> Result<OwnedFd> {
    let parent = std::fs::File::open(d.parent().unwrap_or(Path::new("/")))
        .with_context(|| format!("cannot open the parent of {}", d.display()))?;
    let name = beneath::component(d.file_name().unwrap_or_default())?;
    let fd = beneath::open_dir(parent.as_raw_fd(), &name)
        .with_context(|| format!("cannot open {}", d.display()))?;
    owned::trust::check_run_dir(fd.as_raw_fd()).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e}; fsbench hot overwrites only an aged directory of its own",
            d.display()
        )
    })?;
    Ok(fd)
}

/// Which live files are hot.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pick {
    /// Those written in the last N days of aging.
    Days(u64),
    /// The N written last (ties by path).
    Last(u64),
}

impl Pick {
    fn of(a: &HotArgs) -> Pick {
        a.files.map_or(Pick::Days(a.days), Pick::Last)
    }

    fn describe(self, day_ops: u64) -> String {
        match self {
            Pick::Days(n) => {
                format!("written in the last {n} days of aging ({day_ops} operations a day)")
            }
            Pick::Last(n) => format!("aging wrote last ({n} asked)"),
        }
    }
}

/// The files `pick` chooses from what aging recorded, in path order: (path, last write).
fn choose(mut files: Vec<(String, u64)>, pick: Pick, clock: u64, day_ops: u64) -> Vec<String> {
    match pick {
        Pick::Days(days) => {
            let since = clock.saturating_sub(days.saturating_mul(day_ops.max(1)));
            files.retain(|f| f.1 >= since);
        }
        Pick::Last(n) => {
            files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            files.truncate(usize::try_from(n).unwrap_or(usize::MAX));
        }
    }
    let mut paths: Vec<String> = files.into_iter().map(|f| f.0).collect();
    paths.sort();
    paths
}

/// The hot files, in path order, with their sizes now.
fn hot_files(d: &Path, pick: Pick) -> Result<(Vec<Hot>, record::State)> {
    let fd = open_aged(d)?;
    let st = record::read_state(fd.as_raw_fd());
    let files = record::read_files(fd.as_raw_fd())
        .with_context(|| format!("reading {}", d.join(record::FILES_FILE).display()))?
        .with_context(|| {
            format!(
                "{} has no record of its files' last writes ({}): it was aged by replay or by an older fsbench; age it with a profile",
                d.display(),
                record::FILES_FILE
            )
        })?;
    // Only files still there are candidates, so `--files N` finds N when aging left N.
    let live: Vec<(String, u64, u64)> = files
        .into_iter()
        .filter_map(|f| {
            let size = std::fs::symlink_metadata(d.join(&f.path)).ok()?.len();
            Some((f.path, f.modified, size))
        })
        .collect();
    let sizes: BTreeMap<String, u64> = live.iter().map(|f| (f.0.clone(), f.2)).collect();
    let chosen = choose(
        live.into_iter().map(|f| (f.0, f.1)).collect(),
        pick,
        st.clock,
        st.day_ops,
    );
    let hot = chosen
        .into_iter()
        .map(|rel| Hot {
            size: sizes[&rel],
            rel,
        })
        .collect();
    Ok((hot, st))
}

struct HotRun<'a> {
    a: &'a HotArgs,
    dir: PathBuf,
    files: Vec<Hot>,
    state: record::State,
}

impl Measurement for HotRun<'_> {
    fn name(&self) -> &str {
        "hot"
    }
    fn target(&self) -> PathBuf {
        self.dir.clone()
    }
    fn run_once(&mut self) -> Result<fsbench_results::stats::Results> {
        run_once(self)
    }
}

/// `fsbench hot`.
pub fn main(a: &HotArgs) -> Result<()> {
    if a.block == 0 || a.block > 1 << 30 {
        return Err(fsbench_base::exit::usage(format!(
            "--block {}: expected 1 byte to 1 GiB",
            a.block
        )));
    }
    if a.days == 0 {
        return Err(fsbench_base::exit::usage("--days must be at least 1"));
    }
    if a.files == Some(0) {
        return Err(fsbench_base::exit::usage("--files must be at least 1"));
    }
    a.m.check()?;
    let dir = aged_dir(&a.dir)?;
    let pick = Pick::of(a);
    let (files, state) = hot_files(&dir, pick)?;
    if files.is_empty() {
        bail!(
            "{}: no live file {}",
            dir.display(),
            pick.describe(state.day_ops)
        );
    }
    let mut run = HotRun {
        a,
        dir,
        files,
        state,
    };
    fsbench_harness::measure::measure_and_report(&mut run, &a.m)?;
    Ok(())
}

/// Overwrite `h` in place with its own length of data, and fsync it unless asked not to.
fn overwrite(aged: &OwnedFd, h: &Hot, data: &AlignedBuf, fsync: bool) -> std::io::Result<()> {
    let (parent, name) = match h.rel.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, h.rel.as_str()),
    };
    let dir = match parent {
        Some(p) => Some(beneath::open_dir_path(aged.as_raw_fd(), p.as_bytes())?),
        None => None,
    };
    let dfd = dir.as_ref().map_or(aged.as_raw_fd(), |d| d.as_raw_fd());
    let name = CString::new(name).map_err(|_| std::io::Error::other("NUL in a path"))?;
    let fd = owned::open_write(dfd, &name, Open::Own, libc::O_WRONLY)?;
    let mut off = 0u64;
    while off < h.size {
        let n = (h.size - off).min(data.len() as u64) as usize;
        off += sys::pwrite(fd.as_raw_fd(), &data.as_slice()[..n], off)? as u64;
    }
    if fsync {
        sys::fsync(fd.as_raw_fd())?;
    }
    Ok(())
}

fn run_once(r: &mut HotRun) -> Result<fsbench_results::stats::Results> {
    let a = r.a;
    let aged = open_aged(&r.dir)?;
    let mut rec = apps::recorder(OPS);
    let mut rng = fsbench_model::dist::rng(r.state.seed, 0x407);
    let data = AlignedBuf::new(a.block, &mut rng);
    let mut buf = Vec::new();
    let started_at = apps::now_epoch();
    let t0 = Instant::now();
    for h in &r.files {
        let path = apps::cpath(&r.dir.join(&h.rel));
        let what = || format!("reading {}", r.dir.join(&h.rel).display());
        if let Some(n) = timed(&mut rec.ops[0], 0, what, || {
            apps::read_file(&path, &mut buf, a.block)
        }) {
            rec.ops[0].bytes += n;
        }
    }
    let read_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    for h in &r.files {
        let what = || format!("overwriting {}", r.dir.join(&h.rel).display());
        timed(&mut rec.ops[1], h.size, what, || {
            overwrite(&aged, h, &data, !a.no_fsync)
        });
    }
    let overwrite_s = t1.elapsed().as_secs_f64();
    Ok(results(r, &rec, started_at, (read_s, overwrite_s)))
}

fn results(
    r: &HotRun,
    rec: &fsbench_results::stats::Recorder,
    started_at: f64,
    (read_s, overwrite_s): (f64, f64),
) -> fsbench_results::stats::Results {
    let a = r.a;
    let files = r.files.len() as u64;
    let (read, written) = (rec.ops[0].bytes, rec.ops[1].bytes);
    let mb = |b: u64, s: f64| b as f64 / s.max(1e-9) / 1048576.0;
    let mut variables = BTreeMap::new();
    variables.insert("dir".to_string(), r.dir.display().to_string());
    match Pick::of(a) {
        Pick::Days(n) => variables.insert("days".to_string(), n.to_string()),
        Pick::Last(n) => variables.insert("files".to_string(), n.to_string()),
    };
    variables.insert("day_ops".to_string(), r.state.day_ops.to_string());
    variables.insert("block".to_string(), a.block.to_string());
    variables.insert("fsync".to_string(), (!a.no_fsync).to_string());
    let notes = vec![format!(
        "hot: {files} files {}, {:.1} MiB: read in {read_s:.3} s ({:.1} MB/s), overwritten in {overwrite_s:.3} s ({:.1} MB/s)",
        Pick::of(a).describe(r.state.day_ops),
        read as f64 / 1048576.0,
        mb(read, read_s),
        mb(written, overwrite_s)
    )];
    let mut out = apps::results(
        AppRun {
            name: "hot",
            variables,
            seed: r.state.seed,
            run_dir: &r.dir,
            started_at,
            duration_s: read_s + overwrite_s,
            threads: 1,
            notes,
        },
        OPS,
        rec,
    );
    for (k, v) in [
        ("files", files as f64),
        ("bytes", read as f64),
        ("read_s", read_s),
        ("read_mb_per_s", mb(read, read_s)),
        ("overwrite_s", overwrite_s),
        ("overwrite_mb_per_s", mb(written, overwrite_s)),
        ("elapsed_s", read_s + overwrite_s),
        ("mb_per_s", mb(read + written, read_s + overwrite_s)),
    ] {
        out.figures.insert(k.to_string(), v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> Vec<(String, u64)> {
        [("d/a", 50), ("b", 90), ("c", 90), ("d/e", 10), ("f", 70)]
            .iter()
            .map(|(p, c)| (p.to_string(), *c))
            .collect()
    }

    #[test]
    fn a_window_of_days_keeps_what_was_written_since_its_start() {
        // Clock 100, days of 20 operations: the last two days began at operation 60.
        assert_eq!(choose(rec(), Pick::Days(2), 100, 20), ["b", "c", "f"]);
        assert_eq!(choose(rec(), Pick::Days(10), 100, 20).len(), 5);
    }

    #[test]
    fn the_last_n_are_the_latest_writes_with_ties_by_path() {
        assert_eq!(choose(rec(), Pick::Last(1), 100, 20), ["b"]);
        assert_eq!(choose(rec(), Pick::Last(3), 100, 20), ["b", "c", "f"]);
        assert_eq!(
            choose(rec(), Pick::Last(4), 100, 20),
            ["b", "c", "d/a", "f"]
        );
        assert_eq!(choose(rec(), Pick::Last(9), 100, 20).len(), 5);
    }
}
