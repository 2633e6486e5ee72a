//! Where traced paths go: the roots a replay maps below its run directory (or onto
//! `--over` trees), and which calls a replay issues or would change files with.

use crate::trace::confine::Beneath;
use crate::trace::format::{Call, Record};
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Maps traced paths below the roots into the run directory.
pub(super) struct Mapper {
    pub(super) roots: Vec<String>,
    /// Where each root maps: `BASE/r<i>`, or an existing tree (`--over`).
    pub(super) dirs: Vec<PathBuf>,
}

impl Mapper {
    pub(super) fn root_of<'p>(&self, p: &'p str) -> Option<(usize, &'p str)> {
        let mut best: Option<(usize, &'p str)> = None;
        for (i, r) in self.roots.iter().enumerate() {
            let rest = if p == r {
                Some("")
            } else {
                p.strip_prefix(r.as_str())
                    .and_then(|s| s.strip_prefix('/'))
                    .or_else(|| (r == "/").then(|| p.trim_start_matches('/')))
            };
            if let Some(rest) = rest {
                if best.is_none_or(|(b, _)| self.roots[b].len() < r.len()) {
                    best = Some((i, rest));
                }
            }
        }
        best
    }
    pub(super) fn inside(&self, p: &str) -> bool {
        self.root_of(p).is_some()
    }
    /// Where a traced path maps: beneath the directory of its root. Only the roots' own
    /// directories are ever named by a path of their own; everything below them is reached
    /// through [`Roots`], beneath them.
    pub(super) fn beneath(&self, p: &str) -> Option<Beneath> {
        let (i, rest) = self.root_of(p)?;
        Beneath::new(i as u32, rest)
    }
    /// The target to store in a symbolic link the trace creates at `link`.
    pub(super) fn link_target(&self, link: &Beneath, target: &str) -> CString {
        let inroot = if target.starts_with('/') {
            self.beneath(target)
        } else {
            None
        };
        link.link_target(target, inroot.as_ref())
    }
}

impl Mapper {
    /// Roots mapped to `base/r0`, `base/r1` ..., or to the `over` trees when given.
    pub(super) fn new(roots: Vec<String>, base: &Path, over: &[PathBuf]) -> Mapper {
        let dirs = if over.is_empty() {
            (0..roots.len())
                .map(|i| base.join(format!("r{i}")))
                .collect()
        } else {
            over.to_vec()
        };
        Mapper { roots, dirs }
    }
}

/// Whether replaying `r` would change something below the roots.
pub(super) fn changes_below_roots(r: &Record, mapper: &Mapper) -> bool {
    if !replayable(r.call) {
        return false;
    }
    let inside = r.path.as_deref().is_some_and(|p| mapper.inside(p))
        || r.path2.as_deref().is_some_and(|p| mapper.inside(p));
    if !inside {
        return false;
    }
    let writes = r.call == Call::Open
        && r.flags
            .is_some_and(|f| (f as i32) & libc::O_ACCMODE != libc::O_RDONLY);
    mutates(r) || writes
}

pub(super) fn mutates(r: &Record) -> bool {
    match r.call {
        Call::Open => {
            let f = r.flags.unwrap_or(0) as i32;
            f & (libc::O_CREAT | libc::O_TRUNC) != 0
        }
        Call::Write
        | Call::Mkdir
        | Call::Rmdir
        | Call::Unlink
        | Call::Rename
        | Call::Link
        | Call::Symlink
        | Call::Truncate
        | Call::Fallocate
        | Call::Chmod
        | Call::Utimes
        | Call::Sendfile
        | Call::CopyRange => true,
        _ => false,
    }
}

/// Whether replay issues this call at all.
pub(super) fn replayable(c: Call) -> bool {
    !matches!(
        c,
        Call::Other
            | Call::Munmap
            | Call::Chdir
            | Call::Exit
            | Call::Clone
            | Call::Exec
            | Call::Wait
    )
}

pub(super) fn parent(p: &str) -> Option<&str> {
    let i = p.rfind('/')?;
    Some(if i == 0 { "/" } else { &p[..i] })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{mapper, rec};
    use super::*;

    /// The first replayed call that would change something below the roots: a path call that
    /// modifies, or an open for writing (whose writes would land there).
    fn first_change_below_roots<'r>(records: &'r [Record], mapper: &Mapper) -> Option<&'r Record> {
        records.iter().find(|r| changes_below_roots(r, mapper))
    }

    #[test]
    fn over_maps_roots_onto_trees_and_only_reading_traces_pass() {
        let m = Mapper::new(
            vec!["/w".into()],
            Path::new("/run"),
            &[PathBuf::from("/srv/tree")],
        );
        assert_eq!(m.beneath("/w/a/b"), Beneath::new(0, "a/b"));
        let mut open_ro = rec(1, Call::Open, Some("/w/a"), None, 3);
        open_ro.flags = Some(libc::O_RDONLY as u64);
        let mut open_out = rec(1, Call::Open, Some("/tmp/out"), None, 4);
        open_out.flags = Some((libc::O_WRONLY | libc::O_CREAT) as u64);
        let reads = vec![
            open_ro.clone(),
            rec(1, Call::Read, None, Some(3), 10),
            open_out,
            rec(1, Call::Write, None, Some(4), 10),
        ];
        assert!(first_change_below_roots(&reads, &m).is_none());
        let mut open_rw = open_ro.clone();
        open_rw.flags = Some(libc::O_RDWR as u64);
        for bad in [
            open_rw,
            rec(1, Call::Unlink, Some("/w/a"), None, 0),
            rec(1, Call::Mkdir, Some("/w/d"), None, 0),
        ] {
            let mut t = reads.clone();
            t.push(bad.clone());
            assert_eq!(
                first_change_below_roots(&t, &m).map(|r| r.call),
                Some(bad.call),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn paths_map_below_the_longest_root_and_others_stay_outside() {
        let m = mapper();
        assert_eq!(m.beneath("/w/a/b"), Beneath::new(0, "a/b"));
        assert_eq!(m.beneath("/w"), Beneath::new(0, ""));
        assert_eq!(m.beneath("/w//x"), Beneath::new(0, "x"));
        assert_eq!(m.beneath("/w/deep/x"), Beneath::new(1, "x"));
        // Kept as recorded: the kernel resolves `..` beneath the root, and refuses it there.
        assert_eq!(m.beneath("/w/../etc"), Beneath::new(0, "../etc"));
        assert_eq!(m.beneath("/wx/a"), None);
        assert_eq!(m.beneath("/usr/lib/libc.so.6"), None);
    }
}
