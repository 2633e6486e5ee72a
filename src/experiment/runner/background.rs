//! Background loads beside a measurement (`[[background]]`): started before the measured
//! child, at their `nice` and `ionice`, in the target's directory; stopped after it (SIGINT
//! to the load's process group, SIGKILL 15 s later) or waited for to their end. Each load's
//! elapsed, user and system time (from `wait4`, its waited-for children included), the
//! priority the kernel holds for it (read back from /proc/PID/stat and `ioprio_get`) and its
//! JSON, when it is an fsbench child, are stored beside the run (`backgrounds` table).
//!
//! An fsbench child says when its measured window starts (after its preparation: a
//! PostMark pool, a build's tree) by creating the file named in `FSBENCH_READY_FILE`; the
//! measurement starts then, so what runs beside it is the load itself.

use super::{Cell, Plan};
use crate::experiment::plan::{Background, BgKind, BgStop, IoPrio, Kind};
use crate::experiment::store::BgRecord;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One started background.
struct Running {
    bg: Background,
    pid: i32,
    t0: Instant,
    started_at: String,
    argv: Vec<String>,
    json: Option<PathBuf>,
    applied: Value,
    exit: Option<(i32, libc::rusage)>,
}

/// The backgrounds of one run; dropping it kills and reaps any still running.
#[derive(Default)]
pub struct Backgrounds {
    running: Vec<Running>,
}

/// The backgrounds a cell's factor levels name, in the cell's factor order.
pub fn of_cell(plan: &Plan, cell: &Cell) -> Vec<Background> {
    cell.factors
        .iter()
        .filter_map(|(k, v)| plan.background(k, v).cloned())
        .collect()
}

/// A background's command line (program first), in the target directory `dir`.
pub fn argv(bg: &Background, dir: &Path, json_out: &Path, scratch: &Path) -> Result<Vec<String>> {
    Ok(match &bg.kind {
        BgKind::Command(c) => c
            .iter()
            .map(|a| a.replace("{target}", &dir.display().to_string()))
            .collect(),
        BgKind::Measure(m) => {
            let mut v = vec![crate::experiment::self_exe()?.display().to_string()];
            v.extend(super::kind_args(m, &m.params, dir, json_out, scratch));
            v
        }
    })
}

/// The priorities as `nice`/`ionice` would print them, for a dry run and the store.
pub fn priority_text(bg: &Background) -> String {
    format!(
        "nice {} ionice {}",
        bg.nice.map_or("(inherited)".into(), |n| n.to_string()),
        bg.ionice
            .map_or("(inherited)".into(), |p| IoPrio::text(p.raw()))
    )
}

/// Start the cell's backgrounds in `dir`, each waited for until its measured window starts
/// (fsbench children that mark it), it ends, or `limit` seconds pass.
pub fn start(
    plan: &Plan,
    cell: &Cell,
    dir: &Path,
    outdir: &Path,
    tag: &str,
) -> Result<Backgrounds> {
    let mut out = Backgrounds::default();
    for bg in of_cell(plan, cell) {
        let base = outdir.join("runs").join(format!("{tag}-bg-{}", bg.name));
        let json_out = base.with_extension("json");
        let ready = base.with_extension("ready");
        let log = base.with_extension("log");
        let _ = std::fs::remove_file(&json_out);
        let _ = std::fs::remove_file(&ready);
        let argv = argv(&bg, dir, &json_out, &outdir.join("scratch"))?;
        let logf =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(logf.try_clone()?)
            .stderr(logf)
            .process_group(0)
            .env(crate::sys::mark::READY_ENV, &ready);
        let (nice, ioprio) = (bg.nice, bg.ionice.map(IoPrio::raw));
        // SAFETY: only async-signal-safe system calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || set_priority(nice, ioprio));
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("background {}: starting {}", bg.name, argv[0]))?;
        let pid = child.id() as i32;
        // Reaped with wait4 below (for its resource usage), never through `child`.
        drop(child);
        let applied = json!({"pid": pid, "nice": read_nice(pid), "ionice": read_ioprio(pid).map(IoPrio::text)});
        let marks =
            matches!(&bg.kind, BgKind::Measure(m) if !matches!(m.kind, Kind::Scan | Kind::Layout));
        let mut r = Running {
            json: matches!(bg.kind, BgKind::Measure(_)).then_some(json_out),
            bg,
            pid,
            t0: Instant::now(),
            started_at: crate::experiment::store::now(),
            argv,
            applied,
            exit: None,
        };
        if marks {
            r.wait_ready(&ready, plan.time_limit_s);
        }
        let _ = std::fs::remove_file(&ready);
        out.running.push(r);
    }
    Ok(out)
}

