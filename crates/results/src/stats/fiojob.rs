//! What a fio job's clone records as fio's `thread_stat` does: per direction its bytes and
//! I/Os, submission, completion and total latencies (count, min, max, mean and deviation,
//! and fio's own log-linear histogram, so that percentiles and `json+` bins are fio's), the
//! bandwidth and IOPS samples of every `bw_avg_time` (500 ms), its own runtime and CPU, the
//! queue depths it submitted at and the latency buckets. A clone's worker owns its record;
//! reports merge clones that report together ([`FioClone::merge`]). The log entries of
//! `write_*_log` ride along but are not serialized (they are written as fio's log files).

use serde::{Deserialize, Serialize};

/// fio's `FIO_IO_U_PLAT_BITS`: 64 bins per power of two, exact below 128 ns.
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// fio's `FIO_IO_U_PLAT_NR`: 29 groups of 64 bins.
pub const PLAT_NR: usize = 29 * PLAT_VAL as usize;

/// fio's `plat_val_to_idx`: the bin of a latency in ns.
pub fn plat_idx(ns: u64) -> usize {
    let msb = if ns == 0 { 0 } else { 63 - ns.leading_zeros() };
    if msb <= PLAT_BITS {
        return ns as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as u64) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (ns >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// fio's `plat_idx_to_val`: the value a bin stands for (its middle), in ns.
pub fn plat_val(idx: usize) -> u64 {
    let idx = idx as u64;
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS as u64);
    let k = idx % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// Count, min, max, mean and the sum of squared deviations (Welford, as fio's
/// `add_stat_sample`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Moments {
    pub n: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub s: f64,
}

impl Moments {
    #[inline]
    pub fn add(&mut self, v: f64) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        if self.n == 0 || v > self.max {
            self.max = v;
        }
        self.n += 1;
        let delta = v - self.mean;
        self.mean += delta / self.n as f64;
        self.s += delta * (v - self.mean);
    }

    /// fio's `sum_stat`: pooled moments of two sets of samples.
    pub fn merge(&mut self, o: &Moments) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        let n = (self.n + o.n) as f64;
        let delta = o.mean - self.mean;
        let mean = self.mean + delta * o.n as f64 / n;
        self.s += o.s + delta * delta * self.n as f64 * o.n as f64 / n;
        self.mean = mean;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.n += o.n;
    }

    /// Summed as rates of jobs running side by side (fio's `sum_stat` with `pure_sum`,
    /// for the bandwidth and IOPS samples of a group report).
    pub fn sum(&mut self, o: &Moments) {
        if self.n == 0 {
            *self = *o;
            return;
        }
        self.min += o.min;
        self.max += o.max;
        self.mean += o.mean;
        self.s += o.s;
        self.n = self.n.max(o.n);
    }

    /// fio's `calc_lat` deviation: over n - 1.
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            (self.s / (self.n - 1) as f64).sqrt()
        }
    }
}

/// fio's latency histogram: counts per bin, kept sparse in the results (bin, count).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plat(pub Vec<u64>);

impl Plat {
    #[inline]
    pub fn add(&mut self, ns: u64) {
        if self.0.is_empty() {
            self.0 = vec![0; PLAT_NR];
        }
        self.0[plat_idx(ns)] += 1;
    }

    pub fn merge(&mut self, o: &Plat) {
        if o.0.is_empty() {
            return;
        }
        if self.0.is_empty() {
            self.0 = vec![0; PLAT_NR];
        }
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a += b;
        }
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// fio's `calc_clat_percentiles`: for each percentile, the value of the first bin at
    /// which the running count reaches it.
    pub fn percentiles(&self, list: &[f64]) -> Vec<u64> {
        let nr = self.total() as f64;
        let mut out = vec![0; list.len()];
        let (mut sum, mut j) = (0u64, 0usize);
        for (i, c) in self.0.iter().enumerate() {
            sum += c;
            while j < list.len() && sum as f64 >= list[j] / 100.0 * nr {
                out[j] = plat_val(i);
                j += 1;
            }
            if j == list.len() {
                break;
            }
        }
        out
    }

