//! `fsbench results` as a person reads it and as a script reads it: figures in their units
//! with the headline ones first, a `shape` column that says what it judges, plan choices as
//! the plan spells them; every run as a tidy row for pandas (CSV and JSON); the JSON of
//! `fsbench run --json` and of the runs against their schemas in docs/schema/; and cold
//! cells that the page cache served all the same, marked when the plan is read and when
//! the results are.

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
params = {{ number = 40, transactions = 80, size = "2000,20000", instances = 2 }}

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
    let stored = run_json(&out, 1, 0)["figures"]["transactions"]
        .as_f64()
        .unwrap();
    assert_eq!(row("transactions")[1], format!("{stored}"), "{text}");
    assert_eq!(row("mb_per_s")[2], "MiB/s", "{text}");
    // Each instance's own figures are detail, as a flowop's: with --all.
    assert!(!pm.iter().any(|r| r[0].starts_with("instance.")), "{text}");
    assert!(
        text.contains("rows of each instance's own figures"),
        "{text}"
    );
    let all = stdout_ok(&["results", out.to_str().unwrap(), "--all"]);
    assert!(all.contains("\n  instance.1.transactions_per_s "), "{all}");
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
    // The JSON holds the same rows as objects, its columns described, and its schema holds.
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
    match jsonschema() {
        Ok(()) => {
            let errs = schema_errors(&schema("runs.schema.json"), &j);
            assert!(errs.is_empty(), "{}", errs.join("\n"));
        }
        Err(why) => skip(&format!("the runs JSON's schema check: {why}")),
    }
}

#[test]
fn run_json_matches_its_schema_and_the_check_can_fail() {
    if let Err(why) = jsonschema() {
        skip(&why);
        return;
    }
    let s = Scratch::new("results-schema");
    let dir = s.path().join("d");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let run = s.path().join("run.json");
    let pm = s.path().join("pm.json");
    stdout_ok(&[
        "run",
        "fileserver",
        "-s",
        "nfiles=50",
        "-s",
        "filesize=4k",
        "--duration",
        "0.5",
        "--repeat",
        "2",
        "--interval",
        "0.2",
        "--dir",
        d,
        "--json",
        run.to_str().unwrap(),
    ]);
    stdout_ok(&[
        "postmark",
        "--number",
        "30",
        "--transactions",
        "60",
        "--dir",
        d,
        "--json",
        pm.to_str().unwrap(),
    ]);
    let sch = schema("run.schema.json");
    for f in [&run, &pm] {
        let errs = schema_errors(&sch, f);
        assert!(errs.is_empty(), "{}: {}", f.display(), errs.join("\n"));
    }
    // Output that disagrees with the schema is caught: a field missing, one unknown, a
    // count below zero.
    let mut v = json_of(&run);
    let o = v.as_object_mut().unwrap();
    o.remove("summary");
    o.insert("bogus".into(), 1.into());
    v["flowops"][0]["ops"] = (-1).into();
    let bad = s.path().join("bad.json");
    std::fs::write(&bad, serde_json::to_string(&v).unwrap()).unwrap();
    let errs = schema_errors(&sch, &bad).join("\n");
    for want in [
        "'summary' is a required property",
        "'bogus' was unexpected",
        "-1",
    ] {
        assert!(errs.contains(want), "{want} not in:\n{errs}");
    }
}

/// A plan whose measurements run cold and warm in `target` (a directory, or with `image` a
/// loop image of its own): PostMark, which makes all it reads while measuring, and a
/// `find` of a tree made before it, which reads what was on disk; `extra` adds
/// measurements.
fn cold_plan(target: &Path, image: bool, extra: &str) -> String {
    let target = if image {
        "kind = \"image\"\nsize = \"64M\"\nfs = \"ext4\"".to_string()
    } else {
        format!("kind = \"dir\"\npath = \"{}\"", target.display())
    };
    format!(
        r#"
[experiment]
name = "cold"
repetitions = 1
order = "interleaved"

[[target]]
name = "t"
{target}

[factors]
cache = ["cold", "warm"]

[[measurement]]
name = "pm"
kind = "postmark"
params = {{ number = 100, transactions = 400, size = "20000,60000" }}

[[measurement]]
name = "walk"
kind = "find"
params = {{ tree_files = 40, tree_dirs = 4 }}
{extra}"#
    )
}