/// `setpriority` and `ioprio_set` on the calling (new) process.
fn set_priority(nice: Option<i32>, ioprio: Option<u32>) -> std::io::Result<()> {
    // SAFETY: plain system calls on the calling process.
    unsafe {
        if let Some(n) = nice {
            if libc::setpriority(libc::PRIO_PROCESS, 0, n) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        if let Some(p) = ioprio {
            const IOPRIO_WHO_PROCESS: libc::c_int = 1;
            if libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, p) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// The nice value the kernel holds for `pid` (field 19 of /proc/PID/stat).
pub fn read_nice(pid: i32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    rest.split(' ').nth(16)?.parse().ok()
}

/// The I/O priority the kernel holds for `pid` (`ioprio_get`).
pub fn read_ioprio(pid: i32) -> Option<u32> {
    const IOPRIO_WHO_PROCESS: libc::c_int = 1;
    // SAFETY: a query by pid.
    let r = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, pid) };
    (r >= 0).then_some(r as u32)
}

impl Running {
    /// Reap it if it has exited (`block`: wait until it does).
    fn poll(&mut self, block: bool) -> bool {
        if self.exit.is_some() {
            return true;
        }
        let mut status = 0;
        // SAFETY: ru is written by the kernel; pid is our own child.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if block { 0 } else { libc::WNOHANG };
        let r = unsafe { libc::wait4(self.pid, &mut status, flags, &mut ru) };
        if r == self.pid {
            self.exit = Some((status, ru));
        }
        self.exit.is_some() || r < 0
    }

    fn wait_ready(&mut self, ready: &Path, limit: f64) {
        while !ready.exists() && !self.poll(false) && self.t0.elapsed().as_secs_f64() < limit {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGINT to its process group, then SIGKILL after 15 s; reaped.
    fn interrupt(&mut self) {
        // SAFETY: signalling the process group we made for our own child.
        unsafe { libc::kill(-self.pid, libc::SIGINT) };
        let at = Instant::now();
        while !self.poll(false) {
            if at.elapsed() > Duration::from_secs(15) {
                unsafe { libc::kill(-self.pid, libc::SIGKILL) };
                self.poll(true);
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn finish(mut self, limit: f64) -> BgRecord {
        let status = if self.poll(false) {
            let code = self.exit.map(|(s, _)| s);
            if code.is_some_and(|s| libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0) {
                "ended"
            } else {
                "failed"
            }
        } else if self.bg.stop == BgStop::After {
            self.interrupt();
            "stopped"
        } else {
            while !self.poll(false) && self.t0.elapsed().as_secs_f64() < limit {
                std::thread::sleep(Duration::from_millis(50));
            }
            if self.exit.is_some() {
                let ok = self
                    .exit
                    .is_some_and(|(s, _)| libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0);
                if ok {
                    "ended"
                } else {
                    "failed"
                }
            } else {
                self.interrupt();
                "timeout"
            }
        };
        let elapsed_s = self.t0.elapsed().as_secs_f64();
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        let (user_s, system_s) = self
            .exit
            .map_or((0.0, 0.0), |(_, ru)| (secs(ru.ru_utime), secs(ru.ru_stime)));
        let exit_code = self
            .exit
            .and_then(|(s, _)| libc::WIFEXITED(s).then(|| libc::WEXITSTATUS(s)));
        let results = self
            .json
            .as_ref()
            .and_then(|j| std::fs::read_to_string(j).ok())
            .and_then(|t| serde_json::from_str(&t).ok());
        BgRecord {
            name: self.bg.name.clone(),
            factor: self.bg.factor.clone(),
            kind: self.bg.kind_name().into(),
            command: self.argv.clone(),
            nice: self.bg.nice,
            ionice: self.bg.ionice.map(|p| IoPrio::text(p.raw())),
            applied: self.applied.clone(),
            status: status.into(),
            exit_code,
            started_at: self.started_at.clone(),
            elapsed_s,
            user_s,
            system_s,
            results,
        }
    }
}

impl Backgrounds {
    /// Stop (or wait for) every background, and what each did.
    pub fn stop(mut self, limit: f64) -> Vec<BgRecord> {
        std::mem::take(&mut self.running)
            .into_iter()
            .map(|r| r.finish(limit))
            .collect()
    }

    /// The names of the backgrounds running, for the run's `applied` record.
    pub fn names(&self) -> Vec<String> {
        self.running.iter().map(|r| r.bg.name.clone()).collect()
    }
}

impl Drop for Backgrounds {
    fn drop(&mut self) {
        for r in &mut self.running {
            if !r.poll(false) {
                // SAFETY: our own child's process group.
                unsafe { libc::kill(-r.pid, libc::SIGKILL) };
                r.poll(true);
            }
        }
    }
}
