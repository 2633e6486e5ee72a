//! The fsbench command line: parse arguments, call the library, print.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use fsbench::model::{Overrides, Workload};
use fsbench::workloads::{self, LoadError};
use std::path::PathBuf;
use std::process::ExitCode;

/// fsbench: a file-system benchmarking workbench that speaks the Filebench workload language.
#[derive(Parser)]
#[command(
    name = "fsbench",
    version,
    about,
    long_about = None,
    after_help = "Filebench's command line works too: `fsbench -f WORKLOAD.f [RUN OPTIONS]` is `fsbench run WORKLOAD.f`."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and validate a workload (file or built-in) and explain what it will do.
    #[command(
        after_help = "Examples:\n  fsbench check my.f\n  fsbench check fileserver -s nfiles=500 -s nthreads=4"
    )]
    Check(CheckArgs),
    /// List the built-in personalities with their variables.
    #[command(after_help = "Examples:\n  fsbench list")]
    List,
    /// Print a built-in personality's text and its variables' defaults.
    #[command(after_help = "Examples:\n  fsbench show varmail")]
    Show(ShowArgs),
    /// Lay out the filesets and run a workload; report per-flowop results.
    #[command(
        after_help = "Examples:\n  fsbench run fileserver\n  fsbench run varmail --dir /mnt/test -s nthreads=4 --duration 30\n  fsbench run my.f --repeat 5 --json results.json\n  fsbench run webserver --cold --warmup 5 --csv -\n\nIn the report, `N without a file` beside a flowop counts the times it found no file to\nwork on: nothing was issued, and those times are not in its ops. A fileset with no free\nentry for createfile, or none left for deletefile or openfile, ends the run the first\ntime, as in Filebench (only that thread in alldone mode), unless --continue-when-exhausted\ncounts it and goes on; a deletefile fd=N whose file another thread deleted first is\ncounted and the run goes on."
    )]
    Run(RunArgs),
    /// Walk a tree in parallel, summarise it and write a metadata snapshot.
    #[command(
        after_help = "Examples:\n  fsbench scan /home -o home.snap\n  fsbench scan src --hash -o src.snap"
    )]
    Scan(fsbench::scan::ScanArgs),
    /// Files and bytes of NEW identical by content to OLD (snapshots from `scan --hash`, or directories).
    #[command(
        after_help = "Examples:\n  fsbench diff old.snap new.snap\n  fsbench diff linux-6.1 linux-6.2 --markdown -"
    )]
    Diff(fsbench::scan::diff::DiffArgs),
    /// Smith–Seltzer layout score of the files under a directory (FIEMAP).
    #[command(
        after_help = "Examples:\n  fsbench layout /mnt/test\n  fsbench layout /mnt/test --json layout.json"
    )]
    Layout(fsbench::layout::LayoutArgs),
    /// Age the file system holding DIR: fill to a target fullness, then churn towards a profile.
    #[command(
        after_help = "Examples:\n  fsbench age /mnt/aged --fill 0.8 --seed 1 --ops 100000\n  fsbench age /mnt/aged --fill 0.5 --profile agrawal --json age.json"
    )]
    Age(fsbench::age::cli::AgeArgs),
    /// Simulated disks: an HDD model under a loop device.
    #[command(
        after_help = "Examples:\n  fsbench disk create hdd0 --model hdd --size 4G --mkfs ext4 --mount /mnt/hdd0\n  fsbench disk stats hdd0\n  fsbench disk remove hdd0"
    )]
    Disk(fsbench::disk::cli::DiskArgs),
    /// Simulated remote file systems: a server tree behind a modelled network (RTT, bandwidth).
    #[command(
        after_help = "Examples:\n  fsbench remote create afs0 --server /srv/tree --mount /mnt/afs0 --preset 1mbit\n  fsbench remote create nfs0 --server /srv/tree --mount /mnt/nfs0 --protocol block --bandwidth 10mbit --rtt 20ms --writable\n  fsbench remote create la --server /srv/tree --mount /mnt/la --lookaside /usr/src\n  fsbench remote stats afs0\n  fsbench remote remove afs0"
    )]
    Remote(fsbench::remote::cli::RemoteArgs),
    /// Compare result files side by side, per flowop and in total.
    #[command(after_help = "Examples:\n  fsbench compare ext4.json xfs.json btrfs.json")]
    Compare(CompareArgs),
    /// One self-contained HTML page of plots from result JSON files or an experiment.
    #[command(
        after_help = "Examples:\n  fsbench report a.json b.json -o report.html\n  fsbench report ext4.json xfs.json --label ext4 --label xfs\n  fsbench report fsbench-stacked-vs-native -o stacked.html"
    )]
    Report(fsbench::report::html::cli::ReportArgs),
    /// Benchmarks of fsbench itself.
    #[command(
        after_help = "Examples:\n  fsbench selftest overhead\n  fsbench selftest overhead --seconds 2 --rounds 7 --dir /dev/shm\n  fsbench selftest layout --files 100000 --dir /mnt/test\n  fsbench selftest scan --entries 200000 --dir /dev/shm"
    )]
    Selftest(SelftestArgs),
    /// PostMark 1.5 (as Debian packages it): reads its configuration files, same transactions.
    #[command(
        after_help = "Examples:\n  fsbench postmark pm.cfg\n  fsbench postmark --number 1000 --transactions 20000 --instances 4 --dir /mnt/test\n  fsbench postmark --number 1000 --repeat 5 --cold --json pm.json"
    )]
    Postmark(fsbench::apps::cli::PostmarkArgs),
    /// mdtest's phases: each rank creates, stats, reads and removes N files (alone or on
    /// every rank of an MPI job).
    #[command(
        after_help = "Examples:\n  fsbench mdtest -n 1000 --dir /mnt/test\n  mpirun -np 8 fsbench mdtest -n 10000 --shared-dir --dir /mnt/lustre/bench"
    )]
    Mdtest(fsbench::apps::hpc::MdtestArgs),
    /// IOR's basic pattern: each rank writes a block in transfers, syncs, reads it back.
    #[command(
        after_help = "Examples:\n  fsbench ior -b 256M -t 1M --dir /mnt/test\n  mpirun -np 8 fsbench ior -b 1G -t 4M -C --shared-file --dir /mnt/lustre/bench"
    )]
    Ior(fsbench::apps::hpc::IorArgs),
    /// Record a program's file-system calls with strace, replay them, distil them into a workload.
    #[command(
        after_help = "Examples:\n  fsbench trace record -o cp.trace -- cp -r src dst\n  fsbench trace replay cp.trace --dir /mnt/test --mode deps\n  fsbench trace distill cp.trace -o cp-model.f"
    )]
    Trace(fsbench::trace::cli::TraceArgs),
    /// The Andrew benchmark's phases (mkdir, copy, stat, scan, compile) on a generated C tree.
    #[command(
        after_help = "Examples:\n  fsbench andrew --copies 4 --clients 2 --dir /mnt/test\n  fsbench andrew --scale 100 --drop-caches-between-phases --repeat 3"
    )]
    Andrew(fsbench::apps::cli::AndrewArgs),
    /// A recursive walk that stats every entry, like `find DIR`; --cold drops caches first.
    #[command(
        after_help = "Examples:\n  fsbench find /mnt/test/tree --cold --repeat 5\n  fsbench find /usr/share --warmup 1 --repeat 5 --json warm.json"
    )]
    Find(fsbench::apps::cli::FindArgs),
    /// A compile-like build on a generated source tree: parallel jobs, then a link.
    #[command(
        after_help = "Examples:\n  fsbench build --files 2000 --dirs 50 -j 8 --cpu-ms 20 --dir /mnt/test\n  fsbench build --src ~/src/project -j 2 --repeat 3"
    )]
    Build(fsbench::apps::cli::BuildArgs),
    /// The cleaner: delete files chosen from a `scan` snapshot by a policy until SIZE is
    /// freed, only beneath a directory fsbench made or --really-delete-under DIR.
    #[command(
        after_help = "Examples:\n  fsbench prune --dir /mnt/test --files 20000 --free 64M --policy oldest --cold\n  fsbench scan /srv/home -o home.snap && fsbench prune home.snap --free 5G --policy largest --really-delete-under /srv/home"
    )]
    Prune(fsbench::apps::prune::PruneArgs),
    /// Read every file of an existing tree: files/s, MB/s, per-file latency.
    #[command(
        after_help = "Examples:\n  fsbench read /mnt/aged/fsbench-aged --cold -j 2 --order inode"
    )]
    Read(fsbench::apps::cli::ReadArgs),
    /// Run an experiment plan: set up targets, sweep the factors, repeat, store every result.
    #[command(
        after_help = "Examples:\n  fsbench experiment plans/stacked-vs-native.toml -o stacked --quick\n  fsbench experiment plans/filesystems.toml -o fs --dry-run\n  fsbench experiment plans/aging.toml -o aging --resume"
    )]
    Experiment(fsbench::experiment::cli::ExperimentArgs),
    /// Summarise an experiment's stored results: means, confidence intervals, comparisons.
    #[command(
        after_help = "Examples:\n  fsbench results stacked\n  fsbench results stacked --csv -"
    )]
    Results(fsbench::experiment::cli::ResultsArgs),
    /// List and remove the directories fsbench left behind (reuse directories, --keep, killed
    /// runs): only those carrying its marker, never one a running fsbench holds.
    #[command(
        after_help = "Examples:\n  fsbench clean                 # in $TMPDIR\n  fsbench clean /mnt/test --dry-run"
    )]
    Clean(CleanArgs),
    /// Check every file below DIR written by `fsbench run --verify`: each 4 KiB block's
    /// header (file, offset) and checksum.
    #[command(
        after_help = "Examples:\n  fsbench verify /mnt/test/fsbench-fileserver\n  fsbench verify /mnt/test/kept --json report.json"
    )]
    Verify(VerifyArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Install, e.g. for bash:\n  fsbench completions bash > /etc/bash_completion.d/fsbench"
    )]
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Write the man pages (fsbench.1 and one per subcommand) into DIR, generated from the
    /// same definitions as --help.
    #[command(after_help = "Install:\n  fsbench man /usr/local/share/man/man1 && mandb -q")]
    Man {
        /// Directory to write the pages into (created if missing).
        dir: PathBuf,
    },
}

