//! The static pass of a replay: the traced threads' calls become workers' steps, with their
//! descriptors resolved to instances and the waits across workers that keep outcomes as
//! recorded (see the module above for the modes).

use super::map::{mutates, parent, replayable, Mapper};
use super::Mode;
use crate::trace::confine::Beneath;
use crate::trace::format::{Call, Record};
use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;

/// What a step does besides its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Action {
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
pub(super) const NONE: u32 = u32::MAX;

/// One replayed record in its worker's sequence.
///
/// Descriptors are resolved at plan time, in recorded order, to *instances*: each
/// successful open or dup (and each descriptor a fork copies) is a new instance, one real
/// descriptor of the replay. A traced descriptor number is reused as soon as it is closed,
/// and threads sharing a table interleave differently in a replay than when recorded, so
/// numbers alone would mix files up; instances cannot.
#[derive(Debug, Clone)]
pub(super) struct Step {
    pub(super) rec: u32,
    pub(super) action: Action,
    /// (worker, position): wait until that worker has completed that step.
    pub(super) deps: Vec<(u32, u32)>,
    /// Index of its mapped paths in [`Plan::paths`] (`NONE`: none).
    pub(super) paths: u32,
    /// The instance the call uses (`fd`), its second one (`fd2` of sendfile and
    /// copy_file_range), the instance it creates (open, dup), and one it closes by the way
    /// (dup2 over an open descriptor).
    pub(super) fd_in: u32,
    pub(super) fd_in2: u32,
    pub(super) fd_out: u32,
    pub(super) fd_drop: u32,
}

/// What the static pass decided.
pub(super) struct Plan {
    pub(super) workers: Vec<Vec<Step>>,
    /// Descriptor instances.
    pub(super) instances: u32,
    pub(super) copies: Vec<Vec<(u32, u32)>>,
    pub(super) closes: Vec<Vec<u32>>,
    /// Records not replayed: outside the roots, or a call replay does not issue.
    pub(super) outside: u64,
    pub(super) not_replayable: BTreeMap<String, u64>,
    /// Mapped paths of the steps that have some ([`Step::paths`]).
    pub(super) paths: Vec<StepPaths>,
}

/// A step's paths, mapped beneath their roots.
#[derive(Debug, Default)]
pub(super) struct StepPaths {
    pub(super) p1: Option<Beneath>,
    pub(super) p2: Option<Beneath>,
    /// A symbolic link's target, as it is to be stored ([`Beneath::link_target`]).
    pub(super) target: Option<CString>,
}

#[derive(Clone, Default)]
pub(super) struct FdInfo {
    /// The thread that opened it.
    pub(super) tid: u32,
    pub(super) in_root: bool,
    /// The replay's instance (`NONE` outside the roots).
    pub(super) inst: u32,
    pub(super) path: Option<String>,
    pub(super) cloexec: bool,
    /// The step that opened it.
    pub(super) opener: Option<(u32, u32)>,
    /// Steps that used it since (for a close to wait for).
    pub(super) users: Vec<(u32, u32)>,
}

/// A process's descriptors while planning, as the recording saw them. A number can name
/// two open files for a moment: strace stamps a call when it gets to it, so an open in one
/// thread can appear to start before another thread's last use and close of the number it
/// gets. The entries for a number are kept in order; while there are several, a thread's
/// use or close means the newest entry that thread opened, else a close means the oldest
/// and a use the newest.
#[derive(Clone, Default)]
pub(super) struct PlanTable(HashMap<i32, Vec<FdInfo>>);

