//! `fsbench run`: a workload as one more [`Measurement`]. The preparation is the engine's
//! (run directory, the script's commands, the layout), one run of the engine's measure loop
//! is the measurement, and the driver in [`fsbench_harness::measure`] does the rest as for every
//! benchmark: repetitions, `--cold`, an experiment's remount, the disk probe, the results'
//! calibration. The workload's warm-up is in seconds inside its run, and the engine opens the
//! measured window itself (barrier and marks once its workers are started).

use anyhow::Result;
use fsbench_engine::engine::{self, Prepared, RunOptions};
use fsbench_harness::measure::{MeasureArgs, Measurement, Voice, Window};
use fsbench_model::fio::map::FioJobs;
use fsbench_model::model::Workload;
use fsbench_results::stats::Results;
use std::path::{Path, PathBuf};

/// A run resolved once: the workload built from its source (a `.f` file, a fio job, a
/// built-in), the fio jobs it was mapped from, how the engine runs it and how the driver
/// measures it. The command builds it from its arguments; nothing after reads them again.
pub struct RunSpec {
    pub workload: Workload,
    /// For a fio job: what its report says of the jobs (fio's shapes, notes).
    pub fio: Option<FioJobs>,
    /// The engine's options, from the run directory's parent to the data verification.
    pub options: RunOptions,
    /// Repetitions, `--cold` and the exports, for the measurement driver.
    pub measure: MeasureArgs,
    /// Score the layout of the run directory after each measured run (`--layout`).
    pub layout: bool,
    /// Notes the results start with (where `think=idle` took the idle window, say).
    pub notes: Vec<String>,
}

/// Run `spec` with its repetitions, through the one measurement driver.
pub fn run(spec: &RunSpec) -> Result<Results> {
    let mut run = WorkloadRun {
        spec,
        prepared: None,
        measured: None,
    };
    let mut results = fsbench_harness::measure::drive(&mut run, &spec.measure)?;
    results.notes.splice(0..0, spec.notes.iter().cloned());
    Ok(results)
}

/// One workload, measured as its spec says.
struct WorkloadRun<'a> {
    spec: &'a RunSpec,
    prepared: Option<Prepared>,
    /// The run directory of the last repetition that measured, said afterwards.
    measured: Option<PathBuf>,
}

impl WorkloadRun<'_> {
    fn wl(&self) -> &Workload {
        &self.spec.workload
    }
    fn opts(&self) -> &RunOptions {
        &self.spec.options
    }
}

/// The layout of what a run left in `dir` (synced, so every block has its place), as
/// figures `layout.NAME`: the files the benchmark itself wrote or laid out, scored where
/// they landed.
fn layout_figures(dir: &Path, r: &mut Results) -> Result<()> {
    let l =
        fsbench_engine::layout::layout(dir, &fsbench_base::walk::WalkOptions::default(), true, 0)?;
    let mut put = |k: &str, v: Option<f64>| {
        if let Some(v) = v {
            r.figures.insert(format!("layout.{k}"), v);
        }
    };
    put("score", l.score);
    put("files", Some(l.files as f64));
    put("blocks", Some(l.blocks as f64));
    put("fragments", Some(l.fragments as f64));
    put("split_files", l.split_files.map(|n| n as f64));
    put(
        "split_checked_files",
        l.split_files.map(|_| l.split_checked_files as f64),
    );
    put("split_flex_files", l.split_flex_files.map(|n| n as f64));
    put("locality", l.locality);
    Ok(())
}

impl Measurement for WorkloadRun<'_> {
    fn name(&self) -> &str {
        &self.spec.workload.name
    }
    fn prepare(&mut self) -> Result<()> {
        self.measured = None;
        self.prepared = Some(engine::prepare(self.wl(), self.opts())?);
        Ok(())
    }
    fn run_once(&mut self) -> Result<Results> {
        let spec = self.spec;
        let p = self.prepared.as_mut().expect("prepared");
        let mut r = p.measure(&spec.workload, &spec.options)?;
        self.measured = Some(p.path().to_path_buf());
        if spec.layout {
            layout_figures(p.path(), &mut r)?;
        }
        Ok(r)
    }
    fn target(&self) -> PathBuf {
        self.prepared
            .as_ref()
            .map(|p| p.path().to_path_buf())
            .unwrap_or_else(|| self.opts().parent.clone())
    }
    fn measures(&self) -> bool {
        self.prepared.as_ref().is_none_or(Prepared::measures)
    }
    fn remount(&mut self, remount: &mut dyn FnMut() -> Result<String>) -> Result<String> {
        let p = self.prepared.as_mut().expect("prepared");
        let id = p.release();
        let what = remount()?;
        p.reopen(id)?;
        Ok(what)
    }
    fn cleanup(&mut self) -> Result<()> {
        if let Some(p) = self.prepared.take() {
            p.finish(self.opts().quiet);
        }
        if let Some(dir) = self.measured.take() {
            if !self.opts().quiet {
                say_what_is_left(&dir);
            }
        }
        Ok(())
    }
    fn window(&self) -> Window {
        Window::Own
    }
    fn voice(&self) -> Voice {
        Voice::Workload {
            quiet: self.opts().quiet,
        }
    }
}

/// After a run: whether its directory was removed, or kept (reuse, --keep) and how big it is,
/// so nothing is left behind unnoticed.
fn say_what_is_left(dir: &Path) {
    // A run directory on an NFS export (`nfs://...`) said what became of it when it ended.
    if dir.as_os_str().is_empty() || dir.starts_with("nfs:") {
        return;
    }
    if dir.exists() {
        let b = engine::clean::size_of(dir) as f64;
        fsbench_base::errln!(
            "fsbench: left {} ({}) on disk for later runs; `fsbench clean {}` removes it",
            dir.display(),
            fsbench_base::units::human_bytes(b),
            dir.parent().unwrap_or(dir).display()
        );
    } else {
        fsbench_base::errln!("fsbench: removed {}", dir.display());
    }
}

/// After a run with verification: one line of totals, the first mismatches, and an error
/// when any block failed its check.
pub fn verify_summary(results: &Results) -> Result<()> {
    let (mut blocks, mut bad, mut skipped) = (0, 0, 0);
    let mut first = Vec::new();
    for f in &results.flowops {
        if let Some(v) = &f.verify {
            blocks += v.blocks_checked;
            bad += v.mismatches;
            skipped += v.reads_skipped;
            first.extend(v.first.iter().map(|m| (f.name.clone(), m.clone())));
        }
    }
    fsbench_base::errln!(
        "fsbench: verify: {} checked, {}, {} not checked (a write to the same file ran meanwhile)",
        fsbench_base::units::count(blocks, "block"),
        fsbench_base::units::count(bad, "mismatch"),
        fsbench_base::units::count(skipped, "read"),
    );
    for (name, m) in first.iter().take(5) {
        fsbench_base::errln!(
            "fsbench: verify: {name}: {} at offset {}: expected {}, found {}",
            m.path,
            m.offset,
            m.expected,
            m.found
        );
    }
    if bad > 0 {
        anyhow::bail!(
            "verify: {} (all are in the JSON results)",
            fsbench_base::units::count(bad, "mismatch")
        );
    }
    Ok(())
}
