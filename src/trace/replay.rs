//! `fsbench trace replay`.

use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace file.
    pub trace: PathBuf,
    /// Where to make the run directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

pub fn main(_a: &ReplayArgs) -> Result<()> {
    bail!("trace replay: under construction")
}
