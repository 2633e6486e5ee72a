//! The targets as set up for a round of cells, their device settings, and the trees
//! `find` cells walk.

use super::{tree_dir_name, Cell};
use crate::experiment::plan::{Device, Plan, SETTING_FACTORS};
use crate::experiment::target;
use crate::experiment::target::{Journal, Ready};
use anyhow::{bail, Context, Result};
use std::path::Path;

/// The targets as set up, with the journal that tears them down.
pub(super) struct Env {
    pub(super) journal: Journal,
    pub(super) ready: Vec<Ready>,
    pub(super) up: bool,
    /// With device settings as factors: each target's device settings as set up (the
    /// values cells vary from), and what the last cell asked of each device.
    pub(super) device_base: std::collections::BTreeMap<String, Device>,
    pub(super) device_last: std::collections::BTreeMap<String, Device>,
}

impl Env {
    pub(super) fn set_up(
        &mut self,
        plan: &Plan,
        cells: &[Cell],
        outdir: &Path,
        generation: u32,
        reuse_aged: bool,
    ) -> Result<()> {
        self.ready.clear();
        if plan.pause_reclaim {
            self.pause_reclaim()?;
        }
        for t in plan.targets_in_setup_order() {
            fsbench_base::errln!("fsbench: setting up target {} ({})", t.name, t.kind_name());
            let ctx = target::Ctx {
                outdir,
                plan,
                ready: &self.ready,
                generation,
                reuse_aged,
            };
            let mut r = target::set_up(t, &ctx, &mut self.journal)
                .with_context(|| format!("setting up target {}", t.name))?;
            // A simulated disk's aging ran on its image before the model served it.
            if let Some(a) = t.age.as_ref().filter(|_| !r.applied.contains_key("age")) {
                fsbench_base::errln!("fsbench: aging target {}: {}", t.name, a.describe());
                target::age::run(
                    a,
                    &mut r,
                    outdir,
                    &format!("g{generation}"),
                    &mut self.journal,
                )?;
            }
            self.ready.push(r);
        }
        self.check_schedulers(plan)?;
        self.make_trees(plan, cells)?;
        self.device_base.clear();
        self.device_last.clear();
        if plan
            .setting_levels
            .iter()
            .any(|(k, _)| SETTING_FACTORS.contains(&k.as_str()))
        {
            for tn in &plan.target_levels {
                let r = self.ready(tn);
                let dev = r.device.clone().with_context(|| {
                    format!(
                        "target {tn}: {} is on no block device, and the plan varies device settings",
                        r.dir.display()
                    )
                })?;
                let mut base = target::device::current(&dev)?;
                let t = plan.target(tn);
                if t.device.scheduler.is_some() && t.device.scheduler == base.scheduler {
                    base.tunables = t.device.tunables.clone();
                }
                self.device_base.insert(tn.clone(), base);
            }
        }
        self.up = true;
        Ok(())
    }

    /// Pause every DAMON reclaimer running (`proactive_reclaim = "pause"`), each turned on
    /// again at teardown: they page out cached pages they judge idle with or without memory
    /// pressure, so a warm cell would read its device.
    fn pause_reclaim(&mut self) -> Result<()> {
        use fsbench_base::sys::damon;
        for r in damon::reclaimers() {
            self.journal
                .push(target::Undo::ResumeReclaim { kdamond: r.kdamond })?;
            damon::set_running(r.kdamond, false).with_context(|| {
                format!("pausing the kernel's DAMON reclaim ({})", r.describe())
            })?;
            fsbench_base::errln!(
                "fsbench: paused the kernel's proactive reclaim ({}) until teardown",
                r.describe()
            );
        }
        Ok(())
    }

