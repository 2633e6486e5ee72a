//! The matrix and its execution: cells, order, set-up, cold caches, time limits, progress,
//! resume, and the noise guard.
//!
//! Each measurement runs as a child `fsbench` process with `--json FILE`: every kind keeps
//! one contract (the JSON it already writes), cells are isolated from each other, and a
//! stuck or interrupted measurement can be stopped without taking the runner down.

use anyhow::{bail, Context, Result};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::handoff::Handoff;
use super::noise;
use super::plan::{AgePer, Arg, Device, Fresh, Kind, Order, Plan, SETTING_FACTORS};
use super::store::{self, RunRecord, Store};
use super::target::{self, Journal, Ready};

/// One combination of factor levels.
#[derive(Debug, Clone)]
pub struct Cell {
    pub idx: usize,
    pub measurement: usize,
    pub target: String,
    pub cache: String,
    /// The plan-wide device-setting factors and their levels in this cell.
    pub settings: Vec<(String, String)>,
    /// The measurement's parameter factors and their levels in this cell.
    pub factors: Vec<(String, String)>,
}

impl Cell {
    /// Every factor of the cell, plan-wide ones first.
    pub fn labels(&self, plan: &Plan) -> Vec<(String, String)> {
        let mut v = vec![
            (
                "measurement".to_string(),
                plan.measurements[self.measurement].name.clone(),
            ),
            ("target".to_string(), self.target.clone()),
            ("cache".to_string(), self.cache.clone()),
        ];
        v.extend(self.settings.iter().cloned());
        v.extend(self.factors.iter().cloned());
        v
    }

    pub fn describe(&self, plan: &Plan) -> String {
        self.labels(plan)
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The cartesian product of the factors, per measurement, less the excluded combinations.
/// Indices are stable for a given plan, which is what --resume relies on.
fn product(factors: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (k, levels) in factors {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                levels.iter().map(move |l| {
                    let mut c = c.clone();
                    c.push((k.clone(), l.clone()));
                    c
                })
            })
            .collect();
    }
    combos
}

/// The most cells a plan may have. Each cell is measured at least once per repetition, for
/// a second or more: a plan past this bound is a mistake in its factors (an extra level
/// list, a range meant as two values), not an experiment that could finish.
pub const MAX_CELLS: usize = 100_000;

/// How many cells the plan's factors make before exclusions (saturating), counted without
/// making them.
pub fn planned_cells(plan: &Plan) -> usize {
    let count =
        |f: &[(String, Vec<String>)]| f.iter().fold(1usize, |n, (_, l)| n.saturating_mul(l.len()));
    let per = plan
        .target_levels
        .len()
        .saturating_mul(plan.cache_levels.len())
        .saturating_mul(count(&plan.setting_levels));
    plan.measurements.iter().fold(0usize, |n, m| {
        n.saturating_add(per.saturating_mul(count(&m.factors)))
    })
}

pub fn cells(plan: &Plan) -> Vec<Cell> {
    let mut out = Vec::new();
    let settings = product(&plan.setting_levels);
    for (mi, m) in plan.measurements.iter().enumerate() {
        let combos = product(&m.factors);
        for t in &plan.target_levels {
            for cache in &plan.cache_levels {
                for sv in &settings {
                    for f in &combos {
                        let cell = Cell {
                            idx: 0,
                            measurement: mi,
                            target: t.clone(),
                            cache: cache.clone(),
                            settings: sv.clone(),
                            factors: f.clone(),
                        };
                        let labels = cell.labels(plan);
                        let excluded = plan.excludes.iter().any(|ex| {
                            ex.iter()
                                .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
                        });
                        if !excluded {
                            out.push(cell);
                        }
                    }
                }
            }
        }
    }
    for (i, c) in out.iter_mut().enumerate() {
        c.idx = i;
    }
    out
}

/// The order of the cells in repetition round `round`: never all repetitions of one cell
/// before the next. Interleaved rotates the declaration order by one cell per round;
/// random draws a permutation per round from the plan's seed.
pub fn order(plan: &Plan, n: usize, round: u32) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    match plan.order {
        Order::Interleaved => {
            if n > 0 {
                v.rotate_left(round as usize % n);
            }
        }
        Order::Random => {
            let mut rng = rand_pcg::Pcg64::seed_from_u64(
                plan.seed ^ (round as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            );
            v.shuffle(&mut rng);
        }
    }
    v
}

/// Where a `find`, `layout` or `scan` cell looks, relative to the target.
fn walk_path(plan: &Plan, cell: &Cell) -> Option<String> {
    let m = &plan.measurements[cell.measurement];
    if let Some((_, p)) = m.params.iter().find(|(k, _)| k == "path") {
        return Some(p.clone());
    }
    if m.kind == Kind::Find && m.params.iter().any(|(k, _)| k == "tree_files") {
        return Some(tree_dir_name(&m.name));
    }
    None
}

fn tree_dir_name(measurement: &str) -> String {
    format!("fsbench-tree-{measurement}")
}

