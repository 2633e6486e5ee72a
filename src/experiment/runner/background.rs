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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The backgrounds of one run; dropping it kills any still running and joins their
/// supervisors.
#[derive(Default)]
pub struct Backgrounds {
    running: Vec<Running>,
}

/// What a background's supervisor shares with the runner.
#[derive(Default)]
struct Shared {
    /// The process (group) running now.
    pid: i32,
    /// The runner asked it to stop: no restart, the running pass interrupted.
    stopping: bool,
    passes: u32,
    user_s: f64,
    system_s: f64,
    /// The wait status of the last pass that ended.
    last: Option<i32>,
}

/// How to start one pass of a background.
#[derive(Clone)]
struct Spawn {
    argv: Vec<String>,
    dir: PathBuf,
    log: PathBuf,
    ready: PathBuf,
    /// With `start = "with"`: the file its window waits for.
    go: Option<PathBuf>,
    nice: Option<i32>,
    ioprio: Option<u32>,
    /// The run's cgroup, which the pass joins (killed with all it forked when the run ends).
    cgroup: Option<PathBuf>,
}

impl Spawn {
    /// Start a pass (its own process group, output appended to the log); its pid.
    fn start(&self) -> std::io::Result<i32> {
        let logf = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut cmd = Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..])
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(logf.try_clone()?)
            .stderr(logf)
            .env(fsbench_base::sys::mark::READY_ENV, &self.ready);
        if let Some(go) = &self.go {
            cmd.env(fsbench_base::sys::mark::GO_ENV, go);
        }
        // Its own process group, and the parent-death signal: it stops if the runner dies.
        fsbench_base::created::own(&mut cmd);
        if let Some(cg) = &self.cgroup {
            super::cgroup::attach(cg, &mut cmd).map_err(std::io::Error::other)?;
        }
        let (nice, ioprio) = (self.nice, self.ioprio);
        // SAFETY: only async-signal-safe system calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || set_priority(nice, ioprio));
        }
        // Reaped with wait4 by the supervisor (for its resource usage), never through `Child`.
        Ok(cmd.spawn()?.id() as i32)
    }
}

