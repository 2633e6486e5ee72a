//! `fsbench trace replay`: issue a trace's calls again, in a marked run directory, through
//! the same measurement path as every other benchmark (thread-local recorders, one
//! [`Results`] with one "flowop" per call type).
//!
//! Before the measurement the initial tree the trace's header carries is rebuilt below the
//! run directory (`r0/` for the first root, `r1/` ...), with real, non-zero data of the
//! recorded sizes. Every traced path below a root maps there; calls on other paths
//! (libraries, `/proc`, `/dev`) and on descriptors opened on them are not replayed. The
//! tree, and every call, reach files only through [`Roots`], beneath the root's
//! directory: a path that would leave it is refused and counted, never issued.
//!
//! Threads: one replay thread per traced thread (`--threads as-recorded`), or the traced
//! threads spread over N. Descriptors live in per-process tables as in the kernel: threads
//! created with `CLONE_FILES` share their parent's table, forks get a copy (the same open
//! files, so offsets stay shared as after a real fork), `exec` closes the close-on-exec ones.
//!
//! Modes:
//! - `timed`: each call starts at its recorded time (divided by `--speed`), or as soon as
//!   its thread is free when late, and never before the calls of other threads it depends
//!   on (as in `deps`: a late thread delays those that wait for it);
//! - `afap`: each thread issues its calls back to back, in the program's own process order
//!   (a thread starts after the call that created it, a parent's calls after a wait come
//!   after the child's last call, a vfork parent goes on after its child's exec), and a
//!   call on a descriptor another thread opened waits for that open (and a close for the
//!   other threads' calls on it) — nothing else is ordered across threads;
//! - `deps`: as fast as possible, but a call on a path also waits for the earlier calls of
//!   other threads that created, removed, renamed or wrote it (and a call that changes a path
//!   for the earlier calls that used it), so cross-thread outcomes stay as recorded.
//!
//! The trace is read as the replay goes: [`CHUNK`] records are planned, then replayed, then
//! the next ones ([`Planner`]), so memory does not grow with the trace's length.
//!
//! The module's files: `map.rs` (where paths go), `plan.rs` (the static pass), `exec.rs` (the
//! replay threads), `rebuild.rs` (the initial tree).
//!
//! Fidelity is reported beside the latencies: calls replayed, calls that failed where the
//! original succeeded (the first ones quoted) and the reverse, replay time against the
//! recorded time.

mod exec;
mod map;
mod plan;
mod rebuild;

use crate::apps::{AppRun, OpTable};
use crate::trace::confine::{Beneath, CallError, Roots};
use crate::trace::format::{self, Call, Header, Record};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use exec::{Fds, Progress, Shared, Totals};
use fsbench_engine::engine::rundir::RunDir;
use fsbench_harness::measure::guard::RunDirGuard;
use fsbench_harness::measure::{MeasureArgs, Measurement};
use fsbench_model::model::FlowopKind;
use fsbench_results::stats::{Recorder, Results};
use map::{changes_below_roots, Mapper};
use plan::Planner;
use rebuild::{rebuild, Rebuilt};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace file.
    pub trace: PathBuf,
    /// Where to make the run directory (default: the system's temporary directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// How calls are paced: at their recorded times, back to back per thread, or back to
    /// back keeping cross-thread dependencies.
    #[arg(long, value_enum, default_value_t = Mode::Deps)]
    pub mode: Mode,
    /// With `--mode timed`: play this many times faster than recorded (0.5 = half speed).
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// `as-recorded` (one replay thread per traced thread) or a number of threads the traced
    /// threads are spread over.
    #[arg(long, default_value = "as-recorded")]
    pub threads: String,
    /// Replay calls below these directories instead of the trace's roots (repeatable).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<String>,
    /// Replay over these existing trees (one per root, in order) instead of rebuilding the
    /// initial tree in the run directory. Only for traces that just read below their roots
    /// (any call that would change a file there is refused before anything runs); the trees
    /// are never changed.
    #[arg(long = "over", value_name = "DIR")]
    pub over: Vec<PathBuf>,
    /// Keep the run directory afterwards (the replayed tree is below it, `r0/` ...).
    #[arg(long)]
    pub keep: bool,
    /// Quote up to N calls whose outcome differs from the recording.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub show_mismatches: usize,
    #[command(flatten)]
    pub m: MeasureArgs,
}

