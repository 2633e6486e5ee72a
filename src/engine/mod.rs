//! The engine: lay filesets out in a marked run directory, run every thread's flowops on
//! OS threads, stop on time, on completion or on Ctrl-C, and hand the merged recorders to
//! `stats`. Application benchmarks, aging and replay are meant to drive this same engine.

pub mod aio;
pub mod io;
pub mod psrun;
pub mod rundir;
pub mod sync;
pub mod worker;

use crate::fileset::{self, layout::LayoutError, FilesetRt, Plan};
use crate::model::{Action, FlowopKind, QuitMode, Workload};
use crate::stats::{self, LayoutResult, Recorder, Results};
use rundir::RunDir;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};
use worker::{Flow, ProcCounters, Shared, Worker};

/// Set by SIGINT/SIGTERM; the run stops, reports what it measured and cleans up.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Route SIGINT and SIGTERM to a flag. A second Ctrl-C kills the process as usual.
pub fn install_signal_handlers() {
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Run-wide control read by the workers between operations.
#[derive(Debug, Default)]
pub struct Control {
    stop: AtomicBool,
    finished: AtomicUsize,
}

impl Control {
    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
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
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    RunDir(#[from] rundir::RunDirError),
    #[error("{0}")]
    NoSpace(String),
    #[error("laying out fileset `{fileset}`: {source}")]
    Layout {
        fileset: String,
        source: LayoutError,
    },
    #[error("cannot start worker threads: {0}")]
    Spawn(std::io::Error),
    #[error("interrupted before the run started")]
    Interrupted,
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
        if !fs.reuse && root.exists() {
            // Inside our own marked run directory: a fileset from an earlier run.
            std::fs::remove_dir_all(&root).map_err(|e| EngineError::Layout {
                fileset: fs.name.clone(),
                source: LayoutError::Io {
                    path: root.clone(),
                    source: e,
                },
            })?;
        }
        if !opts.quiet {
            eprintln!(
                "fsbench: laying out fileset {} ({} files, {})",
                fs.name,
                plan.prealloc_files.iter().filter(|x| **x).count(),
                human(plan.bytes() as f64)
            );
        }
        let (rt, st) = fileset::layout::create(plan, fs, root, opts.seed, &INTERRUPTED).map_err(
            |e| match e {
                LayoutError::Interrupted => EngineError::Interrupted,
                other => EngineError::Layout {
                    fileset: fs.name.clone(),
                    source: other,
                },
            },
        )?;
        total.dirs += st.dirs;
        total.files_written += st.files_written;
        total.files_reused += st.files_reused;
        total.bytes_written += st.bytes_written;
        total.seconds += st.seconds;
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
    fn ready_and_wait(&self, _n: usize) {
        let mut g = self.state.lock().unwrap();
        g.0 += 1;
        self.cv.notify_all();
        while !g.1 {
            g = self.cv.wait(g).unwrap();
        }
    }
    fn wait_ready(&self, n: usize) {
        let mut g = self.state.lock().unwrap();
        while g.0 < n {
            g = self.cv.wait(g).unwrap();
        }
    }
    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.cv.notify_all();
    }
}

/// What the measured phase produced.
pub struct Measured {
    pub rec: Recorder,
    pub duration: f64,
    pub started_at: f64,
    pub interrupted: bool,
    pub notes: Vec<String>,
}

/// Run the workers on laid-out filesets for `seconds`.
pub fn measure(
    wl: &Workload,
    filesets: &[FilesetRt],
    seed: u64,
    seconds: f64,
) -> Result<Measured, EngineError> {
    let ctl = Control::default();
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
    let live = wl
        .psrun_period
        .map(|_| psrun::Live::new(nthreads, wl.stat_names.len()));
    let shared = Shared {
        wl,
        filesets,
        ctl: &ctl,
        procs: &procs,
        count_procs,
        pacing: &pacing,
        live: live.as_ref(),
    };
    let gate = Gate::default();
    let mut merged = Recorder::new(wl.stat_names.len());
    let mut notes = Vec::new();
    let mut duration = 0.0;
    let mut started_at = 0.0;
    let mut was_interrupted = false;
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
                        match b.spawn_scoped(s, move || {
                            apply_priorities(nice, t.ioprio);
                            let mut w = Worker::new(shared, t, pidx, idx, seed);
                            gate.ready_and_wait(nthreads);
                            let (u0, s0) = stats::thread_cpu();
                            let flow = w.run();
                            let (u1, s1) = stats::thread_cpu();
                            if flow == Flow::Done {
                                shared.ctl.finished.fetch_add(1, Ordering::SeqCst);
                            }
                            w.close_all();
                            w.rec.cpu_user_s = u1 - u0;
                            w.rec.cpu_sys_s = s1 - s0;
                            (w.rec, w.testrandvar)
                        }) {
                            Ok(h) => handles.push(h),
                            Err(e) => {
                                // Release the threads already waiting (they see `stop`), then report.
                                ctl.stop.store(true, Ordering::SeqCst);
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
        gate.wait_ready(nthreads);
        pacing.start();
        gate.open();
        let t0 = Instant::now();
        let mut reporter = live.as_ref().and_then(|_| psrun::Reporter::new(wl));
        started_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let limit = Duration::from_secs_f64(seconds.max(0.0));
        loop {
            let elapsed = t0.elapsed();
            if elapsed >= limit {
                break;
            }
            if interrupted() {
                was_interrupted = true;
                break;
            }
            let finished = ctl.finished.load(Ordering::SeqCst);
            if finished > 0 && (wl.mode == QuitMode::FirstDone || finished == nthreads) {
                break;
            }
            if handles.iter().all(|h| h.is_finished()) {
                break;
            }
            if let (Some(r), Some(l)) = (reporter.as_mut(), live.as_ref()) {
                r.poll(l, &wl.stat_names);
            }
            std::thread::sleep((limit - elapsed).min(Duration::from_millis(20)));
        }
        ctl.stop.store(true, Ordering::SeqCst);
        pacing.shutdown();
        duration = t0.elapsed().as_secs_f64();
        for h in handles {
            match h.join() {
                Ok((rec, trv)) => {
                    merged.merge(&rec);
                    for (name, n, sum, sq) in trv {
                        let mean = sum / n as f64;
                        let sd = (sq / n as f64 - mean * mean).max(0.0).sqrt();
                        notes.push(format!(
                            "testrandvar {name}: {n} samples, mean {mean:.2}, stddev {sd:.2}"
                        ));
                    }
                }
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        None
    });
    if let Some(e) = spawn_err {
        return Err(EngineError::Spawn(e));
    }
    Ok(Measured {
        rec: merged,
        duration,
        started_at,
        interrupted: was_interrupted,
        notes,
    })
}

/// Run a workload end to end: run directory, actions in script order, layout, measurement,
/// clean-up. The run directory is removed afterwards unless `keep` or a fileset has `reuse`.
pub fn run(wl: &Workload, opts: &RunOptions) -> Result<Results, EngineError> {
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
    let rd = RunDir::create(&opts.parent, &wl.name, stable)?;
    if !opts.quiet {
        eprintln!("fsbench: run directory {}", rd.path.display());
    }
    let result = run_in(wl, opts, &rd);
    let keep = opts.keep || stable;
    if keep {
        if !opts.quiet {
            eprintln!("fsbench: kept {}", rd.path.display());
        }
    } else if let Err(e) = rd.remove() {
        eprintln!("fsbench: warning: {e}");
    }
    result
}

fn run_in(wl: &Workload, opts: &RunOptions, rd: &RunDir) -> Result<Results, EngineError> {
    let plans: Vec<Plan> = wl
        .filesets
        .iter()
        .enumerate()
        .map(|(i, f)| fileset::plan(i, f, &wl.randvars, opts.seed))
        .collect();
    check_space(wl, &plans, &rd.path)?;
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
                    println!("{s}");
                }
            }
            Action::System(cmd) => {
                if opts.allow_system {
                    if !opts.quiet {
                        eprintln!("fsbench: system \"{cmd}\"");
                    }
                    let st = std::process::Command::new("sh")
                        .arg("-c")
                        .arg(cmd)
                        .current_dir(&rd.path)
                        .status();
                    if let Ok(st) = st {
                        if !st.success() && !opts.quiet {
                            eprintln!("fsbench: warning: `{cmd}` exited with {st}");
                        }
                    }
                } else if !opts.quiet {
                    eprintln!(
                        "fsbench: not running system \"{cmd}\" (pass --allow-system to run it)"
                    );
                }
            }
            Action::Sleep(s) => {
                let end = Instant::now() + Duration::from_secs(*s);
                while Instant::now() < end && !interrupted() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            Action::CreateFiles => {
                if laid.is_none() {
                    laid = Some(lay_out(wl, opts, rd, &plans)?);
                }
            }
            Action::Version => println!("fsbench {}", env!("CARGO_PKG_VERSION")),
            Action::ListFilesets => {
                for f in &wl.filesets {
                    println!(
                        "fileset {} entries={} dirwidth={}",
                        f.name, f.entries, f.dirwidth
                    );
                }
            }
            Action::ListFlowops => {
                for (n, k) in &wl.stat_names {
                    println!("flowop {n} ({})", k.name());
                }
            }
            Action::Run => break,
        }
    }
    if laid.is_none() {
        laid = Some(lay_out(wl, opts, rd, &plans)?);
    }
    let laid = laid.expect("laid out above");
    if interrupted() {
        return Err(EngineError::Interrupted);
    }
    if !opts.quiet {
        eprintln!(
            "fsbench: running {} threads for {seconds} s ({:?} mode)",
            wl.thread_count(),
            wl.mode
        );
    }
    let m = measure(wl, &laid.filesets, opts.seed, seconds)?;
    measured.get_or_insert(m);
    let m = measured.expect("set above");
    let (flowops, summary) = stats::summarize(&wl.stat_names, &m.rec, m.duration);
    Ok(Results {
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
    })
}
