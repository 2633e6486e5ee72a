//! How long an experiment takes, estimated before it runs from what its plan's
//! measurements will do: each cell's work on its target's device (a simulated disk's
//! model, or the host's disk under an image), its layout, cache drops and warm-up, the
//! set-up of the targets (simulated disks, aging, trees) and their teardown, warm-up runs,
//! the adaptive extra rounds, and runs of the same cells stored earlier in the output
//! directory. `--dry-run` prints it; a real run prints it at its start and, at its end,
//! how far it was from the time taken.

mod kinds;
mod rates;
mod remote;
mod runs;
mod setup;
mod stored;
mod workload;

use super::{fmt_secs, Cell};
use crate::experiment::plan::published::SUB_SECOND_MAX;
use crate::experiment::plan::{Fresh, Plan};
use std::path::Path;

/// Before the first set-up: reading the plan, making the output directory and the results
/// database: 0.1 s.
const START_S: f64 = 0.1;
/// After the last teardown: the summary and the HTML report, 0.1 to 0.4 s release (0.4 to
/// 1.3 s debug for the quick plans' 18 to 50 runs), and a little per run.
const FINISH_S: f64 = 0.15;
const FINISH_PER_RUN_S: f64 = 0.005;

/// An experiment's estimated time and what it is made of.
#[derive(Debug, Clone, Default)]
pub(super) struct Estimate {
    pub total_s: f64,
    /// Seconds one run of each cell takes, the runner's part included (by position in
    /// the cells).
    pub per_run: Vec<f64>,
    /// The most rounds each cell may run (by position in the cells): the plan's count,
    /// an adaptive plan's `max`, or more for a cell carrying a published figure (up to
    /// [`SUB_SECOND_MAX`] when its runs are expected to take under a second).
    pub most_rounds: Vec<u32>,
    set_ups: u32,
    setup: setup::SetUp,
    aging_rounds_s: f64,
    runs: u64,
    runs_s: f64,
    warmups: u64,
    warmups_s: f64,
    /// The adaptive rounds' runs: half of those possible counted, and all of them.
    extra_runs: u64,
    extra_s: f64,
    extra_max_s: f64,
    finish_s: f64,
    from_store: usize,
    unknown: usize,
}

/// The estimate for `cells` of `plan` with `todo[i]` measured runs of cell `i` still to do
/// within the plan's rounds (all of them for a new experiment; the adaptive extra rounds
/// come on top), runs stored earlier in `outdir` standing in for their cells.
pub(super) fn of(plan: &Plan, cells: &[Cell], outdir: &Path, todo: &[u32]) -> Estimate {
    let stored = stored::means(plan, cells, outdir);
    let mut e = Estimate::default();
    let modelled: Vec<Option<runs::Child>> = cells.iter().map(|c| runs::child(plan, c)).collect();
    let reuse = reuse_shares(plan, &modelled);
    // Each cell's measured seconds: a stored run's (its child's, the closest the store
    // keeps), else the modelled measured pass.
    let mut measured = Vec::with_capacity(cells.len());
    for (i, c) in cells.iter().enumerate() {
        let (s, m) = match (stored.get(&i), &modelled[i]) {
            (Some(s), _) => {
                e.from_store += 1;
                (*s, *s)
            }
            (None, Some(m)) => (m.s + reuse[i], m.measured_s),
            (None, None) => {
                e.unknown += 1;
                (plan.time_limit_s, plan.time_limit_s)
            }
        };
        measured.push(m);
        e.per_run.push(s + runs::runner_s(plan, c, s));
    }
    let n = |i: usize| todo.get(i).copied().unwrap_or(0);
    for (i, s) in e.per_run.iter().enumerate() {
        e.runs += n(i) as u64;
        e.runs_s += n(i) as f64 * s;
        // Warm-up runs go before the first round.
        if n(i) == plan.repetitions && n(i) > 0 {
            e.warmups += plan.warmup_runs as u64;
            e.warmups_s += plan.warmup_runs as f64 * s;
        }
    }
    let extra = extra_rounds(plan, cells, &measured);
    e.most_rounds = extra.iter().map(|x| plan.repetitions + x).collect();
    let mut extra_rounds_most = 0;
    for (i, most) in extra.iter().enumerate() {
        // Each cell stops once its figure is within its interval: half the rounds it may run.
        e.extra_runs += (*most as u64).div_ceil(2);
        e.extra_s += (*most as f64 / 2.0).ceil() * e.per_run[i];
        e.extra_max_s += *most as f64 * e.per_run[i];
        extra_rounds_most = extra_rounds_most.max(most.div_ceil(2));
    }
    let rounds = todo.iter().copied().max().unwrap_or(0) + extra_rounds_most;
    e.setup = setup::of(plan, cells, outdir);
    e.set_ups = match (rounds, plan.fresh) {
        (0, _) => 0,
        (r, Fresh::Repetition) => r,
        _ => 1,
    };
    if plan.fresh != Fresh::Repetition {
        e.aging_rounds_s = rounds.saturating_sub(1) as f64 * e.setup.per_round_s;
    }
    e.finish_s = rates::cpu(FINISH_S + FINISH_PER_RUN_S * (e.runs + e.extra_runs) as f64);
    e.total_s = START_S
        + e.set_ups as f64 * e.setup.total()
        + e.aging_rounds_s
        + e.runs_s
        + e.warmups_s
        + e.extra_s
        + e.finish_s;
    e
}

