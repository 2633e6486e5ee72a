//! Aging operations on disk: real data through the engine's system-call
//! wrappers (no fallocate: unwritten extents are not what an aged file system
//! holds), paths relative to the aged directory resolved beneath its open
//! descriptor without following links, an optional operation log, and the
//! writeback policy.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use fsbench_base::beneath;
use fsbench_base::owned::{self, Open};
use fsbench_base::sys::io::{self as sys, AlignedBuf};

/// When what aging writes reaches the file system's block allocator.
///
/// ext4 and xfs allocate blocks for buffered writes only at writeback (delayed allocation).
/// Left to the kernel, writeback happens when dirty pages age (30 s), pass the dirty limits or
/// meet memory pressure: a file created and deleted in between never reaches the allocator,
/// and what survives is allocated late, in big batches, in an order the host's memory and
/// speed decide. `range` decides it in aging's own time instead (docs/guide/aging.md,
/// "--writeback", has the measurements behind the choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Writeback {
    /// Write back every written range right after the write and wait for it
    /// (`sync_file_range`): the file system allocates its blocks then, in operation order, in
    /// aging's own thread, and has finished with them (ext4 converts the unwritten extents
    /// it allocated when their I/O ends) before the next operation starts; no journal
    /// commit. Deleted files are unlinked, and the journal committed (`syncfs`), every
    /// `--commit-every` operations.
    Range,
    /// `fsync` every file after each create, append or overwrite (allocation in operation
    /// order, and a journal commit per write: several times slower).
    #[value(alias = "file")]
    Fsync,
    /// `syncfs` every `--commit-every` operations only: what was written since the last one
    /// is allocated then, file by file in the order the kernel keeps them.
    #[value(alias = "batch")]
    Syncfs,
    /// Never: the kernel writes back when it likes, so the aged layout depends on the
    /// host's memory, dirty-page settings and speed.
    None,
}

impl Writeback {
    pub fn name(self) -> &'static str {
        match self {
            Writeback::Range => "range",
            Writeback::Fsync => "fsync",
            Writeback::Syncfs => "syncfs",
            Writeback::None => "none",
        }
    }
}

/// Operations between two commits (`syncfs`) by default, under `range` and `syncfs`.
pub const COMMIT_EVERY: u64 = 1000;

/// Bytes written before they are written back, within one write under `range`: a large file
/// reaches the allocator in pieces of this size, whatever the host's dirty limits.
pub const RANGE_CHUNK: u64 = 8 << 20;

/// The writeback policy of one aging, as its report states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct WritebackPolicy {
    pub policy: Writeback,
    /// Operations between two `syncfs` (0: none but the one at the end).
    pub commit_every: u64,
}

/// What the executor did.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct ExecCounts {
    pub creates: u64,
    pub appends: u64,
    pub overwrites: u64,
    pub deletes: u64,
    pub mkdirs: u64,
    pub rmdirs: u64,
    pub bytes_written: u64,
    pub fsyncs: u64,
    /// `syncfs` calls (the commits of `range` and `syncfs`, and the ones before and after).
    #[serde(default)]
    pub syncfs: u64,
    /// Ranges written back right after their write (`range`).
    #[serde(default)]
    pub writebacks: u64,
    /// Writes cut short because the file system was full.
    pub enospc: u64,
    /// Other failed operations (the first few are printed).
    pub errors: u64,
}

impl ExecCounts {
    /// Add another executor's counts (one per aging thread).
    pub fn add(&mut self, o: &ExecCounts) {
        self.creates += o.creates;
        self.appends += o.appends;
        self.overwrites += o.overwrites;
        self.deletes += o.deletes;
        self.mkdirs += o.mkdirs;
        self.rmdirs += o.rmdirs;
        self.bytes_written += o.bytes_written;
        self.fsyncs += o.fsyncs;
        self.syncfs += o.syncfs;
        self.writebacks += o.writebacks;
        self.enospc += o.enospc;
        self.errors += o.errors;
    }
}

/// A failed write: how far it got.
#[derive(Debug)]
pub struct ShortWrite {
    pub written: u64,
    pub error: io::Error,
}

