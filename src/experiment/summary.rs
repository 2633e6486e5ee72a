//! `fsbench results OUTDIR`: per cell and figure the mean, 95% confidence interval,
//! coefficient of variation and n; each factor level against the plan's baseline level, the
//! relative difference with its own 95% interval and Welch's p-value.

use super::store::Store;
use crate::stats::repeat::{mean_var, spread, welch};
use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub cell: usize,
    pub factors: BTreeMap<String, String>,
    /// "" for a whole-run figure.
    pub flowop: String,
    pub figure: String,
    pub n: usize,
    pub mean: f64,
    pub ci95: f64,
    pub cv: f64,
    /// Runs of the cell the noise guard flagged.
    pub disturbed: usize,
    /// Runs that failed or hit the time limit.
    pub failed: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub cell: usize,
    pub baseline_cell: usize,
    pub factor: String,
    pub level: String,
    pub baseline: String,
    pub flowop: String,
    pub figure: String,
    /// (mean − baseline mean) / baseline mean.
    pub rel_diff: f64,
    /// Half-width of the 95% interval of `rel_diff` (Welch).
    pub rel_ci95: f64,
    pub p_value: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub experiment: String,
    pub quick: bool,
    pub repetitions: u32,
    pub finished: bool,
    pub noise_threshold: f64,
    pub baseline: BTreeMap<String, String>,
    pub rows: Vec<Row>,
    pub comparisons: Vec<Comparison>,
}

pub fn summarise(st: &Store) -> Result<Summary> {
    let (exp, name, quick, reps, thr, base_json, finished): (i64, String, bool, u32, f64, String, Option<String>) = st.db.query_row(
        "SELECT id, name, quick, repetitions, noise_threshold, baseline_json, finished_at FROM experiments ORDER BY id LIMIT 1",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
    )?;
    let baseline: BTreeMap<String, String> = serde_json::from_str(&base_json).unwrap_or_default();
    let cells = read_cells(st, exp)?;
    let figures = Figures::read(st, &cells)?;
    Ok(Summary {
        experiment: name,
        quick,
        repetitions: reps,
        finished: finished.is_some(),
        noise_threshold: thr,
        rows: figures.rows(&cells),
        comparisons: figures.comparisons(&cells, &baseline),
        baseline,
    })
}

/// A cell: its id, its number (from 1) and its factor levels.
type CellRow = (i64, usize, BTreeMap<String, String>);

