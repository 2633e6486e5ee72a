//! File operations confined beneath a directory fsbench holds open.
//!
//! Why this exists: fsbench often runs as root, on shared machines, and keeps `reuse`
//! directories between runs. A path string is resolved again by the kernel at every call, so
//! a component inside a run directory that someone swapped for a symbolic link would redirect
//! fsbench's writes, truncations and deletions to wherever the link points. Here every
//! operation starts from an open directory file descriptor and names one component relative
//! to it, refusing links (`O_NOFOLLOW`, `AT_SYMLINK_NOFOLLOW`); a path of several components
//! is resolved with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, or, on kernels without
//! `openat2`, one component at a time with `O_NOFOLLOW`. A descriptor keeps naming the
//! directory it was opened on even if that directory is renamed or replaced later.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A single path component as a C string; refuses separators, `.`, `..` and NULs.
pub fn component(name: &OsStr) -> io::Result<CString> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not a single file name", name.to_string_lossy()),
        ));
    }
    CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a file name"))
}

/// The resolution every walk beneath a tree fsbench works in uses: no symbolic link, no
/// magic link, never above the starting directory, and never into another mount.
const SAME_MOUNT: u64 = libc::RESOLVE_BENEATH
    | libc::RESOLVE_NO_SYMLINKS
    | libc::RESOLVE_NO_MAGICLINKS
    | libc::RESOLVE_NO_XDEV;

/// Open directory `name` in `dir` for reading, never through a link (`ELOOP` if it is one,
/// `ENOTDIR` if it is not a directory) and never into another mount (`EXDEV` if a file
/// system, or a bind mount of the same one, is mounted there: see [`is_mount_error`]).
pub fn open_dir(dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    match try_openat2(dir, name, flags, SAME_MOUNT) {
        Some(r) => r,
        None => {
            let sub = open_dir_any_mount(dir, name)?;
            same_mount(dir, sub)
        }
    }
}

/// Open directory `name` in `dir` without following a link, into whatever is mounted there:
/// for walks that were asked to cross mounts, and nothing that writes.
pub fn open_dir_any_mount(dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: name is NUL-terminated; the returned descriptor is owned by the OwnedFd.
    let fd = cvt(unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `sub`, when it is on the mount `dir` is on; `EXDEV` otherwise (the check of kernels
/// without `openat2`).
fn same_mount(dir: RawFd, sub: OwnedFd) -> io::Result<OwnedFd> {
    if mount_of(sub.as_raw_fd())? != mount_of(dir)? {
        return Err(io::Error::from_raw_os_error(libc::EXDEV));
    }
    Ok(sub)
}

/// Whether an error from this module's opens means a mount was in the way.
pub fn is_mount_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EXDEV)
}

/// Open the directory at relative path `rel` (components separated by `/`) beneath `dir`,
/// following no link and crossing no mount on the way.
pub fn open_dir_path(dir: RawFd, rel: &[u8]) -> io::Result<OwnedFd> {
    if rel.is_empty() {
        return open_dir_any_mount(dir, c".");
    }
    let c = CString::new(rel)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    match try_openat2(dir, &c, flags, SAME_MOUNT) {
        Some(r) => r,
        // No openat2 (old kernel, or a sandbox refusing it): walk one component at a time.
        None => walk(dir, rel),
    }
}

/// `openat2(dir, path, flags, mode, resolve)`; `ENOSYS` where the kernel has no `openat2`.
pub fn openat2(
    dir: RawFd,
    path: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
    resolve: u64,
) -> io::Result<OwnedFd> {
    // The kernel's `struct open_how` (libc's is non-exhaustive).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        // The kernel refuses a mode without O_CREAT or O_TMPFILE.
        // (O_TMPFILE holds O_DIRECTORY's bit: all its bits must be there.)
        mode: if flags & libc::O_CREAT != 0 || flags & libc::O_TMPFILE == libc::O_TMPFILE {
            (mode & 0o7777) as u64
        } else {
            0
        },
        resolve,
    };
    // SAFETY: path is NUL-terminated; how is a valid open_how of the size passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor from the kernel.
    Ok(unsafe { OwnedFd::from_raw_fd(r as RawFd) })
}

