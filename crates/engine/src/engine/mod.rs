//! The engine: lay filesets out in a marked run directory, run every thread's flowops on
//! OS threads, stop on time, on completion or on Ctrl-C, and hand the merged recorders to
//! `stats`. Application benchmarks, aging and replay are meant to drive this same engine.

pub mod aio;
pub mod clean;
pub mod hooks;
mod measure_loop;
mod nfsrun;
pub mod preflight;
pub mod psrun;
pub mod rundir;
pub mod selftest;
pub mod selftest_layout;
pub mod selftest_scan;
pub mod streamfiles;
pub mod sync;
pub mod worker;

use crate::fileset::layout::{LayoutError, Plan};
use crate::fileset::{self, FilesetRt};
use fsbench_base::cancel::interrupted;
use fsbench_model::model::{Action, Workload};
use fsbench_results::stats::{self, LayoutResult, Recorder, Results};
use rundir::RunDir;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use measure_loop::{measure, MeasureOptions, Measured};

/// Run-wide control read by the workers between operations: one word, so a worker pays one
/// relaxed load per operation to learn about a stop, a statistics reset (end of warm-up) and
/// a new sampling interval.
#[derive(Debug, Default)]
pub struct Control {
    word: AtomicU64,
    finished: AtomicUsize,
    /// The first flowop that found its fileset exhausted (ends the run, as in Filebench).
    exhausted: Mutex<Option<String>>,
    /// The first finish flowop that was done in the default (timeout) mode, where it ends
    /// the run (Filebench warns "Run stopped early").
    finish_done: Mutex<Option<String>>,
    /// The first flowop whose file system was full, and its error (ends the run too).
    no_space: Mutex<Option<String>>,
    /// The measuring thread, woken when a worker ends the run.
    measurer: std::sync::OnceLock<std::thread::Thread>,
}

/// Bit 63 of the control word: stop.
pub const STOP: u64 = 1 << 63;
/// Bits 32..62: statistics generation (bumped when warm-up ends).
pub const GEN_SHIFT: u32 = 32;
/// Bits 0..31: sampling epoch.
pub const EPOCH_MASK: u64 = (1 << 32) - 1;

/// The statistics generation of a control word.
#[inline]
pub fn generation(word: u64) -> u64 {
    (word & !STOP) >> GEN_SHIFT
}

impl Control {
    #[inline]
    pub fn word(&self) -> u64 {
        self.word.load(Ordering::Relaxed)
    }
    #[inline]
    pub fn stopping(&self) -> bool {
        self.word() & STOP != 0
    }
    pub fn stop(&self) {
        self.word.fetch_or(STOP, Ordering::SeqCst);
    }
    /// Stop the run from a worker, as Filebench's `shm_f_abort` does: every other thread
    /// stops before its next flowop, and the measuring thread wakes to end the run now
    /// rather than at its next look.
    fn end_run(&self) {
        self.stop();
        if let Some(t) = self.measurer.get() {
            t.unpark();
        }
    }
    fn next_epoch(&self) {
        self.word.fetch_add(1, Ordering::SeqCst);
    }
    fn next_generation(&self) {
        self.word.fetch_add(1 << GEN_SHIFT, Ordering::SeqCst);
    }
}

/// What a flowop's latency covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Latency {
    /// The flowop's system calls only, as Filebench times them (flowop.c
    /// `flowop_beginop`/`flowop_endop` around the calls): picking the file, waiting for a
    /// busy one, building its name and releasing it are outside.
    #[default]
    Calls,
    /// The whole flowop, from the moment the thread starts it to its end: the pick, waits
    /// for busy entries, retries, the calls and the release. Latencies then add up to the
    /// threads' time (Little's law), where `calls` leaves out what happens between calls.
    Flowop,
}

