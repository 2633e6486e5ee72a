//! `fsbench results OUTDIR`: per cell and figure the mean, 95% confidence interval,
//! coefficient of variation and n, the runs flagged and the modality of the repetitions;
//! each factor level against the plan's baseline level of that factor, in the cell that
//! differs only in that factor: the ratio of the means with Fieller's 95% interval and
//! Welch's p-value. Headline figures lead (see [`super::headline`]). Flagged runs (ended
//! early, served from cache) are left out unless asked for.

mod background;
pub mod conditions;
mod plan_text;
mod published;
pub mod render;

pub use background::BgRow;
pub use published::{PublishedRounds, PublishedRow, Verdict};

pub use plan_text::PlanChoices;

use super::plan::Adaptive;
use super::store::{RunFlags, Store};
use anyhow::Result;
use fsbench_results::stats::modes::{modality, Modality};
use fsbench_results::stats::ratio::ratio;
use fsbench_results::stats::repeat::spread;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub cell: usize,
    pub factors: BTreeMap<String, String>,
    /// "" for a whole-run figure.
    pub flowop: String,
    pub figure: String,
    /// One of the measurement's headline figures.
    pub headline: bool,
    pub n: usize,
    pub mean: f64,
    pub ci95: f64,
    pub cv: f64,
    /// Runs of the cell the noise guard flagged.
    pub disturbed: usize,
    /// Runs that failed or hit the time limit.
    pub failed: usize,
    /// Runs of the cell that ended before their duration.
    pub ended_early: usize,
    /// Runs of the cell whose device served less than the stated share of what was read.
    pub cache_served: usize,
    /// Runs of the cell during which another process dropped the kernel's caches (counted
    /// among `disturbed` too).
    pub caches_dropped_elsewhere: usize,
    /// Flagged runs left out of `n`, the mean and the comparisons (0 with --include-flagged).
    pub excluded: usize,
    /// The largest-gap test of the repetitions (docs/experiments.md).
    pub bimodal: Modality,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub factor: String,
    pub level: String,
    pub baseline: String,
    /// The other factors' levels, shared by both cells.
    pub at: BTreeMap<String, String>,
    pub cell: usize,
    pub baseline_cell: usize,
    pub flowop: String,
    pub figure: String,
    pub headline: bool,
    /// Mean at `level` ÷ mean at `baseline`.
    pub ratio: f64,
    /// Fieller's 95% interval of the ratio; null when unbounded or n < 2.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Welch's two-sided p-value of the difference of the means.
    pub p_value: Option<f64>,
    /// The interval leaves out 1.
    pub significant: bool,
    pub n: usize,
    pub n_baseline: usize,
}

/// Whether each cell's first headline figure reached the plan's `ci` (adaptive
/// repetitions).
#[derive(Debug, Clone, Serialize)]
pub struct Convergence {
    pub min: u32,
    pub max: u32,
    pub ci: f64,
    pub reached: Vec<usize>,
    pub not_reached: Vec<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub experiment: String,
    pub quick: bool,
    pub repetitions: u32,
    pub finished: bool,
    pub noise_threshold: f64,
    pub include_flagged: bool,
    pub baseline: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<Convergence>,
    pub rows: Vec<Row>,
    pub comparisons: Vec<Comparison>,
    /// Cells that have no figures to show: every run failed or was left out as flagged.
    pub empty_cells: Vec<EmptyCell>,
    /// What ran beside each cell's measurements (`[[background]]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backgrounds: Vec<BgRow>,
    /// The paper's figures (`[[published]]`) against ours, each with its verdict.
    pub published: Vec<PublishedRow>,
    /// How the cells carrying a published figure repeat, and where each stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_rounds: Option<PublishedRounds>,
    /// What each cell's runs ran under (scheduler, CPU, device, `device_idle` runs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<conditions::Conditions>,
}

/// A cell without figures, and why.
#[derive(Debug, Clone, Serialize)]
pub struct EmptyCell {
    pub cell: usize,
    pub factors: BTreeMap<String, String>,
    pub failed: usize,
    pub ended_early: usize,
    pub cache_served: usize,
    pub excluded: usize,
}

