//! An experiment's run: the output directory, the store, the rounds of cells with their
//! warm-ups and --strict repeats, and the summary and report at the end.

use super::env::Env;
use super::measure::{labels_json, Run};
use super::{
    cells, fmt_secs, missing_tools, order, planned_cells, root_steps, stored_command, Cell,
    Options, MAX_CELLS, OUT_MARKER,
};
use crate::experiment::plan::{AgePer, Fresh, Plan};
use crate::experiment::store::{self, Store};
use crate::experiment::target;
use crate::experiment::target::Journal;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

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
    let started = Instant::now();
    let Some((plan, cells)) = checked_plan(o)? else {
        return Ok(());
    };
    let outdir = prepare_outdir(&plan, o)?;
    let (mut st, exp, cell_ids) = open_store(&plan, &cells, &outdir)?;
    fsbench_base::cancel::install_signal_handlers();
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
        resume: o.resume,
        failures: 0,
        progress: Progress::default(),
    };
    let todo = session.count_todo()?;
    let estimate = super::estimate::of(&plan, &cells, &outdir, &todo);
    fsbench_base::errln!(
        "fsbench: estimated time: {} (`--dry-run` shows what it is made of)",
        fmt_secs(estimate.total_s)
    );
    session.progress.most_rounds = estimate.most_rounds.clone();
    let result = session.rounds().and_then(|()| session.strict(o, exp));
    let failures = session.failures;
    let teardown = env.tear_down();
    drop(env);
    result?;
    teardown?;
    finish(o, &mut st, exp, &outdir, failures, (&estimate, started))
}

/// The plan, validated for this machine, and its cells; `None` after a dry run.
fn checked_plan(o: &Options) -> Result<Option<(Plan, Vec<Cell>)>> {
    let plan =
        crate::experiment::plan::load(&o.plan, o.quick).map_err(|e| anyhow::anyhow!("{e}"))?;
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
    super::published::check_attached(&plan, &cells)?;
    for w in super::cache_warnings(&plan, &cells) {
        fsbench_base::errln!("fsbench: warning: {w}");
    }
    if o.dry_run {
        let outdir = o
            .outdir
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("fsbench-{}", plan.name)));
        super::dryrun::print(&plan, &cells, &outdir);
        return Ok(None);
    }
    let need_root = root_steps(&plan, &cells);
    if !need_root.is_empty() && !fsbench_engine::engine::is_root() {
        bail!(
            "this plan needs root for:\n  {}\nrun it as root, or measure in existing directories (kind = \"dir\") with warm caches",
            need_root.join("\n  ")
        );
    }
    if let (Some(at), Some(why)) = (&plan.memory_at, super::cgroup::unavailable()) {
        bail!(
            "{at}: a memory limit runs the measured child in a memory cgroup, and this machine cannot make one: {why}"
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
        None => st.new_experiment(&store::ExperimentRecord {
            name: &plan.name,
            plan_file: &plan.file.display().to_string(),
            plan_text: &plan.text,
            plan_hash: &plan.hash(),
            quick: plan.quick,
            seed: plan.seed,
            repetitions: plan.repetitions,
            noise_threshold: plan.noise_threshold,
            baseline: &baseline,
        })?,
    };
    let mut cell_ids = Vec::new();
    st.begin()?;
    for c in cells {
        let cmd = stored_command(plan, c);
        let m = &plan.measurements[c.measurement];
        cell_ids.push(st.cell(&store::CellRecord {
            experiment_id: exp,
            idx: c.idx,
            measurement: &m.name,
            kind: m.kind.name(),
            target: &c.target,
            cache: &c.cache,
            factors: &Value::Object(labels_json(plan, c)),
            command: &json!(cmd),
        })?);
    }
    st.commit()?;
    Ok((st, exp, cell_ids))
}

/// Runs done in this invocation, for the progress line's estimate.
#[derive(Default)]
struct Progress {
    started: Option<Instant>,
    todo_total: usize,
    done_now: usize,
    measured_s: f64,
    /// The most rounds each cell may run, as the estimate expects.
    most_rounds: Vec<u32>,
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
    /// `--resume`: the first set-up starts aged disks from the images kept for it.
    resume: bool,
    failures: usize,
    progress: Progress,
}