/// Where a Filebench flowop's I/O buffer starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Buffers {
    /// As Filebench's: 16 bytes past a page boundary. Filebench takes a thread's buffer
    /// from `malloc(memsize)` (a flowop's from `malloc(iosize)` without `memsize`), and
    /// glibc serves a block that large from a mapping of its own, 16 bytes of header
    /// before it. On some processors a copy into such a buffer costs several times an
    /// aligned one's (docs/filebench-compat.md). A slot opened with `directio` gets an
    /// aligned buffer, as Filebench aligns those.
    #[default]
    Filebench,
    /// Page-aligned: what the copies cost is the file system's and the memory's, not the
    /// processor's penalty for a misaligned destination.
    Aligned,
}

impl Buffers {
    /// Bytes past a page boundary where a buffer starts.
    pub fn skew(self) -> usize {
        match self {
            Buffers::Filebench => 16,
            Buffers::Aligned => 0,
        }
    }
}

/// How to run a workload.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Where the run directory is created.
    pub parent: PathBuf,
    /// Overrides the workload's `run N`.
    pub duration: Option<f64>,
    pub seed: u64,
    /// Keep the run directory afterwards.
    pub keep: bool,
    /// Run `system "..."` commands.
    pub allow_system: bool,
    pub quiet: bool,
    /// Run this long before measuring and discard it.
    pub warmup: f64,
    /// Time-series interval in seconds.
    pub interval: f64,
    /// Live progress line (only when standard error is a terminal).
    pub progress: bool,
    /// `sync` and drop the page cache after layout, before measuring (root only).
    pub cold: bool,
    /// Count fileset exhaustion and go on instead of ending the run there.
    pub continue_when_exhausted: bool,
    /// Count ENOSPC/EDQUOT errors and go on instead of ending the run there.
    pub continue_on_enospc: bool,
    /// Threads writing the preallocated files (`None`: Filebench's rule, see
    /// [`fileset::layout::threads`]).
    pub layout_threads: Option<usize>,
    /// A finish flowop that is done ends the run in every quit mode (Filebench's 1.5-alpha3
    /// tag) instead of ending its thread (Filebench's current source).
    pub finish_ends_run: bool,
    /// What a flowop's latency covers.
    pub latency: Latency,
    /// Where Filebench flowops' I/O buffers start (`--buffers`).
    pub buffers: Buffers,
    /// Ask the kernel before each buffered read how much of it the page cache holds
    /// (`--cache-stat`).
    pub cache_stat: bool,
    /// The block devices a fio job may name (`--allow-device`), and those whose data it
    /// may overwrite (`--allow-device-with-data`): see `fsbench_base::sys::device`.
    pub allow_devices: Vec<PathBuf>,
    pub allow_device_data: Vec<PathBuf>,
    /// `--nfs URL`: the run directory, the filesets and every flowop's operations are on
    /// this NFS export, reached through libnfs (no kernel mount); `parent` is unused then.
    pub nfs: Option<String>,
    /// Which data the run stamps and checks (`--verify`, flowops' `verify`).
    pub verify: fsbench_model::verify::Mode,
    /// Over NFS: count each flowop's calls per procedure (through a relay per worker).
    pub nfs_rpcs: bool,
    /// Over NFS: the network the relays dial (counting the calls too).
    pub nfs_link: Option<fsbench_base::libnfs::relay::Link>,
}

impl RunOptions {
    pub fn new(parent: PathBuf) -> RunOptions {
        RunOptions {
            parent,
            duration: None,
            seed: 1,
            keep: false,
            allow_system: false,
            quiet: true,
            warmup: 0.0,
            interval: 1.0,
            progress: false,
            cold: false,
            continue_when_exhausted: false,
            continue_on_enospc: false,
            layout_threads: None,
            finish_ends_run: false,
            latency: Latency::Calls,
            buffers: Buffers::Filebench,
            cache_stat: false,
            allow_devices: Vec::new(),
            allow_device_data: Vec::new(),
            nfs: None,
            verify: fsbench_model::verify::Mode::Off,
            nfs_rpcs: false,
            nfs_link: None,
        }
    }
}

