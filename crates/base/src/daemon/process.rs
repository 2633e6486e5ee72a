//! A daemon's process: starting it detached, telling whether a recorded pid is still that
//! daemon, and stopping it.
//!
//! A pid file outlives its process (a crash, a `kill -9`), and the kernel hands its number
//! to the next process that needs one. So a pid read from a state directory counts as the
//! daemon's only while that process runs `fsbench KIND serve NAME`; nothing else is ever
//! signalled.

use std::fs::{self, File};
use std::io;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::DaemonDir;

/// True if `pid` names a live (non-zombie) process.
pub fn pid_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => match s.rfind(')') {
            Some(i) => !matches!(s[i + 1..].trim_start().chars().next(), Some('Z' | 'X')),
            None => true,
        },
        Err(_) => false,
    }
}

/// Whether `args` (a command line, the program first) runs `KIND serve NAME`.
fn runs_server(args: &[&[u8]], kind: &str, name: &str) -> bool {
    let want: [&[u8]; 3] = [kind.as_bytes(), b"serve", name.as_bytes()];
    args.get(1..)
        .is_some_and(|rest| rest.windows(3).any(|w| w == want))
}

/// True if `pid` is alive and is the server `fsbench KIND serve NAME`.
pub fn is_server(pid: i32, kind: &str, name: &str) -> bool {
    if !pid_alive(pid) {
        return false;
    }
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    runs_server(&args, kind, name)
}

/// Wait up to `timeout` for process `pid` to be gone; whether it went.
pub fn wait_gone(pid: i32, timeout: Duration) -> bool {
    wait_until(timeout, Duration::from_millis(20), || !pid_alive(pid))
}

/// Send `sig` to `pid`, which the caller has just found to be its daemon; false when it could
/// not be sent (gone, or not ours to signal).
pub fn signal(pid: i32, sig: i32) -> bool {
    // SAFETY: kill has no memory-safety preconditions; the pid was checked by the caller.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// Poll `done` every `every` until it holds (true) or `within` has passed (false).
pub fn wait_until(within: Duration, every: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if done() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        thread::sleep(every);
    }
}

/// A request signalled to a daemon, which answers in its state directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// `answered` held within the time given.
    Answered,
    /// The daemon did not answer in time, or went away.
    Unanswered,
    /// The signal could not be sent (gone, or not ours to signal).
    NotSent,
}

/// Signal `sig` to the daemon `pid` (found to be the caller's daemon) and wait, every 2 ms,
/// until `answered` holds: the one way a remote's control request and a disk's statistics
/// are asked for (SIGUSR1).
pub fn ask(pid: i32, sig: i32, within: Duration, mut answered: impl FnMut() -> bool) -> Asked {
    if !signal(pid, sig) {
        return Asked::NotSent;
    }
    wait_until(within, Duration::from_millis(2), || {
        answered() || !pid_alive(pid)
    });
    if answered() {
        Asked::Answered
    } else {
        Asked::Unanswered
    }
}

/// Stop the server of `d`: SIGTERM, up to `grace` for it to finish its shutdown, then
/// SIGKILL (if it is still that server). The pid stopped, or None when none was running.
pub fn stop(d: &DaemonDir, grace: Duration) -> Option<i32> {
    let pid = d.live_pid()?;
    signal(pid, libc::SIGTERM);
    if !wait_gone(pid, grace) {
        crate::errln!("server {pid} did not stop; killing it");
        if d.live_pid() == Some(pid) {
            signal(pid, libc::SIGKILL);
        }
        wait_gone(pid, Duration::from_secs(5));
    }
    Some(pid)
}

/// Start `fsbench SUBCOMMAND serve NAME` (NAME: the state directory's name) in its own
/// session with its output in `log`, and wait up to 20 s until it writes `ready`. The
/// daemon runs on after the caller exits.
pub fn start(subcommand: &str, dir: &Path, ready: &Path, log: &Path) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().context("locating the fsbench binary")?;
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .context("state dir name")?
        .to_string();
    let out = File::create(log)?;
    let mut cmd = Command::new(exe);
    cmd.args([subcommand, "serve", &name])
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    // SAFETY: the closure only calls setsid, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(pre_exec);
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting the {subcommand} server"))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if ready.exists() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let text = crate::input::read_tail(log, crate::input::LOG_TAIL);
            bail!("{subcommand} server exited ({status}):\n{}", text.trim());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let text = crate::input::read_tail(log, crate::input::LOG_TAIL);
            bail!(
                "{subcommand} server did not come up within 20 s:\n{}",
                text.trim()
            );
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Detach the daemon from the caller: a new session. Called between fork and exec.
pub fn pre_exec() -> io::Result<()> {
    // SAFETY: setsid is async-signal-safe.
    if unsafe { libc::setsid() } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{ask, is_server, runs_server, Asked};
    use std::time::Duration;

    #[test]
    fn a_pid_counts_only_while_it_runs_that_server() {
        let args: [&[u8]; 4] = [b"/usr/bin/fsbench", b"disk", b"serve", b"hdd0"];
        assert!(runs_server(&args, "disk", "hdd0"));
        assert!(!runs_server(&args, "remote", "hdd0"));
        assert!(!runs_server(&args, "disk", "hdd1"));
        // The program's own name does not count, nor a shorter command line.
        let args: [&[u8]; 3] = [b"disk", b"serve", b"hdd0"];
        assert!(!runs_server(&args, "disk", "hdd0"));
        // This test process is alive, but no server.
        assert!(!is_server(std::process::id() as i32, "disk", "hdd0"));
        assert!(!is_server(0, "disk", "hdd0"));
    }

    /// A request is answered once its answer shows, unanswered when it does not in time,
    /// and not sent to a process that does not exist (signal 0: nothing is delivered).
    #[test]
    fn ask_waits_for_the_answer_or_says_why_not() {
        let me = std::process::id() as i32;
        let mut polls = 0;
        let answered = ask(me, 0, Duration::from_secs(5), || {
            polls += 1;
            polls > 3
        });
        assert_eq!(answered, Asked::Answered);
        assert_eq!(
            ask(me, 0, Duration::from_millis(20), || false),
            Asked::Unanswered
        );
        assert_eq!(
            ask(i32::MAX, 0, Duration::from_secs(5), || true),
            Asked::NotSent
        );
    }
}
