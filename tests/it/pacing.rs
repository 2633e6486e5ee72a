//! Synchronisation, pacing, asynchronous and memory-mapped I/O through the real binary:
//! oltp and videoserver run, semaphore and wakeup ratios hold, eventgen paces at its rate
//! and costs nothing at rate 0, aiowrite writes its buffer, mmap reads count the file's bytes,
//! think times and psrun reports.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Run `fsbench run <args> --dir DIR --json J -q` and return the results.
fn run_json(args: &[&str], dir: &Scratch) -> Value {
    let json = dir.path().join("r.json");
    let o = bin()
        .arg("run")
        .args(args)
        .args(["--dir", dir.s(), "--json", json.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{args:?} failed:\n{}", text(&o));
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

/// Write a workload into the scratch directory and return its path.
fn workload(dir: &Scratch, name: &str, body: &str) -> String {
    let p = dir.path().join(format!("{name}.f"));
    std::fs::write(&p, body).unwrap();
    p.to_str().unwrap().to_string()
}

fn ops(v: &Value, name: &str) -> u64 {
    flowop(v, name)["ops"].as_u64().unwrap()
}

fn assert_all_worked(v: &Value) {
    for f in v["flowops"].as_array().unwrap() {
        let kind = f["type"].as_str().unwrap();
        // Rate limits without an eventgen rate are not operations (as in Filebench); the
        // eventgen tests check them with a rate.
        if kind.starts_with("finishon") || kind == "composite" || kind.ends_with("limit") {
            continue;
        }
        assert!(
            f["ops"].as_u64().unwrap() > 0,
            "{} did no work: {v}",
            f["name"]
        );
        assert_eq!(f["errors"].as_u64().unwrap(), 0, "{}: {v}", f["name"]);
    }
}

fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if !p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".fsbench-")
                && p.extension().is_none()
            {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn oltp_small_runs_and_every_flowop_works() {
    let dir = Scratch::new("oltp");
    let v = run_json(
        &[
            "oltp",
            "-s",
            "nshadows=4",
            "-s",
            "ndbwriters=2",
            "-s",
            "filesize=1m",
            "-s",
            "logfilesize=1m",
            "-s",
            "nfiles=4",
            "-s",
            "memperthread=1m",
            "-s",
            "usermode=2000",
            "--duration",
            "3",
        ],
        &dir,
    );
    assert_all_worked(&v);
    // The log writer blocks for 3200 posts; each shadow loop posts once.
    let posts = ops(&v, "shadow-post-lg");
    let lg = ops(&v, "lg-block");
    assert!(lg <= posts / 3200 + 1, "lg-block {lg} vs {posts} posts");
    // Every post reaches each of the 2 DB writers' semaphores, which take 1000 at a time.
    let dbwr = ops(&v, "dbwr-block");
    assert!(
        dbwr <= 2 * (posts / 1000 + 1),
        "dbwr-block {dbwr} vs {posts} posts"
    );
}

#[test]
fn semaphore_ratio_holds() {
    let dir = Scratch::new("sem");
    let wl = workload(
        &dir,
        "sem",
        "define process name=p {
           thread name=poster {
             flowop sempost name=post, target=blk, value=1, blocking
             flowop think name=pause, value=200
           }
           thread name=blocker {
             flowop semblock name=blk, value=3, highwater=6
           }
         }
         run 2\n",
    );
    let v = run_json(&[&wl], &dir);
    let (p, b) = (ops(&v, "post"), ops(&v, "blk"));
    assert!(p > 300, "too few posts: {p}");
    let expect = p as f64 / 3.0;
    assert!(
        (b as f64 - expect).abs() <= expect * 0.1 + 3.0,
        "blocker {b} vs posts {p}"
    );
}

#[test]
fn wakeup_releases_block() {
    let dir = Scratch::new("wake");
    let wl = workload(
        &dir,
        "wake",
        "define process name=p {
           thread name=waker {
             flowop think name=pause, value=2000
             flowop wakeup name=wake, target=blk
           }
           thread name=sleeper {
             flowop block name=blk
           }
         }
         run 2\n",
    );
    let v = run_json(&[&wl], &dir);
    let (w, b) = (ops(&v, "wake"), ops(&v, "blk"));
    assert!(w > 100, "{v}");
    assert!(b <= w && b * 10 >= w * 8, "block {b} vs wakeup {w}");
}

#[test]
fn eventgen_paces_at_its_rate() {
    let dir = Scratch::new("eventgen");
    let wl = workload(
        &dir,
        "eg",
        "eventgen rate=200
         define process name=p {
           thread name=t { flowop eventlimit name=ev }
         }
         run 4\n",
    );
    let v = run_json(&[&wl], &dir);
    let rate = flowop(&v, "ev")["ops_per_s"].as_f64().unwrap();
    assert!((170.0..=230.0).contains(&rate), "eventlimit at {rate}/s");
}

#[test]
fn iopslimit_with_target_paces_that_flowop() {
    let dir = Scratch::new("iops");
    let wl = workload(
        &dir,
        "iops",
        "eventgen rate=100
         define file name=f, path=/tmp, size=64k, prealloc
         define process name=p {
           thread name=t, instances=2 {
             flowop read name=rd, filesetname=f, iosize=4k, random
             flowop iopslimit name=lim, target=rd
           }
         }
         run 3\n",
    );
    let v = run_json(&[&wl], &dir);
    let rate = flowop(&v, "rd")["ops_per_s"].as_f64().unwrap();
    assert!((80.0..=120.0).contains(&rate), "reads at {rate}/s");
}

/// CPU seconds (user + system) of a finished child, reaped with wait4.
fn child_cpu(child: std::process::Child) -> (f64, bool) {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: ru is written by the kernel; the child is ours and not yet reaped.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::wait4(pid, &mut status, 0, &mut ru), pid);
        ru
    };
    std::mem::forget(child);
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (
        t(ru.ru_utime) + t(ru.ru_stime),
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    )
}

