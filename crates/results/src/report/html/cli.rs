//! `fsbench report SOURCE... -o report.html`.

use anyhow::Result;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Experiment output directories (`fsbench experiment -o OUTDIR`) and result JSON files
    /// (`fsbench run/postmark/andrew/find/build --json`). An experiment gives one section per
    /// measurement with a configuration per cell; files of the same workload are
    /// configurations to compare, each labelled by its file name. The first configuration is
    /// the baseline. Aging reports (`fsbench age --json`) get an aging section.
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// Label of a result file's configuration, in the order of the files (default: the file
    /// name without `.json`). Repeat for each file.
    #[arg(long = "label", value_name = "NAME")]
    pub labels: Vec<String>,
    /// Keep an experiment's runs flagged as ended early or served from cache in the charts
    /// and comparisons (they are left out by default).
    #[arg(long)]
    pub include_flagged: bool,
    /// Where to write the HTML page (`-` for standard output).
    #[arg(short = 'o', long, value_name = "FILE", default_value = "report.html")]
    pub output: PathBuf,
}

impl fsbench_base::export::check::Outputs for ReportArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        vec![named(Some(self.output.as_path()), "-o")]
    }
}

/// Write the report; `load_dir` reads directory sources (experiment output directories).
pub fn run(a: &ReportArgs, load_dir: &dyn Fn(&Path) -> Result<super::ReportInput>) -> Result<()> {
    fsbench_base::export::check::outputs(&fsbench_base::export::check::Outputs::outputs(a))?;
    let input = super::ReportInput::from_sources(&a.sources, &a.labels, load_dir)?;
    let html = super::render(&input);
    fsbench_base::export::write_text(&a.output, &html, "HTML page")?;
    fsbench_base::errln!(
        "wrote {} ({} KB, {} charts)",
        a.output.display(),
        html.len() / 1024,
        super::chart_ids(&input).len()
    );
    Ok(())
}
