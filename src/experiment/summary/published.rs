//! Published figures against ours: each `[[published]]` entry of the plan, for every cell
//! (or pair of cells) it names, with our figure, its 95% interval and the verdict its rule
//! gives. The rules are in docs/experiments.md, "Published figures"; [`judge`] is the one
//! place they are computed.

use super::{CellRow, Row};
use crate::experiment::plan::published::{max_rounds, num, Dir, Published, Rule};
use crate::experiment::plan::Adaptive;
use fsbench_results::stats::ratio::ratio;
use fsbench_results::stats::repeat::spread;
use serde::Serialize;
use std::collections::BTreeMap;

/// What our figure says of the paper's claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The rule holds.
    Agrees,
    /// The change is significant and goes the paper's way, but its size is not the paper's
    /// (outside the factor, or the interval not inside the range).
    DirectionOnly,
    /// The change is significant and goes the other way, or (a claim of no difference) our
    /// interval lies wholly outside the paper's range, or our figure is outside the factor
    /// of the paper's value.
    Disagrees,
    /// The paper claims a change and our interval contains "no change" (ratio 1).
    NotSignificant,
    /// The paper's range holds "no change" (or is one cell's), and our interval overlaps it
    /// without lying inside it: too wide to tell.
    Inconclusive,
    /// A side has fewer than two runs kept: no interval.
    TooFewRuns,
    /// No cell of this experiment (at this scale) carries the figure, or none of its runs
    /// was kept.
    NotMeasured,
}

