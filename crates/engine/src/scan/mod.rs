//! `fsbench scan DIR -o SNAPSHOT`: walk a tree in parallel, record every
//! entry's metadata in a streamable snapshot and summarise the tree.
//!
//! The snapshot is the input of aging (`--from-snapshot`, see
//! [`crate::age::profile::Profile::from_snapshot`]): it lets a user age a test
//! file system until it looks like their production tree.

pub mod diff;
pub mod hash;
pub mod peruser;
pub mod snapshot;
pub mod summary;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use fsbench_base::units::human_bytes_u64;
use fsbench_base::walk::{self, Visitor, WalkEntry, WalkOptions};
use snapshot::{Kind, RecordEncoder, SnapshotHeader};
use summary::{DepthRow, ExtRow, Log2Row, TreeStats};

/// Arguments of `fsbench scan`.
#[derive(clap::Args, Debug)]
pub struct ScanArgs {
    /// Directory to scan.
    pub dir: PathBuf,
    /// Write a snapshot of every entry's metadata to this file.
    #[arg(short, long, value_name = "SNAPSHOT")]
    pub output: Option<PathBuf>,
    /// Stay on the file system of DIR (the default).
    #[arg(long, overrides_with = "cross_mounts")]
    pub one_file_system: bool,
    /// Descend into directories on other file systems.
    #[arg(long, overrides_with = "one_file_system")]
    pub cross_mounts: bool,
    /// Worker threads (default: 8, or one per core where there are more: more walkers than
    /// cores keep a cold tree's reads in the device's queue, and cost nothing warm).
    #[arg(short = 'j', long)]
    pub threads: Option<usize>,
    /// Write the summary as JSON to this file ("-" for stdout, replacing the text).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Number of extensions shown in the summary.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Store each regular file's content hash in the snapshot (blake3 unless named;
    /// sha1 matches `sha1sum`). Files are hashed by the scan's workers in parallel.
    #[arg(long, value_name = "ALGO", num_args = 0..=1, default_missing_value = "blake3")]
    pub hash: Option<hash::HashAlgo>,
    /// Walk each top-level directory (a user's tree) with a worker of its own, all in
    /// parallel (at most -j at a time), and report the walk's user and system time: the
    /// metadata-log build of the elastic-quota study.
    #[arg(long)]
    pub per_user: bool,
    /// Before scanning, `sync` and drop the page, dentry and inode caches (needs root; done
    /// by the command before [`run`]).
    #[arg(long)]
    pub cold: bool,
}

/// `fsbench scan`'s walkers when `-j` is not given: at least 8 (measured with `selftest scan
/// --walkers N`, docs/scan.md: a cold ext4 tree walked 1.9x find's speed with 2 walkers on 2
/// cores and 2.3x with 8, a warm one 2.0x and 2.3x).
pub fn default_walkers() -> usize {
    walk::default_threads().max(8)
}

/// What `--per-user` adds to the summary.
#[derive(Debug, Serialize, Deserialize)]
pub struct PerUser {
    /// Top-level directories walked.
    pub users: u64,
    /// Workers that walked them.
    pub workers: u64,
    /// CPU seconds of the scan (every worker), user and system.
    pub user_s: f64,
    pub system_s: f64,
}

/// The summary of one scan.
#[derive(Debug, Serialize, Deserialize)]
pub struct ScanSummary {
    pub root: String,
    pub snapshot: Option<String>,
    pub threads: usize,
    pub elapsed_s: f64,
    pub entries: u64,
    pub entries_per_s: f64,
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub other: u64,
    /// Sum of regular files' sizes.
    pub bytes: u64,
    /// Sum of allocated space of all entries (st_blocks × 512).
    pub allocated_bytes: u64,
    pub mount_points_skipped: u64,
    /// Entries that could not be read (permission, vanished during the walk).
    pub errors: u64,
    /// Regular file sizes, log2 buckets `[lo, hi)`; `sum` is bytes.
    pub file_size: Vec<Log2Row>,
    /// Entries per depth (0: directly inside DIR).
    pub depth: Vec<DepthRow>,
    /// Entries per directory, log2 buckets (DIR itself included).
    pub entries_per_dir: Vec<Log2Row>,
    pub top_extensions: Vec<ExtRow>,
    /// Content hash algorithm, when `--hash` was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash: Option<hash::HashAlgo>,
    /// Bytes read and hashed.
    pub hashed_bytes: u64,
    /// Hashed bytes per second of the whole scan (MB = 10^6 bytes).
    pub hash_mb_per_s: f64,
    /// Regular files that could not be read for hashing (stored without a hash).
    pub hash_errors: u64,
    /// `--per-user`: users, workers and CPU time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_user: Option<PerUser>,
    /// `--cold`: the caches were dropped before the scan.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cold: bool,
}

