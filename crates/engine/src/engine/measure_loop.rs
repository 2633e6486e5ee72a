//! The measured phase: workers started behind a gate, the control loop (warm-up, sampling
//! ticks, the conditions that end a run) and the collection of what the workers recorded.

use super::worker::{Flow, ProcCounters, Sample, Shared, Worker};
use super::{generation, psrun, sync, Control, EngineError, GEN_SHIFT, STOP};
use crate::fileset::FilesetRt;
use fsbench_base::cancel::interrupted;
use fsbench_model::model::Thread;
use fsbench_model::model::{QuitMode, Workload};
use fsbench_results::stats::{self, Recorder, SeriesPoint};
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Apply a process's `nice` and a thread's `ioprio` to the calling thread. A thread's
/// `ioprio` is the best-effort level its I/O is scheduled at (BFQ turns it into the queue's
/// weight: (8 - level) × 10), so a refusal is an error rather than a run at another share.
fn apply_priorities(nice: Option<i32>, ioprio: Option<u32>) -> Result<(), String> {
    // SAFETY: plain system calls on the calling thread's id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        if let Some(n) = nice {
            libc::setpriority(libc::PRIO_PROCESS, tid, n);
        }
        if let Some(p) = ioprio {
            const IOPRIO_CLASS_BE: u32 = 2;
            const IOPRIO_WHO_PROCESS: libc::c_int = 1;
            let rc = libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                tid as libc::c_int,
                (IOPRIO_CLASS_BE << 13) | p,
            );
            if rc != 0 {
                return Err(format!(
                    "ioprio={p}: ioprio_set(best-effort, level {p}) failed: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
    }
    Ok(())
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
    /// Why the run ended before its duration (a full file system, an exhausted fileset, its
    /// threads finishing), when it did; `None` when it ran its time or was interrupted.
    pub ended_early: Option<String>,
    /// What [`MeasureOptions::device`] read over the measured window (after any warm-up).
    pub device_read_bytes: Option<u64>,
    /// The seconds that device was busy over the measured window (its `io_ticks`).
    pub device_busy_s: Option<f64>,
    /// The machine's busy CPU seconds over the measured window (every CPU's, summed).
    pub cpu_busy_s: Option<f64>,
    /// What it wrote, and all its counters, over the same window.
    pub device_write_bytes: Option<u64>,
    pub disk_stats: Option<fsbench_base::sys::blockstat::DiskStats>,
}

/// How to measure.
#[derive(Debug, Clone, Copy)]
pub struct MeasureOptions<'a> {
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
    /// The block device (major, minor) whose reads over the measured window are reported.
    pub device: Option<(u32, u32)>,
    /// A finish flowop that is done ends the run in every quit mode (Filebench's
    /// 1.5-alpha3 tag), not only its own thread (its current source).
    pub finish_ends_run: bool,
    /// What a flowop's latency covers.
    pub latency: super::Latency,
    /// Where Filebench flowops' I/O buffers start.
    pub buffers: super::Buffers,
    /// Ask the kernel before each buffered read how much of it the page cache holds.
    pub cache_stat: bool,
    /// The run directory, for `stream` flowops (fio jobs) to open their files in.
    pub stream_dir: Option<std::os::fd::RawFd>,
    /// Over NFS: what every worker mounts, and the run directory there.
    pub nfs: Option<&'a fsbench_base::libnfs::Target>,
    /// Which data the workers stamp and check.
    pub verify: fsbench_model::verify::Mode,
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

/// What a worker thread hands back: its recorder and its `testrandvar` tallies, or why it
/// failed.
type WorkerResult = Result<(Recorder, Vec<(String, u64, f64, f64)>), String>;

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
    let count_procs =
        (wl.all_flowops().iter()).any(|f| f.kind.def().finishes && f.target.is_none());
    let pacing = sync::Pacing::new(wl);
    let nthreads = wl.thread_count() as usize;
    let nstats = wl.stat_names.len();
    let samples: Vec<Mutex<Sample>> = (0..nthreads)
        .map(|_| Mutex::new(Sample::default()))
        .collect();
    let hists = stats::SharedHists::new(nstats);
    let jobs = wl
        .all_flowops()
        .iter()
        .filter_map(|f| f.stream.as_ref().map(|s| s.job + 1))
        .max()
        .unwrap_or(0);
    let streams_ended: Vec<std::sync::atomic::AtomicU64> =
        (0..jobs).map(|_| Default::default()).collect();
    let shared = Shared {
        hists: &hists,
        wl,
        filesets,
        ctl: &ctl,
        procs: &procs,
        count_procs,
        continue_when_exhausted: mo.continue_when_exhausted,
        continue_on_enospc: mo.continue_on_enospc,
        finish_ends_run: mo.finish_ends_run,
        whole_flowop: mo.latency == super::Latency::Flowop,
        buffer_skew: mo.buffers.skew(),
        cache_stat: mo.cache_stat,
        clock: *stats::clock::global(),
        samples: &samples,
        pacing: &pacing,
        stream_dir: mo.stream_dir,
        nfs: mo.nfs,
        verify: mo.verify,
        streams_ended: &streams_ended,
    };
    let gate = Gate::default();
    let mut out = Outcome::new(nstats);
    let spawn_err: Option<std::io::Error> = std::thread::scope(|s| {
        let handles = match spawn_workers(s, &shared, &gate, seed) {
            Ok(h) => h,
            Err(e) => {
                // Release the threads already waiting (they see the stop), then report.
                ctl.stop();
                pacing.shutdown();
                gate.open();
                return Some(e);
            }
        };
        let _stop = StopOnDrop(&ctl, &pacing, &gate);
        if !gate.wait_ready(nthreads) {
            out.interrupted = true;
            return None;
        }
        // With many clients every rank starts measuring together (after its layout).
        if !fsbench_base::cluster::barrier() {
            out.cluster_failed = true;
            return None;
        }
        // The clock starts before the workers are released: with many clients (and more
        // threads than cores) the instant every rank agreed on, not when the scheduler
        // next lets this thread run after waking its workers.
        let mut tl = Timeline::start(&shared, mo);
        if !tl.warming {
            out.device_at_start = mo.device.and_then(fsbench_base::sys::blockstat::counters);
            out.cpu_at_start = fsbench_base::sys::cpustat::now();
        }
        pacing.start();
        fsbench_base::sys::mark::mark(fsbench_base::sys::mark::MARK_START);
        gate.open();
        tl.run(&handles, &mut out);
        tl.finish(&mut out);
        out.collect(handles);
        None
    });
    if let Some(e) = spawn_err {
        return Err(EngineError::Spawn(e));
    }
    out.conclude(&ctl, hists, &mo)
}

