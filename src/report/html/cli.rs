//! `fsbench report SOURCE... -o report.html`.

use anyhow::{Context, Result};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Result JSON files (`fsbench run/postmark/andrew/find/build --json`). Files of the same
    /// workload are configurations to compare; the first is the baseline; each is labelled
    /// by its file name.
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// Where to write the HTML page.
    #[arg(short = 'o', long, value_name = "FILE", default_value = "report.html")]
    pub output: PathBuf,
}

pub fn run(a: &ReportArgs) -> Result<()> {
    let input = super::ReportInput::from_json_files(&a.sources)?;
    let html = super::render(&input);
    std::fs::write(&a.output, &html).with_context(|| format!("writing {}", a.output.display()))?;
    eprintln!(
        "wrote {} ({} KB, {} charts)",
        a.output.display(),
        html.len() / 1024,
        super::chart_ids(&input).len()
    );
    Ok(())
}
