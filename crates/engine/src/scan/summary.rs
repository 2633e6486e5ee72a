//! Tree statistics: counts, log2 histograms, depth and extension tables.
//!
//! Each scan worker owns a [`TreeStats`] and the caller merges them, so the
//! per-entry cost is a few additions and one hash-map update for the
//! extension.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::snapshot::Kind;

/// Log2 bucket of a value: bucket 0 holds 0, bucket k ≥ 1 holds
/// `[2^(k-1), 2^k)`. So 1 → 1, 2..3 → 2, 4..7 → 3, 4096 → 13.
pub fn log2_bucket(v: u64) -> usize {
    (u64::BITS - v.leading_zeros()) as usize
}

/// Inclusive lower and exclusive upper bound of a log2 bucket
/// (`u64::MAX` stands for 2^64 in the last bucket).
pub fn log2_bounds(bucket: usize) -> (u64, u64) {
    match bucket {
        0 => (0, 1),
        64 => (1 << 63, u64::MAX),
        k => (1 << (k - 1), 1 << k),
    }
}

/// A growable histogram over log2 buckets of a value, also summing the values.
#[derive(Debug, Clone, Default)]
pub struct Log2Hist {
    pub counts: Vec<u64>,
    pub sums: Vec<u128>,
}

impl Log2Hist {
    pub fn add(&mut self, v: u64) {
        let b = log2_bucket(v);
        if self.counts.len() <= b {
            self.counts.resize(b + 1, 0);
            self.sums.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.sums[b] += v as u128;
    }

    pub fn merge(&mut self, o: &Log2Hist) {
        if self.counts.len() < o.counts.len() {
            self.counts.resize(o.counts.len(), 0);
            self.sums.resize(o.counts.len(), 0);
        }
        for (i, (&c, &s)) in o.counts.iter().zip(&o.sums).enumerate() {
            self.counts[i] += c;
            self.sums[i] += s;
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Non-empty buckets as report rows.
    pub fn rows(&self) -> Vec<Log2Row> {
        self.counts
            .iter()
            .zip(&self.sums)
            .enumerate()
            .filter(|(_, (&c, _))| c > 0)
            .map(|(b, (&count, &sum))| {
                let (lo, hi) = log2_bounds(b);
                Log2Row {
                    lo,
                    hi,
                    count,
                    sum: sum.min(u64::MAX as u128) as u64,
                }
            })
            .collect()
    }
}

/// One non-empty log2 bucket: values in `[lo, hi)`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Log2Row {
    pub lo: u64,
    pub hi: u64,
    pub count: u64,
    /// Sum of the values in the bucket (bytes for file sizes).
    pub sum: u64,
}

/// Per-worker accumulator of a scan.
#[derive(Debug, Default)]
pub struct TreeStats {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub other: u64,
    /// Sum of regular files' sizes.
    pub bytes: u64,
    /// Sum of allocated bytes of all entries (st_blocks * 512).
    pub allocated: u64,
    /// Regular files' sizes.
    pub sizes: Log2Hist,
    /// Entries per directory (including the root).
    pub dir_entries: Log2Hist,
    /// Per depth (0: directly in the root): (files, dirs, other entries).
    pub depth: Vec<[u64; 3]>,
    /// Per extension (lowercased, without the dot; "" for none): files, bytes.
    pub extensions: HashMap<Vec<u8>, (u64, u64)>,
}

/// The extension of a file name: the bytes after the last dot, unless the
/// dot starts the name (".bashrc" has none) or ends it.
pub fn extension(name: &[u8]) -> &[u8] {
    match name.iter().rposition(|&b| b == b'.') {
        Some(0) | None => b"",
        Some(i) => &name[i + 1..],
    }
}

impl TreeStats {
    pub fn add(&mut self, name: &[u8], depth: u32, kind: Kind, size: u64, blocks: u64) {
        let d = depth as usize;
        if self.depth.len() <= d {
            self.depth.resize(d + 1, [0; 3]);
        }
        self.allocated += blocks * 512;
        match kind {
            Kind::File => {
                self.files += 1;
                self.bytes += size;
                self.sizes.add(size);
                self.depth[d][0] += 1;
                let ext = extension(name);
                let e = if ext.iter().any(|b| b.is_ascii_uppercase()) {
                    self.extensions.entry(ext.to_ascii_lowercase()).or_default()
                } else if let Some(e) = self.extensions.get_mut(ext) {
                    e
                } else {
                    self.extensions.entry(ext.to_vec()).or_default()
                };
                e.0 += 1;
                e.1 += size;
            }
            Kind::Dir => {
                self.dirs += 1;
                self.depth[d][1] += 1;
            }
            Kind::Symlink => {
                self.symlinks += 1;
                self.depth[d][2] += 1;
            }
            _ => {
                self.other += 1;
                self.depth[d][2] += 1;
            }
        }
    }

    pub fn merge(&mut self, o: TreeStats) {
        self.files += o.files;
        self.dirs += o.dirs;
        self.symlinks += o.symlinks;
        self.other += o.other;
        self.bytes += o.bytes;
        self.allocated += o.allocated;
        self.sizes.merge(&o.sizes);
        self.dir_entries.merge(&o.dir_entries);
        if self.depth.len() < o.depth.len() {
            self.depth.resize(o.depth.len(), [0; 3]);
        }
        for (a, b) in self.depth.iter_mut().zip(&o.depth) {
            for i in 0..3 {
                a[i] += b[i];
            }
        }
        for (k, (c, b)) in o.extensions {
            let e = self.extensions.entry(k).or_default();
            e.0 += c;
            e.1 += b;
        }
    }

    /// The `n` most common extensions by file count (ties: by name).
    pub fn top_extensions(&self, n: usize) -> Vec<ExtRow> {
        let mut v: Vec<ExtRow> = self
            .extensions
            .iter()
            .map(|(k, &(files, bytes))| ExtRow {
                ext: String::from_utf8_lossy(k).into_owned(),
                files,
                bytes,
            })
            .collect();
        v.sort_by(|a, b| b.files.cmp(&a.files).then_with(|| a.ext.cmp(&b.ext)));
        v.truncate(n);
        v
    }
}

/// A row of the extension table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExtRow {
    /// Lowercased extension without the dot; empty for files without one.
    pub ext: String,
    pub files: u64,
    pub bytes: u64,
}

/// A row of the depth table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DepthRow {
    /// 0: entries directly in the root.
    pub depth: u32,
    pub files: u64,
    pub dirs: u64,
    pub other: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_maths() {
        assert_eq!(log2_bucket(0), 0);
        assert_eq!(log2_bucket(1), 1);
        assert_eq!(log2_bucket(2), 2);
        assert_eq!(log2_bucket(3), 2);
        assert_eq!(log2_bucket(4), 3);
        assert_eq!(log2_bucket(4095), 12);
        assert_eq!(log2_bucket(4096), 13);
        assert_eq!(log2_bucket(u64::MAX), 64);
        for v in [0u64, 1, 2, 3, 7, 8, 1000, 4096, 1 << 40, u64::MAX - 1] {
            let (lo, hi) = log2_bounds(log2_bucket(v));
            assert!(lo <= v && v < hi, "{v} not in [{lo}, {hi})");
        }
    }