impl Verdict {
    pub fn text(&self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::DirectionOnly => "direction only",
            Verdict::Disagrees => "disagrees",
            Verdict::NotSignificant => "not significant",
            Verdict::Inconclusive => "inconclusive",
            Verdict::TooFewRuns => "too few runs",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// One published figure against one of our cells (or pairs of cells).
#[derive(Debug, Clone, Serialize)]
pub struct PublishedRow {
    /// The entry's line in the plan.
    pub line: usize,
    pub claim: String,
    pub measurement: String,
    pub figure: String,
    /// The compared factor and its two levels (`null` for one cell's figure).
    pub factor: Option<String>,
    pub level: Option<String>,
    pub baseline: Option<String>,
    /// The cell's other factors' levels.
    pub at: BTreeMap<String, String>,
    pub cell: Option<usize>,
    pub baseline_cell: Option<usize>,
    /// The paper's ratio or value, when it gives one.
    pub published: Option<f64>,
    pub rule: Rule,
    /// Our ratio (level ÷ baseline) or mean.
    pub ours: Option<f64>,
    /// Its 95% interval (Fieller's for a ratio, Student's for a mean); `null` when
    /// unbounded or there are fewer than two runs.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub n: usize,
    pub n_baseline: Option<usize>,
    pub verdict: Verdict,
    /// Why, in a few words.
    pub why: String,
    /// Why the plan cannot measure it yet, as the entry says.
    pub pending: Option<String>,
}

/// Our figure for a rule: a ratio of means or one mean, and its 95% interval (`None`:
/// unbounded).
#[derive(Debug, Clone, Copy)]
pub struct Ours {
    pub value: f64,
    pub interval: Option<(f64, f64)>,
    pub is_ratio: bool,
}

/// The verdict of `rule` (with the paper's figure `published`) on our figure, and why.
pub fn judge(rule: Rule, published: Option<f64>, ours: &Ours) -> (Verdict, String) {
    let (lo, hi) = ours.interval.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
    let iv = interval_text(ours.interval);
    if !ours.is_ratio {
        return judge_value(rule, published, ours.value, (lo, hi));
    }
    let side = if lo > 1.0 {
        Some(Dir::Higher)
    } else if hi < 1.0 {
        Some(Dir::Lower)
    } else {
        None
    };
    let claimed = match rule {
        Rule::Direction(d) => Some(d),
        Rule::Within(_) => published.map(|p| if p > 1.0 { Dir::Higher } else { Dir::Lower }),
        Rule::Range(a, b) if a > 1.0 || b < 1.0 => {
            Some(if a > 1.0 { Dir::Higher } else { Dir::Lower })
        }
        Rule::Range(a, b) => {
            return if lo >= a && hi <= b {
                (
                    Verdict::Agrees,
                    format!("{iv} lies inside [{}, {}]", num(a), num(b)),
                )
            } else if hi < a || lo > b {
                (
                    Verdict::Disagrees,
                    format!("{iv} lies outside [{}, {}]", num(a), num(b)),
                )
            } else {
                (
                    Verdict::Inconclusive,
                    format!(
                        "{iv} overlaps [{}, {}] without lying inside it",
                        num(a),
                        num(b)
                    ),
                )
            }
        }
    };
    let Some(claimed) = claimed else {
        return (
            Verdict::Inconclusive,
            "no published ratio to judge by".into(),
        );
    };
    match side {
        None => (
            Verdict::NotSignificant,
            format!(
                "{iv} contains 1 (no change); the paper's is {}",
                dir_text(claimed)
            ),
        ),
        Some(s) if s != claimed => (
            Verdict::Disagrees,
            format!("{iv}: {}, the paper's {}", dir_text(s), dir_text(claimed)),
        ),
        Some(_) => size_verdict(rule, published, ours.value, (lo, hi), &iv),
    }
}

/// A significant change the paper's way: does its size match?
fn size_verdict(
    rule: Rule,
    published: Option<f64>,
    r: f64,
    (lo, hi): (f64, f64),
    iv: &str,
) -> (Verdict, String) {
    match (rule, published) {
        (Rule::Direction(d), _) => (
            Verdict::Agrees,
            format!("{iv}: {}, as published", dir_text(d)),
        ),
        (Rule::Within(f), Some(p)) => {
            let (a, b) = (p / f, p * f);
            if (a..=b).contains(&r) {
                (
                    Verdict::Agrees,
                    format!("{} within {}× of {}", g(r), num(f), num(p)),
                )
            } else {
                (
                    Verdict::DirectionOnly,
                    format!(
                        "{} outside {}..{} ({}× of {})",
                        g(r),
                        g(a),
                        g(b),
                        num(f),
                        num(p)
                    ),
                )
            }
        }
        (Rule::Range(a, b), _) if lo >= a && hi <= b => (
            Verdict::Agrees,
            format!("{iv} lies inside [{}, {}]", num(a), num(b)),
        ),
        (Rule::Range(a, b), _) => (
            Verdict::DirectionOnly,
            format!(
                "{iv}: the paper's direction, not inside [{}, {}]",
                num(a),
                num(b)
            ),
        ),
        (Rule::Within(_), None) => (
            Verdict::Inconclusive,
            "no published ratio to judge by".into(),
        ),
    }
}

/// One cell's figure: within a factor of the paper's value (our mean), or our interval
/// inside its range.
fn judge_value(
    rule: Rule,
    published: Option<f64>,
    mean: f64,
    (lo, hi): (f64, f64),
) -> (Verdict, String) {
    let iv = interval_text(Some((lo, hi)));
    match (rule, published) {
        (Rule::Within(f), Some(v)) => {
            let (a, b) = (v / f, v * f);
            if (a..=b).contains(&mean) {
                (
                    Verdict::Agrees,
                    format!("{} within {}× of {}", g(mean), num(f), num(v)),
                )
            } else {
                (
                    Verdict::Disagrees,
                    format!(
                        "{} outside {}..{} ({}× of {})",
                        g(mean),
                        g(a),
                        g(b),
                        num(f),
                        num(v)
                    ),
                )
            }
        }
        (Rule::Range(a, b), _) if lo >= a && hi <= b => (
            Verdict::Agrees,
            format!("{iv} lies inside [{}, {}]", num(a), num(b)),
        ),
        (Rule::Range(a, b), _) if hi < a || lo > b => (
            Verdict::Disagrees,
            format!("{iv} lies outside [{}, {}]", num(a), num(b)),
        ),
        (Rule::Range(a, b), _) => (
            Verdict::Inconclusive,
            format!(
                "{iv} overlaps [{}, {}] without lying inside it",
                num(a),
                num(b)
            ),
        ),
        // The plan refuses a direction or a factor without a value for one cell's figure.
        _ => (
            Verdict::Inconclusive,
            "no rule applies to one cell's figure".into(),
        ),
    }
}

fn dir_text(d: Dir) -> &'static str {
    match d {
        Dir::Higher => "higher",
        Dir::Lower => "lower",
    }
}

/// Four significant digits, the summary's way.
pub fn g(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        format!("{v:.3e}")
    } else {
        format!("{v:.4}")
    }
}

fn interval_text(iv: Option<(f64, f64)>) -> String {
    match iv {
        Some((l, h)) => format!("[{}, {}]", g(l), g(h)),
        None => "the interval (unbounded)".into(),
    }
}

/// Every entry against the cells it names: a row per cell (or pair of cells), or one row
/// saying it was not measured when no cell of the experiment carries it.
pub(super) fn rows(
    entries: &[Published],
    cells: &[CellRow],
    values: &BTreeMap<(usize, String, String), Vec<f64>>,
) -> Vec<PublishedRow> {
    let mut out = Vec::new();
    for e in entries {
        let before = out.len();
        for c in cells.iter().filter(|c| e.selects(&c.factors)) {
            let base = match e.baseline_of(&c.factors) {
                Some(want) => match cells.iter().find(|x| x.factors == want) {
                    Some(b) => Some(b),
                    None => continue,
                },
                None => None,
            };
            out.push(row(e, c, base, values));
        }
        if out.len() == before {
            let mut r = blank(e);
            r.why = "no cell of this experiment carries it (at this scale)".into();
            out.push(r);
        }
    }
    out
}

