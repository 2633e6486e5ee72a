//! CSV: one row per flowop, then the summary as a row named `(summary)`, then one row per
//! named figure (type `figure`, its value in the last column; the application benchmarks'
//! transaction rates, phase times and so on), so the table stays rectangular.

use super::Exporter;
use crate::stats::Results;
use fsbench_base::export::csv::{field, Quote::WhenNeeded};
use std::fmt::Write;

pub struct Csv;

impl Exporter for Csv {
    fn render(&self, r: &Results) -> String {
        let mut o = String::from(
            "workload,flowop,type,ops,ops_per_s,mb_per_s,mean_us,p50_us,p90_us,p95_us,p99_us,p99_9_us,p99_99_us,max_us,cpu_us_per_op,errors,no_resource,skipped,value\n",
        );
        for f in &r.flowops {
            let l = &f.latency_us;
            let _ = writeln!(
                o,
                "{},{},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{},{},{},",
                field(&r.workload, WhenNeeded),
                field(&f.name, WhenNeeded),
                f.kind,
                f.ops,
                f.ops_per_s,
                f.mb_per_s,
                l.mean,
                l.p50,
                l.p90,
                l.p95,
                l.p99,
                l.p99_9,
                l.p99_99,
                l.max,
                f.cpu_us_per_op,
                f.errors,
                f.no_resource,
                f.skipped
            );
        }
        let s = &r.summary;
        let _ = writeln!(
            o,
            "{},(summary),io,{},{:.3},{:.3},{:.3},,,,,,,,{:.3},{},,,",
            field(&r.workload, WhenNeeded),
            s.ops,
            s.ops_per_s,
            s.mb_per_s,
            s.mean_latency_ms * 1000.0,
            s.cpu_us_per_op,
            s.errors
        );
        for (name, v) in &r.figures {
            let _ = writeln!(
                o,
                "{},{},figure,,,,,,,,,,,,,,,,{v}",
                field(&r.workload, WhenNeeded),
                field(name, WhenNeeded)
            );
        }
        o
    }
}
