//! Traces on the real binary: record real programs under strace, replay them in every mode
//! on tmpfs and on ext4, and check that every call that succeeded in the recording succeeds
//! in the replay and that the replayed tree ends as the original did (names and sizes).
//! Recording needs strace; ext4 needs root and loop devices. Each says so and skips without.

use crate::common::*;
use fsbench_tools::trace::format::{self, Call, EntryKind, Header, Initial, Record};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A scratch directory on tmpfs (/dev/shm) when there is one, else the temporary directory.
fn tmpfs_scratch(tag: &str) -> Scratch {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        let p = shm.join(format!("fsbench-test-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    } else {
        Scratch::new(tag)
    }
}

/// The only `fsbench-trace-replay-*` directory below `dir` (a kept replay).
fn kept_replay(dir: &Path) -> PathBuf {
    let v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("fsbench-trace-replay")
        })
        .collect();
    assert_eq!(v.len(), 1, "one kept replay in {}: {v:?}", dir.display());
    v.into_iter().next().unwrap()
}

/// Replay `trace` in `mode` below `dir`, keeping the tree: its results and the tree of the
/// first root. The replay directory is removed afterwards.
fn replay(
    trace: &Path,
    dir: &Path,
    mode: &str,
    extra: &[&str],
) -> (serde_json::Value, Vec<(String, u64)>) {
    let json = dir.join(format!("replay-{mode}.json"));
    let mut args = vec![
        "trace",
        "replay",
        trace.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
        "--mode",
        mode,
        "--keep",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "replay {mode}: {}", text(&o));
    let kept = kept_replay(dir);
    let tree = tree_listing(&kept.join("r0"));
    std::fs::remove_dir_all(&kept).unwrap();
    let r = json_of(&json);
    std::fs::remove_file(&json).unwrap();
    (r, tree)
}

fn figure(r: &serde_json::Value, k: &str) -> f64 {
    r["figures"][k]
        .as_f64()
        .unwrap_or_else(|| panic!("figure {k} in {}", r["figures"]))
}

/// A trace written through the library: a small sequence of every common call, one failing
/// as recorded.
fn handmade(root: &str) -> (Header, Vec<Record>) {
    let h = Header {
        version: format::VERSION,
        command: vec!["handmade".into()],
        cwd: root.into(),
        roots: vec![root.into()],
        source: "test".into(),
        initial: vec![
            Initial {
                root: 0,
                path: "".into(),
                kind: EntryKind::Dir,
                size: 0,
                mode: 0o755,
                target: None,
            },
            Initial {
                root: 0,
                path: "old".into(),
                kind: EntryKind::File,
                size: 10000,
                mode: 0o644,
                target: None,
            },
        ],
        ..Default::default()
    };
    let p = |s: &str| Some(format!("{root}/{s}"));
    let mut t = 0;
    let mut r = |call: Call, path: Option<String>, fd: Option<i32>, ret: i64| {
        t += 1000;
        Record {
            start_ns: t,
            dur_ns: 10,
            tid: 7,
            syscall: call.name().into(),
            call,
            path,
            fd,
            ret,
            ..Default::default()
        }
    };
    let mut v = vec![r(Call::Mkdir, p("d"), None, 0)];
    let mut o = r(Call::Open, p("d/f"), None, 3);
    o.flags = Some((libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC) as u64);
    o.mode = Some(0o644);
    v.push(o);
    let mut w = r(Call::Write, None, Some(3), 5000);
    w.size = Some(5000);
    v.push(w);
    v.push(r(Call::Fsync, None, Some(3), 0));
    v.push(r(Call::Close, None, Some(3), 0));
    let mut rn = r(Call::Rename, p("d/f"), None, 0);
    rn.path2 = p("d/g");
    v.push(rn);
    v.push(r(Call::Stat, p("d/g"), None, 0));
    v.push(r(Call::Open, p("old"), None, 4));
    let mut rd = r(Call::Read, None, Some(4), 4096);
    rd.size = Some(4096);
    v.push(rd);
    let mut prd = r(Call::Read, None, Some(4), 1808);
    prd.size = Some(4096);
    prd.offset = Some(8192);
    v.push(prd);
    v.push(r(Call::Close, None, Some(4), 0));
    v.push(r(Call::Unlink, p("missing"), None, -(libc::ENOENT as i64)));
    v.push(r(Call::Open, Some("/usr/lib/os-release".into()), None, 5));
    v.push(r(Call::Close, None, Some(5), 0));
    (h, v)
}

