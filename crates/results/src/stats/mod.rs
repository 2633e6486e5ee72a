//! Measurement: per-thread recorders on the hot path, merged into one [`Results`] value.
//!
//! A worker owns its [`Recorder`]: one slot per distinct flowop name, each with counters and an
//! HDR histogram of latencies in nanoseconds (3 significant digits, growing as needed). Nothing
//! on the recording path is shared between threads, except that workload runs add their
//! latencies in batches to one [`SharedHists`] histogram per flowop (see there why).

pub mod build_info;
pub mod clock;
pub mod fiojob;
pub mod host;
pub mod loghist;
pub mod modes;
pub mod ranks;
pub mod ratio;
pub mod repeat;
mod results;
pub mod rpcs;
pub mod shares;

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
    /// Times the flowop passed over its file as Filebench does, not an operation: a
    /// `deletefile` whose file another thread has open.
    pub skipped: u64,
    pub lat_sum_ns: u64,
    /// Latencies in nanoseconds, in the buckets of an HDR histogram (see [`HdrCounts`]:
    /// nothing allocated until a latency is recorded, then only the ranges it falls in).
    pub hist: HdrCounts,
    pub first_error: Option<String>,
    /// CPU time (user + system) apportioned to this flowop, in nanoseconds.
    /// Asynchronous writes reaped (aiowrite: `count` is submissions, as in Filebench).
    pub completions: u64,
    /// Sum of their submission-to-completion times.
    pub completion_ns_sum: u64,
    /// `--cache-stat`: the pages its buffered reads read, and of those the pages the page
    /// cache held when each read began.
    pub cache_pages: u64,
    pub cache_hits: u64,
    pub cpu_ns: f64,
    /// `--verify`: blocks checked, mismatches (the first [`fsbench_model::verify::KEEP`] kept), and
    /// reads not checked because a write to the same file ran meanwhile.
    pub verify_blocks: u64,
    pub verify_mismatches: u64,
    pub verify_skipped: u64,
    pub mismatches: Vec<fsbench_model::verify::Mismatch>,
    /// Writes with a content setting: what was asked, and a sample of what was written.
    pub content: Option<fsbench_model::content::Content>,
    pub sample: Vec<u8>,
    /// Over NFS through the relay: the calls per procedure id (empty until one is counted).
    pub rpcs: Vec<fsbench_base::libnfs::rpc::ProcCount>,
}

/// Bytes of written data sampled per flowop and thread (for the achieved content).
pub const SAMPLE_BYTES: usize = 1 << 20;

/// The largest latency a histogram holds (one hour); longer ones are recorded as an hour.
pub const MAX_RECORDED_NS: u64 = 3_600_000_000_000;

