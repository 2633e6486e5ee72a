//! The matrix and its execution: cells, order, set-up, cold caches, time limits, progress,
//! resume, and the noise guard.
//!
//! Each measurement runs as a child `fsbench` process with `--json FILE`: every kind keeps
//! one contract (the JSON it already writes), cells are isolated from each other, and a
//! stuck or interrupted measurement can be stopped without taking the runner down.

use anyhow::{bail, Result};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::path::{Path, PathBuf};

use super::plan::{Arg, Kind, Order, Plan, SETTING_FACTORS};
use super::target::{self, Journal};

mod background;
mod cache_blind;
mod cgroup;
mod dryrun;
mod env;
mod estimate;
mod flags;
mod measure;
mod published;
mod session;

pub use cache_blind::cache_warnings;
pub use session::run;

/// One combination of factor levels.
#[derive(Debug, Clone)]
pub struct Cell {
    pub idx: usize,
    pub measurement: usize,
    pub target: String,
    pub cache: String,
    /// The plan-wide device-setting factors and their levels in this cell.
    pub settings: Vec<(String, String)>,
    /// The measurement's parameter factors and their levels in this cell.
    pub factors: Vec<(String, String)>,
}

impl Cell {
    /// Every factor of the cell, plan-wide ones first.
    pub fn labels(&self, plan: &Plan) -> Vec<(String, String)> {
        let mut v = vec![
            (
                "measurement".to_string(),
                plan.measurements[self.measurement].name.clone(),
            ),
            ("target".to_string(), self.target.clone()),
            ("cache".to_string(), self.cache.clone()),
        ];
        v.extend(self.settings.iter().cloned());
        v.extend(self.factors.iter().cloned());
        v
    }

    pub fn describe(&self, plan: &Plan) -> String {
        self.labels(plan)
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The cartesian product of the factors, per measurement, less the excluded combinations.
/// Indices are stable for a given plan, which is what --resume relies on.
fn product(factors: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (k, levels) in factors {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                levels.iter().map(move |l| {
                    let mut c = c.clone();
                    c.push((k.clone(), l.clone()));
                    c
                })
            })
            .collect();
    }
    combos
}

/// The most cells a plan may have. Each cell is measured at least once per repetition, for
/// a second or more: a plan past this bound is a mistake in its factors (an extra level
/// list, a range meant as two values), not an experiment that could finish.
pub const MAX_CELLS: usize = 100_000;

/// How many cells the plan's factors make before exclusions (saturating), counted without
/// making them.
pub fn planned_cells(plan: &Plan) -> usize {
    let count =
        |f: &[(String, Vec<String>)]| f.iter().fold(1usize, |n, (_, l)| n.saturating_mul(l.len()));
    let per = plan
        .target_levels
        .len()
        .saturating_mul(plan.cache_levels.len())
        .saturating_mul(count(&plan.setting_levels));
    plan.measurements.iter().fold(0usize, |n, m| {
        n.saturating_add(per.saturating_mul(count(&m.factors)))
    })
}

pub fn cells(plan: &Plan) -> Vec<Cell> {
    let mut out = Vec::new();
    let settings = product(&plan.setting_levels);
    for (mi, m) in plan.measurements.iter().enumerate() {
        let combos = product(&m.factors);
        for t in &plan.target_levels {
            for cache in &plan.cache_levels {
                for sv in &settings {
                    for f in &combos {
                        let cell = Cell {
                            idx: 0,
                            measurement: mi,
                            target: t.clone(),
                            cache: cache.clone(),
                            settings: sv.clone(),
                            factors: f.clone(),
                        };
                        let labels = cell.labels(plan);
                        let excluded = plan.excludes.iter().any(|ex| {
                            ex.iter()
                                .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
                        });
                        if !excluded {
                            out.push(cell);
                        }
                    }
                }
            }
        }
    }
    for (i, c) in out.iter_mut().enumerate() {
        c.idx = i;
    }
    out
}

/// The order of the cells in repetition round `round`: never all repetitions of one cell
/// before the next. Interleaved rotates the declaration order by one cell per round;
/// random draws a permutation per round from the plan's seed.
pub fn order(plan: &Plan, n: usize, round: u32) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    match plan.order {
        Order::Interleaved => {
            if n > 0 {
                v.rotate_left(round as usize % n);
            }
        }
        Order::Random => {
            let mut rng = rand_pcg::Pcg64::seed_from_u64(
                plan.seed ^ (round as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            );
            v.shuffle(&mut rng);
        }
    }
    v
}

