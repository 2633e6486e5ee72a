//! A parallel directory walker shared by `scan`, `layout`, `find`, `read`, aging and traces.
//!
//! Why not `walkdir`/`ignore`/`jwalk`: we need the raw `struct stat` of every
//! entry (allocated blocks, three timestamps), mount checks by mount (a bind
//! mount of the root's own file system has its device: `RESOLVE_NO_XDEV`
//! tells them apart), a directory fd to `openat` files relative to (FIEMAP in `layout`),
//! and nothing else. Resolving every entry relative to its parent directory fd
//! (`getdents64` + `fstatat(AT_SYMLINK_NOFOLLOW)` + `openat(O_NOFOLLOW)`) keeps
//! path lookups to one component, never follows a symlink and keeps the tree
//! safe against renames during the walk.
//!
//! Scheduling: one worker per core takes directories from a shared LIFO stack
//! (`Mutex<Vec<Job>>` + `Condvar`). A directory is the unit of work, so the
//! lock is taken twice per directory, not per entry; on the 2–8 core machines
//! this runs on that is far from contended, which is why we do not pull in
//! `crossbeam-deque` for per-worker deques. LIFO order keeps the walk roughly
//! depth-first, which bounds the number of open directory fds (a pending child
//! keeps its parent's fd alive through an `Arc`).

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Options of one walk.
#[derive(Debug, Clone)]
pub struct WalkOptions {
    /// Descend into directories on other file systems (mount points).
    pub cross_mounts: bool,
    /// Number of worker threads (at least 1).
    pub threads: usize,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            cross_mounts: false,
            threads: default_threads(),
        }
    }
}

/// One worker per available core.
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// One directory entry as seen by a [`Visitor`].
pub struct WalkEntry<'a> {
    /// The directory holding the entry: `openat(dirfd, name)` reaches it.
    pub dirfd: BorrowedFd<'a>,
    /// The entry's name inside its directory.
    pub name: &'a CStr,
    /// Path relative to the walk's root, `/`-separated, no leading `./`.
    pub path: &'a [u8],
    /// Number of directories between the root and the entry: 0 for an entry
    /// directly inside the root.
    pub depth: u32,
    /// `fstatat(dirfd, name, AT_SYMLINK_NOFOLLOW)`.
    pub stat: &'a libc::stat,
}

impl WalkEntry<'_> {
    pub fn is_dir(&self) -> bool {
        self.stat.st_mode & libc::S_IFMT == libc::S_IFDIR
    }
    pub fn is_file(&self) -> bool {
        self.stat.st_mode & libc::S_IFMT == libc::S_IFREG
    }
}