/// Executes aging operations under one directory.
pub struct Exec {
    root: Vec<u8>,
    /// The aged directory, held open: every operation starts here.
    dir: OwnedFd,
    data: AlignedBuf,
    pub writeback: WritebackPolicy,
    log: Option<BufWriter<File>>,
    pub counts: ExecCounts,
    since_sync: u64,
    /// Deleted files not unlinked yet (see [`Exec::defer_deletes`]).
    deferred: Option<Vec<Vec<u8>>>,
    /// Deferred unlinks that failed, the first few (all are counted in `counts.errors`).
    pub late_errors: Vec<io::Error>,
    /// Directories below the aged one, opened beneath it once and kept by relative path
    /// (a bounded set; emptied when full), so an operation costs its own system calls and not
    /// an open and close of its parent as well.
    dirs: std::collections::HashMap<Vec<u8>, OwnedFd>,
}

/// Directory handles kept at most.
const DIR_CACHE: usize = 4096;

impl Exec {
    pub fn new(
        root: &Path,
        seed: u64,
        writeback: WritebackPolicy,
        log: Option<&Path>,
    ) -> io::Result<Exec> {
        let mut rng = fsbench_model::dist::rng(seed, 0xDA7A);
        let log = match log {
            Some(p) => Some(BufWriter::new(File::create(p).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot create log {}: {e}", p.display()))
            })?)),
            None => None,
        };
        let parent = File::open(root.parent().unwrap_or(Path::new("/")))?;
        let name = beneath::component(root.file_name().unwrap_or_default())?;
        let dir = beneath::open_dir(parent.as_raw_fd(), &name)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", root.display())))?;
        Ok(Exec {
            root: root.as_os_str().as_bytes().to_vec(),
            dir,
            data: AlignedBuf::new(1 << 20, &mut rng),
            writeback,
            log,
            counts: ExecCounts::default(),
            since_sync: 0,
            deferred: None,
            late_errors: Vec::new(),
            dirs: std::collections::HashMap::new(),
        })
    }

    /// The aged directory's open descriptor.
    pub fn dir_fd(&self) -> RawFd {
        self.dir.as_raw_fd()
    }

    pub fn root(&self) -> PathBuf {
        PathBuf::from(std::ffi::OsStr::from_bytes(&self.root))
    }

    /// The parent directory of `rel` (opened beneath the aged directory, following no link,
    /// and kept) and `rel`'s last component.
    fn at(&mut self, rel: &[u8]) -> io::Result<(RawFd, CString)> {
        let (parent, name) = match rel.iter().rposition(|b| *b == b'/') {
            Some(i) => (&rel[..i], &rel[i + 1..]),
            None => (&rel[..0], rel),
        };
        let name = beneath::component(std::ffi::OsStr::from_bytes(name))?;
        if parent.is_empty() {
            return Ok((self.dir.as_raw_fd(), name));
        }
        if let Some(fd) = self.dirs.get(parent) {
            return Ok((fd.as_raw_fd(), name));
        }
        let fd = beneath::open_dir_path(self.dir.as_raw_fd(), parent)?;
        if self.dirs.len() >= DIR_CACHE {
            self.dirs.clear();
        }
        let raw = fd.as_raw_fd();
        self.dirs.insert(parent.to_vec(), fd);
        Ok((raw, name))
    }

    /// Open `rel`, a file of the aged tree's own, for writing (never through a link or into
    /// a mount, never a file with other links or another owner).
    fn open_own(&mut self, rel: &[u8]) -> io::Result<RawFd> {
        let (d, name) = self.at(rel)?;
        owned::open_write(d, &name, Open::Own, libc::O_WRONLY).map(IntoRawFd::into_raw_fd)
    }

    fn err(&self, rel: &[u8], e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!(
                "{}/{}: {e}",
                String::from_utf8_lossy(&self.root),
                String::from_utf8_lossy(rel)
            ),
        )
    }

    /// Write a line to the operation log.
    pub fn log(&mut self, line: std::fmt::Arguments) -> io::Result<()> {
        if let Some(l) = &mut self.log {
            l.write_fmt(line)?;
            l.write_all(b"\n")?;
        }
        Ok(())
    }

    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(l) = &mut self.log {
            l.flush()?;
        }
        Ok(())
    }

    fn write_at(&mut self, fd: RawFd, off: u64, len: u64) -> Result<(), ShortWrite> {
        let mut done = 0u64;
        // Under `range`, the end of what of this write was written back.
        let mut started = 0u64;
        while done < len {
            if done - started >= RANGE_CHUNK {
                self.write_back(fd, off + started, done - started)
                    .map_err(|error| ShortWrite {
                        written: done,
                        error,
                    })?;
                started = done;
            }
            let n = (len - done).min(self.data.len() as u64) as usize;
            // Vary the data a little between blocks without refilling.
            let start = ((off + done) / 4096 % 64) as usize * 64;
            let start = start.min(self.data.len() - n);
            self.write_chunk(fd, start..start + n, off, done)?;
            done += n as u64;
        }
        self.write_back(fd, off + started, len - started)
            .map_err(|error| ShortWrite {
                written: len,
                error,
            })?;
        self.counts.bytes_written += len;
        Ok(())
    }

    /// Write `data[from]` at `off + done`, the whole of it: a short write (the kernel may
    /// write part of a buffer when space runs short) continues the same bytes, so what a
    /// file holds depends on the operation alone, not on how the kernel split it (with
    /// deferred deletes holding space, one thread meets short writes that threads without
    /// them do not).
    fn write_chunk(
        &mut self,
        fd: RawFd,
        from: std::ops::Range<usize>,
        off: u64,
        done: u64,
    ) -> Result<(), ShortWrite> {
        let mut k = 0usize;
        while k < from.len() {
            let at = off + done + k as u64;
            let short = move |error| ShortWrite {
                written: done + k as u64,
                error,
            };
            match sys::pwrite(fd, &self.data.as_slice()[from.start + k..from.end], at) {
                Ok(0) => return Err(short(io::Error::from_raw_os_error(libc::ENOSPC))),
                Ok(w) => k += w,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Space that deferred deletes hold: free it (a commit) and write again.
                Err(e) if is_enospc(&e) && self.has_deferred() => self.commit().map_err(short)?,
                Err(error) => return Err(short(error)),
            }
        }
        Ok(())
    }

    /// Under `range`, write back `len` bytes at `off` now (their blocks are allocated and
    /// their I/O done before this returns).
    fn write_back(&mut self, fd: RawFd, off: u64, len: u64) -> io::Result<()> {
        if self.writeback.policy != Writeback::Range || len == 0 {
            return Ok(());
        }
        self.counts.writebacks += 1;
        sys::write_back(fd, off, len)
    }

    fn after_write(&mut self, fd: RawFd) -> io::Result<()> {
        match self.writeback.policy {
            Writeback::Fsync => {
                self.counts.fsyncs += 1;
                sys::fsync(fd)
            }
            _ => Ok(()),
        }
    }

    /// Count an operation; commit every `commit_every` of them under `range` and `syncfs`.
    pub fn tick(&mut self) -> io::Result<()> {
        self.since_sync += 1;
        let every = self.writeback.commit_every;
        let commits = matches!(self.writeback.policy, Writeback::Range | Writeback::Syncfs);
        if commits && every > 0 && self.since_sync >= every {
            self.commit()?;
        }
        Ok(())
    }

    /// Have the blocks of `names` (files directly in the aged directory that were written
    /// outside aging's operations: the marker, the lock, the state file) allocated now, in
    /// this thread (`fsync` writes back in the caller's context, `syncfs` in a kernel
    /// thread on any CPU). A name that is not there is passed over.
    pub fn settle(&mut self, names: &[&str]) -> io::Result<()> {
        for n in names {
            let c = CString::new(*n).map_err(|_| io::Error::other("NUL in a name"))?;
            match beneath::open_file(self.dir.as_raw_fd(), &c, libc::O_RDONLY) {
                Ok(fd) => sys::fsync(fd.as_raw_fd())?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Sync the file system holding the aged directory.
    pub fn syncfs(&mut self) -> io::Result<()> {
        self.counts.syncfs += 1;
        sys::syncfs(self.dir.as_raw_fd())
    }

    pub fn mkdir(&mut self, rel: &[u8]) -> io::Result<()> {
        let r = self.at(rel).and_then(|(d, n)| sys::mkdir_at(d, &n));
        match r {
            Ok(()) => {
                self.counts.mkdirs += 1;
                Ok(())
            }
            Err(e) => Err(self.err(rel, e)),
        }
    }

    pub fn rmdir(&mut self, rel: &[u8]) -> io::Result<()> {
        let r = self.at(rel).and_then(|(d, n)| sys::rmdir_at(d, &n));
        match r {
            Ok(()) => {
                // Its handle (if kept) names a directory that is gone.
                self.dirs.remove(rel);
                self.counts.rmdirs += 1;
                Ok(())
            }
            Err(e) => Err(self.err(rel, e)),
        }
    }

    /// Create (or truncate) `rel` and write its first `len` bytes. A replayed create may
    /// truncate a longer file of the aged tree's own; whatever else is at the name (a hard
    /// link to data elsewhere, another user's file) is replaced by a new file, never written.
    pub fn create(&mut self, rel: &[u8], len: u64) -> Result<(), ShortWrite> {
        let fd = self
            .at(rel)
            .and_then(|(d, n)| owned::open_truncated(d, &n, Open::OwnOrReplace, libc::O_WRONLY))
            .map(std::os::fd::IntoRawFd::into_raw_fd)
            .map_err(|e| ShortWrite {
                written: 0,
                error: self.err(rel, e),
            })?;
        self.counts.creates += 1;
        let r = self.write_at(fd, 0, len).and_then(|_| {
            self.after_write(fd).map_err(|error| ShortWrite {
                written: len,
                error,
            })
        });
        let _ = sys::close(fd);
        r.map_err(|s| ShortWrite {
            written: s.written,
            error: self.err(rel, s.error),
        })
    }

    /// Write `len` bytes at `off` of an existing file (an append when `off`
    /// is its end).
    pub fn write(
        &mut self,
        rel: &[u8],
        off: u64,
        len: u64,
        append: bool,
    ) -> Result<(), ShortWrite> {
        let fd = self.open_own(rel).map_err(|e| ShortWrite {
            written: 0,
            error: self.err(rel, e),
        })?;
        if append {
            self.counts.appends += 1;
        } else {
            self.counts.overwrites += 1;
        }
        let r = self.write_at(fd, off, len).and_then(|_| {
            self.after_write(fd).map_err(|error| ShortWrite {
                written: len,
                error,
            })
        });
        let _ = sys::close(fd);
        r.map_err(|s| ShortWrite {
            written: s.written,
            error: self.err(rel, s.error),
        })
    }

    /// From now on, unlink deleted files at the next commit instead of at once (under `range`
    /// and `syncfs` with commits; for profile aging, whose names are never used again).
    ///
    /// ext4 and xfs let freed blocks be allocated again only once the journal commit that
    /// freed them is done, so blocks a delete frees wait for the next commit anyway. A commit
    /// that another process causes (`sync`, a cache drop) would free them earlier, at a moment
    /// aging does not choose; unlinking right before aging's own commit leaves no freed block
    /// for such a commit to release.
    pub fn defer_deletes(&mut self) {
        let commits = matches!(self.writeback.policy, Writeback::Range | Writeback::Syncfs);
        if commits && self.writeback.commit_every > 0 {
            self.deferred = Some(Vec::new());
        }
    }

    /// Unlink the deferred deletes, then sync the file system.
    pub fn commit(&mut self) -> io::Result<()> {
        for rel in self
            .deferred
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
        {
            if let Err(e) = self.unlink(&rel) {
                self.counts.errors += 1;
                if self.late_errors.len() < 5 {
                    self.late_errors.push(e);
                }
            }
        }
        self.since_sync = 0;
        self.syncfs()
    }

    /// Whether deleted files wait to be unlinked.
    fn has_deferred(&self) -> bool {
        self.deferred.as_ref().is_some_and(|d| !d.is_empty())
    }

    pub fn delete(&mut self, rel: &[u8]) -> io::Result<()> {
        match &mut self.deferred {
            Some(d) => {
                d.push(rel.to_vec());
                Ok(())
            }
            None => self.unlink(rel),
        }
    }

    fn unlink(&mut self, rel: &[u8]) -> io::Result<()> {
        let r = self.at(rel).and_then(|(d, n)| sys::unlink_at(d, &n));
        match r {
            Ok(()) => {
                self.counts.deletes += 1;
                Ok(())
            }
            Err(e) => Err(self.err(rel, e)),
        }
    }
}

/// Whether an error means the file system is full.
pub fn is_enospc(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOSPC) || e.raw_os_error() == Some(libc::EDQUOT)
}

/// Fullness of the file system holding `path` as `df` shows it:
/// used / (used + available to unprivileged users), and (used, capacity)
/// in bytes with capacity = used + available.
pub fn fullness(path: &Path) -> io::Result<(f64, u64, u64)> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))?;
    // SAFETY: vfs is written by the kernel.
    let mut vfs: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut vfs) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let bs = vfs.f_frsize as u64;
    let used = (vfs.f_blocks as u64 - vfs.f_bfree as u64) * bs;
    let cap = used + vfs.f_bavail as u64 * bs;
    Ok((
        if cap == 0 {
            0.0
        } else {
            used as f64 / cap as f64
        },
        used,
        cap,
    ))
}

