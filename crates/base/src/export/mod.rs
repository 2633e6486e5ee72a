//! The one export layer: every file a command writes its results to (`--json`, `--csv`,
//! `--markdown`, `-o`, `--runs-csv`, `--runs-json`, a trace, a kept log) is opened here, once,
//! by [`Output::open`], so that `-` means standard output everywhere (`report -o -` once wrote
//! a file named `-`), a failure names the file, and standard output is written through
//! [`crate::console`], whose failures (a reader gone, a full disk) end the command with the
//! status that says so.
//!
//! Only one output may take standard output: [`check::outputs`] refuses two of them on one
//! command line before any work, and [`Output::open`] refuses another export at run time, so
//! that the reader of standard output never gets two kinds of document run together. Text meant for a person then
//! goes to standard error ([`crate::console::human`], [`report::text_beside`]).
//!
//! Text written to standard output ([`Output::text`]) is made
//! [`printable`](crate::console::printable): an export holds names and values from files and
//! databases, and a control character there is a command to the terminal. Bytes
//! ([`Output::bytes`], [`Output::json`], `Write`: traces, snapshots, serializers) go as they
//! are. CSV fields are quoted by [`csv::field`] alone.
//!
//! Modelled on hyperfine's `export/`: the formats in one enum ([`Format`]), one writer, the
//! renderers of each format beside their data (`report/` for `Results`).

use anyhow::{Context, Result};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub mod check;
pub mod csv;
pub mod report;

/// The formats results are exported in, chosen where a command lists its outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Csv,
    Markdown,
    Html,
}

impl Format {
    /// What an output of this format is called in messages ("cannot write CSV file r.csv").
    pub fn what(self) -> &'static str {
        match self {
            Format::Text => "text file",
            Format::Json => "JSON file",
            Format::Csv => "CSV file",
            Format::Markdown => "Markdown file",
            Format::Html => "HTML page",
        }
    }
}

/// What holds standard output, once an export has opened it (see [`Output::open`]).
static STDOUT_TAKEN_BY: Mutex<Option<String>> = Mutex::new(None);

/// Give standard output to the export `what`, or refuse it when another export has it: two
/// documents of different kinds run together on one stream can be read as neither. The same
/// export may write again (a PostMark configuration with several `run` lines writes its
/// results after each).
fn take_stdout(what: &str) -> Result<()> {
    let mut taken = STDOUT_TAKEN_BY.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(first) = taken.as_deref().filter(|first| *first != what) {
        return Err(crate::exit::usage(format!(
            "{what} and {first} both write to standard output: give one of them a file"
        )));
    }
    *taken = Some(what.to_string());
    crate::console::reserve_stdout();
    Ok(())
}

/// Where an export's bytes go.
enum Sink {
    Stdout(BufWriter<crate::console::Stdout>),
    File(BufWriter<std::fs::File>),
}

/// One export being written: a file, or standard output for `-`. Buffered; [`Output::finish`]
/// (or the one-call writers [`Output::text`], [`Output::bytes`], [`Output::json`],
/// [`Output::with`]) flushes it and names the file in an error.
pub struct Output {
    path: PathBuf,
    what: String,
    sink: Sink,
}

impl Output {
    /// Open `path` for the export `what` (`JSON file`, `trace` ...): `-` is standard output,
    /// refused if another export already took it; a file is created or truncated.
    pub fn open(path: &Path, what: &str) -> Result<Output> {
        let sink = if crate::console::is_stdout(path) {
            take_stdout(what)?;
            Sink::Stdout(BufWriter::with_capacity(1 << 16, crate::console::Stdout))
        } else {
            let f = std::fs::File::create(path)
                .with_context(|| format!("cannot write {what} {}", path.display()))?;
            Sink::File(BufWriter::with_capacity(1 << 16, f))
        };
        Ok(Output {
            path: path.to_path_buf(),
            what: what.to_string(),
            sink,
        })
    }