impl Default for OpRecorder {
    fn default() -> Self {
        OpRecorder {
            count: 0,
            bytes: 0,
            errors: 0,
            no_resource: 0,
            skipped: 0,
            lat_sum_ns: 0,
            hist: HdrCounts::default(),
            first_error: None,
            completions: 0,
            completion_ns_sum: 0,
            cache_pages: 0,
            cache_hits: 0,
            cpu_ns: 0.0,
            verify_blocks: 0,
            verify_mismatches: 0,
            verify_skipped: 0,
            mismatches: Vec::new(),
            content: None,
            sample: Vec::new(),
            rpcs: Vec::new(),
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
        // Counted where an HDR histogram counts it: only a latency in a range of 64 buckets
        // never met before allocates (512 bytes). Latencies are clamped to an hour.
        self.hist.record(ns);
    }

    /// Count one completed operation whose latency goes to a [`SharedHists`] instead of
    /// this recorder's histogram.
    #[inline]
    pub fn tally(&mut self, ns: u64, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
        self.lat_sum_ns += ns;
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
        self.skipped += o.skipped;
        self.lat_sum_ns += o.lat_sum_ns;
        self.completions += o.completions;
        self.completion_ns_sum += o.completion_ns_sum;
        self.cache_pages += o.cache_pages;
        self.cache_hits += o.cache_hits;
        self.cpu_ns += o.cpu_ns;
        self.verify_blocks += o.verify_blocks;
        self.verify_mismatches += o.verify_mismatches;
        self.verify_skipped += o.verify_skipped;
        let room = fsbench_model::verify::KEEP.saturating_sub(self.mismatches.len());
        self.mismatches
            .extend(o.mismatches.iter().take(room).cloned());
        if self.content.is_none() {
            self.content = o.content;
        }
        let room = (4 * SAMPLE_BYTES).saturating_sub(self.sample.len());
        self.sample
            .extend_from_slice(&o.sample[..o.sample.len().min(room)]);
        self.hist.add(&o.hist);
        self.merge_rpcs(&o.rpcs);
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
    /// The fio job clones this thread ran (one at most), as fio's `thread_stat`.
    pub fio: Vec<fiojob::FioClone>,
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
        self.fio.extend(o.fio.iter().cloned());
    }

    pub fn reset(&mut self) {
        for o in &mut self.ops {
            *o = OpRecorder::default();
        }
        self.cpu_user_s = 0.0;
        self.cpu_sys_s = 0.0;
        self.fio.clear();
    }
}

/// Latencies a worker thread keeps before adding them to the run's [`SharedHists`].
pub const LAT_BATCH: usize = 256;

/// The run's latency histograms, one per flowop, into which every worker thread adds its
/// latencies in batches of [`LAT_BATCH`] (one lock per batch).
///
/// One full-precision histogram per thread and flowop would be thousands of them with many
/// threads, each touching new memory whenever a latency falls where it never fell before:
/// a long run's memory would keep growing. A histogram per flowop does that only until the
/// run has met its range of latencies, and the batches keep the lock off the hot path.
///
/// Each histogram belongs to a statistics generation (the control word's upper half): a
/// batch from a newer generation (after the warm-up) clears it first, one from an older
/// generation is dropped, as a worker's own counters are reset.
///
/// The slots count in the buckets of an HDR histogram of 3 significant digits from 1 ns
/// ([`HdrCounts`]) and become real HDR histograms when the run ends: recording into the
/// crate's histogram costs about 10 ns per latency, several times the counting here, and
/// each operation pays it.
pub struct SharedHists {
    slots: Vec<std::sync::Mutex<(u64, HdrCounts)>>,
}

/// Latency counts laid out as the buckets of an HDR histogram of 3 significant digits and
/// a lowest discernible value of 1 (2,048 sub-buckets, the top half of each bucket used
/// beyond the first), so that [`HdrCounts::to_hist`] gives the histogram that recording
/// the same values one by one gives.
///
/// Stored sparsely: a bucket counts alone (an index and a count) until [`PROMOTE`] buckets
/// of its chunk of [`CHUNK`] buckets have counted, then the chunk is allocated whole. A
/// dense HDR histogram of latencies up to a millisecond holds 11,000 counters (88 KiB); a
/// flowop's latencies fill a few chunks where they gather and leave single buckets in the
/// tail. With a chunk for every bucket met, a long run of 1,000 `statfile` flowops held
/// 44 KiB per flowop, most of it chunks holding one rare latency each.
#[derive(Debug, Default, Clone)]
pub struct HdrCounts {
    /// Per chunk of buckets: 0 when it has no chunk, else its place in `chunks` + 1.
    table: Vec<u32>,
    chunks: Vec<[u64; CHUNK]>,
    /// Buckets of chunks not allocated: (index, count), in order of index.
    single: Vec<(u32, u64)>,
}

/// Buckets per allocated chunk of an [`HdrCounts`].
const CHUNK: usize = 64;

/// Buckets of one chunk counted singly before the chunk is allocated (16 bytes each against
/// the chunk's 512).
const PROMOTE: usize = 8;

/// Sub-buckets per bucket of a 3-significant-digit HDR histogram, as a power of two halved.
const HDR_HALF_MAGNITUDE: u32 = 10;
const HDR_HALF: usize = 1 << HDR_HALF_MAGNITUDE;
const HDR_SUB_MASK: u64 = (2 * HDR_HALF as u64) - 1;

impl HdrCounts {
    #[inline]
    fn index(v: u64) -> usize {
        // The bucket: how many powers of two `v` is above what fits in the first one.
        let b = (63 - HDR_HALF_MAGNITUDE) - (v | HDR_SUB_MASK).leading_zeros();
        let sub = (v >> b) as usize;
        (((b + 1) as usize) << HDR_HALF_MAGNITUDE) + sub - HDR_HALF
    }

    /// The lowest value counted at `i`.
    fn value_at(i: usize) -> u64 {
        let b = (i >> HDR_HALF_MAGNITUDE) as i64 - 1;
        let sub = (i & (HDR_HALF - 1)) + HDR_HALF;
        if b < 0 {
            (sub - HDR_HALF) as u64
        } else {
            (sub as u64) << b
        }
    }

    /// Count one latency (nanoseconds), clamped to 1 ns ..= [`MAX_RECORDED_NS`].
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    /// Count `n` latencies of `ns` nanoseconds (clamped as by [`HdrCounts::record`]).
    #[inline]
    pub fn record_n(&mut self, ns: u64, n: u64) {
        let i = Self::index(ns.clamp(1, MAX_RECORDED_NS));
        *self.slot(i) += n;
    }

    #[inline]
    fn slot(&mut self, i: usize) -> &mut u64 {
        if let Some(&t) = self.table.get(i / CHUNK) {
            if t > 0 {
                return &mut self.chunks[t as usize - 1][i % CHUNK];
            }
        }
        self.single_slot(i)
    }

