//! fio's run options, each shown to have its effect, beside Debian's fio where the same job
//! can run in both: `refill_buffers`, `gtod_reduce` (`disable_*lat`), `exitall`,
//! `continue_on_error`, `cpus_allowed` (`split`), `nice`, `prio`/`prioclass`,
//! `iodepth_low`, `verify_backlog_batch`, `verify_only`, and `ioscheduler` (refused on a
//! device fsbench did not make).

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn write_job(d: &Path, name: &str, text: &str) -> String {
    let f = d.join(name);
    std::fs::write(&f, text).unwrap();
    f.to_str().unwrap().to_string()
}

fn has_fio() -> bool {
    run_ok("fio", &["--version"]).is_ok()
}

/// fsbench's fio JSON for the job file `f` run in `dir` with `args`; (status ok, JSON or
/// Null, all output).
fn fsbench_json(f: &str, dir: &Path, args: &[&str]) -> (bool, Value, String) {
    let mut all = vec![
        "run",
        f,
        "--dir",
        dir.to_str().unwrap(),
        "--output-format",
        "json",
    ];
    all.extend_from_slice(args);
    let o = run(&all);
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status.success(), v, text(&o))
}

/// fio's JSON for the job file `f`, run in `dir`; (status ok, JSON, all output).
fn fio_json(f: &str, dir: &Path) -> (bool, Value, String) {
    let o = Command::new("fio")
        .args(["--output-format=json", f])
        .current_dir(dir)
        .output()
        .unwrap();
    // A failed job's line comes before the JSON.
    let out = String::from_utf8_lossy(&o.stdout);
    let at = out.find("\n{").map_or(0, |i| i + 1);
    let v = serde_json::from_str(&out[at..]).unwrap_or(Value::Null);
    (o.status.success(), v, text(&o))
}

fn job<'a>(v: &'a Value, name: &str) -> &'a Value {
    (v["jobs"].as_array().unwrap().iter())
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {v}"))
}

/// The file `name` in the run directory `--keep` left, read whole.
fn kept_file(json: &Path, name: &str) -> Vec<u8> {
    let r = json_of(json);
    let rd = Path::new(r["run_dir"].as_str().unwrap());
    std::fs::read(rd.join(name)).unwrap()
}

