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
        // Filebench's line, byte for byte (scripts parse it); what it means below it.
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
        legend(&mut o, r);
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
        rpcs(&mut o, r, w);
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
        if let Some(line) = cache_line(r) {
            let _ = writeln!(o, "{line}");
        }
        if let Some(hit) = r.read_hit_pct() {
            let _ = writeln!(
                o,
                "Page cache as the reads met it (--cache-stat): {hit:.1}% of the pages read were cached when their read began"
            );
        }
        o
    }
}

/// Whether a flowop row counts in the IO Summary (as `stats::results::counts_in_summary`
/// decides from its kind): rate limits, semaphores, hogs and composites do not.
fn in_summary(f: &crate::stats::FlowopResult) -> bool {
    f.io_class != "none" && f.kind != "composite"
}

/// A row with nothing to say: a flowop outside the IO Summary (a rate limit, say) that
/// counted no operation, error or miss. Left out of the table (it stays in the JSON).
fn measured_nothing(f: &crate::stats::FlowopResult) -> bool {
    !in_summary(f) && f.ops == 0 && f.errors == 0 && f.no_resource == 0 && f.skipped == 0
}

/// One line under the IO Summary saying what its figures are, in the units the code
/// computes them: `mb/s` is bytes ÷ 2^20 ÷ seconds, as Filebench's `stats.c` divides.
fn legend(o: &mut String, r: &Results) {
    let fio = if r.fio_jobs.is_empty() {
        ""
    } else {
        "; fio rows' mb/s: MB/s (10^6 B/s, as fio)"
    };
    let _ = writeln!(
        o,
        "  ops, ops/s, ms/op: I/O and metadata flowops (count, rate, mean latency); rd/wr: read/write ops/s; mb/s: MiB/s (2^20 B/s, as Filebench); cpu/op: user+system CPU per op{fio}"
    );
    let quiet: Vec<&str> = (r.flowops.iter())
        .filter(|f| measured_nothing(f))
        .map(|f| f.name.as_str())
        .collect();
    if !quiet.is_empty() {
        let _ = writeln!(
            o,
            "  not shown: {} (no I/O, nothing counted; in the JSON)",
            quiet.join(", ")
        );
    }
}

/// The share of bytes read above which the report says the page cache served the run.
pub const CACHE_LINE_PCT: f64 = 90.0;

/// When more than [`CACHE_LINE_PCT`] of the bytes read came from the page cache (from the
/// device's own counters, [`Results::cache_hit_pct`]): one line saying so, with the
/// numbers, and what would make the run read the device.
fn cache_line(r: &Results) -> Option<String> {
    let hit = r.cache_hit_pct().filter(|h| *h > CACHE_LINE_PCT)?;
    let read = fsbench_base::units::human_bytes_u64(r.measured_read_bytes());
    let device = fsbench_base::units::human_bytes_u64(r.device_read_bytes.unwrap_or(0));
    let memory = fsbench_base::units::human_bytes_u64(r.host.memory_bytes);
    let mut remedies = Vec::new();
    if !r.cold {
        remedies.push("--cold (drop the cache before measuring)".to_string());
    }
    remedies.push(format!(
        "a data set larger than this machine's {memory} of memory"
    ));
    if !r.fio_jobs.is_empty() {
        remedies.push("direct=1 in the job (O_DIRECT)".into());
    } else if r.figures.is_empty() {
        remedies.push("`directio` on the read flowops (O_DIRECT)".into());
    }
    let last = remedies.pop().unwrap_or_default();
    let remedies = if remedies.is_empty() {
        last
    } else {
        format!("{}, or {last}", remedies.join(", "))
    };
    let why = if r.cold {
        ", although --cold dropped the cache before measuring: the run re-read what it had read once"
    } else {
        ", so these figures measure the cache"
    };
    Some(format!(
        "Page cache: {hit:.1}% of the {read} read came from memory, not the device (it read {device}){why}. To measure the device: {remedies}."
    ))
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
        fsbench_base::units::count(r.threads, "thread"),
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
    for f in r.flowops.iter().filter(|f| !measured_nothing(f)) {
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
        if let Some(p) = &f.page_cache {
            let _ = write!(o, "  {:.1}% of its pages cached when read", p.hit_pct);
        }
        if !in_summary(f) {
            let _ = write!(o, "  (not I/O: not in IO Summary)");
        }
        o.push('\n');
    }
}

