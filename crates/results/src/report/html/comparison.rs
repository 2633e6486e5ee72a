//! The comparisons a measurement opens with: per baseline factor, one chart per headline
//! figure, each level's ratio to the baseline with its 95% interval for every combination
//! of the other factors (a forest plot: a dot and whiskers per row, a line at 1), marked
//! significant or not. Each chart is a `<figure class="comparison">` carrying its factor,
//! baseline and figure as data attributes.

use super::{esc, table, ComparisonChart};
use std::fmt::Write;

/// The comparison sections of `measurement`: one per (factor, baseline), in input order.
pub(super) fn sections(out: &mut String, prefix: &str, measurement: &str, all: &[ComparisonChart]) {
    let charts: Vec<&ComparisonChart> = all
        .iter()
        .filter(|c| c.measurement == measurement)
        .collect();
    let mut heads: Vec<(&str, &str)> = Vec::new();
    for c in &charts {
        if !heads.contains(&(c.factor.as_str(), c.baseline.as_str())) {
            heads.push((&c.factor, &c.baseline));
        }
    }
    for (hi, (factor, baseline)) in heads.iter().enumerate() {
        let _ = write!(
            out,
            "<div class=comparisons><h3>{} against {} = {}</h3><p class=vars>Each row: the mean at a level ÷ the mean at {} in the cell that differs only in {}, with its 95% interval; filled and starred where the interval leaves out 1.</p><div class=grid>",
            esc(factor),
            esc(factor),
            esc(baseline),
            esc(baseline),
            esc(factor)
        );
        for (ci, c) in charts
            .iter()
            .filter(|c| c.factor == *factor && c.baseline == *baseline)
            .enumerate()
        {
            chart(out, &format!("{prefix}-cmp-{hi}-{ci}"), c);
        }
        out.push_str("</div></div>");
    }
}

/// Rows grouped by the other factors (in order of first appearance), levels within.
fn ordered(c: &ComparisonChart) -> Vec<&super::RatioRow> {
    let mut ats: Vec<&str> = Vec::new();
    for r in &c.rows {
        if !ats.contains(&r.at.as_str()) {
            ats.push(&r.at);
        }
    }
    let mut rows: Vec<&super::RatioRow> = c.rows.iter().collect();
    rows.sort_by_key(|r| ats.iter().position(|a| *a == r.at));
    rows
}

fn ci_text(r: &super::RatioRow) -> String {
    match (r.ci_low, r.ci_high) {
        (Some(l), Some(h)) => format!("[{l:.3}, {h:.3}]"),
        _ => "unbounded".into(),
    }
}

fn chart(out: &mut String, id: &str, c: &ComparisonChart) {
    let rows = ordered(c);
    let svg = forest(c, &rows);
    let trs: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                format!("{} ÷ {}", r.level, c.baseline),
                r.at.clone(),
                format!("{:.4}", r.ratio),
                ci_text(r),
                r.p_value.map_or("-".into(), |p| format!("{p:.4}")),
                if r.significant { "yes" } else { "no" }.into(),
                format!("{}/{}", r.n, r.n_baseline),
            ]
        })
        .collect();
    let tbl = table(
        &[
            "level".into(),
            "at".into(),
            "ratio".into(),
            "95% CI".into(),
            "p (Welch)".into(),
            "significant".into(),
            "n/n baseline".into(),
        ],
        &trs,
    );
    let _ = writeln!(
        out,
        "<figure class=\"comparison\" id=\"{}\" data-factor=\"{}\" data-baseline=\"{}\" data-figure=\"{}\">{svg}<figcaption class=vars>{}</figcaption>{tbl}</figure>",
        esc(id),
        esc(&c.factor),
        esc(&c.baseline),
        esc(&c.figure),
        esc(&c.method)
    );
}