/// An entry's row before any figure of ours: not measured.
fn blank(e: &Published) -> PublishedRow {
    let p = e.compare.as_ref();
    PublishedRow {
        line: e.line,
        claim: e.claim.clone(),
        measurement: e.measurement.clone(),
        figure: e.figure.clone(),
        factor: p.map(|p| p.factor.clone()),
        level: p.map(|p| p.level.clone()),
        baseline: p.map(|p| p.against.clone()),
        at: e.at.iter().cloned().collect(),
        cell: None,
        baseline_cell: None,
        published: e.published,
        rule: e.rule,
        ours: None,
        ci_low: None,
        ci_high: None,
        n: 0,
        n_baseline: None,
        verdict: Verdict::NotMeasured,
        why: String::new(),
        pending: e.pending.clone(),
    }
}

/// One cell (or pair) judged.
fn row(
    e: &Published,
    c: &CellRow,
    base: Option<&CellRow>,
    values: &BTreeMap<(usize, String, String), Vec<f64>>,
) -> PublishedRow {
    let mut r = blank(e);
    r.at = c.factors.clone();
    r.at.remove("measurement");
    if let Some(p) = &e.compare {
        r.at.remove(&p.factor);
    }
    r.cell = Some(c.idx);
    r.baseline_cell = base.map(|b| b.idx);
    let get = |idx: usize| values.get(&(idx, String::new(), e.figure.clone()));
    let (a, b) = (get(c.idx), base.map(|b| get(b.idx)));
    r.n = a.map_or(0, Vec::len);
    r.n_baseline = b.map(|b| b.map_or(0, Vec::len));
    let (Some(a), Some(b)) = (a, b.unwrap_or(a)) else {
        r.why = "no runs kept in the cell or in the one it is compared with".into();
        return r;
    };
    let ours = match base {
        Some(_) => ratio(a, b).map(|x| Ours {
            value: x.ratio,
            interval: x.ci_low.zip(x.ci_high),
            is_ratio: true,
        }),
        None => {
            let s = spread(a);
            Some(Ours {
                value: s.mean,
                interval: Some((s.mean - s.ci95, s.mean + s.ci95)),
                is_ratio: false,
            })
        }
    };
    let Some(ours) = ours else {
        r.why = "the baseline's mean is 0: no ratio".into();
        return r;
    };
    r.ours = Some(ours.value);
    (r.ci_low, r.ci_high) = ours.interval.unzip();
    if a.len() < 2 || (base.is_some() && b.len() < 2) {
        r.verdict = Verdict::TooFewRuns;
        r.why = "an interval needs two runs or more on each side".into();
        (r.ci_low, r.ci_high) = (None, None);
        return r;
    }
    (r.verdict, r.why) = judge(e.rule, e.published, &ours);
    r
}

/// How the cells carrying a published figure repeat (adaptive), and where each stands.
#[derive(Debug, Clone, Serialize)]
pub struct PublishedRounds {
    pub min: u32,
    /// The plan's maximum; a cell whose runs take under a second goes on to `sub_second_max`.
    pub max: u32,
    pub sub_second_max: u32,
    pub ci: f64,
    pub cells: Vec<PublishedCell>,
}

/// A cell carrying a published figure: whether each of its published figures has a 95%
/// half-width within `ci` of its mean, how long its runs take and how many rounds it may run.
#[derive(Debug, Clone, Serialize)]
pub struct PublishedCell {
    pub cell: usize,
    pub figures: Vec<String>,
    pub reached: bool,
    /// The mean measured seconds of its runs (`duration_s`, else `elapsed_s`).
    pub seconds: Option<f64>,
    pub max: u32,
}

