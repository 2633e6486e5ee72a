//! The results database: one SQLite file, `OUTDIR/results.db`, that users can query with
//! plain SQL. The schema is documented in docs/experiments.md; `SCHEMA` below is the source.

use crate::experiment::output::{ChildOutput, Output, RemoteTraffic};
use anyhow::{Context, Result};
use fsbench_results::stats::Results;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;
use std::path::Path;

pub const FILE: &str = "results.db";

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS experiments (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    plan_file TEXT NOT NULL,
    plan_text TEXT NOT NULL,
    plan_hash TEXT NOT NULL,
    quick INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    repetitions INTEGER NOT NULL,
    noise_threshold REAL NOT NULL,
    baseline_json TEXT NOT NULL,
    fsbench_version TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE TABLE IF NOT EXISTS cells (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    idx INTEGER NOT NULL,
    measurement TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    cache TEXT NOT NULL,
    factors_json TEXT NOT NULL,
    command_json TEXT NOT NULL,
    UNIQUE (experiment_id, idx)
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    repetition INTEGER NOT NULL,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    elapsed_s REAL NOT NULL,
    load_avg_1 REAL,
    other_cpu_frac REAL,
    disturbed INTEGER NOT NULL DEFAULT 0,
    superseded INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    applied_json TEXT NOT NULL,
    results_json TEXT,
    flags_json TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS figures (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    flowop TEXT NOT NULL,
    figure TEXT NOT NULL,
    value REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS flowops (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    type TEXT,
    ops INTEGER,
    ops_per_s REAL,
    mb_per_s REAL,
    mean_us REAL,
    p50_us REAL,
    p99_us REAL,
    max_us REAL,
    errors INTEGER
);
CREATE TABLE IF NOT EXISTS backgrounds (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    factor TEXT NOT NULL,
    kind TEXT NOT NULL,
    command_json TEXT NOT NULL,
    nice INTEGER,
    ionice TEXT,
    applied_json TEXT NOT NULL,
    status TEXT NOT NULL,
    exit_code INTEGER,
    started_at TEXT NOT NULL,
    elapsed_s REAL NOT NULL,
    user_s REAL NOT NULL,
    system_s REAL NOT NULL,
    results_json TEXT
);
CREATE INDEX IF NOT EXISTS runs_cell ON runs(cell_id, repetition);
CREATE INDEX IF NOT EXISTS figures_run ON figures(run_id);
";

pub struct Store {
    pub db: Connection,
}

/// One experiment to store (a row of `experiments`): the plan it runs and the choices that
/// hold for every cell.
pub struct ExperimentRecord<'a> {
    pub name: &'a str,
    pub plan_file: &'a str,
    pub plan_text: &'a str,
    pub plan_hash: &'a str,
    pub quick: bool,
    pub seed: u64,
    pub repetitions: u32,
    pub noise_threshold: f64,
    /// The baseline's factor levels, as an object.
    pub baseline: &'a Value,
}

/// One cell of an experiment to store (a row of `cells`): what it measures, where, and how.
pub struct CellRecord<'a> {
    pub experiment_id: i64,
    /// Its place in the plan's cells.
    pub idx: usize,
    pub measurement: &'a str,
    pub kind: &'a str,
    pub target: &'a str,
    pub cache: &'a str,
    /// Its factor levels, as an object.
    pub factors: &'a Value,
    pub command: &'a Value,
}

/// One run to store.
pub struct RunRecord<'a> {
    pub cell_id: i64,
    pub repetition: u32,
    pub status: &'a str,
    pub started_at: &'a str,
    pub elapsed_s: f64,
    pub load_avg_1: Option<f64>,
    pub other_cpu_frac: Option<f64>,
    pub disturbed: bool,
    pub error: Option<&'a str>,
    pub applied: &'a Value,
    pub results: Option<&'a ChildOutput>,
    pub flags: &'a RunFlags,
}