/// Per-worker consumer of entries. Each worker owns one visitor, so visitors
/// accumulate without locks; the caller merges them after the walk.
pub trait Visitor: Send {
    type Error: Send;
    /// Called once for every entry below the root (not for the root itself).
    fn entry(&mut self, entry: &WalkEntry<'_>) -> Result<(), Self::Error>;
    /// Called after a directory's entries were visited (also for the root,
    /// with `path` empty and `depth` 0; a directory at depth d holds entries
    /// of depth d).
    fn dir_done(&mut self, _path: &[u8], _depth: u32, _entries: u64) -> Result<(), Self::Error> {
        Ok(())
    }
    /// Called once by the worker after its last directory.
    fn finish(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Failure of a walk as a whole.
#[derive(Debug, thiserror::Error)]
pub enum WalkError<E: std::fmt::Debug + std::fmt::Display> {
    #[error("cannot open directory {path}: {source}")]
    Root {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{0}")]
    Visit(E),
    #[error("cannot start walk thread {index}: {source}")]
    Spawn { index: usize, source: io::Error },
}

/// A problem with one entry that did not stop the walk (like `find`, we
/// report and carry on: a directory we may not read, an entry that vanished).
#[derive(Debug)]
pub struct EntryProblem {
    pub path: PathBuf,
    pub error: io::Error,
}

/// What a walk leaves behind besides the visitors.
#[derive(Debug, Default)]
pub struct WalkStats {
    /// Directories found on another file system and not entered.
    pub mount_points_skipped: u64,
    /// Count of problems; only the first [`MAX_PROBLEMS`] are kept.
    pub problem_count: u64,
    pub problems: Vec<EntryProblem>,
}

pub const MAX_PROBLEMS: usize = 20;

/// The result of [`walk`]: the workers' visitors and the walk's counters.
pub struct WalkOutcome<V> {
    pub visitors: Vec<V>,
    pub stats: WalkStats,
}

struct Job {
    /// Parent directory fd; `None` for the root.
    parent: Option<Arc<OwnedFd>>,
    /// Name inside the parent (the root's full path for the root).
    name: CString,
    /// Relative path of this directory (empty for the root).
    path: Vec<u8>,
    /// Depth of this directory's entries.
    depth: u32,
}

struct Queue {
    jobs: Vec<Job>,
    /// Directories queued or being processed; the walk ends at zero.
    pending: usize,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    stop: AtomicBool,
    root_dev: libc::dev_t,
    cross_mounts: bool,
    stats: Mutex<WalkStats>,
}

impl Shared {
    fn problem(&self, dir: &[u8], name: Option<&[u8]>, error: io::Error) {
        let mut path = dir.to_vec();
        if let Some(n) = name {
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(n);
        }
        let mut s = self.stats.lock().unwrap();
        s.problem_count += 1;
        if s.problems.len() < MAX_PROBLEMS {
            s.problems.push(EntryProblem {
                path: PathBuf::from(OsStr::from_bytes(&path)),
                error,
            });
        }
    }
}

fn cstring(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// Open directory `name` in `parent` without following a link; unless the walk crosses
/// mounts, never into another mount (`EXDEV`): a bind mount of the root's own file system
/// has the root's device, and only the mount tells it apart.
fn open_dir(parent: RawFd, name: &CStr, cross_mounts: bool) -> io::Result<OwnedFd> {
    if cross_mounts || name.to_bytes() == b"." {
        crate::beneath::open_dir_any_mount(parent, name)
    } else {
        crate::beneath::open_dir(parent, name)
    }
}

/// Walk the tree under `root` with `opts.threads` workers, each feeding the
/// visitor made for it by `make(worker_index)`.
///
/// The root itself is followed if it is a symlink (it is what the user named);
/// nothing below it is. Directories on other file systems are reported as
/// entries but not entered unless `opts.cross_mounts`.
pub fn walk<V, F>(
    root: &Path,
    opts: &WalkOptions,
    make: F,
) -> Result<WalkOutcome<V>, WalkError<V::Error>>
where
    V: Visitor,
    V::Error: std::fmt::Debug + std::fmt::Display,
    F: Fn(usize) -> V,
{
    let root_err = |source| WalkError::Root {
        path: root.to_path_buf(),
        source,
    };
    let c_root = cstring(root).map_err(root_err)?;
    // Open once here to fail early with a clear error and to learn the device.
    let fd = unsafe {
        libc::open(
            c_root.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(root_err(io::Error::last_os_error()));
    }
    let root_fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let root_st = crate::beneath::fstat(root_fd.as_raw_fd()).map_err(root_err)?;
    // The root job re-opens "." relative to the opened root so that the
    // path is resolved exactly once.
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue {
            jobs: vec![Job {
                parent: Some(Arc::new(root_fd)),
                name: CString::new(".").unwrap(),
                path: Vec::new(),
                depth: 0,
            }],
            pending: 1,
        }),
        ready: Condvar::new(),
        stop: AtomicBool::new(false),
        root_dev: root_st.st_dev,
        cross_mounts: opts.cross_mounts,
        stats: Mutex::new(WalkStats::default()),
    });

    let threads = opts.threads.max(1);
    let mut visitors: Vec<V> = (0..threads).map(&make).collect();
    let mut first_error: Option<V::Error> = None;
    let mut spawn_error = None;
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (index, v) in visitors.iter_mut().enumerate() {
            let shared2 = Arc::clone(&shared);
            match std::thread::Builder::new()
                .name(format!("walk {index}"))
                .spawn_scoped(s, move || worker(&shared2, v))
            {
                Ok(h) => handles.push(h),
                Err(source) => {
                    // The started workers would wait for work this one was to share.
                    stop_all(&shared);
                    spawn_error = Some(WalkError::Spawn { index, source });
                    break;
                }
            }
        }
        for h in handles {
            if let Err(e) = h.join().expect("walk worker panicked") {
                first_error.get_or_insert(e);
            }
        }
    });
    if let Some(e) = spawn_error {
        return Err(e);
    }
    if let Some(e) = first_error {
        return Err(WalkError::Visit(e));
    }
    let stats = std::mem::take(&mut *shared.stats.lock().unwrap());
    Ok(WalkOutcome { visitors, stats })
}

fn stop_all(shared: &Shared) {
    shared.stop.store(true, Ordering::SeqCst);
    let _q = shared.queue.lock().unwrap();
    shared.ready.notify_all();
}

/// Stops the other workers if this one panics (in a visitor), so that they
/// do not wait forever for directories the panicking worker would have queued.
struct StopOnPanic<'a>(&'a Shared);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop.store(true, Ordering::SeqCst);
            if let Ok(_q) = self.0.queue.lock() {
                self.0.ready.notify_all();
            }
        }
    }
}

