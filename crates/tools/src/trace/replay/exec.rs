//! The executor of a replay: a thread per worker issues its steps' calls, each beneath its
//! root through [`Roots`], times them and compares their outcomes with the recording.

use super::plan::{Action, Plan, Step, StepPaths, NONE};
use super::Mode;
use crate::trace::confine::{self, Beneath, CallError, Refusal, Roots};
use crate::trace::format::{self, Call, Record};
use anyhow::{Context, Result};
use fsbench_results::stats::{self, OpRecorder, Recorder};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the chunks of a replay add up to.
#[derive(Default)]
pub(super) struct Totals {
    pub(super) records: u64,
    pub(super) recorded_end: u64,
    pub(super) outside: u64,
    pub(super) not_replayable: BTreeMap<String, u64>,
    pub(super) workers: usize,
    pub(super) replayed: u64,
    pub(super) failed_ok: u64,
    pub(super) ok_failed: u64,
    pub(super) refused: [u64; 3],
}

impl Totals {
    pub(super) fn chunk(&mut self, records: &[Record], plan: &Plan) {
        self.records += records.len() as u64;
        let end = records.iter().map(|r| r.start_ns + r.dur_ns).max();
        self.recorded_end = self.recorded_end.max(end.unwrap_or(0));
        self.outside += plan.outside;
        for (k, v) in &plan.not_replayable {
            *self.not_replayable.entry(k.clone()).or_default() += v;
        }
        self.workers = self.workers.max(plan.workers.len());
    }
    pub(super) fn add(&mut self, o: &WorkerOut) {
        self.replayed += o.replayed;
        self.failed_ok += o.failed_ok;
        self.ok_failed += o.ok_failed;
        for (t, o) in self.refused.iter_mut().zip(o.refused) {
            *t += o;
        }
    }
}

/// The replay's descriptors, one per instance (-1: not open).
pub(super) struct Fds(pub(super) Vec<std::sync::atomic::AtomicI32>);

