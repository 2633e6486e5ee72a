//! `fsbench run`, `check`, `show`, `list` and `compare`: the workload commands the binary
//! dispatches to (their arguments, loading with warnings, the run's target directory and
//! options, and the multi-client run).

use anyhow::{bail, Context, Result};
use clap::Args;
use fsbench_base::exit::usage;
use fsbench_base::export::Format;
use fsbench_model::fio::map::FioJobs;
use fsbench_model::model::build::Overrides;
use fsbench_model::model::Workload;
use fsbench_model::workloads::{self, LoadError, Parsed, Source};
use fsbench_tools::workload_run::RunSpec;
use std::path::PathBuf;

#[derive(Args, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub w: WorkloadArgs,
    /// Directory in which fsbench creates its run directory (default: the workload's common
    /// fileset path for workload files, $TMPDIR for built-ins).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Run on an NFS export through libnfs (user space, no kernel mount): the run directory
    /// and every file operation go to the server, e.g.
    /// nfs://127.0.0.1/export?nfsport=2049&mountport=20048&version=3 (libnfs's URL syntax).
    /// Needs libnfs 4 or 5 at run time (Debian: libnfs13).
    #[arg(long, value_name = "URL", conflicts_with_all = ["dir", "layout", "verify", "verify_only"])]
    pub nfs: Option<String>,
    /// Over NFS: count each flowop's calls per NFS procedure (GETATTR, LOOKUP, READ, WRITE,
    /// CREATE ...) and their time, through a relay in fsbench between each worker's client
    /// and the server (the URL must give nfsport= and mountport=).
    #[arg(long)]
    pub nfs_rpcs: bool,
    /// Over NFS: the bandwidth of a dialled network between the clients and the server, as
    /// `fsbench remote create --bandwidth` (e.g. 10mbit, 100kbit, 12.5MB/s), shared by all
    /// the workers of this client each way. Counts the calls too (see --nfs-rpcs).
    #[arg(long, value_name = "RATE", value_parser = fsbench_base::units::parse_bandwidth)]
    pub nfs_bandwidth: Option<f64>,
    /// Over NFS: the round-trip time of a dialled network, as `fsbench remote create --rtt`
    /// (e.g. 10ms, 500us): each call and each reply is held half of it. Counts the calls too.
    #[arg(long, value_name = "TIME", value_parser = fsbench_base::units::parse_rtt)]
    pub nfs_rtt: Option<f64>,
    /// With many clients (`mpirun ... fsbench run`): end every rank's measurement when the
    /// first rank finishes (IOR's stonewalling); the others report what they did by then.
    #[arg(long)]
    pub stonewall: bool,
    /// Run time in seconds (overrides the workload's `run N`).
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Seed for every random choice (tree shape, sizes, offsets).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep the run directory and its filesets afterwards.
    #[arg(long)]
    pub keep: bool,
    /// After each measured run, score the layout of the files it left (FIEMAP, synced: the
    /// Smith–Seltzer score, fragments, split files, locality) and add it to the results as
    /// figures `layout.NAME`.
    #[arg(long)]
    pub layout: bool,
    /// Write the results as JSON to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Run the workload's `system "..."` commands.
    #[arg(long)]
    pub allow_system: bool,
    /// No progress or echo output; only the report.
    #[arg(short, long)]
    pub quiet: bool,
    /// Run this many seconds first and discard what they measure.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    pub warmup: f64,
    /// Time-series sampling interval in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    pub interval: f64,
    /// After laying out the filesets, `sync` and drop the page cache (needs root).
    #[arg(long)]
    pub cold: bool,
    /// When a flowop finds no file in its fileset, count it and go on (Filebench, and the
    /// default, end the run there).
    #[arg(long)]
    pub continue_when_exhausted: bool,
    /// When a write finds the file system full (ENOSPC, EDQUOT), count the error and go on
    /// (Filebench, and the default, end the run there).
    #[arg(long)]
    pub continue_on_enospc: bool,
    /// Write the preallocated files with N threads (default: 1, or one per core up to 16
    /// for filesets with `paralloc`, as Filebench). The files, their sizes and content are
    /// the same whatever N; only the order they are created in differs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub layout_threads: Option<u16>,
    /// A `finishoncount`/`finishonbytes` that is done ends the whole run in every quit mode,
    /// as Filebench 1.5-alpha3 did. By default it ends its own thread, as Filebench's
    /// current source does: the run ends with it in the default and `firstdone` modes, and
    /// goes on until the other threads finish in `alldone` mode.
    #[arg(long)]
    pub finish_ends_run: bool,
    /// What a flowop's latency covers: `calls`, its system calls only, as Filebench times
    /// them (picking the file, waiting for a busy one and releasing it are outside); or
    /// `flowop`, the whole flowop from its start to its end, so that latencies add up to
    /// the threads' time.
    #[arg(long, value_enum, value_name = "WHAT", default_value_t)]
    pub latency: fsbench_engine::engine::Latency,
    /// Where a Filebench flowop's I/O buffer starts: `filebench`, 16 bytes past a page
    /// boundary, where glibc's malloc puts Filebench's (a copy into it can cost several
    /// times an aligned one's on some processors: docs/filebench-compat.md); or `aligned`,
    /// page-aligned. fio jobs and `directio` use aligned buffers either way.
    #[arg(long, value_enum, value_name = "WHERE", default_value_t)]
    pub buffers: fsbench_engine::engine::Buffers,
    /// Before each buffered `read` and `readwholefile`, ask the kernel how many of the pages
    /// it will read are in the page cache (cachestat(2), Linux 6.5 and later): each such
    /// flowop reports `page_cache` (pages read, pages cached when the read began) and the
    /// run `read_hit_pct`. One more system call per read, outside the timed window.
    #[arg(long)]
    pub cache_stat: bool,
    /// A block device a fio job may name (`filename=/dev/X`); repeatable. fsbench still
    /// refuses it when it (or a partition or holder) is mounted or in use, and refuses to
    /// write it when it carries a file system, RAID or partition table (docs/safety.md).
    #[arg(long = "allow-device", value_name = "DEVICE")]
    pub allow_device: Vec<PathBuf>,
    /// A block device a fio job may name and write even though it carries a file system,
    /// RAID or partition-table signature: its data may go. Repeatable.
    #[arg(long = "allow-device-with-data", value_name = "DEVICE")]
    pub allow_device_with_data: Vec<PathBuf>,
    /// Verify data: every 4 KiB block written carries a header (file, offset, generation,
    /// checksum) that reads check; mismatches are reported per flowop and make the run fail.
    #[arg(long)]
    pub verify: bool,
    /// Only check a kept fileset (the workload's `reuse` directory) without writing:
    /// every block's header and checksum (after a crash, a remount, another run).
    #[arg(long, conflicts_with_all = ["verify", "duration", "warmup", "repeat", "layout", "cold", "csv", "markdown", "output_format"])]
    pub verify_only: bool,
    /// Run the workload N times (fresh filesets each time unless `reuse`) and report
    /// mean ± 95% confidence interval and coefficient of variation.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeat: u32,
    /// Write the results as CSV to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the results as a Markdown table to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// How the JSON carries latency histograms: `compact` (one line each), `full` (one number
    /// per line) or `none` (left out; the result can then not be merged).
    #[arg(long, value_enum, requires = "json", default_value_t = fsbench_results::report::json::Histograms::Compact)]
    pub histograms: fsbench_results::report::json::Histograms,
    /// For a fio job: `json` writes fio's JSON, `json+` the same with the latency bins,
    /// `terse` fio's version-3 line, to standard output (the reports go to standard
    /// error); `normal` (the default) prints fio's normal output after the report.
    #[arg(long = "output-format", value_name = "FORMAT", value_parser = ["normal", "json", "json+", "terse"])]
    pub output_format: Option<String>,
}

