//! The short path for plain reads and writes.
//!
//! A `read` or `write` whose size, working set and stride are constants and that asks for
//! nothing beyond moving bytes (no mmap, direct I/O, verification, shaped content, process
//! counters or run-wide pacing) is what most random-I/O workloads run millions of times a
//! second. [`Worker::plain_io`] does exactly what the general path (`op_read`) does for
//! such a flowop — the same offsets and buffer places drawn from the same generator in the
//! same order, the same counts, the same errors — with what can be settled once settled
//! once, when the worker starts. Anything it cannot do (a closed slot, a buffer to grow)
//! it leaves to the general path, which then runs as if this one did not exist.

use super::{Flow, Shared, Worker};
use fsbench_base::sys::io;
use fsbench_model::model::{Flowop, FlowopKind, Num, Thread};

/// Latencies a plain flowop keeps before counting them into the histograms: more than the
/// general path's [`fsbench_results::stats::LAT_BATCH`], since between two batches the kernel's copies
/// push the histograms' counts out of the caches and each batch fetches them again (16 KiB
/// per thread and plain flowop).
const PLAIN_LAT_BATCH: usize = 2048;

/// What a plain read or write needs per operation, fixed when the worker starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Plain {
    write: bool,
    iosize: usize,
    /// The constant working set; 0 means the planned size of the slot's file.
    ws: u64,
    random: bool,
    slot: usize,
}

impl Plain {
    /// The plain form of `f`, if it has one; `writes_plain` says whether writes in this
    /// run need no content shaping (every fileset's content is plain random).
    pub(super) fn of(f: &Flowop, writes_plain: bool) -> Option<Plain> {
        let write = match f.kind {
            FlowopKind::Read => false,
            FlowopKind::Write if writes_plain && f.content.is_none() => true,
            _ => return None,
        };
        if f.mmap || f.directio || f.sameoffset || f.verify || f.opennext {
            return None;
        }
        let (Num::Const(iosize), Num::Const(ws), Num::Const(0)) =
            (&f.iosize, &f.workingset, &f.stride)
        else {
            return None;
        };
        if *iosize <= 0 {
            return None;
        }
        Some(Plain {
            write,
            iosize: *iosize as usize,
            ws: (*ws).max(0) as u64,
            random: f.random,
            slot: match f.fd {
                Some(n) if n > 0 => n,
                _ => 0,
            },
        })
    }

    /// Per statistic, the plain form shared by every flowop of `thread` that reports under
    /// it (none where two differ), or none at all when the run needs more per operation.
    pub(super) fn for_thread(sh: &Shared<'_>, thread: &Thread) -> Vec<Option<Plain>> {
        let n = sh.wl.stat_names.len();
        fn walk(fs: &[Flowop], out: &mut Vec<(usize, Option<Plain>)>, writes_plain: bool) {
            for f in fs {
                out.push((f.stat, Plain::of(f, writes_plain)));
                walk(&f.children, out, writes_plain);
            }
        }
        fn any_aio(fs: &[Flowop]) -> bool {
            fs.iter()
                .any(|f| f.kind == FlowopKind::AioWrite || any_aio(&f.children))
        }
        // FSBENCH_SHORT_PATH=0 sends every operation down the general path (to compare).
        let off = std::env::var_os("FSBENCH_SHORT_PATH").is_some_and(|v| v == "0");
        // Over NFS every operation takes the general path (see `remote`), as does every
        // read whose page-cache state is asked first (`--cache-stat`).
        if off
            || sh.nfs.is_some()
            || sh.whole_flowop
            || sh.cache_stat
            || sh.count_procs
            || sh.pacing.count_run
            || sh.verify.on()
            || any_aio(&thread.flowops)
        {
            return vec![None; n];
        }
        let writes_plain = sh.filesets.iter().all(|fs| fs.content.is_random());
        let mut all = Vec::new();
        walk(&thread.flowops, &mut all, writes_plain);
        let mut out: Vec<Option<Option<Plain>>> = vec![None; n];
        for (stat, p) in all {
            let o = &mut out[stat];
            *o = match *o {
                None => Some(p),
                Some(q) if q == p => Some(q),
                Some(_) => Some(None),
            };
        }
        out.into_iter().map(Option::flatten).collect()
    }
}

impl<'a> Worker<'a> {
    /// When every flowop of the thread is a plain read or write run a constant number of
    /// times (at least once): each with its plain form and count, for [`Self::run_plain`].
    pub(super) fn plain_loop(&self) -> Option<Vec<(&'a Flowop, Plain, i64)>> {
        let thread: &'a Thread = self.thread;
        if thread.flowops.is_empty() {
            return None;
        }
        thread
            .flowops
            .iter()
            .map(|f| match (self.plain[f.stat], &f.iters) {
                (Some(p), Num::Const(n)) if *n >= 1 && f.kind != FlowopKind::Composite => {
                    Some((f, p, *n))
                }
                _ => None,
            })
            .collect()
    }

