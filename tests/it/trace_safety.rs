//! A replay never reaches outside its root: hostile traces (handmade, imported from an
//! strace log, recorded from a real program) aim at a sentinel directory outside the replay
//! directory, and the sentinel must be exactly as it was afterwards. None of this needs
//! root; the recorded case needs strace and says so when it is missing.

use crate::common::*;
use fsbench_tools::trace::format::{self, Call, EntryKind, Header, Initial, Record};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory outside every replay directory, and what it held when made.
struct Sentinel {
    dir: Scratch,
    before: Vec<(String, u64, u32, i64, i64)>,
}

impl Sentinel {
    fn new(tag: &str) -> Sentinel {
        let dir = Scratch::new(tag);
        std::fs::write(dir.path().join("victim"), b"precious").unwrap();
        std::fs::write(dir.path().join("del"), b"keep me").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        // An old time stamp, so that a touch shows.
        let t = std::ffi::CString::new(dir.path().join("victim").to_str().unwrap()).unwrap();
        let times = [libc::timespec {
            tv_sec: 1_000_000_000,
            tv_nsec: 0,
        }; 2];
        // SAFETY: a valid C string and two timespecs.
        assert_eq!(
            unsafe { libc::utimensat(libc::AT_FDCWD, t.as_ptr(), times.as_ptr(), 0) },
            0
        );
        let mut s = Sentinel {
            dir,
            before: Vec::new(),
        };
        s.before = s.state();
        s
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    /// Every entry (recursively): name, size, mode, mtime, and a hash of a file's bytes.
    fn state(&self) -> Vec<(String, u64, u32, i64, i64)> {
        let mut out = Vec::new();
        let mut stack = vec![self.path().to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let m = std::fs::symlink_metadata(e.path()).unwrap();
                let sum = if m.is_file() {
                    std::fs::read(e.path())
                        .unwrap()
                        .iter()
                        .fold(0i64, |h, b| h.wrapping_mul(31).wrapping_add(*b as i64))
                } else {
                    0
                };
                let rel = e
                    .path()
                    .strip_prefix(self.path())
                    .unwrap()
                    .display()
                    .to_string();
                out.push((rel, m.len(), m.mode(), m.mtime(), sum));
                if m.is_dir() {
                    stack.push(e.path());
                }
            }
        }
        out.sort();
        out
    }
    fn assert_unchanged(&self, what: &str) {
        assert_eq!(
            self.state(),
            self.before,
            "{what}: the sentinel outside changed"
        );
    }
}

fn figure(r: &serde_json::Value, k: &str) -> f64 {
    r["figures"][k]
        .as_f64()
        .unwrap_or_else(|| panic!("figure {k} in {}", r["figures"]))
}

/// Replay `trace` in `dir` (extra arguments after), keeping the run directory: the results
/// and the kept directory's `r0`.
fn replay(trace: &Path, dir: &Path, extra: &[&str]) -> (serde_json::Value, PathBuf, String) {
    let json = dir.join("replay.json");
    let mut args = vec![
        "trace",
        "replay",
        trace.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
        "--keep",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "replay: {}", text(&o));
    let kept = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("fsbench-trace-replay")
        })
        .expect("a kept replay directory");
    (json_of(&json), kept.join("r0"), text(&o))
}

fn entry(path: &str, kind: EntryKind, target: Option<&str>) -> Initial {
    Initial {
        root: 0,
        path: path.into(),
        kind,
        size: if kind == EntryKind::File { 100 } else { 0 },
        mode: if kind == EntryKind::Dir { 0o755 } else { 0o644 },
        target: target.map(String::from),
    }
}

