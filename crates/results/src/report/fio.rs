//! Results of a fio job file in fio's shapes, from each clone's record (`stats::fiojob`):
//! the normal output (a block per job with its own rates over its own runtime, latencies,
//! percentiles, bandwidth and IOPS samples, CPU, queue depths and latency buckets; then
//! "Run status group" and "Disk stats"), fio's JSON and `json+` ([`super::fio_json`]), its
//! terse line ([`super::fio_terse`]) and its log files ([`super::fio_log`]).
//!
//! Clones that report together (`group_reporting`) are merged as fio's
//! `sum_thread_stats` merges them; a group's line sums its jobs as fio's `show_run_stats`.

use crate::stats::fiojob::{FioClone, FioDir, Moments, LAT_MS_STEPS, LAT_STEPS};
use crate::stats::Results;
use std::fmt::Write as _;

/// One report: a clone, or the clones reported together, merged.
#[derive(Debug, Clone)]
pub struct Report {
    pub name: String,
    pub jobs: u32,
    pub c: FioClone,
}

/// The reports of a run, in the order of their first clone.
pub fn reports(r: &Results) -> Vec<Report> {
    let mut clones: Vec<&FioClone> = r.fio_jobs.iter().collect();
    clones.sort_by_key(|c| c.thread_number);
    let mut out: Vec<Report> = Vec::new();
    for c in clones {
        match out.iter_mut().find(|x| x.name == c.report) {
            Some(x) => {
                x.c.merge(c);
                x.jobs += 1;
            }
            None => out.push(Report {
                name: c.report.clone(),
                jobs: 1,
                c: c.clone(),
            }),
        }
    }
    out
}

/// A group's figures for one direction, as fio's `group_run_stats`: bytes, the shortest
/// and longest runtime (ms), the slowest and fastest job (bytes/s) and the aggregate.
#[derive(Debug, Clone, Copy, Default)]
pub struct GroupDir {
    pub io_bytes: u64,
    pub min_run_ms: u64,
    pub max_run_ms: u64,
    pub min_bw: u64,
    pub max_bw: u64,
    pub agg_bw: u64,
}

/// The groups (`groupid`) in order, each with its read and write figures.
pub fn groups(reports: &[Report]) -> Vec<(u32, [GroupDir; 2])> {
    let mut ids: Vec<u32> = reports.iter().map(|r| r.c.group).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .map(|g| {
            let mut dirs = [GroupDir::default(); 2];
            for (d, gd) in dirs.iter_mut().enumerate() {
                let mut first = true;
                for rep in reports.iter().filter(|r| r.c.group == g) {
                    let x = &rep.c.dirs[d];
                    let ms = runtime_ms(x);
                    if ms == 0 {
                        continue;
                    }
                    let bw = x.io_bytes * 1000 / ms;
                    if first {
                        (gd.min_run_ms, gd.min_bw) = (ms, bw);
                        first = false;
                    }
                    gd.min_run_ms = gd.min_run_ms.min(ms);
                    gd.max_run_ms = gd.max_run_ms.max(ms);
                    gd.min_bw = gd.min_bw.min(bw);
                    gd.max_bw = gd.max_bw.max(bw);
                    gd.io_bytes += x.io_bytes;
                }
                gd.agg_bw = (gd.io_bytes * 1000).checked_div(gd.max_run_ms).unwrap_or(0);
            }
            (g, dirs)
        })
        .collect()
}

/// A direction's runtime in ms, as fio rounds it.
pub fn runtime_ms(d: &FioDir) -> u64 {
    if d.total_ios == 0 {
        return 0;
    }
    ((d.runtime_ns as f64 / 1e6).round() as u64).max(1)
}

/// A direction's bytes per second and I/Os per second over its runtime.
pub fn rates(d: &FioDir) -> (u64, f64) {
    let secs = d.runtime_ns as f64 / 1e9;
    if secs <= 0.0 {
        return (0, 0.0);
    }
    ((d.io_bytes as f64 / secs) as u64, d.total_ios as f64 / secs)
}

/// The jobs that failed, as fio ends with a nonzero status when a job had an error: each
/// report's failed operations and first error.
pub fn failures(r: &Results) -> Vec<String> {
    reports(r)
        .into_iter()
        .filter(|x| x.c.errors > 0)
        .map(|x| {
            format!(
                "job {}: {} failed operation(s){}",
                x.name,
                x.c.errors,
                x.c.first_error
                    .as_ref()
                    .map_or(String::new(), |e| format!(", the first: {e}"))
            )
        })
        .collect()
}

