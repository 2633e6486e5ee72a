//! `fsbench trace replay`: issue a trace's calls again, in a marked run directory, through
//! the same measurement path as every other benchmark (thread-local recorders, one
//! [`Results`] with one "flowop" per call type).
//!
//! Before the measurement the initial tree the trace's header carries is rebuilt below the
//! run directory (`r0/` for the first root, `r1/` ...), with real, non-zero data of the
//! recorded sizes. Every traced path below a root maps there; calls on other paths
//! (libraries, `/proc`, `/dev`) and on descriptors opened on them are not replayed. The
//! tree, and every call, reach files only through [`confine::Roots`], beneath the root's
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
//! - `afap`: each thread issues its calls back to back; a thread starts after the call that
//!   created it, and a call on a descriptor another thread opened waits for that open (and
//!   a close for the other threads' calls on it) — nothing else is ordered across threads;
//! - `deps`: as fast as possible, but a call on a path also waits for the earlier calls of
//!   other threads that created, removed, renamed or wrote it (and a call that changes a path
//!   for the earlier calls that used it), so cross-thread outcomes stay as recorded.
//!
//! The trace is read as the replay goes: [`CHUNK`] records are planned, then replayed, then
//! the next ones ([`Planner`]), so memory does not grow with the trace's length.
//!
//! Fidelity is reported beside the latencies: calls replayed, calls that failed where the
//! original succeeded (the first ones quoted) and the reverse, replay time against the
//! recorded time.

use super::confine::{self, Beneath, CallError, Refusal, Roots};
use super::format::{self, Call, EntryKind, Header, Record};
use crate::apps::{AppRun, OpTable};
use crate::engine::rundir::RunDir;
use crate::measure::guard::RunDirGuard;
use crate::measure::{MeasureArgs, Measurement};
use crate::model::FlowopKind;
use crate::stats::{self, OpRecorder, Recorder, Results};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
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

/// What a step does besides its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// Issue the record's call.
    Call,
    /// A fork: the child's descriptors are new duplicates of the parent's
    /// (`Plan::copies[i]`: (parent's instance, child's instance) pairs). Not timed.
    Fork(u32),
    /// exec: close the close-on-exec descriptors (`Plan::closes[i]`). Not timed.
    Exec(u32),
    /// Nothing to issue: a point another thread's start waits for.
    Mark,
}

/// No descriptor instance.
const NONE: u32 = u32::MAX;

/// One replayed record in its worker's sequence.
///
/// Descriptors are resolved at plan time, in recorded order, to *instances*: each
/// successful open or dup (and each descriptor a fork copies) is a new instance, one real
/// descriptor of the replay. A traced descriptor number is reused as soon as it is closed,
/// and threads sharing a table interleave differently in a replay than when recorded, so
/// numbers alone would mix files up; instances cannot.
#[derive(Debug, Clone)]
struct Step {
    rec: u32,
    action: Action,
    /// (worker, position): wait until that worker has completed that step.
    deps: Vec<(u32, u32)>,
    /// Index of its mapped paths in [`Plan::paths`] (`NONE`: none).
    paths: u32,
    /// The instance the call uses (`fd`), its second one (`fd2` of sendfile and
    /// copy_file_range), the instance it creates (open, dup), and one it closes by the way
    /// (dup2 over an open descriptor).
    fd_in: u32,
    fd_in2: u32,
    fd_out: u32,
    fd_drop: u32,
}

/// What the static pass decided.
struct Plan {
    workers: Vec<Vec<Step>>,
    /// Descriptor instances.
    instances: u32,
    copies: Vec<Vec<(u32, u32)>>,
    closes: Vec<Vec<u32>>,
    /// Records not replayed: outside the roots, or a call replay does not issue.
    outside: u64,
    not_replayable: BTreeMap<String, u64>,
    /// Mapped paths of the steps that have some ([`Step::paths`]).
    paths: Vec<StepPaths>,
}

/// A step's paths, mapped beneath their roots.
#[derive(Debug, Default)]
struct StepPaths {
    p1: Option<Beneath>,
    p2: Option<Beneath>,
    /// A symbolic link's target, as it is to be stored ([`Beneath::link_target`]).
    target: Option<CString>,
}

#[derive(Clone, Default)]
struct FdInfo {
    /// The thread that opened it.
    tid: u32,
    in_root: bool,
    /// The replay's instance (`NONE` outside the roots).
    inst: u32,
    path: Option<String>,
    cloexec: bool,
    /// The step that opened it.
    opener: Option<(u32, u32)>,
    /// Steps that used it since (for a close to wait for).
    users: Vec<(u32, u32)>,
}

/// Maps traced paths below the roots into the run directory.
struct Mapper {
    roots: Vec<String>,
    /// Where each root maps: `BASE/r<i>`, or an existing tree (`--over`).
    dirs: Vec<PathBuf>,
}

impl Mapper {
    fn root_of<'p>(&self, p: &'p str) -> Option<(usize, &'p str)> {
        let mut best: Option<(usize, &'p str)> = None;
        for (i, r) in self.roots.iter().enumerate() {
            let rest = if p == r {
                Some("")
            } else {
                p.strip_prefix(r.as_str())
                    .and_then(|s| s.strip_prefix('/'))
                    .or_else(|| (r == "/").then(|| p.trim_start_matches('/')))
            };
            if let Some(rest) = rest {
                if best.is_none_or(|(b, _)| self.roots[b].len() < r.len()) {
                    best = Some((i, rest));
                }
            }
        }
        best
    }
    fn inside(&self, p: &str) -> bool {
        self.root_of(p).is_some()
    }
    /// Where a traced path maps: beneath the directory of its root. Only the roots' own
    /// directories are ever named by a path of their own; everything below them is reached
    /// through [`Roots`], beneath them.
    fn beneath(&self, p: &str) -> Option<Beneath> {
        let (i, rest) = self.root_of(p)?;
        Beneath::new(i as u32, rest)
    }
    /// The target to store in a symbolic link the trace creates at `link`.
    fn link_target(&self, link: &Beneath, target: &str) -> CString {
        let inroot = if target.starts_with('/') {
            self.beneath(target)
        } else {
            None
        };
        link.link_target(target, inroot.as_ref())
    }
}

impl Mapper {
    /// Roots mapped to `base/r0`, `base/r1` ..., or to the `over` trees when given.
    fn new(roots: Vec<String>, base: &Path, over: &[PathBuf]) -> Mapper {
        let dirs = if over.is_empty() {
            (0..roots.len())
                .map(|i| base.join(format!("r{i}")))
                .collect()
        } else {
            over.to_vec()
        };
        Mapper { roots, dirs }
    }
}

/// The first replayed call that would change something below the roots: a path call that
/// modifies, or an open for writing (whose writes would land there).
#[cfg(test)]
fn first_change_below_roots<'r>(records: &'r [Record], mapper: &Mapper) -> Option<&'r Record> {
    records.iter().find(|r| changes_below_roots(r, mapper))
}

/// Whether replaying `r` would change something below the roots.
fn changes_below_roots(r: &Record, mapper: &Mapper) -> bool {
    if !replayable(r.call) {
        return false;
    }
    let inside = r.path.as_deref().is_some_and(|p| mapper.inside(p))
        || r.path2.as_deref().is_some_and(|p| mapper.inside(p));
    if !inside {
        return false;
    }
    let writes = r.call == Call::Open
        && r.flags
            .is_some_and(|f| (f as i32) & libc::O_ACCMODE != libc::O_RDONLY);
    mutates(r) || writes
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
        Ok(n) if n > MAX_THREADS => {
            bail!("--threads {s}: a replay runs at most {MAX_THREADS} threads")
        }
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => bail!("--threads {s}: give `as-recorded` or a number of threads (at least 1)"),
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
    crate::measure::guard::check_threads(n as u64, (256 << 10) + 4096, "the replay")
}

