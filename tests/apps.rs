//! Application benchmarks through the real binary: PostMark's transactions against Debian's
//! `postmark`, the on-disk structure of andrew and build, find's counts, and the scheduler
//! micro-workload personalities.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

fn ok(args: &[&str]) -> String {
    let o = run(args);
    let out = text(&o);
    assert!(o.status.success(), "{args:?} failed:\n{out}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn flowop_ops(v: &Value, name: &str) -> u64 {
    v["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no flowop {name}"))["ops"]
        .as_u64()
        .unwrap()
}

// ---------------------------------------------------------------------------------------
// PostMark

/// PostMark's counters as its verbose report prints them: created, read, appended,
/// deleted, and the read and written amounts as PostMark scales them.
#[derive(Debug, PartialEq)]
struct PmCounts {
    created: u64,
    read: u64,
    appended: u64,
    deleted: u64,
    data_read: String,
    data_written: String,
}

fn count_before(out: &str, word: &str) -> u64 {
    out.lines()
        .find_map(|l| {
            let t = l.trim_start();
            let (n, rest) = t.split_once(' ')?;
            rest.starts_with(&format!("{word} ("))
                .then(|| n.parse().ok())
                .flatten()
        })
        .unwrap_or_else(|| panic!("no `N {word}` line in:\n{out}"))
}

fn debian_counts(out: &str) -> PmCounts {
    let data = |word: &str| {
        out.lines()
            .map(str::trim)
            .find(|l| l.contains(&format!(" {word} (")) && l.contains("bytes"))
            .map(|l| l.split(&format!(" {word} (")).next().unwrap().to_string())
            .unwrap_or_else(|| panic!("no data {word} line in:\n{out}"))
    };
    PmCounts {
        created: count_before(out, "created"),
        read: count_before(out, "read"),
        appended: count_before(out, "appended"),
        deleted: count_before(out, "deleted"),
        data_read: data("read"),
        data_written: data("written"),
    }
}

/// PostMark's `scalef`: a C float, MB = 1024 KB.
fn scalef(b: u64) -> String {
    let f = b as f32;
    if f / 1048576.0f32 > 1.0 {
        format!("{:.2} megabytes", (f / 1048576.0f32) as f64)
    } else if f / 1024.0f32 != 0.0 {
        format!("{:.2} kilobytes", (f / 1024.0f32) as f64)
    } else {
        format!("{:.6} bytes", f as f64)
    }
}

