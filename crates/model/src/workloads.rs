//! Built-in personalities (the `.f` files in `workloads/`, embedded at build time) and loading
//! a workload by name or path.

use crate::fio::map::FioJobs;
use crate::fio::map::Mapped;
use crate::lang::{self, Diagnostics, SourceFile};
use crate::model::build::Overrides;
use crate::model::{self, Workload};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

/// What a workload argument names, resolved once from the command line (or a plan): which
/// reader reads it and from where. Commands hand this value on; nothing re-encodes it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Source {
    /// A workload file in the Filebench language, or `-` (standard input).
    File(PathBuf),
    /// A built-in personality, by name (one that does not exist is refused when read).
    Builtin(String),
    /// A fio job file (a `.fio` name, or `--format fio`), or `-`.
    FioFile(PathBuf),
    /// A one-line fio job (`fsbench run --fio 'rw=randread bs=4k'`): its options.
    FioLine(String),
}

impl Source {
    /// A workload as a command line or a plan names it: `-` (standard input), a fio job as
    /// `fio-line:OPTIONS`, `fio:PATH` or a `.fio` file name, an existing file path or one
    /// that looks like a path, else a built-in's name. A built-in's name wins over anything
    /// but a regular file.
    pub fn named(spec: &str) -> Source {
        if let Some(line) = spec.strip_prefix("fio-line:") {
            return Source::FioLine(line.to_string());
        }
        if let Some(path) = spec.strip_prefix("fio:") {
            return Source::fio_file(path);
        }
        let path = Path::new(spec);
        if crate::fio::is_job_file(spec) && builtin(spec).is_none() {
            return Source::FioFile(path.to_path_buf());
        }
        let looks_like_path = spec.contains('/') || spec.ends_with(".f");
        // Whatever exists there is read (and refused if it is not a regular file: a FIFO, a
        // device), unless it is a built-in's name and no regular file.
        let exists = std::fs::symlink_metadata(path).is_ok();
        let stdin = fsbench_base::input::is_stdin(path);
        if stdin || path.is_file() || ((looks_like_path || exists) && builtin(spec).is_none()) {
            Source::File(path.to_path_buf())
        } else {
            Source::Builtin(spec.to_string())
        }
    }

    /// A file read as a fio job file whatever its name (`--format fio`).
    pub fn fio_file(spec: &str) -> Source {
        Source::FioFile(PathBuf::from(spec))
    }

    /// Whether a fio job is what this names.
    pub fn is_fio(&self) -> bool {
        matches!(self, Source::FioFile(_) | Source::FioLine(_))
    }

    /// Read the text (a file once, standard input once, a built-in from the binary).
    pub fn read(&self) -> Result<Text, LoadError> {
        match self {
            Source::File(path) => read_file(path),
            Source::FioFile(path) => {
                if !path.is_file() && !fsbench_base::input::is_stdin(path) {
                    return Err(LoadError::Io {
                        path: path.display().to_string(),
                        source: std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            "no such fio job file",
                        ),
                    });
                }
                read_file(path)
            }
            Source::Builtin(name) => match builtin(name) {
                Some(text) => Ok(self.with_text(text.to_string())),
                None => Err(LoadError::NotFound(name.clone())),
            },
            Source::FioLine(line) => Ok(self.with_text(crate::fio::one_line_job(line))),
        }
    }

    /// The text of this source read elsewhere (by rank 0 of a multi-client run, for ranks
    /// that may not see its file), named as [`Source::read`] names it, so that messages and
    /// the results say the same on every rank.
    pub fn with_text(&self, text: String) -> Text {
        let (shown, origin, name) = match self {
            Source::File(p) | Source::FioFile(p) if fsbench_base::input::is_stdin(p) => (
                "<stdin>".to_string(),
                Origin::File(p.clone()),
                "stdin".to_string(),
            ),
            Source::File(p) | Source::FioFile(p) => (
                p.display().to_string(),
                Origin::File(p.clone()),
                p.file_stem().map_or_else(
                    || p.display().to_string(),
                    |s| s.to_string_lossy().into_owned(),
                ),
            ),
            Source::Builtin(n) => (format!("builtin:{n}"), Origin::Builtin, n.clone()),
            Source::FioLine(_) => ("--fio".into(), Origin::Builtin, "fio".into()),
        };
        Text {
            file: SourceFile::new(shown, text),
            origin,
            name,
        }
    }

    /// Read and parse once (see [`Parsed`]).
    pub fn parse(&self) -> Result<Parsed, LoadError> {
        Parsed::parse(self, self.read()?)
    }
}

/// A workload's text, read once: the source file messages point into, where it came from,
/// and the workload's name.
#[derive(Debug, Clone)]
pub struct Text {
    pub file: Arc<SourceFile>,
    pub origin: Origin,
    pub name: String,
}

/// Read a workload file (or standard input) as UTF-8 text, through the bounded reader.
fn read_file(path: &Path) -> Result<Text, LoadError> {
    let spec = path.display().to_string();
    let bytes = fsbench_base::input::read(path, fsbench_base::input::WORKLOAD).map_err(|e| {
        LoadError::Io {
            path: spec.clone(),
            source: e,
        }
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.into_bytes();
        let (line, column) = line_col(&bytes, at);
        LoadError::NotText {
            path: spec,
            line,
            column,
            byte: bytes[at],
        }
    })?;
    Ok(Source::File(path.to_path_buf()).with_text(text))
}

