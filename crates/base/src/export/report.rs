//! A command's text report beside its exports: on standard output unless an export takes
//! that stream, so that `fsbench scan D --json - | jq` reads one document.

use anyhow::Result;
use std::io::{self, Write};
use std::path::Path;

/// A command's typed result other than `Results` (a scan's summary, a layout's scores, an
/// aging report): its JSON is the value itself, its text report what `write_text` writes.
pub trait Report: serde::Serialize {
    fn write_text(&self, out: &mut dyn Write) -> io::Result<()>;
}

/// What becomes of the text report when an export takes standard output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Displaced {
    /// Left out: the export holds the same figures.
    Dropped,
    /// Written to standard error instead.
    ToStderr,
}

/// Let `write` write the text report to standard output, unless one of `exports` is `-`:
/// then to standard error or nowhere, as `displaced` says. A failure to write standard output
/// is returned (and remembered for the exit status: see [`crate::console`]), so the command
/// never reports success after its output was lost.
pub fn text_beside(
    exports: &[Option<&Path>],
    displaced: Displaced,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    if !exports
        .iter()
        .any(|p| p.is_some_and(crate::console::is_stdout))
    {
        return Ok(write(&mut crate::console::Stdout)?);
    }
    match displaced {
        Displaced::Dropped => Ok(()),
        Displaced::ToStderr => Ok(write(&mut io::stderr())?),
    }
}

/// Print `r`'s text report on standard output, unless its JSON goes there, and write its
/// JSON to `json` (`-`: standard output).
pub fn emit<R: Report>(r: &R, json: Option<&Path>) -> Result<()> {
    text_beside(&[json], Displaced::Dropped, |o| r.write_text(o))?;
    if let Some(j) = json {
        super::write_json(j, r)?;
    }
    Ok(())
}