impl Fds {
    /// Slots up to `n` instances (between chunks, when no worker runs).
    pub(super) fn grow(&mut self, n: u32) {
        while self.0.len() < n as usize {
            self.0.push(std::sync::atomic::AtomicI32::new(-1));
        }
    }
    pub(super) fn get(&self, inst: u32) -> std::io::Result<RawFd> {
        match self.0.get(inst as usize).map(|a| a.load(Ordering::Acquire)) {
            Some(fd) if fd >= 0 => Ok(fd),
            _ => Err(std::io::Error::from_raw_os_error(libc::EBADF)),
        }
    }
    pub(super) fn set(&self, inst: u32, fd: RawFd) {
        if let Some(a) = self.0.get(inst as usize) {
            let old = a.swap(fd, Ordering::AcqRel);
            if old >= 0 {
                // SAFETY: a descriptor this replay opened; its slot no longer names it.
                unsafe { libc::close(old) };
            }
        }
    }
    pub(super) fn take(&self, inst: u32) -> Option<RawFd> {
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
pub(super) struct Progress(AtomicU32);

/// What the workers share.
pub(super) struct Shared<'a> {
    pub(super) records: &'a [Record],
    pub(super) plan: &'a Plan,
    pub(super) fds: &'a Fds,
    pub(super) progress: Vec<Progress>,
    pub(super) mode: Mode,
    pub(super) speed: f64,
    pub(super) t0: Instant,
    pub(super) mismatches: &'a Mutex<Vec<String>>,
    pub(super) refusals: &'a Mutex<Vec<String>>,
    pub(super) show: usize,
    pub(super) roots: &'a Roots,
}

pub(super) struct WorkerOut {
    pub(super) rec: Recorder,
    pub(super) replayed: u64,
    pub(super) failed_ok: u64,
    pub(super) ok_failed: u64,
    /// Calls refused, in [`Refusal`]'s order: leaving the root, changing an `--over` tree,
    /// opening a FIFO, a device or a socket.
    pub(super) refused: [u64; 3],
}

pub(super) fn cerr() -> std::io::Error {
    std::io::Error::last_os_error()
}

pub(super) fn check(r: libc::c_long) -> std::io::Result<i64> {
    if r < 0 {
        Err(cerr())
    } else {
        Ok(r)
    }
}

/// The largest buffer of one replay thread, and of all of them together: a trace can ask
/// for any size in any number of threads, and a larger call is issued at the buffer's size
/// (a short read or write, as the kernel may return anyway).
pub(super) const MAX_IO: usize = 64 << 20;
pub(super) const IO_BUDGET: usize = 256 << 20;

impl Shared<'_> {
    /// Run one chunk: a thread for each worker with steps in it, until all are done.
    pub(super) fn run_chunk(&self) -> Result<Vec<WorkerOut>> {
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

    pub(super) fn wait_for(&self, deps: &[(u32, u32)]) {
        for &(w, p) in deps {
            let mut spins = 0u32;
            while self.progress[w as usize].0.load(Ordering::Acquire) <= p {
                if fsbench_base::cancel::interrupted() {
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
    pub(super) fn issue(&self, ri: u32, s: &Step, buf: &mut [u8]) -> Result<(i64, u64), CallError> {
        let r = &self.records[ri as usize];
        let paths = self.plan.paths.get(s.paths as usize);
        match paths.and_then(|p| p.p1.as_ref()) {
            Some(p1) => self.issue_path(r, s, p1, paths.expect("some"), buf),
            None => self.issue_fd(r, s, buf),
        }
    }

    /// A call on a path, every one resolved beneath its root by [`Roots`].
    pub(super) fn issue_path(
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
                    fsbench_base::owned::raw::unlinkat(d.as_raw_fd(), n.as_ptr(), fl) as _
                }
                Call::Rename | Call::Link => {
                    let p2 = paths.p2.as_ref().ok_or_else(nopath)?;
                    let ((d1, n1), (d2, n2)) = (roots.entry(p1)?, roots.entry(p2)?);
                    let (d1, d2) = (d1.as_raw_fd(), d2.as_raw_fd());
                    if r.call == Call::Rename {
                        let fl = r.flags.unwrap_or(0) as libc::c_uint;
                        fsbench_base::owned::raw::renameat2(d1, n1.as_ptr(), d2, n2.as_ptr(), fl)
                            as _
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
                    fsbench_base::owned::raw::ftruncate(f.as_raw_fd(), r.size.unwrap_or(0) as i64)
                        as _
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
    pub(super) fn opened(&self, s: &Step, fd: OwnedFd) -> (i64, u64) {
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
    pub(super) fn issue_fd(
        &self,
        r: &Record,
        s: &Step,
        buf: &mut [u8],
    ) -> Result<(i64, u64), CallError> {
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
                    fsbench_base::owned::raw::ftruncate(fd()?, r.size.unwrap_or(0) as i64) as _
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

    pub(super) fn dup(&self, r: &Record, s: &Step) -> Result<(i64, u64), CallError> {
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
    pub(super) fn map_unmap(&self, r: &Record, f: RawFd) -> Result<(i64, u64), CallError> {
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
    pub(super) fn copy(
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

    pub(super) fn run_worker(&self, w: usize, buf_max: usize) -> WorkerOut {
        let steps = &self.plan.workers[w];
        let max = steps
            .iter()
            .map(|s| self.records[s.rec as usize].size.unwrap_or(0) as usize)
            .max()
            .unwrap_or(0)
            .clamp(4096, buf_max);
        let mut rng = <rand_pcg::Pcg64Mcg as rand::SeedableRng>::seed_from_u64(w as u64 + 1);
        let mut buf = fsbench_base::sys::io::AlignedBuf::new(max, &mut rng);
        let mut out = WorkerOut {
            rec: Recorder::new(Call::ALL.len()),
            replayed: 0,
            failed_ok: 0,
            ok_failed: 0,
            refused: [0; 3],
        };
        for (pos, s) in steps.iter().enumerate() {
            if fsbench_base::cancel::interrupted() {
                break;
            }
            self.wait_for(&s.deps);
            let r = &self.records[s.rec as usize];
            if self.mode == Mode::Timed {
                let due = self.t0 + Duration::from_secs_f64(r.start_ns as f64 / 1e9 / self.speed);
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
            }
            match s.action {
                Action::Fork(i) => self.fork(i),
                Action::Exec(i) => self.exec(i),
                Action::Mark => {}
                Action::Call => self.call(r, s, buf.as_mut_slice(), &mut out),
            }
            self.progress[w].0.store(pos as u32 + 1, Ordering::Release);
        }
        // Anything left undone still counts as done for the others' waits.
        self.progress[w].0.store(u32::MAX, Ordering::Release);
        out
    }

    /// A fork: the kernel copies the table without a system call, so untimed dups.
    fn fork(&self, i: u32) {
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

    /// An exec: its close-on-exec descriptors close.
    fn exec(&self, i: u32) {
        for &inst in &self.plan.closes[i as usize] {
            if let Some(f) = self.fds.take(inst) {
                // SAFETY: taken out of its slot: nothing else closes it.
                unsafe { libc::close(f) };
            }
        }
    }

    /// Issue a step's call, timed into its call type's recorder, and compare its outcome
    /// with the recording's.
    fn call(&self, r: &Record, s: &Step, buf: &mut [u8], out: &mut WorkerOut) {
        let clock = stats::clock::global();
        // Call codes count from 1 in the order of Call::ALL.
        let slot = (r.call as usize).saturating_sub(1);
        let c0 = clock.now();
        let res = self.issue(s.rec, s, buf);
        let ns = clock.since(c0);
        let res = match res {
            Err(CallError::Refused(why)) => {
                out.refused[why as usize] += 1;
                self.refusal(r, why);
                return;
            }
            Err(CallError::Io(e)) => Err(e),
            Ok(v) => Ok(v),
        };
        out.replayed += 1;
        let o: &mut OpRecorder = &mut out.rec.ops[slot];
        match (&res, r.ok()) {
            (Ok((_, bytes)), _) => {
                o.record(ns, *bytes);
                if !r.ok() {
                    out.ok_failed += 1;
                    self.note(
                        r,
                        "succeeded where the recording failed with",
                        &format::errno_name(-r.ret as i32),
                    );
                }
            }
            (Err(_), false) => o.record(ns, 0),
            (Err(e), true) => {
                out.failed_ok += 1;
                o.error(|| describe(r, e));
                self.note(r, "failed where the recording succeeded:", &e.to_string());
            }
        }
    }

    /// Quote a refused call (the first ones).
    pub(super) fn refusal(&self, r: &Record, why: Refusal) {
        let mut m = self.refusals.lock().expect("refusals");
        if m.len() < self.show.max(1) {
            let what = why.why();
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

    pub(super) fn note(&self, r: &Record, what: &str, detail: &str) {
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

pub(super) fn describe(r: &Record, e: &std::io::Error) -> String {
    format!(
        "{} {:?}: {e}",
        r.syscall.escape_debug(),
        r.path.as_deref().unwrap_or("")
    )
}