/// A trace that tries every way out: `..`, an absolute link in the initial tree, a relative
/// link climbing out, a link the trace itself creates, the root itself; and two links that
/// stay inside and must keep working. Returns the trace and the number of calls that must
/// be refused.
fn hostile(root: &str, outside: &Path) -> (Header, Vec<Record>, u64) {
    let out = outside.to_str().unwrap();
    let climb = format!("{}{}", "../".repeat(40), out.trim_start_matches('/'));
    let h = Header {
        version: format::VERSION,
        command: vec!["hostile".into()],
        cwd: root.into(),
        roots: vec![root.into()],
        source: "test".into(),
        initial: vec![
            entry("", EntryKind::Dir, None),
            entry("d", EntryKind::Dir, None),
            entry("out", EntryKind::Symlink, Some(out)),
            entry("climb", EntryKind::Symlink, Some(&climb)),
            // Initial entries that leave the root: refused, not made.
            entry("../planted", EntryKind::File, None),
            entry("out/planted", EntryKind::File, None),
            entry("climb/sub/planted", EntryKind::Dir, None),
        ],
        ..Default::default()
    };
    let p = |s: &str| Some(format!("{root}/{s}"));
    let mut recs = Vec::new();
    let mut t = 0;
    let mut push = |call: Call,
                    path: Option<String>,
                    path2: Option<String>,
                    fd,
                    ret,
                    f: &dyn Fn(&mut Record)| {
        t += 1000;
        let mut r = Record {
            start_ns: t,
            dur_ns: 10,
            tid: 1,
            syscall: call.name().into(),
            call,
            path,
            path2,
            fd,
            ret,
            ..Default::default()
        };
        f(&mut r);
        recs.push(r);
    };
    let wr = (libc::O_WRONLY | libc::O_TRUNC | libc::O_CREAT) as u64;
    let none = &|_: &mut Record| {};
    let mut bad = 0;
    // Through the initial tree's absolute link.
    for (call, path, path2) in [
        (Call::Unlink, "out/del", None),
        (Call::Truncate, "out/victim", None),
        (Call::Chmod, "out/victim", None),
        (Call::Utimes, "out/victim", None),
        (Call::Rename, "out/victim", Some("stolen")),
        (Call::Link, "out/victim", Some("hard")),
        (Call::Mkdir, "out/newdir", None),
        (Call::Rmdir, "out/sub", None),
        (Call::Stat, "out/victim", None),
        (Call::Readlink, "out/victim", None),
        (Call::Symlink, "out/newlink", Some("x")),
        // Through `..` and the climbing link.
        (Call::Unlink, "../del", None),
        (Call::Unlink, "d/../../del", None),
        (Call::Unlink, "climb/del", None),
        (Call::Rename, "d", Some("climb/moved")),
        // The root itself.
        (Call::Rmdir, "", None),
        (Call::Rename, "", Some("elsewhere")),
    ] {
        let path2 = path2.map(|x: &str| {
            if call == Call::Symlink {
                x.to_string()
            } else {
                format!("{root}/{x}")
            }
        });
        let path = if path.is_empty() {
            Some(root.to_string())
        } else {
            p(path)
        };
        push(call, path, path2, None, 0, &|r: &mut Record| {
            r.size = Some(0);
            r.mode = Some(0o777);
        });
        bad += 1;
    }
    // Writes through opens that leave the root.
    for (i, path) in ["out/victim", "climb/victim", "../victim"]
        .iter()
        .enumerate()
    {
        let fd = 10 + i as i32;
        push(
            Call::Open,
            p(path),
            None,
            None,
            fd as i64,
            &|r: &mut Record| {
                r.flags = Some(wr);
                r.mode = Some(0o644);
            },
        );
        push(Call::Write, None, None, Some(fd), 5, &|r: &mut Record| {
            r.size = Some(5)
        });
        push(Call::Close, None, None, Some(fd), 0, none);
        bad += 1;
    }
    // A link the trace creates, absolute, pointing out; then a write through it.
    push(
        Call::Symlink,
        p("made"),
        Some(out.to_string()),
        None,
        0,
        none,
    );
    push(
        Call::Open,
        p("made/victim"),
        None,
        None,
        20,
        &|r: &mut Record| {
            r.flags = Some(wr);
        },
    );
    push(Call::Unlink, p("made/del"), None, None, 0, none);
    bad += 2;
    // Links the trace creates that stay inside: they keep working.
    push(
        Call::Symlink,
        p("abs-in"),
        Some(format!("{root}/d")),
        None,
        0,
        none,
    );
    push(
        Call::Open,
        p("abs-in/f"),
        None,
        None,
        21,
        &|r: &mut Record| {
            r.flags = Some(wr);
        },
    );
    push(Call::Close, None, None, Some(21), 0, none);
    push(
        Call::Symlink,
        p("d/rel-in"),
        Some("..".into()),
        None,
        0,
        none,
    );
    push(
        Call::Open,
        p("d/rel-in/d/g"),
        None,
        None,
        22,
        &|r: &mut Record| {
            r.flags = Some(wr);
        },
    );
    push(Call::Close, None, None, Some(22), 0, none);
    (h, recs, bad)
}