#[derive(Args)]
struct VerifyArgs {
    /// A directory (every regular file below it is checked) or a file.
    dir: PathBuf,
    /// Write the mismatches as JSON to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Args)]
struct CleanArgs {
    /// Directory to look in (default: $TMPDIR, where runs go unless given --dir).
    #[arg(value_hint = clap::ValueHint::DirPath)]
    dir: Option<PathBuf>,
    /// Only list what would be removed, and why the rest would be kept.
    #[arg(long, short = 'n')]
    dry_run: bool,
}

#[derive(Args, Clone)]
struct RunArgs {
    #[command(flatten)]
    w: WorkloadArgs,
    /// Directory in which fsbench creates its run directory (default: the workload's common
    /// fileset path for workload files, $TMPDIR for built-ins).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// With many clients (`mpirun ... fsbench run`): end every rank's measurement when the
    /// first rank finishes (IOR's stonewalling); the others report what they did by then.
    #[arg(long)]
    stonewall: bool,
    /// Run time in seconds (overrides the workload's `run N`).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Seed for every random choice (tree shape, sizes, offsets).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Keep the run directory and its filesets afterwards.
    #[arg(long)]
    keep: bool,
    /// Write the results as JSON to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Run the workload's `system "..."` commands.
    #[arg(long)]
    allow_system: bool,
    /// No progress or echo output; only the report.
    #[arg(short, long)]
    quiet: bool,
    /// Run this many seconds first and discard what they measure.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    warmup: f64,
    /// Time-series sampling interval in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    interval: f64,
    /// After laying out the filesets, `sync` and drop the page cache (needs root).
    #[arg(long)]
    cold: bool,
    /// When a flowop finds no file in its fileset, count it and go on (Filebench, and the
    /// default, end the run there).
    #[arg(long)]
    continue_when_exhausted: bool,
    /// When a write finds the file system full (ENOSPC, EDQUOT), count the error and go on
    /// (Filebench, and the default, end the run there).
    #[arg(long)]
    continue_on_enospc: bool,
    /// Write the preallocated files with N threads (default: 1, or one per core up to 16
    /// for filesets with `paralloc`, as Filebench). The files, their sizes and content are
    /// the same whatever N; only the order they are created in differs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    layout_threads: Option<u16>,
    /// A `finishoncount`/`finishonbytes` that is done ends the whole run in every quit mode,
    /// as Filebench 1.5-alpha3 did. By default it ends its own thread, as Filebench's
    /// current source does: the run ends with it in the default and `firstdone` modes, and
    /// goes on until the other threads finish in `alldone` mode.
    #[arg(long)]
    finish_ends_run: bool,
    /// Verify data: every 4 KiB block written carries a header (file, offset, generation,
    /// checksum) that reads check; mismatches are reported per flowop and make the run fail.
    #[arg(long)]
    verify: bool,
    /// Only check a kept fileset (the workload's `reuse` directory) without writing:
    /// every block's header and checksum (after a crash, a remount, another run).
    #[arg(long, conflicts_with = "verify")]
    verify_only: bool,
    /// Run the workload N times (fresh filesets each time unless `reuse`) and report
    /// mean ± 95% confidence interval and coefficient of variation.
    #[arg(long, value_name = "N", default_value_t = 1)]
    repeat: u32,
    /// Write the results as CSV to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write the results as a Markdown table to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// How the JSON carries latency histograms: `compact` (one line each), `full` (one number
    /// per line) or `none` (left out; the result can then not be merged).
    #[arg(long, value_enum, default_value_t = fsbench::report::json::Histograms::Compact)]
    histograms: fsbench::report::json::Histograms,
    /// For a fio job: `json` writes fio's JSON (a subset: jobs[].read/write with iops, bw,
    /// clat_ns percentiles) to standard output, the text report going to standard error.
    #[arg(long = "output-format", value_name = "FORMAT", value_parser = ["normal", "json"])]
    output_format: Option<String>,
}

#[derive(Args)]
struct CompareArgs {
    /// Two or more result files written by `fsbench run --json`; the first is the baseline.
    #[arg(required = true, num_args = 2..)]
    files: Vec<PathBuf>,
}

#[derive(Args)]
struct SelftestArgs {
    #[command(subcommand)]
    what: SelftestWhat,
}

#[derive(Subcommand)]
enum SelftestWhat {
    /// Measure fsbench's own overhead: the engine against bare loops of the same system calls.
    Overhead {
        /// Seconds per measured round.
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
        /// Rounds per case (engine and bare loop alternate).
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Directory for the test file (default /dev/shm, a tmpfs).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Size of the file the random reads cover (K, M, G): the overhead grows with it,
        /// so the default is the size of `randomread`-like runs users make.
        #[arg(long, default_value = "256M", value_parser = parse_size_arg)]
        size: u64,
    },
    /// Measure how fast fsbench lays a fileset out against a bare loop creating the same
    /// files (one writer, and one per core).
    Layout {
        /// Files per round.
        #[arg(long, default_value_t = 20_000)]
        files: u64,
        /// Size of each file (K, M, G).
        #[arg(long, default_value = "16K", value_parser = parse_size_arg)]
        size: u64,
        /// Rounds per case (the cases alternate).
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Directory to lay out in (default: the system's temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Measure how fast `fsbench scan` walks a generated tree against `find -printf`.
    Scan {
        /// Entries of the generated tree.
        #[arg(long, default_value_t = 200_000)]
        entries: u64,
        /// Rounds per tool (they alternate).
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Drop the kernel's caches before every round (root).
        #[arg(long)]
        cold: bool,
        /// Directory to make the tree in (default: the system's temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Measure how fast the data generator fills buffers (GB/s on one core) per content kind.
    Content {
        /// MiB generated per kind.
        #[arg(long, default_value_t = 2048)]
        mib: usize,
    },
}

#[derive(Args, Clone)]
struct WorkloadArgs {
    /// A workload file (.f), a fio job file (.fio), or the name of a built-in personality
    /// (see `fsbench list`).
    workload: String,
    /// Set a variable before the script runs (repeatable): -s nfiles=500
    #[arg(short = 's', long = "set", value_name = "NAME=VALUE", value_parser = parse_override)]
    set: Vec<(String, String)>,
    /// The workload argument is a one-line fio job: --fio 'rw=randread bs=4k size=1g'.
    #[arg(long, conflicts_with = "format")]
    fio: bool,
    /// Read the workload file as `fio` job file, whatever its name (`.fio` files are).
    #[arg(long, value_name = "FORMAT", value_parser = ["fio"])]
    format: Option<String>,
}

impl WorkloadArgs {
    /// The workload spec the library reads (`fio:`/`fio-line:` for fio jobs).
    fn spec(&self) -> String {
        fsbench::fiocmd::spec(&self.workload, self.fio, self.format.as_deref())
    }
}

fn parse_override(s: &str) -> Result<(String, String), String> {
    Overrides::parse_one(s)
}

#[derive(Args)]
struct CheckArgs {
    #[command(flatten)]
    w: WorkloadArgs,
    /// Print only errors and warnings.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args)]
struct ShowArgs {
    /// Built-in personality name, or a fio job file (.fio) to explain.
    name: String,
}

fn load(w: &WorkloadArgs) -> Result<Workload> {
    load_with(w, false)
}

/// Load and print warnings; `duration_given` leaves out the missing-`run` warning.
fn load_with(w: &WorkloadArgs, duration_given: bool) -> Result<Workload> {
    match workloads::load(&w.spec(), &Overrides(w.set.clone())) {
        Ok((wl, _)) => {
            for warn in &wl.warnings {
                if duration_given && warn.message == fsbench::model::build::NO_RUN_WARNING {
                    continue;
                }
                fsbench::errln!("{warn}\n");
            }
            Ok(wl)
        }
        Err(LoadError::Invalid(d)) => {
            fsbench::errln!("{d}\n");
            let n = d.0.len();
            bail!(
                "{} has {n} error{}",
                w.workload,
                if n == 1 { "" } else { "s" }
            )
        }
        Err(e) => Err(e.into()),
    }
}

fn cmd_check(a: &CheckArgs) -> Result<()> {
    let wl = load(&a.w)?;
    let unsupported = wl.unsupported();
    if !a.quiet {
        match fsbench::fiocmd::explain(&a.w.spec())? {
            Some(text) => fsbench::out!("{text}"),
            None => fsbench::out!("{}", fsbench::model::explain::explain(&wl)),
        }
    }
    if !unsupported.is_empty() {
        for d in &unsupported {
            fsbench::errln!("{d}\n");
        }
        bail!(
            "{} is valid, but uses {} flowop{} this version of fsbench cannot run",
            a.w.workload,
            unsupported.len(),
            if unsupported.len() == 1 { "" } else { "s" }
        );
    }
    fsbench::outln!("{}: ok", a.w.workload);
    Ok(())
}

/// Where the run directory goes when --dir is not given.
fn default_parent(wl: &Workload, origin: &workloads::Origin) -> PathBuf {
    if let workloads::Origin::File(_) = origin {
        let mut paths: Vec<&str> = wl.filesets.iter().map(|f| f.path.as_str()).collect();
        paths.dedup();
        if paths.len() == 1 && std::path::Path::new(paths[0]).is_dir() {
            return PathBuf::from(paths[0]);
        }
    }
    std::env::temp_dir()
}

fn cmd_run(a: &RunArgs) -> Result<()> {
    #[cfg(feature = "mpi")]
    if fsbench::mpirun::launched() {
        return cmd_run_mpi(a);
    }
    if a.stonewall {
        fsbench::errln!("fsbench: warning: --stonewall ends a multi-client run when its first rank finishes; this run has one client (start it with mpirun, built with --features mpi)");
    }
    let Some((results, verify)) = run_collect(a)? else {
        return Ok(());
    };
    fsbench::report::out::emit(
        &results,
        &[
            ("json", a.json.as_deref()),
            ("csv", a.csv.as_deref()),
            ("markdown", a.markdown.as_deref()),
        ],
        a.histograms,
    )?;
    fsbench::fiocmd::report(&a.w.spec(), &results, a.output_format.as_deref())?;
    if verify {
        verify_summary(&results)?;
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
struct MpiSetup {
    /// The workload's name and, for a workload file, its text (other ranks may not see it).
    workload: String,
    text: Option<String>,
    set: Vec<(String, String)>,
    /// The marked run directory every rank works below (`rank<N>/` each).
    parent: String,
}

/// `mpirun -np N fsbench run ...`: rank 0 checks the workload and makes one marked run
/// directory; every rank runs the workload in its own `rank<N>/` below it, starting its
/// measurement together with the others; rank 0 gathers, merges and reports.
#[cfg(feature = "mpi")]
fn cmd_run_mpi(a: &RunArgs) -> Result<()> {
    let session = fsbench::mpirun::Session::init(a.stonewall)?;
    let rank = session.rank();
    let size = session.size();
    // Rank 0: the workload (parsed and validated here, so a bad one fails once, with its
    // location) and the shared run directory.
    let mut made: Option<fsbench::engine::rundir::RunDir> = None;
    let setup: std::result::Result<MpiSetup, String> = if rank == 0 {
        mpi_setup(a, size, &mut made).map_err(|e| format!("{e:#}"))
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
                fsbench::errln!("fsbench: {e}");
            }
            session.finish();
            drop(session);
            std::process::exit(1);
        }
    };
    // This rank's run: the workload (from rank 0's text when it was a file), in rank<N>/.
    let mut tmp_wl = None;
    let outcome = rank_run(a, &setup, rank, &mut tmp_wl);
    if let Some(f) = tmp_wl {
        let _ = std::fs::remove_file(f);
    }
    let ok = outcome.is_ok();
    let all_ok = session.end(ok);
    let mine = fsbench::mpirun::Outcome {
        rank: rank as u32,
        host: session.host.clone(),
        result: match outcome {
            Ok(Some((r, _))) => Ok(r),
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
        fsbench::errln!("fsbench: {}", fsbench::exit::render(e));
        session.finish();
        drop(session);
        std::process::exit(1);
    }
    session.finish();
    r
}

/// Rank 0 of a multi-client run: the workload checked, its text when it is a file, and the
/// shared run directory with one `rank<N>/` per rank (kept in `made`).
#[cfg(feature = "mpi")]
fn mpi_setup(
    a: &RunArgs,
    size: usize,
    made: &mut Option<fsbench::engine::rundir::RunDir>,
) -> Result<MpiSetup> {
    let wl = load_with(&a.w, a.duration.is_some())?;
    fsbench::mpirun::warn_binding(wl.thread_count() as usize);
    let path = std::path::Path::new(&a.w.workload);
    let text = if path.is_file() {
        Some(
            fsbench::input::read_text_capped(path, fsbench::input::WORKLOAD_MAX, "workload file")
                .with_context(|| format!("{}", path.display()))?,
        )
    } else {
        None
    };
    let parent = fsbench::measure::guard::target_dir(a.dir.as_deref())?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| a.w.workload.clone());
    let rd = fsbench::engine::rundir::RunDir::create(&parent, &format!("mpi-{name}"), false)?;
    for r in 0..size {
        std::fs::create_dir(rd.path.join(format!("rank{r}")))?;
    }
    let p = rd.path.display().to_string();
    *made = Some(rd);
    Ok(MpiSetup {
        workload: a.w.workload.clone(),
        text,
        set: a.w.set.clone(),
        parent: p,
    })
}

/// One rank's run: the workload (from rank 0's text when it was a file, written to `tmp_wl`),
/// in `rank<N>/` of the shared directory, with its own seed and no exports.
#[cfg(feature = "mpi")]
fn rank_run(
    a: &RunArgs,
    setup: &MpiSetup,
    rank: usize,
    tmp_wl: &mut Option<PathBuf>,
) -> Result<Option<(fsbench::stats::Results, bool)>> {
    let mut ra = a.clone();
    if let Some(text) = &setup.text {
        if rank != 0 {
            let f = std::env::temp_dir().join(format!(
                "fsbench-rank{rank}-{}-{}",
                std::process::id(),
                std::path::Path::new(&setup.workload)
                    .file_name()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "workload.f".into())
            ));
            std::fs::write(&f, text)?;
            ra.w.workload = f.display().to_string();
            *tmp_wl = Some(f);
        }
    }
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
    run_collect(&ra)
}

/// Rank 0 at the end of a multi-client run: remove the run directory, merge, report.
#[cfg(feature = "mpi")]
fn report_mpi(
    a: &RunArgs,
    made: Option<fsbench::engine::rundir::RunDir>,
    all: Vec<fsbench::mpirun::Outcome>,
) -> Result<()> {
    let keep = a.keep;
    if let Some(rd) = made {
        if keep {
            fsbench::errln!("fsbench: kept {}", rd.path.display());
        } else if let Err(e) = rd.remove() {
            fsbench::exit::left_behind(e.to_string());
        }
    }
    let merged = fsbench::mpirun::merge_outcomes(all)?;
    fsbench::report::out::emit(
        &merged,
        &[
            ("json", a.json.as_deref()),
            ("csv", a.csv.as_deref()),
            ("markdown", a.markdown.as_deref()),
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

/// Load, validate and run the workload as `a` asks (with its repetitions): the combined
/// results and whether data was verified, or None when nothing was measured (e.g.
/// `--verify-only`, which reports by itself).
fn run_collect(a: &RunArgs) -> Result<Option<(fsbench::stats::Results, bool)>> {
    let mut wa = a.w.clone();
    let parent = target_dir(a, &mut wa)?;
    let wl = load_with(&wa, a.duration.is_some())?;
    if a.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    check_times(a)?;
    if a.cold && !fsbench::engine::is_root() {
        bail!("--cold drops the page cache, which needs root; run as root or leave out --cold");
    }
    if a.verify_only {
        verify_kept(a, &wl, &parent)?;
        return Ok(None);
    }
    // `--verify` checks every read; a flowop's `verify` attribute checks its own reads. Either
    // way every write is stamped.
    let verify = a.verify || wl.has_verify_flowop();
    fsbench::verify::ENABLED.store(verify, std::sync::atomic::Ordering::Relaxed);
    fsbench::verify::ALL_READS.store(a.verify, std::sync::atomic::Ordering::Relaxed);
    for (flag, path) in [
        ("--json", &a.json),
        ("--csv", &a.csv),
        ("--markdown", &a.markdown),
    ] {
        fsbench::limits::check_output(path.as_deref(), flag).map_err(anyhow::Error::msg)?;
    }
    fsbench::engine::install_signal_handlers();
    fsbench::report::out::reserve_stdout_for([
        a.json.as_deref(),
        a.csv.as_deref(),
        a.markdown.as_deref(),
    ]);
    let mut opts = run_options(a, parent);
    if a.warmup == 0.0 {
        opts.warmup = fsbench::fiocmd::ramp_s(&a.w.spec());
    }
    let runs = repeat_runs(a, &wl, &opts)?;
    Ok(Some((fsbench::stats::repeat::combine(runs), verify)))
}

/// The directory the run directory goes in (`--dir` or the workload's default); the
/// workload's `$dir` set to it when the workload has one.
fn target_dir(a: &RunArgs, wa: &mut WorkloadArgs) -> Result<PathBuf> {
    let (probe, origin) = match workloads::load(&wa.spec(), &Overrides(wa.set.clone())) {
        Ok(x) => x,
        Err(_) => {
            load(wa)?;
            unreachable!("load reports the error")
        }
    };
    let parent = match (&a.dir, fsbench::fiocmd::directory(&wa.spec())) {
        (Some(d), _) => d.clone(),
        (None, Some(d)) => d,
        (None, None) => default_parent(&probe, &origin),
    };
    let parent = parent
        .canonicalize()
        .with_context(|| format!("target directory {}", parent.display()))?;
    // The workload's $dir follows the target directory, so echo and paths agree.
    if probe.vars.iter().any(|(k, _)| k == "dir") && !wa.set.iter().any(|(k, _)| k == "dir") {
        wa.set.push(("dir".into(), parent.display().to_string()));
    }
    // Not kept through the run: a workload of many flowops is tens of megabytes.
    drop(probe);
    Ok(parent)
}

/// `--interval`, `--duration` and `--warmup` within range.
fn check_times(a: &RunArgs) -> Result<()> {
    // Bounded so that every time computation stays in range (a year is plenty).
    const MAX_S: f64 = 366.0 * 86400.0;
    for (name, v, min_exclusive) in [
        ("--interval", Some(a.interval), true),
        ("--duration", a.duration, true),
        ("--warmup", Some(a.warmup), false),
    ] {
        if let Some(v) = v {
            if !v.is_finite() || !(0.0..=MAX_S).contains(&v) || (min_exclusive && v == 0.0) {
                bail!(
                    "{name} {v}: expected {} number of seconds up to {MAX_S}",
                    if min_exclusive {
                        "a positive"
                    } else {
                        "a non-negative"
                    }
                );
            }
        }
    }
    Ok(())
}

/// `--verify-only`: check the filesets an earlier run kept.
fn verify_kept(a: &RunArgs, wl: &fsbench::model::Workload, parent: &std::path::Path) -> Result<()> {
    if !wl.filesets.iter().any(|f| f.reuse) {
        bail!(
            "--verify-only checks the fileset a run kept, and workload {} keeps none: give its fileset `reuse` (-s reuse=true where the workload offers it), run it with --verify, then --verify-only; or check a --keep directory with `fsbench verify DIR`",
            wl.name
        );
    }
    let stable = fsbench::engine::rundir::RunDir::stable_path(parent, &wl.name);
    let dirs: Vec<PathBuf> = wl
        .filesets
        .iter()
        .filter(|f| f.reuse)
        .map(|f| stable.join(&f.name))
        .collect();
    cmd_verify(&dirs, a.json.as_deref())
}

fn run_options(a: &RunArgs, parent: PathBuf) -> fsbench::engine::RunOptions {
    use std::io::IsTerminal;
    fsbench::engine::RunOptions {
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
    }
}

/// The run, `--repeat` times or until one is interrupted.
fn repeat_runs(
    a: &RunArgs,
    wl: &fsbench::model::Workload,
    opts: &fsbench::engine::RunOptions,
) -> Result<Vec<fsbench::stats::Results>> {
    let mut runs = Vec::new();
    for i in 0..a.repeat {
        if a.repeat > 1 && !a.quiet {
            fsbench::errln!("fsbench: repetition {} of {}", i + 1, a.repeat);
        }
        let r = fsbench::engine::run(wl, opts)?;
        if !a.quiet {
            say_what_is_left(std::path::Path::new(&r.run_dir));
        }
        let stop = r.interrupted;
        runs.push(r);
        if stop {
            break;
        }
    }
    Ok(runs)
}

/// After a run with verification: one line of totals, the first mismatches, and an error
/// when any block failed its check.
fn verify_summary(results: &fsbench::stats::Results) -> Result<()> {
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
    fsbench::errln!(
        "fsbench: verify: {} checked, {}, {} not checked (a write to the same file ran meanwhile)",
        fsbench::report::count(blocks, "block"),
        fsbench::report::count(bad, "mismatch"),
        fsbench::report::count(skipped, "read"),
    );
    for (name, m) in first.iter().take(5) {
        fsbench::errln!(
            "fsbench: verify: {name}: {} at offset {}: expected {}, found {}",
            m.path,
            m.offset,
            m.expected,
            m.found
        );
    }
    if bad > 0 {
        bail!(
            "verify: {} (all are in the JSON results)",
            fsbench::report::count(bad, "mismatch")
        );
    }
    Ok(())
}

/// `fsbench verify DIR` and `run --verify-only`: check every regular file below the
/// directories (no link followed) on its own.
fn cmd_verify(dirs: &[PathBuf], json: Option<&std::path::Path>) -> Result<()> {
    let mut files = 0u64;
    let mut blocks = 0u64;
    let mut found: Vec<fsbench::verify::Mismatch> = Vec::new();
    let mut count = 0u64;
    let mut stack: Vec<PathBuf> = Vec::new();
    for d in dirs {
        let m = std::fs::symlink_metadata(d).with_context(|| format!("{}", d.display()))?;
        if m.file_type().is_symlink() {
            bail!("{} is a symbolic link; not following it", d.display());
        }
        stack.push(d.clone());
    }
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p).with_context(|| format!("{}", p.display()))?;
        if m.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&p)
                .with_context(|| format!("listing {}", p.display()))?
                .flatten()
                .map(|e| e.path())
                .collect();
            entries.sort();
            stack.extend(entries.into_iter().rev());
        } else if m.is_file() {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with(".fsbench") {
                continue;
            }
            files += 1;
            blocks += fsbench::verify::check_file(&p, &mut |mm| {
                count += 1;
                if found.len() < 10_000 {
                    found.push(mm);
                }
            })
            .with_context(|| format!("reading {}", p.display()))?;
        }
    }
    fsbench::errln!(
        "fsbench: verify: {} checked, {} in {}",
        fsbench::report::count(blocks, "block"),
        fsbench::report::count(count, "mismatch"),
        fsbench::report::count(files, "file"),
    );
    for m in found.iter().take(5) {
        fsbench::errln!(
            "fsbench: verify: {} at offset {}: expected {}, found {}",
            m.path,
            m.offset,
            m.expected,
            m.found
        );
    }
    if let Some(j) = json {
        let v = serde_json::json!({"files": files, "blocks_checked": blocks, "mismatches": count, "first": found});
        let text = serde_json::to_string_pretty(&v)?;
        if j == std::path::Path::new("-") {
            fsbench::outln!("{text}");
        } else {
            std::fs::write(j, text + "\n").with_context(|| format!("writing {}", j.display()))?;
        }
    }
    if count > 0 {
        bail!("verify: {}", fsbench::report::count(count, "mismatch"));
    }
    if blocks == 0 && files > 0 {
        bail!(
            "verify: none of the {} carries fsbench's block headers (written without --verify?)",
            fsbench::report::count(files, "file")
        );
    }
    Ok(())
}

/// After a run: whether its directory was removed, or kept (reuse, --keep) and how big it is,
/// so nothing is left behind unnoticed.
fn say_what_is_left(dir: &std::path::Path) {
    if dir.as_os_str().is_empty() {
        return;
    }
    if dir.exists() {
        let b = fsbench::engine::clean::size_of(dir) as f64;
        fsbench::errln!(
            "fsbench: left {} ({}) on disk for later runs; `fsbench clean {}` removes it",
            dir.display(),
            fsbench::model::explain::human_bytes(b),
            dir.parent().unwrap_or(dir).display()
        );
    } else {
        fsbench::errln!("fsbench: removed {}", dir.display());
    }
}

fn cmd_compare(a: &CompareArgs) -> Result<()> {
    let mut runs = Vec::new();
    for f in &a.files {
        let text = fsbench::input::read_text_capped(f, fsbench::input::RESULTS_MAX, "result file")
            .with_context(|| format!("reading {}", f.display()))?;
        let r: fsbench::stats::Results = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a result file written by `fsbench run --json`",
                f.display()
            )
        })?;
        runs.push((f.display().to_string(), r));
    }
    fsbench::out!("{}", fsbench::report::compare::compare(&runs));
    Ok(())
}

