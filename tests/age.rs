//! `fsbench age` on real file systems: loop-mounted ext4 images (root only;
//! skipped with the reason elsewhere), a small tmpfs, and snapshot replay in
//! a scratch directory.

mod common;

use common::{run, run_ok, skip, text, tree_listing, LoopExt4, Mount, Scratch};
use serde_json::Value;
use std::io::Write;
use std::path::Path;

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(o.status.success(), "fsbench {args:?} failed\n{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

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
    ok(&[
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
    let out = ok(&[
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
    let r = json(&js);
    let full = r["fullness_end"].as_f64().unwrap();
    assert!((0.78..=0.92).contains(&full), "fullness {full}\n{out}");
    assert_eq!(r["churn_ops"], 20000);
    assert!(r["counts"]["deletes"].as_u64().unwrap() > 1000, "{out}");
    assert_eq!(r["counts"]["enospc"], 0, "{out}");
    let after = r["layout_after"]["score"].as_f64().unwrap();
    assert!(
        after < 0.95,
        "aged score {after} is not clearly lower\n{out}"
    );
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
        ok(&[
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
    ok(&[
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
    if !common::is_root() {
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
    let out = ok(&[
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
    ok(&["scan", src.to_str().unwrap(), "-o", s1.to_str().unwrap()]);
    std::fs::remove_file(src.join("a/two")).unwrap();
    std::fs::remove_dir_all(src.join("b")).unwrap();
    w("a/one", 9000);
    w("d/four", 12345);
    let s2 = t.path().join("s2.snap");
    ok(&["scan", src.to_str().unwrap(), "-o", s2.to_str().unwrap()]);

    let target = t.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    let log = t.path().join("replay.log");
    let out = ok(&[
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
    ]);
    assert!(out.contains("(replay)"), "{out}");
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
        ok(&[
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
    if !common::is_root() {
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
