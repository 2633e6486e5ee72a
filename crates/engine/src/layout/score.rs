//! The Smith–Seltzer layout score of one file from its extent list.
//!
//! For a file of n blocks, block i ≥ 2 is *contiguous* ("optimal" in Smith &
//! Seltzer) when its physical address is that of block i−1 plus one. The
//! file's score is contiguous / (n − 1); a set of files scores
//! Σ contiguous / Σ (n − 1) over files with at least two blocks.
//!
//! From FIEMAP: inside one extent, every block after the first is contiguous
//! (len/bs − 1 of them). At an extent boundary the first block of the next
//! extent is contiguous only if it continues the previous extent both
//! logically (no hole) and physically. ext4 splits extents at 32768 blocks
//! (128 MiB) and reports them separately even when they touch; those
//! boundaries therefore count as contiguous, as they should.
//!
//! Extents without a real address are not scored: delayed allocations
//! (`DELALLOC`/`UNKNOWN`: no block yet, run with `--sync`) and inline or
//! tail-packed data (`DATA_INLINE`/`NOT_ALIGNED`: stored with metadata). They
//! break the chain, so the next real block counts as discontiguous.
//! Unwritten (preallocated) extents have real blocks and are scored like
//! written ones, but counted so the report can say how much was fallocated.

use serde::Serialize;

use super::fiemap::*;

/// Layout facts about one file.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FileScore {
    /// Blocks with a physical address (scored blocks).
    pub blocks: u64,
    /// Blocks (after the first) that physically follow the previous block.
    pub contiguous: u64,
    /// Extents as reported by FIEMAP.
    pub extents: u64,
    /// Physically contiguous runs (what `filefrag` calls extents).
    pub fragments: u64,
    pub unwritten_extents: u64,
    /// Extents without an address yet (delayed allocation or unknown).
    pub unknown_extents: u64,
    /// Inline or tail-packed extents.
    pub inline_extents: u64,
    /// Compressed/encrypted extents (btrfs compression inflates extent counts).
    pub encoded_extents: u64,
    /// Extents shared with other files (reflinks, snapshots).
    pub shared_extents: u64,
    /// Physical block of the first scored block, and of the last (in logical order): where
    /// a read of the file starts and ends on disk.
    pub first_block: Option<u64>,
    pub last_block: Option<u64>,
}

impl FileScore {
    /// Pairs of consecutive blocks: the score's denominator (n − 1, or 0).
    pub fn pairs(&self) -> u64 {
        self.blocks.saturating_sub(1)
    }

    /// contiguous / (blocks − 1), or `None` for files of fewer than 2 blocks.
    pub fn score(&self) -> Option<f64> {
        (self.pairs() > 0).then(|| self.contiguous as f64 / self.pairs() as f64)
    }
}

