//! The measurement harness: one contract for everything that measures. `fsbench run` (in
//! [`crate::workload_run`]), the application benchmarks and trace replay are each a
//! [`Measurement`] — prepare what is not measured, measure once, say what it is — and
//! [`drive`] does the rest the same way for all of them: warm-up repetitions that are
//! discarded, `--cold` (sync and drop the kernel's caches before each measured repetition),
//! an experiment's remount, the disk probe, the MPI barrier and trace marks around the
//! measured window, `--repeat N` combined by [`fsbench_results::stats::repeat::combine`] (mean ± 95%
//! confidence interval and CV), host facts and the clock's calibration in every result, and
//! the same exporters (text, JSON, CSV, Markdown).
//!
//! Nothing above this trait knows which benchmark it drives, so an experiment runner can
//! treat every benchmark alike through its `--json` output.

pub mod guard;
#[cfg(feature = "mpi")]
mod ranks;

use anyhow::{bail, Result};
use clap::Args;
use fsbench_base::export::check::Outputs;
use fsbench_base::export::Format;
use fsbench_results::stats::{self, Results};
use std::path::PathBuf;

/// A benchmark that can be measured repeatedly.
pub trait Measurement {
    /// The benchmark's name (the Results' `workload`).
    fn name(&self) -> &str;
    /// Unmeasured set-up before each repetition (e.g. writing a generated tree). Caches are
    /// dropped after it when `--cold` is given.
    fn prepare(&mut self) -> Result<()> {
        Ok(())
    }
    /// Measure once. The returned Results' host facts, calibration and `cold` flag are
    /// filled by [`drive`].
    fn run_once(&mut self) -> Result<Results>;
    /// The directory whose file system is measured (for the host facts). It must exist
    /// when [`Measurement::run_once`] returns.
    fn target(&self) -> PathBuf;
    /// The run directory [`Measurement::prepare`] made and holds open, if any: closed for
    /// an experiment's remount between preparation and measurement.
    fn run_dir(&mut self) -> Option<&mut guard::RunDirGuard> {
        None
    }
    /// Remove what the last repetition created (called after each repetition, also after
    /// one that failed).
    fn cleanup(&mut self) -> Result<()> {
        Ok(())
    }
    /// False when the preparation was all there was to do (a workload script that lays out
    /// and has no `run`): no cache drop, remount, probe or window; [`Measurement::run_once`]
    /// returns what was prepared.
    fn measures(&self) -> bool {
        true
    }
    /// An experiment's remount between preparation and measurement: close what is held
    /// open on the file system, `remount`, open it again. By default the run directory of
    /// [`Measurement::run_dir`].
    fn remount(&mut self, remount: &mut dyn FnMut() -> Result<String>) -> Result<String> {
        let held = self.run_dir().map(|g| g.release());
        let what = remount()?;
        if let (Some(id), Some(g)) = (held, self.run_dir()) {
            g.reopen(id)?;
        }
        Ok(what)
    }
    /// Who opens the measured window.
    fn window(&self) -> Window {
        Window::Driver
    }
    /// How the driver speaks of its steps.
    fn voice(&self) -> Voice {
        Voice::App
    }
}

/// Who opens the measured window: the MPI barrier every rank starts from, the trace marks
/// around it, the block device's reads over it, and the host facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The driver, around [`Measurement::run_once`]; host facts taken after it.
    Driver,
    /// The measurement itself, inside [`Measurement::run_once`]: the engine passes the
    /// barrier and the start mark once all its workers are started, reads the device from
    /// the end of its in-run warm-up, and takes the host facts before starting them.
    Own,
}

/// How the driver speaks of its steps. The application benchmarks and `fsbench run` grew
/// their own words, which users, scripts and the experiment's cache flags read; both are
/// kept, here in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Voice {
    /// "fsbench: NAME repetition I of N"; the notes "cache: WHAT before the measurement",
    /// then "cache: cold: ... after the preparation, ..."; a combined result's notes start
    /// with "repetition 1: ".
    App,
    /// `fsbench run`: "fsbench: repetition I of N" and "fsbench: sync and drop caches"
    /// (neither with `quiet`); the notes "cache: cold: ... after the layout, ...", then
    /// "cache: WHAT after the layout"; a combined result's notes as they are.
    Workload { quiet: bool },
}

impl Voice {
    fn repetition(self, name: &str, i: u32, n: u32) {
        match self {
            Voice::App => fsbench_base::errln!("fsbench: {name} repetition {i} of {n}"),
            Voice::Workload { quiet: false } => {
                fsbench_base::errln!("fsbench: repetition {i} of {n}")
            }
            Voice::Workload { quiet: true } => {}
        }
    }

