//! `psrun [period]`: a per-flowop block printed every `period` seconds during the run.
//!
//! Only when the workload asks for it, each worker publishes its cumulative per-flowop
//! counters (ops, bytes, latency sum) into its own row of atomics after each operation (plain
//! stores to a row no other thread writes). The run loop sums the rows every period and prints
//! the difference from the previous period. A negative period (Filebench: "reset the
//! statistics every period") prints the same per-period figures; the final results always
//! cover the whole run.

use crate::model::{FlowopKind, IoClass, Workload};
use crate::stats::OpRecorder;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
pub struct LiveOp {
    ops: AtomicU64,
    bytes: AtomicU64,
    lat_ns: AtomicU64,
}

/// One row of published counters per worker.
#[derive(Debug, Default)]
pub struct Live {
    rows: Vec<Vec<LiveOp>>,
}

impl Live {
    pub fn new(workers: usize, stats: usize) -> Live {
        Live {
            rows: (0..workers)
                .map(|_| (0..stats).map(|_| LiveOp::default()).collect())
                .collect(),
        }
    }

    pub fn row(&self, worker: usize) -> Option<&[LiveOp]> {
        self.rows.get(worker).map(|r| r.as_slice())
    }

    fn totals(&self, stats: usize) -> Vec<(u64, u64, u64)> {
        let mut t = vec![(0, 0, 0); stats];
        for r in &self.rows {
            for (i, o) in r.iter().enumerate() {
                t[i].0 += o.ops.load(Ordering::Relaxed);
                t[i].1 += o.bytes.load(Ordering::Relaxed);
                t[i].2 += o.lat_ns.load(Ordering::Relaxed);
            }
        }
        t
    }
}

/// Publish a worker's cumulative counters for one flowop.
#[inline]
pub fn publish(row: &[LiveOp], stat: usize, rec: &OpRecorder) {
    let o = &row[stat];
    o.ops.store(rec.count, Ordering::Relaxed);
    o.bytes.store(rec.bytes, Ordering::Relaxed);
    o.lat_ns.store(rec.lat_sum_ns, Ordering::Relaxed);
}

/// Prints a block each period.
pub struct Reporter {
    period: Duration,
    t0: Instant,
    next: Instant,
    prev: Vec<(u64, u64, u64)>,
}

impl Reporter {
    /// A reporter when the workload has `psrun`, starting its clock now.
    pub fn new(wl: &Workload) -> Option<Reporter> {
        let p = wl.psrun_period?.unsigned_abs();
        let period = Duration::from_secs(p.max(1));
        let t0 = Instant::now();
        Some(Reporter {
            period,
            t0,
            next: t0 + period,
            prev: vec![(0, 0, 0); wl.stat_names.len()],
        })
    }

    /// Print a block if a period has passed.
    pub fn poll(&mut self, live: &Live, names: &[(String, FlowopKind)]) {
        let now = Instant::now();
        if now < self.next {
            return;
        }
        let secs = (now - (self.next - self.period)).as_secs_f64();
        self.next += self.period;
        let cur = live.totals(names.len());
        let at = (now - self.t0).as_secs_f64();
        let mut out = format!("{at:.3}: Per-Operation Breakdown (last {secs:.1} s)\n");
        let (mut ops, mut rd, mut wr, mut bytes, mut lat) = (0u64, 0u64, 0u64, 0u64, 0u64);
        for (i, (name, kind)) in names.iter().enumerate() {
            let d = (
                cur[i].0 - self.prev[i].0,
                cur[i].1 - self.prev[i].1,
                cur[i].2 - self.prev[i].2,
            );
            let mean_ms = if d.0 > 0 {
                d.2 as f64 / d.0 as f64 / 1e6
            } else {
                0.0
            };
            out.push_str(&format!(
                "{name:<20} {:>8}ops {:>8.0}ops/s {:>6.1}mb/s {:>8.3}ms/op\n",
                d.0,
                d.0 as f64 / secs,
                d.1 as f64 / secs / 1048576.0,
                mean_ms
            ));
            match kind.io_class() {
                IoClass::None => continue,
                IoClass::Read => rd += d.0,
                IoClass::Write => wr += d.0,
                IoClass::Meta => {}
            }
            ops += d.0;
            bytes += d.1;
            lat += d.2;
        }
        out.push_str(&format!(
            "{at:.3}: IO Summary: {ops} ops {:.3} ops/s {:.0}/{:.0} rd/wr {:.1}mb/s {:.3}ms/op\n",
            ops as f64 / secs,
            rd as f64 / secs,
            wr as f64 / secs,
            bytes as f64 / secs / 1048576.0,
            if ops > 0 {
                lat as f64 / ops as f64 / 1e6
            } else {
                0.0
            }
        ));
        print!("{out}");
        self.prev = cur;
    }
}