    /// Whether this export is standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(self.sink, Sink::Stdout(_))
    }

    /// Write `text` and finish: on standard output made printable, in a file as it is.
    pub fn text(self, text: &str) -> Result<()> {
        let shown = match self.sink {
            Sink::Stdout(_) if self.what == Format::Json.what() => {
                crate::console::printable_json(text)
            }
            Sink::Stdout(_) => crate::console::printable(text),
            Sink::File(_) => std::borrow::Cow::Borrowed(text),
        };
        self.with(|o| o.write_all(shown.as_bytes()))
    }

    /// Write `bytes` as they are and finish.
    pub fn bytes(self, bytes: &[u8]) -> Result<()> {
        self.with(|o| o.write_all(bytes))
    }

    /// Write `value` as pretty JSON and a newline, and finish.
    pub fn json<T: serde::Serialize + ?Sized>(self, value: &T) -> Result<()> {
        self.with(|o| {
            serde_json::to_writer_pretty(&mut *o, value)?;
            writeln!(o)
        })
    }

    /// Let `write` write the export, then finish.
    pub fn with(mut self, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<()> {
        let written = write(&mut self);
        self.done(written)
    }

    /// Flush what is buffered; an error names the file.
    pub fn finish(self) -> Result<()> {
        self.done(Ok(()))
    }

    fn done(mut self, written: io::Result<()>) -> Result<()> {
        let r = written.and_then(|_| self.flush());
        match (&self.sink, r) {
            (_, Ok(())) => Ok(()),
            // Already "cannot write to standard output: ..." (see crate::console::Stdout).
            (Sink::Stdout(_), Err(e)) => Err(e.into()),
            (Sink::File(_), Err(e)) => Err(anyhow::Error::from(e).context(format!(
                "cannot write {} {}",
                self.what,
                self.path.display()
            ))),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Sink::Stdout(w) => w.write(buf),
            Sink::File(w) => w.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.sink {
            Sink::Stdout(w) => w.write_all(buf),
            Sink::File(w) => w.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Stdout(w) => w.flush(),
            Sink::File(w) => w.flush(),
        }
    }
}

/// Write the text `text` to `path` (`-`: standard output, made printable), naming `what` it
/// is (a JSON file, a Markdown file ...) if it cannot be written.
pub fn write_text(path: &Path, text: &str, what: &str) -> Result<()> {
    Output::open(path, what)?.text(text)
}

/// Write a serde value as pretty JSON to `path` (`-`: standard output, as it is).
pub fn write_json<T: serde::Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    Output::open(path, Format::Json.what())?.json(value)
}

/// Copy the file `from` to `path` (`-`: standard output), as it is.
pub fn copy(from: &Path, path: &Path, what: &str) -> Result<()> {
    let mut src = crate::input::open(from).with_context(|| format!("{}", from.display()))?;
    Output::open(path, what)?.with(|o| io::copy(&mut src, o).map(|_| ()))
}

#[cfg(test)]
mod tests {
    use super::{copy, report, write_json, write_text, Format, Output};
    use std::io::Write;
    use std::path::Path;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("fsbench-export-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A file gets the text and bytes as they are (control characters too: only standard
    /// output is made printable), and a failure names the export and its path.
    #[test]
    fn files_are_written_as_given_and_errors_name_them() {
        let d = scratch("files");
        let f = d.join("a.txt");
        write_text(&f, "text\x1b\n", "test file").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "text\x1b\n");
        let mut w = Output::open(&d.join("b.bin"), "test file").unwrap();
        assert!(!w.is_stdout());
        w.write_all(&[0x1b, 0]).unwrap();
        w.finish().unwrap();
        assert_eq!(std::fs::read(d.join("b.bin")).unwrap(), [0x1b, 0]);
        copy(&d.join("b.bin"), &d.join("c.bin"), "test file").unwrap();
        assert_eq!(std::fs::read(d.join("c.bin")).unwrap(), [0x1b, 0]);
        write_json(&d.join("v.json"), &serde_json::json!({"k": [1, 2]})).unwrap();
        assert_eq!(
            std::fs::read_to_string(d.join("v.json")).unwrap(),
            "{\n  \"k\": [\n    1,\n    2\n  ]\n}\n"
        );
        let e = write_text(&d, "x", "test file").unwrap_err();
        assert!(
            format!("{e:#}").starts_with(&format!("cannot write test file {}", d.display())),
            "{e:#}"
        );
        let e = write_json(&d.join("no/v.json"), &1).unwrap_err();
        assert!(format!("{e:#}").contains("cannot write JSON file"), "{e:#}");
        assert_eq!(Format::Csv.what(), "CSV file");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// `-` is standard output (and `./-` a file); the first export to open it keeps it (and may
    /// open it again), and another is refused as a usage error that names both, before writing
    /// anything. (The one test in this program that takes standard output: the claim lasts the
    /// process.)
    #[test]
    fn dash_is_standard_output_and_only_one_export_takes_it() {
        let d = scratch("stdout");
        let first = Output::open(Path::new("-"), "first export").unwrap();
        assert!(first.is_stdout());
        first.finish().unwrap();
        assert!(
            crate::console::stdout_reserved(),
            "human text moves to stderr"
        );
        let again = Output::open(Path::new("-"), "first export").unwrap();
        again.finish().unwrap();
        let e = match Output::open(Path::new("-"), "second export") {
            Ok(_) => panic!("a second export took standard output"),
            Err(e) => e,
        };
        assert!(crate::exit::is_usage(&e), "{e:#}");
        assert_eq!(
            e.to_string(),
            "second export and first export both write to standard output: give one of them a file"
        );
        assert!(write_text(Path::new("-"), "x", "third").is_err());
        // A file named `-` in a directory is a file.
        let dash = d.join("-");
        write_text(&dash, "in a file\n", "test file").unwrap();
        assert_eq!(std::fs::read_to_string(&dash).unwrap(), "in a file\n");
        // The text report is left out when its export is standard output.
        let mut called = false;
        report::text_beside(
            &[None, Some(Path::new("-"))],
            report::Displaced::Dropped,
            |_| {
                called = true;
                Ok(())
            },
        )
        .unwrap();
        assert!(
            !called,
            "the text report was written beside an export on stdout"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