/// Each cell's share of the layouts its workload's runs reuse on a target: the first run
/// after a set-up lays them out, the others find them, so each run of the cells that share
/// them counts its part.
fn reuse_shares(plan: &Plan, modelled: &[Option<runs::Child>]) -> Vec<f64> {
    let rounds_per_set_up = match plan.fresh {
        Fresh::Repetition => 1.0,
        _ => plan.repetitions.max(1) as f64,
    };
    let key = |m: &Option<runs::Child>| m.as_ref().and_then(|m| m.reused.clone());
    modelled
        .iter()
        .map(|m| match key(m) {
            Some((k, s)) => {
                let sharing = modelled
                    .iter()
                    .filter(|o| key(o).is_some_and(|(ok, _)| ok == k))
                    .count() as f64;
                s / (sharing * rounds_per_set_up)
            }
            None => 0.0,
        })
        .collect()
}

/// The rounds each cell may run past the plan's count: every cell up to an adaptive plan's
/// `max`, a cell carrying a published figure up to its entries' maximum (raised to
/// [`SUB_SECOND_MAX`] when its measured pass takes under a second).
fn extra_rounds(plan: &Plan, cells: &[Cell], measured: &[f64]) -> Vec<u32> {
    let carried = super::published::carried(plan, cells);
    (0..cells.len())
        .map(|i| {
            let mut most = super::published::base_rounds(plan);
            if let (Some(p), true) = (plan.published_rounds, carried.contains(&i)) {
                most = most.max(p.max);
                if measured[i] < 1.0 {
                    most = most.max(SUB_SECOND_MAX);
                }
            }
            most.saturating_sub(plan.repetitions)
        })
        .collect()
}

impl Estimate {
    /// What the estimate is made of, a line each, for the dry run.
    pub fn lines(&self, plan: &Plan, outdir: &Path) -> Vec<String> {
        let s = &self.setup;
        let mut v = vec![
            format!("estimated time: {}", fmt_secs(self.total_s)),
            format!(
                "  set-up and teardown: {} ({} set-up(s) of the targets {}, aging {}, trees {}; teardown {})",
                fmt_secs(self.set_ups as f64 * s.total() + self.aging_rounds_s),
                self.set_ups,
                fmt_secs(s.targets_s),
                fmt_secs(s.aging_s),
                fmt_secs(s.trees_s),
                fmt_secs(s.teardown_s)
            ),
            format!(
                "  runs: {} ({} runs; each cell's time a run is shown with it above)",
                fmt_secs(self.runs_s),
                self.runs
            ),
        ];
        if self.warmups > 0 {
            v.push(format!(
                "  warm-up runs: {} ({} runs)",
                fmt_secs(self.warmups_s),
                self.warmups
            ));
        }
        if self.extra_max_s > 0.0 {
            v.push(format!(
                "  extra rounds: {} ({} runs, half of those possible; {} if every cell runs them all)",
                fmt_secs(self.extra_s),
                self.extra_runs,
                fmt_secs(self.extra_max_s)
            ));
        }
        v.push(format!("  summary and report: {}", fmt_secs(self.finish_s)));
        v.push("  from what the measurements do: their files, bytes and durations on each target's device (a simulated disk's model, the host's disk under an image, a remote from its modelled network), layouts, cache drops, warm-ups and set-up (docs/experiments.md, \"Estimated time\")".into());
        if self.from_store > 0 {
            v.push(format!(
                "  {} cells from the mean of their runs stored in {}",
                self.from_store,
                outdir.join(crate::experiment::store::FILE).display()
            ));
        }
        if self.unknown > 0 {
            v.push(format!(
                "  {} cells at the time limit of {} per run (nothing to go by)",
                self.unknown,
                fmt_secs(plan.time_limit_s)
            ));
        }
        v
    }

