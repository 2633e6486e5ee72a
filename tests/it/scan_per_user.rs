//! `fsbench scan --per-user`: one worker per top-level directory, the same counts as a plain
//! scan, the walk's user and system time, cold (root) and warm.

use crate::common::*;

fn json(args: &[&str]) -> serde_json::Value {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn per_user_walks_count_what_one_walk_counts() {
    let s = Scratch::new("scan-per-user");
    for u in 0..4 {
        for d in 0..3 {
            let p = s.path().join(format!("user{u}/dir{d}"));
            std::fs::create_dir_all(&p).unwrap();
            for f in 0..5 {
                std::fs::write(p.join(format!("f{f}")), vec![0u8; 512 * (f + 1)]).unwrap();
            }
        }
    }
    std::fs::write(s.path().join("README"), b"top").unwrap();
    let plain = json(&["scan", s.s(), "--json", "-"]);
    let per = json(&["scan", s.s(), "--per-user", "--json", "-"]);
    for k in ["files", "dirs", "bytes", "entries", "depth", "file_size"] {
        assert_eq!(plain[k], per[k], "{k}");
    }
    assert_eq!(per["files"], 61);
    assert_eq!(per["per_user"]["users"], 4);
    assert_eq!(per["per_user"]["workers"], 4);
    assert!(per["per_user"]["user_s"].as_f64().unwrap() >= 0.0);
    assert!(per["per_user"]["system_s"].as_f64().unwrap() >= 0.0);
    assert!(
        plain.get("per_user").is_none(),
        "a plain scan's output is unchanged"
    );
    let two = json(&["scan", s.s(), "--per-user", "-j", "2", "--json", "-"]);
    assert_eq!(two["per_user"]["workers"], 2);
    assert_eq!(two["files"], 61);
    let o = run(&["scan", s.s(), "--per-user", "-o", "/dev/null"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("--per-user measures the metadata walk and writes no snapshot"));
    if !is_root() {
        skip("per_user_walks_count_what_one_walk_counts (cold part): --cold needs root");
        return;
    }
    let cold = json(&["scan", s.s(), "--per-user", "--cold", "--json", "-"]);
    assert_eq!(cold["cold"], true);
    assert_eq!(cold["files"], 61);
}
