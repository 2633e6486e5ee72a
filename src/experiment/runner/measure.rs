//! One measurement: the child process with its time limit, and what the runner
//! records around it (caches, servers, noise) and stores.

use super::cgroup::{MemoryCgroup, RunCgroup, RunGroup};
use super::env::Env;
use super::flags::Facts;
use super::{command, Cell};
use crate::experiment::handoff::Handoff;
use crate::experiment::noise;
use crate::experiment::output::{ChildOutput, RemoteTraffic};
use crate::experiment::plan::{Kind, Plan};
use crate::experiment::store::{self, RunFlags, RunRecord, Store};
use crate::experiment::target;
use crate::experiment::target::{Journal, Ready};
use anyhow::{bail, Context, Result};
use fsbench_tools::disk::state::DiskStats;
use fsbench_tools::remote::state::RemoteStats;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;
use std::time::{Duration, Instant};

enum Outcome {
    Ok(Box<ChildOutput>),
    Failed(String),
    Timeout,
    Interrupted,
}

/// What a measured child is started with beyond its command: the remount handoff, and the
/// gate of the backgrounds that start with its window.
#[derive(Default)]
struct Hooks {
    handoff: Option<Handoff>,
    gate: Option<Gate>,
    /// An NFS target's URL, for the measured child (`FSBENCH_NFS_URL`).
    nfs_url: Option<String>,
}

impl Hooks {
    fn new(handoff: Option<Handoff>, gate: Option<Gate>, ready: &Ready) -> Hooks {
        let nfs_url = ready.applied.get("url").and_then(|u| u.as_str());
        Hooks {
            handoff,
            gate,
            nfs_url: nfs_url.map(String::from),
        }
    }
}

/// Backgrounds waiting for the measured child's window (`start = "with"`): the child says
/// when its window starts in `ready` (or at once, `immediate`, when its kind marks none),
/// and then the `go` files are made.
struct Gate {
    ready: PathBuf,
    go: Vec<PathBuf>,
    immediate: bool,
    opened: bool,
}

impl Gate {
    /// Open the gate when the child's window has started (or it has ended).
    fn poll(&mut self, ended: bool) {
        if self.opened || !(ended || self.immediate || self.ready.exists()) {
            return;
        }
        for g in &self.go {
            let _ = std::fs::File::create(g);
        }
        self.opened = true;
    }
}

/// A workload with `nfs = true` runs over its target's NFS URL (the placeholder replaced);
/// on a target that is not an NFS server it runs in the target's directory as usual, so
/// that one measurement compares a local file system with the same one exported.
fn with_nfs_url(mut args: Vec<String>, ready: &Ready) -> Result<Vec<String>> {
    let nfs_url = crate::experiment::plan::NFS_URL;
    let Some(i) = args.iter().position(|a| a == nfs_url) else {
        return Ok(args);
    };
    match ready.applied.get("url").and_then(|u| u.as_str()) {
        Some(u) => args[i] = u.to_string(),
        None if i > 0 => {
            args[i - 1] = "--dir".into();
            args[i] = ready.dir.display().to_string();
        }
        None => anyhow::bail!("`nfs = true`: no place for the NFS URL in {args:?}"),
    }
    Ok(args)
}

