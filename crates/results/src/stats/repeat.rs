//! Repetitions and comparisons: combine repeated runs into one result with per-repetition
//! figures, confidence intervals, coefficients of variation, and Welch's t-test between two
//! sets of repetitions.

use super::{FlowopResult, Latency, Repetition, Results, Summary};

/// The t quantile for a 95% two-sided interval with `df` (possibly fractional) degrees of
/// freedom, from Student's t distribution (statrs). Fewer than one degree of freedom is
/// treated as one.
pub fn t975(df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let df = df.max(1.0);
    if !df.is_finite() || df > 1e5 {
        // The normal quantile; t's differs by less than 1e-5 here.
        return 1.959964;
    }
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(0.975))
        .unwrap_or(1.959964)
}

/// Welch's t-test of two samples: the difference of means (a − b), its 95% half-width and
/// the two-sided p-value. `None` when either side has fewer than two values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    pub diff: f64,
    pub ci95: f64,
    pub df: f64,
    pub p_value: f64,
}

pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let se2 = va / na + vb / nb;
    let diff = ma - mb;
    if se2 == 0.0 {
        return Some(Welch {
            diff,
            ci95: 0.0,
            df: na + nb - 2.0,
            p_value: if diff == 0.0 { 1.0 } else { 0.0 },
        });
    }
    let df = se2 * se2 / ((va / na).powi(2) / (na - 1.0) + (vb / nb).powi(2) / (nb - 1.0));
    let t = diff / se2.sqrt();
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(Welch {
        diff,
        ci95: t975(df) * se2.sqrt(),
        df,
        p_value: (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0),
    })
}

/// Mean, sample variance.
pub fn mean_var(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let m = xs.iter().sum::<f64>() / n;
    let v = if xs.len() > 1 {
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, v)
}

/// Mean, 95% confidence half-width and coefficient of variation of repeated figures.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Spread {
    pub mean: f64,
    pub ci95: f64,
    pub cv: f64,
}

pub fn spread(xs: &[f64]) -> Spread {
    let (m, v) = mean_var(xs);
    let n = xs.len();
    let sd = v.sqrt();
    Spread {
        mean: m,
        ci95: if n > 1 {
            t975((n - 1) as f64) * sd / (n as f64).sqrt()
        } else {
            0.0
        },
        cv: if m != 0.0 { sd / m.abs() } else { 0.0 },
    }
}

/// Welch's t-test at 95%: `Some(true)` when the means differ significantly, `None` when
/// either side has fewer than two values.
pub fn welch_significant(a: &[f64], b: &[f64]) -> Option<bool> {
    welch(a, b).map(|w| w.p_value < 0.05)
}

fn hist_from(pairs: &[[u64; 2]]) -> hdrhistogram::Histogram<u64> {
    let mut h = hdrhistogram::Histogram::new(3).expect("valid");
    for [v, c] in pairs {
        let _ = h.record_n(*v, *c);
    }
    h
}

fn latency_from(h: &hdrhistogram::Histogram<u64>, mean_us: f64) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    let q = |p: f64| h.value_at_quantile(p) as f64 / 1000.0;
    Latency {
        mean: mean_us,
        min: h.min() as f64 / 1000.0,
        p50: q(0.5),
        p90: q(0.9),
        p95: q(0.95),
        p99: q(0.99),
        p99_9: q(0.999),
        p99_99: q(0.9999),
        max: h.max() as f64 / 1000.0,
    }
}

/// The headline figures of one run.
pub fn repetition_of(r: &Results) -> Repetition {
    Repetition {
        duration_s: r.duration_s,
        summary: r.summary.clone(),
        flowops: r
            .flowops
            .iter()
            .map(|f| [f.ops_per_s, f.mb_per_s, f.latency_us.mean, f.latency_us.p99])
            .collect(),
        figures: r.figures.clone(),
    }
}