/// Over NFS through the relay: each flowop's calls per procedure.
fn rpcs(o: &mut String, r: &Results, w: usize) {
    if r.flowops.iter().all(|f| f.rpcs.is_empty()) {
        return;
    }
    let _ = writeln!(
        o,
        "NFS calls per flowop (counted by the relay; time from call to reply, network included)"
    );
    let _ = writeln!(
        o,
        "{:<w$} {:<13} {:>10} {:>8} {:>10} {:>10} {:>10}",
        "flowop", "procedure", "calls", "per op", "mean", "total", "bytes"
    );
    for f in &r.flowops {
        for c in &f.rpcs {
            let _ = writeln!(
                o,
                "{:<w$} {:<13} {:>10} {:>8.2} {:>10} {:>9.3}s {:>10}",
                f.name,
                c.procedure,
                c.calls,
                c.per_op,
                ms(c.mean_us),
                c.time_s,
                fsbench_base::units::human_bytes_u64(c.bytes)
            );
        }
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
                .map(|b| format!(", read {}", fsbench_base::units::human_bytes_u64(b)))
                .unwrap_or_default()
                + &r.device_write_bytes
                    .map(|b| format!(", wrote {}", fsbench_base::units::human_bytes_u64(b)))
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
    if !r.host.proactive_reclaim.is_empty() {
        let _ = writeln!(
            o,
            "Proactive reclaim: {} (the kernel evicts cached pages it judges idle, with or without memory pressure: a warm run may read the device)",
            r.host.proactive_reclaim
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A run that read `read` bytes through a read flowop, the device `device` of them.
    fn run(read: u64, device: Option<u64>, cold: bool) -> Results {
        let mut r = Results::new("w", "builtin:w", 1, std::path::Path::new("/x"));
        let f: crate::stats::FlowopResult = serde_json::from_value(serde_json::json!({
            "name": "read1", "type": "read", "io_class": "read", "ops": 1, "ops_per_s": 1.0,
            "bytes": read, "mb_per_s": 0.0, "errors": 0, "no_resource": 0,
            "latency_us": {"mean": 1.0, "min": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0,
                "p99": 1.0, "p99_9": 1.0, "p99_99": 1.0, "max": 1.0}
        }))
        .unwrap();
        r.flowops.push(f);
        r.device_read_bytes = device;
        r.cold = cold;
        r.host.memory_bytes = 8 << 30;
        r
    }

    #[test]
    fn the_cache_line_needs_more_than_nine_tenths_from_memory() {
        let mib = 1 << 20;
        let line = cache_line(&run(100 * mib, Some(5 * mib), false)).expect("95% served");
        assert!(
            line.starts_with("Page cache: 95.0% of the 100.0 MiB read"),
            "{line}"
        );
        assert!(
            line.contains("(it read 5.0 MiB)") && line.contains("8.0 GiB"),
            "{line}"
        );
        assert!(
            line.contains("--cold") && line.contains("directio"),
            "{line}"
        );
        assert_eq!(
            cache_line(&run(100 * mib, Some(10 * mib), false)),
            None,
            "90%"
        );
        assert_eq!(cache_line(&run(100 * mib, None, false)), None, "no device");
        assert_eq!(cache_line(&run(0, Some(0), false)), None, "nothing read");
        let cold = cache_line(&run(100 * mib, Some(0), true)).unwrap();
        assert!(cold.contains("although --cold dropped"), "{cold}");
        assert!(!cold.contains("To measure the device: --cold"), "{cold}");
    }
}
