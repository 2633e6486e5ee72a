//! `fsbench trace distill` and `compare`.

use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct DistillArgs {
    /// The trace file.
    pub trace: PathBuf,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The reference trace.
    pub reference: PathBuf,
    /// The trace to compare with it.
    pub other: PathBuf,
}

pub fn main(_a: &DistillArgs) -> Result<()> {
    bail!("trace distill: under construction")
}

pub fn compare_main(_a: &CompareArgs) -> Result<()> {
    bail!("trace compare: under construction")
}
