//! The owned-tree layer: every file fsbench creates, writes, truncates, renames or deletes
//! inside a tree it works in (run directories, reuse filesets, aged directories, prune
//! targets, trace-replay roots, the simulated remote's export, teardown trees, selftest
//! scratch) goes through this module, and no other module in `src/` calls `unlinkat`,
//! `remove_file`, `remove_dir_all` or opens with `O_TRUNC` (`tests/it/architecture.rs` checks).
//!
//! Why one layer: a tree fsbench works in can hold things it did not make — a file system or
//! a bind mount mounted inside it, a hard link to a file elsewhere, a symbolic link, a marker
//! another user planted. Checked per command, each new command was a new hole. Here:
//! - every directory and file is reached from an open directory, one component at a time or
//!   with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
//!   RESOLVE_NO_XDEV)` ([`crate::beneath`]): no link is followed and no mount is entered, a
//!   bind mount of the same file system included (the kernel compares mounts, not devices);
//! - an existing regular file is written or truncated only when it is the only link to its
//!   data and belongs to the running user ([`sole_own_link`]); otherwise it is replaced by a
//!   new inode ([`Open::Replace`]) or refused ([`NotOurs`]);
//! - a directory is trusted as fsbench's only when it and its marker pass [`trust`];
//! - removal of a tree stops at mounts and never follows a link ([`remove`]);
//! - what an existing tree holds is read with a verdict per entry ([`audit`]).

pub mod audit;
pub mod path;
pub mod remove;
pub mod trust;

use crate::beneath;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

fn cvt(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Why an existing entry is not fsbench's to write into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotOurs {
    /// A regular file with other hard links: writing would change data outside the tree.
    SharedData { links: u64 },
    /// A file that belongs to another user.
    Owner { uid: u32 },
    /// Something other than a regular file where fsbench expects one.
    Kind(&'static str),
}

impl std::fmt::Display for NotOurs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotOurs::SharedData { links } => write!(
                f,
                "it has {links} hard links: its data is also reachable from outside; fsbench never writes through a link"
            ),
            NotOurs::Owner { uid } => write!(
                f,
                "it belongs to uid {uid}, not to you (uid {}); fsbench writes only its own files",
                beneath::euid()
            ),
            NotOurs::Kind(k) => write!(f, "it is {k}, not a file fsbench made"),
        }
    }
}

impl std::error::Error for NotOurs {}

impl From<NotOurs> for io::Error {
    fn from(n: NotOurs) -> io::Error {
        io::Error::new(io::ErrorKind::PermissionDenied, n)
    }
}

/// What an existing file is, for [`NotOurs::Kind`].
pub fn kind_of(mode: u32) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "a regular file",
        libc::S_IFDIR => "a directory",
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFSOCK => "a socket",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        _ => "an unknown kind of file",
    }
}

/// Whether an existing regular file may be written in place: it is the only link to its
/// data and it is the running user's own.
pub fn sole_own_link(st: &libc::stat) -> bool {
    check_own(st).is_ok()
}

/// [`sole_own_link`] with the reason when not.
pub fn check_own(st: &libc::stat) -> Result<(), NotOurs> {
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(NotOurs::Kind(kind_of(st.st_mode)));
    }
    if st.st_nlink > 1 {
        return Err(NotOurs::SharedData { links: st.st_nlink });
    }
    if st.st_uid != beneath::euid() {
        return Err(NotOurs::Owner { uid: st.st_uid });
    }
    Ok(())
}

/// How [`open_write`] treats what is already at the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// A new file; an existing entry is an error (`EEXIST`).
    New,
    /// An existing file of fsbench's own ([`check_own`]); nothing is created.
    Own,
    /// An existing file of fsbench's own, or a new one.
    OwnOrNew,
    /// An existing file of fsbench's own, opened in place; anything else at the name (see
    /// [`Open::Replace`]) replaced by a new file.
    OwnOrReplace,
    /// A new, empty file: whatever non-directory is at the name (a link, a file shared with
    /// another tree, another user's file) is unlinked first. The name is fsbench's; the data
    /// of a replaced file stays wherever else it is linked.
    Replace,
}