fn read_cells(st: &Store, exp: i64) -> Result<Vec<CellRow>> {
    let mut cells: Vec<CellRow> = Vec::new();
    let mut q = st
        .db
        .prepare("SELECT id, idx, factors_json FROM cells WHERE experiment_id = ?1 ORDER BY idx")?;
    let rows = q.query_map([exp], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    for row in rows {
        let (id, idx, f) = row?;
        cells.push((
            id,
            idx as usize + 1,
            serde_json::from_str(&f).unwrap_or_default(),
        ));
    }
    Ok(cells)
}

/// The stored figures of the valid runs, and the disturbed and failed runs, per cell.
struct Figures {
    /// Values per (cell, flowop, figure).
    values: BTreeMap<(usize, String, String), Vec<f64>>,
    disturbed: BTreeMap<usize, usize>,
    failed: BTreeMap<usize, usize>,
    /// The keys of `values` in a stable order: as the runs stored them.
    order: Vec<(usize, String, String)>,
}

impl Figures {
    fn read(st: &Store, cells: &[CellRow]) -> Result<Figures> {
        let mut f = Figures {
            values: BTreeMap::new(),
            disturbed: BTreeMap::new(),
            failed: BTreeMap::new(),
            order: Vec::new(),
        };
        for (id, idx, _) in cells {
            let mut q = st.db.prepare(
                "SELECT runs.status, figures.flowop, figures.figure, figures.value FROM runs LEFT JOIN figures ON figures.run_id = runs.id WHERE runs.cell_id = ?1 AND runs.superseded = 0 AND runs.status != 'warmup' ORDER BY runs.id, figures.rowid",
            )?;
            let rows = q.query_map([id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<f64>>(3)?,
                ))
            })?;
            for row in rows {
                let (status, flowop, figure, value) = row?;
                if status != "ok" {
                    if flowop.is_none() {
                        *f.failed.entry(*idx).or_default() += 1;
                    }
                    continue;
                }
                if let (Some(fl), Some(g), Some(v)) = (flowop, figure, value) {
                    let key = (*idx, fl, g);
                    if !f.values.contains_key(&key) {
                        f.order.push(key.clone());
                    }
                    f.values.entry(key).or_default().push(v);
                }
            }
            let d: i64 = st.db.query_row(
                "SELECT COUNT(*) FROM runs WHERE cell_id = ?1 AND superseded = 0 AND disturbed = 1 AND status = 'ok'",
                [id],
                |r| r.get(0),
            )?;
            if d > 0 {
                f.disturbed.insert(*idx, d as usize);
            }
        }
        Ok(f)
    }

    /// A row per (cell, flowop, figure): the mean and its spread.
    fn rows(&self, cells: &[CellRow]) -> Vec<Row> {
        let factors_of = |idx: usize| {
            cells
                .iter()
                .find(|c| c.1 == idx)
                .map(|c| c.2.clone())
                .unwrap_or_default()
        };
        let mut rows = Vec::new();
        for key in &self.order {
            let xs = &self.values[key];
            let s = spread(xs);
            rows.push(Row {
                cell: key.0,
                factors: factors_of(key.0),
                flowop: key.1.clone(),
                figure: key.2.clone(),
                n: xs.len(),
                mean: s.mean,
                ci95: s.ci95,
                cv: s.cv,
                disturbed: self.disturbed.get(&key.0).copied().unwrap_or(0),
                failed: self.failed.get(&key.0).copied().unwrap_or(0),
            });
        }
        rows
    }

    /// Each cell that differs from another only in a baseline factor, at a non-baseline
    /// level, is compared against that other cell.
    fn comparisons(
        &self,
        cells: &[CellRow],
        baseline: &BTreeMap<String, String>,
    ) -> Vec<Comparison> {
        let mut comparisons = Vec::new();
        for (factor, base_level) in baseline {
            for (_, idx, f) in cells {
                let Some(level) = f.get(factor) else { continue };
                if level == base_level {
                    continue;
                }
                let mut want = f.clone();
                want.insert(factor.clone(), base_level.clone());
                let Some((_, bidx, _)) = cells.iter().find(|c| c.2 == want) else {
                    continue;
                };
                for key in self.order.iter().filter(|k| k.0 == *idx) {
                    let bkey = (*bidx, key.1.clone(), key.2.clone());
                    let (Some(a), Some(b)) = (self.values.get(key), self.values.get(&bkey)) else {
                        continue;
                    };
                    let (mb, _) = mean_var(b);
                    let (ma, _) = mean_var(a);
                    if mb == 0.0 {
                        continue;
                    }
                    let w = welch(a, b);
                    comparisons.push(Comparison {
                        cell: *idx,
                        baseline_cell: *bidx,
                        factor: factor.clone(),
                        level: level.clone(),
                        baseline: base_level.clone(),
                        flowop: key.1.clone(),
                        figure: key.2.clone(),
                        rel_diff: (ma - mb) / mb,
                        rel_ci95: w.map_or(f64::NAN, |w| w.ci95 / mb.abs()),
                        p_value: w.map(|w| w.p_value),
                    });
                }
            }
        }
        comparisons
    }
}

fn factor_text(f: &BTreeMap<String, String>) -> String {
    // measurement and target first, the rest in name order.
    let mut v: Vec<String> = Vec::new();
    for k in ["measurement", "target", "cache"] {
        if let Some(x) = f.get(k) {
            v.push(format!("{k}={x}"));
        }
    }
    for (k, x) in f {
        if !["measurement", "target", "cache"].contains(&k.as_str()) {
            v.push(format!("{k}={x}"));
        }
    }
    v.join(" ")
}

