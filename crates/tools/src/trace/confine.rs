//! The only way a replay reaches a file by name.
//!
//! A trace is input like any other: a recorded path can hold `..`, run through a symbolic
//! link to somewhere else (one the traced program found, or one the trace itself creates),
//! or be rewritten by hand. Replay maps each root to a directory it holds open (`r0/` ... in
//! its run directory, or an `--over` tree) and names every file as a [`Beneath`]: that
//! directory and the rest of the recorded path, as recorded. Every call that takes a path
//! resolves it here, with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` from the root's
//! descriptor ([`fsbench_base::owned::open_following`]): symbolic links are followed as the kernel
//! would follow them, but only while every step stays beneath the root. A step out of it
//! (`..` above the root, an absolute link, a link pointing out) is [`CallError::Refused`]:
//! the call is counted and not issued. Calls that change a directory entry (unlink, rmdir,
//! mkdir, rename, link, symlink) act on the final name in its parent, resolved beneath the
//! root, so a final link is never followed; calls that follow a final link (stat, chmod,
//! truncate, utimes, access) act on the descriptor of what it resolved to.
//!
//! The replay's issuing code gets no path string to pass to the kernel itself: only
//! descriptors from here.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// A traced path mapped below a root: the root's index and the rest of the path, relative,
/// as recorded (not normalised: the kernel resolves it, beneath the root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beneath {
    pub root: u32,
    pub rel: CString,
}

impl Beneath {
    /// `rest` is the part of a traced path after its root; leading slashes are dropped
    /// (`/w//x` is `/w/x`). `None` when it holds a NUL.
    pub fn new(root: u32, rest: &str) -> Option<Beneath> {
        CString::new(rest.trim_start_matches('/'))
            .ok()
            .map(|rel| Beneath { root, rel })
    }

    /// The target to store in a symbolic link created at `self` so that it resolves beneath
    /// the root as the recorded `target` did: an absolute target in the same root becomes a
    /// relative one (absolute links never resolve beneath a root); others stay as recorded
    /// (relative ones resolve as they did, absolute ones elsewhere are refused at use).
    pub fn link_target(&self, target: &str, target_in_root: Option<&Beneath>) -> CString {
        let relative = match target_in_root {
            Some(t) if t.root == self.root && target.starts_with('/') => {
                let depth = self
                    .rel
                    .to_bytes()
                    .split(|b| *b == b'/')
                    .filter(|c| !c.is_empty() && *c != b".")
                    .count()
                    .saturating_sub(1);
                let mut s = "../".repeat(depth).into_bytes();
                s.extend_from_slice(t.rel.to_bytes());
                if s.is_empty() {
                    s.push(b'.');
                }
                while s.len() > 1 && s.ends_with(b"/") {
                    s.pop();
                }
                CString::new(s).ok()
            }
            _ => None,
        };
        relative.unwrap_or_else(|| CString::new(target).unwrap_or_default())
    }
}

/// Why a call was not issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its path leaves the root (`..`, an absolute link, a link pointing out), or it would
    /// remove, rename or replace the root itself.
    Escape,
    /// It would change an `--over` tree (replays over existing trees only read).
    ReadOnly,
    /// It would open a FIFO, a device or a socket: a FIFO's open waits for a writer (for
    /// ever, in an `--over` tree), a device's acts on the device. The replay opens regular
    /// files, directories and links only.
    Special,
}

impl Refusal {
    /// Why a call was not issued, for messages.
    pub fn why(self) -> &'static str {
        match self {
            Refusal::Escape => "would leave the replay root",
            Refusal::ReadOnly => "would change an --over tree",
            Refusal::Special => "would open a FIFO, a device or a socket",
        }
    }
}

/// The outcome of a call that failed or was refused.
#[derive(Debug)]
pub enum CallError {
    Io(io::Error),
    Refused(Refusal),
}

impl From<io::Error> for CallError {
    fn from(e: io::Error) -> CallError {
        CallError::Io(e)
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Io(e) => e.fmt(f),
            CallError::Refused(Refusal::Escape) => f.write_str("refused: leaves the replay root"),
            CallError::Refused(Refusal::ReadOnly) => f.write_str("refused: changes an --over tree"),
            CallError::Refused(Refusal::Special) => {
                f.write_str("refused: opens a FIFO, a device or a socket")
            }
        }
    }
}

