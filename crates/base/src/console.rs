//! Every byte fsbench writes to its standard output and standard error goes through here.
//!
//! The standard library's `print!` and `eprintln!` panic when a write fails: a full disk
//! behind `> file`, `/dev/full`, a reader that went away (`| head -1`), a closed standard
//! error. A benchmark must neither crash there nor claim success after its output was lost.
//! So the macros below ([`out!`](crate::out), [`outln!`](crate::outln),
//! [`errln!`](crate::errln), [`say!`](crate::say)) never panic: a failed write is remembered,
//! later writes to that stream are skipped, and the command's exit status reports it (see
//! [`crate::exit`]): 141 when the reader of standard output went away, as for a process
//! ended by SIGPIPE; 1 with a message when standard output could not be written otherwise;
//! 1 without one when standard error itself could not be written.
//!
//! Commands that print much (listings, traces) ask [`stdout_ok`] between items and stop
//! early; writers that take an `io::Write` (serializers, generators) get [`Stdout`].
//!
//! When an export is written to standard output (`--json -`, `--csv -`, `--markdown -`),
//! that stream belongs to the export alone: text meant for a person ([`human`], `say!`) goes
//! to standard error instead, so that `fsbench run W --json - | jq` gets one document.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The first error writing standard output, when one happened.
static STDOUT_ERROR: Mutex<Option<(io::ErrorKind, Option<i32>, String)>> = Mutex::new(None);
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);
static STDERR_FAILED: AtomicBool = AtomicBool::new(false);
static STDOUT_RESERVED: AtomicBool = AtomicBool::new(false);

/// Remember that standard output failed with `e` (the first error is kept).
pub fn stdout_failed_with(e: &io::Error) {
    let mut g = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
    if g.is_none() {
        *g = Some((e.kind(), e.raw_os_error(), e.to_string()));
    }
    STDOUT_FAILED.store(true, Ordering::SeqCst);
}

/// Remember that standard error could not be written.
pub fn stderr_failed() {
    STDERR_FAILED.store(true, Ordering::SeqCst);
}

/// Whether a write to standard error failed.
pub fn stderr_lost() -> bool {
    STDERR_FAILED.load(Ordering::SeqCst)
}

/// The first error writing standard output, rebuilt (errors are not `Clone`).
pub fn stdout_error() -> Option<io::Error> {
    let g = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
    g.as_ref().map(|(kind, code, text)| match code {
        Some(c) => io::Error::from_raw_os_error(*c),
        None => io::Error::new(*kind, text.clone()),
    })
}

/// Whether standard output's reader went away (EPIPE).
pub fn stdout_broken_pipe() -> bool {
    stdout_error().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// `Ok` while standard output still takes writes; commands that print much ask between
/// items and stop at the first error (which the exit status reports).
pub fn stdout_ok() -> io::Result<()> {
    match STDOUT_FAILED.load(Ordering::SeqCst) {
        false => Ok(()),
        true => Err(labelled(
            &stdout_error().unwrap_or_else(|| io::Error::other("failed")),
        )),
    }
}

/// Text made safe for a terminal: what fsbench prints holds names and values from files,
/// databases and the command line, and a control character there is a command to the
/// terminal (`ESC ] 0 ; ... BEL` retitles the window, `ESC [ 2 J` clears it, a carriage
/// return overwrites the line). Every control character but newline and tab (C0, DEL, C1)
/// is written as an escape (`\x1b`, `\u{9b}`), and so are the characters that reorder or
/// break what is shown (bidirectional overrides and isolates, line and paragraph
/// separators).
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    escaped(s, unsafe_char, |c, out| {
        if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    })
}

/// A character [`printable`] writes as an escape.
fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// JSON text made safe for a terminal and still JSON: the characters [`printable`] escapes
/// are written as JSON's escapes of four hex digits (`\u009b`), which read back as the same
/// characters. serde already escapes C0 controls inside strings; C1 controls, DEL and the
/// reordering characters it writes as they are, and they can only stand inside strings,
/// where such an escape means them. A carriage return outside a string is JSON whitespace
/// and stays.
pub fn printable_json(s: &str) -> std::borrow::Cow<'_, str> {
    escaped(
        s,
        |c| unsafe_char(c) && c != '\r',
        |c, out| out.push_str(&format!("\\u{:04x}", c as u32)),
    )
}

