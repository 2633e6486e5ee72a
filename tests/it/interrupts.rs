//! SIGTERM in the middle of every command that creates something: the command stops, removes
//! what it made (trees, images, partial outputs, mounts, loop devices) and stops the children
//! it started, then ends with status 130. Each test signals once the command visibly started
//! (its directory, file or child exists) and then looks for anything left: entries in its
//! scratch locations, mounts and loop devices there, processes naming them.

use crate::common::*;
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

/// Start `fsbench ARGS` with standard output discarded and standard error kept.
fn start(args: &[&str], env: &[(&str, &Path)]) -> Child {
    let mut cmd = bin();
    cmd.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// Wait until `ready` holds (the command has started what a signal must undo).
fn wait_for(child: &mut Child, what: &str, ready: impl Fn() -> bool) {
    let t = Instant::now();
    while !ready() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "{what}: ended before it started its work"
        );
        assert!(t.elapsed() < Duration::from_secs(60), "{what}: never ready");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM, then the command's end (60 s at most).
fn terminate(mut child: Child, what: &str) -> Output {
    assert!(
        child.try_wait().unwrap().is_none(),
        "{what} finished before the signal: too little work to interrupt"
    );
    // SAFETY: signalling a child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{what}: still running 60 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Everything that names `dir`: entries in it, mounts and loop devices below it, processes
/// whose command line names it.
fn leftovers(dir: &Path) -> Vec<String> {
    let d = dir.canonicalize().unwrap();
    let ds = d.to_str().unwrap();
    let mut out: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    out.extend(
        mounts
            .lines()
            .filter(|l| l.contains(ds))
            .map(|l| format!("mount {l}")),
    );
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let b = std::fs::read_to_string(e.path().join("loop/backing_file")).unwrap_or_default();
        if b.starts_with(ds) {
            out.push(format!("loop device {:?} on {b}", e.file_name()));
        }
    }
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie =
            std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| s.contains(") Z "));
        if cmdline.contains(ds) && !zombie {
            out.push(format!("process {:?}: {cmdline}", e.file_name()));
        }
    }
    out
}

fn assert_stopped_clean(o: &Output, dir: &Path, what: &str) {
    assert_eq!(o.status.code(), Some(130), "{what}\n{}", text(o));
    let left = leftovers(dir);
    assert!(left.is_empty(), "{what} left {left:#?}\n{}", text(o));
}

fn has_entry(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut it| it.next().is_some())
}

/// `selftest layout`, `scan`, `overhead`: their run directory (and what is in it) goes.
#[test]
fn selftests_stop_and_remove_their_trees() {
    for (what, args) in [
        ("layout", vec!["--files", "20000", "--rounds", "50"]),
        ("scan", vec!["--entries", "200000", "--rounds", "50"]),
        (
            "overhead",
            vec!["--size", "16M", "--seconds", "1", "--rounds", "50"],
        ),
    ] {
        let s = Scratch::new(&format!("int-selftest-{what}"));
        let mut a = vec!["selftest", what, "--dir", s.s()];
        a.extend(args);
        let mut child = start(&a, &[]);
        wait_for(&mut child, what, || has_entry(s.path()));
        std::thread::sleep(Duration::from_millis(500));
        let o = terminate(child, what);
        assert_stopped_clean(&o, s.path(), &format!("selftest {what}"));
    }
    // It makes nothing, and stops all the same.
    let mut child = start(&["selftest", "content", "--mib", "100000"], &[]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none());
    let o = terminate(child, "selftest content");
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
}

/// `selftest age`: its child `fsbench age` stops, the ext4 image is unmounted, its loop
/// device detached, the image and run directory removed.
#[test]
fn selftest_age_stops_its_child_and_undoes_its_image() {
    if !is_root() || !Path::new("/dev/loop-control").exists() {
        skip("needs root and loop devices");
        return;
    }
    if run_ok("sh", &["-c", "command -v mkfs.ext4"]).is_err() {
        skip("needs mkfs.ext4");
        return;
    }
    let s = Scratch::new("int-selftest-age");
    let args = [
        "selftest",
        "age",
        "--size",
        "128M",
        "--ops",
        "400000",
        "--dir",
        s.s(),
    ];
    let mut child = start(&args, &[]);
    let ds = s.path().canonicalize().unwrap();
    // Its child ages the mounted image.
    wait_for(&mut child, "selftest age", || {
        leftovers(&ds)
            .iter()
            .any(|l| l.starts_with("process") && l.contains(" age "))
    });
    std::thread::sleep(Duration::from_millis(300));
    let o = terminate(child, "selftest age");
    assert_stopped_clean(&o, s.path(), "selftest age");
}

/// `scan -o`: no partial snapshot, and the snapshot that was there is intact.
#[test]
fn scan_leaves_no_partial_snapshot() {
    let s = Scratch::new("int-scan");
    let out = s.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let snap = out.join("old.snap");
    let o = run(&["scan", "/etc", "-o", snap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let before = std::fs::read(&snap).unwrap();
    let mut child = start(
        &[
            "scan",
            "/usr",
            "--hash",
            "-j",
            "2",
            "-o",
            snap.to_str().unwrap(),
        ],
        &[],
    );
    wait_for(&mut child, "scan", || {
        std::fs::read_dir(&out).unwrap().count() > 1
    });
    std::thread::sleep(Duration::from_millis(300));
    let o = terminate(child, "scan");
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert_eq!(
        std::fs::read(&snap).unwrap(),
        before,
        "the old snapshot changed"
    );
    std::fs::remove_file(&snap).unwrap();
    assert_stopped_clean(&o, &out, "scan");
}

/// `diff DIR DIR`: the snapshots it makes in the temporary directory go.
#[test]
fn diff_leaves_no_temporary_snapshot() {
    let s = Scratch::new("int-diff");
    let tmp = s.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = start(&["diff", "/usr", "/usr"], &[("TMPDIR", &tmp)]);
    wait_for(&mut child, "diff", || has_entry(&tmp));
    std::thread::sleep(Duration::from_millis(300));
    let o = terminate(child, "diff");
    assert_stopped_clean(&o, &tmp, "diff");
}

/// `age --next-version`: the partial tree goes.
#[test]
fn next_version_leaves_no_partial_tree() {
    let s = Scratch::new("int-nextver");
    let args = [
        "age",
        s.s(),
        "--next-version",
        "/usr/share",
        "--keep",
        "0.5",
        "--seed",
        "1",
    ];
    let mut child = start(&args, &[]);
    wait_for(&mut child, "age --next-version", || has_entry(s.path()));
    std::thread::sleep(Duration::from_millis(300));
    let o = terminate(child, "age --next-version");
    assert_stopped_clean(&o, s.path(), "age --next-version");
}

/// `layout` and `verify` make nothing but stop at the signal all the same, with status 130
/// and no report written.
#[test]
fn layout_and_verify_stop_at_a_signal() {
    let s = Scratch::new("int-read-only");
    let json = s.path().join("report.json");
    for args in [
        vec![
            "layout",
            "/usr",
            "-j",
            "1",
            "--json",
            json.to_str().unwrap(),
        ],
        vec!["verify", "/usr", "--json", json.to_str().unwrap()],
    ] {
        let child = start(&args, &[]);
        std::thread::sleep(Duration::from_millis(500));
        let o = terminate(child, args[0]);
        assert_stopped_clean(&o, s.path(), args[0]);
    }
}