fn fig_name(flowop: &str, figure: &str) -> String {
    if flowop.is_empty() {
        figure.to_string()
    } else {
        format!("{flowop}.{figure}")
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

/// The text summary of whole-run figures.
pub fn render_text(s: &Summary) -> String {
    render_text_all(&filter(s, false))
}

/// The text summary of the figures in `s` as they are.
pub fn render_text_all(s: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "experiment {}{}: {} repetitions{}",
        s.experiment,
        if s.quick { " (quick)" } else { "" },
        s.repetitions,
        if s.finished {
            ""
        } else {
            " (unfinished: continue with --resume)"
        }
    );
    let mut cur = 0;
    for r in &s.rows {
        if r.cell != cur {
            cur = r.cell;
            let mut flags = String::new();
            if r.disturbed > 0 {
                let _ = write!(
                    flags,
                    "  [DISTURBED: {} run(s) over {:.0}% other CPU]",
                    r.disturbed,
                    s.noise_threshold * 100.0
                );
            }
            if r.failed > 0 {
                let _ = write!(flags, "  [{} run(s) failed]", r.failed);
            }
            let _ = writeln!(out, "\ncell {}: {}{flags}", r.cell, factor_text(&r.factors));
            let _ = writeln!(
                out,
                "  {:<28} {:>14} {:>12} {:>7} {:>3}",
                "figure", "mean", "±95% CI", "CV", "n"
            );
        }
        let _ = writeln!(
            out,
            "  {:<28} {:>14.4} {:>12.4} {:>6.1}% {:>3}",
            fig_name(&r.flowop, &r.figure),
            r.mean,
            r.ci95,
            r.cv * 100.0,
            r.n
        );
    }
    if !s.comparisons.is_empty() {
        let _ = writeln!(
            out,
            "\nagainst the baseline ({}):",
            s.baseline
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let _ = writeln!(
            out,
            "  {:>4} {:>4}  {:<24} {:<22} {:>9} {:>9} {:>8}",
            "cell", "base", "level", "figure", "change", "±95% CI", "p"
        );
        for c in &s.comparisons {
            let _ = writeln!(
                out,
                "  {:>4} {:>4}  {:<24} {:<22} {:>+8.1}% {:>8.1}% {:>8}",
                c.cell,
                c.baseline_cell,
                format!("{}={}", c.factor, c.level),
                fig_name(&c.flowop, &c.figure),
                c.rel_diff * 100.0,
                c.rel_ci95 * 100.0,
                c.p_value.map_or("-".to_string(), |p| format!("{p:.4}"))
            );
        }
    }
    out
}

pub fn render_csv(s: &Summary) -> String {
    let mut out = String::from("cell,factors,flowop,figure,n,mean,ci95,cv,disturbed,failed,baseline_cell,rel_diff,rel_ci95,p_value\n");
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    for r in &s.rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},,,,",
            r.cell,
            q(&factor_text(&r.factors)),
            q(&r.flowop),
            r.figure,
            r.n,
            r.mean,
            r.ci95,
            r.cv,
            r.disturbed,
            r.failed
        );
    }
    for c in &s.comparisons {
        let _ = writeln!(
            out,
            "{},{},{},{},,,,,,,{},{},{},{}",
            c.cell,
            q(&format!("{}={} vs {}", c.factor, c.level, c.baseline)),
            q(&c.flowop),
            c.figure,
            c.baseline_cell,
            c.rel_diff,
            c.rel_ci95,
            c.p_value.map_or(String::new(), |p| p.to_string())
        );
    }
    out
}

pub fn render_markdown(s: &Summary) -> String {
    let mut out = format!("## {}\n\n| cell | factors | figure | mean | ±95% CI | CV | n |\n|---|---|---|---:|---:|---:|---:|\n", s.experiment);
    for r in &s.rows {
        let _ = writeln!(
            out,
            "| {}{} | {} | {} | {:.4} | {:.4} | {:.1}% | {} |",
            r.cell,
            if r.disturbed > 0 { " ⚠" } else { "" },
            factor_text(&r.factors),
            fig_name(&r.flowop, &r.figure),
            r.mean,
            r.ci95,
            r.cv * 100.0,
            r.n
        );
    }
    if !s.comparisons.is_empty() {
        out.push_str("\n| cell | against | level | figure | change | ±95% CI | p |\n|---|---|---|---|---:|---:|---:|\n");
        for c in &s.comparisons {
            let _ = writeln!(
                out,
                "| {} | {} | {}={} | {} | {:+.1}% | {:.1}% | {} |",
                c.cell,
                c.baseline_cell,
                c.factor,
                c.level,
                fig_name(&c.flowop, &c.figure),
                c.rel_diff * 100.0,
                c.rel_ci95 * 100.0,
                c.p_value.map_or("-".to_string(), |p| format!("{p:.4}"))
            );
        }
    }
    out
}