#[derive(Args)]
pub struct CompareArgs {
    /// Two or more result files written by `fsbench run --json`; the first is the baseline.
    #[arg(required = true, num_args = 2..)]
    pub files: Vec<PathBuf>,
}

#[derive(Args, Clone)]
pub struct WorkloadArgs {
    /// A workload file (.f), a fio job file (.fio), the name of a built-in personality
    /// (see `fsbench list`), or `-` for standard input.
    pub workload: String,
    /// Set a variable before the script runs (repeatable): -s nfiles=500
    #[arg(short = 's', long = "set", value_name = "NAME=VALUE", value_parser = parse_override)]
    pub set: Vec<(String, String)>,
    /// The workload argument is a one-line fio job: --fio 'rw=randread bs=4k size=1g'.
    #[arg(long, conflicts_with = "format")]
    pub fio: bool,
    /// Read the workload file as `fio` job file, whatever its name (`.fio` files are).
    #[arg(long, value_name = "FORMAT", value_parser = ["fio"])]
    pub format: Option<String>,
}

impl WorkloadArgs {
    /// The workload as a message names it: a one-line job as `the --fio job` (its options
    /// are quoted where the diagnostics point).
    pub fn named(&self) -> &str {
        if self.fio {
            "the --fio job"
        } else {
            &self.workload
        }
    }

