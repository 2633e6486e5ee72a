//! Run directories: fsbench lays every fileset out inside a directory it created and marked,
//! and deletes only inside such directories.
//!
//! A run directory is held open for the whole run, and everything below it is reached from
//! that descriptor without following links (see [`fsbench_base::beneath`]). An existing directory
//! (a `reuse` directory from an earlier run) is adopted only when it is a real directory, owned
//! by the user running fsbench, not writable by group or others, and carries the marker; on a
//! shared `/tmp` another user could otherwise plant one with a forged marker and links inside,
//! and wait for root to run fsbench. Each run holds an exclusive lock on the directory's lock
//! file while it runs, so two runs never share one reuse directory and `fsbench clean` can tell
//! a directory in use from a left-over one.

use fsbench_base::beneath::{self, component, fstat, open_file};
use fsbench_base::owned::{self, trust, Open};
use std::ffi::{CStr, CString};
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use fsbench_base::owned::trust::{LOCK, MARKER, MARKER_HEADER};

#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("the target directory {0} does not exist")]
    NoParent(PathBuf),
    #[error(
        "the target directory {path} is not a directory (it is {what}); give --dir a directory"
    )]
    NotADir { path: PathBuf, what: &'static str },
    #[error("cannot open the target directory {path}: {source}")]
    Parent { path: PathBuf, source: io::Error },
    #[error("{0} exists and was not created by fsbench; refusing to use it (choose another --dir or remove it yourself)")]
    Foreign(PathBuf),
    #[error("{path} is a symbolic link, not a directory fsbench created; fsbench never follows links where it writes (remove the link yourself)")]
    Link { path: PathBuf },
    #[error(
        "refusing to use {path}: {why}; remove it yourself if it is yours, or choose another --dir"
    )]
    Untrusted { path: PathBuf, why: String },
    #[error("{path} is in use by another fsbench run (pid {pid}); wait for it to finish, or choose another --dir")]
    Busy { path: PathBuf, pid: String },
    #[error("{path} is a system directory ({what}); fsbench does not create run directories there; choose a directory of your own or a mounted test file system")]
    System { path: PathBuf, what: &'static str },
    #[error("cannot create the run directory {path}: {source}")]
    Create { path: PathBuf, source: io::Error },
    #[error("cannot remove {path}: {source}; `fsbench clean {}` removes what is left (after any mount inside is unmounted)", path.parent().unwrap_or(Path::new("/")).display())]
    Remove { path: PathBuf, source: io::Error },
}

/// A run directory created (or, for reuse, adopted) by fsbench, held open and locked.
#[derive(Debug)]
pub struct RunDir {
    pub path: PathBuf,
    /// True when this run created the directory.
    pub fresh: bool,
    /// The descriptors; `None` only between [`RunDir::release`] and [`RunDir::reopen`].
    held: Option<Held>,
    name: CString,
    /// Made in a directory of the operating system on request ([`RunDir::create_forced`]):
    /// reopened there too.
    forced: bool,
}

#[derive(Debug)]
struct Held {
    dir: OwnedFd,
    parent: OwnedFd,
    /// The locked lock file; the lock goes with the descriptor.
    _lock: OwnedFd,
    /// Device and inode of the directory, to check a reopen finds the same one.
    id: (u64, u64),
}

impl Held {
    fn new(dir: OwnedFd, parent: OwnedFd, lock: OwnedFd) -> Held {
        let id = fstat(dir.as_raw_fd())
            .map(|st| (st.st_dev, st.st_ino))
            .unwrap_or((0, 0));
        Held {
            dir,
            parent,
            _lock: lock,
            id,
        }
    }
}