fn measure(
    kind: Kind,
    args: &[String],
    log: &Path,
    json_out: &Path,
    limit: f64,
    mut hooks: Hooks,
    group: &RunGroup,
) -> Result<Outcome> {
    let exe = crate::experiment::self_exe()?;
    let logf = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let _ = fsbench_base::owned::path::remove_file(json_out);
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(logf.try_clone()?)
        .stderr(logf);
    if let Some(h) = &hooks.handoff {
        h.attach(&mut cmd);
    }
    if let Some(g) = &hooks.gate {
        let _ = fsbench_base::owned::path::remove_file(&g.ready);
        cmd.env(fsbench_base::sys::mark::READY_ENV, &g.ready);
    }
    if let Some(u) = &hooks.nfs_url {
        cmd.env(target::nfs::URL_ENV, u);
    }
    group.attach_measured(&mut cmd)?;
    let mut child = cmd.spawn().context("starting the measurement")?;
    if let Some(h) = hooks.handoff.take() {
        h.serve();
    }
    let start = Instant::now();
    let mut stop_sent: Option<(Instant, bool)> = None;
    let mut timed_out = false;
    let status = loop {
        if let Some(g) = &mut hooks.gate {
            g.poll(false);
        }
        if let Some(s) = child.try_wait()? {
            break s;
        }
        let interrupted = fsbench_base::cancel::interrupted();
        if stop_sent.is_none() && (interrupted || start.elapsed().as_secs_f64() > limit) {
            timed_out = !interrupted;
            // SAFETY: signalling our own child by pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            stop_sent = Some((Instant::now(), false));
        }
        if let Some((at, killed)) = stop_sent {
            if !killed && at.elapsed() > Duration::from_secs(15) {
                let _ = child.kill();
                stop_sent = Some((at, true));
            }
        }
        std::thread::sleep(Duration::from_millis(if hooks.gate.is_some() {
            5
        } else {
            50
        }));
    };
    if let Some(g) = &mut hooks.gate {
        g.poll(true);
        let _ = fsbench_base::owned::path::remove_file(&g.ready);
    }
    if fsbench_base::cancel::interrupted() {
        return Ok(Outcome::Interrupted);
    }
    if timed_out {
        return Ok(Outcome::Timeout);
    }
    if !status.success() {
        let text = fsbench_base::input::read_tail(log, fsbench_base::input::LOG_TAIL);
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        let oom = match &group.memory {
            Some(cg) if cg.oom_killed() => format!(
                " (killed for want of memory: the cell's memory limit is {})",
                fsbench_base::units::human_bytes(cg.limit as f64)
            ),
            _ => String::new(),
        };
        return Ok(Outcome::Failed(format!(
            "exit {status}{oom}: {}",
            tail.join(" | ")
        )));
    }
    let text = fsbench_base::input::read_text(json_out, fsbench_base::input::RESULTS)
        .with_context(|| format!("the measurement wrote no {}", json_out.display()))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", json_out.display()))?;
    // Read once, into the type its command writes.
    Ok(match ChildOutput::read(kind, v) {
        Ok(c) => Outcome::Ok(Box::new(c)),
        Err(e) => Outcome::Failed(format!("{}: {e:#}", json_out.display())),
    })
}

/// Whether another process dropped the kernel's caches while the child measured (the
/// child's count): a disturbance, as other load is.
fn dropped_elsewhere(outcome: &Outcome) -> bool {
    match outcome {
        Outcome::Ok(c) => c
            .output
            .results()
            .is_some_and(|r| r.caches_dropped_elsewhere.is_some()),
        _ => false,
    }
}

/// The remounts a `cache = remount` run made (or asked for), as the child or the runner
/// logged them.
type RemountLog = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// One measurement of one cell, about to be run and stored.
pub(super) struct Run<'a> {
    pub(super) plan: &'a Plan,
    pub(super) cell: &'a Cell,
    pub(super) cell_id: i64,
    pub(super) rep: u32,
    /// The status stored instead of "ok" ("warmup" for warm-up runs).
    pub(super) status_override: &'a str,
    pub(super) env: &'a Env,
    pub(super) outdir: &'a Path,
    /// The cgroups the run's children run in.
    pub(super) cgroup: RunGroup,
}