/// Combine repetitions of the same workload: counts add up, rates are over the total measured
/// time, latency histograms merge, and each repetition's figures are kept.
pub fn combine(runs: Vec<Results>) -> Results {
    let mut it = runs.into_iter();
    let first = it.next().expect("at least one run");
    let rest: Vec<Results> = it.collect();
    if rest.is_empty() {
        return first;
    }
    let all: Vec<&Results> = std::iter::once(&first).chain(rest.iter()).collect();
    let duration: f64 = all.iter().map(|r| r.duration_s).sum();
    let d = duration.max(1e-9);
    let flowops = first
        .flowops
        .iter()
        .enumerate()
        .map(|(i, f0)| {
            let fs: Vec<&FlowopResult> = all.iter().filter_map(|r| r.flowops.get(i)).collect();
            combine_flowop(f0, &fs, d)
        })
        .collect();
    let summary = combine_summary(&all, d);
    let repetitions = all.iter().map(|r| repetition_of(r)).collect();
    let interrupted = all.iter().any(|r| r.interrupted);
    // Named figures: the mean over the repetitions that have them.
    let mut figures = std::collections::BTreeMap::new();
    for k in first.figures.keys() {
        let v: Vec<f64> = all
            .iter()
            .filter_map(|r| r.figures.get(k).copied())
            .collect();
        figures.insert(k.clone(), mean_var(&v).0);
    }
    // A simulated disk's lateness: the worst repetition's.
    let disk = all
        .iter()
        .filter_map(|r| r.disk.clone())
        .max_by(|a, b| a.late_pct.total_cmp(&b.late_pct));
    // A remote's traffic in the measured windows: over every repetition.
    let remote_window = all
        .iter()
        .filter_map(|r| r.remote_window.clone())
        .reduce(|a, b| a.and(&b));
    // The device's reads and busy time: over every repetition, as the duration is.
    let device_read_bytes = all.iter().map(|r| r.device_read_bytes).sum();
    let device_busy_s = all.iter().map(|r| r.device_busy_s).sum();
    let cpu_busy_s = all.iter().map(|r| r.cpu_busy_s).sum();
    let device_write_bytes = all.iter().map(|r| r.device_write_bytes).sum();
    // fio's figures (fio_jobs, disk_stats) are the first repetition's.
    // Drops made elsewhere: over every repetition.
    let caches_dropped_elsewhere = all
        .iter()
        .filter_map(|r| r.caches_dropped_elsewhere)
        .reduce(|a, b| a + b);
    let shares: Vec<&[super::shares::ProcessShare]> =
        all.iter().map(|r| r.processes.as_slice()).collect();
    let processes = super::shares::combine(&shares, d);
    Results {
        duration_s: duration,
        device_read_bytes,
        device_busy_s,
        cpu_busy_s,
        caches_dropped_elsewhere,
        processes,
        disk,
        remote_window,
        ranks: Vec::new(),
        hosts: Vec::new(),
        device_write_bytes,
        figures,
        interrupted,
        flowops,
        summary,
        repetitions,
        ..first
    }
}

/// One flowop over the repetitions (`fs`, the first `f0`), rates over `d` seconds.
fn combine_flowop(f0: &FlowopResult, fs: &[&FlowopResult], d: f64) -> FlowopResult {
    let ops: u64 = fs.iter().map(|f| f.ops).sum();
    let bytes: u64 = fs.iter().map(|f| f.bytes).sum();
    let mut h = hdrhistogram::Histogram::<u64>::new(3).expect("valid");
    for f in fs {
        let _ = h.add(hist_from(&f.histogram_ns));
    }
    let mean = if ops > 0 {
        fs.iter()
            .map(|f| f.latency_us.mean * f.ops as f64)
            .sum::<f64>()
            / ops as f64
    } else {
        0.0
    };
    let cpu = if ops > 0 {
        fs.iter()
            .map(|f| f.cpu_us_per_op * f.ops as f64)
            .sum::<f64>()
            / ops as f64
    } else {
        0.0
    };
    FlowopResult {
        name: f0.name.clone(),
        kind: f0.kind.clone(),
        io_class: f0.io_class.clone(),
        ops,
        ops_per_s: ops as f64 / d,
        bytes,
        mb_per_s: bytes as f64 / d / (1024.0 * 1024.0),
        latency_us: latency_from(&h, mean),
        errors: fs.iter().map(|f| f.errors).sum(),
        no_resource: fs.iter().map(|f| f.no_resource).sum(),
        skipped: fs.iter().map(|f| f.skipped).sum(),
        first_error: fs.iter().find_map(|f| f.first_error.clone()),
        cpu_us_per_op: cpu,
        histogram_ns: h
            .iter_recorded()
            .map(|v| [v.value_iterated_to(), v.count_at_value()])
            .collect(),
        page_cache: f0.page_cache.as_ref().map(|_| {
            let ps = || fs.iter().filter_map(|f| f.page_cache.as_ref());
            super::PageCache::new(ps().map(|p| p.pages).sum(), ps().map(|p| p.cached).sum())
        }),
        aio: f0.aio.as_ref().map(|_| {
            let n: u64 = fs
                .iter()
                .filter_map(|f| f.aio.as_ref())
                .map(|a| a.completions)
                .sum();
            let sum: f64 = fs
                .iter()
                .filter_map(|f| f.aio.as_ref())
                .map(|a| a.completion_mean_us * a.completions as f64)
                .sum();
            super::AioCompletions {
                completions: n,
                completion_mean_us: if n > 0 { sum / n as f64 } else { 0.0 },
            }
        }),
        content: f0.content.clone(),
        verify: f0.verify.as_ref().map(|_| {
            let vs = || fs.iter().filter_map(|f| f.verify.as_ref());
            fsbench_model::verify::VerifyResult {
                blocks_checked: vs().map(|v| v.blocks_checked).sum(),
                mismatches: vs().map(|v| v.mismatches).sum(),
                reads_skipped: vs().map(|v| v.reads_skipped).sum(),
                first: vs()
                    .flat_map(|v| v.first.iter().cloned())
                    .take(fsbench_model::verify::KEEP)
                    .collect(),
            }
        }),
        rpcs: super::rpcs::combine(&fs.iter().map(|f| &f.rpcs[..]).collect::<Vec<_>>(), ops),
    }
}

