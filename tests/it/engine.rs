//! The engine through the real binary on real files: every built-in personality runs briefly
//! with small variables and every flowop does work; fileset shapes land on disk; nothing
//! outside fsbench's run directory is touched; space refusal; Ctrl-C clean-up.

use crate::common::*;
use serde_json::Value;

/// Small values for the variables built-ins use, so each runs in a couple of seconds.
const SMALL: &[(&str, &str)] = &[
    ("nfiles", "60"),
    ("ndirs", "40"),
    ("nthreads", "2"),
    ("filesize", "64k"),
    ("meanfilesize", "16k"),
    ("iosize", "8k"),
    ("meaniosize", "8k"),
    ("meandirwidth", "8"),
    ("count", "200"),
    ("bytes", "1m"),
    ("fsynccount", "32"),
    ("nshadows", "2"),
    ("ndbwriters", "1"),
    ("logfilesize", "1m"),
    ("numactivevids", "2"),
    ("numpassivevids", "8"),
    ("memperthread", "1m"),
    // oltp: short think loops so the log writer's 3200 posts arrive within the run.
    ("usermode", "2000"),
    // videoserver: passive videos are laid out at 50%: enough that some exist (a deletefile
    // finding none ends the run, as in Filebench). The writer's delay between replacements ends within the run.
    ("repintval", "1"),
];

fn small_args(name: &str) -> Vec<String> {
    let o = run(&["show", name]);
    let shown = String::from_utf8_lossy(&o.stdout).to_string();
    let mut args = Vec::new();
    for (k, v) in SMALL {
        if shown.contains(&format!("#   ${k} = ")) {
            args.push("-s".to_string());
            args.push(format!("{k}={v}"));
        }
    }
    args
}