#[test]
fn a_hostile_trace_never_reaches_outside_its_root() {
    let sentinel = Sentinel::new("sentinel");
    let work = Scratch::new("hostile");
    let root = "/home/someone/proj";
    let (h, recs, bad) = hostile(root, sentinel.path());
    let tr = work.path().join("hostile.trace");
    format::write_all(&tr, &h, &recs).unwrap();
    for mode in ["deps", "afap", "timed"] {
        let dir = work.path().join(mode);
        std::fs::create_dir(&dir).unwrap();
        let (r, r0, out) = replay(&tr, &dir, &["--mode", mode]);
        sentinel.assert_unchanged(mode);
        assert_eq!(
            figure(&r, "calls_refused_outside_root"),
            bad as f64,
            "{mode}: every way out is refused and counted\n{out}"
        );
        assert_eq!(figure(&r, "initial_entries_refused"), 3.0, "{mode}");
        assert!(out.contains("would leave the replay root"), "{out}");
        assert!(out.contains("whose paths leave the replay root"), "{out}");
        // The links that stay inside worked; nothing was planted beside the root.
        assert!(
            r0.join("d/f").is_file(),
            "{mode}: through an absolute link inside"
        );
        assert!(
            r0.join("d/g").is_file(),
            "{mode}: through a relative link inside"
        );
        assert!(!r0.parent().unwrap().join("planted").exists());
        assert!(r0.is_dir(), "{mode}: the root itself was not removed");
        assert!(std::fs::symlink_metadata(r0.join("out"))
            .unwrap()
            .is_symlink());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The strace log of `rm out/del` and a write through `out/victim` in `root`, where `out`
/// is a link to `outside`, as strace -yy writes it.
fn strace_log(root: &str, outside: &str) -> String {
    format!(
        "100 1795583550.000001 newfstatat(AT_FDCWD<{root}>, \"out/del\", {{st_mode=S_IFREG|0644, st_size=7, ...}}, AT_SYMLINK_NOFOLLOW) = 0 <0.000010>\n\
         100 1795583550.000002 unlinkat(AT_FDCWD<{root}>, \"out/del\", 0) = 0 <0.000010>\n\
         100 1795583550.000003 openat(AT_FDCWD<{root}>, \"out/victim\", O_WRONLY|O_TRUNC) = 3<{outside}/victim> <0.000010>\n\
         100 1795583550.000004 write(3<{outside}/victim>, \"\"..., 5) = 5 <0.000010>\n\
         100 1795583550.000005 close(3<{outside}/victim>) = 0 <0.000010>\n\
         100 1795583550.000006 openat(AT_FDCWD<{root}>, \"out/new\", O_WRONLY|O_CREAT|O_EXCL, 0644) = -1 EEXIST (File exists) <0.000010>\n\
         100 1795583550.000007 unlinkat(AT_FDCWD<{root}>, \"../{}/del\", 0) = 0 <0.000010>\n\
         100 1795583550.000008 +++ exited with 0 +++\n",
        outside.rsplit('/').next().unwrap()
    )
}

#[test]
fn an_imported_log_through_a_link_out_is_refused() {
    let sentinel = Sentinel::new("sentinel-import");
    let work = Scratch::new("import");
    let root = work.path().join("w");
    std::fs::create_dir(&root).unwrap();
    std::os::unix::fs::symlink(sentinel.path(), root.join("out")).unwrap();
    let log = work.path().join("app.strace");
    std::fs::write(&log, strace_log(root.to_str().unwrap(), sentinel.dir.s())).unwrap();
    let tr = work.path().join("app.trace");
    let o = run(&[
        "trace",
        "import",
        log.to_str().unwrap(),
        "-o",
        tr.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
        "--snapshot-of",
        root.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "import: {}", text(&o));
    let dir = work.path().join("replay");
    std::fs::create_dir(&dir).unwrap();
    let (r, _, out) = replay(&tr, &dir, &[]);
    sentinel.assert_unchanged("imported log");
    // The stat, the unlink and the failed create through `out` are refused. The open that
    // succeeded is recorded at the path the kernel reported (outside), and the `..` one is
    // outside the roots once normalised: neither is replayed at all.
    assert_eq!(figure(&r, "calls_refused_outside_root"), 3.0, "{out}");
    assert!(!sentinel.path().join("new").exists());
}

#[test]
fn over_reads_nothing_outside_and_changes_nothing() {
    let sentinel = Sentinel::new("sentinel-over");
    let work = Scratch::new("over");
    let tree = work.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("mine"), b"data").unwrap();
    std::fs::set_permissions(tree.join("mine"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::symlink(sentinel.path(), tree.join("out")).unwrap();
    let root = "/w";
    let rd = libc::O_RDONLY as u64;
    let rec = |t: u64, call: Call, path: Option<&str>, fd: Option<i32>, ret: i64| Record {
        start_ns: t,
        tid: 1,
        syscall: call.name().into(),
        call,
        path: path.map(|p| format!("{root}/{p}")),
        fd,
        ret,
        flags: (call == Call::Open).then_some(rd),
        size: (call == Call::Read).then_some(8),
        mode: (call == Call::Chmod).then_some(0o777),
        ..Default::default()
    };
    let recs = vec![
        rec(1, Call::Open, Some("out/victim"), None, 3),
        rec(2, Call::Read, None, Some(3), 8),
        rec(3, Call::Close, None, Some(3), 0),
        rec(4, Call::Stat, Some("../etc/passwd"), None, 0),
        // A read-only open, then a change through its descriptor.
        rec(5, Call::Open, Some("mine"), None, 4),
        rec(6, Call::Chmod, None, Some(4), 0),
        rec(7, Call::Close, None, Some(4), 0),
    ];
    let h = Header {
        version: format::VERSION,
        roots: vec![root.into()],
        source: "test".into(),
        ..Default::default()
    };
    let tr = work.path().join("reads.trace");
    format::write_all(&tr, &h, &recs).unwrap();
    let dir = work.path().join("replay");
    std::fs::create_dir(&dir).unwrap();
    let (r, _, out) = replay(&tr, &dir, &["--over", tree.to_str().unwrap()]);
    sentinel.assert_unchanged("--over");
    assert_eq!(figure(&r, "calls_refused_outside_root"), 2.0, "{out}");
    assert_eq!(figure(&r, "calls_refused_over"), 1.0, "{out}");
    let m = std::fs::metadata(tree.join("mine")).unwrap();
    assert_eq!(m.mode() & 0o7777, 0o644, "the --over tree is never changed");
}

#[test]
fn a_recorded_rm_through_a_link_out_deletes_nothing_when_replayed() {
    if !Command::new("sh")
        .args(["-c", "command -v strace >/dev/null"])
        .status()
        .is_ok_and(|s| s.success())
    {
        skip("strace is not installed");
        return;
    }
    let sentinel_dir = Scratch::new("sentinel-rec");
    let work = Scratch::new("rec");
    let root = work.path().join("w");
    std::fs::create_dir(&root).unwrap();
    std::os::unix::fs::symlink(sentinel_dir.path(), root.join("out")).unwrap();
    std::fs::write(sentinel_dir.path().join("del"), b"keep me").unwrap();
    let tr = work.path().join("rm.trace");
    let o = bin()
        .args(["trace", "record", "-o", tr.to_str().unwrap(), "--root"])
        .arg(&root)
        .args(["--", "sh", "-c", "rm out/del"])
        .current_dir(&root)
        .output()
        .unwrap();
    if !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("ptrace") {
        skip("strace cannot trace here (ptrace refused)");
        return;
    }
    assert!(o.status.success(), "record: {}", text(&o));
    assert!(
        !sentinel_dir.path().join("del").exists(),
        "the recording removed it"
    );
    // Put it back: the replay must not remove it again.
    std::fs::write(sentinel_dir.path().join("del"), b"keep me").unwrap();
    let dir = work.path().join("replay");
    std::fs::create_dir(&dir).unwrap();
    let (r, _, out) = replay(&tr, &dir, &[]);
    assert_eq!(
        std::fs::read(sentinel_dir.path().join("del")).unwrap(),
        b"keep me",
        "the replay deleted the file outside\n{out}"
    );
    assert!(figure(&r, "calls_refused_outside_root") >= 1.0, "{out}");
}

/// Hole 7: nothing from a trace's text reaches the distilled workload as a statement.
#[test]
fn distilling_a_hostile_trace_writes_no_statement_from_it() {
    let work = Scratch::new("distill");
    let marker = |i: u32| work.path().join(format!("marker{i}"));
    let cmd = |i: u32| format!("true\nsystem \"touch {}\"\n", marker(i).display());
    let root = "/home/someone/proj";
    let h = Header {
        version: format::VERSION,
        command: vec!["sh".into(), "-c".into(), cmd(1)],
        cwd: root.into(),
        roots: vec![root.into(), format!("/x\r\n{}", cmd(2))],
        source: format!("strace\n{}", cmd(3)),
        ..Default::default()
    };
    let mut recs = Vec::new();
    for i in 0..20u64 {
        let mk = |call: Call, syscall: String, path: Option<String>, fd, size, ret| Record {
            start_ns: i * 1000 + ret as u64,
            tid: 1,
            syscall,
            call,
            path,
            fd,
            size,
            ret,
            ..Default::default()
        };
        recs.push(mk(
            Call::Open,
            "openat".into(),
            Some(format!("{root}/f{i}")),
            None,
            None,
            3,
        ));
        recs.push(mk(
            Call::Read,
            "read".into(),
            None,
            Some(3),
            Some(4096),
            4096,
        ));
        recs.push(mk(Call::Close, "close".into(), None, Some(3), None, 0));
        // A crafted call name: it is counted in a comment, as text.
        let crafted = format!("x}}\n{}flowop ", cmd(4));
        recs.push(mk(
            Call::Other,
            crafted,
            Some(format!("{root}/f{i}")),
            None,
            None,
            0,
        ));
    }
    let tr = work.path().join("hostile.trace");
    format::write_all(&tr, &h, &recs).unwrap();
    let model = work.path().join("model.f");
    let o = run(&[
        "trace",
        "distill",
        tr.to_str().unwrap(),
        "-o",
        model.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "distill: {}", text(&o));
    let f = std::fs::read_to_string(&model).unwrap();
    for line in f.lines() {
        let t = line.trim_start();
        assert!(
            t.is_empty()
                || t.starts_with('#')
                || ["set ", "define ", "thread ", "flowop ", "{", "}", "run "]
                    .iter()
                    .any(|k| t.starts_with(k)),
            "a line the printer does not make: {line:?}\n{f}"
        );
        assert!(!t.starts_with("system"), "{f}");
        if !t.starts_with('#') {
            assert!(
                !t.contains("touch"),
                "trace text outside a comment: {line:?}\n{f}"
            );
        }
    }
    assert!(
        f.contains("touch"),
        "the command line is kept, as a comment: {f}"
    );
    let o = run(&["check", model.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "the model is a valid workload: {}",
        text(&o)
    );
    let dir = work.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let o = run(&[
        "run",
        model.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
        "--allow-system",
        "--quiet",
        "--continue-when-exhausted",
        "--duration",
        "1",
    ]);
    assert!(o.status.success(), "the model runs: {}", text(&o));
    for i in 1..=4 {
        assert!(
            !marker(i).exists(),
            "marker {i} was created: a command ran\n{f}"
        );
    }
}

/// A trace can claim anything: a header longer than the file, any number of threads.
#[test]
fn claims_a_trace_cannot_back_are_refused_before_acting_on_them() {
    let work = Scratch::new("claims");
    // 16 bytes claiming a 1 GiB header.
    let t = work.path().join("short.trace");
    let mut b = format::MAGIC.to_vec();
    b.extend_from_slice(&format::VERSION.to_le_bytes());
    b.extend_from_slice(&(1u32 << 30).to_le_bytes());
    std::fs::write(&t, &b).unwrap();
    for cmd in ["show", "stats"] {
        let o = run(&["trace", cmd, t.to_str().unwrap()]);
        assert!(!o.status.success(), "{cmd}: {}", text(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains("short.trace") && e.contains("claims 1073741824 bytes"),
            "{cmd}: {e}"
        );
    }
    // 100,000 threads, one stat each.
    let root = "/w";
    let recs: Vec<Record> = (0..100_000u32)
        .map(|i| Record {
            start_ns: i as u64,
            tid: 1000 + i,
            syscall: "newfstatat".into(),
            call: Call::Stat,
            path: Some(root.into()),
            ..Default::default()
        })
        .collect();
    let h = Header {
        version: format::VERSION,
        roots: vec![root.into()],
        source: "test".into(),
        ..Default::default()
    };
    let t = work.path().join("threads.trace");
    format::write_all(&t, &h, &recs).unwrap();
    let dir = work.path().join("replay");
    std::fs::create_dir(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let o = run(&["trace", "replay", t.to_str().unwrap(), "--dir", d]);
    assert!(!o.status.success(), "{}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("100000 threads") && e.contains("at most 4096") && e.contains("--threads"),
        "{e}"
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing was made"
    );
    let o = run(&[
        "trace",
        "replay",
        t.to_str().unwrap(),
        "--dir",
        d,
        "--threads",
        "5000",
    ]);
    assert!(
        !o.status.success() && text(&o).contains("at most 4096"),
        "{}",
        text(&o)
    );
    // Folded onto a few threads, it replays.
    let o = run(&[
        "trace",
        "replay",
        t.to_str().unwrap(),
        "--dir",
        d,
        "--threads",
        "4",
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

/// A trace longer than a replay's chunk (65,536 records) replays across the chunks with
/// the recorded outcomes: descriptors opened in one chunk and used by another thread in
/// the next, files created and removed on the way.
#[test]
fn a_long_trace_replays_across_chunks() {
    let work = Scratch::new("long");
    let root = "/w";
    let mut recs = Vec::new();
    let mut t = 0u64;
    let mut push = |tid: u32, call: Call, path: Option<String>, fd: Option<i32>, ret: i64| {
        t += 100;
        let r = Record {
            start_ns: t,
            tid,
            syscall: call.name().into(),
            call,
            path,
            fd,
            ret,
            flags: match call {
                Call::Open => Some((libc::O_RDWR | libc::O_CREAT) as u64),
                Call::Clone => Some((libc::CLONE_VM | libc::CLONE_FILES) as u64),
                _ => None,
            },
            mode: (call == Call::Open).then_some(0o644),
            size: matches!(call, Call::Read | Call::Write).then_some(512),
            ..Default::default()
        };
        recs.push(r);
    };
    push(1, Call::Clone, None, None, 2);
    for i in 0..40_000 {
        let p = Some(format!("{root}/f{}", i % 500));
        // Thread 1 opens and writes, thread 2 reads and closes what thread 1 opened.
        push(1, Call::Open, p.clone(), None, 3);
        push(1, Call::Write, None, Some(3), 512);
        push(2, Call::Read, None, Some(3), 0);
        push(2, Call::Close, None, Some(3), 0);
        if i % 7 == 0 {
            push(1, Call::Unlink, p, None, 0);
        }
    }
    let h = Header {
        version: format::VERSION,
        roots: vec![root.into()],
        source: "test".into(),
        initial: vec![entry("", EntryKind::Dir, None)],
        ..Default::default()
    };
    let tr = work.path().join("long.trace");
    format::write_all(&tr, &h, &recs).unwrap();
    assert!(
        recs.len() > 2 * 65_536,
        "{} records: three chunks",
        recs.len()
    );
    let dir = work.path().join("replay");
    std::fs::create_dir(&dir).unwrap();
    let (r, _, out) = replay(&tr, &dir, &["--mode", "deps"]);
    assert_eq!(figure(&r, "calls_recorded"), recs.len() as f64);
    assert_eq!(
        figure(&r, "calls_replayed"),
        (recs.len() - 1) as f64,
        "{out}"
    );
    assert_eq!(figure(&r, "failed_where_recorded_ok"), 0.0, "{out}");
}

/// A crafted system call name or path is shown as text, never as control sequences.
#[test]
fn crafted_names_reach_the_terminal_as_text() {
    let work = Scratch::new("names");
    let evil = "open\u{1b}]0;owned\u{7}\u{1b}[2J\nfake line";
    let h = Header {
        version: format::VERSION,
        roots: vec!["/w".into()],
        source: "test".into(),
        ..Default::default()
    };
    let recs = vec![Record {
        tid: 1,
        syscall: evil.into(),
        call: Call::Other,
        path: Some(format!("/w/{evil}")),
        ..Default::default()
    }];
    let t = work.path().join("names.trace");
    format::write_all(&t, &h, &recs).unwrap();
    for cmd in ["show", "stats"] {
        let o = run(&["trace", cmd, t.to_str().unwrap()]);
        assert!(o.status.success(), "{cmd}: {}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(!out.contains(['\u{1b}', '\u{7}']), "{cmd}: {out:?}");
        assert!(!out.contains("\nfake line"), "{cmd}: {out:?}");
    }
}

/// A trace can ask for calls of any size in many threads: the replay's buffers stay within
/// a bound (256 MiB in all), they do not grow to the sizes asked for.
#[test]
fn huge_calls_in_many_threads_stay_within_a_memory_bound() {
    if !Path::new("/usr/bin/time").exists() {
        skip("/usr/bin/time is not installed (it measures the replay's peak memory)");
        return;
    }
    let work = Scratch::new("huge");
    let root = "/w";
    let mut recs = Vec::new();
    for t in 0..64u32 {
        let r = |call: Call, path: Option<String>, fd, size, ret| Record {
            start_ns: t as u64 * 10 + ret as u64,
            tid: 100 + t,
            syscall: call.name().into(),
            call,
            path,
            fd,
            size,
            ret,
            flags: (call == Call::Open).then_some(libc::O_RDONLY as u64),
            ..Default::default()
        };
        recs.push(r(Call::Open, Some(format!("{root}/f")), None, None, 3));
        recs.push(r(Call::Read, None, Some(3), Some(1 << 30), 4096));
        recs.push(r(Call::Close, None, Some(3), None, 0));
    }
    let h = Header {
        version: format::VERSION,
        roots: vec![root.into()],
        source: "test".into(),
        initial: vec![
            entry("", EntryKind::Dir, None),
            entry("f", EntryKind::File, None),
        ],
        ..Default::default()
    };
    let tr = work.path().join("huge.trace");
    format::write_all(&tr, &h, &recs).unwrap();
    let dir = work.path().join("replay");
    std::fs::create_dir(&dir).unwrap();
    let o = Command::new("/usr/bin/time")
        .args(["-f", "maxrss_kib=%M"])
        .arg(env!("CARGO_BIN_EXE_fsbench"))
        .args([
            "trace",
            "replay",
            tr.to_str().unwrap(),
            "--dir",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let kib: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("maxrss_kib="))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no maxrss in {err}"));
    // 64 threads at 64 MiB each would be 4 GiB.
    assert!(kib < 700 << 10, "peak RSS {kib} KiB\n{}", text(&o));
}

/// A trace that opens a FIFO in an `--over` tree: the replay's open waited for a writer
/// for ever (signals did not end it). The open is refused and counted; the replay ends.
#[test]
fn a_fifo_in_an_over_tree_is_refused_not_waited_on() {
    let work = Scratch::new("over-fifo");
    let tree = work.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("mine"), b"data").unwrap();
    let c = std::ffi::CString::new(tree.join("pipe").to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let root = "/w";
    let rec = |t: u64, call: Call, path: Option<&str>, fd: Option<i32>, ret: i64| Record {
        start_ns: t,
        tid: 1,
        syscall: call.name().into(),
        call,
        path: path.map(|p| format!("{root}/{p}")),
        fd,
        ret,
        flags: (call == Call::Open).then_some(libc::O_RDONLY as u64),
        size: (call == Call::Read).then_some(4),
        ..Default::default()
    };
    let recs = vec![
        rec(1, Call::Open, Some("pipe"), None, 3),
        rec(2, Call::Read, None, Some(3), 4),
        rec(3, Call::Close, None, Some(3), 0),
        rec(4, Call::Open, Some("mine"), None, 3),
        rec(5, Call::Read, None, Some(3), 4),
        rec(6, Call::Close, None, Some(3), 0),
    ];
    let h = Header {
        version: format::VERSION,
        roots: vec![root.into()],
        source: "test".into(),
        ..Default::default()
    };
    let tr = work.path().join("fifo.trace");
    format::write_all(&tr, &h, &recs).unwrap();
    let json = work.path().join("r.json");
    let args = [
        "trace",
        "replay",
        tr.to_str().unwrap(),
        "--dir",
        work.s(),
        "--over",
        tree.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    let mut child = bin()
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the replay waited on the FIFO for 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "replay: {}", text(&o));
    let r = json_of(&json);
    assert_eq!(figure(&r, "calls_refused_special"), 1.0, "{}", text(&o));
    assert!(
        text(&o).contains("would open a FIFO, a device or a socket"),
        "{}",
        text(&o)
    );
    // The read and close on the refused open's descriptor fail; the regular file beside
    // it is opened, read and closed as recorded.
    assert_eq!(figure(&r, "failed_where_recorded_ok"), 2.0, "{}", text(&o));
    assert_eq!(figure(&r, "calls_replayed"), 5.0, "{}", text(&o));
}
