//! `fsbench experiment --dry-run`: the set-up steps and every cell's real command (its
//! `--cold`, its warm-up pass, its memory cgroup), and how long the runs should take.

use super::measure::memory_limit;
use super::{command, fmt_secs, Cell};
use crate::experiment::plan::{Fresh, Kind, Plan};
use crate::experiment::target;
use std::path::Path;

pub(super) fn print(plan: &Plan, cells: &[Cell], outdir: &Path) {
    fsbench_base::outln!(
        "experiment {} ({}): {} cells x {} repetitions = {} runs, order = \"{}\", fresh = \"{}\" ({}){}",
        plan.name,
        if plan.quick { "quick scale" } else { "full scale" },
        cells.len(),
        plan.repetitions,
        cells.len() as u64 * plan.repetitions as u64,
        plan.order.name(),
        plan.fresh.name(),
        match plan.fresh {
            Fresh::Experiment => "targets set up once",
            Fresh::Repetition => "targets set up again before each round",
        },
        if plan.warmup_runs > 0 { format!(", {} warm-up run(s) per cell", plan.warmup_runs) } else { String::new() }
    );
    if let Some(a) = plan.adaptive {
        fsbench_base::outln!(
            "adaptive repetitions: after {} rounds, more rounds of the cells whose first headline figure's 95% interval is wider than ±{}% of its mean, up to {} rounds ({} runs at most)",
            a.min,
            a.ci * 100.0,
            a.max,
            cells.len() as u64 * a.max as u64
        );
    }
    for line in super::published::dry_run_lines(plan, cells) {
        fsbench_base::outln!("{line}");
    }
    fsbench_base::outln!("\nset-up steps:");
    if plan.pause_reclaim {
        let now = fsbench_base::sys::damon::summary();
        fsbench_base::outln!(
            "  {:<12} pause the kernel's DAMON reclaim until teardown ({})  [root]",
            "(machine)",
            if now.is_empty() {
                "none runs now".to_string()
            } else {
                now
            }
        );
    }
    for t in plan.targets_in_setup_order() {
        for (s, root) in target::steps(t) {
            fsbench_base::outln!("  {:<12} {s}{}", t.name, if root { "  [root]" } else { "" });
        }
    }
    let todo = vec![plan.repetitions; cells.len()];
    let e = super::estimate::of(plan, cells, outdir, &todo);
    fsbench_base::outln!("\ncells:");
    for (i, c) in cells.iter().enumerate() {
        fsbench_base::outln!(
            "  {:>3}  {}  (~{} a run)",
            c.idx + 1,
            c.describe(plan),
            secs(e.per_run[i])
        );
        for line in cell_lines(plan, c) {
            fsbench_base::outln!("       {line}");
        }
    }
    fsbench_base::outln!();
    for line in e.lines(plan, outdir) {
        fsbench_base::outln!("{line}");
    }
}

/// A run's seconds: tenths under a minute.
fn secs(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        fmt_secs(s)
    }
}

/// What the runner does for one run of a cell, in order.
fn cell_lines(plan: &Plan, c: &Cell) -> Vec<String> {
    let kind = plan.measurements[c.measurement].kind;
    let args = command(
        plan,
        c,
        Path::new("TARGET"),
        Path::new("RUN.json"),
        Path::new("OUTDIR/scratch"),
    );
    let cmd = format!("fsbench {}", args.join(" "));
    let mut v = Vec::new();
    let cg = memory_limit(plan, c).map(|l| {
        format!(
            " (in a memory cgroup limited to {})",
            fsbench_base::units::human_bytes(l as f64)
        )
    });
    let cg = cg.unwrap_or_default();
    v.extend(background_lines(plan, c));
    match c.cache.as_str() {
        "warm" if !kind.takes_cold() => {
            v.push(format!("warm-up pass (unmeasured): {cmd}{cg}"));
            v.push(format!("measured: {cmd}{cg}"));
        }
        "warm" if kind == Kind::Workload && args.iter().any(|a| a == "--warmup") => {
            v.push(format!("{cmd}{cg}"));
            v.push("  (the child lays out its filesets, then runs --warmup seconds unmeasured before the measured window)".into());
        }
        "warm" => {
            v.push(format!("{cmd}{cg}"));
            v.push("  (the child runs the measurement once unmeasured first: --warmup 1)".into());
        }
        "cold" if !kind.takes_cold() => {
            v.push("sync; echo 3 > /proc/sys/vm/drop_caches (the runner)".into());
            v.push(format!("{cmd}{cg}"));
        }
        "cold" => {
            v.push(format!("{cmd}{cg}"));
            v.push("  (--cold: the child syncs and drops the caches after its preparation, right before measuring)".into());
        }
        _ => v.push(format!("{cmd}{cg}")),
    }
    v
}

/// The cell's backgrounds: each one's command, priority and when it stops.
fn background_lines(plan: &Plan, c: &Cell) -> Vec<String> {
    let mut v = Vec::new();
    for bg in super::background::of_cell(plan, c) {
        let json = format!("RUN-bg-{}.json", bg.name);
        let argv = super::background::argv(
            &bg,
            Path::new("TARGET"),
            Path::new(&json),
            Path::new("OUTDIR/scratch"),
        )
        .unwrap_or_default();
        let mut argv = argv.into_iter();
        let program = match &bg.kind {
            crate::experiment::plan::BgKind::Measure(_) => {
                argv.next();
                "fsbench".to_string()
            }
            _ => argv.next().unwrap_or_default(),
        };
        let rest: Vec<String> = argv.collect();
        v.push(format!(
            "background {} (in TARGET, {}): {program} {}",
            bg.name,
            super::background::priority_text(&bg),
            rest.join(" ")
        ));
        v.push(format!(
            "  (started before the measurement{}; {})",
            if matches!(&bg.kind, crate::experiment::plan::BgKind::Measure(m) if !matches!(m.kind, Kind::Scan | Kind::Layout)) {
                ", which waits until its measured window starts"
            } else {
                ""
            },
            match bg.stop {
                crate::experiment::plan::BgStop::After if bg.restart => {
                    "started again each time it ends; stopped with SIGINT after the measurement"
                }
                crate::experiment::plan::BgStop::After => "stopped with SIGINT after it",
                crate::experiment::plan::BgStop::End => "left to run to its end, within the time limit",
            }
        ));
    }
    v
}
