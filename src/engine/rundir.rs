//! Run directories: fsbench lays every fileset out inside a directory it created and marked,
//! and deletes only inside such directories.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Name of the marker file in every run directory.
pub const MARKER: &str = ".fsbench-run";
const MARKER_HEADER: &str = "fsbench run directory";

#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("the target directory {0} does not exist")]
    NoParent(PathBuf),
    #[error("{0} exists and was not created by fsbench; refusing to use it (choose another --dir or remove it yourself)")]
    Foreign(PathBuf),
    #[error("cannot create the run directory {path}: {source}")]
    Create { path: PathBuf, source: io::Error },
    #[error("cannot remove {path}: {source}")]
    Remove { path: PathBuf, source: io::Error },
}

/// A run directory created (or, for reuse, adopted) by fsbench.
#[derive(Debug)]
pub struct RunDir {
    pub path: PathBuf,
    /// True when this run created the directory.
    pub fresh: bool,
}

/// Whether `dir` carries fsbench's marker.
pub fn is_marked(dir: &Path) -> bool {
    fs::read_to_string(dir.join(MARKER)).is_ok_and(|s| s.starts_with(MARKER_HEADER))
}

impl RunDir {
    /// Create `<parent>/fsbench-<workload>-<unique>/` with a marker. With `stable`, the name is
    /// `<parent>/fsbench-<workload>/` and an existing directory is adopted if (and only if) it
    /// carries the marker: that is how filesets with `reuse` survive between runs.
    pub fn create(parent: &Path, workload: &str, stable: bool) -> Result<RunDir, RunDirError> {
        if !parent.is_dir() {
            return Err(RunDirError::NoParent(parent.to_path_buf()));
        }
        let safe: String = workload
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if stable {
            let path = parent.join(format!("fsbench-{safe}"));
            if path.exists() {
                if is_marked(&path) {
                    return Ok(RunDir { path, fresh: false });
                }
                return Err(RunDirError::Foreign(path));
            }
            return Self::make(path);
        }
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros())
            .unwrap_or(0);
        for n in 0..1000u32 {
            let path = parent.join(format!(
                "fsbench-{safe}-{}-{stamp:x}{n}",
                std::process::id()
            ));
            if !path.exists() {
                return Self::make(path);
            }
        }
        Err(RunDirError::Create {
            path: parent.to_path_buf(),
            source: io::Error::new(io::ErrorKind::AlreadyExists, "no free name"),
        })
    }

    fn make(path: PathBuf) -> Result<RunDir, RunDirError> {
        let err = |source| RunDirError::Create {
            path: path.clone(),
            source,
        };
        fs::create_dir(&path).map_err(err)?;
        let mut f = fs::File::create(path.join(MARKER)).map_err(err)?;
        writeln!(
            f,
            "{MARKER_HEADER}\npid {}\nversion {}\nThis directory and everything in it was created by fsbench and may be deleted by it.",
            std::process::id(),
            env!("CARGO_PKG_VERSION")
        )
        .map_err(err)?;
        Ok(RunDir { path, fresh: true })
    }

    /// Delete the run directory and everything in it, after checking the marker again.
    pub fn remove(&self) -> Result<(), RunDirError> {
        if !is_marked(&self.path) {
            return Err(RunDirError::Foreign(self.path.clone()));
        }
        fs::remove_dir_all(&self.path).map_err(|source| RunDirError::Remove {
            path: self.path.clone(),
            source,
        })
    }

    /// Empty a marked run directory but keep it (and its marker).
    pub fn clear_except(&self, keep: &[&str]) -> Result<(), RunDirError> {
        if !is_marked(&self.path) {
            return Err(RunDirError::Foreign(self.path.clone()));
        }
        let rm = |p: PathBuf| -> io::Result<()> {
            if p.is_dir() && !p.is_symlink() {
                fs::remove_dir_all(&p)
            } else {
                fs::remove_file(&p)
            }
        };
        for e in fs::read_dir(&self.path).map_err(|source| RunDirError::Remove {
            path: self.path.clone(),
            source,
        })? {
            let Ok(e) = e else { continue };
            let name = e.file_name();
            if name == MARKER || keep.iter().any(|k| name == *k) {
                continue;
            }
            rm(e.path()).map_err(|source| RunDirError::Remove {
                path: e.path(),
                source,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_mark_remove() {
        let base = std::env::temp_dir().join(format!("fsbench-rundir-test-{}", std::process::id()));
        fs::create_dir_all(&base).unwrap();
        let r = RunDir::create(&base, "w/x", false).unwrap();
        assert!(r.fresh && is_marked(&r.path));
        fs::write(r.path.join("data"), b"x").unwrap();
        r.remove().unwrap();
        assert!(!r.path.exists());

        // A stable directory is adopted only when marked.
        let s = RunDir::create(&base, "w", true).unwrap();
        let again = RunDir::create(&base, "w", true).unwrap();
        assert!(!again.fresh);
        fs::remove_file(s.path.join(MARKER)).unwrap();
        assert!(matches!(
            RunDir::create(&base, "w", true),
            Err(RunDirError::Foreign(_))
        ));
        // And an unmarked directory is never removed.
        assert!(again.remove().is_err());
        assert!(s.path.exists());
        fs::remove_dir_all(&base).unwrap();
    }
}