    fn dropping_caches(self) {
        if self == (Voice::Workload { quiet: false }) {
            fsbench_base::errln!("fsbench: sync and drop caches");
        }
    }

    /// The notes that say the cache state the measurement started from, first in its notes.
    fn cache_notes(self, cold: bool, remounted: Option<&str>) -> Vec<String> {
        let drop = fsbench_engine::engine::COLD_DROP;
        match self {
            Voice::App => {
                let remount = remounted.map(|w| format!("cache: {w} before the measurement"));
                let cold = cold.then(|| {
                    format!(
                        "cache: cold: {drop} after the preparation, right before the measurement"
                    )
                });
                remount.into_iter().chain(cold).collect()
            }
            Voice::Workload { .. } => {
                let cold = cold.then(|| {
                    format!("cache: cold: {drop} after the layout, right before the measurement")
                });
                let remount = remounted.map(|w| format!("cache: {w} after the layout"));
                cold.into_iter().chain(remount).collect()
            }
        }
    }
}

/// Options every application benchmark takes: repetitions, warm-up, cold cache, exports.
#[derive(Args, Debug, Clone, Default)]
pub struct MeasureArgs {
    /// Measure N times and report mean ± 95% confidence interval and coefficient of
    /// variation (each repetition in the JSON's `repetitions`).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeat: u32,
    /// Run N unmeasured repetitions first (to warm caches and the file system) and discard
    /// them.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub warmup: u32,
    /// Before each measured repetition, `sync` and drop the page, dentry and inode caches
    /// (needs root).
    #[arg(long)]
    pub cold: bool,
    /// Write the results as JSON to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the results as CSV to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the results as a Markdown table to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

impl MeasureArgs {
    /// Refuse what cannot be done, before anything is created: a wrong value or an output
    /// that cannot be written is a usage error (status 2).
    pub fn check(&self) -> Result<()> {
        if self.repeat == 0 {
            return Err(fsbench_base::exit::usage(
                "--repeat 0: give the number of measured repetitions, at least 1 (the default)",
            ));
        }
        if self.cold && !fsbench_engine::engine::is_root() {
            bail!("--cold drops the kernel's caches (echo 3 > /proc/sys/vm/drop_caches), which needs root: run as root or leave out --cold");
        }
        // Outputs are checked before anything runs, not found unwritable after it.
        fsbench_base::export::check::outputs(&self.outputs())
    }
}

impl fsbench_base::export::check::Outputs for MeasureArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        vec![
            named(self.json.as_deref(), "--json"),
            named(self.csv.as_deref(), "--csv"),
            named(self.markdown.as_deref(), "--markdown"),
        ]
    }
}

/// [`Outputs`](fsbench_base::export::check::Outputs) for arguments types whose outputs are
/// those of their measurement options, a field `m: MeasureArgs`.
#[macro_export]
macro_rules! outputs_of_measurement {
    ($($t:ty),+ $(,)?) => {$(
        impl fsbench_base::export::check::Outputs for $t {
            fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
                fsbench_base::export::check::Outputs::outputs(&self.m)
            }
        }
    )+};
}

/// `sync`, then drop the page, dentry and inode caches (root only).
pub fn drop_caches() -> Result<()> {
    if !fsbench_engine::engine::is_root() {
        bail!("dropping the kernel's caches (echo 3 > /proc/sys/vm/drop_caches) needs root: run as root or leave out the option");
    }
    fsbench_engine::engine::drop_caches().map_err(|e| anyhow::anyhow!("{e}"))
}

/// Run `m` as `a` asks: warm-ups, then `repeat` measured repetitions (caches dropped before
/// each with `--cold`), combined into one Results with host facts and calibration.
/// Progress goes to standard error.
pub fn drive(m: &mut dyn Measurement, a: &MeasureArgs) -> Result<Results> {
    a.check()?;
    fsbench_base::cancel::install_signal_handlers();
    fsbench_base::export::check::reserve_stdout(&a.outputs());
    let calibration = stats::clock::Calibration::measure(stats::clock::global());
    for i in 0..a.warmup {
        fsbench_base::errln!(
            "fsbench: {} warm-up {} of {} (discarded)",
            m.name(),
            i + 1,
            a.warmup
        );
        let r = m.prepare().and_then(|_| m.run_once());
        m.cleanup()?;
        r?;
        if fsbench_base::cancel::interrupted() {
            bail!("interrupted during warm-up");
        }
    }
    let mut runs = Vec::new();
    for i in 0..a.repeat {
        if a.repeat > 1 {
            m.voice().repetition(m.name(), i + 1, a.repeat);
        }
        let r = m.prepare().and_then(|_| repetition(m, a, &calibration));
        let c = m.cleanup();
        let r = r?;
        c?;
        let stop = r.interrupted;
        runs.push(r);
        if stop {
            break;
        }
    }
    let n = runs.len();
    let mut r = stats::repeat::combine(runs);
    if n > 1 && m.voice() == Voice::App {
        // The notes are the first repetition's (its counts and times); say so.
        for note in &mut r.notes {
            *note = format!("repetition 1: {note}");
        }
    }
    Ok(r)
}

