//! fio's output shapes, checked against fio itself (Debian's `fio`, installed by
//! `.ci/apt-packages`): for job files of every engine, pattern and bound fsbench runs, the
//! key paths and value types of `--output-format=json` are fio's (less the documented
//! absences), `json+` bins add up to the I/O count, log files are named and laid out as
//! fio's and their samples' mean is the reported mean, jobs after a `stonewall` get their
//! own group and rates, and a verifying job says what it checked.

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Key paths fio writes that fsbench leaves out, each documented in docs/fio.md.
const ABSENT: &[&str] = &["jobs[].eta"];

/// Every key path of a JSON value with its type (objects by key, arrays as `[]`; `bins`
/// and the option lists hold data, not keys).
fn paths(v: &Value, prefix: &str, out: &mut BTreeMap<String, &'static str>) {
    let ty = match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    out.insert(prefix.to_string(), ty);
    let last = prefix.rsplit('.').next().unwrap_or("");
    if matches!(last, "bins" | "job options" | "global options") {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                paths(x, &p, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

fn has_fio() -> bool {
    run_ok("fio", &["--version"]).is_ok()
}

/// Run `job` with fio in `dir` (its `directory=`); fio's JSON.
fn fio_json(dir: &Path, name: &str, job: &str) -> Value {
    fio_out(dir, name, job, "json")
}

/// Run `job` with fio in `dir` with `--output-format=FORMAT` (`json` or `json+`).
fn fio_out(dir: &Path, name: &str, job: &str, format: &str) -> Value {
    let f = dir.join(format!("{name}.fio"));
    std::fs::write(&f, job).unwrap();
    let o = std::process::Command::new("fio")
        .args([&format!("--output-format={format}"), f.to_str().unwrap()])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "fio {name}: {}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("fio {name}: {e}: {}", text(&o)))
}

/// Run `job` with fsbench in `dir` with `--output-format=FORMAT`; the output and stderr.
fn fsbench_out(dir: &Path, name: &str, job: &str, format: &str) -> (String, String) {
    let f = dir.join(format!("{name}.fio"));
    std::fs::write(&f, job).unwrap();
    let o = bin()
        .args(["run", f.to_str().unwrap(), "--output-format", format])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "fsbench {name}: {}", text(&o));
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn fsbench_json(dir: &Path, name: &str, job: &str) -> (Value, String) {
    let (out, err) = fsbench_out(dir, name, job, "json");
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{name}: {e}: {out}{err}"));
    (v, err)
}

/// The differences between fio's key paths and types and fsbench's.
fn key_differences(fio: &Value, ours: &Value) -> Vec<String> {
    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
    paths(fio, "", &mut a);
    paths(ours, "", &mut b);
    let mut diff = Vec::new();
    for (k, t) in &a {
        match b.get(k) {
            None if ABSENT.contains(&k.as_str()) => {}
            None => diff.push(format!("missing {k} ({t})")),
            Some(u) if u != t => diff.push(format!("{k}: fio {t}, fsbench {u}")),
            Some(_) => {}
        }
    }
    diff
}

/// The job files: every engine, pattern and bound fsbench runs (small, to stay quick).
fn jobs(dir: &str) -> Vec<(&'static str, String)> {
    let g = format!("[global]\ndirectory={dir}\nsize=2m\nbs=4k\n");
    vec![
        ("psync-read", format!("{g}[j]\nioengine=psync\nrw=read\n")),
        (
            "psync-randrw-fsync",
            format!("{g}[j]\nioengine=psync\nrw=randrw\nfsync=8\n"),
        ),
        (
            "libaio-randwrite",
            format!("{g}[j]\nioengine=libaio\niodepth=8\nrw=randwrite\n"),
        ),
        (
            "uring-randread",
            format!("{g}[j]\nioengine=io_uring\niodepth=16\nrw=randread\n"),
        ),
        ("mmap-write", format!("{g}[j]\nioengine=mmap\nrw=write\n")),
        (
            "psync-write-fdatasync",
            format!("{g}[j]\nioengine=psync\nrw=write\nfdatasync=8\n"),
        ),
        (
            "time-based",
            format!("{g}[j]\nrw=randread\ntime_based=1\nruntime=1\n"),
        ),
        (
            "stonewall",
            format!("{g}[a]\nrw=read\n[b]\nstonewall\nrw=write\n[c]\nnew_group=1\nrw=randread\n"),
        ),
        (
            "verify",
            format!(
                "{g}[v]\nioengine=io_uring\niodepth=8\nrw=randwrite\nverify=crc32c\ndo_verify=1\n"
            ),
        ),
    ]
}

#[test]
fn json_has_every_key_path_and_type_fio_writes_for_the_same_job() {
    if !has_fio() {
        skip("fio is not installed (.ci/apt-packages installs it)");
        return;
    }
    let d = Scratch::new("fio-keys");
    let mut all = Vec::new();
    for (name, job) in jobs(d.s()) {
        let fio = fio_json(d.path(), name, &job);
        let (ours, err) = fsbench_json(d.path(), name, &job);
        for x in key_differences(&fio, &ours) {
            all.push(format!("{name}: {x}"));
        }
        let (a, b) = (&fio["jobs"], &ours["jobs"]);
        assert_eq!(
            a.as_array().unwrap().len(),
            b.as_array().unwrap().len(),
            "{name}"
        );
        for (x, y) in a.as_array().unwrap().iter().zip(b.as_array().unwrap()) {
            assert_eq!(x["groupid"], y["groupid"], "{name}: {err}");
            // fio's `sync` times the fsyncs and fdatasyncs and counts the fsyncs only.
            if name.ends_with("fdatasync") {
                assert_eq!(x["sync"]["total_ios"], y["sync"]["total_ios"], "{name}");
                assert_eq!(x["sync"]["lat_ns"]["N"], y["sync"]["lat_ns"]["N"], "{name}");
            }
            for dir in ["read", "write"] {
                if !name.contains("randrw") && name != "time-based" {
                    assert_eq!(x[dir]["total_ios"], y[dir]["total_ios"], "{name} {dir}");
                    assert_eq!(x[dir]["io_bytes"], y[dir]["io_bytes"], "{name} {dir}");
                }
            }
        }
    }
    assert!(all.is_empty(), "{}", all.join("\n"));
}

#[test]
fn json_plus_bins_add_up_to_the_io_count() {
    let d = Scratch::new("fio-plus");
    let job = format!(
        "[global]\ndirectory={}\nsize=1m\nbs=4k\n[j]\nrw=randrw\nioengine=io_uring\niodepth=4\nlat_percentiles=1\nslat_percentiles=1\npercentile_list=50:99:99.9\n",
        d.s()
    );
    let (out, _) = fsbench_out(d.path(), "plus", &job, "json+");
    let v: Value = serde_json::from_str(&out).unwrap();
    let j = &v["jobs"][0];
    let mut ios = 0;
    for dir in ["read", "write"] {
        let n = j[dir]["total_ios"].as_u64().unwrap();
        ios += n;
        for lat in ["clat_ns", "lat_ns", "slat_ns"] {
            let bins = j[dir][lat]["bins"].as_object().unwrap();
            let sum: u64 = bins.values().map(|x| x.as_u64().unwrap()).sum();
            assert_eq!(sum, n, "{dir} {lat}");
        }
        // percentile_list and lat_percentiles, as fio lists them.
        let pct = j[dir]["lat_ns"]["percentile"].as_object().unwrap();
        let keys: Vec<&str> = pct.keys().map(String::as_str).collect();
        assert_eq!(keys, ["50.000000", "99.000000", "99.900000"], "{dir}");
    }
    assert_eq!(ios, 256);
    if has_fio() {
        bins_where_fio_puts_them(d.path(), &job);
    }
    // terse: fio's version-3 line, one per job.
    let (t, _) = fsbench_out(d.path(), "plus", &job, "terse");
    let fields: Vec<&str> = t.trim_end().split(';').collect();
    assert_eq!(fields[0], "3");
    assert!(fields.len() == 121 || fields.len() == 130, "{t}");
}

/// `json+`'s `bins` stand where fio's do: beside each latency with percentiles, and only
/// there (fio leaves them out of `slat_ns` and `lat_ns` by default, and out of every
/// latency with `clat_percentiles=0`).
fn bins_where_fio_puts_them(dir: &Path, job: &str) {
    let plain = job.replace("lat_percentiles=1\nslat_percentiles=1\n", "fsync=4\n");
    let off = plain.replace("fsync=4\n", "fsync=4\nclat_percentiles=0\n");
    for (name, job) in [("all", job), ("plain", &plain), ("off", &off)] {
        let fio = fio_out(dir, name, job, "json+");
        let (out, err) = fsbench_out(dir, name, job, "json+");
        let ours: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
        let bins = |v: &Value| {
            let mut m = BTreeMap::new();
            paths(v, "", &mut m);
            m.into_keys()
                .filter(|k| k.ends_with(".bins"))
                .collect::<Vec<_>>()
        };
        assert_eq!(bins(&fio), bins(&ours), "{name}");
    }
}

/// (time, value, direction, block size) of each line of a log file, which must have
/// fio's five (six with `log_offset`) comma-separated integer fields.
fn log_lines(p: &Path, fields: usize) -> Vec<[u64; 4]> {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .map(|l| {
            let v: Vec<u64> = l
                .split(", ")
                .map(|x| x.parse().unwrap_or_else(|_| panic!("{}: {l}", p.display())))
                .collect();
            assert_eq!(v.len(), fields, "{}: {l}", p.display());
            [v[0], v[1], v[2], v[3]]
        })
        .collect()
}

#[test]
fn logs_are_named_and_written_as_fios_and_their_mean_is_the_reported_one() {
    let d = Scratch::new("fio-logs");
    let job = format!(
        "[global]\ndirectory={}\nsize=2m\nbs=4k\n[lg]\nrw=randread\nioengine=io_uring\niodepth=4\nwrite_lat_log=lg\nwrite_bw_log=lg\nwrite_iops_log=lg\nlog_offset=1\n[avg]\nrw=read\nwrite_bw_log=avg\nlog_avg_msec=100\ntime_based=1\nruntime=1\n",
        d.s()
    );
    let (v, err) = fsbench_json(d.path(), "logs", &job);
    let names = [
        "lg_bw.1.log",
        "lg_iops.1.log",
        "lg_slat.1.log",
        "lg_clat.1.log",
        "lg_lat.1.log",
        "avg_bw.2.log",
    ];
    for n in names {
        assert!(d.path().join(n).is_file(), "{n}: {err}");
    }
    if has_fio() {
        // fio writes the same files for the same job file.
        let f = Scratch::new("fio-logs-fio");
        fio_json(f.path(), "logs", &job.replace(d.s(), f.s()));
        for n in names {
            assert!(f.path().join(n).is_file(), "fio wrote no {n}");
            // Its lines have the fields fsbench's have, parsed the same way.
            let fields = if n.starts_with("avg") { 5 } else { 6 };
            assert!(
                !log_lines(&f.path().join(n), fields).is_empty(),
                "fio's {n}"
            );
            assert!(!log_lines(&d.path().join(n), fields).is_empty(), "{n}");
        }
    }
    let j = &v["jobs"][0]["read"];
    for (log, key) in [("lg_clat.1.log", "clat_ns"), ("lg_lat.1.log", "lat_ns")] {
        let lines = log_lines(&d.path().join(log), 6);
        assert_eq!(
            lines.len() as u64,
            j["total_ios"].as_u64().unwrap(),
            "{log}"
        );
        assert!(lines.iter().all(|l| l[2] == 0 && l[3] == 4096), "{log}");
        let mean = lines.iter().map(|l| l[1] as f64).sum::<f64>() / lines.len() as f64;
        let reported = j[key]["mean"].as_f64().unwrap();
        assert!(
            (mean - reported).abs() <= 0.05 * reported,
            "{log}: {mean} vs {reported}"
        );
    }
    assert!(log_lines(&d.path().join("lg_iops.1.log"), 6)
        .iter()
        .all(|l| l[1] == 1));
    // Averaged every 100 ms over a 1 s job: about ten lines, block size 0, and their mean
    // is the job's bandwidth.
    let avg = log_lines(&d.path().join("avg_bw.2.log"), 5);
    assert!((5..=12).contains(&avg.len()), "{avg:?}");
    assert!(avg.iter().all(|l| l[3] == 0));
    let mean = avg.iter().map(|l| l[1] as f64).sum::<f64>() / avg.len() as f64;
    let bw = v["jobs"][1]["read"]["bw"].as_f64().unwrap();
    assert!(
        (mean - bw).abs() <= 0.25 * bw,
        "{mean} KiB/s logged vs {bw} reported"
    );
}

#[test]
fn stonewalled_jobs_get_their_own_group_rates_and_cpu() {
    let d = Scratch::new("fio-groups");
    // Three paced jobs one after another: 20 reads at 100 IOPS take about 0.2 s each.
    let job = format!(
        "[global]\ndirectory={}\nsize=80k\nbs=4k\nrw=randread\nrate_iops=100\n[a]\n[b]\nstonewall\n[c]\nstonewall\n",
        d.s()
    );
    let (v, err) = fsbench_json(d.path(), "groups", &job);
    for (i, j) in v["jobs"].as_array().unwrap().iter().enumerate() {
        assert_eq!(j["groupid"], i as u64, "{err}");
        let ms = j["read"]["runtime"].as_u64().unwrap();
        // Its own runtime, not the run's 600 ms and more.
        assert!((150..450).contains(&ms), "job {i}: {ms} ms\n{err}");
        let iops = j["read"]["iops"].as_f64().unwrap();
        assert!(iops > 50.0, "job {i}: {iops} IOPS\n{err}");
    }
    for g in 0..3 {
        assert!(
            err.contains(&format!("Run status group {g} (all jobs):")),
            "{err}"
        );
    }
    assert!(err.contains("c: (groupid=2, jobs=1)"), "{err}");
    assert!(
        !err.contains(" runtime "),
        "no runtime rows in the table: {err}"
    );
    assert!(err.contains("phase 2 (groupid=2: c)"), "{err}");
    let p = d.path().join("groups.fio");
    let o = run(&["check", p.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("all at once"), "{out}");
    assert!(out.contains("in 3 groups"), "{out}");
}

#[test]
fn a_verifying_job_reads_back_at_its_depth_and_says_what_it_checked() {
    let d = Scratch::new("fio-verify");
    let job = format!(
        "[global]\ndirectory={}\n[v]\nrw=randwrite\nbs=4k\nsize=4m\nioengine=io_uring\niodepth=16\nverify=crc32c\ndo_verify=1\n",
        d.s()
    );
    let (v, err) = fsbench_json(d.path(), "verify", &job);
    let j = &v["jobs"][0];
    assert_eq!(j["read"]["total_ios"], 1024);
    assert_eq!(j["write"]["total_ios"], 1024);
    assert_eq!(j["verify"]["blocks_checked"], 1024);
    assert_eq!(j["verify"]["mismatches"], 0);
    // The verify reads went through the ring: nearly every I/O at depth 16.
    assert!(
        j["iodepth_level"]["16"].as_f64().unwrap() > 90.0,
        "{}",
        j["iodepth_level"]
    );
    // Each direction over its own time: the reads' runtime is the verify phase's.
    let (r, w) = (
        j["read"]["runtime"].as_u64().unwrap(),
        j["write"]["runtime"].as_u64().unwrap(),
    );
    let total = j["job_runtime"].as_u64().unwrap();
    assert!(r + w <= total + 2, "{r} + {w} ms > {total} ms");
    assert!(
        err.contains("verify: 1024 blocks checked, 0 mismatches"),
        "{err}"
    );
    let p = d.path().join("verify.fio");
    let o = run(&["check", p.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("read back after each pass, queued 16 at a time"),
        "{out}"
    );
    assert!(out.contains("verify summary in the report"), "{out}");
}