/// A resolution's error: `EXDEV` from `RESOLVE_BENEATH` is a way out, refused.
fn resolved<T>(r: io::Result<T>) -> Result<T, CallError> {
    r.map_err(|e| match e.raw_os_error() {
        Some(libc::EXDEV) => CallError::Refused(Refusal::Escape),
        _ => CallError::Io(e),
    })
}

fn einval() -> CallError {
    CallError::Io(io::Error::from_raw_os_error(libc::EINVAL))
}

/// The open flags a replay passes on: the kernel's `openat2` refuses unknown bits (where
/// `open` ignores them), and a trace may carry any.
const OPEN_FLAGS: libc::c_int = libc::O_ACCMODE
    | libc::O_CREAT
    | libc::O_EXCL
    | libc::O_NOCTTY
    | libc::O_TRUNC
    | libc::O_APPEND
    | libc::O_NONBLOCK
    | libc::O_DSYNC
    | libc::O_SYNC
    | libc::O_DIRECT
    | libc::O_LARGEFILE
    | libc::O_DIRECTORY
    | libc::O_NOFOLLOW
    | libc::O_NOATIME
    | libc::O_PATH
    | libc::O_TMPFILE;

/// The directories the roots map to, held open; everything a replay names is beneath one.
pub struct Roots {
    dirs: Vec<OwnedFd>,
    /// Refuse every change (`--over`).
    read_only: bool,
}