/// What a cold run drops, as its notes and an experiment's flags say it.
pub const COLD_DROP: &str = "sync, then the page, dentry and inode caches dropped (echo 3 > /proc/sys/vm/drop_caches; a simulated remote's client cache emptied)";

/// `sync`, then drop the page cache, dentries and inodes, and empty the client cache of
/// every running simulated remote (`fsbench remote`, through [`hooks`]).
pub fn drop_caches() -> Result<(), EngineError> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", b"3").map_err(|e| {
        EngineError::Cold(format!(
            "cannot drop the page cache (writing /proc/sys/vm/drop_caches: {e}); --cold needs root"
        ))
    })?;
    fsbench_base::sys::cachedrops::note_own();
    hooks::drop_caches().map_err(EngineError::Cold)
}

/// Whether the process runs as root (needed for --cold).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    Unsupported(String),
    /// A block device a job names that the device guard refused.
    #[error("{0}")]
    Device(String),
    #[error(transparent)]
    RunDir(#[from] rundir::RunDirError),
    #[error("{0}")]
    NoSpace(String),
    /// The workload asks for more memory, threads or space than the machine has.
    #[error("{0}")]
    TooLarge(String),
    #[error("laying out fileset `{fileset}`: {source}")]
    Layout {
        fileset: String,
        source: LayoutError,
    },
    #[error("cannot start worker threads: {0}")]
    Spawn(std::io::Error),
    #[error("interrupted before the run started")]
    Interrupted,
    #[error("{0}")]
    Cold(String),
    /// Connecting to, or working on, the NFS server of `--nfs` failed.
    #[error("{0}")]
    Nfs(String),
    #[error("a worker failed: {0}")]
    Worker(String),
    #[error("the run ended during the warm-up ({0}); lower --warmup or raise the workload's finish counts")]
    EndedInWarmup(String),
}

/// fio's `ioscheduler`: the device under the jobs' files (`dev`) runs under the scheduler
/// the jobs name until the returned guards drop (then the old one is back). Only a device
/// fsbench made may be switched (a simulated disk, through [`hooks`]); any other is refused
/// with the option's place, as are two jobs naming two schedulers of one device.
fn switch_schedulers(
    wl: &Workload,
    dev: Option<(u32, u32)>,
) -> Result<Vec<Box<dyn hooks::Restore>>, EngineError> {
    let asked: Vec<&(String, String)> = (wl.processes.iter())
        .flat_map(|p| &p.threads)
        .flat_map(|t| &t.flowops)
        .filter_map(|f| f.stream.as_deref()?.ctl.scheduler.as_ref())
        .collect();
    let Some((name, place)) = asked.first() else {
        return Ok(Vec::new());
    };
    let refuse =
        |why: String| EngineError::Unsupported(format!("{place}: ioscheduler={name}: {why}"));
    if let Some((other, at)) = asked.iter().find(|(n, _)| n != name) {
        return Err(refuse(format!("another job asks for {other} ({at}); fsbench sets one scheduler of the device for the whole run")));
    }
    let Some(dev) = dev else {
        return Err(refuse("no block device under the jobs' files".into()));
    };
    match hooks::scheduler(dev, name) {
        Some(Ok(g)) => Ok(vec![g]),
        Some(Err(e)) => Err(refuse(e)),
        None => Err(refuse(format!(
            "the device under the jobs' files ({}:{}) is not one fsbench made (a simulated disk, `fsbench disk create`), and fsbench changes no other device's settings; run the job on a simulated disk, or leave ioscheduler out",
            dev.0, dev.1
        ))),
    }
}

/// Bytes free for unprivileged users on the file system holding `p`.
pub fn free_space(p: &Path) -> Option<u64> {
    statvfs_free(p)
}

fn statvfs_free(p: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
    // SAFETY: st is written by the kernel.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        Some(st.f_bavail as u64 * st.f_frsize as u64)
    }
}

