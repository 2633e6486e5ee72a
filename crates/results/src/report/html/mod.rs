//! The HTML report: one self-contained page (inline SVG and CSS, a two-line script that marks
//! the page ready) with, per measurement, bar charts of the key figures across configurations
//! with 95% confidence whiskers, a numeric-factor line plot where configurations differ in
//! one numeric variable, latency CDFs per flowop from the HDR histograms, and time series.
//!
//! Statistics come from `stats::repeat` (mean, 95% CI, Welch's test); this module only
//! arranges them. Every chart has a collapsed table of its numbers.

mod aging;
pub mod charts;
pub mod cli;
mod comparison;
mod figures;
mod model;
mod published;
mod rpcs;

pub use aging::Aging;
pub use model::{
    ComparisonChart, Config, FigureGroup, Group, PublishedLine, RatioRow, ReportInput,
};

use figures::{figure, figure_bars, figure_keys, mean_bars, named_figures};

use crate::stats::Results;
use charts::{Bar, Line};
use std::fmt::Write;

/// At most this many configurations get their own line in the CDF and time-series plots
/// (beyond it lines stop being readable; the bar charts and tables still show all).
const MAX_LINES: usize = 8;
/// Points kept per CDF or time-series line.
const MAX_POINTS: usize = 160;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Key figures of the summary: (name, unit label, value from results, from a repetition).
type Getter = fn(&Results) -> f64;
type RepGetter = fn(&crate::stats::Repetition) -> f64;
const KEY: [(&str, &str, &str, Getter, RepGetter, bool); 3] = [
    (
        "ops",
        "Throughput",
        "operations/s",
        |r| r.summary.ops_per_s,
        |p| p.summary.ops_per_s,
        true,
    ),
    (
        "mbps",
        "Bandwidth",
        "MB/s",
        |r| r.summary.mb_per_s,
        |p| p.summary.mb_per_s,
        true,
    ),
    (
        "lat",
        "Mean latency",
        "latency (ms)",
        |r| r.summary.mean_latency_ms,
        |p| p.summary.mean_latency_ms,
        false,
    ),
];

fn table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut t = String::from("<details><summary>Numbers</summary><table><tr>");
    for h in head {
        let _ = write!(t, "<th>{}</th>", esc(h));
    }
    t.push_str("</tr>");
    for r in rows {
        t.push_str("<tr>");
        for c in r {
            let _ = write!(t, "<td>{}</td>", esc(c));
        }
        t.push_str("</tr>");
    }
    t.push_str("</table></details>");
    t
}

fn chart_block(out: &mut String, id: &str, svg: &str, tbl: &str) {
    let _ = writeln!(
        out,
        "<figure class=chart id=\"{}\">{}{}</figure>",
        esc(id),
        svg,
        tbl
    );
}

fn g4(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}

/// 99th percentile latency (ms) over the IO-summary flowops, from the merged histograms.
fn summary_p99_ms(r: &Results) -> Option<f64> {
    r.summary_p99_ms()
}

/// Flowops of a group that move data in some configuration (index in the first
/// configuration, name), in the workload's order.
fn transfer_flowops(g: &Group) -> Vec<(usize, String)> {
    let first = &g.configs[0].results;
    first
        .flowops
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            g.configs.iter().any(|c| {
                c.results
                    .flowops
                    .iter()
                    .any(|x| x.name == f.name && x.bytes > 0)
            })
        })
        .map(|(i, f)| (i, f.name.clone()))
        .collect()
}

