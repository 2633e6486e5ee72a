//! Where the human-readable report goes.
//!
//! Scripts read `--json -`, `--csv -` or `--markdown -` from standard output, so when any export
//! goes there the text report, echo lines and `psrun` blocks must not share it. The CLI decides
//! once, before a command runs ([`set_text_to_stderr`]); every printer of human-readable text
//! writes through [`out!`](crate::out) / [`outln!`](crate::outln), which follow that choice.
//! Progress, warnings and errors always go to standard error.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static TEXT_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// Send human-readable output to standard error from now on (an export owns standard output).
pub fn set_text_to_stderr(yes: bool) {
    TEXT_TO_STDERR.store(yes, Ordering::Relaxed);
}

/// True when human-readable output goes to standard error.
pub fn text_to_stderr() -> bool {
    TEXT_TO_STDERR.load(Ordering::Relaxed)
}

/// True when the command-line arguments send an export (`--json`, `--csv`, `--markdown`) to
/// standard output, written `--json -` or `--json=-`.
pub fn export_to_stdout<S: AsRef<str>>(args: &[S]) -> bool {
    const EXPORTS: [&str; 3] = ["--json", "--csv", "--markdown"];
    let end = args
        .iter()
        .position(|a| a.as_ref() == "--")
        .unwrap_or(args.len());
    args[..end].iter().enumerate().any(|(i, a)| {
        let a = a.as_ref();
        EXPORTS.iter().any(|e| {
            (a == *e && args.get(i + 1).map(|n| n.as_ref()) == Some("-"))
                || a.strip_prefix(e).and_then(|r| r.strip_prefix('=')) == Some("-")
        })
    })
}

/// Write human-readable text to standard output, or standard error when an export owns
/// standard output. A closed pipe is not an error worth a panic.
pub fn write_fmt(args: std::fmt::Arguments) {
    if text_to_stderr() {
        let _ = std::io::stderr().lock().write_fmt(args);
    } else {
        let _ = std::io::stdout().lock().write_fmt(args);
    }
}

/// `print!` for human-readable report text (see [`crate::report::sink`]).
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::report::sink::write_fmt(format_args!($($t)*)) };
}

/// `println!` for human-readable report text (see [`crate::report::sink`]).
#[macro_export]
macro_rules! outln {
    () => { $crate::report::sink::write_fmt(format_args!("\n")) };
    ($($t:tt)*) => {{
        $crate::report::sink::write_fmt(format_args!($($t)*));
        $crate::report::sink::write_fmt(format_args!("\n"));
    }};
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