/// Check that the planned filesets fit, with a little room for metadata.
pub fn check_space(wl: &Workload, plans: &[Plan], dir: &Path) -> Result<(), EngineError> {
    let need: u64 = plans.iter().map(|p| p.bytes()).sum();
    let files: usize = plans.iter().map(|p| p.prealloc_files.count()).sum();
    let Some(free) = statvfs_free(dir) else {
        return Ok(());
    };
    // Files a `reuse` fileset left here are reused, not written again.
    let free = free.saturating_add(rundir::reusable_bytes(dir, wl));
    let need_total = need + need / 50 + files as u64 * 4096;
    if need_total > free {
        let biggest = plans
            .iter()
            .max_by_key(|p| p.bytes())
            .map(|p| wl.filesets[p.index].name.clone())
            .unwrap_or_default();
        return Err(EngineError::NoSpace(format!(
            "the filesets need {} ({} preallocated files), but {} has {} free; \
             lower -s filesize/-s nfiles (the largest fileset is `{biggest}`), or pass --dir on a larger file system",
            fsbench_base::units::human_bytes(need_total as f64),
            files,
            dir.display(),
            fsbench_base::units::human_bytes(free as f64)
        )));
    }
    Ok(())
}

/// The workload's run time: `--duration`, else `run N`, else 60 s.
pub fn run_seconds(wl: &Workload, opts: &RunOptions) -> f64 {
    opts.duration
        .or(wl.run_seconds.map(|s| s as f64))
        .unwrap_or(60.0)
}

struct Laid {
    filesets: Vec<FilesetRt>,
    layout: LayoutResult,
}

fn lay_out(
    wl: &Workload,
    opts: &RunOptions,
    rd: &RunDir,
    plans: Vec<Plan>,
) -> Result<Laid, EngineError> {
    let mut out = Vec::new();
    let mut total = LayoutResult::default();
    for plan in plans {
        let fs = &wl.filesets[plan.index];
        let root = rd.path.join(&fs.name);
        if !fs.reuse {
            // Inside our own marked run directory: a fileset from an earlier run (removed
            // from the run directory's descriptor, never through a link).
            fsbench_base::beneath::component(std::ffi::OsStr::new(&fs.name))
                .and_then(|n| fsbench_base::owned::remove::tree(rd.fd(), &n))
                .map_err(|e| EngineError::Layout {
                    fileset: fs.name.clone(),
                    source: LayoutError::Io {
                        path: root.clone(),
                        source: e,
                    },
                })?;
        }
        if !opts.quiet {
            fsbench_base::errln!(
                "fsbench: laying out fileset {} ({}, {})",
                fs.name,
                fsbench_base::units::count(plan.prealloc_files.count() as u64, "file"),
                fsbench_base::units::human_bytes(plan.bytes() as f64)
            );
        }
        let how = fileset::layout::How {
            seed: opts.seed,
            threads: opts.layout_threads,
            verify: opts.verify.on(),
        };
        let (rt, st) =
            fileset::layout::create(plan, fs, rd.fd(), root, how).map_err(|e| match e {
                LayoutError::Interrupted => EngineError::Interrupted,
                other => EngineError::Layout {
                    fileset: fs.name.clone(),
                    source: other,
                },
            })?;
        add_layout(&mut total, st);
        out.push(rt);
    }
    Ok(Laid {
        filesets: out,
        layout: total,
    })
}

/// Count one fileset's layout into the run's.
fn add_layout(total: &mut LayoutResult, st: fileset::layout::LayoutStats) {
    total.dirs += st.dirs;
    total.files_written += st.files_written;
    total.files_reused += st.files_reused;
    total.bytes_written += st.bytes_written;
    total.seconds += st.seconds;
    total.content.extend(st.content);
}