/// One measured repetition of a prepared measurement: the cache state asked for, the disk
/// probe, the window (the driver's or the measurement's own), and what the result says of
/// them.
fn repetition(
    m: &mut dyn Measurement,
    a: &MeasureArgs,
    calibration: &stats::clock::Calibration,
) -> Result<Results> {
    if !m.measures() {
        let mut r = m.run_once()?;
        r.cold = a.cold;
        return Ok(r);
    }
    let voice = m.voice();
    if a.cold {
        voice.dropping_caches();
        drop_caches()?;
    }
    let remounted = if fsbench_base::remount::requested() {
        Some(m.remount(&mut || fsbench_base::remount::remount().map_err(anyhow::Error::msg))?)
    } else {
        None
    };
    // On a simulated disk: how late its replies were during this repetition; on a
    // simulated remote: its traffic in this repetition's window.
    let probes = fsbench_engine::engine::hooks::probes(&existing_ancestor(&m.target()));
    // Another process dropping the kernel's caches while this one measures (a cold run
    // beside a warm one) makes the cache state the notes state untrue: counted and said.
    let drops = fsbench_base::sys::cachedrops::Count::now();
    let mut r = match m.window() {
        Window::Driver => driver_window(m)?,
        Window::Own => m.run_once()?,
    };
    let elsewhere = drops
        .zip(fsbench_base::sys::cachedrops::Count::now())
        .map(|(before, after)| before.others_since(after))
        .filter(|n| *n > 0);
    for p in probes {
        p.record(&mut r);
    }
    r.cold = a.cold;
    let mut notes = voice.cache_notes(a.cold, remounted.as_deref());
    if let Some(n) = elsewhere {
        notes.push(dropped_elsewhere_note(n));
    }
    r.caches_dropped_elsewhere = elsewhere;
    r.notes.splice(0..0, notes);
    if m.window() == Window::Driver {
        r.host = stats::host::collect(&m.target());
    }
    r.calibration = calibration.clone();
    Ok(r)
}

/// The note of a measurement during which other processes dropped the kernel's caches.
fn dropped_elsewhere_note(n: u64) -> String {
    format!(
        "cache: another process dropped the kernel's caches {n} time(s) during the measurement (/proc/vmstat drop_pagecache): it did not run from the cache state it asked for"
    )
}

/// [`Measurement::run_once`] in the driver's window: every rank starts together (MPI), the
/// trace marks around it, the device's reads over it.
fn driver_window(m: &mut dyn Measurement) -> Result<Results> {
    if !fsbench_base::cluster::barrier() {
        return Err(fsbench_base::cluster::failed_elsewhere());
    }
    let dev_dir = existing_ancestor(&m.target());
    let dev = fsbench_base::sys::blockstat::device_of(&dev_dir);
    let dev_before = dev.and_then(fsbench_base::sys::blockstat::counters);
    let cpu_before = fsbench_base::sys::cpustat::now();
    fsbench_base::sys::mark::mark(fsbench_base::sys::mark::MARK_START);
    let r = m.run_once();
    fsbench_base::sys::mark::mark(fsbench_base::sys::mark::MARK_END);
    let mut r = r?;
    let after = dev.and_then(fsbench_base::sys::blockstat::counters);
    let done = dev_before
        .zip(after)
        .map(|(b, a)| (a.since(b), a.written_since(b)));
    r.device_read_bytes = done.map(|d| d.0 .0);
    r.device_busy_s = done.map(|d| d.0 .1);
    r.device_write_bytes = done.map(|d| d.1);
    r.cpu_busy_s =
        cpu_before.and_then(|b| Some(fsbench_base::sys::cpustat::now()?.busy_s_since(b)));
    Ok(r)
}

/// Print the text report and write the exports `a` asks for, with the same exporters as
/// `fsbench run` (text to standard error when an export goes to standard output).
pub fn emit(r: &Results, a: &MeasureArgs) -> Result<()> {
    fsbench_results::report::out::emit(
        r,
        &[
            (Format::Json, a.json.as_deref()),
            (Format::Csv, a.csv.as_deref()),
            (Format::Markdown, a.markdown.as_deref()),
        ],
        Default::default(),
    )?;
    if r.interrupted {
        bail!("interrupted: the results above cover {:.1} s", r.duration_s);
    }
    Ok(())
}

