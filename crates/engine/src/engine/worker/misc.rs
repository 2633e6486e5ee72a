//! CPU, time and control flowops: hog, delay, print, testrandvar, finishoncount, finishonbytes.

use super::{Fail, Flow, Worker};
use fsbench_model::model::{Flowop, FlowopKind};
use std::sync::atomic::Ordering;
use std::time::Duration;
use FlowopKind::*;

impl Worker<'_> {
    pub(super) fn op_hog(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let n = self.num(&f.value).max(0) as u64;
        let t0 = self.clock.now();
        let ctl = self.sh.ctl;
        if let Some(first) = self.buf.as_mut_slice().first_mut() {
            // As Filebench's hog (see `hog_loop`); not a walk over memory, which costs
            // cache misses Filebench's loop does not. A huge hog checks for the end of the
            // run between chunks.
            let p: *mut u8 = first;
            let mut left = n;
            while left > 0 {
                let chunk = left.min(1 << 16);
                hog_loop(&p, chunk as u32);
                left -= chunk;
                if left > 0 && ctl.stopping() {
                    return Ok(Flow::Stop);
                }
            }
        }
        self.done(f, self.clock.since(t0), 0);
        Ok(Flow::Continue)
    }

    pub(super) fn op_delay(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let secs = self.num(&f.value).max(0) as u64;
        let t0 = self.clock.now();
        if !self.sleep(Duration::from_secs(secs)) {
            return Ok(Flow::Stop);
        }
        self.done(f, self.clock.since(t0), 0);
        Ok(Flow::Continue)
    }

    pub(super) fn op_print(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let v = self.num(&f.value);
        fsbench_base::say!("message from thread {}: {} {v}", self.thread.name, f.name);
        self.done(f, 0, 0);
        Ok(Flow::Continue)
    }

    pub(super) fn op_testrandvar(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let v = match f.value {
            fsbench_model::model::Num::Rand(i) => {
                self.sh.wl.randvars[i].rv.sample(&mut self.rngs[i])
            }
            fsbench_model::model::Num::Const(c) => c as f64,
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

    pub(super) fn op_finishoncount(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let limit = self.num(&f.value).max(0) as u64;
        let count = f.kind == FinishOnCount;
        let have = match &f.target {
            Some(_) => {
                let id = self.target_stat(f).unwrap_or(0);
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
        // As Filebench: every call, the last one included, is an operation of its own
        // (and, without a target, counts toward the process's total it compares against).
        self.done(f, 0, 0);
        if finished {
            self.finished_by = Some(f.stat);
            return Ok(Flow::Done);
        }
        Ok(Flow::Continue)
    }
}

/// `n` (≥ 1) iterations of Filebench's hog loop, `for (i = 0; i < value; i++)
/// *(threadflow->tf_mem) = 1;`, which its compiler turns into a load of the pointer, a
/// one-byte store, an add and a compare-and-branch per iteration: the same instructions
/// here, so an iteration costs what it costs in Filebench (a loop the compiler may unroll
/// runs about twice as fast, and oltp's throughput follows the hog's cost).
#[inline(never)]
fn hog_loop(cell: &*mut u8, n: u32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `cell` holds a pointer into the calling thread's own buffer, alive for the
    // call; the loop stores one byte there and touches nothing else.
    unsafe {
        std::arch::asm!(
            "2:",
            "mov {t}, qword ptr [{cell}]",
            "mov byte ptr [{t}], 1",
            "add {i:e}, 1",
            "cmp {i:e}, {n:e}",
            "jne 2b",
            cell = in(reg) cell as *const *mut u8,
            t = out(reg) _,
            i = inout(reg) 0u32 => _,
            n = in(reg) n,
            options(nostack),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    for _ in 0..n {
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(std::ptr::read_volatile(cell), 1) };
    }
}