    /// The workload these arguments name: a one-line job with `--fio`, a job file with
    /// `--format fio` or a `.fio` name, else a workload file or a built-in.
    pub fn source(&self) -> Source {
        if self.fio {
            Source::FioLine(self.workload.clone())
        } else if self.format.as_deref() == Some("fio") {
            Source::fio_file(&self.workload)
        } else {
            Source::named(&self.workload)
        }
    }

    /// The workload read and parsed, once (its errors printed with their places).
    pub fn parse(&self, source: &Source) -> Result<Parsed> {
        diagnosed(self, source.parse())
    }
}

pub fn parse_override(s: &str) -> Result<(String, String), String> {
    Overrides::parse_one(s)
}

#[derive(Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub w: WorkloadArgs,
    /// Check that the workload can run over NFS (`fsbench run --nfs URL`): what needs the
    /// local kernel (mmap, direct I/O, asynchronous I/O) is refused with its place.
    #[arg(long, value_name = "URL")]
    pub nfs: Option<String>,
    /// Print only errors and warnings.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Args)]
pub struct ShowArgs {
    /// Built-in personality name, or a fio job file (.fio) to explain.
    pub name: String,
}

/// A workload's errors printed (each with its file, line and column), and one error that
/// counts them; other load errors as they are.
fn diagnosed<T>(w: &WorkloadArgs, r: std::result::Result<T, LoadError>) -> Result<T> {
    match r {
        Ok(x) => Ok(x),
        Err(LoadError::Invalid(d)) => {
            fsbench_base::errln!("{d}\n");
            let n = d.0.len();
            bail!(
                "{} has {n} error{}",
                w.named(),
                if n == 1 { "" } else { "s" }
            )
        }
        Err(e) => Err(e.into()),
    }
}

/// Build the parsed workload with `set` and print its warnings (`duration_given` leaves out
/// the missing-`run` warning); for fio jobs, the jobs beside it.
pub fn build(
    w: &WorkloadArgs,
    parsed: Parsed,
    set: &[(String, String)],
    duration_given: bool,
) -> Result<(Workload, Option<FioJobs>)> {
    let (wl, fio) = diagnosed(w, parsed.build(&Overrides(set.to_vec())))?;
    for warn in &wl.warnings {
        if duration_given && warn.message == fsbench_model::model::build::NO_RUN_WARNING {
            continue;
        }
        fsbench_base::errln!("{warn}\n");
    }
    Ok((wl, fio))
}

pub fn cmd_check(a: &CheckArgs) -> Result<()> {
    if let Some(url) = &a.nfs {
        fsbench_base::libnfs::check_url(url).map_err(|e| usage(format!("--nfs: {e}")))?;
    }
    let parsed = a.w.parse(&a.w.source())?;
    let explained = crate::fiocmd::explain(&parsed);
    let (wl, _) = build(&a.w, parsed, &a.w.set, false)?;
    let mut unsupported = wl.unsupported();
    let nfs = a.nfs.is_some() || wl.nfs_url.is_some();
    if nfs {
        unsupported.extend(wl.nfs_refusals());
    }
    if !a.quiet {
        match explained {
            Some(text) => fsbench_base::out!("{text}"),
            None => fsbench_base::out!("{}", fsbench_model::model::explain::explain(&wl)),
        }
        if wl.creates_all_it_reads() {
            fsbench_base::outln!("note: it reads no file laid out before it starts (it creates what it reads, or only writes): --cold, or an experiment's cache = \"cold\", changes little of what it measures");
        }
    }
    if !unsupported.is_empty() {
        for d in &unsupported {
            fsbench_base::errln!("{d}\n");
        }
        bail!(
            "{} is valid, but uses {} flowop{} this version of fsbench cannot run{}",
            a.w.workload,
            unsupported.len(),
            if unsupported.len() == 1 { "" } else { "s" },
            if nfs { " over NFS" } else { "" }
        );
    }
    fsbench_base::outln!("{}: ok", a.w.workload);
    Ok(())
}

/// Where the run directory goes when --dir is not given.
pub fn default_parent(wl: &Workload, origin: &workloads::Origin) -> PathBuf {
    if let workloads::Origin::File(_) = origin {
        let mut paths: Vec<&str> = wl.filesets.iter().map(|f| f.path.as_str()).collect();
        paths.dedup();
        if paths.len() == 1 && std::path::Path::new(paths[0]).is_dir() {
            return PathBuf::from(paths[0]);
        }
    }
    std::env::temp_dir()
}