/// Score a file's extents (in logical order) with file-system block size `bs`.
pub fn score_extents(extents: &[Extent], bs: u64) -> FileScore {
    let bs = bs.max(1);
    let mut s = FileScore {
        extents: extents.len() as u64,
        ..FileScore::default()
    };
    // End of the previous scored extent: (logical, physical) in bytes.
    let mut prev: Option<(u64, u64)> = None;
    for e in extents {
        let f = e.flags;
        if f & FIEMAP_EXTENT_UNWRITTEN != 0 {
            s.unwritten_extents += 1;
        }
        if f & (FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_ENCRYPTED) != 0 {
            s.encoded_extents += 1;
        }
        if f & FIEMAP_EXTENT_SHARED != 0 {
            s.shared_extents += 1;
        }
        if f & (FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN) != 0 {
            s.unknown_extents += 1;
            prev = None;
            continue;
        }
        if f & (FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_NOT_ALIGNED)
            != 0
        {
            s.inline_extents += 1;
            prev = None;
            continue;
        }
        let n = e.length.div_ceil(bs);
        if n == 0 {
            continue;
        }
        s.blocks += n;
        s.contiguous += n - 1;
        s.first_block.get_or_insert(e.physical / bs);
        s.last_block = Some(e.physical / bs + n - 1);
        match prev {
            // The first block continues the previous run.
            Some((l, p)) if l == e.logical && p == e.physical => s.contiguous += 1,
            _ => s.fragments += 1,
        }
        let len = n * bs;
        prev = Some((e.logical + len, e.physical + len));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const BS: u64 = 4096;

    fn ext(logical_blk: u64, physical_blk: u64, blocks: u64, flags: u32) -> Extent {
        Extent {
            logical: logical_blk * BS,
            physical: physical_blk * BS,
            length: blocks * BS,
            flags,
        }
    }

    #[test]
    fn single_extent_is_perfect() {
        let s = score_extents(&[ext(0, 1000, 256, FIEMAP_EXTENT_LAST)], BS);
        assert_eq!((s.first_block, s.last_block), (Some(1000), Some(1255)));
        assert_eq!(s.blocks, 256);
        assert_eq!(s.contiguous, 255);
        assert_eq!(s.fragments, 1);
        assert_eq!(s.score(), Some(1.0));
    }

    #[test]
    fn one_block_and_empty_files_have_no_score() {
        assert_eq!(
            score_extents(&[ext(0, 5, 1, FIEMAP_EXTENT_LAST)], BS).score(),
            None
        );
        assert_eq!(score_extents(&[], BS).score(), None);
        // A partial last block still counts as a block.
        let s = score_extents(
            &[Extent {
                logical: 0,
                physical: 0,
                length: 100,
                flags: 0,
            }],
            BS,
        );
        assert_eq!(s.blocks, 1);
    }

    #[test]
    fn adjacent_extents_count_as_contiguous() {
        // ext4 reports a 128 MiB boundary as two extents that touch.
        let s = score_extents(&[ext(0, 100, 4, 0), ext(4, 104, 4, FIEMAP_EXTENT_LAST)], BS);
        assert_eq!(
            (s.blocks, s.contiguous, s.extents, s.fragments),
            (8, 7, 2, 1)
        );
        assert_eq!(s.score(), Some(1.0));
    }

    #[test]
    fn split_file_loses_one_block_per_jump() {
        // 10 blocks in three pieces: 2 discontinuities out of 9 pairs.
        let s = score_extents(
            &[
                ext(0, 100, 4, 0),
                ext(4, 500, 3, 0),
                ext(7, 50, 3, FIEMAP_EXTENT_LAST),
            ],
            BS,
        );
        assert_eq!((s.blocks, s.contiguous, s.fragments), (10, 7, 3));
        assert_eq!((s.first_block, s.last_block), (Some(100), Some(52)));
        assert!((s.score().unwrap() - 7.0 / 9.0).abs() < 1e-12);
    }

    #[test]
    fn interleaved_single_blocks_score_zero() {
        // Two files written alternately one block at a time: every block of
        // this file sits two blocks after the previous one.
        let v: Vec<Extent> = (0..8).map(|i| ext(i, 1000 + 2 * i, 1, 0)).collect();
        let s = score_extents(&v, BS);
        assert_eq!((s.blocks, s.contiguous, s.fragments), (8, 0, 8));
        assert_eq!(s.score(), Some(0.0));
    }

    #[test]
    fn physical_continuation_across_a_hole_is_not_contiguous() {
        let s = score_extents(
            &[ext(0, 100, 2, 0), ext(10, 102, 2, FIEMAP_EXTENT_LAST)],
            BS,
        );
        assert_eq!((s.blocks, s.contiguous), (4, 2));
    }

    #[test]
    fn backwards_order_is_not_contiguous() {
        let s = score_extents(&[ext(0, 200, 2, 0), ext(2, 198, 2, 0)], BS);
        assert_eq!(s.contiguous, 2);
    }

    #[test]
    fn unwritten_extents_are_scored_and_counted() {
        let s = score_extents(
            &[
                ext(0, 100, 4, FIEMAP_EXTENT_UNWRITTEN),
                ext(4, 104, 4, 0),
                ext(8, 300, 2, FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_LAST),
            ],
            BS,
        );
        assert_eq!((s.blocks, s.contiguous, s.unwritten_extents), (10, 8, 2));
    }

    #[test]
    fn delalloc_and_inline_extents_are_not_scored() {
        let s = score_extents(
            &[
                ext(0, 100, 4, 0),
                ext(4, 0, 4, FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN),
                ext(8, 108, 2, FIEMAP_EXTENT_LAST),
            ],
            BS,
        );
        // 6 real blocks; the chain breaks at the delalloc extent.
        assert_eq!((s.blocks, s.contiguous, s.unknown_extents), (6, 4, 1));
        assert_eq!(s.fragments, 2);
        let s = score_extents(
            &[Extent {
                logical: 0,
                physical: 0,
                length: 60,
                flags: FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_LAST,
            }],
            BS,
        );
        assert_eq!((s.blocks, s.inline_extents, s.score()), (0, 1, None));
    }

    #[test]
    fn flags_are_counted() {
        let s = score_extents(
            &[
                ext(0, 10, 1, FIEMAP_EXTENT_ENCODED),
                ext(1, 11, 1, FIEMAP_EXTENT_SHARED | FIEMAP_EXTENT_LAST),
            ],
            BS,
        );
        assert_eq!(
            (s.encoded_extents, s.shared_extents, s.contiguous),
            (1, 1, 1)
        );
    }
}
