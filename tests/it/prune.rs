//! `fsbench prune` on real trees: the policy's choice, the refusal to delete outside a
//! directory fsbench made or the one named with --really-delete-under, and files that are no
//! longer what the snapshot saw (a symbolic link, a replaced file, a linked directory).

use crate::common::*;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Files `f0..f5` in `d0` and `d1`, sizes 8 KiB × (i + 1), modified i days ago.
fn tree(root: &Path) {
    for d in 0..2 {
        std::fs::create_dir_all(root.join(format!("d{d}"))).unwrap();
    }
    for i in 0..6u64 {
        let p = root.join(format!("d{}/f{i}", i % 2));
        std::fs::write(&p, vec![7u8; 8192 * (i as usize + 1)]).unwrap();
        let t = SystemTime::now() - Duration::from_secs(86400 * (i + 1));
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_times(std::fs::FileTimes::new().set_modified(t))
            .unwrap();
    }
}

fn scan(root: &Path, snap: &Path) {
    let o = run(&["scan", root.to_str().unwrap(), "-o", snap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
}

fn left(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = tree_listing(root).into_iter().map(|(p, _)| p).collect();
    v.sort();
    v
}

#[test]
fn refuses_a_tree_fsbench_did_not_make_unless_told_where() {
    let s = Scratch::new("prune-refuse");
    let root = s.path().join("home");
    tree(&root);
    let snap = s.path().join("home.snap");
    scan(&root, &snap);
    let before = left(&root);
    let o = run(&["prune", snap.to_str().unwrap(), "--free", "1M"]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.contains("is not inside a directory fsbench created and marked"),
        "{t}"
    );
    assert!(t.contains("--really-delete-under"), "{t}");
    assert_eq!(left(&root), before, "nothing deleted");
    // A directory named that does not hold the tree is no permission either.
    let other = s.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let o = run(&[
        "prune",
        snap.to_str().unwrap(),
        "--free",
        "1M",
        "--really-delete-under",
        other.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("is not beneath --really-delete-under"), "{t}");
    assert_eq!(left(&root), before);
}

#[test]
fn policies_choose_and_delete_until_enough_is_freed() {
    let s = Scratch::new("prune-policy");
    for (policy, free, gone) in [
        // Largest first: f5 (48 KiB) and f4 (40 KiB) hold 88 KiB >= 80 KiB.
        ("largest", "80K", vec!["d0/f4", "d1/f5"]),
        // Oldest first: f5, f4, f3 were modified 6, 5, 4 days ago.
        ("oldest", "100K", vec!["d0/f4", "d1/f3", "d1/f5"]),
        ("smallest", "20K", vec!["d0/f0", "d1/f1"]),
    ] {
        let root = s.path().join(policy);
        tree(&root);
        let snap = s.path().join(format!("{policy}.snap"));
        scan(&root, &snap);
        let before = left(&root);
        let json = s.path().join(format!("{policy}.json"));
        let o = run(&[
            "prune",
            snap.to_str().unwrap(),
            "--free",
            free,
            "--policy",
            policy,
            "--really-delete-under",
            root.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let after = left(&root);
        let deleted: Vec<&str> = before
            .iter()
            .filter(|p| !after.contains(p))
            .map(|p| p.as_str())
            .collect();
        assert_eq!(deleted, gone, "{policy}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["figures"]["files_deleted"], gone.len() as f64, "{v}");
        assert!(v["figures"]["user_s"].is_number() && v["figures"]["system_s"].is_number());
    }
}

#[test]
fn links_and_replaced_files_are_not_deleted() {
    let s = Scratch::new("prune-links");
    let root = s.path().join("t");
    tree(&root);
    let outside = s.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("precious"), b"keep me").unwrap();
    for i in [0, 2, 4] {
        std::fs::write(outside.join(format!("f{i}")), b"keep me too").unwrap();
    }
    let snap = s.path().join("t.snap");
    scan(&root, &snap);
    // f5 becomes a link to a file outside; f3 is replaced by a file of the same size; d0
    // (f0, f2, f4) becomes a link to a directory outside holding files of those names.
    let f5 = root.join("d1/f5");
    std::fs::remove_file(&f5).unwrap();
    std::os::unix::fs::symlink(outside.join("precious"), &f5).unwrap();
    let f3 = root.join("d1/f3");
    std::fs::remove_file(&f3).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&f3, vec![7u8; 8192 * 4]).unwrap();
    std::fs::rename(root.join("d0"), s.path().join("d0-moved")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("d0")).unwrap();
    let json = s.path().join("p.json");
    let o = run(&[
        "prune",
        snap.to_str().unwrap(),
        "--free",
        "1G",
        "--really-delete-under",
        root.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::symlink_metadata(&f5)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(outside.join("precious")).unwrap(), b"keep me");
    assert!(f3.exists(), "the replaced file stays");
    for i in [0, 2, 4] {
        assert!(
            outside.join(format!("f{i}")).exists(),
            "nothing through the linked d0"
        );
    }
    // Only d1/f1 was still the file the snapshot saw.
    assert!(!root.join("d1/f1").exists());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let f = &v["figures"];
    assert_eq!(f["files_deleted"], 1.0, "{v}");
    assert_eq!(f["skipped_changed"], 2.0, "{v}");
    // The three files under the linked directory could not be reached beneath the root.
    assert_eq!(f["delete_errors"], 3.0, "{v}");
}

#[test]
fn a_tree_of_its_own_in_a_run_directory() {
    let s = Scratch::new("prune-own");
    let json = s.path().join("o.json");
    let o = run(&[
        "prune",
        "--dir",
        s.s(),
        "--files",
        "300",
        "--dirs",
        "6",
        "--file-size",
        "8K",
        "--free",
        "1M",
        "--policy",
        "random",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let freed = v["figures"]["freed_bytes"].as_f64().unwrap();
    assert!(freed >= 1048576.0, "{v}");
    let n = v["figures"]["files_deleted"].as_f64().unwrap();
    assert!(n > 50.0 && n < 300.0, "{v}");
    // The run directory is gone afterwards; only the JSON is left.
    let names: Vec<_> = std::fs::read_dir(s.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("o.json")]);
}