/// What a background load beside a run did, as stored (`backgrounds` table).
#[derive(Debug, Clone)]
pub struct BgRecord {
    pub name: String,
    pub factor: String,
    pub kind: String,
    pub command: Vec<String>,
    pub nice: Option<i32>,
    pub ionice: Option<String>,
    /// What the kernel held for it once started: pid, nice, ionice.
    pub applied: Value,
    /// "stopped" (interrupted after the measurement), "ended" (exited by itself, status 0),
    /// "failed" (exited by itself otherwise), "timeout" (stopped at the time limit).
    pub status: String,
    pub exit_code: Option<i32>,
    pub started_at: String,
    pub elapsed_s: f64,
    pub user_s: f64,
    pub system_s: f64,
    pub results: Option<Value>,
}

/// What the runner learned about a run beyond its figures: whether it measured what its cell
/// says. Stored as `runs.flags_json`; `results` and the report count and exclude flagged runs.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunFlags {
    /// Why the run ended before its duration (fileset exhausted, finish flowop, error), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_early: Option<String>,
    /// The device served less than the stated share of the bytes the measurement read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_served: Option<CacheServed>,
    /// A warm cell's unmeasured pass ran right before this run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmed: bool,
    /// A cold cell's caches were dropped right before this run (what, when).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold: Option<String>,
    /// Another process dropped the kernel's caches this many times during the measurement
    /// (the child's count): the run did not keep its cell's cache state. The run is marked
    /// disturbed (kept, and repeated by `--strict`), as other load is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches_dropped_elsewhere: Option<u64>,
    /// The measurement's `device_work` was not met: its device was busy less than asked, or
    /// the page cache served more of its reads than allowed. Kept in the means (the figures
    /// are what the machine did); shown, so that a cell the study ran against a disk is not
    /// read as the disk's result when the disk stood idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_idle: Option<DeviceIdle>,
}

/// What the device did in a run flagged `device_idle`, and what was asked of it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceIdle {
    /// The device's busy time ÷ the measured window.
    pub device_util: Option<f64>,
    /// The share of the bytes read that the device did not read, in percent.
    pub cache_hit_pct: Option<f64>,
    pub asked: crate::experiment::plan::DeviceWork,
}

/// The device's own account of a run's reads against what the measurement read.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CacheServed {
    pub device_read_bytes: u64,
    pub measured_read_bytes: u64,
    /// The share below which a run is flagged.
    pub threshold: f64,
}

impl RunFlags {
    /// Flagged runs are left out of comparisons unless asked for.
    pub fn flagged(&self) -> bool {
        self.ended_early.is_some() || self.cache_served.is_some()
    }
}

impl Store {
    pub fn open(outdir: &Path) -> Result<Store> {
        let path = outdir.join(FILE);
        let db = Connection::open(&path).with_context(|| format!("opening {}", path.display()))?;
        db.execute_batch(SCHEMA)
            .with_context(|| format!("creating the schema in {}", path.display()))?;
        // A database from before run flags existed: add the column, every run unflagged.
        let has_flags = db.prepare("SELECT flags_json FROM runs LIMIT 0").is_ok();
        if !has_flags {
            db.execute_batch("ALTER TABLE runs ADD COLUMN flags_json TEXT NOT NULL DEFAULT '{}'")
                .with_context(|| format!("adding run flags to {}", path.display()))?;
        }
        Ok(Store { db })
    }