    #[test]
    fn histogram_rows_and_merge() {
        let mut a = Log2Hist::default();
        a.add(0);
        a.add(5);
        a.add(6);
        let mut b = Log2Hist::default();
        b.add(1 << 20);
        b.add(7);
        a.merge(&b);
        assert_eq!(a.total(), 5);
        let rows = a.rows();
        assert_eq!(
            rows,
            vec![
                Log2Row {
                    lo: 0,
                    hi: 1,
                    count: 1,
                    sum: 0
                },
                Log2Row {
                    lo: 4,
                    hi: 8,
                    count: 3,
                    sum: 18
                },
                Log2Row {
                    lo: 1 << 20,
                    hi: 1 << 21,
                    count: 1,
                    sum: 1 << 20
                },
            ]
        );
    }

    #[test]
    fn extensions() {
        assert_eq!(extension(b"a.tar.gz"), b"gz");
        assert_eq!(extension(b".bashrc"), b"");
        assert_eq!(extension(b"Makefile"), b"");
        assert_eq!(extension(b"x."), b"");
        let mut s = TreeStats::default();
        s.add(b"A.TXT", 0, Kind::File, 10, 8);
        s.add(b"b.txt", 1, Kind::File, 5, 8);
        s.add(b"c.rs", 1, Kind::File, 1, 8);
        s.add(b"d", 1, Kind::Dir, 4096, 8);
        let top = s.top_extensions(1);
        assert_eq!(
            top,
            vec![ExtRow {
                ext: "txt".into(),
                files: 2,
                bytes: 15
            }]
        );
        assert_eq!(s.depth, vec![[1, 0, 0], [2, 1, 0]]);
        assert_eq!(s.allocated, 4 * 8 * 512);
    }
}