/// The chart ids a report of `input` contains (for tests and tools).
pub fn chart_ids(input: &ReportInput) -> Vec<String> {
    let mut ids = Vec::new();
    for (gi, g) in input.groups.iter().enumerate() {
        for (k, ..) in KEY {
            ids.push(format!("g{gi}-bar-{k}"));
        }
        if g.configs
            .iter()
            .any(|c| summary_p99_ms(&c.results).is_some())
        {
            ids.push(format!("g{gi}-bar-p99"));
        }
        let figs: Vec<_> = g
            .configs
            .iter()
            .map(|c| named_figures(&c.results))
            .collect();
        for j in 0..figure_keys(&figs, &[]).0.len() {
            ids.push(format!("g{gi}-fig-{j}"));
        }
        if transfer_flowops(g).len() >= 2 {
            ids.push(format!("g{gi}-flowop-mbps"));
        }
        if numeric_factor(g).is_some() {
            ids.push(format!("g{gi}-factor"));
        }
        let first = &g.configs[0].results;
        for (fi, f) in first.flowops.iter().enumerate() {
            if g.configs.iter().any(|c| {
                c.results
                    .flowops
                    .get(fi)
                    .is_some_and(|x| !x.histogram_ns.is_empty())
            }) && f.ops > 0
            {
                ids.push(format!("g{gi}-cdf-{fi}"));
            }
        }
        if g.configs.iter().any(|c| c.results.series.len() >= 2) {
            ids.push(format!("g{gi}-series"));
        }
    }
    for (fi, f) in input.figure_groups.iter().enumerate() {
        let figs: Vec<_> = f.configs.iter().map(|c| c.1.clone()).collect();
        for j in 0..figure_keys(&figs, &[]).0.len() {
            ids.push(format!("f{fi}-fig-{j}"));
        }
    }
    ids.extend(aging::chart_ids(&input.aging));
    ids
}

/// A configuration's parameters: its workload variables overlaid with its experiment factors.
fn params(c: &Config) -> std::collections::BTreeMap<String, String> {
    let mut m = c.results.variables.clone();
    m.extend(c.factors.iter().map(|(k, v)| (k.clone(), v.clone())));
    m
}

