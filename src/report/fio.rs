//! Results of a fio job file in fio's shapes: the text summary (`read: IOPS=…, BW=…` and
//! the completion-latency percentiles per job), and a subset of fio's JSON
//! (`--output-format=json`: `jobs[].read/write/sync` with `iops`, `bw`, `io_bytes`,
//! `runtime`, `total_ios` and `clat_ns` with its `percentile` table) so that scripts that
//! read fio's JSON read these.
//!
//! A fio job's statistics are named `JOB read`, `JOB write` and `JOB sync` (see
//! `fio::map`); every other flowop is left out.

use crate::stats::{FlowopResult, Results};
use serde_json::{json, Map, Value};

/// fio's default completion-latency percentiles.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// A job's statistics: `JOB read`, `JOB write`, and its syncs (fio's JSON lists only
/// `sync`, the fsyncs every N writes).
const DIRS: [&str; 6] = ["read", "write", "sync", "datasync", "end-sync", "runtime"];

type Dirs<'a> = [Option<&'a FlowopResult>; 6];

/// The jobs in order of first appearance, each with its read, write and sync results.
fn jobs(r: &Results) -> Vec<(String, Dirs<'_>)> {
    let mut out: Vec<(String, Dirs<'_>)> = Vec::new();
    for f in &r.flowops {
        let Some((job, dir)) = f.name.rsplit_once(' ') else {
            continue;
        };
        let Some(d) = DIRS.iter().position(|x| *x == dir) else {
            continue;
        };
        match out.iter_mut().find(|(n, _)| n == job) {
            Some((_, v)) => v[d] = Some(f),
            None => {
                let mut v = [None; 6];
                v[d] = Some(f);
                out.push((job.to_string(), v));
            }
        }
    }
    out
}

/// The jobs that failed, as fio ends with a nonzero status when a job had an error: each
/// job's failed operations and first error.
pub fn failures(r: &Results) -> Vec<String> {
    jobs(r)
        .into_iter()
        .filter_map(|(job, dirs)| {
            let errors: u64 = dirs.iter().flatten().map(|f| f.errors).sum();
            (errors > 0).then(|| {
                let first = dirs.iter().flatten().find_map(|f| f.first_error.clone());
                format!(
                    "job {job}: {errors} failed operation(s){}",
                    first.map_or(String::new(), |e| format!(", the first: {e}"))
                )
            })
        })
        .collect()
}

/// The `p`th percentile (0-100) of a histogram of `[value_ns, count]` buckets, in ns.
pub fn percentile(hist: &[[u64; 2]], p: f64) -> u64 {
    let total: u64 = hist.iter().map(|b| b[1]).sum();
    if total == 0 {
        return 0;
    }
    let rank = ((p / 100.0) * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for b in hist {
        seen += b[1];
        if seen >= rank {
            return b[0];
        }
    }
    hist.last().map_or(0, |b| b[0])
}

/// fio's way of printing a count: up to four digits, then k, M, G.
fn num(v: f64) -> String {
    let units = ["", "k", "M", "G", "T"];
    let mut x = v;
    let mut i = 0;
    while x >= 10_000.0 && i < units.len() - 1 {
        x /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{}", x.round() as u64)
    } else if x >= 100.0 {
        format!("{}{}", x.round() as u64, units[i])
    } else {
        format!("{x:.1}{}", units[i])
    }
}

fn mib(bytes_per_s: f64) -> String {
    format!(
        "{}/s ({:.1}MB/s)",
        crate::units::human_bytes(bytes_per_s).replace(' ', ""),
        bytes_per_s / 1e6
    )
}

/// A job's runtime in seconds, as fio takes it: the longest of its clones' (the `JOB
/// runtime` statistic), else the run's.
fn runtime_s(r: &Results, dirs: &Dirs<'_>) -> f64 {
    match dirs[5] {
        Some(t) if t.ops > 0 && t.latency_us.max > 0.0 => t.latency_us.max / 1e6,
        _ => r.duration_s,
    }
}

/// The text summary, one block per job as fio prints them: rates over the job's runtime.
pub fn text(r: &Results) -> String {
    let mut o = String::new();
    for (job, dirs) in jobs(r) {
        let secs = runtime_s(r, &dirs).max(1e-9);
        let ms = (secs * 1000.0).round() as u64;
        // fio prints the job's error number; fsbench, how many operations failed.
        let errors: u64 = dirs.iter().flatten().map(|f| f.errors).sum();
        o.push_str(&format!("{job}: (groupid=0): err= {errors}\n"));
        if let Some(e) = dirs.iter().flatten().find_map(|f| f.first_error.as_ref()) {
            o.push_str(&format!("  first error: {e}\n"));
        }
        for (d, f) in DIRS.iter().zip(dirs.iter()) {
            let Some(f) = f else { continue };
            if *d == "runtime" {
                continue;
            }
            if !matches!(*d, "read" | "write") {
                let what = match *d {
                    "sync" => "fsync",
                    "datasync" => "fdatasync",
                    _ => "end fsync",
                };
                o.push_str(&format!(
                    "  {what}: {} syncs, avg={:.2}usec, max={:.2}usec\n",
                    f.ops, f.latency_us.mean, f.latency_us.max
                ));
                continue;
            }
            o.push_str(&format!(
                "  {d}: IOPS={}, BW={}({}/{ms}msec)\n",
                num(f.ops as f64 / secs),
                mib(f.bytes as f64 / secs),
                crate::units::human_bytes(f.bytes as f64).replace(' ', "")
            ));
            let l = &f.latency_us;
            o.push_str(&format!(
                "    clat (usec): min={:.0}, max={:.0}, avg={:.2}\n",
                l.min, l.max, l.mean
            ));
            o.push_str("    clat percentiles (usec):\n");
            let cells: Vec<String> = PERCENTILES
                .iter()
                .map(|p| {
                    let us = percentile(&f.histogram_ns, *p) as f64 / 1000.0;
                    format!("{p:5.2}th=[{:>5}]", us.round() as u64)
                })
                .collect();
            for row in cells.chunks(4) {
                o.push_str(&format!("     | {},\n", row.join(", ")));
            }
        }
        let cpu = &r.summary;
        o.push_str(&format!(
            "  cpu          : usr={:.2}%, sys={:.2}%\n",
            100.0 * cpu.cpu_user_s / r.duration_s.max(1e-9),
            100.0 * cpu.cpu_sys_s / r.duration_s.max(1e-9),
        ));
    }
    o
}

fn dir_json(f: Option<&FlowopResult>, runtime_ms: u64, secs: f64) -> Value {
    let Some(f) = f else {
        return json!({
            "io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0,
            "runtime": 0, "total_ios": 0,
            "clat_ns": {"min": 0, "max": 0, "mean": 0.0, "N": 0}
        });
    };
    let bw_bytes = (f.bytes as f64 / secs.max(1e-9)) as u64;
    let mut pct = Map::new();
    for p in PERCENTILES {
        pct.insert(format!("{p:.6}"), json!(percentile(&f.histogram_ns, p)));
    }
    let l = &f.latency_us;
    json!({
        "io_bytes": f.bytes,
        "io_kbytes": f.bytes / 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes / 1024,
        "iops": f.ops as f64 / secs.max(1e-9),
        "runtime": runtime_ms,
        "total_ios": f.ops,
        "clat_ns": {
            "min": (l.min * 1000.0) as u64,
            "max": (l.max * 1000.0) as u64,
            "mean": l.mean * 1000.0,
            "N": f.ops,
            "percentile": Value::Object(pct),
        }
    })
}

/// The subset of fio's JSON output.
pub fn json(r: &Results) -> Value {
    let jobs: Vec<Value> = jobs(r)
        .into_iter()
        .map(|(name, d)| {
            let secs = runtime_s(r, &d);
            let ms = (secs * 1000.0).round() as u64;
            let sync = d[2].map(|f| {
                json!({
                    "total_ios": f.ops,
                    "lat_ns": {
                        "min": (f.latency_us.min * 1000.0) as u64,
                        "max": (f.latency_us.max * 1000.0) as u64,
                        "mean": f.latency_us.mean * 1000.0,
                        "N": f.ops,
                    }
                })
            });
            json!({
                "jobname": name,
                "groupid": 0,
                "error": 0,
                "read": dir_json(d[0], ms, secs),
                "write": dir_json(d[1], ms, secs),
                "sync": sync.unwrap_or_else(|| json!({"total_ios": 0})),
                "job_runtime": ms,
                "usr_cpu": 100.0 * r.summary.cpu_user_s / r.duration_s.max(1e-9),
                "sys_cpu": 100.0 * r.summary.cpu_sys_s / r.duration_s.max(1e-9),
            })
        })
        .collect();
    json!({
        "fio version": format!("fsbench-{}", r.fsbench_version),
        "timestamp": r.started_at as u64,
        "time": "",
        "jobs": jobs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_from_buckets() {
        let h = [[1000, 50], [2000, 40], [9000, 10]];
        assert_eq!(percentile(&h, 1.0), 1000);
        assert_eq!(percentile(&h, 50.0), 1000);
        assert_eq!(percentile(&h, 51.0), 2000);
        assert_eq!(percentile(&h, 90.0), 2000);
        assert_eq!(percentile(&h, 99.99), 9000);
        assert_eq!(percentile(&[], 50.0), 0);
    }

    #[test]
    fn counts_print_as_fio_prints_them() {
        assert_eq!(num(245.0), "245");
        assert_eq!(num(9999.0), "9999");
        assert_eq!(num(12_345.0), "12.3k");
        assert_eq!(num(245_000.0), "245k");
        assert_eq!(num(1_234_567.0), "1235k");
    }
}