fn mutates(r: &Record) -> bool {
    match r.call {
        Call::Open => {
            let f = r.flags.unwrap_or(0) as i32;
            f & (libc::O_CREAT | libc::O_TRUNC) != 0
        }
        Call::Write
        | Call::Mkdir
        | Call::Rmdir
        | Call::Unlink
        | Call::Rename
        | Call::Link
        | Call::Symlink
        | Call::Truncate
        | Call::Fallocate
        | Call::Chmod
        | Call::Utimes
        | Call::Sendfile
        | Call::CopyRange => true,
        _ => false,
    }
}

/// Whether replay issues this call at all.
fn replayable(c: Call) -> bool {
    !matches!(
        c,
        Call::Other | Call::Munmap | Call::Chdir | Call::Exit | Call::Clone | Call::Exec
    )
}

fn parent(p: &str) -> Option<&str> {
    let i = p.rfind('/')?;
    Some(if i == 0 { "/" } else { &p[..i] })
}

/// A process's descriptors while planning, as the recording saw them. A number can name
/// two open files for a moment: strace stamps a call when it gets to it, so an open in one
/// thread can appear to start before another thread's last use and close of the number it
/// gets. The entries for a number are kept in order; while there are several, a thread's
/// use or close means the newest entry that thread opened, else a close means the oldest
/// and a use the newest.
#[derive(Clone, Default)]
struct PlanTable(HashMap<i32, Vec<FdInfo>>);

impl PlanTable {
    fn pick(v: &[FdInfo], tid: u32, close: bool) -> Option<usize> {
        if v.is_empty() {
            return None;
        }
        if v.len() > 1 {
            if let Some(i) = v.iter().rposition(|f| f.tid == tid) {
                return Some(i);
            }
        }
        Some(if close { 0 } else { v.len() - 1 })
    }
    fn get(&self, fd: &i32, tid: u32) -> Option<&FdInfo> {
        let v = self.0.get(fd)?;
        Self::pick(v, tid, false).map(|i| &v[i])
    }
    fn closing(&self, fd: &i32, tid: u32) -> Option<&FdInfo> {
        let v = self.0.get(fd)?;
        Self::pick(v, tid, true).map(|i| &v[i])
    }
    fn get_mut(&mut self, fd: &i32, tid: u32) -> Option<&mut FdInfo> {
        let v = self.0.get_mut(fd)?;
        let i = Self::pick(v, tid, false)?;
        Some(&mut v[i])
    }
    fn open(&mut self, fd: i32, f: FdInfo) {
        self.0.entry(fd).or_default().push(f);
    }
    fn close(&mut self, fd: i32, tid: u32) -> Option<FdInfo> {
        let v = self.0.get_mut(&fd)?;
        let f = Self::pick(v, tid, true).map(|i| v.remove(i));
        if v.is_empty() {
            self.0.remove(&fd);
        }
        f
    }
}

/// Per-path ordering state of the `deps` mode.
#[derive(Default)]
struct PathDeps {
    last_change: Option<(u32, u32)>,
    users: Vec<(u32, u32)>,
}

/// Plan a whole trace at once.
#[cfg(test)]
fn build_plan(records: &[Record], mapper: &Mapper, threads: Option<usize>, mode: Mode) -> Plan {
    Planner::default().plan(records, mapper, threads, mode)
}

/// The static pass, one chunk of records at a time. What it knows of the traced program
/// (threads, descriptor tables, open files) carries over from chunk to chunk; the
/// orderings between steps do not: a chunk starts when every step of the previous one is
/// done, so what it waited for is behind it. Descriptor instances closed in a chunk are
/// used again from the next one on, so the replay's table is as large as what is open at
/// once plus one chunk's opens, whatever the trace's length.
#[derive(Default)]
struct Planner {
    worker_of: HashMap<u32, u32>,
    table_of: HashMap<u32, u32>,
    tables: Vec<PlanTable>,
    nworkers: usize,
    start_dep: HashMap<u32, (u32, u32)>,
    instances: u32,
    /// Instances free to be used again, and those closed in the chunk being planned.
    free: Vec<u32>,
    freed: Vec<u32>,
    pdeps: HashMap<String, PathDeps>,
    ntids: usize,
}

impl Planner {
    /// Forget the previous chunk's orderings (it is done when the next one starts).
    fn next_chunk(&mut self) {
        self.start_dep.clear();
        self.pdeps.clear();
        for f in self
            .tables
            .iter_mut()
            .flat_map(|t| t.0.values_mut().flatten())
        {
            f.opener = None;
            f.users.clear();
        }
        self.free.append(&mut self.freed);
    }

    fn plan(
        &mut self,
        records: &[Record],
        mapper: &Mapper,
        threads: Option<usize>,
        mode: Mode,
    ) -> Plan {
        self.next_chunk();
        plan_chunk(records, mapper, threads, mode, self)
    }
}

