//! fio options fsbench used to refuse, run as fio defines them (`filename_format`,
//! `fixedbufs`, `registered_files`, `hipri`'s conditions, `size=N%`), and a job file's
//! errors all reported in one pass, each once, at its file, line and column.

use crate::common::*;
use serde_json::Value;

fn write_job(d: &Scratch, name: &str, text: &str) -> String {
    let f = d.path().join(name);
    std::fs::write(&f, text).unwrap();
    f.to_str().unwrap().to_string()
}

#[test]
fn every_error_of_a_job_file_is_reported_once_in_one_pass() {
    let d = Scratch::new("fio-errors");
    let f = write_job(
        &d,
        "e.fio",
        "[global]\nbogus=1\nsize=10%\n[a]\nrw=read\nbs=4x\n[b]\nrw=write\nsize=1m\nhipri\nfoo\n",
    );
    let o = run(&["check", &f]);
    assert!(!o.status.success());
    let t = text(&o);
    // The [global] line's error once, though two jobs take it; every other error too.
    assert_eq!(t.matches("`bogus` is not supported").count(), 1, "{t}");
    for place in [
        "e.fio:2:1",
        "e.fio:3:",
        "e.fio:6:4",
        "e.fio:10:1",
        "e.fio:11:1",
    ] {
        assert_eq!(t.matches(place).count(), 1, "{place}: {t}");
    }
    assert!(
        t.contains("`size=N%` takes a share of an existing file"),
        "{t}"
    );
    assert!(
        t.contains("`hipri` is an option of ioengine=io_uring"),
        "{t}"
    );
    // In the order of the file.
    let at = |p: &str| t.find(p).unwrap();
    assert!(
        at("e.fio:2:1") < at("e.fio:6:4") && at("e.fio:6:4") < at("e.fio:11:1"),
        "{t}"
    );
}

#[test]
fn filename_format_names_files_as_fio_expands_it() {
    let d = Scratch::new("fio-format");
    let job = "[global]\nsize=64k\nnrfiles=2\nnumjobs=2\n[j]\nrw=write\nfilename_format=data-$jobname-$jobnum-$filenum.bin\n";
    let f = write_job(&d, "f.fio", job);
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
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rd = std::path::Path::new(r["run_dir"].as_str().unwrap());
    let mut names: Vec<String> = std::fs::read_dir(rd)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with(".fsbench"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "data-j-0-0.bin",
            "data-j-0-1.bin",
            "data-j-1-0.bin",
            "data-j-1-1.bin"
        ]
    );
    let bad = write_job(
        &d,
        "b.fio",
        "[j]\nrw=read\nsize=64k\nfilename_format=../$jobname\n",
    );
    let t = text(&run(&["check", &bad]));
    assert!(t.contains("b.fio:4:17") && t.contains("plain names"), "{t}");
}

#[test]
fn io_uring_registered_buffers_and_files_run_and_hipri_needs_direct() {
    let d = Scratch::new("fio-uring-opts");
    let f = write_job(
        &d,
        "u.fio",
        "[j]\nrw=randrw\nbs=4k\nsize=1m\nioengine=io_uring\niodepth=8\nfixedbufs\nregistered_files=1\nfsync=16\n",
    );
    let o = run(&["run", &f, "--dir", d.s(), "--output-format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let j = &v["jobs"][0];
    let ios = j["read"]["total_ios"].as_u64().unwrap() + j["write"]["total_ios"].as_u64().unwrap();
    assert_eq!(ios, 256);
    assert!(j["sync"]["total_ios"].as_u64().unwrap() > 0);
    let h = write_job(
        &d,
        "h.fio",
        "[j]\nrw=randread\nsize=1m\nioengine=io_uring\nhipri\n",
    );
    let t = text(&run(&["check", &h]));
    assert!(t.contains("h.fio:5:1") && t.contains("add direct=1"), "{t}");
}

/// The bytes of `f` in the page cache (util-linux's `fincore`).
fn cached_bytes(f: &std::path::Path) -> u64 {
    let o = std::process::Command::new("fincore")
        .args(["--bytes", "--noheadings", "--output", "RES"])
        .arg(f)
        .output()
        .expect("fincore runs");
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
}

/// fio's `create_fsync` (on by default): the laid-out file is synced, so the job's
/// `invalidate` drops all of it and a read starts from the disk; without it the layout's
/// dirty pages cannot be dropped, and much of the file stays cached.
#[test]
fn create_fsync_leaves_nothing_of_the_layout_cached_for_the_job() {
    if !have("fincore") {
        skip("create_fsync: util-linux's fincore is missing");
        return;
    }
    let d = Scratch::new("fio-create-fsync");
    let tries = std::cell::Cell::new(0);
    let cached = |sync: &str| {
        tries.set(tries.get() + 1);
        let dir = d.path().join(format!("d{}", tries.get()));
        std::fs::create_dir_all(&dir).unwrap();
        let job = write_job(
            &d,
            &format!("cf{sync}.fio"),
            &format!(
                "[cf]\nrw=read\nbs=4k\nsize=32m\nio_size=4k\nioengine=psync\ncreate_fsync={sync}\n"
            ),
        );
        stdout_ok(&["run", &job, "--dir", dir.to_str().unwrap(), "--keep", "-q"]);
        let file = walkdir(&dir)
            .into_iter()
            .find(|p| std::fs::metadata(p).is_ok_and(|m| m.len() == 32 << 20))
            .expect("the laid-out file");
        cached_bytes(&file)
    };
    let synced = cached("1");
    assert!(
        synced <= 1 << 20,
        "{synced} bytes cached after a synced layout"
    );
    // Without the sync the layout's dirty pages stay cached, unless another process
    // synced or dropped the caches meanwhile (other tests do): a few tries.
    let dirty = (0..5).map(|_| cached("0")).find(|&b| b >= 8 << 20);
    assert!(
        dirty.is_some(),
        "less than 8 MiB cached after an unsynced layout in five tries"
    );
}

/// Every regular file below `dir`.
fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        } else {
            out.push(p);
        }
    }
    out
}