fn cmd_selftest(a: &SelftestArgs) -> Result<()> {
    match &a.what {
        SelftestWhat::Overhead {
            seconds,
            rounds,
            dir,
            size,
        } => {
            let dir = dir.clone().unwrap_or_else(|| PathBuf::from("/dev/shm"));
            let report = fsbench::engine::selftest::overhead(&dir, *seconds, *rounds, *size)?;
            fsbench::out!("{report}");
            Ok(())
        }
        SelftestWhat::Layout {
            files,
            size,
            rounds,
            dir,
        } => {
            let dir = dir.clone().unwrap_or_else(std::env::temp_dir);
            let report = fsbench::engine::selftest_layout::layout(&dir, *files, *size, *rounds)?;
            fsbench::out!("{report}");
            Ok(())
        }
        SelftestWhat::Scan {
            entries,
            rounds,
            cold,
            dir,
        } => {
            let dir = dir.clone().unwrap_or_else(std::env::temp_dir);
            let report = fsbench::engine::selftest_scan::scan(&dir, *entries, *rounds, *cold)?;
            fsbench::out!("{report}");
            Ok(())
        }
        SelftestWhat::Content { mib } => {
            fsbench::out!("{}", fsbench::content::speed_report(*mib << 20));
            Ok(())
        }
    }
}

