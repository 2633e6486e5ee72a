//! The terminal report: Filebench's per-operation breakdown and IO summary, with latency
//! percentiles and CPU per operation; with repetitions, mean ± 95% confidence interval and
//! coefficient of variation.

use super::Exporter;
use crate::stats::repeat::spread;
use crate::stats::Results;
use std::fmt::Write;

pub struct Text;

fn ms(us: f64) -> String {
    format!("{:.3}ms", us / 1000.0)
}

impl Exporter for Text {
    fn render(&self, r: &Results) -> String {
        let mut o = String::new();
        header(&mut o, r);
        let w = r
            .flowops
            .iter()
            .map(|f| f.name.len())
            .max()
            .unwrap_or(4)
            .max(10);
        breakdown(&mut o, r, w);
        let s = &r.summary;
        let _ = writeln!(
            o,
            "IO Summary: {} ops {:.3} ops/s {:.0}/{:.0} rd/wr {:.1}mb/s {:.3}ms/op {:.1}us cpu/op",
            s.ops,
            s.ops_per_s,
            s.read_ops_per_s,
            s.write_ops_per_s,
            s.mb_per_s,
            s.mean_latency_ms,
            s.cpu_us_per_op
        );
        if r.repetitions.len() > 1 {
            repetitions(&mut o, r, w);
        }
        let _ = writeln!(
            o,
            "CPU: {:.2} s user, {:.2} s system; timing overhead {:.0} ns/op ({} clock)",
            s.cpu_user_s, s.cpu_sys_s, r.calibration.overhead_ns_per_op, r.calibration.clock
        );
        for f in r.flowops.iter().filter(|f| f.first_error.is_some()) {
            let _ = writeln!(
                o,
                "first error in {}: {}",
                f.name,
                f.first_error.as_deref().unwrap_or("")
            );
        }
        for c in r
            .layout
            .content
            .iter()
            .filter(|c| c.requested_compress_pct > 0 || c.requested_dedupe_pct > 0)
        {
            let _ = writeln!(
                o,
                "content of {}: compress {:.1}% (asked {}%, LZ4 ratio {:.2}), dedupe {:.1}% (asked {}%), on a {} KiB sample",
                c.fileset,
                c.compress_pct,
                c.requested_compress_pct,
                c.compression_ratio,
                c.dedupe_pct,
                c.requested_dedupe_pct,
                c.sample_bytes / 1024
            );
        }
        device_and_shares(&mut o, r);
        figures(&mut o, r);
        ranks(&mut o, r);
        for n in &r.notes {
            let _ = writeln!(o, "{n}");
        }
        o
    }
}

/// The first line: workload, duration, threads, file system and device, cache, interruption.
fn header(o: &mut String, r: &Results) {
    let _ = writeln!(
        o,
        "{}: {:.1} s{}, {}, {} on {} ({}){}",
        r.workload,
        r.duration_s,
        if r.repetitions.len() > 1 {
            format!(" in {} repetitions", r.repetitions.len())
        } else {
            String::new()
        },
        super::count(r.threads, "thread"),
        if r.host.fs_type.is_empty() {
            "?"
        } else {
            &r.host.fs_type
        },
        if r.host.device.is_empty() {
            "?"
        } else {
            &r.host.device
        },
        if r.cold { "cold cache" } else { "warm cache" },
        if r.interrupted { " (interrupted)" } else { "" }
    );
}

/// Filebench's per-operation breakdown, with percentiles and CPU per operation.
fn breakdown(o: &mut String, r: &Results, w: usize) {
    let _ = writeln!(o, "Per-Operation Breakdown");
    let _ = writeln!(
        o,
        "{:<w$} {:>10} {:>10} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}",
        "flowop", "ops", "ops/s", "mb/s", "mean", "p50", "p99", "p99.9", "max", "cpu/op"
    );
    for f in &r.flowops {
        let l = &f.latency_us;
        let _ = write!(
            o,
            "{:<w$} {:>10} {:>10.0} {:>9.1} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7.1}us",
            f.name,
            f.ops,
            f.ops_per_s,
            f.mb_per_s,
            ms(l.mean),
            ms(l.p50),
            ms(l.p99),
            ms(l.p99_9),
            ms(l.max),
            f.cpu_us_per_op
        );
        if f.errors > 0 {
            let _ = write!(o, "  {} errors", f.errors);
        }
        if f.no_resource > 0 {
            let _ = write!(o, "  {} without a file", f.no_resource);
        }
        if f.skipped > 0 {
            let _ = write!(o, "  {} skipped (file open elsewhere)", f.skipped);
        }
        o.push('\n');
    }
}

