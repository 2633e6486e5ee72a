//! The remote server: a passthrough FUSE file system over the server tree whose
//! replies leave when the modelled network would have delivered them.
//!
//! # Threads
//! * the **reader** reads requests from `/dev/fuse`, does the real work at once
//!   (lstat, pread, copies into the client cache...), asks the network model
//!   when the reply is due and either answers at once (answered from the
//!   client's caches) or queues the reply;
//! * the **replier** sends queued replies at their modelled times (a heap by due
//!   time, the disk's [`Sleeper`] for the last stretch), records how late each
//!   left, and writes `stats.json` every second;
//! * the **main** thread waits for SIGTERM/SIGINT/SIGHUP and runs the shutdown:
//!   unmount (lazily if busy), wait for the kernel to close the connection (at
//!   most 10 s), send what is still queued, write the final statistics.
//!
//! The kernel is told to cache nothing (entry and attribute timeouts 0, direct
//! I/O on every open), so every operation reaches the server and the client's
//! caches are modelled here, where they can be counted.

use std::cmp::Ordering as CmpOrdering;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;
use hdrhistogram::Histogram;
use rand::Rng;

use fsbench_base::daemon::owned::{umount, MountRecord};
use fsbench_base::daemon::state::write_json_atomic;
use fsbench_base::fuse::abi::{Attr, AttrOut};
use fsbench_base::fuse::*;
use zerocopy::IntoBytes;

use super::model::{Link, Net, ATTR_TTL, CHUNK};
use super::state::{LookasideEntry, Protocol, Ready, RemoteConfig, RemoteStats, StateDir};

mod data;
mod encode;
mod lookaside;
mod ops;
mod threads;

use encode::*;
use lookaside::load_lookaside;
pub use lookaside::{hash_file, index_lookaside, index_of_snapshot};
use threads::{control, reader_thread, replier_thread};

const ROOT_INO: u64 = 1;

/// A reply waiting for its modelled time.
struct Pending {
    due: f64,
    arrival: f64,
    seq: u64,
    unique: u64,
    error: i32,
    data: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == CmpOrdering::Equal
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}

impl Ord for Pending {
    /// Reversed: the earliest due reply is the heap's greatest.
    fn cmp(&self, o: &Self) -> CmpOrdering {
        o.due
            .total_cmp(&self.due)
            .then_with(|| o.seq.cmp(&self.seq))
    }
}

/// Statistics shared by the reader (counters) and the replier (lateness).
struct Recorder {
    stats: RemoteStats,
    late: Histogram<u64>,
}

/// Shared between threads.
struct Shared {
    dev: File,
    clock: Clock,
    queue: Mutex<BinaryHeap<Pending>>,
    wake: Condvar,
    rec: Mutex<Recorder>,
    reader_done: AtomicBool,
    stop: AtomicBool,
}

impl Shared {
    fn count(&self, f: impl FnOnce(&mut RemoteStats)) {
        f(&mut self.rec.lock().unwrap().stats);
    }
}

/// Modification time and size: a file's version, as a client cache checks it.
type Version = (i128, u64);

fn version(m: &fs::Metadata) -> Version {
    (
        m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        m.size(),
    )
}

/// Copy `from` into `to` (a new file in the client cache, replacing whatever was there),
/// returning the bytes copied. `from` must be a regular file, opened without waiting (a FIFO
/// there would hold the server for ever).
fn copy_into(from: &Path, to: &Path) -> io::Result<u64> {
    let src = fsbench_base::input::open(from)?;
    let size = fsbench_base::input::regular_size(&src)?;
    let mut src = io::Read::take(src, size);
    fsbench_base::owned::path::remove_file(to)?;
    let mut dst = OpenOptions::new().write(true).create_new(true).open(to)?;
    io::copy(&mut src, &mut dst)
}

/// A whole file in the client cache.
struct Cached {
    path: PathBuf,
    size: u64,
    /// The server file's version the copy corresponds to.
    version: Version,
    last_used: u64,
    open: u32,
    dirty: bool,
}

/// An open file: the server file (block) or the cached copy (whole-file).
struct Handle {
    ino: u64,
    file: File,
    write: bool,
}

/// A directory listing taken at opendir.
struct DirHandle {
    ino: u64,
    entries: Vec<(u64, Vec<u8>, u32)>,
}

