//! Side-by-side comparison of results: per flowop and in total, with the change against the
//! first result and, where both sides hold repetitions, whether it is significant (Welch's
//! t-test at 95%).

use crate::stats::repeat::{spread, welch_significant};
use crate::stats::Results;
use std::fmt::Write;

fn pct(base: f64, v: f64) -> String {
    if base == 0.0 {
        return "-".into();
    }
    format!("{:+.1}%", (v - base) / base * 100.0)
}

/// Per-repetition values of one figure (`idx` 0 ops/s, 1 MB/s, 2 mean, 3 p99) of flowop
/// `name`, or of the summary when `name` is None.
fn reps(r: &Results, name: Option<&str>, idx: usize) -> Vec<f64> {
    match name {
        None => r
            .repetitions
            .iter()
            .map(|p| match idx {
                0 => p.summary.ops_per_s,
                1 => p.summary.mb_per_s,
                _ => p.summary.mean_latency_ms * 1000.0,
            })
            .collect(),
        Some(n) => {
            let Some(i) = r.flowops.iter().position(|f| f.name == n) else {
                return Vec::new();
            };
            r.repetitions
                .iter()
                .filter_map(|p| p.flowops.get(i).map(|v| v[idx]))
                .collect()
        }
    }
}

fn figure(r: &Results, name: Option<&str>, idx: usize) -> Option<f64> {
    match name {
        None => Some(match idx {
            0 => r.summary.ops_per_s,
            1 => r.summary.mb_per_s,
            _ => r.summary.mean_latency_ms * 1000.0,
        }),
        Some(n) => r.flowops.iter().find(|f| f.name == n).map(|f| match idx {
            0 => f.ops_per_s,
            1 => f.mb_per_s,
            2 => f.latency_us.mean,
            _ => f.latency_us.p99,
        }),
    }
}

/// The comparison table for labelled results (the first is the baseline).
pub fn compare(runs: &[(String, Results)]) -> String {
    let mut o = String::new();
    for (i, (label, r)) in runs.iter().enumerate() {
        let _ = writeln!(
            o,
            "[{}] {}: {} on {} ({}), {:.1} s{}",
            (b'A' + i as u8) as char,
            label,
            r.workload,
            r.host.fs_type,
            r.host.device,
            r.duration_s,
            if r.repetitions.len() > 1 {
                format!(", {} repetitions", r.repetitions.len())
            } else {
                String::new()
            }
        );
    }
    warn_if_different(&mut o, runs);
    verdicts(&mut o, runs);
    outliers(&mut o, runs);
    let mut names: Vec<String> = Vec::new();
    for (_, r) in runs {
        for f in &r.flowops {
            if !names.contains(&f.name) {
                names.push(f.name.clone());
            }
        }
    }
    let rows: Vec<Option<&str>> = names
        .iter()
        .map(|n| Some(n.as_str()))
        .chain(std::iter::once(None))
        .collect();
    for (idx, title) in [
        (0, "ops/s"),
        (1, "MB/s"),
        (2, "mean latency (us)"),
        (3, "p99 latency (us)"),
    ] {
        let _ = writeln!(o, "\n{title}");
        let w = names.iter().map(|n| n.len()).max().unwrap_or(8).max(9);
        let _ = write!(o, "{:<w$}", "flowop");
        for i in 0..runs.len() {
            let _ = write!(o, " {:>14}", format!("[{}]", (b'A' + i as u8) as char));
            if i > 0 {
                let _ = write!(o, " {:>9}", "change");
            }
        }
        o.push('\n');
        for row in &rows {
            if row.is_none() && idx == 3 {
                continue;
            }
            row_cells(&mut o, runs, *row, idx, w);
            o.push('\n');
        }
    }
    figures(&mut o, runs);
    if runs.iter().all(|(_, r)| r.repetitions.len() > 1) {
        let _ = writeln!(o, "\n* significant at 95% (Welch's t-test over repetitions); ± is the 95% confidence half-width");
    } else {
        let _ = writeln!(
            o,
            "\n(run with --repeat N to get confidence intervals and significance)"
        );
    }
    o
}