/// A workload parsed once: a Filebench-language script (built into a [`Workload`] with the
/// command's overrides, as often as the command needs, without parsing it again), or fio
/// jobs (mapped onto a workload as they are read; they take no overrides).
#[derive(Debug, Clone)]
pub enum Parsed {
    Script {
        text: Text,
        script: lang::ast::Script,
    },
    Fio {
        origin: Origin,
        mapped: Box<Mapped>,
    },
}

impl Parsed {
    /// Parse `text`, read from `source`, with the reader `source` names.
    pub fn parse(source: &Source, text: Text) -> Result<Parsed, LoadError> {
        if source.is_fio() {
            let mapped =
                crate::fio::load_source(&text.name, &text.file).map_err(LoadError::Invalid)?;
            return Ok(Parsed::Fio {
                origin: text.origin,
                mapped: Box::new(mapped),
            });
        }
        let script = lang::parse(&text.file).map_err(|d| LoadError::Invalid(d.into()))?;
        Ok(Parsed::Script { text, script })
    }

    pub fn origin(&self) -> &Origin {
        match self {
            Parsed::Script { text, .. } => &text.origin,
            Parsed::Fio { origin, .. } => origin,
        }
    }

    /// The fio jobs, when this is a fio job.
    pub fn fio(&self) -> Option<&Mapped> {
        match self {
            Parsed::Script { .. } => None,
            Parsed::Fio { mapped, .. } => Some(mapped),
        }
    }

    /// What `f` says of the workload built with `overrides` (a fio job's own, unbuilt).
    pub fn probe<R>(
        &self,
        overrides: &Overrides,
        f: impl FnOnce(&Workload) -> R,
    ) -> Result<R, LoadError> {
        match self {
            Parsed::Script { text, script } => Ok(f(&build_script(text, script, overrides)?)),
            Parsed::Fio { mapped, .. } => {
                refuse_overrides(&mapped.workload, overrides)?;
                Ok(f(&mapped.workload))
            }
        }
    }

    /// The workload built with `overrides`, and the fio jobs it was mapped from.
    pub fn build(self, overrides: &Overrides) -> Result<(Workload, Option<FioJobs>), LoadError> {
        match self {
            Parsed::Script { text, script } => Ok((build_script(&text, &script, overrides)?, None)),
            Parsed::Fio { mapped, .. } => {
                refuse_overrides(&mapped.workload, overrides)?;
                let (w, jobs) = mapped.split();
                Ok((w, Some(jobs)))
            }
        }
    }
}

fn build_script(
    text: &Text,
    script: &lang::ast::Script,
    overrides: &Overrides,
) -> Result<Workload, LoadError> {
    model::build::build(&text.name, &text.file, script, overrides).map_err(LoadError::Invalid)
}

/// A fio job's options are its own: `-s` does not apply to one.
fn refuse_overrides(jobs: &Workload, overrides: &Overrides) -> Result<(), LoadError> {
    match overrides.0.first() {
        Some((k, _)) => Err(LoadError::Refused(format!(
            "{}: -s {k}=...: a fio job takes no -s variables (edit its options, or use ${{ENV}} in the job file)",
            jobs.source.name
        ))),
        None => Ok(()),
    }
}

/// Read, parse and build a workload with overrides.
pub fn load(source: &Source, overrides: &Overrides) -> Result<(Workload, Origin), LoadError> {
    let parsed = source.parse()?;
    let origin = parsed.origin().clone();
    Ok((parsed.build(overrides)?.0, origin))
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
            if let Err(e) = load(&Source::named(name), &Overrides::default()) {
                panic!("built-in {name} does not build:\n{e}");
            }
        }
    }

    #[test]
    fn a_workload_argument_names_its_reader_once() {
        assert_eq!(
            Source::named("fileserver"),
            Source::Builtin("fileserver".into())
        );
        assert_eq!(Source::named("-"), Source::File("-".into()));
        assert_eq!(Source::named("my.f"), Source::File("my.f".into()));
        assert_eq!(Source::named("j.fio"), Source::FioFile("j.fio".into()));
        assert_eq!(
            Source::named("fio:job.ini"),
            Source::FioFile("job.ini".into())
        );
        assert_eq!(
            Source::named("fio-line:rw=read size=1m"),
            Source::FioLine("rw=read size=1m".into())
        );
        assert!(Source::named("j.fio").is_fio() && !Source::named("my.f").is_fio());
        // A name that is neither a file nor a built-in is refused when read, with a hint.
        let e = Source::named("fileservr").read().unwrap_err().to_string();
        assert!(e.contains("did you mean `fileserver`"), "{e}");
    }

    #[test]
    fn text_read_elsewhere_is_named_as_if_read_here() {
        // Diagnostics of text rank 0 read point at the file's own name, line and column.
        let src = Source::File("dir/bad.f".into());
        let t = src.with_text("set $x=1\nnonsense here\n".into());
        assert_eq!(
            (t.file.name.as_str(), t.name.as_str()),
            ("dir/bad.f", "bad")
        );
        let Err(LoadError::Invalid(d)) = Parsed::parse(&src, t) else {
            panic!("parsed nonsense");
        };
        assert!(d.to_string().contains("dir/bad.f:2:1"), "{d}");
        let line = Source::FioLine("rw=read size=1m".into()).parse().unwrap();
        assert!(line.fio().is_some());
        let (w, jobs) = line.build(&Overrides::default()).unwrap();
        assert_eq!(
            (w.source.name.as_str(), jobs.unwrap().jobs.len()),
            ("--fio", 1)
        );
    }

    #[test]
    fn workloads_that_create_all_they_read_are_told_apart() {
        let blind: Vec<&str> = BUILTINS
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| {
                load(&Source::named(n), &Overrides::default())
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
