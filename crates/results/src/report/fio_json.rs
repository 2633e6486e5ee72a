//! fio's JSON output (`--output-format=json`) and `json+` (the same with each latency's
//! histogram bins), key for key as fio 3.33 writes them for the jobs fsbench runs, from
//! each report's merged record. What fsbench cannot know is left out rather than written
//! as zero (docs/fio.md lists it): `eta`, and `disk_util`'s `aggr_*` keys of stacked
//! devices. Beside fio's keys each verifying job has a `verify` object.

use super::fio::{dist, groups, rates, reports, runtime_ms, GroupDir, Report};
use crate::stats::fiojob::{FioClone, FioDir, Moments, Plat, LAT_MS_STEPS, LAT_STEPS};
use crate::stats::Results;
use serde_json::{json, Map, Value};

fn moments(m: &Moments) -> Map<String, Value> {
    let mut o = Map::new();
    let (min, max) = if m.n == 0 {
        (0, 0)
    } else {
        (m.min as u64, m.max as u64)
    };
    o.insert("min".into(), json!(min));
    o.insert("max".into(), json!(max));
    o.insert("mean".into(), json!(m.mean));
    o.insert("stddev".into(), json!(m.stddev()));
    o.insert("N".into(), json!(m.n));
    o
}

/// A latency object: moments, the percentiles when asked for, and `json+`'s bins, which
/// fio writes only beside percentiles (`clat_percentiles=0` leaves both out).
fn latency(m: &Moments, bins: &Plat, list: Option<&[f64]>, plus: bool) -> Value {
    let mut o = moments(m);
    if m.n > 0 {
        let Some(list) = list else {
            return Value::Object(o);
        };
        let vals = bins.percentiles(list);
        let pct: Map<String, Value> = (list.iter().zip(vals))
            .map(|(p, v)| (format!("{p:.6}"), json!(v)))
            .collect();
        o.insert("percentile".into(), Value::Object(pct));
        if plus {
            let b: Map<String, Value> = (bins.bins().into_iter())
                .map(|(v, n)| (v.to_string(), json!(n)))
                .collect();
            o.insert("bins".into(), Value::Object(b));
        }
    }
    Value::Object(o)
}

fn dir_json(c: &FioClone, x: &FioDir, g: &GroupDir, plus: bool) -> Value {
    let (bps, iops) = rates(x);
    let list = c.out.percentiles.as_slice();
    let pick = |on: bool| on.then_some(list);
    let agg_kib = g.agg_bw as f64 / 1024.0;
    let bw_agg = if agg_kib > 0.0 && x.bw.n > 0 {
        x.bw.mean * 100.0 / agg_kib
    } else {
        0.0
    };
    json!({
        "io_bytes": x.io_bytes,
        "io_kbytes": x.io_bytes / 1024,
        "bw_bytes": bps,
        "bw": bps / 1024,
        "iops": iops,
        "runtime": runtime_ms(x),
        "total_ios": x.total_ios,
        "short_ios": x.short_ios,
        "drop_ios": 0,
        "slat_ns": latency(&x.slat, &x.slat_bins, pick(c.out.slat_percentiles), plus),
        "clat_ns": latency(&x.clat, &x.clat_bins, pick(c.out.clat_percentiles), plus),
        "lat_ns": latency(&x.lat, &x.lat_bins, pick(c.out.lat_percentiles), plus),
        "bw_min": if x.bw.n > 0 { x.bw.min as u64 } else { 0 },
        "bw_max": if x.bw.n > 0 { x.bw.max as u64 } else { 0 },
        "bw_agg": bw_agg,
        "bw_mean": x.bw.mean,
        "bw_dev": x.bw.stddev(),
        "bw_samples": x.bw.n,
        "iops_min": if x.iops.n > 0 { x.iops.min as u64 } else { 0 },
        "iops_max": if x.iops.n > 0 { x.iops.max as u64 } else { 0 },
        "iops_mean": x.iops.mean,
        "iops_stddev": x.iops.stddev(),
        "iops_samples": x.iops.n,
    })
}

