//! Merging the results of many clients (MPI ranks) that ran the same workload into one
//! [`Results`]: operation counts, bytes and errors summed per flowop, latency histograms
//! merged bucket by bucket (so percentiles are those of every operation of every rank),
//! rates over the window the ranks measured together, and one [`RankResult`] per rank so
//! stragglers stay visible.

use super::{summarize, OpRecorder, Recorder, Results};
use fsbench_model::model::FlowopKind;
use serde::{Deserialize, Serialize};

/// One rank's headline figures in merged results.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct RankResult {
    pub rank: u32,
    pub host: String,
    /// When its measurement started (seconds since the Unix epoch) and how long it ran.
    pub started_at: f64,
    pub duration_s: f64,
    /// Its IO summary: operations, rate, bandwidth, and the 99th percentile latency of all
    /// its summary operations together.
    pub ops: u64,
    pub ops_per_s: f64,
    pub mb_per_s: f64,
    pub p99_us: f64,
    pub errors: u64,
    /// Its run directory.
    pub run_dir: String,
    /// How its run ended, when not at its duration (stonewalled, exhausted ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The merged operations of one flowop row over ranks.
fn merge_row(rows: &[&super::FlowopResult]) -> OpRecorder {
    let mut o = OpRecorder::default();
    for r in rows {
        o.count += r.ops;
        o.bytes += r.bytes;
        o.errors += r.errors;
        o.no_resource += r.no_resource;
        o.skipped += r.skipped;
        o.lat_sum_ns += (r.latency_us.mean * 1000.0 * r.ops as f64).round() as u64;
        o.cpu_ns += r.cpu_us_per_op * 1000.0 * r.ops as f64;
        if o.first_error.is_none() {
            o.first_error = r.first_error.clone();
        }
        o.add_rpc_results(&r.rpcs);
        for [v, n] in &r.histogram_ns {
            o.hist.record_n(*v, *n);
        }
        if let Some(p) = &r.page_cache {
            o.cache_pages += p.pages;
            o.cache_hits += p.cached;
        }
        if let Some(a) = &r.aio {
            o.completions += a.completions;
            o.completion_ns_sum += (a.completion_mean_us * 1000.0 * a.completions as f64) as u64;
        }
    }
    o
}

/// The 99th percentile over a rank's summary operations.
fn summary_p99(r: &Results) -> f64 {
    let mut o = OpRecorder::default();
    for f in &r.flowops {
        let counts = FlowopKind::from_name(&f.kind).is_some_and(super::counts_in_summary);
        if counts {
            for [v, n] in &f.histogram_ns {
                o.hist.record_n(*v, *n);
            }
            o.count += f.ops;
        }
    }
    if o.count == 0 {
        0.0
    } else {
        o.hist.to_hist().value_at_quantile(0.99) as f64 / 1000.0
    }
}

/// Merge each rank's results (`(rank, host, results)`, any order) into one. The rows are
/// matched by position and must name the same flowops (every rank ran the same workload).
pub fn merge(mut ranks: Vec<(u32, String, Results)>) -> Result<Results, String> {
    ranks.sort_by_key(|r| r.0);
    let Some((_, _, first)) = ranks.first() else {
        return Err("no rank returned results".into());
    };
    let names: Vec<(String, FlowopKind)> = first
        .flowops
        .iter()
        .map(|f| {
            (
                f.name.clone(),
                FlowopKind::from_name(&f.kind).unwrap_or(FlowopKind::Composite),
            )
        })
        .collect();
    same_flowops(&ranks, &names)?;
    // The window every rank measured in: from the first start to the last end.
    let start = ranks
        .iter()
        .map(|r| r.2.started_at)
        .fold(f64::INFINITY, f64::min);
    let end = ranks
        .iter()
        .map(|r| r.2.started_at + r.2.duration_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let window = (end - start).max(1e-9);
    let mut merged = Recorder::new(names.len());
    for (i, o) in merged.ops.iter_mut().enumerate() {
        let rows: Vec<&super::FlowopResult> = ranks.iter().map(|r| &r.2.flowops[i]).collect();
        *o = merge_row(&rows);
    }
    merged.cpu_user_s = ranks.iter().map(|r| r.2.summary.cpu_user_s).sum();
    merged.cpu_sys_s = ranks.iter().map(|r| r.2.summary.cpu_sys_s).sum();
    // The ranks ran with one set of options: verified if the first rank was.
    let verified = first.flowops.iter().any(|f| f.verify.is_some());
    let (flowops, summary) = summarize(&names, &merged, window, verified);
    let mut out = first.clone();
    out.flowops = flowops;
    out.summary = summary;
    out.started_at = start;
    out.duration_s = window;
    out.threads = ranks.iter().map(|r| r.2.threads).sum();
    out.interrupted = ranks.iter().any(|r| r.2.interrupted);
    out.series.clear();
    out.repetitions.clear();
    out.ranks = ranks.iter().map(rank_row).collect();
    let mut hosts: Vec<String> = Vec::new();
    for (_, h, _) in &ranks {
        if !hosts.contains(h) {
            hosts.push(h.clone());
        }
    }
    out.hosts = hosts;
    let rates: Vec<f64> = out.ranks.iter().map(|r| r.ops_per_s).collect();
    let (lo, hi) = rates.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| {
        (lo.min(v), hi.max(v))
    });
    let slowest = out
        .ranks
        .iter()
        .min_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))
        .map_or(0, |r| r.rank);
    let spread = ranks
        .iter()
        .map(|r| r.2.started_at)
        .fold(f64::NEG_INFINITY, f64::max)
        - start;
    merge_figures(&mut out.figures, &ranks);
    out.figures.insert("ranks".into(), ranks.len() as f64);
    out.figures.insert("slowest_rank".into(), slowest as f64);
    out.figures.insert("rank_ops_per_s_min".into(), lo);
    out.figures.insert("rank_ops_per_s_max".into(), hi);
    out.figures
        .insert("start_spread_ms".into(), spread * 1000.0);
    out.notes.insert(
        0,
        format!(
            "merged from {} on {}: rates over the {:.3} s from the first rank's start to the last one's end; slowest rank {slowest} at {:.0} ops/s, fastest {:.0}; starts {:.1} ms apart",
            fsbench_base::units::count(ranks.len() as u64, "rank"),
            fsbench_base::units::count(out.hosts.len() as u64, "host"),
            window,
            lo,
            hi,
            spread * 1000.0
        ),
    );
    Ok(out)
}

