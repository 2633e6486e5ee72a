//! The summary as text, CSV and Markdown.

use super::{Comparison, PublishedRow, Row, Summary};
use fsbench_results::stats::modes::Modality;
use std::collections::BTreeMap;
use std::fmt::Write;

fn factor_text(f: &BTreeMap<String, String>) -> String {
    // measurement and target first, the rest in name order.
    let first = ["measurement", "target", "cache"];
    let mut v: Vec<String> = Vec::new();
    for k in first {
        if let Some(x) = f.get(k) {
            v.push(format!("{k}={x}"));
        }
    }
    for (k, x) in f {
        if !first.contains(&k.as_str()) {
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

/// The shape of a row's repetitions in a word or two, its modes' means in the figure's
/// unit: `n<4` (too few for the largest-gap test), `unimodal`, or a split worth a look
/// (`bimodal? 7181/s (n=3) | 11102/s (n=3)`, `outlier? ...`).
pub fn shape_text(figure: &str, m: &Modality) -> String {
    let v = |x: f64| fsbench_base::units::figure::value(figure, x);
    match m {
        Modality::TooFew => format!("n<{}", fsbench_results::stats::modes::MIN_N),
        Modality::OneMode => "unimodal".into(),
        Modality::Bimodal(m) => format!(
            "bimodal? {} (n={}) | {} (n={})",
            v(m.low_mean),
            m.low_n,
            v(m.high_mean),
            m.high_n
        ),
        Modality::Outlier(m) => {
            let (out, rest) = if m.low_n == 1 {
                (m.low_mean, m.high_mean)
            } else {
                (m.high_mean, m.low_mean)
            };
            format!("outlier? {} (rest {})", v(out), v(rest))
        }
    }
}

/// The shape as one word for CSV: `n<4`, `unimodal`, `bimodal` or `outlier` (the modes'
/// means are in the JSON's `bimodal`).
fn shape_word(m: &Modality) -> String {
    match m {
        Modality::TooFew => format!("n<{}", fsbench_results::stats::modes::MIN_N),
        Modality::OneMode => "unimodal".into(),
        Modality::Bimodal(_) => "bimodal".into(),
        Modality::Outlier(_) => "outlier".into(),
    }
}

/// What the columns of a cell's table mean, in one line.
pub const LEGEND: &str = "(* headline figure; ±95% CI: half-width of the mean's 95% confidence interval; CV: standard deviation ÷ mean; shape: the repetitions' largest-gap test, n<4 too few to tell, unimodal, or bimodal?/outlier? a split worth a look)";

fn g4(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        format!("{v:.3e}")
    } else {
        format!("{v:.4}")
    }
}

/// A cell's flags in brackets.
fn flags_text(r: &Row, s: &Summary) -> String {
    let mut flags = String::new();
    if r.disturbed > 0 {
        let _ = write!(
            flags,
            "  [DISTURBED: {} run(s): other CPU, or a simulated disk's or remote's replies late, over {:.0}%]",
            r.disturbed,
            s.noise_threshold * 100.0
        );
    }
    if r.failed > 0 {
        let _ = write!(flags, "  [{} run(s) failed]", r.failed);
    }
    let kept = if s.include_flagged {
        "kept"
    } else {
        "left out"
    };
    if r.ended_early > 0 {
        let _ = write!(flags, "  [ENDED EARLY: {} run(s), {kept}]", r.ended_early);
    }
    if r.cache_served > 0 {
        let _ = write!(flags, "  [CACHE SERVED: {} run(s), {kept}]", r.cache_served);
    }
    if r.caches_dropped_elsewhere > 0 {
        let _ = write!(
            flags,
            "  [CACHES DROPPED ELSEWHERE: {} run(s), by another process]",
            r.caches_dropped_elsewhere
        );
    }
    flags
}

/// The text summary of whole-run figures, with the comparisons of the headline figures
/// (`--all` gives every figure's).
pub fn render_text(s: &Summary) -> String {
    let mut s = super::filter(s, false);
    let others = s.comparisons.iter().filter(|c| !c.headline).count();
    s.comparisons.retain(|c| c.headline);
    // Each PostMark instance's own figures (instance.N.*) repeat the whole run's per
    // instance: 27 rows each, 216 at eight instances. Detail, as a flowop's figures are.
    let per_instance = |f: &str| f.starts_with("instance.");
    let instances = s.rows.iter().filter(|r| per_instance(&r.figure)).count();
    s.rows.retain(|r| !per_instance(&r.figure));
    s.comparisons.retain(|c| !per_instance(&c.figure));
    let mut out = text_body(&s);
    if others > 0 {
        let _ = writeln!(
            out,
            "\n({others} comparisons of other figures: fsbench results --all, or --json)"
        );
    }
    if instances > 0 {
        let _ = writeln!(
            out,
            "({instances} rows of each instance's own figures, instance.N.*: fsbench results --all, or --json)"
        );
    }
    published_text(&mut out, &s);
    out
}

/// A row's mean, interval and coefficient of variation as printed: in the figure's unit,
/// and `-` for the interval and CV of a single value (which has neither).
fn spread_text(r: &Row) -> (String, String, String) {
    let (mean, ci) = fsbench_base::units::figure::mean_and_ci(&r.figure, r.mean, r.ci95);
    if r.n < 2 {
        (mean, "-".into(), "-".into())
    } else {
        (mean, ci, format!("{:.1}%", r.cv * 100.0))
    }
}

/// The text summary of the figures in `s` as they are, the published figures last.
pub fn render_text_all(s: &Summary) -> String {
    let mut out = text_body(s);
    published_text(&mut out, s);
    out
}

/// Everything of the text summary but the published figures.
fn text_body(s: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "experiment {}{}: {}{}",
        s.experiment,
        if s.quick { " (quick)" } else { "" },
        match &s.adaptive {
            Some(a) => format!(
                "adaptive repetitions ({} to {}, until the 95% interval is within {}% of the mean)",
                a.min,
                a.max,
                a.ci * 100.0
            ),
            None => fsbench_base::units::count(s.repetitions, "repetition"),
        },
        if s.finished {
            ""
        } else {
            " (unfinished: continue with --resume)"
        }
    );
    let _ = writeln!(
        out,
        "{}",
        if s.include_flagged {
            "runs flagged ended early or served from cache are kept (--include-flagged)"
        } else {
            "runs flagged ended early or served from cache are left out (--include-flagged keeps them)"
        }
    );
    cells_text(&mut out, s);
    if let Some(a) = &s.adaptive {
        let list = |v: &[usize]| {
            v.iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "\nadaptive repetitions: {} of {} cells reached ±{}% (cells {}){}",
            a.reached.len(),
            a.reached.len() + a.not_reached.len(),
            a.ci * 100.0,
            if a.reached.is_empty() {
                "none".into()
            } else {
                list(&a.reached)
            },
            if a.not_reached.is_empty() {
                String::new()
            } else {
                format!(
                    "; not within {} rounds: cells {}",
                    a.max,
                    list(&a.not_reached)
                )
            }
        );
    }
    super::background::text(&mut out, &s.backgrounds);
    comparisons_text(&mut out, &s.comparisons);
    out
}

/// What the paper's figure is compared with: "ovl-ext4 ÷ ext4 at cache=cold" or a cell's
/// levels, naming only the factors that vary among the measurement's cells in `s`.
pub fn published_what(p: &PublishedRow, s: &Summary) -> String {
    let varies = |k: &str, v: &String| {
        s.rows.iter().any(|r| {
            r.factors.get("measurement") == Some(&p.measurement) && r.factors.get(k) != Some(v)
        })
    };
    let at: BTreeMap<String, String> =
        p.at.iter()
            .filter(|(k, v)| varies(k, v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
    let at = factor_text(&at);
    match (&p.level, &p.baseline) {
        (Some(l), Some(b)) if at.is_empty() => format!("{l} ÷ {b}"),
        (Some(l), Some(b)) => format!("{l} ÷ {b} at {at}"),
        _ if at.is_empty() => "the cell".into(),
        _ => at,
    }
}

/// Our figure with its interval, or why there is none.
pub fn published_ours(p: &PublishedRow) -> String {
    match (p.ours, p.ci_low.zip(p.ci_high)) {
        (Some(v), Some((l, h))) => format!("{} [{}, {}]", g4(v), g4(l), g4(h)),
        (Some(v), None) if p.n >= 2 && p.n_baseline.is_none_or(|n| n >= 2) => {
            format!("{} [unbounded]", g4(v))
        }
        (Some(v), None) => format!("{} [no interval]", g4(v)),
        (None, _) => "-".into(),
    }
}

/// "n=3/3" for a ratio, "n=3" for a cell's figure.
pub fn published_n(p: &PublishedRow) -> String {
    match p.n_baseline {
        Some(b) => format!("n={}/{b}", p.n),
        None => format!("n={}", p.n),
    }
}

/// The paper's figures against ours, an entry's rows under its claim, then the tally.
fn published_text(out: &mut String, s: &Summary) {
    if s.published.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\npublished vs ours (the plan's [[published]] entries; verdict rules: docs/experiments.md, \"Published figures\"):"
    );
    let mut line = 0;
    for p in &s.published {
        if p.line != line {
            line = p.line;
            let _ = writeln!(
                out,
                "  {} (plan line {}{}): {} {}: published {}",
                if p.claim.is_empty() {
                    "(no claim)"
                } else {
                    &p.claim
                },
                p.line,
                p.pending
                    .as_ref()
                    .map_or(String::new(), |w| format!(", pending: {w}")),
                p.measurement,
                p.figure,
                published_figure(p)
            );
        }
        let _ = writeln!(
            out,
            "    {:<44} ours {:<28} {:<9} {:<15} {}",
            published_what(p, s),
            published_ours(p),
            published_n(p),
            p.verdict.text(),
            p.why
        );
    }
    let _ = writeln!(out, "  verdicts: {}", tally(&s.published));
}

/// The paper's figure and its rule, as the plan states them: "1.8 (within 1.5×)",
/// "lower (direction)", "range [0.99, 1.01]".
pub fn published_figure(p: &PublishedRow) -> String {
    use crate::experiment::plan::published::{num, Dir, Rule};
    match (p.published, p.rule) {
        (_, Rule::Direction(d)) => {
            let d = if d == Dir::Higher { "higher" } else { "lower" };
            match p.published {
                Some(v) => format!("{d} ({}, direction)", num(v)),
                None => format!("{d} (direction)"),
            }
        }
        (Some(v), r) => format!("{} ({})", num(v), r.text()),
        (None, r) => r.text(),
    }
}

/// How many rows got each verdict: "3 agrees, 1 disagrees".
pub fn tally(rows: &[PublishedRow]) -> String {
    use super::Verdict::*;
    let all = [
        Agrees,
        DirectionOnly,
        Disagrees,
        NotSignificant,
        Inconclusive,
        TooFewRuns,
        NotMeasured,
    ];
    all.iter()
        .filter_map(|v| {
            let n = rows.iter().filter(|r| r.verdict == *v).count();
            (n > 0).then(|| format!("{n} {}", v.text()))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each cell in order: its factors and flags, what it ran under, and a row per figure (the
/// headline figures first); a cell without figures says why.
fn cells_text(out: &mut String, s: &Summary) {
    let mut cells: Vec<usize> = s.rows.iter().map(|r| r.cell).collect();
    cells.extend(s.empty_cells.iter().map(|c| c.cell));
    cells.sort_unstable();
    cells.dedup();
    for cell in cells {
        if let Some(c) = s.empty_cells.iter().find(|c| c.cell == cell) {
            empty_cell_text(out, s, c);
            continue;
        }
        let rows: Vec<&Row> = s.rows.iter().filter(|r| r.cell == cell).collect();
        let _ = writeln!(
            out,
            "\ncell {}: {}{}",
            cell,
            factor_text(&rows[0].factors),
            flags_text(rows[0], s)
        );
        conditions_text(out, s, cell);
        let _ = writeln!(
            out,
            "  {:<28} {:>13} {:>12} {:>7} {:>3}  shape",
            "figure", "mean", "±95% CI", "CV", "n"
        );
        for r in rows {
            let name = fig_name(&r.flowop, &r.figure);
            let (mean, ci, cv) = spread_text(r);
            let _ = writeln!(
                out,
                "  {:<28} {:>13} {:>12} {:>7} {:>3}  {}",
                format!("{name}{}", if r.headline { " *" } else { "" }),
                mean,
                ci,
                cv,
                r.n,
                shape_text(&r.figure, &r.bimodal)
            );
        }
    }
    if !s.rows.is_empty() {
        let _ = writeln!(out, "\n{LEGEND}");
    }
}

/// A cell without figures, and why.
fn empty_cell_text(out: &mut String, s: &Summary, c: &super::EmptyCell) {
    let _ = writeln!(
        out,
        "\ncell {}: {}  no figures: {} run(s) failed, {} left out as flagged ({} ended early, {} served from cache){}",
        c.cell,
        factor_text(&c.factors),
        c.failed,
        c.excluded,
        c.ended_early,
        c.cache_served,
        if c.excluded > 0 { "; --include-flagged keeps them" } else { "" }
    );
    conditions_text(out, s, c.cell);
}

/// What the cell's runs ran under, a line below its header.
fn conditions_text(out: &mut String, s: &Summary, cell: usize) {
    if let Some(c) = s.conditions.iter().find(|c| c.cell == cell) {
        let l = super::conditions::line(c);
        if !l.is_empty() {
            let _ = writeln!(out, "{l}");
        }
    }
}

/// The interval as text.
fn ci_text(c: &Comparison) -> String {
    match (c.ci_low, c.ci_high) {
        (Some(l), Some(h)) => format!("[{}, {}]", ratio_num(l), ratio_num(h)),
        _ => "[unbounded]".into(),
    }
}

/// The other factors' levels that vary among the comparisons of the same factor and
/// measurement in `all`.
fn at_text(c: &Comparison, all: &[Comparison]) -> String {
    let at: BTreeMap<String, String> =
        c.at.iter()
            .filter(|(k, v)| {
                all.iter().any(|o| {
                    o.factor == c.factor
                        && o.at.get("measurement") == c.at.get("measurement")
                        && o.at.get(*k) != Some(*v)
                })
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
    if at.is_empty() {
        String::new()
    } else {
        format!("at {}", factor_text(&at))
    }
}

/// The comparisons, grouped by compared factor, then measurement and figure: each ratio
/// with its change in percent, interval, p-value and counts. The `at` column is as wide as
/// its longest entry (none when no comparison needs one).
fn comparisons_text(out: &mut String, comparisons: &[Comparison]) {
    let mut head = (String::new(), String::new());
    let mut group = (String::new(), String::new());
    let ats: Vec<String> = comparisons
        .iter()
        .map(|c| at_text(c, comparisons))
        .collect();
    let at_w = ats.iter().map(|a| a.chars().count()).max().unwrap_or(0);
    for (c, at) in comparisons.iter().zip(&ats) {
        if (c.factor.clone(), c.baseline.clone()) != head {
            head = (c.factor.clone(), c.baseline.clone());
            group = Default::default();
            let _ = writeln!(
                out,
                "\ncompared with {} = {} (ratio = mean ÷ the baseline's mean in the cell that differs only in {}; 95% Fieller interval; Welch's p; * significant):",
                c.factor, c.baseline, c.factor
            );
        }
        let m = c.at.get("measurement").cloned().unwrap_or_default();
        let fig = fig_name(&c.flowop, &c.figure);
        if (m.clone(), fig.clone()) != group {
            group = (m.clone(), fig.clone());
            let _ = writeln!(out, "  {m}: {fig}");
        }
        let _ = writeln!(
            out,
            "    {:<24} {:<at_w$} {:>7} {:>+8.1}% {:<20} {:>8} n={}/{}",
            format!("{} ÷ {}", c.level, c.baseline),
            at,
            ratio_num(c.ratio),
            (c.ratio - 1.0) * 100.0,
            format!("{}{}", ci_text(c), if c.significant { " *" } else { "" }),
            c.p_value
                .map_or("p=-".to_string(), |p| format!("p{}", p_text(p))),
            c.n,
            c.n_baseline
        );
    }
}

/// A p-value as `=0.358`, or `<0.001` below that.
fn p_text(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("={p:.3}")
    }
}

/// A ratio to four significant digits (`1.546`, `0.07640`).
fn ratio_num(v: f64) -> String {
    fsbench_base::units::figure::sig(v, 4)
}

pub fn render_csv(s: &Summary) -> String {
    let mut out = String::from("cell,factors,flowop,figure,n,mean,ci95,cv,disturbed,failed,ended_early,cache_served,excluded,shape,baseline_cell,ratio,ci_low,ci_high,p_value\n");
    let q = |s: &str| {
        fsbench_base::export::csv::field(s, fsbench_base::export::csv::Quote::Always).into_owned()
    };
    let o = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for r in &s.rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},,,,,",
            r.cell,
            q(&factor_text(&r.factors)),
            q(&r.flowop),
            r.figure,
            r.n,
            r.mean,
            r.ci95,
            r.cv,
            r.disturbed,
            r.failed,
            r.ended_early,
            r.cache_served,
            r.excluded,
            shape_word(&r.bimodal),
        );
    }
    for c in &s.comparisons {
        let _ = writeln!(
            out,
            "{},{},{},{},{},,,,,,,,,,{},{},{},{},{}",
            c.cell,
            q(&format!(
                "{}={} vs {} {}",
                c.factor,
                c.level,
                c.baseline,
                at_text(c, &s.comparisons)
            )),
            q(&c.flowop),
            c.figure,
            c.n,
            c.baseline_cell,
            c.ratio,
            o(c.ci_low),
            o(c.ci_high),
            o(c.p_value)
        );
    }
    out
}

/// A Markdown table cell: `|` escaped, `<` as an entity, newlines as spaces.
fn md(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('\n', " ")
}

pub fn render_markdown(s: &Summary) -> String {
    let mut out = format!("## {}\n\n| cell | factors | figure | mean | ±95% CI | CV | n | shape |\n|---|---|---|---:|---:|---:|---:|---|\n", md(&s.experiment));
    for r in &s.rows {
        markdown_row(&mut out, r);
    }
    if !s.published.is_empty() {
        out.push_str("\n| plan line | claim | figure | compared | published | ours [95% CI] | n | verdict |\n|---:|---|---|---|---|---|---|---|\n");
        for p in &s.published {
            let _ = writeln!(
                out,
                "| {} | {} | {} {} | {} | {} | {} | {} | {} |",
                p.line,
                md(&p.claim),
                md(&p.measurement),
                md(&p.figure),
                md(&published_what(p, s)),
                md(&published_figure(p)),
                md(&published_ours(p)),
                published_n(p),
                p.verdict.text()
            );
        }
    }
    if !s.comparisons.is_empty() {
        out.push_str("\n| factor | level ÷ baseline | at | figure | ratio | 95% CI | p | n |\n|---|---|---|---|---:|---:|---:|---:|\n");
        for c in &s.comparisons {
            let _ = writeln!(
                out,
                "| {} | {} ÷ {} | {} | {} | {}{} | {} | {} | {}/{} |",
                md(&c.factor),
                md(&c.level),
                md(&c.baseline),
                md(&factor_text(&c.at)),
                md(&fig_name(&c.flowop, &c.figure)),
                ratio_num(c.ratio),
                if c.significant { " *" } else { "" },
                ci_text(c),
                c.p_value.map_or("-".to_string(), |p| format!("{p:.4}")),
                c.n,
                c.n_baseline
            );
        }
    }
    out
}

/// A figure's row of the Markdown table, the cell's flags beside its number.
fn markdown_row(out: &mut String, r: &Row) {
    let mut flags = String::new();
    if r.disturbed > 0 {
        flags.push_str(" ⚠");
    }
    if r.ended_early > 0 {
        let _ = write!(flags, " ({} ended early)", r.ended_early);
    }
    if r.cache_served > 0 {
        let _ = write!(flags, " ({} cache served)", r.cache_served);
    }
    if r.caches_dropped_elsewhere > 0 {
        let _ = write!(
            flags,
            " ({} caches dropped elsewhere)",
            r.caches_dropped_elsewhere
        );
    }
    let (mean, ci, cv) = spread_text(r);
    let _ = writeln!(
        out,
        "| {}{} | {} | {}{} | {} | {} | {} | {} | {} |",
        r.cell,
        flags,
        md(&factor_text(&r.factors)),
        md(&fig_name(&r.flowop, &r.figure)),
        if r.headline { " *" } else { "" },
        mean,
        ci,
        cv,
        r.n,
        md(&shape_text(&r.figure, &r.bimodal))
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn markdown_cells_escape_pipes_angles_and_newlines() {
        assert_eq!(super::md("a|b<c>\nd"), "a\\|b&lt;c> d");
    }
}
