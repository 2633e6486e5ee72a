//! The terminal report: Filebench's per-operation breakdown and IO summary, with percentiles.

use super::Exporter;
use crate::stats::Results;
use std::fmt::Write;

pub struct Text;

fn ms(us: f64) -> String {
    format!("{:.3}ms", us / 1000.0)
}

impl Exporter for Text {
    fn render(&self, r: &Results) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{}: {:.1} s, {} threads{}",
            r.workload,
            r.duration_s,
            r.threads,
            if r.interrupted { " (interrupted)" } else { "" }
        );
        let _ = writeln!(o, "Per-Operation Breakdown");
        let w = r
            .flowops
            .iter()
            .map(|f| f.name.len())
            .max()
            .unwrap_or(4)
            .max(10);
        let _ = writeln!(
            o,
            "{:<w$} {:>10} {:>10} {:>9} {:>10} {:>10} {:>10} {:>10}",
            "flowop", "ops", "ops/s", "mb/s", "mean", "p50", "p99", "max"
        );
        for f in &r.flowops {
            let _ = write!(
                o,
                "{:<w$} {:>10} {:>10.0} {:>9.1} {:>10} {:>10} {:>10} {:>10}",
                f.name,
                f.ops,
                f.ops_per_s,
                f.mb_per_s,
                ms(f.latency_us.mean),
                ms(f.latency_us.p50),
                ms(f.latency_us.p99),
                ms(f.latency_us.max)
            );
            if f.errors > 0 {
                let _ = write!(o, "  {} errors", f.errors);
            }
            if f.no_resource > 0 {
                let _ = write!(o, "  {} without a file", f.no_resource);
            }
            o.push('\n');
        }
        let s = &r.summary;
        let _ = writeln!(
            o,
            "IO Summary: {} ops {:.3} ops/s {:.0}/{:.0} rd/wr {:.1}mb/s {:.3}ms/op",
            s.ops, s.ops_per_s, s.read_ops_per_s, s.write_ops_per_s, s.mb_per_s, s.mean_latency_ms
        );
        let _ = writeln!(
            o,
            "CPU: {:.2} s user, {:.2} s system",
            s.cpu_user_s, s.cpu_sys_s
        );
        for f in r.flowops.iter().filter(|f| f.first_error.is_some()) {
            let _ = writeln!(
                o,
                "first error in {}: {}",
                f.name,
                f.first_error.as_deref().unwrap_or("")
            );
        }
        for n in &r.notes {
            let _ = writeln!(o, "{n}");
        }
        o
    }
}
