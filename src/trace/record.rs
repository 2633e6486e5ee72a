//! `fsbench trace record` and `import`.

use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Where to write the trace.
    #[arg(short, long)]
    pub output: PathBuf,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The strace log.
    pub log: PathBuf,
    /// Where to write the trace.
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn record(_a: &RecordArgs) -> Result<()> {
    bail!("trace record: under construction")
}

pub fn import(_a: &ImportArgs) -> Result<()> {
    bail!("trace import: under construction")
}