/// What a run leaves for its report.
pub struct Ran {
    pub results: fsbench_results::stats::Results,
    /// Whether data was verified (a summary of the checks follows the report).
    pub verified: bool,
    /// For fio jobs: what fio's report says of them.
    pub fio: Option<FioJobs>,
}

pub fn cmd_run(a: &RunArgs) -> Result<()> {
    let source = a.w.source();
    check_args(a, &source)?;
    #[cfg(feature = "mpi")]
    if fsbench_harness::mpirun::launched() {
        return cmd_run_mpi(a, &source);
    }
    if a.stonewall {
        fsbench_base::errln!("fsbench: warning: --stonewall ends a multi-client run when its first rank finishes; this run has one client (start it with mpirun, built with --features mpi)");
    }
    let parsed = a.w.parse(&source)?;
    let Some(Ran {
        results,
        verified,
        fio,
    }) = run_collect(a, parsed)?
    else {
        return Ok(());
    };
    fsbench_results::report::out::emit(
        &results,
        &[
            (Format::Json, a.json.as_deref()),
            (Format::Csv, a.csv.as_deref()),
            (Format::Markdown, a.markdown.as_deref()),
        ],
        a.histograms,
    )?;
    if let Some(jobs) = &fio {
        crate::fiocmd::report(jobs, &results, a.output_format.as_deref())?;
    }
    if verified {
        fsbench_tools::workload_run::verify_summary(&results)?;
    }
    if results.interrupted {
        bail!(
            "interrupted: the results above cover {:.1} s",
            results.duration_s
        );
    }
    Ok(())
}

/// What rank 0 hands every rank in a multi-client run.
#[cfg(feature = "mpi")]
#[derive(serde::Serialize, serde::Deserialize)]
pub struct MpiSetup {
    /// The workload and, for a file (or standard input), the text rank 0 read: other ranks
    /// may not see the file, and standard input is rank 0's.
    pub source: Source,
    pub text: Option<String>,
    pub set: Vec<(String, String)>,
    /// The marked run directory every rank works below (`rank<N>/` each).
    pub parent: String,
}

/// `mpirun -np N fsbench run ...`: rank 0 checks the workload and makes one marked run
/// directory; every rank runs the workload in its own `rank<N>/` below it, starting its
/// measurement together with the others; rank 0 gathers, merges and reports.
#[cfg(feature = "mpi")]
pub fn cmd_run_mpi(a: &RunArgs, source: &Source) -> Result<()> {
    let session = fsbench_harness::mpirun::Session::init(a.stonewall)?;
    let rank = session.rank();
    let size = session.size();
    // Rank 0: the workload (parsed and validated here, so a bad one fails once, with its
    // location) and the shared run directory.
    let mut made: Option<fsbench_engine::engine::rundir::RunDir> = None;
    let mut parsed = None;
    let setup: std::result::Result<MpiSetup, String> = if rank == 0 {
        mpi_setup(a, source, size, (&mut made, &mut parsed)).map_err(|e| format!("{e:#}"))
    } else {
        Err(String::new())
    };
    let bytes = session
        .broadcast((rank == 0).then(|| serde_json::to_vec(&setup).expect("the set-up encodes")));
    let setup: std::result::Result<MpiSetup, String> =
        serde_json::from_slice(&bytes).map_err(|e| anyhow::anyhow!("set-up from rank 0: {e}"))?;
    let setup = match setup {
        Ok(s) => s,
        Err(e) => {
            // Every rank got the same error: rank 0 says it.
            // Every rank got the same error: rank 0 says it before the others exit.
            if rank == 0 {
                fsbench_base::errln!("fsbench: {e}");
            }
            session.finish();
            drop(session);
            std::process::exit(1);
        }
    };
    // This rank's run: the workload (rank 0's, parsed there; the others parse the text
    // rank 0 read), in rank<N>/.
    let outcome = rank_run(a, &setup, rank, parsed);
    let ok = outcome.is_ok();
    let all_ok = session.end(ok);
    let mine = fsbench_harness::mpirun::Outcome {
        rank: rank as u32,
        host: session.host.clone(),
        result: match outcome {
            Ok(Some(ran)) => Ok(ran.results),
            Ok(None) => Err("measured nothing".into()),
            Err(e) => Err(format!("{e:#}")),
        },
    };
    let gathered = session.gather(&mine);
    let Some(all) = gathered else {
        // Other ranks: their part is done; rank 0 reports.
        // Wait until rank 0 has reported and cleaned up: a launcher ends the whole job
        // when a rank exits with an error, which would cut rank 0's report short.
        session.finish();
        if !all_ok {
            // Rank 0 reports which rank failed and why; the exit status says it here.
            drop(session);
            std::process::exit(1);
        }
        return Ok(());
    };
    let r = report_mpi(a, made, all);
    if let Err(e) = &r {
        // Said before the last synchronisation: once the others exit, the launcher may end
        // this rank too.
        fsbench_base::errln!("fsbench: {}", fsbench_base::exit::render(e));
        session.finish();
        drop(session);
        std::process::exit(1);
    }
    session.finish();
    r
}