fsbench_harness::outputs_of_measurement!(ReplayArgs);

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Timed,
    Afap,
    Deps,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Timed => "timed",
            Mode::Afap => "afap",
            Mode::Deps => "deps",
        }
    }
}

/// The call types of the results, in [`Call::ALL`] order, with the flowop kind whose
/// summary class each counts in.
fn kind_of(c: Call) -> FlowopKind {
    match c {
        Call::Open => FlowopKind::OpenFile,
        Call::Close => FlowopKind::CloseFile,
        Call::Read => FlowopKind::Read,
        Call::Write | Call::Sendfile | Call::CopyRange => FlowopKind::Write,
        Call::Mkdir => FlowopKind::MakeDir,
        Call::Rmdir => FlowopKind::RemoveDir,
        Call::Unlink => FlowopKind::DeleteFile,
        Call::Getdents => FlowopKind::ListDir,
        Call::Fsync => FlowopKind::Fsync,
        _ => FlowopKind::StatFile,
    }
}

/// A root as given: absolute, without a trailing slash.
fn normalize_root(r: &str) -> String {
    let t = r.trim_end_matches('/');
    if t.is_empty() {
        "/".into()
    } else {
        t.to_string()
    }
}

/// The most replay threads: one per traced thread as recorded, or `--threads N`. A trace
/// names its threads by number and can claim any count; 4096 is well beyond the programs
/// worth replaying thread for thread (a parallel build of a large project runs hundreds)
/// and well within what a machine starts. More traced threads fold onto `--threads N`.
pub const MAX_THREADS: usize = 4096;

fn parse_threads(s: &str) -> Result<Option<usize>> {
    if s == "as-recorded" {
        return Ok(None);
    }
    match s.parse::<usize>() {
        Ok(n) if n > MAX_THREADS => Err(fsbench_base::exit::usage(format!(
            "--threads {s}: a replay runs at most {MAX_THREADS} threads"
        ))),
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(fsbench_base::exit::usage(format!(
            "--threads {s}: give `as-recorded` or a number of threads (at least 1)"
        ))),
    }
}

/// One streamed pass over the trace before anything is made or run: it must read to its
/// end (a cut or corrupt trace is refused here, not halfway through a replay), it may not
/// need more threads than [`MAX_THREADS`] or the machine can start, and with `--over`
/// (`over` maps the roots) it may not change anything below the roots.
fn vet(trace: &Path, threads: Option<usize>, over: Option<&Mapper>) -> Result<()> {
    // Distinct thread ids, counted up to a bound (the count only has to be refused).
    const COUNTED: usize = 1 << 20;
    let mut tids = std::collections::HashSet::new();
    let mut rd = format::Reader::open(trace)?;
    while let Some(r) = rd
        .next_record()
        .map_err(|e| anyhow::anyhow!("trace {}: {e}", trace.display()))?
    {
        if tids.len() < COUNTED {
            tids.insert(r.tid);
        }
        if over.is_some_and(|m| changes_below_roots(&r, m)) {
            bail!(
                "--over replays only traces that read below their roots, and {} changes {} ({}); replay it without --over (in a rebuilt copy)",
                trace.display(),
                r.path.as_deref().or(r.path2.as_deref()).unwrap_or("?"),
                r.call.name()
            );
        }
    }
    check_thread_count(trace, tids.len(), threads)
}

