//! Traces on the real binary: record real programs under strace, replay them in every mode
//! on tmpfs and on ext4, and check that every call that succeeded in the recording succeeds
//! in the replay and that the replayed tree ends as the original did (names and sizes).
//! Recording needs strace; ext4 needs root and loop devices. Each says so and skips without.

mod common;
use common::*;
use fsbench::trace::format::{self, Call, EntryKind, Header, Initial, Record};
use std::path::{Path, PathBuf};
use std::process::Command;

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool} >/dev/null")])
        .status()
        .is_ok_and(|s| s.success())
}

fn json_of(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

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