/// `p` or its nearest existing ancestor (a benchmark's run directory is made inside its
/// target when it runs; the file system, and so the disk, is the same).
fn existing_ancestor(p: &std::path::Path) -> PathBuf {
    p.ancestors()
        .find(|a| a.exists())
        .unwrap_or(std::path::Path::new("/"))
        .to_path_buf()
}

/// [`drive`], then [`emit`].
pub fn measure_and_report(m: &mut dyn Measurement, a: &MeasureArgs) -> Result<Results> {
    #[cfg(feature = "mpi")]
    if crate::mpirun::launched() {
        return ranks::measure_ranks(m, a);
    }
    let r = drive(m, a)?;
    emit(&r, a)?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counting {
        prepared: u32,
        ran: u32,
        cleaned: u32,
        dir: PathBuf,
    }

    impl Measurement for Counting {
        fn name(&self) -> &str {
            "counting"
        }
        fn prepare(&mut self) -> Result<()> {
            self.prepared += 1;
            Ok(())
        }
        fn run_once(&mut self) -> Result<Results> {
            self.ran += 1;
            let mut r =
                fsbench_results::stats::Results::new("counting", "app:counting", 0, &self.dir);
            r.figures.insert("n".into(), self.ran as f64);
            Ok(r)
        }
        fn target(&self) -> PathBuf {
            self.dir.clone()
        }
        fn cleanup(&mut self) -> Result<()> {
            self.cleaned += 1;
            Ok(())
        }
    }

    #[test]
    fn warmups_are_discarded_and_repetitions_combined() {
        let mut m = Counting {
            prepared: 0,
            ran: 0,
            cleaned: 0,
            dir: std::env::temp_dir(),
        };
        let a = MeasureArgs {
            repeat: 3,
            warmup: 2,
            ..Default::default()
        };
        let r = drive(&mut m, &a).unwrap();
        assert_eq!((m.prepared, m.ran, m.cleaned), (5, 5, 5));
        assert_eq!(r.repetitions.len(), 3);
        // Figures of repetitions 3, 4, 5 (after two warm-ups); the top level is their mean.
        let n: Vec<f64> = r.repetitions.iter().map(|p| p.figures["n"]).collect();
        assert_eq!(n, [3.0, 4.0, 5.0]);
        assert_eq!(r.figures["n"], 4.0);
        assert!(!r.host.kernel.is_empty());
        assert!(!r.calibration.clock.is_empty());
        assert!(drive(
            &mut m,
            &MeasureArgs {
                repeat: 0,
                ..Default::default()
            }
        )
        .is_err());
    }

    /// A measurement with its own window and nothing to measure on request.
    struct Own {
        measures: bool,
        dir: PathBuf,
    }

    impl Measurement for Own {
        fn name(&self) -> &str {
            "own"
        }
        fn run_once(&mut self) -> Result<Results> {
            let mut r = Results::new("own", "own", 0, &self.dir);
            r.host.kernel = "taken by the measurement".into();
            r.device_read_bytes = Some(7);
            r.notes.push("measured".into());
            Ok(r)
        }
        fn target(&self) -> PathBuf {
            self.dir.clone()
        }
        fn measures(&self) -> bool {
            self.measures
        }
        fn window(&self) -> Window {
            Window::Own
        }
        fn voice(&self) -> Voice {
            Voice::Workload { quiet: true }
        }
    }

    #[test]
    fn an_own_window_keeps_what_the_measurement_took() {
        let mut m = Own {
            measures: true,
            dir: std::env::temp_dir(),
        };
        let once = MeasureArgs {
            repeat: 1,
            ..Default::default()
        };
        let r = drive(&mut m, &once).unwrap();
        assert_eq!(r.host.kernel, "taken by the measurement");
        assert_eq!(r.device_read_bytes, Some(7));
        assert!(!r.calibration.clock.is_empty());
        // Nothing to measure: the result is what the measurement returned, uncalibrated.
        m.measures = false;
        let r = drive(&mut m, &once).unwrap();
        assert!(r.calibration.clock.is_empty());
        assert_eq!(r.notes, ["measured"]);
    }

    #[test]
    fn each_voice_notes_the_cache_in_its_own_words_and_order() {
        let app = Voice::App.cache_notes(true, Some("remounted"));
        assert_eq!(app.len(), 2);
        assert_eq!(app[0], "cache: remounted before the measurement");
        assert!(app[1].starts_with("cache: cold: ") && app[1].contains("after the preparation"));
        let run = Voice::Workload { quiet: false }.cache_notes(true, Some("remounted"));
        assert!(run[0].starts_with("cache: cold: ") && run[0].contains("after the layout"));
        assert_eq!(run[1], "cache: remounted after the layout");
        assert!(Voice::App.cache_notes(false, None).is_empty());
    }
}
