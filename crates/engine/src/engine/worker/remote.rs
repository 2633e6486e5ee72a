//! The worker's two I/O paths: the local kernel (system calls on descriptors and directory
//! handles) or an NFS server through libnfs (`--nfs`, fio's `ioengine=nfs`).
//!
//! The path is chosen once per run: a worker of an NFS run holds a [`Remote`] (its own
//! libnfs client, as a libnfs context is not thread-safe), a local one holds none. Every
//! flowop calls the methods below, which test that one field and issue the call; a slot's
//! `fd` is then a kernel descriptor or an index into the client's open files. The short
//! path of plain reads and writes (`plain`) is local only: over NFS those flowops take the
//! general path, so the local loop pays nothing for NFS's existence.

use super::Worker;
use crate::fileset::List;
use fsbench_base::libnfs::{self as nfs, Client, Handle};
use fsbench_base::sys::io::{self, OpenHow};
use std::ffi::CStr;
use std::os::fd::RawFd;

/// A worker's NFS client and the files it holds open.
pub(super) struct Remote {
    /// Declared before the relay: dropped (unmounted) first, so the relay sees the
    /// connections end before it stops.
    client: Client,
    /// With `--nfs-rpcs` or a dialled network: the relay this client talks through, and
    /// the calls it counted per flowop.
    relay: Option<(nfs::relay::Relay, std::sync::Arc<nfs::rpc::Counts>)>,
    /// Open files by index (a slot's `fd` over NFS); `None` where one was closed.
    files: Vec<Option<Handle>>,
    free: Vec<usize>,
    /// The run directory's path on the export (the fio jobs' files are there).
    pub(super) run_path: String,
}

/// A path operation on a fileset entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EntryOp {
    Unlink,
    Stat,
    MakeDir,
    RemoveDir,
}

impl EntryOp {
    /// The call's name, for messages.
    pub(super) fn name(self) -> &'static str {
        match self {
            EntryOp::Unlink => "unlink",
            EntryOp::Stat => "stat",
            EntryOp::MakeDir => "mkdir",
            EntryOp::RemoveDir => "rmdir",
        }
    }
}

fn bad_fd() -> std::io::Error {
    std::io::Error::from_raw_os_error(libc::EBADF)
}

impl Remote {
    /// Mount the run's export with a client of this worker's own.
    pub(super) fn connect(t: &nfs::Target) -> Result<Remote, String> {
        let relay = match &t.relay {
            Some(net) => {
                let counts = std::sync::Arc::<nfs::rpc::Counts>::default();
                let r = nfs::relay::Relay::start(&t.url, net.clone(), counts.clone())?;
                Some((r, counts))
            }
            None => None,
        };
        let url = relay.as_ref().map_or(t.url.as_str(), |r| r.0.url());
        Ok(Remote {
            client: Client::connect(url)?,
            relay,
            files: Vec::new(),
            free: Vec::new(),
            run_path: t.run_path.clone(),
        })
    }

    /// The RPCs from now on are flowop statistic `stat`'s (a relaxed store, with a relay).
    #[inline]
    pub(super) fn begin(&self, stat: usize) {
        if let Some((_, c)) = &self.relay {
            c.begin(stat);
        }
    }

    /// Forget the calls counted so far (the warm-up ended).
    pub(super) fn reset_rpcs(&self) {
        if let Some((_, c)) = &self.relay {
            c.take();
        }
    }

    /// The calls counted per flowop, into the recorder's flowops; calls from now on
    /// (closing the files at the end) are no flowop's.
    pub(super) fn rpcs_into(&self, rec: &mut fsbench_results::stats::Recorder) {
        let Some((_, c)) = &self.relay else { return };
        c.end();
        for (stat, t) in c.take().iter().enumerate() {
            if let Some(o) = rec.ops.get_mut(stat) {
                o.add_rpcs(t);
            }
        }
    }

    fn put(&mut self, h: Handle) -> RawFd {
        let i = match self.free.pop() {
            Some(i) => {
                self.files[i] = Some(h);
                i
            }
            None => {
                self.files.push(Some(h));
                self.files.len() - 1
            }
        };
        i as RawFd
    }

