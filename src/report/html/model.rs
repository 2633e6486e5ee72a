//! The report's input model: groups of configurations, each a [`Results`] (whose
//! `repetitions` carry the per-repetition figures). Result JSON files are its first producer;
//! an experiment database can fill the same model.

use crate::stats::Results;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// One configuration of a measurement: a label and its (possibly repeated) results.
#[derive(Debug, Clone)]
pub struct Config {
    pub label: String,
    pub results: Results,
    /// The experiment factors of this configuration (empty for result files).
    pub factors: BTreeMap<String, String>,
}

/// One measurement (a workload) across configurations; the first configuration is the
/// baseline.
#[derive(Debug, Clone)]
pub struct Group {
    pub workload: String,
    pub configs: Vec<Config>,
}

/// A measurement whose results are named figures rather than a workload's (an experiment's
/// `layout` and `scan` cells): per configuration, a label and each figure's values, one per
/// repetition.
#[derive(Debug, Clone)]
pub struct FigureGroup {
    pub measurement: String,
    /// One line on what the figures are.
    pub about: String,
    pub configs: Vec<(String, BTreeMap<String, Vec<f64>>)>,
}

/// Everything a report shows.
#[derive(Debug, Clone, Default)]
pub struct ReportInput {
    pub groups: Vec<Group>,
    pub figure_groups: Vec<FigureGroup>,
    /// Aging reports (`fsbench age --json`), labelled by file name.
    pub aging: Vec<(String, serde_json::Value)>,
    /// What produced the results when it was an experiment: a line for the header.
    pub title: Option<String>,
    /// Warnings shown in the header (failed or disturbed runs, skipped measurements).
    pub warnings: Vec<String>,
}

impl ReportInput {
    /// Add labelled results: results of the same workload become configurations of one group
    /// (in the order given), a new workload opens a new group.
    pub fn push(&mut self, label: String, results: Results) {
        let c = Config {
            label,
            results,
            factors: BTreeMap::new(),
        };
        match self
            .groups
            .iter_mut()
            .find(|g| g.workload == c.results.workload)
        {
            Some(g) => g.configs.push(c),
            None => self.groups.push(Group {
                workload: c.results.workload.clone(),
                configs: vec![c],
            }),
        }
    }