fn walk(dir: RawFd, rel: &[u8]) -> io::Result<OwnedFd> {
    let mut cur: Option<OwnedFd> = None;
    for part in rel.split(|b| *b == b'/').filter(|p| !p.is_empty()) {
        let name = component(OsStr::from_bytes(part))?;
        let base = cur.as_ref().map_or(dir, |f| f.as_raw_fd());
        cur = Some(open_dir(base, &name)?);
    }
    match cur {
        Some(f) => Ok(f),
        None => open_dir_any_mount(dir, c"."),
    }
}

/// `fstatat` without following a final link.
pub fn lstat_at(dir: RawFd, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: name is NUL-terminated; st is written by the kernel.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        cvt(libc::fstatat(
            dir,
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT,
        ))?;
        Ok(st)
    }
}

/// `statx(dir, name)` without following a final link or triggering an automount: the basic
/// fields and the birth time (present in `stx_mask` only where the file system keeps one).
pub fn statx_at(dir: RawFd, name: &CStr) -> io::Result<libc::statx> {
    // SAFETY: name is NUL-terminated; st is written by the kernel.
    unsafe {
        let mut st: libc::statx = std::mem::zeroed();
        cvt(libc::statx(
            dir,
            name.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT,
            libc::STATX_BASIC_STATS | libc::STATX_BTIME,
            &mut st,
        ))?;
        Ok(st)
    }
}

/// `fstat(fd)`.
pub fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: st is written by the kernel.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        cvt(libc::fstat(fd, &mut st))?;
        Ok(st)
    }
}

/// Open file `name` in `dir` for reading (`flags` adds `O_NONBLOCK`, `O_DIRECT`, `O_PATH` and
/// the like), never through a link and never into another mount. Opening for writing or
/// creating goes through [`crate::owned`], which checks what it writes to: asked for it here,
/// this fails with `EINVAL`.
pub fn open_file(dir: RawFd, name: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    if flags & (libc::O_ACCMODE | libc::O_CREAT | libc::O_TRUNC | libc::O_APPEND) != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "beneath::open_file opens for reading only; writes go through crate::owned",
        ));
    }
    open_at_same_mount(dir, name, flags, 0)
}

/// `openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)` that never crosses into another
/// mount (`openat2` with [`SAME_MOUNT`]; where the kernel has none, the mount is compared
/// after the open, which is then made without `O_TRUNC` and truncated only once checked).
/// Only this module and [`crate::owned`] call it.
pub(crate) fn open_at_same_mount(
    dir: RawFd,
    name: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let flags = flags | libc::O_NOFOLLOW;
    match openat2(dir, name, flags, mode, SAME_MOUNT) {
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::E2BIG)
            ) => {}
        r => return r,
    }
    // SAFETY: name is NUL-terminated; mode is used only with O_CREAT.
    let fd = cvt(unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            (flags & !libc::O_TRUNC) | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: a fresh descriptor from the kernel.
    let f = same_mount(dir, unsafe { OwnedFd::from_raw_fd(fd) })?;
    if flags & libc::O_TRUNC != 0 {
        // SAFETY: ftruncate on a descriptor we own.
        cvt(unsafe { libc::ftruncate(f.as_raw_fd(), 0) })?;
    }
    Ok(f)
}

/// [`openat2`] without a mode; `None` when the kernel (or a sandbox) has no openat2, for the
/// callers that have a fallback.
fn try_openat2(
    dir: RawFd,
    path: &CStr,
    flags: libc::c_int,
    resolve: u64,
) -> Option<io::Result<OwnedFd>> {
    match openat2(dir, path, flags, 0, resolve) {
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::E2BIG)
            ) =>
        {
            None
        }
        r => Some(r),
    }
}

/// The mount a descriptor is on: its device and, where the kernel tells (`statx`
/// `STATX_MNT_ID`, Linux 5.8), its mount id. Two bind mounts of one file system share the
/// device; only the mount id tells them apart.
pub fn mount_of(fd: RawFd) -> io::Result<(u64, Option<u64>)> {
    // SAFETY: an empty path with AT_EMPTY_PATH names fd itself; stx is written by the kernel.
    unsafe {
        let mut stx: libc::statx = std::mem::zeroed();
        let r = libc::statx(
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_BASIC_STATS | libc::STATX_MNT_ID,
            &mut stx,
        );
        if r == 0 {
            let dev = libc::makedev(stx.stx_dev_major, stx.stx_dev_minor);
            let mnt = (stx.stx_mask & libc::STATX_MNT_ID != 0).then_some(stx.stx_mnt_id);
            return Ok((dev, mnt));
        }
    }
    fstat(fd).map(|st| (st.st_dev, None))
}

