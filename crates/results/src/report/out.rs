//! Where a run's reports go: the text report for a person, and each export of its
//! [`Results`] the command line asks for, written through [`fsbench_base::export`]. When an export
//! is written to standard output (`--json -`, `--csv -`, `--markdown -`), that stream belongs
//! to the export alone: the text report, workload echoes, banners and tables go to standard
//! error instead (see [`fsbench_base::console`]), so that `fsbench run W --json - | jq` and
//! `... --csv - > r.csv` get exactly one document.

use crate::stats::Results;
use anyhow::Result;
use fsbench_base::export::Format;
use std::path::Path;

/// Print the text report (see [`fsbench_base::console::human`]) and write each requested export,
/// `-` meaning standard output; JSON with its histograms written as `histograms` says.
pub fn emit(
    r: &Results,
    exports: &[(Format, Option<&Path>)],
    histograms: super::json::Histograms,
) -> Result<()> {
    fsbench_base::console::reserve_stdout_for(exports.iter().map(|(_, p)| *p));
    let text = super::exporter(Format::Text).expect("a text exporter");
    fsbench_base::console::human(&text.render(r));
    for (format, path) in exports {
        let Some(path) = path else { continue };
        let text = match format {
            Format::Json => super::Exporter::render(&super::json::Json { histograms }, r),
            f => super::exporter(*f)
                .expect("an exporter of Results")
                .render(r),
        };
        fsbench_base::export::write_text(path, &text, format.what())?;
    }
    Ok(())
}