/// The summary with flagged runs left out.
pub fn summarise(st: &Store) -> Result<Summary> {
    summarise_with(st, false)
}

/// The summary; `include_flagged` keeps runs flagged ended early or served from cache.
pub fn summarise_with(st: &Store, include_flagged: bool) -> Result<Summary> {
    let (exp, name, quick, reps, thr, base_json, finished, text): (
        i64,
        String,
        bool,
        u32,
        f64,
        String,
        Option<String>,
        String,
    ) = st.db.query_row(
        "SELECT id, name, quick, repetitions, noise_threshold, baseline_json, finished_at, plan_text FROM experiments ORDER BY id LIMIT 1",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?)),
    )?;
    let baseline: BTreeMap<String, String> = serde_json::from_str(&base_json).unwrap_or_default();
    let choices = PlanChoices::read(&text, quick);
    let cells = read_cells(st, exp, &choices)?;
    let figures = Figures::read(st, &cells, include_flagged)?;
    let rows = figures.rows(&cells);
    let empty_cells = cells
        .iter()
        .filter(|c| !rows.iter().any(|r| r.cell == c.idx))
        .filter_map(|c| {
            let f = figures.flags.get(&c.idx)?;
            (f.failed + f.excluded > 0).then(|| EmptyCell {
                cell: c.idx,
                factors: c.factors.clone(),
                failed: f.failed,
                ended_early: f.ended_early,
                cache_served: f.cache_served,
                excluded: f.excluded,
            })
        })
        .collect();
    let adaptive = choices.adaptive.map(|a| convergence(&a, &rows, &cells));
    let backgrounds = background::rows(st, &cells)?;
    let published = published::rows(&choices.published, &cells, &figures.values);
    let published_rounds = choices
        .published_rounds
        .map(|a| published::rounds(a, &choices.published, &cells, &rows));
    let conditions = conditions::read(st, &cells)?;
    Ok(Summary {
        experiment: name,
        quick,
        repetitions: reps,
        finished: finished.is_some(),
        noise_threshold: thr,
        include_flagged,
        comparisons: figures.comparisons(&cells, &rules(&baseline, &choices.compare)),
        empty_cells,
        rows,
        baseline,
        adaptive,
        backgrounds,
        published,
        published_rounds,
        conditions,
    })
}

/// One comparison rule: the cells at levels of `factor` (every level but `against`, or
/// `only` that one) against the cell at `against` that differs from each only in `factor`.
struct Rule {
    factor: String,
    against: String,
    only: Option<String>,
}

/// What is compared with what: per baseline factor, every other level with the baseline
/// level; then each `compare` pair that is not among those.
fn rules(
    baseline: &BTreeMap<String, String>,
    compare: &[(String, Vec<(String, String)>)],
) -> Vec<Rule> {
    let mut out: Vec<Rule> = baseline
        .iter()
        .map(|(f, b)| Rule {
            factor: f.clone(),
            against: b.clone(),
            only: None,
        })
        .collect();
    for (factor, pairs) in compare {
        for (level, with) in pairs {
            if baseline.get(factor) != Some(with) {
                out.push(Rule {
                    factor: factor.clone(),
                    against: with.clone(),
                    only: Some(level.clone()),
                });
            }
        }
    }
    out
}

/// A cell: its id, number (from 1), factor levels and headline figures.
pub(crate) struct CellRow {
    id: i64,
    idx: usize,
    factors: BTreeMap<String, String>,
    headline: Vec<String>,
}

fn read_cells(st: &Store, exp: i64, choices: &PlanChoices) -> Result<Vec<CellRow>> {
    let mut q = st.db.prepare(
        "SELECT id, idx, measurement, kind, factors_json FROM cells WHERE experiment_id = ?1 ORDER BY idx",
    )?;
    let rows: Vec<(i64, i64, String, String, String)> = q
        .query_map([exp], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows
        .into_iter()
        .map(|(id, idx, measurement, kind, f)| CellRow {
            id,
            idx: idx as usize + 1,
            factors: serde_json::from_str(&f).unwrap_or_default(),
            headline: choices.headline(&measurement, &kind),
        })
        .collect())
}