fn plan_chunk(
    records: &[Record],
    mapper: &Mapper,
    threads: Option<usize>,
    mode: Mode,
    p: &mut Planner,
) -> Plan {
    let Planner {
        worker_of,
        table_of,
        tables,
        nworkers,
        start_dep,
        instances,
        free,
        freed,
        pdeps,
        ntids,
    } = p;
    let mut workers: Vec<Vec<Step>> = (0..*nworkers).map(|_| Vec::new()).collect();
    let mut outside = 0u64;
    let mut not_replayable: BTreeMap<String, u64> = BTreeMap::new();
    let mut paths = Vec::new();
    let mut copies = Vec::new();
    let mut closes = Vec::new();
    let mut new_inst = || {
        free.pop().unwrap_or_else(|| {
            *instances += 1;
            *instances - 1
        })
    };
    for (ri, r) in records.iter().enumerate() {
        let w = *worker_of.entry(r.tid).or_insert_with(|| {
            let w = match threads {
                None => *ntids,
                Some(n) => *ntids % n,
            } as u32;
            *ntids += 1;
            if workers.len() <= w as usize {
                workers.resize_with(w as usize + 1, Vec::new);
            }
            w
        });
        let table = *table_of.entry(r.tid).or_insert_with(|| {
            tables.push(PlanTable::default());
            tables.len() as u32 - 1
        });
        let pos = workers[w as usize].len() as u32;
        let mut deps: Vec<(u32, u32)> = Vec::new();
        if let Some(d) = start_dep.remove(&r.tid) {
            deps.push(d);
        }
        let me = (w, pos);
        let step = |action, deps, paths, fd_in, fd_in2, fd_out, fd_drop| Step {
            rec: ri as u32,
            action,
            deps,
            paths,
            fd_in,
            fd_in2,
            fd_out,
            fd_drop,
        };
        // Process-level calls: always steps (they keep the tables as the kernel did).
        match r.call {
            Call::Clone if r.ok() && r.ret > 0 => {
                let child = r.ret as u32;
                let shares = r.flags.unwrap_or(0) & libc::CLONE_FILES as u64 != 0;
                let action = if shares {
                    table_of.insert(child, table);
                    Action::Mark
                } else {
                    let mut copy = tables[table as usize].clone();
                    let mut pairs = Vec::new();
                    for f in copy.0.values_mut().flatten() {
                        f.opener = Some(me);
                        f.users.clear();
                        if f.inst != NONE {
                            let c = new_inst();
                            pairs.push((f.inst, c));
                            f.inst = c;
                        }
                    }
                    tables.push(copy);
                    table_of.insert(child, tables.len() as u32 - 1);
                    copies.push(pairs);
                    Action::Fork(copies.len() as u32 - 1)
                };
                start_dep.insert(child, me);
                workers[w as usize].push(step(action, deps, NONE, NONE, NONE, NONE, NONE));
                continue;
            }
            Call::Exec if r.ok() => {
                let t = &mut tables[table as usize];
                let gone: Vec<u32> =
                    t.0.values()
                        .flatten()
                        .filter(|f| f.cloexec && f.inst != NONE)
                        .map(|f| f.inst)
                        .collect();
                for v in t.0.values_mut() {
                    v.retain(|f| !f.cloexec);
                }
                t.0.retain(|_, v| !v.is_empty());
                freed.extend(gone.iter().copied());
                closes.push(gone);
                let a = Action::Exec(closes.len() as u32 - 1);
                workers[w as usize].push(step(a, deps, NONE, NONE, NONE, NONE, NONE));
                continue;
            }
            _ => {}
        }
        if !replayable(r.call) {
            *not_replayable.entry(r.syscall.clone()).or_default() += 1;
            if !deps.is_empty() {
                start_dep.insert(r.tid, deps[0]);
            }
            continue;
        }
        // Which file the call is on, and whether it is below a root.
        let fd_info = r.fd.and_then(|fd| {
            let t = &tables[table as usize];
            if r.call == Call::Close {
                t.closing(&fd, r.tid).cloned()
            } else {
                t.get(&fd, r.tid).cloned()
            }
        });
        let fd2_info = match r.call {
            Call::Sendfile | Call::CopyRange => r
                .fd2
                .and_then(|fd| tables[table as usize].get(&fd, r.tid).cloned()),
            _ => None,
        };
        let on_fd = r.path.is_none() && r.fd.is_some();
        let inside = if on_fd {
            fd_info.as_ref().is_some_and(|f| f.in_root)
                || fd2_info.as_ref().is_some_and(|f| f.in_root)
        } else {
            r.path.as_deref().is_some_and(|p| mapper.inside(p))
                && match (r.call, r.path2.as_deref()) {
                    (Call::Rename | Call::Link, Some(p2)) => mapper.inside(p2),
                    _ => true,
                }
        };
        let inst_of = |f: &Option<FdInfo>| f.as_ref().map_or(NONE, |f| f.inst);
        let (fd_in, fd_in2) = (inst_of(&fd_info), inst_of(&fd2_info));
        // Keep the tables as the kernel did, replayed or not.
        let (mut fd_out, mut fd_drop) = (NONE, NONE);
        match r.call {
            Call::Open if r.ok() => {
                let f = r.flags.unwrap_or(0) as i32;
                let inst = if inside { new_inst() } else { NONE };
                fd_out = inst;
                tables[table as usize].open(
                    r.ret as i32,
                    FdInfo {
                        in_root: inside,
                        inst,
                        path: r.path.clone(),
                        cloexec: f & libc::O_CLOEXEC != 0,
                        opener: Some(me),
                        users: Vec::new(),
                        tid: r.tid,
                    },
                );
            }
            Call::Dup if r.ok() => {
                let mut i = fd_info.clone().unwrap_or_default();
                i.opener = Some(me);
                i.tid = r.tid;
                i.users.clear();
                i.cloexec = r.flags.unwrap_or(0) as i32 & libc::O_CLOEXEC != 0;
                i.inst = if inside && i.inst != NONE {
                    new_inst()
                } else {
                    NONE
                };
                fd_out = i.inst;
                let t = &mut tables[table as usize];
                if r.fd2.is_some() {
                    // dup2/dup3 over an open descriptor closes it, as the kernel does.
                    fd_drop = t.close(r.ret as i32, r.tid).map_or(NONE, |o| o.inst);
                    if fd_drop != NONE {
                        freed.push(fd_drop);
                    }
                }
                t.open(r.ret as i32, i);
            }
            Call::Close => {
                if let Some(f) = tables[table as usize].close(r.fd.unwrap_or(-1), r.tid) {
                    if f.inst != NONE {
                        freed.push(f.inst);
                    }
                }
            }
            _ => {}
        }
        if !inside {
            outside += 1;
            if !deps.is_empty() {
                start_dep.insert(r.tid, deps[0]);
            }
            continue;
        }
        // Cross-thread ordering on descriptors (all modes).
        for fi in [&fd_info, &fd2_info].into_iter().flatten() {
            if let Some(o) = fi.opener {
                deps.push(o);
            }
            if r.call == Call::Close {
                deps.extend(fi.users.iter().copied());
            }
        }
        for fd in [r.fd, r.fd2].into_iter().flatten() {
            if r.call != Call::Close {
                if let Some(fi) = tables[table as usize].get_mut(&fd, r.tid) {
                    // The latest use per worker is all a close has to wait for.
                    match fi.users.iter_mut().find(|u| u.0 == me.0) {
                        Some(u) => *u = me,
                        None => fi.users.push(me),
                    }
                }
            }
        }
        // Cross-thread ordering on paths (deps mode, and timed mode, whose calls go at their
        // recorded times but never before what they depended on).
        if mode != Mode::Afap {
            let mut touched: Vec<String> = Vec::new();
            if let Some(p) = r
                .path
                .clone()
                .or_else(|| fd_info.as_ref().and_then(|f| f.path.clone()))
            {
                touched.push(p);
            }
            if matches!(r.call, Call::Rename | Call::Link) {
                if let Some(p2) = &r.path2 {
                    touched.push(p2.clone());
                }
            }
            if let Some(p) = fd2_info.as_ref().and_then(|f| f.path.clone()) {
                touched.push(p);
            }
            let changes = mutates(r);
            let creates = matches!(
                r.call,
                Call::Open
                    | Call::Mkdir
                    | Call::Rmdir
                    | Call::Unlink
                    | Call::Rename
                    | Call::Link
                    | Call::Symlink
            ) && r.path.is_some();
            let mut parents = Vec::new();
            if creates {
                for p in &touched {
                    if let Some(d) = parent(p) {
                        parents.push(d.to_string());
                    }
                }
            }
            for p in touched.iter().chain(parents.iter()) {
                let e = pdeps.entry(p.clone()).or_default();
                if let Some(d) = e.last_change {
                    deps.push(d);
                }
            }
            for p in &touched {
                let e = pdeps.entry(p.clone()).or_default();
                if changes {
                    deps.extend(e.users.iter().copied());
                    e.users.clear();
                    e.last_change = Some(me);
                } else {
                    e.users.push(me);
                    if e.users.len() > 64 {
                        // Bounded: the oldest readers are long done in practice.
                        e.users.drain(..32);
                    }
                }
            }
            for p in &parents {
                let e = pdeps.entry(p.clone()).or_default();
                if changes {
                    // A new or removed entry changes its directory's listing.
                    e.users.push(me);
                }
            }
        }
        // Keep the latest position per other worker: one wait each.
        deps.retain(|d| d.0 != w);
        deps.sort_unstable();
        deps.dedup_by(|b, a| {
            a.0 == b.0 && {
                a.1 = a.1.max(b.1);
                true
            }
        });
        let p1 = r.path.as_deref().and_then(|p| mapper.beneath(p));
        let sp = match (r.call, &p1) {
            (Call::Symlink, Some(link)) => StepPaths {
                target: r.path2.as_deref().map(|t| mapper.link_target(link, t)),
                p1,
                p2: None,
            },
            _ => StepPaths {
                p1,
                p2: r.path2.as_deref().and_then(|p| mapper.beneath(p)),
                target: None,
            },
        };
        let pi = if sp.p1.is_some() || sp.p2.is_some() {
            paths.push(sp);
            paths.len() as u32 - 1
        } else {
            NONE
        };
        workers[w as usize].push(step(Action::Call, deps, pi, fd_in, fd_in2, fd_out, fd_drop));
    }
    *nworkers = workers.len();
    Plan {
        workers,
        instances: *instances,
        copies,
        closes,
        outside,
        not_replayable,
        paths,
    }
}

/// Records planned and replayed at a time: a chunk's records and steps are all a replay
/// holds of the trace (a few tens of MB), whatever its length.
const CHUNK: usize = 1 << 16;

/// What the chunks of a replay add up to.
#[derive(Default)]
struct Totals {
    records: u64,
    recorded_end: u64,
    outside: u64,
    not_replayable: BTreeMap<String, u64>,
    workers: usize,
    replayed: u64,
    failed_ok: u64,
    ok_failed: u64,
    refused: (u64, u64),
}