#[test]
fn refill_buffers_gives_every_write_new_data() {
    let d = Scratch::new("fio-refill");
    let blocks = |extra: &str| {
        let f = write_job(
            d.path(),
            "r.fio",
            &format!("[w]\nrw=write\nbs=4k\nsize=64k\nscramble_buffers=0\n{extra}"),
        );
        let json = d.path().join("r.json");
        let o = run(&[
            "run",
            &f,
            "--dir",
            d.s(),
            "--keep",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let data = kept_file(&json, "w.0.0");
        assert_eq!(data.len(), 64 << 10);
        data.chunks(4096).map(<[u8]>::to_vec).collect::<Vec<_>>()
    };
    // Without it (and without scrambling), every write sends the worker's one buffer.
    let same = blocks("");
    assert!(same.iter().all(|b| *b == same[0]));
    // With it, each write's data is new: two blocks share hardly a byte in place.
    let fresh = blocks("refill_buffers\n");
    for (i, a) in fresh.iter().enumerate() {
        for b in &fresh[i + 1..] {
            let alike = a.iter().zip(b).filter(|(x, y)| x == y).count();
            assert!(alike < 100, "{alike} equal bytes of 4096");
        }
    }
    let t = text(&run(&[
        "check",
        &write_job(
            d.path(),
            "c.fio",
            "[w]\nrw=write\nsize=64k\nrefill_buffers\n",
        ),
    ]));
    assert!(
        t.contains("filled anew with random data (refill_buffers)"),
        "{t}"
    );
}

#[test]
fn gtod_reduce_leaves_the_latencies_out_as_fio_does() {
    let d = Scratch::new("fio-gtod");
    let f = write_job(
        d.path(),
        "g.fio",
        &format!(
            "[g]\ndirectory={}\nrw=randread\nbs=4k\nsize=1m\ngtod_reduce=1\n",
            d.s()
        ),
    );
    let (ok, v, t) = fsbench_json(&f, d.path(), &[]);
    assert!(ok, "{t}");
    let r = &job(&v, "g")["read"];
    assert_eq!(r["total_ios"], 256, "{t}");
    for k in ["clat_ns", "lat_ns"] {
        assert_eq!(r[k]["N"], 0, "{k}: {r}");
        assert!(r[k].get("percentile").is_none(), "{k}: {r}");
    }
    if has_fio() {
        let (ok, fv, ft) = fio_json(&f, d.path());
        assert!(ok, "{ft}");
        let fr = &job(&fv, "g")["read"];
        assert_eq!(fr["total_ios"], 256);
        for k in ["clat_ns", "lat_ns"] {
            assert_eq!(fr[k]["N"], r[k]["N"], "{k}: fio {fr}");
            assert_eq!(
                fr[k].get("percentile").is_none(),
                r[k].get("percentile").is_none(),
                "{k}"
            );
        }
    } else {
        skip("gtod_reduce beside fio: fio is not installed");
    }
    // Without it, the same job has its latencies.
    let f = write_job(d.path(), "h.fio", "[g]\nrw=randread\nbs=4k\nsize=1m\n");
    let (ok, v, t) = fsbench_json(&f, d.path(), &[]);
    assert!(ok, "{t}");
    assert_eq!(job(&v, "g")["read"]["clat_ns"]["N"], 256, "{t}");
}

#[test]
fn exitall_ends_the_jobs_of_the_group_when_one_ends_as_in_fio() {
    let d = Scratch::new("fio-exitall");
    let text_of = |dir: &Path| {
        format!(
            "[global]\ndirectory={}\nbs=4k\n[quick]\nrw=write\nsize=256k\nrate=1m\nexitall\n[long]\nrw=randread\nsize=4m\ntime_based\nruntime=30\n[after]\nstonewall\nrw=read\nsize=256k\n",
            dir.display()
        )
    };
    let f = write_job(d.path(), "x.fio", &text_of(d.path()));
    let t0 = std::time::Instant::now();
    let (ok, v, t) = fsbench_json(&f, d.path(), &[]);
    assert!(ok, "{t}");
    assert!(t0.elapsed().as_secs() < 20, "the long job ran on: {t}");
    // The long job ran while the quick one wrote (a quarter of a second at 1 MiB/s),
    // and no longer.
    let long = job(&v, "long")["job_runtime"].as_u64().unwrap();
    assert!(long < 5_000, "long ran {long} ms: {t}");
    assert!(
        job(&v, "long")["read"]["io_bytes"].as_u64().unwrap() > 0,
        "{t}"
    );
    // A later group is not the ended group's: it runs whole.
    assert_eq!(job(&v, "after")["read"]["io_bytes"], 256 << 10, "{t}");
    if has_fio() {
        let fd = Scratch::new("fio-exitall-fio");
        let ff = write_job(fd.path(), "x.fio", &text_of(fd.path()));
        let (ok, fv, ft) = fio_json(&ff, fd.path());
        assert!(ok, "{ft}");
        let flong = job(&fv, "long")["job_runtime"].as_u64().unwrap();
        assert!(flong < 5_000, "fio's long ran {flong} ms");
        assert!(job(&fv, "long")["read"]["io_bytes"].as_u64().unwrap() > 0);
        assert_eq!(job(&fv, "after")["read"]["io_bytes"], 256 << 10);
    } else {
        skip("exitall beside fio: fio is not installed");
    }
    let t = text(&run(&["check", &f]));
    assert!(
        t.contains("ends as soon as a job of its group ends (exitall)"),
        "{t}"
    );
    // A job of the group still in its startdelay does not start (fio drops its delay;
    // fio 3.33 itself hung on this file here, so fsbench alone).
    let late = text_of(d.path()).replace(
        "[long]",
        "[late]\nrw=read\nsize=256k\nstartdelay=30\n[long]",
    );
    let f = write_job(d.path(), "late.fio", &late);
    let t0 = std::time::Instant::now();
    let (ok, v, t) = fsbench_json(&f, d.path(), &[]);
    assert!(ok, "{t}");
    assert!(t0.elapsed().as_secs() < 20, "the late job waited: {t}");
    assert_eq!(job(&v, "late")["read"]["io_bytes"], 0, "{t}");
}

/// A loop device with direct I/O over a 8 MiB image whose second half was cut off after it
/// was attached: reads there fail with EIO (the loop driver's short read), as a bad disk's.
fn failing_device(d: &Scratch) -> Option<Loop> {
    let img = d.path().join("half.img");
    std::fs::write(&img, vec![0x5a; 8 << 20]).unwrap();
    let dev = match run_ok(
        "losetup",
        &["--direct-io=on", "-f", "--show", img.to_str().unwrap()],
    ) {
        Ok(dev) => Loop(dev),
        Err(e) => {
            skip(&format!("continue_on_error: no loop device: {e}"));
            return None;
        }
    };
    std::fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .unwrap()
        .set_len(4 << 20)
        .unwrap();
    Some(dev)
}

#[test]
fn continue_on_error_goes_past_failed_reads_and_counts_them_as_fio() {
    if !root_or_skip_because("continue_on_error", "a loop device that fails reads") {
        return;
    }
    let d = Scratch::new("fio-coe");
    let Some(dev) = failing_device(&d) else {
        return;
    };
    let body = format!(
        "[r]\nfilename={}\nrw=read\nbs=4k\nsize=8m\ndirect=1\n",
        dev.0
    );
    let go_on = write_job(
        d.path(),
        "c.fio",
        &format!("{body}continue_on_error=read\n"),
    );
    let allow = ["--allow-device", dev.0.as_str()];
    let (ok, v, t) = fsbench_json(&go_on, d.path(), &allow);
    assert!(ok, "{t}");
    let j = job(&v, "r");
    assert_eq!(j["read"]["io_bytes"], 4 << 20, "{t}");
    assert_eq!(j["total_err"], 1024, "{t}");
    assert_eq!(j["first_error"], libc::EIO, "{t}");
    assert_eq!(j["read"]["total_ios"], 2048, "{t}");
    // Without it the first failed read ends the job, with its error.
    let stop = write_job(d.path(), "s.fio", &body);
    let (ok, v, t) = fsbench_json(&stop, d.path(), &allow);
    assert!(!ok, "{t}");
    let js = job(&v, "r");
    assert_eq!(js["read"]["io_bytes"], 4 << 20, "{t}");
    assert_eq!(js["read"]["total_ios"], 1025, "{t}");
    assert_eq!(js["error"], libc::EIO, "{t}");
    assert!(t.contains("Input/output error"), "{t}");
    if has_fio() {
        // fio: the same counts, its error number, and its status.
        let (fok, fv, ft) = fio_json(&stop, d.path());
        assert!(!fok);
        let fj = job(&fv, "r");
        for k in ["io_bytes", "total_ios"] {
            assert_eq!(fj["read"][k], js["read"][k], "{k}: {ft}");
        }
        assert_eq!(fj["error"], js["error"], "{ft}");
        let (fok, fv, ft) = fio_json(&go_on, d.path());
        assert!(fok, "{ft}");
        let fj = job(&fv, "r");
        for k in ["total_err", "first_error", "error"] {
            assert_eq!(fj[k], j[k], "{k}: {ft}");
        }
        for k in ["io_bytes", "total_ios"] {
            assert_eq!(fj["read"][k], j["read"][k], "{k}: {ft}");
        }
    } else {
        skip("continue_on_error beside fio: fio is not installed");
    }
    // Through the ring, the failed reads reaped among the others: the same counts.
    let ring = write_job(
        d.path(),
        "u.fio",
        &format!("{body}ioengine=io_uring\niodepth=8\ncontinue_on_error=read\n"),
    );
    let (ok, v, t) = fsbench_json(&ring, d.path(), &allow);
    assert!(ok, "{t}");
    let u = job(&v, "r");
    assert_eq!(
        (u["total_err"].as_u64(), u["error"].as_i64()),
        (Some(1024), Some(5)),
        "{t}"
    );
    assert_eq!(
        (
            u["read"]["io_bytes"].as_u64(),
            u["read"]["total_ios"].as_u64()
        ),
        (Some(4 << 20), Some(2048)),
        "{t}"
    );
}

/// The threads of process `pid` whose name starts with `prefix`: (tid, status text).
fn threads(pid: u32, prefix: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
        let name = status
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("Name:")
            .trim();
        if name.starts_with(prefix) {
            out.push((e.file_name().to_string_lossy().into_owned(), status));
        }
    }
    out.sort();
    out
}

fn field<'a>(status: &'a str, key: &str) -> &'a str {
    (status.lines())
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or("")
        .trim()
}