fn cmd_list() -> Result<()> {
    fsbench::outln!("Built-in personalities (run one with `fsbench run NAME`, read it with `fsbench show NAME`):\n");
    for (name, text) in workloads::BUILTINS {
        fsbench::outln!("  {name:<30} {}", workloads::description(text));
        if let Ok((wl, _)) = workloads::load(name, &Overrides::default()) {
            let vars: Vec<String> = wl
                .vars
                .iter()
                .filter(|(k, _)| k != "dir")
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            if !vars.is_empty() {
                fsbench::outln!("  {:<30} vars: {}", "", vars.join(" "));
            }
        }
    }
    Ok(())
}

fn cmd_show(a: &ShowArgs) -> Result<()> {
    if let Some(text) = fsbench::fiocmd::show(&a.name)? {
        fsbench::out!("{text}");
        return Ok(());
    }
    let text = workloads::builtin(&a.name).with_context(|| {
        format!(
            "no built-in personality named `{}` (see `fsbench list`)",
            a.name
        )
    })?;
    fsbench::out!("{text}");
    if let Ok((wl, _)) = workloads::load(&a.name, &Overrides::default()) {
        fsbench::outln!("\n# Variables and their defaults (change with -s NAME=VALUE):");
        for (k, v) in &wl.vars {
            fsbench::outln!("#   ${k} = {v}");
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    fsbench::exit::install_panic_hook();
    fsbench::disk::register_hooks();
    fsbench::remote::register_hooks();
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Filebench's command line, `filebench -f WORKLOAD.f`, as an alias of `fsbench run`.
    if args.len() > 2 && args[1] == "-f" {
        args[1] = "run".into();
    }
    // An export on standard output owns it: the text report moves to standard error.
    fsbench::report::out::reserve_stdout_for_args(&args);
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return usage(&e),
    };
    match std::panic::catch_unwind(|| dispatch(cli)) {
        Ok(r) => fsbench::exit::status(&r),
        // Lost output the standard library panicked on (recorded by the panic hook).
        Err(p) if fsbench::exit::is_output_panic(p.as_ref()) => fsbench::exit::status(&Ok(())),
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// Help, version or a usage error from the argument parser: printed (help and version on
/// standard output), then the parser's status unless the text was lost.
fn usage(e: &clap::Error) -> ExitCode {
    if let Err(io) = e.print() {
        if e.use_stderr() {
            fsbench::console::stderr_failed();
        } else {
            fsbench::console::stdout_failed_with(&io);
        }
    }
    fsbench::console::flush();
    if fsbench::console::stdout_error().is_some() || fsbench::console::stderr_lost() {
        return fsbench::exit::status(&Ok(()));
    }
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
}

fn dispatch(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Check(a) => cmd_check(&a),
        Command::List => cmd_list(),
        Command::Show(a) => cmd_show(&a),
        Command::Run(a) => cmd_run(&a),
        Command::Scan(a) => {
            if a.cold {
                fsbench::measure::drop_caches()?;
            }
            fsbench::scan::run(a)
        }
        Command::Diff(a) => fsbench::scan::diff::run(a),
        Command::Layout(a) => fsbench::layout::run(a),
        Command::Age(a) => fsbench::age::cli::run(a),
        Command::Disk(a) => fsbench::disk::cli::run(a),
        Command::Remote(a) => fsbench::remote::cli::run(a),
        Command::Compare(a) => cmd_compare(&a),
        Command::Report(a) => {
            let flagged = a.include_flagged;
            fsbench::report::html::cli::run(&a, &|p: &std::path::Path| {
                fsbench::experiment::report_input::load_with(p, flagged)
            })
        }
        Command::Selftest(a) => cmd_selftest(&a),
        Command::Postmark(a) => fsbench::apps::postmark::main(&a),
        Command::Trace(a) => fsbench::trace::cli::main(&a),
        Command::Mdtest(a) => fsbench::apps::hpc::mdtest(&a),
        Command::Ior(a) => fsbench::apps::hpc::ior(&a),
        Command::Andrew(a) => fsbench::apps::andrew::main(&a),
        Command::Find(a) => fsbench::apps::find::main(&a),
        Command::Build(a) => fsbench::apps::build::main(&a),
        Command::Prune(a) => fsbench::apps::prune::main(&a),
        Command::Read(a) => fsbench::apps::read::main(&a),
        Command::Experiment(a) => fsbench::experiment::cli::experiment(a),
        Command::Results(a) => fsbench::experiment::cli::results(a),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            // Generated into memory: the generator panics when its writer fails.
            let script = fsbench::complete::script(shell, Cli::command(), "fsbench");
            fsbench::console::out_bytes(script.as_bytes());
            Ok(())
        }
        Command::Man { dir } => {
            use clap::CommandFactory;
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), &dir)
                .with_context(|| format!("writing man pages into {}", dir.display()))?;
            fsbench::outln!("wrote man pages into {}", dir.display());
            Ok(())
        }
        Command::Verify(a) => cmd_verify(std::slice::from_ref(&a.dir), a.json.as_deref()),
        Command::Clean(a) => {
            let dir = a.dir.clone().unwrap_or_else(std::env::temp_dir);
            let done = fsbench::engine::clean::clean(&dir, a.dry_run)?;
            fsbench::out!("{}", done.report);
            if done.failed > 0 {
                anyhow::bail!(
                    "{} of the directories could not be removed (see above)",
                    done.failed
                );
            }
            Ok(())
        }
    }
}