/// One row of a figure's table: each run's value (mean ± interval over repetitions), and
/// beside each but the first its change from the first, marked when significant.
fn row_cells(o: &mut String, runs: &[(String, Results)], row: Option<&str>, idx: usize, w: usize) {
    let _ = write!(o, "{:<w$}", row.unwrap_or("(summary)"));
    let base = figure(&runs[0].1, row, idx);
    let base_reps = reps(&runs[0].1, row, idx);
    for (i, (_, r)) in runs.iter().enumerate() {
        let v = figure(r, row, idx);
        let rv = reps(r, row, idx);
        let cell = match v {
            Some(_) if rv.len() > 1 => {
                let s = spread(&rv);
                format!("{:.1}±{:.1}", s.mean, s.ci95)
            }
            Some(v) => format!("{v:.1}"),
            None => "-".into(),
        };
        let _ = write!(o, " {cell:>14}");
        if i > 0 {
            let change = match (base, v) {
                (Some(b), Some(v)) => {
                    let bm = if base_reps.len() > 1 {
                        spread(&base_reps).mean
                    } else {
                        b
                    };
                    let vm = if rv.len() > 1 { spread(&rv).mean } else { v };
                    let sig = match welch_significant(&base_reps, &rv) {
                        Some(true) => "*",
                        Some(false) => " ",
                        None => "",
                    };
                    format!("{}{sig}", pct(bm, vm))
                }
                _ => "-".into(),
            };
            let _ = write!(o, " {change:>9}");
        }
    }
}

fn letter(i: usize) -> char {
    (b'A' + i as u8) as char
}

/// Results of different workloads, or of one workload with other variables, compare different
/// things: say so before the numbers.
fn warn_if_different(o: &mut String, runs: &[(String, Results)]) {
    let (_, a) = &runs[0];
    for (i, (_, r)) in runs.iter().enumerate().skip(1) {
        if r.workload != a.workload || r.workload_hash != a.workload_hash {
            let _ = writeln!(
                o,
                "warning: [{}] ran {} and [A] ran {}{}: these results measure different workloads",
                letter(i),
                r.workload,
                a.workload,
                if r.workload == a.workload {
                    " (same name, different text)"
                } else {
                    ""
                }
            );
        } else if r.variables != a.variables {
            let diff: Vec<String> = r
                .variables
                .iter()
                .filter(|(k, v)| a.variables.get(*k) != Some(*v))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let _ = writeln!(
                o,
                "note: [{}] differs from [A] in {}",
                letter(i),
                diff.join(" ")
            );
        }
    }
}

/// Mean and standard deviation of the summary's ops/s (over repetitions when there are any).
fn ops_mean_sd(r: &Results) -> (f64, f64) {
    let v = reps(r, None, 0);
    if v.len() > 1 {
        let s = spread(&v);
        (s.mean, s.cv * s.mean.abs())
    } else {
        (r.summary.ops_per_s, 0.0)
    }
}

/// One line per result against the baseline, as hyperfine words it: "[B] is 1.32 ± 0.04 ×
/// faster than [A]" (on the summary's ops/s; the ± propagates both standard deviations).
fn verdicts(o: &mut String, runs: &[(String, Results)]) {
    let (ma, sa) = ops_mean_sd(&runs[0].1);
    if ma <= 0.0 {
        return;
    }
    for (i, (_, r)) in runs.iter().enumerate().skip(1) {
        if let Some(line) = verdict_line(letter(i), (ma, sa), ops_mean_sd(r)) {
            let _ = writeln!(o, "{line}");
        }
    }
}

fn verdict_line(who: char, (ma, sa): (f64, f64), (mb, sb): (f64, f64)) -> Option<String> {
    if ma <= 0.0 || mb <= 0.0 {
        return None;
    }
    let rel = ((sa / ma).powi(2) + (sb / mb).powi(2)).sqrt();
    let (ratio, word) = if mb >= ma {
        (mb / ma, "faster")
    } else {
        (ma / mb, "slower")
    };
    let pm = if rel > 0.0 {
        format!(" ± {:.2}", ratio * rel)
    } else {
        String::new()
    };
    Some(format!(
        "[{who}] is {ratio:.2}{pm} × {word} than [A] (summary ops/s)"
    ))
}

