//! One worker thread: runs its thread's flowops in a loop until told to stop, with
//! Filebench's semantics for file descriptor slots, file picking and each flowop.
//!
//! Everything a worker touches per operation is its own (generators, slots, buffers,
//! recorder), except what an operation's meaning requires: picking and releasing fileset
//! entries, and the process-wide counters that `finishoncount`/`finishonbytes` without a
//! target read (kept only when such a flowop exists).

pub mod buffer;
mod dirs;
mod files;
mod misc;
mod pace;
mod plain;
mod remote;
mod rw;
mod stream;
mod stream_ctl;
mod stream_data;
mod stream_fio;
mod stream_mmap;
mod stream_skew;
mod stream_uring;
mod stream_vasync;
mod stream_verify;

use super::aio::Aio;
use super::sync::Pacing;
use super::Control;
use crate::fileset::{FilesetRt, List, Miss, Start, Want};
use fsbench_base::sys::io::{self, AlignedBuf, OpenHow};
use fsbench_model::dist::{rng, Rng};
use fsbench_model::model::{Flowop, FlowopKind, IoClass, Num, Thread, Workload};
use fsbench_results::stats::clock::Clock;
use fsbench_results::stats::loghist::LogHist;
use fsbench_results::stats::Recorder;
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
    /// How the descriptor was opened (slots rotating onto one file share a descriptor
    /// opened the same way).
    how: OpenHow,
    /// The open file (fileset, entry), whose open count this slot holds.
    entry: Option<(u32, u32)>,
    /// The file the slot was last opened on; kept after close, as Filebench keeps it, so a
    /// later `deletefile fd=N` or `srcfd=N` still refers to it.
    last: Option<(u32, u32)>,
    /// The planned size of the `last` file (kept here for the short path of plain reads
    /// and writes, which would otherwise chase it through the fileset at every operation).
    size: u64,
    off: u64,
    /// Offset of the slot's previous read or write (for `sameoffset`).
    last_off: u64,
    /// The last open into this slot found no file: flowops that depend on the slot count
    /// "no file" too, instead of piling up errors.
    starved: bool,
}

impl Slot {
    /// The planned size of the file the slot was last opened on (0 when none).
    #[inline]
    fn file_size(&self) -> u64 {
        if self.last.is_some() {
            self.size
        } else {
            0
        }
    }
}

const EMPTY: Slot = Slot {
    fd: -1,
    how: OpenHow {
        create: false,
        readonly: false,
        writeonly: false,
        dsync: false,
        directio: false,
    },
    entry: None,
    last: None,
    size: 0,
    off: 0,
    last_off: 0,
    starved: false,
};

/// What running a flowop asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// `finishoncount`/`finishonbytes` reached: this thread is done, and the run with it.
    Done,
    /// This thread's work is over (a `stream` has done its passes); the run goes on until
    /// every thread's is (fio's jobs end one by one).
    Finished,
    /// The run is stopping.
    Stop,
    /// A flowop found no file to work on: this thread ends (and the run, except in
    /// `alldone` mode), as in Filebench.
    Exhausted,
}

enum Fail {
    NoResource,
    /// Every entry of the fileset's list was busy: pick again (see `exec`).
    Busy,
    Error(String),
}

impl From<Miss> for Fail {
    fn from(m: Miss) -> Fail {
        match m {
            Miss::Empty => Fail::NoResource,
            Miss::AllBusy => Fail::Busy,
        }
    }
}

/// Everything shared, read-only or atomic, by the workers of a run.
pub struct Shared<'a> {
    pub wl: &'a Workload,
    pub filesets: &'a [FilesetRt],
    pub ctl: &'a Control,
    pub procs: &'a [ProcCounters],
    /// Whether IO ops must be added to `procs` (a finish flowop without target exists).
    pub count_procs: bool,
    /// Count fileset exhaustion and go on instead of ending the thread.
    pub continue_when_exhausted: bool,
    pub continue_on_enospc: bool,
    /// A finish flowop that is done ends the run in every mode (`--finish-ends-run`).
    pub finish_ends_run: bool,
    /// `--latency flowop`: an operation's latency runs from the start of its flowop (or the
    /// end of the flowop's previous operation) to its end, not around its calls only.
    pub whole_flowop: bool,
    /// `--buffers`: bytes past a page boundary where a Filebench flowop's buffer starts
    /// (16 as Filebench's; 0 aligned). fio jobs' buffers and `directio` slots' are aligned.
    pub buffer_skew: usize,
    /// `--cache-stat`: before each buffered read, the pages of its range the page cache
    /// holds (cachestat(2)), counted per flowop.
    pub cache_stat: bool,
    pub clock: Clock,
    /// One slot per worker where it publishes cumulative counters at each sampling epoch.
    pub samples: &'a [std::sync::Mutex<Sample>],
    /// Semaphores, conditions, the event generator and the run-wide counters of limits.
    pub pacing: &'a Pacing,
    /// The run's latency histograms, one per flowop.
    pub hists: &'a fsbench_results::stats::SharedHists,
    /// The run directory, where `stream` flowops find their files.
    pub stream_dir: Option<RawFd>,
    /// Over NFS: the export each worker mounts and the run directory's path there.
    pub nfs: Option<&'a fsbench_base::libnfs::Target>,
    /// Which data the run stamps and checks.
    pub verify: fsbench_model::verify::Mode,
    /// Per fio job: its clones whose stream has ended (for the jobs that wait for it).
    pub streams_ended: &'a [AtomicU64],
}

