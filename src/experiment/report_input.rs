//! An experiment's output directory as the report's input: one group per measurement, one
//! configuration per cell. The report knows nothing of experiments; this is where their
//! database is read for it.

use anyhow::{Context, Result};
use fsbench_results::report::html::{
    ComparisonChart, Config, FigureGroup, Group, PublishedLine, RatioRow, ReportInput,
};
use fsbench_results::stats::Results;
use std::collections::BTreeMap;
use std::path::Path;

/// Load an experiment's output directory: one group per measurement, one configuration
/// per cell (its repetitions combined), labelled by the factors that vary within the
/// measurement. Each measurement opens with the comparisons of its headline figures against
/// the plan's baselines. Runs flagged ended early or served from cache are left out.
pub fn load(outdir: &Path) -> Result<ReportInput> {
    load_with(outdir, false)
}

/// [`load`]; `include_flagged` keeps the flagged runs (`--include-flagged`).
pub fn load_with(outdir: &Path, include_flagged: bool) -> Result<ReportInput> {
    let st = super::store::Store::open_existing(outdir)?;
    let (exp, mut input) = header(&st, outdir)?;
    let mut cells: Vec<Cell> = Vec::new();
    let mut figure_factors: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    let mut targets: Vec<(String, String)> = Vec::new();
    let mut flagged = 0;
    let mut q = st.db.prepare(
        "SELECT id, idx, measurement, factors_json FROM cells WHERE experiment_id = ?1 ORDER BY idx",
    )?;
    let rows: Vec<(i64, i64, String, String)> = q
        .query_map([exp], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, idx, measurement, f) in rows {
        let mut factors: BTreeMap<String, String> = serde_json::from_str(&f).unwrap_or_default();
        factors.remove("measurement");
        let runs = cell_runs(&st, id, include_flagged)?;
        let what = format!("cell {} ({measurement}{})", idx + 1, factor_text(&factors));
        if runs.failed > 0 {
            input.warnings.push(format!(
                "{what}: {} run(s) failed or were stopped",
                runs.failed
            ));
        }
        if runs.disturbed > 0 {
            input.warnings.push(format!(
                "{what}: {} run(s) disturbed: other CPU load, or a simulated disk's or remote's late replies (noise guard)",
                runs.disturbed
            ));
        }
        flagged += runs.flagged;
        if runs.flagged > 0 {
            input.warnings.push(format!(
                "{what}: {} run(s) flagged (ended early or served from cache), {}",
                runs.flagged,
                if include_flagged { "kept" } else { "left out" }
            ));
        }
        note_target(&mut targets, &factors, &runs.ok);
        if runs.other > 0 && runs.ok.is_empty() && !runs.named.is_empty() {
            add_figure_config(&mut input, &measurement, &factors, runs.named);
            figure_factors.push((measurement.clone(), factors.clone()));
        }
        if !runs.ok.is_empty() {
            cells.push(Cell {
                measurement,
                factors,
                runs: runs.ok,
            });
        }
    }
    group_cells(&mut input, cells);
    baseline_first(&mut input, &st, exp);
    label_configs(&mut input);
    label_figure_groups(&mut input, &figure_factors);
    aging_reports(&mut input, outdir);
    let summary = super::summary::summarise_with(&st, include_flagged)?;
    input.comparisons = comparison_charts(&summary);
    input.backgrounds = background_lines(&summary.backgrounds);
    input.published = published_lines(&summary);
    input.published_tally = super::summary::render::tally(&summary.published);
    for r in summary.rows.iter().filter(|r| r.headline) {
        let m = r.factors.get("measurement").cloned().unwrap_or_default();
        match input.headline.iter_mut().find(|(x, _)| *x == m) {
            Some((_, h)) if !h.contains(&r.figure) => h.push(r.figure.clone()),
            Some(_) => {}
            None => input.headline.push((m, vec![r.figure.clone()])),
        }
    }
    input.targets = targets
        .into_iter()
        .map(|(n, d)| format!("{n}: {d}{}", scheduler_text(&summary, &n)))
        .collect();
    for c in &summary.conditions {
        condition_notes(&mut input, c);
    }
    if flagged > 0 {
        input.flag_note = Some(format!(
            "{flagged} run(s) flagged ended early or served from cache are {} (fsbench results shows them per cell)",
            if include_flagged {
                "kept in the means and comparisons (--include-flagged)"
            } else {
                "left out of the means and comparisons (--include-flagged keeps them)"
            }
        ));
    }
    Ok(input)
}