    /// Load sources: experiment output directories (their results database) and result JSON
    /// files, in the order given.
    /// `labels` name the result files' configurations in order (the rest keep their file
    /// names).
    pub fn from_sources(paths: &[impl AsRef<Path>], labels: &[String]) -> Result<ReportInput> {
        let mut input = ReportInput::default();
        let mut files = Vec::new();
        for p in paths {
            let p = p.as_ref();
            if p.is_dir() {
                let e = Self::from_experiment(p)?;
                if input.title.is_none() {
                    input.title = e.title;
                }
                input.warnings.extend(e.warnings);
                input.groups.extend(e.groups);
                input.figure_groups.extend(e.figure_groups);
                input.aging.extend(e.aging);
            } else {
                files.push(p);
            }
        }
        if labels.len() > files.len() {
            anyhow::bail!(
                "{} --label given for {} result file(s): one label per result file, in order",
                labels.len(),
                files.len()
            );
        }
        let mut results_files = 0;
        for p in files.iter() {
            let text = crate::input::read_text_capped(p, crate::input::RESULTS_MAX, "result file")
                .with_context(|| format!("reading {}", p.display()))?;
            // An aging report (`fsbench age --json`) gets the aging section. Each file is
            // parsed once: result files are read straight into Results.
            if text.contains("\"target_fill\"") && text.contains("\"layout_after\"") {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                    if v.get("layout_after").is_some() && v.get("target_fill").is_some() {
                        let label = p
                            .file_name()
                            .map(|n| n.to_string_lossy().trim_end_matches(".json").to_string())
                            .unwrap_or_default();
                        input.aging.push((label, v));
                        continue;
                    }
                }
            }
            let i = results_files;
            results_files += 1;
            let (label, r) = Self::parse_result(p, &text)?;
            input.push(labels.get(i).cloned().unwrap_or(label), r);
        }
        Ok(input)
    }

    /// Load an experiment's output directory: one group per measurement, one configuration
    /// per cell (its repetitions combined), labelled by the factors that vary within the
    /// measurement. The first cell of a measurement is its baseline.
    pub fn from_experiment(outdir: &Path) -> Result<ReportInput> {
        let st = crate::experiment::store::Store::open_existing(outdir)?;
        let (exp, name, quick, reps, finished): (i64, String, bool, u32, Option<String>) = st
            .db
            .query_row(
                "SELECT id, name, quick, repetitions, finished_at FROM experiments ORDER BY id LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .with_context(|| format!("{} holds no experiment", outdir.display()))?;
        let mut input = ReportInput {
            title: Some(format!(
                "Experiment {name}{}, {reps} repetition(s) per cell, from {}",
                if quick { " (--quick scale)" } else { "" },
                outdir.display()
            )),
            ..Default::default()
        };
        if finished.is_none() {
            input.warnings.push(
                "The experiment has not finished: cells without stored runs are missing.".into(),
            );
        }
        struct Cell {
            measurement: String,
            factors: BTreeMap<String, String>,
            runs: Vec<Results>,
        }
        let mut cells: Vec<Cell> = Vec::new();
        let mut figure_factors: Vec<(String, BTreeMap<String, String>)> = Vec::new();
        let mut q = st.db.prepare(
            "SELECT id, idx, measurement, factors_json FROM cells WHERE experiment_id = ?1 ORDER BY idx",
        )?;
        let rows: Vec<(i64, i64, String, String)> = q
            .query_map([exp], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (id, idx, measurement, f) in rows {
            let mut factors: BTreeMap<String, String> =
                serde_json::from_str(&f).unwrap_or_default();
            factors.remove("measurement");
            let mut q = st.db.prepare(
                "SELECT id, status, disturbed, results_json FROM runs WHERE cell_id = ?1 AND superseded = 0 AND status != 'warmup' ORDER BY repetition, id",
            )?;
            let runs: Vec<(i64, String, bool, Option<String>)> = q
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<rusqlite::Result<_>>()?;
            let mut ok = Vec::new();
            let mut named: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            let (mut failed, mut disturbed, mut other) = (0, 0, 0);
            for (run_id, status, dist, json) in runs {
                if status != "ok" {
                    failed += 1;
                    continue;
                }
                disturbed += dist as usize;
                match json.and_then(|j| serde_json::from_str::<Results>(&j).ok()) {
                    Some(r) => ok.push(r),
                    None => {
                        other += 1;
                        // Its whole-run figures, as `fsbench results` reads them.
                        let mut q = st.db.prepare(
                            "SELECT figure, value FROM figures WHERE run_id = ?1 AND flowop = '' ORDER BY rowid",
                        )?;
                        let fs: Vec<(String, f64)> = q
                            .query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                            .collect::<rusqlite::Result<_>>()?;
                        for (k, v) in fs {
                            named.entry(k).or_default().push(v);
                        }
                    }
                }
            }
            let what = format!("cell {} ({measurement}{})", idx + 1, factor_text(&factors));
            if failed > 0 {
                input
                    .warnings
                    .push(format!("{what}: {failed} run(s) failed or were stopped"));
            }
            if disturbed > 0 {
                input.warnings.push(format!(
                    "{what}: {disturbed} run(s) disturbed by other load (noise guard)"
                ));
            }
            if other > 0 && ok.is_empty() && !named.is_empty() {
                let label = label_of(&factors, &BTreeMap::new(), &measurement);
                match input
                    .figure_groups
                    .iter_mut()
                    .find(|g| g.measurement == measurement)
                {
                    Some(g) => g.configs.push((label, named)),
                    None => input.figure_groups.push(FigureGroup {
                        about: "Figures of a measurement that is not a workload (e.g. layout: score, files, fragments), one bar per cell".into(),
                        measurement: measurement.clone(),
                        configs: vec![(label, named)],
                    }),
                }
                figure_factors.push((measurement.clone(), factors.clone()));
            }
            if !ok.is_empty() {
                cells.push(Cell {
                    measurement,
                    factors,
                    runs: ok,
                });
            }
        }
        for c in cells {
            let results = crate::stats::repeat::combine(c.runs);
            match input
                .groups
                .iter_mut()
                .find(|g| g.workload == c.measurement)
            {
                Some(g) => g.configs.push(Config {
                    label: String::new(),
                    results,
                    factors: c.factors,
                }),
                None => input.groups.push(Group {
                    workload: c.measurement,
                    configs: vec![Config {
                        label: String::new(),
                        results,
                        factors: c.factors,
                    }],
                }),
            }
        }
        // The plan's baseline level first: it is what the bars are compared against.
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
        // The aging steps' reports (targets with `age`), kept in OUTDIR/age.
        if let Ok(rd) = std::fs::read_dir(outdir.join("age")) {
            let mut paths: Vec<_> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            paths.sort();
            for p in paths {
                let Ok(v) =
                    crate::input::read_text_capped(&p, crate::input::RESULTS_MAX, "result file")
                        .map_err(anyhow::Error::from)
                        .and_then(|t| Ok(serde_json::from_str::<serde_json::Value>(&t)?))
                else {
                    continue;
                };
                if v.get("layout_after").is_some() && v.get("target_fill").is_some() {
                    let label = p
                        .file_stem()
                        .map(|n| format!("aging {}", n.to_string_lossy()))
                        .unwrap_or_default();
                    input.aging.push((label, v));
                }
            }
        }
        Ok(input)
    }

    /// Load result JSON files (`fsbench run/postmark/andrew/find/build --json`). Each file's
    /// label is its file name without `.json`.
    pub fn from_json_files(paths: &[impl AsRef<Path>]) -> Result<ReportInput> {
        let mut input = ReportInput::default();
        for p in paths {
            let p = p.as_ref();
            let text = crate::input::read_text_capped(p, crate::input::RESULTS_MAX, "result file")
                .with_context(|| format!("reading {}", p.display()))?;
            let (label, r) = Self::parse_result(p, &text)?;
            input.push(label, r);
        }
        Ok(input)
    }

    /// A result file's Results and its label (the file name without `.json`).
    fn parse_result(p: &Path, text: &str) -> Result<(String, Results)> {
        let r: Results = serde_json::from_str(text).with_context(|| {
            format!(
                "{} is not a result file written by fsbench's --json (run, postmark, andrew, find, build)",
                p.display()
            )
        })?;
        let label = p
            .file_name()
            .map(|n| n.to_string_lossy().trim_end_matches(".json").to_string())
            .unwrap_or_else(|| p.display().to_string());
        Ok((label, r))
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