/// A workload laid out in its marked run directory, ready to be measured: what
/// [`prepare`] makes and `fsbench run`'s measurement holds between its preparation and its
/// measurement. Dropped without [`Prepared::finish`] (a panic on the way), it removes the
/// run directory unless it is kept.
pub struct Prepared {
    /// The local run directory (`None` over NFS, and after `finish`).
    rd: Option<RunDir>,
    /// Over NFS: the run directory on the export and what the workers mount.
    remote: Option<nfsrun::Remote>,
    laid: Laid,
    /// Kept afterwards (`--keep`, or a fileset with `reuse`).
    keep: bool,
    /// A script that lays out and has no `run`: nothing to measure.
    create_only: bool,
    seconds: f64,
    /// The block devices the jobs name, held exclusively for the run.
    _devices: Vec<fsbench_base::sys::device::Guarded>,
}

/// Check, plan and lay out a workload: the run directory, the script's commands before its
/// `run` in order, the filesets (by `create files` or now) and what the run is about to do.
/// On an error the run directory is removed (unless kept) before returning.
pub fn prepare(wl: &Workload, opts: &RunOptions) -> Result<Prepared, EngineError> {
    if let Some(url) = &opts.nfs {
        return nfsrun::prepare(wl, opts, url);
    }
    if opts.cold && !is_root() {
        return Err(EngineError::Cold(
            "--cold drops the page cache, which needs root; run as root or leave out --cold".into(),
        ));
    }
    let unsupported = wl.unsupported();
    if !unsupported.is_empty() {
        return Err(EngineError::Unsupported(
            unsupported
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n\n"),
        ));
    }
    // Every block device a job names passes the device guard before anything is made.
    let devices = streamfiles::guard_devices(wl, opts).map_err(EngineError::Device)?;
    let stable = wl.filesets.iter().any(|f| f.reuse);
    // Estimate from the parameters, then plan: what is too large fails before anything is
    // allocated or created on disk.
    let est = preflight::check(wl, &opts.parent)?;
    if !opts.quiet {
        fsbench_base::errln!("fsbench: {}", est.describe());
    }
    let plans: Vec<Plan> = wl
        .filesets
        .iter()
        .enumerate()
        .map(|(i, f)| fileset::layout::plan(i, f, &wl.randvars, opts.seed))
        .collect();
    if interrupted() {
        return Err(EngineError::Interrupted);
    }
    let mut rd = RunDir::create(&opts.parent, &wl.name, stable)?;
    if !opts.quiet {
        fsbench_base::errln!("fsbench: run directory {}", rd.path.display());
    }
    let keep = opts.keep || stable;
    // A panic anywhere below still removes what this run created, then goes on unwinding.
    let laid = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lay_out_all(wl, opts, &mut rd, plans)
    }));
    let laid = match laid {
        Ok(Ok(laid)) => laid,
        Ok(Err(e)) => {
            finish_dir(rd, keep, opts.quiet);
            return Err(e);
        }
        Err(p) => {
            if !keep {
                let _ = rd.remove();
            }
            std::panic::resume_unwind(p);
        }
    };
    // As Filebench: a script that creates its files and has no `run` lays out and ends;
    // nothing runs (an explicit --duration still runs it).
    let create_only = !wl.has_run
        && opts.duration.is_none()
        && wl.actions.iter().any(|a| matches!(a, Action::CreateFiles));
    let seconds = run_seconds(wl, opts);
    if create_only {
        if !opts.quiet {
            fsbench_base::errln!(
                "fsbench: `create files` and no `run`: laid out, nothing to measure"
            );
        }
    } else {
        announce(wl, opts, seconds);
    }
    Ok(Prepared {
        rd: Some(rd),
        remote: None,
        laid,
        keep,
        create_only,
        seconds,
        _devices: devices,
    })
}

/// The run is over (or failed): remove the run directory unless it is kept, and say so.
fn finish_dir(rd: RunDir, keep: bool, quiet: bool) {
    if keep {
        if !quiet {
            fsbench_base::errln!("fsbench: kept {}", rd.path.display());
        }
    } else if let Err(e) = rd.remove() {
        fsbench_base::exit::left_behind(e.to_string());
    }
}

