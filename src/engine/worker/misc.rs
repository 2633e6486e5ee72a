//! CPU, time and control flowops: hog, delay, print, testrandvar, finishoncount, finishonbytes.

use super::*;
use FlowopKind::*;

impl Worker<'_> {
    pub(super) fn op_hog(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let n = self.num(&f.value).max(0) as u64;
        let t0 = self.clock.now();
        let ctl = self.sh.ctl;
        let b = self.buf.as_mut_slice();
        let len = b.len();
        let mut k = 0usize;
        for i in 0..n {
            // One memory write per iteration, as Filebench's hog does.
            b[k] = b[k].wrapping_add(1);
            std::hint::black_box(&b[k]);
            k += 64;
            if k >= len {
                k = 0;
            }
            // A huge hog must not outlive the run.
            if i & 0xffff == 0xffff && ctl.stopping() {
                return Ok(Flow::Stop);
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
        crate::say!("message from thread {}: {} {v}", self.thread.name, f.name);
        self.done(f, 0, 0);
        Ok(Flow::Continue)
    }

    pub(super) fn op_testrandvar(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let v = match f.value {
            crate::model::Num::Rand(i) => self.sh.wl.randvars[i].rv.sample(&mut self.rngs[i]),
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
        Ok(if finished { Flow::Done } else { Flow::Continue })
    }
}
