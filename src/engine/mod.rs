//! The engine: lay filesets out in a marked run directory, run every thread's flowops on
//! OS threads, stop on time, on completion or on Ctrl-C, and hand the merged recorders to
//! `stats`. Application benchmarks, aging and replay are meant to drive this same engine.

pub mod aio;
pub mod clean;
pub mod hooks;
pub use crate::sys::io;
pub mod preflight;
pub mod psrun;
pub mod rundir;
pub mod selftest;
pub mod sync;
pub mod worker;

use crate::fileset::{self, layout::LayoutError, FilesetRt, Plan};
use crate::model::{Action, FlowopKind, QuitMode, Workload};
use crate::stats::{self, LayoutResult, Recorder, Results};
use rundir::RunDir;
use stats::SeriesPoint;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};
use worker::{Flow, ProcCounters, Sample, Shared, Worker};

pub use crate::cancel::{install_signal_handlers, interrupted};

/// Run-wide control read by the workers between operations: one word, so a worker pays one
/// relaxed load per operation to learn about a stop, a statistics reset (end of warm-up) and
/// a new sampling interval.
#[derive(Debug, Default)]
pub struct Control {
    word: AtomicU64,
    finished: AtomicUsize,
    /// The first flowop that found its fileset exhausted (ends the run, as in Filebench).
    exhausted: Mutex<Option<String>>,
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
        }
    }
}

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
    #[error("a worker failed: {0}")]
    Worker(String),
    #[error("the run ended during the warm-up ({0}); lower --warmup or raise the workload's finish counts")]
    EndedInWarmup(String),
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

fn human(n: f64) -> String {
    crate::model::explain::human_bytes(n)
}

/// Check that the planned filesets fit, with a little room for metadata.
pub fn check_space(wl: &Workload, plans: &[Plan], dir: &Path) -> Result<(), EngineError> {
    let need: u64 = plans.iter().map(|p| p.bytes()).sum();
    let files: usize = plans
        .iter()
        .map(|p| p.prealloc_files.iter().filter(|x| **x).count())
        .sum();
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
            human(need_total as f64),
            files,
            dir.display(),
            human(free as f64)
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
    plans: &[Plan],
) -> Result<Laid, EngineError> {
    let mut out = Vec::new();
    let mut total = LayoutResult::default();
    for plan in plans {
        let fs = &wl.filesets[plan.index];
        let root = rd.path.join(&fs.name);
        if !fs.reuse {
            // Inside our own marked run directory: a fileset from an earlier run (removed
            // from the run directory's descriptor, never through a link).
            crate::beneath::component(std::ffi::OsStr::new(&fs.name))
                .and_then(|n| crate::beneath::remove_tree_at(rd.fd(), &n))
                .map_err(|e| EngineError::Layout {
                    fileset: fs.name.clone(),
                    source: LayoutError::Io {
                        path: root.clone(),
                        source: e,
                    },
                })?;
        }
        if !opts.quiet {
            crate::errln!(
                "fsbench: laying out fileset {} ({}, {})",
                fs.name,
                crate::units::count(
                    plan.prealloc_files.iter().filter(|x| **x).count() as u64,
                    "file"
                ),
                human(plan.bytes() as f64)
            );
        }
        let (rt, st) =
            fileset::layout::create(plan, fs, rd.fd(), root, opts.seed).map_err(|e| match e {
                LayoutError::Interrupted => EngineError::Interrupted,
                other => EngineError::Layout {
                    fileset: fs.name.clone(),
                    source: other,
                },
            })?;
        total.dirs += st.dirs;
        total.files_written += st.files_written;
        total.files_reused += st.files_reused;
        total.bytes_written += st.bytes_written;
        total.seconds += st.seconds;
        total.content.extend(st.content);
        out.push(rt);
    }
    Ok(Laid {
        filesets: out,
        layout: total,
    })
}

/// Apply a process's `nice` and a thread's `ioprio` to the calling thread.
fn apply_priorities(nice: Option<i32>, ioprio: Option<u32>) {
    // SAFETY: plain system calls on the calling thread's id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        if let Some(n) = nice {
            libc::setpriority(libc::PRIO_PROCESS, tid, n);
        }
        if let Some(p) = ioprio {
            const IOPRIO_CLASS_BE: u32 = 2;
            const IOPRIO_WHO_PROCESS: libc::c_int = 1;
            libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                tid as libc::c_int,
                (IOPRIO_CLASS_BE << 13) | p,
            );
        }
    }
}

