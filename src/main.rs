//! The fsbench command line: parse arguments, call the library, print.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use fsbench::runcmd::*;
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
        after_help = "Examples:\n  fsbench run fileserver\n  fsbench run varmail --dir /mnt/test -s nthreads=4 --duration 30\n  fsbench run my.f --repeat 5 --json results.json\n  fsbench run webserver --cold --warmup 5 --csv -\n\nIn the report, `N without a file` beside a flowop counts the times it found no file to\nwork on: nothing was issued, and those times are not in its ops. A fileset with no free\nentry for createfile, or none left for deletefile or openfile, ends the run the first\ntime, as in Filebench (only that thread in alldone mode), unless --continue-when-exhausted\ncounts it and goes on. `N skipped (file open elsewhere)` beside deletefile counts deletes\npassed over because another thread had the file open (as Filebench skips them, not\noperations) or, for deletefile fd=N, had deleted it first; the run goes on."
    )]
    Run(RunArgs),
    /// Walk a tree in parallel, summarise it and write a metadata snapshot.
    #[command(
        after_help = "Examples:\n  fsbench scan /home -o home.snap\n  fsbench scan src --hash -o src.snap"
    )]
    Scan(fsbench_engine::scan::ScanArgs),
    /// Files and bytes of NEW identical by content to OLD (snapshots from `scan --hash`, or directories).
    #[command(
        after_help = "Examples:\n  fsbench diff old.snap new.snap\n  fsbench diff linux-6.1 linux-6.2 --markdown -"
    )]
    Diff(fsbench_engine::scan::diff::DiffArgs),
    /// Smith–Seltzer layout score of the files under a directory (FIEMAP).
    #[command(
        after_help = "Examples:\n  fsbench layout /mnt/test\n  fsbench layout /mnt/test --json layout.json"
    )]
    Layout(fsbench_engine::layout::LayoutArgs),
    /// Age the file system holding DIR: fill to a target fullness, then churn towards a profile.
    #[command(
        after_help = "Examples:\n  fsbench age /mnt/aged --fill 0.8 --seed 1 --ops 100000\n  fsbench age /mnt/aged --fill 0.5 --profile agrawal --json age.json"
    )]
    Age(fsbench_tools::age::args::AgeArgs),
    /// Simulated disks: an HDD model under a loop device.
    #[command(
        after_help = "Examples:\n  fsbench disk create hdd0 --model hdd --size 4G --mkfs ext4 --mount /mnt/hdd0\n  fsbench disk stats hdd0\n  fsbench disk remove hdd0"
    )]
    Disk(fsbench_tools::disk::cli::DiskArgs),
    /// Simulated remote file systems: a server tree behind a modelled network (RTT, bandwidth).
    #[command(
        after_help = "Examples:\n  fsbench remote create afs0 --server /srv/tree --mount /mnt/afs0 --preset 1mbit\n  fsbench remote create nfs0 --server /srv/tree --mount /mnt/nfs0 --protocol block --bandwidth 10mbit --rtt 20ms --writable\n  fsbench remote create la --server /srv/tree --mount /mnt/la --lookaside /usr/src\n  fsbench remote stats afs0\n  fsbench remote remove afs0"
    )]
    Remote(fsbench_tools::remote::cli::RemoteArgs),
    /// NFS servers on 127.0.0.1 (NFS-Ganesha) exporting a directory fsbench makes.
    #[command(
        after_help = "Examples:\n  fsbench nfs create n0 --image 1G --mkfs ext4\n  fsbench nfs create n1 --dir /srv/scratch --version 4\n  fsbench nfs list\n  fsbench nfs remove n0"
    )]
    Nfs(fsbench_tools::nfs::cli::NfsArgs),
    /// Compare result files side by side, per flowop and in total.
    #[command(after_help = "Examples:\n  fsbench compare ext4.json xfs.json btrfs.json")]
    Compare(CompareArgs),
    /// One self-contained HTML page of plots from result JSON files or an experiment.
    #[command(
        after_help = "Examples:\n  fsbench report a.json b.json -o report.html\n  fsbench report ext4.json xfs.json --label ext4 --label xfs\n  fsbench report fsbench-stacked-vs-native -o stacked.html"
    )]
    Report(fsbench_results::report::html::cli::ReportArgs),
    /// Benchmarks of fsbench itself.
    #[command(
        after_help = "Examples:\n  fsbench selftest overhead\n  fsbench selftest overhead --seconds 2 --rounds 7 --dir /dev/shm\n  fsbench selftest layout --files 100000 --dir /mnt/test\n  fsbench selftest scan --entries 200000 --dir /dev/shm\n  fsbench selftest age --size 512M --ops 100000"
    )]
    Selftest(fsbench::selftestcmd::SelftestArgs),
    /// PostMark 1.5 (as Debian packages it): reads its configuration files, same transactions.
    #[command(
        after_help = "Examples:\n  fsbench postmark pm.cfg\n  fsbench postmark --number 1000 --transactions 20000 --instances 4 --dir /mnt/test\n  fsbench postmark --number 1000 --repeat 5 --cold --json pm.json"
    )]
    Postmark(fsbench_tools::apps::cli::PostmarkArgs),
    /// mdtest's phases: each rank creates, stats, reads and removes N files (alone or on
    /// every rank of an MPI job).
    #[command(
        after_help = "Examples:\n  fsbench mdtest -n 1000 --dir /mnt/test\n  mpirun -np 8 fsbench mdtest -n 10000 --shared-dir --dir /mnt/lustre/bench"
    )]
    Mdtest(fsbench_tools::apps::hpc::MdtestArgs),
    /// IOR's basic pattern: each rank writes a block in transfers, syncs, reads it back.
    #[command(
        after_help = "Examples:\n  fsbench ior -b 256M -t 1M --dir /mnt/test\n  mpirun -np 8 fsbench ior -b 1G -t 4M -C --shared-file --dir /mnt/lustre/bench"
    )]
    Ior(fsbench_tools::apps::hpc::IorArgs),
    /// Record a program's file-system calls with strace, replay them, distil them into a workload.
    #[command(
        after_help = "Examples:\n  fsbench trace record -o cp.trace -- cp -r src dst\n  fsbench trace replay cp.trace --dir /mnt/test --mode deps\n  fsbench trace distill cp.trace -o cp-model.f"
    )]
    Trace(fsbench_tools::trace::cli::TraceArgs),
    /// The Andrew benchmark's phases (mkdir, copy, stat, scan, compile) on a generated C tree.
    #[command(
        after_help = "Examples:\n  fsbench andrew --copies 4 --clients 2 --dir /mnt/test\n  fsbench andrew --scale 100 --drop-caches-between-phases --repeat 3"
    )]
    Andrew(fsbench_tools::apps::cli::AndrewArgs),
    /// A recursive walk that stats every entry, like `find DIR`; --cold drops caches first.
    #[command(
        after_help = "Examples:\n  fsbench find /mnt/test/tree --cold --repeat 5\n  fsbench find /usr/share --warmup 1 --repeat 5 --json warm.json"
    )]
    Find(fsbench_tools::apps::cli::FindArgs),
    /// A compile-like build on a generated source tree: parallel jobs, then a link.
    #[command(
        after_help = "Examples:\n  fsbench build --files 2000 --dirs 50 -j 8 --cpu-ms 20 --dir /mnt/test\n  fsbench build --src ~/src/project -j 2 --repeat 3"
    )]
    Build(fsbench_tools::apps::cli::BuildArgs),
    /// The cleaner: delete files chosen from a `scan` snapshot by a policy until SIZE is
    /// freed, only beneath a directory fsbench made or --really-delete-under DIR.
    #[command(
        after_help = "Examples:\n  fsbench prune --dir /mnt/test --files 20000 --free 64M --policy oldest --cold\n  fsbench scan /srv/home -o home.snap && fsbench prune home.snap --free 5G --policy largest --really-delete-under /srv/home"
    )]
    Prune(fsbench_tools::apps::prune::PruneArgs),
    /// Read every file of an existing tree: files/s, MB/s, per-file latency.
    #[command(
        after_help = "Examples:\n  fsbench read /mnt/aged/fsbench-aged --cold -j 2 --order inode"
    )]
    Read(fsbench_tools::apps::cli::ReadArgs),
    /// Smith & Seltzer's hot files: read, then overwrite, the files the last days of aging
    /// wrote, each phase timed.
    #[command(
        after_help = "Examples:\n  fsbench age /mnt/aged --ops 200000 --day-ops 6000\n  fsbench hot /mnt/aged --days 30 --cold"
    )]
    Hot(fsbench_tools::age::hot::HotArgs),
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
    /// same definitions as --help; `-` prints fsbench.1 on standard output.
    #[command(
        after_help = "Install:\n  fsbench man /usr/local/share/man/man1 && mandb -q\n  fsbench man - > fsbench.1"
    )]
    Man {
        /// Directory to write the pages into (created if missing), or `-`.
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

fn main() -> ExitCode {
    fsbench_base::exit::install_panic_hook();
    fsbench_results::stats::build_info::record(
        env!("FSBENCH_GIT_COMMIT"),
        env!("FSBENCH_GIT_MODIFIED"),
    );
    fsbench_tools::disk::register_hooks();
    fsbench_tools::remote::register_hooks();
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    filebench_alias(&mut args);
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return usage(&e),
    };
    // An export on standard output owns it: the text report moves to standard error.
    fsbench_base::export::check::reserve_stdout(&outputs(&cli.command));
    match std::panic::catch_unwind(|| dispatch(cli)) {
        Ok(r) => fsbench_base::exit::status(&r),
        // Lost output the standard library panicked on (recorded by the panic hook).
        Err(p) if fsbench_base::exit::is_output_panic(p.as_ref()) => {
            fsbench_base::exit::status(&Ok(()))
        }
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// The files `command` writes its results to, as its arguments list them.
fn outputs(command: &Command) -> Vec<fsbench_base::export::check::Named<'_>> {
    use fsbench_base::export::check::{named, Outputs};
    match command {
        Command::Run(a) => a.outputs(),
        Command::Scan(a) => a.outputs(),
        Command::Diff(a) => a.outputs(),
        Command::Layout(a) => a.outputs(),
        Command::Age(a) => a.outputs(),
        Command::Report(a) => a.outputs(),
        Command::Postmark(a) => a.outputs(),
        Command::Mdtest(a) => a.outputs(),
        Command::Ior(a) => a.outputs(),
        Command::Trace(a) => a.outputs(),
        Command::Andrew(a) => a.outputs(),
        Command::Find(a) => a.outputs(),
        Command::Build(a) => a.outputs(),
        Command::Prune(a) => a.outputs(),
        Command::Read(a) => a.outputs(),
        Command::Hot(a) => a.outputs(),
        Command::Results(a) => a.outputs(),
        Command::Verify(a) => vec![named(a.json.as_deref(), "--json")],
        Command::Man { dir } => vec![named(Some(dir), "man")],
        // Their output is the document itself (a script), or a person's text (`--json` of
        // `disk`, `remote` and `nfs` is a switch of how `list` and `stats` print).
        Command::Completions { .. }
        | Command::Check(_)
        | Command::List
        | Command::Show(_)
        | Command::Disk(_)
        | Command::Remote(_)
        | Command::Nfs(_)
        | Command::Compare(_)
        | Command::Selftest(_)
        | Command::Experiment(_)
        | Command::Clean(_) => Vec::new(),
    }
}

/// Filebench's command line, `filebench -f WORKLOAD.f`, as an alias of `fsbench run`: one
/// function, so the test of the documented commands reads them as `main` does.
fn filebench_alias<T: PartialEq<str> + From<&'static str>>(args: &mut [T]) {
    if args.len() > 2 && args[1].eq("-f") {
        args[1] = "run".into();
    }
}

