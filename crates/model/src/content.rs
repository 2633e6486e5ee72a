//! What the bytes fsbench writes look like: how much of each block compresses and how many
//! blocks repeat earlier ones.
//!
//! File systems and devices that compress or deduplicate (btrfs with compression, ZFS, VDO,
//! SSD controllers) run faster or slower depending on the data, so the data is a parameter of
//! the workload (`compress=`, `dedupe=`, `content=` on a fileset) and the achieved shares are
//! measured after the fact ([`measure`]) rather than assumed.
//!
//! The model works on 4 KiB blocks (the page and usual file-system block size):
//! - **compress=C**: in every block the first `100-C` percent of the bytes are pseudo-random
//!   and the rest repeat one 8-byte word (zeros in duplicate blocks), so a block compressor saves about `C` percent of it (the idea of
//!   fio's `buffer_compress_percentage`).
//! - **dedupe=D**: in every run of 100 consecutive blocks of a file, `D` are copies of one of a
//!   few *anchor* blocks shared by the whole fileset, the others are unique. The pattern is
//!   shifted per file, so even one-block files are duplicates in `D` percent of the files.
//!
//! Every block is a pure function of (seed, file, block index), so a file's content can be
//! regenerated and checked, and nothing is kept in memory but one block's worth of state.
//! Generation uses a 64-bit multiply-xorshift generator writing eight bytes per step, fast
//! enough (see `fsbench selftest content`) never to limit a run.

/// The block the content model works on.
pub const BLOCK: usize = 4096;

/// Fileset-wide blocks that duplicate blocks copy (a few, so that the achieved dedupe share
/// stays within a fraction of a point of the requested one on any but tiny filesets).
const ANCHORS: u64 = 8;

/// The requested data content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Content {
    /// Percentage (0-100) of each block that compresses.
    pub compress: u8,
    /// Percentage (0-100) of blocks that repeat an earlier block.
    pub dedupe: u8,
}

impl Content {
    /// Plain random data: nothing compresses, nothing repeats (the default).
    pub const RANDOM: Content = Content {
        compress: 0,
        dedupe: 0,
    };

    /// The `content=` shorthands and what they mean.
    pub const NAMES: &'static [(&'static str, Content)] = &[
        ("random", Content::RANDOM),
        (
            "zero",
            Content {
                compress: 100,
                dedupe: 100,
            },
        ),
        (
            "compressible",
            Content {
                compress: 50,
                dedupe: 0,
            },
        ),
        (
            "dedupable",
            Content {
                compress: 0,
                dedupe: 50,
            },
        ),
    ];

    /// A `content=` name, if known.
    pub fn named(name: &str) -> Option<Content> {
        Content::NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, c)| *c)
    }

    pub fn is_random(&self) -> bool {
        *self == Content::RANDOM
    }
}

/// SplitMix64's finaliser: a good 64-bit mixer for deriving keys.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fill `out` with pseudo-random bytes from `key` (wyrand: one multiply per eight bytes).
/// Never produces an all-zero block for a non-empty `out` with overwhelming probability;
/// the first byte of every 512 is forced odd as well, so random data is never a hole.
pub fn fill_random(key: u64, out: &mut [u8]) {
    const STEP: u64 = 0xa076_1d64_78bd_642f;
    #[inline(always)]
    fn word(s: u64) -> u64 {
        let t = (s as u128).wrapping_mul((s ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) as u64) ^ (t as u64)
    }
    // The i-th word is word(key + (i + 1) * STEP): four independent multiplies per round.
    let mut s = key;
    let mut quads = out.chunks_exact_mut(32);
    for q in &mut quads {
        let (a, b, c, d) = (
            s.wrapping_add(STEP),
            s.wrapping_add(STEP.wrapping_mul(2)),
            s.wrapping_add(STEP.wrapping_mul(3)),
            s.wrapping_add(STEP.wrapping_mul(4)),
        );
        q[0..8].copy_from_slice(&word(a).to_le_bytes());
        q[8..16].copy_from_slice(&word(b).to_le_bytes());
        q[16..24].copy_from_slice(&word(c).to_le_bytes());
        q[24..32].copy_from_slice(&word(d).to_le_bytes());
        s = d;
    }
    let rest = quads.into_remainder();
    let mut next = || {
        s = s.wrapping_add(STEP);
        word(s).to_le_bytes()
    };
    let mut chunks = rest.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&next());
    }
    let tail = chunks.into_remainder();
    if !tail.is_empty() {
        let n = tail.len();
        tail.copy_from_slice(&next()[..n]);
    }
    for b in out.iter_mut().step_by(512) {
        *b |= 1;
    }
}

