//! Synchronisation and pacing: aiowait, semaphores, block/wakeup, event and rate limits, think times.

use super::{Fail, Flow, Worker};
use fsbench_model::model::{Flowop, FlowopKind};
use std::sync::atomic::Ordering;
use std::time::Duration;
use FlowopKind::*;

impl Worker<'_> {
    pub(super) fn op_aiowait(&mut self, f: &Flowop) -> Result<Flow, Fail> {
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

    pub(super) fn op_semblock(&mut self, f: &Flowop) -> Result<Flow, Fail> {
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

    pub(super) fn op_sempost(&mut self, f: &Flowop) -> Result<Flow, Fail> {
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

    pub(super) fn op_block(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let t0 = self.clock.now();
        if let Some(c) = self.sh.pacing.cond(&f.name) {
            if !c.wait(self.sh.ctl) {
                return Ok(Flow::Stop);
            }
        }
        self.done(f, self.clock.since(t0), 0);
        Ok(Flow::Continue)
    }

    pub(super) fn op_wakeup(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let t0 = self.clock.now();
        if let Some(c) = self.sh.pacing.cond(f.target.as_deref().unwrap_or_default()) {
            c.broadcast();
        }
        self.done(f, self.clock.since(t0), 0);
        Ok(Flow::Continue)
    }

    pub(super) fn op_eventlimit(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let Some(eg) = &self.sh.pacing.events else {
            // No eventgen rate: unlimited, nothing to wait for, and (as Filebench) not an
            // operation: it returns before its endop.
            return Ok(Flow::Continue);
        };
        let t0 = self.clock.now();
        if !eg.take(1, self.sh.ctl) {
            return Ok(Flow::Stop);
        }
        self.done(f, self.clock.since(t0), 0);
        Ok(Flow::Continue)
    }

    pub(super) fn op_iopslimit(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let Some(eg) = &self.sh.pacing.events else {
            // Not counted without an eventgen, as in Filebench.
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
            // Filebench's first call only notes the count and returns before its endop.
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

    pub(super) fn op_think(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let us = self.num(&f.value).max(0) as u64;
        let t0 = self.clock.now();
        if !self.sleep(Duration::from_micros(us)) {
            return Ok(Flow::Stop);
        }
        self.done(f, self.clock.since(t0), 0);
        Ok(Flow::Continue)
    }
}
