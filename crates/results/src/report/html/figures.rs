//! Bar charts of one figure across configurations (mean, 95% CI), and the named figures of
//! application benchmarks: those that vary across configurations get a chart each, those
//! that do not (constants such as a block size, zero errors) one table.

use super::{chart_block, charts, esc, g4, table};
use crate::stats::repeat::{spread, welch_significant};
use crate::stats::Results;
use charts::Bar;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Mean and 95% CI of a figure: from the repetitions when there are several, else the
/// single value with no whisker.
pub(super) fn figure(whole: f64, reps: Vec<f64>) -> (f64, f64, Vec<f64>) {
    if reps.len() >= 2 {
        let s = spread(&reps);
        (s.mean, s.ci95, reps)
    } else {
        (whole, 0.0, reps)
    }
}

pub(super) fn rel_note(base: &(f64, f64, Vec<f64>), v: &(f64, f64, Vec<f64>)) -> String {
    if base.0 == 0.0 {
        return String::new();
    }
    let pct = (v.0 - base.0) / base.0 * 100.0;
    let sig = match welch_significant(&base.2, &v.2) {
        Some(true) => " *",
        Some(false) => " (n.s.)",
        None => "",
    };
    format!("{pct:+.1}%{sig}")
}

/// Most named figures drawn per section (per-client and per-instance figures, those with a
/// dot in their name, are left to the tables of `fsbench results`).
const MAX_FIGURES: usize = 12;

/// A configuration's named figures (application benchmarks' `figures`), one value per
/// repetition.
pub(super) fn named_figures(r: &Results) -> BTreeMap<String, Vec<f64>> {
    let mut m: BTreeMap<String, Vec<f64>> = Default::default();
    if r.repetitions.is_empty() {
        for (k, v) in &r.figures {
            m.entry(k.clone()).or_default().push(*v);
        }
    } else {
        for p in &r.repetitions {
            for (k, v) in &p.figures {
                m.entry(k.clone()).or_default().push(*v);
            }
        }
    }
    // Times and rates: counts of files and bytes are in the tables of `fsbench results`.
    m.retain(|k, _| !k.contains('.') && (k.ends_with("_s") || k.ends_with("_per_s")));
    m
}

fn mean_of(f: &BTreeMap<String, Vec<f64>>, key: &str) -> (f64, f64, usize) {
    let reps = f.get(key).cloned().unwrap_or_default();
    let n = reps.len();
    match n {
        0 => (0.0, 0.0, 0),
        1 => (reps[0], 0.0, 1),
        _ => {
            let s = spread(&reps);
            (s.mean, s.ci95, n)
        }
    }
}

/// The figure names of a set of configurations in a stable order, split into those whose
/// mean differs between configurations (charted, at most [`MAX_FIGURES`]) and those that
/// do not (tabled). With one configuration every figure is constant.
pub(super) fn figure_keys(
    figs: &[BTreeMap<String, Vec<f64>>],
    lead: &[String],
) -> (Vec<String>, Vec<String>) {
    let mut keys: Vec<String> = Vec::new();
    for f in figs {
        for k in f.keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    // The headline figures first, in their order; the rest as found.
    keys.sort_by_key(|k| lead.iter().position(|h| h == k).unwrap_or(usize::MAX));
    let (mut varying, constant): (Vec<String>, Vec<String>) = keys.into_iter().partition(|k| {
        let first = mean_of(&figs[0], k).0;
        figs.iter().any(|f| mean_of(f, k).0 != first)
    });
    varying.truncate(MAX_FIGURES);
    (varying, constant)
}

/// Bar charts of the named figures that vary across configurations (mean and 95% CI over
/// repetitions; with `relative`, the difference against the first), the figures in `lead`
/// first, and one table of those that do not.
pub(super) fn figure_bars(
    out: &mut String,
    prefix: &str,
    labels: &[String],
    (figs, lead): (&[BTreeMap<String, Vec<f64>>], &[String]),
    relative: bool,
) {
    if figs.is_empty() {
        return;
    }
    let (varying, constant) = figure_keys(figs, lead);
    for (j, key) in varying.iter().enumerate() {
        let vals: Vec<(f64, f64, Vec<f64>)> = figs
            .iter()
            .map(|f| {
                let (m, ci, _) = mean_of(f, key);
                (m, ci, f.get(key).cloned().unwrap_or_default())
            })
            .collect();
        mean_bars(
            out,
            &format!("{prefix}-fig-{j}"),
            (key, key),
            labels,
            &vals,
            relative,
        );
    }
    if !constant.is_empty() {
        let _ = write!(
            out,
            "<div class=constants id=\"{}-constants\"><table><tr><th>figure the same in every configuration</th><th>value</th><th>95% CI ±</th><th>repetitions</th></tr>",
            esc(prefix)
        );
        for k in &constant {
            let (m, ci, n) = mean_of(&figs[0], k);
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{n}</td></tr>",
                esc(k),
                g4(m),
                g4(ci)
            );
        }
        out.push_str("</table></div>");
    }
}

