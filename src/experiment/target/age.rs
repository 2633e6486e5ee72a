//! The aging step: `fsbench age` on a target before measuring, once per set-up or once per
//! repetition, with every option the plan's `[target.age]` gives. Its report (writeback
//! policy, days, layout before and after with split files and locality, fullness,
//! distances) is recorded with every result measured on the aged target, and its numbers
//! are stored as figures `age.NAME` of those results, so `fsbench results` lists them
//! beside the measurement's own. With `from_scan`, the real tree is first scanned (read
//! only) into a snapshot the aging steers by, and its own layout is measured (FIEMAP, not
//! synced: nothing is written there) and recorded as `age.source_*`.

use super::{Journal, Ready, Undo};
use crate::experiment::plan::Age;
use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::process::Command;

/// Run fsbench with `args`; its standard error is the error when it fails.
fn fsbench(what: &str, args: &[String]) -> Result<()> {
    let exe = crate::experiment::self_exe()?;
    let out = Command::new(exe)
        .args(args)
        .output()
        .with_context(|| format!("running fsbench {what}"))?;
    if !out.status.success() {
        bail!(
            "fsbench {what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// How often an aging's progress is passed on (its own lines come each simulated day, at
/// most once a second).
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// Run `fsbench age` with `args` for target `target`, passing on a progress line (day,
/// operations, rate and time left, bytes, fullness, files; the layout score if asked for) at
/// most every [`PROGRESS_EVERY`] so an aging of a million operations shows where it is; its
/// other standard error is the error when it fails.
fn age_showing_progress(args: &[String], target: &str) -> Result<()> {
    use std::io::BufRead;
    let exe = crate::experiment::self_exe()?;
    let mut child = Command::new(exe)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("running fsbench age")?;
    let relay = InterruptRelay::start(child.id() as libc::pid_t);
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("piped"));
    let mut other: std::collections::VecDeque<String> = Default::default();
    let mut shown: Option<std::time::Instant> = None;
    let mut raw = Vec::new();
    // Read to the end whatever it holds, so the child never blocks on a full pipe.
    loop {
        raw.clear();
        match stderr.read_until(b'\n', &mut raw) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                other.push_back(format!("(reading its output: {e})"));
                break;
            }
        }
        let line = String::from_utf8_lossy(&raw).trim_end().to_string();
        if let Some(day) = line.strip_prefix("age: day ") {
            if shown.is_none_or(|t| t.elapsed() >= PROGRESS_EVERY) {
                fsbench_base::errln!("fsbench: aging target {target}: day {day}");
                shown = Some(std::time::Instant::now());
            }
        } else {
            if other.len() == 40 {
                other.pop_front();
            }
            other.push_back(line);
        }
    }
    relay.stop();
    let status = child.wait().context("waiting for fsbench age")?;
    if !status.success() {
        bail!(
            "fsbench age failed ({status}): {}",
            Vec::from(other).join("\n").trim()
        );
    }
    Ok(())
}

/// Passes a SIGINT sent to the experiment alone on to a child, once (Ctrl-C at a terminal
/// reaches the child too). Stopped before the child is reaped, so the pid is the child's.
struct InterruptRelay {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    watcher: std::thread::JoinHandle<()>,
}