/// Start one worker thread per thread instance of every process instance, each waiting at
/// the gate.
fn spawn_workers<'scope, 'env>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    shared: &'env Shared<'env>,
    gate: &'env Gate,
    seed: u64,
) -> Result<Vec<std::thread::ScopedJoinHandle<'scope, WorkerResult>>, std::io::Error> {
    let mut handles = Vec::new();
    let mut worker_idx = 0u64;
    let mut proc_idx = 0usize;
    for p in &shared.wl.processes {
        for pi in 0..p.instances {
            for t in &p.threads {
                for ti in 0..t.instances {
                    let idx = worker_idx;
                    let pidx = proc_idx;
                    let nice = p.nice;
                    let b = std::thread::Builder::new()
                        .name(format!("{}.{}:{}.{}", p.name, pi, t.name, ti));
                    // Worker stacks hold no buffers (those are on the heap): keep them small so
                    // thousands of threads fit.
                    let b = b.stack_size(512 << 10);
                    handles.push(b.spawn_scoped(s, move || {
                        worker_main(shared, gate, t, nice, pidx, idx, seed)
                    })?);
                    worker_idx += 1;
                }
            }
            proc_idx += 1;
        }
    }
    Ok(handles)
}

/// One worker thread: set up, report ready, wait for the go, run its flowops, hand back
/// what it recorded.
fn worker_main(
    shared: &Shared,
    gate: &Gate,
    t: &Thread,
    nice: Option<i32>,
    pidx: usize,
    idx: u64,
    seed: u64,
) -> WorkerResult {
    let mut ready = ReadyOnDrop(gate, false);
    apply_priorities(nice, t.ioprio).map_err(|e| format!("thread {}: {e}", t.name))?;
    let mut w = Worker::new(shared, t, pidx, idx, seed)?;
    ready.ready();
    gate.wait_open();
    w.begin();
    let flow = w.run();
    // As Filebench's current source (flowop.c; flowop_library.c since August 2016, where
    // a finish flowop that is done returns FILEBENCH_NORSC): a finish flowop that is done,
    // like a flowop without a file, ends its thread, and the run except in `alldone` mode;
    // with --finish-ends-run (the 1.5-alpha3 tag's FILEBENCH_DONE) a finish ends the run in
    // every mode. A full file system ends it always. The others stop before their next
    // flowop.
    let ends_run = match flow {
        Flow::Done => {
            let ends = shared.finish_ends_run || shared.wl.mode != QuitMode::AllDone;
            if ends && !shared.finish_ends_run && shared.wl.mode == QuitMode::Timeout {
                if let (Ok(mut x), Some(name)) = (shared.ctl.finish_done.lock(), w.done_by()) {
                    x.get_or_insert(name);
                }
            }
            ends
        }
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
    if matches!(flow, Flow::Done | Flow::Exhausted | Flow::Finished) {
        shared.ctl.finished.fetch_add(1, Ordering::SeqCst);
    }
    w.close_all();
    Ok((w.rec, w.testrandvar))
}

/// What the measuring thread gathers while the workers run, turned into [`Measured`] (or
/// the run's error) at the end.
struct Outcome {
    merged: Recorder,
    notes: Vec<String>,
    series: Vec<SeriesPoint>,
    duration: f64,
    started_at: f64,
    interrupted: bool,
    failures: Vec<String>,
    ended_in_warmup: bool,
    cluster_failed: bool,
    stonewalled: bool,
    /// The measured window ran to its duration.
    reached_limit: bool,
    /// The device's counters when the measured window began, what it read in it and how
    /// long it was busy.
    device_at_start: Option<fsbench_base::sys::blockstat::Counters>,
    device_read_bytes: Option<u64>,
    device_busy_s: Option<f64>,
    /// The machine's CPU times when the measured window began, and its busy CPU seconds in it.
    cpu_at_start: Option<fsbench_base::sys::cpustat::CpuTimes>,
    cpu_busy_s: Option<f64>,
    device_write_bytes: Option<u64>,
    disk_stats: Option<fsbench_base::sys::blockstat::DiskStats>,
}

impl Outcome {
    fn new(nstats: usize) -> Outcome {
        Outcome {
            merged: Recorder::new(nstats),
            notes: Vec::new(),
            series: Vec::new(),
            duration: 0.0,
            started_at: 0.0,
            interrupted: false,
            failures: Vec::new(),
            ended_in_warmup: false,
            cluster_failed: false,
            stonewalled: false,
            reached_limit: false,
            device_at_start: None,
            device_read_bytes: None,
            device_busy_s: None,
            cpu_at_start: None,
            cpu_busy_s: None,
            device_write_bytes: None,
            disk_stats: None,
        }
    }

    /// What the measured directory's device did since `device_at_start`.
    fn device_window(&mut self, dev: Option<(u32, u32)>, secs: f64) {
        use fsbench_base::sys::blockstat;
        let (Some(before), Some(dev)) = (self.device_at_start, dev) else {
            return;
        };
        let Some(after) = blockstat::counters(dev) else {
            return;
        };
        let (read, busy) = after.since(before);
        self.device_read_bytes = Some(read);
        self.device_busy_s = Some(busy);
        self.device_write_bytes = Some(after.written_since(before));
        let name = blockstat::name_of(dev).unwrap_or_else(|| format!("{}:{}", dev.0, dev.1));
        self.disk_stats = Some(blockstat::DiskStats::between(&name, &before, &after, secs));
    }

    /// Join the workers: merge what they recorded, keep why the others failed.
    fn collect(&mut self, handles: Vec<std::thread::ScopedJoinHandle<'_, WorkerResult>>) {
        for h in handles {
            match h.join() {
                Ok(Err(msg)) => {
                    self.failures.push(msg);
                }
                Err(p) => {
                    let msg = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "a worker thread failed".into());
                    self.failures.push(msg);
                }
                Ok(Ok((rec, trv))) => {
                    self.merged.merge(&rec);
                    for (name, n, sum, sq) in trv {
                        let mean = sum / n as f64;
                        let sd = (sq / n as f64 - mean * mean).max(0.0).sqrt();
                        self.notes.push(format!(
                            "testrandvar {name}: {n} samples, mean {mean:.2}, stddev {sd:.2}"
                        ));
                    }
                }
            }
        }
    }

    /// Why the run ended before its duration, if it did (with the notes that say so): a
    /// full file system, a finish flowop, an exhausted fileset, its threads finishing.
    fn early_end(&mut self, ctl: &Control, mo: &MeasureOptions) -> Option<String> {
        let mut ended_early = None;
        if let Some(what) = ctl.no_space.lock().ok().and_then(|mut x| x.take()) {
            ended_early = Some(format!("the file system is full ({what})"));
            self.notes.push(format!(
                "run ended early: the file system is full ({what}); --continue-on-enospc counts \
                 such errors and goes on"
            ));
        }
        if let Some(who) = ctl.finish_done.lock().ok().and_then(|mut x| x.take()) {
            ended_early.get_or_insert(format!("finish flowop {who} is done"));
            self.notes.push(format!(
                "run ended early: finish flowop {who} is done, which in the default (timeout) \
                 mode ends the run as Filebench does (with its warning \"Run stopped early\"); \
                 `set mode quit alldone` lets the other threads go on"
            ));
        }
        if let Some(who) = ctl.exhausted.lock().ok().and_then(|mut x| x.take()) {
            ended_early.get_or_insert(format!(
                "fileset exhausted: flowop {who} could not obtain a file"
            ));
            self.notes.push(format!(
                "run ended early: flowop {who} could not obtain a file (fileset exhausted); \
                 --continue-when-exhausted counts this and goes on"
            ));
        }
        if self.reached_limit || self.interrupted || self.stonewalled {
            return None;
        }
        let why = ended_early.unwrap_or_else(|| {
            "the workload's threads finished (a finish flowop, or the first thread in firstdone mode)".into()
        });
        Some(format!(
            "{why}, after {:.3} s of {} s",
            self.duration, mo.seconds
        ))
    }

    /// The run's error, or its results with the notes on how it ended.
    fn conclude(
        mut self,
        ctl: &Control,
        hists: stats::SharedHists,
        mo: &MeasureOptions,
    ) -> Result<Measured, EngineError> {
        if self.cluster_failed {
            return Err(EngineError::Worker(format!(
                "rank {}: not started because another rank failed before the start (rank 0 reports its error)",
                fsbench_base::cluster::rank()
            )));
        }
        if self.stonewalled {
            self.notes.push(format!(
                "run ended by stonewalling after {:.3} s: another rank finished first",
                self.duration
            ));
        }
        if self.ended_in_warmup {
            return Err(EngineError::EndedInWarmup(format!(
                "every thread finished, or the first did in firstdone mode, before {:.1} s of warm-up were over",
                mo.warmup
            )));
        }
        if let Some(first) = self.failures.first() {
            return Err(EngineError::Worker(format!(
                "{first}{}",
                if self.failures.len() > 1 {
                    format!(" (and {} more worker failures)", self.failures.len() - 1)
                } else {
                    String::new()
                }
            )));
        }
        let ended_early = self.early_end(ctl, mo);
        // The latency counts of the measured generation (workers count, the run histograms).
        let generation = generation(ctl.word.load(Ordering::SeqCst));
        for (o, h) in self.merged.ops.iter_mut().zip(hists.into_hists(generation)) {
            o.hist = h;
        }
        Ok(Measured {
            ended_early,
            device_read_bytes: self.device_read_bytes,
            device_busy_s: self.device_busy_s,
            cpu_busy_s: self.cpu_busy_s,
            device_write_bytes: self.device_write_bytes,
            disk_stats: self.disk_stats,
            rec: self.merged,
            duration: self.duration,
            started_at: self.started_at,
            interrupted: self.interrupted,
            notes: self.notes,
            series: self.series,
        })
    }
}