/// A cell's conditions worth a warning: its device idle, or its cold cache served from the
/// page cache all the same (that one also beside the cell's row).
fn condition_notes(input: &mut ReportInput, c: &super::summary::conditions::Conditions) {
    use super::summary::conditions::{cold_text, idle_text};
    let mut f = c.factors.clone();
    let m = f.remove("measurement").unwrap_or_default();
    let what = format!("cell {} ({m}{})", c.cell, factor_text(&f));
    if let Some(idle) = idle_text(c) {
        input.warnings.push(format!("{what}: device idle: {idle}"));
    }
    if let Some(cold) = cold_text(c) {
        input
            .warnings
            .push(format!("{what}: cold in name only: {cold}"));
        let config = input
            .groups
            .iter_mut()
            .filter(|g| g.workload == m)
            .flat_map(|g| g.configs.iter_mut())
            .find(|cfg| cfg.factors == f);
        if let Some(cfg) = config {
            cfg.note = Some(format!(
                "cold in name only: the page cache served {:.0}% of its reads",
                c.cache_hit_pct.unwrap_or(0.0)
            ));
        }
    }
}

/// The I/O schedulers the runner recorded for a target's runs (set by fsbench, or read from
/// the device of an existing directory).
fn scheduler_text(s: &super::summary::Summary, target: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for c in &s.conditions {
        if c.factors.get("target").map(String::as_str) == Some(target) {
            for x in &c.schedulers {
                if !seen.contains(&x.as_str()) {
                    seen.push(x);
                }
            }
        }
    }
    if seen.is_empty() {
        String::new()
    } else {
        format!("; runs under the I/O scheduler {}", seen.join(" and "))
    }
}

/// A target's file system, device and mount options, from the first result measured in it.
fn note_target(
    targets: &mut Vec<(String, String)>,
    factors: &BTreeMap<String, String>,
    runs: &[Results],
) {
    let (Some(name), Some(r)) = (factors.get("target"), runs.first()) else {
        return;
    };
    if targets.iter().any(|(n, _)| n == name) {
        return;
    }
    let h = &r.host;
    targets.push((
        name.clone(),
        format!(
            "{} on {} at {} ({}){}",
            h.fs_type,
            h.device,
            h.mount_point,
            h.mount_options,
            if h.io_scheduler.is_empty() {
                String::new()
            } else {
                format!(", scheduler {}", h.io_scheduler)
            }
        ),
    ));
}

/// The summary's comparisons of headline figures, one chart per (measurement, factor,
/// baseline, figure).
fn comparison_charts(s: &super::summary::Summary) -> Vec<ComparisonChart> {
    let mut out: Vec<ComparisonChart> = Vec::new();
    for c in s
        .comparisons
        .iter()
        .filter(|c| c.headline && c.flowop.is_empty())
    {
        let measurement = c.at.get("measurement").cloned().unwrap_or_default();
        // The other factors that vary within the measurement (one-level factors say
        // nothing about where a ratio stands).
        let at: BTreeMap<&String, &String> =
            c.at.iter()
                .filter(|(k, v)| {
                    s.comparisons.iter().any(|o| {
                        o.factor == c.factor
                            && o.at.get("measurement") == c.at.get("measurement")
                            && o.at.get(*k) != Some(*v)
                    })
                })
                .collect();
        let row = RatioRow {
            level: c.level.clone(),
            at: at
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", "),
            ratio: c.ratio,
            ci_low: c.ci_low,
            ci_high: c.ci_high,
            p_value: c.p_value,
            significant: c.significant,
            n: c.n,
            n_baseline: c.n_baseline,
        };
        let same = |x: &ComparisonChart| {
            x.measurement == measurement
                && x.factor == c.factor
                && x.baseline == c.baseline
                && x.figure == c.figure
        };
        match out.iter_mut().find(|x| same(x)) {
            Some(x) => x.rows.push(row),
            None => out.push(ComparisonChart {
                measurement,
                factor: c.factor.clone(),
                baseline: c.baseline.clone(),
                figure: c.figure.clone(),
                method: "ratio of means; 95% interval by Fieller's method (Welch–Satterthwaite degrees of freedom); p from Welch's t-test; flagged runs excluded unless --include-flagged".into(),
                rows: vec![row],
            }),
        }
    }
    out
}

