//! Measurement: per-thread recorders on the hot path, merged into one [`Results`] value.
//!
//! A worker owns its [`Recorder`]: one slot per distinct flowop name, each with counters and an
//! HDR histogram of latencies in nanoseconds (3 significant digits, growing as needed). Nothing
//! on the recording path is shared between threads.

pub mod build_info;
pub mod clock;
pub mod host;
pub mod loghist;
pub mod repeat;
pub mod results;

pub use results::*;

use hdrhistogram::Histogram;

/// Counters and latency histogram of one flowop in one thread.
#[derive(Debug, Clone)]
pub struct OpRecorder {
    pub count: u64,
    pub bytes: u64,
    pub errors: u64,
    /// Times the flowop could not get a file or directory in the state it needs.
    pub no_resource: u64,
    pub lat_sum_ns: u64,
    pub hist: Histogram<u64>,
    pub first_error: Option<String>,
    /// CPU time (user + system) apportioned to this flowop, in nanoseconds.
    pub cpu_ns: f64,
}

/// The largest latency a histogram holds (one hour); longer ones are recorded as an hour.
pub const MAX_RECORDED_NS: u64 = 3_600_000_000_000;

impl Default for OpRecorder {
    fn default() -> Self {
        OpRecorder {
            count: 0,
            bytes: 0,
            errors: 0,
            no_resource: 0,
            lat_sum_ns: 0,
            hist: Histogram::new(3).expect("3 significant digits is valid"),
            first_error: None,
            cpu_ns: 0.0,
        }
    }
}

impl OpRecorder {
    /// Record one completed operation.
    #[inline]
    pub fn record(&mut self, ns: u64, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
        self.lat_sum_ns += ns;
        // Auto-resizing histogram: only a new order of magnitude allocates. Latencies are
        // clamped to an hour, so a histogram never grows past about 270 KiB however long the
        // run (what a long run's memory grows by is its histograms' counters being touched
        // for the first time, bounded by threads x flowops x that size).
        let _ = self.hist.record(ns.clamp(1, MAX_RECORDED_NS));
    }

    #[cold]
    pub fn error(&mut self, msg: impl FnOnce() -> String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(msg());
        }
    }

    pub fn merge(&mut self, o: &OpRecorder) {
        self.count += o.count;
        self.bytes += o.bytes;
        self.errors += o.errors;
        self.no_resource += o.no_resource;
        self.lat_sum_ns += o.lat_sum_ns;
        self.cpu_ns += o.cpu_ns;
        let _ = self.hist.add(&o.hist);
        if self.first_error.is_none() {
            self.first_error.clone_from(&o.first_error);
        }
    }
}

/// Everything one worker thread measured.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    /// Indexed by the workload's `stat_names`.
    pub ops: Vec<OpRecorder>,
    /// User and system CPU seconds this thread used while measuring.
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
}

impl Recorder {
    pub fn new(n: usize) -> Recorder {
        Recorder {
            ops: (0..n).map(|_| OpRecorder::default()).collect(),
            ..Default::default()
        }
    }

    pub fn merge(&mut self, o: &Recorder) {
        if self.ops.len() < o.ops.len() {
            self.ops.resize_with(o.ops.len(), OpRecorder::default);
        }
        for (a, b) in self.ops.iter_mut().zip(&o.ops) {
            a.merge(b);
        }
        self.cpu_user_s += o.cpu_user_s;
        self.cpu_sys_s += o.cpu_sys_s;
    }

    pub fn reset(&mut self) {
        for o in &mut self.ops {
            *o = OpRecorder::default();
        }
        self.cpu_user_s = 0.0;
        self.cpu_sys_s = 0.0;
    }
}

/// CPU time of the calling thread: (user, system) seconds.
pub fn thread_cpu() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        (t(ru.ru_utime), t(ru.ru_stime))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_and_merge() {
        let mut a = Recorder::new(2);
        let mut b = Recorder::new(2);
        for i in 1..=1000 {
            a.ops[0].record(i * 1000, 10);
        }
        b.ops[0].record(5_000_000, 10);
        b.ops[1].error(|| "boom".into());
        a.merge(&b);
        assert_eq!(a.ops[0].count, 1001);
        assert_eq!(a.ops[0].bytes, 10010);
        assert_eq!(
            a.ops[0].hist.max(),
            a.ops[0].hist.highest_equivalent(5_000_000)
        );
        let p50 = a.ops[0].hist.value_at_quantile(0.5);
        assert!((499_000..=502_000).contains(&p50), "{p50}");
        assert_eq!(a.ops[1].errors, 1);
        assert_eq!(a.ops[1].first_error.as_deref(), Some("boom"));
    }
}
