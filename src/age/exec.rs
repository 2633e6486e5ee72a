//! Aging operations on disk: real data through the engine's system-call
//! wrappers (no fallocate: unwritten extents are not what an aged file system
//! holds), paths relative to the aged directory resolved beneath its open
//! descriptor without following links, an optional operation log, and the
//! fsync policy.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::beneath;
use crate::owned::{self, Open};
use crate::sys::io::{self as sys, AlignedBuf};

/// When aging syncs what it wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncPolicy {
    /// Never: the kernel writes back when it likes (delayed allocation sees
    /// large batches).
    None,
    /// fsync every file after each create, append or overwrite: blocks are
    /// allocated in operation order, as under a mail server or database.
    File,
    /// syncfs every 1000 operations.
    Batch,
}

/// Operations per syncfs under [`FsyncPolicy::Batch`].
pub const BATCH: u64 = 1000;

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
    pub fsync: FsyncPolicy,
    log: Option<BufWriter<File>>,
    pub counts: ExecCounts,
    since_sync: u64,
    /// Directories below the aged one, opened beneath it once and kept by relative path
    /// (a bounded set; emptied when full), so an operation costs its own system calls and not
    /// an open and close of its parent as well.
    dirs: std::collections::HashMap<Vec<u8>, OwnedFd>,
}

/// Directory handles kept at most.
const DIR_CACHE: usize = 4096;

impl Exec {
    pub fn new(root: &Path, seed: u64, fsync: FsyncPolicy, log: Option<&Path>) -> io::Result<Exec> {
        let mut rng = crate::dist::rng(seed, 0xDA7A);
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
            fsync,
            log,
            counts: ExecCounts::default(),
            since_sync: 0,
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
        while done < len {
            let n = (len - done).min(self.data.len() as u64) as usize;
            // Vary the data a little between blocks without refilling.
            let start = ((off + done) / 4096 % 64) as usize * 64;
            let start = start.min(self.data.len() - n);
            match sys::pwrite(fd, &self.data.as_slice()[start..start + n], off + done) {
                Ok(0) => {
                    return Err(ShortWrite {
                        written: done,
                        error: io::Error::from_raw_os_error(libc::ENOSPC),
                    })
                }
                Ok(w) => done += w as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    return Err(ShortWrite {
                        written: done,
                        error,
                    })
                }
            }
        }
        self.counts.bytes_written += len;
        Ok(())
    }

    fn after_write(&mut self, fd: RawFd) -> io::Result<()> {
        match self.fsync {
            FsyncPolicy::File => {
                self.counts.fsyncs += 1;
                sys::fsync(fd)
            }
            _ => Ok(()),
        }
    }

    /// Count an operation; under the batch policy sync the file system.
    pub fn tick(&mut self) -> io::Result<()> {
        self.since_sync += 1;
        if self.fsync == FsyncPolicy::Batch && self.since_sync >= BATCH {
            self.since_sync = 0;
            self.syncfs()?;
        }
        Ok(())
    }

    /// Sync the file system holding the aged directory.
    pub fn syncfs(&mut self) -> io::Result<()> {
        // SAFETY: plain syncfs on a descriptor we hold.
        let r = unsafe { libc::syncfs(self.dir.as_raw_fd()) };
        let e = io::Error::last_os_error();
        self.counts.fsyncs += 1;
        if r < 0 {
            Err(e)
        } else {
            Ok(())
        }
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

    pub fn delete(&mut self, rel: &[u8]) -> io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_append_overwrite_delete_with_log() {
        let dir = std::env::temp_dir().join(format!("fsbench-age-exec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("log");
        let mut x = Exec::new(&dir, 1, FsyncPolicy::File, Some(&log)).unwrap();
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
