//! `--verify`, `--verify-only` and `fsbench verify` on the real binary: clean runs report
//! no mismatch, and every corruption injected into files on disk is caught at its offset.

use crate::common::*;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Regular files below `dir` that fsbench's fileset holds (not its markers), sorted.
fn data_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() && !e.file_name().to_string_lossy().starts_with(".fsbench") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn clean_runs_check_blocks_and_find_no_mismatch() {
    let s = Scratch::new("verify-clean");
    for (w, vars) in [
        ("fileserver", vec!["nfiles=200", "nthreads=4"]),
        ("varmail", vec!["nfiles=300", "nthreads=4"]),
    ] {
        let json = s.path().join(format!("{w}.json"));
        let mut args = vec![
            "run",
            w,
            "--dir",
            s.s(),
            "--duration",
            "1",
            "--verify",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ];
        for v in &vars {
            args.extend(["-s", v]);
        }
        let o = run(&args);
        assert!(o.status.success(), "{w}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(" 0 mismatches"), "{w}: {err}");
        let r = json_of(&json);
        let mut checked = 0;
        for f in r["flowops"].as_array().unwrap() {
            let v = &f["verify"];
            assert_eq!(v["mismatches"], 0, "{w}: {f}");
            checked += v["blocks_checked"].as_u64().unwrap();
        }
        assert!(checked > 100, "{w}: only {checked} blocks checked");
    }
    // Asynchronous writes: stamped from their own copy, checked once they have landed.
    let w = s.path().join("aio.f");
    std::fs::write(
        &w,
        "set $dir=/tmp\n\
         define fileset name=db,path=$dir,size=256k,entries=4,dirwidth=10,prealloc\n\
         define process name=p {\n thread name=t,memsize=1m {\n\
           flowop aiowrite name=aw,filesetname=db,iosize=8k,random,fd=1\n\
           flowop aiowrite name=aw2,fd=1,iosize=8k,random\n\
           flowop aiowait name=wait\n\
           flowop read name=rd,fd=1,iosize=64k,random\n\
         }\n}\n",
    )
    .unwrap();
    let json = s.path().join("aio.json");
    let o = run(&[
        "run",
        w.to_str().unwrap(),
        "--dir",
        s.s(),
        "--duration",
        "1",
        "--verify",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "aio: {}", text(&o));
    let r = json_of(&json);
    let rd = r["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "rd")
        .unwrap()
        .clone();
    assert_eq!(rd["verify"]["mismatches"], 0, "{rd}");
    assert!(
        rd["verify"]["blocks_checked"].as_u64().unwrap() > 100,
        "{rd}"
    );
    // Without --verify the results carry no verify section.
    let json = s.path().join("plain.json");
    let o = run(&[
        "run",
        "fileserver",
        "--dir",
        s.s(),
        "--duration",
        "0.3",
        "-s",
        "nfiles=50",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(json_of(&json)["flowops"][0].get("verify").is_none());
}

const KEPT: &str = r#"
set $dir=/tmp
define fileset name=kept,path=$dir,size=20000,entries=6,dirwidth=10,prealloc=100,reuse
define process name=p,instances=1
{
  thread name=t,memsize=1m,instances=1
  {
    flowop openfile name=open1,filesetname=kept,fd=1
    flowop readwholefile name=read1,fd=1,iosize=64k
    flowop closefile name=close1,fd=1
  }
}
create files
"#;

#[test]
fn verify_only_catches_every_injected_corruption_at_its_offset() {
    let s = Scratch::new("verify-only");
    let w = s.path().join("kept.f");
    std::fs::write(&w, KEPT).unwrap();
    let w = w.to_str().unwrap();
    let o = run(&["run", w, "--dir", s.s(), "--verify", "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    // Clean first.
    let o = run(&["run", w, "--dir", s.s(), "--verify-only"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("0 mismatches in 6 files"),
        "{}",
        text(&o)
    );
    let files = data_files(&s.path().join("fsbench-kept"));
    assert_eq!(files.len(), 6, "{files:?}");
    // A flipped byte in block 1, a file cut inside block 2, blocks 0 and 3 swapped, a
    // block of another file copied over block 1.
    let mut a = std::fs::read(&files[0]).unwrap();
    a[5000] ^= 0x20;
    std::fs::write(&files[0], &a).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&files[1])
        .unwrap()
        .set_len(9000)
        .unwrap();
    let mut c = std::fs::read(&files[2]).unwrap();
    let (b0, b3): (Vec<u8>, Vec<u8>) = (c[0..4096].to_vec(), c[12288..16384].to_vec());
    c[0..4096].copy_from_slice(&b3);
    c[12288..16384].copy_from_slice(&b0);
    std::fs::write(&files[2], &c).unwrap();
    let other = std::fs::read(&files[4]).unwrap();
    let mut d = std::fs::read(&files[3]).unwrap();
    d[4096..8192].copy_from_slice(&other[4096..8192]);
    std::fs::write(&files[3], &d).unwrap();

    let json = s.path().join("v.json");
    let o = run(&[
        "run",
        w,
        "--dir",
        s.s(),
        "--verify-only",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        !o.status.success(),
        "corruption went unnoticed: {}",
        text(&o)
    );
    let v = json_of(&json);
    let found: Vec<(String, u64, String)> = v["first"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap().to_string(),
                m["offset"].as_u64().unwrap(),
                m["found"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let at = |f: &Path, off: u64, what: &str| {
        found
            .iter()
            .any(|(p, o, why)| p == f.to_str().unwrap() && *o == off && why.contains(what))
    };
    assert!(at(&files[0], 4096, "changed"), "{found:?}");
    assert!(at(&files[1], 8192, "truncated"), "{found:?}");
    assert!(at(&files[2], 0, "misplaced"), "{found:?}");
    assert!(at(&files[2], 12288, "misplaced"), "{found:?}");
    assert!(at(&files[3], 4096, "misplaced"), "{found:?}");
    // Nothing else is reported: no false alarms on the untouched blocks.
    assert_eq!(v["mismatches"], 5, "{found:?}");
    // `fsbench verify DIR` checks the same tree.
    let o = run(&["verify", s.path().join("fsbench-kept").to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("5 mismatches in 6 files"));
}

const STALE: &str = r#"
set $dir=/tmp
define fileset name=one,path=$dir,size=64k,entries=1,dirwidth=10,prealloc=100
define process name=p,instances=1
{
  thread name=t,memsize=1m,instances=1
  {
    flowop delay name=settle,value=2
    flowop openfile name=open1,filesetname=one,fd=1
    flowop writewholefile name=write1,filesetname=one,fd=1,iosize=64k
    flowop closefile name=close1,fd=1
    flowop delay name=wait,value=3
    flowop openfile name=open2,filesetname=one,fd=1
    flowop readwholefile name=read2,fd=1,iosize=64k,verify
    flowop closefile name=close2,fd=1
  }
}
"#;

#[test]
fn a_run_catches_data_that_went_back_to_an_older_write() {
    // The file is laid out (generation 1), rewritten at 2 s (generation 2) and read at 5 s.
    // In between, the test puts the laid-out copy back: every byte is a valid block of the
    // right file at the right offset, only older; the run must call it stale. The read
    // flowop's `verify` attribute asks for it (no --verify).
    let s = Scratch::new("verify-stale");
    let w = s.path().join("stale.f");
    std::fs::write(&w, STALE).unwrap();
    let mut child = bin()
        .args([
            "run",
            w.to_str().unwrap(),
            "--dir",
            s.s(),
            "--duration",
            "6",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(err).lines() {
            let line = line.unwrap();
            if line.contains("fsbench: running") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the run started");
    let started = Instant::now();
    let file = data_files(s.path())
        .into_iter()
        .find(|p| p.components().any(|c| c.as_os_str() == "one"))
        .expect("the fileset's file");
    let laid_out = std::fs::read(&file).unwrap();
    assert_eq!(laid_out.len(), 65536);
    // After the rewrite at ~2 s, before the read at ~5 s.
    std::thread::sleep(Duration::from_millis(3500).saturating_sub(started.elapsed()));
    let rewritten = std::fs::read(&file).unwrap();
    assert_ne!(rewritten, laid_out, "the rewrite had not happened at 3.5 s");
    std::fs::write(&file, &laid_out).unwrap();
    let status = child.wait().unwrap();
    let log = reader.join().unwrap();
    assert!(!status.success(), "{log}");
    assert!(log.contains("verify: read2:"), "{log}");
    assert!(log.contains("stale data"), "{log}");
    assert!(log.contains("generation 1 (stale data)"), "{log}");
}
