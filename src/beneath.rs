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

/// Open directory `name` in `dir` for reading, never through a link (`ELOOP` if it is one,
/// `ENOTDIR` if it is not a directory).
pub fn open_dir(dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
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

/// Open the directory at relative path `rel` (components separated by `/`) beneath `dir`,
/// following no link on the way.
pub fn open_dir_path(dir: RawFd, rel: &[u8]) -> io::Result<OwnedFd> {
    if rel.is_empty() {
        return open_dir(dir, c".");
    }
    let c = CString::new(rel)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    let resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    match try_openat2(dir, &c, flags, resolve) {
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

/// Open `rel` beneath `dir` as the kernel would resolve it from there, following symbolic
/// links (the final one too unless `flags` has `O_NOFOLLOW`) as long as every step stays
/// beneath `dir`: a `..` above it, an absolute path, a link that points out of it (absolute
/// links always do) fail with `EXDEV`; a magic link (`/proc/PID/fd/N`) fails with `ELOOP`.
/// No fallback: without `openat2` (Linux before 5.6) this fails with `ENOSYS`.
pub fn open_beneath(
    dir: RawFd,
    rel: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let rel = if rel.is_empty() { c"." } else { rel };
    openat2(
        dir,
        rel,
        flags,
        mode,
        libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS,
    )
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
        None => open_dir(dir, c"."),
    }
}

/// `mkdirat(dir, name, mode)`.
pub fn mkdir_at(dir: RawFd, name: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: name is NUL-terminated.
    cvt(unsafe { libc::mkdirat(dir, name.as_ptr(), mode) }).map(|_| ())
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

/// `fstat(fd)`.
pub fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: st is written by the kernel.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        cvt(libc::fstat(fd, &mut st))?;
        Ok(st)
    }
}

/// Open file `name` in `dir` with `flags | O_NOFOLLOW | O_CLOEXEC` (mode 0644 when created).
pub fn open_file(dir: RawFd, name: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: name is NUL-terminated; mode is used only with O_CREAT.
    let fd = cvt(unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o644 as libc::c_uint,
        )
    })?;
    // SAFETY: a fresh descriptor from the kernel.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `unlinkat(dir, name, flags)`: removes a link itself, never what it points to.
pub fn unlink_at(dir: RawFd, name: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: name is NUL-terminated.
    cvt(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) }).map(|_| ())
}

fn is_dir(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFDIR
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

/// The error a removal reports for a mount found inside the tree it removes.
fn mount_inside() -> io::Error {
    io::Error::other(
        "another file system is mounted there; fsbench never deletes across a mount \
         (unmount it, then remove what is left, e.g. with `fsbench clean`)",
    )
}

/// Open the directory `name` in `dir` for removal: never through a link, and never into
/// another mount (`RESOLVE_NO_XDEV`, or on kernels without `openat2` a comparison of the
/// mount ids and devices of the two descriptors).
fn open_dir_same_mount(dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
    let resolve = libc::RESOLVE_BENEATH
        | libc::RESOLVE_NO_SYMLINKS
        | libc::RESOLVE_NO_MAGICLINKS
        | libc::RESOLVE_NO_XDEV;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    match try_openat2(dir, name, flags, resolve) {
        Some(Err(e)) if e.raw_os_error() == Some(libc::EXDEV) => Err(mount_inside()),
        Some(r) => r,
        None => {
            let sub = open_dir(dir, name)?;
            if mount_of(sub.as_raw_fd())? != mount_of(dir)? {
                return Err(mount_inside());
            }
            Ok(sub)
        }
    }
}

/// One removal: where it is (for messages), and what it could not remove.
struct Removal {
    /// The path below the starting directory, `/`-separated.
    rel: Vec<u8>,
    /// What could not be removed, and why (the first few).
    failed: Vec<String>,
    /// How many entries could not be removed.
    count: usize,
    /// Whether a second interrupt cut the removal short.
    cut: bool,
}

impl Removal {
    fn new() -> Removal {
        Removal {
            rel: Vec::new(),
            failed: Vec::new(),
            count: 0,
            cut: false,
        }
    }

    fn fail(&mut self, e: &io::Error) {
        self.count += 1;
        if self.failed.len() < 5 {
            let at = if self.rel.is_empty() {
                ".".into()
            } else {
                String::from_utf8_lossy(&self.rel)
            };
            self.failed.push(format!("{at}: {e}"));
        }
    }

    fn push(&mut self, name: &CStr) -> usize {
        let len = self.rel.len();
        if len > 0 {
            self.rel.push(b'/');
        }
        self.rel.extend_from_slice(name.to_bytes());
        len
    }

    /// Remove `name` in `dir` (and everything below it); failures are recorded, not
    /// returned, so that the rest is still removed. Returns whether it is gone.
    fn tree(&mut self, dir: RawFd, name: &CStr) -> bool {
        if crate::cancel::hurried() {
            self.cut = true;
            return false;
        }
        let len = self.push(name);
        let gone = match self.entry(dir, name) {
            Ok(gone) => gone,
            Err(e) => {
                self.fail(&e);
                false
            }
        };
        self.rel.truncate(len);
        gone
    }

    fn entry(&mut self, dir: RawFd, name: &CStr) -> io::Result<bool> {
        let st = match lstat_at(dir, name) {
            Ok(st) => st,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
            Err(e) => return Err(e),
        };
        if !is_dir(&st) {
            ignore_missing(unlink_at(dir, name, 0))?;
            return Ok(true);
        }
        let sub = open_dir_same_mount(dir, name)?;
        let all = self.contents(sub.as_raw_fd(), &|_| false)?;
        drop(sub);
        if !all {
            return Ok(false);
        }
        ignore_missing(unlink_at(dir, name, libc::AT_REMOVEDIR))?;
        Ok(true)
    }

    /// Remove what is in `dir` but the names `keep` accepts; whether all of it went.
    fn contents(&mut self, dir: RawFd, keep: &dyn Fn(&CStr) -> bool) -> io::Result<bool> {
        let mut all = true;
        for name in list_names(dir)? {
            if !keep(&name) {
                all &= self.tree(dir, &name);
            }
        }
        Ok(all)
    }

    fn finish(self) -> io::Result<()> {
        if self.count == 0 && self.cut {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "removal stopped by a second interrupt",
            ));
        }
        if self.count == 0 {
            return Ok(());
        }
        let more = if self.count > self.failed.len() {
            format!(" (and {} more)", self.count - self.failed.len())
        } else {
            String::new()
        };
        Err(io::Error::other(format!(
            "{} {} could not be removed: {}{more}",
            self.count,
            if self.count == 1 { "entry" } else { "entries" },
            self.failed.join("; ")
        )))
    }
}

