//! `fsbench trace ...`: one subcommand per job, each in its own module.

use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub cmd: TraceCommand,
}

#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Run a command under strace and write what it did to the file system as a trace.
    #[command(
        after_help = "Examples:\n  fsbench trace record -o cp.trace -- cp -r src dst\n  fsbench trace record -o build.trace --root /mnt/test -- make -C /mnt/test/proj"
    )]
    Record(super::capture::RecordArgs),
    /// Convert an strace log recorded elsewhere (strace -f -ttt -T -yy) into a trace.
    #[command(
        after_help = "Examples:\n  fsbench trace import app.strace -o app.trace --root /srv/app"
    )]
    Import(super::capture::ImportArgs),
    /// Print a trace as text, one call per line.
    #[command(after_help = "Examples:\n  fsbench trace show cp.trace | less")]
    Show(ShowArgs),
    /// Call counts, bytes, I/O sizes, inter-arrival times, sequentiality, threads.
    #[command(
        after_help = "Examples:\n  fsbench trace stats cp.trace\n  fsbench trace stats cp.trace --json stats.json"
    )]
    Stats(super::stats::StatsArgs),
    /// Issue a trace's calls again in a run directory, timed, as fast as possible, or as
    /// fast as its cross-thread dependencies allow.
    #[command(
        after_help = "Examples:\n  fsbench trace replay cp.trace --dir /mnt/test\n  fsbench trace replay cp.trace --dir /mnt/test --mode timed --speed 2\n  fsbench trace replay build.trace --dir /mnt/test --mode deps --json replay.json"
    )]
    Replay(super::replay::ReplayArgs),
    /// Turn a trace into a workload in the Filebench language.
    #[command(
        after_help = "Examples:\n  fsbench trace distill build.trace -o build-model.f\n  fsbench trace distill build.trace -o build-model.f --check --dir /mnt/test"
    )]
    Distill(super::distill::DistillArgs),
    /// How close one trace (e.g. of a distilled model's run) is to another: op mix, I/O
    /// sizes, file sizes, throughput.
    #[command(after_help = "Examples:\n  fsbench trace compare build.trace model-run.trace")]
    Compare(super::distill::CompareArgs),
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The trace file, or `-` for standard input.
    pub trace: PathBuf,
    /// Print the header (command, roots, initial tree) as JSON first.
    #[arg(long)]
    pub header: bool,
}

impl fsbench_base::export::check::Outputs for TraceArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        match &self.cmd {
            TraceCommand::Record(a) => a.outputs(),
            TraceCommand::Import(a) => a.outputs(),
            TraceCommand::Show(_) => Vec::new(),
            TraceCommand::Stats(a) => a.outputs(),
            TraceCommand::Replay(a) => a.outputs(),
            TraceCommand::Distill(a) => a.outputs(),
            TraceCommand::Compare(a) => a.outputs(),
        }
    }
}

pub fn main(a: &TraceArgs) -> Result<()> {
    match &a.cmd {
        TraceCommand::Record(a) => super::capture::record(a),
        TraceCommand::Import(a) => super::capture::import(a),
        TraceCommand::Show(a) => show(a),
        TraceCommand::Stats(a) => super::stats::main(a),
        TraceCommand::Replay(a) => super::replay::main(a),
        TraceCommand::Distill(a) => super::distill::main(a),
        TraceCommand::Compare(a) => super::distill::compare_main(a),
    }
}

fn show(a: &ShowArgs) -> Result<()> {
    use std::io::Write;
    let mut r = super::format::Reader::open(&a.trace)?;
    // Through the console: a lost standard output ends the command with the status that
    // says so (141 after `| head`, 1 on a full disk), never with success.
    let mut out = std::io::BufWriter::new(fsbench_base::console::Stdout);
    (|| -> Result<()> {
        if a.header {
            serde_json::to_writer_pretty(&mut out, &r.header)?;
            writeln!(out)?;
        }
        while let Some(rec) = r
            .next_record()
            .map_err(|e| anyhow::anyhow!("trace {}: {e}", a.trace.display()))?
        {
            super::format::render(&rec, &mut out)?;
        }
        out.flush()?;
        Ok(())
    })()
}