/// The client and the server of the model, owned by the reader thread.
struct Fs {
    shared: Arc<Shared>,
    root: PathBuf,
    /// The server tree, open: every change starts from it (see [`Fs::beneath`]).
    root_fd: std::os::fd::OwnedFd,
    net: Net,
    protocol: Protocol,
    writable: bool,
    cache_size: u64,
    cache_dir: PathBuf,
    link: Link,
    // Inodes: our numbers for paths relative to the root.
    inodes: HashMap<u64, PathBuf>,
    paths: HashMap<PathBuf, u64>,
    next_ino: u64,
    // The client's attribute cache: when a name / attributes / listing was fetched.
    names: HashMap<(u64, Vec<u8>), f64>,
    attrs: HashMap<u64, f64>,
    listings: HashMap<u64, f64>,
    // Open files and directories.
    files: HashMap<u64, Handle>,
    dirs: HashMap<u64, DirHandle>,
    next_fh: u64,
    // Whole-file cache.
    cached: HashMap<u64, Cached>,
    cached_bytes: u64,
    tick: u64,
    // Block cache: (ino, chunk) -> last use, and the LRU order.
    chunks: HashMap<(u64, u64), u64>,
    chunk_lru: BTreeMap<u64, (u64, u64)>,
    chunk_versions: HashMap<u64, Version>,
    // Server side: content hashes per (inode, mtime, size).
    hashes: HashMap<(u64, u64, Version), String>,
    // Lookaside index: (size, hash) -> local files.
    lookaside: HashMap<(u64, String), Vec<LookasideEntry>>,
    /// Draws for jitter and loss (seeded: a run's network is reproducible).
    rng: rand_pcg::Pcg64Mcg,
    /// Block protocol with lookaside: per file version, whether a lookaside tree holds it.
    block_lookaside: HashMap<u64, (Version, bool)>,
}

impl Fs {
    /// `rel`'s directory below the server tree, opened without following a link on the
    /// way, and `rel`'s last component. Changes go through these, never through a path
    /// string, so a directory in the tree that someone swapped for a link cannot redirect a
    /// change or a deletion out of the tree.
    fn beneath(&self, rel: &Path) -> io::Result<(std::os::fd::OwnedFd, std::ffi::CString)> {
        let name = rel
            .file_name()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        let dir = fsbench_base::beneath::open_dir_path(
            self.root_fd.as_raw_fd(),
            parent.as_os_str().as_bytes(),
        )?;
        Ok((dir, fsbench_base::beneath::component(name)?))
    }

    /// Open `rel` below the server tree with `flags`, never through a link or into a mount;
    /// for writing, only a file of the tree's own (no other links, the user's).
    fn open_beneath(&self, rel: &Path, flags: libc::c_int) -> io::Result<File> {
        let (dir, name) = self.beneath(rel)?;
        if !fsbench_base::owned::writes(flags) {
            return fsbench_base::beneath::open_file(dir.as_raw_fd(), &name, flags).map(File::from);
        }
        let how = fsbench_base::owned::how_for_flags(flags);
        let fd = fsbench_base::owned::open_write(dir.as_raw_fd(), &name, how, flags)?;
        if flags & libc::O_TRUNC != 0 {
            fsbench_base::owned::set_len(&fd, 0)?;
        }
        Ok(File::from(fd))
    }

    fn abs(&self, rel: &Path) -> PathBuf {
        self.root.join(rel)
    }

    fn path_of(&self, ino: u64) -> Result<PathBuf, i32> {
        self.inodes.get(&ino).cloned().ok_or(libc::ENOENT)
    }

    fn ino_for(&mut self, rel: &Path) -> u64 {
        if let Some(&i) = self.paths.get(rel) {
            return i;
        }
        let i = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(i, rel.to_path_buf());
        self.paths.insert(rel.to_path_buf(), i);
        i
    }

    /// One round trip starting at `t`.
    fn round_trip(&mut self, t: f64) -> f64 {
        self.shared.count(|s| s.round_trips += 1);
        t + self.rtt()
    }

    /// A round trip's duration as drawn: the RTT with its jitter, plus retransmission
    /// timeouts for lost requests (counted).
    fn rtt(&mut self) -> f64 {
        if self.net.jitter_s == 0.0 && self.net.loss == 0.0 {
            return self.net.rtt_s;
        }
        let rng = &mut self.rng;
        let (d, lost) = self.net.round_trip(|| rng.random::<f64>());
        if lost > 0 {
            self.shared.count(|s| s.lost_requests += lost as u64);
        }
        d
    }

