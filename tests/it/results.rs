//! `fsbench results` as a person reads it and as a script reads it: figures in their units
//! with the headline ones first, a `shape` column that says what it judges, plan choices as
//! the plan spells them; every run as a tidy row for pandas (CSV and JSON).

use crate::common::*;
use std::path::{Path, PathBuf};

/// A plan for an existing directory (no root needed): PostMark and a `find`, warm, two
/// rounds.
fn dir_plan(target: &Path) -> String {
    format!(
        r#"
[experiment]
name = "readable"
repetitions = 2
order = "interleaved"

[[target]]
name = "here"
kind = "dir"
path = "{}"

[[measurement]]
name = "pm"
kind = "postmark"
params = {{ number = 40, transactions = 80, size = "2000,20000" }}

[[measurement]]
name = "walk"
kind = "find"
params = {{ tree_files = 40, tree_dirs = 4 }}
"#,
        target.display()
    )
}

/// Run the directory plan in `s`; its output directory.
fn dir_experiment(s: &Scratch) -> PathBuf {
    let target = s.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    let plan = s.path().join("plan.toml");
    std::fs::write(&plan, dir_plan(&target)).unwrap();
    let out = s.path().join("out");
    experiment_ok(&plan, &out);
    out
}

/// The rows of cell `cell`'s figure table in the text summary, each split at whitespace.
fn cell_rows(text: &str, cell: usize) -> Vec<Vec<String>> {
    let head = format!("\ncell {cell}: ");
    let start = text
        .find(&head)
        .unwrap_or_else(|| panic!("no cell {cell}:\n{text}"));
    let block = &text[start + 1..];
    let end = block[1..].find("\n\n").map_or(block.len(), |e| e + 1);
    block[..end]
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("figure "))
        .skip(1)
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

/// A run's stored JSON (`OUT/runs/cNNN-rRR.json`).
fn run_json(out: &Path, cell: usize, rep: usize) -> serde_json::Value {
    json_of(&out.join(format!("runs/c{cell:03}-r{rep:02}.json")))
}