impl InterruptRelay {
    fn start(pid: libc::pid_t) -> InterruptRelay {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = done.clone();
        let watcher = std::thread::spawn(move || {
            while !seen.load(std::sync::atomic::Ordering::Relaxed) {
                if fsbench_base::cancel::interrupted() {
                    // SAFETY: signalling our own unreaped child.
                    unsafe { libc::kill(pid, libc::SIGINT) };
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        });
        InterruptRelay { done, watcher }
    }

    fn stop(self) {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = self.watcher.join();
    }
}

fn read_json<T: serde::de::DeserializeOwned>(p: &Path, what: &str) -> Result<T> {
    let text = fsbench_base::input::read_text(p, fsbench_base::input::RESULTS)
        .with_context(|| format!("reading {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not {what}", p.display()))
}

pub fn run(a: &Age, ready: &mut Ready, outdir: &Path, tag: &str, j: &mut Journal) -> Result<()> {
    let aged = ready.dir.join(fsbench_tools::age::args::AGED_DIR);
    if !aged.exists() {
        // fsbench age creates and marks it; it goes with the target's teardown.
        j.push(Undo::RemoveMarkedTree {
            dir: aged.clone(),
            id: None,
            marker: fsbench_base::owned::trust::MARKER.into(),
        })?;
    }
    // An ext4 fsbench mounted commits its journal only when aging asks while it ages.
    let ext4 = ready.mounts.first().filter(|m| m.fstype == "ext4").cloned();
    if let Some(m) = &ext4 {
        commit_interval(m, &format!("commit={AGING_COMMIT_S}"))?;
    }
    let aged = age_dir(a, &ready.dir, &ready.name, outdir, tag);
    if let Some(m) = &ext4 {
        commit_interval(m, &measuring_commit(&m.options))?;
    }
    let mut facts = aged.with_context(|| format!("target {}", ready.name))?;
    if ext4.is_some() {
        facts.insert("journal_commit_s".into(), AGING_COMMIT_S.into());
    }
    ready.applied.insert("age".into(), Value::Object(facts));
    Ok(())
}

/// ext4 commits its journal on a timer (every 5 s by default), and the blocks a delete
/// frees return to the allocator only at a commit: left to the timer, the aged layout
/// depends on how fast aging ran (a 1 GiB ext4, seed 7, 60,000 churn operations: 15,034
/// fragments aged alone, 15,150 beside three CPU hogs that made aging 5x slower). While
/// fsbench ages an ext4 it mounted, the interval is set past any aging, so the journal
/// commits at aging's own `syncfs` (every `commit_every` operations) and when it fills,
/// both a function of the operations: the same 15,034 fragments with and without the hogs.
pub const AGING_COMMIT_S: u64 = 86_400;

/// Mount options for aging a file system of type `fs` fsbench mounts itself: `options`
/// with ext4's journal commit interval set to [`AGING_COMMIT_S`].
pub fn aging_mount_options(fs: &str, options: &str) -> String {
    if fs != "ext4" {
        return options.to_string();
    }
    let commit = format!("commit={AGING_COMMIT_S}");
    options
        .split(',')
        .filter(|o| !o.is_empty() && !o.starts_with("commit="))
        .chain(std::iter::once(commit.as_str()))
        .collect::<Vec<_>>()
        .join(",")
}

/// The commit option the plan's `options` give the measurements (`commit=0`: ext4's
/// default).
fn measuring_commit(options: &str) -> String {
    options
        .split(',')
        .rev()
        .find(|o| o.starts_with("commit="))
        .unwrap_or("commit=0")
        .to_string()
}

/// Remount `m` (a mount fsbench made) with `commit`.
fn commit_interval(m: &super::MountSpec, commit: &str) -> Result<()> {
    let mp = m.mount_point.to_string_lossy();
    super::sh("mount", &["-o", &format!("remount,{commit}"), &mp])
        .with_context(|| format!("setting {commit} on {mp} for aging"))
        .map(|_| ())
}

/// Age `dir` (target `target`'s file system) with `a`, the report kept under OUTDIR/age with
/// `tag` in its name; the facts the target records of it. The caller owns the removal of
/// the aged tree (with the target's teardown, or with the image it is on).
pub fn age_dir(
    a: &Age,
    dir: &Path,
    target: &str,
    outdir: &Path,
    tag: &str,
) -> Result<Map<String, Value>> {
    let logs = outdir.join("age");
    std::fs::create_dir_all(&logs)?;
    let mut args: Vec<String> = vec!["age".into(), dir.display().to_string()];
    args.extend(a.flags());
    let mut facts = Map::new();
    if let Some(src) = &a.from_scan {
        let snap =
            scan_source(src, &logs, target, &mut facts).context("the tree to age towards")?;
        args.extend(["--from-snapshot".into(), snap]);
    }
    let json_out = logs.join(format!("{target}-{tag}.json"));
    args.extend(["--json".into(), json_out.display().to_string()]);
    // The progress shows no layout score unless the plan asks for one: its walk reads every
    // directory (their access times written back), which aging's own operations do not.
    if !args.iter().any(|a| a == "--layout-every") {
        args.extend(["--layout-every".into(), "0".into()]);
    }
    age_showing_progress(&args, target)?;
    let report: fsbench_tools::age::report::AgeReport = read_json(&json_out, "an aging report")?;
    facts.extend(age_facts(&report));
    facts.insert("report".into(), json_out.display().to_string().into());
    Ok(facts)
}

/// Scan the real tree `src` into a snapshot (once per target and experiment) and measure
/// its layout, read only; the snapshot's path.
fn scan_source(
    src: &Path,
    logs: &Path,
    target: &str,
    facts: &mut Map<String, Value>,
) -> Result<String> {
    let snap = logs.join(format!("{target}-source.snap"));
    let layout = logs.join(format!("{target}-source-layout.json"));
    if !snap.exists() {
        let s = src.display().to_string();
        let json = logs.join(format!("{target}-source-scan.json"));
        fsbench(
            "scan",
            &[
                "scan".into(),
                s.clone(),
                "-o".into(),
                snap.display().to_string(),
                "--json".into(),
                json.display().to_string(),
            ],
        )?;
        fsbench(
            "layout",
            &[
                "layout".into(),
                s,
                "--top".into(),
                "0".into(),
                "--json".into(),
                layout.display().to_string(),
            ],
        )?;
    }
    let l: fsbench_engine::layout::LayoutReport = read_json(&layout, "a layout report")?;
    facts.insert("source".into(), json!(src.display().to_string()));
    facts.insert("source_snapshot".into(), json!(snap.display().to_string()));
    for (k, v) in layout_facts(&(&l).into()) {
        facts.insert(format!("source_{k}"), v);
    }
    Ok(snap.display().to_string())
}

/// A layout's numbers as facts (`score`, `files`, `fragments`, `split_files`, ...).
fn layout_facts(l: &fsbench_tools::age::report::LayoutFacts) -> Vec<(String, Value)> {
    let mut out = vec![
        ("score".to_string(), json!(l.score)),
        ("files".to_string(), json!(l.files)),
        ("blocks".to_string(), json!(l.blocks)),
        ("fragments".to_string(), json!(l.fragments)),
        ("locality".to_string(), json!(l.locality)),
    ];
    if let Some(n) = l.split_files {
        out.push(("split_files".into(), json!(n)));
        out.push(("split_checked_files".into(), json!(l.split_checked_files)));
    }
    if let Some(n) = l.split_flex_files {
        out.push(("split_flex_files".into(), json!(n)));
    }
    out
}

/// What the target records of its aging step, from the report `fsbench age` wrote.
fn age_facts(r: &fsbench_tools::age::report::AgeReport) -> Map<String, Value> {
    let mut facts = Map::new();
    let w = r.writeback;
    for (k, v) in [
        ("profile", json!(r.profile)),
        ("seed", json!(r.seed)),
        ("writeback", json!(w.policy.name())),
        ("commit_every", json!(w.commit_every)),
        ("day_ops", json!(r.day_ops)),
        ("days", json!(r.days)),
        ("ops", json!(r.ops)),
        ("churn_ops", json!(r.churn_ops)),
        ("elapsed_s", json!(r.elapsed_s)),
        ("bytes_written", json!(r.bytes_written)),
        ("fullness_end", json!(r.fullness_end)),
        ("live_files", json!(r.live_files)),
        ("live_bytes", json!(r.live_bytes)),
        ("converged", json!(r.converged)),
    ] {
        facts.insert(k.into(), v);
    }
    if let Some(x) = &r.recent {
        facts.insert("recent_files".into(), json!(x.files));
        facts.insert("recent_bytes".into(), json!(x.bytes));
    }
    for (when, l) in [("before", &r.layout_before), ("after", &r.layout_after)] {
        for (k, v) in l.iter().flat_map(layout_facts) {
            facts.insert(format!("layout_{when}_{k}"), v);
        }
    }
    facts
}

/// The aging facts that are figures: what aging did and the layout it left (the settings,
/// seed, policy and the like stay facts of the run's `applied` record).
fn is_figure(k: &str) -> bool {
    const RUN: &[&str] = &[
        "ops",
        "churn_ops",
        "days",
        "bytes_written",
        "elapsed_s",
        "fullness_end",
        "live_files",
        "recent_files",
        "recent_bytes",
    ];
    const LAYOUT: &[&str] = &[
        "score",
        "fragments",
        "files",
        "split_files",
        "split_flex_files",
        "locality",
    ];
    RUN.contains(&k)
        || ["layout_before_", "layout_after_", "source_"]
            .iter()
            .any(|p| k.strip_prefix(p).is_some_and(|r| LAYOUT.contains(&r)))
}

/// The aging step's numbers as figures `age.NAME` of a run on the aged target (its
/// `applied.settings.age`): nothing for a target without aging.
pub fn figures(applied: &Value) -> Vec<(String, f64)> {
    let Some(age) = applied.pointer("/settings/age").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out: Vec<(String, f64)> = age
        .iter()
        .filter(|(k, _)| is_figure(k))
        .filter_map(|(k, v)| {
            let x = match v {
                Value::Number(n) => n.as_f64()?,
                Value::Bool(b) => *b as u8 as f64,
                _ => return None,
            };
            Some((format!("age.{k}"), x))
        })
        .filter(|(_, x)| x.is_finite())
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext4_ages_with_its_journal_committed_by_aging_alone() {
        assert_eq!(aging_mount_options("ext4", ""), "commit=86400");
        assert_eq!(
            aging_mount_options("ext4", "noatime,commit=30,dirsync"),
            "noatime,dirsync,commit=86400"
        );
        assert_eq!(aging_mount_options("xfs", "noatime"), "noatime");
        assert_eq!(measuring_commit("noatime,commit=30"), "commit=30");
        assert_eq!(measuring_commit("noatime"), "commit=0");
    }

    #[test]
    fn aging_facts_become_figures() {
        let applied = json!({"settings": {"age": {
            "ops": 20, "layout_after_score": 0.93, "converged": true, "seed": 3,
            "profile": "agrawal", "layout_after_locality": null, "source_split_files": 4
        }}});
        let f = figures(&applied);
        assert_eq!(
            f,
            vec![
                ("age.layout_after_score".to_string(), 0.93),
                ("age.ops".to_string(), 20.0),
                ("age.source_split_files".to_string(), 4.0),
            ]
        );
        assert!(figures(&json!({"settings": {}})).is_empty());
    }
}