/// One started background: its supervisor thread reaps each pass (and starts the next with
/// `restart`) until it is asked to stop.
struct Running {
    bg: Background,
    t0: Instant,
    started_at: String,
    argv: Vec<String>,
    json: Option<PathBuf>,
    /// The file its passes say they have started in (removed when it is stopped).
    ready: PathBuf,
    /// The file its window waits for (`start = "with"`; removed when it is stopped).
    go: Option<PathBuf>,
    applied: Value,
    shared: Arc<Mutex<Shared>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Wait for `pid` (blocking); its status and resource usage.
fn reap(pid: i32) -> Option<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: ru is written by the kernel; pid is our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            return Some((status, ru));
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

fn exited_ok(status: i32) -> bool {
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

/// The supervisor: reap each pass, account for it, start the next while `restart` asks and
/// nobody asked to stop (a pass that fails ends it: no busy loop of failures).
fn supervise(shared: Arc<Mutex<Shared>>, spawn: Spawn, restart: bool, t0: Instant, limit: f64) {
    loop {
        let pid = shared.lock().unwrap().pid;
        let Some((status, ru)) = reap(pid) else {
            return;
        };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        let mut s = shared.lock().unwrap();
        s.passes += 1;
        s.user_s += secs(ru.ru_utime);
        s.system_s += secs(ru.ru_stime);
        s.last = Some(status);
        if !restart || s.stopping || !exited_ok(status) || t0.elapsed().as_secs_f64() > limit {
            return;
        }
        match spawn.start() {
            Ok(pid) => s.pid = pid,
            Err(_) => return,
        }
    }
}

impl Backgrounds {
    /// The files the loads that start with the measurement wait for (`start = "with"`):
    /// made when the measurement's window starts.
    pub fn go_files(&self) -> Vec<PathBuf> {
        self.running.iter().filter_map(|r| r.go.clone()).collect()
    }
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
/// (fsbench children that mark it), it ends, or the plan's time limit passes.
pub fn start(
    plan: &Plan,
    cell: &Cell,
    dir: &Path,
    outdir: &Path,
    tag: &str,
    group: &super::cgroup::RunGroup,
) -> Result<Backgrounds> {
    let mut out = Backgrounds::default();
    for bg in of_cell(plan, cell) {
        let base = outdir.join("runs").join(format!("{tag}-bg-{}", bg.name));
        let json_out = base.with_extension("json");
        let spawn = Spawn {
            argv: argv(&bg, dir, &json_out, &outdir.join("scratch"))?,
            dir: dir.to_path_buf(),
            log: base.with_extension("log"),
            ready: base.with_extension("ready"),
            go: bg.with_measurement.then(|| base.with_extension("go")),
            nice: bg.nice,
            ioprio: bg.ionice.map(IoPrio::raw),
            cgroup: group.background_dir(),
        };
        for f in [&json_out, &spawn.ready, &spawn.log]
            .into_iter()
            .chain(spawn.go.as_ref())
        {
            let _ = fsbench_base::owned::path::remove_file(f);
        }
        let pid = spawn
            .start()
            .with_context(|| format!("background {}: starting {}", bg.name, spawn.argv[0]))?;
        let applied = json!({"pid": pid, "nice": read_nice(pid), "ionice": read_ioprio(pid).map(IoPrio::text)});
        let shared = Arc::new(Mutex::new(Shared {
            pid,
            ..Default::default()
        }));
        let t0 = Instant::now();
        let thread = {
            let (shared, spawn) = (shared.clone(), spawn.clone());
            let (restart, limit) = (bg.restart, plan.time_limit_s);
            std::thread::spawn(move || supervise(shared, spawn, restart, t0, limit))
        };
        let marks =
            matches!(&bg.kind, BgKind::Measure(m) if !matches!(m.kind, Kind::Scan | Kind::Layout));
        let r = Running {
            json: matches!(bg.kind, BgKind::Measure(_)).then_some(json_out),
            bg,
            t0,
            started_at: crate::experiment::store::now(),
            argv: spawn.argv.clone(),
            ready: spawn.ready.clone(),
            go: spawn.go.clone(),
            applied,
            shared,
            thread: Some(thread),
        };
        if marks {
            while !spawn.ready.exists()
                && !r.finished()
                && !fsbench_base::cancel::interrupted()
                && t0.elapsed().as_secs_f64() < plan.time_limit_s
            {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = fsbench_base::owned::path::remove_file(&spawn.ready);
        out.running.push(r);
    }
    Ok(out)
}

/// The backgrounds' names in the run's `applied` record (`backgrounds`), when it had any.
pub fn note(records: &[BgRecord], applied: &mut Value) {
    if !records.is_empty() {
        applied["backgrounds"] = json!(records.iter().map(|b| &b.name).collect::<Vec<_>>());
    }
}

/// Why a run fails when a background beside it failed (a pass exited with an error or a
/// signal, or it did not end within the time limit when the run waits for it): the run did
/// not measure what its cell names. The background, how it ended and the first line of its
/// log in `runs`; `None` when every background ran as asked.
pub fn failure(records: &[BgRecord], runs: &Path, tag: &str) -> Option<String> {
    let b = records
        .iter()
        .find(|b| b.status == "failed" || b.status == "timeout")?;
    let log = runs.join(format!("{tag}-bg-{}.log", b.name));
    let text = fsbench_base::input::read_tail(&log, fsbench_base::input::LOG_TAIL);
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .map(str::to_string);
    let why = match (b.status.as_str(), b.exit_code) {
        ("timeout", _) => "did not end within the time limit".to_string(),
        (_, Some(code)) => format!("exited with status {code}"),
        _ => "was killed by a signal".to_string(),
    };
    Some(format!(
        "background {} ({} = {}) {why}{}; the run did not measure what its cell names (log: {})",
        b.name,
        b.factor,
        b.name,
        first.map(|l| format!(": {l}")).unwrap_or_default(),
        log.display()
    ))
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
    fn finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Ask it to stop: SIGINT to the running pass's process group, SIGKILL after 15 s; the
    /// supervisor is joined.
    fn interrupt(&mut self) {
        let pid = {
            let mut s = self.shared.lock().unwrap();
            s.stopping = true;
            s.pid
        };
        // SAFETY: signalling the process group we made for our own child.
        unsafe { libc::kill(-pid, libc::SIGINT) };
        let at = Instant::now();
        while !self.finished() {
            if at.elapsed() > Duration::from_secs(15) {
                let pid = self.shared.lock().unwrap().pid;
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    fn finish(mut self, limit: f64) -> BgRecord {
        if self.bg.stop == BgStop::End {
            while !self.finished() && self.t0.elapsed().as_secs_f64() < limit {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let status = if self.finished() {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
            if self.shared.lock().unwrap().last.is_some_and(exited_ok) {
                "ended"
            } else {
                "failed"
            }
        } else {
            self.interrupt();
            if self.bg.stop == BgStop::End {
                "timeout"
            } else {
                "stopped"
            }
        };
        let elapsed_s = self.t0.elapsed().as_secs_f64();
        let _ = fsbench_base::owned::path::remove_file(&self.ready);
        if let Some(go) = &self.go {
            let _ = fsbench_base::owned::path::remove_file(go);
        }
        let s = self.shared.lock().unwrap();
        let exit_code = s
            .last
            .and_then(|st| libc::WIFEXITED(st).then(|| libc::WEXITSTATUS(st)));
        let mut applied = self.applied.clone();
        applied["passes"] = json!(s.passes);
        let results = self
            .json
            .as_ref()
            .and_then(|j| fsbench_base::input::read_text(j, fsbench_base::input::RESULTS).ok())
            .and_then(|t| serde_json::from_str(&t).ok());
        BgRecord {
            name: self.bg.name.clone(),
            factor: self.bg.factor.clone(),
            kind: self.bg.kind_name().into(),
            command: self.argv.clone(),
            nice: self.bg.nice,
            ionice: self.bg.ionice.map(|p| IoPrio::text(p.raw())),
            applied,
            status: status.into(),
            exit_code,
            started_at: self.started_at.clone(),
            elapsed_s,
            user_s: s.user_s,
            system_s: s.system_s,
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
}

impl Drop for Backgrounds {
    fn drop(&mut self) {
        for r in &mut self.running {
            if !r.finished() {
                let pid = {
                    let mut s = r.shared.lock().unwrap();
                    s.stopping = true;
                    s.pid
                };
                // SAFETY: our own child's process group.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
            if let Some(t) = r.thread.take() {
                let _ = t.join();
            }
        }
    }
}
