//! Where human-readable output goes. When an export is written to standard output
//! (`--json -`, `--csv -`, `--markdown -`), that stream belongs to the export alone: the text
//! report, workload echoes, banners and tables go to standard error instead, so that
//! `fsbench run W --json - | jq` and `... --csv - > r.csv` get exactly one document.

use crate::stats::Results;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_RESERVED: AtomicBool = AtomicBool::new(false);

/// Give standard output to the exports if any of `paths` is `-`.
pub fn reserve_stdout_for<'a>(paths: impl IntoIterator<Item = Option<&'a Path>>) {
    if paths
        .into_iter()
        .any(|p| p.is_some_and(|p| p.as_os_str() == "-"))
    {
        STDOUT_RESERVED.store(true, Ordering::Relaxed);
    }
}

/// Give standard output to the exports if the command line sends one there: `--json -`,
/// `--json=-` (likewise `--csv`, `--markdown`), before a `--`. Decided once at start-up, so
/// every command, and every message printed before its options are looked at, follows it.
pub fn reserve_stdout_for_args<S: AsRef<std::ffi::OsStr>>(args: &[S]) {
    if export_to_stdout(args) {
        STDOUT_RESERVED.store(true, Ordering::Relaxed);
    }
}

fn export_to_stdout<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> bool {
    const EXPORTS: [&str; 3] = ["--json", "--csv", "--markdown"];
    let args: Vec<&str> = args
        .iter()
        .map(|a| a.as_ref().to_str().unwrap_or(""))
        .collect();
    let end = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    args[..end].iter().enumerate().any(|(i, a)| {
        EXPORTS.iter().any(|e| {
            (a == e && args.get(i + 1) == Some(&"-"))
                || a.strip_prefix(e).and_then(|r| r.strip_prefix('=')) == Some("-")
        })
    })
}

/// Whether an export owns standard output.
pub fn stdout_reserved() -> bool {
    STDOUT_RESERVED.load(Ordering::Relaxed)
}

/// Write text meant for a person: standard output, or standard error when an export owns
/// standard output. A closed pipe ends quietly (the caller's next write finds it too).
pub fn human(text: &str) {
    if stdout_reserved() {
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    } else {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(text.as_bytes());
        let _ = o.flush();
    }
}

/// `println!` for text meant for a person (see [`human`]).
#[macro_export]
macro_rules! say {
    () => { $crate::report::out::human("\n") };
    ($($t:tt)*) => { $crate::report::out::human(&format!("{}\n", format_args!($($t)*))) };
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
            let mut o = std::io::stdout().lock();
            o.write_all(text.as_bytes())
                .and_then(|_| o.flush())
                .context("writing to standard output")?;
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
    }
}