/// Start gate: workers set themselves up, report ready, and wait for the go (or an abort).
#[derive(Default)]
struct Gate {
    state: Mutex<(usize, bool)>,
    cv: Condvar,
}

impl Gate {
    fn ready(&self) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.0 += 1;
        self.cv.notify_all();
    }
    fn wait_open(&self) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while !g.1 {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
    /// Wait until `n` workers are ready; false when interrupted first.
    fn wait_ready(&self, n: usize) -> bool {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while g.0 < n {
            if interrupted() {
                return false;
            }
            g = self
                .cv
                .wait_timeout(g, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.cv.notify_all();
    }
}

/// Counts a worker as ready even if it fails or panics while setting up, so the run never
/// waits for a worker that is gone.
struct ReadyOnDrop<'a>(&'a Gate, bool);

impl ReadyOnDrop<'_> {
    fn ready(&mut self) {
        if !self.1 {
            self.1 = true;
            self.0.ready();
        }
    }
}

impl Drop for ReadyOnDrop<'_> {
    fn drop(&mut self) {
        self.ready();
    }
}

/// Stops the run (workers, pacing waits, the start gate) when the measuring thread leaves
/// the scope by any path, a panic included, so no worker is left running.
struct StopOnDrop<'a>(&'a Control, &'a sync::Pacing, &'a Gate);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
        self.1.shutdown();
        self.2.open();
    }
}

/// What the measured phase produced.
pub struct Measured {
    pub rec: Recorder,
    pub duration: f64,
    pub started_at: f64,
    pub interrupted: bool,
    pub notes: Vec<String>,
    pub series: Vec<SeriesPoint>,
}

/// How to measure.
#[derive(Debug, Clone, Copy)]
pub struct MeasureOptions {
    pub seconds: f64,
    /// Run this long first and discard what it measured.
    pub warmup: f64,
    /// Time-series sampling interval.
    pub interval: f64,
    /// Show a live progress line on standard error.
    pub progress: bool,
    /// Count fileset exhaustion and go on instead of ending the run there.
    pub continue_when_exhausted: bool,
    pub continue_on_enospc: bool,
}

/// Sum what the workers published for the current epoch and turn the difference from the
/// previous sample into a time-series point.
struct Sampler {
    /// Per worker: cumulative (count, bytes) per flowop at the previous sample.
    prev: Vec<Vec<(u64, u64)>>,
    last_t: f64,
    counted: Vec<bool>,
}

impl Sampler {
    fn new(workers: usize, wl: &Workload) -> Sampler {
        Sampler {
            prev: vec![Vec::new(); workers],
            last_t: 0.0,
            counted: wl
                .stat_names
                .iter()
                .map(|(_, k)| stats::counts_in_summary(*k))
                .collect(),
        }
    }

    fn reset(&mut self, t: f64) {
        for p in &mut self.prev {
            p.clear();
        }
        self.last_t = t;
    }

    fn sample(
        &mut self,
        samples: &[Mutex<Sample>],
        generation: u64,
        nstats: usize,
        t: f64,
    ) -> SeriesPoint {
        let mut ops = vec![0u64; nstats];
        let mut bytes = vec![0u64; nstats];
        let mut hists: Vec<stats::loghist::LogHist> =
            (0..nstats).map(|_| Default::default()).collect();
        for (w, slot) in samples.iter().enumerate() {
            let mut g = slot.lock().unwrap();
            if g.word >> GEN_SHIFT != generation || g.ops.len() != nstats {
                continue;
            }
            let prev = &mut self.prev[w];
            for (i, (c, b)) in g.ops.iter().enumerate() {
                let (pc, pb) = prev.get(i).copied().unwrap_or((0, 0));
                ops[i] += c.saturating_sub(pc);
                bytes[i] += b.saturating_sub(pb);
            }
            for (i, h) in g.hists.iter_mut().enumerate() {
                hists[i].add(h);
                h.reset();
            }
            prev.clear();
            prev.extend(g.ops.iter().copied());
        }
        let dt = (t - self.last_t).max(1e-6);
        self.last_t = t;
        stats::series_point(t, dt, &ops, &bytes, &hists, &self.counted)
    }
}