type Sink = Arc<Mutex<BufWriter<File>>>;

/// Flush a worker's encoded records once they pass this size.
const FLUSH_BYTES: usize = 256 * 1024;

struct ScanVisitor {
    stats: TreeStats,
    enc: Option<RecordEncoder>,
    sink: Option<Sink>,
    records: u64,
    hash: Option<hash::HashAlgo>,
    hash_buf: Vec<u8>,
    hashed_bytes: u64,
    hash_errors: u64,
    /// The first files not hashed: path below the root, and why.
    hash_problems: Vec<(std::path::PathBuf, String)>,
}

impl ScanVisitor {
    fn flush(&mut self) -> io::Result<()> {
        if let (Some(enc), Some(sink)) = (&mut self.enc, &self.sink) {
            if !enc.buf.is_empty() {
                self.records += enc.records;
                enc.records = 0;
                let buf = enc.take();
                sink.lock().unwrap().write_all(&buf)?;
                // Reuse the allocation.
                enc.buf = buf;
                enc.buf.clear();
            }
        }
        Ok(())
    }
}

impl Visitor for ScanVisitor {
    type Error = io::Error;

    fn entry(&mut self, e: &WalkEntry<'_>) -> io::Result<()> {
        fsbench_base::cancel::check_io()?;
        let st = e.stat;
        self.stats.add(
            e.name.to_bytes(),
            e.depth,
            Kind::from_mode(st.st_mode),
            st.st_size as u64,
            st.st_blocks as u64,
        );
        let mut digest = None;
        if let (Some(algo), true) = (self.hash, e.is_file()) {
            match algo.hash_at(e.dirfd, e.name, &mut self.hash_buf) {
                Ok((h, n)) => {
                    self.hashed_bytes += n;
                    digest = Some(h);
                }
                Err(err) => {
                    self.hash_errors += 1;
                    if self.hash_problems.len() < 10 {
                        use std::os::unix::ffi::OsStrExt;
                        self.hash_problems
                            .push((std::ffi::OsStr::from_bytes(e.path).into(), err.to_string()));
                    }
                }
            }
        }
        if let Some(enc) = &mut self.enc {
            enc.push_stat(e.path, st, digest.as_deref());
        }
        Ok(())
    }