/// Mean ± 95% interval and CV over the repetitions, overall and per flowop.
fn repetitions(o: &mut String, r: &Results, w: usize) {
    let ops: Vec<f64> = r.repetitions.iter().map(|p| p.summary.ops_per_s).collect();
    let mb: Vec<f64> = r.repetitions.iter().map(|p| p.summary.mb_per_s).collect();
    let lat: Vec<f64> = r
        .repetitions
        .iter()
        .map(|p| p.summary.mean_latency_ms)
        .collect();
    let (a, b, c) = (spread(&ops), spread(&mb), spread(&lat));
    let _ = writeln!(
        o,
        "Repetitions: {:.1} ± {:.1} ops/s (CV {:.1}%), {:.1} ± {:.1} mb/s (CV {:.1}%), {:.3} ± {:.3} ms/op (CV {:.1}%), 95% confidence",
        a.mean, a.ci95, a.cv * 100.0, b.mean, b.ci95, b.cv * 100.0, c.mean, c.ci95, c.cv * 100.0
    );
    for (i, f) in r.flowops.iter().enumerate() {
        let v: Vec<f64> = r
            .repetitions
            .iter()
            .filter_map(|p| p.flowops.get(i).map(|x| x[0]))
            .collect();
        let sp = spread(&v);
        let _ = writeln!(
            o,
            "  {:<w$} {:.1} ± {:.1} ops/s (CV {:.1}%)",
            f.name,
            sp.mean,
            sp.ci95,
            sp.cv * 100.0
        );
    }
}

/// The device's busy time beside the throughput, and each process's share of the bytes.
fn device_and_shares(o: &mut String, r: &Results) {
    if let Some(busy) = r.device_busy_s {
        let _ = writeln!(
            o,
            "Device: busy {busy:.2} s of {:.2} s ({:.1}% utilised){}",
            r.duration_s,
            if r.duration_s > 0.0 {
                busy / r.duration_s * 100.0
            } else {
                0.0
            },
            r.device_read_bytes
                .map(|b| format!(", read {}", crate::units::human_bytes_u64(b)))
                .unwrap_or_default()
        );
    }
    if let Some(pct) = r.cpu_busy_pct() {
        let _ = writeln!(
            o,
            "Machine CPU: {pct:.1}% busy over the measured window ({} CPUs)",
            r.host.cpus
        );
    }
    if !r.processes.is_empty() {
        let parts: Vec<String> = r
            .processes
            .iter()
            .map(|p| format!("{} {:.1}mb/s ({:.1}%)", p.name, p.mb_per_s, p.share * 100.0))
            .collect();
        let total: f64 = r.processes.iter().map(|p| p.mb_per_s).sum();
        let _ = writeln!(
            o,
            "Shares of the bytes: {}; together {total:.1}mb/s",
            parts.join(", ")
        );
    }
}

/// The named figures of an application benchmark (top-level ones; per-instance and
/// per-client figures, named `instance.N.*` and `client.N.*`, are in the JSON), with mean
/// ± 95% confidence interval and CV over repetitions.
fn figures(o: &mut String, r: &Results) {
    let top: Vec<(&String, &f64)> = r.figures.iter().filter(|(k, _)| !k.contains('.')).collect();
    if top.is_empty() {
        return;
    }
    let parts = r.figures.len() - top.len();
    let _ = writeln!(
        o,
        "Figures{}{}:",
        if r.repetitions.len() > 1 {
            " (mean ± 95% confidence, CV)"
        } else {
            ""
        },
        if parts > 0 {
            format!("; {parts} more per instance or client in the JSON")
        } else {
            String::new()
        }
    );
    let w = top.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in top {
        let reps: Vec<f64> = r
            .repetitions
            .iter()
            .filter_map(|p| p.figures.get(k).copied())
            .collect();
        if reps.len() > 1 {
            let s = spread(&reps);
            let _ = writeln!(
                o,
                "  {k:<w$} {} ± {} (CV {:.1}%)",
                num(s.mean),
                num(s.ci95),
                s.cv * 100.0
            );
        } else {
            let _ = writeln!(o, "  {k:<w$} {}", num(*v));
        }
    }
}

/// Many clients: one line per rank, so stragglers show beside the merged figures.
fn ranks(o: &mut String, r: &Results) {
    if r.ranks.is_empty() {
        return;
    }
    let t0 = r
        .ranks
        .iter()
        .map(|x| x.started_at)
        .fold(f64::INFINITY, f64::min);
    let _ = writeln!(
        o,
        "Ranks\nrank  host                      ops/s      mb/s    p99(ms)   start(ms)  time(s)  notes"
    );
    for x in &r.ranks {
        let _ = writeln!(
            o,
            "{:<5} {:<20} {:>10.0} {:>9.1} {:>10.3} {:>11.1} {:>8.2}  {}",
            x.rank,
            x.host,
            x.ops_per_s,
            x.mb_per_s,
            x.p99_us / 1000.0,
            (x.started_at - t0) * 1000.0,
            x.duration_s,
            x.notes.join("; ")
        );
    }
}

/// A figure with about four significant digits, integers as integers.
fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.4}")
    }
}