/// Run the workers on laid-out filesets.
pub fn measure(
    wl: &Workload,
    filesets: &[FilesetRt],
    seed: u64,
    mo: MeasureOptions,
) -> Result<Measured, EngineError> {
    let ctl = Control::default();
    let _ = ctl.measurer.set(std::thread::current());
    let nproc: usize = wl.processes.iter().map(|p| p.instances as usize).sum();
    let procs: Vec<ProcCounters> = (0..nproc).map(|_| ProcCounters::default()).collect();
    let count_procs = wl.all_flowops().iter().any(|f| {
        matches!(
            f.kind,
            FlowopKind::FinishOnCount | FlowopKind::FinishOnBytes
        ) && f.target.is_none()
    });
    let pacing = sync::Pacing::new(wl);
    let nthreads = wl.thread_count() as usize;
    let nstats = wl.stat_names.len();
    let samples: Vec<Mutex<Sample>> = (0..nthreads)
        .map(|_| Mutex::new(Sample::default()))
        .collect();
    let hists = stats::SharedHists::new(nstats);
    let shared = Shared {
        hists: &hists,
        wl,
        filesets,
        ctl: &ctl,
        procs: &procs,
        count_procs,
        continue_when_exhausted: mo.continue_when_exhausted,
        continue_on_enospc: mo.continue_on_enospc,
        clock: *stats::clock::global(),
        samples: &samples,
        pacing: &pacing,
    };
    let gate = Gate::default();
    let mut merged = Recorder::new(nstats);
    let mut notes = Vec::new();
    let mut series = Vec::new();
    let mut duration = 0.0;
    let mut started_at = 0.0;
    let mut was_interrupted = false;
    let mut failures: Vec<String> = Vec::new();
    let mut ended_in_warmup = false;
    let mut cluster_failed = false;
    let mut stonewalled = false;
    let spawn_err: Option<std::io::Error> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        let mut worker_idx = 0u64;
        let mut proc_idx = 0usize;
        for p in &wl.processes {
            for pi in 0..p.instances {
                for t in &p.threads {
                    for ti in 0..t.instances {
                        let (shared, gate) = (&shared, &gate);
                        let idx = worker_idx;
                        let pidx = proc_idx;
                        let nice = p.nice;
                        let b = std::thread::Builder::new()
                            .name(format!("{}.{}:{}.{}", p.name, pi, t.name, ti));
                        // Worker stacks hold no buffers (those are on the heap): keep them small so
                        // thousands of threads fit.
                        let b = b.stack_size(512 << 10);
                        match b.spawn_scoped(s, move || {
                            let mut ready = ReadyOnDrop(gate, false);
                            apply_priorities(nice, t.ioprio);
                            let mut w = Worker::new(shared, t, pidx, idx, seed)?;
                            ready.ready();
                            gate.wait_open();
                            w.begin();
                            let flow = w.run();
                            // As Filebench (flowop.c): a finish flowop that is done ends the
                            // run in every mode; a flowop without a file ends it except in
                            // `alldone` mode; a full file system ends it always. The others
                            // stop before their next flowop.
                            let ends_run = match flow {
                                Flow::Done => true,
                                Flow::Exhausted => {
                                    shared.wl.mode != QuitMode::AllDone
                                        || shared.ctl.no_space.lock().is_ok_and(|x| x.is_some())
                                }
                                _ => false,
                            };
                            if ends_run {
                                shared.ctl.end_run();
                            }
                            w.finish();
                            if flow == Flow::Done || flow == Flow::Exhausted {
                                shared.ctl.finished.fetch_add(1, Ordering::SeqCst);
                            }
                            w.close_all();
                            Ok::<_, String>((w.rec, w.testrandvar))
                        }) {
                            Ok(h) => handles.push(h),
                            Err(e) => {
                                // Release the threads already waiting (they see the stop), then report.
                                ctl.stop();
                                pacing.shutdown();
                                gate.open();
                                return Some(e);
                            }
                        }
                        worker_idx += 1;
                    }
                }
                proc_idx += 1;
            }
        }
        let _stop = StopOnDrop(&ctl, &pacing, &gate);
        if !gate.wait_ready(nthreads) {
            was_interrupted = true;
            return None;
        }
        // With many clients every rank starts measuring together (after its layout).
        if !crate::cluster::barrier() {
            cluster_failed = true;
            return None;
        }
        // The clock starts before the workers are released: with many clients (and more
        // threads than cores) the instant every rank agreed on, not when the scheduler
        // next lets this thread run after waking its workers.
        let mut t0 = Instant::now();
        pacing.start();
        crate::sys::mark::mark(crate::sys::mark::MARK_START);
        gate.open();
        let mut warming = mo.warmup > 0.0;
        let mut generation = 0u64;
        // With `psrun`, the samples come every psrun period and each prints a block.
        let interval = Duration::from_secs_f64(match wl.psrun_period {
            Some(p) => p.unsigned_abs().max(1) as f64,
            None => mo.interval.max(0.05),
        });
        let mut next_tick = t0 + interval;
        let mut sampler = Sampler::new(nthreads, wl);
        let limit = Duration::from_secs_f64(mo.seconds.max(0.0));
        let warm = Duration::from_secs_f64(mo.warmup.max(0.0));
        loop {
            let now = Instant::now();
            if warming && now - t0 >= warm {
                // Warm-up over: workers reset their statistics when they see the new generation.
                warming = false;
                // Finish flowops count from the start of measurement, like everything else.
                for p in &procs {
                    p.ops.store(0, Ordering::SeqCst);
                    p.bytes.store(0, Ordering::SeqCst);
                }
                ctl.next_generation();
                generation += 1;
                t0 = now;
                next_tick = t0 + interval;
                sampler.reset(0.0);
                series.clear();
            }
            let elapsed = now - t0;
            if !warming && elapsed >= limit {
                break;
            }
            if interrupted() {
                was_interrupted = true;
                break;
            }
            // Stonewalling: another rank finished, so this one stops where it is.
            if !warming && crate::cluster::stop_requested() {
                stonewalled = true;
                break;
            }
            // A worker ended the run (a finish flowop, an exhausted fileset, a full disk).
            if ctl.stopping() {
                break;
            }
            let finished = ctl.finished.load(Ordering::SeqCst);
            if finished > 0 && (wl.mode == QuitMode::FirstDone || finished == nthreads) {
                break;
            }
            // As Filebench: a flowop that cannot obtain a file ends its thread; the run
            // ends with it except in `alldone` mode, where the others go on.
            if wl.mode != QuitMode::AllDone && ctl.exhausted.lock().is_ok_and(|x| x.is_some()) {
                break;
            }
            // As Filebench, where a failed flowop shuts the run down: a full file system
            // ends the run (whatever the mode), with the results up to there.
            if ctl.no_space.lock().is_ok_and(|x| x.is_some()) {
                break;
            }
            if handles.iter().all(|h| h.is_finished()) {
                break;
            }
            if now >= next_tick {
                if !warming {
                    let t = (now - t0).as_secs_f64();
                    let p = take_sample(&ctl, &samples, &mut sampler, generation, nstats, t);
                    if mo.progress {
                        progress_line(&p, t, mo.seconds);
                    }
                    if wl.psrun_period.is_some() {
                        crate::report::out::human(&psrun::block(wl, &p, interval.as_secs_f64()));
                    }
                    series.push(p);
                } else {
                    ctl.next_epoch();
                }
                next_tick += interval;
            }
            let until = if warming {
                warm.saturating_sub(elapsed)
            } else {
                limit.saturating_sub(elapsed)
            };
            // Parked, not asleep: a worker that ends the run wakes this thread at once.
            std::thread::park_timeout(
                until
                    .min(next_tick.saturating_duration_since(Instant::now()))
                    .min(Duration::from_millis(20)),
            );
        }
        if warming && !was_interrupted {
            ended_in_warmup = true;
        }
        // A last sample for the partial interval at the end.
        let t_end = t0.elapsed().as_secs_f64();
        if !warming && t_end - sampler.last_t > 0.05 {
            series.push(take_sample(
                &ctl,
                &samples,
                &mut sampler,
                generation,
                nstats,
                t_end,
            ));
        }
        ctl.stop();
        crate::sys::mark::mark(crate::sys::mark::MARK_END);
        crate::cluster::finished();
        pacing.shutdown();
        if mo.progress {
            crate::err!("\r\x1b[2K");
        }
        duration = t0.elapsed().as_secs_f64();
        started_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64() - duration)
            .unwrap_or(0.0);
        for h in handles {
            match h.join() {
                Ok(Err(msg)) => {
                    failures.push(msg);
                }
                Err(p) => {
                    let msg = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "a worker thread failed".into());
                    failures.push(msg);
                }
                Ok(Ok((rec, trv))) => {
                    merged.merge(&rec);
                    for (name, n, sum, sq) in trv {
                        let mean = sum / n as f64;
                        let sd = (sq / n as f64 - mean * mean).max(0.0).sqrt();
                        notes.push(format!(
                            "testrandvar {name}: {n} samples, mean {mean:.2}, stddev {sd:.2}"
                        ));
                    }
                }
            }
        }
        None
    });
    if let Some(e) = spawn_err {
        return Err(EngineError::Spawn(e));
    }
    if cluster_failed {
        return Err(EngineError::Worker(format!(
            "rank {}: not started because another rank failed before the start (rank 0 reports its error)",
            crate::cluster::rank()
        )));
    }
    if stonewalled {
        notes.push(format!(
            "run ended by stonewalling after {duration:.3} s: another rank finished first"
        ));
    }
    if ended_in_warmup {
        return Err(EngineError::EndedInWarmup(format!(
            "every thread finished, or the first did in firstdone mode, before {:.1} s of warm-up were over",
            mo.warmup
        )));
    }
    if let Some(first) = failures.first() {
        return Err(EngineError::Worker(format!(
            "{first}{}",
            if failures.len() > 1 {
                format!(" (and {} more worker failures)", failures.len() - 1)
            } else {
                String::new()
            }
        )));
    }
    if let Some(what) = ctl.no_space.lock().ok().and_then(|mut x| x.take()) {
        notes.push(format!(
            "run ended early: the file system is full ({what}); --continue-on-enospc counts \
             such errors and goes on"
        ));
    }
    if let Some(who) = ctl.exhausted.lock().ok().and_then(|mut x| x.take()) {
        notes.push(format!(
            "run ended early: flowop {who} could not obtain a file (fileset exhausted); \
             --continue-when-exhausted counts this and goes on"
        ));
    }
    // The latency counts of the measured generation (workers count, the run histograms).
    let generation = generation(ctl.word.load(Ordering::SeqCst));
    for (o, h) in merged.ops.iter_mut().zip(hists.into_hists(generation)) {
        o.hist = h;
    }
    Ok(Measured {
        rec: merged,
        duration,
        started_at,
        interrupted: was_interrupted,
        notes,
        series,
    })
}