/// Repetitions far from the others (modified z-score over 3.5, from the median absolute
/// deviation, as hyperfine flags them): a busy machine or a cache effect, worth a rerun.
fn outliers(o: &mut String, runs: &[(String, Results)]) {
    for (i, (_, r)) in runs.iter().enumerate() {
        let v = reps(r, None, 0);
        for k in outlier_indices(&v) {
            let _ = writeln!(
                o,
                "note: [{}] repetition {} is an outlier ({:.1} ops/s; median {:.1}): the system may have been busy",
                letter(i),
                k + 1,
                v[k],
                median(&v)
            );
        }
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn outlier_indices(v: &[f64]) -> Vec<usize> {
    if v.len() < 3 {
        return Vec::new();
    }
    let m = median(v);
    let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    let mad = median(&dev);
    if mad == 0.0 {
        return Vec::new();
    }
    v.iter()
        .enumerate()
        .filter(|(_, x)| (0.6745 * (*x - m) / mad).abs() > 3.5)
        .map(|(k, _)| k)
        .collect()
}

/// The application benchmarks' named figures (top-level ones), compared like the flowops.
fn figures(o: &mut String, runs: &[(String, Results)]) {
    let mut keys: Vec<&String> = Vec::new();
    for (_, r) in runs {
        for k in r.figures.keys().filter(|k| !k.contains('.')) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    if keys.is_empty() {
        return;
    }
    let reps = |r: &Results, k: &str| -> Vec<f64> {
        r.repetitions
            .iter()
            .filter_map(|p| p.figures.get(k).copied())
            .collect()
    };
    let value = |r: &Results, k: &str| -> Option<f64> {
        let rv = reps(r, k);
        if rv.len() > 1 {
            Some(spread(&rv).mean)
        } else {
            r.figures.get(k).copied()
        }
    };
    let _ = writeln!(o, "\nfigures");
    let w = keys.iter().map(|k| k.len()).max().unwrap_or(6).max(9);
    let _ = write!(o, "{:<w$}", "figure");
    for i in 0..runs.len() {
        let _ = write!(o, " {:>16}", format!("[{}]", (b'A' + i as u8) as char));
        if i > 0 {
            let _ = write!(o, " {:>9}", "change");
        }
    }
    o.push('\n');
    for k in keys {
        let _ = write!(o, "{k:<w$}");
        let base = value(&runs[0].1, k);
        let base_reps = reps(&runs[0].1, k);
        for (i, (_, r)) in runs.iter().enumerate() {
            let rv = reps(r, k);
            let cell = match value(r, k) {
                Some(_) if rv.len() > 1 => {
                    let s = spread(&rv);
                    format!("{}±{}", short(s.mean), short(s.ci95))
                }
                Some(v) => short(v),
                None => "-".into(),
            };
            let _ = write!(o, " {cell:>16}");
            if i > 0 {
                let change = match (base, value(r, k)) {
                    (Some(b), Some(v)) => {
                        let sig = match welch_significant(&base_reps, &rv) {
                            Some(true) => "*",
                            Some(false) => " ",
                            None => "",
                        };
                        format!("{}{sig}", pct(b, v))
                    }
                    _ => "-".into(),
                };
                let _ = write!(o, " {change:>9}");
            }
        }
        o.push('\n');
    }
}

/// A figure in few characters: integers whole, large values to one decimal, small ones to
/// four significant places.
fn short(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod verdict_tests {
    use super::*;

    #[test]
    fn outliers_by_median_absolute_deviation() {
        assert_eq!(outlier_indices(&[100.0, 101.0, 99.0, 100.5, 60.0]), vec![4]);
        assert!(outlier_indices(&[100.0, 101.0, 99.0, 100.5]).is_empty());
        assert!(outlier_indices(&[1.0, 2.0]).is_empty());
    }

    #[test]
    fn verdicts_as_hyperfine_words_them() {
        assert_eq!(
            verdict_line('B', (1000.0, 0.0), (1320.0, 0.0)).unwrap(),
            "[B] is 1.32 × faster than [A] (summary ops/s)"
        );
        assert_eq!(
            verdict_line('C', (1000.0, 0.0), (500.0, 0.0)).unwrap(),
            "[C] is 2.00 × slower than [A] (summary ops/s)"
        );
        // 3% and 4% relative deviations: 1.32 * 5% = 0.066.
        assert_eq!(
            verdict_line('B', (1000.0, 30.0), (1320.0, 52.8)).unwrap(),
            "[B] is 1.32 ± 0.07 × faster than [A] (summary ops/s)"
        );
        assert!(verdict_line('B', (0.0, 0.0), (1.0, 0.0)).is_none());
    }
}
