//! One worker thread: runs its thread's flowops in a loop until told to stop, with
//! Filebench's semantics for file descriptor slots, file picking and each flowop.
//!
//! Everything a worker touches per operation is its own (generators, slots, buffers,
//! recorder), except what an operation's meaning requires: picking and releasing fileset
//! entries, and the process-wide counters that `finishoncount`/`finishonbytes` without a
//! target read (kept only when such a flowop exists).

use super::aio::Aio;
use super::io::{self, AlignedBuf, OpenHow};
use super::sync::Pacing;
use super::Control;
use crate::dist::{rng, Rng};
use crate::fileset::{FilesetRt, List, Want};
use crate::model::{Flowop, FlowopKind, IoClass, Thread, Workload};
use crate::stats::clock::Clock;
use crate::stats::Recorder;
use rand::Rng as _;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Slots per thread, as Filebench's THREADFLOW_MAXFD.
pub const MAX_FD: usize = 128;

/// Counters shared by the threads of one process instance.
#[derive(Debug, Default)]
pub struct ProcCounters {
    pub ops: AtomicU64,
    pub bytes: AtomicU64,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    fd: RawFd,
    /// The open file (fileset, entry), whose open count this slot holds.
    entry: Option<(u32, u32)>,
    /// The file the slot was last opened on; kept after close, as Filebench keeps it, so a
    /// later `deletefile fd=N` or `srcfd=N` still refers to it.
    last: Option<(u32, u32)>,
    off: u64,
    /// Offset of the slot's previous read or write (for `sameoffset`).
    last_off: u64,
    /// The last open into this slot found no file: flowops that depend on the slot count
    /// "no file" too, instead of piling up errors.
    starved: bool,
}

const EMPTY: Slot = Slot {
    fd: -1,
    entry: None,
    last: None,
    off: 0,
    last_off: 0,
    starved: false,
};

/// What running a flowop asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// `finishoncount`/`finishonbytes` reached: this thread is done.
    Done,
    /// The run is stopping.
    Stop,
}

enum Fail {
    NoResource,
    Error(String),
}

/// Everything shared, read-only or atomic, by the workers of a run.
pub struct Shared<'a> {
    pub wl: &'a Workload,
    pub filesets: &'a [FilesetRt],
    pub ctl: &'a Control,
    pub procs: &'a [ProcCounters],
    /// Whether IO ops must be added to `procs` (a finish flowop without target exists).
    pub count_procs: bool,
    pub clock: Clock,
    /// One slot per worker where it publishes cumulative counters at each sampling epoch.
    pub samples: &'a [std::sync::Mutex<Sample>],
    /// Semaphores, conditions, the event generator and the run-wide counters of limits.
    pub pacing: &'a Pacing,
}

/// A worker's cumulative counters as of a control word.
#[derive(Debug, Default)]
pub struct Sample {
    pub word: u64,
    pub ops: Vec<(u64, u64, hdrhistogram::Histogram<u64>)>,
}

/// A limit flowop's bucket in one thread (Filebench's fo_tputlast / fo_tputbucket).
#[derive(Debug, Clone, Copy, Default)]
struct LimitState {
    started: bool,
    last: u64,
    bucket: i64,
}

/// A read-only mapping of the file open in a slot, for `mmap` reads.
#[derive(Debug)]
struct Map {
    fd: RawFd,
    ptr: *mut u8,
    len: usize,
}

impl Drop for Map {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: mapped by us with this length.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
    }
}

pub struct Worker<'a> {
    sh: &'a Shared<'a>,
    /// Index among the run's workers (its time-series slot).
    idx: usize,
    clock: Clock,
    thread: &'a Thread,
    proc_idx: usize,
    /// Asynchronous writes in flight; declared before `buf` so it drains (on drop) before
    /// the buffer the kernel reads from is freed.
    aio: Option<Aio>,
    /// Per slot: the file mapping of `mmap` reads.
    maps: Vec<Option<Map>>,
    limits: Vec<LimitState>,
    /// One generator per random variable, and one for offsets and sizes.
    rngs: Vec<Rng>,
    rng: Rng,
    slots: Vec<Slot>,
    rotor: usize,
    buf: AlignedBuf,
    memsize: usize,
    path: Vec<u8>,
    dirbuf: Vec<u8>,
    pub rec: Recorder,
    /// Per-thread totals of IO ops and bytes (for finish flowops).
    ops: u64,
    bytes: u64,
    pub testrandvar: Vec<(String, u64, f64, f64)>,
    /// The control word last acted on.
    seen: u64,
    /// Thread CPU (user, system) when the current statistics generation began.
    cpu0: (f64, f64),
}

