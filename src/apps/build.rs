//! A compile-like build.
use anyhow::Result;
pub fn main(_a: &super::cli::BuildArgs) -> Result<()> {
    anyhow::bail!("todo")
}
