//! When a directory is fsbench's own: the one rule for markers and the directories that hold
//! them, used by every command that adopts, continues, cleans or prunes a tree.
//!
//! A marker proves nothing by its name or contents: anyone who can write the directory can
//! write one. So a marked directory is trusted only when the directory is a real directory
//! (not a link) owned by the running user and not writable by group or others, and the
//! marker is a regular file (not a link) owned by the running user. On a shared `/tmp`,
//! another user can otherwise plant a marked directory with links inside and wait for root
//! to run fsbench on it.

use crate::beneath;
use std::io::Read;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;

/// Name of the marker file in every run directory.
pub const MARKER: &str = ".fsbench-run";
/// Name of the lock file a running fsbench holds (flock) in its run directory.
pub const LOCK: &str = ".fsbench-lock";
/// How every run directory's marker starts.
pub const MARKER_HEADER: &str = "fsbench run directory";

/// Whether `name` is one of fsbench's own names in a run directory (the marker or the lock):
/// no workload, job or pruning may write or delete them.
pub fn is_own_name(name: &[u8]) -> bool {
    name == MARKER.as_bytes() || name == LOCK.as_bytes()
}

/// Why fsbench must not trust directory `st` as one of its own: it belongs to another user,
/// or others could change what is in it. `None` when it is fine.
pub fn untrusted_dir(st: &libc::stat) -> Option<String> {
    let me = beneath::euid();
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Some(format!("it is {}", super::kind_of(st.st_mode)));
    }
    if st.st_uid != me {
        return Some(format!(
            "it is owned by uid {}, not by you (uid {me}): another user may have planted it",
            st.st_uid
        ));
    }
    if st.st_mode & 0o022 != 0 {
        return Some(format!(
            "it is writable by group or others (mode {:04o}), so others could plant links in it",
            st.st_mode & 0o7777
        ));
    }
    None
}

/// Why a directory is not trusted as fsbench's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Untrusted {
    /// It carries no marker: not fsbench's at all.
    NoMarker,
    /// It is marked, but the marker or the directory cannot be trusted: why.
    Why(String),
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Untrusted::NoMarker => write!(f, "it carries no marker of fsbench's"),
            Untrusted::Why(w) => f.write_str(w),
        }
    }
}

/// Whether the open directory `dir` is a trusted holder of the marker `marker` whose
/// contents start with `header` (see the module's rule).
pub fn check_marked(dir: RawFd, marker: &str, header: &str) -> Result<(), Untrusted> {
    let why = |s: String| Err(Untrusted::Why(s));
    let st = match beneath::fstat(dir) {
        Ok(st) => st,
        Err(e) => return why(e.to_string()),
    };
    let mst = match read_marker(dir, marker, header)? {
        Ok(mst) => mst,
        Err(w) => return why(w),
    };
    if let Some(w) = untrusted_dir(&st) {
        return why(w);
    }
    if mst.st_uid != beneath::euid() {
        return why(format!(
            "its {marker} belongs to uid {}, not to you: another user may have planted it",
            mst.st_uid
        ));
    }
    Ok(())
}

/// The marker's `stat` when `dir` carries one (a regular file starting with `header`);
/// `Err(NoMarker)` when it carries none, `Ok(Err(why))` when what is there is not a marker
/// fsbench could have written.
fn read_marker(
    dir: RawFd,
    marker: &str,
    header: &str,
) -> Result<Result<libc::stat, String>, Untrusted> {
    let Ok(name) = std::ffi::CString::new(marker) else {
        return Ok(Err("a marker name with a NUL".into()));
    };
    let m = match beneath::open_file(dir, &name, libc::O_RDONLY | libc::O_NONBLOCK) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Untrusted::NoMarker),
        Err(e) => return Ok(Err(format!("its {marker}: {}", super::explain(e)))),
    };
    let mst = match beneath::fstat(m.as_raw_fd()) {
        Ok(st) if st.st_mode & libc::S_IFMT != libc::S_IFREG => {
            return Ok(Err(format!(
                "its {marker} is {}",
                super::kind_of(st.st_mode)
            )))
        }
        Ok(st) => st,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let mut head = vec![0u8; header.len()];
    let n = std::fs::File::from(m).read(&mut head).unwrap_or(0);
    if head[..n] != *header.as_bytes() {
        return Err(Untrusted::NoMarker);
    }
    Ok(Ok(mst))
}

/// Whether the open directory `dir` is a trusted, marked run directory.
pub fn check_run_dir(dir: RawFd) -> Result<(), Untrusted> {
    check_marked(dir, MARKER, MARKER_HEADER)
}

/// Whether `dir` (named by path; a final symbolic link is not followed) is a trusted, marked
/// run directory.
pub fn is_run_dir(dir: &Path) -> bool {
    check_run_dir_path(dir).is_ok()
}

/// [`check_run_dir`] of `dir` named by path (a final symbolic link is not followed): for
/// `clean`, which lists marked directories it keeps with the reason.
pub fn check_run_dir_path(dir: &Path) -> Result<(), Untrusted> {
    let no = |e: std::io::Error| Untrusted::Why(super::explain(e).to_string());
    let name = dir
        .file_name()
        .ok_or(Untrusted::NoMarker)
        .and_then(|n| beneath::component(n).map_err(no))?;
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    let parent = std::fs::File::open(parent.unwrap_or(Path::new("."))).map_err(no)?;
    // The run directory may itself be a mount point (a test file system mounted there).
    let d = beneath::open_dir_any_mount(parent.as_raw_fd(), &name).map_err(no)?;
    check_run_dir(d.as_raw_fd())
}
