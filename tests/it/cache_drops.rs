//! Caches dropped by another process while a measurement runs, on the real binary. Its
//! background command drops the machine's caches every half second for about three
//! seconds, beside the tests running at the same time: few enough drops that their cold
//! and warm cells keep their meaning (a warm cell beside it is marked, as this test checks,
//! and a cold one only reads from its device again).

use crate::common::*;
use serde_json::Value;

/// A plan's background command that drops the kernel's caches beside a warm cell: the
/// measuring child counts the drops it did not make, its results and notes say so, and the
/// runner marks the run disturbed, with the count in its flags and the summary's line.
#[test]
fn caches_dropped_by_another_process_mark_the_run_disturbed() {
    if !root_or_skip_because(
        "caches_dropped_by_another_process_mark_the_run_disturbed",
        "it drops the kernel\'s caches",
    ) {
        return;
    }
    let s = Scratch::new("val-dropped");
    let target = s.path().join("t");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(
        s.path().join("nap.f"),
        "define process name=sleeper,instances=1\n{\n  thread name=napper,memsize=1m,instances=1\n  {\n    flowop delay name=nap,value=1\n  }\n}\nrun 60\n",
    )
    .unwrap();
    let plan = s.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
[experiment]
name = "dropped"
repetitions = 2

[[target]]
name = "here"
kind = "dir"
path = "{}"

[factors]
cache = ["warm"]

[[background]]
name = "dropper"
factor = "load"
kind = "command"
command = ["sh", "-c", "sleep 0.5; echo 3 > /proc/sys/vm/drop_caches"]
restart = true

[[measurement]]
name = "nap"
kind = "workload"
params = {{ workload = "nap.f", duration = 1.5 }}
factors = {{ load = ["dropper"] }}
"#,
            target.display()
        ),
    )
    .unwrap();
    let out = s.path().join("out");
    experiment_ok(&plan, &out);
    let db = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let mut q = db
        .prepare("SELECT results_json, flags_json FROM runs WHERE status = 'ok' ORDER BY id")
        .unwrap();
    let runs: Vec<(Value, Value)> = q
        .query_map([], |r| {
            let (a, b): (String, String) = (r.get(0)?, r.get(1)?);
            Ok((
                serde_json::from_str(&a).unwrap(),
                serde_json::from_str(&b).unwrap(),
            ))
        })
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(runs.len(), 2);
    for (results, flags) in &runs {
        let n = flags["caches_dropped_elsewhere"].as_u64();
        assert!(n.is_some_and(|n| n >= 1), "{flags}");
        assert_eq!(results["caches_dropped_elsewhere"].as_u64(), n);
        assert!(
            results["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n.as_str().unwrap().contains("another process dropped")),
            "{}",
            results["notes"]
        );
    }
    let disturbed: i64 = db
        .query_row(
            "SELECT SUM(disturbed) FROM runs WHERE status = 'ok'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(disturbed, 2);
    let o = run(&["results", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("[CACHES DROPPED ELSEWHERE: 2 run(s), by another process]"),
        "{}",
        text(&o)
    );
}