    /// The counter of bucket `i` whose chunk is not allocated: its single entry, or the
    /// chunk made from its chunk's single entries once they would be [`PROMOTE`].
    #[cold]
    fn single_slot(&mut self, i: usize) -> &mut u64 {
        let c = i / CHUNK;
        let at = self.single.partition_point(|e| (e.0 as usize) < i);
        if self.single.get(at).is_some_and(|e| e.0 as usize == i) {
            return &mut self.single[at].1;
        }
        let lo = self.single.partition_point(|e| (e.0 as usize) < c * CHUNK);
        let hi = self
            .single
            .partition_point(|e| (e.0 as usize) < (c + 1) * CHUNK);
        if hi - lo + 1 < PROMOTE {
            self.single.insert(at, (i as u32, 0));
            return &mut self.single[at].1;
        }
        let mut chunk = [0u64; CHUNK];
        for (j, n) in self.single.drain(lo..hi) {
            chunk[j as usize % CHUNK] = n;
        }
        if c >= self.table.len() {
            self.table.resize(c + 1, 0);
        }
        self.chunks.push(chunk);
        self.table[c] = self.chunks.len() as u32;
        &mut self.chunks[self.table[c] as usize - 1][i % CHUNK]
    }

    /// Every counted bucket: (index, count), chunks first, then single buckets.
    fn iter(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.table
            .iter()
            .enumerate()
            .filter(|(_, &t)| t > 0)
            .flat_map(move |(c, &t)| {
                self.chunks[t as usize - 1]
                    .iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(move |(j, &n)| (c * CHUNK + j, n))
            })
            .chain(
                self.single
                    .iter()
                    .filter(|e| e.1 > 0)
                    .map(|&(i, n)| (i as usize, n)),
            )
    }

    /// Bytes held on the heap (what the memory estimate budgets per flowop).
    pub fn heap_bytes(&self) -> usize {
        self.table.capacity() * 4
            + self.chunks.capacity() * CHUNK * 8
            + self.single.capacity() * std::mem::size_of::<(u32, u64)>()
    }

    /// Latencies counted.
    pub fn len(&self) -> u64 {
        self.chunks.iter().flatten().sum::<u64>() + self.single.iter().map(|e| e.1).sum::<u64>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn reset(&mut self) {
        for c in &mut self.chunks {
            c.fill(0);
        }
        self.single.clear();
    }

    /// Add the counts of `o`.
    pub fn add(&mut self, o: &HdrCounts) {
        for (i, n) in o.iter() {
            *self.slot(i) += n;
        }
    }

    /// The HDR histogram of these counts (as large as the largest latency needs: made when
    /// results are computed, one flowop at a time).
    pub fn to_hist(&self) -> Histogram<u64> {
        let mut h = Histogram::new(3).expect("3 significant digits is valid");
        for (i, c) in self.iter() {
            let _ = h.record_n(Self::value_at(i), c);
        }
        h
    }
}

impl SharedHists {
    pub fn new(n: usize) -> SharedHists {
        SharedHists {
            slots: (0..n)
                .map(|_| std::sync::Mutex::new((0, HdrCounts::default())))
                .collect(),
        }
    }

    /// Add a batch of latencies (nanoseconds) of flowop `stat`, measured in `generation`.
    pub fn add(&self, stat: usize, generation: u64, ns: &[u64]) {
        let Some(slot) = self.slots.get(stat) else {
            return;
        };
        let mut g = slot.lock().unwrap_or_else(|e| e.into_inner());
        if g.0 < generation {
            g.1.reset();
            g.0 = generation;
        }
        if g.0 == generation {
            for &v in ns {
                g.1.record(v);
            }
        }
    }