/// Block size of the file system holding `path`.
pub fn block_size(path: &Path) -> io::Result<u64> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))?;
    // SAFETY: vfs is written by the kernel.
    let mut vfs: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut vfs) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((vfs.f_frsize as u64).max(512))
}

/// Write one planned file operation to the operation log (mkdirs are logged where they run).
pub(super) fn log_op(
    pl: &super::plan::Planner,
    ex: &mut Exec,
    op: &super::plan::Op,
    clock: u64,
    rel: &mut String,
) -> io::Result<()> {
    match *op {
        super::plan::Op::Mkdir { dir } => {
            ex.log(format_args!("{clock} mkdir {}", pl.dirs[dir as usize].path))
        }
        super::plan::Op::Create {
            id, size, write, ..
        } => {
            pl.file_path(id, rel);
            ex.log(format_args!(
                "{clock} create {rel} size {size} write {write}"
            ))
        }
        super::plan::Op::Append { id, off, len } => {
            pl.file_path(id, rel);
            ex.log(format_args!("{clock} append {rel} {off}+{len}"))
        }
        super::plan::Op::Overwrite { id, off, len } => {
            pl.file_path(id, rel);
            ex.log(format_args!("{clock} overwrite {rel} {off}+{len}"))
        }
        super::plan::Op::Delete { id, dir } => {
            pl.path_in(dir, id, rel);
            ex.log(format_args!("{clock} delete {rel}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_append_overwrite_delete_with_log() {
        let dir = std::env::temp_dir().join(format!("fsbench-age-exec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("log");
        let wb = WritebackPolicy {
            policy: Writeback::Range,
            commit_every: 2,
        };
        let mut x = Exec::new(&dir, 1, wb, Some(&log)).unwrap();
        x.mkdir(b"d1").unwrap();
        x.create(b"d1/f1", 5000).unwrap();
        x.write(b"d1/f1", 5000, 3000, true).unwrap();
        x.write(b"d1/f1", 0, 100, false).unwrap();
        x.log(format_args!("op 1")).unwrap();
        x.finish().unwrap();
        let data = std::fs::read(dir.join("d1/f1")).unwrap();
        assert_eq!(data.len(), 8000);
        assert!(
            data.iter().filter(|b| **b == 0).count() < 100,
            "mostly non-zero data"
        );
        x.delete(b"d1/f1").unwrap();
        x.rmdir(b"d1").unwrap();
        assert!(x.delete(b"nope").unwrap_err().to_string().contains("nope"));
        // A directory swapped for a link is not followed.
        let outside = dir.with_extension("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("d2")).unwrap();
        assert!(x.create(b"d2/f", 10).is_err());
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
        std::fs::remove_dir_all(&outside).unwrap();
        assert_eq!(x.counts.bytes_written, 8100);
        assert_eq!(
            (x.counts.creates, x.counts.appends, x.counts.overwrites),
            (1, 1, 1)
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "op 1\n");
        let (f, used, cap) = fullness(&dir).unwrap();
        assert!((0.0..=1.0).contains(&f) && used <= cap);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