/// fio's way of printing a count: up to four digits, then k, M, G.
pub fn num(v: f64) -> String {
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

/// fio's `num2str(v, maxlen, 1, 0)`: at most `maxlen` digits, else thousands with a suffix
/// and what decimals fit.
pub fn num2str(v: u64, maxlen: usize) -> String {
    let units = ["", "k", "M", "G", "T", "P"];
    let (mut x, mut rem, mut i) = (v, 0u64, 0);
    while x.to_string().len() > maxlen && i < units.len() - 1 {
        rem = x % 1000;
        x /= 1000;
        i += 1;
    }
    let digits = x.to_string().len();
    if i == 0 || digits + 1 >= maxlen {
        return format!("{x}{}", units[i]);
    }
    let post = (maxlen - digits - 1).min(3);
    let frac = format!("{:03}", rem);
    format!("{x}.{}{}", &frac[..post], units[i])
}

fn mib(bytes_per_s: f64) -> String {
    format!("{}/s ({}/s)", iec(bytes_per_s), si(bytes_per_s))
}

/// fio's binary units (`16.0MiB`).
pub fn iec(b: f64) -> String {
    fsbench_base::units::human_bytes(b).replace(' ', "")
}

/// fio's decimal units (`16.8MB`).
pub fn si(b: f64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB", "PB"];
    let (mut x, mut i) = (b, 0);
    while x >= 1000.0 && i < units.len() - 1 {
        x /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{x:.0}{}", units[i])
    } else {
        format!("{x:.1}{}", units[i])
    }
}

/// The unit fio shows latencies of these moments in, and the divisor: ns, µs above 2 µs
/// minimum and 100 µs maximum, ms above 2 ms minimum and 100 ms maximum.
fn lat_unit(m: &Moments) -> (&'static str, f64) {
    if m.min > 2_000_000.0 && m.max > 99_999_999.0 {
        ("msec", 1e6)
    } else if m.min > 2000.0 && m.max > 99_999.0 {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    }
}

fn lat_line(o: &mut String, what: &str, m: &Moments) {
    if m.n == 0 {
        return;
    }
    let (unit, div) = lat_unit(m);
    let _ = writeln!(
        o,
        "    {what:>4} ({unit}): min={}, max={}, avg={:.2}, stdev={:.2}",
        num2str((m.min / div) as u64, 6),
        num2str((m.max / div) as u64, 6),
        m.mean / div,
        m.stddev() / div
    );
}

fn percentile_lines(o: &mut String, what: &str, c: &FioClone, bins: &crate::stats::fiojob::Plat) {
    let list = &c.out.percentiles;
    if bins.total() == 0 || list.is_empty() {
        return;
    }
    let vals = bins.percentiles(list);
    let (min, max) = (vals[0], *vals.last().expect("not empty"));
    let (unit, div) = if min > 2_000_000 && max > 99_999_999 {
        ("msec", 1_000_000)
    } else if min > 2000 && max > 99_999 {
        ("usec", 1000)
    } else {
        ("nsec", 1)
    };
    let _ = writeln!(o, "    {what} percentiles ({unit}):");
    let cells: Vec<String> = (list.iter().zip(&vals))
        .map(|(p, v)| format!("{p:5.2}th=[{:>5}]", v / div))
        .collect();
    for row in cells.chunks(4) {
        let _ = writeln!(o, "     | {},", row.join(", "));
    }
}

fn samples_lines(o: &mut String, d: &FioDir, agg_kib: f64) {
    let (bw, io) = (&d.bw, &d.iops);
    if bw.n > 0 {
        let per = if agg_kib > 0.0 {
            bw.mean * 100.0 / agg_kib
        } else {
            0.0
        };
        let _ = writeln!(
            o,
            "   bw (  KiB/s): min={:5}, max={:5}, per={per:3.2}%, avg={:5.2}, stdev={:5.2}, samples={}",
            bw.min as u64, bw.max as u64, bw.mean, bw.stddev(), bw.n
        );
    }
    if io.n > 0 {
        let _ = writeln!(
            o,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            io.min as u64,
            io.max as u64,
            io.mean,
            io.stddev(),
            io.n
        );
    }
}

fn dir_block(o: &mut String, rep: &Report, d: usize, agg: &GroupDir) {
    let x = &rep.c.dirs[d];
    if x.total_ios == 0 {
        return;
    }
    let (bps, iops) = rates(x);
    let _ = writeln!(
        o,
        "  {}: IOPS={}, BW={}({}/{}msec)",
        ["read", "write"][d],
        num(iops),
        mib(bps as f64),
        iec(x.io_bytes as f64),
        runtime_ms(x)
    );
    lat_line(o, "slat", &x.slat);
    lat_line(o, "clat", &x.clat);
    lat_line(o, "lat", &x.lat);
    let c = &rep.c;
    if c.out.slat_percentiles {
        percentile_lines(o, "slat", c, &x.slat_bins);
    }
    if c.out.clat_percentiles {
        percentile_lines(o, "clat", c, &x.clat_bins);
    }
    if c.out.lat_percentiles {
        percentile_lines(o, " lat", c, &x.lat_bins);
    }
    samples_lines(o, x, agg.agg_bw as f64 / 1024.0);
}

/// fio's `show_lat`: the buckets holding samples, five a line.
fn lat_buckets(o: &mut String, c: &FioClone) {
    let total: u64 = c.dirs.iter().map(|d| d.total_ios).sum();
    if total == 0 {
        return;
    }
    let rows: [(&str, Vec<(String, u64)>); 3] = [
        (
            "nsec",
            LAT_STEPS
                .iter()
                .map(|s| s.to_string())
                .zip(c.lat_n)
                .collect(),
        ),
        (
            "usec",
            LAT_STEPS
                .iter()
                .map(|s| s.to_string())
                .zip(c.lat_u)
                .collect(),
        ),
        (
            "msec",
            (LAT_MS_STEPS.iter().enumerate())
                .map(|(i, s)| {
                    if i == 11 {
                        ">=2000".into()
                    } else {
                        s.to_string()
                    }
                })
                .zip(c.lat_m)
                .collect(),
        ),
    ];
    for (unit, cells) in rows {
        let shown: Vec<String> = (cells.iter())
            .filter(|(_, n)| *n > 0)
            .map(|(l, n)| format!("{l}={:.2}%", 100.0 * *n as f64 / total as f64))
            .collect();
        for line in shown.chunks(5) {
            let _ = writeln!(o, "  lat ({unit})   : {}", line.join(", "));
        }
    }
}

/// fio's `stat_calc_dist`: percentages, a share under 0.1% shown as 0.1%.
pub fn dist(counts: &[u64; 7], total: u64) -> [f64; 7] {
    let mut out = [0.0; 7];
    if total == 0 {
        return out;
    }
    for (o, c) in out.iter_mut().zip(counts) {
        *o = 100.0 * *c as f64 / total as f64;
        if *o > 0.0 && *o < 0.1 {
            *o = 0.1;
        }
    }
    out
}

fn depth_lines(o: &mut String, c: &FioClone) {
    let ios: u64 = c.dirs.iter().map(|d| d.total_ios).sum();
    let row = |labels: [&str; 7], v: [f64; 7]| -> String {
        (labels.iter().zip(v))
            .map(|(l, x)| format!("{l}={x:.1}%"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let levels = ["1", "2", "4", "8", "16", "32", ">=64"];
    let batches = ["0", "4", "8", "16", "32", "64", ">=64"];
    let _ = writeln!(o, "  IO depths    : {}", row(levels, dist(&c.depth, ios)));
    let _ = writeln!(
        o,
        "     submit    : {}",
        row(batches, dist(&c.submit, c.total_submit))
    );
    let _ = writeln!(
        o,
        "     complete  : {}",
        row(batches, dist(&c.complete, c.total_complete))
    );
    let _ = writeln!(
        o,
        "     issued rwts: total={},{},0,{} short={},{},0,0 dropped=0,0,0,0",
        c.dirs[0].total_ios,
        c.dirs[1].total_ios,
        c.sync_ios,
        c.dirs[0].short_ios,
        c.dirs[1].short_ios
    );
    if c.out.continue_on_error {
        let _ = writeln!(
            o,
            "     errors    : total={}, first_error={}/<{}>",
            c.total_err,
            c.first_errno,
            strerror(c.first_errno)
        );
    }
    let _ = writeln!(
        o,
        "     latency   : target=0, window=0, percentile=100.00%, depth={}",
        c.out.iodepth
    );
}

/// C's `strerror`: the system's words for error number `n` ("Success" for 0).
fn strerror(n: i32) -> String {
    let s = std::io::Error::from_raw_os_error(n).to_string();
    s.split(" (os error").next().unwrap_or_default().to_string()
}

fn job_block(o: &mut String, rep: &Report, group: &[GroupDir; 2]) {
    let c = &rep.c;
    let _ = writeln!(
        o,
        "{}: (groupid={}, jobs={}): err= {}: pid={}",
        rep.name,
        c.group,
        rep.jobs,
        c.error_code(),
        std::process::id()
    );
    if let Some(e) = &c.first_error {
        let _ = writeln!(o, "  first error: {e}");
    }
    for (d, g) in group.iter().enumerate() {
        dir_block(o, rep, d, g);
    }
    lat_buckets(o, c);
    if c.sync.n > 0 {
        let _ = writeln!(o, "  fsync/fdatasync/sync_file_range:");
        lat_line(o, "sync", &c.sync);
        percentile_lines(o, "sync", c, &c.sync_bins);
    }
    if let Some(v) = &c.verify {
        let _ = writeln!(o, "  verify: {}", verify_text(v));
    }
    let secs = (c.runtime_ns as f64 / 1e9).max(1e-9);
    let _ = writeln!(
        o,
        "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}, majf={}, minf={}",
        100.0 * c.usr_s / secs / rep.jobs as f64,
        100.0 * c.sys_s / secs / rep.jobs as f64,
        c.ctx,
        c.majf,
        c.minf
    );
    depth_lines(o, c);
}

/// What a verifying job checked, in a line.
pub fn verify_text(v: &crate::stats::fiojob::FioVerify) -> String {
    let first = v.first_bad.as_ref().map_or(String::new(), |(f, off)| {
        format!(", first bad block: file {f} offset {off}")
    });
    format!(
        "{} blocks checked, {} mismatches{first}",
        v.blocks, v.mismatches
    )
}

fn group_lines(o: &mut String, g: u32, dirs: &[GroupDir; 2]) {
    let _ = writeln!(o, "\nRun status group {g} (all jobs):");
    for (d, x) in dirs.iter().enumerate() {
        if x.max_run_ms == 0 {
            continue;
        }
        let _ = writeln!(
            o,
            "{:>7}: bw={}, {}/s-{}/s ({}/s-{}/s), io={} ({}), run={}-{}msec",
            ["READ", "WRITE"][d],
            mib(x.agg_bw as f64),
            iec(x.min_bw as f64),
            iec(x.max_bw as f64),
            si(x.min_bw as f64),
            si(x.max_bw as f64),
            iec(x.io_bytes as f64),
            si(x.io_bytes as f64),
            x.min_run_ms,
            x.max_run_ms
        );
    }
}

fn disk_lines(o: &mut String, r: &Results) {
    let Some(d) = &r.disk_stats else { return };
    let _ = writeln!(o, "\nDisk stats (read/write):");
    let _ = writeln!(
        o,
        "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
        d.name,
        d.read_ios,
        d.write_ios,
        d.read_merges,
        d.write_merges,
        d.read_ticks,
        d.write_ticks,
        d.in_queue,
        d.util
    );
}

/// fio's normal output.
pub fn text(r: &Results) -> String {
    let reps = reports(r);
    let groups = groups(&reps);
    let mut o = String::new();
    for rep in &reps {
        let g = groups
            .iter()
            .find(|(id, _)| *id == rep.c.group)
            .map_or([GroupDir::default(); 2], |x| x.1);
        job_block(&mut o, rep, &g);
    }
    for (g, dirs) in &groups {
        group_lines(&mut o, *g, dirs);
    }
    disk_lines(&mut o, r);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_print_as_fio_prints_them() {
        assert_eq!(num(245.0), "245");
        assert_eq!(num(9999.0), "9999");
        assert_eq!(num(12_345.0), "12.3k");
        assert_eq!(num(245_000.0), "245k");
        assert_eq!(num(1_234_567.0), "1235k");
        assert_eq!(num2str(8947, 6), "8947");
        assert_eq!(num2str(7_642_390, 6), "7642.3k");
        assert_eq!(si(16_777_216.0), "16.8MB");
        assert_eq!(iec(16_777_216.0), "16.0MiB");
    }

    #[test]
    fn groups_sum_their_jobs_over_the_longest_runtime() {
        let mut a = FioClone {
            report: "a".into(),
            thread_number: 1,
            ..Default::default()
        };
        a.dirs[0].io_bytes = 1000;
        a.dirs[0].total_ios = 10;
        a.dirs[0].runtime_ns = 1_000_000_000;
        let mut b = a.clone();
        b.report = "b".into();
        b.thread_number = 2;
        b.dirs[0].runtime_ns = 2_000_000_000;
        let mut c = a.clone();
        c.report = "c".into();
        c.thread_number = 3;
        c.group = 1;
        let r = Results {
            fio_jobs: vec![a, b, c],
            ..Results::new("x", "x", 0, std::path::Path::new("/"))
        };
        let reps = reports(&r);
        let g = groups(&reps);
        assert_eq!(g.len(), 2);
        let g0 = g[0].1[0];
        assert_eq!(
            (g0.io_bytes, g0.min_run_ms, g0.max_run_ms),
            (2000, 1000, 2000)
        );
        assert_eq!((g0.min_bw, g0.max_bw, g0.agg_bw), (500, 1000, 1000));
        let t = text(&r);
        assert!(t.contains("Run status group 1 (all jobs):"), "{t}");
        assert!(t.contains("c: (groupid=1, jobs=1)"), "{t}");
    }
}