/// The child's command line (after the binary), measuring in `dir`, writing `json`;
/// `scratch` is the experiment's local directory for what a measurement writes beside a
/// target it only reads (a build with `src`).
pub fn command(
    plan: &Plan,
    cell: &Cell,
    dir: &Path,
    json_out: &Path,
    scratch: &Path,
) -> Vec<String> {
    let m = &plan.measurements[cell.measurement];
    let mut values: Vec<(String, String)> = m.params.clone();
    values.extend(cell.factors.iter().cloned());
    let mut args = vec![m.kind.subcommand().to_string()];
    let pos = values
        .iter()
        .find(|(k, _)| matches!(m.kind.param(k), Some((_, _, Arg::Positional, _))))
        .map(|(_, v)| v.clone());
    match m.kind {
        Kind::Workload | Kind::Postmark => {
            if let Some(p) = pos {
                args.push(p);
            }
            args.extend(["--dir".into(), dir.display().to_string()]);
        }
        Kind::Build => match values.iter().find(|(k, _)| k == "src") {
            // The target's tree is built; objects and output go to the local scratch.
            Some((_, src)) => args.extend([
                "--src".into(),
                if src == "." {
                    dir.display().to_string()
                } else {
                    dir.join(src).display().to_string()
                },
                "--dir".into(),
                scratch.display().to_string(),
            ]),
            None => args.extend(["--dir".into(), dir.display().to_string()]),
        },
        Kind::Andrew => args.extend(["--dir".into(), dir.display().to_string()]),
        Kind::Replay => {
            args.push("replay".into());
            if let Some(p) = pos {
                args.push(p);
            }
            match values.iter().find(|(k, _)| k == "over") {
                // Over the target's own files; the (empty) run directory goes to scratch.
                Some((_, over)) => args.extend([
                    "--over".into(),
                    if over == "." {
                        dir.display().to_string()
                    } else {
                        dir.join(over).display().to_string()
                    },
                    "--dir".into(),
                    scratch.display().to_string(),
                ]),
                None => args.extend(["--dir".into(), dir.display().to_string()]),
            }
        }
        Kind::Find | Kind::Layout | Kind::Scan => {
            let d = match walk_path(plan, cell) {
                Some(p) => dir.join(p),
                None => dir.to_path_buf(),
            };
            args.push(d.display().to_string());
        }
    }
    args.extend(["--json".into(), json_out.display().to_string()]);
    for (k, v) in &values {
        match m.kind.param(k) {
            Some((_, flag, Arg::Value, _)) => args.extend([flag.to_string(), v.clone()]),
            Some((_, flag, Arg::Switch, _)) => {
                if v == "true" {
                    args.push(flag.to_string());
                }
            }
            Some(_) => {}
            None => args.extend(["-s".into(), format!("{k}={v}")]),
        }
    }
    if matches!(m.kind, Kind::Build | Kind::Replay) && cell.cache == "cold" {
        // As for workloads: cold again after the tree is written or listed.
        args.push("--cold".into());
    }
    if m.kind == Kind::Workload {
        args.push("-q".into());
        if cell.cache == "cold" {
            // The runner drops caches before the child starts; `run --cold` drops them
            // again after laying out the filesets, so the measurement itself starts cold.
            args.push("--cold".into());
        }
    }
    args
}

/// Options of `fsbench experiment`.
pub struct Options {
    pub plan: PathBuf,
    pub outdir: Option<PathBuf>,
    pub quick: bool,
    pub dry_run: bool,
    pub resume: bool,
    pub strict: bool,
}

/// Steps that need root, across the plan's targets and protocol.
pub fn root_steps(plan: &Plan, cells: &[Cell]) -> Vec<String> {
    let mut v = Vec::new();
    for t in plan.targets_in_setup_order() {
        for (s, root) in target::steps(t) {
            if root {
                v.push(format!("target {}: {s}", t.name));
            }
        }
    }
    if cells.iter().any(|c| c.cache == "cold") {
        v.push("cache = cold: sync and drop the page cache before each measurement".into());
    }
    for (k, levels) in &plan.setting_levels {
        if SETTING_FACTORS.contains(&k.as_str()) {
            v.push(format!(
                "factor {k} ({}): write the device's settings under /sys/block/DEV/queue before each measurement",
                levels.join(", ")
            ));
        }
    }
    if cells.iter().any(|c| c.cache == "remount") {
        v.push(
            "cache = remount: unmount and mount the target's file system before each measurement"
                .into(),
        );
    }
    v
}

/// Programs the plan's set-up runs that are not on PATH.
pub fn missing_tools(plan: &Plan) -> Vec<String> {
    let mut need: Vec<String> = Vec::new();
    for t in plan.targets_in_setup_order() {
        match &t.kind {
            super::plan::TargetKind::Image { fs, .. } => {
                need.extend([format!("mkfs.{fs}"), "mount".into(), "umount".into()])
            }
            super::plan::TargetKind::Disk { fs, .. } => need.push(format!("mkfs.{fs}")),
            super::plan::TargetKind::Overlay { .. } => {
                need.extend(["mount".into(), "umount".into()])
            }
            super::plan::TargetKind::Dir { .. } | super::plan::TargetKind::Remote { .. } => {}
        }
    }
    need.sort();
    need.dedup();
    let path = std::env::var_os("PATH").unwrap_or_default();
    need.into_iter()
        .filter(|p| {
            !std::env::split_paths(&path)
                .chain([PathBuf::from("/sbin"), PathBuf::from("/usr/sbin")])
                .any(|d| d.join(p).is_file())
        })
        .collect()
}

const OUT_MARKER: &str = ".fsbench-experiment";