/// The replay threads for `traced` threads: refused beyond [`MAX_THREADS`] and beyond
/// what the machine can start, before any is.
fn check_thread_count(trace: &Path, traced: usize, threads: Option<usize>) -> Result<()> {
    let n = match threads {
        None if traced > MAX_THREADS => bail!(
            "trace {} has {traced} threads, and a replay runs at most {MAX_THREADS}: give --threads N (N up to {MAX_THREADS}) to spread the traced threads over N",
            trace.display()
        ),
        None => traced,
        Some(n) => n.min(traced),
    };
    // Each replay thread: its stack and an I/O buffer of at least a page.
    fsbench_harness::measure::guard::check_threads(n as u64, (256 << 10) + 4096, "the replay")
}

/// Records planned and replayed at a time: a chunk's records and steps are all a replay
/// holds of the trace (a few tens of MB), whatever its length.
const CHUNK: usize = 1 << 16;

/// The roots, once the kernel has shown it can resolve beneath them: without `openat2`
/// (before Linux 5.6, or refused by a sandbox) no call could be confined, so none is made.
fn checked(roots: Roots) -> Result<Roots> {
    match roots.target(&Beneath::new(0, "").expect("no NUL"), true) {
        Err(CallError::Io(e)) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
            bail!(
                "trace replay confines every call beneath its directory with openat2, which this kernel refuses ({e}): it needs Linux 5.6 or later, outside a sandbox that blocks openat2"
            )
        }
        _ => Ok(roots),
    }
}

struct Replay<'a> {
    a: &'a ReplayArgs,
    header: Header,
    roots: Vec<String>,
    threads: Option<usize>,
    parent: PathBuf,
    rd: Option<RunDirGuard>,
    rebuilt: Rebuilt,
    /// `--over` trees, canonical.
    over: Vec<PathBuf>,
}

impl Replay<'_> {
    /// The roots' directories, held open for as long as the caller keeps them: `r0/` ...
    /// in the run directory (made when `make`), or the `--over` trees (read-only).
    fn open_roots(&self, make: bool) -> Result<Roots> {
        if !self.over.is_empty() {
            let dirs = self
                .over
                .iter()
                .map(|d| {
                    fsbench_base::input::open_dir(d)
                        .map(OwnedFd::from)
                        .with_context(|| format!("--over {}", d.display()))
                })
                .collect::<Result<Vec<_>>>()?;
            return checked(Roots::new(dirs, true));
        }
        let rd = self.rd.as_ref().expect("prepared");
        let base = rd.rundir().fd();
        let dirs = (0..self.roots.len())
            .map(|i| {
                let name = CString::new(format!("r{i}")).expect("no NUL");
                if make {
                    fsbench_base::owned::mkdir(base, &name, 0o755)?;
                }
                fsbench_base::beneath::open_dir(base, &name)
            })
            .collect::<std::io::Result<Vec<_>>>()
            .with_context(|| format!("the replay's root directories in {}", rd.path().display()))?;
        checked(Roots::new(dirs, false))
    }
}

impl Measurement for Replay<'_> {
    fn name(&self) -> &str {
        "trace-replay"
    }
    fn target(&self) -> PathBuf {
        self.rd
            .as_ref()
            .map(|r| r.path().to_path_buf())
            .unwrap_or_else(|| self.parent.clone())
    }
    fn run_dir(&mut self) -> Option<&mut RunDirGuard> {
        self.rd.as_mut()
    }
    fn prepare(&mut self) -> Result<()> {
        let rd = RunDirGuard::new(RunDir::create(&self.parent, "trace-replay", false)?);
        let mapper = Mapper::new(self.roots.clone(), rd.path(), &self.over);
        self.rd = Some(rd);
        if self.over.is_empty() {
            let roots = self.open_roots(true)?;
            self.rebuilt = rebuild(&self.header, &mapper, &roots)?;
        }
        Ok(())
    }
    fn cleanup(&mut self) -> Result<()> {
        match self.rd.take() {
            Some(rd) => {
                if self.a.keep {
                    fsbench_base::errln!("fsbench: kept {}", rd.path().display());
                }
                rd.finish(self.a.keep)
            }
            None => Ok(()),
        }
    }
    fn run_once(&mut self) -> Result<Results> {
        let base = self.rd.as_ref().expect("prepared").path().to_path_buf();
        let played = self.play(&base)?;
        Ok(self.results(&base, played))
    }
}