/// Whether `dir` (resolved: links and `..` followed) is, or is inside, a directory of the
/// operating system, where a benchmark's files have no business: what kind it is.
pub fn system_dir(dir: &Path) -> Option<&'static str> {
    let real = dir.canonicalize().ok()?;
    let s = real.to_string_lossy();
    let under = |p: &str| s == p || s.starts_with(&format!("{p}/"));
    // Scratch space the system provides for everyone: allowed.
    if ["/dev/shm", "/run/shm", "/run/user", "/var/tmp", "/tmp"]
        .iter()
        .any(|p| under(p))
    {
        return None;
    }
    if s == "/" {
        return Some("the root directory");
    }
    if s == "/var" || s == "/home" {
        return Some("a top-level system directory");
    }
    let system = [
        ("/etc", "system configuration"),
        ("/usr", "installed software"),
        ("/bin", "installed software"),
        ("/sbin", "installed software"),
        ("/lib", "installed software"),
        ("/lib32", "installed software"),
        ("/lib64", "installed software"),
        ("/libx32", "installed software"),
        ("/opt", "installed software"),
        ("/boot", "the boot loader's files"),
        ("/dev", "device nodes"),
        ("/proc", "a kernel file system"),
        ("/sys", "a kernel file system"),
        ("/run", "run-time state of the system"),
        ("/var/lib", "the system's state"),
        ("/var/log", "the system's logs"),
        ("/var/cache", "the system's caches"),
        ("/var/spool", "the system's spools"),
        ("/var/mail", "mail"),
        ("/var/backups", "the system's backups"),
    ];
    system.iter().find(|(p, _)| under(p)).map(|(_, w)| *w)
}

/// The parent directory opened, refused when it is a directory of the operating system
/// unless `forced` (a run directory made there with [`RunDir::create_forced`]).
fn open_parent(parent: &Path, forced: bool) -> Result<OwnedFd, RunDirError> {
    if !forced {
        if let Some(what) = system_dir(parent) {
            return Err(RunDirError::System {
                path: parent.canonicalize().unwrap_or(parent.to_path_buf()),
                what,
            });
        }
    }
    // Opened as a directory without waiting: a FIFO named as --dir is refused, not waited on.
    match fsbench_base::input::open_dir(parent) {
        Ok(f) => Ok(f.into()),
        Err(_) if parent.exists() && !parent.is_dir() => Err(RunDirError::NotADir {
            path: parent.to_path_buf(),
            what: fs::metadata(parent)
                .map(|m| fsbench_base::input::file_kind(&m))
                .unwrap_or("not a directory"),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(RunDirError::NoParent(parent.to_path_buf()))
        }
        Err(source) => Err(RunDirError::Parent {
            path: parent.to_path_buf(),
            source,
        }),
    }
}

/// Whether the held run directory still carries a trusted marker of fsbench's.
fn marker_ok(dir: RawFd) -> bool {
    trust::check_run_dir(dir).is_ok()
}

fn marker_c() -> CString {
    CString::new(MARKER).expect("no NUL")
}

fn lock_c() -> CString {
    CString::new(LOCK).expect("no NUL")
}

/// The pid of the fsbench run holding `dir`'s lock, if one holds it now.
pub fn holder(dir: &Path) -> Option<String> {
    let d = fs::File::open(dir).ok()?;
    let f = open_file(d.as_raw_fd(), &lock_c(), libc::O_RDONLY).ok()?;
    // SAFETY: flock on a descriptor we own.
    let free = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
    if free {
        return None;
    }
    let mut s = String::new();
    let _ = fs::File::from(f).read_to_string(&mut s);
    Some(lock_pid(&s))
}

fn lock_pid(s: &str) -> String {
    s.lines()
        .find_map(|l| l.strip_prefix("pid "))
        .unwrap_or("unknown")
        .trim()
        .to_string()
}

/// Take the run directory's lock (exclusive, without waiting) and write our pid into it.
fn lock(dir: RawFd, path: &Path) -> Result<OwnedFd, RunDirError> {
    let err = |source| RunDirError::Create {
        path: path.join(LOCK),
        source,
    };
    let f = owned::open_write(dir, &lock_c(), Open::OwnOrNew, libc::O_RDWR).map_err(|e| match e
        .kind()
    {
        io::ErrorKind::PermissionDenied => RunDirError::Untrusted {
            path: path.join(LOCK),
            why: format!("the lock file is not fsbench's: {e}"),
        },
        _ => err(owned::explain(e)),
    })?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let mut s = String::new();
        let mut r = fs::File::from(f);
        let _ = r.read_to_string(&mut s);
        return Err(RunDirError::Busy {
            path: path.to_path_buf(),
            pid: lock_pid(&s),
        });
    }
    owned::set_len(&f, 0).map_err(err)?;
    let mut w = fs::File::from(f);
    writeln!(w, "pid {}", std::process::id()).map_err(err)?;
    Ok(w.into())
}

