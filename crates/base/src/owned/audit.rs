//! Reading what an existing owned tree holds before fsbench continues or reuses it (a
//! continued aged directory, a reuse fileset, a directory about to be cleaned), with a
//! verdict per entry: fsbench's to write and delete, or not. The walk is by directory
//! descriptors from the tree's root, in name order (the same tree gives the same sequence),
//! never through a link and never into another mount.

use super::NotOurs;
use crate::beneath;
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;

/// What fsbench may do with an entry it found in a tree it owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A directory, or a regular file that is the only link to its data, of the running user.
    Ours,
    /// A mount point (a file system or bind mount, of a directory or a file): not entered,
    /// never written or deleted.
    Mount,
    /// Something fsbench did not make: a file with other links or another owner, a
    /// directory of another user, a link, a FIFO ...
    Foreign(NotOurs),
}

/// One entry found by [`walk`].
pub struct Entry<'a> {
    /// The path below the root, `/`-separated.
    pub rel: &'a [u8],
    /// Directories between the root and the entry (0: directly in the root).
    pub depth: u32,
    /// `fstatat(AT_SYMLINK_NOFOLLOW)` of the entry.
    pub stat: &'a libc::stat,
    pub verdict: Verdict,
}

impl Entry<'_> {
    pub fn is_dir(&self) -> bool {
        self.stat.st_mode & libc::S_IFMT == libc::S_IFDIR
    }
    pub fn is_file(&self) -> bool {
        self.stat.st_mode & libc::S_IFMT == libc::S_IFREG
    }
    /// The last component of the path.
    pub fn name(&self) -> &[u8] {
        self.rel.rsplit(|b| *b == b'/').next().unwrap_or(self.rel)
    }
}

/// What a [`walk`] found that is not fsbench's, by kind.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub entries: u64,
    pub mounts: u64,
    pub foreign: u64,
    /// The first few entries that are not fsbench's, with the reason.
    pub examples: Vec<String>,
}

impl Summary {
    fn note(&mut self, rel: &[u8], why: &str) {
        if self.examples.len() < 5 {
            self.examples
                .push(format!("{}: {why}", String::from_utf8_lossy(rel)));
        }
    }
}

/// The verdict on one entry of directory `dir` whose mount id is `mnt`.
fn verdict(dir: RawFd, name: &CStr, st: &libc::stat, mnt: Option<u64>) -> Verdict {
    if mnt.is_some() && beneath::mount_id_at(dir, name).ok().flatten() != mnt {
        return Verdict::Mount;
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR if st.st_uid == beneath::euid() => Verdict::Ours,
        libc::S_IFDIR => Verdict::Foreign(NotOurs::Owner { uid: st.st_uid }),
        _ => match super::check_own(st) {
            Ok(()) => Verdict::Ours,
            Err(n) => Verdict::Foreign(n),
        },
    }
}

/// Visit every entry below the open directory `root` (not `root` itself), depth-first and
/// in name order; directories that are fsbench's are entered, nothing else is. `visit` sees
/// each entry before the entries inside it.
pub fn walk(
    root: RawFd,
    visit: &mut dyn FnMut(&Entry<'_>) -> io::Result<()>,
) -> io::Result<Summary> {
    let mut sum = Summary::default();
    // A directory to read: its parent's descriptor (shared while siblings wait, so open
    // descriptors grow with the depth, not the width), its name, path and depth.
    let top = Rc::new(beneath::open_dir_any_mount(root, c".")?);
    let mut stack: Vec<(Rc<OwnedFd>, CString, Vec<u8>, u32)> =
        vec![(top, CString::from(c"."), Vec::new(), 0)];
    while let Some((parent, name, path, depth)) = stack.pop() {
        let dir = match beneath::open_dir(parent.as_raw_fd(), &name) {
            Ok(fd) => Rc::new(fd),
            // Mounted or replaced since it was listed: not entered.
            Err(e) if beneath::is_mount_error(&e) => {
                sum.mounts += 1;
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        drop(parent);
        let subdirs = read_dir(&dir, &path, depth, &mut sum, visit)?;
        for (name, rel) in subdirs.into_iter().rev() {
            stack.push((Rc::clone(&dir), name, rel, depth + 1));
        }
    }
    Ok(sum)
}

/// Visit the entries of one directory in name order; the subdirectories to enter.
fn read_dir(
    dir: &OwnedFd,
    path: &[u8],
    depth: u32,
    sum: &mut Summary,
    visit: &mut dyn FnMut(&Entry<'_>) -> io::Result<()>,
) -> io::Result<Vec<(CString, Vec<u8>)>> {
    let mnt = beneath::mount_of(dir.as_raw_fd())?.1;
    let mut names = beneath::list_names(dir.as_raw_fd())?;
    names.sort();
    let mut subdirs = Vec::new();
    for name in names {
        let st = match beneath::lstat_at(dir.as_raw_fd(), &name) {
            Ok(st) => st,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let rel = join(path, &name);
        let v = verdict(dir.as_raw_fd(), &name, &st, mnt);
        sum.entries += 1;
        match &v {
            Verdict::Ours => {}
            Verdict::Mount => {
                sum.mounts += 1;
                sum.note(&rel, "a mount point, left alone");
            }
            Verdict::Foreign(n) => {
                sum.foreign += 1;
                sum.note(&rel, &n.to_string());
            }
        }
        let enter = v == Verdict::Ours && st.st_mode & libc::S_IFMT == libc::S_IFDIR;
        visit(&Entry {
            rel: &rel,
            depth,
            stat: &st,
            verdict: v,
        })?;
        if enter {
            subdirs.push((name, rel));
        }
    }
    Ok(subdirs)
}

fn join(path: &[u8], name: &CString) -> Vec<u8> {
    let mut rel = path.to_vec();
    if !rel.is_empty() {
        rel.push(b'/');
    }
    rel.extend_from_slice(name.to_bytes());
    rel
}