/// A numeric parameter whose values differ across configurations: its name, each
/// configuration's value, and each configuration's series (the values of the other
/// parameters that differ, so that e.g. instances against ops/s gets one line per target).
fn numeric_factor(g: &Group) -> Option<(String, Vec<f64>, Vec<String>)> {
    if g.configs.len() < 2 {
        return None;
    }
    let ps: Vec<_> = g.configs.iter().map(params).collect();
    let keys: std::collections::BTreeSet<&String> = ps.iter().flat_map(|p| p.keys()).collect();
    let varying: Vec<&String> = keys
        .into_iter()
        .filter(|k| ps.iter().any(|p| p.get(*k) != ps[0].get(*k)))
        .collect();
    let (var, xs) = varying.iter().find_map(|k| {
        let xs: Option<Vec<f64>> = ps
            .iter()
            .map(|p| p.get(*k).and_then(|v| v.trim().parse::<f64>().ok()))
            .collect();
        xs.map(|xs| ((*k).clone(), xs))
    })?;
    let series: Vec<String> = ps
        .iter()
        .map(|p| {
            varying
                .iter()
                .filter(|k| ***k != var)
                .map(|k| {
                    let v = p.get(*k).cloned().unwrap_or_default();
                    if k.as_str() == "target" {
                        v
                    } else {
                        format!("{k}={v}")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect();
    // Each line needs two points or more to be a line.
    let mut per: std::collections::BTreeMap<&str, usize> = Default::default();
    for s in &series {
        *per.entry(s.as_str()).or_default() += 1;
    }
    if per.values().all(|n| *n < 2) {
        return None;
    }
    Some((var, xs, series))
}

fn header(out: &mut String, input: &ReportInput) {
    let first = input.groups.first().and_then(|g| g.configs.first());
    out.push_str("<header><h1>fsbench report</h1>");
    if let Some(t) = &input.title {
        let _ = write!(out, "<p>{}</p>", esc(t));
    }
    if input.warnings.len() <= 3 {
        for w in &input.warnings {
            let _ = write!(out, "<p class=warn>{}</p>", esc(w));
        }
    } else {
        // Many: one line in view, the list a click away.
        let disturbed = input
            .warnings
            .iter()
            .filter(|w| w.contains("noise guard"))
            .count();
        let _ = write!(
            out,
            "<div class=warn><b>{} warnings</b> ({} cells with disturbed runs: other load or late simulated replies; {} other)<details><summary>List</summary><ul>",
            input.warnings.len(),
            disturbed,
            input.warnings.len() - disturbed
        );
        for w in input.warnings.iter().take(200) {
            let _ = write!(out, "<li>{}</li>", esc(w));
        }
        out.push_str("</ul></details></div>");
    }
    if let Some(n) = &input.flag_note {
        let _ = write!(out, "<p class=warn>{}</p>", esc(n));
    }
    if let Some(c) = first {
        let r = &c.results;
        let h = &r.host;
        let date = fmt_time(r.started_at);
        let _ = write!(
            out,
            "<dl class=facts><dt>Host</dt><dd>{} — {} × {}, {:.1} GiB</dd><dt>Kernel</dt><dd>{}</dd>\
             <dt>{}</dt><dd>{}</dd><dt>Date</dt><dd>{}</dd>\
             <dt>fsbench</dt><dd>{}</dd><dt>Measurements</dt><dd>{} workload(s), {} configuration(s)</dd></dl>",
            esc(&h.hostname),
            h.cpus,
            esc(&h.cpu_model),
            h.memory_bytes as f64 / (1u64 << 30) as f64,
            esc(&h.kernel),
            if input.targets.len() > 1 { "Targets" } else { "Target" },
            if input.targets.is_empty() {
                esc(&format!(
                    "{} on {} ({}, {}), scheduler {}",
                    h.target_dir, h.device, h.fs_type, h.mount_options, h.io_scheduler
                ))
            } else {
                input
                    .targets
                    .iter()
                    .map(|t| esc(t))
                    .collect::<Vec<_>>()
                    .join("<br>")
            },
            date,
            esc(&r.fsbench_version),
            input.groups.len(),
            input.groups.iter().map(|g| g.configs.len()).sum::<usize>()
        );
        let hosts: std::collections::BTreeSet<(&str, &str, &str)> = input
            .groups
            .iter()
            .flat_map(|g| g.configs.iter())
            .map(|c| {
                (
                    c.results.host.hostname.as_str(),
                    c.results.host.kernel.as_str(),
                    c.results.host.fs_type.as_str(),
                )
            })
            .collect();
        backgrounds(out, input);
        if hosts.len() > 1 && input.title.is_none() {
            let _ = write!(
                out,
                "<p class=warn>Results come from {} different host/kernel/file-system combinations; the facts above are the first result's.</p>",
                hosts.len()
            );
        }
    }
    out.push_str("</header>\n");
}

fn fmt_time(epoch: f64) -> String {
    // Civil date from days since the epoch (UTC).
    let secs = epoch as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

fn group_section(out: &mut String, gi: usize, g: &Group, input: &ReportInput) {
    let labels: Vec<String> = g.configs.iter().map(|c| c.label.clone()).collect();
    let relative = input.relative();
    let _ = write!(out, "<section><h2>{}</h2>", esc(&g.workload));
    comparison::sections(out, &format!("g{gi}"), &g.workload, &input.comparisons);
    if !relative {
        out.push_str("<h3>Per configuration</h3>");
    }
    configs_table(out, g, relative);
    key_bars(out, gi, g, &labels, relative);
    if let Some(factor) = numeric_factor(g) {
        factor_chart(out, gi, g, factor);
    }
    out.push_str("<div class=grid>");
    // p99 over the IO-summary operations (histograms merge across repetitions, so no
    // interval).
    if g.configs
        .iter()
        .any(|c| summary_p99_ms(&c.results).is_some())
    {
        p99_bars(out, gi, g, &labels, relative);
    }
    // The benchmark's own named figures (elapsed time, transaction rate, phase times).
    let figs: Vec<_> = g
        .configs
        .iter()
        .map(|c| named_figures(&c.results))
        .collect();
    let lead = input.headline_of(&g.workload);
    figure_bars(out, &format!("g{gi}"), &labels, (&figs, lead), relative);
    flowop_throughput(out, gi, g);
    out.push_str("</div>");
    latency_cdfs(out, gi, g);
    rpcs::tables(out, g);
    time_series(out, gi, g);
    out.push_str("</section>\n");
}

/// The configurations and the variables that differ between them.
fn configs_table(out: &mut String, g: &Group, relative: bool) {
    let ps: Vec<_> = g.configs.iter().map(params).collect();
    let all_keys: std::collections::BTreeSet<&String> = ps.iter().flat_map(|p| p.keys()).collect();
    let varying: Vec<&String> = all_keys
        .into_iter()
        .filter(|k| ps.iter().any(|p| p.get(*k) != ps[0].get(*k)))
        .collect();
    out.push_str(
        "<table class=configs><tr><th>configuration</th><th>repetitions</th><th>duration per repetition (s)</th>",
    );
    for k in &varying {
        let _ = write!(out, "<th>{}</th>", esc(k));
    }
    let notes = g.configs.iter().any(|c| c.note.is_some());
    if notes {
        out.push_str("<th>note</th>");
    }
    out.push_str("</tr>");
    for (i, c) in g.configs.iter().enumerate() {
        let _ = write!(
            out,
            "<tr><td>{}{}</td><td>{}</td><td>{:.2}</td>",
            esc(&c.label),
            if i == 0 && relative {
                " (baseline)"
            } else {
                ""
            },
            c.results.repetitions.len().max(1),
            // Combined results hold the total measured time of their repetitions.
            c.results.duration_s / c.results.repetitions.len().max(1) as f64
        );
        for k in &varying {
            let v = ps[i].get(*k).cloned().unwrap_or_default();
            let _ = write!(out, "<td>{}</td>", esc(&v));
        }
        match (&c.note, notes) {
            (Some(n), _) => {
                let _ = write!(out, "<td class=warn>{}</td>", esc(n));
            }
            (None, true) => out.push_str("<td></td>"),
            (None, false) => {}
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    // What ran: the measured duration per repetition, not a workload's `runtime` default
    // that --duration replaced.
    let per_rep = |c: &Config| c.results.duration_s / c.results.repetitions.len().max(1) as f64;
    let mut vars: Vec<String> = Vec::new();
    if g.configs.iter().all(|c| {
        (per_rep(c) - per_rep(&g.configs[0])).abs() < 0.05 * per_rep(&g.configs[0]).max(1e-9)
    }) {
        vars.push(format!("duration as run={:.2} s", per_rep(&g.configs[0])));
    }
    vars.extend(
        ps[0]
            .iter()
            .filter(|(k, _)| !varying.contains(k) && k.as_str() != "runtime")
            .map(|(k, v)| format!("{k}={v}")),
    );
    if !vars.is_empty() {
        let _ = write!(
            out,
            "<p class=vars>Variables (common): {}</p>",
            esc(&vars.join(", "))
        );
    }
}

/// Bar charts of the key figures.
fn key_bars(out: &mut String, gi: usize, g: &Group, labels: &[String], relative: bool) {
    out.push_str("<div class=grid>");
    for (key, title, unit, whole, rep, _higher_better) in KEY {
        let figs: Vec<(f64, f64, Vec<f64>)> = g
            .configs
            .iter()
            .map(|c| {
                let reps: Vec<f64> = c.results.repetitions.iter().map(rep).collect();
                figure(whole(&c.results), reps)
            })
            .collect();
        mean_bars(
            out,
            &format!("g{gi}-bar-{key}"),
            (title, unit),
            labels,
            &figs,
            relative,
        );
    }
    out.push_str("</div>");
}

/// Throughput against a numeric factor, one line per value of the other factors.
fn factor_chart(out: &mut String, gi: usize, g: &Group, factor: (String, Vec<f64>, Vec<String>)) {
    let (var, xs, series) = factor;
    let mut order: Vec<usize> = (0..xs.len()).collect();
    order.sort_by(|a, b| xs[*a].total_cmp(&xs[*b]));
    let mut names: Vec<&String> = Vec::new();
    for s in &series {
        if !names.contains(&s) {
            names.push(s);
        }
    }
    let mut lines = Vec::new();
    let mut rows = Vec::new();
    for name in names.into_iter().take(MAX_LINES) {
        let mut pts = Vec::new();
        let mut band = Vec::new();
        for i in order.iter().copied().filter(|i| &series[*i] == name) {
            let c = &g.configs[i];
            let reps: Vec<f64> = c
                .results
                .repetitions
                .iter()
                .map(|p| p.summary.ops_per_s)
                .collect();
            let f = figure(c.results.summary.ops_per_s, reps);
            pts.push((xs[i], f.0));
            band.push(((f.0 - f.1).max(0.0), f.0 + f.1));
            rows.push(vec![c.label.clone(), g4(xs[i]), g4(f.0), g4(f.1)]);
        }
        lines.push(Line {
            label: if name.is_empty() {
                g.workload.clone()
            } else {
                name.clone()
            },
            points: pts,
            band: Some(band),
        });
    }
    let svg = charts::lines(
        &format!("Throughput against {var} (band: 95% CI)"),
        &var,
        "operations/s",
        false,
        &lines,
        None,
    );
    let tbl = table(
        &[
            "configuration".into(),
            var.clone(),
            "ops/s".into(),
            "95% CI ±".into(),
        ],
        &rows,
    );
    out.push_str("<div class=grid>");
    chart_block(out, &format!("g{gi}-factor"), &svg, &tbl);
    out.push_str("</div>");
}

/// p99 latency over the IO-summary operations, per configuration.
fn p99_bars(out: &mut String, gi: usize, g: &Group, labels: &[String], relative: bool) {
    let vals: Vec<f64> = g
        .configs
        .iter()
        .map(|c| summary_p99_ms(&c.results).unwrap_or(0.0))
        .collect();
    let bars: Vec<Bar> = vals
        .iter()
        .enumerate()
        .map(|(i, v)| Bar {
            mean: *v,
            ci95: 0.0,
            note: if !relative {
                String::new()
            } else if i == 0 {
                "baseline".into()
            } else if vals[0] > 0.0 {
                format!("{:+.1}%", (v - vals[0]) / vals[0] * 100.0)
            } else {
                String::new()
            },
        })
        .collect();
    let svg = charts::bars(
        "p99 latency, all operations (merged histograms)",
        "latency (ms)",
        labels,
        &bars,
    );
    let rows: Vec<Vec<String>> = vals
        .iter()
        .zip(labels)
        .zip(&bars)
        .map(|((v, l), b)| vec![l.clone(), g4(*v), b.note.clone()])
        .collect();
    let tbl = table(
        &[
            "configuration".into(),
            "p99 (ms)".into(),
            "vs baseline".into(),
        ],
        &rows,
    );
    chart_block(out, &format!("g{gi}-bar-p99"), &svg, &tbl);
}

/// Throughput of each flowop that moves data (two readers under one scheduler, a reader
/// beside a writer), configurations side by side.
fn flowop_throughput(out: &mut String, gi: usize, g: &Group) {
    let moving = transfer_flowops(g);
    if moving.len() >= 2 {
        let cats: Vec<String> = moving.iter().map(|(_, n)| n.clone()).collect();
        let series: Vec<(String, Vec<f64>)> = g
            .configs
            .iter()
            .take(MAX_LINES)
            .map(|c| {
                let v = moving
                    .iter()
                    .map(|(_, n)| {
                        c.results
                            .flowops
                            .iter()
                            .find(|f| &f.name == n)
                            .map_or(0.0, |f| f.mb_per_s)
                    })
                    .collect();
                (c.label.clone(), v)
            })
            .collect();
        let svg = charts::grouped(
            "Throughput per flowop (e.g. per reader)",
            "flowop",
            "MiB/s",
            &cats,
            &series,
        );
        let mut head = vec!["configuration".to_string()];
        head.extend(cats.iter().map(|c| format!("{c} (MiB/s)")));
        let rows: Vec<Vec<String>> = series
            .iter()
            .map(|(l, v)| {
                let mut r = vec![l.clone()];
                r.extend(v.iter().map(|x| g4(*x)));
                r
            })
            .collect();
        chart_block(
            out,
            &format!("g{gi}-flowop-mbps"),
            &svg,
            &table(&head, &rows),
        );
    }
}

/// Latency CDFs per flowop.
fn latency_cdfs(out: &mut String, gi: usize, g: &Group) {
    let first = &g.configs[0].results;
    out.push_str("<h3>Latency distribution per flowop</h3><div class=grid>");
    for (fi, f) in first.flowops.iter().enumerate() {
        let mut lines = Vec::new();
        let mut rows = Vec::new();
        for c in g.configs.iter().take(MAX_LINES) {
            let Some(fr) = c.results.flowops.get(fi) else {
                continue;
            };
            if fr.histogram_ns.is_empty() {
                continue;
            }
            let total: u64 = fr.histogram_ns.iter().map(|b| b[1]).sum();
            let mut acc = 0u64;
            let mut pts: Vec<(f64, f64)> = fr
                .histogram_ns
                .iter()
                .map(|b| {
                    acc += b[1];
                    (
                        b[0] as f64 / 1000.0,
                        acc as f64 / total.max(1) as f64 * 100.0,
                    )
                })
                .collect();
            if pts.len() > MAX_POINTS {
                let step = pts.len() as f64 / MAX_POINTS as f64;
                let last = *pts.last().unwrap();
                pts = (0..MAX_POINTS)
                    .map(|k| pts[(k as f64 * step) as usize])
                    .collect();
                pts.push(last);
            }
            let l = &fr.latency_us;
            rows.push(vec![
                c.label.clone(),
                fr.ops.to_string(),
                g4(l.mean),
                g4(l.p50),
                g4(l.p90),
                g4(l.p99),
                g4(l.p99_9),
                g4(l.max),
            ]);
            lines.push(Line {
                label: c.label.clone(),
                points: pts,
                band: None,
            });
        }
        if lines.is_empty() || f.ops == 0 {
            continue;
        }
        let svg = charts::lines(
            &format!("{} ({}): latency CDF", f.name, f.kind),
            "latency (µs, log scale)",
            "operations at or below (%)",
            true,
            &lines,
            Some((0.0, 100.0)),
        );
        let tbl = table(
            &[
                "configuration".into(),
                "ops".into(),
                "mean µs".into(),
                "p50 µs".into(),
                "p90 µs".into(),
                "p99 µs".into(),
                "p99.9 µs".into(),
                "max µs".into(),
            ],
            &rows,
        );
        chart_block(out, &format!("g{gi}-cdf-{fi}"), &svg, &tbl);
    }
    out.push_str("</div>");
}

/// Throughput over time.
fn time_series(out: &mut String, gi: usize, g: &Group) {
    let series: Vec<&Config> = g
        .configs
        .iter()
        .filter(|c| c.results.series.len() >= 2)
        .take(MAX_LINES)
        .collect();
    if !series.is_empty() {
        let mut lines = Vec::new();
        let mut rows = Vec::new();
        for c in series {
            let s = &c.results.series;
            let step = (s.len() / MAX_POINTS).max(1);
            let pts: Vec<(f64, f64)> = s
                .iter()
                .step_by(step)
                .map(|p| (p.t_s, p.ops_per_s))
                .collect();
            for p in s.iter().step_by(step) {
                rows.push(vec![
                    c.label.clone(),
                    g4(p.t_s),
                    g4(p.ops_per_s),
                    g4(p.mb_per_s),
                ]);
            }
            lines.push(Line {
                label: c.label.clone(),
                points: pts,
                band: None,
            });
        }
        let svg = charts::lines(
            "Throughput over time",
            "time since measurement started (s)",
            "operations/s",
            false,
            &lines,
            None,
        );
        let tbl = table(
            &[
                "configuration".into(),
                "t (s)".into(),
                "ops/s".into(),
                "MB/s".into(),
            ],
            &rows,
        );
        chart_block(out, &format!("g{gi}-series"), &svg, &tbl);
    }
}

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1500px;margin:0 auto;padding:1em 2em;color:#222}\
h1{margin:.2em 0}h2{border-bottom:2px solid #0072B2;padding-bottom:.2em;margin-top:2em}\
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;font-size:.95em}dt{font-weight:600}dd{margin:0}\
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:1em}\
figure.chart{margin:0;border:1px solid #ddd;padding:.4em;break-inside:avoid}figure.chart svg{width:100%;height:auto}\
table{border-collapse:collapse;font-size:.85em;margin:.4em 0}td,th{border:1px solid #ccc;padding:.15em .5em;text-align:right}th{background:#f3f3f3}\
td:first-child,th:first-child{text-align:left}.warn{background:#fff3cd;border-left:4px solid #D55E00;padding:.4em}.err{color:#D55E00}\
.vars{font-size:.85em;color:#555}figure.comparison{margin:0;border:1px solid #ddd;padding:.4em}figure.comparison svg{width:100%;height:auto}.constants{grid-column:1/-1}details summary{cursor:pointer;color:#0072B2;font-size:.9em}\
.verdict-agrees{background:#e3f4e8}.verdict-direction-only{background:#fff3cd}.verdict-disagrees{background:#fbe0d6}td.why{text-align:left;font-size:.9em;color:#555}\
@media print{details{display:none}body{max-width:none}}";

/// The whole page.
pub fn render(input: &ReportInput) -> String {
    let mut out = String::with_capacity(1 << 16);
    out.push_str("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><meta name=viewport content=\"width=device-width,initial-scale=1\"><title>fsbench report</title><style>");
    out.push_str(CSS);
    out.push_str("</style></head><body>");
    header(&mut out, input);
    published::section(&mut out, input);
    for (gi, g) in input.groups.iter().enumerate() {
        group_section(&mut out, gi, g, input);
    }
    if !input.aging.is_empty() {
        aging::section(&mut out, &input.aging);
    }
    for (fi, f) in input.figure_groups.iter().enumerate() {
        let _ = write!(
            out,
            "<section><h2>{}</h2><p class=vars>{}</p><div class=grid>",
            esc(&f.measurement),
            esc(&f.about)
        );
        comparison::sections(
            &mut out,
            &format!("f{fi}"),
            &f.measurement,
            &input.comparisons,
        );
        let labels: Vec<String> = f.configs.iter().map(|c| c.0.clone()).collect();
        let figs: Vec<_> = f.configs.iter().map(|c| c.1.clone()).collect();
        let relative = input.relative();
        let lead = input.headline_of(&f.measurement);
        figure_bars(
            &mut out,
            &format!("f{fi}"),
            &labels,
            (&figs, lead),
            relative,
        );
        out.push_str("</div></section>\n");
    }
    out.push_str(if input.relative() {
        "<footer><p class=vars>Bars: mean over repetitions (or the single run), whiskers the 95% confidence interval (Student t); the outlined bar is the baseline; percentages are against it, * where Welch's t-test finds the difference significant at 95%.</p></footer>"
    } else {
        "<footer><p class=vars>Comparisons: ratio of means (level ÷ baseline, in the cell that differs only in the compared factor), 95% interval by Fieller's method with Welch–Satterthwaite degrees of freedom, p from Welch's t-test. Bars: mean over repetitions, whiskers the 95% confidence interval (Student t).</p></footer>"
    });
    // Marks the page as rendered; tests read the marker from the dumped DOM.
    out.push_str("<script>document.body.setAttribute('data-report-ready',document.querySelectorAll('figure.chart svg').length);</script>");
    out.push_str("</body></html>\n");
    out
}

/// The header's list of what ran beside an experiment's measurements.
fn backgrounds(out: &mut String, input: &ReportInput) {
    if input.backgrounds.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<section class=backgrounds><h3>Background loads</h3><ul>{}</ul></section>",
        input
            .backgrounds
            .iter()
            .map(|l| format!("<li>{}</li>", esc(l)))
            .collect::<String>()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_date() {
        assert_eq!(fmt_time(0.0), "1970-01-01 00:00 UTC");
        assert_eq!(fmt_time(1_700_000_000.0), "2023-11-14 22:13 UTC");
    }
}