impl<'a> Worker<'a> {
    pub fn new(
        sh: &'a Shared<'a>,
        thread: &'a Thread,
        proc_idx: usize,
        worker_idx: u64,
        seed: u64,
    ) -> Worker<'a> {
        let wl = sh.wl;
        let rngs = wl
            .randvars
            .iter()
            .enumerate()
            .map(|(i, rv)| {
                rng(
                    rv.seed.unwrap_or(seed),
                    (worker_idx << 16) ^ i as u64 ^ 0x5000_0000,
                )
            })
            .collect();
        let mut r = rng(seed, worker_idx);
        let mut max_io: i64 = 1 << 20;
        fn walk(f: &Flowop, m: &mut i64) {
            if let crate::model::Num::Const(v) = f.iosize {
                *m = (*m).max(v);
            }
            for c in &f.children {
                walk(c, m);
            }
        }
        for f in &thread.flowops {
            walk(f, &mut max_io);
        }
        let memsize = thread.memsize as usize;
        let buf = AlignedBuf::new(memsize.max(max_io as usize), &mut r);
        Worker {
            sh,
            idx: worker_idx as usize,
            clock: sh.clock,
            thread,
            proc_idx,
            aio: None,
            maps: Vec::new(),
            limits: vec![LimitState::default(); wl.stat_names.len()],
            rngs,
            rng: r,
            slots: vec![EMPTY; MAX_FD],
            rotor: 0,
            buf,
            memsize,
            path: Vec::with_capacity(256),
            dirbuf: vec![0u8; 64 << 10],
            rec: Recorder::new(wl.stat_names.len()),
            ops: 0,
            bytes: 0,
            testrandvar: Vec::new(),
            seen: 0,
            cpu0: (0.0, 0.0),
        }
    }

    /// Start measuring: note the CPU baseline.
    pub fn begin(&mut self) {
        self.cpu0 = crate::stats::thread_cpu();
    }

    /// React to a new control word: a new statistics generation resets the recorder (end of
    /// warm-up); a new epoch publishes a snapshot for the time series.
    fn on_control(&mut self, w: u64) {
        if w >> super::GEN_SHIFT != self.seen >> super::GEN_SHIFT {
            self.rec.reset();
            self.ops = 0;
            self.bytes = 0;
            self.cpu0 = crate::stats::thread_cpu();
        }
        self.seen = w;
        if let Some(slot) = self.sh.samples.get(self.idx) {
            let mut g = slot.lock().unwrap();
            g.word = w;
            g.ops.clear();
            g.ops.extend(
                self.rec
                    .ops
                    .iter()
                    .map(|o| (o.count, o.bytes, o.hist.clone())),
            );
        }
    }

    /// Stop measuring: CPU used since the baseline, apportioned to flowops by their share of
    /// this thread's measured time.
    pub fn finish(&mut self) {
        let (u1, s1) = crate::stats::thread_cpu();
        self.rec.cpu_user_s = u1 - self.cpu0.0;
        self.rec.cpu_sys_s = s1 - self.cpu0.1;
        let cpu_ns = (self.rec.cpu_user_s + self.rec.cpu_sys_s) * 1e9;
        let total: u64 = self.rec.ops.iter().map(|o| o.lat_sum_ns).sum();
        if total > 0 {
            for o in &mut self.rec.ops {
                o.cpu_ns = cpu_ns * o.lat_sum_ns as f64 / total as f64;
            }
        }
    }

    /// Loop over the thread's flowops until stopped or done.
    pub fn run(&mut self) -> Flow {
        let flowops = &self.thread.flowops;
        loop {
            for f in flowops {
                match self.run_flowop(f) {
                    Flow::Continue => {}
                    other => return other,
                }
            }
        }
    }

    /// Close every open slot (at the end of the run, not measured).
    pub fn close_all(&mut self) {
        if let Some(a) = self.aio.as_mut() {
            a.drain();
            a.done.clear();
        }
        for i in 0..MAX_FD {
            self.release_slot(i);
        }
    }

    fn num(&mut self, n: &crate::model::Num) -> i64 {
        n.get(&self.sh.wl.randvars, &mut self.rngs)
    }

    fn run_flowop(&mut self, f: &Flowop) -> Flow {
        let iters = self.num(&f.iters).max(0);
        for _ in 0..iters {
            let w = self.sh.ctl.word();
            if w != self.seen {
                if w & super::STOP != 0 {
                    return Flow::Stop;
                }
                self.on_control(w);
            }
            let r = if f.kind == FlowopKind::Composite {
                let mut r = Flow::Continue;
                for c in &f.children {
                    r = self.run_flowop(c);
                    if r != Flow::Continue {
                        break;
                    }
                }
                r
            } else {
                self.exec(f)
            };
            if r != Flow::Continue {
                return r;
            }
        }
        Flow::Continue
    }

    #[inline]
    fn done(&mut self, f: &Flowop, ns: u64, bytes: u64) {
        self.done_stat(f.stat, f.kind, ns, bytes);
    }

    #[inline]
    fn done_stat(&mut self, stat: usize, kind: FlowopKind, ns: u64, bytes: u64) {
        self.rec.ops[stat].record(ns, bytes);
        let class = kind.io_class();
        if class != IoClass::None {
            self.ops += 1;
            self.bytes += bytes;
            if self.sh.count_procs {
                let p = &self.sh.procs[self.proc_idx];
                p.ops.fetch_add(1, Ordering::Relaxed);
                p.bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            if self.sh.pacing.count_run {
                self.sh
                    .pacing
                    .count(matches!(class, IoClass::Read | IoClass::Write), bytes);
            }
        }
    }

    /// Record the asynchronous writes reaped so far, under their aiowrite flowop.
    fn record_aio(&mut self) {
        let Some(a) = self.aio.as_mut() else { return };
        let mut done = std::mem::take(&mut a.done);
        for c in done.drain(..) {
            match c.result {
                Ok(n) => self.done_stat(c.stat, FlowopKind::AioWrite, c.ns, n),
                Err(e) => self.rec.ops[c.stat]
                    .error(|| format!("aiowrite: {}", std::io::Error::from_raw_os_error(e))),
            }
        }
        if let Some(a) = self.aio.as_mut() {
            a.done = done;
        }
    }

    /// The statistics slot of a limit's or finish flowop's `target=`.
    fn target_stat(&self, f: &Flowop) -> Option<usize> {
        let t = f.target.as_deref()?;
        self.sh.wl.stat_names.iter().position(|(n, _)| n == t)
    }

    /// Map (or remap, when the file grew past the mapping) the file in `slot` so that
    /// `need` bytes are covered where the file has them. Returns the mapping's address and
    /// length. Not timed: the copy that faults the pages in is.
    fn mapping(
        &mut self,
        slot: usize,
        fd: RawFd,
        need: u64,
    ) -> std::io::Result<(*const u8, usize)> {
        if self.maps.is_empty() {
            self.maps.resize_with(MAX_FD, || None);
        }
        if let Some(m) = &self.maps[slot] {
            if m.fd == fd && m.len as u64 >= need {
                return Ok((m.ptr, m.len));
            }
        }
        let size = io::fstat(fd)?.st_size.max(0) as usize;
        if let Some(m) = &self.maps[slot] {
            if m.fd == fd && m.len >= size {
                return Ok((m.ptr, m.len));
            }
        }
        self.maps[slot] = None;
        if size == 0 {
            return Ok((std::ptr::null(), 0));
        }
        // SAFETY: a fresh shared read-only mapping of an fd we own; unmapped on drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        self.maps[slot] = Some(Map {
            fd,
            ptr: p.cast(),
            len: size,
        });
        Ok((p as *const u8, size))
    }

    /// Copy up to `len` bytes at `off` of a mapping into the I/O buffer at `boff`.
    fn copy_from_map(
        &mut self,
        map: (*const u8, usize),
        off: u64,
        boff: usize,
        len: usize,
    ) -> usize {
        let avail = (map.1 as u64).saturating_sub(off).min(len as u64) as usize;
        if avail > 0 {
            // SAFETY: off + avail <= mapping length; the buffer has room for len bytes.
            let src = unsafe { std::slice::from_raw_parts(map.0.add(off as usize), avail) };
            self.buf.as_mut_slice()[boff..boff + avail].copy_from_slice(src);
        }
        avail
    }

    /// Sleep `d`, waking early when the run stops. False when stopping.
    fn sleep(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        loop {
            if self.sh.ctl.stopping() {
                return false;
            }
            let now = Instant::now();
            if now >= end {
                return true;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(50)));
        }
    }

    fn exec(&mut self, f: &Flowop) -> Flow {
        if let Some(a) = self.aio.as_mut() {
            if a.outstanding() > 0 {
                a.poll();
                self.record_aio();
            }
        }
        match self.exec_inner(f) {
            Ok(flow) => flow,
            Err(Fail::NoResource) => {
                self.rec.ops[f.stat].no_resource += 1;
                // Nothing to work on right now: yield instead of spinning on the fileset.
                std::thread::yield_now();
                Flow::Continue
            }
            Err(Fail::Error(msg)) => {
                self.rec.ops[f.stat].error(|| msg);
                Flow::Continue
            }
        }
    }

    /// The slot a flowop uses: `fd=N`, a rotating slot with `opennext`, or slot 0.
    fn fdnum(&mut self, f: &Flowop) -> usize {
        match f.fd {
            Some(n) if n > 0 => n,
            _ if f.opennext => {
                let entries = f
                    .fileset
                    .map(|i| self.sh.filesets[i].files.len())
                    .unwrap_or(MAX_FD / 2)
                    .clamp(1, MAX_FD / 2);
                if self.rotor == 0 || MAX_FD - self.rotor >= entries {
                    self.rotor = MAX_FD;
                }
                self.rotor -= 1;
                self.rotor
            }
            _ => f.fd.unwrap_or(0),
        }
    }

    fn how(&self, f: &Flowop, create: bool) -> OpenHow {
        let fs = f.fileset.map(|i| &self.sh.filesets[i]);
        OpenHow {
            create,
            readonly: fs.is_some_and(|s| s.readonly),
            writeonly: fs.is_some_and(|s| s.writeonly),
            dsync: f.dsync,
            directio: f.directio,
        }
    }

    fn index(&mut self, f: &Flowop, entries: usize) -> Option<usize> {
        let ix = f.indexed?;
        // As Filebench: (int)(sample * (entries / 2)) % entries.
        let v = match ix {
            crate::model::Num::Const(c) => c as f64,
            crate::model::Num::Rand(i) => self.sh.wl.randvars[i].rv.sample(&mut self.rngs[i]),
        };
        let half = (entries / 2) as f64;
        Some(((v * half) as i64).rem_euclid(entries.max(1) as i64) as usize)
    }

    /// Open a file of the flowop's fileset into `slot` (existing, or a new one with `create`).
    /// Returns the time the open took.
    fn open_into(&mut self, f: &Flowop, slot: usize, create: bool) -> Result<u64, Fail> {
        let Some(fsi) = f.fileset else {
            return Err(self.closed(slot, f.kind.name()));
        };
        let fs = &self.sh.filesets[fsi];
        let idx = self.index(f, fs.files.len());
        let want = if create { Want::Absent } else { Want::Exists };
        let Some(e) = fs.pick(List::Files, want, idx) else {
            if self.slots[slot].fd >= 0 {
                self.release_slot(slot);
            }
            self.slots[slot].starved = true;
            return Err(Fail::NoResource);
        };
        if self.slots[slot].fd >= 0 {
            // Reopening a slot that is still open closes the old file first (not measured).
            self.release_slot(slot);
        }
        let how = self.how(f, create);
        let path = fs.entry_path(List::Files, e, &mut self.path);
        let t0 = self.clock.now();
        let r = io::open(path, how);
        let ns = self.clock.since(t0);
        match r {
            Ok(fd) => {
                if f.noreadahead {
                    io::fadvise_random(fd);
                }
                fs.files[e].opens.fetch_add(1, Ordering::Relaxed);
                fs.release(List::Files, e, true);
                self.slots[slot] = Slot {
                    fd,
                    entry: Some((fsi as u32, e as u32)),
                    last: Some((fsi as u32, e as u32)),
                    off: 0,
                    last_off: 0,
                    starved: false,
                };
                Ok(ns)
            }
            Err(err) => {
                fs.release(List::Files, e, !create);
                let p = String::from_utf8_lossy(&self.path[..self.path.len() - 1]).into_owned();
                Err(Fail::Error(open_error(&p, &err, how)))
            }
        }
    }

    fn release_slot(&mut self, slot: usize) {
        let s = self.slots[slot];
        if s.fd >= 0 {
            let _ = io::close(s.fd);
            self.forget_open(slot);
        }
    }

    /// The slot no longer holds its file open: give back its open count.
    fn forget_open(&mut self, slot: usize) {
        if let Some(m) = self.maps.get_mut(slot) {
            *m = None;
        }
        if let Some((fs, e)) = self.slots[slot].entry.take() {
            let _ = self.sh.filesets[fs as usize].files[e as usize]
                .opens
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    Some(n.saturating_sub(1))
                });
        }
        self.slots[slot].fd = -1;
    }

    /// The slot's fd, opening a file implicitly when the slot is empty (as Filebench does).
    fn setup(&mut self, f: &Flowop) -> Result<(usize, RawFd), Fail> {
        let slot = self.fdnum(f);
        if self.slots[slot].fd < 0 {
            self.open_into(f, slot, false)?;
        }
        Ok((slot, self.slots[slot].fd))
    }

    /// Working-set size: `workingset`, else the planned size of the slot's file.
    fn wss(&mut self, f: &Flowop, slot: usize) -> u64 {
        let ws = self.num(&f.workingset);
        if ws > 0 {
            return ws as u64;
        }
        match self.slots[slot].last {
            Some((fs, e)) => self.sh.filesets[fs as usize].files[e as usize].size,
            None => 0,
        }
    }

    /// A buffer of `len` bytes at a random offset within `memsize` (when set).
    fn buffer(&mut self, len: usize) -> (usize, usize) {
        if len > self.buf.len() {
            // The kernel may still be writing from the old buffer.
            if let Some(a) = self.aio.as_mut() {
                a.drain();
            }
            self.record_aio();
            self.buf = AlignedBuf::new(len, &mut self.rng);
        }
        let room = self.memsize.min(self.buf.len()).saturating_sub(len);
        let off = if room >= io::ALIGN {
            (self.rng.random_range(0..=room) / io::ALIGN) * io::ALIGN
        } else {
            0
        };
        (off, len)
    }

    /// After a read or write of `n` bytes at `off`: remember the offset, and move a
    /// sequential flowop on (by `stride` when given, wrapping at the working set; a read at
    /// end of file starts over at the beginning).
    fn advance(&mut self, f: &Flowop, slot: usize, off: u64, n: u64, wss: u64) {
        self.slots[slot].last_off = off;
        if f.random || f.sameoffset {
            return;
        }
        let stride = self.num(&f.stride).max(0) as u64;
        let next = if n == 0 {
            0
        } else if stride > 0 {
            off + stride
        } else {
            off + n
        };
        self.slots[slot].off = if stride > 0 && wss > 0 && next >= wss {
            0
        } else {
            next
        };
    }

    /// Path of the file a slot was last opened on (for error messages).
    fn slot_path(&self, slot: usize) -> String {
        match self.slots[slot].last {
            Some((fs, e)) => self.sh.filesets[fs as usize]
                .entry_pathbuf(List::Files, e as usize)
                .display()
                .to_string(),
            None => format!("fd {slot}"),
        }
    }

    fn path_string(&self) -> String {
        String::from_utf8_lossy(&self.path[..self.path.len().saturating_sub(1)]).into_owned()
    }

    /// Error for a flowop that needs slot `slot` open and finds it closed.
    fn closed(&self, slot: usize, what: &str) -> Fail {
        if self.slots[slot].starved {
            Fail::NoResource
        } else {
            Fail::Error(format!("{what}: fd {slot} is not open"))
        }
    }

    fn exec_inner(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        use FlowopKind::*;
        match f.kind {
            Read | Write | AioWrite => {
                let iosize = self.num(&f.iosize).max(0) as usize;
                if iosize == 0 {
                    return Err(Fail::Error(format!("flowop {} has iosize 0", f.name)));
                }
                if f.directio && iosize & 511 != 0 {
                    return Err(Fail::Error(format!(
                        "flowop {}: directio needs iosize to be a multiple of the logical block size (512 or 4096 bytes); it is {iosize}",
                        f.name
                    )));
                }
                let (slot, fd) = self.setup(f)?;
                // The working set matters only for random offsets and strides.
                let wss = if f.random || f.stride != crate::model::Num::Const(0) {
                    self.wss(f, slot)
                } else {
                    0
                };
                let (boff, len) = self.buffer(iosize);
                let off = if f.sameoffset {
                    self.slots[slot].last_off
                } else if f.random {
                    let span = wss.saturating_sub(iosize as u64);
                    if span == 0 {
                        0
                    } else {
                        self.rng.random_range(0..=span / iosize as u64) * iosize as u64
                    }
                } else {
                    self.slots[slot].off
                };
                if f.directio && off & 511 != 0 {
                    return Err(Fail::Error(format!(
                        "flowop {}: directio needs offsets aligned to the logical block size (offset {off})",
                        f.name
                    )));
                }
                if f.kind == AioWrite {
                    if self.aio.is_none() {
                        self.aio = Some(Aio::setup());
                    }
                    let ptr = self.buf.as_slice()[boff..].as_ptr();
                    let aio = self.aio.as_mut().expect("set above");
                    // SAFETY: the worker's buffer is only replaced after draining (buffer())
                    // and is dropped after `aio`, which drains on drop.
                    let r = unsafe { aio.write(fd, ptr, len, off, f.stat) };
                    self.record_aio();
                    self.advance(f, slot, off, len as u64, wss);
                    return match r {
                        Ok(()) => Ok(Flow::Continue),
                        Err(e) => Err(Fail::Error(format!("aiowrite at offset {off}: {e}"))),
                    };
                }
                if f.mmap && f.kind == Read {
                    let map = self
                        .mapping(slot, fd, off + len as u64)
                        .map_err(|e| Fail::Error(format!("mmap: {e}")))?;
                    let t0 = self.clock.now();
                    let n = self.copy_from_map(map, off, boff, len);
                    let ns = self.clock.since(t0);
                    self.done(f, ns, n as u64);
                    self.advance(f, slot, off, n as u64, wss);
                    return Ok(Flow::Continue);
                }
                let t0 = self.clock.now();
                let r = if f.kind == Read {
                    io::pread(fd, &mut self.buf.as_mut_slice()[boff..boff + len], off)
                } else {
                    io::pwrite(fd, &self.buf.as_slice()[boff..boff + len], off)
                };
                let ns = self.clock.since(t0);
                match r {
                    Ok(n) => {
                        self.done(f, ns, n as u64);
                        self.advance(f, slot, off, n as u64, wss);
                        Ok(Flow::Continue)
                    }
                    Err(e) => Err(Fail::Error(format!(
                        "{} {} at offset {off}: {e}{}",
                        f.kind.name(),
                        self.slot_path(slot),
                        if f.directio && e.raw_os_error() == Some(libc::EINVAL) {
                            " (O_DIRECT: iosize and offset must be multiples of the device's logical block size)"
                        } else {
                            ""
                        }
                    ))),
                }
            }
            AppendFile | AppendFileRand => {
                let iosize = self.num(&f.iosize).max(0) as u64;
                let size = if f.kind == AppendFileRand {
                    if iosize == 0 {
                        return Err(Fail::Error(format!("flowop {} has iosize 0", f.name)));
                    }
                    self.rng.random_range(0..iosize)
                } else {
                    iosize
                };
                let (slot, fd) = self.setup(f)?;
                if size == 0 {
                    self.done(f, 0, 0);
                    return Ok(Flow::Continue);
                }
                let (boff, len) = self.buffer(size as usize);
                let t0 = self.clock.now();
                let r = io::seek_end(fd)
                    .and_then(|_| io::write(fd, &self.buf.as_slice()[boff..boff + len]));
                let ns = self.clock.since(t0);
                match r {
                    Ok(n) => {
                        self.done(f, ns, n as u64);
                        self.slots[slot].off = 0;
                        Ok(Flow::Continue)
                    }
                    Err(e) => Err(Fail::Error(format!(
                        "append to {}: {e}",
                        self.slot_path(slot)
                    ))),
                }
            }
            ReadWholeFile => {
                let (slot, fd) = self.setup(f)?;
                let wss = self.wss(f, slot);
                let mut iosize = self.num(&f.iosize).max(0) as u64;
                if iosize == 0 {
                    iosize = wss.max(1);
                }
                let (boff, len) = self.buffer(iosize as usize);
                let mut total = 0u64;
                if f.mmap {
                    let map = self
                        .mapping(slot, fd, wss)
                        .map_err(|e| Fail::Error(format!("mmap: {e}")))?;
                    let t0 = self.clock.now();
                    loop {
                        let n = self.copy_from_map(map, total, boff, len);
                        if n == 0 {
                            break;
                        }
                        total += n as u64;
                    }
                    self.done(f, self.clock.since(t0), total);
                    return Ok(Flow::Continue);
                }
                let t0 = self.clock.now();
                let r = loop {
                    match io::pread(fd, &mut self.buf.as_mut_slice()[boff..boff + len], total) {
                        Ok(0) => break Ok(()),
                        Ok(n) => total += n as u64,
                        Err(e) => break Err(e),
                    }
                };
                let ns = self.clock.since(t0);
                match r {
                    Ok(()) => {
                        self.done(f, ns, total);
                        Ok(Flow::Continue)
                    }
                    Err(e) => Err(Fail::Error(format!(
                        "readwholefile {}: {e}",
                        self.slot_path(slot)
                    ))),
                }
            }
            WriteWholeFile => {
                let (slot, fd) = self.setup(f)?;
                let mut wss = self.wss(f, slot);
                if let Some(src) = f.srcfd {
                    match self.slots[src].last {
                        Some((fs, e)) => wss = self.sh.filesets[fs as usize].files[e as usize].size,
                        None => return Err(self.closed(src, "writewholefile srcfd")),
                    }
                }
                let mut iosize = self.num(&f.iosize).max(0) as u64;
                if iosize == 0 {
                    iosize = wss.max(1);
                }
                let (boff, len) = self.buffer(iosize.min(wss.max(1)) as usize);
                let start = self.slots[slot].off;
                let mut done = 0u64;
                let t0 = self.clock.now();
                let r = loop {
                    if done >= wss {
                        break Ok(());
                    }
                    let n = (wss - done).min(len as u64) as usize;
                    match io::pwrite(fd, &self.buf.as_slice()[boff..boff + n], start + done) {
                        Ok(0) => break Err(std::io::Error::other("wrote 0 bytes")),
                        Ok(w) => done += w as u64,
                        Err(e) => break Err(e),
                    }
                };
                let ns = self.clock.since(t0);
                self.slots[slot].off = start + done;
                match r {
                    Ok(()) => {
                        self.done(f, ns, done);
                        Ok(Flow::Continue)
                    }
                    Err(e) => Err(Fail::Error(format!(
                        "writewholefile {}: {e}",
                        self.slot_path(slot)
                    ))),
                }
            }
            CreateFile | OpenFile => {
                let slot = self.fdnum(f);
                let ns = self.open_into(f, slot, f.kind == CreateFile)?;
                self.done(f, ns, 0);
                Ok(Flow::Continue)
            }
            CloseFile => {
                let slot = f.fd.unwrap_or(0);
                let s = self.slots[slot];
                if s.fd < 0 {
                    return Err(self.closed(slot, "closefile"));
                }
                let t0 = self.clock.now();
                let r = io::close(s.fd);
                let ns = self.clock.since(t0);
                self.forget_open(slot);
                match r {
                    Ok(()) => {
                        self.done(f, ns, 0);
                        Ok(Flow::Continue)
                    }
                    Err(e) => Err(Fail::Error(format!("close: {e}"))),
                }
            }
            DeleteFile => {
                let slot = f.fd.unwrap_or(0);
                let (fsi, e, own_open) = match (f.fd, self.slots[slot].last) {
                    (Some(n), Some((fs, e))) if n > 0 => {
                        self.slots[slot].last = None;
                        let fsr = &self.sh.filesets[fs as usize];
                        // Wait for other threads' create/delete of this entry to finish.
                        let ent = &fsr.files[e as usize];
                        loop {
                            let cur = ent.state.load(Ordering::Acquire);
                            if cur & crate::fileset::BUSY == 0
                                && ent
                                    .state
                                    .compare_exchange(
                                        cur,
                                        cur | crate::fileset::BUSY,
                                        Ordering::AcqRel,
                                        Ordering::Relaxed,
                                    )
                                    .is_ok()
                            {
                                break;
                            }
                            if self.sh.ctl.stopping() {
                                return Ok(Flow::Stop);
                            }
                            std::thread::yield_now();
                        }
                        if cur_exists(ent) {
                            (fs as usize, e as usize, self.slots[slot].fd >= 0)
                        } else {
                            fsr.release(List::Files, e as usize, false);
                            return Err(Fail::NoResource);
                        }
                    }
                    _ => {
                        let Some(fsi) = f.fileset else {
                            // The open that would have filled the slot found no file.
                            return Err(if self.slots[slot].starved {
                                Fail::NoResource
                            } else {
                                Fail::Error(format!("fd {slot} has no file to delete"))
                            });
                        };
                        let fs = &self.sh.filesets[fsi];
                        let idx = self.index(f, fs.files.len());
                        match fs.pick(List::Files, Want::Exists, idx) {
                            Some(e) => (fsi, e, false),
                            None => return Err(Fail::NoResource),
                        }
                    }
                };
                let fs = &self.sh.filesets[fsi];
                let opens = fs.files[e].opens.load(Ordering::Relaxed);
                if opens > u32::from(own_open) {
                    // Open in another thread: skipped, as in Filebench (counted, not silent).
                    fs.release(List::Files, e, true);
                    self.rec.ops[f.stat].no_resource += 1;
                    return Ok(Flow::Continue);
                }
                let path = fs.entry_path(List::Files, e, &mut self.path);
                let t0 = self.clock.now();
                let r = io::unlink(path);
                let ns = self.clock.since(t0);
                match r {
                    Ok(()) => {
                        // As Filebench: a deleted entry has no opens; our own still-open slot
                        // stops counting (its close will not decrement a later file's count).
                        fs.files[e].opens.store(0, Ordering::Relaxed);
                        if own_open {
                            self.slots[slot].entry = None;
                        }
                        fs.release(List::Files, e, false);
                        self.done(f, ns, 0);
                        Ok(Flow::Continue)
                    }
                    Err(err) => {
                        fs.release(List::Files, e, true);
                        Err(Fail::Error(format!("unlink {}: {err}", self.path_string())))
                    }
                }
            }
            StatFile => {
                let slot = f.fd.unwrap_or(0);
                if f.fd.is_some_and(|n| n > 0) && self.slots[slot].fd >= 0 {
                    let t0 = self.clock.now();
                    let r = io::fstat(self.slots[slot].fd);
                    let ns = self.clock.since(t0);
                    return match r {
                        Ok(_) => {
                            self.done(f, ns, 0);
                            Ok(Flow::Continue)
                        }
                        Err(e) => Err(Fail::Error(format!("fstat: {e}"))),
                    };
                }
                let Some(fsi) = f.fileset else {
                    return Err(Fail::Error(format!(
                        "fd {slot} is not open and no fileset is named"
                    )));
                };
                let fs = &self.sh.filesets[fsi];
                let idx = self.index(f, fs.files.len());
                let Some(e) = fs.pick(List::Files, Want::Exists, idx) else {
                    return Err(Fail::NoResource);
                };
                let path = fs.entry_path(List::Files, e, &mut self.path);
                let t0 = self.clock.now();
                let r = io::stat(path);
                let ns = self.clock.since(t0);
                fs.release(List::Files, e, true);
                match r {
                    Ok(_) => {
                        self.done(f, ns, 0);
                        Ok(Flow::Continue)
                    }
                    Err(err) => Err(Fail::Error(format!("stat {}: {err}", self.path_string()))),
                }
            }
            Fsync => {
                let slot = f.fd.unwrap_or(0);
                let fd = self.slots[slot].fd;
                if fd < 0 {
                    return Err(self.closed(slot, "fsync"));
                }
                let t0 = self.clock.now();
                let r = io::fsync(fd);
                let ns = self.clock.since(t0);
                match r {
                    Ok(()) => {
                        self.done(f, ns, 0);
                        Ok(Flow::Continue)
                    }
                    Err(e) => Err(Fail::Error(format!("fsync: {e}"))),
                }
            }
            FsyncSet => {
                let target = f.fileset.map(|i| i as u32);
                for slot in 0..MAX_FD {
                    let s = self.slots[slot];
                    if s.fd < 0 || s.last.map(|(fs, _)| fs) != target {
                        continue;
                    }
                    let t0 = self.clock.now();
                    let r = io::fsync(s.fd);
                    let ns = self.clock.since(t0);
                    match r {
                        Ok(()) => self.done(f, ns, 0),
                        Err(e) => self.rec.ops[f.stat].error(|| format!("fsync: {e}")),
                    }
                }
                Ok(Flow::Continue)
            }
            MakeDir | RemoveDir => {
                let fsi = f
                    .fileset
                    .expect("validated: makedir/removedir name a fileset");
                let fs = &self.sh.filesets[fsi];
                let make = f.kind == MakeDir;
                let idx = self.index(f, fs.leafdirs.len());
                let want = if make { Want::Absent } else { Want::Exists };
                let Some(e) = fs.pick(List::LeafDirs, want, idx) else {
                    return Err(Fail::NoResource);
                };
                let path = fs.entry_path(List::LeafDirs, e, &mut self.path);
                let t0 = self.clock.now();
                let r = if make {
                    io::mkdir(path)
                } else {
                    io::rmdir(path)
                };
                let ns = self.clock.since(t0);
                match r {
                    Ok(()) => {
                        fs.release(List::LeafDirs, e, make);
                        self.done(f, ns, 0);
                        Ok(Flow::Continue)
                    }
                    Err(err) => {
                        fs.release(List::LeafDirs, e, !make);
                        Err(Fail::Error(format!(
                            "{} {}: {err}",
                            if make { "mkdir" } else { "rmdir" },
                            self.path_string()
                        )))
                    }
                }
            }
            ListDir => {
                let fsi = f.fileset.expect("validated: listdir names a fileset");
                let fs = &self.sh.filesets[fsi];
                let Some(d) = fs.pick_dir() else {
                    return Err(Fail::NoResource);
                };
                let path = fs.dir_path(d, &mut self.path);
                let t0 = self.clock.now();
                let r = io::list_dir(path, &mut self.dirbuf);
                let ns = self.clock.since(t0);
                match r {
                    Ok((_, names)) => {
                        self.done(f, ns, names);
                        Ok(Flow::Continue)
                    }
                    Err(err) => Err(Fail::Error(format!(
                        "listdir {}: {err}",
                        self.path_string()
                    ))),
                }
            }
            Hog => {
                let n = self.num(&f.value).max(0) as u64;
                let t0 = self.clock.now();
                let b = self.buf.as_mut_slice();
                let len = b.len();
                for i in 0..n {
                    // One memory write per iteration, as Filebench's hog does.
                    let k = (i as usize * 64) % len;
                    b[k] = b[k].wrapping_add(1);
                    std::hint::black_box(&b[k]);
                }
                self.done(f, self.clock.since(t0), 0);
                Ok(Flow::Continue)
            }
            Delay => {
                let secs = self.num(&f.value).max(0) as u64;
                let t0 = self.clock.now();
                if !self.sleep(Duration::from_secs(secs)) {
                    return Ok(Flow::Stop);
                }
                self.done(f, self.clock.since(t0), 0);
                Ok(Flow::Continue)
            }
            Print => {
                let v = self.num(&f.value);
                println!("message from thread {}: {} {v}", self.thread.name, f.name);
                self.done(f, 0, 0);
                Ok(Flow::Continue)
            }
            TestRandVar => {
                let v = match f.value {
                    crate::model::Num::Rand(i) => {
                        self.sh.wl.randvars[i].rv.sample(&mut self.rngs[i])
                    }
                    crate::model::Num::Const(c) => c as f64,
                };
                match self.testrandvar.iter_mut().find(|t| t.0 == f.name) {
                    Some(t) => {
                        t.1 += 1;
                        t.2 += v;
                        t.3 += v * v;
                    }
                    None => self.testrandvar.push((f.name.clone(), 1, v, v * v)),
                }
                self.done(f, 0, 0);
                Ok(Flow::Continue)
            }
            FinishOnCount | FinishOnBytes => {
                let limit = self.num(&f.value).max(0) as u64;
                let count = f.kind == FinishOnCount;
                let have = match &f.target {
                    Some(t) => {
                        let id = self
                            .sh
                            .wl
                            .stat_names
                            .iter()
                            .position(|(n, _)| n == t)
                            .unwrap_or(0);
                        let o = &self.rec.ops[id];
                        if count {
                            o.count
                        } else {
                            o.bytes
                        }
                    }
                    None => {
                        let p = &self.sh.procs[self.proc_idx];
                        if count {
                            p.ops.load(Ordering::Relaxed)
                        } else {
                            p.bytes.load(Ordering::Relaxed)
                        }
                    }
                };
                let finished = if count { have >= limit } else { have > limit };
                Ok(if finished { Flow::Done } else { Flow::Continue })
            }
            AioWait => {
                let t0 = self.clock.now();
                if let Some(a) = self.aio.as_mut() {
                    // As Filebench: wait for half of the outstanding writes, at least one.
                    let want = a.outstanding().div_ceil(2);
                    let r = a.wait(want);
                    self.record_aio();
                    if let Err(e) = r {
                        return Err(Fail::Error(format!("aiowait: {e}")));
                    }
                }
                self.done(f, self.clock.since(t0), 0);
                Ok(Flow::Continue)
            }
            SemBlock => {
                let v = self.num(&f.value);
                let Some(sem) = self.sh.pacing.own_sem(&f.name, self.idx as u64) else {
                    return Err(Fail::Error(format!("semblock {}: no semaphore", f.name)));
                };
                let t0 = self.clock.now();
                if !sem.block(v, self.sh.ctl) {
                    return Ok(Flow::Stop);
                }
                self.done(f, self.clock.since(t0), 0);
                Ok(Flow::Continue)
            }
            SemPost => {
                let v = self.num(&f.value);
                let target = f.target.as_deref().unwrap_or_default();
                let t0 = self.clock.now();
                for sem in self.sh.pacing.sem_targets(target) {
                    if !sem.post(v, f.blocking, self.sh.ctl) {
                        return Ok(Flow::Stop);
                    }
                }
                self.done(f, self.clock.since(t0), 0);
                Ok(Flow::Continue)
            }
            Block => {
                let t0 = self.clock.now();
                if let Some(c) = self.sh.pacing.cond(&f.name) {
                    if !c.wait(self.sh.ctl) {
                        return Ok(Flow::Stop);
                    }
                }
                self.done(f, self.clock.since(t0), 0);
                Ok(Flow::Continue)
            }
            Wakeup => {
                let t0 = self.clock.now();
                if let Some(c) = self.sh.pacing.cond(f.target.as_deref().unwrap_or_default()) {
                    c.broadcast();
                }
                self.done(f, self.clock.since(t0), 0);
                Ok(Flow::Continue)
            }
            EventLimit => {
                let Some(eg) = &self.sh.pacing.events else {
                    // No eventgen rate: unlimited, and nothing to wait for.
                    self.done(f, 0, 0);
                    return Ok(Flow::Continue);
                };
                let t0 = self.clock.now();
                if !eg.take(1, self.sh.ctl) {
                    return Ok(Flow::Stop);
                }
                self.done(f, self.clock.since(t0), 0);
                Ok(Flow::Continue)
            }
            IopsLimit | OpsLimit | BwLimit => {
                let Some(eg) = &self.sh.pacing.events else {
                    self.done(f, 0, 0);
                    return Ok(Flow::Continue);
                };
                let bw = f.kind == BwLimit;
                // With target=: that flowop's ops or bytes in this thread (as Filebench);
                // without: the run's totals (Filebench: the process's).
                let cur = match self.target_stat(f) {
                    Some(t) => {
                        let o = &self.rec.ops[t];
                        if bw {
                            o.bytes
                        } else {
                            o.count
                        }
                    }
                    None => {
                        let c = &self.sh.pacing.counts;
                        match f.kind {
                            IopsLimit => c.rw_ops.load(Ordering::Relaxed),
                            OpsLimit => c.ops.load(Ordering::Relaxed),
                            _ => c.rw_bytes.load(Ordering::Relaxed),
                        }
                    }
                };
                let st = &mut self.limits[f.stat];
                if !st.started {
                    st.started = true;
                    st.last = cur;
                    self.done(f, 0, 0);
                    return Ok(Flow::Continue);
                }
                st.bucket -= cur.saturating_sub(st.last) as i64;
                st.last = cur;
                if st.bucket >= 0 {
                    self.done(f, 0, 0);
                    return Ok(Flow::Continue);
                }
                const MB: u64 = 1 << 20;
                let deficit = st.bucket.unsigned_abs();
                let (events, unit) = if bw {
                    (deficit / MB + 1, MB)
                } else {
                    (deficit, 1)
                };
                let t0 = self.clock.now();
                if !eg.take(events, self.sh.ctl) {
                    return Ok(Flow::Stop);
                }
                self.limits[f.stat].bucket += (events * unit) as i64;
                self.done(f, self.clock.since(t0), 0);
                Ok(Flow::Continue)
            }
            Think => {
                let us = self.num(&f.value).max(0) as u64;
                let t0 = self.clock.now();
                if !self.sleep(Duration::from_micros(us)) {
                    return Ok(Flow::Stop);
                }
                self.done(f, self.clock.since(t0), 0);
                Ok(Flow::Continue)
            }
            Composite => unreachable!("composites are expanded by run_flowop"),
        }
    }
}

