//! Seconds one run of a cell takes: the child's passes of its measurement on the target's
//! device, its cache state, the simulated disk's probe, and what the runner does around
//! it (its own cache drop or warm pass for `layout` and `scan`, the backgrounds'
//! preparation).

use super::kinds::{self, Cx, Work};
use super::rates::{
    cpu, Speed, CHILD_S, DROP_S, RUNNER_S, SYNCFS_ACCESSES, TOOL_S, WORKLOAD_CHILD_S,
};
use crate::experiment::plan::{BgKind, BgStop, Kind, Plan};
use crate::experiment::runner::measure::memory_limit;
use crate::experiment::runner::{background, Cell};

/// A remount (`cache = "remount"`): unmount, which writes back what is dirty, and mount.
const REMOUNT_S: f64 = 0.2;
/// The share of memory that may be dirty before a writer waits for writeback
/// (`vm.dirty_ratio`, 20%, applied to a memory cgroup's limit).
const DIRTY_SHARE: f64 = 0.2;

/// The context of cell `c`'s measurement.
fn cx<'a>(plan: &'a Plan, c: &'a Cell) -> Cx<'a> {
    let m = &plan.measurements[c.measurement];
    let mut values = m.params.clone();
    values.extend(
        c.factors
            .iter()
            .filter(|(k, _)| !plan.is_background_factor(k))
            .cloned(),
    );
    let speed = if over_nfs(plan, c, &values) {
        Speed::over_nfs()
    } else {
        Speed::of(plan, &c.target)
    };
    Cx {
        plan,
        cell: c,
        m,
        values,
        args: super::super::stored_command(plan, c),
        speed,
        cold: c.cache == "cold" || c.cache == "remount",
    }
}

/// Whether cell `c` runs a workload over its NFS target's URL (`nfs = true`).
fn over_nfs(plan: &Plan, c: &Cell, values: &[(String, String)]) -> bool {
    let nfs_target = (plan.targets.iter()).any(|t| {
        t.name == c.target && matches!(t.kind, crate::experiment::plan::TargetKind::Nfs { .. })
    });
    nfs_target && values.iter().any(|(k, v)| k == "nfs" && v == "true")
}

/// One run's child.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Child {
    /// Its seconds (what the results database stores as the run's `elapsed_s`).
    pub s: f64,
    /// The seconds of its measured pass alone (what a published figure's cell's rounds
    /// are decided by: under a second, up to ten rounds).
    pub measured_s: f64,
    /// Filesets the first run of a workload on a target lays out and the next ones reuse:
    /// what names them (with the target), and the seconds the first run adds.
    pub reused: Option<(String, f64)>,
}

/// The child of one run of `c`; None when nothing tells how long its measurement takes.
pub(super) fn child(plan: &Plan, c: &Cell) -> Option<Child> {
    let cx = cx(plan, c);
    let w = kinds::work(&cx)?;
    let reused = w.reused.as_ref().map(|(key, layout_s, bytes)| {
        let written = if cx.cold {
            *bytes
        } else {
            throttled(&cx, *bytes)
        };
        (
            format!("{} {key}", c.target),
            layout_s + written / cx.speed.write_bps,
        )
    });
    Some(Child {
        s: passes(&cx, &w).min(plan.time_limit_s),
        measured_s: w.work_s,
        reused,
    })
}

/// The child's passes: for `layout` and `scan` the one the runner starts; for the others
/// a preparation, the cache state asked for, the measured pass and its clean-up, the probe
/// of a simulated disk, and a warm cell's unmeasured pass first (a workload's warm-up
/// seconds instead).
fn passes(cx: &Cx, w: &Work) -> f64 {
    let s = &cx.speed;
    let throttled = throttled(cx, w.dirty_bytes);
    let pass = w.prep_s + throttled / s.write_bps + w.work_s + w.cleanup_s;
    if !cx.m.kind.takes_cold() {
        return cpu(TOOL_S) + pass;
    }
    let own = match cx.m.kind {
        Kind::Workload => WORKLOAD_CHILD_S,
        _ => CHILD_S,
    };
    let mut t = cpu(own) + pass + s.probe_s;
    match cx.cell.cache.as_str() {
        "cold" => t += DROP_S + (w.dirty_bytes - throttled) / s.write_bps,
        "remount" => t += REMOUNT_S + (w.dirty_bytes - throttled) / s.write_bps,
        "warm" => t += w.warm_s.unwrap_or(pass),
        _ => {}
    }
    t
}