/// What the chunks of one replay came to.
struct Played {
    /// Per call type, in [`Call::ALL`] order, with the CPU times.
    merged: Recorder,
    tot: Totals,
    started_at: f64,
    duration_s: f64,
    mismatches: Vec<String>,
    refusals: Vec<String>,
}

impl Replay<'_> {
    /// Read, plan and replay the trace a chunk at a time.
    fn play(&self, base: &Path) -> Result<Played> {
        let mapper = Mapper::new(self.roots.clone(), base, &self.over);
        let roots = self.open_roots(false)?;
        let trace = &self.a.trace;
        let mut reader = format::Reader::open(trace)?;
        let mut planner = Planner::default();
        let mut fds = Fds(Vec::new());
        let (mismatches, refusals) = (Mutex::new(Vec::new()), Mutex::new(Vec::new()));
        let mut merged = Recorder::new(Call::ALL.len());
        let mut tot = Totals::default();
        let mut chunk: Vec<Record> = Vec::with_capacity(CHUNK);
        let started_at = crate::apps::now_epoch();
        // Only the chunks' replays are timed, not reading and planning between them; the
        // recorded times of `timed` mode are shifted by those pauses.
        let mut last: Option<(Instant, Instant)> = None;
        let (mut run_time, mut cpu) = (Duration::ZERO, (0.0, 0.0));
        loop {
            chunk.clear();
            while chunk.len() < CHUNK {
                match reader
                    .next_record()
                    .map_err(|e| anyhow::anyhow!("trace {}: {e}", trace.display()))?
                {
                    Some(r) => chunk.push(r),
                    None => break,
                }
            }
            if chunk.is_empty() {
                break;
            }
            let plan = planner.plan(&chunk, &mapper, self.threads, self.a.mode);
            fds.grow(plan.instances);
            tot.chunk(&chunk, &plan);
            let cpu0 = crate::apps::process_cpu(false);
            let start = Instant::now();
            let t0 = match last {
                Some((t0, end)) => t0 + (start - end),
                None => start,
            };
            let sh = Shared {
                records: &chunk,
                plan: &plan,
                fds: &fds,
                progress: plan.workers.iter().map(|_| Progress::default()).collect(),
                mode: self.a.mode,
                speed: self.a.speed,
                t0,
                mismatches: &mismatches,
                refusals: &refusals,
                show: self.a.show_mismatches,
                roots: &roots,
            };
            for o in sh.run_chunk()? {
                merged.merge(&o.rec);
                tot.add(&o);
            }
            let end = Instant::now();
            let cpu1 = crate::apps::process_cpu(false);
            run_time += end - start;
            cpu = (cpu.0 + cpu1.0 - cpu0.0, cpu.1 + cpu1.1 - cpu0.1);
            last = Some((t0, end));
            if fsbench_base::cancel::interrupted() {
                break;
            }
        }
        // Close what the traced program left open before the tree is looked at.
        drop(fds);
        merged.cpu_user_s = cpu.0;
        merged.cpu_sys_s = cpu.1;
        Ok(Played {
            merged,
            tot,
            started_at,
            duration_s: run_time.as_secs_f64(),
            mismatches: mismatches.into_inner().expect("mismatches"),
            refusals: refusals.into_inner().expect("refusals"),
        })
    }

    /// The replay's results: one "flowop" per call type that occurs, the fidelity in notes
    /// and figures.
    fn results(&self, base: &Path, p: Played) -> Results {
        let (table, sub) = by_call_type(&p.merged);
        let recorded_s = p.tot.recorded_end as f64 / 1e9;
        let notes = self.notes(&p, recorded_s);
        let mut variables = BTreeMap::new();
        variables.insert("trace".into(), self.a.trace.display().to_string());
        variables.insert("mode".into(), self.a.mode.name().into());
        variables.insert("speed".into(), self.a.speed.to_string());
        variables.insert("threads".into(), self.a.threads.clone());
        variables.insert("command".into(), self.header.command.join(" "));
        let tot = &p.tot;
        let mut r = crate::apps::results(
            AppRun {
                name: "trace-replay",
                variables,
                seed: 0,
                run_dir: base,
                started_at: p.started_at,
                duration_s: p.duration_s,
                threads: tot.workers as u64,
                notes,
            },
            table,
            &sub,
        );
        let [refused_escape, refused_over, refused_special] = tot.refused;
        for (k, v) in [
            ("calls_recorded", tot.records as f64),
            ("calls_replayed", tot.replayed as f64),
            ("calls_outside_roots", tot.outside as f64),
            ("failed_where_recorded_ok", tot.failed_ok as f64),
            ("ok_where_recorded_failed", tot.ok_failed as f64),
            ("calls_refused_outside_root", refused_escape as f64),
            ("calls_refused_over", refused_over as f64),
            ("calls_refused_special", refused_special as f64),
            ("initial_entries_refused", self.rebuilt.refused as f64),
            ("recorded_s", recorded_s),
            ("replay_s", p.duration_s),
        ] {
            r.figures.insert(k.into(), v);
        }
        r
    }

    /// What was replayed and how faithfully, the initial tree, the refusals; then the
    /// refused calls and the mismatches quoted.
    fn notes(&self, p: &Played, recorded_s: f64) -> Vec<String> {
        let tot = &p.tot;
        let [refused_escape, refused_over, refused_special] = tot.refused;
        let mut notes = vec![
            format!(
                "replayed {} of {} in {} mode on {}: {} outside the roots, {} not replayed ({})",
                fsbench_base::units::count(tot.replayed, "call"),
                fsbench_base::units::count(tot.records, "recorded call"),
                self.a.mode.name(),
                fsbench_base::units::count(tot.workers as u64, "thread"),
                tot.outside,
                tot.not_replayable.values().sum::<u64>(),
                tot.not_replayable
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "fidelity: {} failed where the recording succeeded, {} succeeded where it failed; replay {:.3} s against {:.3} s recorded",
                tot.failed_ok, tot.ok_failed, p.duration_s, recorded_s
            ),
            format!(
                "initial tree: {} ({}) rebuilt, {} refused (leaving the root)",
                fsbench_base::units::count(self.rebuilt.entries, "entry"),
                fsbench_base::units::human_bytes(self.rebuilt.bytes as f64),
                self.rebuilt.refused
            ),
            format!(
                "refused: {} that would leave the replay root{}{}",
                fsbench_base::units::count(refused_escape, "call"),
                if self.over.is_empty() {
                    String::new()
                } else {
                    format!(", {refused_over} that would change an --over tree")
                },
                if refused_special == 0 {
                    String::new()
                } else {
                    format!(", {refused_special} that would open a FIFO, a device or a socket")
                }
            ),
        ];
        notes.extend(p.refusals.iter().map(|m| format!("refused: {m}")));
        notes.extend(p.mismatches.iter().map(|m| format!("mismatch: {m}")));
        notes
    }
}

