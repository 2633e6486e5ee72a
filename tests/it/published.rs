//! A plan's `[[published]]` figures end to end: verdicts computed from a small experiment
//! with known results, in `fsbench results` (text and JSON) and the report; the extra rounds
//! of the cells carrying them; errors located in the plan.

use crate::common::*;
use std::path::Path;

/// Two directory targets and three `find` measurements. `small` (20 files) and `big` (60)
/// count their trees' files, the same in every run: big ÷ small is exactly 61 ÷ 21 (each
/// tree has its marker file too) and b ÷ a exactly 1, with no spread. `walk` is judged by its elapsed time, which no run holds to
/// the plan's ci of ±0.01%.
fn plan(a: &Path, b: &Path) -> String {
    format!(
        r#"
[experiment]
name = "verdicts"
repetitions = {{ min = 2, max = 3, ci = 0.0001 }}

[[target]]
name = "a"
kind = "dir"
path = "{}"

[[target]]
name = "b"
kind = "dir"
path = "{}"

[factors]
target = ["a", "b"]

[[measurement]]
name = "small"
kind = "find"
params = {{ tree_files = 20, tree_dirs = 2 }}
figures = ["files"]

[[measurement]]
name = "big"
kind = "find"
params = {{ tree_files = 60, tree_dirs = 2 }}
figures = ["files"]

[[measurement]]
name = "walk"
kind = "find"
params = {{ tree_files = 20, tree_dirs = 2 }}
figures = ["elapsed_s"]

# "three times the files"
[[published]]
claim = "big has 3x the files"
figure = "files"
compare = {{ measurement = {{ big = "small" }} }}
at = {{ target = "a" }}
ratio = 3
within = 1.5

# "fewer files" (wrong on purpose)
[[published]]
claim = "big has fewer files"
figure = "files"
compare = {{ measurement = {{ big = "small" }} }}
at = {{ target = "a" }}
direction = "lower"

# "b holds more files than a" (it holds the same)
[[published]]
claim = "b has more files"
measurement = "small"
figure = "files"
compare = {{ target = {{ b = "a" }} }}
direction = "higher"

# "no measurable difference (within 1%)"
[[published]]
claim = "a and b within 1%"
measurement = "small"
figure = "files"
compare = {{ target = {{ b = "a" }} }}
ratio = 1.0
range = [0.99, 1.01]

# "a walk takes under a minute"
[[published]]
claim = "walk under a minute"
measurement = "walk"
figure = "elapsed_s"
at = {{ target = "a" }}
range = [-1, 60]
"#,
        a.display(),
        b.display()
    )
}

fn runs_of(out: &Path, cell: i64) -> i64 {
    let db = rusqlite::Connection::open(out.join("results.db")).unwrap();
    db.query_row(
        "SELECT COUNT(*) FROM runs JOIN cells ON cells.id = runs.cell_id WHERE cells.idx = ?1 AND runs.status = 'ok'",
        [cell - 1],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn published_figures_get_verdicts_and_their_cells_repeat() {
    let s = Scratch::new("published");
    let (a, b) = (s.path().join("a"), s.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let file = s.path().join("p.toml");
    std::fs::write(&file, plan(&a, &b)).unwrap();
    let p = file.to_str().unwrap();
    let dry = run(&["experiment", p, "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    let d = text(&dry);
    assert!(
        d.contains("published figures: 5 [[published]] entries judge 4 cells"),
        "{d}"
    );
    assert!(
        d.contains("up to 10 for a cell whose measured runs take under a second"),
        "{d}"
    );
    let out = s.path().join("out");
    let o = run(&["experiment", p, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    // Cells: small a, b (1, 2); big a, b (3, 4); walk a, b (5, 6). The counts converge at the
    // minimum; walk b, unpublished, stops at the plan's maximum; walk a carries a published
    // figure and runs under a second, so it goes on to 10.
    let counts: Vec<i64> = (1..=6).map(|c| runs_of(&out, c)).collect();
    assert_eq!(counts, [2, 2, 2, 2, 10, 3], "{}", text(&o));
    let r = run(&["results", out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r));
    let t = text(&r);
    assert!(t.contains("published vs ours"), "{t}");
    assert!(t.contains("big ÷ small at target=a"), "{t}");
    assert!(
        t.contains("verdicts: 3 agrees, 1 disagrees, 1 not significant"),
        "{t}"
    );
    let r = run(&["results", out.to_str().unwrap(), "--json", "-"]);
    assert_schema("summary.schema.json", &String::from_utf8_lossy(&r.stdout));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let published = v["published"].as_array().unwrap();
    let got: Vec<(&str, &str)> = published
        .iter()
        .map(|p| (p["claim"].as_str().unwrap(), p["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            ("big has 3x the files", "agrees"),
            ("big has fewer files", "disagrees"),
            ("b has more files", "not_significant"),
            ("a and b within 1%", "agrees"),
            ("walk under a minute", "agrees"),
        ]
    );
    // Each tree holds its marker file besides its files: 61 ÷ 21, in every run.
    let first = &published[0];
    let want = 61.0 / 21.0;
    for k in ["ours", "ci_low", "ci_high"] {
        assert!(
            (first[k].as_f64().unwrap() - want).abs() < 1e-9,
            "{k}: {first}"
        );
    }
    assert_eq!(
        (first["cell"].as_u64(), first["baseline_cell"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(
        (first["n"].as_u64(), first["n_baseline"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(first["published"], 3.0);
    assert_eq!(first["rule"], serde_json::json!({"within": 1.5}));
    assert_eq!(first["factor"], "measurement");
    assert_eq!(published[4]["n"], 10);
    assert!(published[4]["baseline_cell"].is_null());
    let walk_a = &v["published_rounds"]["cells"][3];
    assert_eq!(
        (walk_a["cell"].as_u64(), walk_a["max"].as_u64()),
        (Some(5), Some(10))
    );
    // The report opens with the same table.
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    let table = page.find("<h2>Published vs ours</h2>").expect("the table");
    assert!(table < page.find("<h2>small</h2>").unwrap_or(usize::MAX));
    assert!(page.contains("<tr class=\"verdict-not-significant\">"));
}

#[test]
fn an_entry_that_judges_no_cell_is_refused_with_its_place() {
    let s = Scratch::new("published-err");
    let (a, b) = (s.path().join("a"), s.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let plan_text = plan(&a, &b) + "\n[[exclude]]\nmeasurement = \"walk\"\ntarget = \"a\"\n";
    let file = s.path().join("p.toml");
    std::fs::write(&file, &plan_text).unwrap();
    let o = run(&["experiment", file.to_str().unwrap(), "--dry-run"]);
    assert!(!o.status.success());
    let line = plan_text
        .lines()
        .position(|l| l.contains("claim = \"walk under a minute\""))
        .unwrap();
    let want = format!("p.toml:{line}:1: published: no cell of the plan carries this figure");
    assert!(text(&o).contains(&want), "{}", text(&o));
}
