//! The remount hand-off, experiment side (the child's side is `fsbench_base::remount`): two pipes
//! whose child ends the measurement inherits, and a thread that remounts the target each
//! time the child asks and answers `ok WHAT` or `error WHY`.

use super::target::{self, MountSpec};
use anyhow::{Context, Result};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::{Arc, Mutex};

pub struct Handoff {
    set: Vec<MountSpec>,
    /// Ends the child inherits: it reads requests' answers from `child_r`, writes on `child_w`.
    child_r: OwnedFd,
    child_w: OwnedFd,
    parent_r: OwnedFd,
    parent_w: OwnedFd,
    /// What each remount did (or why it failed), in order.
    pub log: Arc<Mutex<Vec<String>>>,
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error()).context("creating the remount pipe");
    }
    // SAFETY: both descriptors were just created and are owned here alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Handoff {
    pub fn new(set: Vec<MountSpec>) -> Result<Handoff> {
        let (child_r, parent_w) = pipe()?;
        let (parent_r, child_w) = pipe()?;
        Ok(Handoff {
            set,
            child_r,
            child_w,
            parent_r,
            parent_w,
            log: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// Give the child its ends (named in its environment; close-on-exec cleared in the
    /// child only, so no other process inherits them).
    pub fn attach(&self, cmd: &mut Command) {
        let (r, w) = (self.child_r.as_raw_fd(), self.child_w.as_raw_fd());
        cmd.env(fsbench_base::remount::ENV, format!("{r},{w}"));
        // SAFETY: fcntl is async-signal-safe; the closure touches nothing else.
        unsafe {
            cmd.pre_exec(move || {
                for fd in [r, w] {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }

    /// After the child has started: close its ends here and serve its requests. The thread
    /// ends when the child closes its end (it exits).
    pub fn serve(self) -> Arc<Mutex<Vec<String>>> {
        let Handoff {
            set,
            child_r,
            child_w,
            parent_r,
            parent_w,
            log,
        } = self;
        drop((child_r, child_w));
        let out = log.clone();
        std::thread::spawn(move || {
            let mut r = BufReader::new(File::from(parent_r));
            let mut w = File::from(parent_w);
            let mut line = String::new();
            loop {
                line.clear();
                match r.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let answer = if line.trim() == "remount" {
                    match target::remount(&set) {
                        Ok(what) => {
                            log.lock().unwrap().push(what.clone());
                            format!("ok {what}")
                        }
                        Err(e) => {
                            let why = format!("{e:#}").replace('\n', " ");
                            log.lock().unwrap().push(format!("failed: {why}"));
                            format!("error {why}")
                        }
                    }
                } else {
                    format!("error unknown request {:?}", line.trim())
                };
                if w.write_all(answer.as_bytes())
                    .and_then(|_| w.write_all(b"\n"))
                    .is_err()
                {
                    return;
                }
            }
        });
        out
    }
}