    /// The bins holding samples: (value in ns, count), as `json+` writes them.
    pub fn bins(&self) -> Vec<(u64, u64)> {
        (self.0.iter().enumerate())
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (plat_val(i), *c))
            .collect()
    }
}

impl Serialize for Plat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let sparse: Vec<[u64; 2]> = (self.0.iter().enumerate())
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| [i as u64, *c])
            .collect();
        sparse.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Plat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Plat, D::Error> {
        let sparse = Vec::<[u64; 2]>::deserialize(d)?;
        let mut p = Plat::default();
        for [i, c] in sparse {
            if (i as usize) < PLAT_NR {
                if p.0.is_empty() {
                    p.0 = vec![0; PLAT_NR];
                }
                p.0[i as usize] += c;
            }
        }
        Ok(p)
    }
}

/// One direction (read or write) of a clone.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FioDir {
    pub io_bytes: u64,
    pub total_ios: u64,
    /// I/Os that moved fewer bytes than asked.
    pub short_ios: u64,
    /// How long the direction ran (fio's `runtime[ddir]`: the job's I/O phase, and for
    /// reads of a verifying writer also its verify phase), in ns.
    pub runtime_ns: u64,
    pub slat: Moments,
    pub clat: Moments,
    pub lat: Moments,
    pub slat_bins: Plat,
    pub clat_bins: Plat,
    pub lat_bins: Plat,
    /// Samples every `bw_avg_time` (KiB/s) and `iops_avg_time` (I/Os per second).
    pub bw: Moments,
    pub iops: Moments,
}

impl FioDir {
    pub fn merge(&mut self, o: &FioDir, side_by_side: bool) {
        self.io_bytes += o.io_bytes;
        self.total_ios += o.total_ios;
        self.short_ios += o.short_ios;
        self.runtime_ns = self.runtime_ns.max(o.runtime_ns);
        self.slat.merge(&o.slat);
        self.clat.merge(&o.clat);
        self.lat.merge(&o.lat);
        self.slat_bins.merge(&o.slat_bins);
        self.clat_bins.merge(&o.clat_bins);
        self.lat_bins.merge(&o.lat_bins);
        if side_by_side {
            self.bw.sum(&o.bw);
            self.iops.sum(&o.iops);
        } else {
            self.bw.merge(&o.bw);
            self.iops.merge(&o.iops);
        }
    }
}

/// What a verifying job checked: blocks, bad ones and the first bad one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FioVerify {
    pub blocks: u64,
    pub mismatches: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_bad: Option<(String, u64)>,
}

/// Index of fio's `io_u_map` bucket for a depth (1, 2, 4, 8, 16, 32, >=64).
pub fn depth_bucket(depth: u64) -> usize {
    match depth {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// Index of fio's `io_u_submit` / `io_u_complete` bucket (0, 4, 8, 16, 32, 64, >=64).
pub fn batch_bucket(n: u64) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// fio's latency buckets (`io_u_lat_n`, `_u`, `_m`): each counts what is below its label
/// and at or above the one before; the last millisecond one, 2000 ms and more.
pub const LAT_STEPS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
pub const LAT_MS_STEPS: [u64; 12] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000, 2000];

fn step_index(v: u64, steps: &[u64]) -> usize {
    steps.iter().position(|s| v < *s).unwrap_or(steps.len() - 1)
}

/// One log line of `write_bw_log`, `write_lat_log` or `write_iops_log`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogEntry {
    pub t_ms: u64,
    pub value: u64,
    pub dir: u8,
    pub bs: u64,
    pub offset: u64,
}