/// Generates the blocks of one fileset.
#[derive(Debug, Clone, Copy)]
pub struct Generator {
    content: Content,
    seed: u64,
    /// The compressible share is laid out per chunk of this many bytes (a block by
    /// default; fio's `buffer_compress_chunk`).
    chunk: usize,
}

impl Generator {
    pub fn new(content: Content, seed: u64) -> Generator {
        Generator {
            content,
            seed: mix(seed ^ 0xc0_77e7),
            chunk: BLOCK,
        }
    }

    /// The same content with the random and compressible parts alternating every `chunk`
    /// bytes of a block (each chunk's first `100 - compress` percent random), as fio's
    /// `buffer_compress_chunk`; a chunk of a block or more is the plain model.
    pub fn with_chunk(mut self, chunk: usize) -> Generator {
        self.chunk = chunk.clamp(1, BLOCK);
        self
    }

    /// Is block `block` of file `file` a copy of an anchor block?
    fn is_dup(&self, file: u64, block: u64) -> bool {
        let d = self.content.dedupe as u64;
        if d == 0 {
            return false;
        }
        let phase = mix(self.seed ^ file.wrapping_mul(0x2545_f491_4f6c_dd1d)) % 100;
        (block.wrapping_mul(d).wrapping_add(phase)) % 100 < d
    }

    /// Fill one block (`out.len()` at most [`BLOCK`]; a file's short last block is the prefix
    /// of the full block) of file `file` at block index `block`.
    pub fn block(&self, file: u64, block: u64, out: &mut [u8]) {
        debug_assert!(out.len() <= BLOCK);
        let dup = self.is_dup(file, block);
        let key = if dup {
            // One of the fileset's anchors; their first occurrence is the original.
            let k = mix(self.seed ^ file ^ block.rotate_left(32)) % ANCHORS;
            mix(self.seed.wrapping_add(0xa9c4 + k))
        } else {
            mix(self.seed ^ mix(file.wrapping_add(1)) ^ block.wrapping_mul(0x9e37_79b9))
        };
        if self.chunk < BLOCK && self.content.compress > 0 {
            self.chunked(key, dup, out);
            return;
        }
        let random = BLOCK * (100 - self.content.compress as usize) / 100;
        let r = random.min(out.len());
        fill_random(key, &mut out[..r]);
        // The compressible rest repeats one 8-byte word, unique per block so that fully
        // compressible blocks are still distinct; anchors use zeros (so `content=zero`, all
        // blocks duplicates and fully compressible, is literally zeros).
        let word = if dup {
            [0u8; 8]
        } else {
            mix(key).to_le_bytes()
        };
        let mut p = r;
        while p < out.len() && !p.is_multiple_of(8) {
            out[p] = word[p % 8];
            p += 1;
        }
        if word == [0u8; 8] {
            out[p..].fill(0);
        } else {
            let mut chunks = out[p..].chunks_exact_mut(8);
            for c in &mut chunks {
                c.copy_from_slice(&word);
            }
            let tail = chunks.into_remainder();
            let n = tail.len();
            tail.copy_from_slice(&word[..n]);
        }
    }