fn fsbench_counts(out: &str) -> PmCounts {
    let exact = |word: &str| -> u64 {
        out.lines()
            .find(|l| {
                l.ends_with(&format!(" bytes) {word} ({}", ""))
                    || l.contains(&format!(" bytes) {word} ("))
            })
            .and_then(|l| l.split(" (").nth(1))
            .and_then(|s| s.split(' ').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no exact {word} bytes in:\n{out}"))
    };
    PmCounts {
        created: count_before(out, "created"),
        read: count_before(out, "read"),
        appended: count_before(out, "appended"),
        deleted: count_before(out, "deleted"),
        data_read: scalef(exact("read")),
        data_written: scalef(exact("written")),
    }
}

fn have(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

#[test]
fn postmark_performs_debians_transactions() {
    if !have("postmark") {
        eprintln!("skipped: Debian's `postmark` is not installed (apt-get install postmark)");
        return;
    }
    let s = Scratch::new("postmark");
    let a = s.path().join("a");
    let b = s.path().join("b");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let configs = [
        // Subdirectories, unbuffered, odd block sizes.
        format!(
            "set location {}\nset number 200\nset transactions 1500\nset subdirectories 4\n\
             set size 500 20000\nset buffering false\nset read 1000\nset write 3000\nset seed 7\nrun\nquit\n",
            a.display()
        ),
        // Two weighted locations, biases, a fixed size, buffered.
        format!(
            "set location {} 2\nset location +{} 1\nset number 150\nset transactions 1000\n\
             set bias read 3\nset bias create 7\nset size 4096\nset seed 12345\nrun\nquit\n",
            a.display(),
            b.display()
        ),
        // PostMark's defaults, transactions only of reads and appends.
        format!("set location {}\nset bias create -1\nrun\nquit\n", a.display()),
    ];
    for (i, cfg) in configs.iter().enumerate() {
        let path = s.path().join(format!("pm{i}.cfg"));
        std::fs::write(&path, cfg).unwrap();
        let o = std::process::Command::new("postmark")
            .arg(&path)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let deb = String::from_utf8_lossy(&o.stdout).into_owned();
        let ours = ok(&["postmark", path.to_str().unwrap()]);
        assert_eq!(
            fsbench_counts(&ours),
            debian_counts(&deb),
            "config {i}:\n{cfg}\n--- postmark\n{deb}\n--- fsbench\n{ours}"
        );
        // Nothing left behind in the locations.
        for d in [&a, &b] {
            let left: Vec<_> = std::fs::read_dir(d).unwrap().collect();
            assert!(
                left.is_empty(),
                "config {i} left {left:?} in {}",
                d.display()
            );
        }
    }
}

#[test]
fn postmark_instances_and_results() {
    let s = Scratch::new("pm-inst");
    let j = s.path().join("r.json");
    let one = ok(&[
        "postmark",
        "--number",
        "100",
        "--transactions",
        "400",
        "--subdirectories",
        "3",
        "--dir",
        s.s(),
    ]);
    let three = ok(&[
        "postmark",
        "--number",
        "100",
        "--transactions",
        "400",
        "--subdirectories",
        "3",
        "--instances",
        "3",
        "--same-seed",
        "--dir",
        s.s(),
        "--json",
        j.to_str().unwrap(),
    ]);
    let c1 = fsbench_counts(&one);
    assert_eq!(count_before(&three, "created"), 3 * c1.created);
    assert_eq!(count_before(&three, "deleted"), 3 * c1.deleted);
    assert!(three.contains("Per instance:"), "{three}");
    let v = json(&j);
    assert_eq!(v["threads"], 3);
    assert_eq!(
        flowop_ops(&v, "create-pool") + flowop_ops(&v, "create"),
        3 * c1.created
    );
    assert_eq!(flowop_ops(&v, "read"), 3 * c1.read);
    assert!(v["flowops"][1]["latency_us"]["p99"].as_f64().unwrap() > 0.0);
    for i in 0..3 {
        assert_eq!(v["figures"][format!("instance.{i}.seed")], 42.0);
        assert_eq!(
            v["figures"][format!("instance.{i}.created")],
            c1.created as f64
        );
    }

    // Without --same-seed, instance i uses seed + i: instance 0 repeats the single run,
    // the others do other transactions, and each instance's figures are in the JSON.
    let j2 = s.path().join("r2.json");
    ok(&[
        "postmark",
        "--number",
        "100",
        "--transactions",
        "400",
        "--subdirectories",
        "3",
        "--instances",
        "3",
        "--dir",
        s.s(),
        "--json",
        j2.to_str().unwrap(),
    ]);
    let v = json(&j2);
    let f = &v["figures"];
    let fig = |k: String| f[&k].as_f64().unwrap_or_else(|| panic!("no figure {k}"));
    assert_eq!(fig("instance.0.created".into()), c1.created as f64);
    assert_eq!(fig("instance.0.read".into()), c1.read as f64);
    let seeds: Vec<f64> = (0..3).map(|i| fig(format!("instance.{i}.seed"))).collect();
    assert_eq!(seeds, [42.0, 43.0, 44.0]);
    let created: Vec<f64> = (0..3)
        .map(|i| fig(format!("instance.{i}.created")))
        .collect();
    let reads: Vec<f64> = (0..3).map(|i| fig(format!("instance.{i}.read"))).collect();
    let same = |x: &[f64]| x.iter().all(|v| *v == x[0]);
    assert!(
        !(same(&created) && same(&reads)),
        "instances with different seeds performed the same transactions: {created:?} {reads:?}"
    );
    assert_eq!(
        fig("created".into()),
        created.iter().sum::<f64>(),
        "totals are the sum over instances"
    );
    for k in [
        "transactions_per_s",
        "transactions_s",
        "created_alone_per_s",
        "created_mixed_per_s",
        "read_mb_per_s",
        "written_mb_per_s",
        "total_s",
    ] {
        assert!(fig(k.into()) > 0.0, "{k}: {f}");
    }

    // Only the JSON files are left.
    let left: Vec<_> = std::fs::read_dir(s.path()).unwrap().collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

// ---------------------------------------------------------------------------------------
// andrew, build, find

#[test]
fn andrew_phases_on_disk() {
    let s = Scratch::new("andrew");
    let j = s.path().join("r.json");
    let out = ok(&[
        "andrew",
        "--copies",
        "2",
        "--clients",
        "2",
        "--no-compile",
        "--keep",
        "--dir",
        s.s(),
        "--json",
        j.to_str().unwrap(),
    ]);
    for p in ["mkdir", "copy", "stat", "scan", "compile"] {
        assert!(out.contains(p), "{out}");
    }
    let v = json(&j);
    let rd = Path::new(v["run_dir"].as_str().unwrap());
    let (master_files, master_dirs) = count_entries(&rd.join("master"));
    assert_eq!((master_files, master_dirs), (70, 4));
    for c in 0..2 {
        for k in 0..2 {
            let copy = rd.join(format!("client{c}/copy{k}"));
            assert_eq!(count_entries(&copy), (70, 4), "{}", copy.display());
        }
    }
    assert_eq!(flowop_ops(&v, "mkdir"), 2 * 2 * 5);
    assert_eq!(flowop_ops(&v, "copy"), 2 * 2 * 70);
    assert_eq!(flowop_ops(&v, "stat"), 2 * 2 * 70);
    assert_eq!(flowop_ops(&v, "scan"), 2 * 2 * 70);
    assert_eq!(flowop_ops(&v, "compile"), 0);
    assert!(out.contains("compile phase skipped"), "{out}");

    // With a compiler, one copy compiles to one object per C file.
    let j2 = s.path().join("r2.json");
    let out = ok(&[
        "andrew",
        "--keep",
        "--dir",
        s.s(),
        "--json",
        j2.to_str().unwrap(),
    ]);
    let v = json(&j2);
    let rd = Path::new(v["run_dir"].as_str().unwrap());
    if have("cc") || have("gcc") || have("clang") {
        let objs = ["lib", "src", "util"]
            .iter()
            .flat_map(|d| std::fs::read_dir(rd.join("client0/copy0").join(d)).unwrap())
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "o")
            })
            .count();
        assert_eq!(objs, 60, "{out}");
        assert_eq!(flowop_ops(&v, "compile"), 3);
        assert_eq!(v["flowops"][5]["errors"], 0, "{out}");
    } else {
        assert!(
            out.contains("compile phase skipped: no C compiler"),
            "{out}"
        );
    }
}

