//! A small log-linear latency histogram for time-series intervals: 16 sub-buckets per power
//! of two (values within about 6%), 1024 counters, recording in a couple of nanoseconds.
//! The full-precision HDR histogram keeps the run's percentiles; this one only has to give
//! each interval's p99 and mean cheaply, and be handed from worker to sampler by swapping.

const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = 64 * SUB;

/// Counters up to the highest bucket met so far (none until a value is recorded: a worker
/// and the sampler hold one per flowop, and a workload may have tens of thousands).
#[derive(Debug, Clone, Default)]
pub struct LogHist {
    counts: Vec<u32>,
    total: u64,
    sum: u64,
}

#[inline]
fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    (((msb - SUB_BITS + 1) as usize) << SUB_BITS) | ((v >> shift) as usize & (SUB - 1))
}

/// The highest value that falls in bucket `i`.
fn upper(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let group = (i >> SUB_BITS) as u32; // msb - SUB_BITS + 1
    let msb = group + SUB_BITS - 1;
    let shift = msb - SUB_BITS;
    let mantissa = (i & (SUB - 1)) as u64 | SUB as u64;
    ((mantissa + 1) << shift) - 1
}

impl LogHist {
    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.total += 1;
        self.sum += v;
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    pub fn reset(&mut self) {
        if self.total > 0 {
            self.counts.fill(0);
            self.total = 0;
            self.sum = 0;
        }
    }

    pub fn add(&mut self, o: &LogHist) {
        if o.total == 0 {
            return;
        }
        if self.counts.len() < o.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
        self.total += o.total;
        self.sum += o.sum;
    }

    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }

    /// The value at quantile `q` (0..=1): the upper edge of the bucket holding it.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            seen += *c as u64;
            if seen >= rank {
                return upper(i);
            }
        }
        upper(BUCKETS - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_within_seven_percent() {
        for v in [
            0u64,
            1,
            15,
            16,
            17,
            100,
            999,
            1000,
            123_456,
            10_000_000_000,
            u64::MAX / 2,
        ] {
            let i = index(v);
            assert!(upper(i) >= v, "{v}: upper {}", upper(i));
            if v >= 16 {
                assert!((upper(i) - v) as f64 / v as f64 <= 1.0 / 16.0 + 1e-9, "{v}");
            }
            if i > 0 {
                assert!(upper(i - 1) < v, "{v}");
            }
        }
    }

    #[test]
    fn quantiles_and_merge() {
        let mut a = LogHist::default();
        let mut b = LogHist::default();
        for v in 1..=990u64 {
            a.record(v * 1000);
        }
        for _ in 0..10 {
            b.record(50_000_000);
        }
        a.add(&b);
        let p50 = a.quantile(0.5) as f64;
        assert!((p50 / 495_000.0 - 1.0).abs() < 0.07, "{p50}");
        let p99 = a.quantile(0.99);
        assert!((990_000..=1_060_000).contains(&p99), "{p99}");
        assert!(a.quantile(1.0) >= 50_000_000);
        assert!((a.mean() - (495_500.0 * 990.0 + 5e8) / 1000.0).abs() < 1.0);
        a.reset();
        assert!(a.is_empty() && a.quantile(0.99) == 0);
    }
}
