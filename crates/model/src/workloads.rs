//! Built-in personalities (the `.f` files in `workloads/`, embedded at build time) and loading
//! a workload by name or path.

use crate::lang::{self, Diagnostics, SourceFile};
use crate::model::build::Overrides;
use crate::model::{self, Workload};
use std::path::Path;

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// The text of a built-in personality.
pub fn builtin(name: &str) -> Option<&'static str> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The one-line description from a built-in's first line (`# fsbench: NAME - TEXT`).
pub fn description(text: &str) -> &str {
    let first = text.lines().next().unwrap_or("");
    first.split_once(" - ").map(|(_, d)| d.trim()).unwrap_or("")
}

/// Where a workload came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    Builtin,
    File(std::path::PathBuf),
}

/// Errors loading a workload: not found, unreadable, or diagnostics in its text.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("no workload file or built-in personality named `{0}`{hint} (see `fsbench list`)", hint = did_you_mean(.0))]
    NotFound(String),
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(Diagnostics),
    /// A request that does not apply to this workload.
    #[error("{0}")]
    Refused(String),
    #[error(
        "{path}:{line}:{column}: not UTF-8 text (byte 0x{byte:02x}); a workload is a text file"
    )]
    NotText {
        path: String,
        line: usize,
        column: usize,
        byte: u8,
    },
}

/// ": did you mean `fileserver`?" when a built-in's name is close to `name`.
fn did_you_mean(name: &str) -> String {
    crate::model::build::suggest(name, BUILTINS.iter().map(|(n, _)| *n))
        .map_or_else(String::new, |s| format!("; did you mean `{s}`?"))
}

/// Line and column (both from 1, the column counted in characters) of byte `at` of `bytes`,
/// whose first `at` bytes are valid UTF-8.
fn line_col(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = std::str::from_utf8(&bytes[..at]).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Read a workload's text: `-` (standard input), an existing file path, else a built-in
/// name.
pub fn read_source(spec: &str) -> Result<(std::sync::Arc<SourceFile>, Origin, String), LoadError> {
    let path = Path::new(spec);
    let looks_like_path = spec.contains('/') || spec.ends_with(".f");
    // Whatever exists there is read (and refused if it is not a regular file: a FIFO, a
    // device), unless it is a built-in's name and no regular file.
    let exists = std::fs::symlink_metadata(path).is_ok();
    let stdin = fsbench_base::input::is_stdin(path);
    if stdin || path.is_file() || ((looks_like_path || exists) && builtin(spec).is_none()) {
        let bytes =
            fsbench_base::input::read(path, fsbench_base::input::WORKLOAD).map_err(|e| {
                LoadError::Io {
                    path: spec.to_string(),
                    source: e,
                }
            })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let (line, column) = line_col(&bytes, at);
            LoadError::NotText {
                path: spec.to_string(),
                line,
                column,
                byte: bytes[at],
            }
        })?;
        let name = match path.file_stem() {
            _ if stdin => "stdin".to_string(),
            Some(s) => s.to_string_lossy().into_owned(),
            None => spec.to_string(),
        };
        return Ok((
            SourceFile::new(if stdin { "<stdin>" } else { spec }, text),
            Origin::File(path.to_path_buf()),
            name,
        ));
    }
    match builtin(spec) {
        Some(text) => Ok((
            SourceFile::new(format!("builtin:{spec}"), text),
            Origin::Builtin,
            spec.to_string(),
        )),
        None => Err(LoadError::NotFound(spec.to_string())),
    }
}

/// A fio job named by a workload spec: `fio:PATH` (a job file whatever its name), a path
/// ending in `.fio`, or `fio-line:OPTIONS` (a one-line job, `fsbench run --fio`).
pub enum FioSpec<'a> {
    File(&'a str),
    Line(&'a str),
}

/// Prefix of a spec that reads a job file as fio's whatever its name.
pub const FIO_FILE_PREFIX: &str = "fio:";
/// Prefix of a spec that is a one-line fio job.
pub const FIO_LINE_PREFIX: &str = "fio-line:";

pub fn fio_spec(spec: &str) -> Option<FioSpec<'_>> {
    if let Some(line) = spec.strip_prefix(FIO_LINE_PREFIX) {
        Some(FioSpec::Line(line))
    } else if let Some(path) = spec.strip_prefix(FIO_FILE_PREFIX) {
        Some(FioSpec::File(path))
    } else if crate::fio::is_job_file(spec) && builtin(spec).is_none() {
        Some(FioSpec::File(spec))
    } else {
        None
    }
}

/// Load a fio job (see [`fio_spec`]); `None` when `spec` names none.
pub fn load_fio(spec: &str) -> Result<Option<(crate::fio::map::Mapped, Origin)>, LoadError> {
    let (src, origin, name) = match fio_spec(spec) {
        None => return Ok(None),
        Some(FioSpec::Line(line)) => (
            SourceFile::new("--fio", crate::fio::one_line_job(line)),
            Origin::Builtin,
            "fio".to_string(),
        ),
        Some(FioSpec::File(path)) => {
            if !Path::new(path).is_file() && !fsbench_base::input::is_stdin(Path::new(path)) {
                return Err(LoadError::Io {
                    path: path.to_string(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "no such fio job file",
                    ),
                });
            }
            read_source(path)?
        }
    };
    let m = crate::fio::load_source(&name, &src).map_err(LoadError::Invalid)?;
    Ok(Some((m, origin)))
}

/// Parse and build a workload with overrides (a fio job's options are its own: `-s`
/// does not apply to one).
pub fn load(spec: &str, overrides: &Overrides) -> Result<(Workload, Origin), LoadError> {
    if let Some((m, origin)) = load_fio(spec)? {
        if let Some((k, _)) = overrides.0.first() {
            return Err(LoadError::Refused(format!(
                "{spec}: -s {k}=...: a fio job takes no -s variables (edit its options, or use ${{ENV}} in the job file)"
            )));
        }
        return Ok((m.workload, origin));
    }
    let (src, origin, name) = read_source(spec)?;
    let script = lang::parse(&src).map_err(|d| LoadError::Invalid(d.into()))?;
    let w = model::build::build(&name, &src, &script, overrides).map_err(LoadError::Invalid)?;
    Ok((w, origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_builds_and_describes_itself() {
        assert!(BUILTINS.len() >= 40, "{}", BUILTINS.len());
        for (name, text) in BUILTINS {
            assert!(
                !description(text).is_empty(),
                "{name} has no description line"
            );
            if let Err(e) = load(name, &Overrides::default()) {
                panic!("built-in {name} does not build:\n{e}");
            }
        }
    }

    #[test]
    fn workloads_that_create_all_they_read_are_told_apart() {
        let blind: Vec<&str> = BUILTINS
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| {
                load(n, &Overrides::default())
                    .unwrap()
                    .0
                    .creates_all_it_reads()
            })
            .collect();
        // Creating files or directories into an empty fileset, appending to an empty file:
        // nothing read was there before.
        for n in ["createfiles", "filemicro_create", "makedirs"] {
            assert!(blind.contains(&n), "{n}: {blind:?}");
        }
        // Reading, opening, listing or deleting files laid out before the run.
        for n in [
            "fileserver",
            "varmail",
            "webserver",
            "randomread",
            "listdirs",
            "removedirs",
        ] {
            assert!(!blind.contains(&n), "{n}: {blind:?}");
        }
    }
}
