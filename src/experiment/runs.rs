//! `fsbench results OUTDIR --runs-csv FILE / --runs-json FILE`: every stored run as one row
//! (tidy data, ready for pandas or R): what the runner knew of the run (its cell,
//! repetition, status and flags), one column per factor of its cell and one per figure it
//! stored, each number exactly as stored. The summary's means hide the runs; this is where
//! they can be plotted, filtered and modelled one by one. docs/experiments.md describes
//! the columns; docs/schema/runs.schema.json the JSON.

use super::store::{RunFlags, Store};
use anyhow::Result;
use fsbench_base::export::csv::{self, Quote::WhenNeeded};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// The version of the export's columns and document: changes when one changes meaning or
/// disappears.
pub const SCHEMA_VERSION: u32 = 1;

/// The columns every export starts with, what the runner recorded of each run.
const RUN_COLUMNS: [&str; 18] = [
    "run_id",
    "cell",
    "repetition",
    "status",
    "in_summary",
    "superseded",
    "disturbed",
    "ended_early",
    "cache_served",
    "caches_dropped_elsewhere",
    "device_idle",
    "warmed",
    "cold",
    "started_at",
    "wall_s",
    "load_avg_1",
    "other_cpu_frac",
    "error",
];

/// A column: its name in the export, and what it holds.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    pub name: String,
    /// `run` (the runner's record), `factor` (a level of the cell) or `figure` (a stored
    /// figure).
    pub kind: &'static str,
    /// For a figure: its flowop ("" for a whole-run figure) and stored name, from which the
    /// column's name is made (`flowop.NAME.FIGURE` for a flowop's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flowop: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figure: Option<String>,
}

/// Every run of an experiment, a row each, in cell and repetition order.
#[derive(Debug)]
pub struct Runs {
    pub schema_version: u32,
    pub experiment: String,
    /// Whether `in_summary` counts the runs flagged ended early or served from cache.
    pub include_flagged: bool,
    pub columns: Vec<Column>,
    /// A value per column, in column order.
    pub rows: Vec<Vec<Value>>,
}

/// A stored figure: its flowop ("" for the whole run), name and value.
type Figure = (String, String, f64);

/// A run as the database holds it, before it becomes a row.
struct RunRow {
    cells: Vec<Value>,
    factors: BTreeMap<String, String>,
    figures: Vec<Figure>,
}

/// Read every run of the experiment in `st`. `all` adds each flowop's figures; with
/// `include_flagged`, runs flagged ended early or served from cache count `in_summary`.
pub fn read(st: &Store, all: bool, include_flagged: bool) -> Result<Runs> {
    let (exp, name): (i64, String) = st.db.query_row(
        "SELECT id, name FROM experiments ORDER BY id LIMIT 1",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let mut figures = figures_by_run(st, exp, all)?;
    let mut q = st.db.prepare(
        "SELECT runs.id, cells.idx, cells.factors_json, runs.repetition, runs.status, runs.superseded, runs.disturbed, runs.flags_json, runs.started_at, runs.elapsed_s, runs.load_avg_1, runs.other_cpu_frac, runs.error FROM runs JOIN cells ON cells.id = runs.cell_id WHERE cells.experiment_id = ?1 ORDER BY cells.idx, runs.repetition, runs.id",
    )?;
    let mut runs = Vec::new();
    let mut rows = q.query([exp])?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let flags: RunFlags = serde_json::from_str(&r.get::<_, String>(7)?).unwrap_or_default();
        let (status, superseded): (String, bool) = (r.get(4)?, r.get(5)?);
        let in_summary = status == "ok" && !superseded && (include_flagged || !flags.flagged());
        let cells = vec![
            Value::from(id),
            Value::from(r.get::<_, i64>(1)? + 1),
            Value::from(r.get::<_, i64>(3)?),
            Value::from(status),
            Value::from(in_summary),
            Value::from(superseded),
            Value::from(r.get::<_, bool>(6)?),
            flags.ended_early.clone().map_or(Value::Null, Value::from),
            Value::from(flags.cache_served.is_some()),
            Value::from(flags.caches_dropped_elsewhere.unwrap_or(0)),
            Value::from(flags.device_idle.is_some()),
            Value::from(flags.warmed),
            Value::from(flags.cold.is_some()),
            Value::from(r.get::<_, String>(8)?),
            Value::from(r.get::<_, f64>(9)?),
            r.get::<_, Option<f64>>(10)?
                .map_or(Value::Null, Value::from),
            r.get::<_, Option<f64>>(11)?
                .map_or(Value::Null, Value::from),
            r.get::<_, Option<String>>(12)?
                .map_or(Value::Null, Value::from),
        ];
        runs.push(RunRow {
            cells,
            factors: serde_json::from_str(&r.get::<_, String>(2)?).unwrap_or_default(),
            figures: figures.remove(&id).unwrap_or_default(),
        });
    }
    Ok(table(name, include_flagged, runs))
}