impl Run<'_> {
    pub(super) fn measure_and_store(mut self, st: &mut Store) -> Result<bool> {
        let (plan, cell, rep) = (self.plan, self.cell, self.rep);
        let ready = self.env.ready(&cell.target);
        let tag = run_tag(cell, rep, self.status_override);
        let json_out = self.outdir.join("runs").join(format!("{tag}.json"));
        let log = self.outdir.join("runs").join(format!("{tag}.log"));
        let scratch = self.outdir.join("scratch");
        std::fs::create_dir_all(&scratch)?;
        let args = with_nfs_url(command(plan, cell, &ready.dir, &json_out, &scratch), ready)?;
        let mut group = std::mem::take(&mut self.cgroup);
        let warm_pass = self.warm_pass(&args, &tag, &group)?;
        let (remounts, handoff) = self.prepare_caches(ready)?;
        // Started after the cache state is set, before the measured child; stopped after it.
        let bgs = super::background::start(plan, cell, &ready.dir, self.outdir, &tag, &group)?;
        let server_pids = self.server_pids();
        let remote_before = target::remote::stats_now(ready);
        let started_at = store::now();
        let before = noise::sample();
        let (sched_before, disk_before) = (scheduler_now(ready), disk_stats(ready));
        let dev = ready.device.as_deref();
        let dev_before = dev.and_then(fsbench_base::sys::blockstat::named_device_read_bytes);
        let t0 = Instant::now();
        let kind = plan.measurements[cell.measurement].kind;
        let go = bgs.go_files();
        let gate = (!go.is_empty()).then(|| Gate {
            ready: self.outdir.join("runs").join(format!("{tag}.ready")),
            go,
            immediate: matches!(kind, Kind::Scan | Kind::Layout),
            opened: false,
        });
        let hooks = Hooks::new(handoff, gate, ready);
        let mut outcome = measure(
            kind,
            &args,
            &log,
            &json_out,
            plan.time_limit_s,
            hooks,
            &group,
        )?;
        let elapsed = t0.elapsed().as_secs_f64();
        let dev_read = dev_before.and_then(|b| {
            Some(fsbench_base::sys::blockstat::named_device_read_bytes(dev?)?.saturating_sub(b))
        });
        let after = noise::sample();
        let other = noise::other_fraction(&before, &after, &server_pids);
        let bg_records = bgs.stop(plan.time_limit_s);
        // Nothing a child or background forked outlives the run.
        group.end_run()?;
        let mut applied = self.applied(ready, &args, warm_pass, group.memory.take())?;
        self.check_backgrounds(&bg_records, &tag, &mut outcome, &mut applied);
        self.check_remounts(remounts.as_ref(), &mut outcome, &mut applied);
        check_scheduler(ready, sched_before, &mut outcome, &mut applied);
        let mut disturbed = other > plan.noise_threshold;
        disturbed |= self.disk_lateness(ready, disk_before.as_ref(), &mut applied);
        let remote_run = match (&remote_before, target::remote::stats_now(ready)) {
            (Some(b), Some(a)) => Some(self.remote_traffic((b, &a), &outcome, &args, &mut applied)),
            _ => None,
        };
        if let Some((_, d)) = &remote_run {
            disturbed |= *d;
        }
        let remote_run = remote_run.map(|(r, _)| r);
        disturbed |= dropped_elsewhere(&outcome);
        let noise =
            json!({"load_avg_1": before.load1, "other_cpu_frac": other, "disturbed": disturbed});
        let experiment = json!({"name": plan.name, "cell": cell.idx + 1, "repetition": rep + 1, "factors": labels_json(plan, cell), "applied": applied, "noise": noise});
        let (status, error, results) = self.verdict(outcome, remote_run, experiment);
        if status == "interrupted" {
            // Partial measurements are not results: --resume runs the cell again.
            return Ok(false);
        }
        if let Some(e) = &error {
            fsbench_base::errln!(
                "fsbench: cell {} rep {}: {status}: {e}",
                cell.idx + 1,
                rep + 1
            );
        }
        let flags = match &results {
            Some(r) => self.facts(&args, dev_read).flags(&r.output),
            None => RunFlags::default(),
        };
        let run_id = st.add_run(&RunRecord {
            cell_id: self.cell_id,
            repetition: rep,
            status,
            started_at: &started_at,
            elapsed_s: elapsed,
            load_avg_1: before.load1,
            other_cpu_frac: Some(other),
            disturbed: disturbed && status == "ok",
            error: error.as_deref(),
            applied: &applied,
            results: results.as_deref(),
            flags: &flags,
        })?;
        st.add_backgrounds(run_id, &bg_records)?;
        Ok(status == "ok" || status == "warmup")
    }

    /// The run's backgrounds, into `applied`; a run beside a background that failed fails
    /// with its reason.
    fn check_backgrounds(
        &self,
        records: &[store::BgRecord],
        tag: &str,
        outcome: &mut Outcome,
        applied: &mut Value,
    ) {
        super::background::note(records, applied);
        let runs = self.outdir.join("runs");
        if let Some(why) = super::background::failure(records, &runs, tag) {
            if matches!(outcome, Outcome::Ok(_)) {
                *outcome = Outcome::Failed(why);
            }
        }
    }

    /// A `cache = remount` run's remounts, into `applied`; a run whose file system was not
    /// remounted fails.
    fn check_remounts(&self, log: Option<&RemountLog>, outcome: &mut Outcome, applied: &mut Value) {
        let Some(log) = log else {
            return;
        };
        let done = log.lock().unwrap().clone();
        if matches!(outcome, Outcome::Ok(_)) && !done.iter().any(|d| d.starts_with("remounted")) {
            *outcome = Outcome::Failed(
                "cache = remount: the measurement ended without its file system being remounted"
                    .into(),
            );
        }
        applied["remounts"] = json!(done);
    }

    /// What was applied to the run: the target and its settings, the command, the warm-up
    /// pass and the memory cgroup (removed here, its child having exited).
    fn applied(
        &self,
        ready: &Ready,
        args: &[String],
        warm_pass: Option<Value>,
        cgroup: Option<MemoryCgroup>,
    ) -> Result<Value> {
        let mut applied = json!({
            "target": ready.name,
            "target_kind": self.plan.target(&self.cell.target).kind_name(),
            "dir": ready.dir.display().to_string(),
            "settings": ready.applied,
            "command": args,
        });
        if let Some(p) = warm_pass {
            applied["warm_pass"] = p;
        }
        if let Some(cg) = cgroup {
            applied["memory"] = json!({
                "limit_bytes": cg.limit,
                "cgroup": cg.path().display().to_string(),
                "cgroup_version": cg.version,
                "peak_bytes": cg.peak(),
            });
            cg.remove()?;
        }
        Ok(applied)
    }

    /// What the flags of this cell's run are judged from.
    fn facts(&self, args: &[String], device_read_bytes: Option<u64>) -> Facts<'_> {
        let (plan, cell) = (self.plan, self.cell);
        let m = &plan.measurements[cell.measurement];
        let value = |k: &str| {
            cell.factors
                .iter()
                .chain(m.params.iter())
                .find(|(pk, _)| pk == k)
                .map(|(_, v)| v.clone())
        };
        let kind = plan.target(&cell.target).kind_name();
        Facts {
            kind: m.kind,
            cache: &cell.cache,
            // The child's own warm-up (`--warmup`), or the runner's pass before it.
            warmed: args.iter().any(|a| a == "--warmup")
                || !m.kind.takes_cold()
                || value("warmup").is_some_and(|w| w.parse::<f64>().is_ok_and(|w| w > 0.0)),
            asked_s: if m.kind == Kind::Workload {
                value("duration").and_then(|d| d.parse().ok())
            } else {
                None
            },
            judge_device: m.kind.judges_device_reads()
                && (cell.cache == "cold" || kind == "image" || kind == "disk"),
            device_read_bytes,
            share: plan.cache_served_share,
            device_work: device_work(plan, cell),
        }
    }

    /// A warm layout or scan cell: the runner's unmeasured pass of the same command right
    /// before the measured one (the other kinds' children run theirs with `--warmup`).
    fn warm_pass(&self, args: &[String], tag: &str, group: &RunGroup) -> Result<Option<Value>> {
        let kind = self.plan.measurements[self.cell.measurement].kind;
        if self.cell.cache != "warm" || kind.takes_cold() {
            return Ok(None);
        }
        let runs = self.outdir.join("runs");
        let json_out = runs.join(format!("{tag}-warm.json"));
        let log = runs.join(format!("{tag}-warm.log"));
        let mut args = args.to_vec();
        if let Some(i) = args.iter().position(|a| a == "--json") {
            args[i + 1] = json_out.display().to_string();
        }
        let at = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let t0 = Instant::now();
        let outcome = measure(
            kind,
            &args,
            &log,
            &json_out,
            self.plan.time_limit_s,
            Hooks::default(),
            group,
        )?;
        let ok = matches!(outcome, Outcome::Ok(_));
        if !ok {
            bail!(
                "cell {}: the warm-up pass before the measurement failed; see {}",
                self.cell.idx + 1,
                log.display()
            );
        }
        Ok(Some(json!({
            "command": args,
            "started_at": at,
            "elapsed_s": t0.elapsed().as_secs_f64(),
        })))
    }

    /// The cell's cache state: caches dropped, a remount done or handed to the child, or
    /// (warm) the previous measurement's deletes committed.
    fn prepare_caches(&self, ready: &Ready) -> Result<(Option<RemountLog>, Option<Handoff>)> {
        let cell = self.cell;
        let mut remounts: Option<RemountLog> = None;
        let mut handoff = None;
        let kind = self.plan.measurements[cell.measurement].kind;
        if cell.cache == "cold" && !kind.takes_cold() {
            // Layout and scan take no --cold: the runner drops the caches for them.
            fsbench_engine::engine::drop_caches().map_err(|e| anyhow::anyhow!("{e}"))?;
        } else if cell.cache == "remount" {
            let set = target::remount_set(&self.env.ready, &cell.target);
            if matches!(kind, Kind::Layout | Kind::Scan) {
                // These measure a tree as they find it: remount before they start.
                let what = target::remount(&set)
                    .with_context(|| format!("target {}: cache = remount", cell.target))?;
                remounts = Some(std::sync::Arc::new(std::sync::Mutex::new(vec![what])));
            } else {
                // The others prepare first (layout, a source tree): the child asks for the
                // remount at the point where a cold run drops the caches.
                let h = Handoff::new(set)?;
                remounts = Some(h.log.clone());
                handoff = Some(h);
            }
        } else {
            // Commit what the previous measurement left (its deletes included): btrfs frees
            // deleted extents only at a transaction commit, and until then a back-to-back run
            // finds the space it needs taken.
            sync_fs(&ready.dir);
        }
        Ok((remounts, handoff))
    }

    /// Simulated-disk and remote servers are the measurement's own machinery, not noise.
    fn server_pids(&self) -> Vec<i32> {
        let ready = &self.env.ready;
        let mut pids: Vec<i32> = ready
            .iter()
            .filter_map(|r| r.disk.as_ref())
            .filter_map(|d| {
                fsbench_tools::disk::state::StateDir::new(d)
                    .ok()?
                    .live_pid()
            })
            .collect();
        pids.extend(ready.iter().filter_map(|r| {
            let n = r.applied.get("remote")?.as_str()?;
            fsbench_tools::remote::state::StateDir::new(n)
                .ok()?
                .live_pid()
        }));
        pids
    }

    /// A simulated disk's lateness over the run (the requests served between the
    /// statistics read before it and those read now), into `applied`; whether it disturbed
    /// the measurement. The disk's lifetime figures would carry a late stretch of an earlier
    /// run or of the set-up into every later run on the same disk.
    fn disk_lateness(
        &self,
        ready: &Ready,
        before: Option<&DiskStats>,
        applied: &mut Value,
    ) -> bool {
        let (Some(before), Some(after)) = (before, disk_stats(ready)) else {
            return false;
        };
        let Some(l) = fsbench_tools::disk::lateness::between(before, &after) else {
            applied["disk_late_frac"] = json!(0.0);
            applied["disk_requests"] = json!(0);
            return false;
        };
        let late = l.pct / 100.0;
        applied["disk_late_frac"] = json!(late);
        applied["disk_requests"] = json!(l.requests);
        late > self.plan.noise_threshold
    }

    /// A remote's traffic over the run, into `applied`: the figures and whether they
    /// show a disturbed measurement. The traffic figures are the measured window's where
    /// the child recorded it (what its preparation fetched depends on what ran before:
    /// names fetched less than 3 s ago are not fetched again), the rest the whole child's;
    /// what crossed outside the window is kept beside them (`remote_outside_window`).
    fn remote_traffic(
        &self,
        (before, after): (&RemoteStats, &RemoteStats),
        outcome: &Outcome,
        args: &[String],
        applied: &mut Value,
    ) -> (RemoteTraffic, bool) {
        let d = after.since(before);
        let late = d.lateness();
        // The child empties the client cache once when it runs cold; any other emptying
        // came from outside (another cold run on this machine) and changed what it measured.
        let own = args.iter().any(|a| a == "--cold") as u64;
        let foreign = d.cache_drops.saturating_sub(own);
        let ready = self.env.ready(&self.cell.target);
        let name = ready.applied.get("remote").and_then(|n| n.as_str());
        let whole = fsbench_tools::remote::window(name.unwrap_or(""), &d);
        let w = match window_of(outcome).filter(|w| Some(w.name.as_str()) == name) {
            Some(w) => {
                applied["remote_outside_window"] = json!({
                    "requests": whole.requests.saturating_sub(w.requests),
                    "round_trips": whole.round_trips.saturating_sub(w.round_trips),
                    "bytes_fetched": whole.bytes_fetched.saturating_sub(w.bytes_fetched),
                    "bytes_sent": whole.bytes_sent.saturating_sub(w.bytes_sent),
                });
                w.clone()
            }
            None => whole,
        };
        let mut r = RemoteTraffic {
            requests: w.requests,
            round_trips: w.round_trips,
            bytes_fetched: w.bytes_fetched,
            bytes_sent: w.bytes_sent,
            lookaside_hits: w.lookaside_hits,
            lookaside_misses: w.lookaside_misses,
            lookaside_bytes: w.lookaside_bytes,
            network_wait_s: w.network_wait_s,
            lost_requests: d.lost_requests,
            foreign_cache_drops: foreign,
            late_pct: late.pct,
            model_s: 0.0,
        };
        // The network the cell ran at, as `fsbench remote set` left it.
        let net = ready.applied.get("network").and_then(|n| n.as_str());
        if let Some(n) = net.and_then(target::remote::net_of) {
            r.model_s = r.model_time(&n);
        }
        applied["remote"] = json!(r);
        let disturbed = late.pct / 100.0 > self.plan.noise_threshold || foreign > 0;
        (r, disturbed)
    }

    /// The status, error and results to store for an outcome; a good result carries the
    /// remote's figures and the experiment's record of the run.
    fn verdict(
        &self,
        outcome: Outcome,
        remote_run: Option<RemoteTraffic>,
        experiment: Value,
    ) -> (&str, Option<String>, Option<Box<ChildOutput>>) {
        let (status, error, results) = match outcome {
            Outcome::Ok(mut c) => {
                if c.output.interrupted() {
                    (
                        "interrupted",
                        Some("the measurement reports itself interrupted".to_string()),
                        Some(c),
                    )
                } else {
                    c.add_records(remote_run, experiment);
                    ("ok", None, Some(c))
                }
            }
            Outcome::Failed(e) => ("failed", Some(e), None),
            Outcome::Timeout => (
                "timeout",
                Some(format!(
                    "stopped after the time limit of {} s",
                    self.plan.time_limit_s
                )),
                None,
            ),
            Outcome::Interrupted => ("interrupted", Some("Ctrl-C".to_string()), None),
        };
        let status = if status == "ok" && !self.status_override.is_empty() {
            self.status_override
        } else {
            status
        };
        (status, error, results)
    }
}