    /// The counts of `generation` (empty for a flowop with none recorded in it).
    pub fn into_hists(self, generation: u64) -> Vec<HdrCounts> {
        self.slots
            .into_iter()
            .map(|m| {
                let (g, h) = m.into_inner().unwrap_or_else(|e| e.into_inner());
                if g == generation {
                    h
                } else {
                    HdrCounts::default()
                }
            })
            .collect()
    }
}

/// CPU time of the calling thread: (user, system) seconds.
pub fn thread_cpu() -> (f64, f64) {
    rusage_cpu(libc::RUSAGE_THREAD)
}

/// CPU time of this process, every thread's: (user, system) seconds.
pub fn process_cpu() -> (f64, f64) {
    rusage_cpu(libc::RUSAGE_SELF)
}

/// (user, system) CPU seconds of `who` (`RUSAGE_SELF`, `RUSAGE_THREAD`, `RUSAGE_CHILDREN`:
/// the children waited for so far).
pub fn rusage_cpu(who: libc::c_int) -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        (t(ru.ru_utime), t(ru.ru_stime))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hdr_counts_give_the_histogram_direct_recording_gives() {
        // Values across the whole range, each bucket edge and both clamps included.
        let mut vals: Vec<u64> = vec![0, 1, 2, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Spread over magnitudes: 1 ns .. beyond the recorded maximum.
            vals.push(x >> (x % 64).max(i % 23));
        }
        vals.push(MAX_RECORDED_NS);
        vals.push(MAX_RECORDED_NS + 1);
        vals.push(u64::MAX);
        let mut direct = Histogram::<u64>::new(3).unwrap();
        let mut counts = HdrCounts::default();
        for &v in &vals {
            direct.record(v.clamp(1, MAX_RECORDED_NS)).unwrap();
            counts.record(v);
        }
        let h = counts.to_hist();
        assert_eq!(counts.len(), vals.len() as u64);
        assert!(h == direct, "histograms differ");
        for q in [0.0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 0.99999, 1.0] {
            assert_eq!(h.value_at_quantile(q), direct.value_at_quantile(q), "q={q}");
        }
        assert_eq!(
            (h.min(), h.max(), h.len()),
            (direct.min(), direct.max(), direct.len())
        );
        assert_eq!(h.mean(), direct.mean());
        // Every index maps back to a value that maps to it.
        for i in 0..40_000 {
            assert_eq!(
                HdrCounts::index(HdrCounts::value_at(i).max(1)),
                i.max(1),
                "index {i}"
            );
        }
    }

    #[test]
    fn sparse_counts_merge_as_dense_histograms_do() {
        let mut a = HdrCounts::default();
        let mut b = HdrCounts::default();
        let mut direct = Histogram::<u64>::new(3).unwrap();
        for (i, v) in [3u64, 900, 70_000, 5_000_000, 70_001, 3, 1 << 40]
            .iter()
            .enumerate()
        {
            if i % 2 == 0 {
                a.record(*v);
            } else {
                b.record_n(*v, 3);
            }
            direct.record_n(*v, if i % 2 == 0 { 1 } else { 3 }).unwrap();
        }
        a.add(&b);
        assert!(a.to_hist() == direct);
        assert_eq!(a.len(), direct.len());
        // Nothing is allocated before a latency is counted, and a few latencies take a few
        // chunks.
        assert_eq!(HdrCounts::default().chunks.capacity(), 0);
        assert!(a.chunks.is_empty() && a.single.len() == 5, "{:?}", a.single);
        a.reset();
        assert!(a.is_empty() && a.to_hist().is_empty());
    }

    #[test]
    fn a_tail_of_rare_latencies_takes_single_buckets_and_a_body_takes_chunks() {
        let mut h = HdrCounts::default();
        let mut direct = Histogram::<u64>::new(3).unwrap();
        // A body around 1-3 us, every nanosecond met many times ...
        for r in 0..20 {
            for v in 1000..3000u64 {
                h.record(v + r);
                direct.record(v + r).unwrap();
            }
        }
        let body = h.heap_bytes();
        // ... and 2,000 rare latencies from 10 us to 10 ms, each in a bucket of its own.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = 10_000 + x % 9_990_000;
            h.record(v);
            direct.record(v).unwrap();
        }
        assert!(h.to_hist() == direct);
        assert_eq!(h.len(), direct.len());
        let tail = h.heap_bytes() - body;
        // A chunk per bucket met would be up to 2,000 x 512 bytes; single buckets cost 16
        // (a region promoted when it gathers PROMOTE of them).
        assert!(tail < 64 << 10, "the tail holds {tail} bytes");
        assert!(body < 40 << 10, "the body holds {body} bytes");
    }

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
        let h = a.ops[0].hist.to_hist();
        assert_eq!(h.max(), h.highest_equivalent(5_000_000));
        let p50 = h.value_at_quantile(0.5);
        assert!((499_000..=502_000).contains(&p50), "{p50}");
        assert_eq!(a.ops[1].errors, 1);
        assert_eq!(a.ops[1].first_error.as_deref(), Some("boom"));
    }

    #[test]
    fn shared_histograms_keep_the_newest_generation() {
        let s = SharedHists::new(2);
        s.add(0, 0, &[5, 6, 7]);
        s.add(1, 0, &[100]);
        // The warm-up ends: generation 1 clears flowop 0's histogram at its first batch...
        s.add(0, 1, &[1000, 2000]);
        // ... and a late batch of the warm-up is dropped.
        s.add(0, 0, &[9]);
        let h = s.into_hists(1);
        assert_eq!(h[0].len(), 2);
        assert_eq!(h[0].to_hist().min(), 1000);
        // Flowop 1 recorded nothing after the warm-up.
        assert_eq!(h[1].len(), 0);
    }
}