    /// Open an existing database read-only (for `fsbench results` and `report`): nothing is
    /// written to it, no schema and no migration. One that holds no experiment (empty, or
    /// another program's) is refused with what it holds instead. A database from before
    /// run flags sees every run unflagged, through a temporary view (in memory, not in it).
    pub fn open_existing(outdir: &Path) -> Result<Store> {
        use rusqlite::OpenFlags;
        let path = outdir.join(FILE);
        if !path.is_file() {
            anyhow::bail!(
                "{} holds no {FILE}: not an experiment's output directory",
                outdir.display()
            );
        }
        let db = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .with_context(|| format!("opening {} read-only", path.display()))?;
        let tables: Vec<String> = db
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .and_then(|mut q| {
                q.query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()
            })
            .with_context(|| format!("{} is not an SQLite database", path.display()))?;
        let ours = ["cells", "experiments", "figures", "flowops", "runs"];
        if let Some(missing) = ours.iter().find(|t| !tables.iter().any(|x| x == *t)) {
            anyhow::bail!(
                "{} holds no experiment: it has no `{missing}` table ({}); it was not written by `fsbench experiment`, and is left as it is",
                path.display(),
                if tables.is_empty() {
                    "it is empty".to_string()
                } else {
                    format!("its tables: {}", tables.join(", "))
                }
            );
        }
        let n: i64 = db.query_row("SELECT COUNT(*) FROM experiments", [], |r| r.get(0))?;
        if n == 0 {
            anyhow::bail!(
                "{} holds no experiment yet (its experiment was never started); run `fsbench experiment PLAN -o {}`",
                path.display(),
                outdir.display()
            );
        }
        if db.prepare("SELECT flags_json FROM runs LIMIT 0").is_err() {
            db.execute_batch(
                "CREATE TEMP VIEW runs AS SELECT *, '{}' AS flags_json FROM main.runs",
            )
            .with_context(|| format!("reading {}", path.display()))?;
        }
        Ok(Store { db })
    }

