//! Results of fsbench runs: per-flowop recorders (HDR histograms), the one serde `Results` value,
//! host and build facts, and the renderers (text, JSON, CSV, Markdown, HTML). It uses `fsbench-
//! model` and `fsbench-base`.

pub mod report;
pub mod stats;
