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
use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::os::unix::io::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;
use hdrhistogram::Histogram;
use rand::Rng;

use crate::fuse::*;

use super::model::{Link, Net, ATTR_TTL, CHUNK};
use super::state::{self, LookasideEntry, Protocol, Ready, RemoteConfig, RemoteStats, StateDir};

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

/// What a request's reply is: its modelled due time (None: at once), error, payload.
struct Out {
    due: Option<f64>,
    error: i32,
    data: Vec<u8>,
}

impl Out {
    fn now(data: Vec<u8>) -> Out {
        Out {
            due: None,
            error: 0,
            data,
        }
    }
    fn err(errno: i32) -> Out {
        Out {
            due: None,
            error: errno,
            data: Vec::new(),
        }
    }
    fn at(due: Option<f64>, r: Result<Vec<u8>, i32>) -> Out {
        match r {
            Ok(data) => Out {
                due,
                error: 0,
                data,
            },
            Err(error) => Out {
                due,
                error,
                data: Vec::new(),
            },
        }
    }
}

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

fn attr_bytes(ino: u64, m: &fs::Metadata, size: u64) -> Vec<u8> {
    let mut a = Vec::with_capacity(88);
    a.extend_from_slice(&ino.to_le_bytes());
    a.extend_from_slice(&size.to_le_bytes());
    a.extend_from_slice(&size.div_ceil(512).max(m.blocks()).to_le_bytes());
    for t in [m.atime(), m.mtime(), m.ctime()] {
        a.extend_from_slice(&(t as u64).to_le_bytes());
    }
    for n in [m.atime_nsec(), m.mtime_nsec(), m.ctime_nsec()] {
        a.extend_from_slice(&(n as u32).to_le_bytes());
    }
    for v in [
        m.mode(),
        m.nlink() as u32,
        m.uid(),
        m.gid(),
        m.rdev() as u32,
        m.blksize() as u32,
        0,
    ] {
        a.extend_from_slice(&v.to_le_bytes());
    }
    debug_assert_eq!(a.len(), 88);
    a
}

fn entry_bytes(ino: u64, attr: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(&ino.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes()); // generation
    out.extend_from_slice(&0u64.to_le_bytes()); // entry_valid: the kernel caches nothing
    out.extend_from_slice(&0u64.to_le_bytes()); // attr_valid
    out.extend_from_slice(&[0u8; 8]);
    out.extend_from_slice(attr);
    out
}

fn open_bytes(fh: u64) -> Vec<u8> {
    let mut out = vec![0u8; 16];
    out[0..8].copy_from_slice(&fh.to_le_bytes());
    // Every read and write reaches the server: the client cache is modelled here.
    out[8..12].copy_from_slice(&FOPEN_DIRECT_IO.to_le_bytes());
    out
}

fn cname(b: &[u8]) -> &[u8] {
    b.split(|&c| c == 0).next().unwrap_or(&[])
}

fn valid_name(n: &[u8]) -> bool {
    !n.is_empty() && n != b"." && n != b".." && !n.contains(&b'/')
}

/// Hash a file's content (BLAKE3, hexadecimal).
pub fn hash_file(path: &Path) -> io::Result<String> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let (h, _) = crate::scan::hash::HashAlgo::Blake3.hash_reader(&mut f, &mut buf)?;
    Ok(crate::scan::hash::hex(&h))
}