/// Rank 0 of a multi-client run: the workload read, parsed and checked (kept in `parsed`
/// for rank 0's own run), its text when it is a file, and the shared run directory with
/// one `rank<N>/` per rank (kept in `made`).
#[cfg(feature = "mpi")]
pub fn mpi_setup(
    a: &RunArgs,
    source: &Source,
    size: usize,
    (made, parsed): (
        &mut Option<fsbench_engine::engine::rundir::RunDir>,
        &mut Option<Parsed>,
    ),
) -> Result<MpiSetup> {
    let text = diagnosed(&a.w, source.read())?;
    let p = diagnosed(&a.w, Parsed::parse(source, text.clone()))?;
    let set = Overrides(fsbench_base::sys::iosched::placeholders(&a.w.set));
    let threads = diagnosed(&a.w, p.probe(&set, |wl| wl.thread_count()))?;
    fsbench_harness::mpirun::warn_binding(threads as usize);
    let target = fsbench_harness::measure::guard::target_dir(a.dir.as_deref())?;
    let rd = fsbench_engine::engine::rundir::RunDir::create(
        &target,
        &format!("mpi-{}", text.name),
        false,
    )?;
    for r in 0..size {
        std::fs::create_dir(rd.path.join(format!("rank{r}")))?;
    }
    let dir = rd.path.display().to_string();
    *made = Some(rd);
    *parsed = Some(p);
    Ok(MpiSetup {
        text: matches!(source, Source::File(_) | Source::FioFile(_))
            .then(|| text.file.text.clone()),
        source: source.clone(),
        set: a.w.set.clone(),
        parent: dir,
    })
}

/// One rank's run: the workload (`parsed` on rank 0; the text rank 0 read, or the
/// built-in, on the others), in `rank<N>/` of the shared directory, with its own seed and
/// no exports.
#[cfg(feature = "mpi")]
pub fn rank_run(
    a: &RunArgs,
    setup: &MpiSetup,
    rank: usize,
    parsed: Option<Parsed>,
) -> Result<Option<Ran>> {
    let mut ra = a.clone();
    ra.w.set = setup.set.clone();
    ra.dir = Some(std::path::Path::new(&setup.parent).join(format!("rank{rank}")));
    // Each rank draws its own random choices (as PostMark's instances do).
    ra.seed = a.seed.wrapping_add(rank as u64);
    ra.json = None;
    ra.csv = None;
    ra.markdown = None;
    ra.quiet = a.quiet || rank != 0;
    // Fault injection for the tests of failure handling: this rank fails before its run.
    if std::env::var("FSBENCH_TEST_FAIL_RANK").ok() == Some(rank.to_string()) {
        bail!("injected failure (FSBENCH_TEST_FAIL_RANK={rank})");
    }
    let parsed = match (parsed, &setup.text) {
        (Some(p), _) => p,
        (None, Some(text)) => diagnosed(
            &a.w,
            Parsed::parse(&setup.source, setup.source.with_text(text.clone())),
        )?,
        (None, None) => diagnosed(&a.w, setup.source.parse())?,
    };
    run_collect(&ra, parsed)
}

/// Rank 0 at the end of a multi-client run: remove the run directory, merge, report.
#[cfg(feature = "mpi")]
pub fn report_mpi(
    a: &RunArgs,
    made: Option<fsbench_engine::engine::rundir::RunDir>,
    all: Vec<fsbench_harness::mpirun::Outcome>,
) -> Result<()> {
    let keep = a.keep;
    if let Some(rd) = made {
        if keep {
            fsbench_base::errln!("fsbench: kept {}", rd.path.display());
        } else if let Err(e) = rd.remove() {
            fsbench_base::exit::left_behind(e.to_string());
        }
    }
    let merged = fsbench_harness::mpirun::merge_outcomes(all)?;
    fsbench_results::report::out::emit(
        &merged,
        &[
            (Format::Json, a.json.as_deref()),
            (Format::Csv, a.csv.as_deref()),
            (Format::Markdown, a.markdown.as_deref()),
        ],
        a.histograms,
    )?;
    if merged.interrupted {
        bail!(
            "interrupted: the results above cover {:.1} s",
            merged.duration_s
        );
    }
    Ok(())
}