    pub fn experiment(&self) -> Result<Option<(i64, String)>> {
        Ok(self
            .db
            .query_row(
                "SELECT id, plan_hash FROM experiments ORDER BY id LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    pub fn new_experiment(&self, e: &ExperimentRecord) -> Result<i64> {
        self.db.execute(
            "INSERT INTO experiments (name, plan_file, plan_text, plan_hash, quick, seed, repetitions, noise_threshold, baseline_json, fsbench_version, started_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![e.name, e.plan_file, e.plan_text, e.plan_hash, e.quick, e.seed as i64, e.repetitions, e.noise_threshold, e.baseline.to_string(), env!("CARGO_PKG_VERSION"), now()],
        )?;
        Ok(self.db.last_insert_rowid())
    }

    pub fn finish(&self, exp: i64) -> Result<()> {
        self.db.execute(
            "UPDATE experiments SET finished_at = ?1 WHERE id = ?2",
            params![now(), exp],
        )?;
        Ok(())
    }

    /// Start a transaction: the cells of a plan are inserted in one (one commit, not one
    /// per row, which made a large plan take minutes). Ended by [`Store::commit`]; dropped
    /// with the connection, it is rolled back.
    pub fn begin(&self) -> Result<()> {
        self.db.execute_batch("BEGIN IMMEDIATE")?;
        Ok(())
    }

    pub fn commit(&self) -> Result<()> {
        self.db.execute_batch("COMMIT")?;
        Ok(())
    }

    /// Store a cell, once: a cell stored before (on `--resume`) keeps its id.
    pub fn cell(&self, c: &CellRecord) -> Result<i64> {
        if let Some(id) = self
            .db
            .query_row(
                "SELECT id FROM cells WHERE experiment_id = ?1 AND idx = ?2",
                params![c.experiment_id, c.idx as i64],
                |r| r.get(0),
            )
            .optional()?
        {
            return Ok(id);
        }
        self.db.execute(
            "INSERT INTO cells (experiment_id, idx, measurement, kind, target, cache, factors_json, command_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![c.experiment_id, c.idx as i64, c.measurement, c.kind, c.target, c.cache, c.factors.to_string(), c.command.to_string()],
        )?;
        Ok(self.db.last_insert_rowid())
    }

    /// Whether a cell's repetition already has a stored, usable run.
    pub fn done(&self, cell_id: i64, repetition: u32) -> Result<bool> {
        Ok(self.db.query_row(
            "SELECT COUNT(*) FROM runs WHERE cell_id = ?1 AND repetition = ?2 AND status = 'ok' AND superseded = 0",
            params![cell_id, repetition],
            |r| r.get::<_, i64>(0),
        )? > 0)
    }

    /// Store a run with its figures, in one transaction.
    pub fn add_run(&mut self, r: &RunRecord) -> Result<i64> {
        let tx = self.db.transaction()?;
        tx.execute(
            "INSERT INTO runs (cell_id, repetition, status, started_at, elapsed_s, load_avg_1, other_cpu_frac, disturbed, error, applied_json, results_json, flags_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                r.cell_id,
                r.repetition,
                r.status,
                r.started_at,
                r.elapsed_s,
                r.load_avg_1,
                r.other_cpu_frac,
                r.disturbed,
                r.error,
                r.applied.to_string(),
                r.results.map(|c| c.json.to_string()),
                serde_json::to_string(r.flags)?,
            ],
        )?;
        let run_id = tx.last_insert_rowid();
        if let Some(res) = r.results {
            {
                let mut ins = tx.prepare(
                    "INSERT INTO figures (run_id, flowop, figure, value) VALUES (?1, ?2, ?3, ?4)",
                )?;
                for (flowop, figure, value) in figures(res) {
                    ins.execute(params![run_id, flowop, figure, value])?;
                }
                // The target's aging step, with every run measured on it.
                for (figure, value) in crate::experiment::target::age::figures(r.applied) {
                    ins.execute(params![run_id, "", figure, value])?;
                }
                let mut ins = tx.prepare(
                    "INSERT INTO flowops (run_id, name, type, ops, ops_per_s, mb_per_s, mean_us, p50_us, p99_us, max_us, errors) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )?;
                let flowops = res.output.results().map(|r| r.flowops.as_slice());
                for f in flowops.unwrap_or_default() {
                    ins.execute(params![
                        run_id,
                        f.name,
                        f.kind,
                        f.ops as i64,
                        f.ops_per_s,
                        f.mb_per_s,
                        f.latency_us.mean,
                        f.latency_us.p50,
                        f.latency_us.p99,
                        f.latency_us.max,
                        f.errors as i64,
                    ])?;
                }
            }
        }
        tx.commit()?;
        Ok(run_id)
    }

    /// Store what the backgrounds of run `run_id` did.
    pub fn add_backgrounds(&self, run_id: i64, bgs: &[BgRecord]) -> Result<()> {
        for b in bgs {
            self.db.execute(
                "INSERT INTO backgrounds (run_id, name, factor, kind, command_json, nice, ionice, applied_json, status, exit_code, started_at, elapsed_s, user_s, system_s, results_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    run_id,
                    b.name,
                    b.factor,
                    b.kind,
                    serde_json::to_string(&b.command)?,
                    b.nice,
                    b.ionice,
                    b.applied.to_string(),
                    b.status,
                    b.exit_code,
                    b.started_at,
                    b.elapsed_s,
                    b.user_s,
                    b.system_s,
                    b.results.as_ref().map(|v| v.to_string()),
                ],
            )?;
        }
        Ok(())
    }

    /// Whether the database has the `backgrounds` table (one written before it existed,
    /// opened read-only, has none).
    pub fn has_backgrounds(&self) -> bool {
        self.db
            .prepare("SELECT run_id FROM backgrounds LIMIT 0")
            .is_ok()
    }

    /// Mark a run as replaced by a later attempt (--strict reruns of disturbed runs).
    pub fn supersede(&self, run_id: i64) -> Result<()> {
        self.db.execute(
            "UPDATE runs SET superseded = 1 WHERE id = ?1",
            params![run_id],
        )?;
        Ok(())
    }
}

/// The figures of one result, as (flowop, figure, value); flowop "" for the whole run.
///
/// A run's results (`fsbench run/postmark/andrew/find/build/read --json`) give the summary's
/// rates, latency (mean and p99 over the I/O flowops) and CPU seconds, the benchmark's named
/// figures (PostMark's transactions per second, Andrew's phase times, ...; a named figure
/// replaces a summary one of the same name), what crossed a simulated remote's network, and
/// each flowop's rate, bandwidth, mean and p99 latency. A layout's or a scan's give their
/// numbers by field name, and the remote's traffic.
pub fn figures(res: &ChildOutput) -> Vec<(String, String, f64)> {
    let remote = res.remote.as_ref();
    match &res.output {
        Output::Run(r) => run_figures(r, remote),
        tree => {
            let mut whole: Vec<(String, f64)> = tree
                .tree_figures()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .chain(remote.map(RemoteTraffic::figures).unwrap_or_default())
                .collect();
            whole.sort_by(|a, b| a.0.cmp(&b.0));
            whole
                .into_iter()
                .map(|(k, v)| (String::new(), k, v))
                .collect()
        }
    }
}

/// A run on a block device: the device's reads over the measured window (`device_read_mb`)
/// and the share of the bytes read that the page cache served (`cache_hit_pct`, see
/// [`Results::cache_hit_pct`]).
fn cache_figures(r: &Results) -> Vec<(String, f64)> {
    let Some(dev) = r.device_read_bytes else {
        return Vec::new();
    };
    let mut v = vec![("device_read_mb".to_string(), dev as f64 / 1e6)];
    if let Some(w) = r.device_write_bytes {
        v.push(("device_write_mb".to_string(), w as f64 / 1e6));
    }
    if let Some(hit) = r.cache_hit_pct() {
        v.push(("cache_hit_pct".to_string(), hit));
    }
    v
}

fn run_figures(r: &Results, remote: Option<&RemoteTraffic>) -> Vec<(String, String, f64)> {
    let s = &r.summary;
    let mut whole: Vec<(String, f64)> = vec![
        ("ops_per_s".into(), s.ops_per_s),
        ("mb_per_s".into(), s.mb_per_s),
        ("mean_latency_ms".into(), s.mean_latency_ms),
    ];
    if let Some(p) = r.summary_p99_ms() {
        whole.push(("p99_ms".into(), p));
    }
    whole.extend([
        ("read_ops_per_s".into(), s.read_ops_per_s),
        ("write_ops_per_s".into(), s.write_ops_per_s),
        ("cpu_user_s".into(), s.cpu_user_s),
        ("cpu_sys_s".into(), s.cpu_sys_s),
        ("errors".into(), s.errors as f64),
        ("duration_s".into(), r.duration_s),
    ]);
    // The disk's utilisation beside its throughput: busy time over the measured window, at
    // most 1. The kernel counts `io_ticks` in whole jiffies (4 ms at HZ=250) from the first
    // request of a tick, so a window of a few milliseconds can be charged more than it
    // lasted (a 1.5 ms prune was charged 8 ms): the device was busy all of it.
    if let Some(busy) = r.device_busy_s {
        whole.push(("device_busy_s".into(), busy));
        if r.duration_s > 0.0 {
            whole.push(("device_util".into(), (busy / r.duration_s).min(1.0)));
        }
    }
    // The machine's CPU beside the throughput: a curve that flattens with the CPUs busy is
    // the machine's limit, not the file system's.
    if let Some(pct) = r.cpu_busy_pct() {
        whole.push(("cpu_busy_pct".into(), pct));
    }
    // Each process's bandwidth and share of the bytes (two readers at weights 1:2).
    for p in &r.processes {
        whole.push((format!("process.{}.mb_per_s", p.name), p.mb_per_s));
        whole.push((format!("process.{}.share", p.name), p.share));
    }
    for (k, v) in &r.figures {
        match whole.iter_mut().find(|(n, _)| n == k) {
            Some(w) => w.1 = *v,
            None => whole.push((k.clone(), *v)),
        }
    }
    whole.extend(cache_figures(r));
    // With `--cache-stat`: the page cache's hit rate as the reads met it, on any file system.
    if let Some(hit) = r.read_hit_pct() {
        whole.push(("read_hit_pct".into(), hit));
    }
    // A run on a simulated remote: what crossed the modelled network.
    whole.extend(remote.map(RemoteTraffic::figures).unwrap_or_default());
    let mut out: Vec<(String, String, f64)> = whole
        .into_iter()
        .map(|(k, v)| (String::new(), k, v))
        .collect();
    for f in &r.flowops {
        for (k, v) in [
            ("ops_per_s", f.ops_per_s),
            ("mb_per_s", f.mb_per_s),
            ("mean_us", f.latency_us.mean),
            ("p99_us", f.latency_us.p99),
        ] {
            out.push((f.name.clone(), k.to_string(), v));
        }
    }
    out
}

/// The current time, RFC 3339 in UTC.
pub fn now() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = t.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::plan::Kind;