/// A bar chart of one figure across configurations (mean, 95% CI, repetitions), each bar
/// after the first marked with its difference from the first when `relative`, and its table.
pub(super) fn mean_bars(
    out: &mut String,
    id: &str,
    (title, unit): (&str, &str),
    labels: &[String],
    figs: &[(f64, f64, Vec<f64>)],
    relative: bool,
) {
    let bars: Vec<Bar> = figs
        .iter()
        .enumerate()
        .map(|(i, f)| Bar {
            mean: f.0,
            ci95: f.1,
            note: match (relative, i) {
                (false, _) => String::new(),
                (true, 0) => "baseline".into(),
                (true, _) => rel_note(&figs[0], f),
            },
        })
        .collect();
    let svg = charts::bars(&format!("{title} (mean, 95% CI)"), unit, labels, &bars);
    let rows: Vec<Vec<String>> = figs
        .iter()
        .zip(&bars)
        .zip(labels)
        .map(|((f, b), l)| {
            let mut r = vec![l.clone(), g4(f.0), g4(f.1), f.2.len().to_string()];
            if relative {
                r.push(b.note.clone());
            }
            r
        })
        .collect();
    let mut head = vec![
        "configuration".to_string(),
        unit.to_string(),
        "95% CI ±".into(),
        "repetitions".into(),
    ];
    if relative {
        head.push("vs baseline (* significant, Welch 95%)".into());
    }
    chart_block(out, id, &svg, &table(&head, &rows));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_note_marks_significance() {
        let a = (100.0, 1.0, vec![99.0, 100.0, 101.0]);
        let b = (150.0, 1.0, vec![149.0, 150.0, 151.0]);
        assert_eq!(rel_note(&a, &b), "+50.0% *");
    }

    #[test]
    fn constant_figures_are_tabled_not_charted() {
        let f = |e: f64, t: f64| {
            BTreeMap::from([
                ("errors_s".to_string(), vec![e, e]),
                ("elapsed_s".to_string(), vec![t, t + 0.1]),
            ])
        };
        let (v, c) = figure_keys(&[f(0.0, 1.0), f(0.0, 2.0)], &[]);
        assert_eq!(
            (v, c.clone()),
            (vec!["elapsed_s".to_string()], vec!["errors_s".to_string()])
        );
        let mut out = String::new();
        figure_bars(
            &mut out,
            "g0",
            &["a".into(), "b".into()],
            (&[f(0.0, 1.0), f(0.0, 2.0)], &[]),
            true,
        );
        assert!(out.contains("id=\"g0-fig-0\"") && !out.contains("g0-fig-1"));
        assert!(out.contains("<td>errors_s</td><td>0</td>"), "{out}");
        // One configuration: nothing varies, so a table and no one-bar chart.
        let (v, _) = figure_keys(&[f(0.0, 1.0)], &[]);
        assert!(v.is_empty());
        // Headline figures lead.
        let g =
            |a: f64| BTreeMap::from([("a_s".to_string(), vec![a]), ("z_s".to_string(), vec![a])]);
        let (v, _) = figure_keys(&[g(1.0), g(2.0)], &["z_s".to_string()]);
        assert_eq!(v, ["z_s", "a_s"]);
    }
}