/// Each cell on either side of a published figure, and whether it has repeated enough.
pub(super) fn rounds(
    a: Adaptive,
    entries: &[Published],
    cells: &[CellRow],
    rows: &[Row],
) -> PublishedRounds {
    let mut carried: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for e in entries {
        for c in cells.iter().filter(|c| e.selects(&c.factors)) {
            let base = e
                .baseline_of(&c.factors)
                .and_then(|want| cells.iter().find(|x| x.factors == want));
            if e.compare.is_some() && base.is_none() {
                continue;
            }
            for idx in std::iter::once(c.idx).chain(base.map(|b| b.idx)) {
                let f = carried.entry(idx).or_default();
                if !f.contains(&e.figure) {
                    f.push(e.figure.clone());
                }
            }
        }
    }
    let row = |cell: usize, fig: &str| {
        rows.iter()
            .find(|r| r.cell == cell && r.flowop.is_empty() && r.figure == fig)
    };
    let cells = carried
        .into_iter()
        .map(|(cell, figures)| {
            let reached = figures
                .iter()
                .all(|f| row(cell, f).is_some_and(|r| r.n >= 2 && r.ci95 <= a.ci * r.mean.abs()));
            let seconds = row(cell, "duration_s")
                .or_else(|| row(cell, "elapsed_s"))
                .map(|r| r.mean);
            PublishedCell {
                cell,
                figures,
                reached,
                seconds,
                max: max_rounds(&a, seconds),
            }
        })
        .collect();
    PublishedRounds {
        min: a.min,
        max: a.max,
        sub_second_max: crate::experiment::plan::published::SUB_SECOND_MAX,
        ci: a.ci,
        cells,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratio_of(value: f64, lo: f64, hi: f64) -> Ours {
        Ours {
            value,
            interval: Some((lo, hi)),
            is_ratio: true,
        }
    }

    #[test]
    fn direction_rules() {
        let up = Rule::Direction(Dir::Higher);
        assert_eq!(judge(up, None, &ratio_of(1.3, 1.1, 1.5)).0, Verdict::Agrees);
        assert_eq!(
            judge(up, None, &ratio_of(0.8, 0.7, 0.9)).0,
            Verdict::Disagrees
        );
        assert_eq!(
            judge(up, None, &ratio_of(1.1, 0.9, 1.3)).0,
            Verdict::NotSignificant
        );
        let unbounded = Ours {
            value: 2.0,
            interval: None,
            is_ratio: true,
        };
        assert_eq!(judge(up, None, &unbounded).0, Verdict::NotSignificant);
    }

    #[test]
    fn within_rules() {
        let w = Rule::Within(1.5);
        assert_eq!(
            judge(w, Some(1.8), &ratio_of(1.5, 1.3, 1.7)).0,
            Verdict::Agrees
        );
        let (v, why) = judge(w, Some(1.8), &ratio_of(1.1, 1.05, 1.15));
        assert_eq!(v, Verdict::DirectionOnly, "{why}");
        assert_eq!(
            judge(w, Some(1.8), &ratio_of(0.9, 0.85, 0.95)).0,
            Verdict::Disagrees
        );
        assert_eq!(
            judge(w, Some(1.8), &ratio_of(1.7, 0.9, 2.5)).0,
            Verdict::NotSignificant
        );
        // Lower: 0.46 within 1.5x is 0.307..0.69.
        assert_eq!(
            judge(w, Some(0.46), &ratio_of(0.6, 0.5, 0.7)).0,
            Verdict::Agrees
        );
    }

    #[test]
    fn range_rules_for_a_change_and_for_no_difference() {
        let change = Rule::Range(1.02, 1.1);
        assert_eq!(
            judge(change, Some(1.05), &ratio_of(1.05, 1.03, 1.07)).0,
            Verdict::Agrees
        );
        assert_eq!(
            judge(change, None, &ratio_of(1.3, 1.2, 1.4)).0,
            Verdict::DirectionOnly
        );
        assert_eq!(
            judge(change, None, &ratio_of(1.04, 0.98, 1.1)).0,
            Verdict::NotSignificant
        );
        assert_eq!(
            judge(change, None, &ratio_of(0.9, 0.85, 0.95)).0,
            Verdict::Disagrees
        );
        // "Within 1%": the interval must lie inside [0.99, 1.01].
        let same = Rule::Range(0.99, 1.01);
        assert_eq!(
            judge(same, Some(1.0), &ratio_of(1.0, 0.995, 1.005)).0,
            Verdict::Agrees
        );
        assert_eq!(
            judge(same, Some(1.0), &ratio_of(1.2, 1.1, 1.3)).0,
            Verdict::Disagrees
        );
        assert_eq!(
            judge(same, Some(1.0), &ratio_of(1.0, 0.95, 1.05)).0,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn one_cell_figures() {
        let cell = |m: f64, h: f64| Ours {
            value: m,
            interval: Some((m - h, m + h)),
            is_ratio: false,
        };
        let share = Rule::Range(0.6, 0.73);
        assert_eq!(
            judge(share, Some(0.667), &cell(0.66, 0.02)).0,
            Verdict::Agrees
        );
        assert_eq!(
            judge(share, Some(0.667), &cell(0.5, 0.02)).0,
            Verdict::Disagrees
        );
        assert_eq!(
            judge(share, Some(0.667), &cell(0.6, 0.05)).0,
            Verdict::Inconclusive
        );
        let w = Rule::Within(2.0);
        assert_eq!(judge(w, Some(1.8), &cell(2.5, 1.0)).0, Verdict::Agrees);
        assert_eq!(judge(w, Some(1.8), &cell(4.0, 0.1)).0, Verdict::Disagrees);
    }
}
