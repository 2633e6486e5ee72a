//! The name space operations: lookups, attributes, creating, removing and renaming,
//! listings and statfs; each charged its round trips.

use super::encode::{cname, entry_bytes, errno, open_bytes, valid_name, Out};
use super::{version, Cached, DirHandle, Fs, Handle, ROOT_INO};
use crate::remote::state::Protocol;
use fsbench_base::fuse::abi::{
    after, parse, CreateIn, MkdirIn, OpenOut, Rename2In, RenameIn, SetattrIn, StatfsOut,
};
use fsbench_base::fuse::{
    cstr, dirents, FATTR_ATIME, FATTR_ATIME_NOW, FATTR_GID, FATTR_MODE, FATTR_MTIME,
    FATTR_MTIME_NOW, FATTR_SIZE, FATTR_UID,
};
use fsbench_base::owned;
use std::ffi::CString;
use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use zerocopy::IntoBytes;

impl Fs {
    pub(super) fn lookup(&mut self, now: f64, parent: u64, name: &[u8]) -> Out {
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
                Out::at(due, Ok(entry_bytes(ino, attr)))
            }
            Err(e) => Out::at(due, Err(errno(&e))),
        }
    }

    pub(super) fn getattr(&mut self, now: f64, ino: u64) -> Out {
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

    pub(super) fn setattr(&mut self, now: f64, ino: u64, body: &[u8]) -> Out {
        if !self.writable {
            return Out::err(libc::EROFS);
        }
        let Ok(rel) = self.path_of(ino) else {
            return Out::err(libc::ENOENT);
        };
        let Some(a) = parse::<SetattrIn>(body) else {
            return Out::err(libc::EINVAL);
        };
        let due = Some(self.round_trip(now));
        let path = self.abs(&rel);
        let valid = a.valid;
        let r = (|| -> io::Result<()> {
            let (dir, name) = self.beneath(&rel)?;
            if valid & FATTR_MODE != 0 {
                let mode = a.mode & 0o7777;
                File::from(fsbench_base::beneath::open_file(
                    dir.as_raw_fd(),
                    &name,
                    libc::O_RDONLY | libc::O_NONBLOCK,
                )?)
                .set_permissions(fs::Permissions::from_mode(mode))?;
            }
            set_owner(&dir, &name, &a)?;
            if valid & FATTR_SIZE != 0 {
                let size = a.size;
                let fd =
                    owned::open_write(dir.as_raw_fd(), &name, owned::Open::Own, libc::O_WRONLY)?;
                owned::set_len(&fd, size)?;
                if let Some(c) = self.cached.get_mut(&ino) {
                    OpenOptions::new()
                        .write(true)
                        .open(&c.path)?
                        .set_len(size)?;
                    self.cached_bytes = self.cached_bytes - c.size + size;
                    c.size = size;
                }
            }
            set_times(&dir, &name, &a)?;
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

    /// Where a new entry `name` of directory `parent` goes (its path below the tree), with
    /// the round trip charged; or the error to answer at once.
    fn new_entry(
        &mut self,
        now: f64,
        parent: u64,
        name: &[u8],
    ) -> Result<(Option<f64>, PathBuf), Out> {
        if !valid_name(name) {
            return Err(Out::err(libc::EINVAL));
        }
        let Ok(prel) = self.path_of(parent) else {
            return Err(Out::err(libc::ENOENT));
        };
        let due = Some(self.round_trip(now));
        Ok((due, prel.join(OsStr::from_bytes(name))))
    }

    pub(super) fn create(&mut self, now: f64, parent: u64, body: &[u8]) -> Out {
        if !self.writable {
            return Out::err(libc::EROFS);
        }
        let Some(c) = parse::<CreateIn>(body) else {
            return Out::err(libc::EINVAL);
        };
        let (flags, mode, umask) = (c.flags as i32, c.mode, c.umask);
        let name = cname(after::<CreateIn>(body));
        let (due, rel) = match self.new_entry(now, parent, name) {
            Ok(e) => e,
            Err(out) => return out,
        };
        let path = self.abs(&rel);
        let created = self.beneath(&rel).and_then(|(dir, name)| {
            let how = owned::how_for_flags(libc::O_CREAT | (flags & libc::O_EXCL));
            let fd = owned::open_write_mode(
                dir.as_raw_fd(),
                &name,
                how,
                libc::O_RDWR,
                mode & !umask & 0o7777,
            )?;
            if flags & libc::O_TRUNC != 0 {
                owned::set_len(&fd, 0)?;
            }
            Ok(File::from(fd))
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
            Protocol::WholeFile => match self.open_new_copy(now, ino, &path, &m) {
                Ok(f) => f,
                Err(e) => return Out::at(due, Err(e)),
            },
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
        let mut out = entry_bytes(ino, attr);
        out.extend_from_slice(&open_bytes(fh));
        Out::at(due, Ok(out))
    }

    /// A created file's copy in the client cache, opened: made locally (nothing to fetch)
    /// unless the file existed with content.
    fn open_new_copy(
        &mut self,
        now: f64,
        ino: u64,
        path: &Path,
        m: &fs::Metadata,
    ) -> Result<File, i32> {
        if m.size() > 0 {
            let (_, r) = self.whole_file_fetch(now, ino, path, m);
            r?;
        } else {
            if let Some(old) = self.cached.remove(&ino) {
                self.cached_bytes -= old.size;
            }
            let dst = self.cache_dir.join(ino.to_string());
            if let Err(e) = File::create(&dst) {
                return Err(errno(&e));
            }
            self.tick += 1;
            self.cached.insert(
                ino,
                Cached {
                    path: dst,
                    size: 0,
                    version: version(m),
                    last_used: self.tick,
                    open: 0,
                    dirty: false,
                },
            );
        }
        let c = self.cached.get_mut(&ino).expect("cached");
        c.open += 1;
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(&c.path)
            .map_err(|e| errno(&e))
    }

    pub(super) fn mkdir(&mut self, now: f64, parent: u64, body: &[u8]) -> Out {
        if !self.writable {
            return Out::err(libc::EROFS);
        }
        let Some(MkdirIn { mode, umask }) = parse::<MkdirIn>(body) else {
            return Out::err(libc::EINVAL);
        };
        let name = cname(after::<MkdirIn>(body));
        let (due, rel) = match self.new_entry(now, parent, name) {
            Ok(e) => e,
            Err(out) => return out,
        };
        let path = self.abs(&rel);
        let r = self.beneath(&rel).and_then(|(dir, name)| {
            let mode = mode & !umask & 0o7777;
            owned::mkdir(dir.as_raw_fd(), &name, mode)?;
            // The process umask applied too: set exactly what the client asked for.
            File::from(fsbench_base::beneath::open_dir(dir.as_raw_fd(), &name)?)
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
                Out::at(due, Ok(entry_bytes(ino, attr)))
            }
            Err(e) => Out::at(due, Err(errno(&e))),
        }
    }

    /// Forget a path (and what is below it) from the inode table and caches.
    pub(super) fn forget_path(&mut self, rel: &Path) {
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
                let _ = fsbench_base::owned::path::remove_file(&c.path);
                self.cached_bytes -= c.size;
            }
            self.drop_chunks(i);
            self.chunk_versions.remove(&i);
        }
    }

    pub(super) fn remove(&mut self, now: f64, parent: u64, name: &[u8], dir: bool) -> Out {
        if !self.writable {
            return Out::err(libc::EROFS);
        }
        let Ok(prel) = self.path_of(parent) else {
            return Out::err(libc::ENOENT);
        };
        let due = Some(self.round_trip(now));
        let rel = prel.join(OsStr::from_bytes(name));
        let r = self.beneath(&rel).and_then(|(d, n)| {
            if dir {
                owned::rmdir(d.as_raw_fd(), &n)
            } else {
                owned::unlink(d.as_raw_fd(), &n)
            }
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

    pub(super) fn rename(&mut self, now: f64, parent: u64, body: &[u8], v2: bool) -> Out {
        if !self.writable {
            return Out::err(libc::EROFS);
        }
        let parsed = if v2 {
            parse::<Rename2In>(body).map(|r| (r.newdir, r.flags, after::<Rename2In>(body)))
        } else {
            parse::<RenameIn>(body).map(|r| (r.newdir, 0, after::<RenameIn>(body)))
        };
        let Some((newdir, flags, names)) = parsed else {
            return Out::err(libc::EINVAL);
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
            owned::rename(od.as_raw_fd(), &on, nd.as_raw_fd(), &nn, 0)
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

    pub(super) fn readlink(&mut self, now: f64, ino: u64) -> Out {
        let Ok(rel) = self.path_of(ino) else {
            return Out::err(libc::ENOENT);
        };
        let due = Some(self.round_trip(now));
        let r = fs::read_link(self.abs(&rel))
            .map(|t| t.as_os_str().as_bytes().to_vec())
            .map_err(|e| errno(&e));
        Out::at(due, r)
    }

    pub(super) fn opendir(&mut self, ino: u64) -> Out {
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
        let out = OpenOut {
            fh,
            ..Default::default()
        };
        Out::now(out.as_bytes().to_vec())
    }

    /// The listing costs one round trip, charged to the first READDIR of an
    /// opendir unless the client fetched the listing less than ATTR_TTL ago.
    pub(super) fn readdir(&mut self, now: f64, fh: u64, offset: u64, size: usize) -> Out {
        let Some(d) = self.dirs.get(&fh) else {
            return Out::err(libc::EBADF);
        };
        let dino = d.ino;
        let entries = d.entries.iter().map(|(i, n, t)| (*i, n.as_slice(), *t));
        let out = dirents(entries, offset, size);
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

    pub(super) fn statfs(&self) -> Out {
        let c = match cstr(&self.root) {
            Ok(c) => c,
            Err(_) => return Out::err(libc::EINVAL),
        };
        // SAFETY: zeroed statvfs is a valid out-parameter; c is a valid C string.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            return Out::err(errno(&io::Error::last_os_error()));
        }
        let out = StatfsOut {
            blocks: st.f_blocks,
            bfree: st.f_bfree,
            bavail: st.f_bavail,
            files: st.f_files,
            ffree: st.f_ffree,
            bsize: st.f_bsize as u32,
            namelen: st.f_namemax as u32,
            frsize: st.f_frsize as u32,
            ..Default::default()
        };
        Out::now(out.as_bytes().to_vec())
    }
}

/// SETATTR's owner change (FATTR_UID, FATTR_GID), of `name` in `dir`.
fn set_owner(dir: &OwnedFd, name: &CString, a: &SetattrIn) -> io::Result<()> {
    let valid = a.valid;
    if valid & (FATTR_UID | FATTR_GID) == 0 {
        return Ok(());
    }
    let uid = if valid & FATTR_UID != 0 {
        a.uid
    } else {
        u32::MAX
    };
    let gid = if valid & FATTR_GID != 0 {
        a.gid
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
    Ok(())
}

/// SETATTR's access and modification times (given, or now), of `name` in `dir`.
fn set_times(dir: &OwnedFd, name: &CString, a: &SetattrIn) -> io::Result<()> {
    let valid = a.valid;
    if valid & (FATTR_ATIME | FATTR_MTIME | FATTR_ATIME_NOW | FATTR_MTIME_NOW) == 0 {
        return Ok(());
    }
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
        ts(FATTR_ATIME, FATTR_ATIME_NOW, a.atime, a.atimensec),
        ts(FATTR_MTIME, FATTR_MTIME_NOW, a.mtime, a.mtimensec),
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
    Ok(())
}
