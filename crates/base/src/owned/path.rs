//! fsbench's own files and directories named by path: temporary files, state and pid files
//! in its state directories, scratch directories it made with `mkdtemp`. They are fsbench's
//! by construction (it made them a moment ago, in a directory of its own); removal here
//! still never follows a link (`unlink` and `rmdir` remove a link itself), never crosses a
//! mount, and removes a directory tree only from the directory's own descriptor, after
//! checking it belongs to the running user and is closed to others.

use crate::beneath;
use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cpath(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))
}

/// The parent directory of `p`, opened, and `p`'s last component.
fn parent_and_name(p: &Path) -> io::Result<(std::fs::File, CString)> {
    let name = p
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let parent = p.parent().filter(|q| !q.as_os_str().is_empty());
    let dir = std::fs::File::open(parent.unwrap_or(Path::new(".")))?;
    Ok((dir, beneath::component(name)?))
}

/// Remove the file (not a directory) fsbench made at `p`: whether it was there (a missing
/// file is not an error).
pub fn remove_file(p: impl AsRef<Path>) -> io::Result<bool> {
    // SAFETY: a NUL-terminated path; unlink removes the final link itself.
    let r = unsafe { libc::unlink(cpath(p.as_ref())?.as_ptr()) };
    if r == 0 {
        return Ok(true);
    }
    match io::Error::last_os_error() {
        e if e.kind() == io::ErrorKind::NotFound => Ok(false),
        e => Err(e),
    }
}

/// Remove the empty directory fsbench made at `p` (a state directory's mount point, a cgroup
/// it created).
pub fn remove_empty_dir(p: impl AsRef<Path>) -> io::Result<()> {
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::rmdir(cpath(p.as_ref())?.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Move the file fsbench wrote at `from` (a temporary name beside it) to `to`.
pub fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    let (f, t) = (cpath(from.as_ref())?, cpath(to.as_ref())?);
    // SAFETY: NUL-terminated paths.
    if unsafe { libc::rename(f.as_ptr(), t.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Remove the directory tree fsbench made at `p` (a scratch or state directory): reached
/// without following a link, only when it is the running user's and closed to others, and
/// never across a mount inside it (see [`super::remove::tree`]). A missing tree is not an
/// error.
pub fn remove_tree(p: impl AsRef<Path>) -> io::Result<()> {
    let p = p.as_ref();
    let (parent, name) = match parent_and_name(p) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        r => r?,
    };
    let st = match beneath::lstat_at(parent.as_raw_fd(), &name) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        r => r?,
    };
    if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
        if let Some(why) = super::trust::untrusted_dir(&st) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("not removing {}: {why}", p.display()),
            ));
        }
    }
    super::remove::tree(parent.as_raw_fd(), &name)
}

/// Write `data` as the file at `p` so that readers see the old or the new contents, never
/// half: a new file beside it (`O_EXCL`, never through a link), then renamed over it.
pub fn write_atomic(p: &Path, data: &[u8]) -> io::Result<()> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (dir, name) = parent_and_name(p)?;
    let tmp = CString::new(format!(
        ".{}.tmp{}.{n}",
        name.to_string_lossy(),
        std::process::id()
    ))
    .expect("no NUL");
    let fd = super::open_write(dir.as_raw_fd(), &tmp, super::Open::New, libc::O_WRONLY)?;
    let written = std::fs::File::from(fd).write_all(data);
    let renamed =
        written.and_then(|_| super::rename(dir.as_raw_fd(), &tmp, dir.as_raw_fd(), &name, 0));
    if renamed.is_err() {
        let _ = super::unlink(dir.as_raw_fd(), &tmp);
    }
    renamed
}