fn run_json(args: &[String], dir: &Scratch) -> (Value, String) {
    let json = dir.path().join("r.json");
    let mut a: Vec<String> = args.to_vec();
    a.extend([
        "--dir".into(),
        dir.s().into(),
        "--json".into(),
        json.to_str().unwrap().into(),
        "-q".into(),
    ]);
    let o = bin().args(&a).output().unwrap();
    let out = text(&o);
    assert!(o.status.success(), "{a:?} failed:\n{out}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (v, out)
}

#[test]
fn every_builtin_runs_and_every_flowop_works() {
    let o = run(&["list"]);
    let names: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| {
            l.starts_with("  ") && !l.trim_start().starts_with("vars:") && !l.trim().is_empty()
        })
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(names.len() >= 40, "{names:?}");
    let mut failures = Vec::new();
    for name in &names {
        let dir = Scratch::new("builtin");
        let mut args = vec![
            "run".to_string(),
            name.clone(),
            "--duration".into(),
            "1".into(),
        ];
        args.extend(small_args(name));
        let (v, out) = run_json(&args, &dir);
        for f in v["flowops"].as_array().unwrap() {
            let fname = f["name"].as_str().unwrap();
            let ops = f["ops"].as_u64().unwrap();
            let kind = f["type"].as_str().unwrap();
            // A composite records through its children; rate limits without an eventgen
            // rate are not operations (as in Filebench); finish* may end the run at once.
            if ops == 0
                && !kind.starts_with("finishon")
                && !kind.ends_with("limit")
                && kind != "composite"
            {
                failures.push(format!(
                    "{name}: flowop {fname} ({kind}) did no work\n{out}"
                ));
            }
            if f["errors"].as_u64().unwrap() > 0 {
                failures.push(format!(
                    "{name}: flowop {fname} had errors: {}",
                    f["first_error"]
                ));
            }
        }
        // The run directory is gone (nothing left but our JSON), unless a fileset has
        // `reuse`: then the marked `fsbench-NAME` directory stays for the next run.
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "json") {
                continue;
            }
            assert_eq!(
                p.file_name().unwrap().to_str().unwrap(),
                format!("fsbench-{name}"),
                "{name} left {p:?}"
            );
            assert!(p.join(".fsbench-run").is_file());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn json_contract() {
    let dir = Scratch::new("json");
    let args: Vec<String> = [
        "run",
        "fileserver",
        // Enough free entries that the run lasts its second: deletes skip files open in the
        // other thread (as in Filebench), so a small fileset drifts full and ends the run.
        "-s",
        "nfiles=1000",
        "-s",
        "filesize=4k",
        "-s",
        "nthreads=2",
        "--duration",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (v, _) = run_json(&args, &dir);
    assert_eq!(v["workload"], "fileserver");
    assert!(v["duration_s"].as_f64().unwrap() > 0.5);
    let f = &v["flowops"][0];
    for k in [
        "name",
        "type",
        "ops",
        "ops_per_s",
        "mb_per_s",
        "latency_us",
        "errors",
    ] {
        assert!(!f[k].is_null(), "missing {k}");
    }
    for k in ["mean", "p50", "p99", "max"] {
        assert!(f["latency_us"][k].as_f64().is_some(), "missing latency {k}");
    }
    for k in ["ops", "ops_per_s", "mb_per_s"] {
        assert!(v["summary"][k].as_f64().is_some(), "missing summary {k}");
    }
    // The IO summary adds up the flowops that count in it.
    let sum: u64 = v["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["io_class"] != "none")
        .map(|f| f["ops"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, v["summary"]["ops"].as_u64().unwrap());
}

fn write_workload(dir: &Scratch, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn fileset_shape_on_disk() {
    let dir = Scratch::new("shape");
    let target = Scratch::new("shape-target");
    let wl = write_workload(
        &dir,
        "shape.f",
        "set $dir=/tmp\ndefine fileset name=big,path=$dir,entries=1000,dirwidth=10,dirgamma=0,size=2k,prealloc\n\
         define fileset name=half,path=$dir,entries=400,leafdirs=50,dirwidth=20,size=1k,prealloc=50\n\
         define process name=p {\n thread name=t {\n  flowop statfile name=st,filesetname=big\n }\n}\nrun 1\n",
    );
    let o = run(&["run", &wl, "--dir", target.s(), "--keep", "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let runs: Vec<_> = std::fs::read_dir(target.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1);
    let rd = &runs[0];
    assert!(rd.join(".fsbench-run").is_file(), "run directory is marked");
    // dirgamma=0: depth fixed; 1000 files of 2 KiB.
    let (files, _dirs) = count_entries(&rd.join("big"));
    assert_eq!(files, 1000);
    let mut sizes = 0u64;
    let mut stack = vec![rd.join("big")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                let data = std::fs::read(e.path()).unwrap();
                assert_eq!(data.len(), 2048);
                assert!(
                    data.iter().any(|b| *b != 0),
                    "preallocated data is not zeros"
                );
                sizes += data.len() as u64;
            }
        }
    }
    assert_eq!(sizes, 2048 * 1000);
    // prealloc=50: about half of the 400 files, and about half of the 50 leaf dirs.
    let (files, dirs) = count_entries(&rd.join("half"));
    assert!((150..=250).contains(&files), "{files} files");
    assert!(dirs > 10, "{dirs} dirs");
    // Same seed, same tree: a second run lays out the same names.
    let target2 = Scratch::new("shape-target2");
    let o = run(&["run", &wl, "--dir", target2.s(), "--keep", "-q"]);
    assert!(o.status.success());
    let rd2 = std::fs::read_dir(target2.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let list = |root: &std::path::Path| {
        let mut v = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let e = e.unwrap();
                v.push(e.path().strip_prefix(root).unwrap().to_path_buf());
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                }
            }
        }
        v.sort();
        v
    };
    assert_eq!(list(&rd.join("half")), list(&rd2.join("half")));
}

#[test]
fn flowops_change_the_disk_as_they_should() {
    let dir = Scratch::new("effects");
    let target = Scratch::new("effects-target");
    // Creates 30 files of 4 KiB (one write each) and stops; the directory is kept to look at.
    let wl = write_workload(
        &dir,
        "create.f",
        "set $dir=/tmp\nset mode quit alldone\n\
         define fileset name=fs,path=$dir,entries=30,dirwidth=5,size=4k\n\
         define process name=p {\n thread name=t {\n  flowop createfile name=c,filesetname=fs,fd=1\n  flowop writewholefile name=w,fd=1,iosize=1k\n  flowop closefile name=cl,fd=1\n  flowop finishoncount name=f,value=30,target=c\n }\n}\nrun 30\n",
    );
    let json = dir.path().join("r.json");
    let o = run(&[
        "run",
        &wl,
        "--dir",
        target.s(),
        "--keep",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(
        v["duration_s"].as_f64().unwrap() < 20.0,
        "alldone ended the run early"
    );
    let rd = std::fs::read_dir(target.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let (files, _) = count_entries(&rd.join("fs"));
    assert_eq!(files, 30);
    let w = flowop(&v, "w");
    assert_eq!(w["ops"], 30);
    assert_eq!(w["bytes"], 30 * 4096);

    // Delete and makedir/removedir on a prepared tree.
    let target = Scratch::new("effects-target2");
    let wl = write_workload(
        &dir,
        "delete.f",
        "set $dir=/tmp\nset mode quit alldone\n\
         define fileset name=fs,path=$dir,entries=20,leafdirs=10,dirwidth=5,size=1k,prealloc\n\
         define process name=p {\n thread name=t {\n  flowop deletefile name=d,filesetname=fs\n  flowop removedir name=r,filesetname=fs\n  flowop finishoncount name=f,value=10,target=d\n }\n}\nrun 30\n",
    );
    let o = run(&["run", &wl, "--dir", target.s(), "--keep", "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let rd = std::fs::read_dir(target.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let (files, _) = count_entries(&rd.join("fs"));
    assert_eq!(files, 10, "10 of 20 files deleted");
}

#[test]
fn preexisting_directory_contents_are_left_alone() {
    let target = Scratch::new("untouched");
    let mine = target.path().join("precious");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("data.txt"), b"keep me").unwrap();
    std::fs::write(target.path().join("notes"), b"mine").unwrap();
    let o = run(&[
        "run",
        "fileserver",
        "-s",
        "nfiles=30",
        "-s",
        "nthreads=2",
        "--duration",
        "1",
        "--dir",
        target.s(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(mine.join("data.txt")).unwrap(), b"keep me");
    assert_eq!(std::fs::read(target.path().join("notes")).unwrap(), b"mine");
    let left: Vec<_> = std::fs::read_dir(target.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

#[test]
fn refuses_when_the_filesets_cannot_fit() {
    let target = Scratch::new("nospace");
    let o = run(&[
        "run",
        "fileserver",
        "-s",
        "filesize=64t",
        "-s",
        "nfiles=100",
        "--dir",
        target.s(),
        "--duration",
        "1",
    ]);
    assert!(!o.status.success());
    let out = text(&o);
    assert!(
        out.contains("the filesets need") && out.contains("free"),
        "{out}"
    );
    assert!(out.contains("lower -s filesize"), "{out}");
    assert_eq!(
        std::fs::read_dir(target.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}

#[test]
fn ctrl_c_stops_reports_and_cleans_up() {
    let target = Scratch::new("sigint");
    let child = bin()
        .args([
            "run",
            "fileserver",
            "-s",
            "nfiles=50",
            "-s",
            "nthreads=2",
            "--duration",
            "60",
            // 50 files drift full (deletes skip files open in the other thread, as in
            // Filebench), which would end the run before the signal.
            "--continue-when-exhausted",
            "--dir",
            target.s(),
            "-q",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = std::time::Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(t0.elapsed().as_secs() < 20, "stopped promptly");
    let out = text(&o);
    assert!(!o.status.success(), "an interrupted run exits non-zero");
    assert!(
        out.contains("IO Summary"),
        "partial results printed:\n{out}"
    );
    assert!(out.contains("(interrupted)"), "{out}");
    assert_eq!(
        std::fs::read_dir(target.path()).unwrap().count(),
        0,
        "run directory removed"
    );
}

#[test]
fn stride_and_sameoffset_extensions() {
    let dir = Scratch::new("stride");
    let target = Scratch::new("stride-target");
    let wl = write_workload(
        &dir,
        "stride.f",
        "set $dir=/tmp\nset mode quit alldone\n\
         define file name=s,path=$dir,size=0,prealloc\n\
         define file name=r,path=$dir,size=0,prealloc\n\
         define process name=p {\n thread name=t {\n  flowop write name=w,filename=s,fd=1,iosize=4k,stride=8k\n  \
         flowop write name=w1,filename=r,fd=2,iosize=4k\n  flowop write name=w2,fd=2,iosize=4k,sameoffset\n  \
         flowop finishoncount name=f,value=4,target=w\n }\n}\nrun 30\n",
    );
    let o = run(&["run", &wl, "--dir", target.s(), "--keep", "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let rd = std::fs::read_dir(target.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let find = |name: &str| {
        let mut stack = vec![rd.join(name)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else {
                    return std::fs::read(e.path()).unwrap();
                }
            }
        }
        panic!("no file in {name}");
    };
    // The first write's implicit open counts toward `target=w` (as in Filebench), so four
    // operations are the open and writes at 0, 8k, 16k: 20 KiB with zero-filled holes between.
    let s = find("s");
    assert_eq!(s.len(), 20 * 1024);
    assert!(s[4096..8192].iter().all(|b| *b == 0));
    assert!(s[..4096].iter().any(|b| *b != 0));
    assert!(s[8192..12288].iter().any(|b| *b != 0));
    // The second write rewrites the first's record: the file grows by 4 KiB per loop only
    // (three loops, ended by the count of w: its open and three writes).
    assert_eq!(find("r").len(), 12 * 1024);
}

/// Run a workload text; the run must end within `limit` seconds (the child is killed
/// otherwise) and leave nothing in the target directory.
fn run_bounded(workload: &str, extra: &[&str], limit: u64) -> (std::process::Output, String) {
    let dir = Scratch::new("bounded");
    let target = Scratch::new("bounded-target");
    let wl = write_workload(&dir, "w.f", workload);
    let mut child = bin()
        .args(["run", &wl, "--dir", target.s(), "-q"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t0.elapsed().as_secs() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("run did not end within {limit} s:\n{}", text(&o));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let out = text(&o);
    let left: Vec<_> = std::fs::read_dir(target.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind {left:?}\n{out}");
    (o, out)
}

const FS4: &str =
    "set $dir=/tmp\ndefine fileset name=fs,path=$dir,entries=4,dirwidth=4,size=4k,prealloc\n";

#[test]
fn runs_end_and_clean_up_whatever_the_workload_does() {
    // A thread whose flowops all run zero times still sees the stop (`iters=0` itself is
    // refused at check time; a random variable can still draw 0 every time).
    let (o, out) = run_bounded(&format!("{FS4}set $z=randvar(type=uniform, min=0, mean=0)\ndefine process name=p {{ thread name=t {{ flowop hog name=h,value=1,iters=$z }} }}\nrun 1\n"), &[], 15);
    assert!(o.status.success(), "{out}");
    // A huge hog is cut short by the stop.
    let (o, out) = run_bounded(&format!("{FS4}define process name=p {{ thread name=t {{ flowop hog name=h,value=1000000000000 }} }}\nrun 1\n"), &[], 15);
    assert!(o.status.success(), "{out}");
    // A huge memsize costs nothing: buffers follow the iosize (and 1 MiB of memsize at most).
    let (o, out) = run_bounded(&format!("{FS4}define process name=p {{ thread name=t,memsize=1000000g {{ flowop statfile name=s,filesetname=fs }} }}\nrun 1\n"), &[], 15);
    assert!(o.status.success(), "{out}");
    // A buffer that cannot be allocated is a clear error, not a hang or a crash.
    let (o, out) = run_bounded(&format!("{FS4}define process name=p {{ thread name=t {{ flowop read name=r,filesetname=fs,iosize=1000000g }} }}\nrun 1\n"), &[], 15);
    assert!(!o.status.success());
    assert!(
        out.contains("of memory") && out.contains("process `p`") && !out.contains("panicked"),
        "{out}"
    );
    // A huge sleep or delay ends with the run.
    let (o, out) = run_bounded(&format!("{FS4}define process name=p {{ thread name=t {{ flowop delay name=d,value=9000000000000000000 }} }}\nrun 1\n"), &[], 15);
    assert!(o.status.success(), "{out}");
    // Out-of-range times are refused before anything starts.
    for bad in [
        ["--duration", "inf"],
        ["--warmup", "1e300"],
        ["--interval", "0"],
    ] {
        let (o, out) = run_bounded(&format!("{FS4}define process name=p {{ thread name=t {{ flowop statfile name=s,filesetname=fs }} }}\nrun 1\n"), &bad, 15);
        assert!(!o.status.success(), "{bad:?}: {out}");
        assert!(out.contains(bad[0]) && !out.contains("panicked"), "{out}");
    }
}

#[test]
fn warmup_does_not_count_toward_finish_flowops() {
    let text = format!("{FS4}set mode quit firstdone\ndefine process name=p {{ thread name=t {{\n flowop statfile name=s,filesetname=fs\n flowop think name=th,value=1000\n flowop finishoncount name=f,value=VALUE\n}} }}\nrun 30\n");
    // Ending during the warm-up is an error, not warm-up data reported as the measurement.
    let (o, out) = run_bounded(&text.replace("VALUE", "50"), &["--warmup", "2"], 30);
    assert!(!o.status.success());
    assert!(out.contains("during the warm-up"), "{out}");
    // Otherwise the count starts after the warm-up.
    let dir = Scratch::new("warm-json");
    let json = dir.path().join("w.json");
    let (o, out) = run_bounded(
        &text.replace("VALUE", "1800"),
        &["--warmup", "0.3", "--json", json.to_str().unwrap()],
        30,
    );
    assert!(o.status.success(), "{out}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = flowop(&v, "s")["ops"].as_u64().unwrap();
    // Without a target Filebench counts every call toward the limit, the finish flowop's
    // own included: a loop of stat, think and finish reaches 1800 at its 601st finish
    // (3 × 601 − 1 = 1802 ≥ 1800; 3 × 600 − 1 = 1799 is not), counted from the end of the
    // warm-up, which may fall inside a loop.
    assert!(
        (600..=602).contains(&s),
        "{s} stat ops measured after the warm-up"
    );
}

#[test]
fn readwholefile_of_a_file_planned_empty_reads_what_it_holds() {
    let dir = Scratch::new("rwf");
    let json = dir.path().join("r.json");
    let text = "set $dir=/tmp\nset mode quit alldone\ndefine fileset name=fs,path=$dir,entries=1,dirwidth=2,size=0,prealloc\n\
                define process name=p { thread name=t {\n flowop appendfile name=a,filesetname=fs,fd=1,iosize=256k,iters=4\n flowop readwholefile name=r,fd=1\n flowop finishoncount name=f,value=1,target=r\n} }\nrun 30\n";
    let (o, out) = run_bounded(text, &["--json", json.to_str().unwrap()], 30);
    assert!(o.status.success(), "{out}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let r = flowop(&v, "r");
    assert_eq!(r["ops"], 1);
    assert_eq!(r["bytes"], 1024 * 1024);
}

/// `--cache-stat`: before each buffered read the kernel is asked (cachestat(2)) how many of
/// the pages it will read the page cache holds. Files just laid out are in the cache, every
/// page a hit; after `--cold` dropped the cache, a whole-file read of each file once finds
/// none of its pages there (the read's own read-ahead comes after the question).
#[test]
fn cache_stat_counts_the_pages_the_cache_held_when_each_read_began() {
    let text = "set $dir=/tmp\nset mode quit alldone\n\
                define fileset name=fs,path=$dir,entries=4,dirwidth=4,size=256k,prealloc\n\
                define process name=p { thread name=t {\n\
                flowop openfile name=o,filesetname=fs,fd=1\n\
                flowop readwholefile name=r,fd=1,iosize=64k\n\
                flowop closefile name=c,fd=1\n\
                flowop finishoncount name=f,value=4,target=r\n} }\nrun 30\n";
    let page_cache = |extra: &[&str]| -> Option<Value> {
        let dir = Scratch::new("cachestat");
        let json = dir.path().join("r.json");
        let mut args = vec!["--cache-stat", "--json", json.to_str().unwrap()];
        args.extend(extra);
        let (o, out) = run_bounded(text, &args, 30);
        if !o.status.success() && out.contains("cachestat(2)") {
            skip(&format!("this kernel has no cachestat(2): {out}"));
            return None;
        }
        assert!(o.status.success(), "{out}");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let r = flowop(&v, "r");
        assert_eq!(r["ops"], 4, "{out}");
        // Other flowops read nothing and carry no page-cache figures.
        let o = flowop(&v, "o");
        assert!(o.get("page_cache").is_none(), "{o}");
        Some(r["page_cache"].clone())
    };
    let Some(warm) = page_cache(&[]) else {
        return;
    };
    // Four files of 256 KiB: 64 pages of 4 KiB each.
    let pages = 4 * (256 * 1024) / fsbench_base::sys::cachestat::page_size();
    assert_eq!(warm["pages"], pages, "{warm}");
    assert_eq!(warm["cached"], pages, "{warm}");
    assert_eq!(warm["hit_pct"], 100.0, "{warm}");
    if !root_or_skip_because("cache_stat cold half", "--cold drops the page cache") {
        return;
    }
    let cold = page_cache(&["--cold"]).unwrap();
    assert_eq!(cold["pages"], pages, "{cold}");
    assert_eq!(cold["cached"], 0, "{cold}");
}

/// Every regular file below `dir` (links not followed).
fn files_below(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            files_below(&p, out);
        } else if t.is_file() {
            out.push(p);
        }
    }
}

/// The short path of plain reads and writes does what the general path does: the same
/// operations, the same offsets, from the same places of the thread's buffer. Random writes
/// of a seeded buffer leave the file with the evidence: the file after the short path is the
/// file after the general path (FSBENCH_SHORT_PATH=0), byte for byte, and another seed's is
/// not.
#[test]
fn short_path_does_what_the_general_path_does() {
    let run_once = |seed: &str, short: bool| -> (Vec<u8>, u64, u64) {
        let dir = Scratch::new("shortpath");
        let wl = write_workload(
            &dir,
            "w.f",
            &format!(
                "define file name=data,path={},size=1m,prealloc\n\
                 define process name=p {{\n thread name=t,memsize=256k {{\n  \
                 flowop write name=w,filename=data,iosize=4k,random\n  \
                 flowop read name=r,filename=data,iosize=8k,random\n  \
                 flowop write name=s,filename=data,iosize=2k\n  \
                 flowop finishoncount name=fin,target=w,value=400\n }}\n}}\nrun 60\n",
                dir.s()
            ),
        );
        let mut c = bin();
        c.args(["run", &wl, "--seed", seed, "--keep", "-q", "--json", "-"]);
        if !short {
            c.env("FSBENCH_SHORT_PATH", "0");
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let ops = |n: &str| flowop(&v, n)["ops"].as_u64().unwrap();
        // The file lies in the run directory, below the file's own directory `data`.
        let mut found = Vec::new();
        files_below(dir.path(), &mut found);
        found.retain(|p| p.components().any(|c| c.as_os_str() == "data"));
        assert_eq!(found.len(), 1, "{found:?}");
        (std::fs::read(&found[0]).unwrap(), ops("w"), ops("r"))
    };
    let general = run_once("5", false);
    let short = run_once("5", true);
    assert_eq!(general.1, 400);
    assert_eq!((short.1, short.2), (general.1, general.2));
    assert!(general.0 == short.0, "the two paths left different files");
    let other = run_once("6", true);
    assert!(other.0 != short.0, "another seed left the same file");
}

/// Writers split the preallocated files between them; the files, their sizes and their
/// content are those one writer makes.
#[test]
fn layout_with_several_writers_makes_the_same_files() {
    let dir = Scratch::new("layout-threads");
    let wl = dir.path().join("lay.f");
    std::fs::write(
        &wl,
        "define fileset name=fs,path=/tmp,entries=700,dirwidth=20,size=12k,prealloc=60\n\
         define process name=p { thread name=t { flowop statfile name=s,filesetname=fs } }\n\
         run 1\n",
    )
    .unwrap();
    let (mut trees, mut written) = (Vec::new(), Vec::new());
    for threads in ["1", "3"] {
        let o = run(&[
            "run",
            wl.to_str().unwrap(),
            "--dir",
            dir.s(),
            "--duration",
            "0.2",
            "--keep",
            "--layout-threads",
            threads,
            "--json",
            "-",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        written.push(r["layout"]["files_written"].as_u64().unwrap());
        trees.push(format!("{}/fs", r["run_dir"].as_str().unwrap()));
    }
    // prealloc=60: about 60% of the 700, the same ones for the same seed.
    assert!((380..=460).contains(&written[0]), "{written:?}");
    assert_eq!(written[0], written[1]);
    let o = run(&["diff", &trees[0], &trees[1], "--json", "-"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["identical"]["files"].as_u64(), Some(written[0]), "{v}");
    assert_eq!(v["changed"]["files"].as_u64(), Some(0), "{v}");
    assert_eq!(v["new_files"].as_u64(), Some(written[0]), "{v}");
}