/// `s` with each character `unsafe_` picks written by `escape`; borrowed when there is none.
fn escaped(
    s: &str,
    unsafe_: impl Fn(char) -> bool,
    escape: impl Fn(char, &mut String),
) -> std::borrow::Cow<'_, str> {
    if !s.contains(&unsafe_) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if unsafe_(c) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Formatted text, made [`printable`].
fn printable_fmt(args: fmt::Arguments<'_>) -> std::borrow::Cow<'_, str> {
    match args.as_str() {
        Some(s) => printable(s),
        None => std::borrow::Cow::Owned(printable(&args.to_string()).into_owned()),
    }
}

/// Write formatted text to standard output, made [`printable`].
pub fn out_fmt(args: fmt::Arguments<'_>) {
    if STDOUT_FAILED.load(Ordering::SeqCst) {
        return;
    }
    if let Err(e) = io::stdout()
        .lock()
        .write_all(printable_fmt(args).as_bytes())
    {
        stdout_failed_with(&e);
    }
}

/// Write bytes to standard output.
pub fn out_bytes(b: &[u8]) {
    if STDOUT_FAILED.load(Ordering::SeqCst) {
        return;
    }
    if let Err(e) = io::stdout().lock().write_all(b) {
        stdout_failed_with(&e);
    }
}

/// Write formatted text to standard error, made [`printable`].
pub fn err_fmt(args: fmt::Arguments<'_>) {
    if STDERR_FAILED.load(Ordering::SeqCst) {
        return;
    }
    if io::stderr()
        .lock()
        .write_all(printable_fmt(args).as_bytes())
        .is_err()
    {
        stderr_failed();
    }
}

/// Write a terminal control sequence of fsbench's own to standard error, as it is (the
/// progress line's `\r ESC [ 2 K`, which erases it).
pub fn err_control(seq: &str) {
    if STDERR_FAILED.load(Ordering::SeqCst) {
        return;
    }
    if io::stderr().lock().write_all(seq.as_bytes()).is_err() {
        stderr_failed();
    }
}

/// Flush standard output (it is line-buffered), remembering a failure.
pub fn flush() {
    if STDOUT_FAILED.load(Ordering::SeqCst) {
        return;
    }
    if let Err(e) = io::stdout().lock().flush() {
        stdout_failed_with(&e);
    }
}

/// Standard output as an `io::Write`, for serializers and generators: its errors are
/// remembered as those of the macros are, and returned (saying "cannot write to standard
/// output") so the writer stops.
pub struct Stdout;

impl Stdout {
    fn checked<T>(r: io::Result<T>) -> io::Result<T> {
        r.map_err(|e| {
            stdout_failed_with(&e);
            labelled(&e)
        })
    }
}

fn labelled(e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("cannot write to standard output: {e}"))
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        stdout_ok()?;
        Self::checked(io::stdout().lock().write(buf))
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        stdout_ok()?;
        Self::checked(io::stdout().lock().write_all(buf))
    }
    fn flush(&mut self) -> io::Result<()> {
        stdout_ok()?;
        Self::checked(io::stdout().lock().flush())
    }
}

/// Whether an output path is `-`, standard output (the one test of it: see
/// [`crate::export`], through which every output file is written).
pub fn is_stdout(path: &std::path::Path) -> bool {
    path.as_os_str() == "-"
}

/// Give standard output to the exports if any of `paths` is `-`.
pub fn reserve_stdout_for<'a>(paths: impl IntoIterator<Item = Option<&'a std::path::Path>>) {
    if paths.into_iter().any(|p| p.is_some_and(is_stdout)) {
        STDOUT_RESERVED.store(true, Ordering::Relaxed);
    }
}