    #[inline]
    fn get(&self, fd: RawFd) -> std::io::Result<Handle> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.files.get(i).copied().flatten())
            .ok_or_else(bad_fd)
    }

    /// Open (or with `how.create`, create) `path`; `O_SYNC` for `dsync` (libnfs writes
    /// FILE_SYNC then). `directio` never reaches here (refused before the run).
    pub(super) fn open(&mut self, path: &CStr, how: OpenHow) -> std::io::Result<RawFd> {
        // Never through a link, as the local path's `openat(O_NOFOLLOW)`.
        let mut flags = (how.flags() & libc::O_ACCMODE) | libc::O_NOFOLLOW;
        if how.dsync {
            flags |= libc::O_SYNC;
        }
        let h = if how.create {
            self.client.create(path, flags | libc::O_CREAT, 0o644)?
        } else {
            self.client.open(path, flags)?
        };
        Ok(self.put(h))
    }

    pub(super) fn close(&mut self, fd: RawFd) -> std::io::Result<()> {
        let h = self.get(fd)?;
        self.files[fd as usize] = None;
        self.free.push(fd as usize);
        self.client.close(h)
    }

    pub(super) fn pread(&mut self, fd: RawFd, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
        let h = self.get(fd)?;
        self.client.pread(h, buf, off)
    }

    pub(super) fn pwrite(&mut self, fd: RawFd, buf: &[u8], off: u64) -> std::io::Result<usize> {
        let h = self.get(fd)?;
        self.client.pwrite(h, buf, off)
    }

    pub(super) fn fsync(&mut self, fd: RawFd) -> std::io::Result<()> {
        let h = self.get(fd)?;
        self.client.fsync(h)
    }

    pub(super) fn size(&mut self, fd: RawFd) -> std::io::Result<u64> {
        let h = self.get(fd)?;
        self.client.fstat(h).map(|st| st.size)
    }

    /// Write `buf` at the file's end as the server knows it (GETATTR, then WRITE: what
    /// libnfs does for `O_APPEND`); returns where it went and how much.
    pub(super) fn append(&mut self, fd: RawFd, buf: &[u8]) -> std::io::Result<(u64, usize)> {
        let h = self.get(fd)?;
        let end = self.client.fstat(h)?.size;
        self.client.pwrite(h, buf, end).map(|n| (end, n))
    }

    fn entry(&mut self, path: &CStr, op: EntryOp) -> std::io::Result<()> {
        match op {
            EntryOp::Unlink => self.client.unlink(path),
            EntryOp::Stat => self.client.lstat(path).map(|_| ()),
            EntryOp::MakeDir => self.client.mkdir(path, 0o755),
            EntryOp::RemoveDir => self.client.rmdir(path),
        }
    }

    /// Read directory `path` whole: (entries, name bytes), as the local listing counts.
    fn list(&mut self, path: &CStr) -> std::io::Result<(u64, u64)> {
        let (mut entries, mut names) = (0u64, 0u64);
        self.client.list(path, |n, _| {
            entries += 1;
            names += n.to_bytes().len() as u64;
        })?;
        Ok((entries, names))
    }

    /// Open a fio job's file `name` in the run directory.
    pub(super) fn open_in_run(
        &mut self,
        name: &str,
        how: OpenHow,
        osync: bool,
    ) -> std::io::Result<RawFd> {
        let p = nfs::cpath(&format!("{}/{name}", self.run_path))?;
        let how = OpenHow {
            dsync: how.dsync || osync,
            ..how
        };
        self.open(&p, how)
    }

    /// Remove a fio job's file `name` from the run directory (fio's `unlink`).
    pub(super) fn unlink_in_run(&mut self, name: &str) -> std::io::Result<()> {
        let p = nfs::cpath(&format!("{}/{name}", self.run_path))?;
        self.client.unlink(&p)
    }
}