fn worker<V: Visitor>(shared: &Shared, visitor: &mut V) -> Result<(), V::Error> {
    let _guard = StopOnPanic(shared);
    let mut buf = vec![0u8; 64 * 1024];
    let mut children: Vec<Job> = Vec::new();
    let mut path = Vec::with_capacity(4096);
    loop {
        let job = {
            let mut q = shared.queue.lock().unwrap();
            loop {
                if shared.stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                if let Some(j) = q.jobs.pop() {
                    break j;
                }
                if q.pending == 0 {
                    return visitor.finish();
                }
                q = shared.ready.wait(q).unwrap();
            }
        };
        let res = process_dir(shared, visitor, &job, &mut buf, &mut path, &mut children);
        drop(job);
        let mut q = shared.queue.lock().unwrap();
        q.pending += children.len();
        q.pending -= 1;
        let n = children.len();
        q.jobs.append(&mut children);
        if n > 1 || q.pending == 0 {
            shared.ready.notify_all();
        } else if n == 1 {
            shared.ready.notify_one();
        }
        drop(q);
        if let Err(e) = res {
            stop_all(shared);
            return Err(e);
        }
    }
}

#[repr(C)]
struct Dirent64Head {
    d_ino: u64,
    d_off: i64,
    d_reclen: u16,
    d_type: u8,
}

