//! The operation timer. Two clock reads bracket every measured system call, so their cost is
//! part of the tool's overhead: `clock_gettime(CLOCK_MONOTONIC)` costs about 30 ns on a VM,
//! `rdtsc` about half that. Where the time-stamp counter is constant, non-stop and the
//! kernel's own clock source, fsbench reads it directly and converts ticks to nanoseconds
//! with a factor calibrated against CLOCK_MONOTONIC at start; elsewhere it uses
//! `std::time::Instant`. `FSBENCH_CLOCK=monotonic` forces the portable clock.

use std::time::Instant;

/// A timestamp: TSC ticks, or nanoseconds since the clock's origin.
pub type Stamp = u64;

#[derive(Debug, Clone, Copy)]
pub struct Clock {
    kind: Kind,
    origin: Instant,
    /// Nanoseconds per tick in 32.32 fixed point (TSC only).
    mult: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tsc,
    Monotonic,
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86_64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rdtsc() -> u64 {
    0
}

fn tsc_reliable() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    if std::env::var("FSBENCH_CLOCK").is_ok_and(|v| v == "monotonic") {
        return false;
    }
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let source =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    flags.contains("constant_tsc") && flags.contains("nonstop_tsc") && source.trim() == "tsc"
}

impl Clock {
    /// Choose and calibrate the clock (about 20 ms when the TSC is used).
    pub fn new() -> Clock {
        let origin = Instant::now();
        if !tsc_reliable() {
            return Clock {
                kind: Kind::Monotonic,
                origin,
                mult: 0,
            };
        }
        let (i0, t0) = (Instant::now(), rdtsc());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (i1, t1) = (Instant::now(), rdtsc());
        let ns = (i1 - i0).as_nanos() as f64;
        let ticks = t1.wrapping_sub(t0) as f64;
        if ticks <= 0.0 || ns <= 0.0 {
            return Clock {
                kind: Kind::Monotonic,
                origin,
                mult: 0,
            };
        }
        Clock {
            kind: Kind::Tsc,
            origin,
            mult: (ns / ticks * (1u64 << 32) as f64) as u64,
        }
    }

    /// The portable clock, whatever the hardware.
    pub fn monotonic() -> Clock {
        Clock {
            kind: Kind::Monotonic,
            origin: Instant::now(),
            mult: 0,
        }
    }

    pub fn name(&self) -> &'static str {
        match self.kind {
            Kind::Tsc => "tsc",
            Kind::Monotonic => "monotonic",
        }
    }

    #[inline(always)]
    pub fn now(&self) -> Stamp {
        match self.kind {
            Kind::Tsc => rdtsc(),
            Kind::Monotonic => self.origin.elapsed().as_nanos() as u64,
        }
    }

    /// Nanoseconds from `start` to now.
    #[inline(always)]
    pub fn since(&self, start: Stamp) -> u64 {
        self.delta(start, self.now())
    }

    /// Nanoseconds between two stamps.
    #[inline(always)]
    pub fn delta(&self, a: Stamp, b: Stamp) -> u64 {
        let d = b.saturating_sub(a);
        match self.kind {
            Kind::Tsc => ((d as u128 * self.mult as u128) >> 32) as u64,
            Kind::Monotonic => d,
        }
    }
}

/// The process's clock, chosen and calibrated once.
pub fn global() -> &'static Clock {
    static CLOCK: std::sync::OnceLock<Clock> = std::sync::OnceLock::new();
    CLOCK.get_or_init(Clock::new)
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// What timing and recording one operation costs on this machine.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Calibration {
    pub clock: String,
    /// One clock read.
    pub timer_ns: f64,
    /// One histogram record with counters.
    pub record_ns: f64,
    /// Two clock reads and one record: what fsbench adds to each measured operation.
    pub overhead_ns_per_op: f64,
}

impl Calibration {
    /// Measure on the calling thread (a few milliseconds).
    pub fn measure(clock: &Clock) -> Calibration {
        const N: u64 = 200_000;
        let mut sink = 0u64;
        let t0 = Instant::now();
        for _ in 0..N {
            sink = sink.wrapping_add(std::hint::black_box(clock.now()));
        }
        let timer_ns = t0.elapsed().as_nanos() as f64 / N as f64;
        // As a worker records an operation: counted, its latency kept in a batch, the batch
        // counted into the interval's histogram and the run's HDR counts when full.
        let mut rec = super::OpRecorder::default();
        let mut batch = Vec::new();
        let mut interval = super::loghist::LogHist::default();
        let mut run = super::HdrCounts::default();
        let t0 = Instant::now();
        for i in 0..N {
            let ns = std::hint::black_box(500 + (i & 1023) * 7);
            rec.tally(ns, 4096);
            batch.push(ns);
            if batch.len() >= super::LAT_BATCH {
                for &v in &batch {
                    interval.record(v);
                    run.record(v);
                }
                batch.clear();
            }
        }
        let record_ns = t0.elapsed().as_nanos() as f64 / N as f64;
        std::hint::black_box((&rec, &interval, &run));
        std::hint::black_box(sink);
        Calibration {
            clock: clock.name().to_string(),
            timer_ns,
            record_ns,
            overhead_ns_per_op: 2.0 * timer_ns + record_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_agrees_with_instant() {
        for c in [Clock::new(), Clock::monotonic()] {
            let i0 = Instant::now();
            let s0 = c.now();
            std::thread::sleep(std::time::Duration::from_millis(30));
            let ns = c.since(s0) as f64;
            let real = i0.elapsed().as_nanos() as f64;
            assert!(
                (ns / real - 1.0).abs() < 0.05,
                "{}: {ns} vs {real}",
                c.name()
            );
        }
    }

    #[test]
    fn calibration_is_positive() {
        let cal = Calibration::measure(&Clock::new());
        assert!(cal.timer_ns > 0.0 && cal.record_ns > 0.0);
        assert!(cal.overhead_ns_per_op > cal.timer_ns);
    }
}
