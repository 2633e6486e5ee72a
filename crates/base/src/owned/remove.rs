//! Removing trees: never through a link, never across a mount, the rest removed when part
//! cannot be, and what was left named in the error.

use crate::beneath;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

fn is_dir(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFDIR
}

/// The error a removal reports for a mount found inside the tree it removes.
fn mount_inside() -> io::Error {
    io::Error::other(
        "another file system is mounted there; fsbench never deletes across a mount \
         (unmount it, then remove what is left, e.g. with `fsbench clean`)",
    )
}

/// Open the directory `name` in `dir` for removal: never through a link, and never into
/// another mount ([`beneath::open_dir`]), with the mount said in words.
fn open_dir_same_mount(dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
    beneath::open_dir(dir, name).map_err(|e| {
        if beneath::is_mount_error(&e) {
            mount_inside()
        } else {
            e
        }
    })
}

/// One removal: where it is (for messages), and what it could not remove.
struct Removal {
    /// The path below the starting directory, `/`-separated.
    rel: Vec<u8>,
    /// What could not be removed, and why (the first few).
    failed: Vec<String>,
    /// How many entries could not be removed.
    count: usize,
    /// Whether a second interrupt cut the removal short.
    cut: bool,
}

impl Removal {
    fn new() -> Removal {
        Removal {
            rel: Vec::new(),
            failed: Vec::new(),
            count: 0,
            cut: false,
        }
    }

    fn fail(&mut self, e: &io::Error) {
        self.count += 1;
        if self.failed.len() < 5 {
            let at = if self.rel.is_empty() {
                ".".into()
            } else {
                String::from_utf8_lossy(&self.rel)
            };
            self.failed.push(format!("{at}: {e}"));
        }
    }

    fn push(&mut self, name: &CStr) -> usize {
        let len = self.rel.len();
        if len > 0 {
            self.rel.push(b'/');
        }
        self.rel.extend_from_slice(name.to_bytes());
        len
    }

    /// Remove `name` in `dir` (and everything below it); failures are recorded, not
    /// returned, so that the rest is still removed. Returns whether it is gone.
    fn tree(&mut self, dir: RawFd, name: &CStr) -> bool {
        if crate::cancel::hurried() {
            self.cut = true;
            return false;
        }
        let len = self.push(name);
        let gone = match self.entry(dir, name) {
            Ok(gone) => gone,
            Err(e) => {
                self.fail(&e);
                false
            }
        };
        self.rel.truncate(len);
        gone
    }

    fn entry(&mut self, dir: RawFd, name: &CStr) -> io::Result<bool> {
        let st = match beneath::lstat_at(dir, name) {
            Ok(st) => st,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
            Err(e) => return Err(e),
        };
        if !is_dir(&st) {
            ignore_missing(super::unlink(dir, name))?;
            return Ok(true);
        }
        let sub = open_dir_same_mount(dir, name)?;
        let all = self.contents(sub.as_raw_fd(), &|_| false)?;
        drop(sub);
        if !all {
            return Ok(false);
        }
        ignore_missing(super::rmdir(dir, name))?;
        Ok(true)
    }

    /// Remove what is in `dir` but the names `keep` accepts; whether all of it went.
    fn contents(&mut self, dir: RawFd, keep: &dyn Fn(&CStr) -> bool) -> io::Result<bool> {
        let mut all = true;
        for name in beneath::list_names(dir)? {
            if !keep(&name) {
                all &= self.tree(dir, &name);
            }
        }
        Ok(all)
    }

    fn finish(self) -> io::Result<()> {
        if self.count == 0 && self.cut {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "removal stopped by a second interrupt",
            ));
        }
        if self.count == 0 {
            return Ok(());
        }
        let more = if self.count > self.failed.len() {
            format!(" (and {} more)", self.count - self.failed.len())
        } else {
            String::new()
        };
        Err(io::Error::other(format!(
            "{} {} could not be removed: {}{more}",
            self.count,
            if self.count == 1 { "entry" } else { "entries" },
            self.failed.join("; ")
        )))
    }
}

/// Remove `name` in `dir` and, when it is a directory (not a link to one), everything in it.
/// Entries that vanish meanwhile are not errors. Never follows a link and never crosses into
/// another mount: a mount found inside is left alone with everything above it, the rest is
/// removed, and the error names what was left.
pub fn tree(dir: RawFd, name: &CStr) -> io::Result<()> {
    let mut r = Removal::new();
    r.tree(dir, name);
    r.finish()
}

fn ignore_missing(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Remove everything in the open directory `dir` except the names `keep` accepts, with the
/// guarantees of [`remove_tree_at`].
pub fn contents(dir: RawFd, keep: &dyn Fn(&CStr) -> bool) -> io::Result<()> {
    let mut r = Removal::new();
    if let Err(e) = r.contents(dir, keep) {
        r.fail(&e);
    }
    r.finish()
}
