//! fio's verify options beyond `verify=` itself, each shown to have its effect beside
//! Debian's fio: `verify_backlog_batch` (the same order of reads and writes as fio),
//! `verify_only` (what an earlier run wrote, on a loop device, read back without a write,
//! fio agreeing), `continue_on_error=verify` with `verify_dump` (the bad block dumped as
//! read and as written), `verify_async` (threads of their own), and the verify state
//! options fsbench does not keep.

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

/// fsbench's fio JSON for job file `f`, run in `cwd` (its run directory there too);
/// (status ok, the first job, all output).
fn fsbench_job(f: &str, cwd: &Path, args: &[&str]) -> (bool, Value, String) {
    let mut all = vec![
        "run",
        f,
        "--dir",
        cwd.to_str().unwrap(),
        "--output-format",
        "json",
    ];
    all.extend_from_slice(args);
    let o = bin().args(&all).current_dir(cwd).output().unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status.success(), v["jobs"][0].clone(), text(&o))
}

/// fio's first job for job file `f`, run in `cwd`; (status ok, the job, all output).
fn fio_job(f: &str, cwd: &Path) -> (bool, Value, String) {
    let o = Command::new("fio")
        .args(["--output-format=json", f])
        .current_dir(cwd)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let at = out.find("\n{").map_or(0, |i| i + 1);
    let v: Value = serde_json::from_str(&out[at..]).unwrap_or(Value::Null);
    (o.status.success(), v["jobs"][0].clone(), text(&o))
}

/// The directions (0 read, 1 write) of a clone's I/Os in order, from its IOPS log.
fn directions(log: &Path) -> String {
    let t = std::fs::read_to_string(log).unwrap();
    t.lines()
        .map(|l| l.split(',').nth(2).unwrap().trim().to_string())
        .collect()
}

#[test]
fn verify_backlog_batch_reads_back_part_of_the_backlog_in_fios_order() {
    let d = Scratch::new("fio-vbatch");
    let job = |prefix: &str| {
        format!(
            "[b]\ndirectory={}\nrw=write\nbs=4k\nsize=128k\nverify=crc32c\nverify_backlog=8\nverify_backlog_batch=2\nwrite_iops_log={prefix}\nlog_offset=1\n",
            d.s()
        )
    };
    let f = write_job(d.path(), "b.fio", &job("ours"));
    let (ok, j, t) = fsbench_job(&f, d.path(), &[]);
    assert!(ok, "{t}");
    assert_eq!(j["verify"]["blocks_checked"], 32, "{t}");
    // 8 writes, then 2 of them read back each time 2 more are written; the rest at the end.
    let want = format!("{}{}{}", "1".repeat(8), "0011".repeat(12), "0".repeat(8));
    assert_eq!(directions(&d.path().join("ours_iops.1.log")), want);
    if has_fio() {
        let f = write_job(d.path(), "fio.fio", &job("theirs"));
        let (ok, _, t) = fio_job(&f, d.path());
        assert!(ok, "{t}");
        assert_eq!(directions(&d.path().join("theirs_iops.1.log")), want);
    } else {
        skip("verify_backlog_batch beside fio: fio is not installed");
    }
    let t = text(&run(&["check", &f]));
    assert!(
        t.contains("(2 of them each time, verify_backlog_batch)"),
        "{t}"
    );
}

/// A loop device with direct I/O over a 4 MiB image of zeros.
fn device(d: &Scratch) -> Option<(Loop, std::path::PathBuf)> {
    let img = d.path().join("v.img");
    std::fs::write(&img, vec![0u8; 4 << 20]).unwrap();
    match run_ok(
        "losetup",
        &["--direct-io=on", "-f", "--show", img.to_str().unwrap()],
    ) {
        Ok(dev) => Some((Loop(dev), img)),
        Err(e) => {
            skip(&format!("verify_only: no loop device: {e}"));
            None
        }
    }
}