/// The logs of one clone: slat, clat, lat, bw and iops entries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FioLogs {
    pub slat: Vec<LogEntry>,
    pub clat: Vec<LogEntry>,
    pub lat: Vec<LogEntry>,
    pub bw: Vec<LogEntry>,
    pub iops: Vec<LogEntry>,
}

/// A job clone's record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FioClone {
    /// The report it belongs to (`JOB`, or `JOB.N`), its job's index and number among the
    /// file's clones (fio's `thread_number`, from 1), and its group (`groupid`).
    pub report: String,
    pub job: usize,
    pub thread_number: u32,
    pub group: u32,
    /// When it started, in ns after the run's start, and how long it ran.
    pub start_ns: u64,
    pub runtime_ns: u64,
    pub dirs: [FioDir; 2],
    /// The fsyncs and fdatasyncs every N writes (fio's `sync` entry: its `lat_ns` counts
    /// both, its `total_ios` the fsyncs only, as fio 3.33's JSON), with their bins.
    pub sync: Moments,
    #[serde(default)]
    pub sync_ios: u64,
    #[serde(default)]
    pub sync_bins: Plat,
    pub usr_s: f64,
    pub sys_s: f64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    /// fio's `io_u_map`, `io_u_submit`, `io_u_complete` counts, and the submit and
    /// complete calls they divide by.
    pub depth: [u64; 7],
    pub submit: [u64; 7],
    pub complete: [u64; 7],
    pub total_submit: u64,
    pub total_complete: u64,
    pub lat_n: [u64; 10],
    pub lat_u: [u64; 10],
    pub lat_m: [u64; 12],
    pub errors: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// With `continue_on_error`: the errors of the kinds it names (fio's
    /// `total_err_count`), those it went past and the one that ended the job, and the
    /// first one's number (fio's `first_error`, 0 when none).
    #[serde(default)]
    pub total_err: u64,
    #[serde(default)]
    pub first_errno: i32,
    /// The number of the error that ended the job, or with `continue_on_error` of the
    /// first one (fio's `error`); 0 when not known.
    #[serde(default)]
    pub errno: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<FioVerify>,
    /// The job's reporting options (percentiles, logs, its options as given).
    #[serde(default)]
    pub out: fsbench_model::model::stream::FioOut,
    #[serde(skip)]
    pub logs: Option<Box<FioLogs>>,
}

impl FioClone {
    /// fio's `error`: the error number when known, else the count of failed operations.
    pub fn error_code(&self) -> u64 {
        if self.errno > 0 {
            self.errno as u64
        } else {
            self.errors
        }
    }

    /// Count a completed read (0) or write (1) of `bytes` (`asked` asked) with its
    /// submission, completion and total latencies.
    #[inline]
    pub fn io(&mut self, dir: usize, bytes: u64, asked: u64, lat: [u64; 3], submitted: bool) {
        let [slat, clat, tot] = lat;
        let d = &mut self.dirs[dir];
        d.io_bytes += bytes;
        d.total_ios += 1;
        if bytes < asked {
            d.short_ios += 1;
        }
        // fio's account_io_completion: what `disable_*lat` (`gtod_reduce`) turns off is
        // not recorded.
        if submitted && !self.out.no_slat {
            d.slat.add(slat as f64);
            d.slat_bins.add(slat);
        }
        if !self.out.no_lat {
            d.lat.add(tot as f64);
            d.lat_bins.add(tot);
        }
        if self.out.no_clat {
            return;
        }
        d.clat.add(clat as f64);
        d.clat_bins.add(clat);
        if clat < 1000 {
            self.lat_n[step_index(clat, &LAT_STEPS)] += 1;
        } else if clat < 1_000_000 {
            self.lat_u[step_index(clat / 1000, &LAT_STEPS)] += 1;
        } else {
            let ms = clat / 1_000_000;
            let i = if ms >= 2000 {
                11
            } else {
                step_index(ms, &LAT_MS_STEPS[..11])
            };
            self.lat_m[i] += 1;
        }
    }