/// The call types that occur, in [`Call`] order, and their recorders with the CPU times.
fn by_call_type(merged: &Recorder) -> (OpTable, Recorder) {
    let present: Vec<usize> = (0..Call::ALL.len())
        .filter(|&i| merged.ops[i].count + merged.ops[i].errors > 0)
        .collect();
    let table: Vec<(&'static str, FlowopKind)> = present
        .iter()
        .map(|&i| (Call::ALL[i].name(), kind_of(Call::ALL[i])))
        .collect();
    let table: OpTable = Box::leak(table.into_boxed_slice());
    let mut sub = Recorder::new(present.len());
    for (j, &i) in present.iter().enumerate() {
        sub.ops[j].merge(&merged.ops[i]);
    }
    sub.cpu_user_s = merged.cpu_user_s;
    sub.cpu_sys_s = merged.cpu_sys_s;
    (table, sub)
}

pub fn main(a: &ReplayArgs) -> Result<()> {
    let threads = parse_threads(&a.threads)?;
    if !(a.speed > 0.0 && a.speed.is_finite()) {
        return Err(fsbench_base::exit::usage(format!(
            "--speed {}: give a positive factor (2 = twice as fast)",
            a.speed
        )));
    }
    a.m.check()?;
    let header = format::Reader::open(&a.trace)?.header;
    let roots: Vec<String> = if a.roots.is_empty() {
        header.roots.clone()
    } else {
        a.roots.iter().map(|r| normalize_root(r)).collect()
    };
    if roots.is_empty() {
        bail!(
            "trace {} names no directories to replay in (no roots): give --root DIR for the traced paths to replay",
            a.trace.display()
        );
    }
    check_over(&a.over, &roots)?;
    let over_map =
        (!a.over.is_empty()).then(|| Mapper::new(roots.clone(), Path::new("/"), &a.over));
    vet(&a.trace, threads, over_map.as_ref())?;
    let over: Vec<PathBuf> = a
        .over
        .iter()
        .map(|d| d.canonicalize())
        .collect::<std::io::Result<_>>()?;
    let parent = fsbench_harness::measure::guard::target_dir(a.dir.as_deref())?;
    // The replay must not work inside a traced root on this machine: it would change the
    // very tree it replays (or the user's files). The run directory is always fresh.
    for r in &roots {
        if parent.starts_with(r) && Path::new(r) != Path::new("/") {
            fsbench_base::errln!(
                "fsbench: note: the replay's directory {} is inside traced root {r}; the replay works in its own run directory there and does not touch the rest",
                parent.display()
            );
        }
    }
    let mut m = Replay {
        a,
        header,
        roots,
        threads,
        parent,
        rd: None,
        rebuilt: Rebuilt::default(),
        over,
    };
    let r = fsbench_harness::measure::measure_and_report(&mut m, &a.m)?;
    say_outcome(&r);
    Ok(())
}

/// `--over` gives one existing directory per root.
fn check_over(over: &[PathBuf], roots: &[String]) -> Result<()> {
    if !over.is_empty() {
        if over.len() != roots.len() {
            bail!(
                "--over gives {} tree(s) for {} root(s) ({}): give one per root, in order",
                over.len(),
                roots.len(),
                roots.join(", ")
            );
        }
        for d in over {
            if !d.is_dir() {
                return Err(fsbench_base::exit::usage(format!(
                    "--over {}: not a directory",
                    d.display()
                )));
            }
        }
    }
    Ok(())
}

/// Say on standard error what a person should not miss in the results: calls that failed
/// where the recording succeeded, and refusals.
fn say_outcome(r: &Results) {
    let bad = r
        .figures
        .get("failed_where_recorded_ok")
        .copied()
        .unwrap_or(0.0);
    if bad > 0.0 {
        fsbench_base::errln!(
            "fsbench: {} failed in the replay where the recording succeeded (see the mismatch notes)",
            fsbench_base::units::count(bad as u64, "call")
        );
    }
    let fig = |k: &str| r.figures.get(k).copied().unwrap_or(0.0) as u64;
    let (calls, entries) = (
        fig("calls_refused_outside_root"),
        fig("initial_entries_refused"),
    );
    if calls + entries > 0 {
        fsbench_base::errln!(
            "fsbench: refused {} and {} whose paths leave the replay root: nothing outside it was touched (see the refused notes)",
            fsbench_base::units::count(calls, "call"),
            fsbench_base::units::count(entries, "initial-tree entry"),
        );
    }
}

/// Records and a mapper for the tests of the planner and the mapper.
#[cfg(test)]
mod testing {
    use super::map::Mapper;
    use crate::trace::format::{Call, Record};
    use std::path::Path;

    pub fn rec(tid: u32, call: Call, path: Option<&str>, fd: Option<i32>, ret: i64) -> Record {
        Record {
            tid,
            syscall: call.name().into(),
            call,
            path: path.map(String::from),
            fd,
            ret,
            ..Default::default()
        }
    }

    pub fn mapper() -> Mapper {
        Mapper::new(vec!["/w".into(), "/w/deep".into()], Path::new("/run"), &[])
    }
}
