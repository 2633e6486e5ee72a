//! Where reports go. When an export is written to standard output (`--json -`, `--csv -`,
//! `--markdown -`), that stream belongs to the export alone: the text report, workload
//! echoes, banners and tables go to standard error instead (see [`crate::console`]), so that
//! `fsbench run W --json - | jq` and `... --csv - > r.csv` get exactly one document.

use crate::stats::Results;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

pub use crate::console::{human, reserve_stdout_for, stdout_reserved};

/// Give standard output to the exports if the command line sends one there: `--json -`,
/// `--json=-` (likewise `--csv`, `--markdown`), before a `--`. Decided once at start-up, so
/// every command, and every message printed before its options are looked at, follows it.
pub fn reserve_stdout_for_args<S: AsRef<std::ffi::OsStr>>(args: &[S]) {
    if export_to_stdout(args) {
        crate::console::reserve_stdout();
    }
}

fn export_to_stdout<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> bool {
    const EXPORTS: [&str; 3] = ["--json", "--csv", "--markdown"];
    let args: Vec<&str> = args
        .iter()
        .map(|a| a.as_ref().to_str().unwrap_or(""))
        .collect();
    let end = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    // fio's JSON (`--output-format json`, for a fio job) goes to standard output too.
    let fio_json = args[..end].iter().enumerate().any(|(i, a)| {
        (*a == "--output-format" && args.get(i + 1) == Some(&"json"))
            || *a == "--output-format=json"
    });
    fio_json
        || args[..end].iter().enumerate().any(|(i, a)| {
            EXPORTS.iter().any(|e| {
                (a == e && args.get(i + 1) == Some(&"-"))
                    || a.strip_prefix(e).and_then(|r| r.strip_prefix('=')) == Some("-")
            })
        })
}

/// Print the text report (see [`human`]) and write each requested export, `-` meaning
/// standard output; JSON with its histograms written as `histograms` says.
pub fn emit(
    r: &Results,
    exports: &[(&str, Option<&Path>)],
    histograms: super::json::Histograms,
) -> Result<()> {
    reserve_stdout_for(exports.iter().map(|(_, p)| *p));
    human(&super::exporter("text").expect("text exporter").render(r));
    for (fmt, path) in exports {
        let Some(path) = path else { continue };
        let text = if *fmt == "json" {
            super::Exporter::render(&super::json::Json { histograms }, r)
        } else {
            super::exporter(fmt).expect("known format").render(r)
        };
        if path.as_os_str() == "-" {
            let mut o = crate::console::Stdout;
            o.write_all(text.as_bytes()).and_then(|_| o.flush())?;
        } else {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::export_to_stdout;

    #[test]
    fn recognises_exports_to_stdout() {
        assert!(export_to_stdout(&["run", "x", "--json", "-"]));
        assert!(export_to_stdout(&["run", "x", "--csv=-"]));
        assert!(export_to_stdout(&["find", "d", "--markdown", "-", "-q"]));
        assert!(!export_to_stdout(&["run", "x", "--json", "out.json"]));
        assert!(!export_to_stdout(&["run", "x", "--json"]));
        assert!(!export_to_stdout(&["run", "x", "--", "--json", "-"]));
        assert!(!export_to_stdout(&["run", "-", "--jsonx=-"]));
        assert!(export_to_stdout(&[
            "run",
            "j.fio",
            "--output-format",
            "json"
        ]));
        assert!(export_to_stdout(&["run", "j.fio", "--output-format=json"]));
        assert!(!export_to_stdout(&[
            "run",
            "j.fio",
            "--output-format=normal"
        ]));
    }
}