/// What the cell's device must do (its measurement's `device_work`), unless the cell is a
/// warm cell of a plan that also runs cold ones: there the warm cell is the cached
/// comparison, meant to be served from memory.
fn device_work(plan: &Plan, cell: &Cell) -> Option<crate::experiment::plan::DeviceWork> {
    let w = plan.measurements[cell.measurement].device_work?;
    let cached_comparison = cell.cache == "warm" && plan.cache_levels.iter().any(|c| c != "warm");
    (!cached_comparison).then_some(w)
}

/// The I/O scheduler the target's device runs under now, read from sysfs.
fn scheduler_now(ready: &Ready) -> Option<String> {
    let dev = ready.device.as_deref()?;
    target::device::current(dev).ok()?.scheduler
}

/// The remote traffic a measured child recorded over its measured window.
fn window_of(outcome: &Outcome) -> Option<&fsbench_results::stats::RemoteWindow> {
    match outcome {
        Outcome::Ok(c) => match &c.output {
            crate::experiment::output::Output::Run(r) => r.remote_window.as_ref(),
            _ => None,
        },
        _ => None,
    }
}

/// The scheduler the run ran under, into `applied.scheduler` (device, scheduler before
/// and after the measurement, and what set-up or the cell's settings left): a run whose
/// device was under another scheduler than the one set, or changed during it, fails.
fn check_scheduler(
    ready: &Ready,
    before: Option<String>,
    outcome: &mut Outcome,
    applied: &mut Value,
) {
    let Some(dev) = &ready.device else {
        return;
    };
    let after = scheduler_now(ready);
    let set = ready.applied.get("scheduler").and_then(|v| v.as_str());
    applied["scheduler"] = json!({"device": dev, "active": before, "after": after, "set": set});
    let (Some(b), Some(a)) = (&before, &after) else {
        return;
    };
    let why = if b != a {
        format!("the I/O scheduler of {dev} changed from {b} to {a} during the measurement")
    } else if set.is_some_and(|s| s != b) {
        format!(
            "{dev} ran under the I/O scheduler {b}, not {} as set up: something outside this experiment changed it",
            set.unwrap_or_default()
        )
    } else {
        return;
    };
    if matches!(outcome, Outcome::Ok(_)) {
        *outcome = Outcome::Failed(why);
    }
}