fn process_dir<V: Visitor>(
    shared: &Shared,
    visitor: &mut V,
    job: &Job,
    buf: &mut [u8],
    path: &mut Vec<u8>,
    children: &mut Vec<Job>,
) -> Result<(), V::Error> {
    let parent_fd = job
        .parent
        .as_ref()
        .map(|p| p.as_raw_fd())
        .unwrap_or(libc::AT_FDCWD);
    let dir = match open_dir(parent_fd, &job.name, shared.cross_mounts) {
        Ok(fd) => Arc::new(fd),
        Err(e) if crate::beneath::is_mount_error(&e) => {
            // Mounted there after it was listed, or a bind mount of the same file system.
            shared.stats.lock().unwrap().mount_points_skipped += 1;
            return Ok(());
        }
        Err(e) => {
            shared.problem(&job.path, None, e);
            return Ok(());
        }
    };
    let dfd = dir.as_raw_fd();
    let borrowed = unsafe { BorrowedFd::borrow_raw(dfd) };
    let mut count: u64 = 0;
    let name_off = std::mem::offset_of!(Dirent64Head, d_type) + 1;
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dfd,
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
            )
        };
        if n < 0 {
            shared.problem(&job.path, None, io::Error::last_os_error());
            break;
        }
        if n == 0 {
            break;
        }
        let n = n as usize;
        let mut off = 0usize;
        while off < n {
            // SAFETY: the kernel wrote whole records of d_reclen bytes.
            let reclen = u16::from_ne_bytes([
                buf[off + std::mem::offset_of!(Dirent64Head, d_reclen)],
                buf[off + std::mem::offset_of!(Dirent64Head, d_reclen) + 1],
            ]) as usize;
            let name_bytes = &buf[off + name_off..off + reclen];
            let name = CStr::from_bytes_until_nul(name_bytes).expect("dirent name without NUL");
            off += reclen;
            let nb = name.to_bytes();
            if nb == b"." || nb == b".." {
                continue;
            }
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            if unsafe { libc::fstatat(dfd, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } != 0
            {
                shared.problem(&job.path, Some(nb), io::Error::last_os_error());
                continue;
            }
            count += 1;
            path.clear();
            path.extend_from_slice(&job.path);
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(nb);
            let entry = WalkEntry {
                dirfd: borrowed,
                name,
                path,
                depth: job.depth,
                stat: &st,
            };
            visitor.entry(&entry)?;
            if entry.is_dir() {
                if st.st_dev != shared.root_dev && !shared.cross_mounts {
                    shared.stats.lock().unwrap().mount_points_skipped += 1;
                } else {
                    children.push(Job {
                        parent: Some(Arc::clone(&dir)),
                        name: name.to_owned(),
                        path: path.clone(),
                        depth: job.depth + 1,
                    });
                }
            }
        }
    }
    visitor.dir_done(&job.path, job.depth, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Vec<(Vec<u8>, u32, bool)>);
    impl Visitor for Collect {
        type Error = String;
        fn entry(&mut self, e: &WalkEntry<'_>) -> Result<(), String> {
            self.0.push((e.path.to_vec(), e.depth, e.is_dir()));
            Ok(())
        }
    }

    #[test]
    fn walks_nested_tree_without_following_symlinks() {
        let base = std::env::temp_dir().join(format!("fsbench-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("a/b/c")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/x"), b"x").unwrap();
        let root = base.join("a");
        std::fs::write(root.join("f1"), b"hello").unwrap();
        std::fs::write(root.join("b/c/f2"), b"").unwrap();
        std::os::unix::fs::symlink(base.join("outside"), root.join("b/link")).unwrap();
        for threads in [1, 3] {
            let opts = WalkOptions {
                cross_mounts: false,
                threads,
            };
            let out = walk(&root, &opts, |_| Collect(Vec::new())).unwrap();
            let mut all: Vec<_> = out.visitors.into_iter().flat_map(|c| c.0).collect();
            all.sort();
            let want: Vec<(Vec<u8>, u32, bool)> = vec![
                (b"b".to_vec(), 0, true),
                (b"b/c".to_vec(), 1, true),
                (b"b/c/f2".to_vec(), 2, false),
                (b"b/link".to_vec(), 1, false),
                (b"f1".to_vec(), 0, false),
            ];
            assert_eq!(all, want);
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    struct Panicky;
    impl Visitor for Panicky {
        type Error = String;
        fn entry(&mut self, e: &WalkEntry<'_>) -> Result<(), String> {
            if e.path == b"d3" {
                panic!("visitor bug");
            }
            Ok(())
        }
    }

    struct Failing;
    impl Visitor for Failing {
        type Error = String;
        fn entry(&mut self, e: &WalkEntry<'_>) -> Result<(), String> {
            if e.path.ends_with(b"f7") {
                return Err(format!("bad {}", String::from_utf8_lossy(e.path)));
            }
            Ok(())
        }
    }

    #[test]
    fn visitor_panic_or_error_ends_the_walk() {
        let base = std::env::temp_dir().join(format!("fsbench-walk-p-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for d in 0..8 {
            for e in 0..4 {
                let p = base.join(format!("d{d}/e{e}"));
                std::fs::create_dir_all(&p).unwrap();
                for f in 0..10 {
                    std::fs::write(p.join(format!("f{f}")), b"").unwrap();
                }
            }
        }
        let opts = WalkOptions {
            cross_mounts: false,
            threads: 3,
        };
        let r = std::panic::catch_unwind(|| walk(&base, &opts, |_| Panicky).map(|_| ()));
        assert!(r.is_err());
        match walk(&base, &opts, |_| Failing) {
            Err(WalkError::Visit(m)) => assert!(m.starts_with("bad d"), "{m}"),
            _ => panic!("expected the visitor's error"),
        }
        std::fs::remove_dir_all(&base).unwrap();
    }
}