/// Run the parsed workload as `a` asks (with its repetitions): the results, whether data
/// was verified and the fio jobs, or None when nothing was measured (e.g. `--verify-only`,
/// which reports by itself).
pub fn run_collect(a: &RunArgs, parsed: Parsed) -> Result<Option<Ran>> {
    let spec = resolve(a, parsed)?;
    if a.verify_only {
        verify_kept(a, &spec.workload, &spec.options.parent)?;
        return Ok(None);
    }
    let results = fsbench_tools::workload_run::run(&spec)?;
    Ok(Some(Ran {
        results,
        verified: spec.options.verify.on(),
        fio: spec.fio,
    }))
}

/// Everything `fsbench run` was asked, resolved once from its arguments and the parsed
/// workload: the run directory's parent, the workload built with the `-s` values (its
/// `$dir` following the parent), the engine's options and the measurement driver's.
pub fn resolve(a: &RunArgs, parsed: Parsed) -> Result<RunSpec> {
    let mut set = a.w.set.clone();
    // `-s think=idle+1ms`: the idle window of the scheduler of the disk under the run (read
    // before the workload is built when --dir names the place).
    let idle = |set: &mut Vec<(String, String)>, dir: &std::path::Path| {
        fsbench_base::sys::iosched::resolve_sets(set, || {
            fsbench_base::sys::iosched::idle_window(dir)
        })
        .map_err(anyhow::Error::msg)
    };
    let mut notes = match &a.dir {
        Some(d) => idle(&mut set, d)?,
        None => Vec::new(),
    };
    let parent = target_dir(a, &parsed, &mut set)?;
    notes.extend(idle(&mut set, &parent)?);
    let (workload, fio) = build(&a.w, parsed, &set, a.duration.is_some())?;
    if fio.is_some() {
        crate::fiocmd::check_logs(&workload)?;
    }
    if a.cold && !fsbench_engine::engine::is_root() {
        bail!("--cold drops the page cache, which needs root; run as root or leave out --cold");
    }
    let mut options = run_options(a, parent);
    options.nfs = nfs_url(a, &workload)?;
    if options.nfs.is_none() && (options.nfs_rpcs || options.nfs_link.is_some()) {
        return Err(usage(
            "--nfs-rpcs, --nfs-bandwidth and --nfs-rtt are for runs over NFS: add --nfs URL",
        ));
    }
    if options.cache_stat {
        if fio.is_some() {
            return Err(usage(
                "--cache-stat asks about the reads of Filebench's `read` and `readwholefile` flowops; a fio job's reads are not asked about: leave it out",
            ));
        }
        if options.nfs.is_some() {
            return Err(usage(
                "--cache-stat asks this machine's page cache, which a run over NFS through libnfs does not use: leave out one of them",
            ));
        }
        if !fsbench_base::sys::cachestat::supported() {
            bail!("--cache-stat needs cachestat(2), which this kernel does not have (Linux 6.5 and later)");
        }
    }
    options.verify = fsbench_model::verify::Mode::of(a.verify, workload.has_verify_flowop());
    if a.warmup == 0.0 {
        // A fio job's `ramp_time` is its warm-up unless --warmup says otherwise.
        options.warmup = fio.as_ref().map_or(0.0, |j| j.ramp_s);
    }
    Ok(RunSpec {
        workload,
        fio,
        options,
        // The workload's warm-up is seconds inside each run, not runs of its own.
        measure: fsbench_harness::measure::MeasureArgs {
            repeat: a.repeat,
            warmup: 0,
            cold: a.cold,
            json: a.json.clone(),
            csv: a.csv.clone(),
            markdown: a.markdown.clone(),
        },
        layout: a.layout,
        notes,
    })
}

/// The export of the run: `--nfs`, or the fio jobs' `nfs_url` (the same one, if both).
fn nfs_url(a: &RunArgs, wl: &Workload) -> Result<Option<String>> {
    match (&a.nfs, &wl.nfs_url) {
        (Some(cli), Some(job)) if cli != job => bail!(
            "--nfs {cli} and the jobs' nfs_url={job} name different exports: give one of them"
        ),
        (Some(u), _) | (None, Some(u)) => {
            fsbench_base::libnfs::check_url(u).map_err(|e| usage(format!("--nfs: {e}")))?;
            Ok(Some(u.clone()))
        }
        (None, None) => Ok(None),
    }
}

