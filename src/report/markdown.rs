//! Markdown: a table per run, for reports and issue trackers.

use super::Exporter;
use crate::stats::Results;
use std::fmt::Write;

pub struct Markdown;

impl Exporter for Markdown {
    fn render(&self, r: &Results) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "### {} ({:.1} s, {}, {} on {})\n",
            r.workload,
            r.duration_s,
            super::count(r.threads, "thread"),
            r.host.fs_type,
            r.host.device
        );
        let _ = writeln!(o, "| flowop | type | ops/s | MB/s | mean µs | p50 µs | p99 µs | p99.9 µs | max µs | CPU µs/op | errors |");
        let _ = writeln!(o, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for f in &r.flowops {
            let l = &f.latency_us;
            let _ = writeln!(
                o,
                "| {} | {} | {:.0} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
                f.name,
                f.kind,
                f.ops_per_s,
                f.mb_per_s,
                l.mean,
                l.p50,
                l.p99,
                l.p99_9,
                l.max,
                f.cpu_us_per_op,
                f.errors
            );
        }
        let s = &r.summary;
        let _ = writeln!(
            o,
            "\n**IO summary:** {} ops, {:.1} ops/s, {:.1} MB/s, {:.3} ms/op, {:.1} µs CPU/op",
            s.ops, s.ops_per_s, s.mb_per_s, s.mean_latency_ms, s.cpu_us_per_op
        );
        if !r.figures.is_empty() {
            let _ = writeln!(o, "\n| figure | value | ± 95% | CV |\n|---|---:|---:|---:|");
            for (k, v) in &r.figures {
                let reps: Vec<f64> = r
                    .repetitions
                    .iter()
                    .filter_map(|p| p.figures.get(k).copied())
                    .collect();
                if reps.len() > 1 {
                    let sp = crate::stats::repeat::spread(&reps);
                    let _ = writeln!(
                        o,
                        "| {k} | {:.4} | {:.4} | {:.1}% |",
                        sp.mean,
                        sp.ci95,
                        sp.cv * 100.0
                    );
                } else {
                    let _ = writeln!(o, "| {k} | {v:.4} | | |");
                }
            }
        }
        o
    }
}