impl PlanTable {
    pub(super) fn pick(v: &[FdInfo], tid: u32, close: bool) -> Option<usize> {
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
    pub(super) fn get(&self, fd: &i32, tid: u32) -> Option<&FdInfo> {
        let v = self.0.get(fd)?;
        Self::pick(v, tid, false).map(|i| &v[i])
    }
    pub(super) fn closing(&self, fd: &i32, tid: u32) -> Option<&FdInfo> {
        let v = self.0.get(fd)?;
        Self::pick(v, tid, true).map(|i| &v[i])
    }
    pub(super) fn get_mut(&mut self, fd: &i32, tid: u32) -> Option<&mut FdInfo> {
        let v = self.0.get_mut(fd)?;
        let i = Self::pick(v, tid, false)?;
        Some(&mut v[i])
    }
    pub(super) fn open(&mut self, fd: i32, f: FdInfo) {
        self.0.entry(fd).or_default().push(f);
    }
    pub(super) fn close(&mut self, fd: i32, tid: u32) -> Option<FdInfo> {
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
pub(super) struct PathDeps {
    pub(super) last_change: Option<(u32, u32)>,
    pub(super) users: Vec<(u32, u32)>,
}

/// The static pass, one chunk of records at a time. What it knows of the traced program
/// (threads, descriptor tables, open files) carries over from chunk to chunk; the
/// orderings between steps do not: a chunk starts when every step of the previous one is
/// done, so what it waited for is behind it. Descriptor instances closed in a chunk are
/// used again from the next one on, so the replay's table is as large as what is open at
/// once plus one chunk's opens, whatever the trace's length.
#[derive(Default)]
pub(super) struct Planner {
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
    /// The program's own process order (afap mode): see [`ProcOrder`].
    procs: ProcOrder,
}

/// The orderings a program's processes impose on themselves, which `afap` keeps though it
/// drops the ones its data imply: a parent that waited for a child (wait4, waitid) goes on
/// after the child's last call; a vfork parent goes on after its child's exec; an exec by
/// a thread other than its process's first hands the process on to the first thread's id
/// (as the kernel does), whose next call comes after it.
#[derive(Default)]
struct ProcOrder {
    /// The process (thread group) of each traced thread seen created.
    tgid_of: HashMap<u32, u32>,
    /// The threads of each process.
    threads_of: HashMap<u32, Vec<u32>>,
    /// Each thread's last step in the chunk being planned.
    last_step: HashMap<u32, (u32, u32)>,
    /// Per thread: the children it waited for, whose last steps its next step waits for.
    waited: HashMap<u32, Vec<u32>>,
    /// Per thread: steps its next step waits for.
    pending: HashMap<u32, Vec<(u32, u32)>>,
    /// vfork children not yet exec'd, and their parents.
    vforked: HashMap<u32, u32>,
}

impl ProcOrder {
    fn tgid(&self, tid: u32) -> u32 {
        self.tgid_of.get(&tid).copied().unwrap_or(tid)
    }

    /// A thread or process `child` made by `tid` (`flags`: the clone's).
    fn cloned(&mut self, tid: u32, child: u32, flags: u64) {
        let tgid = if flags & libc::CLONE_THREAD as u64 != 0 {
            self.tgid(tid)
        } else {
            child
        };
        self.tgid_of.insert(child, tgid);
        let threads = self.threads_of.entry(tgid).or_default();
        if threads.is_empty() && tgid != child {
            threads.push(tgid);
        }
        threads.push(child);
        if flags & libc::CLONE_VFORK as u64 != 0 {
            self.vforked.insert(child, tid);
        }
    }

    /// `tid` waited for `child` (a wait's result).
    fn waited_for(&mut self, tid: u32, child: i64) {
        if child > 0 {
            self.waited.entry(tid).or_default().push(child as u32);
        }
    }

    /// `tid` exec'd at step `me`.
    fn exec(&mut self, tid: u32, me: (u32, u32)) {
        if let Some(parent) = self.vforked.remove(&tid) {
            self.pending.entry(parent).or_default().push(me);
        }
        let tgid = self.tgid(tid);
        if tgid != tid {
            // The other threads are gone; the process goes on under its first thread's id.
            self.pending.entry(tgid).or_default().push(me);
            self.threads_of.insert(tgid, vec![tgid]);
        }
    }

    /// What `tid`'s next step waits for: the last steps of the children it waited for (of
    /// every thread of theirs), and the steps handed on to it.
    fn take(&mut self, tid: u32) -> Vec<(u32, u32)> {
        let mut deps = self.pending.remove(&tid).unwrap_or_default();
        for child in self.waited.remove(&tid).unwrap_or_default() {
            let threads = self.threads_of.get(&child).map_or(&[][..], |v| &v[..]);
            for t in threads.iter().chain(std::iter::once(&child)) {
                if let Some(&s) = self.last_step.get(t) {
                    deps.push(s);
                }
            }
        }
        deps
    }
}

impl Planner {
    /// Forget the previous chunk's orderings (it is done when the next one starts).
    fn next_chunk(&mut self) {
        self.start_dep.clear();
        self.pdeps.clear();
        // Steps of an earlier chunk are done before this one starts.
        self.procs.last_step.clear();
        self.procs.pending.clear();
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

    /// Plan the next chunk of records.
    pub(super) fn plan(
        &mut self,
        records: &[Record],
        mapper: &Mapper,
        threads: Option<usize>,
        mode: Mode,
    ) -> Plan {
        self.next_chunk();
        let mut plan = Plan {
            workers: (0..self.nworkers).map(|_| Vec::new()).collect(),
            instances: 0,
            copies: Vec::new(),
            closes: Vec::new(),
            outside: 0,
            not_replayable: BTreeMap::new(),
            paths: Vec::new(),
        };
        let c = Chunk {
            mapper,
            threads,
            mode,
        };
        for (ri, r) in records.iter().enumerate() {
            self.record(ri as u32, r, &c, &mut plan);
        }
        self.nworkers = plan.workers.len();
        plan.instances = self.instances;
        plan
    }

    /// A descriptor instance: one closed in an earlier chunk, else a new one.
    fn new_inst(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.instances += 1;
            self.instances - 1
        })
    }

    /// The worker of a traced thread: the next one for a new thread (folded onto
    /// `--threads N`).
    fn worker_for(
        &mut self,
        tid: u32,
        threads: Option<usize>,
        workers: &mut Vec<Vec<Step>>,
    ) -> u32 {
        let ntids = &mut self.ntids;
        *self.worker_of.entry(tid).or_insert_with(|| {
            let w = match threads {
                None => *ntids,
                Some(n) => *ntids % n,
            } as u32;
            *ntids += 1;
            if workers.len() <= w as usize {
                workers.resize_with(w as usize + 1, Vec::new);
            }
            w
        })
    }

    /// The descriptor table of a traced thread: a new one for a thread not seen created.
    fn table_for(&mut self, tid: u32) -> u32 {
        let tables = &mut self.tables;
        *self.table_of.entry(tid).or_insert_with(|| {
            tables.push(PlanTable::default());
            tables.len() as u32 - 1
        })
    }

    /// Plan one record: a step of its thread's worker, or a record counted as not replayed.
    fn record(&mut self, ri: u32, r: &Record, c: &Chunk<'_>, plan: &mut Plan) {
        let w = self.worker_for(r.tid, c.threads, &mut plan.workers);
        let table = self.table_for(r.tid);
        let me = (w, plan.workers[w as usize].len() as u32);
        let mut deps: Vec<(u32, u32)> = Vec::new();
        if let Some(d) = self.start_dep.remove(&r.tid) {
            deps.push(d);
        }
        // Process-level calls: always steps (they keep the tables as the kernel did).
        let process = match r.call {
            Call::Clone if r.ok() && r.ret > 0 => Some(self.clone_table(r, table, me, plan)),
            Call::Exec if r.ok() => Some(self.exec(table, plan)),
            _ => None,
        };
        if let Some(action) = process {
            if c.mode == Mode::Afap {
                deps.extend(self.procs.take(r.tid));
                match r.call {
                    Call::Clone => self.procs.cloned(r.tid, r.ret as u32, r.flags.unwrap_or(0)),
                    _ => self.procs.exec(r.tid, me),
                }
                self.procs.last_step.insert(r.tid, me);
                one_wait_per_worker(&mut deps, w);
            }
            plan.workers[w as usize].push(Step::bare(ri, action, deps));
            return;
        }
        if !replayable(r.call) {
            if c.mode == Mode::Afap && r.call == Call::Wait {
                self.procs.waited_for(r.tid, r.ret);
            }
            *plan.not_replayable.entry(r.syscall.clone()).or_default() += 1;
            self.start_later(r.tid, &deps);
            return;
        }
        let files = self.files(r, table);
        let inside = files.inside(r, c.mapper);
        let (fd_in, fd_in2) = files.instances();
        let (fd_out, fd_drop) = self.keep_table(r, table, me, inside, &files);
        if !inside {
            plan.outside += 1;
            self.start_later(r.tid, &deps);
            return;
        }
        self.descriptor_deps(r, table, me, &files, &mut deps);
        if c.mode != Mode::Afap {
            self.path_deps(r, me, &files, &mut deps);
        } else {
            deps.extend(self.procs.take(r.tid));
            self.procs.last_step.insert(r.tid, me);
        }
        one_wait_per_worker(&mut deps, w);
        let paths = plan.add_paths(step_paths(r, c.mapper));
        plan.workers[w as usize].push(Step {
            rec: ri,
            action: Action::Call,
            deps,
            paths,
            fd_in,
            fd_in2,
            fd_out,
            fd_drop,
        });
    }

    /// A record without a step of its own: what its thread's start waited for passes on to
    /// the thread's next step.
    fn start_later(&mut self, tid: u32, deps: &[(u32, u32)]) {
        if let Some(&d) = deps.first() {
            self.start_dep.insert(tid, d);
        }
    }

    /// A clone: the child shares its parent's table (a mark to start after) or gets a copy
    /// (a fork step, whose descriptors are new instances). The child starts after it.
    fn clone_table(&mut self, r: &Record, table: u32, me: (u32, u32), plan: &mut Plan) -> Action {
        let child = r.ret as u32;
        let shares = r.flags.unwrap_or(0) & libc::CLONE_FILES as u64 != 0;
        let action = if shares {
            self.table_of.insert(child, table);
            Action::Mark
        } else {
            let mut copy = self.tables[table as usize].clone();
            let mut pairs = Vec::new();
            for f in copy.0.values_mut().flatten() {
                f.opener = Some(me);
                f.users.clear();
                if f.inst != NONE {
                    let c = self.new_inst();
                    pairs.push((f.inst, c));
                    f.inst = c;
                }
            }
            self.tables.push(copy);
            self.table_of.insert(child, self.tables.len() as u32 - 1);
            plan.copies.push(pairs);
            Action::Fork(plan.copies.len() as u32 - 1)
        };
        self.start_dep.insert(child, me);
        action
    }

    /// An exec: the close-on-exec descriptors close.
    fn exec(&mut self, table: u32, plan: &mut Plan) -> Action {
        let t = &mut self.tables[table as usize];
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
        self.freed.extend(gone.iter().copied());
        plan.closes.push(gone);
        Action::Exec(plan.closes.len() as u32 - 1)
    }

    /// The open files a call is on, as its process's table has them before the call.
    fn files(&self, r: &Record, table: u32) -> Files {
        let t = &self.tables[table as usize];
        let fd = r.fd.and_then(|fd| {
            if r.call == Call::Close {
                t.closing(&fd, r.tid).cloned()
            } else {
                t.get(&fd, r.tid).cloned()
            }
        });
        let fd2 = match r.call {
            Call::Sendfile | Call::CopyRange => r.fd2.and_then(|fd| t.get(&fd, r.tid).cloned()),
            _ => None,
        };
        Files { fd, fd2 }
    }

    /// Keep the tables as the kernel did, replayed or not: the instance an open or a dup
    /// creates, and the one a dup2 over an open descriptor closes by the way.
    fn keep_table(
        &mut self,
        r: &Record,
        table: u32,
        me: (u32, u32),
        inside: bool,
        files: &Files,
    ) -> (u32, u32) {
        let (mut fd_out, mut fd_drop) = (NONE, NONE);
        match r.call {
            Call::Open if r.ok() => {
                let f = r.flags.unwrap_or(0) as i32;
                let inst = if inside { self.new_inst() } else { NONE };
                fd_out = inst;
                self.tables[table as usize].open(
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
                let mut i = files.fd.clone().unwrap_or_default();
                i.opener = Some(me);
                i.tid = r.tid;
                i.users.clear();
                i.cloexec = r.flags.unwrap_or(0) as i32 & libc::O_CLOEXEC != 0;
                i.inst = if inside && i.inst != NONE {
                    self.new_inst()
                } else {
                    NONE
                };
                fd_out = i.inst;
                let t = &mut self.tables[table as usize];
                if r.fd2.is_some() {
                    // dup2/dup3 over an open descriptor closes it, as the kernel does.
                    fd_drop = t.close(r.ret as i32, r.tid).map_or(NONE, |o| o.inst);
                    if fd_drop != NONE {
                        self.freed.push(fd_drop);
                    }
                }
                t.open(r.ret as i32, i);
            }
            Call::Close => {
                if let Some(f) = self.tables[table as usize].close(r.fd.unwrap_or(-1), r.tid) {
                    if f.inst != NONE {
                        self.freed.push(f.inst);
                    }
                }
            }
            _ => {}
        }
        (fd_out, fd_drop)
    }

    /// Cross-thread ordering on descriptors (all modes): a call waits for the opens of its
    /// files, a close for the other workers' latest uses of them.
    fn descriptor_deps(
        &mut self,
        r: &Record,
        table: u32,
        me: (u32, u32),
        files: &Files,
        deps: &mut Vec<(u32, u32)>,
    ) {
        for fi in [&files.fd, &files.fd2].into_iter().flatten() {
            if let Some(o) = fi.opener {
                deps.push(o);
            }
            if r.call == Call::Close {
                deps.extend(fi.users.iter().copied());
            }
        }
        for fd in [r.fd, r.fd2].into_iter().flatten() {
            if r.call != Call::Close {
                if let Some(fi) = self.tables[table as usize].get_mut(&fd, r.tid) {
                    // The latest use per worker is all a close has to wait for.
                    match fi.users.iter_mut().find(|u| u.0 == me.0) {
                        Some(u) => *u = me,
                        None => fi.users.push(me),
                    }
                }
            }
        }
    }

    /// Cross-thread ordering on paths (deps mode, and timed mode, whose calls go at their
    /// recorded times but never before what they depended on): a call waits for the last
    /// change of the paths it touches and of their directories, a change also for the uses
    /// since.
    fn path_deps(&mut self, r: &Record, me: (u32, u32), files: &Files, deps: &mut Vec<(u32, u32)>) {
        let touched = touched_paths(r, files);
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
            let e = self.pdeps.entry(p.clone()).or_default();
            if let Some(d) = e.last_change {
                deps.push(d);
            }
        }
        for p in &touched {
            let e = self.pdeps.entry(p.clone()).or_default();
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
            let e = self.pdeps.entry(p.clone()).or_default();
            if changes {
                // A new or removed entry changes its directory's listing.
                e.users.push(me);
            }
        }
    }
}

/// What planning one chunk goes by.
struct Chunk<'a> {
    mapper: &'a Mapper,
    threads: Option<usize>,
    mode: Mode,
}

/// The open files a call is on: its descriptor's and, for sendfile and copy_file_range,
/// its second descriptor's.
struct Files {
    fd: Option<FdInfo>,
    fd2: Option<FdInfo>,
}

impl Files {
    /// Whether the call is below a root: on a descriptor, when one of its files is; on
    /// paths, when its path is (and the second one of a rename or a link).
    fn inside(&self, r: &Record, mapper: &Mapper) -> bool {
        let on_fd = r.path.is_none() && r.fd.is_some();
        if on_fd {
            self.fd.as_ref().is_some_and(|f| f.in_root)
                || self.fd2.as_ref().is_some_and(|f| f.in_root)
        } else {
            r.path.as_deref().is_some_and(|p| mapper.inside(p))
                && match (r.call, r.path2.as_deref()) {
                    (Call::Rename | Call::Link, Some(p2)) => mapper.inside(p2),
                    _ => true,
                }
        }
    }

