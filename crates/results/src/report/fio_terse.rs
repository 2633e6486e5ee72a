//! fio's terse output, version 3 (`--output-format=terse`): one line of `;`-separated
//! fields per job, in the order of fio's HOWTO ("Terse output"): read then write (kB,
//! bandwidth, IOPS, runtime, slat, clat, 20 percentile fields, lat, bandwidth samples),
//! CPU, queue depths, latency buckets (µs with the ns ones folded into the first, then ms)
//! and the disk.

use super::fio::{dist, groups, rates, reports, runtime_ms, GroupDir, Report};
use crate::stats::fiojob::{FioDir, Moments};
use crate::stats::Results;

fn lat_us(m: &Moments) -> String {
    if m.n == 0 {
        return "0;0;0.000000;0.000000".into();
    }
    format!(
        "{};{};{:.6};{:.6}",
        (m.min / 1000.0) as u64,
        (m.max / 1000.0) as u64,
        m.mean / 1000.0,
        m.stddev() / 1000.0
    )
}

fn dir_fields(rep: &Report, x: &FioDir, g: &GroupDir) -> Vec<String> {
    let (bps, iops) = rates(x);
    let mut f = vec![
        (x.io_bytes / 1024).to_string(),
        (bps / 1024).to_string(),
        format!("{}", iops.round() as u64),
        runtime_ms(x).to_string(),
        lat_us(&x.slat),
        lat_us(&x.clat),
    ];
    let list = &rep.c.out.percentiles;
    let vals = if x.clat.n > 0 && rep.c.out.clat_percentiles {
        x.clat_bins.percentiles(list)
    } else {
        vec![0; list.len()]
    };
    for i in 0..20 {
        f.push(match (list.get(i), vals.get(i)) {
            (Some(p), Some(v)) if rep.c.out.clat_percentiles => format!("{p:.6}%={}", v / 1000),
            _ => "0%=0".into(),
        });
    }
    f.push(lat_us(&x.lat));
    let agg_kib = g.agg_bw as f64 / 1024.0;
    let b = &x.bw;
    if b.n > 0 {
        let per = if agg_kib > 0.0 {
            b.mean * 100.0 / agg_kib
        } else {
            0.0
        };
        f.push(format!(
            "{};{};{per:.6}%;{:.6};{:.6}",
            b.min as u64,
            b.max as u64,
            b.mean,
            b.stddev()
        ));
    } else {
        f.push("0;0;0.000000%;0.000000;0.000000".into());
    }
    f
}

fn job_line(rep: &Report, g: &[GroupDir; 2], r: &Results) -> String {
    let c = &rep.c;
    let mut f = vec![
        "3".to_string(),
        format!("fsbench-{}", r.fsbench_version),
        rep.name.clone(),
        c.group.to_string(),
        c.error_code().to_string(),
    ];
    for (x, gd) in c.dirs.iter().zip(g) {
        f.extend(dir_fields(rep, x, gd));
    }
    let secs = (c.runtime_ns as f64 / 1e9).max(1e-9);
    f.push(format!("{:.6}%", 100.0 * c.usr_s / secs / rep.jobs as f64));
    f.push(format!("{:.6}%", 100.0 * c.sys_s / secs / rep.jobs as f64));
    f.extend([c.ctx, c.majf, c.minf].map(|v| v.to_string()));
    let ios: u64 = c.dirs.iter().map(|d| d.total_ios).sum();
    f.extend(dist(&c.depth, ios).iter().map(|v| format!("{v:.1}%")));
    let pct = |n: u64| {
        if ios == 0 {
            0.0
        } else {
            100.0 * n as f64 / ios as f64
        }
    };
    let mut us = c.lat_u;
    us[0] += c.lat_n.iter().sum::<u64>();
    f.extend(us.iter().map(|n| format!("{:.2}%", pct(*n))));
    f.extend(c.lat_m.iter().map(|n| format!("{:.2}%", pct(*n))));
    if let Some(d) = &r.disk_stats {
        f.push(format!(
            "{};{};{};{};{};{};{};{};{:.2}%",
            d.name,
            d.read_ios,
            d.write_ios,
            d.read_merges,
            d.write_merges,
            d.read_ticks,
            d.write_ticks,
            d.in_queue,
            d.util
        ));
    }
    // fio adds the error count and the first error's number with continue_on_error.
    if c.out.continue_on_error {
        f.push(format!("{};{}", c.total_err, c.first_errno));
    }
    f.join(";")
}

/// fio's terse lines, one per report.
pub fn terse(r: &Results) -> String {
    let reps = reports(r);
    let groups = groups(&reps);
    let mut o = String::new();
    for rep in &reps {
        let g = groups
            .iter()
            .find(|(id, _)| *id == rep.c.group)
            .map_or([GroupDir::default(); 2], |x| x.1);
        o.push_str(&job_line(rep, &g, r));
        o.push('\n');
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terse_line_has_fios_fields() {
        let mut c = crate::stats::fiojob::FioClone {
            report: "b".into(),
            ..Default::default()
        };
        c.out.percentiles = fsbench_model::model::stream::PERCENTILES.to_vec();
        c.out.clat_percentiles = true;
        c.io(0, 4096, 4096, [0, 50_000, 50_000], false);
        c.dirs[0].runtime_ns = 1_000_000_000;
        let r = Results {
            fio_jobs: vec![c],
            ..Results::new("x", "x", 0, std::path::Path::new("/"))
        };
        let line = terse(&r);
        let f: Vec<&str> = line.trim_end().split(';').collect();
        // fio 3.33's line without a disk: 121 fields (130 with one).
        assert_eq!(f.len(), 121, "{line}");
        assert_eq!(f[0], "3");
        assert_eq!(f[5], "4");
        assert_eq!(f[17], "1.000000%=49");
    }
}
