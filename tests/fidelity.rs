//! Filebench fidelity: runs end, count and pick where Filebench's rules say they do.
mod common;
use common::*;
use serde_json::Value;

fn run_wl(dir: &Scratch, body: &str, extra: &[&str]) -> (Value, String) {
    let f = dir.path().join("w.f");
    std::fs::write(&f, body).unwrap();
    let json = dir.path().join("r.json");
    let mut args = vec![
        "run",
        f.to_str().unwrap(),
        "--dir",
        dir.s(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (v, text(&o))
}

fn flowop<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no flowop {name} in {v}"))
}

const CREATE: &str =
    "define fileset name=f,path=\"/tmp\",entries=20,dirwidth=5,filesize=1k,prealloc=0
define process name=p {
  thread name=t {
    flowop createfile name=c1,filesetname=f
    flowop closefile name=x1
  }
}
run 30
";

#[test]
fn fileset_exhaustion_ends_the_run_and_names_the_flowop() {
    // Filebench (flowop.c): FILEBENCH_NORSC ends the thread and, outside alldone mode,
    // the run. 20 absent entries allow exactly 20 creates; the 21st ends the run.
    let dir = Scratch::new("exhaust");
    let (v, _) = run_wl(&dir, CREATE, &[]);
    assert_eq!(flowop(&v, "c1")["ops"], 20, "{v}");
    assert_eq!(flowop(&v, "x1")["ops"], 20, "{v}");
    assert_eq!(flowop(&v, "c1")["no_resource"], 1, "{v}");
    assert!(v["duration_s"].as_f64().unwrap() < 20.0, "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("c1") && notes.contains("exhausted"),
        "{notes}"
    );
}

#[test]
fn continue_when_exhausted_keeps_counting() {
    let dir = Scratch::new("exhaust-go-on");
    let body = CREATE.replace("run 30", "run 1");
    let (v, _) = run_wl(&dir, &body, &["--continue-when-exhausted"]);
    assert_eq!(flowop(&v, "c1")["ops"], 20, "{v}");
    assert!(flowop(&v, "c1")["no_resource"].as_u64().unwrap() > 1, "{v}");
    assert!(v["duration_s"].as_f64().unwrap() >= 0.9, "{v}");
}

#[test]
fn io_summary_counts_fsync_and_listdir_but_listdir_is_not_a_read() {
    // Filebench (flowop_library.c, stats.c): fsync and listdir are FLOW_TYPE_IO, so the
    // IO summary sums them; rd/wr count FLOW_ATTR_READ/WRITE flowops only.
    let dir = Scratch::new("summary");
    let body = "define fileset name=f,path=\"/tmp\",entries=4,dirwidth=2,filesize=16k,prealloc=100
define process name=p {
  thread name=t {
    flowop write name=w1,filesetname=f,iosize=4k
    flowop fsync name=s1
    flowop listdir name=l1,filesetname=f
  }
}
run 1
";
    let (v, _) = run_wl(&dir, body, &[]);
    let c = |n: &str| flowop(&v, n)["ops"].as_u64().unwrap();
    let (w, s, l) = (c("w1"), c("s1"), c("l1"));
    assert!(w > 0 && s > 0 && l > 0, "{v}");
    let sum = &v["summary"];
    assert_eq!(sum["ops"].as_u64().unwrap(), w + s + l, "{v}");
    let d = v["duration_s"].as_f64().unwrap();
    let rd = sum["read_ops_per_s"].as_f64().unwrap();
    assert!(rd * d < 0.5, "listdir counted as a read: {v}");
    assert_eq!(flowop(&v, "s1")["io_class"], "meta");
}