    fn fresh(&self, at: Option<&f64>, now: f64) -> bool {
        at.is_some_and(|&t| now - t < ATTR_TTL)
    }

    /// Whole-file: a cached copy the server has not changed since (or with our
    /// unsent writes) keeps its attributes valid.
    fn cached_valid(&self, ino: u64, m: &fs::Metadata) -> bool {
        self.protocol == Protocol::WholeFile
            && self
                .cached
                .get(&ino)
                .is_some_and(|c| c.dirty || c.version == version(m))
    }

    fn attr_of(&self, ino: u64, m: &fs::Metadata) -> Attr {
        let size = match self.cached.get(&ino) {
            Some(c) if c.dirty => fs::metadata(&c.path).map(|x| x.len()).unwrap_or(c.size),
            _ => m.size(),
        };
        attr(ino, m, size)
    }

    fn attr_reply(&self, ino: u64, m: &fs::Metadata) -> Vec<u8> {
        let out = AttrOut {
            attr_valid: 0,
            attr: self.attr_of(ino, m),
            ..Default::default()
        };
        out.as_bytes().to_vec()
    }

    /// The client changed the server file itself: its caches stay valid.
    fn own_change(&mut self, ino: u64, m: &fs::Metadata) {
        if let Some(c) = self.cached.get_mut(&ino) {
            if !c.dirty {
                c.version = version(m);
            }
        }
        if self.chunk_versions.contains_key(&ino) {
            self.chunk_versions.insert(ino, version(m));
        }
    }

    fn new_fh(&mut self) -> u64 {
        self.next_fh += 1;
        self.next_fh
    }

    fn cache_bytes(&self) -> u64 {
        match self.protocol {
            Protocol::WholeFile => self.cached_bytes,
            Protocol::Block => self.chunks.len() as u64 * CHUNK,
        }
    }
}

fn h_meta(files: &HashMap<u64, Handle>, fh: u64) -> io::Result<fs::Metadata> {
    files
        .get(&fh)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))?
        .file
        .metadata()
}

impl Fs {
    /// The file system over the configured server tree, the client starting cold.
    fn new(
        shared: Arc<Shared>,
        cfg: &RemoteConfig,
        cache_dir: PathBuf,
        lookaside: HashMap<(u64, String), Vec<LookasideEntry>>,
    ) -> anyhow::Result<Fs> {
        let mut inodes = HashMap::new();
        let mut paths = HashMap::new();
        inodes.insert(ROOT_INO, PathBuf::new());
        paths.insert(PathBuf::new(), ROOT_INO);
        Ok(Fs {
            shared,
            root: cfg.server.clone(),
            root_fd: File::open(&cfg.server)
                .with_context(|| format!("opening the server tree {}", cfg.server.display()))?
                .into(),
            net: cfg.net,
            protocol: cfg.protocol,
            writable: cfg.writable,
            cache_size: cfg.cache_size,
            cache_dir,
            link: Link::default(),
            inodes,
            paths,
            next_ino: ROOT_INO + 1,
            names: HashMap::new(),
            attrs: HashMap::new(),
            listings: HashMap::new(),
            files: HashMap::new(),
            dirs: HashMap::new(),
            next_fh: 0,
            cached: HashMap::new(),
            cached_bytes: 0,
            tick: 0,
            chunks: HashMap::new(),
            chunk_lru: BTreeMap::new(),
            chunk_versions: HashMap::new(),
            hashes: HashMap::new(),
            lookaside,
            rng: rand::SeedableRng::seed_from_u64(cfg.seed),
            block_lookaside: HashMap::new(),
        })
    }
}