impl Roots {
    pub fn new(dirs: Vec<OwnedFd>, read_only: bool) -> Roots {
        Roots { dirs, read_only }
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// Refuse a change when the roots are read-only.
    pub fn may_change(&self) -> Result<(), CallError> {
        if self.read_only {
            Err(CallError::Refused(Refusal::ReadOnly))
        } else {
            Ok(())
        }
    }

    fn dir(&self, p: &Beneath) -> Result<RawFd, CallError> {
        self.dirs
            .get(p.root as usize)
            .map(|d| d.as_raw_fd())
            .ok_or_else(einval)
    }

    /// `open(path, flags, mode)`, resolved beneath the root. Always with `O_NONBLOCK`, so
    /// that a FIFO's open never waits for a writer; what it opened must be a regular file
    /// or a directory ([`Refusal::Special`] otherwise), and keeps the flags the trace gave.
    pub fn open(&self, p: &Beneath, flags: i32, mode: u32) -> Result<OwnedFd, CallError> {
        let flags = flags & OPEN_FLAGS;
        let writes = flags & libc::O_ACCMODE != libc::O_RDONLY
            || flags & (libc::O_CREAT | libc::O_TRUNC) != 0
            || flags & libc::O_TMPFILE == libc::O_TMPFILE;
        if writes {
            self.may_change()?;
        }
        if flags & libc::O_PATH != 0 {
            // Opens nothing: a FIFO's O_PATH descriptor waits for no one.
            return resolved(fsbench_base::owned::open_following(
                self.dir(p)?,
                &p.rel,
                flags,
                mode as libc::mode_t,
            ));
        }
        let fd = resolved(fsbench_base::owned::open_following(
            self.dir(p)?,
            &p.rel,
            flags | libc::O_NONBLOCK,
            mode as libc::mode_t,
        ))?;
        plain(&fd, flags)?;
        Ok(fd)
    }

    /// What `p` names, as an `O_PATH` descriptor: through a final link when `follow`.
    pub fn target(&self, p: &Beneath, follow: bool) -> Result<OwnedFd, CallError> {
        let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
        resolved(fsbench_base::owned::open_following(
            self.dir(p)?,
            &p.rel,
            libc::O_PATH | nofollow,
            0,
        ))
    }

    /// The directory holding `p`'s final name (resolved beneath the root) and that name,
    /// for calls that change the entry itself. Refused for the root itself; `EINVAL` for a
    /// final `.` or `..` (the kernel refuses those for every such call).
    pub fn entry(&self, p: &Beneath) -> Result<(OwnedFd, CString), CallError> {
        self.may_change()?;
        let b = p.rel.to_bytes();
        let b = {
            let mut e = b.len();
            while e > 0 && b[e - 1] == b'/' {
                e -= 1;
            }
            &b[..e]
        };
        let (dir, name) = match b.iter().rposition(|c| *c == b'/') {
            Some(i) => (&b[..i], &b[i + 1..]),
            None => (&b[..0], b),
        };
        if name.is_empty() {
            return Err(CallError::Refused(Refusal::Escape));
        }
        if name == b"." || name == b".." {
            return Err(einval());
        }
        let dir = CString::new(dir).map_err(|_| einval())?;
        let fd = resolved(fsbench_base::owned::open_following(
            self.dir(p)?,
            &dir,
            libc::O_PATH | libc::O_DIRECTORY,
            0,
        ))?;
        let name = CString::new(name).map_err(|_| einval())?;
        Ok((fd, name))
    }
}

/// Refuse a descriptor that is no regular file or directory; clear the `O_NONBLOCK` the
/// open added when the trace's `flags` did not hold it.
fn plain(fd: &OwnedFd, flags: i32) -> Result<(), CallError> {
    let st = fsbench_base::beneath::fstat(fd.as_raw_fd())?;
    if !matches!(st.st_mode & libc::S_IFMT, libc::S_IFREG | libc::S_IFDIR) {
        return Err(CallError::Refused(Refusal::Special));
    }
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: fcntl on a descriptor held for the call.
        let fl = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        if fl < 0
            || unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK) } < 0
        {
            return Err(CallError::Io(io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// `fchmodat2(fd, "", mode, AT_EMPTY_PATH)`: chmod what an `O_PATH` descriptor names
/// (Linux 6.6); before it, through the descriptor's `/proc/self/fd` entry, which names the
/// same inode.
pub fn chmod_fd(fd: RawFd, mode: u32) -> io::Result<()> {
    const SYS_FCHMODAT2: libc::c_long = 452;
    // SAFETY: an empty C string and a descriptor; no buffers.
    let r = unsafe {
        libc::syscall(
            SYS_FCHMODAT2,
            fd,
            c"".as_ptr(),
            (mode & 0o7777) as libc::c_uint,
            libc::AT_EMPTY_PATH,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::ENOSYS) {
        return Err(e);
    }
    let p = CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL");
    // SAFETY: a valid C string.
    if unsafe { libc::chmod(p.as_ptr(), (mode & 0o7777) as libc::mode_t) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// An empty path for the `AT_EMPTY_PATH` calls.
pub const EMPTY: &CStr = c"";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_links_in_the_same_root_become_relative() {
        let t = |link: &str, target: &str, inroot: Option<(u32, &str)>| {
            let l = Beneath::new(0, link).unwrap();
            let b = inroot.map(|(r, p)| Beneath::new(r, p).unwrap());
            l.link_target(target, b.as_ref()).into_string().unwrap()
        };
        assert_eq!(t("a/b/link", "/w/x/y", Some((0, "x/y"))), "../../x/y");
        assert_eq!(t("link", "/w/x", Some((0, "x"))), "x");
        assert_eq!(t("link", "/w", Some((0, ""))), ".");
        assert_eq!(t("a/link", "/w", Some((0, ""))), "..");
        assert_eq!(t("a/link", "/v/x", Some((1, "x"))), "/v/x");
        assert_eq!(t("a/link", "/etc", None), "/etc");
        assert_eq!(t("a/link", "../x", None), "../x");
    }

    #[test]
    fn entries_are_split_and_the_root_itself_is_refused() {
        let base = std::env::temp_dir().join(format!("fsbench-confine-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("d")).unwrap();
        let fd: OwnedFd = std::fs::File::open(&base).unwrap().into();
        let roots = Roots::new(vec![fd], false);
        let (_, name) = roots.entry(&Beneath::new(0, "d/x/").unwrap()).unwrap();
        assert_eq!(name.as_bytes(), b"x");
        assert!(matches!(
            roots.entry(&Beneath::new(0, "").unwrap()),
            Err(CallError::Refused(Refusal::Escape))
        ));
        assert!(matches!(
            roots.entry(&Beneath::new(0, "../x").unwrap()),
            Err(CallError::Refused(Refusal::Escape))
        ));
        assert!(matches!(
            roots.entry(&Beneath::new(0, "d/..").unwrap()),
            Err(CallError::Io(_))
        ));
        let ro = Roots::new(vec![std::fs::File::open(&base).unwrap().into()], true);
        assert!(matches!(
            ro.open(&Beneath::new(0, "d/n").unwrap(), libc::O_CREAT, 0o644),
            Err(CallError::Refused(Refusal::ReadOnly))
        ));
        assert!(ro.open(&Beneath::new(0, "d").unwrap(), 0, 0).is_ok());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