/// What a worker publishes at each sampling epoch: its cumulative counts and bytes per
/// flowop, and the latencies recorded since its previous publication (a small log-linear
/// histogram per flowop, handed over by swapping, never copied).
#[derive(Debug, Default)]
pub struct Sample {
    pub word: u64,
    pub ops: Vec<(u64, u64)>,
    pub hists: Vec<LogHist>,
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
    /// With `--latency flowop`: when the current flowop started, or its last operation
    /// ended.
    mark: fsbench_results::stats::clock::Stamp,
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
    /// Per fileset: this thread's own rotor for `opennext` picks (Filebench's
    /// `fs_file_exrotor[tf_utid]`: a rotating-fd open picks in rotation per thread).
    own_rotor: Vec<usize>,
    /// The statistic of the finish flowop that was done (the thread's end), for the notes.
    finished_by: Option<usize>,
    /// How many slots share another slot's descriptor (see `share_fd`); 0 spares closes the
    /// scan for a sharer.
    shared_fds: usize,
    buf: AlignedBuf,
    memsize: usize,
    path: Vec<u8>,
    dirbuf: Vec<u8>,
    pub rec: Recorder,
    /// Per flowop statistic: the statistic its `target=` names (resolved once, not per call).
    targets: Vec<Option<usize>>,
    /// Latencies since the last time-series publication, per flowop.
    ihist: Vec<LogHist>,
    /// Latencies not yet added to the run's histograms, per flowop.
    lat: Vec<Vec<u64>>,
    pub testrandvar: Vec<(String, u64, f64, f64)>,
    /// The control word last acted on.
    seen: u64,
    /// Per statistic: the plain form of this thread's flowops reporting under it, for the
    /// short path (see `plain`).
    plain: Vec<Option<plain::Plain>>,
    /// The last division of a random offset: (span, iosize, span / iosize).
    span_div: (u64, u64, u64),
    /// Thread CPU (user, system) when the current statistics generation began.
    cpu0: (f64, f64),
    /// The open files and progress of this thread's `stream` flowop.
    stream: Option<Box<stream::StreamState>>,
    /// What the stream's fio job clone records as fio does.
    fio: Option<Box<stream_fio::FioRun>>,
    /// Over NFS: this worker's client and open files; `None` on the local path.
    remote: Option<Box<remote::Remote>>,
}

/// The largest whole-file request a thread can make: whole-file flowops without an `iosize`
/// move a file's planned size in one request, and planned sizes are fixed at layout, so
/// sizing the buffer for the largest of them at start spends the memory up front (a long
/// run's memory stays flat instead of growing whenever a larger file comes up).
fn whole_file_buffer(t: &Thread, filesets: &[FilesetRt]) -> u64 {
    fn walk(f: &Flowop, filesets: &[FilesetRt], m: &mut u64) {
        if f.kind.def().whole_file
            && matches!(f.iosize, Num::Const(0))
            && matches!(f.workingset, Num::Const(0))
        {
            if let Some(fs) = f.fileset.and_then(|i| filesets.get(i)) {
                let largest = fs.files.iter().map(|e| e.size()).max().unwrap_or(0);
                *m = (*m).max(largest.min(WHOLE_FILE_PRESIZE_CAP));
            }
        }
        for c in &f.children {
            walk(c, filesets, m);
        }
    }
    let mut m = 0;
    for f in &t.flowops {
        walk(f, filesets, &mut m);
    }
    m
}

/// Whole-file requests beyond this still get their buffer, when they come.
const WHOLE_FILE_PRESIZE_CAP: u64 = 64 << 20;