    /// An I/O queued with `depth` in flight (itself included).
    #[inline]
    pub fn queued(&mut self, depth: u64) {
        self.depth[depth_bucket(depth)] += 1;
    }

    /// A submission of `n` I/Os, a reaping of `n` completions.
    #[inline]
    pub fn submitted(&mut self, n: u64) {
        self.submit[batch_bucket(n)] += 1;
        self.total_submit += 1;
    }
    #[inline]
    pub fn completed(&mut self, n: u64) {
        self.complete[batch_bucket(n)] += 1;
        self.total_complete += 1;
    }

    /// Add `o`, a clone reported together with this one (fio's `sum_thread_stats`).
    pub fn merge(&mut self, o: &FioClone) {
        let side_by_side = self.group == o.group;
        for (a, b) in self.dirs.iter_mut().zip(&o.dirs) {
            a.merge(b, side_by_side);
        }
        self.sync.merge(&o.sync);
        self.sync_ios += o.sync_ios;
        self.sync_bins.merge(&o.sync_bins);
        self.start_ns = self.start_ns.min(o.start_ns);
        self.runtime_ns = self.runtime_ns.max(o.runtime_ns);
        self.usr_s += o.usr_s;
        self.sys_s += o.sys_s;
        self.ctx += o.ctx;
        self.majf += o.majf;
        self.minf += o.minf;
        add_all(&mut self.depth, &o.depth);
        add_all(&mut self.submit, &o.submit);
        add_all(&mut self.complete, &o.complete);
        self.total_submit += o.total_submit;
        self.total_complete += o.total_complete;
        add_all(&mut self.lat_n, &o.lat_n);
        add_all(&mut self.lat_u, &o.lat_u);
        add_all(&mut self.lat_m, &o.lat_m);
        self.errors += o.errors;
        if self.first_error.is_none() {
            self.first_error = o.first_error.clone();
        }
        self.total_err += o.total_err;
        if self.errno == 0 {
            self.errno = o.errno;
        }
        if self.first_errno == 0 {
            self.first_errno = o.first_errno;
        }
        match (&mut self.verify, &o.verify) {
            (Some(a), Some(b)) => {
                a.blocks += b.blocks;
                a.mismatches += b.mismatches;
                if a.first_bad.is_none() {
                    a.first_bad = b.first_bad.clone();
                }
            }
            (None, Some(b)) => self.verify = Some(b.clone()),
            _ => {}
        }
    }
}