/// Open `name` in `dir` for writing (`flags`: the access mode and `O_APPEND`, `O_DSYNC`,
/// `O_DIRECT` ...; `O_CREAT`, `O_EXCL` and `O_TRUNC` are this function's to choose), as
/// `how` says, never through a link and never into another mount. A file created here has
/// mode 0644.
pub fn open_write(dir: RawFd, name: &CStr, how: Open, flags: libc::c_int) -> io::Result<OwnedFd> {
    open_write_mode(dir, name, how, flags, 0o644)
}

/// [`open_write`] with the mode of a file it creates (before the umask).
pub fn open_write_mode(
    dir: RawFd,
    name: &CStr,
    how: Open,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let flags = flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_TRUNC);
    let new = || beneath::open_at_same_mount(dir, name, flags | libc::O_CREAT | libc::O_EXCL, mode);
    let again = |how| open_write_mode(dir, name, how, flags, mode);
    match how {
        Open::New => new(),
        Open::Own => open_own(dir, name, flags),
        Open::OwnOrNew => match new() {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => open_own(dir, name, flags),
            r => r,
        },
        Open::OwnOrReplace => match again(Open::OwnOrNew) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => again(Open::Replace),
            r => r,
        },
        Open::Replace => match new() {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let st = beneath::lstat_at(dir, name)?;
                if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                    return Err(io::Error::from_raw_os_error(libc::EISDIR));
                }
                unlink(dir, name)?;
                new()
            }
            r => r,
        },
    }
}

/// An existing file, checked to be fsbench's own before anything is written.
fn open_own(dir: RawFd, name: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let fd = beneath::open_at_same_mount(dir, name, flags, 0)?;
    check_own(&beneath::fstat(fd.as_raw_fd())?)?;
    Ok(fd)
}

/// How a client's or a trace's `open` flags map onto [`Open`]: `O_CREAT | O_EXCL` a new
/// file, `O_CREAT` an existing one of fsbench's own or a new one, otherwise an existing one
/// of its own. `O_TRUNC` is the caller's to apply ([`set_len`]) once the file is checked.
pub fn how_for_flags(flags: libc::c_int) -> Open {
    if flags & libc::O_CREAT == 0 {
        Open::Own
    } else if flags & libc::O_EXCL != 0 {
        Open::New
    } else {
        Open::OwnOrNew
    }
}

/// Whether open `flags` ask to write (or create, or truncate).
pub fn writes(flags: libc::c_int) -> bool {
    flags & libc::O_ACCMODE != libc::O_RDONLY
        || flags & (libc::O_CREAT | libc::O_TRUNC | libc::O_APPEND) != 0
}

/// [`open_write`], then empty the file (what `O_TRUNC` does, once the file is checked).
pub fn open_truncated(
    dir: RawFd,
    name: &CStr,
    how: Open,
    flags: libc::c_int,
) -> io::Result<OwnedFd> {
    let fd = open_write(dir, name, how, flags)?;
    set_len(&fd, 0)?;
    Ok(fd)
}

/// Write `data` as the whole of `name` in `dir` (a state file of fsbench's own in a tree it
/// owns): a file of fsbench's own is rewritten in place, anything else at the name replaced.
pub fn put(dir: RawFd, name: &CStr, data: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let fd = open_truncated(dir, name, Open::OwnOrReplace, libc::O_WRONLY)?;
    std::fs::File::from(fd).write_all(data)
}

/// Set the length of a file opened by [`open_write`].
pub fn set_len(fd: &OwnedFd, len: u64) -> io::Result<()> {
    // SAFETY: ftruncate on a descriptor the caller owns.
    cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) })
}

/// `mkdirat(dir, name, mode)`.
pub fn mkdir(dir: RawFd, name: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: name is NUL-terminated.
    cvt(unsafe { libc::mkdirat(dir, name.as_ptr(), mode) })
}

/// Remove the non-directory `name` in `dir`: the link itself, never what it points to. A
/// mount point cannot be unlinked (`EBUSY`).
pub fn unlink(dir: RawFd, name: &CStr) -> io::Result<()> {
    // SAFETY: name is NUL-terminated.
    cvt(unsafe { libc::unlinkat(dir, name.as_ptr(), 0) })
}