/// The space check, the script's commands and the layout.
fn lay_out_all(
    wl: &Workload,
    opts: &RunOptions,
    rd: &mut RunDir,
    plans: Vec<Plan>,
) -> Result<Laid, EngineError> {
    check_space(wl, &plans, &rd.path)?;
    let laid = prepare_filesets(wl, opts, rd, plans)?;
    if interrupted() {
        return Err(EngineError::Interrupted);
    }
    Ok(laid)
}

impl Prepared {
    fn rd(&self) -> &RunDir {
        self.rd.as_ref().expect("held until finish")
    }

    /// The run directory (over NFS, its place on the export as `nfs://server/export/name`).
    pub fn path(&self) -> &Path {
        match &self.remote {
            Some(r) => &r.shown,
            None => &self.rd().path,
        }
    }

    /// False for a script that lays out and has no `run`: nothing is measured.
    pub fn measures(&self) -> bool {
        !self.create_only
    }

    /// Close every descriptor on the file system (run directory, fileset roots, cached
    /// directories) for a remount; [`Prepared::reopen`] opens them again.
    pub fn release(&mut self) -> (u64, u64) {
        if self.remote.is_some() {
            // Nothing of an NFS run is open on a local file system.
            return (0, 0);
        }
        let rd = self.rd.as_mut().expect("held until finish");
        let id = rd.id();
        for f in self.laid.filesets.iter_mut() {
            f.dirs.release();
        }
        rd.release();
        id
    }

    /// After a remount: the run directory (checked to be the one released) and the
    /// filesets' roots opened again.
    pub fn reopen(&mut self, id: (u64, u64)) -> Result<(), EngineError> {
        if self.remote.is_some() {
            return Ok(());
        }
        let rd = self.rd.as_mut().expect("held until finish");
        rd.reopen(id)?;
        for f in self.laid.filesets.iter_mut() {
            let name = fsbench_base::beneath::component(std::ffi::OsStr::new(&f.name))
                .and_then(|n| fsbench_base::beneath::open_dir(rd.fd(), &n))
                .map_err(|e| EngineError::Cold(format!("{}: {e}", f.root.display())))?;
            f.dirs.reopen(name);
        }
        Ok(())
    }

    /// Measure the laid-out workload: its host facts at the start, the workers from the
    /// barrier and start mark to the end mark (after the in-run warm-up), its results. A
    /// script without `run` gets the results of its layout.
    pub fn measure(&mut self, wl: &Workload, opts: &RunOptions) -> Result<Results, EngineError> {
        let dir = self.path().to_path_buf();
        let layout = std::mem::take(&mut self.laid.layout);
        if self.create_only {
            let rec = Recorder::new(wl.stat_names.len());
            let (flowops, summary) = stats::summarize(&wl.stat_names, &rec, 0.0, opts.verify.on());
            return Ok(Results {
                layout,
                flowops,
                summary,
                notes: vec![
                    "the workload creates its files and has no `run`: nothing was run".into(),
                ],
                host: self.host(),
                ..run_results(wl, opts, &dir)
            });
        }
        let host = self.host();
        // The device under the jobs' files: a block device a job names, else the run
        // directory's (over NFS the server's device is not this run's to watch).
        let device = (self._devices.first())
            .map(|g| (libc::major(g.rdev), libc::minor(g.rdev)))
            .or_else(|| {
                self.rd
                    .as_ref()
                    .and_then(|rd| fsbench_base::sys::blockstat::device_of(&rd.path))
            });
        let _schedulers = switch_schedulers(wl, device)?;
        let m = measure(
            wl,
            &self.laid.filesets,
            opts.seed,
            MeasureOptions {
                seconds: self.seconds,
                warmup: opts.warmup,
                interval: opts.interval,
                progress: opts.progress,
                continue_when_exhausted: opts.continue_when_exhausted,
                continue_on_enospc: opts.continue_on_enospc,
                device,
                finish_ends_run: opts.finish_ends_run,
                latency: opts.latency,
                buffers: opts.buffers,
                cache_stat: opts.cache_stat,
                stream_dir: self.rd.as_ref().map(|rd| rd.fd()),
                nfs: self.remote.as_ref().map(|r| &r.target),
                verify: opts.verify,
            },
        )?;
        let (flowops, summary) =
            stats::summarize(&wl.stat_names, &m.rec, m.duration, opts.verify.on());
        let mut notes = m.notes;
        notes.extend(self.remote.as_ref().and_then(|r| r.relay_note()));
        if opts.buffers == Buffers::Aligned {
            notes.push(
                "I/O buffers page-aligned (--buffers aligned); Filebench's start 16 bytes past \
                 a page boundary"
                    .to_string(),
            );
        }
        if opts.latency == Latency::Flowop {
            notes.push(
                "latencies cover whole flowops (--latency flowop): picking the file, waiting \
                 for a busy one and releasing it are included"
                    .to_string(),
            );
        }
        let processes = stats::shares::process_shares(wl, &flowops, m.duration);
        let mut r = Results {
            started_at: m.started_at,
            duration_s: m.duration,
            interrupted: m.interrupted,
            ended_early: m.ended_early,
            device_read_bytes: m.device_read_bytes,
            device_busy_s: m.device_busy_s,
            cpu_busy_s: m.cpu_busy_s,
            device_write_bytes: m.device_write_bytes,
            disk_stats: m.disk_stats,
            fio_jobs: m.rec.fio.clone(),
            processes,
            threads: wl.thread_count(),
            layout,
            flowops,
            summary,
            notes,
            warmup_s: opts.warmup,
            host,
            series: m.series,
            ..run_results(wl, opts, &dir)
        };
        stats::fiojob::per_job_rates(&mut r);
        Ok(r)
    }