/// Open a new sampling epoch, give the workers a moment to publish their counters (they do
/// at their next operation; one blocked in a long operation is sampled next time), and turn
/// what they published into a time-series point.
fn take_sample(
    ctl: &Control,
    samples: &[Mutex<Sample>],
    sampler: &mut Sampler,
    generation: u64,
    nstats: usize,
    t: f64,
) -> SeriesPoint {
    ctl.next_epoch();
    let want = ctl.word() & !STOP;
    let deadline = Instant::now() + Duration::from_millis(20);
    while Instant::now() < deadline && samples.iter().any(|s| s.lock().unwrap().word != want) {
        std::thread::sleep(Duration::from_micros(500));
    }
    sampler.sample(samples, generation, nstats, t)
}

fn progress_line(p: &SeriesPoint, t: f64, total: f64) {
    use std::io::Write;
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "\r\x1b[2K{}", progress_text(p, t, total));
    let _ = e.flush();
}

/// `[elapsed/total s] ops/s MB/s`. Elapsed time carries a tenth of a second: whole seconds
/// rounded half to even showed two sub-second samples alike (`[2/4 s]` at 2.0 and 2.5 s).
fn progress_text(p: &SeriesPoint, t: f64, total: f64) -> String {
    format!(
        "[{t:5.1}/{total:.0} s] {:>10.0} ops/s {:>8.1} MB/s",
        p.ops_per_s, p.mb_per_s
    )
}

