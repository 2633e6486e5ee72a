use super::render::render_text;
use super::*;
use crate::experiment::store::{now, CellRecord, ExperimentRecord, RunRecord};
use fsbench_results::stats::Results;
use serde_json::{json, Value};

const PLAN: &str = r#"
[experiment]
name = "x"
repetitions = { min = 2, max = 6, ci = 0.05 }
"#;

struct Db {
    dir: std::path::PathBuf,
    st: Store,
    exp: i64,
}

impl Db {
    fn new(tag: &str) -> Db {
        Db::with_baseline(tag, json!({"target": "ext4"}))
    }

    fn with_baseline(tag: &str, baseline: Value) -> Db {
        Db::with_plan(tag, baseline, PLAN)
    }

    fn with_plan(tag: &str, baseline: Value, plan: &str) -> Db {
        let dir =
            std::env::temp_dir().join(format!("fsbench-summary-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let st = Store::open(&dir).unwrap();
        let exp = st
            .new_experiment(&ExperimentRecord {
                name: "x",
                plan_file: "p.toml",
                plan_text: plan,
                plan_hash: "h",
                quick: false,
                seed: 1,
                repetitions: 2,
                noise_threshold: 0.05,
                baseline: &baseline,
            })
            .unwrap();
        Db { dir, st, exp }
    }

    fn cell(&self, idx: usize, target: &str, instances: &str) -> i64 {
        let f = json!({"measurement": "pm", "target": target, "instances": instances});
        self.st
            .cell(&CellRecord {
                experiment_id: self.exp,
                idx,
                measurement: "pm",
                kind: "postmark",
                target,
                cache: "warm",
                factors: &f,
                command: &Value::Null,
            })
            .unwrap()
    }

    fn run(&mut self, cell: i64, rep: u32, tps: f64, flags: RunFlags) {
        let mut r = Results::new(
            "postmark",
            "builtin:postmark",
            1,
            std::path::Path::new("/x"),
        );
        r.figures.insert("transactions_per_s".into(), tps);
        r.figures.insert("total_s".into(), 1000.0 / tps);
        let v = serde_json::to_value(&r).unwrap();
        self.st
            .add_run(&RunRecord {
                cell_id: cell,
                repetition: rep,
                status: "ok",
                started_at: &now(),
                elapsed_s: 1.0,
                load_avg_1: None,
                other_cpu_frac: Some(0.0),
                disturbed: false,
                error: None,
                applied: &Value::Null,
                results: Some(
                    &crate::experiment::output::ChildOutput::read(
                        crate::experiment::plan::Kind::Workload,
                        v,
                    )
                    .unwrap(),
                ),
                flags: &flags,
            })
            .unwrap();
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

#[test]
fn each_level_is_compared_with_the_cell_differing_only_in_its_factor() {
    let mut db = Db::new("cmp");
    // target × instances; overlay is slower by a different share at each instance count.
    let data: [(&str, &str, [f64; 3]); 4] = [
        ("ext4", "1", [100.0, 102.0, 98.0]),
        ("overlay", "1", [96.0, 97.0, 95.0]),
        ("ext4", "8", [400.0, 410.0, 390.0]),
        ("overlay", "8", [250.0, 260.0, 255.0]),
    ];
    let mut ids = Vec::new();
    for (i, (t, n, xs)) in data.iter().enumerate() {
        let c = db.cell(i, t, n);
        for (r, x) in xs.iter().enumerate() {
            db.run(c, r as u32, *x, RunFlags::default());
        }
        ids.push(c);
    }
    // A run that ended early, far off: left out unless asked for.
    db.run(
        ids[3],
        3,
        10.0,
        RunFlags {
            ended_early: Some("fileset exhausted".into()),
            ..Default::default()
        },
    );
    let s = summarise(&db.st).unwrap();
    let c: Vec<&Comparison> = s
        .comparisons
        .iter()
        .filter(|c| c.figure == "transactions_per_s")
        .collect();
    assert_eq!(c.len(), 2, "{c:?}");
    for (cmp, (base, lvl)) in c.iter().zip([(0, 1), (2, 3)]) {
        assert_eq!(
            (cmp.factor.as_str(), cmp.level.as_str()),
            ("target", "overlay")
        );
        assert_eq!(cmp.baseline, "ext4");
        assert_eq!(cmp.at["instances"], data[base].1);
        assert!(!cmp.at.contains_key("target"));
        let want = mean(&data[lvl].2) / mean(&data[base].2);
        assert!((cmp.ratio - want).abs() < 1e-12, "{} {want}", cmp.ratio);
        assert!(cmp.ci_low.unwrap() < want && want < cmp.ci_high.unwrap());
        assert_eq!((cmp.n, cmp.n_baseline), (3, 3));
        assert!(cmp.headline);
    }
    assert!(c[1].significant && c[1].p_value.unwrap() < 0.01);
    // The headline figures lead each cell's rows; flags are counted per cell.
    let rows: Vec<&Row> = s.rows.iter().filter(|r| r.cell == 4).collect();
    assert_eq!(rows[0].figure, "transactions_per_s");
    assert_eq!(rows[1].figure, "total_s");
    assert_eq!(
        (rows[0].n, rows[0].ended_early, rows[0].excluded),
        (3, 1, 1)
    );
    assert_eq!(rows[0].bimodal, Modality::TooFew);
    let text = render_text(&s);
    assert!(text.contains("overlay ÷ ext4"), "{text}");
    assert!(text.contains("at instances=8"), "{text}");
    assert!(text.contains("[ENDED EARLY: 1 run(s), left out]"), "{text}");
    // --include-flagged keeps the run: four values, and the ratio moves.
    let s = summarise_with(&db.st, true).unwrap();
    let r = s.rows.iter().find(|r| r.cell == 4).unwrap();
    assert_eq!((r.n, r.excluded), (4, 0));
    let cmp = s
        .comparisons
        .iter()
        .find(|c| c.figure == "transactions_per_s" && c.cell == 4)
        .unwrap();
    assert_eq!(cmp.n, 4);
    assert!(cmp.ratio < 0.5);
    // A cell whose every run is flagged still shows, with why it has no figures.
    let c = db.cell(4, "btrfs", "1");
    db.run(
        c,
        0,
        10.0,
        RunFlags {
            ended_early: Some("fileset exhausted".into()),
            ..Default::default()
        },
    );
    let s = summarise(&db.st).unwrap();
    assert_eq!(s.empty_cells.len(), 1);
    assert_eq!(
        (s.empty_cells[0].cell, s.empty_cells[0].ended_early),
        (5, 1)
    );
    assert!(render_text(&s).contains("cell 5: measurement=pm target=btrfs instances=1  no figures: 0 run(s) failed, 1 left out as flagged (1 ended early"));
}

#[test]
fn bimodal_cells_and_adaptive_convergence_are_reported() {
    let mut db = Db::new("modes");
    let a = db.cell(0, "ext4", "1");
    for (r, x) in [92.0, 26.0, 97.0, 24.0, 95.0, 28.0].iter().enumerate() {
        db.run(a, r as u32, *x, RunFlags::default());
    }
    let b = db.cell(1, "overlay", "1");
    for (r, x) in [50.0, 50.5, 49.5].iter().enumerate() {
        db.run(b, r as u32, *x, RunFlags::default());
    }
    let s = summarise(&db.st).unwrap();
    let row = |c: usize| {
        s.rows
            .iter()
            .find(|r| r.cell == c && r.figure == "transactions_per_s")
            .unwrap()
    };
    match &row(1).bimodal {
        Modality::Bimodal(m) => {
            assert!((m.low_mean - 26.0).abs() < 1e-9 && (m.high_mean - 94.666).abs() < 0.01)
        }
        o => panic!("{o:?}"),
    }
    let text = render_text(&s);
    assert!(
        text.contains("bimodal? 26.00/s (n=3) | 94.67/s (n=3)"),
        "{text}"
    );
    let a = s.adaptive.as_ref().unwrap();
    assert_eq!((a.min, a.max, a.ci), (2, 6, 0.05));
    assert_eq!(a.reached, [2]);
    assert_eq!(a.not_reached, [1]);
    assert!(render_text(&s).contains("1 of 2 cells reached ±5%"));
}

#[test]
fn several_baseline_factors_give_a_comparison_each() {
    let mut db = Db::with_baseline("two", json!({"target": "ext4", "instances": "1"}));
    let cells = [
        ("ext4", "1"),
        ("overlay", "1"),
        ("ext4", "8"),
        ("overlay", "8"),
    ];
    for (i, (t, n)) in cells.iter().enumerate() {
        let c = db.cell(i, t, n);
        for r in 0..2 {
            db.run(c, r, 100.0 * (i + 1) as f64 + r as f64, RunFlags::default());
        }
    }
    let s = summarise(&db.st).unwrap();
    let tps: Vec<(&str, &str, &str)> = s
        .comparisons
        .iter()
        .filter(|c| c.figure == "transactions_per_s")
        .map(|c| {
            let other = if c.factor == "target" {
                "instances"
            } else {
                "target"
            };
            (c.factor.as_str(), c.level.as_str(), c.at[other].as_str())
        })
        .collect();
    // instances 8 ÷ 1 on each target; overlay ÷ ext4 at each instance count.
    assert_eq!(tps.len(), 4, "{tps:?}");
    for want in [
        ("instances", "8", "ext4"),
        ("instances", "8", "overlay"),
        ("target", "overlay", "1"),
        ("target", "overlay", "8"),
    ] {
        assert!(tps.contains(&want), "{want:?} not in {tps:?}");
    }
    let t: Vec<&Comparison> = s
        .comparisons
        .iter()
        .filter(|c| c.factor == "target" && c.figure == "transactions_per_s")
        .collect();
    assert_eq!(t.len(), 2);
    assert!(render_text(&s).contains("compared with instances = 1"));
    assert!(render_text(&s).contains("compared with target = ext4"));
}

#[test]
fn compare_pairs_add_the_comparisons_the_baseline_lacks() {
    let plan = r#"
[experiment]
name = "x"
repetitions = 2
baseline = { target = "ext4" }
compare = { target = { overlay = "ext4", ovl-xfs = "xfs" } }
"#;
    let mut db = Db::with_plan("pairs", json!({"target": "ext4"}), plan);
    let targets = ["ext4", "overlay", "xfs", "ovl-xfs"];
    for (i, t) in targets.iter().enumerate() {
        let c = db.cell(i, t, "1");
        for r in 0..3 {
            db.run(c, r, 100.0 * (i + 1) as f64 + r as f64, RunFlags::default());
        }
    }
    let s = summarise(&db.st).unwrap();
    let tps: Vec<(&str, &str)> = s
        .comparisons
        .iter()
        .filter(|c| c.figure == "transactions_per_s")
        .map(|c| (c.level.as_str(), c.baseline.as_str()))
        .collect();
    // Every target against ext4, then ovl-xfs against xfs; overlay ÷ ext4 once.
    assert_eq!(
        tps,
        [
            ("overlay", "ext4"),
            ("xfs", "ext4"),
            ("ovl-xfs", "ext4"),
            ("ovl-xfs", "xfs")
        ]
    );
    let pair = s
        .comparisons
        .iter()
        .find(|c| c.figure == "transactions_per_s" && c.baseline == "xfs")
        .unwrap();
    // Means 401 and 301: the ratio of the two cells' means.
    assert!((pair.ratio - 401.0 / 301.0).abs() < 1e-12, "{}", pair.ratio);
    assert_eq!((pair.cell, pair.baseline_cell), (4, 3));
    assert!(pair.significant);
    let text = render_text(&s);
    assert!(text.contains("compared with target = xfs"), "{text}");
    assert!(text.contains("ovl-xfs ÷ xfs"), "{text}");
}

/// A plan with a published figure of each verdict (the data of [`published_db`]).
const PUBLISHED_PLAN: &str = r#"
[experiment]
name = "x"
repetitions = 3
baseline = { target = "ext4" }

[[published]]
claim = "overlay costs a third at 8"
measurement = "pm"
figure = "transactions_per_s"
compare = { target = { overlay = "ext4" } }
at = { instances = 8 }
ratio = 0.6
within = 1.5

[[published]]
claim = "overlay is faster at 8"
measurement = "pm"
figure = "transactions_per_s"
compare = { target = { overlay = "ext4" } }
at = { instances = 8 }
direction = "higher"

[[published]]
claim = "overlay costs a fifth at 1"
measurement = "pm"
figure = "transactions_per_s"
compare = { target = { overlay = "ext4" } }
at = { instances = 1 }
ratio = 0.8
within = 1.5

[[published]]
claim = "within 1% at 1"
measurement = "pm"
figure = "transactions_per_s"
compare = { target = { overlay = "ext4" } }
at = { instances = 1 }
ratio = 1.0
range = [0.99, 1.01]

[[published]]
claim = "ext4 at 8: 400 tps"
measurement = "pm"
figure = "transactions_per_s"
at = { target = "ext4", instances = 8 }
value = 400
within = 1.1

[[published]]
claim = "at 4"
measurement = "pm"
figure = "transactions_per_s"
compare = { target = { overlay = "ext4" } }
at = { instances = 4 }
direction = "lower"

[[published]]
claim = "merged"
measurement = "pm"
figure = "total_s"
compare = { target = { merged = "ext4" } }
ratio = 1.8
within = 1.5
pending = "a merged overlay target"
"#;

/// Stored runs for [`PUBLISHED_PLAN`]: overlay at a third less than ext4 at 8 instances,
/// overlay noisy around ext4's mean at 1.
fn published_db(tag: &str) -> Db {
    let mut db = Db::with_plan(tag, json!({"target": "ext4"}), PUBLISHED_PLAN);
    let data: [(&str, &str, [f64; 3]); 4] = [
        ("ext4", "1", [100.0, 102.0, 98.0]),
        ("overlay", "1", [80.0, 120.0, 100.0]),
        ("ext4", "8", [400.0, 410.0, 390.0]),
        ("overlay", "8", [250.0, 260.0, 255.0]),
    ];
    for (i, (t, n, xs)) in data.iter().enumerate() {
        let c = db.cell(i, t, n);
        for (r, x) in xs.iter().enumerate() {
            db.run(c, r as u32, *x, RunFlags::default());
        }
    }
    db
}

/// Published figures are judged from the stored runs by their rules: one agrees, one
/// disagrees, one is not significant, a claim of no difference is inconclusive, a cell's
/// value agrees, and entries no cell carries are not measured.
#[test]
fn published_figures_get_computed_verdicts() {
    let db = published_db("published");
    let s = summarise(&db.st).unwrap();
    let verdicts: Vec<(&str, Verdict)> = s
        .published
        .iter()
        .map(|p| (p.claim.as_str(), p.verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("overlay costs a third at 8", Verdict::Agrees),
            ("overlay is faster at 8", Verdict::Disagrees),
            ("overlay costs a fifth at 1", Verdict::NotSignificant),
            ("within 1% at 1", Verdict::Inconclusive),
            ("ext4 at 8: 400 tps", Verdict::Agrees),
            ("at 4", Verdict::NotMeasured),
            ("merged", Verdict::NotMeasured),
        ]
    );
    let first = &s.published[0];
    assert_eq!((first.cell, first.baseline_cell), (Some(4), Some(3)));
    assert!((first.ours.unwrap() - 255.0 / 400.0).abs() < 1e-12);
    assert!(first.ci_low.unwrap() < 0.6375 && 0.6375 < first.ci_high.unwrap());
    let text = render_text(&s);
    assert!(text.contains("published vs ours"), "{text}");
    assert!(text.contains("overlay ÷ ext4 at instances=8"), "{text}");
    assert!(
        text.contains(
            "verdicts: 2 agrees, 1 disagrees, 1 not significant, 1 inconclusive, 2 not measured"
        ),
        "{text}"
    );
}

/// The cells carrying a published figure repeat until ±5% (sub-second ones up to 10
/// rounds), and `--json` carries every verdict with its numbers.
#[test]
fn published_rounds_and_json() {
    let db = published_db("published-json");
    let s = summarise(&db.st).unwrap();
    // Every cell carrying a published figure repeats until ±5%, sub-second ones up to 10.
    let rounds = s.published_rounds.as_ref().unwrap();
    assert_eq!((rounds.min, rounds.max, rounds.ci), (3, 3, 0.05));
    let carried: Vec<usize> = rounds.cells.iter().map(|c| c.cell).collect();
    assert_eq!(carried, [1, 2, 3, 4]);
    let state: Vec<(bool, Option<f64>, u32)> = rounds
        .cells
        .iter()
        .map(|c| (c.reached, c.seconds, c.max))
        .collect();
    // Cells 1 (100, 102, 98) and 4 (250, 260, 255) are within ±5% at n = 3, 2 and 3 not;
    // the runs measured nothing long.
    assert_eq!(
        state,
        [
            (true, Some(0.0), 10),
            (false, Some(0.0), 10),
            (false, Some(0.0), 10),
            (true, Some(0.0), 10)
        ]
    );
    let v = serde_json::to_value(&s).unwrap();
    let p = &v["published"][0];
    let mut keys: Vec<&str> = p.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "at",
            "baseline",
            "baseline_cell",
            "cell",
            "ci_high",
            "ci_low",
            "claim",
            "factor",
            "figure",
            "level",
            "line",
            "measurement",
            "n",
            "n_baseline",
            "ours",
            "pending",
            "published",
            "rule",
            "verdict",
            "why"
        ]
    );
    assert_eq!(p["verdict"], "agrees");
    assert_eq!(p["rule"], json!({"within": 1.5}));
    assert_eq!(p["at"], json!({"instances": "8"}));
    assert_eq!(v["published"][1]["rule"], json!({"direction": "higher"}));
    assert_eq!(v["published"][3]["rule"], json!({"range": [0.99, 1.01]}));
    assert_eq!(v["published"][2]["verdict"], "not_significant");
    assert_eq!(v["published"][6]["pending"], "a merged overlay target");
    assert_eq!(v["published_rounds"]["sub_second_max"], 10);
}

#[test]
fn a_single_run_has_no_interval_and_says_so() {
    let mut db = Db::new("single");
    let a = db.cell(0, "ext4", "1");
    db.run(a, 0, 250.0, RunFlags::default());
    let text = render_text(&summarise(&db.st).unwrap());
    assert!(text.starts_with("experiment x: adaptive"), "{text}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("transactions_per_s *"))
        .unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[2..6], ["250.0/s", "-", "-", "1"], "{row}");
}
