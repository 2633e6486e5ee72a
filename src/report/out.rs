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
/// standard output.
pub fn emit(r: &Results, exports: &[(&str, Option<&Path>)]) -> Result<()> {
    reserve_stdout_for(exports.iter().map(|(_, p)| *p));
    human(&super::exporter("text").expect("text exporter").render(r));
    for (fmt, path) in exports {
        let Some(path) = path else { continue };
        let text = super::exporter(fmt).expect("known format").render(r);
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
