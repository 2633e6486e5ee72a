//! `fsbench clean [DIR]`: list the run directories fsbench left behind (reuse directories,
//! `--keep`, runs that were killed) and remove them. Only directories that carry fsbench's
//! marker and belong to the user are touched; one a running fsbench holds is skipped.

use super::rundir::{self, RunDir};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// One directory fsbench left behind.
#[derive(Debug)]
pub struct Kept {
    pub path: PathBuf,
    pub bytes: u64,
    /// The pid of the run using it now, if any.
    pub busy: Option<String>,
}

/// Bytes below `dir` (not following links, not crossing into other file systems' mounts).
pub fn size_of(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let dev = std::fs::symlink_metadata(dir).map_or(0, |m| m.dev());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.dev() != dev {
                continue;
            }
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.blocks() * 512;
            }
        }
    }
    total
}

/// The marked fsbench directories directly in `dir`.
pub fn find(dir: &Path) -> Result<Vec<Kept>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let e = e?;
        let name = e.file_name();
        let is_ours = name.to_string_lossy().starts_with("fsbench-");
        // file_type() does not follow links: a link named fsbench-* is never a candidate.
        if !is_ours || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = e.path();
        // Listed when marked, trusted or not: `clean` says why it keeps an untrusted one.
        use fsbench_base::owned::trust::{check_run_dir_path, Untrusted};
        if check_run_dir_path(&path) == Err(Untrusted::NoMarker) {
            continue;
        }
        out.push(Kept {
            bytes: size_of(&path),
            busy: rundir::holder(&path),
            path,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Why `clean` would not remove `k` (the checks of adopting it, and mounts inside it), or
/// None when it would.
fn would_keep(k: &Kept, parent: &Path, name: &str) -> Option<String> {
    if let Err(e) = RunDir::check_adoptable(parent, name) {
        return Some(e.to_string());
    }
    let at = k.path.canonicalize().unwrap_or_else(|_| k.path.clone());
    let inside: Vec<PathBuf> = fsbench_base::daemon::owned::mount_points()
        .into_iter()
        .filter(|m| m.starts_with(&at) && *m != at)
        .collect();
    if let Some(m) = inside.first() {
        return Some(format!(
            "{} is mounted inside it (unmount it first; fsbench never unmounts what it did not mount)",
            m.display()
        ));
    }
    None
}

/// What `fsbench clean` did: its report, and how many directories it meant to remove and
/// could not (the command then fails).
pub struct Cleaned {
    pub report: String,
    pub failed: usize,
}

/// List (and unless `dry_run`, remove) what fsbench left in `dir`.
pub fn clean(dir: &Path, dry_run: bool) -> Result<Cleaned> {
    let human = fsbench_base::units::human_bytes;
    let kept = find(dir)?;
    if kept.is_empty() {
        return Ok(Cleaned {
            report: format!(
                "no fsbench directories in {} (only directories carrying fsbench's marker are considered)\n",
                dir.display()
            ),
            failed: 0,
        });
    }
    // Removal holds one descriptor per level of a tree: let deep trees have them.
    crate::fileset::dirs::raise_nofile();
    let mut report = String::new();
    let mut freed = 0;
    let mut failed = 0;
    for k in &kept {
        let size = human(k.bytes as f64);
        if let Some(pid) = &k.busy {
            report.push_str(&format!(
                "in use  {} ({size}) by fsbench pid {pid}: left alone\n",
                k.path.display()
            ));
            continue;
        }
        let parent = k.path.parent().unwrap_or(Path::new("/"));
        let name = k.path.file_name().unwrap_or_default().to_string_lossy();
        let workload = name.strip_prefix("fsbench-").unwrap_or(&name);
        if dry_run {
            // The checks the removal makes, so that the list holds only what it removes.
            match would_keep(k, parent, &name) {
                None => report.push_str(&format!("would remove {} ({size})\n", k.path.display())),
                Some(why) => report.push_str(&format!(
                    "would keep {} ({workload}, {size}): {why}\n",
                    k.path.display()
                )),
            }
            continue;
        }
        // Adopting it takes the lock and checks ownership and the marker again.
        match RunDir::adopt_existing(parent, &name).and_then(|rd| rd.remove()) {
            Ok(()) => {
                freed += k.bytes;
                report.push_str(&format!("removed {} ({size})\n", k.path.display()));
            }
            Err(e) => {
                failed += 1;
                report.push_str(&format!(
                    "NOT removed {} ({workload}): {e}\n",
                    k.path.display()
                ))
            }
        }
    }
    if !dry_run {
        report.push_str(&format!("freed {}\n", human(freed as f64)));
    }
    Ok(Cleaned { report, failed })
}