/// Of `bytes` written into the page cache, those a memory cgroup's writer waits for: past
/// the dirty share of its limit, they are written back at the device's rate first.
fn throttled(cx: &Cx, bytes: f64) -> f64 {
    memory_limit(cx.plan, cx.cell).map_or(0.0, |l| (bytes - l as f64 * DIRTY_SHARE).max(0.0))
}

/// What the runner adds to a run of `c` around the child: its own part, a cold `layout`
/// or `scan` cell's cache drop (or else its commit of what the last run left), a warm one's
/// unmeasured pass, and the backgrounds that prepare before the measurement or are waited
/// for after it.
pub(super) fn runner_s(plan: &Plan, c: &Cell, child: f64) -> f64 {
    let kind = plan.measurements[c.measurement].kind;
    let mut t = cpu(RUNNER_S);
    let runner_drops = c.cache == "cold" && !kind.takes_cold();
    if runner_drops {
        t += DROP_S;
    } else if c.cache != "remount" {
        t += SYNCFS_ACCESSES * Speed::of(plan, &c.target).access_s;
    }
    if c.cache == "warm" && !kind.takes_cold() {
        t += child;
    }
    t + backgrounds_s(plan, c)
}

/// The cell's backgrounds that are measurements: each prepares before the measured child
/// starts (the runner waits for it), and one left to run to its end is waited for, its own
/// probe included.
fn backgrounds_s(plan: &Plan, c: &Cell) -> f64 {
    let mut t = 0.0;
    for bg in background::of_cell(plan, c) {
        let BgKind::Measure(m) = &bg.kind else {
            continue;
        };
        let mut bcx = cx(plan, c);
        bcx.m = m;
        bcx.values = m.params.clone();
        bcx.cold = false;
        let Some(w) = kinds::work(&bcx) else {
            continue;
        };
        t += cpu(CHILD_S) + w.prep_s;
        if bg.stop == BgStop::End && !matches!(m.kind, Kind::Scan | Kind::Layout) {
            t += bcx.speed.probe_s;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(cache: &str) -> Plan {
        plan_of(cache, 2.0)
    }

    fn plan_of(cache: &str, duration: f64) -> Plan {
        let text = format!(
            r#"
[experiment]
name = "t"
repetitions = 1
[[target]]
name = "d"
kind = "disk"
model = "hdd"
size = "256M"
fs = "ext4"
[factors]
cache = ["{cache}"]
[[measurement]]
name = "w"
kind = "workload"
params = {{ workload = "varmail", nfiles = 100, duration = {duration} }}
"#
        );
        crate::experiment::plan::parse(Path::new("t.toml"), &text, false).unwrap()
    }

    #[test]
    fn a_run_on_a_simulated_disk_waits_for_its_probe() {
        let p = plan("cold");
        let c = &super::super::super::cells(&p)[0];
        let s = child(&p, c).unwrap().s;
        // Two seconds measured, the probe's wait, the child's own time and the drop.
        assert!(
            s > 2.0 + fsbench_tools::disk::lateness::STATS_WAIT_S + DROP_S,
            "{s}"
        );
        assert!(s < 6.0, "{s}");
    }

    #[test]
    fn a_warm_workload_adds_its_warm_up_seconds() {
        let warm = |d: f64| {
            let p = plan_of("warm", d);
            child(&p, &super::super::super::cells(&p)[0]).unwrap().s
        };
        // Two seconds more, and a warm-up of a quarter of the duration: 1 s instead of 0.5.
        let more = warm(4.0) - warm(2.0);
        assert!((more - 2.5).abs() < 1e-9, "{more}");
    }
}