/// Remove the empty directory `name` in `dir`.
pub fn rmdir(dir: RawFd, name: &CStr) -> io::Result<()> {
    // SAFETY: name is NUL-terminated.
    cvt(unsafe { libc::unlinkat(dir, name.as_ptr(), libc::AT_REMOVEDIR) })
}

/// `unlink(path)` of a whole path, for the application benchmarks (PostMark, the build,
/// the HPC metadata phases) whose measured operation is the path lookup as well: their paths
/// lie inside a run directory fsbench created, marked and holds, which others cannot write.
#[inline]
pub fn unlink_path(path: &CStr) -> io::Result<()> {
    // SAFETY: path is NUL-terminated.
    cvt(unsafe { libc::unlink(path.as_ptr()) })
}

/// `rmdir(path)`, as [`unlink_path`].
#[inline]
pub fn rmdir_path(path: &CStr) -> io::Result<()> {
    // SAFETY: path is NUL-terminated.
    cvt(unsafe { libc::rmdir(path.as_ptr()) })
}

/// `renameat2(od, on, nd, nn, flags)`: both directories are open descriptors of the tree.
pub fn rename(od: RawFd, on: &CStr, nd: RawFd, nn: &CStr, flags: libc::c_uint) -> io::Result<()> {
    // SAFETY: names are NUL-terminated; renameat2 has no other preconditions.
    let r = unsafe { libc::renameat2(od, on.as_ptr(), nd, nn.as_ptr(), flags) };
    cvt(r)
}

/// Open `rel` beneath `dir` as a traced program's replayed `open` would (any flags, `O_TRUNC`
/// included), following symbolic links as the kernel does as long as every step stays
/// beneath `dir` and on its mount: the trace's own links inside its replay root work; `..`
/// above the root, an absolute path, a link out of the root (`EXDEV`), a mount inside
/// (`EXDEV`) or a magic link (`ELOOP`) fail. Trace replay's choke point
/// (`crate::trace::confine`) calls this.
pub fn open_following(
    dir: RawFd,
    rel: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let rel = if rel.is_empty() { c"." } else { rel };
    beneath::openat2(
        dir,
        rel,
        flags,
        mode,
        libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS | libc::RESOLVE_NO_XDEV,
    )
}

/// The raw system calls trace replay issues and times itself (it reads `errno` after each):
/// here so that every call that removes, renames or truncates stays in this layer. Their
/// directories come from [`open_following`] beneath the replay root.
pub mod raw {
    /// `unlinkat(dir, name, flags)`.
    ///
    /// # Safety
    /// `name` must point to a NUL-terminated string.
    #[inline]
    pub unsafe fn unlinkat(dir: i32, name: *const libc::c_char, flags: i32) -> i32 {
        libc::unlinkat(dir, name, flags)
    }

    /// `renameat2(od, on, nd, nn, flags)`.
    ///
    /// # Safety
    /// `on` and `nn` must point to NUL-terminated strings.
    #[inline]
    pub unsafe fn renameat2(
        od: i32,
        on: *const libc::c_char,
        nd: i32,
        nn: *const libc::c_char,
        flags: u32,
    ) -> i32 {
        libc::renameat2(od, on, nd, nn, flags)
    }

    /// `ftruncate(fd, len)` on a descriptor this layer opened for writing (beneath a replay
    /// root, or a file of a run's own).
    #[inline]
    pub fn ftruncate(fd: i32, len: i64) -> i32 {
        // SAFETY: no memory is passed; a bad descriptor is EBADF.
        unsafe { libc::ftruncate(fd, len) }
    }
}

/// A one-line explanation of an error from this layer or [`crate::beneath`], for messages:
/// a mount, a link or a file that is not fsbench's said in words, other errors as they are.
pub fn explain(e: io::Error) -> io::Error {
    let why = match e.raw_os_error() {
        Some(libc::EXDEV) => {
            "another file system (or a bind mount) is mounted there; fsbench never writes or deletes across a mount (unmount it first)"
        }
        Some(libc::ELOOP) => {
            "it is a symbolic link; fsbench never follows links inside the trees it works in (remove it yourself)"
        }
        _ => return e,
    };
    io::Error::new(e.kind(), why)
}

#[cfg(test)]
mod tests;