#[test]
fn a_handmade_trace_replays_in_every_mode_with_the_recorded_outcomes() {
    let s = tmpfs_scratch("trace-handmade");
    let (h, recs) = handmade("/traced/root");
    let tr = s.path().join("t.trace");
    format::write_all(&tr, &h, &recs).unwrap();
    // `show` renders every record.
    let o = run(&["trace", "show", tr.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let shown = String::from_utf8_lossy(&o.stdout);
    assert_eq!(shown.lines().count(), recs.len(), "{shown}");
    assert!(shown.contains("= -1 ENOENT"), "{shown}");
    for mode in ["timed", "afap", "deps"] {
        let (r, tree) = replay(&tr, s.path(), mode, &["--speed", "100"]);
        assert_eq!(
            figure(&r, "failed_where_recorded_ok"),
            0.0,
            "{mode}: {}",
            r["notes"]
        );
        assert_eq!(
            figure(&r, "ok_where_recorded_failed"),
            0.0,
            "{mode}: {}",
            r["notes"]
        );
        // Everything but the two calls on /usr/lib.
        assert_eq!(
            figure(&r, "calls_replayed"),
            (recs.len() - 2) as f64,
            "{mode}"
        );
        assert_eq!(figure(&r, "calls_outside_roots"), 2.0, "{mode}");
        assert_eq!(
            tree,
            vec![
                ("d".to_string(), u64::MAX),
                ("d/g".to_string(), 5000),
                ("old".to_string(), 10000)
            ],
            "{mode}"
        );
        let read = r["flowops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "read")
            .expect("a read row");
        assert_eq!(read["ops"], 2);
        assert_eq!(
            read["bytes"],
            4096 + 1808,
            "the bytes the rebuilt file holds"
        );
    }
}

#[test]
fn a_cut_trace_is_refused_with_a_clear_error() {
    let s = Scratch::new("trace-cut");
    let (h, recs) = handmade("/traced/root");
    let tr = s.path().join("t.trace");
    format::write_all(&tr, &h, &recs).unwrap();
    let bytes = std::fs::read(&tr).unwrap();
    std::fs::write(&tr, &bytes[..bytes.len() - 3]).unwrap();
    let o = run(&["trace", "replay", tr.to_str().unwrap(), "--dir", s.s()]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("t.trace") && e.contains("cut short"), "{e}");
}

/// Record `cmd` (run in `root`) under `fsbench trace record --root root`; the trace's path.
fn record(root: &Path, out: &Path, cmd: &[&str]) -> PathBuf {
    let tr = out.join("rec.trace");
    let mut args = vec![
        "trace",
        "record",
        "-o",
        tr.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
        "--",
    ];
    args.extend_from_slice(cmd);
    let o = bin().args(&args).current_dir(root).output().unwrap();
    assert!(o.status.success(), "record {cmd:?}: {}", text(&o));
    tr
}

/// Files of pseudo-random sizes (some empty, some of several blocks) in a few directories.
fn make_tree(dir: &Path, files: usize) {
    let mut x = 12345u64;
    for i in 0..files {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let d = dir
            .join(format!("sub{}", i % 4))
            .join(format!("deep{}", i % 3));
        std::fs::create_dir_all(&d).unwrap();
        let size = match i % 7 {
            0 => 0,
            1 => 200_000 + (x >> 40) as usize % 50_000,
            _ => (x >> 33) as usize % 20_000,
        };
        let data: Vec<u8> = (0..size).map(|j| (j * 31 + i) as u8).collect();
        std::fs::write(d.join(format!("f{i}.dat")), data).unwrap();
    }
    std::os::unix::fs::symlink("sub0", dir.join("link")).unwrap();
}

/// Replay `trace` in every mode in `dirs`, checking outcomes and the final tree.
fn replay_everywhere(trace: &Path, want: &[(String, u64)], dirs: &[&Path], modes: &[&str]) {
    for d in dirs {
        for m in modes {
            let (r, tree) = replay(trace, d, m, &["--speed", "4"]);
            let notes = &r["notes"];
            assert_eq!(
                figure(&r, "failed_where_recorded_ok"),
                0.0,
                "{m} on {}: {notes}",
                d.display()
            );
            assert!(figure(&r, "calls_replayed") > 0.0, "{m}: {notes}");
            assert_eq!(
                tree,
                want,
                "{m} on {}: the replayed tree differs",
                d.display()
            );
        }
    }
}

/// Where replays run: tmpfs, and a fresh ext4 when root and loop devices allow.
fn with_targets(tag: &str, f: impl FnOnce(&[&Path])) {
    let shm = tmpfs_scratch(&format!("{tag}-replay"));
    match LoopExt4::new(tag, 256) {
        Ok(ext4) => f(&[shm.path(), ext4.path()]),
        Err(why) => {
            skip(&format!("replay on ext4 skipped ({why}); tmpfs only"));
            f(&[shm.path()])
        }
    }
}

#[test]
fn tar_and_cp_recorded_replay_in_every_mode_on_tmpfs_and_ext4() {
    if !have("strace") {
        skip("needs strace (apt install strace)");
        return;
    }
    let s = tmpfs_scratch("trace-tar");
    let root = s.path().join("root");
    std::fs::create_dir_all(root.join("src")).unwrap();
    make_tree(&root.join("src"), 40);
    let o = Command::new("tar")
        .args(["-cf", "a.tar", "src"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(o.status.success());
    std::fs::create_dir(root.join("out")).unwrap();
    let out = s.path().join("traces");
    std::fs::create_dir(&out).unwrap();
    // tar -x of a generated archive.
    let tr = record(&root, &out, &["tar", "-xf", "a.tar", "-C", "out"]);
    let want = tree_listing(&root);
    assert!(want.iter().any(|(p, _)| p == "out/src/sub1/deep1/f1.dat"));
    // cp -r of the same tree (the trace of tar kept aside).
    let tar_trace = out.join("tar.trace");
    std::fs::rename(&tr, &tar_trace).unwrap();
    let tr = record(&root, &out, &["cp", "-r", "src", "copy"]);
    let want_cp = tree_listing(&root);
    // The stats see the reads and writes of the copy.
    let o = run(&["trace", "stats", tr.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    with_targets("trace-tar", |dirs| {
        // tar's replay starts from the tree before tar ran: the trace's snapshot.
        replay_everywhere(
            &tar_trace,
            &want_without(&want, "copy"),
            dirs,
            &["timed", "afap", "deps"],
        );
        replay_everywhere(&tr, &want_cp, dirs, &["timed", "afap", "deps"]);
    });
}

/// `want` without the entries below `top` (made after the first recording).
fn want_without(want: &[(String, u64)], top: &str) -> Vec<(String, u64)> {
    want.iter()
        .filter(|(p, _)| p != top && !p.starts_with(&format!("{top}/")))
        .cloned()
        .collect()
}

#[test]
fn git_status_recorded_replays_in_every_mode() {
    if !have("strace") || !have("git") {
        skip("needs strace and git");
        return;
    }
    let s = tmpfs_scratch("trace-git");
    let root = s.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    make_tree(&root, 30);
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.email=t@example.org", "-c", "user.name=t"])
            .args(args)
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "first"]);
    std::fs::write(root.join("sub1/deep1/f1.dat"), b"changed").unwrap();
    std::fs::write(root.join("new.txt"), b"new").unwrap();
    let out = s.path().join("traces");
    std::fs::create_dir(&out).unwrap();
    let tr = record(&root, &out, &["git", "status", "--porcelain"]);
    let want = tree_listing(&root);
    with_targets("trace-git", |dirs| {
        replay_everywhere(&tr, &want, dirs, &["timed", "afap", "deps"]);
    });
}

#[test]
fn fsbench_build_recorded_replays_with_its_threads() {
    if !have("strace") {
        skip("needs strace (apt install strace)");
        return;
    }
    let s = tmpfs_scratch("trace-build");
    let root = s.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let out = s.path().join("traces");
    std::fs::create_dir(&out).unwrap();
    let me = env!("CARGO_BIN_EXE_fsbench");
    let tr = record(
        &root,
        &out,
        &[
            me,
            "build",
            "--dir",
            root.to_str().unwrap(),
            "--files",
            "40",
            "--dirs",
            "4",
            "-j",
            "2",
            "--cpu-ms",
            "0",
            "--keep",
        ],
    );
    let want = tree_listing(&root);
    assert!(want.len() > 40, "the kept build tree: {want:?}");
    with_targets("trace-build", |dirs| {
        replay_everywhere(&tr, &want, dirs, &["timed", "deps"]);
    });
    // Distilled into a workload, whose traced run is compared with the build's (op mix
    // within 0.05, size distributions within 0.15: the command fails otherwise). The sizes
    // of files at open in a 3 s run of the model sit near the default bound of 0.1 (0.106 in
    // one run on a busy machine), so the bound here leaves room for that sample's spread.
    let model = out.join("build.f");
    let run_dir = s.path().join("model");
    std::fs::create_dir(&run_dir).unwrap();
    let o = run(&[
        "trace",
        "distill",
        tr.to_str().unwrap(),
        "-o",
        model.to_str().unwrap(),
        "--check",
        "--dir",
        run_dir.to_str().unwrap(),
        "--duration",
        "3",
        "--max-ks",
        "0.15",
    ]);
    assert!(o.status.success(), "distill --check: {}", text(&o));
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(
        shown.contains("op mix: total variation distance"),
        "{shown}"
    );
    let o = run(&["check", model.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "the model is a valid workload: {}",
        text(&o)
    );
}

#[test]
fn a_shell_pipeline_replays_afap_in_its_own_process_order() {
    // The shell waits for each command (wait4) before it starts the next or expands
    // `gen2/d1/*`: afap keeps that order (a parent's calls after a wait come after the
    // child's last call; a thread starts after the clone that made it; a vfork parent goes
    // on after its child's exec), though it drops the orderings only the data imply.
    if !have("strace") {
        skip("needs strace (apt install strace)");
        return;
    }
    let s = tmpfs_scratch("trace-sh");
    let root = s.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    for d in 0..4 {
        let dir = root.join("gen").join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..15 {
            std::fs::write(dir.join(format!("f{f}")), vec![b'x'; 1000 * (f + 1)]).unwrap();
        }
    }
    let o = Command::new("tar")
        .args(["-cf", "A.tar", "gen"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(o.status.success());
    std::fs::remove_dir_all(root.join("gen")).unwrap();
    let out = s.path().join("traces");
    std::fs::create_dir(&out).unwrap();
    let cmd = "tar -xf A.tar && cp -r gen gen2 && cat gen2/d1/* > /dev/null";
    let tr = record(&root, &out, &["sh", "-c", cmd]);
    let rec = format::read_all(&tr).unwrap().1;
    assert!(
        rec.iter().any(|r| r.call == Call::Wait && r.ret > 0),
        "the recording has the shell's waits"
    );
    let want = tree_listing(&root);
    with_targets("trace-sh", |dirs| {
        replay_everywhere(&tr, &want, dirs, &["afap", "deps"]);
    });
}