#[test]
fn verify_only_reads_back_an_earlier_runs_data_and_goes_past_a_bad_block_when_told() {
    if !root_or_skip_because("verify_only", "a loop device to write and check again") {
        return;
    }
    let d = Scratch::new("fio-vonly");
    let Some((dev, img)) = device(&d) else {
        return;
    };
    let body = format!(
        "[v]\nfilename={}\nrw=write\nbs=4k\nsize=1m\ndirect=1\nverify=crc32c\n",
        dev.0
    );
    let allow = ["--allow-device", dev.0.as_str()];
    let w = write_job(d.path(), "w.fio", &format!("{body}do_verify=0\n"));
    let (ok, _, t) = fsbench_job(&w, d.path(), &allow);
    assert!(ok, "{t}");
    let written = std::fs::read(&img).unwrap();
    let vo = write_job(d.path(), "vo.fio", &format!("{body}verify_only\n"));
    let (ok, j, t) = fsbench_job(&vo, d.path(), &allow);
    assert!(ok, "{t}");
    assert_eq!(j["verify"]["blocks_checked"], 256, "{t}");
    assert_eq!(j["read"]["total_ios"], 256, "{t}");
    assert_eq!(std::fs::read(&img).unwrap(), written, "verify_only wrote");
    if has_fio() {
        let (ok, fj, ft) = fio_job(&vo, d.path());
        assert!(ok, "fio's verify_only of fsbench's data: {ft}");
        assert_eq!(fj["read"]["total_ios"], 256);
    }
    // A changed block: the check fails there (with the checks in threads too) ...
    let mut bad = written.clone();
    bad[8192 + 100..8192 + 104].copy_from_slice(b"XXXX");
    std::fs::write(&img, &bad).unwrap();
    let va = write_job(
        d.path(),
        "va.fio",
        &format!("{body}verify_only\nverify_async=2\n"),
    );
    for f in [&vo, &va] {
        let (ok, j, t) = fsbench_job(f, d.path(), &allow);
        assert!(!ok, "{t}");
        assert_eq!(j["verify"]["first_bad_offset"], 8192, "{t}");
        assert_eq!(j["error"], libc::EILSEQ, "{t}");
    }
    // ... and with continue_on_error=verify the job goes on, counts it, and dumps it.
    let cwd = Scratch::new("fio-vonly-dump");
    let vc = write_job(
        d.path(),
        "vc.fio",
        &format!("{body}verify_only\ncontinue_on_error=verify\nverify_dump=1\n"),
    );
    let (ok, j, t) = fsbench_job(&vc, cwd.path(), &allow);
    assert!(ok, "{t}");
    assert_eq!(j["verify"]["blocks_checked"], 256, "{t}");
    assert_eq!(
        (j["total_err"].as_u64(), j["first_error"].as_i64()),
        (Some(1), Some(libc::EILSEQ as i64)),
        "{t}"
    );
    let base = Path::new(&dev.0)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let dump = |kind: &str| std::fs::read(cwd.path().join(format!("{base}.8192.{kind}"))).unwrap();
    assert_eq!(dump("received"), &bad[8192..12288]);
    assert_eq!(dump("expected"), &written[8192..12288]);
    if has_fio() {
        let fcwd = Scratch::new("fio-vonly-fio");
        let (ok, fj, ft) = fio_job(&vc, fcwd.path());
        assert!(ok, "{ft}");
        for k in ["error", "total_err", "first_error"] {
            assert_eq!(fj[k], j[k], "{k}: {ft}");
        }
    } else {
        skip("verify_only beside fio: fio is not installed");
    }
}

#[test]
fn verify_options_fsbench_cannot_honour_are_refused_at_their_place() {
    let d = Scratch::new("fio-vrefuse");
    let f = write_job(
        d.path(),
        "r.fio",
        "[v]\nrw=write\nsize=1m\nverify=crc32c\nverify_only\n",
    );
    let t = text(&run(&["check", &f]));
    assert!(
        t.contains("r.fio:5:1") && t.contains("block devices only"),
        "{t}"
    );
    let f = write_job(
        d.path(),
        "s.fio",
        "[v]\nrw=write\nsize=1m\nverify=md5\nverify_state_save=1\nverify_state_load=0\n",
    );
    let t = text(&run(&["check", &f]));
    assert!(
        t.contains("s.fio:5:19") && t.contains("verify state"),
        "{t}"
    );
    assert!(!t.contains("s.fio:6:"), "{t}");
}

#[test]
fn verify_async_checks_reads_in_threads_of_their_own() {
    let d = Scratch::new("fio-vasync");
    let f = write_job(
        d.path(),
        "a.fio",
        "[a]\nrw=randwrite\nbs=4k\nsize=32m\nverify=md5\nverify_async=2\n",
    );
    let json = d.path().join("a.json");
    let mut child = bin()
        .args([
            "run",
            &f,
            "--dir",
            d.s(),
            "-q",
            "--json",
            json.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = 0;
    while child.try_wait().unwrap().is_none() {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", child.id()));
        let names = tasks.into_iter().flatten().flatten().filter(|e| {
            let c = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            c.starts_with("verify-")
        });
        seen = seen.max(names.count());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(seen, 2, "two verifying threads while the job ran");
    let r = json_of(&json);
    let fj = &r["fio_jobs"][0]["verify"];
    assert_eq!(fj["blocks"], 8192, "{fj}");
    assert_eq!(fj["mismatches"], 0, "{fj}");
    let t = text(&run(&["check", &f]));
    assert!(
        t.contains("checked by 2 threads of their own (verify_async)"),
        "{t}"
    );
}