impl<'a> Worker<'a> {
    pub fn new(
        sh: &'a Shared<'a>,
        thread: &'a Thread,
        proc_idx: usize,
        worker_idx: u64,
        seed: u64,
    ) -> Result<Worker<'a>, String> {
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
        let memsize = thread.memsize as usize;
        let first = buffer::initial_buffer(thread).max(whole_file_buffer(thread, sh.filesets));
        let buf = AlignedBuf::try_new(first as usize, &mut r)?;
        let remote = match sh.nfs {
            Some(t) => Some(Box::new(remote::Remote::connect(t)?)),
            None => None,
        };
        Ok(Worker {
            remote,
            sh,
            idx: worker_idx as usize,
            clock: sh.clock,
            mark: 0,
            thread,
            proc_idx,
            aio: None,
            maps: Vec::new(),
            limits: vec![LimitState::default(); wl.stat_names.len()],
            rngs,
            rng: r,
            slots: vec![EMPTY; MAX_FD],
            rotor: 0,
            own_rotor: vec![0; sh.filesets.len()],
            shared_fds: 0,
            finished_by: None,
            buf,
            memsize,
            path: Vec::with_capacity(256),
            dirbuf: vec![0u8; 64 << 10],
            rec: Recorder::new(wl.stat_names.len()),
            ihist: (0..wl.stat_names.len())
                .map(|_| LogHist::default())
                .collect(),
            lat: (0..wl.stat_names.len()).map(|_| Vec::new()).collect(),
            targets: {
                let mut t = vec![None; wl.stat_names.len()];
                for f in wl.all_flowops() {
                    if let Some(name) = &f.target {
                        // A target names a flowop; inside a composite its statistics are
                        // reported as `composite.name`.
                        t[f.stat] =
                            wl.stat_names
                                .iter()
                                .position(|(n, _)| n == name)
                                .or_else(|| {
                                    wl.all_flowops()
                                        .iter()
                                        .find(|g| &g.name == name)
                                        .map(|g| g.stat)
                                });
                    }
                }
                t
            },
            testrandvar: Vec::new(),
            seen: 0,
            cpu0: (0.0, 0.0),
            plain: plain::Plain::for_thread(sh, thread),
            span_div: (0, 1, 0),
            stream: None,
            fio: None,
        })
    }

    /// Start measuring: note the CPU baseline.
    pub fn begin(&mut self) {
        self.cpu0 = fsbench_results::stats::thread_cpu();
    }

    /// Act on control word `w` before an operation; false when the run is stopping.
    #[inline]
    fn take_control(&mut self, w: u64) -> bool {
        if w != self.seen {
            if w & super::STOP != 0 {
                return false;
            }
            self.on_control(w);
        }
        true
    }

    /// React to a new control word: a new statistics generation resets the recorder (end of
    /// warm-up); a new epoch publishes a snapshot for the time series.
    fn on_control(&mut self, w: u64) {
        if w >> super::GEN_SHIFT != self.seen >> super::GEN_SHIFT {
            self.rec.reset();
            if let Some(r) = &self.remote {
                r.reset_rpcs();
            }
            for h in &mut self.ihist {
                h.reset();
            }
            for b in &mut self.lat {
                b.clear();
            }
            self.cpu0 = fsbench_results::stats::thread_cpu();
            self.fio_restart();
        } else {
            // The latencies of this interval are in the publication below.
            for stat in 0..self.lat.len() {
                self.flush_lat(stat);
            }
        }
        self.seen = w;
        if let Some(slot) = self.sh.samples.get(self.idx) {
            let mut g = slot.lock().unwrap();
            g.word = w;
            g.ops.clear();
            g.ops
                .extend(self.rec.ops.iter().map(|o| (o.count, o.bytes)));
            if g.hists.len() != self.ihist.len() {
                g.hists = (0..self.ihist.len()).map(|_| LogHist::default()).collect();
            }
            for (mine, theirs) in self.ihist.iter_mut().zip(g.hists.iter_mut()) {
                // Added, not swapped: if the sampler has not taken the last publication yet
                // (this worker published late), nothing is lost.
                theirs.add(mine);
                mine.reset();
            }
        }
    }

    /// Stop measuring: CPU used since the baseline, apportioned to flowops by their share of
    /// this thread's measured time.
    pub fn finish(&mut self) {
        // A stream the run stopped records how long it ran.
        self.stream_timed();
        if let Some(r) = &self.remote {
            r.rpcs_into(&mut self.rec);
        }
        for stat in 0..self.lat.len() {
            self.flush_lat(stat);
        }
        let (u1, s1) = fsbench_results::stats::thread_cpu();
        self.rec.cpu_user_s = u1 - self.cpu0.0;
        self.rec.cpu_sys_s = s1 - self.cpu0.1;
        let cpu_ns = (self.rec.cpu_user_s + self.rec.cpu_sys_s) * 1e9;
        // A stream's runtime statistic is a span of time, not an operation: no CPU share.
        let names = &self.sh.wl.stat_names;
        let counts = |i: usize| names.get(i).is_none_or(|n| n.1 != FlowopKind::Stream);
        let total: u64 = (self.rec.ops.iter().enumerate())
            .filter(|(i, _)| counts(*i))
            .map(|(_, o)| o.lat_sum_ns)
            .sum();
        if total > 0 {
            for (i, o) in self.rec.ops.iter_mut().enumerate() {
                if counts(i) {
                    o.cpu_ns = cpu_ns * o.lat_sum_ns as f64 / total as f64;
                }
            }
        }
    }

    /// Loop over the thread's flowops until stopped or done.
    pub fn run(&mut self) -> Flow {
        let flowops = &self.thread.flowops;
        if let Some(ops) = self.plain_loop() {
            return self.run_plain(&ops);
        }
        loop {
            // Also checked here, not only per operation: a pass whose flowops all run zero
            // times must still see the stop.
            if self.sh.ctl.stopping() {
                return Flow::Stop;
            }
            for f in flowops {
                match self.run_flowop(f) {
                    Flow::Continue => {}
                    other => return other,
                }
            }
        }
    }

    /// The name of the finish flowop whose end ended this thread, if one did.
    pub fn done_by(&self) -> Option<String> {
        self.finished_by.map(|s| self.sh.wl.stat_names[s].0.clone())
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
        self.stream_close();
    }

    /// A value drawn for this operation (a constant, or a draw of its random variable).
    /// Inline: every flowop call draws its `iters` through it, and a constant is one load.
    #[inline]
    fn num(&mut self, n: &fsbench_model::model::Num) -> i64 {
        n.get(&self.sh.wl.randvars, &mut self.rngs)
    }

    fn run_flowop(&mut self, f: &Flowop) -> Flow {
        let iters = self.num(&f.iters).max(0);
        for _ in 0..iters {
            if !self.take_control(self.sh.ctl.word()) {
                return Flow::Stop;
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
            } else if let Some(p) = self.plain[f.stat] {
                match self.plain_io(f, p) {
                    Some(r) => r,
                    None => self.exec(f),
                }
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
        let ns = if self.sh.whole_flowop {
            let now = self.clock.now();
            let whole = self.clock.delta(self.mark, now);
            self.mark = now;
            whole
        } else {
            ns
        };
        self.tally(stat, ns, bytes, fsbench_results::stats::LAT_BATCH);
        // Filebench's control counters (flowop_endop) count every flowop call that ends
        // with an endop whose type has the IO or AIO bit: IO (1), AIO (2), SYNC (3) and
        // OTHER (5), i.e. all but composites. So `finishoncount` without a target counts
        // semaphores, hogs, delays and its own calls too.
        let _ = kind;
        if self.sh.count_procs {
            let p = &self.sh.procs[self.proc_idx];
            p.ops.fetch_add(1, Ordering::Relaxed);
            p.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        if self.sh.pacing.count_run {
            let class = kind.io_class();
            self.sh
                .pacing
                .count(matches!(class, IoClass::Read | IoClass::Write), bytes);
        }
    }

    /// Count an operation of `stat` and keep its latency, counting the kept ones in when
    /// `batch` have gathered (all a run without process counters or run-wide pacing records
    /// per operation).
    #[inline]
    fn tally(&mut self, stat: usize, ns: u64, bytes: u64, batch: usize) {
        self.rec.ops[stat].tally(ns, bytes);
        let b = &mut self.lat[stat];
        b.push(ns);
        if b.len() >= batch {
            self.flush_lat(stat);
        }
    }

    /// Move the latencies kept for `stat` into the interval's histogram and the run's.
    /// Kept in a batch, not recorded one by one: recording them together is cheaper than
    /// recording each between two system calls, whose data push ours out of the caches.
    #[cold]
    fn flush_lat(&mut self, stat: usize) {
        let b = &mut self.lat[stat];
        if b.is_empty() {
            return;
        }
        let h = &mut self.ihist[stat];
        for &v in b.iter() {
            h.record(v);
        }
        self.sh.hists.add(stat, super::generation(self.seen), b);
        b.clear();
    }

    /// Record the asynchronous writes reaped so far, under their aiowrite flowop.
    fn record_aio(&mut self) {
        let Some(a) = self.aio.as_mut() else { return };
        let mut done = std::mem::take(&mut a.done);
        for c in done.drain(..) {
            match c.result {
                // The submission was the operation (as in Filebench); the completion is
                // counted beside it.
                Ok(_) => {
                    let o = &mut self.rec.ops[c.stat];
                    o.completions += 1;
                    o.completion_ns_sum += c.ns;
                }
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
        self.targets[f.stat]
    }

    /// Sleep `d`, waking early when the run stops. False when stopping.
    fn sleep(&self, d: Duration) -> bool {
        // A huge delay sleeps until the run stops rather than overflowing the clock.
        let end = Instant::now()
            .checked_add(d)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 40));
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
        if let Some(r) = &self.remote {
            r.begin(f.stat);
        }
        if self.sh.whole_flowop {
            self.mark = self.clock.now();
        }
        if let Some(a) = self.aio.as_mut() {
            if a.outstanding() > 0 {
                a.poll();
                self.record_aio();
            }
        }
        let mut r = self.exec_inner(f);
        // As Filebench's fileset_pick: while every entry of the list is busy in other
        // threads, wait for one to be released and pick again.
        while matches!(r, Err(Fail::Busy)) {
            if self.sh.ctl.stopping() {
                return Flow::Stop;
            }
            std::thread::yield_now();
            r = self.exec_inner(f);
        }
        self.settle(f, r)
    }

    /// What the loop does after `f` ended with `r`: count a missing file or an error, and
    /// end the thread where Filebench would (an exhausted fileset, a full file system).
    fn settle(&mut self, f: &Flowop, r: Result<Flow, Fail>) -> Flow {
        match r {
            Ok(flow) => flow,
            Err(Fail::NoResource | Fail::Busy) => {
                self.rec.ops[f.stat].no_resource += 1;
                if !self.sh.continue_when_exhausted {
                    if let Ok(mut x) = self.sh.ctl.exhausted.lock() {
                        x.get_or_insert_with(|| self.sh.wl.stat_names[f.stat].0.clone());
                    }
                    return Flow::Exhausted;
                }
                // Nothing to work on right now: yield instead of spinning on the fileset.
                std::thread::yield_now();
                Flow::Continue
            }
            Err(Fail::Error(msg)) => {
                // Rust's io::Error text ends in "(os error N)" whatever the locale.
                let full = msg.contains("(os error 28)") || msg.contains("(os error 122)");
                if full && !self.sh.continue_on_enospc {
                    if let Ok(mut x) = self.sh.ctl.no_space.lock() {
                        x.get_or_insert_with(|| {
                            format!("flowop {}: {msg}", self.sh.wl.stat_names[f.stat].0)
                        });
                    }
                    self.rec.ops[f.stat].error(|| msg);
                    return Flow::Exhausted;
                }
                self.rec.ops[f.stat].error(|| msg);
                Flow::Continue
            }
        }
    }

    /// The slot a flowop uses: `fd=N`, a rotating slot with `opennext`, or slot 0. As
    /// Filebench's `flowoplib_fdnum`, the rotation runs over all `MAX_FD` slots of the
    /// thread, from the last down to 0 and round again, whatever the fileset's size.
    fn fdnum(&mut self, f: &Flowop) -> usize {
        match f.fd {
            Some(n) if n > 0 => n,
            _ if f.opennext => {
                if self.rotor == 0 {
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

    /// The entry an indexed flowop asks for. As Filebench: files take
    /// `(int)sample % entries`; leaf directories `(int)(sample * (entries / 2)) % entries`.
    fn index(&mut self, f: &Flowop, entries: usize) -> Option<usize> {
        self.index_scaled(f, entries, false)
    }

    /// Where a pick of `f` among `entries` starts: its index, or the shared rotor (what
    /// Filebench's createfile, deletefile, statfile and openfile without `opennext` pass).
    fn start(&mut self, f: &Flowop, entries: usize) -> Start<'static> {
        self.start_scaled(f, entries, false)
    }

    fn start_scaled(&mut self, f: &Flowop, entries: usize, leafdirs: bool) -> Start<'static> {
        match self.index_scaled(f, entries, leafdirs) {
            Some(i) => Start::Index(i),
            None => Start::Rotor,
        }
    }

    fn index_scaled(&mut self, f: &Flowop, entries: usize, leafdirs: bool) -> Option<usize> {
        let ix = f.indexed?;
        let v = match ix {
            fsbench_model::model::Num::Const(c) => c as f64,
            fsbench_model::model::Num::Rand(i) => {
                self.sh.wl.randvars[i].rv.sample(&mut self.rngs[i])
            }
        };
        let v = if leafdirs {
            v * (entries / 2) as f64
        } else {
            v
        };
        Some((v as i64).rem_euclid(entries.max(1) as i64) as usize)
    }

    /// Open a file of the flowop's fileset into `slot` (existing, or a new one with `create`).
    /// Returns the time the open took.
    fn open_into(&mut self, f: &Flowop, slot: usize, create: bool) -> Result<u64, Fail> {
        let Some(fsi) = f.fileset else {
            return Err(self.closed(slot, f.kind.name()));
        };
        let fs = &self.sh.filesets[fsi];
        let want = if create { Want::Absent } else { Want::Exists };
        // As Filebench's openfile: its own rotor with `opennext` (fs_file_exrotor[tf_utid]),
        // else the shared one (createfile passes tid 0 whatever `opennext` says).
        let start = match self.index(f, fs.files.len()) {
            Some(i) => Start::Index(i),
            None if f.opennext && !create => Start::Own(&mut self.own_rotor[fsi]),
            None => Start::Rotor,
        };
        let e = match fs.pick(List::Files, want, start) {
            Ok(e) => e,
            Err(miss) => {
                if self.slots[slot].fd >= 0 {
                    self.release_slot(slot);
                }
                self.slots[slot].starved = true;
                return Err(miss.into());
            }
        };
        if self.slots[slot].fd >= 0 {
            // Reopening a slot that is still open closes the old file first (not measured).
            self.release_slot(slot);
        }
        let how = self.how(f, create);
        let (r, ns) = self.open_entry(fsi, e, how);
        match r {
            Ok(fd) => {
                // Over NFS there is no readahead to turn off: libnfs reads what is asked.
                if f.noreadahead && self.remote.is_none() {
                    io::fadvise_random(fd);
                }
                if create {
                    if let Some(v) = fs.verify.get(e) {
                        v.reset(0);
                    }
                }
                fs.files[e].opens.fetch_add(1, Ordering::Relaxed);
                fs.release(List::Files, e, true);
                let fd = if f.opennext {
                    self.share_fd(slot, (fsi as u32, e as u32), how, fd)
                } else {
                    fd
                };
                self.slots[slot] = Slot {
                    how,
                    fd,
                    entry: Some((fsi as u32, e as u32)),
                    last: Some((fsi as u32, e as u32)),
                    size: fs.files[e].size(),
                    off: 0,
                    last_off: 0,
                    starved: false,
                };
                Ok(ns)
            }
            Err(err) => {
                fs.release(List::Files, e, !create);
                let p = fs.entry_pathbuf(List::Files, e).display().to_string();
                Err(Fail::Error(open_error(&p, &err, how)))
            }
        }
    }

    fn release_slot(&mut self, slot: usize) {
        let s = self.slots[slot];
        if s.fd >= 0 {
            if !self.fd_shared(slot) {
                let _ = self.close_fd(s.fd);
            }
            self.forget_open(slot);
        }
    }

    /// A rotating open (`opennext`) of a file another slot of this thread holds open the
    /// same way: the open was made and timed; keep the other slot's descriptor and close the
    /// new one (not measured). Filebench holds 128 descriptors per thread, one per slot, in
    /// a process per `define process` instance; here every thread shares one process's
    /// descriptor table, and oltp's 211 threads would need 27,008.
    fn share_fd(&mut self, slot: usize, entry: (u32, u32), how: OpenHow, fd: RawFd) -> RawFd {
        let other = self
            .slots
            .iter()
            .enumerate()
            .find(|(j, s)| *j != slot && s.fd >= 0 && s.entry == Some(entry) && s.how == how)
            .map(|(_, s)| s.fd);
        match other {
            Some(keep) => {
                let _ = self.close_fd(fd);
                self.shared_fds += 1;
                keep
            }
            None => fd,
        }
    }

    /// Whether another slot holds `slot`'s descriptor (then closing `slot` leaves it open).
    fn fd_shared(&mut self, slot: usize) -> bool {
        if self.shared_fds == 0 {
            return false;
        }
        let fd = self.slots[slot].fd;
        let shared = self
            .slots
            .iter()
            .enumerate()
            .any(|(j, s)| j != slot && s.fd == fd);
        if shared {
            self.shared_fds -= 1;
        }
        shared
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

    /// The slot's fd, opening a file implicitly when the slot is empty (as Filebench does,
    /// whose open there is an operation of the flowop that needed it: timed and counted).
    fn setup(&mut self, f: &Flowop) -> Result<(usize, RawFd), Fail> {
        let slot = self.fdnum(f);
        if self.slots[slot].fd < 0 {
            let ns = self.open_into(f, slot, false)?;
            self.done(f, ns, 0);
        }
        Ok((slot, self.slots[slot].fd))
    }

    /// Working-set size: `workingset`, else the planned size of the slot's file.
    fn wss(&mut self, f: &Flowop, slot: usize) -> u64 {
        let ws = self.num(&f.workingset);
        if ws > 0 {
            return ws as u64;
        }
        self.slots[slot].file_size()
    }

    /// A buffer of `len` bytes at a random offset within `memsize` (when set), aligned:
    /// for fio jobs, as fio's buffers are.
    fn buffer(&mut self, len: usize) -> Result<(usize, usize), Fail> {
        self.buffer_skewed(len, 0)
    }

    /// A buffer of `len` bytes for a Filebench flowop on `slot`: placed as [`Self::buffer`],
    /// then `--buffers`' skew past the boundary (none for a slot opened with `directio`).
    fn flowop_buffer(&mut self, slot: usize, len: usize) -> Result<(usize, usize), Fail> {
        let skew = self.skew(slot);
        self.buffer_skewed(len, skew)
    }

    /// Bytes past a page boundary where a Filebench flowop's buffer on `slot` starts.
    #[inline]
    fn skew(&self, slot: usize) -> usize {
        if self.slots[slot].how.directio {
            0
        } else {
            self.sh.buffer_skew
        }
    }

    fn buffer_skewed(&mut self, len: usize, skew: usize) -> Result<(usize, usize), Fail> {
        if len + skew > self.buf.len() {
            // The kernel may still be writing from the old buffer.
            if let Some(a) = self.aio.as_mut() {
                a.drain();
            }
            self.record_aio();
            self.buf = AlignedBuf::try_new(len + skew, &mut self.rng).map_err(Fail::Error)?;
        }
        Ok((self.buffer_place(len, skew), len))
    }

    /// Where in the buffer a request of `len` bytes goes: a random aligned place within
    /// `memsize` when set (as Filebench's `flowoplib_iobufsetup`), else the start, then
    /// `skew` bytes on. The buffer must hold `len + skew` bytes.
    #[inline]
    fn buffer_place(&mut self, len: usize, skew: usize) -> usize {
        let room = self.memsize.min(self.buf.len()).saturating_sub(len + skew);
        let place = if room >= io::ALIGN {
            (self.rng.random_range(0..=room) / io::ALIGN) * io::ALIGN
        } else {
            0
        };
        place + skew
    }

    /// A random `iosize`-aligned offset at which `iosize` bytes fit within `wss` (0 when
    /// they do not).
    #[inline]
    fn random_offset(&mut self, wss: u64, iosize: u64) -> u64 {
        let span = wss.saturating_sub(iosize);
        if span == 0 {
            return 0;
        }
        // The division is the same from one operation to the next on the same file.
        if self.span_div.0 != span || self.span_div.1 != iosize {
            self.span_div = (span, iosize, span / iosize);
        }
        self.rng.random_range(0..=self.span_div.2) * iosize
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

    /// Whether writes of `f` to the file in `slot` shape their data (a content setting on
    /// the flowop, or a fileset whose content is not plain random).
    fn shapes(&self, f: &Flowop, slot: usize) -> Option<fsbench_model::content::Content> {
        let (fsi, _) = self.slots[slot].last?;
        let fs = &self.sh.filesets[fsi as usize];
        f.content
            .or((!fs.content.is_random()).then_some(fs.content))
    }

    /// Fill the buffer bytes `boff..boff + len`, about to be written at `off` to the file in
    /// `slot`, with the file's content there (as the layout writes it), and keep a sample.
    fn shape(&mut self, f: &Flowop, slot: usize, off: u64, boff: usize, len: usize) {
        let Some(c) = self.shapes(f, slot) else {
            return;
        };
        let (fsi, e) = self.slots[slot].last.expect("checked by shapes");
        let seed = self.sh.filesets[fsi as usize].content_seed;
        let buf = &mut self.buf.as_mut_slice()[boff..boff + len];
        fsbench_model::content::Generator::new(c, seed).fill_at(e as u64, off, buf);
        let o = &mut self.rec.ops[f.stat];
        o.content.get_or_insert(c);
        let take = fsbench_results::stats::SAMPLE_BYTES
            .saturating_sub(o.sample.len())
            .min(len);
        o.sample.extend_from_slice(&buf[..take]);
    }

    /// With `--verify`: the content state and header id of the file last opened in `slot`.
    fn vstate(&self, slot: usize) -> Option<(&'a fsbench_model::verify::FileState, u64)> {
        let (fs, e) = self.slots[slot].last?;
        let sh: &'a Shared<'a> = self.sh;
        let st = sh.filesets[fs as usize].verify.get(e as usize)?;
        Some((st, fsbench_model::verify::file_id(fs, e)))
    }

    /// Stamp the buffer bytes `boff..boff + len`, about to be written at `off`, with a new
    /// generation of the file; returns the generation.
    fn vstamp(
        &mut self,
        v: (&fsbench_model::verify::FileState, u64),
        off: u64,
        boff: usize,
        len: usize,
    ) -> u32 {
        let g = v.0.begin_write_at(off, off + len as u64);
        fsbench_model::verify::stamp(g, v.1, off, &mut self.buf.as_mut_slice()[boff..boff + len]);
        g
    }

    /// Check the `n` bytes read into the buffer at `boff` against the state `snap` taken
    /// before the read (it holds where the read was and how much it asked for); counts and
    /// mismatches go to the flowop.
    fn vcheck(
        &mut self,
        f: &Flowop,
        slot: usize,
        v: (&fsbench_model::verify::FileState, u64),
        snap: &fsbench_model::verify::Snapshot,
        boff: usize,
        n: usize,
    ) {
        if !self.sh.verify.checks(f.verify) {
            return;
        }
        let mut found = Vec::new();
        let path = || self.slot_path(slot);
        let c = fsbench_model::verify::check_read(
            v.0,
            snap,
            v.1,
            &path,
            &self.buf.as_slice()[boff..boff + n],
            &mut |m| found.push(m),
        );
        let o = &mut self.rec.ops[f.stat];
        o.verify_blocks += c.blocks;
        o.verify_mismatches += c.mismatches;
        o.verify_skipped += c.skipped;
        let room = fsbench_model::verify::KEEP.saturating_sub(o.mismatches.len());
        o.mismatches.extend(found.into_iter().take(room));
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

    /// Error for a flowop that needs slot `slot` open and finds it closed.
    fn closed(&self, slot: usize, what: &str) -> Fail {
        if self.slots[slot].starved {
            Fail::NoResource
        } else {
            Fail::Error(format!("{what}: fd {slot} is not open"))
        }
    }

    /// The engine's table of executors: the function that runs each flowop type, one arm
    /// per [`FlowopKind`] and no wildcard, so a new type does not compile until it has one
    /// (the model's facts of a type are its row of [`fsbench_model::model::FLOWOPS`]). A `match`
    /// rather than an array of function pointers: it compiles to one jump table, and
    /// several types share an executor that tells them apart by `f.kind`.
    fn exec_inner(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        use FlowopKind::*;
        match f.kind {
            Read | Write | AioWrite => self.op_read(f),
            AppendFile | AppendFileRand => self.op_appendfile(f),
            ReadWholeFile => self.op_readwholefile(f),
            WriteWholeFile => self.op_writewholefile(f),
            CreateFile | OpenFile => self.op_createfile(f),
            CloseFile => self.op_closefile(f),
            DeleteFile => self.op_deletefile(f),
            StatFile => self.op_statfile(f),
            Fsync => self.op_fsync(f),
            FsyncSet => self.op_fsyncset(f),
            MakeDir | RemoveDir => self.op_makedir(f),
            ListDir => self.op_listdir(f),
            Hog => self.op_hog(f),
            Delay => self.op_delay(f),
            Print => self.op_print(f),
            TestRandVar => self.op_testrandvar(f),
            FinishOnCount | FinishOnBytes => self.op_finishoncount(f),
            AioWait => self.op_aiowait(f),
            SemBlock => self.op_semblock(f),
            SemPost => self.op_sempost(f),
            Block => self.op_block(f),
            Wakeup => self.op_wakeup(f),
            EventLimit => self.op_eventlimit(f),
            IopsLimit | OpsLimit | BwLimit => self.op_iopslimit(f),
            Think => self.op_think(f),
            Stream => self.op_stream(f),
            Composite => unreachable!("composites are expanded by run_flowop"),
        }
    }
}

/// The type of the file system holding `path` (or its directory), for error messages.
fn fs_name(path: &str) -> String {
    let p = std::path::Path::new(path);
    let dir = if p.exists() {
        p
    } else {
        p.parent().unwrap_or(p)
    };
    let Ok(magic) = fsbench_base::sys::fsmagic::of_path(dir) else {
        return "this file system".into();
    };
    let Some(name) = fsbench_base::sys::fsmagic::known(magic) else {
        return format!("this file system (type 0x{magic:x})");
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
    if err.raw_os_error() == Some(libc::ELOOP) {
        s.push_str(
            " (a symbolic link inside the run directory: fsbench never follows links there)",
        );
    }
    if err.raw_os_error() == Some(libc::EMFILE) {
        s.push_str(" (too many open files: raise `ulimit -n`)");
    }
    s
}
