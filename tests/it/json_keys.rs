//! The JSON every measuring command writes keeps its fields while the code behind it is
//! restructured: each command runs once at a tiny scale with `--json`, and the set of field
//! paths it wrote (`flowops[].latency_us.p99`, ...) is compared with the one recorded in
//! `tests/json-keys/COMMAND.txt`. A deliberate change of fields updates those files:
//! `FSBENCH_BLESS=1 cargo test --test it json_keys` writes them anew (review the diff).

use crate::common::*;
use std::collections::BTreeSet;
use std::path::Path;

/// The field paths of a JSON value: objects by key, arrays as `[]`. The keys of maps whose
/// keys are data (variables, figures, ...) are the data's, so those maps count as one path.
fn paths(v: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
    const DATA_MAPS: &[&str] = &["variables", "figures", "by_kind", "by_size", "counts"];
    match v {
        serde_json::Value::Object(m) => {
            let last = prefix.rsplit('.').next().unwrap_or("");
            if DATA_MAPS.contains(&last) {
                out.insert(format!("{prefix}{{}}"));
                return;
            }
            for (k, v) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(p.clone());
                paths(v, &p, out);
            }
        }
        serde_json::Value::Array(a) => {
            for v in a {
                paths(v, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// Run `fsbench ARGS --json FILE` and return its field paths, one a line.
fn keys_of(args: &[&str], json: &Path) -> String {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--json", json.to_str().unwrap()]);
    let o = run(&all);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let mut set = BTreeSet::new();
    paths(&v, "", &mut set);
    set.into_iter().map(|p| p + "\n").collect()
}

/// Fields written only when they have something to say (an error, a note, a simulated disk,
/// a git checkout): their presence depends on the run, not on the code, so they are not
/// compared.
const OPTIONAL: &[&str] = &[
    "notes",
    "flowops[].first_error",
    "build.git_commit",
    "build.git_modified",
    "disk",
    "figures",
    "repetitions",
    "ranks",
    "hosts",
    // Only when a timed run ended before its duration, and only on a block device.
    "ended_early",
    "device_read_bytes",
    // Only when another process dropped the kernel's caches during the measurement.
    "caches_dropped_elsewhere",
];

fn optional(path: &str) -> bool {
    OPTIONAL.iter().any(|o| {
        path == *o
            || path.starts_with(&format!("{o}."))
            || path.starts_with(&format!("{o}[]"))
            || path.starts_with(&format!("{o}{{"))
    })
}

/// Compare with (or, with FSBENCH_BLESS set, write) `tests/json-keys/NAME.txt`.
fn check(name: &str, keys: &str) {
    let keys: String = keys
        .lines()
        .filter(|k| !optional(k))
        .map(|k| format!("{k}\n"))
        .collect();
    let keys = keys.as_str();
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/json-keys")
        .join(format!("{name}.txt"));
    if std::env::var_os("FSBENCH_BLESS").is_some() {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, keys).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e} (FSBENCH_BLESS=1 writes it)", file.display()));
    let have: BTreeSet<&str> = keys.lines().collect();
    let was: BTreeSet<&str> = want.lines().collect();
    let gone: Vec<_> = was.difference(&have).collect();
    let new: Vec<_> = have.difference(&was).collect();
    assert!(
        gone.is_empty() && new.is_empty(),
        "the JSON of `{name}` changed its fields:\n  gone: {gone:?}\n  new: {new:?}\n\
         (a deliberate change: FSBENCH_BLESS=1 cargo test --test it json_keys, and say so)"
    );
}

/// A small tree of files to walk and read.
fn tree(dir: &Path) {
    for d in 0..3 {
        let sub = dir.join(format!("d{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..5 {
            std::fs::write(sub.join(format!("f{f}")), vec![b'x'; 1000 * (f + 1)]).unwrap();
        }
    }
}

#[test]
fn workload_runs_keep_their_fields() {
    let d = Scratch::new("json-run");
    let j = d.path().join("r.json");
    let k = keys_of(
        &[
            "run",
            "fileserver",
            "-s",
            "nfiles=50",
            "-s",
            "nthreads=2",
            "--dir",
            d.s(),
            "--duration",
            "1",
            "-q",
        ],
        &j,
    );
    check("run", &k);
}

#[test]
fn application_benchmarks_keep_their_fields() {
    let d = Scratch::new("json-apps");
    let j = d.path().join("a.json");
    let cfg = d.path().join("pm.cfg");
    std::fs::write(
        &cfg,
        format!(
            "set location {}\nset number 50\nset transactions 200\nrun\n",
            d.s()
        ),
    )
    .unwrap();
    check(
        "postmark",
        &keys_of(&["postmark", cfg.to_str().unwrap()], &j),
    );
    check(
        "andrew",
        &keys_of(
            &["andrew", "--copies", "2", "--no-compile", "--dir", d.s()],
            &j,
        ),
    );
    check(
        "build",
        &keys_of(
            &["build", "--files", "20", "--cpu-ms", "0", "--dir", d.s()],
            &j,
        ),
    );
    check(
        "mdtest",
        &keys_of(&["mdtest", "-n", "20", "--dir", d.s()], &j),
    );
    check(
        "ior",
        &keys_of(&["ior", "-b", "1M", "-t", "64k", "--dir", d.s()], &j),
    );
    let t = d.path().join("tree");
    tree(&t);
    check("find", &keys_of(&["find", t.to_str().unwrap()], &j));
    check(
        "prune",
        &keys_of(
            &["prune", "--dir", d.s(), "--files", "20", "--free", "64K"],
            &j,
        ),
    );
    check("read", &keys_of(&["read", t.to_str().unwrap()], &j));
}

#[test]
fn scans_layouts_and_replays_keep_their_fields() {
    let d = Scratch::new("json-scan");
    let j = d.path().join("s.json");
    let t = d.path().join("tree");
    tree(&t);
    check("scan", &keys_of(&["scan", t.to_str().unwrap()], &j));
    check("layout", &keys_of(&["layout", t.to_str().unwrap()], &j));
    let ts = t.to_str().unwrap();
    check("diff", &keys_of(&["diff", ts, ts], &j));
    check("diff-table", &keys_of(&["diff", ts, ts, ts], &j));
    if std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
    {
        return skip("strace is not installed: trace replay's fields are not checked");
    }
    let tr = d.path().join("cp.trace");
    let o = bin()
        .args(["trace", "record", "-o", tr.to_str().unwrap(), "--root"])
        .arg(&t)
        .args(["--", "cp", "d0/f1", "d0/copy"])
        .current_dir(&t)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let r = d.path().join("replay");
    std::fs::create_dir(&r).unwrap();
    check(
        "trace-replay",
        &keys_of(
            &[
                "trace",
                "replay",
                tr.to_str().unwrap(),
                "--dir",
                r.to_str().unwrap(),
            ],
            &j,
        ),
    );
}

#[test]
fn aging_keeps_its_fields() {
    let img = match LoopExt4::new("json-age", 64) {
        Ok(i) => i,
        Err(why) => return skip(&format!("aging's fields are not checked: {why}")),
    };
    let j = img.scratch.path().join("age.json");
    check(
        "age",
        &keys_of(
            &[
                "age",
                img.path().to_str().unwrap(),
                "--fill",
                "0.3",
                "--ops",
                "200",
                "--seed",
                "3",
                "--quiet",
            ],
            &j,
        ),
    );
}
