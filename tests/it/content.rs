//! Content hashes (`scan --hash`) and tree commonality (`diff`) on generated
//! version pairs whose commonality the test knows.

use std::path::Path;

use crate::common::{run, skip, text, Scratch};
use serde_json::Value;

/// Deterministic pseudo-random bytes (xorshift), distinct per `seed`.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn put(root: &Path, rel: &str, data: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
}

fn size_of(i: u64) -> usize {
    // 0 bytes to ~200 KiB, a few of each order of magnitude.
    [0, 1, 100, 3000, 40_000, 200_000][(i % 6) as usize] + (i as usize * 37) % 500
}

struct Expect {
    new_files: u64,
    new_bytes: u64,
    identical: (u64, u64),
    same_path: (u64, u64),
    changed: (u64, u64),
    added: (u64, u64),
    added_known: (u64, u64),
    removed: (u64, u64),
}

/// OLD: 200 files. NEW: 0..120 kept, 120..150 edited in place, 150..160 moved,
/// 160..200 removed, 25 new files.
fn make_pair(old: &Path, new: &Path) -> Expect {
    let mut e = Expect {
        new_files: 0,
        new_bytes: 0,
        identical: (0, 0),
        same_path: (0, 0),
        changed: (0, 0),
        added: (0, 0),
        added_known: (0, 0),
        removed: (0, 0),
    };
    fn add(c: &mut (u64, u64), n: usize) {
        c.0 += 1;
        c.1 += n as u64;
    }
    for i in 0..200u64 {
        let rel = format!("d{}/f{i}.c", i % 7);
        let data = bytes(i + 1, size_of(i));
        put(old, &rel, &data);
        match i {
            0..120 => {
                put(new, &rel, &data);
                add(&mut e.identical, data.len());
                add(&mut e.same_path, data.len());
                e.new_files += 1;
                e.new_bytes += data.len() as u64;
            }
            120..150 => {
                let mut d2 = data.clone();
                d2.push(b'!');
                put(new, &rel, &d2);
                add(&mut e.changed, d2.len());
                e.new_files += 1;
                e.new_bytes += d2.len() as u64;
            }
            150..160 => {
                put(new, &format!("moved/f{i}.c"), &data);
                add(&mut e.identical, data.len());
                add(&mut e.added, data.len());
                add(&mut e.added_known, data.len());
                add(&mut e.removed, data.len());
                e.new_files += 1;
                e.new_bytes += data.len() as u64;
            }
            _ => add(&mut e.removed, data.len()),
        }
    }
    for j in 0..25u64 {
        let data = bytes(1000 + j, size_of(j + 3) + 1);
        put(new, &format!("new/g{j}.rs"), &data);
        add(&mut e.added, data.len());
        e.new_files += 1;
        e.new_bytes += data.len() as u64;
    }
    e
}

fn class(v: &Value, name: &str) -> (u64, u64) {
    (
        v[name]["files"].as_u64().unwrap(),
        v[name]["bytes"].as_u64().unwrap(),
    )
}

fn check(v: &Value, e: &Expect) {
    assert_eq!(v["new_files"].as_u64(), Some(e.new_files), "{v}");
    assert_eq!(v["new_bytes"].as_u64(), Some(e.new_bytes));
    assert_eq!(v["old_files"].as_u64(), Some(200));
    assert_eq!(class(v, "identical"), e.identical);
    assert_eq!(class(v, "same_path"), e.same_path);
    assert_eq!(class(v, "changed"), e.changed);
    assert_eq!(class(v, "added"), e.added);
    assert_eq!(class(v, "added_known_content"), e.added_known);
    assert_eq!(class(v, "removed"), e.removed);
    // Size distributions add up to each class.
    for name in ["identical", "same_path", "changed", "added", "removed"] {
        let rows = v[name]["sizes"].as_array().unwrap();
        let n: u64 = rows.iter().map(|r| r["count"].as_u64().unwrap()).sum();
        let b: u64 = rows.iter().map(|r| r["sum"].as_u64().unwrap()).sum();
        assert_eq!((n, b), class(v, name), "{name}");
    }
}