/// `syncfs` the file system holding `dir`, twice (btrfs releases the extents a commit
/// unpinned at the next one). Errors are ignored: this only makes free space accurate.
fn sync_fs(dir: &Path) {
    use std::os::fd::AsRawFd;
    if let Ok(f) = std::fs::File::open(dir) {
        for _ in 0..2 {
            // SAFETY: syncfs on a descriptor we own.
            unsafe { libc::syncfs(f.as_raw_fd()) };
        }
    }
}

/// The cell's memory limit in bytes: the plan-wide factor's level, the measurement's (its
/// factor or parameter), or the target's; "none" for no limit.
pub(super) fn memory_limit(plan: &Plan, cell: &Cell) -> Option<u64> {
    let m = &plan.measurements[cell.measurement];
    let level = cell
        .settings
        .iter()
        .chain(cell.factors.iter())
        .chain(m.params.iter())
        .find(|(k, _)| k == "memory")
        .map(|(_, v)| v.as_str());
    match level {
        Some(l) => crate::experiment::plan::memory::parse_level(l)
            .ok()
            .flatten(),
        None => plan.target(&cell.target).memory,
    }
}

/// A run's name in OUTDIR/runs (and its memory cgroup's): cell, repetition, and whether a
/// stored warm-up.
pub(super) fn run_tag(cell: &Cell, rep: u32, status_override: &str) -> String {
    format!(
        "c{:03}-r{rep:02}{}",
        cell.idx + 1,
        if status_override.is_empty() {
            ""
        } else {
            "-warmup"
        }
    )
}