impl Totals {
    fn chunk(&mut self, records: &[Record], plan: &Plan) {
        self.records += records.len() as u64;
        let end = records.iter().map(|r| r.start_ns + r.dur_ns).max();
        self.recorded_end = self.recorded_end.max(end.unwrap_or(0));
        self.outside += plan.outside;
        for (k, v) in &plan.not_replayable {
            *self.not_replayable.entry(k.clone()).or_default() += v;
        }
        self.workers = self.workers.max(plan.workers.len());
    }
    fn add(&mut self, o: &WorkerOut) {
        self.replayed += o.replayed;
        self.failed_ok += o.failed_ok;
        self.ok_failed += o.ok_failed;
        self.refused.0 += o.refused.0;
        self.refused.1 += o.refused.1;
    }
}

/// The replay's descriptors, one per instance (-1: not open).
struct Fds(Vec<std::sync::atomic::AtomicI32>);

impl Fds {
    /// Slots up to `n` instances (between chunks, when no worker runs).
    fn grow(&mut self, n: u32) {
        while self.0.len() < n as usize {
            self.0.push(std::sync::atomic::AtomicI32::new(-1));
        }
    }
    fn get(&self, inst: u32) -> std::io::Result<RawFd> {
        match self.0.get(inst as usize).map(|a| a.load(Ordering::Acquire)) {
            Some(fd) if fd >= 0 => Ok(fd),
            _ => Err(std::io::Error::from_raw_os_error(libc::EBADF)),
        }
    }
    fn set(&self, inst: u32, fd: RawFd) {
        if let Some(a) = self.0.get(inst as usize) {
            let old = a.swap(fd, Ordering::AcqRel);
            if old >= 0 {
                // SAFETY: a descriptor this replay opened; its slot no longer names it.
                unsafe { libc::close(old) };
            }
        }
    }
    fn take(&self, inst: u32) -> Option<RawFd> {
        let fd = self.0.get(inst as usize)?.swap(-1, Ordering::AcqRel);
        (fd >= 0).then_some(fd)
    }
}

impl Drop for Fds {
    fn drop(&mut self) {
        for a in &self.0 {
            let fd = a.load(Ordering::Acquire);
            if fd >= 0 {
                // SAFETY: still open and owned by this replay.
                unsafe { libc::close(fd) };
            }
        }
    }
}

/// How many steps a worker has completed, on its own cache line (every call stores it).
#[derive(Default)]
#[repr(align(64))]
struct Progress(AtomicU32);

/// What the workers share.
struct Shared<'a> {
    records: &'a [Record],
    plan: &'a Plan,
    fds: &'a Fds,
    progress: Vec<Progress>,
    mode: Mode,
    speed: f64,
    t0: Instant,
    mismatches: &'a Mutex<Vec<String>>,
    refusals: &'a Mutex<Vec<String>>,
    show: usize,
    roots: &'a Roots,
}

struct WorkerOut {
    rec: Recorder,
    replayed: u64,
    failed_ok: u64,
    ok_failed: u64,
    /// Calls refused: (leaving the root, changing an `--over` tree).
    refused: (u64, u64),
}

fn cerr() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn check(r: libc::c_long) -> std::io::Result<i64> {
    if r < 0 {
        Err(cerr())
    } else {
        Ok(r)
    }
}

/// The largest buffer of one replay thread, and of all of them together: a trace can ask
/// for any size in any number of threads, and a larger call is issued at the buffer's size
/// (a short read or write, as the kernel may return anyway).
const MAX_IO: usize = 64 << 20;
const IO_BUDGET: usize = 256 << 20;