    /// Remove the run directory unless it is kept (saying so unless `quiet`).
    pub fn finish(mut self, quiet: bool) {
        // The filesets' descriptors are closed before their directory is removed.
        self.laid.filesets.clear();
        if let Some(rd) = self.rd.take() {
            finish_dir(rd, self.keep, quiet);
        }
        if let Some(r) = self.remote.take() {
            r.finish(self.keep, quiet);
        }
    }

    /// The host facts of the run: those of the run directory's file system, or over NFS
    /// the export's URL and the user-space client.
    fn host(&self) -> stats::Host {
        match &self.remote {
            Some(r) => r.host(),
            None => stats::host::collect(&self.rd().path),
        }
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        self.laid.filesets.clear();
        if let Some(rd) = self.rd.take() {
            if !self.keep {
                let _ = rd.remove();
            }
        }
        if let Some(r) = self.remote.take() {
            r.finish(self.keep, true);
        }
    }
}

/// The script's commands before `run`, the filesets' layout (by `create files` or now) and
/// the files of `stream` flowops (fio jobs).
fn prepare_filesets(
    wl: &Workload,
    opts: &RunOptions,
    rd: &mut RunDir,
    plans: Vec<Plan>,
) -> Result<Laid, EngineError> {
    let mut plans = Some(plans);
    let path = rd.path.clone();
    let laid = run_actions(wl, opts, &path, &mut plans, &mut |p| {
        lay_out(wl, opts, rd, p)
    })?;
    let mut laid = match (laid, plans) {
        (Some(l), _) => l,
        (None, Some(plans)) => lay_out(wl, opts, rd, plans)?,
        (None, None) => unreachable!("the plans are used only by the layout"),
    };
    let streamed = streamfiles::lay_out(wl, rd.fd(), opts.quiet).map_err(|e| {
        if e.kind() == std::io::ErrorKind::Interrupted {
            EngineError::Interrupted
        } else {
            EngineError::Worker(format!(
                "laying out the files of {}: {e}",
                rd.path.display()
            ))
        }
    })?;
    laid.layout.files_written += streamed.files;
    laid.layout.bytes_written += streamed.bytes_written;
    Ok(laid)
}