    /// A block in chunks: in each, `chunk × (100 - compress) / 100` random bytes, then the
    /// block's word (zeros in duplicates), as fio's `fill_random_buf_percentage` with a
    /// pattern.
    fn chunked(&self, key: u64, dup: bool, out: &mut [u8]) {
        let word = if dup {
            [0u8; 8]
        } else {
            mix(key).to_le_bytes()
        };
        let keep = 100 - self.content.compress as usize;
        for (i, c) in out.chunks_mut(self.chunk).enumerate() {
            let r = (self.chunk * keep / 100).min(c.len());
            fill_random(mix(key ^ i as u64), &mut c[..r]);
            for (j, b) in c[r..].iter_mut().enumerate() {
                *b = word[(r + j) % 8];
            }
        }
    }

    /// Fill `out` with file `file`'s bytes at byte offset `off` (any alignment).
    pub fn fill_at(&self, file: u64, off: u64, out: &mut [u8]) {
        let mut scratch = [0u8; BLOCK];
        let end = off + out.len() as u64;
        let mut b = off / BLOCK as u64;
        while b * (BLOCK as u64) < end {
            let start = b * BLOCK as u64;
            let (s, e) = (off.max(start), end.min(start + BLOCK as u64));
            let dst = &mut out[(s - off) as usize..(e - off) as usize];
            if s == start && e == start + BLOCK as u64 {
                self.block(file, b, dst);
            } else {
                self.block(file, b, &mut scratch);
                dst.copy_from_slice(&scratch[(s - start) as usize..(e - start) as usize]);
            }
            b += 1;
        }
    }

    /// Fill `out` with file `file`'s bytes starting at block-aligned block index `first`.
    pub fn fill(&self, file: u64, first: u64, out: &mut [u8]) {
        for (i, chunk) in out.chunks_mut(BLOCK).enumerate() {
            self.block(file, first + i as u64, chunk);
        }
    }
}

/// Achieved content of a sample, measured with a real compressor and block hashes.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ContentReport {
    /// The fileset it describes.
    pub fileset: String,
    /// What the workload asked for.
    pub requested_compress_pct: u8,
    pub requested_dedupe_pct: u8,
    /// Bytes and 4 KiB blocks sampled.
    pub sample_bytes: u64,
    pub sample_blocks: u64,
    /// Share of the sample's bytes saved by LZ4 compressing each 4 KiB block on its own
    /// (100 × (1 − compressed/original)); per block, so that duplicate blocks do not count
    /// as compressible.
    pub compress_pct: f64,
    /// Original bytes / compressed bytes.
    pub compression_ratio: f64,
    /// Share of the sample's blocks that repeat an earlier block (100 × (1 − distinct/total)).
    pub dedupe_pct: f64,
}

/// Measure the compress and dedupe shares of `data`, taken as whole 4 KiB blocks (a short
/// tail is compressed but not counted for dedupe).
pub fn measure(data: &[u8]) -> (f64, f64, u64) {
    let mut compressed = 0u64;
    let mut seen = std::collections::HashSet::new();
    let mut blocks = 0u64;
    for b in data.chunks(BLOCK) {
        compressed += lz4_flex::block::compress(b).len() as u64;
        if b.len() == BLOCK {
            blocks += 1;
            seen.insert(*blake3::hash(b).as_bytes());
        }
    }
    let compress = if data.is_empty() {
        0.0
    } else {
        100.0 * (1.0 - compressed as f64 / data.len() as f64)
    };
    let dedupe = if blocks == 0 {
        0.0
    } else {
        100.0 * (1.0 - seen.len() as f64 / blocks as f64)
    };
    (compress.max(0.0), dedupe, compressed)
}

