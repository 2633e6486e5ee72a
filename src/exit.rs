//! How the command ends: exit codes, error text and closed pipes.
//!
//! * Ctrl-C (or SIGTERM) ends every command with status 130, after the command has stopped,
//!   cleaned up and printed what it measured, whether or not it returned an error.
//! * A closed standard output (`fsbench list | head -1`) ends the command quietly: the
//!   standard library panics on a failed `print!`, which would print a message and exit 101.
//!   The panic hook keeps that panic silent, the unwinding still runs every clean-up on the
//!   way (run directories are removed by their guards), and `main` turns it into status 141,
//!   the status of a process ended by SIGPIPE.
//! * What a command meant to remove and could not (a run directory with a mount inside, a
//!   clean-up cut short by a second Ctrl-C) is recorded with [`left_behind`]; the command
//!   then ends with status 1 after saying what is left, even when it measured well.
//! * An error's causes are printed once: a message that already ends with its cause's text
//!   ("cannot read x: Permission denied") does not get it appended a second time.

use std::process::ExitCode;

/// Status after Ctrl-C, as shells report a process ended by SIGINT.
pub const INTERRUPTED: u8 = 130;
/// Status after standard output was closed by the reader.
pub const BROKEN_PIPE: u8 = 141;

fn payload_text(p: &(dyn std::any::Any + Send)) -> Option<&str> {
    p.downcast_ref::<String>()
        .map(|s| s.as_str())
        .or_else(|| p.downcast_ref::<&str>().copied())
}

/// Whether a panic payload is the standard library's "failed printing to stdout: Broken pipe".
pub fn is_broken_pipe(p: &(dyn std::any::Any + Send)) -> bool {
    payload_text(p)
        .is_some_and(|s| s.starts_with("failed printing to") && s.contains("Broken pipe"))
}

/// Keep broken-pipe panics silent; every other panic is reported as before.
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !is_broken_pipe(info.payload()) {
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
    eprintln!("fsbench: left behind: {what}");
    LEFT.lock().unwrap_or_else(|p| p.into_inner()).push(what);
}

/// Whether anything was recorded with [`left_behind`].
pub fn anything_left() -> bool {
    !LEFT.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
}

/// The exit status of a finished command.
pub fn status(r: &anyhow::Result<()>) -> ExitCode {
    if let Err(e) = r {
        eprintln!("fsbench: {}", render(e));
    }
    if crate::cancel::interrupted() {
        return ExitCode::from(INTERRUPTED);
    }
    match r {
        Ok(()) if !anything_left() => ExitCode::SUCCESS,
        Ok(()) => {
            eprintln!("fsbench: not everything fsbench created could be removed (see above)");
            ExitCode::FAILURE
        }
        Err(_) => ExitCode::FAILURE,
    }
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
    fn broken_pipe_payload() {
        let p: Box<dyn std::any::Any + Send> =
            Box::new("failed printing to stdout: Broken pipe (os error 32)".to_string());
        assert!(is_broken_pipe(p.as_ref()));
        let p: Box<dyn std::any::Any + Send> = Box::new("boom");
        assert!(!is_broken_pipe(p.as_ref()));
    }
}