/// `fsbench remote serve NAME`: run the server in the foreground (`remote create`
/// starts it in the background).
pub fn serve(name: &str) -> anyhow::Result<()> {
    let sd = StateDir::new(name)?;
    let cfg: RemoteConfig = sd.read_config()?;
    let sigset = block_signals_with(&[libc::SIGUSR1]);
    std::env::set_current_dir("/").ok();
    if !cfg.server.is_dir() {
        anyhow::bail!("server tree {} is not a directory", cfg.server.display());
    }
    let lookaside = load_lookaside(&sd);
    // The client starts cold.
    let cache_dir = sd.cache();
    if cache_dir.exists() {
        fsbench_base::owned::path::remove_tree(&cache_dir).ok();
    }
    fs::create_dir_all(&cache_dir)?;
    sd.write_pid()?;
    let (dev, mount) = mount_own(&sd, &cfg)?;
    let shared = Arc::new(Shared {
        dev,
        clock: Clock(Instant::now()),
        queue: Mutex::new(BinaryHeap::new()),
        wake: Condvar::new(),
        rec: Mutex::new(Recorder {
            stats: RemoteStats::default(),
            late: us_histogram(),
        }),
        reader_done: AtomicBool::new(false),
        stop: AtomicBool::new(false),
    });
    let fsm = Arc::new(Mutex::new(Fs::new(
        shared.clone(),
        &cfg,
        cache_dir,
        lookaside,
    )?));
    let memory_locked = lock_memory();
    let scheduling = Arc::new(Mutex::new(String::new()));
    let sh = shared.clone();
    let stats_path = sd.stats();
    let (ml, sch) = (memory_locked.clone(), scheduling.clone());
    let replier_t = thread::Builder::new()
        .name("replier".into())
        .spawn(move || replier_thread(sh, stats_path, ml, sch))?;
    let sh = shared.clone();
    let fm = fsm.clone();
    let reader_t = thread::Builder::new()
        .name("fuse-reader".into())
        .spawn(move || reader_thread(sh, fm))?;
    write_json_atomic(
        &sd.ready(),
        &Ready {
            pid: std::process::id() as i32,
            mount: Some(mount.clone()),
        },
    )?;
    fsbench_base::errln!(
        "fsbench remote server {name}: {} served on {} ({}, {} protocol)",
        cfg.server.display(),
        cfg.mount.display(),
        super::model::describe_net(&cfg.net),
        cfg.protocol.name()
    );

    let sig = loop {
        if shared.reader_done.load(Ordering::SeqCst) {
            break None;
        }
        match wait_signal(&sigset, Duration::from_millis(500)) {
            Some(libc::SIGUSR1) => {
                let sched = scheduling.lock().unwrap().clone();
                if let Err(e) = control(&sd, &shared, &fsm, &sched, &memory_locked) {
                    fsbench_base::errln!("fsbench remote server {name}: control request: {e:#}");
                }
            }
            Some(s) => break Some(s),
            None => {}
        }
    };
    fsbench_base::errln!(
        "fsbench remote server {name}: stopping ({})",
        stop_reason(sig)
    );
    shut_down(&sd, &cfg, &mount, &shared, name);
    let _ = reader_t.join();
    shared.wake.notify_one();
    let _ = replier_t.join();
    sd.clear_running();
    fsbench_base::errln!("fsbench remote server {name}: stopped");
    Ok(())
}

/// Mount the FUSE file system at the configured point, with the record that identifies
/// this mount (only it is unmounted there later). On failure the pid file goes.
fn mount_own(sd: &StateDir, cfg: &RemoteConfig) -> anyhow::Result<(File, MountRecord)> {
    let dev = match mount_fuse(&cfg.mount, "fsbench-remote") {
        Ok(d) => d,
        Err(e) => {
            sd.clear_running();
            return Err(e);
        }
    };
    match MountRecord::capture(&cfg.mount, None) {
        Ok(m) => Ok((dev, m)),
        Err(e) => {
            let _ = umount(&cfg.mount, true);
            sd.clear_running();
            Err(e)
        }
    }
}

/// Send what is queued, unmount, and wait up to 10 s for the kernel to close the
/// connection; exit at once if it does not.
fn shut_down(sd: &StateDir, cfg: &RemoteConfig, mount: &MountRecord, shared: &Shared, name: &str) {
    // Queued replies go out now: an unmount waits for nothing, but a busy
    // mount's users should not wait for modelled time any more.
    shared.stop.store(true, Ordering::SeqCst);
    shared.wake.notify_one();
    // Only the mount this server made: after a hand-made unmount, whatever was mounted at
    // the same point since is someone else's.
    if let Err(e) = mount.unmount_even_busy() {
        fsbench_base::errln!("fsbench remote server: {e:#}");
    }
    if !connection_closed(&shared.reader_done, Duration::from_secs(10)) {
        fsbench_base::errln!(
            "fsbench remote server {name}: {} is still in use; exiting anyway, its users will see errors",
            cfg.mount.display()
        );
        sd.clear_running();
        std::process::exit(0);
    }
}