/// Build a report for fileset `name` from a sample of its data.
pub fn report(name: &str, content: Content, sample: &[u8]) -> ContentReport {
    let (c, d, compressed) = measure(sample);
    ContentReport {
        fileset: name.to_string(),
        requested_compress_pct: content.compress,
        requested_dedupe_pct: content.dedupe,
        sample_bytes: sample.len() as u64,
        sample_blocks: (sample.len() / BLOCK) as u64,
        compress_pct: c,
        compression_ratio: if compressed == 0 {
            0.0
        } else {
            sample.len() as f64 / compressed as f64
        },
        dedupe_pct: d,
    }
}

/// Generation speed, in bytes per second on the calling thread, for `content` over about
/// `bytes` bytes (for `fsbench selftest content`).
pub fn speed(content: Content, bytes: usize) -> f64 {
    let g = Generator::new(content, 1);
    let mut buf = vec![0u8; 1 << 20];
    let rounds = (bytes / buf.len()).max(1);
    let t0 = std::time::Instant::now();
    let mut done = 0;
    for r in 0..rounds {
        if r % 64 == 0 && fsbench_base::cancel::interrupted() {
            break;
        }
        g.fill(r as u64, 0, &mut buf);
        std::hint::black_box(&buf);
        done += 1;
    }
    (done * buf.len()) as f64 / t0.elapsed().as_secs_f64()
}

/// `fsbench selftest content`: generation speed per kind on one core, and the shares a
/// sample of each achieves.
pub fn speed_report(bytes: usize) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<26} {:>12} {:>10} {:>10}",
        "content", "GB/s/core", "compress%", "dedupe%"
    );
    let kinds = [
        ("random", Content::RANDOM),
        (
            "compressible (compress=50)",
            Content::named("compressible").unwrap(),
        ),
        (
            "dedupable (dedupe=50)",
            Content::named("dedupable").unwrap(),
        ),
        (
            "compress=50,dedupe=50",
            Content {
                compress: 50,
                dedupe: 50,
            },
        ),
        ("zero", Content::named("zero").unwrap()),
    ];
    for (name, c) in kinds {
        // A signal stops the report after the kind being measured (nothing to undo).
        if fsbench_base::cancel::interrupted() {
            break;
        }
        let gbs = speed(c, bytes) / 1e9;
        let g = Generator::new(c, 3);
        let mut sample = vec![0u8; 4 << 20];
        for (f, chunk) in sample.chunks_mut(64 * BLOCK).enumerate() {
            g.fill(f as u64, 0, chunk);
        }
        let (pc, pd, _) = measure(&sample);
        let _ = writeln!(o, "{name:<26} {gbs:>12.2} {pc:>10.1} {pd:>10.1}");
    }
    o
}

#[cfg(test)]
mod chunk_tests {
    use super::*;