    /// The instances of the two files (`NONE` for none).
    fn instances(&self) -> (u32, u32) {
        let inst_of = |f: &Option<FdInfo>| f.as_ref().map_or(NONE, |f| f.inst);
        (inst_of(&self.fd), inst_of(&self.fd2))
    }
}

/// The traced paths a call touches: its path (or its file's), the second path of a rename
/// or a link, the second file's path.
fn touched_paths(r: &Record, files: &Files) -> Vec<String> {
    let mut touched: Vec<String> = Vec::new();
    if let Some(p) = r
        .path
        .clone()
        .or_else(|| files.fd.as_ref().and_then(|f| f.path.clone()))
    {
        touched.push(p);
    }
    if matches!(r.call, Call::Rename | Call::Link) {
        if let Some(p2) = &r.path2 {
            touched.push(p2.clone());
        }
    }
    if let Some(p) = files.fd2.as_ref().and_then(|f| f.path.clone()) {
        touched.push(p);
    }
    touched
}

/// Keep the latest position per other worker: one wait each.
fn one_wait_per_worker(deps: &mut Vec<(u32, u32)>, w: u32) {
    deps.retain(|d| d.0 != w);
    deps.sort_unstable();
    deps.dedup_by(|b, a| {
        a.0 == b.0 && {
            a.1 = a.1.max(b.1);
            true
        }
    });
}

/// A step's paths mapped beneath their roots (a symbolic link's target as it is stored).
fn step_paths(r: &Record, mapper: &Mapper) -> StepPaths {
    let p1 = r.path.as_deref().and_then(|p| mapper.beneath(p));
    match (r.call, &p1) {
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
    }
}

impl Plan {
    /// Keep a step's mapped paths: their index, or `NONE` when it has none.
    fn add_paths(&mut self, sp: StepPaths) -> u32 {
        if sp.p1.is_some() || sp.p2.is_some() {
            self.paths.push(sp);
            self.paths.len() as u32 - 1
        } else {
            NONE
        }
    }
}

impl Step {
    /// A step without paths or descriptors (a process-level one).
    fn bare(rec: u32, action: Action, deps: Vec<(u32, u32)>) -> Step {
        Step {
            rec,
            action,
            deps,
            paths: NONE,
            fd_in: NONE,
            fd_in2: NONE,
            fd_out: NONE,
            fd_drop: NONE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{mapper, rec};
    use super::*;

    /// Plan a whole trace at once.
    fn build_plan(records: &[Record], mapper: &Mapper, threads: Option<usize>, mode: Mode) -> Plan {
        Planner::default().plan(records, mapper, threads, mode)
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

    #[test]
    fn afap_keeps_the_waits_of_a_parent_for_its_children() {
        // sh (1) vforks 2, which execs and writes /w/out; sh waits for it and reads it.
        let mut vfork = rec(1, Call::Clone, None, None, 2);
        vfork.flags = Some((libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD) as u64);
        let mut create = rec(2, Call::Open, Some("/w/out"), None, 3);
        create.flags = Some((libc::O_CREAT | libc::O_WRONLY) as u64);
        let recs = vec![
            vfork,
            rec(2, Call::Exec, Some("/bin/cp"), None, 0),
            rec(1, Call::Stat, Some("/w"), None, 0),
            create,
            rec(1, Call::Wait, None, None, 2),
            rec(2, Call::Write, None, Some(3), 10),
            rec(2, Call::Close, None, Some(3), 0),
            rec(1, Call::Stat, Some("/w/out"), None, 0),
        ];
        let p = build_plan(&recs, &mapper(), None, Mode::Afap);
        let parent = &p.workers[0];
        // The stat after the exec waits for it (vfork), the one after the wait for the
        // child's close, its last call.
        assert_eq!(parent[1].deps, vec![(1, 0)], "{:?}", parent[1]);
        assert_eq!(parent[2].deps, vec![(1, 3)], "{:?}", parent[2]);
        // deps mode orders by paths only, as before.
        let p = build_plan(&recs, &mapper(), None, Mode::Deps);
        assert!(p.workers[0][1].deps.is_empty(), "{:?}", p.workers[0][1]);
    }
}