    /// The trees of `find`, `read` and `scan` cells (`tree_files`), and of those their `path`
    /// or their backgrounds walk, made once per set-up; a merged overlay's in its layers,
    /// after which it is mounted.
    fn make_trees(&mut self, plan: &Plan, cells: &[Cell]) -> Result<()> {
        let needed = cells.iter().flat_map(|c| {
            super::trees_needed(plan, c)
                .into_iter()
                .map(move |i| (c, i))
        });
        for (c, i) in needed {
            let m = &plan.measurements[i];
            let Some(files) = m
                .params
                .iter()
                .find(|(k, _)| k == "tree_files")
                .map(|(_, v)| v.parse::<u64>().unwrap_or(0))
            else {
                continue;
            };
            let dirs = m
                .params
                .iter()
                .find(|(k, _)| k == "tree_dirs")
                .map_or(10, |(_, v)| v.parse::<u64>().unwrap_or(10));
            let file_size = match m.params.iter().find(|(k, _)| k == "tree_file_size") {
                Some((_, v)) => Some(
                    fsbench_base::units::parse_size(v)
                        .map_err(|e| anyhow::anyhow!("{}: tree_file_size: {e}", m.name))?,
                ),
                None => None,
            };
            let idx = self
                .ready
                .iter()
                .position(|r| r.name == c.target)
                .expect("target set up");
            let name = tree_dir_name(&m.name);
            if let Some((lower, upper)) = target::overlay::tree_layers(&self.ready[idx], &name) {
                // A merged overlay: the tree in its lower layer, its directories in both.
                if lower.exists() {
                    continue;
                }
                make_tree(&lower, files, dirs.max(1), file_size, &mut self.journal)?;
                let n = target::overlay::mirror_dirs(&lower, &upper, &mut self.journal)?;
                let a = &mut self.ready[idx].applied;
                a.insert(format!("merged_dirs/{name}"), n.into());
                continue;
            }
            let tree = self.ready[idx].dir.join(name);
            if tree.exists() {
                continue;
            }
            make_tree(&tree, files, dirs.max(1), file_size, &mut self.journal)?;
        }
        // Merged overlays are mounted once their trees are in their layers.
        for r in &mut self.ready {
            target::overlay::finish(r, &mut self.journal)?;
        }
        Ok(())
    }

    /// The targets' devices as set up run under one I/O scheduler, or the plan says why not
    /// (it names each scheduler that differs, or varies it): an existing directory's device
    /// keeps the scheduler it had, known only now.
    fn check_schedulers(&self, plan: &Plan) -> Result<()> {
        use crate::experiment::plan::schedulers;
        if schedulers::varied(&plan.setting_levels, &plan.devices) {
            return Ok(());
        }
        let actual: Vec<(String, String)> = plan
            .target_levels
            .iter()
            .filter_map(|n| {
                let s = self.ready(n).applied.get("scheduler")?.as_str()?;
                Some((n.clone(), s.to_string()))
            })
            .collect();
        match schedulers::mixed(&plan.targets, &actual) {
            Some((at, why)) => bail!("{at}: {why}"),
            None => Ok(()),
        }
    }

    /// Bring the cell's target device to the cell's settings (device-setting factors).
    pub(super) fn apply_settings(&mut self, plan: &Plan, cell: &Cell) -> Result<()> {
        let t = plan.target(&cell.target);
        if matches!(t.kind, crate::experiment::plan::TargetKind::Remote { .. }) {
            let r = self
                .ready
                .iter_mut()
                .find(|r| r.name == cell.target)
                .expect("target set up");
            return target::remote::apply_cell(t, &cell.settings, r);
        }
        let device_settings: Vec<(String, String)> = cell
            .settings
            .iter()
            .filter(|(k, _)| SETTING_FACTORS.contains(&k.as_str()))
            .cloned()
            .collect();
        if device_settings.is_empty() {
            return Ok(());
        }
        let base = &self.device_base[&cell.target];
        let want = target::device::for_cell(base, &device_settings, &plan.devices);
        let idx = self
            .ready
            .iter()
            .position(|r| r.name == cell.target)
            .expect("target set up");
        let dev = self.ready[idx].device.clone().unwrap_or_default();
        let last = self.device_last.get(&dev).cloned();
        target::device::apply_cell(
            &want,
            last.as_ref(),
            &mut self.ready[idx],
            &mut self.journal,
        )
        .with_context(|| {
            format!(
                "target {}: device settings {}",
                cell.target,
                cell.settings
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        })?;
        self.device_last.insert(dev, want);
        Ok(())
    }

    pub(super) fn tear_down(&mut self) -> Result<()> {
        self.up = false;
        self.ready.clear();
        self.journal.undo_to(0)
    }

    pub(super) fn ready(&self, name: &str) -> &Ready {
        self.ready
            .iter()
            .find(|r| r.name == name)
            .expect("target set up")
    }
}

/// A tree of `files` files over `dirs` directories, two levels deep: small files (1-8 KiB),
/// or each of `file_size` bytes.
fn make_tree(
    dir: &Path,
    files: u64,
    dirs: u64,
    file_size: Option<u64>,
    j: &mut Journal,
) -> Result<()> {
    target::make_marked_dir(dir, j)?;
    let per_top = (dirs as f64).sqrt().ceil().max(1.0) as u64;
    let buf = vec![b'x'; file_size.unwrap_or(8192) as usize];
    for d in 0..dirs {
        std::fs::create_dir_all(dir.join(format!("d{}", d / per_top)).join(format!("d{d}")))?;
    }
    for f in 0..files {
        let d = f % dirs;
        let p = dir
            .join(format!("d{}", d / per_top))
            .join(format!("d{d}"))
            .join(format!("f{f}"));
        let size = match file_size {
            Some(s) => s as usize,
            None => 1024 * (1 + (f * 2654435761 % 8) as usize),
        };
        std::fs::write(&p, &buf[..size]).with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}