fn add_all<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// One clone's CPU and faults so far (`getrusage(RUSAGE_THREAD)`): user and system
/// seconds, context switches, major and minor faults.
pub fn thread_usage() -> (f64, f64, u64, u64, u64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (
        secs(ru.ru_utime),
        secs(ru.ru_stime),
        (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
        ru.ru_majflt as u64,
        ru.ru_minflt as u64,
    )
}

/// A fio job file's results as its phases ran: each job's statistics over its own runtime
/// (the longest of the clones reporting under its name), not over the whole run in which
/// jobs after a `stonewall` wait for the ones before; the `JOB runtime` rows (a span of
/// time, not I/O) out of the table; and, when the jobs ran in more than one group, a note
/// per group with what it did over its own time, and one saying that `IO Summary` counts
/// every phase over the whole run.
pub fn per_job_rates(r: &mut super::Results) {
    if r.fio_jobs.is_empty() {
        return;
    }
    let mut runtime: Vec<(String, u32, f64)> = Vec::new();
    for c in &r.fio_jobs {
        let secs = c.runtime_ns as f64 / 1e9;
        match runtime.iter_mut().find(|x| x.0 == c.report) {
            Some(x) => x.2 = x.2.max(secs),
            None => runtime.push((c.report.clone(), c.group, secs)),
        }
    }
    r.flowops.retain(|f| {
        !runtime
            .iter()
            .any(|(rep, _, _)| f.name == format!("{rep} runtime"))
    });
    for f in &mut r.flowops {
        let Some((_, _, secs)) = (runtime.iter())
            .find(|(rep, _, _)| f.name.rsplit_once(' ').is_some_and(|(j, _)| j == rep))
        else {
            continue;
        };
        if *secs > 0.0 {
            f.ops_per_s = f.ops as f64 / secs;
            f.mb_per_s = f.bytes as f64 / secs / 1e6;
        }
    }
    let mut groups: Vec<u32> = runtime.iter().map(|x| x.1).collect();
    groups.sort_unstable();
    groups.dedup();
    if groups.len() < 2 {
        r.notes
            .push("fio jobs: each row's ops/s and mb/s are over its job's own runtime".to_string());
        return;
    }
    for g in groups {
        let jobs: Vec<&(String, u32, f64)> = runtime.iter().filter(|x| x.1 == g).collect();
        let secs = jobs.iter().map(|x| x.2).fold(0.0, f64::max);
        let (mut ops, mut bytes) = (0u64, 0u64);
        for c in r.fio_jobs.iter().filter(|c| c.group == g) {
            for d in &c.dirs {
                ops += d.total_ios;
                bytes += d.io_bytes;
            }
        }
        let names: Vec<&str> = jobs.iter().map(|x| x.0.as_str()).collect();
        r.notes.push(format!(
            "phase {g} (groupid={g}: {}): {:.3} s, {ops} I/Os, {:.1} ops/s, {:.1}mb/s over its own time",
            names.join(", "),
            secs,
            ops as f64 / secs.max(1e-9),
            bytes as f64 / secs.max(1e-9) / 1e6
        ));
    }
    r.notes.push(format!(
        "fio jobs in phases (stonewall/new_group): each row's ops/s and mb/s are over its job's own runtime; IO Summary counts every phase over the whole run ({:.3} s)",
        r.duration_s
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_fios() {
        // Values seen in fio 3.33's json+ output.
        assert_eq!(plat_val(plat_idx(40704)), 40704);
        assert_eq!(plat_val(plat_idx(44100)), 44288);
        for v in [0, 1, 63, 127] {
            assert_eq!(plat_val(plat_idx(v)), v);
        }
        assert_eq!(plat_idx(u64::MAX), PLAT_NR - 1);
        let mut p = Plat::default();
        for v in 1..=100u64 {
            p.add(v);
        }
        assert_eq!(
            p.percentiles(&[1.0, 50.0, 99.0, 100.0]),
            vec![1, 50, 99, 100]
        );
        assert_eq!(p.total(), 100);
    }

    #[test]
    fn moments_merge_as_one_set() {
        let (mut a, mut b, mut all) = (Moments::default(), Moments::default(), Moments::default());
        for v in [1.0, 2.0, 3.0] {
            a.add(v);
            all.add(v);
        }
        for v in [10.0, 20.0] {
            b.add(v);
            all.add(v);
        }
        a.merge(&b);
        assert_eq!(a.n, 5);
        assert!((a.mean - all.mean).abs() < 1e-9);
        assert!((a.stddev() - all.stddev()).abs() < 1e-9);
        assert_eq!((a.min, a.max), (1.0, 20.0));
    }

    #[test]
    fn latency_buckets_are_fios() {
        let mut c = FioClone::default();
        c.io(0, 4096, 4096, [0, 40_000, 40_000], false);
        c.io(0, 4096, 4096, [0, 3_000_000, 3_000_000], false);
        c.io(0, 10, 4096, [0, 700, 700], false);
        assert_eq!(c.lat_u[4], 1);
        assert_eq!(c.lat_m[1], 1);
        assert_eq!(c.lat_n[8], 1);
        assert_eq!(c.dirs[0].short_ios, 1);
        assert_eq!(depth_bucket(8), 3);
        assert_eq!(batch_bucket(1), 1);
    }
}