    #[test]
    fn a_run_on_a_block_device_has_cache_figures() {
        let mut r = Results::new("w", "builtin:w", 1, Path::new("/x"));
        let f: fsbench_results::stats::FlowopResult = serde_json::from_value(serde_json::json!({
            "name": "read1", "type": "read", "io_class": "read", "ops": 10, "ops_per_s": 5.0,
            "bytes": 4_000_000u64, "mb_per_s": 2.0, "errors": 0, "no_resource": 0,
            "latency_us": {"mean": 1.0, "min": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0,
                "p99": 9.0, "p99_9": 9.0, "p99_99": 9.0, "max": 9.0},
            "histogram_ns": [[1_000_000, 10]]
        }))
        .unwrap();
        r.flowops.push(f);
        let mut v = serde_json::to_value(&r).unwrap();
        let get = |v: &Value, name: &str| {
            figures(&ChildOutput::read(Kind::Workload, v.clone()).unwrap())
                .into_iter()
                .find(|(fl, n, _)| fl.is_empty() && n == name)
                .map(|x| x.2)
        };
        // Not on a block device: no device reads, no cache figures.
        assert_eq!(get(&v, "cache_hit_pct"), None);
        v["device_read_bytes"] = serde_json::json!(1_000_000u64);
        assert_eq!(get(&v, "device_read_mb"), Some(1.0));
        assert_eq!(get(&v, "cache_hit_pct"), Some(75.0));
        // Read-ahead beyond what was read: no negative share.
        v["device_read_bytes"] = serde_json::json!(9_000_000u64);
        assert_eq!(get(&v, "cache_hit_pct"), Some(0.0));
        // Without --cache-stat no read_hit_pct; with it, the pages the cache held.
        assert_eq!(get(&v, "read_hit_pct"), None);
        v["flowops"][0]["page_cache"] =
            serde_json::json!({"pages": 1000, "cached": 250, "hit_pct": 25.0});
        assert_eq!(get(&v, "read_hit_pct"), Some(25.0));
    }