/// Where a `find`, `layout` or `scan` measurement looks, relative to the target.
fn walk_path(m: &super::plan::Measurement) -> Option<String> {
    if let Some((_, p)) = m.params.iter().find(|(k, _)| k == "path") {
        return Some(p.clone());
    }
    if m.kind.makes_tree() && m.params.iter().any(|(k, _)| k == "tree_files") {
        return Some(tree_dir_name(&m.name));
    }
    None
}

fn tree_dir_name(measurement: &str) -> String {
    format!("fsbench-tree-{measurement}")
}

/// The measurements whose trees (`tree_files`) cell `c` needs on its target: its own, the
/// one its `path` walks, and those its backgrounds walk (a cleaner walking the tree of a
/// `find` measurement that does not run on that target).
pub(super) fn trees_needed(plan: &Plan, c: &Cell) -> Vec<usize> {
    let mut walkers = vec![&plan.measurements[c.measurement]];
    for (factor, level) in &c.factors {
        if let Some(super::plan::BgKind::Measure(m)) =
            plan.background(factor, level).map(|b| &b.kind)
        {
            walkers.push(m);
        }
    }
    let mut out: Vec<usize> = Vec::new();
    for w in walkers {
        let path = w.params.iter().find(|(k, _)| k == "path").map(|(_, p)| p);
        let maker = plan.measurements.iter().position(|o| {
            o.kind.makes_tree()
                && o.params.iter().any(|(k, _)| k == "tree_files")
                && (std::ptr::eq(o, w) || path == Some(&tree_dir_name(&o.name)))
        });
        if let Some(i) = maker.filter(|i| !out.contains(i)) {
            out.push(i);
        }
    }
    out
}

/// The child's command line (after the binary), measuring in `dir`, writing `json`;
/// `scratch` is the experiment's local directory for what a measurement writes beside a
/// target it only reads (a build with `src`).
pub fn command(
    plan: &Plan,
    cell: &Cell,
    dir: &Path,
    json_out: &Path,
    scratch: &Path,
) -> Vec<String> {
    let m = &plan.measurements[cell.measurement];
    let mut values: Vec<(String, String)> = m.params.clone();
    // A background factor's level names what runs beside the measurement, not a flag.
    values.extend(
        cell.factors
            .iter()
            .filter(|(k, _)| !plan.is_background_factor(k))
            .cloned(),
    );
    let mut args = kind_args(m, &values, dir, json_out, scratch);
    args.extend(cache_args(m, &values, &cell.cache));
    args
}

/// A cell's command as the results database stores it: the places (target, JSON file,
/// scratch) as placeholders, so a cell measured before is found again by its command.
pub(super) fn stored_command(plan: &Plan, cell: &Cell) -> Vec<String> {
    command(
        plan,
        cell,
        Path::new("{target}"),
        Path::new("{json}"),
        Path::new("{scratch}"),
    )
}

/// The command line of measurement `m` with parameter `values`, measuring in `dir` and
/// writing `json_out`, without the cache options (a background's command is this too).
pub fn kind_args(
    m: &super::plan::Measurement,
    values: &[(String, String)],
    dir: &Path,
    json_out: &Path,
    scratch: &Path,
) -> Vec<String> {
    let mut args = vec![m.kind.subcommand().to_string()];
    let pos = values
        .iter()
        .find(|(k, _)| matches!(m.kind.param(k), Some((_, _, Arg::Positional, _))))
        .map(|(_, v)| v.clone());
    match m.kind {
        Kind::Workload | Kind::Postmark => {
            if let Some(p) = pos {
                args.push(p);
            }
            if values.iter().any(|(k, v)| k == "nfs" && v == "true") {
                // Over the protocol: the URL is the target's, known once it is up.
                args.extend(["--nfs".into(), crate::experiment::plan::NFS_URL.into()]);
            } else {
                args.extend(["--dir".into(), dir.display().to_string()]);
            }
        }
        Kind::Build => match values.iter().find(|(k, _)| k == "src") {
            // The target's tree is built; objects and output go to the local scratch.
            Some((_, src)) => args.extend([
                "--src".into(),
                if src == "." {
                    dir.display().to_string()
                } else {
                    dir.join(src).display().to_string()
                },
                "--dir".into(),
                scratch.display().to_string(),
            ]),
            None => args.extend(["--dir".into(), dir.display().to_string()]),
        },
        Kind::Andrew | Kind::Prune => args.extend(["--dir".into(), dir.display().to_string()]),
        Kind::Replay => {
            args.push("replay".into());
            if let Some(p) = pos {
                args.push(p);
            }
            match values.iter().find(|(k, _)| k == "over") {
                // Over the target's own files; the (empty) run directory goes to scratch.
                Some((_, over)) => args.extend([
                    "--over".into(),
                    if over == "." {
                        dir.display().to_string()
                    } else {
                        dir.join(over).display().to_string()
                    },
                    "--dir".into(),
                    scratch.display().to_string(),
                ]),
                None => args.extend(["--dir".into(), dir.display().to_string()]),
            }
        }
        Kind::Hot => args.push(dir.display().to_string()),
        Kind::Find | Kind::Read | Kind::Layout | Kind::Scan => {
            let d = match walk_path(m) {
                Some(p) => dir.join(p),
                None => dir.to_path_buf(),
            };
            args.push(d.display().to_string());
        }
    }
    args.extend(["--json".into(), json_out.display().to_string()]);
    for (k, v) in values {
        match m.kind.param(k) {
            Some((_, flag, Arg::Value, _)) => args.extend([flag.to_string(), v.clone()]),
            Some((_, flag, Arg::Switch, _)) => {
                if v == "true" {
                    args.push(flag.to_string());
                }
            }
            Some(_) => {}
            None => args.extend(["-s".into(), format!("{k}={v}")]),
        }
    }
    if m.kind == Kind::Workload {
        args.push("-q".into());
    }
    args
}