fn fmt_secs(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, s % 3600 / 60, s % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

fn dry_run(plan: &Plan, cells: &[Cell]) {
    println!(
        "experiment {} ({}): {} cells x {} repetitions = {} runs, order {:?}, fresh targets per {:?}{}",
        plan.name,
        if plan.quick { "quick scale" } else { "full scale" },
        cells.len(),
        plan.repetitions,
        cells.len() as u64 * plan.repetitions as u64,
        plan.order,
        plan.fresh,
        if plan.warmup_runs > 0 { format!(", {} warm-up run(s) per cell", plan.warmup_runs) } else { String::new() }
    );
    println!("\nset-up steps:");
    for t in plan.targets_in_setup_order() {
        for (s, root) in target::steps(t) {
            println!("  {:<12} {s}{}", t.name, if root { "  [root]" } else { "" });
        }
    }
    println!("\ncells:");
    let dummy = Path::new("TARGET");
    for c in cells {
        let args = command(
            plan,
            c,
            dummy,
            Path::new("RUN.json"),
            Path::new("OUTDIR/scratch"),
        );
        println!(
            "  {:>3}  {}\n       fsbench {}",
            c.idx + 1,
            c.describe(plan),
            args.join(" ")
        );
    }
    let runs = (plan.repetitions + plan.warmup_runs) as f64;
    let mut known = 0.0;
    let mut unknown = 0usize;
    for c in cells {
        match plan.measurements[c.measurement].fixed_seconds() {
            Some(s) => known += s * runs,
            None => unknown += 1,
        }
    }
    print!(
        "\nestimated time: {} for the runs with a fixed duration",
        fmt_secs(known)
    );
    if unknown > 0 {
        print!(
            "; {} cells have no fixed duration ({} runs, each at most the time limit of {})",
            unknown,
            unknown as f64 * runs,
            fmt_secs(plan.time_limit_s)
        );
    }
    println!();
}

/// The targets as set up, with the journal that tears them down.
struct Env {
    journal: Journal,
    ready: Vec<Ready>,
    up: bool,
    /// With device settings as factors: each target's device settings as set up (the
    /// values cells vary from), and what the last cell asked of each device.
    device_base: std::collections::BTreeMap<String, Device>,
    device_last: std::collections::BTreeMap<String, Device>,
}

impl Env {
    fn set_up(
        &mut self,
        plan: &Plan,
        cells: &[Cell],
        outdir: &Path,
        generation: u32,
    ) -> Result<()> {
        self.ready.clear();
        for t in plan.targets_in_setup_order() {
            eprintln!("fsbench: setting up target {} ({})", t.name, t.kind_name());
            let ctx = target::Ctx {
                outdir,
                plan,
                ready: &self.ready,
                generation,
            };
            let mut r = target::set_up(t, &ctx, &mut self.journal)
                .with_context(|| format!("setting up target {}", t.name))?;
            if let Some(a) = &t.age {
                eprintln!("fsbench: aging target {} ({} operations)", t.name, a.ops);
                target::age::run(
                    a,
                    &mut r,
                    outdir,
                    &format!("g{generation}"),
                    &mut self.journal,
                )?;
            }
            self.ready.push(r);
        }
        // Trees for `find` cells, made once per set-up.
        for c in cells {
            let m = &plan.measurements[c.measurement];
            let Some(files) = m
                .params
                .iter()
                .find(|(k, _)| k == "tree_files")
                .map(|(_, v)| v.parse::<u64>().unwrap_or(0))
            else {
                continue;
            };
            let dirs = m
                .params
                .iter()
                .find(|(k, _)| k == "tree_dirs")
                .map_or(10, |(_, v)| v.parse::<u64>().unwrap_or(10));
            let r = self
                .ready
                .iter()
                .find(|r| r.name == c.target)
                .expect("target set up");
            let tree = r.dir.join(tree_dir_name(&m.name));
            if tree.exists() {
                continue;
            }
            make_tree(&tree, files, dirs.max(1), &mut self.journal)?;
        }
        self.device_base.clear();
        self.device_last.clear();
        if plan
            .setting_levels
            .iter()
            .any(|(k, _)| SETTING_FACTORS.contains(&k.as_str()))
        {
            for tn in &plan.target_levels {
                let r = self.ready(tn);
                let dev = r.device.clone().with_context(|| {
                    format!(
                        "target {tn}: {} is on no block device, and the plan varies device settings",
                        r.dir.display()
                    )
                })?;
                let mut base = target::device::current(&dev)?;
                let t = plan.target(tn);
                if t.device.scheduler.is_some() && t.device.scheduler == base.scheduler {
                    base.tunables = t.device.tunables.clone();
                }
                self.device_base.insert(tn.clone(), base);
            }
        }
        self.up = true;
        Ok(())
    }

    /// Bring the cell's target device to the cell's settings (device-setting factors).
    fn apply_settings(&mut self, plan: &Plan, cell: &Cell) -> Result<()> {
        let t = plan.target(&cell.target);
        if matches!(t.kind, super::plan::TargetKind::Remote { .. }) {
            let r = self
                .ready
                .iter_mut()
                .find(|r| r.name == cell.target)
                .expect("target set up");
            return target::remote::apply_cell(t, &cell.settings, r);
        }
        let device_settings: Vec<(String, String)> = cell
            .settings
            .iter()
            .filter(|(k, _)| SETTING_FACTORS.contains(&k.as_str()))
            .cloned()
            .collect();
        if device_settings.is_empty() {
            return Ok(());
        }
        let base = &self.device_base[&cell.target];
        let want = target::device::for_cell(base, &device_settings, &plan.devices);
        let idx = self
            .ready
            .iter()
            .position(|r| r.name == cell.target)
            .expect("target set up");
        let dev = self.ready[idx].device.clone().unwrap_or_default();
        let last = self.device_last.get(&dev).cloned();
        target::device::apply_cell(
            &want,
            last.as_ref(),
            &mut self.ready[idx],
            &mut self.journal,
        )
        .with_context(|| {
            format!(
                "target {}: device settings {}",
                cell.target,
                cell.settings
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        })?;
        self.device_last.insert(dev, want);
        Ok(())
    }

    fn tear_down(&mut self) -> Result<()> {
        self.up = false;
        self.ready.clear();
        self.journal.undo_to(0)
    }

    fn ready(&self, name: &str) -> &Ready {
        self.ready
            .iter()
            .find(|r| r.name == name)
            .expect("target set up")
    }
}

/// A tree of `files` small files (1-8 KiB) over `dirs` directories, two levels deep.
fn make_tree(dir: &Path, files: u64, dirs: u64, j: &mut Journal) -> Result<()> {
    target::make_marked_dir(dir, j)?;
    let per_top = (dirs as f64).sqrt().ceil().max(1.0) as u64;
    let buf = vec![b'x'; 8192];
    for d in 0..dirs {
        std::fs::create_dir_all(dir.join(format!("d{}", d / per_top)).join(format!("d{d}")))?;
    }
    for f in 0..files {
        let d = f % dirs;
        let p = dir
            .join(format!("d{}", d / per_top))
            .join(format!("d{d}"))
            .join(format!("f{f}"));
        let size = 1024 * (1 + (f * 2654435761 % 8) as usize);
        std::fs::write(&p, &buf[..size]).with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

enum Outcome {
    Ok(Value),
    Failed(String),
    Timeout,
    Interrupted,
}

fn measure(
    args: &[String],
    log: &Path,
    json_out: &Path,
    limit: f64,
    handoff: Option<Handoff>,
) -> Result<Outcome> {
    let exe = crate::experiment::self_exe()?;
    let logf = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let _ = std::fs::remove_file(json_out);
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(logf.try_clone()?)
        .stderr(logf);
    if let Some(h) = &handoff {
        h.attach(&mut cmd);
    }
    let mut child = cmd.spawn().context("starting the measurement")?;
    if let Some(h) = handoff {
        h.serve();
    }
    let start = Instant::now();
    let mut stop_sent: Option<(Instant, bool)> = None;
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        let interrupted = crate::engine::interrupted();
        if stop_sent.is_none() && (interrupted || start.elapsed().as_secs_f64() > limit) {
            timed_out = !interrupted;
            // SAFETY: signalling our own child by pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            stop_sent = Some((Instant::now(), false));
        }
        if let Some((at, killed)) = stop_sent {
            if !killed && at.elapsed() > Duration::from_secs(15) {
                let _ = child.kill();
                stop_sent = Some((at, true));
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if crate::engine::interrupted() {
        return Ok(Outcome::Interrupted);
    }
    if timed_out {
        return Ok(Outcome::Timeout);
    }
    if !status.success() {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Ok(Outcome::Failed(format!(
            "exit {status}: {}",
            tail.join(" | ")
        )));
    }
    let text = std::fs::read_to_string(json_out)
        .with_context(|| format!("the measurement wrote no {}", json_out.display()))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", json_out.display()))?;
    Ok(Outcome::Ok(v))
}

fn prepare_outdir(plan: &Plan, o: &Options) -> Result<PathBuf> {
    let outdir = o
        .outdir
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("fsbench-{}", plan.name)));
    if o.resume {
        if !outdir.join(OUT_MARKER).exists() || !outdir.join(store::FILE).exists() {
            bail!(
                "--resume: {} holds no experiment to continue",
                outdir.display()
            );
        }
    } else if outdir.exists() {
        let empty = std::fs::read_dir(&outdir)?.next().is_none();
        if outdir.join(OUT_MARKER).exists() {
            bail!(
                "{} holds an experiment already: continue it with --resume, or choose another -o",
                outdir.display()
            );
        }
        if !empty {
            bail!(
                "{} exists and is not empty; choose another -o",
                outdir.display()
            );
        }
    }
    std::fs::create_dir_all(outdir.join("runs"))
        .with_context(|| format!("creating {}", outdir.display()))?;
    std::fs::write(
        outdir.join(OUT_MARKER),
        format!("fsbench experiment {}\n", plan.name),
    )?;
    outdir.canonicalize().context("output directory")
}

/// `fsbench experiment PLAN`.
pub fn run(o: &Options) -> Result<()> {
    let Some((plan, cells)) = checked_plan(o)? else {
        return Ok(());
    };
    let outdir = prepare_outdir(&plan, o)?;
    let (mut st, exp, cell_ids) = open_store(&plan, &cells, &outdir)?;
    crate::engine::install_signal_handlers();
    let mut env = Env {
        journal: Journal::create(&outdir)?,
        ready: Vec::new(),
        up: false,
        device_base: Default::default(),
        device_last: Default::default(),
    };
    env.journal.verbose = true;
    let mut session = Session {
        plan: &plan,
        cells: &cells,
        cell_ids,
        outdir: &outdir,
        st: &mut st,
        env: &mut env,
        generation: 0,
        failures: 0,
        progress: Progress::default(),
    };
    session.count_todo()?;
    let result = session.rounds().and_then(|()| session.strict(o, exp));
    let failures = session.failures;
    let teardown = env.tear_down();
    drop(env);
    result?;
    teardown?;
    finish(o, &mut st, exp, &outdir, failures)
}

/// The plan, validated for this machine, and its cells; `None` after a dry run.
fn checked_plan(o: &Options) -> Result<Option<(Plan, Vec<Cell>)>> {
    let plan = super::plan::load(&o.plan, o.quick).map_err(|e| anyhow::anyhow!("{e}"))?;
    let planned = planned_cells(&plan);
    if planned > MAX_CELLS {
        bail!(
            "{}: the factors make {planned} cells (before exclusions), more than the {MAX_CELLS} a plan may have; fewer levels, or split the plan",
            o.plan.display()
        );
    }
    let cells = cells(&plan);
    if cells.is_empty() {
        bail!(
            "{}: every combination is excluded; nothing to measure",
            o.plan.display()
        );
    }
    if o.dry_run {
        dry_run(&plan, &cells);
        return Ok(None);
    }
    let need_root = root_steps(&plan, &cells);
    if !need_root.is_empty() && !crate::engine::is_root() {
        bail!(
            "this plan needs root for:\n  {}\nrun it as root, or measure in existing directories (kind = \"dir\") with warm caches",
            need_root.join("\n  ")
        );
    }
    let missing = missing_tools(&plan);
    if !missing.is_empty() {
        bail!(
            "this plan needs programs that are not installed: {}",
            missing.join(", ")
        );
    }
    Ok(Some((plan, cells)))
}

/// The results database with the experiment and its cells recorded (found again on
/// --resume): the store, the experiment's id and each cell's id.
fn open_store(plan: &Plan, cells: &[Cell], outdir: &Path) -> Result<(Store, i64, Vec<i64>)> {
    let st = Store::open(outdir)?;
    let baseline: Value = plan
        .baseline
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let exp = match st.experiment()? {
        Some((id, hash)) => {
            if hash != plan.hash() {
                bail!(
                    "--resume: {} was started with a different plan (or scale); the plan must be unchanged to continue",
                    outdir.display()
                );
            }
            id
        }
        None => st.new_experiment(
            &plan.name,
            &plan.file.display().to_string(),
            &plan.text,
            &plan.hash(),
            plan.quick,
            plan.seed,
            plan.repetitions,
            plan.noise_threshold,
            &baseline,
        )?,
    };
    let mut cell_ids = Vec::new();
    st.begin()?;
    for c in cells {
        let cmd = command(
            plan,
            c,
            Path::new("{target}"),
            Path::new("{json}"),
            Path::new("{scratch}"),
        );
        cell_ids.push(st.cell(
            exp,
            c.idx,
            &plan.measurements[c.measurement].name,
            plan.measurements[c.measurement].kind.name(),
            &c.target,
            &c.cache,
            &Value::Object(labels_json(plan, c)),
            &json!(cmd),
        )?);
    }
    st.commit()?;
    Ok((st, exp, cell_ids))
}

/// A cell's factor levels as a JSON object.
fn labels_json(plan: &Plan, cell: &Cell) -> serde_json::Map<String, Value> {
    cell.labels(plan)
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect()
}

/// Runs done in this invocation, for the progress line's estimate.
#[derive(Default)]
struct Progress {
    started: Option<Instant>,
    todo_total: usize,
    done_now: usize,
    measured_s: f64,
}

/// An experiment being run: its plan, cells, store and targets.
struct Session<'a> {
    plan: &'a Plan,
    cells: &'a [Cell],
    cell_ids: Vec<i64>,
    outdir: &'a Path,
    st: &'a mut Store,
    env: &'a mut Env,
    /// Set-ups so far (each names its targets' files apart).
    generation: u32,
    failures: usize,
    progress: Progress,
}

impl Session<'_> {
    /// Count the runs still to do, and say so when resuming.
    fn count_todo(&mut self) -> Result<()> {
        let (plan, cells) = (self.plan, self.cells);
        let mut todo_total = 0usize;
        for (i, _) in cells.iter().enumerate() {
            for r in 0..plan.repetitions {
                if !self.st.done(self.cell_ids[i], r)? {
                    todo_total += 1;
                }
            }
        }
        let all = cells.len() * plan.repetitions as usize;
        if todo_total < all {
            eprintln!(
                "fsbench: resuming: {} of {} runs stored, {} to go",
                all - todo_total,
                all,
                todo_total
            );
        }
        self.progress = Progress {
            started: Some(Instant::now()),
            todo_total,
            ..Default::default()
        };
        Ok(())
    }

    /// Every repetition round, each in its order; stops early on Ctrl-C.
    fn rounds(&mut self) -> Result<()> {
        let plan = self.plan;
        for round in 0..plan.repetitions {
            let todo: Vec<usize> = order(plan, self.cells.len(), round)
                .into_iter()
                .filter(|&i| !self.st.done(self.cell_ids[i], round).unwrap_or(false))
                .collect();
            if todo.is_empty() {
                continue;
            }
            if crate::engine::interrupted() {
                return Ok(());
            }
            if !self.env.up || plan.fresh == Fresh::Repetition {
                if self.env.up {
                    self.env.tear_down()?;
                }
                self.set_up()?;
            } else {
                self.age_per_repetition(round)?;
            }
            if round == 0 && plan.warmup_runs > 0 {
                self.warm_up(&todo)?;
            }
            self.measure_round(round, &todo)?;
            if crate::engine::interrupted() {
                return Ok(());
            }
        }
        Ok(())
    }

    fn set_up(&mut self) -> Result<()> {
        self.generation += 1;
        self.env
            .set_up(self.plan, self.cells, self.outdir, self.generation)
    }

    /// Aging per repetition continues on the same targets.
    fn age_per_repetition(&mut self, round: u32) -> Result<()> {
        let env = &mut *self.env;
        for t in self.plan.targets_in_setup_order() {
            if let Some(a) = t.age.as_ref().filter(|a| a.per == AgePer::Repetition) {
                eprintln!(
                    "fsbench: aging target {} for repetition {}",
                    t.name,
                    round + 1
                );
                let idx = env
                    .ready
                    .iter()
                    .position(|r| r.name == t.name)
                    .expect("set up");
                let mut r = env.ready[idx].clone();
                target::age::run(
                    a,
                    &mut r,
                    self.outdir,
                    &format!("r{round}"),
                    &mut env.journal,
                )?;
                env.ready[idx] = r;
            }
        }
        Ok(())
    }

    /// The plan's warm-up runs of each cell, stored as such, before the first round.
    fn warm_up(&mut self, todo: &[usize]) -> Result<()> {
        let plan = self.plan;
        for &i in todo {
            for w in 0..plan.warmup_runs {
                if crate::engine::interrupted() {
                    return Ok(());
                }
                eprintln!(
                    "fsbench: warm-up {}/{} of cell {}: {}",
                    w + 1,
                    plan.warmup_runs,
                    i + 1,
                    self.cells[i].describe(plan)
                );
                self.run_one(i, self.cell_ids[i], 0, "warmup")?;
            }
        }
        Ok(())
    }

    /// One repetition of the cells to do, with a progress line before each.
    fn measure_round(&mut self, round: u32, todo: &[usize]) -> Result<()> {
        let plan = self.plan;
        for &i in todo {
            if crate::engine::interrupted() {
                return Ok(());
            }
            let p = &self.progress;
            let elapsed = p.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
            let eta = if p.done_now > 0 {
                p.measured_s / p.done_now as f64 * (p.todo_total - p.done_now) as f64
            } else {
                f64::NAN
            };
            eprintln!(
                "fsbench: [cell {}/{} rep {}/{}] {} | elapsed {}, remaining {}",
                i + 1,
                self.cells.len(),
                round + 1,
                plan.repetitions,
                self.cells[i].describe(plan),
                fmt_secs(elapsed),
                if eta.is_nan() {
                    "?".to_string()
                } else {
                    format!("~{}", fmt_secs(eta))
                }
            );
            let t0 = Instant::now();
            let ok = self.run_one(i, self.cell_ids[i], round, "")?;
            if !ok && !crate::engine::interrupted() {
                self.failures += 1;
            }
            self.progress.measured_s += t0.elapsed().as_secs_f64();
            self.progress.done_now += 1;
        }
        Ok(())
    }

    /// --strict: measure the disturbed runs again; each stays valid until its
    /// replacement is stored.
    fn strict(&mut self, o: &Options, exp: i64) -> Result<()> {
        if !o.strict || crate::engine::interrupted() {
            return Ok(());
        }
        let disturbed: Vec<(i64, i64, u32)> = {
            let mut q = self.st.db.prepare(
                "SELECT runs.id, runs.cell_id, runs.repetition FROM runs JOIN cells ON cells.id = runs.cell_id WHERE cells.experiment_id = ?1 AND runs.disturbed = 1 AND runs.superseded = 0 AND runs.status = 'ok'",
            )?;
            let rows = q.query_map([exp], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        if disturbed.is_empty() {
            return Ok(());
        }
        eprintln!(
            "fsbench: --strict: repeating {} disturbed run(s)",
            disturbed.len()
        );
        if !self.env.up {
            self.set_up()?;
        }
        for (run_id, cell_id, rep) in disturbed {
            if crate::engine::interrupted() {
                return Ok(());
            }
            let i = self
                .cell_ids
                .iter()
                .position(|&c| c == cell_id)
                .expect("cell of this experiment");
            eprintln!(
                "fsbench: [strict] cell {}/{} rep {}: {}",
                i + 1,
                self.cells.len(),
                rep + 1,
                self.cells[i].describe(self.plan)
            );
            if self.run_one(i, cell_id, rep, "")? {
                self.st.supersede(run_id)?;
            }
        }
        Ok(())
    }

    /// Run one measurement of cell `i` and store it. Returns whether it succeeded.
    fn run_one(&mut self, i: usize, cell_id: i64, rep: u32, status_override: &str) -> Result<bool> {
        let cell = &self.cells[i];
        self.env.apply_settings(self.plan, cell)?;
        let r = Run {
            plan: self.plan,
            cell,
            cell_id,
            rep,
            status_override,
            env: self.env,
            outdir: self.outdir,
        }
        .measure_and_store(self.st);
        // A remount gave the target's mounts new ids: the saved journal follows them.
        self.env.journal.refresh()?;
        r
    }
}

/// After the last round: the summary, the report, and the exit status.
fn finish(o: &Options, st: &mut Store, exp: i64, outdir: &Path, failures: usize) -> Result<()> {
    if crate::engine::interrupted() {
        bail!(
            "interrupted: every target is torn down; {} runs stored. Continue with `fsbench experiment {} -o {} --resume{}`",
            st.db.query_row("SELECT COUNT(*) FROM runs WHERE status = 'ok'", [], |r| r.get::<_, i64>(0))?,
            o.plan.display(),
            outdir.display(),
            if o.quick { " --quick" } else { "" }
        );
    }
    st.finish(exp)?;
    print!(
        "{}",
        super::summary::render_text(&super::summary::summarise(st)?)
    );
    eprintln!("fsbench: results in {}", outdir.join(store::FILE).display());
    let page = outdir.join("report.html");
    match super::report_input::load(outdir) {
        Ok(input) if !input.groups.is_empty() || !input.figure_groups.is_empty() => {
            std::fs::write(&page, crate::report::html::render(&input))
                .with_context(|| format!("writing {}", page.display()))?;
            eprintln!("fsbench: report in {}", page.display());
        }
        Ok(_) => eprintln!("fsbench: no workload results to plot, so no report.html"),
        Err(e) => eprintln!("fsbench: could not write the report: {e:#}"),
    }
    if failures > 0 {
        bail!(
            "{failures} run(s) failed; see the logs in {}",
            outdir.join("runs").display()
        );
    }
    Ok(())
}

use crate::remote::state::RemoteStats;

/// The remounts a `cache = remount` run made (or asked for), as the child or the runner
/// logged them.
type RemountLog = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// One measurement of one cell, about to be run and stored.
struct Run<'a> {
    plan: &'a Plan,
    cell: &'a Cell,
    cell_id: i64,
    rep: u32,
    /// The status stored instead of "ok" ("warmup" for warm-up runs).
    status_override: &'a str,
    env: &'a Env,
    outdir: &'a Path,
}

impl Run<'_> {
    fn measure_and_store(&self, st: &mut Store) -> Result<bool> {
        let (plan, cell, rep) = (self.plan, self.cell, self.rep);
        let ready = self.env.ready(&cell.target);
        let tag = format!(
            "c{:03}-r{rep:02}{}",
            cell.idx + 1,
            if self.status_override.is_empty() {
                ""
            } else {
                "-warmup"
            }
        );
        let json_out = self.outdir.join("runs").join(format!("{tag}.json"));
        let log = self.outdir.join("runs").join(format!("{tag}.log"));
        let scratch = self.outdir.join("scratch");
        std::fs::create_dir_all(&scratch)?;
        let args = command(plan, cell, &ready.dir, &json_out, &scratch);
        let (remounts, handoff) = self.prepare_caches(ready)?;
        let server_pids = self.server_pids();
        let remote_before = target::remote::stats_now(ready);
        let started_at = store::now();
        let before = noise::sample();
        let t0 = Instant::now();
        let mut outcome = measure(&args, &log, &json_out, plan.time_limit_s, handoff)?;
        let elapsed = t0.elapsed().as_secs_f64();
        let after = noise::sample();
        let other = noise::other_fraction(&before, &after, &server_pids);
        let mut applied = json!({
            "target": ready.name,
            "target_kind": plan.target(&cell.target).kind_name(),
            "dir": ready.dir.display().to_string(),
            "settings": ready.applied,
            "command": args,
        });
        if let Some(log) = &remounts {
            let done = log.lock().unwrap().clone();
            if matches!(outcome, Outcome::Ok(_)) && !done.iter().any(|d| d.starts_with("remounted"))
            {
                outcome = Outcome::Failed(
                    "cache = remount: the measurement ended without its file system being remounted"
                        .into(),
                );
            }
            applied["remounts"] = json!(done);
        }
        let mut disturbed = other > plan.noise_threshold;
        disturbed |= self.disk_lateness(ready, &mut applied);
        let remote_run = match (&remote_before, target::remote::stats_now(ready)) {
            (Some(b), Some(a)) => Some(self.remote_traffic(b, &a, &args, &mut applied)),
            _ => None,
        };
        if let Some((_, d)) = &remote_run {
            disturbed |= *d;
        }
        let remote_run = remote_run.map(|(r, _)| r);
        let noise =
            json!({"load_avg_1": before.load1, "other_cpu_frac": other, "disturbed": disturbed});
        let experiment = json!({"name": plan.name, "cell": cell.idx + 1, "repetition": rep + 1, "factors": labels_json(plan, cell), "applied": applied, "noise": noise});
        let (status, error, results) = self.verdict(outcome, remote_run, experiment);
        if status == "interrupted" {
            // Partial measurements are not results: --resume runs the cell again.
            return Ok(false);
        }
        if let Some(e) = &error {
            eprintln!(
                "fsbench: cell {} rep {}: {status}: {e}",
                cell.idx + 1,
                rep + 1
            );
        }
        st.add_run(&RunRecord {
            cell_id: self.cell_id,
            repetition: rep,
            status,
            started_at: &started_at,
            elapsed_s: elapsed,
            load_avg_1: before.load1,
            other_cpu_frac: Some(other),
            disturbed: disturbed && status == "ok",
            error: error.as_deref(),
            applied: &applied,
            results: results.as_ref(),
        })?;
        Ok(status == "ok" || status == "warmup")
    }

    /// The cell's cache state: caches dropped, a remount done or handed to the child, or
    /// (warm) the previous measurement's deletes committed.
    fn prepare_caches(&self, ready: &Ready) -> Result<(Option<RemountLog>, Option<Handoff>)> {
        let cell = self.cell;
        let mut remounts: Option<RemountLog> = None;
        let mut handoff = None;
        if cell.cache == "cold" {
            crate::engine::drop_caches().map_err(|e| anyhow::anyhow!("{e}"))?;
        } else if cell.cache == "remount" {
            let set = target::remount_set(&self.env.ready, &cell.target);
            let kind = self.plan.measurements[cell.measurement].kind;
            if matches!(kind, Kind::Layout | Kind::Scan) {
                // These measure a tree as they find it: remount before they start.
                let what = target::remount(&set)
                    .with_context(|| format!("target {}: cache = remount", cell.target))?;
                remounts = Some(std::sync::Arc::new(std::sync::Mutex::new(vec![what])));
            } else {
                // The others prepare first (layout, a source tree): the child asks for the
                // remount at the point where a cold run drops the caches.
                let h = Handoff::new(set)?;
                remounts = Some(h.log.clone());
                handoff = Some(h);
            }
        } else {
            // Commit what the previous measurement left (its deletes included): btrfs frees
            // deleted extents only at a transaction commit, and until then a back-to-back run
            // finds the space it needs taken.
            sync_fs(&ready.dir);
        }
        Ok((remounts, handoff))
    }

    /// Simulated-disk and remote servers are the measurement's own machinery, not noise.
    fn server_pids(&self) -> Vec<i32> {
        let ready = &self.env.ready;
        let mut pids: Vec<i32> = ready
            .iter()
            .filter_map(|r| r.disk.as_ref())
            .filter_map(|d| crate::disk::state::StateDir::new(d).ok()?.live_pid())
            .collect();
        pids.extend(ready.iter().filter_map(|r| {
            let n = r.applied.get("remote")?.as_str()?;
            crate::remote::state::StateDir::new(n).ok()?.live_pid()
        }));
        pids
    }

    /// A simulated disk's lateness over the run, into `applied`; whether it disturbed the
    /// measurement.
    fn disk_lateness(&self, ready: &Ready, applied: &mut Value) -> bool {
        let Some(d) = &ready.disk else {
            return false;
        };
        let Some(s) = crate::disk::state::StateDir::new(d)
            .ok()
            .and_then(|s| s.read_stats())
        else {
            return false;
        };
        let late = if s.service_us.mean > 0.0 {
            s.server_late_us.mean / s.service_us.mean
        } else {
            0.0
        };
        applied["disk_late_frac"] = json!(late);
        applied["disk_requests"] = json!(s.requests);
        late > self.plan.noise_threshold
    }

    /// A remote's traffic over the run, into `applied`: the figures and whether they
    /// show a disturbed measurement.
    fn remote_traffic(
        &self,
        before: &RemoteStats,
        after: &RemoteStats,
        args: &[String],
        applied: &mut Value,
    ) -> (Value, bool) {
        let d = after.since(before);
        let late = d.lateness();
        // The child empties the client cache once when it runs cold; any other emptying
        // came from outside (another cold run on this machine) and changed what it measured.
        let own = args.iter().any(|a| a == "--cold") as u64;
        let foreign = d.cache_drops.saturating_sub(own);
        let r = json!({
            "requests": d.requests,
            "round_trips": d.round_trips,
            "bytes_fetched": d.bytes_fetched,
            "bytes_sent": d.bytes_sent,
            "lookaside_hits": d.lookaside_hits,
            "lookaside_misses": d.lookaside_misses,
            "lookaside_bytes": d.lookaside_bytes,
            "network_wait_s": d.network_wait_s,
            "lost_requests": d.lost_requests,
            "foreign_cache_drops": foreign,
            "late_pct": late.pct,
        });
        applied["remote"] = r.clone();
        let disturbed = late.pct / 100.0 > self.plan.noise_threshold || foreign > 0;
        (r, disturbed)
    }

    /// The status, error and results to store for an outcome; a good result carries the
    /// remote's figures and the experiment's record of the run.
    fn verdict(
        &self,
        outcome: Outcome,
        remote_run: Option<Value>,
        experiment: Value,
    ) -> (&str, Option<String>, Option<Value>) {
        let (status, error, results) = match outcome {
            Outcome::Ok(mut v) => {
                if v.get("interrupted").and_then(|i| i.as_bool()) == Some(true) {
                    (
                        "interrupted",
                        Some("the measurement reports itself interrupted".to_string()),
                        Some(v),
                    )
                } else {
                    if let Some(o) = v.as_object_mut() {
                        if let Some(r) = remote_run {
                            o.insert("remote".into(), r);
                        }
                        o.insert("experiment".into(), experiment);
                    }
                    ("ok", None, Some(v))
                }
            }
            Outcome::Failed(e) => ("failed", Some(e), None),
            Outcome::Timeout => (
                "timeout",
                Some(format!(
                    "stopped after the time limit of {} s",
                    self.plan.time_limit_s
                )),
                None,
            ),
            Outcome::Interrupted => ("interrupted", Some("Ctrl-C".to_string()), None),
        };
        let status = if status == "ok" && !self.status_override.is_empty() {
            self.status_override
        } else {
            status
        };
        (status, error, results)
    }
}

/// `fsbench experiment --cleanup OUTDIR`.
pub fn cleanup(outdir: &Path) -> Result<()> {
    if !outdir.join(OUT_MARKER).exists() {
        bail!(
            "{} is not an experiment's output directory (no {OUT_MARKER})",
            outdir.display()
        );
    }
    let n = Journal::cleanup(outdir)?;
    eprintln!(
        "fsbench: cleanup: {n} step(s) undone in {}",
        outdir.display()
    );
    Ok(())
}

/// `syncfs` the file system holding `dir`, twice (btrfs releases the extents a commit
/// unpinned at the next one). Errors are ignored: this only makes free space accurate.
fn sync_fs(dir: &Path) {
    use std::os::fd::AsRawFd;
    if let Ok(f) = std::fs::File::open(dir) {
        for _ in 0..2 {
            // SAFETY: syncfs on a descriptor we own.
            unsafe { libc::syncfs(f.as_raw_fd()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(order: &str) -> Plan {
        let text = format!(
            r#"
[experiment]
name = "t"
repetitions = 3
order = "{order}"
[[target]]
name = "a"
kind = "dir"
path = "/tmp"
[[target]]
name = "b"
kind = "dir"
path = "/tmp"
[factors]
target = ["a", "b"]
[[measurement]]
name = "pm"
kind = "postmark"
params = {{ number = 10 }}
factors = {{ instances = [1, 2, 4] }}
[[exclude]]
target = "b"
instances = 4
"#
        );
        super::super::plan::parse(Path::new("t.toml"), &text, false).unwrap()
    }

    #[test]
    fn product_less_exclusions() {
        let p = plan("random");
        let c = cells(&p);
        assert_eq!(c.len(), 5);
        assert!(c
            .iter()
            .all(|c| !(c.target == "b" && c.factors[0].1 == "4")));
        let args = command(
            &p,
            &c[1],
            Path::new("/x"),
            Path::new("/j.json"),
            Path::new("/s"),
        );
        assert_eq!(
            args,
            [
                "postmark",
                "--dir",
                "/x",
                "--json",
                "/j.json",
                "--number",
                "10",
                "--instances",
                "2"
            ]
        );
    }

    #[test]
    fn orders_interleave() {
        let p = plan("interleaved");
        assert_eq!(order(&p, 4, 0), [0, 1, 2, 3]);
        assert_eq!(order(&p, 4, 1), [1, 2, 3, 0]);
        let r = plan("random");
        let a = order(&r, 8, 0);
        let b = order(&r, 8, 1);
        assert_ne!(a, b, "a new permutation each round");
        assert_eq!(a, order(&r, 8, 0), "reproducible from the seed");
        let mut s = a.clone();
        s.sort();
        assert_eq!(s, (0..8).collect::<Vec<_>>());
    }
}
