//! `fsbench age` on real file systems: loop-mounted ext4 images (root only;
//! skipped with the reason elsewhere), a small tmpfs, and snapshot replay in
//! a scratch directory.

use crate::common::{
    assert_schema, run, run_ok, skip, stdout_ok, text, tree_listing, LoopExt4, Mount, Scratch,
};
use serde_json::Value;
use std::io::Write;
use std::path::Path;

fn json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn image(tag: &str, mib: u64) -> Option<LoopExt4> {
    match LoopExt4::new(tag, mib) {
        Ok(i) => Some(i),
        Err(e) => {
            skip(&e);
            None
        }
    }
}

#[test]
fn an_ext4_committing_on_its_timer_gets_a_note_and_one_that_does_not_none() {
    let Some(img) = image("age-commit-note", 64) else {
        return;
    };
    let age = |tag: &str| {
        run(&[
            "age",
            img.s(),
            "--fill",
            "0.3",
            "--ops",
            "50",
            "-q",
            "--seed",
            tag,
        ])
    };
    let o = age("1");
    assert!(o.status.success(), "{}", text(&o));
    let note = format!("ext4 at {} commits its journal every 5 s", img.s());
    assert!(text(&o).contains(&note), "{}", text(&o));
    run_ok("mount", &["-o", "remount,commit=86400", img.s()]).unwrap();
    let o = age("2");
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("commits its journal"), "{}", text(&o));
}

#[test]
fn aging_ext4_lowers_the_layout_score() {
    let Some(img) = image("age-score", 128) else {
        return;
    };
    // A large file written sequentially on the fresh file system is contiguous.
    let big = img.path().join("big");
    {
        let mut f = std::fs::File::create(&big).unwrap();
        let chunk: Vec<u8> = (0..1 << 20).map(|i| (i * 7 + 1) as u8).collect();
        for _ in 0..16 {
            f.write_all(&chunk).unwrap();
        }
        f.sync_all().unwrap();
    }
    let js = img.scratch.path().join("fresh.json");
    stdout_ok(&[
        "layout",
        big.to_str().unwrap(),
        "--json",
        js.to_str().unwrap(),
    ]);
    let fresh = json(&js)["score"].as_f64().unwrap();
    assert!(fresh > 0.99, "fresh file scored {fresh}");
    std::fs::remove_file(&big).unwrap();

    // Age to 85% with small churn.
    let js = img.scratch.path().join("age.json");
    let out = stdout_ok(&[
        "age",
        img.s(),
        "--fill",
        "0.85",
        "--seed",
        "5",
        "--ops",
        "20000",
        "-q",
        "--json",
        js.to_str().unwrap(),
    ]);
    assert!(out.contains("layout score"), "{out}");
    assert_schema("age.schema.json", &std::fs::read_to_string(&js).unwrap());
    let r = json(&js);
    let full = r["fullness_end"].as_f64().unwrap();
    assert!((0.78..=0.92).contains(&full), "fullness {full}\n{out}");
    assert_eq!(r["churn_ops"], 20000);
    assert!(r["counts"]["deletes"].as_u64().unwrap() > 1000, "{out}");
    assert_eq!(r["counts"]["enospc"], 0, "{out}");
    let after = r["layout_after"]["score"].as_f64().unwrap();
    assert!(
        fresh - after >= 0.03,
        "aged score {after} is not 0.03 below the fresh file's {fresh}\n{out}"
    );
    // The report states the policy, and the layout facts the new metrics.
    assert_eq!(r["writeback"]["policy"], "range", "{out}");
    assert!(out.contains("writeback          range"), "{out}");
    assert!(r["layout_after"]["locality"].as_f64().is_some(), "{out}");
    assert!(r["layout_after"]["split_files"].as_u64().is_some(), "{out}");
    // Sizes and depths follow the profile closely.
    let d = &r["distances"];
    assert!(d["size"]["tv"].as_f64().unwrap() < 0.05, "{d}");
    assert!(d["depth"]["tv"].as_f64().unwrap() < 0.05, "{d}");
    assert!(img.path().join("fsbench-aged/.fsbench-run").exists());
}