/// The measuring thread's clock and schedule: the warm-up, the sampling ticks and the
/// measured window, with the conditions that end it.
struct Timeline<'a> {
    sh: &'a Shared<'a>,
    mo: MeasureOptions<'a>,
    t0: Instant,
    warming: bool,
    /// Statistics generation: bumped when the warm-up ends.
    generation: u64,
    interval: Duration,
    next_tick: Instant,
    sampler: Sampler,
    limit: Duration,
    warm: Duration,
}

impl<'a> Timeline<'a> {
    fn start(sh: &'a Shared<'a>, mo: MeasureOptions<'a>) -> Timeline<'a> {
        let t0 = Instant::now();
        // With `psrun`, the samples come every psrun period and each prints a block.
        let interval = Duration::from_secs_f64(match sh.wl.psrun_period {
            Some(p) => p.unsigned_abs().max(1) as f64,
            None => mo.interval.max(0.05),
        });
        Timeline {
            sh,
            mo,
            t0,
            warming: mo.warmup > 0.0,
            generation: 0,
            interval,
            next_tick: t0 + interval,
            sampler: Sampler::new(sh.samples.len(), sh.wl),
            limit: Duration::from_secs_f64(mo.seconds.max(0.0)),
            warm: Duration::from_secs_f64(mo.warmup.max(0.0)),
        }
    }

    /// The control loop: until the time is up or something ends the run.
    fn run(
        &mut self,
        handles: &[std::thread::ScopedJoinHandle<'_, WorkerResult>],
        out: &mut Outcome,
    ) {
        loop {
            let now = Instant::now();
            if self.warming && now - self.t0 >= self.warm {
                self.end_warmup(now, out);
            }
            let elapsed = now - self.t0;
            if self.ends(elapsed, handles, out) {
                break;
            }
            if now >= self.next_tick {
                self.tick(now, out);
            }
            let until = if self.warming {
                self.warm.saturating_sub(elapsed)
            } else {
                self.limit.saturating_sub(elapsed)
            };
            // Parked, not asleep: a worker that ends the run wakes this thread at once.
            std::thread::park_timeout(
                until
                    .min(self.next_tick.saturating_duration_since(Instant::now()))
                    .min(Duration::from_millis(20)),
            );
        }
    }

    /// Warm-up over: workers reset their statistics when they see the new generation.
    fn end_warmup(&mut self, now: Instant, out: &mut Outcome) {
        self.warming = false;
        // Finish flowops count from the start of measurement, like everything else.
        for p in self.sh.procs {
            p.ops.store(0, Ordering::SeqCst);
            p.bytes.store(0, Ordering::SeqCst);
        }
        self.sh.ctl.next_generation();
        self.generation += 1;
        out.device_at_start = self
            .mo
            .device
            .and_then(fsbench_base::sys::blockstat::counters);
        out.cpu_at_start = fsbench_base::sys::cpustat::now();
        self.t0 = now;
        self.next_tick = self.t0 + self.interval;
        self.sampler.reset(0.0);
        out.series.clear();
    }

    /// Whether the run ends now (`elapsed` into the current phase).
    fn ends(
        &self,
        elapsed: Duration,
        handles: &[std::thread::ScopedJoinHandle<'_, WorkerResult>],
        out: &mut Outcome,
    ) -> bool {
        let (ctl, wl) = (self.sh.ctl, self.sh.wl);
        if !self.warming && elapsed >= self.limit {
            out.reached_limit = true;
            return true;
        }
        if interrupted() {
            out.interrupted = true;
            return true;
        }
        // Stonewalling: another rank finished, so this one stops where it is.
        if !self.warming && fsbench_base::cluster::stop_requested() {
            out.stonewalled = true;
            return true;
        }
        // A worker ended the run (a finish flowop, an exhausted fileset, a full disk).
        if ctl.stopping() {
            return true;
        }
        let finished = ctl.finished.load(Ordering::SeqCst);
        if finished > 0 && (wl.mode == QuitMode::FirstDone || finished == self.sh.samples.len()) {
            return true;
        }
        // As Filebench: a flowop that cannot obtain a file ends its thread; the run
        // ends with it except in `alldone` mode, where the others go on.
        if wl.mode != QuitMode::AllDone && ctl.exhausted.lock().is_ok_and(|x| x.is_some()) {
            return true;
        }
        // As Filebench, where a failed flowop shuts the run down: a full file system
        // ends the run (whatever the mode), with the results up to there.
        if ctl.no_space.lock().is_ok_and(|x| x.is_some()) {
            return true;
        }
        handles.iter().all(|h| h.is_finished())
    }

    /// A sampling tick: a time-series point when measuring, a new epoch when warming up.
    fn tick(&mut self, now: Instant, out: &mut Outcome) {
        if !self.warming {
            let t = (now - self.t0).as_secs_f64();
            let p = self.sample(t);
            if self.mo.progress {
                progress_line(&p, t, self.mo.seconds);
            }
            if self.sh.wl.psrun_period.is_some() {
                fsbench_base::console::human(&psrun::block(
                    self.sh.wl,
                    &p,
                    self.interval.as_secs_f64(),
                ));
            }
            out.series.push(p);
        } else {
            self.sh.ctl.next_epoch();
        }
        self.next_tick += self.interval;
    }

    fn sample(&mut self, t: f64) -> SeriesPoint {
        let nstats = self.sh.wl.stat_names.len();
        take_sample(
            self.sh.ctl,
            self.sh.samples,
            &mut self.sampler,
            self.generation,
            nstats,
            t,
        )
    }

    /// After the loop: the last partial sample, the stop, the end mark, and the measured
    /// duration.
    fn finish(&mut self, out: &mut Outcome) {
        if self.warming && !out.interrupted {
            out.ended_in_warmup = true;
        }
        // A last sample for the partial interval at the end.
        let t_end = self.t0.elapsed().as_secs_f64();
        if !self.warming && t_end - self.sampler.last_t > 0.05 {
            let p = self.sample(t_end);
            out.series.push(p);
        }
        self.sh.ctl.stop();
        fsbench_base::sys::mark::mark(fsbench_base::sys::mark::MARK_END);
        fsbench_base::cluster::finished();
        self.sh.pacing.shutdown();
        if self.mo.progress {
            fsbench_base::console::err_control("\r\x1b[2K");
        }
        // The wall clock read with the duration, before the device and CPU figures are read
        // from /proc (on a loaded machine that took long enough to move ranks' starts apart).
        let wall = std::time::SystemTime::now();
        out.duration = self.t0.elapsed().as_secs_f64();
        out.started_at = wall
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64() - out.duration)
            .unwrap_or(0.0);
        if !self.warming {
            out.device_window(self.mo.device, self.t0.elapsed().as_secs_f64());
            out.cpu_busy_s = out
                .cpu_at_start
                .and_then(|b| Some(fsbench_base::sys::cpustat::now()?.busy_s_since(b)));
        }
    }
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
