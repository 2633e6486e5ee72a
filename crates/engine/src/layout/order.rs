//! Cross-file locality: the share of blocks that, read in directory order as a whole-tree
//! read does (`cp -r`, `tar`, `grep -r`: each directory's entries in the order the file
//! system lists them, a subdirectory read where it is listed), follow the block read before
//! them on disk. The layout score looks inside each file; this looks at the whole read,
//! where an aged file system also loses: consecutive files of one directory far apart, or a
//! file's blocks contiguous but its neighbours elsewhere.
//!
//! The walk is parallel, but each directory is listed by one worker in the file system's
//! order, so every worker keeps, per directory it listed, its entries in that order
//! ([`Listing`]); merged, they give the read order from the root down.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// One file's data as a read meets it: the physical blocks of its first and last logical
/// block, its blocks, and how many of them (after the first) follow the one before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub first: u64,
    pub last: u64,
    pub blocks: u64,
    pub contiguous: u64,
}

/// An entry of a directory, in listing order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Child {
    /// A subdirectory, by its path from the root.
    Dir(Vec<u8>),
    /// A regular file, with its data (none: empty, inline or not allocated yet).
    File(Option<Run>),
}

/// Directories' entries in listing order, by directory path ("" for the root).
#[derive(Debug, Default)]
pub struct Listing {
    dirs: HashMap<Vec<u8>, Vec<Child>>,
}

impl Listing {
    /// Add `child` to directory `parent` (entries of one directory come in listing order).
    pub fn push(&mut self, parent: &[u8], child: Child) {
        match self.dirs.get_mut(parent) {
            Some(v) => v.push(child),
            None => {
                self.dirs.insert(parent.to_vec(), vec![child]);
            }
        }
    }

    pub fn merge(&mut self, other: Listing) {
        for (k, mut v) in other.dirs {
            self.dirs.entry(k).or_default().append(&mut v);
        }
    }

    /// The read of the whole tree in directory order.
    pub fn locality(&self) -> Locality {
        let mut l = Locality::default();
        let mut prev: Option<u64> = None;
        // (directory, next entry) from the root down.
        let mut stack: Vec<(&[u8], usize)> = vec![(b"", 0)];
        while let Some((dir, i)) = stack.pop() {
            let Some(child) = self.dirs.get(dir).and_then(|v| v.get(i)) else {
                continue;
            };
            stack.push((dir, i + 1));
            match child {
                Child::Dir(p) => stack.push((p, 0)),
                Child::File(Some(r)) => {
                    l.blocks += r.blocks;
                    l.contiguous += r.contiguous;
                    if prev.is_some_and(|p| p + 1 == r.first) {
                        l.contiguous += 1;
                    }
                    prev = Some(r.last);
                }
                Child::File(None) => {}
            }
        }
        l.pairs = l.blocks.saturating_sub(1);
        l.score = (l.pairs > 0).then(|| l.contiguous as f64 / l.pairs as f64);
        l
    }
}

/// Blocks of a whole-tree read in directory order, and how many follow the one before.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Locality {
    pub blocks: u64,
    /// Σ over the read of consecutive block pairs (blocks − 1).
    pub pairs: u64,
    /// Pairs whose second block is the next block on disk after the first.
    pub contiguous: u64,
    /// contiguous ÷ pairs; `None` with fewer than two blocks.
    pub score: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(first: u64, blocks: u64) -> Child {
        Child::File(Some(Run {
            first,
            last: first + blocks - 1,
            blocks,
            contiguous: blocks - 1,
        }))
    }

    #[test]
    fn files_read_in_directory_order() {
        // One worker listed the root: f(100..103), dir "d", an empty file, f(110..111);
        // another listed d: f(104..109).
        let mut a = Listing::default();
        a.push(b"", file(100, 4));
        a.push(b"", Child::Dir(b"d".to_vec()));
        a.push(b"", Child::File(None));
        a.push(b"", file(110, 2));
        let mut b = Listing::default();
        b.push(b"d", file(104, 6));
        a.merge(b);
        let l = a.locality();
        assert_eq!((l.blocks, l.pairs), (12, 11));
        // Inside: 3 + 5 + 1; across: 103 -> 104 and 109 -> 110.
        assert_eq!(l.contiguous, 11);
        assert_eq!(l.score, Some(1.0));
    }

    #[test]
    fn a_jump_between_files_costs_one_pair() {
        let mut a = Listing::default();
        a.push(b"", file(100, 4));
        a.push(b"", file(500, 4));
        a.push(b"", file(504, 2));
        let l = a.locality();
        assert_eq!((l.pairs, l.contiguous), (9, 8));
        assert!(Listing::default().locality().score.is_none());
    }
}