impl Shared<'_> {
    /// Run one chunk: a thread for each worker with steps in it, until all are done.
    fn run_chunk(&self) -> Result<Vec<WorkerOut>> {
        let active = self.plan.workers.iter().filter(|w| !w.is_empty()).count();
        let buf_max = (IO_BUDGET / active.max(1)).clamp(4096, MAX_IO);
        std::thread::scope(|sc| {
            let hs: Vec<_> = (0..self.plan.workers.len())
                .filter(|&w| !self.plan.workers[w].is_empty())
                .map(|w| {
                    std::thread::Builder::new()
                        .name(format!("replay {w}"))
                        .stack_size(256 << 10)
                        .spawn_scoped(sc, move || self.run_worker(w, buf_max))
                })
                .collect::<std::io::Result<_>>()?;
            Ok::<_, std::io::Error>(
                hs.into_iter()
                    .map(|h| h.join().expect("replay worker panicked"))
                    .collect(),
            )
        })
        .context("starting the replay threads")
    }

    fn wait_for(&self, deps: &[(u32, u32)]) {
        for &(w, p) in deps {
            let mut spins = 0u32;
            while self.progress[w as usize].0.load(Ordering::Acquire) <= p {
                if crate::engine::interrupted() {
                    return;
                }
                spins += 1;
                if spins < 200 {
                    std::hint::spin_loop();
                } else if spins < 2000 {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
    }

    /// Issue one call: Ok((result, bytes)), the error, or the refusal.
    fn issue(&self, ri: u32, s: &Step, buf: &mut [u8]) -> Result<(i64, u64), CallError> {
        let r = &self.records[ri as usize];
        let paths = self.plan.paths.get(s.paths as usize);
        match paths.and_then(|p| p.p1.as_ref()) {
            Some(p1) => self.issue_path(r, s, p1, paths.expect("some"), buf),
            None => self.issue_fd(r, s, buf),
        }
    }

    /// A call on a path, every one resolved beneath its root by [`Roots`].
    fn issue_path(
        &self,
        r: &Record,
        s: &Step,
        p1: &Beneath,
        paths: &StepPaths,
        buf: &mut [u8],
    ) -> Result<(i64, u64), CallError> {
        let roots = self.roots;
        let nopath = || CallError::Io(std::io::Error::from_raw_os_error(libc::EINVAL));
        let nofollow = r.flags.unwrap_or(0) as i32 & libc::AT_SYMLINK_NOFOLLOW != 0;
        let e = confine::EMPTY.as_ptr();
        // SAFETY (all calls below): valid C strings, descriptors held for the call's
        // duration, buffers of at least the length passed.
        let v = unsafe {
            match r.call {
                Call::Open => {
                    let flags = r.flags.unwrap_or(0) as i32;
                    let fd = roots.open(p1, flags, r.mode.unwrap_or(0o644))?;
                    return Ok(self.opened(s, fd));
                }
                Call::Stat
                    if r.syscall.starts_with("access") || r.syscall.starts_with("faccessat") =>
                {
                    let t = roots.target(p1, true)?;
                    let m = r.mode.unwrap_or(0) as i32;
                    libc::syscall(
                        libc::SYS_faccessat2,
                        t.as_raw_fd(),
                        e,
                        m,
                        libc::AT_EMPTY_PATH,
                    )
                }
                Call::Stat => {
                    let t = roots.target(p1, !nofollow)?;
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::fstatat(t.as_raw_fd(), e, &mut st, libc::AT_EMPTY_PATH) as _
                }
                Call::Readlink => {
                    let t = roots.target(p1, false)?;
                    let n = buf.len().min(4096);
                    libc::readlinkat(t.as_raw_fd(), e, buf.as_mut_ptr().cast(), n) as _
                }
                Call::Mkdir => {
                    let (d, n) = roots.entry(p1)?;
                    libc::mkdirat(d.as_raw_fd(), n.as_ptr(), r.mode.unwrap_or(0o755)) as _
                }
                Call::Rmdir | Call::Unlink => {
                    let (d, n) = roots.entry(p1)?;
                    let fl = if r.call == Call::Rmdir {
                        libc::AT_REMOVEDIR
                    } else {
                        0
                    };
                    libc::unlinkat(d.as_raw_fd(), n.as_ptr(), fl) as _
                }
                Call::Rename | Call::Link => {
                    let p2 = paths.p2.as_ref().ok_or_else(nopath)?;
                    let ((d1, n1), (d2, n2)) = (roots.entry(p1)?, roots.entry(p2)?);
                    let (d1, d2) = (d1.as_raw_fd(), d2.as_raw_fd());
                    if r.call == Call::Rename {
                        let fl = r.flags.unwrap_or(0) as libc::c_uint;
                        libc::renameat2(d1, n1.as_ptr(), d2, n2.as_ptr(), fl) as _
                    } else {
                        // Never AT_SYMLINK_FOLLOW: a link to a link stays beneath the root.
                        libc::linkat(d1, n1.as_ptr(), d2, n2.as_ptr(), 0) as _
                    }
                }
                Call::Symlink => {
                    let t = paths.target.as_ref().ok_or_else(nopath)?;
                    let (d, n) = roots.entry(p1)?;
                    libc::symlinkat(t.as_ptr(), d.as_raw_fd(), n.as_ptr()) as _
                }
                Call::Truncate => {
                    let fl = libc::O_WRONLY | libc::O_NONBLOCK;
                    let f = roots.open(p1, fl, 0)?;
                    libc::ftruncate(f.as_raw_fd(), r.size.unwrap_or(0) as i64) as _
                }
                Call::Chmod => {
                    roots.may_change()?;
                    let t = roots.target(p1, true)?;
                    confine::chmod_fd(t.as_raw_fd(), r.mode.unwrap_or(0o644))?;
                    0
                }
                Call::Utimes => {
                    roots.may_change()?;
                    let t = roots.target(p1, !nofollow)?;
                    let fl = libc::AT_EMPTY_PATH;
                    libc::utimensat(t.as_raw_fd(), e, std::ptr::null(), fl) as _
                }
                _ => return Err(nopath()),
            }
        };
        Ok((check(v)?, 0))
    }

    /// Keep a descriptor a replayed open returned, in its instance's slot.
    fn opened(&self, s: &Step, fd: OwnedFd) -> (i64, u64) {
        let n = fd.into_raw_fd();
        if let Some(stale) = self.fds.take(s.fd_drop) {
            // SAFETY: taken out of its slot: nothing else closes it.
            unsafe { libc::close(stale) };
        }
        if s.fd_out != NONE {
            self.fds.set(s.fd_out, n);
        } else {
            // Failed when recorded: not kept.
            // SAFETY: a descriptor this call opened and nobody else holds.
            unsafe { libc::close(n) };
        }
        (n as i64, 0)
    }

    /// A call on a descriptor (opened beneath a root by an earlier step).
    fn issue_fd(&self, r: &Record, s: &Step, buf: &mut [u8]) -> Result<(i64, u64), CallError> {
        let fd = || self.fds.get(s.fd_in);
        let size = (r.size.unwrap_or(0) as usize).min(buf.len());
        let change = || self.roots.may_change();
        // SAFETY (all calls below): descriptors owned by the tables, buffers of at least the
        // length passed.
        let v = unsafe {
            match r.call {
                Call::Close => match self.fds.take(s.fd_in) {
                    Some(f) => libc::close(f) as _,
                    None => return Err(std::io::Error::from_raw_os_error(libc::EBADF).into()),
                },
                Call::Read => {
                    let f = fd()?;
                    let n = match r.offset {
                        Some(o) => libc::pread(f, buf.as_mut_ptr().cast(), size, o as i64),
                        None => libc::read(f, buf.as_mut_ptr().cast(), size),
                    };
                    return check(n as _).map(|n| (n, n as u64)).map_err(Into::into);
                }
                Call::Write => {
                    change()?;
                    let f = fd()?;
                    let n = match r.offset {
                        Some(o) => libc::pwrite(f, buf.as_ptr().cast(), size, o as i64),
                        None => libc::write(f, buf.as_ptr().cast(), size),
                    };
                    return check(n as _).map(|n| (n, n as u64)).map_err(Into::into);
                }
                Call::Seek => {
                    let whence = r.flags.unwrap_or(0) as i32;
                    libc::lseek(fd()?, r.offset.unwrap_or(0) as i64, whence) as _
                }
                Call::Dup => return self.dup(r, s),
                Call::Stat => {
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::fstat(fd()?, &mut st) as _
                }
                Call::Getdents => {
                    let n = size.max(1024).min(buf.len());
                    libc::syscall(libc::SYS_getdents64, fd()?, buf.as_mut_ptr(), n)
                }
                Call::Fsync if r.flags == Some(1) => libc::fdatasync(fd()?) as _,
                Call::Fsync => libc::fsync(fd()?) as _,
                Call::Truncate => {
                    change()?;
                    libc::ftruncate(fd()?, r.size.unwrap_or(0) as i64) as _
                }
                Call::Fallocate => {
                    change()?;
                    let (o, l) = (r.offset.unwrap_or(0) as i64, r.size.unwrap_or(0) as i64);
                    libc::fallocate(fd()?, r.flags.unwrap_or(0) as i32, o, l) as _
                }
                Call::Mmap => return self.map_unmap(r, fd()?),
                Call::Sendfile | Call::CopyRange => return self.copy(r, s, buf, size),
                Call::Chmod => {
                    change()?;
                    libc::fchmod(fd()?, r.mode.unwrap_or(0o644)) as _
                }
                Call::Utimes => {
                    change()?;
                    libc::futimens(fd()?, std::ptr::null()) as _
                }
                // A path call whose path did not map (a NUL in it), or a call replay
                // does not issue.
                Call::Open
                | Call::Readlink
                | Call::Mkdir
                | Call::Rmdir
                | Call::Unlink
                | Call::Rename
                | Call::Link
                | Call::Symlink => {
                    return Err(std::io::Error::from_raw_os_error(libc::EINVAL).into())
                }
                _ => return Err(std::io::Error::from_raw_os_error(libc::ENOSYS).into()),
            }
        };
        Ok((check(v)?, 0))
    }

    fn dup(&self, r: &Record, s: &Step) -> Result<(i64, u64), CallError> {
        let f = self.fds.get(s.fd_in)?;
        let fl = if r.flags.unwrap_or(0) as i32 & libc::O_CLOEXEC != 0 {
            libc::F_DUPFD_CLOEXEC
        } else {
            libc::F_DUPFD
        };
        // SAFETY: a descriptor of this replay.
        let n = check(unsafe { libc::fcntl(f, fl, 0) } as _)? as RawFd;
        if s.fd_drop != NONE {
            // dup2 over an open descriptor closed it, as the kernel does.
            if let Some(old) = self.fds.take(s.fd_drop) {
                // SAFETY: taken out of its slot: nothing else closes it.
                unsafe { libc::close(old) };
            }
        }
        if s.fd_out != NONE {
            self.fds.set(s.fd_out, n);
        } else {
            // SAFETY: the duplicate is ours alone.
            unsafe { libc::close(n) };
        }
        Ok((n as i64, 0))
    }

    /// Map and unmap: the page faults of the traced program's accesses are not in the
    /// trace, so none are replayed.
    fn map_unmap(&self, r: &Record, f: RawFd) -> Result<(i64, u64), CallError> {
        let len = r.size.unwrap_or(0) as usize;
        let prot =
            r.mode.unwrap_or(libc::PROT_READ as u32) as i32 & (libc::PROT_READ | libc::PROT_WRITE);
        let fl = if r.flags.unwrap_or(0) as i32 & libc::MAP_SHARED != 0 {
            if prot & libc::PROT_WRITE != 0 {
                self.roots.may_change()?;
            }
            libc::MAP_SHARED
        } else {
            libc::MAP_PRIVATE
        };
        let off = r.offset.unwrap_or(0) as i64;
        // SAFETY: a fresh mapping of our own, unmapped at once.
        unsafe {
            let p = libc::mmap(std::ptr::null_mut(), len.max(1), prot, fl, f, off);
            if p == libc::MAP_FAILED {
                return Err(cerr().into());
            }
            libc::munmap(p, len.max(1));
        }
        Ok((0, 0))
    }

    /// sendfile and copy_file_range. Either side may be outside the roots (a socket,
    /// standard output): then only the side below them is replayed, as a read or a write.
    fn copy(
        &self,
        r: &Record,
        s: &Step,
        buf: &mut [u8],
        size: usize,
    ) -> Result<(i64, u64), CallError> {
        let get = |i: u32| self.fds.get(i).ok();
        let (inf, outf) = match r.call {
            Call::Sendfile => (get(s.fd_in2), get(s.fd_in)),
            _ => (get(s.fd_in), get(s.fd_in2)),
        };
        if outf.is_some() {
            self.roots.may_change()?;
        }
        let null = std::ptr::null_mut();
        // SAFETY: descriptors of this replay, a buffer of at least `size` bytes.
        let n = unsafe {
            match (inf, outf) {
                (Some(i), Some(o)) if r.call == Call::Sendfile => libc::sendfile(o, i, null, size),
                (Some(i), Some(o)) => libc::copy_file_range(i, null, o, null, size, 0),
                (Some(i), None) => libc::read(i, buf.as_mut_ptr().cast(), size),
                (None, Some(o)) => libc::write(o, buf.as_ptr().cast(), size),
                (None, None) => return Err(std::io::Error::from_raw_os_error(libc::EBADF).into()),
            }
        };
        Ok(check(n as _).map(|n| (n, n as u64))?)
    }

    fn run_worker(&self, w: usize, buf_max: usize) -> WorkerOut {
        let mut rec = Recorder::new(Call::ALL.len());
        let steps = &self.plan.workers[w];
        let max = steps
            .iter()
            .map(|s| self.records[s.rec as usize].size.unwrap_or(0) as usize)
            .max()
            .unwrap_or(0)
            .clamp(4096, buf_max);
        let mut rng = <rand_pcg::Pcg64Mcg as rand::SeedableRng>::seed_from_u64(w as u64 + 1);
        let mut buf = crate::sys::io::AlignedBuf::new(max, &mut rng);
        let clock = stats::clock::global();
        let t0 = self.t0;
        let (mut out_replayed, mut out_failed_ok, mut out_ok_failed) = (0u64, 0u64, 0u64);
        let mut out_refused = (0u64, 0u64);
        for (pos, s) in steps.iter().enumerate() {
            if crate::engine::interrupted() {
                break;
            }
            self.wait_for(&s.deps);
            let r = &self.records[s.rec as usize];
            if self.mode == Mode::Timed {
                let due = t0 + Duration::from_secs_f64(r.start_ns as f64 / 1e9 / self.speed);
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
            }
            match s.action {
                Action::Fork(i) => {
                    // The kernel copies the table without a system call: untimed dups.
                    for &(from, to) in &self.plan.copies[i as usize] {
                        if let Ok(f) = self.fds.get(from) {
                            // SAFETY: an open descriptor of this replay.
                            let n = unsafe { libc::fcntl(f, libc::F_DUPFD_CLOEXEC, 0) };
                            if n >= 0 {
                                self.fds.set(to, n);
                            }
                        }
                    }
                }
                Action::Exec(i) => {
                    for &inst in &self.plan.closes[i as usize] {
                        if let Some(f) = self.fds.take(inst) {
                            // SAFETY: taken out of its slot: nothing else closes it.
                            unsafe { libc::close(f) };
                        }
                    }
                }
                Action::Mark => {}
                Action::Call => {
                    // Call codes count from 1 in the order of Call::ALL.
                    let slot = (r.call as usize).saturating_sub(1);
                    let c0 = clock.now();
                    let out = self.issue(s.rec, s, buf.as_mut_slice());
                    let ns = clock.since(c0);
                    let o: &mut OpRecorder = &mut rec.ops[slot];
                    let out = match out {
                        Err(CallError::Refused(why)) => {
                            match why {
                                Refusal::Escape => out_refused.0 += 1,
                                Refusal::ReadOnly => out_refused.1 += 1,
                            }
                            self.refusal(r, why);
                            self.progress[w].0.store(pos as u32 + 1, Ordering::Release);
                            continue;
                        }
                        Err(CallError::Io(e)) => Err(e),
                        Ok(v) => Ok(v),
                    };
                    out_replayed += 1;
                    match (&out, r.ok()) {
                        (Ok((_, bytes)), _) => {
                            o.record(ns, *bytes);
                            if !r.ok() {
                                out_ok_failed += 1;
                                self.note(
                                    r,
                                    "succeeded where the recording failed with",
                                    &format::errno_name(-r.ret as i32),
                                );
                            }
                        }
                        (Err(_), false) => o.record(ns, 0),
                        (Err(e), true) => {
                            out_failed_ok += 1;
                            o.error(|| describe(r, e));
                            self.note(r, "failed where the recording succeeded:", &e.to_string());
                        }
                    }
                }
            }
            self.progress[w].0.store(pos as u32 + 1, Ordering::Release);
        }
        // Anything left undone still counts as done for the others' waits.
        self.progress[w].0.store(u32::MAX, Ordering::Release);
        WorkerOut {
            rec,
            replayed: out_replayed,
            failed_ok: out_failed_ok,
            ok_failed: out_ok_failed,
            refused: out_refused,
        }
    }

    /// Quote a refused call (the first ones).
    fn refusal(&self, r: &Record, why: Refusal) {
        let mut m = self.refusals.lock().expect("refusals");
        if m.len() < self.show.max(1) {
            let what = match why {
                Refusal::Escape => "would leave the replay root",
                Refusal::ReadOnly => "would change an --over tree",
            };
            let mut p = format!("{:?}", r.path.as_deref().unwrap_or(""));
            if let Some(p2) = &r.path2 {
                p.push_str(&format!(" -> {p2:?}"));
            }
            m.push(format!(
                "{} {p} (thread {}, {:.6} s) {what}: not issued",
                r.call.name(),
                r.tid,
                r.start_ns as f64 / 1e9
            ));
        }
    }

    fn note(&self, r: &Record, what: &str, detail: &str) {
        let mut m = self.mismatches.lock().expect("mismatches");
        if m.len() < self.show {
            m.push(format!(
                "{} {} (thread {}, {:.6} s) {what} {detail}",
                r.syscall.escape_debug(),
                r.path
                    .as_deref()
                    .map(|p| format!("{p:?}"))
                    .or_else(|| r.fd.map(|f| format!("fd {f}")))
                    .unwrap_or_default(),
                r.tid,
                r.start_ns as f64 / 1e9
            ));
        }
    }
}

fn describe(r: &Record, e: &std::io::Error) -> String {
    format!(
        "{} {:?}: {e}",
        r.syscall.escape_debug(),
        r.path.as_deref().unwrap_or("")
    )
}

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

/// What rebuilding the initial tree did.
#[derive(Debug, Default, Clone, Copy)]
struct Rebuilt {
    entries: u64,
    bytes: u64,
    /// Entries whose path leaves its root (`..`, through a link pointing out): not made.
    refused: u64,
}

/// Rebuild the initial tree beneath the roots' directories: directories, files of the
/// recorded sizes filled with non-zero data, symbolic links. Every entry is made through
/// [`Roots`], like the replayed calls, so an entry whose path leaves its root is refused.
fn rebuild(header: &Header, mapper: &Mapper, roots: &Roots) -> Result<Rebuilt> {
    let mut rng = <rand_pcg::Pcg64Mcg as rand::SeedableRng>::seed_from_u64(0x7ace);
    let mut chunk = vec![0u8; 1 << 20];
    rand::RngCore::fill_bytes(&mut rng, &mut chunk);
    for b in chunk.iter_mut() {
        if *b == 0 {
            *b = 1;
        }
    }
    let mut done = Rebuilt::default();
    let mut entries: Vec<&format::Initial> = header.initial.iter().collect();
    // Parents before children.
    entries.sort_by_key(|e| (e.root, e.path.matches('/').count(), e.path.clone()));
    for e in entries {
        let Some(root) = header.roots.get(e.root as usize) else {
            continue;
        };
        let traced = if e.path.is_empty() {
            root.clone()
        } else {
            format!("{}/{}", root.trim_end_matches('/'), e.path)
        };
        let Some(p) = mapper.beneath(&traced) else {
            continue;
        };
        match make_entry(e, &p, mapper, roots, &chunk) {
            Ok(true) => {
                done.entries += 1;
                if e.kind == EntryKind::File {
                    done.bytes += e.size;
                }
            }
            Ok(false) => {}
            Err(CallError::Refused(_)) => done.refused += 1,
            Err(CallError::Io(err)) => {
                bail!("rebuilding the initial tree's {traced:?} (in {}): {err}", {
                    mapper.dirs[p.root as usize].display()
                })
            }
        }
    }
    Ok(done)
}

/// Make one entry of the initial tree; false when there is nothing to make.
fn make_entry(
    e: &format::Initial,
    p: &Beneath,
    mapper: &Mapper,
    roots: &Roots,
    chunk: &[u8],
) -> Result<bool, CallError> {
    use std::io::Write;
    let is_root = p.rel.as_bytes().iter().all(|b| *b == b'/');
    let fd = match e.kind {
        EntryKind::Dir => {
            if !is_root {
                mkdir_beneath(roots, p)?;
            }
            roots.open(p, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)?
        }
        EntryKind::File => {
            let fl = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW;
            let fd = roots.open(p, fl, 0o600)?;
            let mut f = std::fs::File::from(fd);
            let mut left = e.size;
            while left > 0 {
                let k = left.min(chunk.len() as u64) as usize;
                f.write_all(&chunk[..k])?;
                left -= k as u64;
            }
            f.into()
        }
        EntryKind::Symlink => {
            let t = mapper.link_target(p, e.target.as_deref().unwrap_or(""));
            let (d, n) = roots.entry(p)?;
            // SAFETY: valid C strings and a directory descriptor.
            if unsafe { libc::symlinkat(t.as_ptr(), d.as_raw_fd(), n.as_ptr()) } != 0 {
                return Err(cerr().into());
            }
            return Ok(true);
        }
        EntryKind::Other => return Ok(false),
    };
    if e.mode != 0 {
        // Directories stay writable by the owner so the replay can work in them.
        let mode = if e.kind == EntryKind::Dir {
            (e.mode & 0o7777) | 0o700
        } else {
            e.mode & 0o7777
        };
        // SAFETY: a descriptor just opened on the entry itself.
        unsafe { libc::fchmod(fd.as_raw_fd(), mode) };
    }
    Ok(true)
}

/// mkdir `p` beneath its root, and its missing parents; an existing one is fine.
fn mkdir_beneath(roots: &Roots, p: &Beneath) -> Result<(), CallError> {
    for attempt in 0..2 {
        let (d, n) = roots.entry(p)?;
        // SAFETY: valid C string and directory descriptor.
        if unsafe { libc::mkdirat(d.as_raw_fd(), n.as_ptr(), 0o700) } == 0 {
            return Ok(());
        }
        let e = cerr();
        match e.raw_os_error() {
            Some(libc::EEXIST) => return Ok(()),
            // A parent the header does not list: make it first (a depth's worth of calls).
            Some(libc::ENOENT) if attempt == 0 => {
                let b = p.rel.as_bytes();
                let Some(i) = b.iter().rposition(|c| *c == b'/') else {
                    return Err(e.into());
                };
                let parent = Beneath::new(p.root, &String::from_utf8_lossy(&b[..i]))
                    .ok_or(CallError::Io(e))?;
                mkdir_beneath(roots, &parent)?;
            }
            _ => return Err(e.into()),
        }
    }
    Ok(())
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
                    std::fs::File::open(d)
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
                    crate::beneath::mkdir_at(base, &name, 0o755)?;
                }
                crate::beneath::open_dir(base, &name)
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
                    crate::errln!("fsbench: kept {}", rd.path().display());
                }
                rd.finish(self.a.keep)
            }
            None => Ok(()),
        }
    }
    fn run_once(&mut self) -> Result<Results> {
        let base = self.rd.as_ref().expect("prepared").path().to_path_buf();
        let mapper = Mapper::new(self.roots.clone(), &base, &self.over);
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
            if crate::engine::interrupted() {
                break;
            }
        }
        let duration_s = run_time.as_secs_f64();
        // Close what the traced program left open before the tree is looked at.
        drop(fds);
        merged.cpu_user_s = cpu.0;
        merged.cpu_sys_s = cpu.1;
        // Only the call types that occur, in Call order.
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
        let recorded_s = tot.recorded_end as f64 / 1e9;
        let Totals {
            replayed,
            failed_ok,
            ok_failed,
            refused: (refused_escape, refused_over),
            ..
        } = tot;
        let mut notes = vec![
            format!(
                "replayed {} of {} in {} mode on {}: {} outside the roots, {} not replayed ({})",
                crate::report::count(replayed, "call"),
                crate::report::count(tot.records, "recorded call"),
                self.a.mode.name(),
                crate::report::count(tot.workers as u64, "thread"),
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
                failed_ok, ok_failed, duration_s, recorded_s
            ),
            format!(
                "initial tree: {} ({}) rebuilt, {} refused (leaving the root)",
                crate::report::count(self.rebuilt.entries, "entry"),
                crate::limits::human(self.rebuilt.bytes as f64),
                self.rebuilt.refused
            ),
            format!(
                "refused: {} that would leave the replay root{}",
                crate::report::count(refused_escape, "call"),
                if self.over.is_empty() {
                    String::new()
                } else {
                    format!(", {refused_over} that would change an --over tree")
                }
            ),
        ];
        notes.extend(
            refusals
                .into_inner()
                .expect("refusals")
                .into_iter()
                .map(|m| format!("refused: {m}")),
        );
        notes.extend(
            mismatches
                .into_inner()
                .expect("mismatches")
                .into_iter()
                .map(|m| format!("mismatch: {m}")),
        );
        let mut variables = BTreeMap::new();
        variables.insert("trace".into(), self.a.trace.display().to_string());
        variables.insert("mode".into(), self.a.mode.name().into());
        variables.insert("speed".into(), self.a.speed.to_string());
        variables.insert("threads".into(), self.a.threads.clone());
        variables.insert("command".into(), self.header.command.join(" "));
        let mut r = crate::apps::results(
            AppRun {
                name: "trace-replay",
                variables,
                seed: 0,
                run_dir: &base,
                started_at,
                duration_s,
                threads: tot.workers as u64,
                notes,
            },
            table,
            &sub,
        );
        r.figures
            .insert("calls_recorded".into(), tot.records as f64);
        r.figures.insert("calls_replayed".into(), replayed as f64);
        r.figures
            .insert("calls_outside_roots".into(), tot.outside as f64);
        r.figures
            .insert("failed_where_recorded_ok".into(), failed_ok as f64);
        r.figures
            .insert("ok_where_recorded_failed".into(), ok_failed as f64);
        r.figures
            .insert("calls_refused_outside_root".into(), refused_escape as f64);
        r.figures
            .insert("calls_refused_over".into(), refused_over as f64);
        r.figures.insert(
            "initial_entries_refused".into(),
            self.rebuilt.refused as f64,
        );
        r.figures.insert("recorded_s".into(), recorded_s);
        r.figures.insert("replay_s".into(), duration_s);
        Ok(r)
    }
}