    #[test]
    fn figures_of_run_and_other_json() {
        // A real result's JSON, read back as `Results`: summary, named and flowop figures.
        let mut r = Results::new("postmark", "builtin:postmark", 1, Path::new("/x"));
        r.duration_s = 2.0;
        r.device_busy_s = Some(1.5);
        r.summary.ops_per_s = 100.0;
        r.summary.mb_per_s = 1.5;
        r.summary.cpu_user_s = 0.25;
        r.figures.insert("transactions_per_s".into(), 40.0);
        r.figures.insert("mb_per_s".into(), 1.25);
        let f: fsbench_results::stats::FlowopResult = serde_json::from_value(serde_json::json!({
            "name": "read1", "type": "read", "io_class": "read", "ops": 100, "ops_per_s": 50.0,
            "bytes": 0, "mb_per_s": 0.0, "errors": 0, "no_resource": 0,
            "latency_us": {"mean": 1.0, "min": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0,
                "p99": 9.0, "p99_9": 9.0, "p99_99": 9.0, "max": 9.0},
            "histogram_ns": [[1_000_000, 99], [5_000_000, 1]]
        }))
        .unwrap();
        r.flowops.push(f);
        let v = serde_json::to_value(&r).unwrap();
        let f = figures(&ChildOutput::read(Kind::Postmark, v).unwrap());
        let get = |fl: &str, k: &str| f.iter().find(|x| x.0 == fl && x.1 == k).map(|x| x.2);
        assert_eq!(get("", "ops_per_s"), Some(100.0));
        assert_eq!(get("", "transactions_per_s"), Some(40.0));
        assert_eq!(get("", "cpu_user_s"), Some(0.25));
        assert_eq!(get("", "duration_s"), Some(2.0));
        assert_eq!(get("", "device_busy_s"), Some(1.5));
        assert_eq!(get("", "device_util"), Some(0.75));
        // The benchmark's own figure replaces the summary's of the same name, once.
        assert_eq!(get("", "mb_per_s"), Some(1.25));
        assert_eq!(
            f.iter()
                .filter(|x| x.1 == "mb_per_s" && x.0.is_empty())
                .count(),
            1
        );
        let p99 = get("", "p99_ms").unwrap();
        assert!((0.99..=1.01).contains(&p99), "{p99}");
        assert_eq!(get("read1", "p99_us"), Some(9.0));
        // A window shorter than the kernel's tick, charged a whole one: busy all of it.
        r.duration_s = 0.0015;
        r.device_busy_s = Some(0.008);
        let v = serde_json::to_value(&r).unwrap();
        let f = figures(&ChildOutput::read(Kind::Postmark, v).unwrap());
        let util = f.iter().find(|x| x.1 == "device_util").map(|x| x.2);
        assert_eq!(util, Some(1.0));
    }