/// The child's own cache options: a cold cell's child drops the caches itself (`--cold`,
/// after its preparation: the layout, the source tree, the listing) so that its results say
/// so; a warm cell's child runs the measurement once unmeasured first (`--warmup 1`, a
/// workload's layout and then [`workload_warmup_s`] of its run, or only its layout when it
/// ends by itself). Layout and scan take
/// neither: the runner drops the caches and runs their warm-up pass itself.
fn cache_args(
    m: &super::plan::Measurement,
    values: &[(String, String)],
    cache: &str,
) -> Vec<String> {
    if !m.kind.takes_cold() {
        return Vec::new();
    }
    match cache {
        "cold" => vec!["--cold".into()],
        "warm" if m.kind == Kind::Workload => {
            if values.iter().any(|(k, _)| k == "warmup") || m.ends_by_itself {
                // The plan chose the warm-up itself; or the workload counts its way to its end,
                // and a warm-up would use up its counts: its layout, just written, is its
                // warm state.
                return Vec::new();
            }
            let duration = values
                .iter()
                .find(|(k, _)| k == "duration")
                .and_then(|(_, v)| v.parse::<f64>().ok());
            vec!["--warmup".into(), units_secs(workload_warmup_s(duration))]
        }
        "warm" => vec!["--warmup".into(), "1".into()],
        _ => Vec::new(),
    }
}

/// A warm workload cell's warm-up after its layout: a quarter of its duration, at most 5 s
/// (5 s when the plan does not fix the duration). Short enough that a workload which runs out
/// of files still reaches its measured window, long enough to read back what it touches.
pub fn workload_warmup_s(duration: Option<f64>) -> f64 {
    duration.map_or(5.0, |d| (d / 4.0).min(5.0))
}