    fn dir_done(&mut self, _path: &[u8], _depth: u32, entries: u64) -> io::Result<()> {
        self.stats.dir_entries.add(entries);
        if self
            .enc
            .as_ref()
            .is_some_and(|e| e.buf.len() >= FLUSH_BYTES)
        {
            self.flush()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.flush()
    }
}

/// Scan `root`, optionally writing a snapshot to `output`.
pub fn scan(
    root: &Path,
    output: Option<&Path>,
    opts: &WalkOptions,
    top: usize,
    hash: Option<hash::HashAlgo>,
) -> anyhow::Result<ScanSummary> {
    let started = Instant::now();
    let (sink, pending) = open_sink(root, output, opts, hash)?;
    let outcome = walk::walk(root, opts, |_| ScanVisitor {
        stats: TreeStats::default(),
        enc: sink.as_ref().map(|_| RecordEncoder::default()),
        sink: sink.clone(),
        records: 0,
        hash,
        hash_buf: if hash.is_some() {
            vec![0; 256 * 1024]
        } else {
            Vec::new()
        },
        hashed_bytes: 0,
        hash_errors: 0,
        hash_problems: Vec::new(),
    })
    .map_err(|e| match e {
        walk::WalkError::Visit(_) if fsbench_base::cancel::interrupted() => {
            anyhow::Error::new(fsbench_base::cancel::Interrupted)
        }
        walk::WalkError::Visit(io) => anyhow::Error::new(io).context(format!(
            "cannot write snapshot file {}",
            output.map(|p| p.display().to_string()).unwrap_or_default()
        )),
        other => anyhow::Error::new(other).context("scan failed"),
    })?;
    let mut counts = Counts {
        walk: outcome.stats,
        ..Counts::default()
    };
    let (mut records, mut said) = (0, 0u64);
    for v in outcome.visitors {
        records += v.records;
        counts.hashed_bytes += v.hashed_bytes;
        counts.hash_errors += v.hash_errors;
        for (p, err) in &v.hash_problems {
            fsbench_base::errln!("scan: {}: cannot hash: {err}", root.join(p).display());
            said += 1;
        }
        counts.tree.merge(v.stats);
    }
    if counts.hash_errors > said {
        fsbench_base::errln!(
            "scan: … and {} more files stored without a hash",
            counts.hash_errors - said
        );
    }
    if let (Some(sink), Some(p)) = (sink, output) {
        let mut w = Arc::try_unwrap(sink)
            .map_err(|_| anyhow::anyhow!("snapshot writer still shared"))?
            .into_inner()
            .unwrap();
        snapshot::write_end(&mut w, records)
            .and_then(|_| w.flush())
            .and_then(|_| pending.map_or(Ok(()), |p| p.finish()))
            .with_context(|| format!("cannot write snapshot file {}", p.display()))?;
    }
    let walked = &counts.walk;
    for p in &walked.problems {
        fsbench_base::errln!("scan: {}: {}", root.join(&p.path).display(), p.error);
    }
    if walked.problem_count > walked.problems.len() as u64 {
        fsbench_base::errln!(
            "scan: … and {} more problems",
            walked.problem_count - walked.problems.len() as u64
        );
    }
    Ok(summary(root, output, opts, top, hash, started, &counts))
}

/// The snapshot file's writer, its header written, when `output` asks for one.
fn open_sink(
    root: &Path,
    output: Option<&Path>,
    opts: &WalkOptions,
    hash: Option<hash::HashAlgo>,
) -> anyhow::Result<(Option<Sink>, Option<fsbench_base::created::Pending>)> {
    let created_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    Ok(match output {
        Some(p) => {
            // Written beside it and moved into place at the end: an interrupted scan leaves
            // no half snapshot (nor destroys the one there).
            let (f, pending) = fsbench_base::created::output_file(p)
                .with_context(|| format!("cannot create snapshot file {}", p.display()))?;
            let mut w = BufWriter::with_capacity(1 << 20, f);
            snapshot::write_header(
                &mut w,
                &SnapshotHeader {
                    root: root.display().to_string(),
                    created_unix,
                    cross_mounts: opts.cross_mounts,
                    tool_version: env!("CARGO_PKG_VERSION").to_string(),
                    hash: hash.map(|h| h.name().to_string()),
                },
            )
            .with_context(|| format!("cannot write snapshot file {}", p.display()))?;
            (Some(Arc::new(Mutex::new(w))), pending)
        }
        None => (None, None),
    })
}

/// What a scan's workers counted, merged: the tree, the walk's own counters (mount points
/// skipped, problems) and what hashing read.
#[derive(Default)]
struct Counts {
    tree: TreeStats,
    walk: walk::WalkStats,
    hashed_bytes: u64,
    /// Files stored without a hash: they could not be read.
    hash_errors: u64,
}

/// The scan's figures from what its workers counted.
fn summary(
    root: &Path,
    output: Option<&Path>,
    opts: &WalkOptions,
    top: usize,
    hash: Option<hash::HashAlgo>,
    started: Instant,
    counts: &Counts,
) -> ScanSummary {
    let (stats, walked) = (&counts.tree, &counts.walk);
    let (hashed_bytes, hash_errors) = (counts.hashed_bytes, counts.hash_errors);
    let elapsed = started.elapsed().as_secs_f64();
    let entries = stats.files + stats.dirs + stats.symlinks + stats.other;
    ScanSummary {
        root: root.display().to_string(),
        snapshot: output.map(|p| p.display().to_string()),
        threads: opts.threads,
        elapsed_s: elapsed,
        entries,
        entries_per_s: if elapsed > 0.0 {
            entries as f64 / elapsed
        } else {
            0.0
        },
        files: stats.files,
        dirs: stats.dirs,
        symlinks: stats.symlinks,
        other: stats.other,
        bytes: stats.bytes,
        allocated_bytes: stats.allocated,
        mount_points_skipped: walked.mount_points_skipped,
        errors: walked.problem_count,
        file_size: stats.sizes.rows(),
        depth: stats
            .depth
            .iter()
            .enumerate()
            .map(|(d, c)| DepthRow {
                depth: d as u32,
                files: c[0],
                dirs: c[1],
                other: c[2],
            })
            .collect(),
        entries_per_dir: stats.dir_entries.rows(),
        top_extensions: stats.top_extensions(top),
        hash,
        hashed_bytes,
        hash_mb_per_s: if elapsed > 0.0 {
            hashed_bytes as f64 / elapsed / 1e6
        } else {
            0.0
        },
        hash_errors,
        per_user: None,
        cold: false,
    }
}

fn bar(count: u64, max: u64) -> String {
    let w = if max == 0 {
        0
    } else {
        ((count as f64 / max as f64) * 30.0).ceil() as usize
    };
    "#".repeat(w)
}

/// Print the summary as text.
pub fn print_summary(s: &ScanSummary, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "scanned {}: {} in {:.3} s ({:.0} entries/s, {})",
        s.root,
        fsbench_base::units::count(s.entries, "entry"),
        s.elapsed_s,
        s.entries_per_s,
        fsbench_base::units::count(s.threads as u64, "thread")
    )?;
    writeln!(
        out,
        "  files {}  dirs {}  symlinks {}  other {}",
        s.files, s.dirs, s.symlinks, s.other
    )?;
    writeln!(
        out,
        "  bytes {} ({})  allocated {}",
        s.bytes,
        human_bytes_u64(s.bytes),
        human_bytes_u64(s.allocated_bytes)
    )?;
    if let Some(h) = s.hash {
        writeln!(
            out,
            "  hashed {} with {} at {:.1} MB/s ({} files not hashed)",
            human_bytes_u64(s.hashed_bytes),
            h.name(),
            s.hash_mb_per_s,
            s.hash_errors
        )?;
    }
    if s.mount_points_skipped > 0 {
        writeln!(
            out,
            "  {} mount points not crossed (use --cross-mounts)",
            s.mount_points_skipped
        )?;
    }
    if s.errors > 0 {
        writeln!(out, "  {} entries could not be read", s.errors)?;
    }
    if let Some(p) = &s.snapshot {
        writeln!(out, "  snapshot written to {p}")?;
    }
    print_per_user(s, out)?;
    let max = s.file_size.iter().map(|r| r.count).max().unwrap_or(0);
    writeln!(out, "\nfile size              files        bytes")?;
    for r in &s.file_size {
        let label = if r.lo == 0 {
            "0".to_string()
        } else {
            format!("{}..{}", human_short(r.lo), human_short(r.hi))
        };
        writeln!(
            out,
            "  {label:>16} {:>10} {:>12}  {}",
            r.count,
            human_bytes_u64(r.sum),
            bar(r.count, max)
        )?;
    }
    writeln!(out, "\ndepth       files       dirs      other")?;
    for r in &s.depth {
        writeln!(
            out,
            "  {:>5} {:>10} {:>10} {:>10}",
            r.depth, r.files, r.dirs, r.other
        )?;
    }
    let max = s.entries_per_dir.iter().map(|r| r.count).max().unwrap_or(0);
    writeln!(out, "\nentries per dir     dirs")?;
    for r in &s.entries_per_dir {
        let label = if r.hi - r.lo <= 1 {
            r.lo.to_string()
        } else {
            format!("{}..{}", r.lo, r.hi - 1)
        };
        writeln!(out, "  {label:>13} {:>8}  {}", r.count, bar(r.count, max))?;
    }
    writeln!(out, "\nextension        files        bytes")?;
    for r in &s.top_extensions {
        let ext = if r.ext.is_empty() {
            "(none)".to_string()
        } else {
            format!(".{}", r.ext)
        };
        writeln!(
            out,
            "  {ext:<12} {:>9} {:>12}",
            r.files,
            human_bytes_u64(r.bytes)
        )?;
    }
    Ok(())
}