/// Run a workload end to end: run directory, actions in script order, layout, measurement,
/// clean-up. The run directory is removed afterwards unless `keep` or a fileset has `reuse`.
pub fn run(wl: &Workload, opts: &RunOptions) -> Result<Results, EngineError> {
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
    let stable = wl.filesets.iter().any(|f| f.reuse);
    // Estimate from the parameters, then plan: what is too large fails before anything is
    // allocated or created on disk.
    let est = preflight::check(wl, &opts.parent)?;
    if !opts.quiet {
        crate::errln!("fsbench: {}", est.describe());
    }
    let plans: Vec<Plan> = wl
        .filesets
        .iter()
        .enumerate()
        .map(|(i, f)| fileset::plan(i, f, &wl.randvars, opts.seed))
        .collect();
    if interrupted() {
        return Err(EngineError::Interrupted);
    }
    let mut rd = RunDir::create(&opts.parent, &wl.name, stable)?;
    if !opts.quiet {
        crate::errln!("fsbench: run directory {}", rd.path.display());
    }
    // A panic anywhere below still removes what this run created, then goes on unwinding.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_in(wl, opts, &mut rd, &plans)
    }));
    let result = match result {
        Ok(r) => r,
        Err(p) => {
            if !(opts.keep || stable) {
                let _ = rd.remove();
            }
            std::panic::resume_unwind(p);
        }
    };
    let keep = opts.keep || stable;
    if keep {
        if !opts.quiet {
            crate::errln!("fsbench: kept {}", rd.path.display());
        }
    } else if let Err(e) = rd.remove() {
        crate::exit::left_behind(e.to_string());
    }
    result
}