/// Each run's figures in stored order; the whole-run ones, or every one with `all`.
fn figures_by_run(st: &Store, exp: i64, all: bool) -> Result<HashMap<i64, Vec<Figure>>> {
    let mut q = st.db.prepare(
        "SELECT figures.run_id, figures.flowop, figures.figure, figures.value FROM figures JOIN runs ON runs.id = figures.run_id JOIN cells ON cells.id = runs.cell_id WHERE cells.experiment_id = ?1 ORDER BY figures.rowid",
    )?;
    let mut out: HashMap<i64, Vec<Figure>> = HashMap::new();
    let mut rows = q.query([exp])?;
    while let Some(r) = rows.next()? {
        let flowop: String = r.get(1)?;
        if all || flowop.is_empty() {
            out.entry(r.get(0)?)
                .or_default()
                .push((flowop, r.get(2)?, r.get(3)?));
        }
    }
    Ok(out)
}

/// The columns (the runner's, then factors with `measurement`, `target` and `cache` first,
/// then figures as first stored, whole-run ones before flowops') and a row per run. A
/// factor or figure whose name a column already has is prefixed `factor.` or `figure.`.
fn table(experiment: String, include_flagged: bool, runs: Vec<RunRow>) -> Runs {
    let mut columns: Vec<Column> = RUN_COLUMNS
        .iter()
        .map(|n| Column {
            name: n.to_string(),
            kind: "run",
            flowop: None,
            figure: None,
        })
        .collect();
    let mut factors: Vec<String> = ["measurement", "target", "cache"]
        .iter()
        .filter(|f| runs.iter().any(|r| r.factors.contains_key(**f)))
        .map(|f| f.to_string())
        .collect();
    let mut figures: Vec<(String, String)> = Vec::new();
    for r in &runs {
        for f in r.factors.keys() {
            if !factors.contains(f) {
                factors.push(f.clone());
            }
        }
        for (fl, g, _) in &r.figures {
            if !figures.iter().any(|(a, b)| a == fl && b == g) {
                figures.push((fl.clone(), g.clone()));
            }
        }
    }
    figures.sort_by_key(|(fl, _)| !fl.is_empty());
    for f in &factors {
        let name = free_name(&columns, f, "factor");
        columns.push(Column {
            name,
            kind: "factor",
            flowop: None,
            figure: None,
        });
    }
    for (fl, g) in &figures {
        let base = if fl.is_empty() {
            g.clone()
        } else {
            format!("flowop.{fl}.{g}")
        };
        let name = free_name(&columns, &base, "figure");
        columns.push(Column {
            name,
            kind: "figure",
            flowop: Some(fl.clone()),
            figure: Some(g.clone()),
        });
    }
    let rows = runs
        .into_iter()
        .map(|r| {
            let mut row = r.cells;
            row.extend(factors.iter().map(|f| {
                r.factors
                    .get(f)
                    .map_or(Value::Null, |v| Value::from(v.as_str()))
            }));
            row.extend(figures.iter().map(|(fl, g)| {
                r.figures
                    .iter()
                    .find(|(a, b, _)| a == fl && b == g)
                    .map_or(Value::Null, |(_, _, v)| Value::from(*v))
            }));
            row
        })
        .collect();
    Runs {
        schema_version: SCHEMA_VERSION,
        experiment,
        include_flagged,
        columns,
        rows,
    }
}

/// `name`, or `PREFIX.name` when a column already has it.
fn free_name(columns: &[Column], name: &str, prefix: &str) -> String {
    if columns.iter().any(|c| c.name == name) {
        format!("{prefix}.{name}")
    } else {
        name.to_string()
    }
}

/// The export as JSON, as pandas reads it: `pd.DataFrame(doc["runs"])`.
#[derive(Serialize)]
struct Document<'a> {
    schema_version: u32,
    experiment: &'a str,
    include_flagged: bool,
    columns: &'a [Column],
    /// One object per run, keyed by column name in column order.
    runs: Vec<Record<'a>>,
}

/// One row as a JSON object.
struct Record<'a>(&'a [Column], &'a [Value]);

impl Serialize for Record<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (c, v) in self.0.iter().zip(self.1) {
            m.serialize_entry(&c.name, v)?;
        }
        m.end()
    }
}

impl Runs {
    /// The JSON document (docs/schema/runs.schema.json).
    pub fn to_json(&self) -> String {
        let doc = Document {
            schema_version: self.schema_version,
            experiment: &self.experiment,
            include_flagged: self.include_flagged,
            columns: &self.columns,
            runs: self.rows.iter().map(|r| Record(&self.columns, r)).collect(),
        };
        serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
    }

    /// CSV with a header of column names: numbers exact (the shortest text that reads back
    /// as the stored value), `true`/`false`, empty for none, text quoted when it must be.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let head: Vec<String> = self
            .columns
            .iter()
            .map(|c| csv::field(&c.name, WhenNeeded).into_owned())
            .collect();
        let _ = writeln!(out, "{}", head.join(","));
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(csv_value).collect();
            let _ = writeln!(out, "{}", cells.join(","));
        }
        out
    }
}

fn csv_value(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => csv::field(s, WhenNeeded).into_owned(),
        other => other.to_string(),
    }
}