/// Which cells' first headline figure has a 95% half-width within `ci` of its mean.
fn convergence(a: &Adaptive, rows: &[Row], cells: &[CellRow]) -> Convergence {
    let mut c = Convergence {
        min: a.min,
        max: a.max,
        ci: a.ci,
        reached: Vec::new(),
        not_reached: Vec::new(),
    };
    for cell in cells {
        let first = cell.headline.first();
        let row = rows
            .iter()
            .find(|r| r.cell == cell.idx && r.flowop.is_empty() && Some(&r.figure) == first);
        let ok = row.is_some_and(|r| r.n >= 2 && r.ci95 <= a.ci * r.mean.abs());
        if ok {
            c.reached.push(cell.idx);
        } else {
            c.not_reached.push(cell.idx);
        }
    }
    c
}

/// Per cell, how many of its measured runs carried each flag and how many were left out.
#[derive(Default, Clone, Copy)]
struct FlagCounts {
    disturbed: usize,
    failed: usize,
    ended_early: usize,
    cache_served: usize,
    caches_dropped_elsewhere: usize,
    excluded: usize,
}

/// The stored figures of the runs kept, and the runs' flags, per cell.
struct Figures {
    /// Values per (cell, flowop, figure).
    values: BTreeMap<(usize, String, String), Vec<f64>>,
    flags: BTreeMap<usize, FlagCounts>,
    /// The keys of `values` in a stable order: the headline figures first, then as the
    /// runs stored them.
    order: Vec<(usize, String, String)>,
}