impl RunDir {
    /// Create `<parent>/fsbench-<workload>-<unique>/` with a marker. With `stable`, the name is
    /// `<parent>/fsbench-<workload>/` and an existing directory is adopted if (and only if) it
    /// is a trusted, marked directory no other run holds: that is how filesets with `reuse`
    /// survive between runs.
    /// Where a workload with `reuse` filesets keeps its run directory under `parent`.
    pub fn stable_path(parent: &Path, workload: &str) -> PathBuf {
        parent.join(format!("fsbench-{}", safe_name(workload)))
    }

    pub fn create(parent: &Path, workload: &str, stable: bool) -> Result<RunDir, RunDirError> {
        Self::create_in(parent, workload, stable, false)
    }

    /// A fresh run directory in `parent` even when that is a directory of the operating
    /// system (PostMark's `--force-location`, asked for by name on its command line).
    pub fn create_forced(parent: &Path, workload: &str) -> Result<RunDir, RunDirError> {
        let mut rd = Self::create_in(parent, workload, false, true)?;
        rd.forced = true;
        Ok(rd)
    }

    fn create_in(
        parent: &Path,
        workload: &str,
        stable: bool,
        forced: bool,
    ) -> Result<RunDir, RunDirError> {
        let pfd = open_parent(parent, forced)?;
        let safe = safe_name(workload);
        if stable {
            let name = format!("fsbench-{safe}");
            let path = parent.join(&name);
            let c = CString::new(name).expect("sanitised name");
            return match owned::mkdir(pfd.as_raw_fd(), &c, 0o755) {
                Ok(()) => Self::make(pfd, c, path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Self::adopt(pfd, c, path),
                Err(source) => Err(RunDirError::Create { path, source }),
            };
        }
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros())
            .unwrap_or(0);
        for n in 0..1000u32 {
            let name = format!("fsbench-{safe}-{}-{stamp:x}{n}", std::process::id());
            let path = parent.join(&name);
            let c = CString::new(name).expect("sanitised name");
            match owned::mkdir(pfd.as_raw_fd(), &c, 0o755) {
                Ok(()) => return Self::make(pfd, c, path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(RunDirError::Create { path, source }),
            }
        }
        Err(RunDirError::Create {
            path: parent.to_path_buf(),
            source: io::Error::new(io::ErrorKind::AlreadyExists, "no free name"),
        })
    }

    /// Open the directory `name` in `pfd` without following a link, and check it is ours.
    fn open_checked(pfd: RawFd, name: &CStr, path: &Path) -> Result<OwnedFd, RunDirError> {
        let is_link = || {
            beneath::lstat_at(pfd, name).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK)
        };
        let dir = beneath::open_dir(pfd, name).map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::ENOTDIR) if is_link() => RunDirError::Link {
                path: path.to_path_buf(),
            },
            Some(libc::ENOTDIR) => RunDirError::Foreign(path.to_path_buf()),
            _ => RunDirError::Create {
                path: path.to_path_buf(),
                source: owned::explain(e),
            },
        })?;
        let st = fstat(dir.as_raw_fd()).map_err(|source| RunDirError::Create {
            path: path.to_path_buf(),
            source,
        })?;
        if let Some(why) = trust::untrusted_dir(&st) {
            return Err(RunDirError::Untrusted {
                path: path.to_path_buf(),
                why,
            });
        }
        Ok(dir)
    }

    /// An existing run directory opened with the checks of [`RunDir::open_checked`], and
    /// carrying fsbench's marker, owned by this user.
    fn open_marked(pfd: RawFd, name: &CStr, path: &Path) -> Result<OwnedFd, RunDirError> {
        let dir = Self::open_checked(pfd, name, path)?;
        match trust::check_run_dir(dir.as_raw_fd()) {
            Ok(()) => Ok(dir),
            Err(trust::Untrusted::NoMarker) => Err(RunDirError::Foreign(path.to_path_buf())),
            Err(trust::Untrusted::Why(why)) => Err(RunDirError::Untrusted {
                path: path.to_path_buf(),
                why,
            }),
        }
    }

    /// A directory this call just made: open it, mark it, lock it.
    fn make(pfd: OwnedFd, name: CString, path: PathBuf) -> Result<RunDir, RunDirError> {
        let dir = Self::open_checked(pfd.as_raw_fd(), &name, &path)?;
        let err = |source| RunDirError::Create {
            path: path.clone(),
            source,
        };
        let m = owned::open_write(dir.as_raw_fd(), &marker_c(), Open::New, libc::O_WRONLY)
            .map_err(err)?;
        let mut f = fs::File::from(m);
        writeln!(
            f,
            "{MARKER_HEADER}\npid {}\nversion {}\nThis directory and everything in it was created by fsbench and may be deleted by it.",
            std::process::id(),
            env!("CARGO_PKG_VERSION")
        )
        .map_err(err)?;
        let lock = lock(dir.as_raw_fd(), &path)?;
        Ok(RunDir {
            path,
            fresh: true,
            held: Some(Held::new(dir, pfd, lock)),
            name,
            forced: false,
        })
    }

    /// An existing directory: adopt it only when it is a trusted, marked directory no other
    /// run holds.
    fn adopt(pfd: OwnedFd, name: CString, path: PathBuf) -> Result<RunDir, RunDirError> {
        let dir = Self::open_marked(pfd.as_raw_fd(), &name, &path)?;
        let lock = lock(dir.as_raw_fd(), &path)?;
        Ok(RunDir {
            path,
            fresh: false,
            held: Some(Held::new(dir, pfd, lock)),
            name,
            forced: false,
        })
    }

    /// Adopt the existing marked directory `parent/name` (for `fsbench clean`): the same
    /// checks as a reuse run makes (a real directory, the user's own, closed to others,
    /// marked, not held by a running fsbench).
    pub fn adopt_existing(parent: &Path, name: &str) -> Result<RunDir, RunDirError> {
        let pfd = open_parent(parent, false)?;
        let path = parent.join(name);
        let c = component(std::ffi::OsStr::new(name)).map_err(|source| RunDirError::Create {
            path: path.clone(),
            source,
        })?;
        Self::adopt(pfd, c, path)
    }

    /// The checks [`RunDir::adopt_existing`] makes, without taking the lock or creating
    /// anything (for `fsbench clean --dry-run`): why `parent/name` would be refused, if it
    /// would.
    pub fn check_adoptable(parent: &Path, name: &str) -> Result<(), RunDirError> {
        let pfd = open_parent(parent, false)?;
        let path = parent.join(name);
        let c = component(std::ffi::OsStr::new(name)).map_err(|source| RunDirError::Create {
            path: path.clone(),
            source,
        })?;
        Self::open_marked(pfd.as_raw_fd(), &c, &path)?;
        Ok(())
    }

    /// The open run directory, from which everything inside is reached.
    pub fn fd(&self) -> RawFd {
        self.held().dir.as_raw_fd()
    }

    fn held(&self) -> &Held {
        self.held
            .as_ref()
            .expect("the run directory is held (released only during a remount)")
    }

    /// Close every descriptor this run holds on the directory and its parent, lock
    /// included, so that the file system can be unmounted (an experiment's remount).
    pub fn release(&mut self) {
        self.held = None;
    }

    /// Open the directory again after [`RunDir::release`], with the checks an adopting run
    /// makes, and check it is the same directory (device and inode) as before.
    pub fn reopen(&mut self, before: (u64, u64)) -> Result<(), RunDirError> {
        let parent = self.path.parent().unwrap_or(Path::new("/"));
        let pfd = open_parent(parent, self.forced)?;
        let dir = Self::open_checked(pfd.as_raw_fd(), &self.name, &self.path)?;
        if !marker_ok(dir.as_raw_fd()) {
            return Err(RunDirError::Foreign(self.path.clone()));
        }
        let lock = lock(dir.as_raw_fd(), &self.path)?;
        let h = Held::new(dir, pfd, lock);
        if h.id.1 != before.1 {
            return Err(RunDirError::Create {
                path: self.path.clone(),
                source: io::Error::other("after the remount the name refers to another directory"),
            });
        }
        self.held = Some(h);
        Ok(())
    }

    /// Device and inode of the held directory.
    pub fn id(&self) -> (u64, u64) {
        self.held().id
    }

    /// Whether the name in the parent still refers to the directory this run holds open.
    fn still_ours(&self) -> bool {
        let Ok(now) = beneath::lstat_at(self.held().parent.as_raw_fd(), &self.name) else {
            return false;
        };
        fstat(self.fd()).is_ok_and(|held| held.st_dev == now.st_dev && held.st_ino == now.st_ino)
    }

    /// Delete the run directory and everything in it, after checking the marker again; only
    /// what is reachable from the held descriptor is removed.
    pub fn remove(&self) -> Result<(), RunDirError> {
        if self.held.is_none() {
            return Err(RunDirError::Remove {
                path: self.path.clone(),
                source: io::Error::other("its descriptors were closed for a remount"),
            });
        }
        if !marker_ok(self.fd()) {
            return Err(RunDirError::Foreign(self.path.clone()));
        }
        let err = |source| RunDirError::Remove {
            path: self.path.clone(),
            source,
        };
        // The marker and the lock go last: a removal that stops half-way (a mount inside, a
        // second Ctrl-C) leaves a marked directory that `fsbench clean` can finish.
        let ours = |n: &CStr| n.to_bytes() == MARKER.as_bytes() || n.to_bytes() == LOCK.as_bytes();
        owned::remove::contents(self.fd(), &ours).map_err(err)?;
        owned::remove::contents(self.fd(), &|_| false).map_err(err)?;
        if !self.still_ours() {
            return Err(RunDirError::Remove {
                path: self.path.clone(),
                source: io::Error::other(
                    "the name now refers to another directory; emptied the one fsbench created and left the name alone",
                ),
            });
        }
        owned::rmdir(self.held().parent.as_raw_fd(), &self.name).map_err(err)
    }

    /// Empty a marked run directory but keep it (and its marker and lock).
    pub fn clear_except(&self, keep: &[&str]) -> Result<(), RunDirError> {
        if !marker_ok(self.fd()) {
            return Err(RunDirError::Foreign(self.path.clone()));
        }
        let keep = |n: &CStr| {
            let n = n.to_bytes();
            n == MARKER.as_bytes() || n == LOCK.as_bytes() || keep.iter().any(|k| n == k.as_bytes())
        };
        owned::remove::contents(self.fd(), &keep).map_err(|source| RunDirError::Remove {
            path: self.path.clone(),
            source,
        })
    }
}