/// The `--per-user` line of the summary.
fn print_per_user(s: &ScanSummary, out: &mut impl Write) -> io::Result<()> {
    if let Some(u) = &s.per_user {
        writeln!(
            out,
            "  per user: {} top-level directories by {} workers; user {:.3} s, system {:.3} s ({} cache)",
            u.users,
            u.workers,
            u.user_s,
            u.system_s,
            if s.cold { "cold" } else { "warm" }
        )?;
    }
    Ok(())
}

/// Short power-of-two label: 512, 4K, 1M, 2G.
fn human_short(v: u64) -> String {
    const UNITS: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
    let mut u = 0;
    let mut x = v;
    while x >= 1024 && x.is_multiple_of(1024) && u < UNITS.len() - 1 {
        x /= 1024;
        u += 1;
    }
    if v == u64::MAX {
        return "16E".into();
    }
    format!("{x}{}", UNITS[u])
}

/// Refuse options that do not go together, and outputs that cannot be written, before the
/// scan (and before `--cold` drops the caches): usage errors, status 2.
pub fn check(args: &ScanArgs) -> anyhow::Result<()> {
    if args
        .output
        .as_deref()
        .is_some_and(fsbench_base::console::is_stdout)
    {
        // Refused rather than written to a file named `-`.
        return Err(fsbench_base::exit::usage(
            "-o -: a snapshot goes to a file; give its path",
        ));
    }
    if args.hash.is_some() && args.output.is_none() {
        return Err(fsbench_base::exit::usage(
            "--hash stores hashes in a snapshot: give one with -o SNAPSHOT",
        ));
    }
    if args.per_user && (args.output.is_some() || args.hash.is_some()) {
        return Err(fsbench_base::exit::usage("--per-user measures the metadata walk and writes no snapshot: leave out -o and --hash (a plain scan writes one)"));
    }
    fsbench_base::export::check::outputs(&fsbench_base::export::check::Outputs::outputs(args))
}

