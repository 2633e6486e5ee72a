//! An existing directory: nothing set up, nothing destroyed.

use super::Ready;
use crate::experiment::plan::Target;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::Path;

pub fn set_up(t: &Target, path: &Path) -> Result<Ready> {
    let dir = path
        .canonicalize()
        .with_context(|| format!("target {}: {}", t.name, path.display()))?;
    let device = fsbench_results::stats::host::mount_of(&dir)
        .map(|(_, _, _, src)| src)
        .filter(|s| s.starts_with("/dev/"));
    Ok(Ready {
        name: t.name.clone(),
        dir,
        device,
        disk: None,
        applied: BTreeMap::new(),
        mounts: Vec::new(),
        pending: None,
    })
}
