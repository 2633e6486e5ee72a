//! The initial tree of a trace, rebuilt beneath the replay's roots before the measurement.

use super::map::Mapper;
use crate::trace::confine::{Beneath, CallError, Roots};
use crate::trace::format::{self, EntryKind, Header};
use anyhow::{bail, Result};
use std::os::fd::AsRawFd;

/// What rebuilding the initial tree did.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Rebuilt {
    pub(super) entries: u64,
    pub(super) bytes: u64,
    /// Entries whose path leaves its root (`..`, through a link pointing out): not made.
    pub(super) refused: u64,
}

/// Rebuild the initial tree beneath the roots' directories: directories, files of the
/// recorded sizes filled with non-zero data, symbolic links. Every entry is made through
/// [`Roots`], like the replayed calls, so an entry whose path leaves its root is refused.
pub(super) fn rebuild(header: &Header, mapper: &Mapper, roots: &Roots) -> Result<Rebuilt> {
    let mut rng = <rand_pcg::Pcg64Mcg as rand::SeedableRng>::seed_from_u64(0x7ace);
    let mut chunk = vec![0u8; 1 << 20];
    rand::RngCore::fill_bytes(&mut rng, &mut chunk);
    for b in chunk.iter_mut() {
        if *b == 0 {
            *b = 1;
        }
    }
    let mut done = Rebuilt::default();
    let mut entries: Vec<&format::Initial> = header.initial.iter().collect();
    // Parents before children.
    entries.sort_by_key(|e| (e.root, e.path.matches('/').count(), e.path.clone()));
    for e in entries {
        let Some(root) = header.roots.get(e.root as usize) else {
            continue;
        };
        let traced = if e.path.is_empty() {
            root.clone()
        } else {
            format!("{}/{}", root.trim_end_matches('/'), e.path)
        };
        let Some(p) = mapper.beneath(&traced) else {
            continue;
        };
        match make_entry(e, &p, mapper, roots, &chunk) {
            Ok(true) => {
                done.entries += 1;
                if e.kind == EntryKind::File {
                    done.bytes += e.size;
                }
            }
            Ok(false) => {}
            Err(CallError::Refused(_)) => done.refused += 1,
            Err(CallError::Io(err)) => {
                bail!("rebuilding the initial tree's {traced:?} (in {}): {err}", {
                    mapper.dirs[p.root as usize].display()
                })
            }
        }
    }
    Ok(done)
}

/// Make one entry of the initial tree; false when there is nothing to make.
pub(super) fn make_entry(
    e: &format::Initial,
    p: &Beneath,
    mapper: &Mapper,
    roots: &Roots,
    chunk: &[u8],
) -> Result<bool, CallError> {
    use std::io::Write;
    let is_root = p.rel.as_bytes().iter().all(|b| *b == b'/');
    let fd = match e.kind {
        EntryKind::Dir => {
            if !is_root {
                mkdir_beneath(roots, p)?;
            }
            roots.open(p, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)?
        }
        EntryKind::File => {
            // The root starts empty: every file of the initial tree is a new one.
            let fl = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
            let fd = roots.open(p, fl, 0o600)?;
            let mut f = std::fs::File::from(fd);
            let mut left = e.size;
            while left > 0 {
                let k = left.min(chunk.len() as u64) as usize;
                f.write_all(&chunk[..k])?;
                left -= k as u64;
            }
            f.into()
        }
        EntryKind::Symlink => {
            let t = mapper.link_target(p, e.target.as_deref().unwrap_or(""));
            let (d, n) = roots.entry(p)?;
            // SAFETY: valid C strings and a directory descriptor.
            if unsafe { libc::symlinkat(t.as_ptr(), d.as_raw_fd(), n.as_ptr()) } != 0 {
                return Err(std::io::Error::last_os_error().into());
            }
            return Ok(true);
        }
        EntryKind::Other => return Ok(false),
    };
    if e.mode != 0 {
        // Directories stay writable by the owner so the replay can work in them.
        let mode = if e.kind == EntryKind::Dir {
            (e.mode & 0o7777) | 0o700
        } else {
            e.mode & 0o7777
        };
        // SAFETY: a descriptor just opened on the entry itself.
        unsafe { libc::fchmod(fd.as_raw_fd(), mode) };
    }
    Ok(true)
}

/// mkdir `p` beneath its root, and its missing parents; an existing one is fine.
pub(super) fn mkdir_beneath(roots: &Roots, p: &Beneath) -> Result<(), CallError> {
    for attempt in 0..2 {
        let (d, n) = roots.entry(p)?;
        // SAFETY: valid C string and directory descriptor.
        if unsafe { libc::mkdirat(d.as_raw_fd(), n.as_ptr(), 0o700) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EEXIST) => return Ok(()),
            // A parent the header does not list: make it first (a depth's worth of calls).
            Some(libc::ENOENT) if attempt == 0 => {
                let b = p.rel.as_bytes();
                let Some(i) = b.iter().rposition(|c| *c == b'/') else {
                    return Err(e.into());
                };
                let parent = Beneath::new(p.root, &String::from_utf8_lossy(&b[..i]))
                    .ok_or(CallError::Io(e))?;
                mkdir_beneath(roots, &parent)?;
            }
            _ => return Err(e.into()),
        }
    }
    Ok(())
}