impl fsbench_base::export::check::Outputs for ScanArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        vec![
            named(self.output.as_deref(), "-o"),
            named(self.json.as_deref(), "--json"),
        ]
    }
}

/// `fsbench scan`.
pub fn run(args: ScanArgs) -> anyhow::Result<()> {
    check(&args)?;
    // A signal stops the walk and removes the unfinished snapshot.
    fsbench_base::cancel::install_signal_handlers();
    let opts = WalkOptions {
        cross_mounts: args.cross_mounts,
        threads: args.threads.unwrap_or_else(default_walkers).max(1),
    };
    // `--cold` was done by the caller (dropping caches belongs to the layers above).
    let mut summary = if args.per_user {
        peruser::scan(&args.dir, args.cross_mounts, args.threads, args.top)
    } else {
        scan(
            &args.dir,
            args.output.as_deref(),
            &opts,
            args.top,
            args.hash,
        )
    }
    .with_context(|| format!("scan of {} failed", args.dir.display()))?;
    summary.cold = args.cold;
    fsbench_base::export::report::emit(&summary, args.json.as_deref())
}

impl fsbench_base::export::report::Report for ScanSummary {
    fn write_text(&self, mut out: &mut dyn Write) -> io::Result<()> {
        print_summary(self, &mut out)
    }
}