fn options(list: &[(String, String)]) -> Value {
    Value::Object(list.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

fn buckets(labels: &[String], counts: &[u64], total: u64) -> Value {
    Value::Object(
        (labels.iter().zip(counts))
            .map(|(l, n)| {
                let pct = if total > 0 {
                    100.0 * *n as f64 / total as f64
                } else {
                    0.0
                };
                (l.clone(), json!(pct))
            })
            .collect(),
    )
}

fn depths(labels: [&str; 7], v: [f64; 7]) -> Value {
    Value::Object(
        (labels.iter().zip(v))
            .map(|(l, x)| (l.to_string(), json!(x)))
            .collect(),
    )
}

fn job_json(rep: &Report, g: &[GroupDir; 2], plus: bool) -> Value {
    let c = &rep.c;
    let secs = (c.runtime_ns as f64 / 1e9).max(1e-9);
    let ios: u64 = c.dirs.iter().map(|d| d.total_ios).sum();
    let steps: Vec<String> = LAT_STEPS.iter().map(u64::to_string).collect();
    let ms: Vec<String> = (LAT_MS_STEPS.iter().enumerate())
        .map(|(i, s)| {
            if i == 11 {
                ">=2000".into()
            } else {
                s.to_string()
            }
        })
        .collect();
    let batches = ["0", "4", "8", "16", "32", "64", ">=64"];
    // fio gives the syncs percentiles when completion or total latencies have them.
    let sync_pct =
        (c.out.clat_percentiles || c.out.lat_percentiles).then_some(c.out.percentiles.as_slice());
    let mut j = json!({
        "jobname": c.out.jobname,
        "groupid": c.group,
        "error": c.error_code(),
        "elapsed": (c.runtime_ns as f64 / 1e9).ceil() as u64,
        "job options": options(&c.out.options),
        "read": dir_json(c, &c.dirs[0], &g[0], plus),
        "write": dir_json(c, &c.dirs[1], &g[1], plus),
        "trim": dir_json(c, &FioDir::default(), &GroupDir::default(), plus),
        "sync": {
            "total_ios": c.sync_ios,
            "lat_ns": latency(&c.sync, &c.sync_bins, sync_pct, plus),
        },
        "job_runtime": (c.runtime_ns as f64 / 1e6).round() as u64,
        "usr_cpu": 100.0 * c.usr_s / secs / rep.jobs as f64,
        "sys_cpu": 100.0 * c.sys_s / secs / rep.jobs as f64,
        "ctx": c.ctx,
        "majf": c.majf,
        "minf": c.minf,
        "iodepth_level": depths(["1", "2", "4", "8", "16", "32", ">=64"], dist(&c.depth, ios)),
        "iodepth_submit": depths(batches, dist(&c.submit, c.total_submit)),
        "iodepth_complete": depths(batches, dist(&c.complete, c.total_complete)),
        "latency_ns": buckets(&steps, &c.lat_n, ios),
        "latency_us": buckets(&steps, &c.lat_u, ios),
        "latency_ms": buckets(&ms, &c.lat_m, ios),
        "latency_depth": c.out.iodepth,
        "latency_target": 0,
        "latency_percentile": 100.0,
        "latency_window": 0,
    });
    // fio adds the error count and the first error's number with continue_on_error.
    if c.out.continue_on_error {
        j["total_err"] = json!(c.total_err);
        j["first_error"] = json!(c.first_errno);
    }
    if let Some(v) = &c.verify {
        j["verify"] = json!({
            "blocks_checked": v.blocks,
            "mismatches": v.mismatches,
            "first_bad_file": v.first_bad.as_ref().map(|x| x.0.clone()),
            "first_bad_offset": v.first_bad.as_ref().map(|x| x.1),
        });
    }
    j
}

/// fio's JSON (`plus`: `json+`, with the latency bins).
pub fn json(r: &Results, plus: bool) -> Value {
    let reps = reports(r);
    let groups = groups(&reps);
    let group_of = |g: u32| {
        groups
            .iter()
            .find(|(id, _)| *id == g)
            .map_or([GroupDir::default(); 2], |x| x.1)
    };
    let jobs: Vec<Value> = (reps.iter())
        .map(|rep| job_json(rep, &group_of(rep.c.group), plus))
        .collect();
    let ms = (r.started_at * 1000.0) as u64;
    let mut top = json!({
        "fio version": format!("fsbench-{}", r.fsbench_version),
        "timestamp": ms / 1000,
        "timestamp_ms": ms,
        "time": time_text(r.started_at as i64),
    });
    if let Some(g) = reps
        .first()
        .map(|x| &x.c.out.globals)
        .filter(|g| !g.is_empty())
    {
        top["global options"] = options(g);
    }
    top["jobs"] = Value::Array(jobs);
    if let Some(d) = &r.disk_stats {
        top["disk_util"] = json!([{
            "name": d.name,
            "read_ios": d.read_ios,
            "write_ios": d.write_ios,
            "read_merges": d.read_merges,
            "write_merges": d.write_merges,
            "read_ticks": d.read_ticks,
            "write_ticks": d.write_ticks,
            "in_queue": d.in_queue,
            "util": d.util,
        }]);
    }
    top
}

/// fio's `time` field: the local time as `ctime` writes it (`Sat Nov 28 20:59:03 2026`).
pub fn time_text(secs: i64) -> String {
    // SAFETY: localtime_r and strftime write into the buffers passed.
    unsafe {
        let t: libc::time_t = secs as libc::time_t;
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return String::new();
        }
        let mut buf = [0u8; 64];
        let fmt = c"%a %b %e %H:%M:%S %Y";
        let n = libc::strftime(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), &tm);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_plus_bins_sum_to_the_count() {
        let mut c = FioClone {
            report: "j".into(),
            ..Default::default()
        };
        c.out.percentiles = fsbench_model::model::stream::PERCENTILES.to_vec();
        c.out.clat_percentiles = true;
        for v in [100u64, 5000, 5000, 70_000, 3_000_000] {
            c.io(0, 4096, 4096, [0, v, v], false);
        }
        c.dirs[0].runtime_ns = 1_000_000;
        let r = Results {
            fio_jobs: vec![c],
            ..Results::new("x", "x", 0, std::path::Path::new("/"))
        };
        let j = json(&r, true);
        let clat = &j["jobs"][0]["read"]["clat_ns"];
        let sum: u64 = clat["bins"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(sum, 5);
        assert_eq!(clat["N"], 5);
        assert!(clat["percentile"]["99.000000"].as_u64().unwrap() > 2_000_000);
        assert!(j["jobs"][0]["write"]["clat_ns"].get("percentile").is_none());
        assert!(json(&r, false)["jobs"][0]["read"]["clat_ns"]
            .get("bins")
            .is_none());
        assert_eq!(j["jobs"][0]["latency_ms"]["4"], 20.0);
    }
}