impl Session<'_> {
    /// Count the runs still to do, and say so when resuming; each cell's count.
    fn count_todo(&mut self) -> Result<Vec<u32>> {
        let (plan, cells) = (self.plan, self.cells);
        let mut todo = vec![0u32; cells.len()];
        for (i, n) in todo.iter_mut().enumerate() {
            for r in 0..plan.repetitions {
                if !self.st.done(self.cell_ids[i], r)? {
                    *n += 1;
                }
            }
        }
        let todo_total = todo.iter().map(|&n| n as usize).sum::<usize>();
        let all = cells.len() * plan.repetitions as usize;
        if todo_total < all {
            fsbench_base::errln!(
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
        Ok(todo)
    }

    /// Every repetition round, each in its order; stops early on Ctrl-C. With adaptive
    /// repetitions, the rounds past the minimum measure only the cells not yet within the
    /// plan's `ci`, and stop when none is left.
    fn rounds(&mut self) -> Result<()> {
        let plan = self.plan;
        for round in 0..rounds_at_most(plan) {
            let mut todo: Vec<usize> = order(plan, self.cells.len(), round)
                .into_iter()
                .filter(|&i| !self.st.done(self.cell_ids[i], round).unwrap_or(false))
                .collect();
            if round >= plan.repetitions {
                let short = self.short_of_ci(round)?;
                if short.is_empty() {
                    fsbench_base::errln!(
                        "fsbench: after {round} rounds no cell needs another (each within its interval, or at its most rounds)"
                    );
                    return Ok(());
                }
                todo.retain(|i| short.contains(i));
                // Runs beyond the minimum were not in the count of runs to do.
                self.progress.todo_total += todo.len();
            }
            if todo.is_empty() {
                continue;
            }
            if round > 0 {
                self.refresh_most_rounds()?;
            }
            if fsbench_base::cancel::interrupted() {
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
            if fsbench_base::cancel::interrupted() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The cells (indices into `cells`) to measure again in round `round` (from 0), as
    /// `fsbench results` judges them: with adaptive repetitions, those whose first headline
    /// figure is not yet within the plan's `ci` while rounds are left; and those whose
    /// published figure is not yet within its interval, up to their own most rounds (more
    /// for sub-second runs).
    fn short_of_ci(&self, round: u32) -> Result<Vec<usize>> {
        let s = crate::experiment::summary::summarise(self.st)?;
        let mut short: Vec<usize> = Vec::new();
        if let (Some(a), Some(c)) = (self.plan.adaptive, &s.adaptive) {
            if round < a.max {
                short.extend(&c.not_reached);
            }
        }
        if let Some(p) = &s.published_rounds {
            short.extend(
                p.cells
                    .iter()
                    .filter(|c| !c.reached && round < c.max)
                    .map(|c| c.cell),
            );
        }
        Ok((0..self.cells.len())
            .filter(|&i| short.contains(&(self.cells[i].idx + 1)))
            .collect())
    }

    /// The most rounds of each published figure's cell from its measured runs (until it has
    /// some, the estimate's expectation), for the progress line.
    fn refresh_most_rounds(&mut self) -> Result<()> {
        if self.plan.published_rounds.is_none() {
            return Ok(());
        }
        let s = crate::experiment::summary::summarise(self.st)?;
        let base = super::published::base_rounds(self.plan);
        for c in s.published_rounds.iter().flat_map(|p| &p.cells) {
            let i = self.cells.iter().position(|x| x.idx + 1 == c.cell);
            if let (Some(i), Some(_)) = (i, c.seconds) {
                if let Some(m) = self.progress.most_rounds.get_mut(i) {
                    *m = base.max(c.max);
                }
            }
        }
        Ok(())
    }

    fn set_up(&mut self) -> Result<()> {
        self.generation += 1;
        self.env.set_up(
            self.plan,
            self.cells,
            self.outdir,
            self.generation,
            self.resume && self.generation == 1,
        )
    }

    /// Aging per repetition continues on the same targets.
    fn age_per_repetition(&mut self, round: u32) -> Result<()> {
        let env = &mut *self.env;
        for t in self.plan.targets_in_setup_order() {
            if let Some(a) = t.age.as_ref().filter(|a| a.per == AgePer::Repetition) {
                fsbench_base::errln!(
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
                if fsbench_base::cancel::interrupted() {
                    return Ok(());
                }
                fsbench_base::errln!(
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
            if fsbench_base::cancel::interrupted() {
                return Ok(());
            }
            let p = &self.progress;
            let elapsed = p.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
            let eta = if p.done_now > 0 {
                p.measured_s / p.done_now as f64 * (p.todo_total - p.done_now) as f64
            } else {
                f64::NAN
            };
            fsbench_base::errln!(
                "fsbench: [cell {}/{} rep {}/{}] {} | elapsed {}, remaining {}",
                i + 1,
                self.cells.len(),
                round + 1,
                super::published::rounds_text(
                    plan,
                    self.progress.most_rounds.get(i).copied(),
                    round
                ),
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
            if !ok && !fsbench_base::cancel::interrupted() {
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
        if !o.strict || fsbench_base::cancel::interrupted() {
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
        fsbench_base::errln!(
            "fsbench: --strict: repeating {} disturbed run(s)",
            disturbed.len()
        );
        if !self.env.up {
            self.set_up()?;
        }
        for (run_id, cell_id, rep) in disturbed {
            if fsbench_base::cancel::interrupted() {
                return Ok(());
            }
            let i = self
                .cell_ids
                .iter()
                .position(|&c| c == cell_id)
                .expect("cell of this experiment");
            fsbench_base::errln!(
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
        let mark = self.env.journal.len();
        let tag = super::measure::run_tag(cell, rep, status_override);
        let cgroup = super::measure::run_group(self.plan, cell, &tag, &mut self.env.journal)?;
        let r = Run {
            plan: self.plan,
            cell,
            cell_id,
            rep,
            status_override,
            env: self.env,
            outdir: self.outdir,
            cgroup,
        }
        .measure_and_store(self.st);
        // The run removed its cgroups (or dropping them did): their journal steps find them
        // gone; one still there (a removal that failed) is killed and removed now.
        self.env.journal.settle_to(mark)?;
        // A remount gave the target's mounts new ids: the saved journal follows them.
        self.env.journal.refresh()?;
        r
    }
}

/// The most rounds the plan runs: its count, an adaptive plan's `max`, or more for the
/// cells carrying a published figure.
fn rounds_at_most(plan: &Plan) -> u32 {
    super::published::rounds_at_most(plan)
}

/// After the last round: the summary, the report, the estimate against the time taken
/// (`timing`: the estimate made at the start, and when the run started), and the exit
/// status.
fn finish(
    o: &Options,
    st: &mut Store,
    exp: i64,
    outdir: &Path,
    failures: usize,
    timing: (&super::estimate::Estimate, Instant),
) -> Result<()> {
    if fsbench_base::cancel::interrupted() {
        bail!(
            "interrupted: every target is torn down; {} runs stored{}. Continue with `fsbench experiment {} -o {} --resume{}`",
            st.db.query_row("SELECT COUNT(*) FROM runs WHERE status = 'ok'", [], |r| r.get::<_, i64>(0))?,
            target::kept::described(outdir)
                .map(|k| format!("; {k} for it (removed when the experiment finishes)"))
                .unwrap_or_default(),
            o.plan.display(),
            outdir.display(),
            if o.quick { " --quick" } else { "" }
        );
    }
    st.finish(exp)?;
    fsbench_base::out!(
        "{}",
        crate::experiment::summary::render::render_text(&crate::experiment::summary::summarise(
            st
        )?)
    );
    fsbench_base::errln!("fsbench: results in {}", outdir.join(store::FILE).display());
    let page = outdir.join("report.html");
    match crate::experiment::report_input::load(outdir) {
        Ok(input) if !input.groups.is_empty() || !input.figure_groups.is_empty() => {
            std::fs::write(&page, fsbench_results::report::html::render(&input))
                .with_context(|| format!("writing {}", page.display()))?;
            fsbench_base::errln!("fsbench: report in {}", page.display());
        }
        Ok(_) => fsbench_base::errln!("fsbench: no workload results to plot, so no report.html"),
        Err(e) => fsbench_base::errln!("fsbench: could not write the report: {e:#}"),
    }
    fsbench_base::errln!(
        "fsbench: {}",
        timing.0.outcome(timing.1.elapsed().as_secs_f64())
    );
    if failures > 0 {
        bail!(
            "{failures} run(s) failed; see the logs in {}{}",
            outdir.join("runs").display(),
            target::kept::described(outdir)
                .map(|k| format!(" (--resume runs them again, {k})"))
                .unwrap_or_default()
        );
    }
    // Finished, every run stored: no resume needs the aged images kept for one.
    if let Err(e) = target::kept::discard_all(outdir) {
        fsbench_base::errln!("fsbench: warning: the aged images kept for --resume: {e:#}");
    }
    Ok(())
}
