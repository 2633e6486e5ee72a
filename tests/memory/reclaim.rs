//! The kernel's proactive reclaim (DAMON) paused for an experiment that asks for it.

use crate::common::*;

/// `proactive_reclaim = "pause"`: the kernel's DAMON reclaimers are off while the runs are
/// measured (each run's host facts name none) and on again after the experiment. Needs root
/// and a DAMON pageout scheme running, as on the machine the studies ran on. In this
/// program, alone: an experiment beside it that pauses and resumes the reclaimers too would
/// turn them on again under it.
#[test]
fn proactive_reclaim_is_paused_for_the_experiment_and_resumed() {
    use fsbench_base::sys::damon;
    let _alone = crate::alone();
    if !is_root() {
        skip("skipping proactive_reclaim_is_paused_for_the_experiment_and_resumed: needs root");
        return;
    }
    let before = damon::reclaimers();
    if before.is_empty() {
        skip("skipping proactive_reclaim_is_paused_for_the_experiment_and_resumed: no DAMON reclaimer runs on this machine");
        return;
    }
    let s = Scratch::new("exp-damon");
    let target = s.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let plan = format!(
        r#"
[experiment]
name = "damon"
repetitions = 1
proactive_reclaim = "pause"

[[target]]
name = "here"
kind = "dir"
path = "{}"

[[measurement]]
name = "walk"
kind = "find"
params = {{ tree_files = 50, tree_dirs = 5 }}
"#,
        target.display()
    );
    let p = write_plan(s.path(), "p.toml", &plan);
    let out = s.path().join("out");
    let o = run(&["experiment", &p, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("paused the kernel's proactive reclaim"),
        "{}",
        text(&o)
    );
    let mut runs = 0;
    for e in std::fs::read_dir(out.join("runs")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".json") {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap();
        assert_eq!(v["host"]["proactive_reclaim"], "", "{name}: {}", v["host"]);
        runs += 1;
    }
    assert!(runs > 0, "no run's JSON in {}", out.display());
    assert_eq!(
        damon::reclaimers(),
        before,
        "the reclaimers after the experiment"
    );
}