#[test]
fn results_read_in_units_with_the_headline_first() {
    let s = Scratch::new("results-units");
    let out = dir_experiment(&s);
    let text = stdout_ok(&["results", out.to_str().unwrap()]);
    // PostMark's cell: its own headline figures lead, in the order of the kind's list.
    let pm = cell_rows(&text, 1);
    assert_eq!(pm[0][..2], ["transactions_per_s", "*"], "{text}");
    assert_eq!(pm[1][..2], ["total_s", "*"], "{text}");
    let row = |name: &str| {
        pm.iter()
            .find(|r| r[0] == name)
            .unwrap_or_else(|| panic!("no {name}:\n{text}"))
            .clone()
    };
    // Rates with a unit, times scaled, bytes in binary units, counts as whole numbers.
    assert!(row("transactions_per_s")[2].ends_with("/s"), "{text}");
    assert!(
        ["s", "ms", "µs"].contains(&row("total_s")[3].as_str()),
        "{text}"
    );
    assert!(
        ["B", "KiB", "MiB"].contains(&row("bytes_read")[2].as_str()),
        "{text}"
    );
    assert_eq!(row("transactions")[1], "80", "{text}");
    assert_eq!(row("mb_per_s")[2], "MiB/s", "{text}");
    // No figure printed to four decimals, whatever its size.
    assert!(!text.contains(".0000"), "{text}");
    // The modality column says what it judges, with a legend.
    assert!(row("total_s").last().unwrap() == "n<4", "{text}");
    assert!(!text.lines().any(|l| l.ends_with("too few")), "{text}");
    assert!(
        text.contains("shape: the repetitions' largest-gap test"),
        "{text}"
    );
    // The machine outputs keep the stored numbers: the CSV's mean is the runs' mean.
    let csv = stdout_ok(&["results", out.to_str().unwrap(), "--csv", "-"]);
    assert!(csv.lines().next().unwrap().contains(",shape,"), "{csv}");
    let line = csv
        .lines()
        .find(|l| l.starts_with("1,") && l.contains(",transactions_per_s,"))
        .unwrap();
    let mean: f64 = line.split(',').nth(5).unwrap().parse().unwrap();
    let runs: Vec<f64> = (0..2)
        .map(|r| {
            run_json(&out, 1, r)["figures"]["transactions_per_s"]
                .as_f64()
                .unwrap()
        })
        .collect();
    let want = (runs[0] + runs[1]) / 2.0;
    assert!((mean - want).abs() <= 1e-12 * want, "{mean} vs {want}");
    // The plan's choices as the plan spells them, not as the code names them.
    let dry = stdout_ok(&[
        "experiment",
        s.path().join("plan.toml").to_str().unwrap(),
        "--dry-run",
    ]);
    assert!(
        dry.contains(r#"order = "interleaved", fresh = "experiment""#),
        "{dry}"
    );
    assert!(
        !dry.contains("Interleaved") && !dry.contains("Experiment"),
        "{dry}"
    );
}

/// Python reads a CSV file with its `csv` module: the header and every row as a dict.
fn python_csv(path: &Path) -> serde_json::Value {
    let script = "import csv, json, sys\n\
                  rows = list(csv.DictReader(open(sys.argv[1], newline='')))\n\
                  with open(sys.argv[1], newline='') as f:\n    head = next(csv.reader(f))\n\
                  print(json.dumps({'columns': head, 'rows': rows}))\n";
    let o = std::process::Command::new("python3")
        .args(["-c", script, path.to_str().unwrap()])
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn every_run_is_a_tidy_row_in_csv_and_json() {
    let s = Scratch::new("results-runs");
    let out = dir_experiment(&s);
    let o = out.to_str().unwrap();
    let file = s.path().join("runs.csv");
    stdout_ok(&["results", o, "--runs-csv", file.to_str().unwrap()]);
    let to_stdout = stdout_ok(&["results", o, "--runs-csv", "-"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), to_stdout);
    let t = python_csv(&file);
    let columns: Vec<&str> = t["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for want in [
        "run_id",
        "cell",
        "repetition",
        "status",
        "in_summary",
        "superseded",
        "disturbed",
        "cache_served",
        "measurement",
        "target",
        "cache",
        "transactions_per_s",
        "entries_per_s",
    ] {
        assert!(columns.contains(&want), "{want} not in {columns:?}");
    }
    assert!(!columns.contains(&"factors"), "{columns:?}");
    // Two cells, two rounds: four runs, each its own row.
    let rows = t["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{to_stdout}");
    for r in rows {
        let (cell, rep) = (&r["cell"], &r["repetition"]);
        let pm = r["measurement"] == "pm";
        assert_eq!(r["status"], "ok");
        assert_eq!(r["in_summary"], "true");
        assert_eq!(r["target"], "here");
        // Each measurement's figures in its own rows; the other's left empty.
        let (mine, other) = if pm {
            ("transactions_per_s", "entries_per_s")
        } else {
            ("entries_per_s", "transactions_per_s")
        };
        assert_eq!(r[other], "", "{r}");
        // Exact: the text reads back as the number the run stored.
        let stored = run_json(
            &out,
            cell.as_str().unwrap().parse().unwrap(),
            rep.as_str().unwrap().parse().unwrap(),
        );
        let got: f64 = r[mine].as_str().unwrap().parse().unwrap();
        let want = stored["figures"][mine].as_f64().unwrap();
        assert_eq!(got, want, "{r}");
    }
    // --all adds each flowop's figures, by flowop.
    let all = stdout_ok(&["results", o, "--runs-csv", "-", "--all"]);
    assert!(all.lines().next().unwrap().contains(",flowop."), "{all}");
    // The JSON holds the same rows as objects, its columns described.
    let j = s.path().join("runs.json");
    stdout_ok(&["results", o, "--runs-json", j.to_str().unwrap()]);
    let doc = json_of(&j);
    assert_eq!(doc["runs"].as_array().unwrap().len(), 4);
    assert_eq!(doc["columns"].as_array().unwrap().len(), columns.len());
    // Keys in column order, as Python's json (which keeps the file's order) reads them.
    let py = std::process::Command::new("python3")
        .args([
            "-c",
            "import json, sys; print(json.dumps(list(json.load(open(sys.argv[1]))['runs'][0])))",
            j.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let keys: Vec<String> = serde_json::from_slice(&py.stdout).unwrap();
    assert_eq!(keys, columns);
}