#[test]
fn diff_of_directories_and_of_snapshots_gives_the_known_commonality() {
    let t = Scratch::new("content-diff");
    let (old, new) = (t.path().join("old"), t.path().join("new"));
    let e = make_pair(&old, &new);

    // Two directories, hashed on the fly (blake3).
    let o = run(&[
        "diff",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["hash"], "blake3");
    check(&v, &e);

    // Two snapshots written by scan --hash sha1.
    let (so, sn) = (t.path().join("old.snap"), t.path().join("new.snap"));
    for (d, s) in [(&old, &so), (&new, &sn)] {
        let o = run(&[
            "scan",
            d.to_str().unwrap(),
            "--hash",
            "sha1",
            "-o",
            s.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("MB/s"),
            "{}",
            text(&o)
        );
    }
    let o = run(&[
        "diff",
        so.to_str().unwrap(),
        sn.to_str().unwrap(),
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["hash"], "sha1");
    check(&v, &e);

    // Text and Markdown name the headline figures.
    let o = run(&["diff", so.to_str().unwrap(), sn.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    let files_same = 100.0 * e.identical.0 as f64 / e.new_files as f64;
    assert!(
        out.contains(&format!("files same {files_same:.1}%")),
        "{out}"
    );
    let md = t.path().join("d.md");
    let o = run(&[
        "diff",
        so.to_str().unwrap(),
        sn.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("| identical at same path | 120 |"), "{md}");

    // A snapshot against a directory: the snapshot's hash is used for the directory.
    let o = run(&[
        "diff",
        so.to_str().unwrap(),
        new.to_str().unwrap(),
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["hash"], "sha1");
    check(&v, &e);
}

#[test]
fn stored_sha1_hashes_match_sha1sum() {
    let t = Scratch::new("content-sha1");
    let root = t.path().join("tree");
    for i in 0..6u64 {
        put(&root, &format!("x/f{i}"), &bytes(i + 7, size_of(i) * 3));
    }
    let snap = t.path().join("t.snap");
    let o = run(&[
        "scan",
        root.to_str().unwrap(),
        "--hash",
        "sha1",
        "-o",
        snap.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stream = fsbench_engine::scan::snapshot::Snapshot::open(&snap).unwrap();
    assert_eq!(stream.header().hash.as_deref(), Some("sha1"));
    let mut checked = 0;
    for e in stream {
        let e = e.unwrap();
        if e.kind != fsbench_engine::scan::snapshot::Kind::File {
            assert!(e.hash.is_none());
            continue;
        }
        let ours = fsbench_engine::scan::hash::hex(e.hash.as_deref().unwrap());
        let file = root.join(e.path());
        match std::process::Command::new("sha1sum").arg(&file).output() {
            Ok(o) if o.status.success() => {
                let theirs = String::from_utf8_lossy(&o.stdout);
                assert_eq!(
                    theirs.split_whitespace().next(),
                    Some(ours.as_str()),
                    "{file:?}"
                );
                checked += 1;
            }
            _ => {
                skip("the sha1sum cross-check: sha1sum is not available");
                return;
            }
        }
    }
    assert_eq!(checked, 6);
}

#[test]
fn diff_refuses_snapshots_without_hashes_and_scan_hash_needs_a_snapshot() {
    let t = Scratch::new("content-nohash");
    put(t.path(), "d/a", b"a");
    let snap = t.path().join("plain.snap");
    let d = t.path().join("d");
    let o = run(&["scan", d.to_str().unwrap(), "-o", snap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["diff", snap.to_str().unwrap(), d.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(text(&o).contains("has no content hashes"), "{}", text(&o));
    let o = run(&["scan", d.to_str().unwrap(), "--hash"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("-o SNAPSHOT"), "{}", text(&o));
}

#[test]
fn age_next_version_has_the_requested_commonality_and_leaves_src_alone() {
    let t = Scratch::new("content-nextver");
    let src = t.path().join("src");
    for i in 0..300u64 {
        put(
            &src,
            &format!("m{}/n{}/f{i}", i % 5, i % 3),
            &bytes(i + 11, size_of(i)),
        );
    }
    let before = run(&[
        "scan",
        src.to_str().unwrap(),
        "--hash",
        "-o",
        t.path().join("b.snap").to_str().unwrap(),
    ]);
    assert!(before.status.success(), "{}", text(&before));
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for keep in [0.9, 0.53] {
        let o = run(&[
            "age",
            out.to_str().unwrap(),
            "--next-version",
            src.to_str().unwrap(),
            "--keep",
            &keep.to_string(),
            "--seed",
            "7",
            "--json",
            "-",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        let tree = r["out"].as_str().unwrap().to_string();
        assert!(tree.starts_with(out.to_str().unwrap()), "{tree}");
        // The new tree sits in a marked run directory.
        assert!(Path::new(&tree)
            .parent()
            .unwrap()
            .join(".fsbench-run")
            .exists());
        let o = run(&["diff", src.to_str().unwrap(), &tree, "--json", "-"]);
        assert!(o.status.success(), "{}", text(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let files_same =
            100.0 * v["identical"]["files"].as_f64().unwrap() / v["new_files"].as_f64().unwrap();
        let bytes_same =
            100.0 * v["identical"]["bytes"].as_f64().unwrap() / v["new_bytes"].as_f64().unwrap();
        assert!(
            (files_same - keep * 100.0).abs() < 1.0,
            "{files_same} for {keep}"
        );
        assert!(
            (bytes_same - keep * 100.0).abs() < 12.0,
            "{bytes_same} for {keep}"
        );
        assert!((files_same - r["files_same_pct"].as_f64().unwrap()).abs() < 0.01);
        assert!((bytes_same - r["bytes_same_pct"].as_f64().unwrap()).abs() < 0.01);
        assert_eq!(v["new_files"].as_u64(), Some(300));
        assert!(v["changed"]["files"].as_u64().unwrap() > 0);
        assert!(v["removed"]["files"].as_u64().unwrap() > 0);
    }
    // SRC is unchanged: same paths and contents as before.
    let o = run(&[
        "diff",
        t.path().join("b.snap").to_str().unwrap(),
        src.to_str().unwrap(),
        "--json",
        "-",
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["same_path"]["files"].as_u64(), Some(300), "{v}");
    assert_eq!(v["new_files"].as_u64(), Some(300));
    // Out of range and inside SRC are refused.
    let o = run(&[
        "age",
        out.to_str().unwrap(),
        "--next-version",
        src.to_str().unwrap(),
        "--keep",
        "1.5",
    ]);
    assert!(
        !o.status.success() && text(&o).contains("--keep 1.5"),
        "{}",
        text(&o)
    );
    let o = run(&[
        "age",
        src.join("m0").to_str().unwrap(),
        "--next-version",
        src.to_str().unwrap(),
        "--keep",
        "0.5",
    ]);
    assert!(
        !o.status.success() && text(&o).contains("inside the source tree"),
        "{}",
        text(&o)
    );
}

/// The four commonality levels of the lookaside-caching study's kernel trees (files same /
/// bytes same of Linux 2.4.17, 2.4.13, 2.4.9 and 2.4.0 against 2.4.18), made from one
/// tree with `age --next-version --keep F --keep-bytes B` and read back with one `fsbench
/// diff OLD1 OLD2 OLD3 OLD4 NEW`: files same within 0.5 points (the kept count is rounded
/// to whole files), bytes same within 1 point (the calibration stops within 0.2%).
#[test]
fn next_versions_at_the_four_paper_levels_read_back_as_the_papers_table() {
    let t = Scratch::new("content-levels");
    let src = t.path().join("src");
    // Sizes spread log-uniformly from 300 bytes to about 36 KiB (a few large files hold much
    // of the bytes, as in a source tree), in shuffled order.
    for i in 0..800u64 {
        let k = (i * 7919) % 800;
        let size = (300.0 * 1.006f64.powi(k as i32)) as usize;
        put(
            &src,
            &format!("d{}/s{}/f{i}.c", i % 7, i % 3),
            &bytes(i + 101, size),
        );
    }
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let levels = [(0.90, 0.79), (0.74, 0.52), (0.53, 0.30), (0.28, 0.13)];
    let mut olds = Vec::new();
    for (f, b) in levels {
        let o = run(&[
            "age",
            out.to_str().unwrap(),
            "--next-version",
            src.to_str().unwrap(),
            "--keep",
            &f.to_string(),
            "--keep-bytes",
            &b.to_string(),
            "--json",
            "-",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["keep_bytes"].as_f64(), Some(b));
        // The new tree has the source's files and bytes: the shares read the same both ways.
        assert_eq!(r["src_files"], 800);
        assert_eq!(
            r["kept_bytes"].as_u64().unwrap()
                + r["edited_bytes"].as_u64().unwrap()
                + r["added_bytes"].as_u64().unwrap(),
            r["src_bytes"].as_u64().unwrap()
        );
        olds.push(r["out"].as_str().unwrap().to_string());
    }
    let mut args = vec!["diff"];
    args.extend(olds.iter().map(String::as_str));
    args.extend([src.to_str().unwrap(), "--json", "-"]);
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["new_files"], 800, "{v}");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for ((f, b), (row, old)) in levels.iter().zip(rows.iter().zip(&olds)) {
        assert_eq!(row["old"].as_str(), Some(old.as_str()));
        let files = row["files_same_pct"].as_f64().unwrap();
        let bytes_same = row["bytes_same_pct"].as_f64().unwrap();
        assert!(
            (files - f * 100.0).abs() <= 0.5,
            "files same {files} for {f}"
        );
        assert!(
            (bytes_same - b * 100.0).abs() <= 1.0,
            "bytes same {bytes_same} for {b}"
        );
        // Against the uncalibrated choice: bytes same well below files same.
        assert!(bytes_same < files - 5.0, "{bytes_same} vs {files}");
    }
    // The text table: a row per OLD in the order given, with both shares.
    args.truncate(args.len() - 2);
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("files same") && table.contains("bytes same"),
        "{table}"
    );
    let at: Vec<usize> = olds
        .iter()
        .map(|p| table.find(p.as_str()).unwrap())
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{table}");
    assert!(table.contains("90.0%"), "{table}");
    // A bytes share no choice of kept files reaches is refused with the reachable range.
    let o = run(&[
        "age",
        out.to_str().unwrap(),
        "--next-version",
        src.to_str().unwrap(),
        "--keep",
        "0.9",
        "--keep-bytes",
        "0.2",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("--keep-bytes 0.2: the 720 kept files of 800 hold from"),
        "{}",
        text(&o)
    );
}