#[test]
fn eventgen_rate_zero_costs_nothing() {
    let dir = Scratch::new("eventgen0");
    let wl = workload(
        &dir,
        "eg0",
        "eventgen rate=0
         define process name=p {
           thread name=t {
             flowop eventlimit name=ev
             flowop think name=pause, value=10000
           }
         }
         run 3\n",
    );
    let json = dir.path().join("r.json");
    let child = bin()
        .args([
            "run",
            &wl,
            "--dir",
            dir.s(),
            "--json",
            json.to_str().unwrap(),
            "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (cpu, ok) = child_cpu(child);
    assert!(ok);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Without an eventgen rate the limit returns at once and, as in Filebench, is not an
    // operation; the loop runs at the think time's pace.
    assert_eq!(ops(&v, "ev"), 0, "eventlimit without eventgen counted");
    let pauses = ops(&v, "pause");
    assert!(
        (200..=310).contains(&pauses),
        "eventlimit is unlimited: {pauses} loops"
    );
    assert!(
        cpu < 0.5,
        "a 3 s run of a sleeping thread used {cpu:.3} s of CPU"
    );
}

#[test]
fn aiowrite_writes_its_buffer() {
    let dir = Scratch::new("aio");
    let wl = workload(
        &dir,
        "aio",
        "set mode quit alldone
         define fileset name=out, path=/tmp, entries=1, size=0, prealloc, dirwidth=10
         define process name=p {
           thread name=t {
             flowop aiowrite name=aw, filesetname=out, iosize=64k, iters=4
             flowop aiowait name=wait
             flowop finishoncount name=fin, target=aw, value=64
           }
         }
         run 10\n",
    );
    let json = dir.path().join("r.json");
    let o = bin()
        .args([
            "run",
            &wl,
            "--dir",
            dir.s(),
            "--json",
            json.to_str().unwrap(),
        ])
        .arg("--keep")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let aw = flowop(&v, "aw");
    let bytes = aw["bytes"].as_u64().unwrap();
    assert!(aw["ops"].as_u64().unwrap() >= 64, "{v}");
    assert_eq!(bytes % 65536, 0);
    assert!(ops(&v, "wait") > 0);
    let files = files_below(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let data = std::fs::read(&files[0]).unwrap();
    // Every completion counted is on disk (writes still in flight at the end may add more).
    assert!(data.len() as u64 >= bytes, "{} < {bytes}", data.len());
    assert_eq!(data.len() % 65536, 0);
    // Each write is the same 64 KiB of the thread's buffer, which is not zeros.
    let first = &data[..65536];
    assert!(first.iter().any(|b| *b != 0));
    for (i, chunk) in data.chunks(65536).enumerate() {
        assert!(chunk == first, "chunk {i} differs from the buffer's bytes");
    }
}

#[test]
fn mmap_reads_return_the_files_bytes() {
    let dir = Scratch::new("mmap");
    let wl = workload(
        &dir,
        "mmap",
        "define fileset name=data, path=/tmp, entries=4, size=256k, prealloc, dirwidth=10
         define process name=p {
           thread name=t {
             flowop readwholefile name=whole, filesetname=data, iosize=64k, mmap, fd=1
             flowop closefile name=close1, fd=1
             flowop read name=seq, filesetname=data, iosize=64k, mmap
           }
         }
         run 1\n",
    );
    let v = run_json(&[&wl], &dir);
    assert_all_worked(&v);
    let whole = flowop(&v, "whole");
    // Each loop closes fd 1, so each readwholefile first opens a file: as in Filebench, the
    // open is an operation of the readwholefile (without bytes).
    assert_eq!(
        whole["bytes"].as_u64().unwrap(),
        whole["ops"].as_u64().unwrap() / 2 * 256 * 1024,
        "{v}"
    );
    // Sequential reads: four 64 KiB reads, then one at end of file that returns 0 bytes.
    let seq = flowop(&v, "seq");
    let (n, b) = (seq["ops"].as_u64().unwrap(), seq["bytes"].as_u64().unwrap());
    assert_eq!(b % 65536, 0);
    assert!(
        b / 65536 >= n * 4 / 5 - 1 && b / 65536 <= n,
        "{n} reads, {b} bytes"
    );
}

#[test]
fn videoserver_runs_scaled_down() {
    let dir = Scratch::new("video");
    let v = run_json(
        &[
            "videoserver",
            "-s",
            "filesize=4m",
            "-s",
            "numactivevids=2",
            "-s",
            "numpassivevids=4",
            "-s",
            "nthreads=2",
            "-s",
            "repintval=1",
            "-s",
            "eventrate=8",
            "--duration",
            "3",
        ],
        &dir,
    );
    assert_all_worked(&v);
    // bwlimit: one MiB per event, 8 events per second across the readers.
    let mbs = flowop(&v, "vidreader")["mb_per_s"].as_f64().unwrap();
    assert!(mbs > 2.0 && mbs < 11.0, "vidreader at {mbs} MiB/s");
}

#[test]
fn think_time_and_psrun_reports() {
    let dir = Scratch::new("think");
    let wl = workload(
        &dir,
        "think",
        "set $t = randvar(type=uniform, min=1000, mean=2000)
         define process name=p {
           thread name=t { flowop think name=pause, value=$t }
         }
         psrun 1 3\n",
    );
    let json = dir.path().join("r.json");
    let o = bin()
        .args([
            "run",
            &wl,
            "--dir",
            dir.s(),
            "--json",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let blocks = out.matches("Per-Operation Breakdown (last").count();
    assert!((2..=3).contains(&blocks), "{blocks} psrun blocks:\n{out}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let mean_us = flowop(&v, "pause")["latency_us"]["mean"].as_f64().unwrap();
    assert!(
        (1900.0..2600.0).contains(&mean_us),
        "mean think {mean_us} us"
    );
}