    #[test]
    fn chunks_alternate_random_and_compressible_bytes() {
        let c = Content {
            compress: 75,
            dedupe: 0,
        };
        let g = Generator::new(c, 9).with_chunk(512);
        let mut b = vec![0u8; BLOCK];
        g.block(3, 7, &mut b);
        // Each 512-byte chunk: 128 random bytes, then one repeated word.
        for chunk in b.chunks(512) {
            let tail = &chunk[128..];
            assert!(tail.chunks(8).all(|w| w == &tail[..8]), "{:?}", &tail[..16]);
            assert_ne!(&chunk[..8], &tail[..8]);
        }
        // About 75% saved by a block compressor, as without chunks.
        let (pct, _, _) = measure(&b);
        assert!((65.0..80.0).contains(&pct), "{pct}");
        // The same content again from the same place.
        let mut again = vec![0u8; BLOCK];
        g.block(3, 7, &mut again);
        assert_eq!(b, again);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many small files' worth of blocks, as a layout would write them.
    fn sample(c: Content, files: u64, blocks: u64) -> Vec<u8> {
        let g = Generator::new(c, 42);
        let mut v = vec![0u8; (files * blocks) as usize * BLOCK];
        for (f, chunk) in v.chunks_mut(blocks as usize * BLOCK).enumerate() {
            g.fill(f as u64, 0, chunk);
        }
        v
    }

    /// Every share pair of the table within five points in a sample of `files` files of
    /// `blocks` blocks each.
    fn achieved_shares_are_within_five_points(files: u64, blocks: u64) {
        for &(c, d) in &[
            (0, 0),
            (50, 0),
            (0, 50),
            (50, 50),
            (25, 75),
            (90, 10),
            (100, 0),
        ] {
            let s = sample(
                Content {
                    compress: c,
                    dedupe: d,
                },
                files,
                blocks,
            );
            let (gc, gd, _) = measure(&s);
            assert!(
                (gc - c as f64).abs() <= 5.0,
                "compress {c}: got {gc:.1} ({files}x{blocks})"
            );
            assert!(
                (gd - d as f64).abs() <= 5.0,
                "dedupe {d}: got {gd:.1} ({files}x{blocks})"
            );
        }
    }

    // One test a shape, so that they run side by side (deflate is slow in a debug build).
    #[test]
    fn achieved_shares_in_one_file_of_many_blocks() {
        achieved_shares_are_within_five_points(1, 2048);
    }

    #[test]
    fn achieved_shares_in_many_files_of_one_block() {
        achieved_shares_are_within_five_points(2048, 1);
    }

    #[test]
    fn achieved_shares_in_files_of_several_blocks() {
        achieved_shares_are_within_five_points(64, 32);
    }

    #[test]
    fn random_content_neither_compresses_nor_repeats() {
        let s = sample(Content::RANDOM, 16, 64);
        let (c, d, _) = measure(&s);
        assert!(c < 1.0, "{c}");
        assert_eq!(d, 0.0);
        assert!(s.chunks(512).all(|b| b[0] & 1 == 1), "never a hole");
    }

    #[test]
    fn zero_is_all_zeros_and_names_resolve() {
        let z = Content::named("ZERO").unwrap();
        let s = sample(z, 4, 4);
        assert!(s.iter().all(|b| *b == 0));
        assert_eq!(Content::named("compressible").unwrap().compress, 50);
        assert_eq!(Content::named("dedupable").unwrap().dedupe, 50);
        assert!(Content::named("lumpy").is_none());
    }

    #[test]
    fn random_fill_is_the_serial_wyrand_sequence() {
        // The unrolled fill gives the bytes of one multiply per eight bytes in order.
        let key = 0x1234_5678_9abc_def0u64;
        for len in [0, 1, 7, 8, 31, 32, 33, 100, 4096, 4099] {
            let mut want = vec![0u8; len];
            let mut s = key;
            for c in want.chunks_mut(8) {
                s = s.wrapping_add(0xa076_1d64_78bd_642f);
                let t = (s as u128).wrapping_mul((s ^ 0xe703_7ed1_a0b4_28db) as u128);
                let w = (((t >> 64) as u64) ^ (t as u64)).to_le_bytes();
                c.copy_from_slice(&w[..c.len()]);
            }
            for b in want.iter_mut().step_by(512) {
                *b |= 1;
            }
            let mut got = vec![0u8; len];
            fill_random(key, &mut got);
            assert_eq!(got, want, "{len}");
        }
    }

    #[test]
    fn blocks_are_reproducible_and_a_short_block_is_a_prefix() {
        let g = Generator::new(
            Content {
                compress: 30,
                dedupe: 40,
            },
            7,
        );
        let (mut a, mut b) = ([0u8; BLOCK], [0u8; 100]);
        for blk in 0..50 {
            g.block(3, blk, &mut a);
            g.block(3, blk, &mut b);
            assert_eq!(&a[..100], &b[..]);
        }
        let mut x = vec![0u8; 3 * BLOCK];
        g.fill(5, 10, &mut x);
        g.block(5, 11, &mut a);
        assert_eq!(&x[BLOCK..2 * BLOCK], &a[..]);
    }
}
