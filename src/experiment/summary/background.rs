//! The background loads of each cell (`[[background]]`), summarised: per cell and background,
//! how many runs it ran beside, how each ended, its mean elapsed, user and system time (with
//! the 95% interval of the elapsed time) and the priority the kernel held for it.

use super::CellRow;
use crate::experiment::store::Store;
use anyhow::Result;
use fsbench_results::stats::repeat::spread;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Debug, Clone, Serialize)]
pub struct BgRow {
    pub cell: usize,
    pub factors: BTreeMap<String, String>,
    pub name: String,
    pub kind: String,
    pub n: usize,
    /// How many runs' backgrounds ended each way ("stopped", "ended", "failed", "timeout").
    pub status: BTreeMap<String, usize>,
    pub elapsed_s: f64,
    pub elapsed_ci95: f64,
    pub user_s: f64,
    pub system_s: f64,
    /// The nice and ionice values read back from the kernel (the first run's).
    pub nice: Option<i64>,
    pub ionice: Option<String>,
}

impl BgRow {
    /// How its runs' backgrounds ended: "2 stopped, 1 ended".
    pub fn status_text(&self) -> String {
        self.status
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One row per cell and background, for runs kept (ok, not superseded).
pub(super) fn rows(st: &Store, cells: &[CellRow]) -> Result<Vec<BgRow>> {
    if !st.has_backgrounds() {
        return Ok(Vec::new());
    }
    let mut q = st.db.prepare(
        "SELECT b.name, b.kind, b.status, b.elapsed_s, b.user_s, b.system_s, b.applied_json FROM backgrounds b JOIN runs r ON r.id = b.run_id WHERE r.cell_id = ?1 AND r.status = 'ok' AND r.superseded = 0 ORDER BY r.repetition, b.rowid",
    )?;
    let mut out: Vec<BgRow> = Vec::new();
    for cell in cells {
        type Rec = (String, String, String, f64, f64, f64, String);
        let recs: Vec<Rec> = q
            .query_map([cell.id], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut names: Vec<String> = recs.iter().map(|r| r.0.clone()).collect();
        names.sort();
        names.dedup();
        for name in names {
            let mine: Vec<&Rec> = recs.iter().filter(|r| r.0 == name).collect();
            let mean =
                |f: fn(&Rec) -> f64| mine.iter().map(|r| f(r)).sum::<f64>() / mine.len() as f64;
            let elapsed: Vec<f64> = mine.iter().map(|r| r.3).collect();
            let sp = spread(&elapsed);
            let mut status = BTreeMap::new();
            for r in &mine {
                *status.entry(r.2.clone()).or_insert(0) += 1;
            }
            let applied: serde_json::Value = serde_json::from_str(&mine[0].6).unwrap_or_default();
            out.push(BgRow {
                cell: cell.idx,
                factors: cell.factors.clone(),
                kind: mine[0].1.clone(),
                n: mine.len(),
                status,
                elapsed_s: sp.mean,
                elapsed_ci95: sp.ci95,
                user_s: mean(|r| r.4),
                system_s: mean(|r| r.5),
                nice: applied.get("nice").and_then(|v| v.as_i64()),
                ionice: applied
                    .get("ionice")
                    .and_then(|v| v.as_str())
                    .map(String::from),
                name,
            });
        }
    }
    Ok(out)
}

/// The rows as text, under a heading; nothing without backgrounds.
pub fn text(out: &mut String, rows: &[BgRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nbackground loads (mean over the runs they ran beside; priority as the kernel held it):"
    );
    for r in rows {
        let status = r.status_text();
        let _ = writeln!(
            out,
            "  cell {:>3} {:<14} {:<8} n={:<3} elapsed {:.3} s ±{:.3}  user {:.3} s  system {:.3} s  nice {} ionice {}  ({status})",
            r.cell,
            r.name,
            r.kind,
            r.n,
            r.elapsed_s,
            r.elapsed_ci95,
            r.user_s,
            r.system_s,
            r.nice.map_or("?".into(), |n| n.to_string()),
            r.ionice.as_deref().unwrap_or("?"),
        );
    }
}
