//! Command-line options of `fsbench experiment` and `fsbench results`.

use anyhow::{bail, Result};
use clap::Args;
use fsbench_base::export::{report::Displaced, Format};
use std::path::{Path, PathBuf};

/// `fsbench experiment PLAN.toml`.
#[derive(Args, Debug)]
pub struct ExperimentArgs {
    /// The plan (TOML; see docs/experiments.md), or `-` for standard input.
    #[arg(required_unless_present = "cleanup")]
    pub plan: Option<PathBuf>,
    /// Output directory: results.db, per-run JSON and logs, images and mount points
    /// (default ./fsbench-NAME).
    #[arg(short, long, value_name = "OUTDIR")]
    pub output: Option<PathBuf>,
    /// Use the plan's quick scale ([quick] and each measurement's quick settings).
    #[arg(long)]
    pub quick: bool,
    /// Print the matrix, the set-up steps and the estimated time; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Continue an interrupted experiment in OUTDIR from the results stored there (aged
    /// simulated disks start from the images kept in OUTDIR/aged, not aged again).
    #[arg(long)]
    pub resume: bool,
    /// Undo what an interrupted experiment left set up in OUTDIR (mounts, loop devices,
    /// simulated disks, sysfs values, images), then exit; aged images kept for --resume stay.
    #[arg(long, value_name = "OUTDIR", conflicts_with_all = ["plan", "dry_run", "resume"])]
    pub cleanup: Option<PathBuf>,
    /// Repeat the runs the noise guard flags as disturbed (once each).
    #[arg(long)]
    pub strict: bool,
}

/// `fsbench results OUTDIR`.
#[derive(Args, Debug)]
pub struct ResultsArgs {
    /// An experiment's output directory.
    pub outdir: PathBuf,
    /// Show every figure (per flowop too), not only the whole-run ones.
    #[arg(long)]
    pub all: bool,
    /// Write the summary as CSV to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the summary as JSON to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the summary as Markdown tables to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write every run as a row to FILE as CSV (`-` for standard output): its cell,
    /// repetition, status and flags, a column per factor and per figure (each flowop's too
    /// with --all), numbers exact.
    #[arg(long, value_name = "FILE")]
    pub runs_csv: Option<PathBuf>,
    /// Write every run as a row to FILE as JSON (`-` for standard output): the columns of
    /// --runs-csv, described, and an object per run.
    #[arg(long, value_name = "FILE")]
    pub runs_json: Option<PathBuf>,
    /// Keep runs flagged as ended early or served from cache in the means and comparisons
    /// (they are counted per cell either way).
    #[arg(long)]
    pub include_flagged: bool,
}

impl fsbench_base::export::check::Outputs for ResultsArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        vec![
            named(self.csv.as_deref(), "--csv"),
            named(self.json.as_deref(), "--json"),
            named(self.markdown.as_deref(), "--markdown"),
            named(self.runs_csv.as_deref(), "--runs-csv"),
            named(self.runs_json.as_deref(), "--runs-json"),
        ]
    }
}

pub fn experiment(a: ExperimentArgs) -> Result<()> {
    if let Some(dir) = &a.cleanup {
        check_outdir(dir, "--cleanup")?;
        return super::runner::cleanup(dir);
    }
    let Some(plan) = a.plan else {
        bail!("give a plan file, or --cleanup OUTDIR");
    };
    if let Some(dir) = &a.output {
        check_outdir(dir, "-o")?;
    }
    super::runner::run(&super::runner::Options {
        plan,
        outdir: a.output,
        quick: a.quick,
        dry_run: a.dry_run,
        resume: a.resume,
        strict: a.strict,
    })
}

/// An output directory given as `flag DIR` is a directory, or can be made one: it and its
/// nearest existing ancestor are not files (the system's "Not a directory" names neither).
/// Refused otherwise as a usage error (status 2), before anything is made.
fn check_outdir(dir: &Path, flag: &str) -> Result<()> {
    if fsbench_base::console::is_stdout(dir) {
        return Err(fsbench_base::exit::usage(format!("{flag} -: an experiment writes a directory (a database, per-run JSON and logs), not one stream; give the directory's path")));
    }
    for p in dir.ancestors().filter(|p| !p.as_os_str().is_empty()) {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(m) if p == dir => return Err(fsbench_base::exit::usage(format!(
                "{flag} {}: it is {}, not a directory; give the experiment's output directory (created if missing)",
                dir.display(),
                fsbench_base::input::file_kind(&m)
            ))),
            Ok(m) => return Err(fsbench_base::exit::usage(format!(
                "{flag} {}: cannot be created, because {} is {}, not a directory; give another output directory",
                dir.display(),
                p.display(),
                fsbench_base::input::file_kind(&m)
            ))),
            // Missing, or below a file (ENOTDIR): the ancestor says which.
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    || e.raw_os_error() == Some(libc::ENOTDIR) =>
            {
                continue
            }
            Err(e) => bail!("{flag} {}: {}: {e}", dir.display(), p.display()),
        }
    }
    Ok(())
}

/// An export of `fsbench results`: where it goes, its format, and its text when asked for.
type Output<'a> = (&'a Option<PathBuf>, Format, &'a dyn Fn() -> String);

pub fn results(a: ResultsArgs) -> Result<()> {
    fsbench_base::export::check::outputs(&fsbench_base::export::check::Outputs::outputs(&a))?;
    let st = super::store::Store::open_existing(&a.outdir)?;
    let full = super::summary::summarise_with(&st, a.include_flagged)?;
    let s = super::summary::filter(&full, a.all);
    let runs = if a.runs_csv.is_some() || a.runs_json.is_some() {
        Some(super::runs::read(&st, a.all, a.include_flagged)?)
    } else {
        None
    };
    let outputs: [Output; 5] = [
        (&a.csv, Format::Csv, &|| {
            super::summary::render::render_csv(&s)
        }),
        (&a.json, Format::Json, &|| {
            serde_json::to_string_pretty(&s).unwrap_or_default() + "\n"
        }),
        (&a.markdown, Format::Markdown, &|| {
            super::summary::render::render_markdown(&s)
        }),
        (&a.runs_csv, Format::Csv, &|| {
            runs.as_ref().map(|r| r.to_csv()).unwrap_or_default()
        }),
        (&a.runs_json, Format::Json, &|| {
            runs.as_ref().map(|r| r.to_json()).unwrap_or_default()
        }),
    ];
    for (path, format, text) in &outputs {
        if let Some(path) = path {
            fsbench_base::export::write_text(path, &text(), format.what())?;
        }
    }
    let paths = outputs.map(|(p, _, _)| p.as_deref());
    fsbench_base::export::report::text_beside(&paths, Displaced::Dropped, |o| {
        let text = match a.all {
            true => super::summary::render::render_text_all(&s),
            false => super::summary::render::render_text(&s),
        };
        o.write_all(fsbench_base::console::printable(&text).as_bytes())
    })
}