/// The nice value and I/O priority (class, level) of thread `tid` of process `pid`.
fn priorities(pid: u32, tid: &str) -> (i64, (u32, u32)) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |x| x.1);
    // Fields after the name: state is field 3; nice is field 19.
    let nice = after
        .split_whitespace()
        .nth(16)
        .unwrap_or("0")
        .parse()
        .unwrap_or(99);
    // SAFETY: ioprio_get(IOPRIO_WHO_PROCESS, tid) reads a thread's priority.
    let p = unsafe { libc::syscall(libc::SYS_ioprio_get, 1, tid.parse::<i32>().unwrap()) } as u32;
    (nice, (p >> 13, p & 0x1fff))
}

#[test]
fn cpus_allowed_nice_and_prio_hold_for_the_jobs_threads() {
    let d = Scratch::new("fio-cpus");
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (set, want) = if ncpu >= 2 {
        ("0-1\ncpus_allowed_policy=split", ["0", "1"])
    } else {
        ("0", ["0", "0"])
    };
    let f = write_job(
        d.path(),
        "p.fio",
        &format!("[pin]\nrw=randread\nbs=4k\nsize=1m\ntime_based\nruntime=6\nnumjobs=2\ncpus_allowed={set}\nnice=5\nprioclass=2\nprio=6\n"),
    );
    let mut child = bin()
        .args(["run", &f, "--dir", d.s(), "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..200 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let t = threads(child.id(), "pin");
        let pinned: Vec<&(String, String)> = t
            .iter()
            .filter(|(_, s)| field(s, "Cpus_allowed_list:").len() == 1)
            .collect();
        if pinned.len() == 2 {
            // Read while they run: (tid, CPUs, nice, I/O priority). A thread pins itself
            // before it sets its priorities: read again until it has done all (or never).
            seen = (t.iter())
                .map(|(tid, s)| {
                    let (nice, prio) = priorities(child.id(), tid);
                    (
                        tid.clone(),
                        field(s, "Cpus_allowed_list:").to_string(),
                        nice,
                        prio,
                    )
                })
                .collect();
            if seen.iter().all(|x| x.2 == 5 && x.3 == (2, 6)) {
                break;
            }
        }
    }
    let status = child.wait().unwrap();
    assert!(status.success());
    assert_eq!(
        seen.len(),
        2,
        "the two clones' threads, pinned, while they ran"
    );
    let mut cpus: Vec<&str> = seen.iter().map(|x| x.1.as_str()).collect();
    cpus.sort();
    assert_eq!(cpus, want);
    for (tid, _, nice, prio) in &seen {
        assert_eq!(*nice, 5, "thread {tid}");
        assert_eq!(*prio, (2, 6), "thread {tid}");
    }
    let t = text(&run(&["check", &f]));
    assert!(t.contains("nice value moved by 5 (nice)"), "{t}");
    assert!(
        t.contains("I/O priority class 2 (best-effort), level 6"),
        "{t}"
    );
    assert!(t.contains("(cpus_allowed"), "{t}");
    let bad = write_job(
        d.path(),
        "b.fio",
        "[b]\nrw=read\nsize=1m\ncpus_allowed=4096\n",
    );
    let t = text(&run(&["check", &bad]));
    assert!(t.contains("b.fio:4:14") && t.contains("too large"), "{t}");
}

/// The share of a job's I/Os queued at depth 16 to 31 (fio's `iodepth_level` "16").
fn at_16(j: &Value) -> f64 {
    j["iodepth_level"]["16"].as_f64().unwrap()
}

#[test]
fn iodepth_low_lets_the_queue_drain_before_it_fills_again_as_in_fio() {
    let d = Scratch::new("fio-depth-low");
    let body = format!(
        "[q]\ndirectory={}\nrw=randread\nbs=4k\nsize=8m\nioengine=io_uring\niodepth=16\n",
        d.s()
    );
    let full = write_job(d.path(), "f.fio", &body);
    let low = write_job(d.path(), "l.fio", &format!("{body}iodepth_low=4\n"));
    let (ok, v, t) = fsbench_json(&full, d.path(), &[]);
    assert!(ok, "{t}");
    assert!(at_16(job(&v, "q")) > 80.0, "{t}");
    let (ok, v, t) = fsbench_json(&low, d.path(), &[]);
    assert!(ok, "{t}");
    let ours = at_16(job(&v, "q"));
    assert!(ours < 30.0, "{ours}: {t}");
    if has_fio() {
        let (ok, fv, ft) = fio_json(&low, d.path());
        assert!(ok, "{ft}");
        // fio's reaping, followed step by step: the same shares.
        for k in ["1", "2", "4", "8", "16"] {
            let (a, b) = (
                job(&fv, "q")["iodepth_level"][k].as_f64().unwrap(),
                job(&v, "q")["iodepth_level"][k].as_f64().unwrap(),
            );
            assert!((a - b).abs() < 0.01, "depth {k}: fio {a}, fsbench {b}");
        }
    } else {
        skip("iodepth_low beside fio: fio is not installed");
    }
}

#[test]
fn ioscheduler_on_a_device_fsbench_did_not_make_is_refused_at_its_place() {
    let d = Scratch::new("fio-sched");
    let f = write_job(
        d.path(),
        "s.fio",
        "[s]\nrw=read\nsize=64k\nioscheduler=bfq\n",
    );
    let o = run(&["run", &f, "--dir", d.s()]);
    assert!(!o.status.success());
    let t = text(&o);
    assert!(
        t.contains("s.fio:4:1") && t.contains("is not one fsbench made"),
        "{t}"
    );
    let t = text(&run(&["check", &f]));
    assert!(
        t.contains("set to bfq for the run and set back after"),
        "{t}"
    );
    let f = write_job(
        d.path(),
        "n.fio",
        "[s]\nrw=read\nsize=64k\nioscheduler=../x\n",
    );
    let t = text(&run(&["check", &f]));
    assert!(
        t.contains("n.fio:4:1") && t.contains("not the name of an I/O scheduler"),
        "{t}"
    );
}

/// A simulated disk (`fsbench disk create`) under `root`, with the `none` scheduler and
/// ext4 mounted on `root/mnt`; removed on drop.
struct SimDisk {
    env: [(&'static str, std::path::PathBuf); 2],
    dev: String,
}

impl SimDisk {
    fn new(root: &Path) -> Result<SimDisk, String> {
        let env = [
            ("FSBENCH_STATE_DIR", root.join("state")),
            ("FSBENCH_IMAGE_DIR", root.join("images")),
        ];
        let mnt = root.join("mnt");
        let o = bin()
            .args([
                "disk", "create", "sched", "--size", "256M", "--mkfs", "ext4",
            ])
            .args(["--scheduler", "none", "--mount", mnt.to_str().unwrap()])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .map_err(|e| e.to_string())?;
        let out = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let disk = SimDisk { env, dev: out };
        if !o.status.success() || !disk.dev.starts_with("/dev/loop") {
            return Err(text(&o));
        }
        Ok(disk)
    }

    fn scheduler(&self) -> String {
        let name = self.dev.trim_start_matches("/dev/");
        std::fs::read_to_string(format!("/sys/block/{name}/queue/scheduler")).unwrap_or_default()
    }
}

impl Drop for SimDisk {
    fn drop(&mut self) {
        let _ = bin()
            .args(["disk", "remove", "sched"])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output();
    }
}

#[test]
fn ioscheduler_switches_a_simulated_disk_for_the_run_and_sets_it_back() {
    let ok = root_or_skip_because("ioscheduler", "a simulated disk")
        && Path::new("/dev/fuse").exists()
        && have("mkfs.ext4");
    if !ok {
        skip("ioscheduler: needs /dev/fuse and mkfs.ext4 for a simulated disk");
        return;
    }
    let d = Scratch::new("fio-sched-disk");
    let disk = match SimDisk::new(d.path()) {
        Ok(x) => x,
        Err(e) => {
            skip(&format!("ioscheduler: no simulated disk here: {e}"));
            return;
        }
    };
    assert!(disk.scheduler().contains("[none]"), "{}", disk.scheduler());
    let f = write_job(
        d.path(),
        "s.fio",
        "[s]\nrw=randread\nbs=4k\nsize=4m\ntime_based\nruntime=2\nioscheduler=mq-deadline\n",
    );
    let mut child = bin()
        .args([
            "run",
            &f,
            "--dir",
            d.path().join("mnt").to_str().unwrap(),
            "-q",
        ])
        .envs(disk.env.iter().map(|(k, v)| (k, v)))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut during = false;
    while child.try_wait().unwrap().is_none() {
        during |= disk.scheduler().contains("[mq-deadline]");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(during, "mq-deadline while the job ran");
    assert!(
        disk.scheduler().contains("[none]"),
        "set back: {}",
        disk.scheduler()
    );
}

#[test]
fn check_explains_each_run_option() {
    let d = Scratch::new("fio-explain");
    let f = write_job(
        d.path(),
        "e.fio",
        "[e]\nrw=randwrite\nbs=4k\nsize=1m\nioengine=io_uring\niodepth=8\niodepth_low=2\ngtod_reduce=1\ncontinue_on_error=io\nverify=crc32c\nverify_dump=1\nverify_backlog=16\nverify_backlog_batch=4\n",
    );
    let o = run(&["check", &f]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for line in [
        "once all 8 slots are busy, reaps until at most 2 are in flight (iodepth_low)",
        "fio's reports leave out total latency, completion latency, submission latency",
        "goes past fio's non-fatal errors (EIO, EILSEQ) of reads, writes and counts them",
        "FILE.OFFSET.received and .expected in the current directory (verify_dump",
        "after every 16 writes (4 of them each time, verify_backlog_batch)",
    ] {
        assert!(t.contains(line), "{line}: {t}");
    }
}
