//! Application benchmarks through the real binary: PostMark's transactions against Debian's
//! `postmark`, the on-disk structure of andrew and build, find's counts, and the scheduler
//! micro-workload personalities.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn flowop_ops(v: &Value, name: &str) -> u64 {
    flowop(v, name)["ops"].as_u64().unwrap()
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

#[test]
fn postmark_performs_debians_transactions() {
    if !have("postmark") {
        skip("Debian's `postmark` is not installed (apt-get install postmark)");
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
        let ours = stdout_ok(&["postmark", path.to_str().unwrap()]);
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
    let one = stdout_ok(&[
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
    let three = stdout_ok(&[
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
    stdout_ok(&[
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
    let out = stdout_ok(&[
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
    let out = stdout_ok(&[
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
    stdout_ok(&[
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
    let out = stdout_ok(&[
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
fn scheduler_readers_think_apart() {
    for name in ["schedseq", "schedalt", "schedrand"] {
        // By default reader 2 thinks as reader 1 does ...
        let out = stdout_ok(&["check", name, "-s", "thinkmin=7000", "-s", "thinkmean=7000"]);
        assert_eq!(
            out.matches("uniform(min=7000, mean=7000)").count(),
            2,
            "{name}:\n{out}"
        );
        // `thinktime` fixes both readers' think time in one variable.
        let out = stdout_ok(&["check", name, "-s", "thinktime=5000"]);
        assert_eq!(
            out.matches("uniform(min=5000, mean=5000)").count(),
            2,
            "{name}:\n{out}"
        );
        // ... and the asymmetric case sets it apart.
        let out = stdout_ok(&[
            "check",
            name,
            "-s",
            "thinkmin=7000",
            "-s",
            "thinkmean=7000",
            "-s",
            "think2min=0",
            "-s",
            "think2mean=0",
        ]);
        let think = |n: &str| {
            out.lines()
                .find(|l| l.trim_start().starts_with(n))
                .unwrap_or_else(|| panic!("{name}: no {n}:\n{out}"))
                .to_string()
        };
        assert!(
            think("think1").contains("uniform(min=7000, mean=7000)"),
            "{out}"
        );
        assert!(think("think2").contains("uniform(min=0, mean=0)"), "{out}");
    }
}

#[test]
fn micro_personalities_run() {
    let list = stdout_ok(&["list"]);
    for name in [
        "schedseq",
        "schedalt",
        "schedrand",
        "linker",
        "linker2",
        "tpcb",
        "tpcb2",
        "tpcbselect",
        "tpcbselect2",
        "webserver-di",
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
        if name.starts_with("linker") {
            args.extend(["-s", "nfiles=60", "-s", "hogiters=1000"]);
        }
        if name == "webserver-di" {
            args.extend(["-s", "nfiles=60", "-s", "nthreads=4", "-s", "usemmap=true"]);
        }
        stdout_ok(&args);
        let v = json(&j);
        for f in v["flowops"].as_array().unwrap() {
            assert!(f["ops"].as_u64().unwrap() > 0, "{name}: {f}");
            assert_eq!(f["errors"], 0, "{name}: {f}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// The measurement contract: repetitions, host facts, calibration, cold cache

/// Checks every application benchmark's JSON shares with `run`'s: three repetitions with
/// the run's shape, confidence fields in the text, host facts and calibration filled, and
/// the named figures given in every repetition.
fn check_contract(out: &str, v: &Value, name: &str, figures: &[&str]) {
    assert_eq!(v["workload"], name);
    assert_eq!(v["schema_version"], 1);
    let reps = v["repetitions"].as_array().expect("repetitions");
    assert_eq!(reps.len(), 3, "{name}");
    for r in reps {
        assert!(r["duration_s"].as_f64().unwrap() > 0.0, "{name}: {r}");
        assert!(r["summary"]["ops"].is_u64(), "{name}: {r}");
        assert_eq!(
            r["flowops"].as_array().unwrap().len(),
            v["flowops"].as_array().unwrap().len(),
            "{name}"
        );
        for f in figures {
            assert!(r["figures"][f].is_number(), "{name}: no figure {f} in {r}");
        }
    }
    for f in figures {
        // The top level holds the mean of the repetitions' figures.
        let mean = reps
            .iter()
            .map(|r| r["figures"][f].as_f64().unwrap())
            .sum::<f64>()
            / 3.0;
        let top = v["figures"][f].as_f64().unwrap();
        assert!(
            (top - mean).abs() <= 1e-9 * mean.abs().max(1.0),
            "{name} {f}"
        );
    }
    let host = &v["host"];
    for k in ["kernel", "fs_type", "mount_point", "hostname"] {
        assert!(
            !host[k].as_str().unwrap().is_empty(),
            "{name}: host.{k} empty: {host}"
        );
    }
    assert!(host["cpus"].as_u64().unwrap() >= 1);
    assert!(!v["calibration"]["clock"].as_str().unwrap().is_empty());
    assert!(v["calibration"]["overhead_ns_per_op"].as_f64().unwrap() > 0.0);
    assert!(out.contains("in 3 repetitions"), "{out}");
    assert!(out.contains("Repetitions: "), "{out}");
    assert!(out.contains("(mean ± 95% confidence, CV)"), "{out}");
    assert!(!out.contains(" ? on ?"), "{out}");
    assert!(out.contains("(warm cache)"), "{out}");
}

fn contract(args: &[&str], name: &str, figures: &[&str]) -> Value {
    let s = Scratch::new("contract");
    let j = s.path().join("r.json");
    let mut a: Vec<&str> = args.to_vec();
    a.extend(["--repeat", "3", "--json", j.to_str().unwrap()]);
    let out = stdout_ok(&a);
    let v = json(&j);
    check_contract(&out, &v, name, figures);
    v
}

#[test]
fn every_app_benchmark_repeats_with_host_facts() {
    let s = Scratch::new("apps-repeat");
    let d = s.s();
    let pm = contract(
        &[
            "postmark",
            "--number",
            "50",
            "--transactions",
            "200",
            "--instances",
            "2",
            "--dir",
            d,
        ],
        "postmark",
        &[
            "transactions_per_s",
            "transactions_s",
            "created_alone_per_s",
            "created_mixed_per_s",
            "read_mb_per_s",
            "written_mb_per_s",
            "instance.1.transactions_per_s",
        ],
    );
    assert_eq!(pm["variables"]["same_seed"], "false");
    let an = contract(
        &["andrew", "--no-compile", "--clients", "2", "--dir", d],
        "andrew",
        &[
            "mkdir_s",
            "copy_s",
            "stat_s",
            "scan_s",
            "compile_s",
            "total_s",
            "client.0.scan_s",
            "client.1.copy_s",
        ],
    );
    assert_eq!(
        an["flowops"][1]["ops"],
        3 * 2 * 70,
        "copies of 3 repetitions"
    );
    contract(
        &[
            "build", "--files", "12", "--dirs", "2", "--cpu-ms", "1", "--dir", d,
        ],
        "build",
        &["elapsed_s", "user_s", "system_s", "compile_s", "link_s"],
    );
    let tree = s.path().join("tree");
    for k in 0..4 {
        std::fs::create_dir_all(tree.join(format!("d{k}"))).unwrap();
        std::fs::write(tree.join(format!("d{k}/f")), vec![7u8; 5000 * (k + 1)]).unwrap();
    }
    let f = contract(
        &["find", tree.to_str().unwrap()],
        "find",
        &["entries", "entries_per_s", "elapsed_s"],
    );
    assert_eq!(f["figures"]["entries"], 8.0);
    let r = contract(
        &["read", tree.to_str().unwrap(), "-j", "2"],
        "read",
        &["files", "files_per_s", "mb_per_s"],
    );
    assert_eq!(r["figures"]["files"], 4.0);
    assert_eq!(r["figures"]["bytes"], 50000.0);
    assert_eq!(r["flowops"][0]["ops"], 12);
    // Nothing but the tree is left in the target directory.
    let left: Vec<_> = std::fs::read_dir(s.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["tree"], "{left:?}");
}

#[test]
fn compare_works_on_app_results() {
    let s = Scratch::new("apps-compare");
    let (a, b) = (s.path().join("a.json"), s.path().join("b.json"));
    for (j, n) in [(&a, "40"), (&b, "80")] {
        stdout_ok(&[
            "postmark",
            "--number",
            n,
            "--transactions",
            "100",
            "--repeat",
            "3",
            "--dir",
            s.s(),
            "--json",
            j.to_str().unwrap(),
        ]);
    }
    let out = stdout_ok(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(out.contains("\nfigures\n"), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("created_alone "))
        .unwrap_or_else(|| panic!("{out}"));
    // 40 against 80 files created alone, identical in every repetition: +100%, significant.
    assert!(line.contains("+100.0%*"), "{line}");
    assert!(out.contains("significant at 95%"), "{out}");
    assert!(
        out.contains("note: [B] differs from [A] in number=80"),
        "{out}"
    );
    // Different benchmarks: compared, with a warning first.
    let f = s.path().join("f.json");
    stdout_ok(&["find", s.s(), "--json", f.to_str().unwrap()]);
    let out = stdout_ok(&["compare", a.to_str().unwrap(), f.to_str().unwrap()]);
    assert!(
        out.contains("warning: [B] ran find and [A] ran postmark"),
        "{out}"
    );
}

#[test]
fn cold_cache_everywhere_or_a_clear_refusal() {
    let s = Scratch::new("apps-cold");
    let tree = s.path().join("tree");
    std::fs::create_dir_all(tree.join("d")).unwrap();
    std::fs::write(tree.join("d/f"), b"hello").unwrap();
    let t = tree.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "postmark",
            "--number",
            "20",
            "--transactions",
            "50",
            "--dir",
            s.s(),
        ],
        vec!["andrew", "--no-compile", "--dir", s.s()],
        vec!["build", "--files", "4", "--cpu-ms", "1", "--dir", s.s()],
        vec!["find", t],
        vec!["read", t],
    ];
    if !is_root() {
        eprintln!("cold-cache runs skipped: not root (checking the refusal only)");
    }
    for mut c in cases {
        let j = s.path().join("c.json");
        c.extend(["--cold", "--repeat", "2", "--json", j.to_str().unwrap()]);
        let o = run(&c);
        if is_root() {
            assert!(o.status.success(), "{c:?}: {}", text(&o));
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(out.contains("(cold cache)"), "{c:?}: {out}");
            assert!(!out.contains("(warm cache)"), "{c:?}: {out}");
            assert_eq!(json(&j)["cold"], true, "{c:?}");
        } else {
            assert!(!o.status.success(), "{c:?}");
            assert!(text(&o).contains("needs root"), "{c:?}: {}", text(&o));
        }
    }
    let o = run(&[
        "andrew",
        "--no-compile",
        "--drop-caches-between-phases",
        "--dir",
        s.s(),
    ]);
    if is_root() {
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("caches dropped before each phase"));
    } else {
        assert!(text(&o).contains("needs root"), "{}", text(&o));
    }
}

#[test]
fn build_over_an_existing_tree_only_reads_it() {
    let s = Scratch::new("build-src");
    let src = s.path().join("src");
    std::fs::create_dir_all(src.join("lib/include")).unwrap();
    // One source larger than the 64 KiB read requests.
    let size = |i: u64| if i == 5 { 200_000 } else { 1000 + i };
    for i in 0..6 {
        std::fs::write(
            src.join(format!("lib/m{i}.c")),
            vec![b'x'; size(i) as usize],
        )
        .unwrap();
    }
    std::fs::write(src.join("main.rs"), b"fn main() {}").unwrap();
    std::fs::write(src.join("README"), b"not a source").unwrap();
    for h in 0..3 {
        std::fs::write(src.join(format!("lib/include/h{h}.h")), b"int h;").unwrap();
    }
    let before = snapshot(&src);
    let out_dir = s.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let j = s.path().join("r.json");
    stdout_ok(&[
        "build",
        "--src",
        src.to_str().unwrap(),
        "--cpu-ms",
        "1",
        "--headers-per-job",
        "2",
        "--keep",
        "--dir",
        out_dir.to_str().unwrap(),
        "--json",
        j.to_str().unwrap(),
    ]);
    assert_eq!(snapshot(&src), before, "the source tree was changed");
    let v = json(&j);
    assert_eq!(v["variables"]["src"], src.to_str().unwrap());
    assert_eq!(flowop_ops(&v, "read-source"), 7);
    assert_eq!(flowop_ops(&v, "read-header"), 14);
    assert_eq!(flowop_ops(&v, "write-object"), 7);
    assert_eq!(v["figures"]["sources"], 7.0);
    let rd = Path::new(v["run_dir"].as_str().unwrap());
    assert!(rd.starts_with(&out_dir));
    assert_eq!(count_entries(&rd.join("obj")).0, 7);
    let sum: u64 = (0..6).map(size).sum::<u64>() + 12;
    assert_eq!(
        std::fs::metadata(rd.join("out/program")).unwrap().len(),
        sum
    );

    let empty = s.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = run(&["build", "--src", empty.to_str().unwrap(), "--dir", s.s()]);
    assert!(!o.status.success());
    assert!(text(&o).contains("holds no source files"), "{}", text(&o));
}

/// Every file under `dir` with its size and contents.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut v = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            let data = if p.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            v.push((p, data));
        }
    }
    v.sort();
    v
}

#[test]
fn read_reads_every_file_in_each_order() {
    let s = Scratch::new("read");
    let tree = s.path().join("t");
    let mut total = 0;
    for d in 0..3 {
        std::fs::create_dir_all(tree.join(format!("d{d}"))).unwrap();
        for f in 0..5 {
            let n = 100 * (d * 5 + f + 1);
            total += n;
            std::fs::write(tree.join(format!("d{d}/f{f}")), vec![1u8; n]).unwrap();
        }
    }
    std::os::unix::fs::symlink("d0/f0", tree.join("link")).unwrap();
    for order in ["name", "inode", "random"] {
        let j = s.path().join(format!("{order}.json"));
        let out = stdout_ok(&[
            "read",
            tree.to_str().unwrap(),
            "--order",
            order,
            "-j",
            "3",
            "--block",
            "256",
            "--json",
            j.to_str().unwrap(),
        ]);
        let v = json(&j);
        assert_eq!(v["figures"]["files"], 15.0, "{order}");
        assert_eq!(v["figures"]["bytes"], total as f64, "{order}");
        assert_eq!(v["flowops"][0]["bytes"], total as u64, "{order}");
        assert_eq!(v["variables"]["order"], order);
        assert!(!v["flowops"][0]["histogram_ns"]
            .as_array()
            .unwrap()
            .is_empty());
        assert!(out.contains(&format!("{order} order, -j 3")), "{out}");
    }
    let o = run(&["read", "/nonexistent-fsbench-dir"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("not a directory"), "{}", text(&o));
}

#[test]
fn andrew_scale_grows_the_tree() {
    let s = Scratch::new("andrew-scale");
    let j1 = s.path().join("1.json");
    let j4 = s.path().join("40.json");
    // At 40 the C files are 60 to 170 KB: copies larger than one read request.
    for (j, k) in [(&j1, "1"), (&j4, "40")] {
        stdout_ok(&[
            "andrew",
            "--no-compile",
            "--scale",
            k,
            "--dir",
            s.s(),
            "--json",
            j.to_str().unwrap(),
        ]);
    }
    let bytes = |p: &Path| -> f64 {
        json(p)["variables"]["tree_bytes"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (b1, b4) = (bytes(&j1), bytes(&j4));
    assert!(b4 > 30.0 * b1, "{b1} -> {b4}");
    assert_eq!(json(&j4)["flowops"][4]["bytes"].as_f64().unwrap(), b4);
}