#[test]
fn build_structure_on_disk() {
    let s = Scratch::new("build");
    let j = s.path().join("r.json");
    ok(&[
        "build",
        "--files",
        "40",
        "--dirs",
        "4",
        "-j",
        "2",
        "--cpu-ms",
        "1",
        "--keep",
        "--dir",
        s.s(),
        "--json",
        j.to_str().unwrap(),
    ]);
    let v = json(&j);
    let rd = Path::new(v["run_dir"].as_str().unwrap());
    assert_eq!(count_entries(&rd.join("src")), (40, 4));
    assert_eq!(count_entries(&rd.join("obj")), (40, 4));
    assert_eq!(
        count_entries(&rd.join("tmp")),
        (0, 0),
        "temporaries deleted"
    );
    let mut obj_bytes = 0;
    for d in 0..4 {
        for e in std::fs::read_dir(rd.join(format!("obj/d{d}"))).unwrap() {
            obj_bytes += e.unwrap().metadata().unwrap().len();
        }
    }
    assert_eq!(
        std::fs::metadata(rd.join("out/program")).unwrap().len(),
        obj_bytes
    );
    assert_eq!(flowop_ops(&v, "read-source"), 40);
    assert_eq!(flowop_ops(&v, "read-header"), 40 * 5);
    assert_eq!(flowop_ops(&v, "write-temp"), 80);
    assert_eq!(flowop_ops(&v, "delete-temp"), 80);
    assert_eq!(flowop_ops(&v, "write-object"), 40);
    assert_eq!(flowop_ops(&v, "link-read"), 40);
    assert_eq!(flowop_ops(&v, "link-write"), 1);
    assert_eq!(v["summary"]["errors"], 0);
    assert!(v["summary"]["cpu_user_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn find_counts_every_entry() {
    let s = Scratch::new("find");
    let tree = s.path().join("tree");
    for d in 0..5 {
        let dir = tree.join(format!("d{d}/sub"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..7 {
            std::fs::write(dir.join(format!("f{f}")), b"x").unwrap();
        }
        std::os::unix::fs::symlink("sub", tree.join(format!("d{d}/link"))).unwrap();
    }
    let (files, dirs) = count_entries(&tree);
    let j = s.path().join("r.json");
    let out = ok(&[
        "find",
        tree.to_str().unwrap(),
        "--json",
        j.to_str().unwrap(),
    ]);
    let v = json(&j);
    assert_eq!(flowop_ops(&v, "entry"), (files + dirs) as u64);
    assert!(
        out.contains(&format!(
            "{} entries ({dirs} directories, 35 files, 5 other)",
            files + dirs
        )),
        "{out}"
    );
    let o = run(&["find", tree.to_str().unwrap(), "--cold"]);
    if is_root() {
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("cold cache"));
    } else {
        assert!(!o.status.success());
        assert!(text(&o).contains("needs root"), "{}", text(&o));
    }
}

// ---------------------------------------------------------------------------------------
// Scheduler micro-workloads

#[test]
fn micro_personalities_run() {
    let list = ok(&["list"]);
    for name in [
        "schedseq",
        "schedalt",
        "schedrand",
        "linker",
        "tpcb",
        "tpcbselect",
    ] {
        assert!(list.contains(&format!("  {name} ")), "{name} not listed");
        let s = Scratch::new("micro");
        let j = s.path().join("r.json");
        let mut args = vec![
            "run",
            name,
            "--duration",
            "2",
            "-s",
            "filesize=64k",
            "-s",
            "iosize=8k",
            "--dir",
            s.s(),
            "--json",
            j.to_str().unwrap(),
            "-q",
        ];
        if name == "linker" {
            args.extend(["-s", "nfiles=60", "-s", "hogiters=1000"]);
        }
        ok(&args);
        let v = json(&j);
        for f in v["flowops"].as_array().unwrap() {
            assert!(f["ops"].as_u64().unwrap() > 0, "{name}: {f}");
            assert_eq!(f["errors"], 0, "{name}: {f}");
        }
    }
}