#[test]
fn a_cold_cache_that_cannot_matter_is_said_when_the_plan_is_read() {
    let s = Scratch::new("results-cold-plan");
    let extra = r#"
[[measurement]]
name = "mk"
kind = "workload"
params = { workload = "createfiles", nfiles = 100, duration = 1 }

[[measurement]]
name = "fs"
kind = "workload"
params = { workload = "fileserver", nfiles = 100, duration = 1 }
"#;
    let plan = s.path().join("plan.toml");
    std::fs::write(&plan, cold_plan(s.path(), false, extra)).unwrap();
    let o = run(&["experiment", plan.to_str().unwrap(), "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning:")).collect();
    // PostMark (by what the kind does) and createfiles (by its flowops and filesets), each
    // with the plan's place; not fileserver, which reads its preallocated files, nor find.
    assert_eq!(warnings.len(), 2, "{err}");
    let at = plan.display().to_string();
    assert!(
        warnings[0].contains(&format!(
            "{at}:15:1: measurement `pm` runs with cache = \"cold\" (cell 1)"
        )) && warnings[0].contains("PostMark makes its pool")
            && warnings[0].contains("its cold and warm cells measure much the same"),
        "{err}"
    );
    assert!(
        warnings[1].contains("measurement `mk` runs with cache = \"cold\" (cell 5)")
            && warnings[1].contains("workload \"createfiles\" reads no file laid out"),
        "{err}"
    );
    assert!(!err.contains("`fs`") && !err.contains("`walk`"), "{err}");
    // `fsbench check` says it of a workload.
    let note = "note: it reads no file laid out before it starts";
    assert!(stdout_ok(&["check", "createfiles"]).contains(note));
    assert!(!stdout_ok(&["check", "fileserver"]).contains(note));
}

/// The text of cell `cell`'s block in the text summary.
fn cell_block(text: &str, cell: usize) -> &str {
    let head = format!("\ncell {cell}: ");
    let start = text
        .find(&head)
        .unwrap_or_else(|| panic!("no cell {cell}:\n{text}"))
        + 1;
    let rest = &text[start..];
    let end = rest.find("\ncell ").unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn cold_cells_the_page_cache_served_are_marked() {
    let what = "cold_cells_the_page_cache_served_are_marked";
    if !loop_devices_or_skip(what) {
        return;
    }
    let s = Scratch::new("results-cold");
    let plan = s.path().join("plan.toml");
    std::fs::write(&plan, cold_plan(s.path(), true, "")).unwrap();
    let out = s.path().join("out");
    experiment_ok(&plan, &out);
    let o = out.to_str().unwrap();
    let text = stdout_ok(&["results", o]);
    // Cells: 1 pm cold, 2 pm warm, 3 walk cold, 4 walk warm.
    let mark = "[COLD IN NAME ONLY: cache=cold, yet the page cache served";
    assert!(cell_block(&text, 1).contains(mark), "{text}");
    for cell in [2, 3, 4] {
        assert!(
            !cell_block(&text, cell).contains("COLD IN NAME ONLY"),
            "{text}"
        );
    }
    let summary = stdout_ok(&["results", o, "--json", "-"]);
    assert_schema("summary.schema.json", &summary);
    let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
    // A summary that breaks the schema is caught: a field missing, a verdict misspelt.
    let mut bad = v.clone();
    bad.as_object_mut().unwrap().remove("rows");
    bad["rows_"] = serde_json::json!([]);
    if let Some(errs) = schema_errors_in("summary.schema.json", &bad.to_string()) {
        let errs = errs.join("\n");
        assert!(errs.contains("'rows' is a required property"), "{errs}");
        assert!(errs.contains("'rows_' was unexpected"), "{errs}");
    }
    let marked: Vec<u64> = v["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["cold_in_name_only"] == true)
        .map(|c| c["cell"].as_u64().unwrap())
        .collect();
    assert_eq!(marked, [1], "{v}");
    // The report: a warning in its header and a note beside the cell's row.
    let html = s.path().join("r.html");
    stdout_ok(&["report", o, "-o", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("cell 1 (pm, cache=cold, target=t): cold in name only"),
        "header"
    );
    assert_eq!(
        page.matches("<td class=warn>cold in name only: the page cache served")
            .count(),
        1
    );
}
