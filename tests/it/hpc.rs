//! `fsbench mdtest` and `fsbench ior` on one client: every phase's counts, the phase rates,
//! the bytes moved, clear errors for bad sizes, and nothing left behind.

use crate::common::*;

#[test]
fn mdtest_runs_every_phase_on_every_item_and_cleans_up() {
    let s = Scratch::new("mdtest");
    let work = s.path().join("work");
    std::fs::create_dir(&work).unwrap();
    for shared in [false, true] {
        let json = s.path().join("md.json");
        let mut args = vec![
            "mdtest",
            "-n",
            "200",
            "-w",
            "300",
            "-e",
            "300",
            "--dir",
            work.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ];
        if shared {
            args.push("--shared-dir");
        }
        let o = run(&args);
        assert!(o.status.success(), "{}", text(&o));
        let r = json_of(&json);
        for phase in ["create", "stat", "read", "remove"] {
            let f = flowop(&r, phase);
            assert_eq!(f["ops"], 200, "{phase}: {f}");
            assert_eq!(f["errors"], 0, "{phase}: {f}");
            assert!(r["figures"][format!("{phase}_ops_per_s")].as_f64().unwrap() > 0.0);
        }
        assert_eq!(flowop(&r, "create")["bytes"], 200 * 300);
        assert_eq!(flowop(&r, "read")["bytes"], 200 * 300);
        assert_eq!(
            std::fs::read_dir(&work).unwrap().count(),
            0,
            "nothing left behind"
        );
    }
    let o = run(&["mdtest", "-n", "0", "--dir", work.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--items must be at least 1"));
}

#[test]
fn ior_writes_and_reads_its_block_in_transfers() {
    let s = Scratch::new("ior");
    let work = s.path().join("work");
    std::fs::create_dir(&work).unwrap();
    for extra in [&[][..], &["--shared-file", "-C"][..]] {
        let json = s.path().join("ior.json");
        let mut args = vec![
            "ior",
            "-b",
            "4M",
            "-t",
            "256K",
            "--dir",
            work.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", text(&o));
        let r = json_of(&json);
        for phase in ["write", "read"] {
            let f = flowop(&r, phase);
            assert_eq!(f["ops"], 16, "{phase}: {f}");
            assert_eq!(f["bytes"], 4 << 20, "{phase}: {f}");
            assert!(r["figures"][format!("{phase}_mib_per_s")].as_f64().unwrap() > 0.0);
        }
        assert_eq!(
            std::fs::read_dir(&work).unwrap().count(),
            0,
            "nothing left behind"
        );
    }
    let o = run(&[
        "ior",
        "-b",
        "4M",
        "-t",
        "3M",
        "--dir",
        work.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("does not divide"),
        "{}",
        text(&o)
    );
}