fn units_secs(s: f64) -> String {
    let t = format!("{s:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Options of `fsbench experiment`.
pub struct Options {
    pub plan: PathBuf,
    pub outdir: Option<PathBuf>,
    pub quick: bool,
    pub dry_run: bool,
    pub resume: bool,
    pub strict: bool,
}

/// Steps that need root, across the plan's targets and protocol.
pub fn root_steps(plan: &Plan, cells: &[Cell]) -> Vec<String> {
    let mut v = Vec::new();
    for t in plan.targets_in_setup_order() {
        for (s, root) in target::steps(t) {
            if root {
                v.push(format!("target {}: {s}", t.name));
            }
        }
    }
    if cells.iter().any(|c| c.cache == "cold") {
        v.push("cache = cold: sync and drop the page cache before each measurement".into());
    }
    for (k, levels) in &plan.setting_levels {
        if SETTING_FACTORS.contains(&k.as_str()) {
            v.push(format!(
                "factor {k} ({}): write the device's settings under /sys/block/DEV/queue before each measurement",
                levels.join(", ")
            ));
        }
    }
    for b in plan.backgrounds.iter().filter(|b| b.needs_root()) {
        v.push(format!(
            "background {}: {} (a negative nice or the realtime I/O class)",
            b.name,
            background::priority_text(b)
        ));
    }
    if plan.memory_at.is_some() {
        v.push("memory: make a memory cgroup for each measured run with a limit".into());
    }
    if cells.iter().any(|c| c.cache == "remount") {
        v.push(
            "cache = remount: unmount and mount the target's file system before each measurement"
                .into(),
        );
    }
    v
}

/// Programs the plan's set-up runs that are not on PATH.
pub fn missing_tools(plan: &Plan) -> Vec<String> {
    let mut need: Vec<String> = Vec::new();
    for t in plan.targets_in_setup_order() {
        match &t.kind {
            super::plan::TargetKind::Image { fs, .. } => {
                need.extend([format!("mkfs.{fs}"), "mount".into(), "umount".into()])
            }
            super::plan::TargetKind::Disk { fs, .. } => need.push(format!("mkfs.{fs}")),
            super::plan::TargetKind::Overlay { .. } => {
                need.extend(["mount".into(), "umount".into()])
            }
            super::plan::TargetKind::Nfs { image, .. } => {
                need.extend(["ganesha.nfsd".into(), "nfs-ls".into()]);
                need.extend(image.iter().map(|(_, fs)| format!("mkfs.{fs}")));
            }
            super::plan::TargetKind::Dir { .. } | super::plan::TargetKind::Remote { .. } => {}
        }
    }
    need.sort();
    need.dedup();
    let path = std::env::var_os("PATH").unwrap_or_default();
    need.into_iter()
        .filter(|p| {
            !std::env::split_paths(&path)
                .chain([PathBuf::from("/sbin"), PathBuf::from("/usr/sbin")])
                .any(|d| d.join(p).is_file())
        })
        .collect()
}

const OUT_MARKER: &str = ".fsbench-experiment";

fn fmt_secs(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, s % 3600 / 60, s % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// `fsbench experiment --cleanup OUTDIR`.
pub fn cleanup(outdir: &Path) -> Result<()> {
    if !outdir.join(OUT_MARKER).exists() {
        bail!(
            "{} is not an experiment's output directory (no {OUT_MARKER})",
            outdir.display()
        );
    }
    let n = Journal::cleanup(outdir)?;
    fsbench_base::errln!(
        "fsbench: cleanup: {n} step(s) undone in {}",
        outdir.display()
    );
    if let Some(k) = crate::experiment::target::kept::described(outdir) {
        fsbench_base::errln!(
            "fsbench: cleanup: {k} stay for --resume (removed when the experiment finishes; delete the directory to give them up)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(order: &str) -> Plan {
        let text = format!(
            r#"
[experiment]
name = "t"
repetitions = 3
order = "{order}"
[[target]]
name = "a"
kind = "dir"
path = "/tmp"
[[target]]
name = "b"
kind = "dir"
path = "/tmp"
[factors]
target = ["a", "b"]
[[measurement]]
name = "pm"
kind = "postmark"
params = {{ number = 10 }}
factors = {{ instances = [1, 2, 4] }}
[[exclude]]
target = "b"
instances = 4
"#
        );
        super::super::plan::parse(Path::new("t.toml"), &text, false).unwrap()
    }

    #[test]
    fn product_less_exclusions() {
        let p = plan("random");
        let c = cells(&p);
        assert_eq!(c.len(), 5);
        assert!(c
            .iter()
            .all(|c| !(c.target == "b" && c.factors[0].1 == "4")));
        let args = command(
            &p,
            &c[1],
            Path::new("/x"),
            Path::new("/j.json"),
            Path::new("/s"),
        );
        assert_eq!(
            args,
            [
                "postmark",
                "--dir",
                "/x",
                "--json",
                "/j.json",
                "--number",
                "10",
                "--instances",
                "2",
                "--warmup",
                "1"
            ]
        );
    }

    #[test]
    fn orders_interleave() {
        let p = plan("interleaved");
        assert_eq!(order(&p, 4, 0), [0, 1, 2, 3]);
        assert_eq!(order(&p, 4, 1), [1, 2, 3, 0]);
        let r = plan("random");
        let a = order(&r, 8, 0);
        let b = order(&r, 8, 1);
        assert_ne!(a, b, "a new permutation each round");
        assert_eq!(a, order(&r, 8, 0), "reproducible from the seed");
        let mut s = a.clone();
        s.sort();
        assert_eq!(s, (0..8).collect::<Vec<_>>());
    }
}
