//! The report's input model: groups of configurations, each a [`Results`] (whose
//! `repetitions` carry the per-repetition figures). Result JSON files are its first producer;
//! an experiment database fills the same model (`experiment::report_input`).

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
    /// What to read beside the configuration before its figures (an experiment's cold cell
    /// that the page cache served all the same); shown beside its row.
    pub note: Option<String>,
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

/// One comparison's row: a level against the baseline where the other factors are `at`.
#[derive(Debug, Clone)]
pub struct RatioRow {
    pub level: String,
    /// The other factors' levels, as text ("instances=8").
    pub at: String,
    pub ratio: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub p_value: Option<f64>,
    pub significant: bool,
    pub n: usize,
    pub n_baseline: usize,
}

/// The ratios of one figure of a measurement: each level of `factor` against `baseline`
/// in the cell that differs only in that factor.
#[derive(Debug, Clone)]
pub struct ComparisonChart {
    pub measurement: String,
    pub factor: String,
    pub baseline: String,
    pub figure: String,
    /// How the interval was computed, for the caption.
    pub method: String,
    pub rows: Vec<RatioRow>,
}

/// One published figure against ours (an experiment's `[[published]]` entry at one cell or
/// pair of cells), as text: the experiment computes the verdict, the report shows it.
#[derive(Debug, Clone, Default)]
pub struct PublishedLine {
    /// The entry's line in the plan.
    pub line: usize,
    pub claim: String,
    /// The measurement and figure ("find elapsed_s").
    pub figure: String,
    /// What is compared, or the cell ("ovl-ext4 ÷ ext4 at cache=cold").
    pub what: String,
    /// The paper's figure and rule ("1.8 (within 1.5×)").
    pub published: String,
    /// Ours with its 95% interval.
    pub ours: String,
    pub n: String,
    /// "agrees", "direction only", "disagrees", "not significant", ...
    pub verdict: String,
    pub why: String,
}

/// Everything a report shows.
#[derive(Debug, Clone, Default)]
pub struct ReportInput {
    pub groups: Vec<Group>,
    pub figure_groups: Vec<FigureGroup>,
    /// Aging reports (`fsbench age --json`), labelled by file name.
    pub aging: Vec<(String, super::aging::Aging)>,
    /// What produced the results when it was an experiment: a line for the header.
    pub title: Option<String>,
    /// Warnings shown in the header (failed or disturbed runs, skipped measurements).
    pub warnings: Vec<String>,
    /// The comparisons each measurement opens with (an experiment's baselines). When there
    /// are any, the raw per-configuration charts carry no percentage against their first bar.
    pub comparisons: Vec<ComparisonChart>,
    /// Every target measured in: its name, file system, device and mount options (an
    /// experiment's header); empty for result files, whose first result's host is shown.
    pub targets: Vec<String>,
    /// Runs left out of the means (flagged ended early or served from cache), for the header.
    pub flag_note: Option<String>,
    /// Each measurement's headline figures: its named-figure charts lead with them.
    pub headline: Vec<(String, Vec<String>)>,
    /// The input holds an experiment's cells: differences are the comparisons' (against
    /// the cell that differs only in the compared factor), never against a first bar.
    pub experiment: bool,
    /// What ran beside an experiment's measurements (its background loads), a line each.
    pub backgrounds: Vec<String>,
    /// The paper's figures against ours, with their verdicts (an experiment's plan).
    pub published: Vec<PublishedLine>,
    /// How many of them got each verdict ("3 agrees, 1 disagrees").
    pub published_tally: String,
}

impl ReportInput {
    /// Whether bars carry their difference from the first configuration: result files only.
    pub fn relative(&self) -> bool {
        !self.experiment && self.comparisons.is_empty()
    }

    /// The headline figures of `measurement` (none for result files).
    pub fn headline_of(&self, measurement: &str) -> &[String] {
        self.headline
            .iter()
            .find(|(m, _)| m == measurement)
            .map_or(&[], |(_, h)| h.as_slice())
    }
}

impl ReportInput {
    /// Add labelled results: results of the same workload become configurations of one group
    /// (in the order given), a new workload opens a new group.
    pub fn push(&mut self, label: String, results: Results) {
        let c = Config {
            label,
            results,
            factors: BTreeMap::new(),
            note: None,
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
    /// `load_dir` reads a directory source (an experiment's output directory): the report
    /// does not know how experiments store their results.
    pub fn from_sources(
        paths: &[impl AsRef<Path>],
        labels: &[String],
        load_dir: &dyn Fn(&Path) -> Result<ReportInput>,
    ) -> Result<ReportInput> {
        let mut input = ReportInput::default();
        let mut files = Vec::new();
        for p in paths {
            let p = p.as_ref();
            if p.is_dir() {
                let e = load_dir(p)?;
                if input.title.is_none() {
                    input.title = e.title;
                }
                input.warnings.extend(e.warnings);
                input.groups.extend(e.groups);
                input.figure_groups.extend(e.figure_groups);
                input.aging.extend(e.aging);
                input.comparisons.extend(e.comparisons);
                input.targets.extend(e.targets);
                input.backgrounds.extend(e.backgrounds);
                input.published.extend(e.published);
                if input.published_tally.is_empty() {
                    input.published_tally = e.published_tally;
                }
                input.headline.extend(e.headline);
                input.experiment |= e.experiment;
                if input.flag_note.is_none() {
                    input.flag_note = e.flag_note;
                }
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
            let text = fsbench_base::input::read_text(p, fsbench_base::input::RESULTS)
                .with_context(|| format!("reading {}", p.display()))?;
            // An aging report (`fsbench age --json`) gets the aging section. Each file is
            // parsed once: result files are read straight into Results.
            if let Some(a) = super::aging::Aging::parse(&text) {
                let label = p
                    .file_name()
                    .map(|n| n.to_string_lossy().trim_end_matches(".json").to_string())
                    .unwrap_or_default();
                input.aging.push((label, a));
                continue;
            }
            let i = results_files;
            results_files += 1;
            let (label, r) = Self::parse_result(p, &text)?;
            input.push(labels.get(i).cloned().unwrap_or(label), r);
        }
        Ok(input)
    }

    /// Load result JSON files (`fsbench run/postmark/andrew/find/build --json`). Each file's
    /// label is its file name without `.json`.
    pub fn from_json_files(paths: &[impl AsRef<Path>]) -> Result<ReportInput> {
        let mut input = ReportInput::default();
        for p in paths {
            let p = p.as_ref();
            let text = fsbench_base::input::read_text(p, fsbench_base::input::RESULTS)
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