    /// The line a real run ends with: the estimate against the time taken.
    pub fn outcome(&self, took_s: f64) -> String {
        format!(
            "estimated {}, took {} (ratio {:.2})",
            fmt_secs(self.total_s),
            fmt_secs(took_s),
            took_s / self.total_s.max(1e-9)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::store::{CellRecord, ExperimentRecord, RunFlags, RunRecord, Store};

    fn plan(extra: &str) -> Plan {
        let text = format!(
            r#"
[experiment]
name = "t"
{extra}
[[target]]
name = "d"
kind = "dir"
path = "/tmp"
[[measurement]]
name = "w"
kind = "workload"
params = {{ workload = "varmail", nfiles = 50, duration = 3 }}
factors = {{ nthreads = [1, 2] }}
"#
        );
        crate::experiment::plan::parse(Path::new("t.toml"), &text, false).unwrap()
    }

    #[test]
    fn runs_stored_earlier_stand_in_for_their_cells() {
        let p = plan("repetitions = 2");
        let cells = super::super::cells(&p);
        let dir = std::env::temp_dir().join(format!("fsbench-estimate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fresh = of(&p, &cells, &dir, &[2, 2]);
        assert_eq!(fresh.from_store, 0);
        // Three seconds measured and the child's own time: a little over 3 s a run.
        assert!(
            fresh.per_run[0] > 3.0 && fresh.per_run[0] < 6.0,
            "{fresh:?}"
        );
        let st = Store::open(&dir).unwrap();
        let exp = st
            .new_experiment(&ExperimentRecord {
                name: "t",
                plan_file: "t.toml",
                plan_text: "",
                plan_hash: "h",
                quick: false,
                seed: 1,
                repetitions: 2,
                noise_threshold: 0.1,
                baseline: &serde_json::json!({}),
            })
            .unwrap();
        let cmd = serde_json::json!(super::super::stored_command(&p, &cells[1]));
        let id = st
            .cell(&CellRecord {
                experiment_id: exp,
                idx: 1,
                measurement: "w",
                kind: "workload",
                target: "d",
                cache: "warm",
                factors: &serde_json::json!({}),
                command: &cmd,
            })
            .unwrap();
        let mut st = st;
        st.add_run(&RunRecord {
            cell_id: id,
            repetition: 0,
            status: "ok",
            started_at: "now",
            elapsed_s: 42.0,
            load_avg_1: None,
            other_cpu_frac: None,
            disturbed: false,
            error: None,
            applied: &serde_json::json!({}),
            results: None,
            flags: &RunFlags::default(),
        })
        .unwrap();
        let again = of(&p, &cells, &dir, &[2, 1]);
        assert_eq!(again.from_store, 1);
        assert_eq!(again.per_run[0], fresh.per_run[0]);
        assert!((again.per_run[1] - 42.0).abs() < 1.0, "{again:?}");
        // Resumed: the stored repetition is not counted again.
        assert_eq!(again.runs, 3);
        assert!(
            again.lines(&p, &dir)[1].starts_with("  set-up"),
            "{again:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_published_figures_cell_is_shown_up_to_ten_rounds_only_for_sub_second_runs() {
        // The figure's cell is nthreads = 2 (ratio 2 ÷ 1 carries both cells).
        let published = |duration: &str| {
            let src = format!(
                r#"
[experiment]
name = "t"
repetitions = 3
[[target]]
name = "d"
kind = "dir"
path = "/tmp"
[[measurement]]
name = "w"
kind = "workload"
params = {{ workload = "varmail", nfiles = 50, duration = {duration} }}
factors = {{ nthreads = [1, 2, 4] }}
[[published]]
claim = "twice the threads, twice the rate"
measurement = "w"
figure = "ops_per_s"
compare = {{ nthreads = {{ 2 = 1 }} }}
ratio = 2.0
within = 1.5
"#
            );
            crate::experiment::plan::parse(Path::new("t.toml"), &src, false).unwrap()
        };
        let text = |p: &Plan, e: &Estimate| -> Vec<String> {
            (0..3)
                .map(|i| super::super::published::rounds_text(p, e.most_rounds.get(i).copied(), 0))
                .collect()
        };
        let long = published("3");
        let cells = super::super::cells(&long);
        let e = of(&long, &cells, Path::new("/nonexistent"), &[3, 3, 3]);
        assert_eq!(e.most_rounds, vec![3, 3, 3]);
        assert_eq!(text(&long, &e), vec!["3", "3", "3"]);
        let short = published("0.2");
        let cells = super::super::cells(&short);
        let e = of(&short, &cells, Path::new("/nonexistent"), &[3, 3, 3]);
        // The two cells the ratio compares may run ten rounds; the third is not judged.
        assert_eq!(e.most_rounds, vec![10, 10, 3]);
        assert_eq!(text(&short, &e), vec!["3 (up to 10)", "3 (up to 10)", "3"]);
    }

    #[test]
    fn adaptive_rounds_count_half_of_those_possible() {
        let p = plan("repetitions = { min = 2, max = 6, ci = 0.05 }");
        let cells = super::super::cells(&p);
        let e = of(&p, &cells, Path::new("/nonexistent"), &[2, 2]);
        assert_eq!((e.runs, e.extra_runs), (4, 4));
        assert!((e.extra_max_s - 2.0 * e.extra_s).abs() < 1e-9, "{e:?}");
        let lines = e.lines(&p, Path::new("/nonexistent")).join("\n");
        assert!(lines.contains("4 runs, half of those possible"), "{lines}");
    }
}