/// What every `fsbench run` result carries: the workload, its variables and text hash, the
/// seed, the run directory and how it was sampled.
fn run_results(wl: &Workload, opts: &RunOptions, dir: &Path) -> Results {
    Results {
        variables: wl.vars.iter().cloned().collect(),
        workload_hash: stats::text_hash(&wl.source.text),
        interval_s: opts.interval,
        cold: opts.cold,
        ..Results::new(&wl.name, &wl.source.name, opts.seed, dir)
    }
}

/// What the run is about to do, on standard error.
fn announce(wl: &Workload, opts: &RunOptions, seconds: f64) {
    if opts.quiet {
        return;
    }
    // A workload bounded by its work (a fio job's bytes, loops or I/O count) runs until
    // it is done: its year-long limit is no bound to announce.
    if seconds >= fsbench_model::fio::map::UNBOUNDED_S as f64
        && wl.mode == fsbench_model::model::QuitMode::AllDone
    {
        fsbench_base::errln!(
            "fsbench: running {} until each has done its work (bytes, loops or I/O count; AllDone mode, no time limit)",
            fsbench_base::units::count(wl.thread_count(), "thread"),
        );
    } else {
        fsbench_base::errln!(
            "fsbench: running {} for {seconds} s ({})",
            fsbench_base::units::count(wl.thread_count(), "thread"),
            wl.mode.explain()
        );
    }
    if opts.warmup > 0.0 {
        fsbench_base::errln!(
            "fsbench: warming up for {} s first (not measured; statistics start afterwards)",
            opts.warmup
        );
    }
}

/// The layout of a run's filesets from their plans (in a local or a remote run directory).
type LayOut<'a> = dyn FnMut(Vec<Plan>) -> Result<Laid, EngineError> + 'a;

/// The script's commands before its `run`, in order (`system` ones run in `dir`); the
/// layout, by `lay`, when `create files` made it.
fn run_actions(
    wl: &Workload,
    opts: &RunOptions,
    dir: &Path,
    plans: &mut Option<Vec<Plan>>,
    lay: &mut LayOut<'_>,
) -> Result<Option<Laid>, EngineError> {
    let mut laid: Option<Laid> = None;
    for a in &wl.actions {
        if interrupted() {
            return Err(EngineError::Interrupted);
        }
        match a {
            Action::Echo(s) => {
                if !opts.quiet {
                    fsbench_base::say!("{s}");
                }
            }
            Action::System(cmd) => system(cmd, opts, dir),
            Action::Sleep(s) => {
                let end = Instant::now()
                    .checked_add(Duration::from_secs(*s))
                    .unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 40));
                while Instant::now() < end && !interrupted() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            Action::CreateFiles => {
                if let Some(plans) = plans.take() {
                    laid = Some(lay(plans)?);
                }
            }
            Action::Version => fsbench_base::say!("fsbench {}", env!("CARGO_PKG_VERSION")),
            Action::ListFilesets => {
                for f in &wl.filesets {
                    fsbench_base::say!(
                        "fileset {} entries={} dirwidth={}",
                        f.name,
                        f.entries,
                        f.dirwidth
                    );
                }
            }
            Action::ListFlowops => {
                for (n, k) in &wl.stat_names {
                    fsbench_base::say!("flowop {n} ({})", k.name());
                }
            }
            Action::Run => break,
        }
    }
    Ok(laid)
}

/// A `system "..."` command: run in the run directory with --allow-system, else named.
fn system(cmd: &str, opts: &RunOptions, dir: &Path) {
    if !opts.allow_system {
        if !opts.quiet {
            fsbench_base::errln!(
                "fsbench: not running system \"{cmd}\" (pass --allow-system to run it)"
            );
        }
        return;
    }
    if !opts.quiet {
        fsbench_base::errln!("fsbench: system \"{cmd}\"");
    }
    let st = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .status();
    if let Ok(st) = st {
        if !st.success() && !opts.quiet {
            fsbench_base::errln!("fsbench: warning: `{cmd}` exited with {st}");
        }
    }
}