impl Figures {
    fn read(st: &Store, cells: &[CellRow], include_flagged: bool) -> Result<Figures> {
        let mut f = Figures {
            values: BTreeMap::new(),
            flags: BTreeMap::new(),
            order: Vec::new(),
        };
        let mut runs_q = st.db.prepare(
            "SELECT id, status, disturbed, flags_json FROM runs WHERE cell_id = ?1 AND superseded = 0 AND status != 'warmup' ORDER BY repetition, id",
        )?;
        let mut figs_q = st.db.prepare(
            "SELECT flowop, figure, value FROM figures WHERE run_id = ?1 ORDER BY rowid",
        )?;
        for cell in cells {
            let runs: Vec<(i64, String, bool, String)> = runs_q
                .query_map([cell.id], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?
                .collect::<rusqlite::Result<_>>()?;
            let mut counts = FlagCounts::default();
            let mut keys: Vec<(usize, String, String)> = Vec::new();
            for (run_id, status, disturbed, flags) in runs {
                if status != "ok" {
                    counts.failed += 1;
                    continue;
                }
                let flags: RunFlags = serde_json::from_str(&flags).unwrap_or_default();
                counts.disturbed += disturbed as usize;
                counts.ended_early += flags.ended_early.is_some() as usize;
                counts.cache_served += flags.cache_served.is_some() as usize;
                counts.caches_dropped_elsewhere +=
                    flags.caches_dropped_elsewhere.is_some() as usize;
                if flags.flagged() && !include_flagged {
                    counts.excluded += 1;
                    continue;
                }
                let vals: Vec<(String, String, f64)> = figs_q
                    .query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                for (fl, g, v) in vals {
                    let key = (cell.idx, fl, g);
                    if !f.values.contains_key(&key) {
                        keys.push(key.clone());
                    }
                    f.values.entry(key).or_default().push(v);
                }
            }
            keys.sort_by_key(|k| {
                let h = cell
                    .headline
                    .iter()
                    .position(|h| k.1.is_empty() && *h == k.2);
                h.unwrap_or(usize::MAX)
            });
            f.order.extend(keys);
            f.flags.insert(cell.idx, counts);
        }
        Ok(f)
    }

    /// A row per (cell, flowop, figure): the mean, its spread and the cell's flags.
    fn rows(&self, cells: &[CellRow]) -> Vec<Row> {
        let mut rows = Vec::new();
        for key in &self.order {
            let xs = &self.values[key];
            let s = spread(xs);
            let cell = cells.iter().find(|c| c.idx == key.0).expect("a cell");
            let fl = self.flags.get(&key.0).copied().unwrap_or_default();
            rows.push(Row {
                cell: key.0,
                factors: cell.factors.clone(),
                flowop: key.1.clone(),
                figure: key.2.clone(),
                headline: key.1.is_empty() && cell.headline.contains(&key.2),
                n: xs.len(),
                mean: s.mean,
                ci95: s.ci95,
                cv: s.cv,
                disturbed: fl.disturbed,
                failed: fl.failed,
                ended_early: fl.ended_early,
                cache_served: fl.cache_served,
                caches_dropped_elsewhere: fl.caches_dropped_elsewhere,
                excluded: fl.excluded,
                bimodal: modality(xs),
            });
        }
        rows
    }

    /// For each rule (a baseline factor, or one `compare` pair: [`rules`]), each cell at a
    /// level it compares against the cell that differs from it only in that factor; grouped
    /// by factor, measurement, figure (headline first) and level.
    fn comparisons(&self, cells: &[CellRow], rules: &[Rule]) -> Vec<Comparison> {
        let mut out = Vec::new();
        for Rule {
            factor,
            against: base_level,
            only,
        } in rules
        {
            let mut these = Vec::new();
            for cell in cells {
                let Some(level) = cell.factors.get(factor) else {
                    continue;
                };
                if level == base_level || only.as_ref().is_some_and(|o| o != level) {
                    continue;
                }
                let mut want = cell.factors.clone();
                want.insert(factor.clone(), base_level.clone());
                let Some(base) = cells.iter().find(|c| c.factors == want) else {
                    continue;
                };
                let mut at = cell.factors.clone();
                at.remove(factor);
                for key in self.order.iter().filter(|k| k.0 == cell.idx) {
                    let bkey = (base.idx, key.1.clone(), key.2.clone());
                    let (Some(a), Some(b)) = (self.values.get(key), self.values.get(&bkey)) else {
                        continue;
                    };
                    let Some(r) = ratio(a, b) else { continue };
                    let rank = cell
                        .headline
                        .iter()
                        .position(|h| key.1.is_empty() && *h == key.2);
                    these.push((
                        rank.unwrap_or(usize::MAX),
                        Comparison {
                            factor: factor.clone(),
                            level: level.clone(),
                            baseline: base_level.clone(),
                            at: at.clone(),
                            cell: cell.idx,
                            baseline_cell: base.idx,
                            flowop: key.1.clone(),
                            figure: key.2.clone(),
                            headline: rank.is_some(),
                            ratio: r.ratio,
                            ci_low: r.ci_low,
                            ci_high: r.ci_high,
                            p_value: r.p_value,
                            significant: r.significant(),
                            n: a.len(),
                            n_baseline: b.len(),
                        },
                    ));
                }
            }
            // Stable: within a group, cells keep their plan order (levels as the plan lists
            // them).
            let pos = |c: &Comparison| {
                let m = c.at.get("measurement");
                cells
                    .iter()
                    .position(|x| x.factors.get("measurement") == m)
                    .unwrap_or(0)
            };
            these.sort_by(|(ra, a), (rb, b)| {
                (pos(a), ra, &a.flowop, &a.figure).cmp(&(pos(b), rb, &b.flowop, &b.figure))
            });
            out.extend(these.into_iter().map(|(_, c)| c));
        }
        out
    }
}

/// Keep the whole-run figures, or every figure with `all`.
pub fn filter(s: &Summary, all: bool) -> Summary {
    let mut s = s.clone();
    if !all {
        s.rows.retain(|r| r.flowop.is_empty());
        s.comparisons.retain(|c| c.flowop.is_empty());
    }
    s
}

#[cfg(test)]
mod tests;