/// Copy `from` into `to` (created or truncated), returning the bytes copied.
fn copy_into(from: &Path, to: &Path) -> io::Result<u64> {
    let mut src = File::open(from)?;
    let mut dst = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(to)?;
    io::copy(&mut src, &mut dst)
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
        let dir =
            crate::beneath::open_dir_path(self.root_fd.as_raw_fd(), parent.as_os_str().as_bytes())?;
        Ok((dir, crate::beneath::component(name)?))
    }

    /// Open `rel` below the server tree with `flags`, never through a link.
    fn open_beneath(&self, rel: &Path, flags: libc::c_int) -> io::Result<File> {
        let (dir, name) = self.beneath(rel)?;
        crate::beneath::open_file(dir.as_raw_fd(), &name, flags).map(File::from)
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

    fn attr_of(&self, ino: u64, m: &fs::Metadata) -> Vec<u8> {
        let size = match self.cached.get(&ino) {
            Some(c) if c.dirty => fs::metadata(&c.path).map(|x| x.len()).unwrap_or(c.size),
            _ => m.size(),
        };
        attr_bytes(ino, m, size)
    }

    fn lookup(&mut self, now: f64, parent: u64, name: &[u8]) -> Out {
        let Ok(prel) = self.path_of(parent) else {
            return Out::err(libc::ENOENT);
        };
        let rel = prel.join(OsStr::from_bytes(name));
        let md = fs::symlink_metadata(self.abs(&rel));
        let key = (parent, name.to_vec());
        let hit = match &md {
            Ok(m) => {
                let ino = self.paths.get(&rel).copied();
                self.fresh(self.names.get(&key), now)
                    || ino.is_some_and(|i| self.cached_valid(i, m))
            }
            Err(_) => false,
        };
        let due = if hit {
            self.shared.count(|s| s.attr_cache_hits += 1);
            None
        } else {
            Some(self.round_trip(now))
        };
        match md {
            Ok(m) => {
                let ino = self.ino_for(&rel);
                self.names.insert(key, now);
                self.attrs.insert(ino, now);
                let attr = self.attr_of(ino, &m);
                Out::at(due, Ok(entry_bytes(ino, &attr)))
            }
            Err(e) => Out::at(due, Err(errno(&e))),
        }
    }

    fn getattr(&mut self, now: f64, ino: u64) -> Out {
        let Ok(rel) = self.path_of(ino) else {
            return Out::err(libc::ENOENT);
        };
        let md = fs::symlink_metadata(self.abs(&rel));
        let hit = match &md {
            Ok(m) => self.fresh(self.attrs.get(&ino), now) || self.cached_valid(ino, m),
            Err(_) => false,
        };
        let due = if hit {
            self.shared.count(|s| s.attr_cache_hits += 1);
            None
        } else {
            Some(self.round_trip(now))
        };
        match md {
            Ok(m) => {
                self.attrs.insert(ino, now);
                Out::at(due, Ok(self.attr_reply(ino, &m)))
            }
            Err(e) => Out::at(due, Err(errno(&e))),
        }
    }

    fn attr_reply(&self, ino: u64, m: &fs::Metadata) -> Vec<u8> {
        let mut out = Vec::with_capacity(104);
        out.extend_from_slice(&0u64.to_le_bytes()); // attr_valid
        out.extend_from_slice(&[0u8; 8]);
        out.extend_from_slice(&self.attr_of(ino, m));
        out
    }

    fn setattr(&mut self, now: f64, ino: u64, body: &[u8]) -> Out {
        if !self.writable {
            return Out::err(libc::EROFS);
        }
        let Ok(rel) = self.path_of(ino) else {
            return Out::err(libc::ENOENT);
        };
        let due = Some(self.round_trip(now));
        let path = self.abs(&rel);
        let valid = u32_at(body, 0);
        let r = (|| -> io::Result<()> {
            let (dir, name) = self.beneath(&rel)?;
            if valid & FATTR_MODE != 0 {
                let mode = u32_at(body, 68) & 0o7777;
                File::from(crate::beneath::open_file(
                    dir.as_raw_fd(),
                    &name,
                    libc::O_RDONLY | libc::O_NONBLOCK,
                )?)
                .set_permissions(fs::Permissions::from_mode(mode))?;
            }
            if valid & (FATTR_UID | FATTR_GID) != 0 {
                let uid = if valid & FATTR_UID != 0 {
                    u32_at(body, 76)
                } else {
                    u32::MAX
                };
                let gid = if valid & FATTR_GID != 0 {
                    u32_at(body, 80)
                } else {
                    u32::MAX
                };
                // SAFETY: name is NUL-terminated; -1 (u32::MAX) leaves an id unchanged.
                let r = unsafe {
                    libc::fchownat(
                        dir.as_raw_fd(),
                        name.as_ptr(),
                        uid,
                        gid,
                        libc::AT_SYMLINK_NOFOLLOW,
                    )
                };
                if r != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if valid & FATTR_SIZE != 0 {
                let size = u64_at(body, 16);
                File::from(crate::beneath::open_file(
                    dir.as_raw_fd(),
                    &name,
                    libc::O_WRONLY,
                )?)
                .set_len(size)?;
                if let Some(c) = self.cached.get_mut(&ino) {
                    OpenOptions::new()
                        .write(true)
                        .open(&c.path)?
                        .set_len(size)?;
                    self.cached_bytes = self.cached_bytes - c.size + size;
                    c.size = size;
                }
            }
            if valid & (FATTR_ATIME | FATTR_MTIME | FATTR_ATIME_NOW | FATTR_MTIME_NOW) != 0 {
                let ts = |set: u32, now_bit: u32, sec: u64, nsec: u32| {
                    if valid & now_bit != 0 {
                        libc::timespec {
                            tv_sec: 0,
                            tv_nsec: libc::UTIME_NOW,
                        }
                    } else if valid & set != 0 {
                        libc::timespec {
                            tv_sec: sec as libc::time_t,
                            tv_nsec: nsec as libc::c_long,
                        }
                    } else {
                        libc::timespec {
                            tv_sec: 0,
                            tv_nsec: libc::UTIME_OMIT,
                        }
                    }
                };
                let times = [
                    ts(
                        FATTR_ATIME,
                        FATTR_ATIME_NOW,
                        u64_at(body, 32),
                        u32_at(body, 56),
                    ),
                    ts(
                        FATTR_MTIME,
                        FATTR_MTIME_NOW,
                        u64_at(body, 40),
                        u32_at(body, 60),
                    ),
                ];
                // SAFETY: valid C string and a two-element timespec array.
                let r = unsafe {
                    libc::utimensat(
                        dir.as_raw_fd(),
                        name.as_ptr(),
                        times.as_ptr(),
                        libc::AT_SYMLINK_NOFOLLOW,
                    )
                };
                if r != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        })();
        if let Err(e) = r {
            return Out::at(due, Err(errno(&e)));
        }
        match fs::symlink_metadata(&path) {
            Ok(m) => {
                self.own_change(ino, &m);
                self.attrs.insert(ino, now);
                Out::at(due, Ok(self.attr_reply(ino, &m)))
            }
            Err(e) => Out::at(due, Err(errno(&e))),
        }
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

    fn open(&mut self, now: f64, ino: u64, flags: u32) -> Out {
        let write = (flags as i32 & libc::O_ACCMODE) != libc::O_RDONLY;
        if write && !self.writable {
            return Out::err(libc::EROFS);
        }
        let Ok(rel) = self.path_of(ino) else {
            return Out::err(libc::ENOENT);
        };
        let path = self.abs(&rel);
        let m = match fs::metadata(&path) {
            Ok(m) => m,
            Err(e) => return Out::at(Some(self.round_trip(now)), Err(errno(&e))),
        };
        if !m.is_file() {
            return Out::at(Some(self.round_trip(now)), Err(libc::EISDIR));
        }
        match self.protocol {
            Protocol::Block => {
                let due = Some(self.round_trip(now));
                let v = version(&m);
                if self.chunk_versions.get(&ino) != Some(&v) {
                    self.drop_chunks(ino);
                    self.chunk_versions.insert(ino, v);
                }
                self.attrs.insert(ino, now);
                let mode = if write { libc::O_RDWR } else { libc::O_RDONLY };
                let file = match self.open_beneath(&rel, mode) {
                    Ok(f) => f,
                    Err(e) => return Out::at(due, Err(errno(&e))),
                };
                let fh = self.new_fh();
                self.files.insert(fh, Handle { ino, file, write });
                Out::at(due, Ok(open_bytes(fh)))
            }
            Protocol::WholeFile => {
                let (due, r) = self.whole_file_fetch(now, ino, &path, &m);
                if let Err(e) = r {
                    return Out::at(due, Err(e));
                }
                let c = self.cached.get_mut(&ino).expect("just cached");
                let file = match OpenOptions::new().read(true).write(write).open(&c.path) {
                    Ok(f) => f,
                    Err(e) => return Out::at(due, Err(errno(&e))),
                };
                c.open += 1;
                let fh = self.new_fh();
                self.files.insert(fh, Handle { ino, file, write });
                self.evict_files();
                Out::at(due, Ok(open_bytes(fh)))
            }
        }
    }

    /// Make sure the client cache holds a valid copy of `ino`: a hit costs nothing;
    /// otherwise the file comes from a lookaside tree (one round trip to ask the
    /// server for its hash) or over the network (round trip + size / bandwidth).
    fn whole_file_fetch(
        &mut self,
        now: f64,
        ino: u64,
        path: &Path,
        m: &fs::Metadata,
    ) -> (Option<f64>, Result<(), i32>) {
        self.tick += 1;
        let tick = self.tick;
        if self.cached_valid(ino, m) {
            let c = self.cached.get_mut(&ino).expect("valid entry");
            c.last_used = tick;
            self.shared.count(|s| s.file_cache_hits += 1);
            return (None, Ok(()));
        }
        self.shared.count(|s| s.file_cache_misses += 1);
        if let Some(old) = self.cached.remove(&ino) {
            self.cached_bytes -= old.size;
        }
        let size = m.size();
        let dst = self.cache_dir.join(ino.to_string());
        let mut t = now;
        let mut from_lookaside = false;
        if !self.lookaside.is_empty() {
            // Ask the server for the file's hash.
            t = self.round_trip(t);
            if let Some(hash) = self.server_hash(path, m) {
                if let Some(bytes) = self.copy_from_lookaside(size, &hash, &dst) {
                    from_lookaside = true;
                    self.shared.count(|s| {
                        s.lookaside_hits += 1;
                        s.lookaside_bytes += bytes;
                    });
                }
            }
            if !from_lookaside {
                self.shared.count(|s| s.lookaside_misses += 1);
            }
        }
        if !from_lookaside {
            t = {
                let rtt = self.rtt();
                self.link.data_request(&self.net, t, size, rtt)
            };
            self.shared.count(|s| {
                s.round_trips += 1;
                s.bytes_fetched += size;
            });
            if let Err(e) = copy_into(path, &dst) {
                return (Some(t), Err(errno(&e)));
            }
        }
        self.cached.insert(
            ino,
            Cached {
                path: dst,
                size,
                version: version(m),
                last_used: tick,
                open: 0,
                dirty: false,
            },
        );
        self.cached_bytes += size;
        self.attrs.insert(ino, now);
        (Some(t), Ok(()))
    }

    /// The server's hash of a file, computed once per (inode, mtime, size).
    fn server_hash(&mut self, path: &Path, m: &fs::Metadata) -> Option<String> {
        let key = (m.dev(), m.ino(), version(m));
        if let Some(h) = self.hashes.get(&key) {
            return Some(h.clone());
        }
        let h = hash_file(path).ok()?;
        self.hashes.insert(key, h.clone());
        Some(h)
    }

    /// Whether a lookaside file with this size and hash is still as it was indexed.
    fn lookaside_has(&self, size: u64, hash: &str) -> bool {
        self.lookaside
            .get(&(size, hash.to_string()))
            .is_some_and(|cands| {
                cands.iter().any(|e| {
                    fs::metadata(&e.path)
                        .is_ok_and(|m| m.size() == e.size && version(&m).0 == e.mtime_ns)
                })
            })
    }

    /// Block protocol: does a lookaside tree hold this version of the file? Asked of
    /// the server once per version (one round trip for the hash, from `t`).
    fn block_lookaside_hit(&mut self, t: &mut f64, ino: u64, m: &fs::Metadata) -> bool {
        if self.lookaside.is_empty() {
            return false;
        }
        let v = version(m);
        if let Some(&(ver, hit)) = self.block_lookaside.get(&ino) {
            if ver == v {
                return hit;
            }
        }
        *t = self.round_trip(*t);
        let hit = match self.path_of(ino) {
            Ok(rel) => {
                let p = self.abs(&rel);
                self.server_hash(&p, m)
                    .is_some_and(|h| self.lookaside_has(m.size(), &h))
            }
            Err(_) => false,
        };
        self.shared.count(|s| {
            if hit {
                s.lookaside_hits += 1
            } else {
                s.lookaside_misses += 1
            }
        });
        self.block_lookaside.insert(ino, (v, hit));
        hit
    }

    /// Copy a lookaside file with this size and hash into `dst`, if one is still
    /// as it was indexed; the bytes copied.
    fn copy_from_lookaside(&self, size: u64, hash: &str, dst: &Path) -> Option<u64> {
        let cands = self.lookaside.get(&(size, hash.to_string()))?;
        for e in cands {
            let Ok(m) = fs::metadata(&e.path) else {
                continue;
            };
            if m.size() != e.size || version(&m).0 != e.mtime_ns {
                continue;
            }
            if let Ok(n) = copy_into(&e.path, dst) {
                if n == size {
                    return Some(n);
                }
            }
        }
        None
    }

    fn evict_files(&mut self) {
        while self.cached_bytes > self.cache_size {
            let victim = self
                .cached
                .iter()
                .filter(|(_, c)| c.open == 0 && !c.dirty)
                .min_by_key(|(_, c)| c.last_used)
                .map(|(&i, _)| i);
            let Some(ino) = victim else { break };
            let c = self.cached.remove(&ino).expect("victim exists");
            let _ = fs::remove_file(&c.path);
            self.cached_bytes -= c.size;
            self.shared.count(|s| s.cache_evictions += 1);
        }
    }

    /// Empty the client's caches, as a client whose machine restarted: every cached file
    /// not open or waiting to be sent back, every chunk, every name, attribute and listing.
    fn drop_client_cache(&mut self) {
        self.names.clear();
        self.attrs.clear();
        self.listings.clear();
        let victims: Vec<u64> = self
            .cached
            .iter()
            .filter(|(_, c)| c.open == 0 && !c.dirty)
            .map(|(&i, _)| i)
            .collect();
        for ino in victims {
            let c = self.cached.remove(&ino).expect("victim exists");
            let _ = fs::remove_file(&c.path);
            self.cached_bytes -= c.size;
        }
        self.chunks.clear();
        self.chunk_lru.clear();
        self.chunk_versions.clear();
        self.block_lookaside.clear();
    }

    fn drop_chunks(&mut self, ino: u64) {
        let keys: Vec<(u64, u64)> = self
            .chunks
            .keys()
            .filter(|(i, _)| *i == ino)
            .copied()
            .collect();
        for k in keys {
            if let Some(t) = self.chunks.remove(&k) {
                self.chunk_lru.remove(&t);
            }
        }
    }

    /// Is the chunk cached? Marks it used (and cached) either way.
    fn touch_chunk(&mut self, key: (u64, u64)) -> bool {
        self.tick += 1;
        let hit = match self.chunks.insert(key, self.tick) {
            Some(old) => {
                self.chunk_lru.remove(&old);
                true
            }
            None => false,
        };
        self.chunk_lru.insert(self.tick, key);
        while self.chunks.len() as u64 * CHUNK > self.cache_size {
            let Some((_, k)) = self.chunk_lru.pop_first() else {
                break;
            };
            self.chunks.remove(&k);
            self.shared.count(|s| s.cache_evictions += 1);
        }
        hit
    }

    fn read(&mut self, now: f64, fh: u64, off: u64, size: u32) -> Out {
        let Some(h) = self.files.get(&fh) else {
            return Out::err(libc::EBADF);
        };
        let ino = h.ino;
        let meta = match h.file.metadata() {
            Ok(m) => m,
            Err(e) => return Out::err(errno(&e)),
        };
        let len = meta.len();
        let n = (size as u64).min(len.saturating_sub(off)) as usize;
        let mut buf = vec![0u8; n];
        let got = match read_full_at(&h.file, &mut buf, off) {
            Ok(g) => g,
            Err(e) => return Out::err(errno(&e)),
        };
        buf.truncate(got);
        match self.protocol {
            Protocol::WholeFile => {
                self.tick += 1;
                let tick = self.tick;
                if let Some(c) = self.cached.get_mut(&ino) {
                    c.last_used = tick;
                }
                Out::now(buf)
            }
            Protocol::Block => {
                let mut t = now;
                let mut waited = false;
                if got > 0 {
                    for chunk in off / CHUNK..=(off + got as u64 - 1) / CHUNK {
                        if self.touch_chunk((ino, chunk)) {
                            self.shared.count(|s| s.chunk_cache_hits += 1);
                        } else if self.block_lookaside_hit(&mut t, ino, &meta) {
                            // The chunk is read from the local copy: nothing crosses the link.
                            let bytes = CHUNK.min(len - chunk * CHUNK);
                            waited |= t > now;
                            self.shared.count(|s| {
                                s.chunk_cache_misses += 1;
                                s.lookaside_bytes += bytes;
                            });
                        } else {
                            let bytes = CHUNK.min(len - chunk * CHUNK);
                            t = {
                                let rtt = self.rtt();
                                self.link.data_request(&self.net, t, bytes, rtt)
                            };
                            waited = true;
                            self.shared.count(|s| {
                                s.chunk_cache_misses += 1;
                                s.round_trips += 1;
                                s.bytes_fetched += bytes;
                            });
                        }
                    }
                }
                Out::at(waited.then_some(t), Ok(buf))
            }
        }
    }

    fn write(&mut self, now: f64, fh: u64, off: u64, data: &[u8]) -> Out {
        let Some(h) = self.files.get(&fh) else {
            return Out::err(libc::EBADF);
        };
        if !h.write {
            return Out::err(libc::EBADF);
        }
        let ino = h.ino;
        if let Err(e) = h.file.write_all_at(data, off) {
            return Out::err(errno(&e));
        }
        let mut out = vec![0u8; 8];
        out[0..4].copy_from_slice(&(data.len() as u32).to_le_bytes());
        match self.protocol {
            Protocol::WholeFile => {
                let size = h.file.metadata().map(|m| m.len()).unwrap_or(0);
                self.tick += 1;
                let tick = self.tick;
                if let Some(c) = self.cached.get_mut(&ino) {
                    c.dirty = true;
                    c.last_used = tick;
                    self.cached_bytes = self.cached_bytes - c.size + size;
                    c.size = size;
                }
                Out::now(out)
            }
            Protocol::Block => {
                // Write-through, one request per chunk touched.
                let mut t = now;
                let end = off + data.len() as u64;
                let mut pos = off;
                while pos < end {
                    let chunk = pos / CHUNK;
                    let stop = ((chunk + 1) * CHUNK).min(end);
                    t = {
                        let rtt = self.rtt();
                        self.link.data_request(&self.net, t, stop - pos, rtt)
                    };
                    let bytes = stop - pos;
                    self.shared.count(|s| {
                        s.round_trips += 1;
                        s.bytes_sent += bytes;
                    });
                    self.touch_chunk((ino, chunk));
                    pos = stop;
                }
                if let Ok(m) = h_meta(&self.files, fh) {
                    self.own_change(ino, &m);
                }
                Out::at(Some(t), Ok(out))
            }
        }
    }

    /// Whole-file: send a written copy back whole (round trip + size / bandwidth).
    fn store_back(&mut self, now: f64, ino: u64) -> Result<Option<f64>, i32> {
        let Some(c) = self.cached.get(&ino) else {
            return Ok(None);
        };
        if !c.dirty {
            return Ok(None);
        }
        let rel = self.path_of(ino)?;
        let path = self.abs(&rel);
        let size = fs::metadata(&c.path).map(|m| m.len()).unwrap_or(c.size);
        let cache_path = c.path.clone();
        let t = {
            let rtt = self.rtt();
            self.link.data_request(&self.net, now, size, rtt)
        };
        self.shared.count(|s| {
            s.round_trips += 1;
            s.bytes_sent += size;
        });
        // In place, so the server file keeps its inode.
        let r = (|| -> io::Result<()> {
            let mut src = File::open(&cache_path)?;
            let mut dst = self.open_beneath(&rel, libc::O_WRONLY)?;
            io::copy(&mut src, &mut dst)?;
            dst.set_len(size)?;
            Ok(())
        })();
        if let Err(e) = r {
            return Err(errno(&e));
        }
        let v = fs::metadata(&path).map(|m| version(&m)).ok();
        let c = self.cached.get_mut(&ino).expect("checked");
        c.dirty = false;
        if let Some(v) = v {
            c.version = v;
        }
        self.attrs.insert(ino, now);
        Ok(Some(t))
    }

    fn flush_or_fsync(&mut self, now: f64, fh: u64, fsync: bool) -> Out {
        let Some(h) = self.files.get(&fh) else {
            return Out::err(libc::EBADF);
        };
        let ino = h.ino;
        match self.protocol {
            Protocol::WholeFile => match self.store_back(now, ino) {
                Ok(due) => Out::at(due, Ok(Vec::new())),
                Err(e) => Out::err(e),
            },
            Protocol::Block if fsync => {
                // A commit: one round trip.
                let due = Some(self.round_trip(now));
                let r = self.files[&fh].file.sync_data();
                Out::at(due, r.map(|_| Vec::new()).map_err(|e| errno(&e)))
            }
            Protocol::Block => Out::now(Vec::new()),
        }
    }

    fn release(&mut self, now: f64, fh: u64) -> Out {
        let Some(h) = self.files.remove(&fh) else {
            return Out::now(Vec::new());
        };
        let mut due = None;
        if self.protocol == Protocol::WholeFile {
            due = self.store_back(now, h.ino).unwrap_or(None);
            if let Some(c) = self.cached.get_mut(&h.ino) {
                c.open = c.open.saturating_sub(1);
            }
            self.evict_files();
        }
        Out::at(due, Ok(Vec::new()))
    }

    fn create(&mut self, now: f64, parent: u64, body: &[u8]) -> Out {
        if !self.writable {
            return Out::err(libc::EROFS);
        }
        let flags = u32_at(body, 0) as i32;
        let mode = u32_at(body, 4);
        let umask = u32_at(body, 8);
        let name = cname(&body[16.min(body.len())..]);
        if !valid_name(name) {
            return Out::err(libc::EINVAL);
        }
        let Ok(prel) = self.path_of(parent) else {
            return Out::err(libc::ENOENT);
        };
        let due = Some(self.round_trip(now));
        let rel = prel.join(OsStr::from_bytes(name));
        let path = self.abs(&rel);
        let created = self.beneath(&rel).and_then(|(dir, name)| {
            // SAFETY: name is NUL-terminated; the descriptor is owned by the File below.
            let fd = unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_RDWR
                        | libc::O_CREAT
                        | libc::O_NOFOLLOW
                        | libc::O_CLOEXEC
                        | (flags & (libc::O_EXCL | libc::O_TRUNC)),
                    (mode & !umask & 0o7777) as libc::c_uint,
                )
            };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a fresh descriptor from the kernel.
            Ok(unsafe { File::from_raw_fd(fd) })
        });
        let file = match created {
            Ok(f) => f,
            Err(e) => return Out::at(due, Err(errno(&e))),
        };
        let m = match file.metadata() {
            Ok(m) => m,
            Err(e) => return Out::at(due, Err(errno(&e))),
        };
        let ino = self.ino_for(&rel);
        self.names.insert((parent, name.to_vec()), now);
        self.attrs.insert(ino, now);
        let handle_file = match self.protocol {
            Protocol::Block => {
                self.drop_chunks(ino);
                self.chunk_versions.insert(ino, version(&m));
                file
            }
            Protocol::WholeFile => {
                // The new (or truncated) file's copy is made locally: nothing to fetch.
                if m.size() > 0 {
                    let (_, r) = self.whole_file_fetch(now, ino, &path, &m);
                    if let Err(e) = r {
                        return Out::at(due, Err(e));
                    }
                } else {
                    if let Some(old) = self.cached.remove(&ino) {
                        self.cached_bytes -= old.size;
                    }
                    let dst = self.cache_dir.join(ino.to_string());
                    if let Err(e) = File::create(&dst) {
                        return Out::at(due, Err(errno(&e)));
                    }
                    self.tick += 1;
                    self.cached.insert(
                        ino,
                        Cached {
                            path: dst,
                            size: 0,
                            version: version(&m),
                            last_used: self.tick,
                            open: 0,
                            dirty: false,
                        },
                    );
                }
                let c = self.cached.get_mut(&ino).expect("cached");
                c.open += 1;
                match OpenOptions::new().read(true).write(true).open(&c.path) {
                    Ok(f) => f,
                    Err(e) => return Out::at(due, Err(errno(&e))),
                }
            }
        };
        let fh = self.new_fh();
        self.files.insert(
            fh,
            Handle {
                ino,
                file: handle_file,
                write: true,
            },
        );
        let attr = self.attr_of(ino, &m);
        let mut out = entry_bytes(ino, &attr);
        out.extend_from_slice(&open_bytes(fh));
        Out::at(due, Ok(out))
    }

    fn mkdir(&mut self, now: f64, parent: u64, body: &[u8]) -> Out {
        if !self.writable {
            return Out::err(libc::EROFS);
        }
        let mode = u32_at(body, 0);
        let umask = u32_at(body, 4);
        let name = cname(&body[8.min(body.len())..]);
        if !valid_name(name) {
            return Out::err(libc::EINVAL);
        }
        let Ok(prel) = self.path_of(parent) else {
            return Out::err(libc::ENOENT);
        };
        let due = Some(self.round_trip(now));
        let rel = prel.join(OsStr::from_bytes(name));
        let path = self.abs(&rel);
        let r = self.beneath(&rel).and_then(|(dir, name)| {
            let mode = mode & !umask & 0o7777;
            crate::beneath::mkdir_at(dir.as_raw_fd(), &name, mode)?;
            // The process umask applied too: set exactly what the client asked for.
            File::from(crate::beneath::open_dir(dir.as_raw_fd(), &name)?)
                .set_permissions(fs::Permissions::from_mode(mode))
        });
        if let Err(e) = r {
            return Out::at(due, Err(errno(&e)));
        }
        match fs::symlink_metadata(&path) {
            Ok(m) => {
                let ino = self.ino_for(&rel);
                self.names.insert((parent, name.to_vec()), now);
                self.attrs.insert(ino, now);
                let attr = self.attr_of(ino, &m);
                Out::at(due, Ok(entry_bytes(ino, &attr)))
            }
            Err(e) => Out::at(due, Err(errno(&e))),
        }
    }

    /// Forget a path (and what is below it) from the inode table and caches.
    fn forget_path(&mut self, rel: &Path) {
        let gone: Vec<(PathBuf, u64)> = self
            .paths
            .iter()
            .filter(|(p, _)| p.starts_with(rel))
            .map(|(p, &i)| (p.clone(), i))
            .collect();
        for (p, i) in gone {
            self.paths.remove(&p);
            self.inodes.remove(&i);
            self.attrs.remove(&i);
            if let Some(c) = self.cached.remove(&i) {
                let _ = fs::remove_file(&c.path);
                self.cached_bytes -= c.size;
            }
            self.drop_chunks(i);
            self.chunk_versions.remove(&i);
        }
    }

    fn remove(&mut self, now: f64, parent: u64, name: &[u8], dir: bool) -> Out {
        if !self.writable {
            return Out::err(libc::EROFS);
        }
        let Ok(prel) = self.path_of(parent) else {
            return Out::err(libc::ENOENT);
        };
        let due = Some(self.round_trip(now));
        let rel = prel.join(OsStr::from_bytes(name));
        let r = self.beneath(&rel).and_then(|(d, n)| {
            crate::beneath::unlink_at(d.as_raw_fd(), &n, if dir { libc::AT_REMOVEDIR } else { 0 })
        });
        if let Err(e) = r {
            return Out::at(due, Err(errno(&e)));
        }
        self.names.remove(&(parent, name.to_vec()));
        // Open handles keep the inode number (the kernel may still read it).
        if !self
            .files
            .values()
            .any(|h| Some(&h.ino) == self.paths.get(&rel))
        {
            self.forget_path(&rel);
        }
        Out::at(due, Ok(Vec::new()))
    }

    fn rename(&mut self, now: f64, parent: u64, body: &[u8], v2: bool) -> Out {
        if !self.writable {
            return Out::err(libc::EROFS);
        }
        let newdir = u64_at(body, 0);
        let (flags, names) = if v2 {
            (u32_at(body, 8), &body[16.min(body.len())..])
        } else {
            (0, &body[8.min(body.len())..])
        };
        if flags != 0 {
            return Out::err(libc::EINVAL);
        }
        let mut parts = names.split(|&c| c == 0);
        let old = parts.next().unwrap_or(&[]).to_vec();
        let new = parts.next().unwrap_or(&[]).to_vec();
        if !valid_name(&old) || !valid_name(&new) {
            return Out::err(libc::EINVAL);
        }
        let (Ok(op), Ok(np)) = (self.path_of(parent), self.path_of(newdir)) else {
            return Out::err(libc::ENOENT);
        };
        let due = Some(self.round_trip(now));
        let orel = op.join(OsStr::from_bytes(&old));
        let nrel = np.join(OsStr::from_bytes(&new));
        let r = self.beneath(&orel).and_then(|(od, on)| {
            let (nd, nn) = self.beneath(&nrel)?;
            // SAFETY: both names are NUL-terminated.
            let r =
                unsafe { libc::renameat(od.as_raw_fd(), on.as_ptr(), nd.as_raw_fd(), nn.as_ptr()) };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
        if let Err(e) = r {
            return Out::at(due, Err(errno(&e)));
        }
        // The target (if any) is gone; what was at the old path moves.
        if self.paths.contains_key(&nrel) {
            self.forget_path(&nrel);
        }
        let moved: Vec<(PathBuf, u64)> = self
            .paths
            .iter()
            .filter(|(p, _)| p.starts_with(&orel))
            .map(|(p, &i)| (p.clone(), i))
            .collect();
        for (p, i) in moved {
            let rest = p.strip_prefix(&orel).expect("prefix");
            // Joining an empty path would add a trailing slash.
            let np = if rest.as_os_str().is_empty() {
                nrel.clone()
            } else {
                nrel.join(rest)
            };
            self.paths.remove(&p);
            self.paths.insert(np.clone(), i);
            self.inodes.insert(i, np);
        }
        self.names.remove(&(parent, old));
        self.names.remove(&(newdir, new));
        Out::at(due, Ok(Vec::new()))
    }

    fn readlink(&mut self, now: f64, ino: u64) -> Out {
        let Ok(rel) = self.path_of(ino) else {
            return Out::err(libc::ENOENT);
        };
        let due = Some(self.round_trip(now));
        let r = fs::read_link(self.abs(&rel))
            .map(|t| t.as_os_str().as_bytes().to_vec())
            .map_err(|e| errno(&e));
        Out::at(due, r)
    }

    fn opendir(&mut self, ino: u64) -> Out {
        let Ok(rel) = self.path_of(ino) else {
            return Out::err(libc::ENOENT);
        };
        let rd = match fs::read_dir(self.abs(&rel)) {
            Ok(rd) => rd,
            Err(e) => return Out::err(errno(&e)),
        };
        let parent = rel.parent().map(|p| self.ino_for(p)).unwrap_or(ROOT_INO);
        let mut entries = vec![
            (ino, b".".to_vec(), libc::DT_DIR as u32),
            (parent, b"..".to_vec(), libc::DT_DIR as u32),
        ];
        for e in rd.flatten() {
            let name = e.file_name();
            let typ = match e.file_type() {
                Ok(t) if t.is_dir() => libc::DT_DIR,
                Ok(t) if t.is_symlink() => libc::DT_LNK,
                Ok(t) if t.is_file() => libc::DT_REG,
                _ => libc::DT_UNKNOWN,
            } as u32;
            let child = self.ino_for(&rel.join(&name));
            entries.push((child, name.as_bytes().to_vec(), typ));
        }
        let fh = self.new_fh();
        self.dirs.insert(fh, DirHandle { ino, entries });
        let mut out = vec![0u8; 16];
        out[0..8].copy_from_slice(&fh.to_le_bytes());
        Out::now(out)
    }

    /// The listing costs one round trip, charged to the first READDIR of an
    /// opendir unless the client fetched the listing less than ATTR_TTL ago.
    fn readdir(&mut self, now: f64, fh: u64, offset: u64, size: usize) -> Out {
        let Some(d) = self.dirs.get(&fh) else {
            return Out::err(libc::EBADF);
        };
        let dino = d.ino;
        let mut out = Vec::new();
        for (i, (ino, name, typ)) in d.entries.iter().enumerate().skip(offset as usize) {
            let rec = (24 + name.len()).div_ceil(8) * 8;
            if out.len() + rec > size {
                break;
            }
            out.extend_from_slice(&ino.to_le_bytes());
            out.extend_from_slice(&(i as u64 + 1).to_le_bytes());
            out.extend_from_slice(&(name.len() as u32).to_le_bytes());
            out.extend_from_slice(&typ.to_le_bytes());
            out.extend_from_slice(name);
            out.resize(out.len() + rec - 24 - name.len(), 0);
        }
        let due = if offset == 0 && !self.fresh(self.listings.get(&dino), now) {
            self.listings.insert(dino, now);
            Some(self.round_trip(now))
        } else {
            if offset == 0 {
                self.shared.count(|s| s.attr_cache_hits += 1);
            }
            None
        };
        Out::at(due, Ok(out))
    }

    fn statfs(&self) -> Out {
        let c = match cstr(&self.root) {
            Ok(c) => c,
            Err(_) => return Out::err(libc::EINVAL),
        };
        // SAFETY: zeroed statvfs is a valid out-parameter; c is a valid C string.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            return Out::err(errno(&io::Error::last_os_error()));
        }
        let mut out = Vec::with_capacity(80);
        for v in [st.f_blocks, st.f_bfree, st.f_bavail, st.f_files, st.f_ffree] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [st.f_bsize as u32, st.f_namemax as u32, st.f_frsize as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&[0u8; 28]);
        Out::now(out)
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

fn opcode_name(op: u32) -> &'static str {
    match op {
        FUSE_LOOKUP => "lookup",
        FUSE_GETATTR => "getattr",
        FUSE_SETATTR => "setattr",
        FUSE_READLINK => "readlink",
        FUSE_MKDIR => "mkdir",
        FUSE_UNLINK => "unlink",
        FUSE_RMDIR => "rmdir",
        FUSE_RENAME | FUSE_RENAME2 => "rename",
        FUSE_OPEN => "open",
        FUSE_READ => "read",
        FUSE_WRITE => "write",
        FUSE_STATFS => "statfs",
        FUSE_RELEASE => "release",
        FUSE_FSYNC => "fsync",
        FUSE_FLUSH => "flush",
        FUSE_OPENDIR => "opendir",
        FUSE_READDIR => "readdir",
        FUSE_RELEASEDIR => "releasedir",
        FUSE_CREATE => "create",
        FUSE_ACCESS => "access",
        FUSE_FORGET | FUSE_BATCH_FORGET => "forget",
        FUSE_INIT => "init",
        _ => "other",
    }
}

fn reader_thread(shared: Arc<Shared>, fsm: Arc<Mutex<Fs>>) {
    let _ = realtime(RT_PRIORITY);
    let mut buf = vec![0u8; MAX_WRITE as usize + 64 * 1024];
    let dev = &shared.dev;
    let mut seq = 0u64;
    while let Some(n) = next_request(&shared.dev, &mut buf, "remote server") {
        let arrival = shared.clock.now();
        let msg = &buf[..n];
        let opcode = u32_at(msg, 4);
        let unique = u64_at(msg, 8);
        let nodeid = u64_at(msg, 16);
        let body = &msg[IN_HEADER..];
        shared.count(|s| {
            s.requests += 1;
            *s.requests_by_type
                .entry(opcode_name(opcode).to_string())
                .or_insert(0) += 1;
        });
        let now = arrival;
        let mut fs_ = fsm.lock().unwrap();
        let out = match opcode {
            FUSE_INIT => {
                reply_init(
                    dev,
                    unique,
                    body,
                    FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_MAX_PAGES,
                );
                continue;
            }
            FUSE_LOOKUP => fs_.lookup(now, nodeid, cname(body)),
            FUSE_GETATTR => fs_.getattr(now, nodeid),
            FUSE_SETATTR => fs_.setattr(now, nodeid, body),
            FUSE_READLINK => fs_.readlink(now, nodeid),
            FUSE_OPEN => fs_.open(now, nodeid, u32_at(body, 0)),
            FUSE_READ => fs_.read(now, u64_at(body, 0), u64_at(body, 8), u32_at(body, 16)),
            FUSE_WRITE => {
                let len = u32_at(body, 16) as usize;
                match body.get(40..40 + len) {
                    Some(data) => fs_.write(now, u64_at(body, 0), u64_at(body, 8), data),
                    None => Out::err(libc::EINVAL),
                }
            }
            FUSE_FLUSH => fs_.flush_or_fsync(now, u64_at(body, 0), false),
            FUSE_FSYNC => fs_.flush_or_fsync(now, u64_at(body, 0), true),
            FUSE_RELEASE => fs_.release(now, u64_at(body, 0)),
            FUSE_CREATE => fs_.create(now, nodeid, body),
            FUSE_MKDIR => fs_.mkdir(now, nodeid, body),
            FUSE_UNLINK => fs_.remove(now, nodeid, cname(body), false),
            FUSE_RMDIR => fs_.remove(now, nodeid, cname(body), true),
            FUSE_RENAME => fs_.rename(now, nodeid, body, false),
            FUSE_RENAME2 => fs_.rename(now, nodeid, body, true),
            FUSE_OPENDIR => fs_.opendir(nodeid),
            FUSE_READDIR => fs_.readdir(
                now,
                u64_at(body, 0),
                u64_at(body, 8),
                u32_at(body, 16) as usize,
            ),
            FUSE_RELEASEDIR => {
                fs_.dirs.remove(&u64_at(body, 0));
                Out::now(Vec::new())
            }
            FUSE_FSYNCDIR | FUSE_ACCESS => Out::now(Vec::new()),
            FUSE_STATFS => fs_.statfs(),
            FUSE_MKNOD | FUSE_SYMLINK | FUSE_LINK | FUSE_SETXATTR | FUSE_REMOVEXATTR => {
                Out::err(if fs_.writable {
                    libc::EPERM
                } else {
                    libc::EROFS
                })
            }
            FUSE_FORGET | FUSE_BATCH_FORGET | FUSE_INTERRUPT => continue, // no reply
            FUSE_DESTROY => {
                reply(dev, unique, 0, &[]);
                break;
            }
            _ => Out::err(libc::ENOSYS),
        };
        let cache_bytes = fs_.cache_bytes();
        drop(fs_);
        shared.count(|s| s.cache_bytes = cache_bytes);
        match out.due {
            Some(due) if due > shared.clock.now() => {
                seq += 1;
                shared.queue.lock().unwrap().push(Pending {
                    due,
                    arrival,
                    seq,
                    unique,
                    error: out.error,
                    data: out.data,
                });
                shared.wake.notify_one();
            }
            Some(due) => {
                // Already due (the real work took longer than the model): send, count it late.
                reply(dev, unique, out.error, &[&out.data]);
                record_reply(&shared, arrival, due);
            }
            None => reply(dev, unique, out.error, &[&out.data]),
        }
    }
    shared.reader_done.store(true, Ordering::SeqCst);
    shared.wake.notify_one();
}

fn record_reply(shared: &Shared, arrival: f64, due: f64) {
    let late = (shared.clock.now() - due).max(0.0);
    let mut r = shared.rec.lock().unwrap();
    r.stats.delayed_replies += 1;
    r.stats.network_wait_s += (due - arrival).max(0.0);
    r.stats.late_sum_s += late;
    let us = ((late * 1e6).round() as u64).clamp(1, 3_600_000_000);
    r.late.saturating_record(us);
}

fn snapshot(shared: &Shared, scheduling: &str, memory_locked: &str) -> RemoteStats {
    let r = shared.rec.lock().unwrap();
    let mut s = r.stats.clone();
    s.uptime_s = shared.clock.now();
    s.late_hist_us = r
        .late
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect();
    s.scheduling = scheduling.to_string();
    s.memory_locked = memory_locked.to_string();
    // The summary from the histogram, the mean from the exact sum.
    s.since(&RemoteStats::default())
}

/// Carry out the request in `control.json`: empty the client's caches, take a new network,
/// reload the lookaside index, then write the statistics and acknowledge.
fn control(
    sd: &StateDir,
    shared: &Shared,
    fsm: &Mutex<Fs>,
    scheduling: &str,
    memory_locked: &str,
) -> anyhow::Result<()> {
    let c: state::Control = state::read_json(&sd.control())?;
    {
        let mut f = fsm.lock().unwrap();
        if c.drop_cache {
            f.drop_client_cache();
            shared.count(|s| s.cache_drops += 1);
        }
        if let Some(net) = c.net {
            f.net = net;
        }
        if c.reload_lookaside {
            f.lookaside = load_lookaside(sd);
            f.block_lookaside.clear();
        }
        let cache_bytes = f.cache_bytes();
        shared.count(|s| s.cache_bytes = cache_bytes);
    }
    state::write_json_atomic(&sd.stats(), &snapshot(shared, scheduling, memory_locked))?;
    state::write_json_atomic(&sd.control_ack(), &c.seq)?;
    Ok(())
}

fn replier_thread(
    shared: Arc<Shared>,
    stats_path: PathBuf,
    memory_locked: String,
    sched_out: Arc<Mutex<String>>,
) {
    // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
    let scheduling = realtime(RT_PRIORITY);
    *sched_out.lock().unwrap() = scheduling.clone();
    let clock = shared.clock;
    let mut sleeper = Sleeper::new(clock);
    let mut last_write = 0.0f64;
    let write_stats = |last: &mut f64| {
        let snap = snapshot(&shared, &scheduling, &memory_locked);
        if let Err(e) = state::write_json_atomic(&stats_path, &snap) {
            crate::errln!("fsbench remote server: {e:#}");
        }
        *last = clock.now();
    };
    loop {
        let mut q = shared.queue.lock().unwrap();
        let stopping = shared.stop.load(Ordering::SeqCst);
        let Some(top) = q.peek() else {
            if stopping {
                break;
            }
            let (g, _) = shared
                .wake
                .wait_timeout(q, Duration::from_millis(250))
                .unwrap();
            drop(g);
            if clock.now() - last_write >= 1.0 {
                write_stats(&mut last_write);
            }
            continue;
        };
        let ahead = top.due - clock.now();
        if ahead > 0.002 && !stopping {
            let wait = Duration::from_secs_f64((ahead - 0.001).min(0.25));
            let (g, _) = shared.wake.wait_timeout(q, wait).unwrap();
            drop(g);
            if clock.now() - last_write >= 1.0 {
                write_stats(&mut last_write);
            }
            continue;
        }
        let p = q.pop().expect("peeked");
        drop(q);
        if !stopping {
            sleeper.sleep_until(p.due);
        }
        reply(&shared.dev, p.unique, p.error, &[&p.data]);
        record_reply(&shared, p.arrival, p.due);
        if clock.now() - last_write >= 1.0 {
            write_stats(&mut last_write);
        }
    }
    write_stats(&mut last_write);
}

/// Read the lookaside index written by `remote create`.
fn load_lookaside(sd: &StateDir) -> HashMap<(u64, String), Vec<LookasideEntry>> {
    let mut map: HashMap<(u64, String), Vec<LookasideEntry>> = HashMap::new();
    let entries: Vec<LookasideEntry> = state::read_json(&sd.lookaside()).unwrap_or_default();
    for e in entries {
        map.entry((e.size, e.hash.clone())).or_default().push(e);
    }
    map
}

/// Index every regular file below `dirs` by (size, BLAKE3 hash).
pub fn index_lookaside(dirs: &[PathBuf]) -> anyhow::Result<Vec<LookasideEntry>> {
    let mut out = Vec::new();
    for d in dirs {
        if d.is_file() {
            out.extend(index_of_snapshot(d)?);
            continue;
        }
        let mut stack = vec![d.clone()];
        while let Some(dir) = stack.pop() {
            let rd = fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
            for e in rd.flatten() {
                let Ok(t) = e.file_type() else { continue };
                let p = e.path();
                if t.is_dir() {
                    stack.push(p);
                } else if t.is_file() {
                    let Ok(m) = fs::metadata(&p) else { continue };
                    let Ok(hash) = hash_file(&p) else { continue };
                    out.push(LookasideEntry {
                        path: p,
                        size: m.size(),
                        mtime_ns: version(&m).0,
                        hash,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// The lookaside entries of a `scan --hash` snapshot (BLAKE3): its regular files, at
/// their place below the scanned directory. A relative scan root is looked for beside the
/// snapshot file, then in the current directory.
pub fn index_of_snapshot(snap: &Path) -> anyhow::Result<Vec<LookasideEntry>> {
    use crate::scan::snapshot::{Kind, Snapshot};
    let stream = Snapshot::open(snap)
        .with_context(|| format!("reading the lookaside snapshot {}", snap.display()))?;
    let h = stream.header().clone();
    if h.hash.as_deref() != Some("blake3") {
        anyhow::bail!(
            "lookaside snapshot {} has {}: write it with `fsbench scan DIR --hash -o FILE` (BLAKE3)",
            snap.display(),
            match &h.hash {
                Some(a) => format!("{a} hashes, not BLAKE3"),
                None => "no content hashes".into(),
            }
        );
    }
    let given = PathBuf::from(&h.root);
    let root = if given.is_absolute() {
        given
    } else {
        let beside = snap.parent().unwrap_or(Path::new(".")).join(&given);
        if beside.is_dir() {
            beside
        } else {
            given
        }
    };
    let root = root.canonicalize().with_context(|| {
        format!(
            "the tree {} that lookaside snapshot {} describes is not here",
            h.root,
            snap.display()
        )
    })?;
    let mut out = Vec::new();
    for e in stream {
        let e = e.with_context(|| format!("reading {}", snap.display()))?;
        let (Kind::File, Some(hash)) = (e.kind, &e.hash) else {
            continue;
        };
        out.push(LookasideEntry {
            path: root.join(std::ffi::OsStr::from_bytes(&e.path)),
            size: e.size,
            mtime_ns: e.mtime.sec as i128 * 1_000_000_000 + e.mtime.nsec as i128,
            hash: crate::scan::hash::hex(hash),
        });
    }
    Ok(out)
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
        fs::remove_dir_all(&cache_dir).ok();
    }
    fs::create_dir_all(&cache_dir)?;
    fs::write(sd.pid(), format!("{}\n", std::process::id()))?;
    let dev = match mount_fuse(&cfg.mount, "fsbench-remote") {
        Ok(d) => d,
        Err(e) => {
            let _ = fs::remove_file(sd.pid());
            return Err(e);
        }
    };
    // What identifies this mount: only it is unmounted at the mount point, later.
    let mount = match crate::disk::owned::MountRecord::capture(&cfg.mount, None) {
        Ok(m) => m,
        Err(e) => {
            let _ = crate::disk::owned::umount(&cfg.mount, true);
            let _ = fs::remove_file(sd.pid());
            return Err(e);
        }
    };
    let shared = Arc::new(Shared {
        dev,
        clock: Clock(Instant::now()),
        queue: Mutex::new(BinaryHeap::new()),
        wake: Condvar::new(),
        rec: Mutex::new(Recorder {
            stats: RemoteStats::default(),
            late: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
        }),
        reader_done: AtomicBool::new(false),
        stop: AtomicBool::new(false),
    });
    let mut inodes = HashMap::new();
    let mut paths = HashMap::new();
    inodes.insert(ROOT_INO, PathBuf::new());
    paths.insert(PathBuf::new(), ROOT_INO);
    let fs_ = Fs {
        shared: shared.clone(),
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
    };
    let fsm = Arc::new(Mutex::new(fs_));
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
    state::write_json_atomic(
        &sd.ready(),
        &Ready {
            pid: std::process::id() as i32,
            mount: Some(mount.clone()),
        },
    )?;
    crate::errln!(
        "fsbench remote server {name}: {} served on {} ({}, {} protocol)",
        cfg.server.display(),
        cfg.mount.display(),
        super::cli::describe_net(&cfg.net),
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
                    crate::errln!("fsbench remote server {name}: control request: {e:#}");
                }
            }
            Some(s) => break Some(s),
            None => {}
        }
    };
    crate::errln!(
        "fsbench remote server {name}: stopping ({})",
        match sig {
            Some(s) => format!("signal {s}"),
            None => "FUSE connection closed".into(),
        }
    );
    // Queued replies go out now: an unmount waits for nothing, but a busy
    // mount's users should not wait for modelled time any more.
    shared.stop.store(true, Ordering::SeqCst);
    shared.wake.notify_one();
    // Only the mount this server made: after a hand-made unmount, whatever was mounted at
    // the same point since is someone else's.
    if let Err(e) = mount.unmount_even_busy() {
        crate::errln!("fsbench remote server: {e:#}");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !shared.reader_done.load(Ordering::SeqCst) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    if !shared.reader_done.load(Ordering::SeqCst) {
        crate::errln!(
            "fsbench remote server {name}: {} is still in use; exiting anyway, its users will see errors",
            cfg.mount.display()
        );
        let _ = fs::remove_file(sd.pid());
        let _ = fs::remove_file(sd.ready());
        std::process::exit(0);
    }
    let _ = reader_t.join();
    shared.wake.notify_one();
    let _ = replier_t.join();
    let _ = fs::remove_file(sd.ready());
    let _ = fs::remove_file(sd.pid());
    crate::errln!("fsbench remote server {name}: stopped");
    Ok(())
}