/// The mount id of the entry `name` in `dir` (not following a final link), where the kernel
/// tells it (`statx` `STATX_MNT_ID`, Linux 5.8): an entry on another mount than its directory
/// is a mount point (of a directory or of a file).
pub fn mount_id_at(dir: RawFd, name: &CStr) -> io::Result<Option<u64>> {
    // SAFETY: name is NUL-terminated; stx is written by the kernel.
    unsafe {
        let mut stx: libc::statx = std::mem::zeroed();
        let r = libc::statx(
            dir,
            name.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW | libc::AT_NO_AUTOMOUNT,
            libc::STATX_MNT_ID,
            &mut stx,
        );
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((stx.stx_mask & libc::STATX_MNT_ID != 0).then_some(stx.stx_mnt_id))
    }
}

/// The names in an open directory (without `.` and `..`).
pub fn list_names(dir: RawFd) -> io::Result<Vec<CString>> {
    // fdopendir takes ownership of its descriptor: give it a duplicate.
    // SAFETY: dir is a valid descriptor; the duplicate belongs to the DIR stream.
    let dup = cvt(unsafe { libc::fcntl(dir, libc::F_DUPFD_CLOEXEC, 0) })?;
    // SAFETY: dup is a directory descriptor we own.
    let d = unsafe { libc::fdopendir(dup) };
    if d.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: fdopendir failed, so dup is still ours.
        unsafe { libc::close(dup) };
        return Err(e);
    }
    // SAFETY: rewind in case the descriptor was read before (the offset is shared).
    unsafe { libc::rewinddir(d) };
    let mut out = Vec::new();
    loop {
        // SAFETY: d is a valid stream; errno is cleared to tell the end from an error.
        let ent = unsafe {
            *libc::__errno_location() = 0;
            libc::readdir64(d)
        };
        if ent.is_null() {
            let err = io::Error::last_os_error();
            // SAFETY: closing the stream we opened (also closes dup).
            unsafe { libc::closedir(d) };
            if err.raw_os_error().unwrap_or(0) != 0 {
                return Err(err);
            }
            return Ok(out);
        }
        // SAFETY: d_name is NUL-terminated within the entry.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
        let b = name.to_bytes();
        if b != b"." && b != b".." {
            out.push(name.to_owned());
        }
    }
}

/// The calling process's effective user id.
pub fn euid() -> u32 {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("fsbench-beneath-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    fn dirfd(p: &std::path::Path) -> OwnedFd {
        std::fs::File::open(p).unwrap().into()
    }

    #[test]
    fn reading_opens_refuse_links_and_writing() {
        let base = scratch("read");
        let outside = scratch("read-outside");
        std::fs::write(outside.join("victim"), b"precious").unwrap();
        std::fs::create_dir(base.join("a")).unwrap();
        symlink(&outside, base.join("a/b")).unwrap();
        symlink(outside.join("victim"), base.join("f")).unwrap();
        std::fs::write(base.join("plain"), b"x").unwrap();
        let d = dirfd(&base);
        let fd = d.as_raw_fd();
        assert!(open_dir_path(fd, b"a/b").is_err());
        assert!(walk(fd, b"a/b").is_err());
        assert!(open_dir_path(fd, b"../").is_err());
        assert!(open_dir(fd, c"f").is_err());
        assert!(open_dir_path(fd, b"a").is_ok());
        let e = open_file(fd, c"f", libc::O_RDONLY).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
        assert!(open_file(fd, c"plain", libc::O_RDONLY).is_ok());
        for w in [libc::O_WRONLY, libc::O_RDWR, libc::O_CREAT, libc::O_TRUNC] {
            let e = open_file(fd, c"plain", w).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{w}");
        }
        assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"precious");
        assert!(component(OsStr::new("..")).is_err());
        assert!(component(OsStr::new("a/b")).is_err());
        std::fs::remove_dir_all(&base).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }
}
