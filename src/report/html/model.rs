//! The report's input model: groups of configurations, each a [`Results`] (whose
//! `repetitions` carry the per-repetition figures). Result JSON files are its first producer;
//! an experiment database can fill the same model.

use crate::stats::Results;
use anyhow::{Context, Result};
use std::path::Path;

/// One configuration of a measurement: a label and its (possibly repeated) results.
#[derive(Debug, Clone)]
pub struct Config {
    pub label: String,
    pub results: Results,
}

/// One measurement (a workload) across configurations; the first configuration is the
/// baseline.
#[derive(Debug, Clone)]
pub struct Group {
    pub workload: String,
    pub configs: Vec<Config>,
}

/// Everything a report shows.
#[derive(Debug, Clone, Default)]
pub struct ReportInput {
    pub groups: Vec<Group>,
}

impl ReportInput {
    /// Add labelled results: results of the same workload become configurations of one group
    /// (in the order given), a new workload opens a new group.
    pub fn push(&mut self, label: String, results: Results) {
        let c = Config { label, results };
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

    /// Load result JSON files (`fsbench run/postmark/andrew/find/build --json`). Each file's
    /// label is its file name without `.json`.
    pub fn from_json_files(paths: &[impl AsRef<Path>]) -> Result<ReportInput> {
        let mut input = ReportInput::default();
        for p in paths {
            let p = p.as_ref();
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            let r: Results = serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is not a result file written by fsbench's --json (run, postmark, andrew, find, build)",
                    p.display()
                )
            })?;
            let label = p
                .file_name()
                .map(|n| n.to_string_lossy().trim_end_matches(".json").to_string())
                .unwrap_or_else(|| p.display().to_string());
            input.push(label, r);
        }
        Ok(input)
    }
}