impl Worker<'_> {
    /// Open entry `e` of list `l` of fileset `fsi`; the time covers the call only.
    pub(super) fn open_entry(
        &mut self,
        fsi: usize,
        e: usize,
        how: OpenHow,
    ) -> (std::io::Result<RawFd>, u64) {
        let fs = &self.sh.filesets[fsi];
        match self.remote.as_deref_mut() {
            None => match fs.entry_at(List::Files, e, &mut self.path) {
                Ok((dir, name)) => {
                    let t0 = self.clock.now();
                    let r = io::open_at(dir.fd(), name, how);
                    (r, self.clock.since(t0))
                }
                Err(err) => (Err(err), 0),
            },
            Some(r) => {
                let p = fs.remote_path(List::Files, e, &mut self.path);
                let t0 = self.clock.now();
                let x = r.open(p, how);
                (x, self.clock.since(t0))
            }
        }
    }

    /// `op` on entry `e` of list `l` of fileset `fsi`; the time covers the call only.
    pub(super) fn entry_call(
        &mut self,
        fsi: usize,
        l: List,
        e: usize,
        op: EntryOp,
    ) -> (std::io::Result<()>, u64) {
        let fs = &self.sh.filesets[fsi];
        match self.remote.as_deref_mut() {
            None => match fs.entry_at(l, e, &mut self.path) {
                Ok((dir, name)) => {
                    let t0 = self.clock.now();
                    let r = match op {
                        EntryOp::Unlink => io::unlink_at(dir.fd(), name),
                        EntryOp::Stat => io::stat_at(dir.fd(), name).map(|_| ()),
                        EntryOp::MakeDir => io::mkdir_at(dir.fd(), name),
                        EntryOp::RemoveDir => io::rmdir_at(dir.fd(), name),
                    };
                    (r, self.clock.since(t0))
                }
                Err(err) => (Err(err), 0),
            },
            Some(r) => {
                let p = fs.remote_path(l, e, &mut self.path);
                let t0 = self.clock.now();
                let x = r.entry(p, op);
                (x, self.clock.since(t0))
            }
        }
    }

    /// List directory `d` of fileset `fsi`: (entries, name bytes) and the time of the listing.
    pub(super) fn list_dir(&mut self, fsi: usize, d: u32) -> (std::io::Result<(u64, u64)>, u64) {
        let fs = &self.sh.filesets[fsi];
        match self.remote.as_deref_mut() {
            None => match fs.dir_handle(d) {
                Ok(dir) => {
                    let t0 = self.clock.now();
                    let r = io::list_dir_at(dir.fd(), &mut self.dirbuf);
                    (r, self.clock.since(t0))
                }
                Err(err) => (Err(err), 0),
            },
            Some(r) => {
                let p = fs.remote_dir(d, &mut self.path);
                let t0 = self.clock.now();
                let x = r.list(p);
                (x, self.clock.since(t0))
            }
        }
    }

    #[inline]
    pub(super) fn close_fd(&mut self, fd: RawFd) -> std::io::Result<()> {
        match self.remote.as_deref_mut() {
            None => io::close(fd),
            Some(r) => r.close(fd),
        }
    }

    /// Read `len` bytes at `off` into the buffer at `boff`.
    #[inline]
    pub(super) fn read_at(
        &mut self,
        fd: RawFd,
        boff: usize,
        len: usize,
        off: u64,
    ) -> std::io::Result<usize> {
        let buf = &mut self.buf.as_mut_slice()[boff..boff + len];
        match self.remote.as_deref_mut() {
            None => io::pread(fd, buf, off),
            Some(r) => r.pread(fd, buf, off),
        }
    }

    /// Write `len` bytes of the buffer at `boff` to `off`.
    #[inline]
    pub(super) fn write_at(
        &mut self,
        fd: RawFd,
        boff: usize,
        len: usize,
        off: u64,
    ) -> std::io::Result<usize> {
        let buf = &self.buf.as_slice()[boff..boff + len];
        match self.remote.as_deref_mut() {
            None => io::pwrite(fd, buf, off),
            Some(r) => r.pwrite(fd, buf, off),
        }
    }

    /// Append `len` bytes of the buffer at `boff`; returns the old end and the bytes written.
    pub(super) fn append_at_end(
        &mut self,
        fd: RawFd,
        boff: usize,
        len: usize,
    ) -> std::io::Result<(u64, usize)> {
        let buf = &self.buf.as_slice()[boff..boff + len];
        match self.remote.as_deref_mut() {
            None => io::seek_end(fd).and_then(|end| io::write(fd, buf).map(|n| (end, n))),
            Some(r) => r.append(fd, buf),
        }
    }

    #[inline]
    pub(super) fn sync_fd(&mut self, fd: RawFd) -> std::io::Result<()> {
        match self.remote.as_deref_mut() {
            None => io::fsync(fd),
            Some(r) => r.fsync(fd),
        }
    }

    /// The size of the open file (an fstat, or a GETATTR over NFS).
    pub(super) fn fd_size(&mut self, fd: RawFd) -> std::io::Result<u64> {
        match self.remote.as_deref_mut() {
            None => fsbench_base::beneath::fstat(fd).map(|st| st.st_size.max(0) as u64),
            Some(r) => r.size(fd),
        }
    }
}