#[test]
fn same_seed_same_aging() {
    let (Some(a), Some(b)) = (image("age-det-a", 64), image("age-det-b", 64)) else {
        return;
    };
    let mut listings = Vec::new();
    let mut logs = Vec::new();
    for img in [&a, &b] {
        let log = img.scratch.path().join("ops.log");
        stdout_ok(&[
            "age",
            img.s(),
            "--fill",
            "0.8",
            "--seed",
            "11",
            "--ops",
            "3000",
            "--fsync",
            "batch",
            "-q",
            "--log",
            log.to_str().unwrap(),
        ]);
        listings.push(tree_listing(&img.path().join("fsbench-aged")));
        logs.push(std::fs::read_to_string(&log).unwrap());
    }
    assert!(listings[0].len() > 100, "{} entries", listings[0].len());
    assert_eq!(listings[0], listings[1], "same seed, different trees");
    assert_eq!(logs[0], logs[1], "same seed, different operation logs");
    assert!(logs[0].contains(" delete ") && logs[0].contains(" append "));

    // Aging continues in the marked directory; a different seed diverges.
    let js = a.scratch.path().join("again.json");
    stdout_ok(&[
        "age",
        a.s(),
        "--seed",
        "12",
        "--ops",
        "500",
        "-q",
        "--json",
        js.to_str().unwrap(),
    ]);
    assert_schema("age.schema.json", &std::fs::read_to_string(&js).unwrap());
    let r = json(&js);
    assert_eq!(r["continued"], true);
    assert_eq!(r["churn_ops"], 500);
    assert_ne!(tree_listing(&a.path().join("fsbench-aged")), listings[1]);

    // A foreign directory of that name is refused, not used.
    let c = image("age-foreign", 32).unwrap();
    std::fs::create_dir(c.path().join("fsbench-aged")).unwrap();
    let o = run(&["age", c.s(), "--ops", "10"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("not created by fsbench"), "{}", text(&o));
}

#[test]
fn aging_tmpfs_reports_no_layout_and_continues() {
    if !crate::common::is_root() {
        skip("skipping: needs root to mount a small tmpfs");
        return;
    }
    let t = Scratch::new("age-tmpfs");
    let m = t.path().join("mnt");
    std::fs::create_dir_all(&m).unwrap();
    if let Err(e) = run_ok(
        "mount",
        &["-t", "tmpfs", "-o", "size=16m", "none", m.to_str().unwrap()],
    ) {
        skip(&e);
        return;
    }
    let _mount = Mount(m.clone());
    let out = stdout_ok(&[
        "age",
        m.to_str().unwrap(),
        "--fill",
        "0.5",
        "--ops",
        "300",
        "-q",
    ]);
    assert!(out.contains("FIEMAP is not supported on tmpfs"), "{out}");
    assert!(out.contains("operations"), "{out}");
}

/// A tmpfs larger than the machine's memory (its size is only a limit) cannot be filled to
/// 0.8 without taking the machine down: refused before anything is made.
#[test]
fn aging_a_tmpfs_beyond_the_machines_memory_is_refused() {
    if !crate::common::is_root() {
        skip("skipping: needs root to mount a tmpfs");
        return;
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let total_kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    let t = Scratch::new("age-tmpfs-big");
    let m = t.path().join("mnt");
    std::fs::create_dir_all(&m).unwrap();
    let size = format!("size={}k", total_kib * 2);
    if let Err(e) = run_ok(
        "mount",
        &["-t", "tmpfs", "-o", &size, "none", m.to_str().unwrap()],
    ) {
        skip(&e);
        return;
    }
    let _mount = Mount(m.clone());
    let out = run(&["age", m.to_str().unwrap(), "--ops", "10"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("held in memory") && err.contains("--fill"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&m).unwrap().count(), 0, "nothing made");
}

#[test]
fn replay_recreates_the_last_snapshot() {
    let t = Scratch::new("age-replay");
    let src = t.path().join("src");
    let w = |rel: &str, n: usize| {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, vec![b'x'; n]).unwrap();
    };
    w("a/one", 5000);
    w("a/two", 100);
    w("b/c/three", 70000);
    let s1 = t.path().join("s1.snap");
    stdout_ok(&["scan", src.to_str().unwrap(), "-o", s1.to_str().unwrap()]);
    std::fs::remove_file(src.join("a/two")).unwrap();
    std::fs::remove_dir_all(src.join("b")).unwrap();
    w("a/one", 9000);
    w("d/four", 12345);
    let s2 = t.path().join("s2.snap");
    stdout_ok(&["scan", src.to_str().unwrap(), "-o", s2.to_str().unwrap()]);

    let target = t.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    let log = t.path().join("replay.log");
    let js = t.path().join("replay.json");
    let out = stdout_ok(&[
        "age",
        target.to_str().unwrap(),
        "--replay-snapshots",
        s1.to_str().unwrap(),
        s2.to_str().unwrap(),
        "--short-lived",
        "4",
        "--seed",
        "3",
        "--log",
        log.to_str().unwrap(),
        "--json",
        js.to_str().unwrap(),
    ]);
    assert!(out.contains("(replay)"), "{out}");
    let report = std::fs::read_to_string(&js).unwrap();
    assert_schema("age.schema.json", &report);
    assert_eq!(json(&js)["mode"], "replay", "{report}");
    let aged = target.join("fsbench-aged");
    let mut got = tree_listing(&aged);
    got.retain(|(p, _)| p != ".fsbench-run" && p != ".fsbench-lock");
    assert_eq!(got, tree_listing(&src));
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("append a/one 5000+4000"), "{log}");
    assert!(log.contains("rmdir b/c"), "{log}");
    assert_eq!(log.matches(".fsbench-short-1-").count(), 8, "{log}");

    // Replay needs an empty aged directory.
    let o = run(&[
        "age",
        target.to_str().unwrap(),
        "--replay-snapshots",
        s1.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(text(&o).contains("replay starts from an empty aged directory"));
}

#[test]
fn one_and_two_threads_age_to_the_same_tree() {
    let (Some(a), Some(b)) = (image("age-thr-1", 64), image("age-thr-2", 64)) else {
        return;
    };
    let mut logs = Vec::new();
    for (img, threads) in [(&a, "1"), (&b, "2")] {
        let log = img.scratch.path().join("ops.log");
        let js = img.scratch.path().join("age.json");
        stdout_ok(&[
            "age",
            img.s(),
            "--seed",
            "7",
            "--ops",
            "3000",
            "--threads",
            threads,
            "-q",
            "--log",
            log.to_str().unwrap(),
            "--json",
            js.to_str().unwrap(),
        ]);
        let r = json(&js);
        assert_eq!(r["counts"]["errors"], 0, "{r}");
        assert_eq!(r["counts"]["enospc"], 0, "{r}");
        logs.push(std::fs::read_to_string(&log).unwrap());
    }
    assert_eq!(
        logs[0], logs[1],
        "1 and 2 threads planned different operations"
    );
    let (ta, tb) = (a.path().join("fsbench-aged"), b.path().join("fsbench-aged"));
    // The run marker and lock name the process that made them, so they differ by design.
    let own = [".fsbench-run", ".fsbench-lock"];
    let aged = |d: &Path| {
        let mut l = tree_listing(d);
        l.retain(|(p, _)| !own.contains(&p.as_str()));
        l
    };
    let listing = aged(&ta);
    assert!(listing.len() > 100, "{} entries", listing.len());
    assert_eq!(listing, aged(&tb), "names and sizes differ");
    // Content: every aged file is byte for byte the same in both trees.
    let mut compared = 0;
    for (path, size) in &listing {
        if *size == u64::MAX {
            continue; // a directory
        }
        let (x, y) = (
            std::fs::read(ta.join(path)).unwrap(),
            std::fs::read(tb.join(path)).unwrap(),
        );
        assert!(x == y, "{path}: content differs between 1 and 2 threads");
        compared += 1;
    }
    assert!(compared > 100, "{compared} files compared");
}

#[test]
fn threads_refused_with_replay() {
    let o = run(&[
        "age",
        "/nonexistent",
        "--threads",
        "2",
        "--replay-snapshots",
        "a.snap",
    ]);
    assert!(!o.status.success());
    assert!(text(&o).contains("--threads"), "{}", text(&o));
}

#[test]
fn selftest_age_replays_the_aging_with_a_bare_loop() {
    if !crate::common::is_root() {
        skip("selftest age mounts its own loop images: needs root");
        return;
    }
    let t = Scratch::new("selftest-age");
    let o = run(&[
        "selftest",
        "age",
        "--size",
        "64M",
        "--ops",
        "500",
        "--rounds",
        "1",
        "--threads",
        "2",
        "--dir",
        t.s(),
    ]);
    let out = text(&o);
    if !o.status.success() && out.contains("loop device") {
        skip(&format!("no loop device: {out}"));
        return;
    }
    assert!(o.status.success(), "{out}");
    for line in [
        "fsbench age, 1 thread:",
        "bare loop, same operations:",
        "of the bare loop",
        "us per operation",
        "fsbench age, 2 threads:",
    ] {
        assert!(out.contains(line), "{line:?} missing\n{out}");
    }
    // Its image unmounted and its marked directory removed.
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(!mounts.contains(t.s()), "{mounts}");
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
}

#[test]
fn hot_reads_then_overwrites_what_the_last_days_wrote() {
    let Some(img) = image("age-hot", 64) else {
        return;
    };
    // Without aging there is nothing hot.
    let o = run(&["hot", img.s()]);
    assert!(!o.status.success());
    assert!(text(&o).contains("holds no aging"), "{}", text(&o));

    let aj = img.scratch.path().join("age.json");
    stdout_ok(&[
        "age",
        img.s(),
        "--fill",
        "0.7",
        "--seed",
        "4",
        "--ops",
        "3000",
        "--day-ops",
        "100",
        "-q",
        "--json",
        aj.to_str().unwrap(),
    ]);
    let aged = img.path().join("fsbench-aged");
    // The hot files, from aging's own record: written in the last 5 days (500 operations).
    let state = json(&aged.join(".fsbench-age.json"));
    let since = state["clock"].as_u64().unwrap() - 5 * 100;
    let record = std::fs::read_to_string(aged.join(".fsbench-age-files")).unwrap();
    // Each live file's last write by the aging's clock, and its path.
    let written: Vec<(u64, &str)> = record
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(' '))
        .map(|(c, p)| (c.parse::<u64>().unwrap(), p))
        .collect();
    let hot: Vec<&str> = (written.iter())
        .filter(|(c, _)| *c >= since)
        .map(|(_, p)| *p)
        .collect();
    assert!(hot.len() > 10, "{} hot files", hot.len());
    let cold = (written.iter())
        .find(|(c, _)| *c < since)
        .map(|(_, p)| aged.join(p))
        .expect("a file older than 5 days");

    // A sentinel outside the aged tree, hard-linked in place of one hot file: fsbench never
    // writes through a link, so it must come out unchanged.
    let sentinel = img.path().join("sentinel");
    std::fs::write(&sentinel, b"not fsbench's").unwrap();
    let linked = aged.join(hot[0]);
    std::fs::remove_file(&linked).unwrap();
    std::fs::hard_link(&sentinel, &linked).unwrap();
    let listing = tree_listing(&aged);
    let bytes: u64 = hot
        .iter()
        .map(|p| aged.join(p).metadata().unwrap().len())
        .sum();
    let mtime = |p: &Path| p.metadata().unwrap().modified().unwrap();
    let cold_mtime = mtime(&cold);
    std::thread::sleep(std::time::Duration::from_millis(20));

    let hj = img.scratch.path().join("hot.json");
    let out = stdout_ok(&[
        "hot",
        img.s(),
        "--days",
        "5",
        "--json",
        hj.to_str().unwrap(),
    ]);
    let r = json(&hj);
    let f = &r["figures"];
    assert_eq!(f["files"], hot.len() as f64, "{out}");
    assert_eq!(f["bytes"], bytes as f64, "every hot file read whole\n{out}");
    assert!(f["read_mb_per_s"].as_f64().unwrap() > 0.0, "{out}");
    assert!(f["overwrite_mb_per_s"].as_f64().unwrap() > 0.0, "{out}");
    assert!(f["read_s"].as_f64().unwrap() > 0.0 && f["overwrite_s"].as_f64().unwrap() > 0.0);
    // The one file that is a link is refused and counted, not written.
    assert_eq!(std::fs::read(&sentinel).unwrap(), b"not fsbench's");
    let errors: u64 = r["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["name"] == "overwrite-file")
        .map(|x| x["errors"].as_u64().unwrap())
        .sum();
    assert_eq!(errors, 1, "{out}");
    // Overwritten in place: the same names and sizes; a file older than 5 days untouched,
    // the hot ones written.
    assert_eq!(tree_listing(&aged), listing);
    assert_eq!(mtime(&cold), cold_mtime);
    assert!(mtime(&aged.join(hot[1])) > cold_mtime);

    // `--files K`: the K live files aging wrote last, ties by path, instead of a window.
    let mut by_clock = written.clone();
    by_clock.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let k = 7;
    let last: u64 = (by_clock.iter().take(k))
        .map(|(_, p)| aged.join(p).metadata().unwrap().len())
        .sum();
    let hj = img.scratch.path().join("hot-files.json");
    let out = stdout_ok(&[
        "hot",
        img.s(),
        "--files",
        "7",
        "--json",
        hj.to_str().unwrap(),
    ]);
    let r = json(&hj);
    assert_eq!(r["figures"]["files"], k as f64, "{out}");
    assert_eq!(r["figures"]["bytes"], last as f64, "{out}");
    assert!(out.contains("7 files aging wrote last (7 asked)"), "{out}");
    let o = run(&["hot", img.s(), "--files", "7", "--days", "5"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