    /// What the figures of a JSON document were when they were read by key: its top-level
    /// numbers and those one object deep (`a.b`), `experiment` left out.
    fn by_key(res: &Value) -> Vec<(String, String, f64)> {
        let mut out = Vec::new();
        for (k, v) in res.as_object().unwrap() {
            match v {
                Value::Number(n) if k != "experiment" => {
                    out.push((String::new(), k.clone(), n.as_f64().unwrap()))
                }
                Value::Object(inner) if k != "experiment" => {
                    for (k2, v2) in inner {
                        if let Some(n) = v2.as_f64() {
                            out.push((String::new(), format!("{k}.{k2}"), n));
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn layout_sample() -> Value {
        serde_json::json!({
            "root": "/x", "fs_type": "ext4", "block_size": 4096, "sync": true,
            "elapsed_s": 0.5, "files": 10, "scored_files": 8, "blocks": 100,
            "contiguous": 90, "pairs": 92, "score": 0.978, "extents": 12, "fragments": 11,
            "unwritten_extents": 1, "unknown_extents": 2, "inline_extents": 3,
            "encoded_extents": 4, "shared_extents": 5, "errors": 6,
            "by_size": [], "fragments_per_file": [], "most_fragmented": [],
            "split_files": 7, "split_checked_files": 9, "split_flex_files": 2, "geometry": null,
            "geometry_note": "no superblock", "locality": 0.75, "locality_pairs": 99,
            "locality_contiguous": 74
        })
    }

    #[test]
    fn layout_and_scan_figures_are_their_numbers_as_stored_before() {
        let scan = serde_json::json!({
            "root": "/x", "snapshot": null, "threads": 2, "elapsed_s": 0.25,
            "entries": 100, "entries_per_s": 400.0, "files": 80, "dirs": 19, "symlinks": 1,
            "other": 0, "bytes": 123456, "allocated_bytes": 200000,
            "mount_points_skipped": 1, "errors": 2, "file_size": [], "depth": [],
            "entries_per_dir": [], "top_extensions": [], "hash": "blake3",
            "hashed_bytes": 7, "hash_mb_per_s": 8.5, "hash_errors": 9
        });
        let remote = RemoteTraffic {
            requests: 3,
            late_pct: 1.5,
            ..Default::default()
        };
        let mut per_user = scan.clone();
        per_user["hash"] = Value::Null;
        per_user.as_object_mut().unwrap().remove("hash");
        per_user["per_user"] =
            serde_json::json!({"users": 4, "workers": 2, "user_s": 0.5, "system_s": 1.25});
        per_user["cold"] = Value::Bool(true);
        for (kind, json) in [
            (Kind::Layout, layout_sample()),
            (Kind::Scan, scan),
            (Kind::Scan, per_user),
        ] {
            // Every field the type has is in the sample: a new one fails here until it
            // is a figure too.
            let round = match Output::read(kind, &json).unwrap() {
                Output::Layout(l) => serde_json::to_value(l).unwrap(),
                Output::Scan(s) => serde_json::to_value(s).unwrap(),
                Output::Run(_) => unreachable!(),
            };
            assert_eq!(round, json);
            let mut c = ChildOutput::read(kind, json).unwrap();
            c.add_records(Some(remote.clone()), serde_json::json!({"cell": 1}));
            assert_eq!(figures(&c), by_key(&c.json), "{kind:?}");
        }
        // A layout without a score (no file of two blocks) has no score figure.
        let mut l = layout_sample();
        l["score"] = Value::Null;
        let c = ChildOutput::read(Kind::Layout, l).unwrap();
        assert!(!figures(&c).iter().any(|f| f.1 == "score"));
        // JSON that is not a layout report is refused, saying what it is not.
        let e = ChildOutput::read(Kind::Layout, serde_json::json!({"score": 1})).unwrap_err();
        assert!(e.to_string().contains("not a layout report"), "{e}");
    }

    #[test]
    fn stores_runs_and_figures() {
        let d = std::env::temp_dir().join(format!("fsbench-store-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let mut s = Store::open(&d).unwrap();
        let e = s
            .new_experiment(&ExperimentRecord {
                name: "x",
                plan_file: "p.toml",
                plan_text: "",
                plan_hash: "h",
                quick: false,
                seed: 1,
                repetitions: 2,
                noise_threshold: 0.05,
                baseline: &Value::Null,
            })
            .unwrap();
        let cell = CellRecord {
            experiment_id: e,
            idx: 0,
            measurement: "m",
            kind: "workload",
            target: "t",
            cache: "warm",
            factors: &Value::Null,
            command: &Value::Null,
        };
        let c = s.cell(&cell).unwrap();
        assert_eq!(s.cell(&cell).unwrap(), c);
        let mut res = serde_json::to_value(Results::new("w", "w", 1, Path::new("/x"))).unwrap();
        res["flowops"] = serde_json::json!([{
            "name": "a", "type": "read", "io_class": "read", "ops": 1, "ops_per_s": 1.0,
            "bytes": 0, "mb_per_s": 0.0, "errors": 0, "no_resource": 0,
            "latency_us": {"mean": 1.0, "min": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0,
                "p99": 1.0, "p99_9": 1.0, "p99_99": 1.0, "max": 1.0}
        }]);
        assert!(!s.done(c, 0).unwrap());
        s.add_run(&RunRecord {
            cell_id: c,
            repetition: 0,
            status: "ok",
            started_at: &now(),
            elapsed_s: 1.0,
            load_avg_1: None,
            other_cpu_frac: Some(0.0),
            disturbed: false,
            error: None,
            applied: &Value::Null,
            results: Some(&ChildOutput::read(Kind::Workload, res).unwrap()),
            flags: &RunFlags::default(),
        })
        .unwrap();
        assert!(s.done(c, 0).unwrap());
        let n: i64 =
            s.db.query_row("SELECT COUNT(*) FROM flowops", [], |r| r.get(0))
                .unwrap();
        assert_eq!(n, 1);
        drop(s);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn now_is_rfc3339() {
        let n = now();
        assert_eq!(n.len(), 20);
        assert!(n.starts_with("20"), "{n}");
    }
}