/// Help, version or a usage error from the argument parser: printed (help and version on
/// standard output), then the parser's status unless the text was lost.
fn usage(e: &clap::Error) -> ExitCode {
    if let Err(io) = e.print() {
        if e.use_stderr() {
            fsbench_base::console::stderr_failed();
        } else {
            fsbench_base::console::stdout_failed_with(&io);
        }
    }
    fsbench_base::console::flush();
    if fsbench_base::console::stdout_error().is_some() || fsbench_base::console::stderr_lost() {
        return fsbench_base::exit::status(&Ok(()));
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
            fsbench_engine::scan::check(&a)?;
            if a.cold {
                fsbench_harness::measure::drop_caches()?;
            }
            fsbench_engine::scan::run(a)
        }
        Command::Diff(a) => fsbench_engine::scan::diff::run(a),
        Command::Layout(a) => fsbench_engine::layout::run(a),
        Command::Age(a) => fsbench_tools::age::cli::run(a),
        Command::Disk(a) => fsbench_tools::disk::cli::run(a),
        Command::Remote(a) => fsbench_tools::remote::cli::run(a),
        Command::Nfs(a) => fsbench_tools::nfs::cli::run(a),
        Command::Compare(a) => cmd_compare(&a),
        Command::Report(a) => {
            let flagged = a.include_flagged;
            fsbench_results::report::html::cli::run(&a, &|p: &std::path::Path| {
                fsbench::experiment::report_input::load_with(p, flagged)
            })
        }
        Command::Selftest(a) => fsbench::selftestcmd::run(&a),
        Command::Postmark(a) => fsbench_tools::apps::postmark::main(&a),
        Command::Trace(a) => fsbench_tools::trace::cli::main(&a),
        Command::Mdtest(a) => fsbench_tools::apps::hpc::mdtest(&a),
        Command::Ior(a) => fsbench_tools::apps::hpc::ior(&a),
        Command::Andrew(a) => fsbench_tools::apps::andrew::main(&a),
        Command::Find(a) => fsbench_tools::apps::find::main(&a),
        Command::Build(a) => fsbench_tools::apps::build::main(&a),
        Command::Prune(a) => {
            if let Some(d) = &a.really_delete_under {
                fsbench_harness::measure::guard::deletable_under(d, "--really-delete-under")?;
            }
            fsbench_tools::apps::prune::main(&a)
        }
        Command::Read(a) => fsbench_tools::apps::read::main(&a),
        Command::Hot(a) => fsbench_tools::age::hot::main(&a),
        Command::Experiment(a) => fsbench::experiment::cli::experiment(a),
        Command::Results(a) => fsbench::experiment::cli::results(a),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            // Generated into memory: the generator panics when its writer fails.
            let script = fsbench::complete::script(shell, Cli::command(), "fsbench");
            fsbench_base::console::out_bytes(script.as_bytes());
            Ok(())
        }
        Command::Man { dir } if fsbench_base::console::is_stdout(&dir) => {
            use clap::CommandFactory;
            let page = fsbench::manpage::page(Cli::command()).context("rendering fsbench.1")?;
            fsbench_base::export::Output::open(&dir, "man page")?.bytes(&page)
        }
        Command::Man { dir } => {
            use clap::CommandFactory;
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            fsbench::manpage::write_all(Cli::command(), &dir)
                .with_context(|| format!("writing man pages into {}", dir.display()))?;
            fsbench_base::outln!("wrote man pages into {}", dir.display());
            Ok(())
        }
        Command::Verify(a) => {
            fsbench_model::verify::check_dirs(std::slice::from_ref(&a.dir), a.json.as_deref())
        }
        Command::Clean(a) => {
            let dir = a.dir.clone().unwrap_or_else(std::env::temp_dir);
            let done = fsbench_engine::engine::clean::clean(&dir, a.dry_run)?;
            fsbench_base::out!("{}", done.report);
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

    /// Standard output goes to an export when the parsed arguments send one there: each
    /// command's outputs, fio's JSON and terse formats, and nothing after `--` (a recorded
    /// command's own options).
    #[test]
    fn exports_to_standard_output_are_read_from_the_parsed_arguments() {
        let to_stdout = |line: &str| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let cli = Cli::try_parse_from(&words).unwrap_or_else(|e| panic!("{line}: {e}"));
            (outputs(&cli.command).iter())
                .any(|(p, _)| p.is_some_and(fsbench_base::console::is_stdout))
        };
        for line in [
            "fsbench run x --json -",
            "fsbench run x --csv=-",
            "fsbench find d --markdown - --repeat 2",
            "fsbench report a.json -o -",
            "fsbench trace import l --output=-",
            "fsbench trace record -o - -- cp a b",
            "fsbench run j.fio --output-format json",
            "fsbench run j.fio --output-format=terse",
            "fsbench postmark --json -",
            "fsbench results d --runs-json -",
            "fsbench verify d --json -",
            "fsbench age d --json -",
        ] {
            assert!(
                to_stdout(line),
                "{line}: standard output not given to the export"
            );
        }
        for line in [
            "fsbench run x --json out.json",
            "fsbench run j.fio --output-format=normal",
            "fsbench report a.json -o x.html",
            "fsbench trace record -o t.trace -- prog --json -",
            "fsbench run -",
            "fsbench experiment p.toml -o -",
        ] {
            assert!(
                !to_stdout(line),
                "{line}: standard output given to an export"
            );
        }
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

/// The commands README.md and the user guide (docs/guide/) show, read with this parser.
#[cfg(test)]
mod documented {
    use super::{filebench_alias, Cli};
    use clap::Parser;
    use std::path::{Path, PathBuf};

    /// Every shell block of README.md and docs/guide/ is checked: each `fsbench` command of a
    /// ```sh or ```console block parses with this parser, as `main` reads it, so the pages
    /// cannot name a subcommand, option or value that does not exist. Output and listings
    /// are fenced ```text; a block that cannot be checked follows an `<!-- illustrative -->`
    /// line. A fence without a language, or with another one and no marker, is refused, so
    /// no block goes unchecked by accident.
    #[test]
    fn documented_commands_parse() {
        let (mut failures, mut checked) = (Vec::new(), 0);
        for page in pages() {
            let name = shown(&page);
            for b in code_blocks(&read(&page)) {
                let at = format!("{name}:{}", b.line);
                match b.lang.as_str() {
                    _ if b.illustrative => {}
                    "text" => {}
                    "sh" | "console" => {
                        for (line, cmd) in commands(&b) {
                            for mut args in simple_commands(&cmd).iter().filter_map(|w| fsbench_args(w)) {
                                filebench_alias(&mut args);
                                checked += 1;
                                if let Err(e) = parse(&args) {
                                    failures.push(format!("{name}:{line}: `{cmd}`: {e}"));
                                }
                            }
                        }
                    }
                    "" => failures.push(format!(
                        "{at}: a code block without a language: fence it ```sh or ```console (checked) or ```text"
                    )),
                    other => failures.push(format!(
                        "{at}: a ```{other} block is not checked: fence it ```text or put an `<!-- illustrative -->` line before it"
                    )),
                }
            }
        }
        assert!(
            checked >= 40,
            "only {checked} documented fsbench commands found: is the extraction broken?"
        );
        assert!(
            failures.is_empty(),
            "documented commands that do not parse:\n{}",
            failures.join("\n")
        );
    }

    /// `.ci/run` runs the test command README.md gives under "Set up and run", word for word.
    #[test]
    fn ci_runs_the_readme_test_command() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let readme = read(&root.join("README.md"));
        let setup = readme
            .split("\n## Set up and run\n")
            .nth(1)
            .expect("README.md has a \"Set up and run\" section");
        let block = code_blocks(setup).into_iter().next();
        let block = block.expect("a code block under \"Set up and run\"");
        let tests: Vec<String> = commands(&block)
            .iter()
            .flat_map(|(_, c)| simple_commands(c))
            .filter(|w| w.len() >= 2 && w[0] == "cargo" && w[1] == "test")
            .map(|w| w.join(" "))
            .collect();
        assert_eq!(tests.len(), 1, "one test command in README.md: {tests:?}");
        let ci = read(&root.join(".ci/run"));
        assert!(
            ci.lines().any(|l| l.trim() == tests[0]),
            ".ci/run does not run `{}`, the test command of README.md",
            tests[0]
        );
    }

    /// Every relative link of README.md and docs/guide/ names a file that exists, and its
    /// `#section`, if any, one of that page's headings.
    #[test]
    fn documented_links_resolve() {
        let mut broken = Vec::new();
        for page in pages() {
            let text = read(&page);
            for (line, target) in links(&text) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
                let file = match path {
                    "" => page.clone(),
                    p => page.parent().unwrap().join(p),
                };
                let missing = if !file.exists() {
                    true
                } else {
                    let md = file.extension().is_some_and(|x| x == "md");
                    md && !anchor.is_empty() && !anchors(&read(&file)).iter().any(|a| a == anchor)
                };
                if missing {
                    broken.push(format!("{}:{line}: {target}", shown(&page)));
                }
            }
        }
        assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    }

    /// A fenced code block: its language, the line of its opening fence, whether an
    /// `<!-- illustrative -->` line stands just before it, and its lines.
    struct Block {
        lang: String,
        line: usize,
        illustrative: bool,
        lines: Vec<String>,
    }

    /// README.md and every page of docs/guide/.
    fn pages() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut guide: Vec<PathBuf> = std::fs::read_dir(root.join("docs/guide"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        guide.sort();
        guide.insert(0, root.join("README.md"));
        guide
    }

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// A page's path from the repository's root, for messages.
    fn shown(p: &Path) -> String {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        p.strip_prefix(root).unwrap_or(p).display().to_string()
    }

    fn code_blocks(text: &str) -> Vec<Block> {
        let mut blocks = Vec::new();
        let mut open: Option<Block> = None;
        let mut last = "";
        for (i, l) in text.lines().enumerate() {
            let fence = l.trim_start().starts_with("```");
            match open.take() {
                Some(b) if fence => {
                    blocks.push(b);
                    last = l;
                }
                Some(mut b) => {
                    b.lines.push(l.to_string());
                    open = Some(b);
                }
                None if fence => {
                    open = Some(Block {
                        lang: l.trim_start()[3..].trim().to_string(),
                        line: i + 1,
                        illustrative: last.trim() == "<!-- illustrative -->",
                        lines: Vec::new(),
                    })
                }
                None if !l.trim().is_empty() => last = l,
                None => {}
            }
        }
        assert!(open.is_none(), "a code block is not closed");
        blocks
    }

    /// The commands of a block with the line each starts on: every line of a ```sh block,
    /// the lines after a `$ ` prompt in a ```console block; a trailing `\` continues a
    /// command on the next line.
    fn commands(b: &Block) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        let mut pending: Option<(usize, String)> = None;
        for (i, l) in b.lines.iter().enumerate() {
            let l = match (&pending, b.lang == "console") {
                (None, true) => match l.strip_prefix("$ ") {
                    Some(c) => c,
                    None => continue,
                },
                _ => l.as_str(),
            };
            let (start, mut text) = pending.take().unwrap_or((b.line + 1 + i, String::new()));
            match l.strip_suffix('\\') {
                Some(head) => pending = Some((start, text + head + " ")),
                None => {
                    text.push_str(l);
                    out.push((start, text));
                }
            }
        }
        out
    }

    /// A command line in shell words, split into simple commands at `|`, `&` and `;`, with
    /// comments and redirections (`> FILE`, `2> FILE`, `< FILE`) left out. Quotes and
    /// backslashes are read as the shell reads them; nothing is expanded (the parser takes
    /// `$TMPDIR` or `~` as it takes any other path).
    fn simple_commands(line: &str) -> Vec<Vec<String>> {
        let mut cmds = vec![Vec::new()];
        let (mut word, mut target) = (None::<String>, false);
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\'' => {
                    let w = word.get_or_insert_with(String::new);
                    w.extend(chars.by_ref().take_while(|&q| q != '\''));
                }
                '"' => {
                    let w = word.get_or_insert_with(String::new);
                    while let Some(q) = chars.next() {
                        match q {
                            '"' => break,
                            '\\' => w.extend(chars.next()),
                            q => w.push(q),
                        }
                    }
                }
                '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
                '#' if word.is_none() => break,
                c if c.is_whitespace() || "|&;<>".contains(c) => {
                    let redirect = c == '<' || c == '>';
                    if let Some(w) = word.take() {
                        let fd = redirect && w.chars().all(|d| d.is_ascii_digit());
                        if !std::mem::take(&mut target) && !fd {
                            cmds.last_mut().unwrap().push(w);
                        }
                    }
                    target |= redirect;
                    if "|&;".contains(c) && !cmds.last().unwrap().is_empty() {
                        cmds.push(Vec::new());
                    }
                }
                c => word.get_or_insert_with(String::new).push(c),
            }
        }
        if let Some(w) = word.filter(|_| !target) {
            cmds.last_mut().unwrap().push(w);
        }
        cmds.retain(|c| !c.is_empty());
        cmds
    }

    /// Programs that run the command after their own options.
    const LAUNCHERS: [&str; 9] = [
        "mpirun", "mpiexec", "srun", "sudo", "env", "time", "nice", "ionice", "timeout",
    ];

    /// The arguments fsbench gets from a simple command: `fsbench ...` itself, after
    /// `VAR=value` settings or under a launcher (`mpirun -np 8 fsbench ...`), or
    /// `cargo run [...] -- ...`; `None` for other programs.
    fn fsbench_args(words: &[String]) -> Option<Vec<String>> {
        let assignment = |w: &String| {
            w.split_once('=').is_some_and(|(n, _)| {
                !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        };
        let words: Vec<&String> = words.iter().skip_while(|w| assignment(w)).collect();
        let is_fsbench = |w: &&String| *w == "fsbench" || w.ends_with("/fsbench");
        let first = words.first()?;
        let from = if is_fsbench(first) {
            0
        } else if LAUNCHERS.contains(&first.as_str()) {
            words.iter().position(is_fsbench)?
        } else if *first == "cargo" && words.get(1).is_some_and(|w| *w == "run") {
            let rest = words
                .iter()
                .position(|w| *w == "--")
                .map_or(words.len(), |p| p + 1);
            let args = words[rest..].iter().map(|w| w.to_string());
            return Some(std::iter::once("fsbench".to_string()).chain(args).collect());
        } else {
            return None;
        };
        Some(words[from..].iter().map(|w| w.to_string()).collect())
    }

    /// `Ok` when the parser accepts the arguments (or shows the help they ask for); the
    /// parser's message otherwise.
    fn parse(args: &[String]) -> Result<(), String> {
        use clap::error::ErrorKind;
        match Cli::try_parse_from(args) {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
                Ok(())
            }
            Err(e) => Err(e.to_string().lines().next().unwrap_or_default().to_string()),
        }
    }

    /// The targets of the Markdown links outside code blocks, with their lines.
    fn links(text: &str) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        let mut fenced = false;
        for (i, l) in text.lines().enumerate() {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            let mut rest = l;
            while let (false, Some(p)) = (fenced, rest.find("](")) {
                rest = &rest[p + 2..];
                let end = rest.find(')').unwrap_or(rest.len());
                out.push((i + 1, rest[..end].to_string()));
            }
        }
        out
    }

    /// The anchors GitHub gives a page's headings: lower case, spaces as `-`, punctuation
    /// other than `-` and `_` dropped.
    fn anchors(text: &str) -> Vec<String> {
        let mut fenced = false;
        let mut out = Vec::new();
        for l in text.lines() {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
            } else if let (false, Some(h)) = (fenced, l.strip_prefix('#')) {
                let h = h.trim_start_matches('#').trim().to_lowercase();
                let slug = h.chars().filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                });
                out.push(slug.collect());
            }
        }
        out
    }
}
