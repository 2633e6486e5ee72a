//! The Andrew benchmark.
use anyhow::Result;
pub fn main(_a: &super::cli::AndrewArgs) -> Result<()> {
    anyhow::bail!("todo")
}