/// The directory the run directory goes in (`--dir`, the fio jobs' `directory=`, or the
/// workload's default); the workload's `$dir` set to it (in `set`) when it has one.
pub fn target_dir(
    a: &RunArgs,
    parsed: &Parsed,
    set: &mut Vec<(String, String)>,
) -> Result<PathBuf> {
    let placeholders = Overrides(fsbench_base::sys::iosched::placeholders(set));
    // The workload built to see its filesets and variables, then dropped: a workload of
    // many flowops is tens of megabytes.
    let probe = parsed.probe(&placeholders, |wl| {
        let has_dir = wl.vars.iter().any(|(k, _)| k == "dir");
        (default_parent(wl, parsed.origin()), has_dir)
    });
    let (default, has_dir) = diagnosed(&a.w, probe)?;
    let jobs_dir = parsed.fio().and_then(|m| m.directory.as_ref());
    let parent = match (&a.dir, jobs_dir) {
        (Some(d), _) => d.clone(),
        (None, Some(d)) => PathBuf::from(d),
        (None, None) => default,
    };
    let parent = parent
        .canonicalize()
        .with_context(|| format!("target directory {}", parent.display()))?;
    // Refused unless a directory: a FIFO there would hold the run in its open for ever.
    let parent = fsbench_harness::measure::guard::target_dir(Some(&parent))?;
    // The workload's $dir follows the target directory, so echo and paths agree.
    if has_dir && !set.iter().any(|(k, _)| k == "dir") {
        set.push(("dir".into(), parent.display().to_string()));
    }
    Ok(parent)
}

/// Refuse, before anything is read or laid out, what this command line cannot mean: values
/// out of range, outputs that cannot be written, and options the workload's kind does not
/// use, which would otherwise be found out after the run or silently ignored. A usage
/// error: the command ends with status 2 (see [`fsbench_base::exit::Usage`]).
pub fn check_args(a: &RunArgs, source: &Source) -> Result<()> {
    if a.repeat == 0 {
        return Err(usage(
            "--repeat 0: give the number of runs, at least 1 (the default)",
        ));
    }
    check_times(a)?;
    if source.is_fio() {
        for (flag, given) in [("--verify", a.verify), ("--verify-only", a.verify_only)] {
            if given {
                return Err(usage(format!(
                    "{flag} checks the data of Filebench-language workloads, not of a fio job ({}): leave out {flag}; a fio job checks its data with fio's own verify= option (add verify=crc32c to the job)",
                    a.w.named()
                )));
            }
        }
    } else {
        for (flag, given) in [
            ("--output-format", a.output_format.is_some()),
            ("--allow-device", !a.allow_device.is_empty()),
            (
                "--allow-device-with-data",
                !a.allow_device_with_data.is_empty(),
            ),
        ] {
            if given {
                return Err(usage(format!(
                    "{flag} is for fio jobs, and {} is a Filebench-language workload: leave out {flag}, or run a fio job (a .fio file, --format fio FILE, or --fio 'OPTIONS')",
                    a.w.named()
                )));
            }
        }
    }
    fsbench_base::export::check::outputs(&fsbench_base::export::check::Outputs::outputs(a))
}

impl fsbench_base::export::check::Outputs for RunArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        // fio's JSON, json+ and terse output go to standard output too.
        let fio_out = (self.output_format.as_deref()).filter(|f| *f != "normal");
        vec![
            named(self.json.as_deref(), "--json"),
            named(self.csv.as_deref(), "--csv"),
            named(self.markdown.as_deref(), "--markdown"),
            (
                fio_out.map(|_| std::path::Path::new("-")),
                format!("--output-format {}", fio_out.unwrap_or_default()).into(),
            ),
        ]
    }
}

/// `--interval`, `--duration` and `--warmup` within range.
pub fn check_times(a: &RunArgs) -> Result<()> {
    // Bounded so that every time computation stays in range (a year is plenty).
    const MAX_S: f64 = 366.0 * 86400.0;
    for (name, v, min_exclusive) in [
        ("--interval", Some(a.interval), true),
        ("--duration", a.duration, true),
        ("--warmup", Some(a.warmup), false),
    ] {
        if let Some(v) = v {
            if !v.is_finite() || !(0.0..=MAX_S).contains(&v) || (min_exclusive && v == 0.0) {
                return Err(usage(format!(
                    "{name} {v}: expected {} number of seconds up to {MAX_S}",
                    if min_exclusive {
                        "a positive"
                    } else {
                        "a non-negative"
                    }
                )));
            }
        }
    }
    Ok(())
}