/// The summary's published figures against ours, as the report's rows.
fn published_lines(s: &super::summary::Summary) -> Vec<PublishedLine> {
    use super::summary::render::{published_figure, published_n, published_ours, published_what};
    s.published
        .iter()
        .map(|p| PublishedLine {
            line: p.line,
            claim: match &p.pending {
                Some(w) => format!("{} (pending: {w})", p.claim),
                None => p.claim.clone(),
            },
            figure: format!("{} {}", p.measurement, p.figure),
            what: published_what(p, s),
            published: published_figure(p),
            ours: published_ours(p),
            n: published_n(p),
            verdict: p.verdict.text().to_string(),
            why: p.why.clone(),
        })
        .collect()
}

/// One cell's stored runs, combined later.
struct Cell {
    measurement: String,
    factors: BTreeMap<String, String>,
    runs: Vec<Results>,
}

/// The experiment's id and the report's header: its title and whether it finished.
fn header(st: &super::store::Store, outdir: &Path) -> Result<(i64, ReportInput)> {
    let (exp, name, quick, reps, finished): (i64, String, bool, u32, Option<String>) = st
        .db
        .query_row(
            "SELECT id, name, quick, repetitions, finished_at FROM experiments ORDER BY id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .with_context(|| format!("{} holds no experiment", outdir.display()))?;
    // Adaptive repetitions give cells different numbers of runs: say the range run.
    let (fewest, most): (Option<u32>, Option<u32>) = st.db.query_row(
        "SELECT min(n), max(n) FROM (SELECT count(*) AS n FROM runs r JOIN cells c ON c.id = r.cell_id WHERE c.experiment_id = ?1 GROUP BY r.cell_id)",
        [exp],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let runs = match (fewest, most) {
        (Some(a), Some(b)) if a != b => format!("{a} to {b} repetitions per cell"),
        (Some(a), _) => format!("{a} repetition(s) per cell"),
        _ => format!("{reps} repetition(s) per cell"),
    };
    let mut input = ReportInput {
        experiment: true,
        title: Some(format!(
            "Experiment {name}{}, {runs}, from {}",
            if quick { " (--quick scale)" } else { "" },
            outdir.display()
        )),
        ..Default::default()
    };
    if finished.is_none() {
        input
            .warnings
            .push("The experiment has not finished: cells without stored runs are missing.".into());
    }
    Ok((exp, input))
}

/// What a cell's measured runs left: workload results, or (for other measurements) their
/// named whole-run figures, and how many failed, were disturbed or were not workloads.
#[derive(Default)]
struct CellRuns {
    ok: Vec<Results>,
    named: BTreeMap<String, Vec<f64>>,
    failed: usize,
    disturbed: usize,
    other: usize,
    /// Runs flagged ended early or served from cache.
    flagged: usize,
}

fn cell_runs(st: &super::store::Store, cell: i64, include_flagged: bool) -> Result<CellRuns> {
    let mut q = st.db.prepare(
        "SELECT id, status, disturbed, results_json, flags_json FROM runs WHERE cell_id = ?1 AND superseded = 0 AND status != 'warmup' ORDER BY repetition, id",
    )?;
    type RunRow = (i64, String, bool, Option<String>, String);
    let runs: Vec<RunRow> = q
        .query_map([cell], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = CellRuns::default();
    for (run_id, status, dist, json, flags) in runs {
        if status != "ok" {
            out.failed += 1;
            continue;
        }
        let flags: super::store::RunFlags = serde_json::from_str(&flags).unwrap_or_default();
        if flags.flagged() {
            out.flagged += 1;
            if !include_flagged {
                continue;
            }
        }
        out.disturbed += dist as usize;
        match json.and_then(|j| serde_json::from_str::<Results>(&j).ok()) {
            Some(r) => out.ok.push(r),
            None => {
                out.other += 1;
                // Its whole-run figures, as `fsbench results` reads them.
                let mut q = st.db.prepare(
                    "SELECT figure, value FROM figures WHERE run_id = ?1 AND flowop = '' ORDER BY rowid",
                )?;
                let fs: Vec<(String, f64)> = q
                    .query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                for (k, v) in fs {
                    out.named.entry(k).or_default().push(v);
                }
            }
        }
    }
    Ok(out)
}

/// A cell of a measurement that is not a workload: a configuration of its figure group.
fn add_figure_config(
    input: &mut ReportInput,
    measurement: &str,
    factors: &BTreeMap<String, String>,
    named: BTreeMap<String, Vec<f64>>,
) {
    let label = label_of(factors, &BTreeMap::new(), measurement);
    match input
        .figure_groups
        .iter_mut()
        .find(|g| g.measurement == measurement)
    {
        Some(g) => g.configs.push((label, named)),
        None => input.figure_groups.push(FigureGroup {
            about: "Figures of a measurement that is not a workload (e.g. layout: score, files, fragments), one bar per cell".into(),
            measurement: measurement.to_string(),
            configs: vec![(label, named)],
        }),
    }
}

/// One group per measurement, one configuration per cell (its repetitions combined).
fn group_cells(input: &mut ReportInput, cells: Vec<Cell>) {
    for c in cells {
        let results = fsbench_results::stats::repeat::combine(c.runs);
        let config = Config {
            label: String::new(),
            results,
            factors: c.factors,
            note: None,
        };
        match input
            .groups
            .iter_mut()
            .find(|g| g.workload == c.measurement)
        {
            Some(g) => g.configs.push(config),
            None => input.groups.push(Group {
                workload: c.measurement,
                configs: vec![config],
            }),
        }
    }
}

/// The plan's baseline level first: it is what the bars are compared against.
fn baseline_first(input: &mut ReportInput, st: &super::store::Store, exp: i64) {
    let baseline: BTreeMap<String, String> = st
        .db
        .query_row(
            "SELECT baseline_json FROM experiments WHERE id = ?1",
            [exp],
            |r| r.get::<_, String>(0),
        )
        .ok()
        .and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default();
    let is_base = |f: &BTreeMap<String, String>| {
        !baseline.is_empty() && baseline.iter().all(|(k, v)| f.get(k) == Some(v))
    };
    for g in &mut input.groups {
        g.configs.sort_by_key(|c| !is_base(&c.factors));
        // Where each target lives is in the header, not a factor to tabulate.
        for c in &mut g.configs {
            c.results.variables.remove("dir");
        }
    }
}

/// Each configuration labelled by the factors that vary within its measurement.
fn label_configs(input: &mut ReportInput) {
    for g in &mut input.groups {
        let first = g.configs[0].factors.clone();
        let varying: Vec<String> = g
            .configs
            .iter()
            .flat_map(|c| c.factors.keys().cloned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter(|k| g.configs.iter().any(|c| c.factors.get(k) != first.get(k)))
            .collect();
        for c in &mut g.configs {
            let parts: Vec<String> = varying
                .iter()
                .map(|k| {
                    let v = c.factors.get(k).cloned().unwrap_or_default();
                    if k == "target" {
                        v
                    } else {
                        format!("{k}={v}")
                    }
                })
                .collect();
            c.label = if parts.is_empty() {
                c.factors
                    .get("target")
                    .cloned()
                    .unwrap_or_else(|| g.workload.clone())
            } else {
                parts.join(", ")
            };
        }
    }
}

/// The figure groups' configurations labelled by their varying factors.
fn label_figure_groups(
    input: &mut ReportInput,
    figure_factors: &[(String, BTreeMap<String, String>)],
) {
    for g in &mut input.figure_groups {
        let fs: Vec<&BTreeMap<String, String>> = figure_factors
            .iter()
            .filter(|(m, _)| *m == g.measurement)
            .map(|(_, f)| f)
            .collect();
        let varying = varying_keys(&fs);
        for (c, f) in g.configs.iter_mut().zip(fs) {
            c.0 = label_of(f, &varying, &g.measurement);
        }
    }
}

/// The aging steps' reports (targets with `age`), kept in OUTDIR/age.
fn aging_reports(input: &mut ReportInput, outdir: &Path) {
    let Ok(rd) = std::fs::read_dir(outdir.join("age")) else {
        return;
    };
    let mut paths: Vec<_> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for p in paths {
        let Ok(text) = fsbench_base::input::read_text(&p, fsbench_base::input::RESULTS) else {
            continue;
        };
        if let Some(v) = fsbench_results::report::html::Aging::parse(&text) {
            let label = p
                .file_stem()
                .map(|n| format!("aging {}", n.to_string_lossy()))
                .unwrap_or_default();
            input.aging.push((label, v));
        }
    }
}

fn factor_text(f: &BTreeMap<String, String>) -> String {
    f.iter().map(|(k, v)| format!(", {k}={v}")).collect()
}

/// The factor names whose values differ among `fs`.
fn varying_keys(fs: &[&BTreeMap<String, String>]) -> BTreeMap<String, ()> {
    let Some(first) = fs.first() else {
        return BTreeMap::new();
    };
    fs.iter()
        .flat_map(|f| f.keys())
        .filter(|k| fs.iter().any(|f| f.get(*k) != first.get(*k)))
        .map(|k| (k.clone(), ()))
        .collect()
}

/// A configuration's label: the values of the varying factors (the target by its name), or
/// the target when nothing varies.
fn label_of(
    f: &BTreeMap<String, String>,
    varying: &BTreeMap<String, ()>,
    fallback: &str,
) -> String {
    let parts: Vec<String> = varying
        .keys()
        .map(|k| {
            let v = f.get(k).cloned().unwrap_or_default();
            if k == "target" {
                v
            } else {
                format!("{k}={v}")
            }
        })
        .collect();
    if parts.is_empty() {
        f.get("target")
            .cloned()
            .unwrap_or_else(|| fallback.to_string())
    } else {
        parts.join(", ")
    }
}

/// The report's lines on the background loads: per cell and background, its runs, how they
/// ended, mean elapsed, user and system time and the priority the kernel held.
fn background_lines(rows: &[super::summary::BgRow]) -> Vec<String> {
    rows.iter()
        .map(|r| {
            let at = r
                .factors
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ");
            let status = r.status_text();
            format!(
                "cell {} ({at}): {} ({}, nice {}, ionice {}) beside {} run(s) ({status}): elapsed {:.3} s ± {:.3}, user {:.3} s, system {:.3} s",
                r.cell,
                r.name,
                r.kind,
                r.nice.map_or("?".into(), |n| n.to_string()),
                r.ionice.as_deref().unwrap_or("?"),
                r.n,
                r.elapsed_s,
                r.elapsed_ci95,
                r.user_s,
                r.system_s
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::store::{now, CellRecord, ExperimentRecord, RunFlags, RunRecord, Store};
    use serde_json::{json, Value};

    /// An output directory with two targets' workload cells, one run of `b` ended early.
    fn outdir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("fsbench-rinput-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let mut st = Store::open(&d).unwrap();
        let e = st
            .new_experiment(&ExperimentRecord {
                name: "x",
                plan_file: "p.toml",
                plan_text: "",
                plan_hash: "h",
                quick: false,
                seed: 1,
                repetitions: 3,
                noise_threshold: 0.05,
                baseline: &json!({"target": "a"}),
            })
            .unwrap();
        for (i, (t, base)) in [("a", 100.0), ("b", 50.0)].iter().enumerate() {
            let f = json!({"measurement": "w", "target": t});
            let c = st
                .cell(&CellRecord {
                    experiment_id: e,
                    idx: i,
                    measurement: "w",
                    kind: "workload",
                    target: t,
                    cache: "warm",
                    factors: &f,
                    command: &Value::Null,
                })
                .unwrap();
            for rep in 0..4u32 {
                let flags = RunFlags {
                    ended_early: (*t == "b" && rep == 3).then(|| "fileset exhausted".into()),
                    ..Default::default()
                };
                let mut r = Results::new("w", "builtin:w", 1, Path::new("/x"));
                r.summary.ops_per_s = if flags.ended_early.is_some() {
                    5.0
                } else {
                    base + rep as f64
                };
                r.host.fs_type = "ext4".into();
                r.host.device = format!("/dev/loop{i}");
                r.host.mount_options = "rw,relatime".into();
                let v = serde_json::to_value(&r).unwrap();
                st.add_run(&RunRecord {
                    cell_id: c,
                    repetition: rep,
                    status: "ok",
                    started_at: &now(),
                    elapsed_s: 1.0,
                    load_avg_1: None,
                    other_cpu_frac: Some(0.0),
                    disturbed: false,
                    error: None,
                    applied: &Value::Null,
                    results: Some(
                        &crate::experiment::output::ChildOutput::read(
                            crate::experiment::plan::Kind::Workload,
                            v,
                        )
                        .unwrap(),
                    ),
                    flags: &flags,
                })
                .unwrap();
            }
        }
        d
    }

    #[test]
    fn comparisons_targets_and_flagged_runs_reach_the_report() {
        let d = outdir("flags");
        let input = load(&d).unwrap();
        let c = input
            .comparisons
            .iter()
            .find(|c| c.figure == "ops_per_s")
            .unwrap();
        assert_eq!((c.factor.as_str(), c.baseline.as_str()), ("target", "a"));
        assert_eq!(c.rows.len(), 1);
        // b's three kept runs (50, 51, 52) against a's four (100..103).
        assert!(
            (c.rows[0].ratio - 51.0 / 101.5).abs() < 1e-12,
            "{}",
            c.rows[0].ratio
        );
        assert_eq!((c.rows[0].n, c.rows[0].n_baseline), (3, 4));
        assert_eq!(input.groups[0].configs[1].results.repetitions.len(), 3);
        assert!(input
            .flag_note
            .as_ref()
            .unwrap()
            .contains("1 run(s) flagged"));
        assert!(input.warnings.iter().any(|w| w.contains("left out")));
        assert_eq!(input.targets.len(), 2);
        assert!(
            input.targets[1].starts_with("b: ext4 on /dev/loop1"),
            "{:?}",
            input.targets
        );
        let kept = load_with(&d, true).unwrap();
        let c = kept
            .comparisons
            .iter()
            .find(|c| c.figure == "ops_per_s")
            .unwrap();
        assert_eq!(c.rows[0].n, 4);
        assert_eq!(kept.groups[0].configs[1].results.repetitions.len(), 4);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_title_gives_the_repetitions_the_cells_ran() {
        let d = outdir("title");
        let title = load(&d).unwrap().title.unwrap();
        assert!(title.contains(", 4 repetition(s) per cell,"), "{title}");
        // Cells that ran different numbers of rounds (adaptive repetitions): the range.
        let db = rusqlite::Connection::open(d.join("results.db")).unwrap();
        db.execute_batch(
            "DELETE FROM figures WHERE run_id = (SELECT max(id) FROM runs);
             DELETE FROM flowops WHERE run_id = (SELECT max(id) FROM runs);
             DELETE FROM runs WHERE id = (SELECT max(id) FROM runs);",
        )
        .unwrap();
        let title = load(&d).unwrap().title.unwrap();
        assert!(title.contains(", 3 to 4 repetitions per cell,"), "{title}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_aging_steps_reports_reach_the_report() {
        let d = outdir("aging");
        std::fs::create_dir_all(d.join("age")).unwrap();
        std::fs::write(
            d.join("age").join("t1.json"),
            r#"{"profile": "agrawal", "target_fill": 0.5, "ops": 10, "layout_after": null}"#,
        )
        .unwrap();
        // Not an aging report: no layout_after.
        std::fs::write(d.join("age").join("other.json"), r#"{"target_fill": 0.5}"#).unwrap();
        let input = load(&d).unwrap();
        assert_eq!(input.aging.len(), 1);
        assert_eq!(input.aging[0].0, "aging t1");
        assert_eq!(input.aging[0].1.ops, Some(10.0));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