/// Give standard output to the exports (see [`reserve_stdout_for`]).
pub fn reserve_stdout() {
    STDOUT_RESERVED.store(true, Ordering::Relaxed);
}

/// Whether an export owns standard output.
pub fn stdout_reserved() -> bool {
    STDOUT_RESERVED.load(Ordering::Relaxed)
}

/// Write text meant for a person: standard output, or standard error when an export owns
/// standard output.
pub fn human_fmt(args: fmt::Arguments<'_>) {
    if stdout_reserved() {
        err_fmt(args);
    } else {
        out_fmt(args);
        flush();
    }
}

/// [`human_fmt`] of a string.
pub fn human(text: &str) {
    human_fmt(format_args!("{text}"));
}

/// `print!` that never panics (see the module comment).
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::console::out_fmt(format_args!($($t)*)) };
}

/// `println!` that never panics (see the module comment).
#[macro_export]
macro_rules! outln {
    () => { $crate::console::out_fmt(format_args!("\n")) };
    ($($t:tt)*) => { $crate::console::out_fmt(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprint!` that never panics (see the module comment).
#[macro_export]
macro_rules! err {
    ($($t:tt)*) => { $crate::console::err_fmt(format_args!($($t)*)) };
}

/// `eprintln!` that never panics (see the module comment).
#[macro_export]
macro_rules! errln {
    () => { $crate::console::err_fmt(format_args!("\n")) };
    ($($t:tt)*) => { $crate::console::err_fmt(format_args!("{}\n", format_args!($($t)*))) };
}

/// `println!` for text meant for a person (see [`human`]).
#[macro_export]
macro_rules! say {
    () => { $crate::console::human_fmt(format_args!("\n")) };
    ($($t:tt)*) => { $crate::console::human_fmt(format_args!("{}\n", format_args!($($t)*))) };
}

#[cfg(test)]
mod tests {

    /// JSON on standard output carries no command to the terminal and still reads back as
    /// the value it was: a name with a C1 control and a right-to-left override.
    #[test]
    fn json_made_printable_is_still_the_same_json() {
        let name = "a\u{9b}2J\u{202e}b\u{7f}";
        let text = serde_json::to_string_pretty(&serde_json::json!({ "name": name })).unwrap();
        assert!(text.contains('\u{9b}'), "serde writes C1 as it is: {text}");
        let shown = super::printable_json(&text);
        assert!(!shown.contains(super::unsafe_char), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back["name"], name);
        // What holds nothing to escape is passed through.
        assert!(matches!(
            super::printable_json("{}"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn control_characters_are_shown_as_escapes() {
        assert_eq!(super::printable("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            super::printable("a\x1b]0;owned\x07b\rc\u{9b}d\u{202e}e\x7f"),
            "a\\x1b]0;owned\\x07b\\x0dc\\u{9b}d\\u{202e}e\\x7f"
        );
    }

    /// The standard library's printing macros, which panic on lost output, appear nowhere in
    /// the program's code (tests may use them: the harness captures them).
    #[test]
    fn no_panicking_print_outside_tests() {
        let mut found = Vec::new();
        for (_, p) in crate::testsrc::rust_files() {
            let text = std::fs::read_to_string(&p).unwrap();
            for (i, line) in text.lines().enumerate() {
                if line.trim() == "#[cfg(test)]" {
                    break;
                }
                let code = line.split("//").next().unwrap_or("");
                for m in ["println!", "print!", "eprintln!", "eprint!"] {
                    let bare = code.match_indices(m).any(|(at, _)| {
                        !code[..at].ends_with(|c: char| c == ':' || c.is_alphanumeric())
                    });
                    if bare {
                        found.push(format!("{}:{}: {}", p.display(), i + 1, line.trim()));
                    }
                }
            }
        }
        assert!(
            found.is_empty(),
            "use the out!/outln!/errln!/say! macros (crates/base/src/console.rs) instead:\n{}",
            found.join("\n")
        );
    }
}