/// A size with an optional K, M, G or T suffix (powers of 1024), for clap.
fn parse_size_arg(s: &str) -> Result<u64, String> {
    fsbench::disk::cli::parse_size(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every subcommand's help shows examples, and every example parses: the help cannot
    /// drift from the options it documents.
    #[test]
    fn every_subcommand_has_examples_that_parse() {
        let cmd = Cli::command();
        let mut missing = Vec::new();
        for sub in cmd.get_subcommands() {
            let name = sub.get_name();
            let help = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(
                help.contains("Examples:") || help.contains("Install"),
                "`fsbench {name} --help` has no examples"
            );
            for line in help
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with("fsbench "))
            {
                let line = line.split(" #").next().unwrap().split(" >").next().unwrap();
                let line = line.split(" &&").next().unwrap();
                let words: Vec<&str> = line.split_whitespace().collect();
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("example `{line}` of `fsbench {name}` does not parse: {e}");
                }
            }
            undescribed(sub, &format!("fsbench {name}"), &mut missing);
        }
        assert!(
            missing.is_empty(),
            "arguments without a description: {missing:?}"
        );
    }

    /// Arguments of `cmd` and its nested subcommands that have no description.
    fn undescribed(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            let id = a.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if a.get_help().is_none() && a.get_long_help().is_none() {
                missing.push(format!("{path}: {id}"));
            }
        }
        for s in cmd.get_subcommands() {
            undescribed(s, &format!("{path} {}", s.get_name()), missing);
        }
    }
}
