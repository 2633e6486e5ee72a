//! What this process created and must undo before it ends, on every way out.
//!
//! A command that makes scratch directories, images, mounts, loop devices or child processes
//! holds each in a guard from this module (or in a type whose `Drop` undoes it, as a run
//! directory's owner or a mounted image does). The guards are the one place the undoing
//! happens, whichever way the command ends:
//!
//! * it finishes: the guards go out of scope and undo what they hold, newest first;
//! * it fails: the error unwinds through the same guards;
//! * a signal arrives ([`crate::cancel`]): its long loops see [`crate::cancel::check`] fail
//!   and return [`crate::cancel::Interrupted`], which unwinds through the guards too, while
//!   the signal itself is passed on to the children started here ([`output`]), so a child
//!   stops as its parent does instead of holding the parent (and its mount) up; a second
//!   signal cuts long removals short and the guards say what they left; a third ends the
//!   process, and its children with it (their process groups are killed, and each has the
//!   parent-death signal).
//!
//! What a guard could not undo is recorded with [`crate::exit::left_behind`], so the command
//! says so and ends with a failure status.

use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output};

type UndoFn = Box<dyn FnOnce() -> Result<(), String> + Send>;

/// Something created, undone when the guard is dropped unless [`Guard::keep`] said it is
/// the command's result.
#[must_use = "dropping the guard undoes at once what it holds"]
pub struct Guard {
    what: String,
    undo: Option<UndoFn>,
}

impl Guard {
    /// Hold `what` (said in messages), undone by `undo`.
    pub fn new(
        what: impl Into<String>,
        undo: impl FnOnce() -> Result<(), String> + Send + 'static,
    ) -> Guard {
        Guard {
            what: what.into(),
            undo: Some(Box::new(undo)),
        }
    }

    /// The object is the command's result: it stays.
    pub fn keep(mut self) {
        self.undo = None;
    }

    /// Undo now; what could not be undone, as an error.
    pub fn undo(mut self) -> Result<(), String> {
        match self.undo.take() {
            Some(f) => f().map_err(|e| format!("{}: {e}", self.what)),
            None => Ok(()),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(f) = self.undo.take() {
            if let Err(e) = f() {
                crate::exit::left_behind(format!("{}: {e}", self.what));
            }
        }
    }
}

/// A value that holds something created (a run directory), undone by `undo` when dropped
/// unless [`Owned::keep`] takes it out as the command's result.
pub struct Owned<T> {
    value: Option<T>,
    what: &'static str,
    undo: fn(&T) -> Result<(), String>,
}

impl<T> Owned<T> {
    pub fn new(value: T, what: &'static str, undo: fn(&T) -> Result<(), String>) -> Owned<T> {
        Owned {
            value: Some(value),
            what,
            undo,
        }
    }

    /// The command finished: the value is its result and stays.
    pub fn keep(mut self) -> T {
        self.value.take().expect("held until kept or dropped")
    }
}

impl<T> std::ops::Deref for Owned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value.as_ref().expect("held until kept or dropped")
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        if let Some(v) = self.value.take() {
            if let Err(e) = (self.undo)(&v) {
                crate::exit::left_behind(format!("{}: {e}", self.what));
            }
        }
    }
}

/// An output file being written under a temporary name beside its destination: moved into
/// place by [`Pending::finish`], removed if the command ends before (an error, a signal), so
/// that a half-written file never replaces a whole one nor is taken for one.
pub struct Pending {
    tmp: PathBuf,
    dest: PathBuf,
    guard: Guard,
}

impl Pending {
    /// Move the finished file into place.
    pub fn finish(self) -> io::Result<()> {
        crate::owned::path::rename(&self.tmp, &self.dest)?;
        self.guard.keep();
        Ok(())
    }
}

/// Create the output file `dest`: under a temporary name beside it, with the [`Pending`]
/// that moves it into place, when `dest` is (or will be) a regular file; `dest` itself when
/// it exists as something else (`/dev/null`, a FIFO), which is never replaced.
pub fn output_file(dest: &Path) -> io::Result<(File, Option<Pending>)> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::metadata(dest) {
        Ok(md) if !md.is_file() => return Ok((File::create(dest)?, None)),
        _ => {}
    }
    let name = dest.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "an output needs a file name")
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".partial-{}", std::process::id()));
    let tmp = dest.with_file_name(tmp_name);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    let id = crate::daemon::owned::FileId::of(&f.metadata()?);
    let t = tmp.clone();
    let guard = Guard::new(format!("partial output {}", tmp.display()), move || {
        // Only the file created here: not one put in its place since.
        match std::fs::symlink_metadata(&t) {
            Ok(m) if crate::daemon::owned::FileId::of(&m) == id => {
                crate::owned::path::remove_file(&t)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
            _ => Ok(()),
        }
    });
    Ok((
        f,
        Some(Pending {
            tmp,
            dest: dest.to_path_buf(),
            guard,
        }),
    ))
}

/// Make `cmd`'s process a child this process owns: its own process group (a Ctrl-C at the
/// terminal reaches it once, passed on by the parent, not twice), and the parent-death signal
/// SIGTERM, so that it stops if this process is killed outright.
pub fn own(cmd: &mut Command) {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    cmd.process_group(0);
    // SAFETY: between fork and exec only async-signal-safe calls (prctl, getppid).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGTERM as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The parent died before the prctl: the signal would never come.
            if libc::getppid() != parent {
                return Err(io::Error::other("the parent process ended"));
            }
            Ok(())
        });
    }
}

/// Run `cmd` to its end as an owned child ([`own`]) that gets every signal this process gets
/// passed on: its standard output and error captured, as [`Command::output`] does.
pub fn output(cmd: &mut Command) -> io::Result<Output> {
    own(cmd);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn()?;
    let _slot = crate::cancel::forward_to(child.id() as i32);
    child.wait_with_output()
}

/// [`output`] with the child's standard output and error left as `cmd` says.
pub fn status(cmd: &mut Command) -> io::Result<ExitStatus> {
    own(cmd);
    let mut child = cmd.spawn()?;
    let _slot = crate::cancel::forward_to(child.id() as i32);
    child.wait()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    #[test]
    fn guards_undo_unless_kept() {
        let n = Arc::new(AtomicU32::new(0));
        let count = |n: &Arc<AtomicU32>| {
            let n = n.clone();
            move || {
                n.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        };
        drop(Guard::new("a", count(&n)));
        Guard::new("b", count(&n)).keep();
        Guard::new("c", count(&n)).undo().unwrap();
        assert_eq!(n.load(Ordering::SeqCst), 2);
        let e = Guard::new("d", || Err("busy".into())).undo().unwrap_err();
        assert_eq!(e, "d: busy");
    }

    #[test]
    fn an_owned_child_runs_in_its_own_group() {
        let o = output(Command::new("sh").args(["-c", "cut -d' ' -f5 /proc/$$/stat; echo $$"]))
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        let v: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(v.len(), 2, "{text}");
        assert_eq!(v[0], v[1], "not a group leader: {text}");
    }
}