pub fn main(a: &ReplayArgs) -> Result<()> {
    let threads = parse_threads(&a.threads)?;
    if !(a.speed > 0.0 && a.speed.is_finite()) {
        bail!(
            "--speed {}: give a positive factor (2 = twice as fast)",
            a.speed
        );
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
    if !a.over.is_empty() {
        if a.over.len() != roots.len() {
            bail!(
                "--over gives {} tree(s) for {} root(s) ({}): give one per root, in order",
                a.over.len(),
                roots.len(),
                roots.join(", ")
            );
        }
        for d in &a.over {
            if !d.is_dir() {
                bail!("--over {}: not a directory", d.display());
            }
        }
    }
    let over_map =
        (!a.over.is_empty()).then(|| Mapper::new(roots.clone(), Path::new("/"), &a.over));
    vet(&a.trace, threads, over_map.as_ref())?;
    let over: Vec<PathBuf> = a
        .over
        .iter()
        .map(|d| d.canonicalize())
        .collect::<std::io::Result<_>>()?;
    let parent = crate::measure::guard::target_dir(a.dir.as_deref())?;
    // The replay must not work inside a traced root on this machine: it would change the
    // very tree it replays (or the user's files). The run directory is always fresh.
    for r in &roots {
        if parent.starts_with(r) && Path::new(r) != Path::new("/") {
            crate::errln!(
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
    let r = crate::measure::measure_and_report(&mut m, &a.m)?;
    let bad = r
        .figures
        .get("failed_where_recorded_ok")
        .copied()
        .unwrap_or(0.0);
    if bad > 0.0 {
        crate::errln!(
            "fsbench: {} failed in the replay where the recording succeeded (see the mismatch notes)",
            crate::report::count(bad as u64, "call")
        );
    }
    let fig = |k: &str| r.figures.get(k).copied().unwrap_or(0.0) as u64;
    let (calls, entries) = (
        fig("calls_refused_outside_root"),
        fig("initial_entries_refused"),
    );
    if calls + entries > 0 {
        crate::errln!(
            "fsbench: refused {} and {} whose paths leave the replay root: nothing outside it was touched (see the refused notes)",
            crate::report::count(calls, "call"),
            crate::report::count(entries, "initial-tree entry"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(tid: u32, call: Call, path: Option<&str>, fd: Option<i32>, ret: i64) -> Record {
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

    fn mapper() -> Mapper {
        Mapper::new(vec!["/w".into(), "/w/deep".into()], Path::new("/run"), &[])
    }

    #[test]
    fn over_maps_roots_onto_trees_and_only_reading_traces_pass() {
        let m = Mapper::new(
            vec!["/w".into()],
            Path::new("/run"),
            &[PathBuf::from("/srv/tree")],
        );
        assert_eq!(m.beneath("/w/a/b"), Beneath::new(0, "a/b"));
        let mut open_ro = rec(1, Call::Open, Some("/w/a"), None, 3);
        open_ro.flags = Some(libc::O_RDONLY as u64);
        let mut open_out = rec(1, Call::Open, Some("/tmp/out"), None, 4);
        open_out.flags = Some((libc::O_WRONLY | libc::O_CREAT) as u64);
        let reads = vec![
            open_ro.clone(),
            rec(1, Call::Read, None, Some(3), 10),
            open_out,
            rec(1, Call::Write, None, Some(4), 10),
        ];
        assert!(first_change_below_roots(&reads, &m).is_none());
        let mut open_rw = open_ro.clone();
        open_rw.flags = Some(libc::O_RDWR as u64);
        for bad in [
            open_rw,
            rec(1, Call::Unlink, Some("/w/a"), None, 0),
            rec(1, Call::Mkdir, Some("/w/d"), None, 0),
        ] {
            let mut t = reads.clone();
            t.push(bad.clone());
            assert_eq!(
                first_change_below_roots(&t, &m).map(|r| r.call),
                Some(bad.call),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn paths_map_below_the_longest_root_and_others_stay_outside() {
        let m = mapper();
        assert_eq!(m.beneath("/w/a/b"), Beneath::new(0, "a/b"));
        assert_eq!(m.beneath("/w"), Beneath::new(0, ""));
        assert_eq!(m.beneath("/w//x"), Beneath::new(0, "x"));
        assert_eq!(m.beneath("/w/deep/x"), Beneath::new(1, "x"));
        // Kept as recorded: the kernel resolves `..` beneath the root, and refuses it there.
        assert_eq!(m.beneath("/w/../etc"), Beneath::new(0, "../etc"));
        assert_eq!(m.beneath("/wx/a"), None);
        assert_eq!(m.beneath("/usr/lib/libc.so.6"), None);
    }

    #[test]
    fn descriptors_opened_outside_the_roots_are_not_replayed() {
        let recs = vec![
            rec(1, Call::Open, Some("/usr/lib/x.so"), None, 3),
            rec(1, Call::Read, None, Some(3), 100),
            rec(1, Call::Close, None, Some(3), 0),
            rec(1, Call::Open, Some("/w/f"), None, 3),
            rec(1, Call::Read, None, Some(3), 100),
            rec(1, Call::Close, None, Some(3), 0),
        ];
        let p = build_plan(&recs, &mapper(), None, Mode::Deps);
        assert_eq!(p.outside, 3);
        let replayed: Vec<u32> = p.workers[0].iter().map(|s| s.rec).collect();
        assert_eq!(replayed, vec![3, 4, 5]);
    }

    #[test]
    fn threads_start_after_their_clone_and_deps_order_paths_across_threads() {
        let mut clone = rec(1, Call::Clone, None, None, 2);
        clone.flags = Some((libc::CLONE_VM | libc::CLONE_FILES | libc::CLONE_THREAD) as u64);
        let mut create = rec(1, Call::Open, Some("/w/new"), None, 3);
        create.flags = Some((libc::O_CREAT | libc::O_WRONLY) as u64);
        let recs = vec![
            rec(1, Call::Stat, Some("/w"), None, 0),
            clone,
            create,
            rec(2, Call::Stat, Some("/w/new"), None, 0),
            // Thread 2 uses the descriptor thread 1 opened (shared table).
            rec(2, Call::Write, None, Some(3), 10),
            rec(1, Call::Close, None, Some(3), 0),
        ];
        let p = build_plan(&recs, &mapper(), None, Mode::Deps);
        assert_eq!(p.workers.len(), 2);
        let w2 = &p.workers[1];
        // The stat waits for the clone point (step 1) and for the create (step 2).
        assert!(w2[0].deps.contains(&(0, 2)), "{:?}", w2[0].deps);
        // The write waits for the open; the close waits for the write.
        assert!(w2[1].deps.contains(&(0, 2)), "{:?}", w2[1].deps);
        assert_eq!(w2[1].fd_in, p.workers[0][2].fd_out, "the same open file");
        let close = p.workers[0].iter().find(|s| s.rec == 5).unwrap();
        assert!(close.deps.contains(&(1, 1)), "{:?}", close.deps);
        // afap keeps the descriptor orderings, not the path ones.
        let p = build_plan(&recs, &mapper(), None, Mode::Afap);
        let w2 = &p.workers[1];
        assert_eq!(
            w2[0].deps,
            vec![(0, 1)],
            "starts after the clone point only"
        );
    }

    #[test]
    fn chunks_carry_descriptors_over_and_reuse_closed_instances() {
        let m = mapper();
        let mut open = rec(1, Call::Open, Some("/w/f"), None, 3);
        open.flags = Some(libc::O_RDONLY as u64);
        let mut clone = rec(1, Call::Clone, None, None, 2);
        clone.flags = Some((libc::CLONE_VM | libc::CLONE_FILES | libc::CLONE_THREAD) as u64);
        let mut pl = Planner::default();
        let c1 = pl.plan(&[open.clone(), clone], &m, None, Mode::Deps);
        let inst = c1.workers[0][0].fd_out;
        // The other thread reads and closes it in the next chunk: the same instance, and no
        // wait on the previous chunk's positions (it is done by then).
        let c2 = pl.plan(
            &[
                rec(2, Call::Read, None, Some(3), 10),
                rec(2, Call::Close, None, Some(3), 0),
            ],
            &m,
            None,
            Mode::Deps,
        );
        assert_eq!(c2.workers[1][0].fd_in, inst);
        assert!(c2.workers[1].iter().all(|s| s.deps.is_empty()));
        // Closed in chunk 2: used again from chunk 3 on; the table does not grow.
        let c3 = pl.plan(&[open], &m, None, Mode::Deps);
        assert_eq!(c3.workers[0][0].fd_out, inst);
        assert_eq!(c3.instances, 1);
    }

    #[test]
    fn threads_can_be_folded_onto_fewer_workers() {
        let recs: Vec<Record> = (0..6)
            .map(|i| rec(10 + i, Call::Stat, Some("/w/a"), None, 0))
            .collect();
        let p = build_plan(&recs, &mapper(), Some(2), Mode::Afap);
        assert_eq!(p.workers.len(), 2);
        assert_eq!(p.workers[0].len(), 3);
    }
}
