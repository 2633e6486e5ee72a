//! The cells that carry a published figure (`[[published]]`): an entry that judges no cell is
//! refused before anything runs, their extra rounds are stated by the dry run, and the
//! rounds past the minimum go on for them until their figure is known within the plan's
//! interval ([`crate::experiment::plan::published::rounds`]).

use super::{Cell, Plan};
use crate::experiment::plan::published::SUB_SECOND_MAX;
use anyhow::{bail, Result};
use std::collections::BTreeMap;

fn labels(plan: &Plan, c: &Cell) -> BTreeMap<String, String> {
    c.labels(plan).into_iter().collect()
}

/// The cells (indices into `cells`) on either side of some published figure.
pub(super) fn carried(plan: &Plan, cells: &[Cell]) -> Vec<usize> {
    let all: Vec<BTreeMap<String, String>> = cells.iter().map(|c| labels(plan, c)).collect();
    let mut out: Vec<usize> = Vec::new();
    for e in &plan.published {
        for (i, f) in all.iter().enumerate().filter(|(_, f)| e.selects(f)) {
            let base = match e.baseline_of(f) {
                Some(want) => match all.iter().position(|x| *x == want) {
                    Some(b) => Some(b),
                    None => continue,
                },
                None => None,
            };
            out.extend(std::iter::once(i).chain(base));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Refuse an entry that judges no cell of the plan (every cell it names excluded, or the
/// cell it compares with), unless it is pending. At the quick scale an entry may name only
/// full-scale cells.
pub(super) fn check_attached(plan: &Plan, cells: &[Cell]) -> Result<()> {
    if plan.quick {
        return Ok(());
    }
    let all: Vec<BTreeMap<String, String>> = cells.iter().map(|c| labels(plan, c)).collect();
    for e in plan.published.iter().filter(|e| e.pending.is_none()) {
        let judged = all
            .iter()
            .any(|f| e.selects(f) && e.baseline_of(f).is_none_or(|want| all.contains(&want)));
        if !judged {
            bail!(
                "{}: published: no cell of the plan carries this figure ({} {}{}{}): an [[exclude]] removes the cells it names, or the ones they are compared with; name other levels in `at`, or mark it `pending`",
                e.place,
                e.measurement,
                e.figure,
                if e.compare.is_some() { ", " } else { "" },
                e.ratio_text()
            );
        }
    }
    Ok(())
}

/// The dry run's account of the published figures and the rounds of their cells.
pub(super) fn dry_run_lines(plan: &Plan, cells: &[Cell]) -> Vec<String> {
    if plan.published.is_empty() {
        return Vec::new();
    }
    let pending = plan
        .published
        .iter()
        .filter(|e| e.pending.is_some())
        .count();
    let carried = carried(plan, cells);
    let mut v = vec![format!(
        "published figures: {} [[published]] entries{} judge {} cells (verdicts: fsbench results)",
        plan.published.len(),
        if pending > 0 {
            format!(" ({pending} pending)")
        } else {
            String::new()
        },
        carried.len()
    )];
    match plan.published_rounds {
        None => v.push(
            "  their cells run the quick scale's repetitions like the others (no extra rounds at --quick)"
                .into(),
        ),
        Some(a) => {
            let most = a.max.max(SUB_SECOND_MAX);
            v.push(format!(
                "  after {} rounds their cells run more rounds until each published figure's 95% interval is within ±{}% of its mean: up to {} rounds, and up to {SUB_SECOND_MAX} for a cell whose measured runs take under a second (the plan's maximum raised to {SUB_SECOND_MAX} for sub-second runs); at most {} runs more",
                a.min,
                a.ci * 100.0,
                a.max,
                carried.len() as u64 * (most - a.min.min(most)) as u64
            ));
        }
    }
    v
}

/// The rounds every cell may run: the plan's count, or an adaptive plan's `max`.
pub(super) fn base_rounds(plan: &Plan) -> u32 {
    plan.adaptive.map_or(plan.repetitions, |a| a.max)
}

/// The most rounds any cell runs: the plan's count (an adaptive plan's `max`), or more for
/// the cells carrying a published figure.
pub(super) fn rounds_at_most(plan: &Plan) -> u32 {
    let base = base_rounds(plan);
    match plan.published_rounds {
        Some(p) => base.max(p.max).max(SUB_SECOND_MAX),
        None => base,
    }
}

/// The rounds for a cell's progress line in round `round` (from 0): the plan's count or
/// adaptive maximum, and the most the cell may run when that is more ("3 (up to 10)": a
/// published figure's cell whose measured runs take, or are expected to take, under a
/// second).
pub(super) fn rounds_text(plan: &Plan, cell_most: Option<u32>, round: u32) -> String {
    let base = base_rounds(plan);
    match cell_most.map(|m| m.max(round + 1)) {
        Some(most) if most > base => format!("{base} (up to {most})"),
        _ => base.to_string(),
    }
}
