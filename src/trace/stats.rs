//! `fsbench trace stats`.

use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// The trace file.
    pub trace: PathBuf,
}

pub fn main(_a: &StatsArgs) -> Result<()> {
    bail!("trace stats: under construction")
}