/// The summaries of the repetitions, rates over `d` seconds.
fn combine_summary(all: &[&Results], d: f64) -> Summary {
    let ops: u64 = all.iter().map(|r| r.summary.ops).sum();
    let sum = |g: fn(&Summary) -> f64| {
        all.iter()
            .map(|r| g(&r.summary) * r.duration_s)
            .sum::<f64>()
            / d
    };
    Summary {
        ops,
        ops_per_s: ops as f64 / d,
        read_ops_per_s: sum(|s| s.read_ops_per_s),
        write_ops_per_s: sum(|s| s.write_ops_per_s),
        mb_per_s: sum(|s| s.mb_per_s),
        mean_latency_ms: if ops > 0 {
            all.iter()
                .map(|r| r.summary.mean_latency_ms * r.summary.ops as f64)
                .sum::<f64>()
                / ops as f64
        } else {
            0.0
        },
        errors: all.iter().map(|r| r.summary.errors).sum(),
        cpu_user_s: all.iter().map(|r| r.summary.cpu_user_s).sum(),
        cpu_sys_s: all.iter().map(|r| r.summary.cpu_sys_s).sum(),
        cpu_us_per_op: if ops > 0 {
            all.iter()
                .map(|r| (r.summary.cpu_user_s + r.summary.cpu_sys_s) * 1e6)
                .sum::<f64>()
                / ops as f64
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles() {
        assert!((t975(1.0) - 12.706).abs() < 1e-3);
        assert!((t975(9.0) - 2.262).abs() < 1e-3);
        assert!((t975(60.0) - 2.000).abs() < 1e-3);
        assert!((t975(1000.0) - 1.962).abs() < 1e-3);
        assert!((t975(1e9) - 1.960).abs() < 1e-3);
        assert!((t975(1e5) - 1.960).abs() < 1e-3);
    }

    #[test]
    fn spread_and_welch() {
        let s = spread(&[10.0, 12.0, 11.0, 9.0, 13.0]);
        assert!((s.mean - 11.0).abs() < 1e-9);
        // sd = sqrt(2.5) = 1.581; ci = 2.776 * 1.581 / sqrt(5) = 1.963
        assert!((s.ci95 - 1.963).abs() < 1e-3, "{s:?}");
        assert!((s.cv - 0.1437).abs() < 1e-3);
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let b = [110.0, 111.0, 109.0, 110.5, 109.5];
        assert_eq!(welch_significant(&a, &b), Some(true));
        let c = [100.2, 100.9, 99.1, 100.4, 99.6];
        assert_eq!(welch_significant(&a, &c), Some(false));
        assert_eq!(welch_significant(&a, &[1.0]), None);
        // a against c: t = -0.0845 on 7.89 degrees of freedom; near zero the two-sided
        // p-value is about 1 - 2 |t| f(0) with f(0) = 0.3867 for 8 df: 0.9346.
        let w = welch(&a, &c).unwrap();
        assert!((w.p_value - 0.9347).abs() < 1e-3, "{w:?}");
        assert!((w.df - 7.89).abs() < 0.01, "{w:?}");
        assert!(welch(&a, &b).unwrap().p_value < 1e-6); // t = -20 on 8 df
    }
}