/// `--verify-only`: check the filesets an earlier run kept.
pub fn verify_kept(
    a: &RunArgs,
    wl: &fsbench_model::model::Workload,
    parent: &std::path::Path,
) -> Result<()> {
    if !wl.filesets.iter().any(|f| f.reuse) {
        bail!(
            "--verify-only checks the fileset a run kept, and workload {} keeps none: give its fileset `reuse` (-s reuse=true where the workload offers it), run it with --verify, then --verify-only; or check a --keep directory with `fsbench verify DIR`",
            wl.name
        );
    }
    let stable = fsbench_engine::engine::rundir::RunDir::stable_path(parent, &wl.name);
    let dirs: Vec<PathBuf> = wl
        .filesets
        .iter()
        .filter(|f| f.reuse)
        .map(|f| stable.join(&f.name))
        .collect();
    fsbench_model::verify::check_dirs(&dirs, a.json.as_deref())
}

pub fn run_options(a: &RunArgs, parent: PathBuf) -> fsbench_engine::engine::RunOptions {
    use std::io::IsTerminal;
    fsbench_engine::engine::RunOptions {
        parent,
        duration: a.duration,
        seed: a.seed,
        keep: a.keep,
        allow_system: a.allow_system,
        quiet: a.quiet,
        warmup: a.warmup,
        interval: a.interval,
        progress: !a.quiet && std::io::stderr().is_terminal(),
        cold: a.cold,
        continue_when_exhausted: a.continue_when_exhausted,
        continue_on_enospc: a.continue_on_enospc,
        layout_threads: a.layout_threads.map(usize::from),
        finish_ends_run: a.finish_ends_run,
        latency: a.latency,
        buffers: a.buffers,
        cache_stat: a.cache_stat,
        allow_devices: a.allow_device.clone(),
        allow_device_data: a.allow_device_with_data.clone(),
        nfs: a.nfs.clone(),
        verify: fsbench_model::verify::Mode::Off,
        nfs_rpcs: a.nfs_rpcs,
        nfs_link: (a.nfs_bandwidth.is_some() || a.nfs_rtt.is_some()).then(|| {
            fsbench_base::libnfs::relay::Link {
                bandwidth_bps: a.nfs_bandwidth.unwrap_or(f64::INFINITY),
                rtt_s: a.nfs_rtt.unwrap_or(0.0),
            }
        }),
    }
}

pub fn cmd_compare(a: &CompareArgs) -> Result<()> {
    let mut runs = Vec::new();
    for f in &a.files {
        let text = fsbench_base::input::read_text(f, fsbench_base::input::RESULTS)
            .with_context(|| format!("reading {}", f.display()))?;
        let r: fsbench_results::stats::Results =
            serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is not a result file written by `fsbench run --json`",
                    f.display()
                )
            })?;
        runs.push((f.display().to_string(), r));
    }
    fsbench_base::out!("{}", fsbench_results::report::compare::compare(&runs));
    Ok(())
}

pub fn cmd_list() -> Result<()> {
    fsbench_base::outln!("Built-in personalities (run one with `fsbench run NAME`, read it with `fsbench show NAME`):\n");
    for (name, text) in workloads::BUILTINS {
        fsbench_base::outln!("  {name:<30} {}", workloads::description(text));
        if let Ok((wl, _)) =
            workloads::load(&Source::Builtin(name.to_string()), &Overrides::default())
        {
            let vars: Vec<String> = wl
                .vars
                .iter()
                .filter(|(k, _)| k != "dir")
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            if !vars.is_empty() {
                fsbench_base::outln!("  {:<30} vars: {}", "", vars.join(" "));
            }
        }
    }
    Ok(())
}

pub fn cmd_show(a: &ShowArgs) -> Result<()> {
    if let Some(text) = crate::fiocmd::show(&Source::named(&a.name))? {
        fsbench_base::out!("{text}");
        return Ok(());
    }
    let text = workloads::builtin(&a.name).with_context(|| {
        format!(
            "no built-in personality named `{}` (see `fsbench list`)",
            a.name
        )
    })?;
    fsbench_base::out!("{text}");
    if let Ok((wl, _)) = workloads::load(&Source::Builtin(a.name.clone()), &Overrides::default()) {
        fsbench_base::outln!("\n# Variables and their defaults (change with -s NAME=VALUE):");
        for (k, v) in &wl.vars {
            fsbench_base::outln!("#   ${k} = {v}");
        }
    }
    Ok(())
}
