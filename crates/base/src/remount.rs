//! The remount hand-off, child side.
//!
//! An experiment measuring with `cache = "remount"` runs each measurement as a child
//! `fsbench` and remounts the target's file system at the point where a cold run drops the
//! caches: after the layout (or an application benchmark's preparation), before the
//! measurement. Only the experiment knows how its targets are mounted, and a file system
//! cannot be unmounted while anything holds it open, so the two work together: the child
//! closes every descriptor it holds on the file system, writes `remount` on a pipe the
//! experiment gave it (named in [`ENV`]), waits for `ok DESCRIPTION` or `error MESSAGE`,
//! and opens what it needs again.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::FromRawFd;
use std::sync::Mutex;

/// `READ_FD,WRITE_FD`: the child's ends of the two pipes.
pub const ENV: &str = "FSBENCH_REMOUNT_FDS";

struct Handshake {
    r: BufReader<File>,
    w: File,
}

static HANDSHAKE: Mutex<Option<Result<Handshake, String>>> = Mutex::new(None);
static TAKEN: std::sync::Once = std::sync::Once::new();

fn valid_fd(fd: i32) -> bool {
    // SAFETY: F_GETFD only inspects the descriptor table.
    fd > 2 && unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0
}

/// Adopt the descriptors named in the environment (once per process), marking them
/// close-on-exec so that nothing this process starts inherits them.
fn adopt() {
    TAKEN.call_once(|| {
        let Ok(v) = std::env::var(ENV) else { return };
        let parsed = v
            .split_once(',')
            .and_then(|(a, b)| Some((a.parse::<i32>().ok()?, b.parse::<i32>().ok()?)));
        let h = match parsed {
            Some((r, w)) if r != w && valid_fd(r) && valid_fd(w) => {
                for fd in [r, w] {
                    // SAFETY: setting a flag on a descriptor checked above.
                    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
                }
                // SAFETY: the experiment handed these descriptors to this process alone;
                // they are adopted once (Once above).
                Ok(Handshake {
                    r: BufReader::new(unsafe { File::from_raw_fd(r) }),
                    w: unsafe { File::from_raw_fd(w) },
                })
            }
            _ => Err(format!(
                "{ENV}={v}: expected two open descriptors READ,WRITE (set by `fsbench experiment`)"
            )),
        };
        *HANDSHAKE.lock().unwrap() = Some(h);
    });
}

/// Whether this process was asked to have its file system remounted before measuring.
pub fn requested() -> bool {
    adopt();
    HANDSHAKE.lock().unwrap().is_some()
}

/// Ask the experiment to remount the file system and wait until it has. The caller must
/// have closed every descriptor it holds on that file system. Returns what was done, for
/// the results' notes.
pub fn remount() -> Result<String, String> {
    adopt();
    let mut g = HANDSHAKE.lock().unwrap();
    let h = match g.as_mut() {
        None => return Err("no remount was requested".into()),
        Some(Err(e)) => return Err(e.clone()),
        Some(Ok(h)) => h,
    };
    h.w.write_all(b"remount\n")
        .and_then(|_| h.w.flush())
        .map_err(|e| format!("asking the experiment to remount: {e}"))?;
    let mut line = String::new();
    match h.r.read_line(&mut line) {
        Ok(0) => Err("the experiment closed the remount hand-off without answering".into()),
        Err(e) => Err(format!("waiting for the remount: {e}")),
        Ok(_) => {
            let line = line.trim_end();
            match line.split_once(' ') {
                Some(("ok", what)) => Ok(what.to_string()),
                Some(("error", why)) => Err(format!("remounting the file system: {why}")),
                _ => Err(format!("unexpected answer to a remount request: {line:?}")),
            }
        }
    }
}
