//! Directory handles of a fileset's tree, so that every operation on an entry is one `*at()`
//! call relative to its parent directory, never a path the kernel resolves from `/` again.
//!
//! Why: a path re-resolved at every call follows whatever links appear in it meanwhile (see
//! [`fsbench_base::beneath`]). The fileset's root is opened beneath the run directory's descriptor
//! and each tree directory beneath the root, without following links; the handles are opened
//! on first use and cached, within a budget of descriptors (half the process's limit, which
//! fsbench raises to the hard limit). Past the budget a handle is opened for the operation and
//! closed after it (one more system call, outside the timed part).
//!
//! Measurement note: a timed open, create, delete or stat therefore resolves one component
//! (the entry's name) where Filebench resolves the whole absolute path; the components above
//! are dentry-cache hits costing tens of nanoseconds each (docs/filebench-compat.md).

use fsbench_base::beneath;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicIsize, Ordering};
use std::sync::OnceLock;

/// Descriptors left for cached directory handles, process-wide.
fn budget() -> &'static AtomicIsize {
    static B: OnceLock<AtomicIsize> = OnceLock::new();
    B.get_or_init(|| AtomicIsize::new((raise_nofile() / 2) as isize))
}

/// Raise the soft limit on open files to the hard limit; returns the soft limit in force.
pub fn raise_nofile() -> u64 {
    // SAFETY: getrlimit/setrlimit with a valid struct.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 1024;
        }
        let want = r.rlim_max.min(1 << 20);
        if want > r.rlim_cur {
            let n = libc::rlimit {
                rlim_cur: want,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &n) == 0 {
                return want;
            }
        }
        r.rlim_cur
    }
}

/// A directory handle for one operation.
pub enum DirRef {
    Cached(RawFd),
    Temp(OwnedFd),
}

impl DirRef {
    #[inline]
    pub fn fd(&self) -> RawFd {
        match self {
            DirRef::Cached(fd) => *fd,
            DirRef::Temp(f) => f.as_raw_fd(),
        }
    }
}

/// The open root of a fileset and lazily opened handles of its directories.
#[derive(Debug)]
pub struct DirTable {
    /// `None` only between [`DirTable::release`] and [`DirTable::reopen`].
    root: Option<OwnedFd>,
    fds: Vec<AtomicI32>,
}

impl DirTable {
    /// Handles for `ndirs` directories below `root` (directory 0 is the root itself).
    pub fn new(root: OwnedFd, ndirs: usize) -> DirTable {
        DirTable {
            root: Some(root),
            fds: (0..ndirs).map(|_| AtomicI32::new(-1)).collect(),
        }
    }

    /// No local handles: a fileset on an NFS export, reached by paths through libnfs.
    pub fn remote(ndirs: usize) -> DirTable {
        DirTable {
            root: None,
            fds: (0..ndirs).map(|_| AtomicI32::new(-1)).collect(),
        }
    }

    pub fn root(&self) -> RawFd {
        self.root.as_ref().map_or(-1, |f| f.as_raw_fd())
    }

    /// Close the root and every cached handle (so the file system can be unmounted).
    pub fn release(&mut self) {
        self.close_cached();
        self.root = None;
    }

    /// Take a newly opened root after [`DirTable::release`]; the other directories are
    /// opened again as they are used.
    pub fn reopen(&mut self, root: OwnedFd) {
        self.root = Some(root);
    }

    fn close_cached(&self) {
        for s in &self.fds {
            let fd = s.swap(-1, Ordering::AcqRel);
            if fd >= 0 {
                // SAFETY: the table owned this descriptor.
                drop(unsafe { OwnedFd::from_raw_fd(fd) });
                budget().fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The handle of directory `d`, whose path below the root is `rel`.
    #[inline]
    pub fn get(&self, d: u32, rel: &str) -> io::Result<DirRef> {
        if d == 0 {
            return Ok(DirRef::Cached(self.root()));
        }
        let slot = &self.fds[d as usize];
        let fd = slot.load(Ordering::Acquire);
        if fd >= 0 {
            return Ok(DirRef::Cached(fd));
        }
        self.open(slot, rel)
    }

    #[cold]
    fn open(&self, slot: &AtomicI32, rel: &str) -> io::Result<DirRef> {
        let f = beneath::open_dir_path(self.root(), rel.as_bytes())?;
        if budget().fetch_sub(1, Ordering::Relaxed) <= 0 {
            budget().fetch_add(1, Ordering::Relaxed);
            return Ok(DirRef::Temp(f));
        }
        let raw = f.as_raw_fd();
        match slot.compare_exchange(-1, raw, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                std::mem::forget(f);
                Ok(DirRef::Cached(raw))
            }
            Err(other) => {
                // Another thread opened it first: use theirs, close ours.
                budget().fetch_add(1, Ordering::Relaxed);
                drop(f);
                Ok(DirRef::Cached(other))
            }
        }
    }

    /// Cache a handle this caller just opened (the layout, which makes the directories).
    pub fn offer(&self, d: u32, f: OwnedFd) {
        if d == 0 || budget().fetch_sub(1, Ordering::Relaxed) <= 0 {
            budget().fetch_add(1, Ordering::Relaxed);
            return;
        }
        let raw = f.as_raw_fd();
        if self.fds[d as usize]
            .compare_exchange(-1, raw, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            std::mem::forget(f);
        } else {
            budget().fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for DirTable {
    fn drop(&mut self) {
        self.close_cached();
    }
}