/// The run's cgroups, each registered in the journal as soon as it is made (before any
/// process joins it: a runner killed later leaves them to `--cleanup`, which kills what
/// runs in them): the memory cgroup when the cell has a memory limit, the run's cgroup
/// where cgroup v2 can be used.
pub(super) fn run_group(
    plan: &Plan,
    cell: &Cell,
    tag: &str,
    journal: &mut Journal,
) -> Result<RunGroup> {
    let mut group = RunGroup::default();
    if let Some(limit) = memory_limit(plan, cell) {
        let cg = MemoryCgroup::create(MemoryCgroup::planned(tag)?, limit)?;
        journal.push(target::Undo::RemoveCgroup(cg.owned.clone()))?;
        group.memory = Some(cg);
    }
    if let Some(path) = RunCgroup::planned(tag) {
        match RunCgroup::create(&path) {
            Ok(r) => {
                journal.push(target::Undo::RemoveCgroup(r.owned.clone()))?;
                group.run = Some(r);
            }
            Err(e) => note_no_run_cgroup(&e),
        }
    }
    Ok(group)
}

/// Say once why runs have no cgroup of their own (their children then rely on their
/// process groups and the parent-death signal).
fn note_no_run_cgroup(e: &anyhow::Error) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        fsbench_base::errln!("fsbench: note: runs get no cgroup of their own ({e:#}); a process a child leaves running in the background may outlive its run");
    });
}

/// The statistics of the simulated disk under a target, when it has one.
fn disk_stats(ready: &Ready) -> Option<DiskStats> {
    let sd = fsbench_tools::disk::state::StateDir::new(ready.disk.as_ref()?).ok()?;
    fsbench_tools::disk::lateness::stats_now(&sd, false)
}

/// A cell's factor levels as a JSON object.
pub(super) fn labels_json(plan: &Plan, cell: &Cell) -> serde_json::Map<String, Value> {
    cell.labels(plan)
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect()
}