/// Have the experiment remount the file system between layout and measurement: close
/// every descriptor on it (run directory, fileset roots, cached directories), wait for the
/// remount, open them again.
fn remount_between(rd: &mut RunDir, filesets: &mut [FilesetRt]) -> Result<String, EngineError> {
    let id = rd.id();
    for f in filesets.iter_mut() {
        f.dirs.release();
    }
    rd.release();
    let what = crate::remount::remount().map_err(EngineError::Cold)?;
    rd.reopen(id)?;
    for f in filesets.iter_mut() {
        let name = crate::beneath::component(std::ffi::OsStr::new(&f.name))
            .and_then(|n| crate::beneath::open_dir(rd.fd(), &n))
            .map_err(|e| EngineError::Cold(format!("{}: {e}", f.root.display())))?;
        f.dirs.reopen(name);
    }
    Ok(what)
}

fn run_in(
    wl: &Workload,
    opts: &RunOptions,
    rd: &mut RunDir,
    plans: &[Plan],
) -> Result<Results, EngineError> {
    check_space(wl, plans, &rd.path)?;
    let mut laid: Option<Laid> = None;
    let seconds = run_seconds(wl, opts);
    let mut measured = None;
    for a in &wl.actions {
        if interrupted() {
            return Err(EngineError::Interrupted);
        }
        match a {
            Action::Echo(s) => {
                if !opts.quiet {
                    crate::say!("{s}");
                }
            }
            Action::System(cmd) => {
                if opts.allow_system {
                    if !opts.quiet {
                        crate::errln!("fsbench: system \"{cmd}\"");
                    }
                    let st = std::process::Command::new("sh")
                        .arg("-c")
                        .arg(cmd)
                        .current_dir(&rd.path)
                        .status();
                    if let Ok(st) = st {
                        if !st.success() && !opts.quiet {
                            crate::errln!("fsbench: warning: `{cmd}` exited with {st}");
                        }
                    }
                } else if !opts.quiet {
                    crate::errln!(
                        "fsbench: not running system \"{cmd}\" (pass --allow-system to run it)"
                    );
                }
            }
            Action::Sleep(s) => {
                let end = Instant::now()
                    .checked_add(Duration::from_secs(*s))
                    .unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 40));
                while Instant::now() < end && !interrupted() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            Action::CreateFiles => {
                if laid.is_none() {
                    laid = Some(lay_out(wl, opts, rd, plans)?);
                }
            }
            Action::Version => crate::say!("fsbench {}", env!("CARGO_PKG_VERSION")),
            Action::ListFilesets => {
                for f in &wl.filesets {
                    crate::say!(
                        "fileset {} entries={} dirwidth={}",
                        f.name,
                        f.entries,
                        f.dirwidth
                    );
                }
            }
            Action::ListFlowops => {
                for (n, k) in &wl.stat_names {
                    crate::say!("flowop {n} ({})", k.name());
                }
            }
            Action::Run => break,
        }
    }
    if laid.is_none() {
        laid = Some(lay_out(wl, opts, rd, plans)?);
    }
    let mut laid = laid.expect("laid out above");
    if interrupted() {
        return Err(EngineError::Interrupted);
    }
    // As Filebench: a script that creates its files and has no `run` lays out and ends;
    // nothing runs (an explicit --duration still runs it).
    let create_only = !wl.has_run
        && opts.duration.is_none()
        && wl.actions.iter().any(|a| matches!(a, Action::CreateFiles));
    if create_only {
        if !opts.quiet {
            crate::errln!("fsbench: `create files` and no `run`: laid out, nothing to measure");
        }
        let rec = Recorder::new(wl.stat_names.len());
        let (flowops, summary) = stats::summarize(&wl.stat_names, &rec, 0.0);
        return Ok(Results {
            build: stats::build_info::BuildInfo::current(),
            schema_version: stats::SCHEMA_VERSION,
            fsbench_version: env!("CARGO_PKG_VERSION").to_string(),
            workload: wl.name.clone(),
            workload_source: wl.source.name.clone(),
            variables: wl.vars.iter().cloned().collect(),
            seed: opts.seed,
            run_dir: rd.path.display().to_string(),
            started_at: 0.0,
            duration_s: 0.0,
            interrupted: false,
            threads: 0,
            layout: laid.layout,
            flowops,
            summary,
            notes: vec!["the workload creates its files and has no `run`: nothing was run".into()],
            workload_hash: stats::text_hash(&wl.source.text),
            warmup_s: 0.0,
            interval_s: opts.interval,
            cold: opts.cold,
            host: stats::host::collect(&rd.path),
            calibration: Default::default(),
            series: Vec::new(),
            repetitions: Vec::new(),
            figures: Default::default(),
            disk: None,
            ranks: Vec::new(),
            hosts: Vec::new(),
        });
    }
    if !opts.quiet {
        crate::errln!(
            "fsbench: running {} for {seconds} s ({:?} mode)",
            crate::units::count(wl.thread_count(), "thread"),
            wl.mode
        );
        if opts.warmup > 0.0 {
            crate::errln!(
                "fsbench: warming up for {} s first (not measured; statistics start afterwards)",
                opts.warmup
            );
        }
    }
    if opts.cold {
        if !opts.quiet {
            crate::errln!("fsbench: sync and drop caches");
        }
        drop_caches()?;
    }
    let remounted = if crate::remount::requested() {
        Some(remount_between(rd, &mut laid.filesets)?)
    } else {
        None
    };
    let calibration = stats::clock::Calibration::measure(stats::clock::global());
    let host = stats::host::collect(&rd.path);
    let disk_probe = hooks::probe(&rd.path);
    let m = measure(
        wl,
        &laid.filesets,
        opts.seed,
        MeasureOptions {
            seconds,
            warmup: opts.warmup,
            interval: opts.interval,
            progress: opts.progress,
            continue_when_exhausted: opts.continue_when_exhausted,
            continue_on_enospc: opts.continue_on_enospc,
        },
    )?;
    measured.get_or_insert(m);
    let mut m = measured.expect("set above");
    if let Some(what) = remounted {
        m.notes.insert(0, format!("cache: {what} after the layout"));
    }
    // On a simulated disk: how late its replies were during this run.
    let disk = disk_probe.and_then(|p| p.record(&mut m.notes));
    let (flowops, summary) = stats::summarize(&wl.stat_names, &m.rec, m.duration);
    Ok(Results {
        build: stats::build_info::BuildInfo::current(),
        schema_version: stats::SCHEMA_VERSION,
        fsbench_version: env!("CARGO_PKG_VERSION").to_string(),
        workload: wl.name.clone(),
        workload_source: wl.source.name.clone(),
        variables: wl.vars.iter().cloned().collect(),
        seed: opts.seed,
        run_dir: rd.path.display().to_string(),
        started_at: m.started_at,
        duration_s: m.duration,
        interrupted: m.interrupted,
        threads: wl.thread_count(),
        layout: laid.layout,
        flowops,
        summary,
        notes: m.notes,
        workload_hash: stats::text_hash(&wl.source.text),
        warmup_s: opts.warmup,
        interval_s: opts.interval,
        cold: opts.cold,
        host,
        calibration,
        series: m.series,
        repetitions: Vec::new(),
        figures: Default::default(),
        disk,
        ranks: Vec::new(),
        hosts: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_times_are_distinct_at_half_second_intervals() {
        let p = SeriesPoint::default();
        let shown: Vec<String> = [0.5, 1.0, 1.5, 2.0, 2.5]
            .iter()
            .map(|t| progress_text(&p, *t, 4.0))
            .map(|s| s.split(']').next().unwrap().to_string())
            .collect();
        let mut d = shown.clone();
        d.dedup();
        assert_eq!(d.len(), shown.len(), "{shown:?}");
    }
}
