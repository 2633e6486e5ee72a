//! How the command ends: exit codes, error text and lost output.
//!
//! * Ctrl-C (or SIGTERM) ends every command with status 130, after the command has stopped,
//!   cleaned up and printed what it measured, whether or not it returned an error.
//! * Output goes through [`crate::console`], which never panics. When the reader of standard
//!   output went away (`fsbench list | head -1`), the command ends quietly with status 141,
//!   the status of a process ended by SIGPIPE. When standard output could not be written for
//!   another reason (a full disk, `> /dev/full`), it ends with status 1 and says so on
//!   standard error; when standard error itself could not be written, with status 1 and no
//!   message. Either way no command reports success after losing output.
//! * The standard library's own printing (`print!` in code that does not use the console,
//!   or a library's) panics on a failed write; the panic hook keeps that panic silent, the
//!   unwinding still runs every clean-up on the way (run directories are removed by their
//!   guards), and `main` ends with the status above.
//! * What a command meant to remove and could not (a run directory with a mount inside, a
//!   clean-up cut short by a second Ctrl-C) is recorded with [`left_behind`]; the command
//!   then ends with status 1 after saying what is left, even when it measured well.
//! * A refusal of the command line itself ([`Usage`]: options that do not go together, a
//!   value out of range, an output file that cannot be written) ends the command with
//!   status 2, as the argument parser's own usage errors do. Commands check their options
//!   before they create anything, so such a refusal leaves nothing behind.
//! * An error's causes are printed once: a message that already ends with its cause's text
//!   ("cannot read x: Permission denied") does not get it appended a second time.

use std::process::ExitCode;

/// Status after Ctrl-C, as shells report a process ended by SIGINT.
pub const INTERRUPTED: u8 = 130;
/// Status after standard output was closed by the reader.
pub const BROKEN_PIPE: u8 = 141;
/// Status of a usage error: the argument parser's, and [`Usage`]'s.
pub const USAGE: u8 = 2;

/// A command line fsbench refuses before doing anything: its message names the option and
/// says what to give instead. Returned as an error, it makes the command end with
/// [`USAGE`], so that a script can tell a wrong invocation from a run that failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// A [`Usage`] error, as an `anyhow::Error` (`return Err(usage(format!(...)))`).
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(message.into()))
}

/// Whether `e`, or one of its causes, is a [`Usage`] error.
pub fn is_usage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<Usage>())
}

fn payload_text(p: &(dyn std::any::Any + Send)) -> Option<&str> {
    p.downcast_ref::<String>()
        .map(|s| s.as_str())
        .or_else(|| p.downcast_ref::<&str>().copied())
}

/// Whether a panic payload is the standard library's "failed printing to stdout: ..." or
/// "failed printing to stderr: ...": if so, the failure is recorded in [`crate::console`].
pub fn is_output_panic(p: &(dyn std::any::Any + Send)) -> bool {
    let Some(text) = payload_text(p) else {
        return false;
    };
    if let Some(rest) = text.strip_prefix("failed printing to stdout: ") {
        crate::console::stdout_failed_with(&error_of(rest));
        true
    } else {
        let stderr = text.starts_with("failed printing to stderr");
        if stderr {
            crate::console::stderr_failed();
        }
        stderr
    }
}

/// The error a panic message ends with: "No space left on device (os error 28)".
fn error_of(text: &str) -> std::io::Error {
    text.rsplit_once("(os error ")
        .and_then(|(_, n)| n.strip_suffix(')')?.parse().ok())
        .map(std::io::Error::from_raw_os_error)
        .unwrap_or_else(|| std::io::Error::other(text.to_string()))
}

/// Keep the panics of lost output silent; every other panic is reported as before.
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !is_output_panic(info.payload()) {
            default(info);
        }
    }));
}

/// An error and its causes, each cause once.
pub fn render(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if text.is_empty() || out.ends_with(&text) || out.contains(&format!("{text}: ")) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

static LEFT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Record something the command created, meant to remove, and could not: the command will
/// end with a failure status and say so.
pub fn left_behind(what: impl Into<String>) {
    let what = what.into();
    crate::errln!("fsbench: left behind: {what}");
    LEFT.lock().unwrap_or_else(|p| p.into_inner()).push(what);
}

/// Whether anything was recorded with [`left_behind`].
pub fn anything_left() -> bool {
    !LEFT.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
}

/// The exit status of a finished command, after its error (if any) is printed and standard
/// output flushed: see the module comment.
pub fn status(r: &anyhow::Result<()>) -> ExitCode {
    crate::console::flush();
    let lost = crate::console::stdout_error();
    let broken_pipe = lost
        .as_ref()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe);
    // The reader going away is no news to anyone: nothing is said then.
    if !broken_pipe {
        let said = match r {
            Err(e) => {
                let text = render(e);
                crate::errln!("fsbench: {text}");
                text.contains("cannot write to standard output")
            }
            Ok(()) => false,
        };
        if let (Some(e), false) = (&lost, said) {
            crate::errln!("fsbench: cannot write to standard output: {e}");
        }
    }
    if crate::cancel::interrupted() {
        return ExitCode::from(INTERRUPTED);
    }
    if broken_pipe {
        return ExitCode::from(BROKEN_PIPE);
    }
    if lost.is_some() || crate::console::stderr_lost() {
        return ExitCode::FAILURE;
    }
    if let Err(e) = r {
        return ExitCode::from(if is_usage(e) { USAGE } else { 1 });
    }
    if anything_left() {
        crate::errln!("fsbench: not everything fsbench created could be removed (see above)");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_not_repeated() {
        let io = std::io::Error::from_raw_os_error(13);
        #[derive(Debug, thiserror::Error)]
        #[error("cannot read x: {source}")]
        struct E {
            source: std::io::Error,
        }
        let e = anyhow::Error::new(E { source: io });
        let t = render(&e);
        assert_eq!(t.matches("Permission denied").count(), 1, "{t}");
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(render(&e), "outer: inner");
    }

    #[test]
    fn a_usage_error_is_found_under_context() {
        assert!(is_usage(&usage("--x: bad")));
        assert!(is_usage(&usage("--x: bad").context("while starting")));
        assert!(!is_usage(&anyhow::anyhow!("--x: bad")));
        assert_eq!(render(&usage("--x: bad")), "--x: bad");
    }

    #[test]
    fn error_of_a_panic_message() {
        let e = error_of("Broken pipe (os error 32)");
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        assert_eq!(
            error_of("No space left on device (os error 28)").raw_os_error(),
            Some(28)
        );
        let p: Box<dyn std::any::Any + Send> = Box::new("boom");
        assert!(!is_output_panic(p.as_ref()));
    }
}