/// Remove `name` in `dir` and, when it is a directory (not a link to one), everything in it.
/// Entries that vanish meanwhile are not errors. Never follows a link and never crosses into
/// another mount: a mount found inside is left alone with everything above it, the rest is
/// removed, and the error names what was left.
pub fn remove_tree_at(dir: RawFd, name: &CStr) -> io::Result<()> {
    let mut r = Removal::new();
    r.tree(dir, name);
    r.finish()
}

fn ignore_missing(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Remove everything in the open directory `dir` except the names `keep` accepts, with the
/// guarantees of [`remove_tree_at`].
pub fn remove_contents(dir: RawFd, keep: &dyn Fn(&CStr) -> bool) -> io::Result<()> {
    let mut r = Removal::new();
    if let Err(e) = r.contents(dir, keep) {
        r.fail(&e);
    }
    r.finish()
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

/// Why fsbench must not trust directory `st` as one of its own: it belongs to another user,
/// or others could change what is in it. `None` when it is fine.
pub fn untrusted_dir(st: &libc::stat) -> Option<String> {
    let me = euid();
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
    fn links_are_never_followed() {
        let base = scratch("links");
        let outside = scratch("links-outside");
        std::fs::write(outside.join("victim"), b"precious").unwrap();
        std::fs::create_dir(base.join("a")).unwrap();
        symlink(&outside, base.join("a/b")).unwrap();
        symlink(outside.join("victim"), base.join("f")).unwrap();
        let d = dirfd(&base);
        let fd = d.as_raw_fd();
        // Through a link to a directory: refused, in one step or in several.
        assert!(open_dir_path(fd, b"a/b").is_err());
        assert!(walk(fd, b"a/b").is_err());
        assert!(open_dir_path(fd, b"../").is_err());
        assert!(open_dir(fd, c"f").is_err());
        // Opening, truncating or creating through a final link: refused.
        let e = open_file(fd, c"f", libc::O_WRONLY | libc::O_TRUNC).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
        assert!(open_file(fd, c"f", libc::O_WRONLY | libc::O_CREAT).is_err());
        assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"precious");
        // Removing a tree removes links, not their targets.
        remove_tree_at(fd, c"a").unwrap();
        remove_tree_at(fd, c"f").unwrap();
        assert!(outside.join("victim").exists());
        assert!(list_names(fd).unwrap().is_empty());
        std::fs::remove_dir_all(&base).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn open_beneath_follows_inner_links_and_refuses_the_way_out() {
        let base = scratch("obeneath");
        let outside = scratch("obeneath-outside");
        std::fs::write(outside.join("victim"), b"precious").unwrap();
        std::fs::create_dir(base.join("d")).unwrap();
        std::fs::write(base.join("d/f"), b"in").unwrap();
        symlink("d", base.join("in")).unwrap();
        symlink("../d/f", base.join("d/up")).unwrap();
        symlink(&outside, base.join("abs")).unwrap();
        symlink("../../../../../../../..", base.join("rel")).unwrap();
        let d = dirfd(&base);
        let fd = d.as_raw_fd();
        let rd = libc::O_RDONLY;
        assert!(open_beneath(fd, c"in/f", rd, 0).is_ok());
        assert!(open_beneath(fd, c"d/up", rd, 0).is_ok());
        assert!(open_beneath(fd, c"", libc::O_PATH, 0).is_ok());
        for bad in [
            c"../x",
            c"d/../../x",
            c"/etc/passwd",
            c"abs/victim",
            c"rel/tmp",
        ] {
            let e = open_beneath(fd, bad, libc::O_WRONLY | libc::O_TRUNC, 0).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EXDEV), "{bad:?}: {e}");
        }
        assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"precious");
        std::fs::remove_dir_all(&base).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }

    #[test]
    fn paths_and_removal() {
        let base = scratch("paths");
        let d = dirfd(&base);
        let fd = d.as_raw_fd();
        mkdir_at(fd, c"x", 0o755).unwrap();
        let x = open_dir(fd, c"x").unwrap();
        mkdir_at(x.as_raw_fd(), c"y", 0o755).unwrap();
        let y = open_dir_path(fd, b"x/y").unwrap();
        assert!(walk(fd, b"x/y").is_ok());
        drop(open_file(y.as_raw_fd(), c"z", libc::O_WRONLY | libc::O_CREAT).unwrap());
        assert!(base.join("x/y/z").is_file());
        remove_contents(fd, &|n| n.to_bytes() == b"keep").unwrap();
        assert!(!base.join("x").exists());
        assert!(component(OsStr::new("..")).is_err());
        assert!(component(OsStr::new("a/b")).is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