/// A workload name as it appears in run directory names.
pub fn safe_name(workload: &str) -> String {
    workload
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Bytes already allocated to the `reuse` filesets of `wl` in the run directory `run_dir`:
/// a rerun reuses them, so they count as free for the space checks. Only what the rerun may
/// reuse is counted: files of fsbench's own on the run directory's mount (no link, mount
/// or shared file).
pub fn reusable_bytes(run_dir: &Path, wl: &fsbench_model::model::Workload) -> u64 {
    let mut total = 0u64;
    let Ok(top) = fs::File::open(run_dir) else {
        return 0;
    };
    for fs in wl.filesets.iter().filter(|f| f.reuse) {
        let Ok(name) = component(std::ffi::OsStr::new(&fs.name)) else {
            continue;
        };
        let Ok(root) = beneath::open_dir(top.as_raw_fd(), &name) else {
            continue;
        };
        let _ = owned::audit::walk(root.as_raw_fd(), &mut |e| {
            if e.is_file() && e.verdict == owned::audit::Verdict::Ours {
                total += e.stat.st_blocks as u64 * 512;
            }
            Ok(())
        });
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn base(tag: &str) -> PathBuf {
        let base =
            std::env::temp_dir().join(format!("fsbench-rundir-test-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(&base).unwrap();
        base
    }

    #[test]
    fn create_mark_remove() {
        let base = base("cmr");
        let r = RunDir::create(&base, "w/x", false).unwrap();
        assert!(r.fresh && fsbench_base::owned::trust::is_run_dir(&r.path));
        fs::write(r.path.join("data"), b"x").unwrap();
        r.remove().unwrap();
        assert!(!r.path.exists());

        // A stable directory is adopted only when marked, and by one run at a time.
        let s = RunDir::create(&base, "w", true).unwrap();
        assert!(matches!(
            RunDir::create(&base, "w", true),
            Err(RunDirError::Busy { .. })
        ));
        assert_eq!(
            holder(&s.path).as_deref(),
            Some(std::process::id().to_string().as_str())
        );
        let path = s.path.clone();
        drop(s);
        assert_eq!(holder(&path), None);
        let again = RunDir::create(&base, "w", true).unwrap();
        assert!(!again.fresh);
        fs::remove_file(again.path.join(MARKER)).unwrap();
        drop(again);
        assert!(matches!(
            RunDir::create(&base, "w", true),
            Err(RunDirError::Foreign(_))
        ));
        assert!(path.exists());
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn links_and_loose_permissions_are_refused() {
        let base = base("links");
        let outside = base.join("outside");
        fs::create_dir(&outside).unwrap();
        // A marked directory elsewhere, linked in under the stable name.
        let real = RunDir::create(&outside, "w", true).unwrap();
        let real_path = real.path.clone();
        drop(real);
        symlink(&real_path, base.join("fsbench-w")).unwrap();
        assert!(matches!(
            RunDir::create(&base, "w", true),
            Err(RunDirError::Link { .. })
        ));
        fs::remove_file(base.join("fsbench-w")).unwrap();
        // A marked directory others may write to.
        fs::set_permissions(&real_path, fs::Permissions::from_mode(0o777)).unwrap();
        let e = RunDir::create(&outside, "w", true).unwrap_err();
        assert!(
            matches!(e, RunDirError::Untrusted { .. }) && e.to_string().contains("0777"),
            "{e}"
        );
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn system_directories() {
        assert_eq!(system_dir(Path::new("/etc")), Some("system configuration"));
        assert!(system_dir(Path::new("/tmp/../etc/../usr/bin")).is_some());
        assert!(system_dir(Path::new("/")).is_some());
        assert_eq!(system_dir(Path::new("/tmp")), None);
        assert_eq!(system_dir(Path::new("/dev/shm")), None);
        assert_eq!(system_dir(&std::env::temp_dir()), None);
        assert!(matches!(
            RunDir::create(Path::new("/etc"), "x", false),
            Err(RunDirError::System { .. })
        ));
    }

    #[test]
    fn a_forced_run_directory_lets_no_other_into_system_directories() {
        // A forced run directory (PostMark's --force-location) allows itself alone: a run
        // directory made afterwards in the same process is still refused in /etc.
        let base = base("forced");
        let forced = RunDir::create_forced(&base, "postmark").unwrap();
        assert!(forced.path.starts_with(&base));
        assert!(matches!(
            RunDir::create(Path::new("/etc"), "x", false),
            Err(RunDirError::System { .. })
        ));
        forced.remove().unwrap();
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn clear_and_remove_never_follow_links() {
        let base = base("clear");
        let victim = base.join("victim");
        fs::create_dir(&victim).unwrap();
        fs::write(victim.join("keep-me"), b"x").unwrap();
        let r = RunDir::create(&base, "w", true).unwrap();
        symlink(&victim, r.path.join("fs")).unwrap();
        fs::create_dir(r.path.join("d")).unwrap();
        symlink(&victim, r.path.join("d/inner")).unwrap();
        r.clear_except(&["nothing"]).unwrap();
        assert!(fsbench_base::owned::trust::is_run_dir(&r.path));
        assert!(r.path.join(LOCK).exists());
        assert!(victim.join("keep-me").exists());
        symlink(&victim, r.path.join("fs")).unwrap();
        r.remove().unwrap();
        assert!(!r.path.exists());
        assert!(victim.join("keep-me").exists());
        fs::remove_dir_all(&base).unwrap();
    }
}
