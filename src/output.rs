//! Where a command's output files go: a path, or `-` for standard output. Every output
//! option of every command (`-o`, `--json`, `--csv`, `--markdown`, `--keep-log` ...) writes
//! through here, so `-` means standard output everywhere (`report -o -` wrote a file named
//! `-`), and standard output is written through [`crate::console`], whose failures (a reader
//! gone, a full disk) end the command with the status that says so.
//!
//! Text written to standard output is made [`printable`](crate::console::printable): an
//! export holds names and values from files and databases, and a control character there
//! is a command to the terminal. Binary outputs ([`create`]: traces, snapshots) are written
//! as they are.

use anyhow::{Context, Result};
use std::io::{BufWriter, Write};
use std::path::Path;

// `report::out` still names it `output::is_stdout`; everything else names it in `console`.
pub use crate::console::is_stdout;

/// Write the text `text` to `path` (`-`: standard output), naming `what` it is (a JSON
/// file, a Markdown file ...) if it cannot be written.
pub fn write_text(path: &Path, text: &str, what: &str) -> Result<()> {
    if is_stdout(path) {
        crate::out!("{text}");
        crate::console::flush();
        return crate::console::stdout_ok().map_err(Into::into);
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {what} {}", path.display()))
}

/// Create `path` for writing (`-`: standard output), buffered. Bytes go as they are.
pub fn create(path: &Path, what: &str) -> Result<Box<dyn Write>> {
    if is_stdout(path) {
        return Ok(Box::new(BufWriter::with_capacity(
            1 << 16,
            crate::console::Stdout,
        )));
    }
    let f = std::fs::File::create(path)
        .with_context(|| format!("cannot create {what} {}", path.display()))?;
    Ok(Box::new(BufWriter::with_capacity(1 << 16, f)))
}

/// Copy the file `from` to `path` (`-`: standard output), as it is.
pub fn copy(from: &Path, path: &Path, what: &str) -> Result<()> {
    let mut src = crate::input::open(from).with_context(|| format!("{}", from.display()))?;
    let mut out = create(path, what)?;
    std::io::copy(&mut src, &mut out)
        .and_then(|_| out.flush())
        .with_context(|| format!("cannot write {what} {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_written_and_dash_is_standard_output() {
        let d = std::env::temp_dir().join(format!("fsbench-output-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("a.txt");
        write_text(&f, "text\n", "test file").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "text\n");
        let mut w = create(&d.join("b.bin"), "test file").unwrap();
        w.write_all(&[0x1b, 0]).unwrap();
        drop(w);
        assert_eq!(std::fs::read(d.join("b.bin")).unwrap(), [0x1b, 0]);
        copy(&d.join("b.bin"), &d.join("c.bin"), "test file").unwrap();
        assert_eq!(std::fs::read(d.join("c.bin")).unwrap(), [0x1b, 0]);
        assert!(is_stdout(Path::new("-")) && !is_stdout(Path::new("./-")));
        let e = write_text(&d, "x", "test file").unwrap_err();
        assert!(format!("{e:#}").contains("cannot write test file"), "{e:#}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