    /// The thread's loop over plain flowops: what `run` and `run_flowop` do for them,
    /// without looking each flowop's form up again at every operation.
    pub(super) fn run_plain(&mut self, ops: &[(&'a Flowop, Plain, i64)]) -> Flow {
        let ctl: &'a super::super::Control = self.sh.ctl;
        loop {
            for &(f, p, iters) in ops {
                for _ in 0..iters {
                    if !self.take_control(ctl.word()) {
                        return Flow::Stop;
                    }
                    let r = match self.plain_io(f, p) {
                        Some(r) => r,
                        None => self.exec(f),
                    };
                    if r != Flow::Continue {
                        return r;
                    }
                }
            }
        }
    }

    /// Run `f` by its plain form `p`; `None` (before anything is done) when the general
    /// path must run it instead.
    #[inline]
    pub(super) fn plain_io(&mut self, f: &Flowop, p: Plain) -> Option<Flow> {
        let s = &self.slots[p.slot];
        let fd = s.fd;
        let skew = self.skew(p.slot);
        if fd < 0 || p.iosize + skew > self.buf.len() || self.aio.is_some() {
            return None;
        }
        let wss = if !p.random {
            0
        } else if p.ws > 0 {
            p.ws
        } else {
            s.file_size()
        };
        let seq_off = s.off;
        // The same draws, in the same order, as the general path.
        let boff = self.buffer_place(p.iosize, skew);
        let off = if p.random {
            self.random_offset(wss, p.iosize as u64)
        } else {
            seq_off
        };
        let ptr = self.buf.as_mut_slice()[boff..boff + p.iosize].as_mut_ptr();
        let t0 = self.clock.now();
        // SAFETY: ptr is valid for iosize bytes of the worker's buffer.
        let r = unsafe {
            if p.write {
                io::raw_pwrite(fd, ptr, p.iosize, off)
            } else {
                io::raw_pread(fd, ptr, p.iosize, off)
            }
        };
        let ns = self.clock.since(t0);
        if r < 0 {
            let e = std::io::Error::last_os_error();
            let fail = self.rw_error(f, p.slot, off, e);
            return Some(self.settle(f, Err(fail)));
        }
        let n = r as u64;
        // Plain forms exist only in runs without process counters or run-wide pacing.
        self.tally(f.stat, ns, n, PLAIN_LAT_BATCH);
        let s = &mut self.slots[p.slot];
        s.last_off = off;
        if !p.random {
            s.off = if n == 0 { 0 } else { off + n };
        }
        Some(Flow::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flowop(kind: FlowopKind) -> Flowop {
        let src = fsbench_model::lang::SourceFile::new(
            "t.f",
            "define fileset name=f,path=/tmp,entries=1,dirwidth=10,size=1m\n\
             define process name=p {\n thread name=t {\n  flowop read name=r,filesetname=f,iosize=4k,random\n }\n}\n",
        );
        let script = fsbench_model::lang::parse(&src).expect("parses");
        let wl = fsbench_model::model::build::build("t", &src, &script, &Default::default())
            .expect("builds");
        let mut f = wl.processes[0].threads[0].flowops[0].clone();
        f.kind = kind;
        f
    }

    #[test]
    fn plain_forms() {
        let r = flowop(FlowopKind::Read);
        let p = Plain::of(&r, true).expect("a random 4k read is plain");
        assert!(p.random && !p.write && p.iosize == 4096 && p.slot == 0 && p.ws == 0);
        // Writes are plain only when nothing shapes their content.
        assert!(Plain::of(&flowop(FlowopKind::Write), true).is_some());
        assert!(Plain::of(&flowop(FlowopKind::Write), false).is_none());
        assert!(Plain::of(&flowop(FlowopKind::AioWrite), true).is_none());
        let mut m = r.clone();
        m.mmap = true;
        assert!(Plain::of(&m, true).is_none());
        let mut d = r.clone();
        d.directio = true;
        assert!(Plain::of(&d, true).is_none());
        let mut v = r.clone();
        v.iosize = Num::Rand(0);
        assert!(Plain::of(&v, true).is_none());
        let mut st = r.clone();
        st.stride = Num::Const(8192);
        assert!(Plain::of(&st, true).is_none());
        let mut fd = r;
        fd.fd = Some(3);
        assert_eq!(Plain::of(&fd, true).map(|p| p.slot), Some(3));
    }
}
