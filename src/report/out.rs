//! Where reports go. When an export is written to standard output (`--json -`, `--csv -`,
//! `--markdown -`), that stream belongs to the export alone: the text report, workload
//! echoes, banners and tables go to standard error instead (see [`crate::console`]), so that
//! `fsbench run W --json - | jq` and `... --csv - > r.csv` get exactly one document.

use crate::stats::Results;
use anyhow::{Context, Result};
use std::io::{self, Write};
use std::path::Path;

pub use crate::console::{human, reserve_stdout_for, stdout_reserved};

/// Give standard output to the exports if the command line sends one there: `--json -`,
/// `--json=-` (likewise `--csv`, `--markdown`, `-o`/`--output`, `--log`, `--keep-log`),
/// before a `--`. Decided once at start-up, so every command, and every message printed
/// before its options are looked at, follows it.
pub fn reserve_stdout_for_args<S: AsRef<std::ffi::OsStr>>(args: &[S]) {
    if export_to_stdout(args) {
        crate::console::reserve_stdout();
    }
}

fn export_to_stdout<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> bool {
    const EXPORTS: [&str; 7] = [
        "--json",
        "--csv",
        "--markdown",
        "-o",
        "--output",
        "--log",
        "--keep-log",
    ];
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
        crate::output::write_text(path, &text, &format!("{fmt} file"))?;
    }
    Ok(())
}

/// A command's typed result other than [`Results`] (a scan's summary, a layout's scores, an
/// aging report): its JSON is the value itself, its text report what `write_text` writes.
pub trait Report: serde::Serialize {
    fn write_text(&self, out: &mut dyn Write) -> io::Result<()>;
}

/// Print `r`'s text report on standard output, unless its JSON goes there, and write its
/// JSON to `json` (`-`: standard output).
pub fn emit_report<R: Report>(r: &R, json: Option<&Path>) -> Result<()> {
    if !json.is_some_and(crate::output::is_stdout) {
        stdout_result(r.write_text(&mut crate::console::Stdout))?;
    }
    if let Some(j) = json {
        write_json(j, r)?;
    }
    Ok(())
}

/// The outcome of writing to standard output through [`crate::console::Stdout`], which
/// remembers an error for the exit status (141 when the reader went away, 1 otherwise: see
/// [`crate::exit`]): returned, so the command stops and never reports success.
pub fn stdout_result(r: io::Result<()>) -> Result<()> {
    Ok(r?)
}

/// Write a serde value as pretty JSON to a file, or standard output for "-" (see
/// [`crate::output`]).
pub fn write_json<T: serde::Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let mut w = crate::output::create(path, "JSON file")?;
    serde_json::to_writer_pretty(&mut w, value)
        .map_err(io::Error::from)
        .and_then(|_| writeln!(w))
        .and_then(|_| w.flush())
        .with_context(|| format!("cannot write JSON file {}", path.display()))
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
        assert!(export_to_stdout(&["report", "a.json", "-o", "-"]));
        assert!(export_to_stdout(&["trace", "import", "l", "--output=-"]));
        assert!(!export_to_stdout(&["report", "a.json", "-o", "x.html"]));
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