fn cur_exists(e: &crate::fileset::Entry) -> bool {
    e.state.load(Ordering::Acquire) & crate::fileset::EXISTS != 0
}

/// The type of the file system holding `path` (or its directory), for error messages.
fn fs_name(path: &str) -> String {
    let p = std::path::Path::new(path);
    let dir = if p.exists() {
        p
    } else {
        p.parent().unwrap_or(p)
    };
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return "this file system".into();
    };
    // SAFETY: st is written by the kernel; c is NUL-terminated.
    let magic = unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        if libc::statfs(c.as_ptr(), &mut st) != 0 {
            return "this file system".into();
        }
        st.f_type as i64
    };
    let name = match magic {
        0x0102_1994 => "tmpfs",
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x794C_7630 => "overlayfs",
        0x6969 => "nfs",
        0x6573_5546 => "a FUSE file system",
        0x2FC1_2FC1 => "zfs",
        0x4D44 => "vfat",
        0x5346_544E => "ntfs",
        _ => return format!("this file system (type 0x{magic:x})"),
    };
    format!("the file system ({name})")
}

fn open_error(path: &str, err: &std::io::Error, how: OpenHow) -> String {
    let mut s = format!("open {path}: {err}");
    if how.directio && err.raw_os_error() == Some(libc::EINVAL) {
        s.push_str(&format!(
            " ({} refuses O_DIRECT; drop `directio` or use another file system)",
            fs_name(path)
        ));
    }
    if err.raw_os_error() == Some(libc::EMFILE) {
        s.push_str(" (too many open files: raise `ulimit -n`)");
    }
    s
}