/// Every rank must have run the flowops of the first (`names`), in the same order.
fn same_flowops(
    ranks: &[(u32, String, Results)],
    names: &[(String, FlowopKind)],
) -> Result<(), String> {
    for (rank, _, r) in ranks {
        let theirs: Vec<&str> = r.flowops.iter().map(|f| f.name.as_str()).collect();
        let ours: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
        if theirs != ours {
            return Err(format!(
                "rank {rank} ran other flowops ({}) than rank {} ({})",
                theirs.join(", "),
                ranks[0].0,
                ours.join(", ")
            ));
        }
    }
    Ok(())
}

/// One rank's row of the merged results.
fn rank_row((rank, host, r): &(u32, String, Results)) -> RankResult {
    RankResult {
        rank: *rank,
        host: host.clone(),
        started_at: r.started_at,
        duration_s: r.duration_s,
        ops: r.summary.ops,
        ops_per_s: r.summary.ops_per_s,
        mb_per_s: r.summary.mb_per_s,
        p99_us: summary_p99(r),
        errors: r.summary.errors,
        run_dir: r.run_dir.clone(),
        notes: r
            .notes
            .iter()
            .filter(|n| n.contains("ended"))
            .cloned()
            .collect(),
    }
}

/// A benchmark's own figures merged over the ranks.
fn merge_figures(
    figures: &mut std::collections::BTreeMap<String, f64>,
    ranks: &[(u32, String, Results)],
) {
    // A benchmark's own figures: times (`*_s`) are the slowest rank's, shares and means
    // (`*pct*`, `*ratio*`, `*mean*`, `*score*`) the mean over ranks, and counts and rates
    // (everything else) add up.
    for (k, v) in figures.iter_mut() {
        let each: Vec<f64> = ranks
            .iter()
            .filter_map(|r| r.2.figures.get(k).copied())
            .collect();
        if k.ends_with("_s") && !k.ends_with("_per_s") {
            *v = each.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        } else if ["pct", "ratio", "mean", "score"]
            .iter()
            .any(|w| k.contains(w))
        {
            *v = each.iter().sum::<f64>() / each.len().max(1) as f64;
        } else {
            *v = each.iter().sum();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank_result(ops: u64, lat_ns: u64, start: f64) -> Results {
        let names = vec![
            ("read1".to_string(), FlowopKind::Read),
            ("stat1".to_string(), FlowopKind::StatFile),
        ];
        let mut rec = Recorder::new(2);
        for i in 0..ops {
            rec.ops[0].record(lat_ns + i % 7, 4096);
            rec.ops[1].record(lat_ns / 2, 0);
        }
        let (flowops, summary) = crate::stats::summarize(&names, &rec, 1.0, false);
        let mut r = Results {
            flowops,
            summary,
            threads: 1,
            ..Results::new("t", "app:t", 0, std::path::Path::new("/"))
        };
        r.started_at = start;
        r.duration_s = 1.0;
        r
    }

    #[test]
    fn counts_sum_and_percentiles_come_from_every_rank() {
        let a = rank_result(1000, 1000, 100.0);
        let b = rank_result(3000, 100_000, 100.002);
        let m = merge(vec![(1, "h".into(), b), (0, "h".into(), a)]).unwrap();
        assert_eq!(m.flowops[0].ops, 4000);
        assert_eq!(m.flowops[0].bytes, 4000 * 4096);
        assert_eq!(m.summary.ops, 8000);
        // 3/4 of the reads are the slow rank's: the median is slow, not an average.
        assert!(
            m.flowops[0].latency_us.p50 > 90.0,
            "{:?}",
            m.flowops[0].latency_us
        );
        assert!(m.flowops[0].latency_us.min < 1.1);
        assert_eq!(m.ranks.len(), 2);
        assert_eq!(m.ranks[0].rank, 0);
        assert_eq!(m.ranks[1].ops, 6000);
        assert_eq!(m.figures["slowest_rank"], 0.0);
        assert_eq!(m.hosts, vec!["h".to_string()]);
        assert!((m.duration_s - 1.002).abs() < 1e-9);
        assert!((m.figures["start_spread_ms"] - 2.0).abs() < 1e-6);
    }

    #[test]
    fn ranks_that_ran_other_flowops_are_refused() {
        let a = rank_result(10, 1000, 0.0);
        let mut b = rank_result(10, 1000, 0.0);
        b.flowops[1].name = "other".into();
        let e = merge(vec![(0, "h".into(), a), (1, "h".into(), b)]).unwrap_err();
        assert!(e.contains("rank 1 ran other flowops"), "{e}");
    }
}