/// The forest plot: one row per ratio, the x axis spanning 1 and every interval.
fn forest(c: &ComparisonChart, rows: &[&super::RatioRow]) -> String {
    let (w, left, right, top, row_h) = (640.0, 230.0, 150.0, 34.0, 22.0);
    let h = top + row_h * rows.len() as f64 + 30.0;
    let mut lo: f64 = 1.0;
    let mut hi: f64 = 1.0;
    for r in rows {
        for v in [Some(r.ratio), r.ci_low, r.ci_high].into_iter().flatten() {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    let pad = ((hi - lo) * 0.08).max(0.02);
    let (lo, hi) = ((lo - pad).max(0.0), hi + pad);
    let x = |v: f64| left + (v.clamp(lo, hi) - lo) / (hi - lo) * (w - left - right);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" role=img><text x=\"8\" y=\"18\" font-size=\"14\" font-weight=\"600\">{}: ratio to {} = {}, 95% interval</text>",
        esc(&c.figure),
        esc(&c.factor),
        esc(&c.baseline)
    );
    let (x1, y0, y1) = (x(1.0), top - 6.0, top + row_h * rows.len() as f64);
    let _ = write!(
        s,
        "<line x1=\"{x1:.1}\" x2=\"{x1:.1}\" y1=\"{y0}\" y2=\"{y1}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/><text x=\"{x1:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">1 (no change)</text>",
        y1 + 14.0
    );
    for (i, r) in rows.iter().enumerate() {
        let y = top + row_h * (i as f64 + 0.5);
        let color = if r.significant { "#D55E00" } else { "#777" };
        let label = if r.at.is_empty() {
            r.level.clone()
        } else {
            format!("{} at {}", r.level, r.at)
        };
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y + 4.0,
            esc(&label)
        );
        if let (Some(l), Some(hh)) = (r.ci_low, r.ci_high) {
            let _ = write!(
                s,
                "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-width=\"2\"/>",
                x(l),
                x(hh)
            );
        }
        let fill = if r.significant { color } else { "#fff" };
        let _ = write!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"9\" height=\"9\" fill=\"{fill}\" stroke=\"{color}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{:.3} {}{}</text>",
            x(r.ratio) - 4.5,
            y - 4.5,
            w - right + 8.0,
            y + 4.0,
            r.ratio,
            esc(&ci_text(r)),
            if r.significant { " *" } else { "" }
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::super::RatioRow;
    use super::*;

    #[test]
    fn a_chart_per_figure_rows_grouped_by_the_other_factors() {
        let row = |level: &str, at: &str, ratio: f64, sig: bool| RatioRow {
            level: level.into(),
            at: at.into(),
            ratio,
            ci_low: Some(ratio - 0.05),
            ci_high: Some(ratio + 0.05),
            p_value: Some(if sig { 0.001 } else { 0.5 }),
            significant: sig,
            n: 3,
            n_baseline: 3,
        };
        let c = ComparisonChart {
            measurement: "pm".into(),
            factor: "target".into(),
            baseline: "ext4".into(),
            figure: "transactions_per_s".into(),
            method: "Fieller".into(),
            rows: vec![
                row("overlay", "instances=1", 0.97, false),
                row("btrfs", "instances=1", 1.2, true),
                row("overlay", "instances=8", 0.64, true),
            ],
        };
        let mut out = String::new();
        sections(&mut out, "g0", "pm", std::slice::from_ref(&c));
        assert!(out.contains("<figure class=\"comparison\" id=\"g0-cmp-0-0\" data-factor=\"target\" data-baseline=\"ext4\""));
        assert!(out.contains("0.640 [0.590, 0.690] *"), "{out}");
        assert_eq!(out.matches("<rect").count(), 3);
        let o: Vec<&str> = ordered(&c).iter().map(|r| r.at.as_str()).collect();
        assert_eq!(o, ["instances=1", "instances=1", "instances=8"]);
        let mut none = String::new();
        sections(&mut none, "g0", "other", &[c]);
        assert!(none.is_empty());
    }
}
