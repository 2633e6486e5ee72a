//! The aging planner: which operation comes next.
//!
//! The planner owns a model of the aged directory (every live file, its
//! target size, bytes written so far, directory and birth time) and decides
//! each operation from that model and its own seeded generator only, never
//! from what the file system reports while aging. Same seed and same starting
//! state therefore give the same sequence of operations, whatever the block
//! allocator or writeback timing does (they decide the *layout*, which is
//! what aging is meant to produce, not the *names and sizes*).
//!
//! Two phases, after Geriatrix:
//! - **fill**: create files with sizes and depths drawn from the profile
//!   (large files are written in pieces, appended later, interleaved with
//!   other files: that is how real trees fragment) until the modelled usage
//!   reaches the target fullness;
//! - **churn**: keep usage within a band around the target; each step is an
//!   append to an unfinished file, an overwrite, a create or a delete. A
//!   create takes the size bucket and depth furthest below their target
//!   share; a delete looks at a few random live files and removes the one
//!   whose size, depth and age buckets are most over-represented. Deletes
//!   picking the over-represented ages is what shapes the age distribution.
//!
//! Time is counted in operations: a file's age is the number of operations
//! since its creation. Published age distributions are relative (only ratios
//! matter); they are scaled so that the target mean age is the mean lifetime
//! a file has at the target population (Little's law: live files divided by
//! creates per operation).
//!
//! Everything is kept in ordered containers (`BTreeMap`, `Vec`), so nothing
//! depends on hash iteration order.

use std::collections::BTreeMap;

use rand::Rng as _;

use super::distance::{distance, Distance};
use super::profile::Profile;
use fsbench_model::dist::{self, Rng};

/// Files per directory aimed at when new directories are made.
const FILES_PER_DIR: u32 = 8;
/// Live files examined for each delete.
const DELETE_CANDIDATES: usize = 8;
/// Files larger than this may be written in pieces.
const PIECEWISE_ABOVE: u64 = 64 << 10;
/// Share of creates (among all churn operations) assumed when scaling ages.
const CREATE_SHARE: f64 = 0.4;

/// Which phase the planner is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Fill,
    Churn,
}

/// One planned operation. Files and directories are named by index: file
/// `id` is `f<id>` in directory `dir`; directory `i` is `d<i>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Mkdir {
        dir: u32,
    },
    Create {
        id: u64,
        dir: u32,
        size: u64,
        write: u64,
    },
    Append {
        id: u64,
        off: u64,
        len: u64,
    },
    Overwrite {
        id: u64,
        off: u64,
        len: u64,
    },
    Delete {
        id: u64,
        dir: u32,
    },
}

/// A live file in the model.
#[derive(Debug, Clone)]
pub struct FileRec {
    /// Target size.
    pub size: u64,
    /// Bytes written so far (the file's current length).
    pub written: u64,
    pub dir: u32,
    /// Clock of the last operation that wrote it (its create, an append or an overwrite).
    pub modified: u64,
    size_bin: u16,
    depth_bin: u16,
    /// Index in `live`.
    pos: u32,
    /// Index in `unfinished`, if not yet at its size.
    unfinished_pos: Option<u32>,
}

/// A directory in the model (index 0 is the aged directory itself).
#[derive(Debug, Clone)]
pub struct DirRec {
    /// Path relative to the aged directory ("" for the root).
    pub path: String,
    pub depth: u32,
}

/// Counts of live ids; prefix counts and the k-th live id in O(log n).
#[derive(Debug, Clone, Default)]
pub struct Fenwick {
    t: Vec<i64>,
}

impl Fenwick {
    pub fn with_len(n: usize) -> Fenwick {
        Fenwick { t: vec![0; n + 1] }
    }
    pub fn len(&self) -> usize {
        self.t.len().saturating_sub(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn add(&mut self, i: usize, d: i64) {
        let mut i = i + 1;
        while i < self.t.len() {
            self.t[i] += d;
            i += i & i.wrapping_neg();
        }
    }
    /// Sum over indices `< i`.
    pub fn prefix(&self, i: usize) -> i64 {
        let mut i = i.min(self.len());
        let mut s = 0;
        while i > 0 {
            s += self.t[i];
            i -= i & i.wrapping_neg();
        }
        s
    }
}

/// Aging targets derived from a profile.
#[derive(Debug, Clone)]
pub struct Targets {
    /// (lo, hi]: sizes of each bucket are uniform in this range.
    pub size_ranges: Vec<(u64, u64)>,
    pub size: Vec<f64>,
    /// Directory depth below the aged directory of each depth bucket.
    pub depths: Vec<u32>,
    pub depth: Vec<f64>,
    /// Relative ages (profile units), ascending.
    pub ages_rel: Vec<f64>,
    pub age: Vec<f64>,
}

impl Targets {
    pub fn from_profile(p: &Profile) -> Targets {
        let mut size_ranges = Vec::new();
        let mut prev = None;
        for b in &p.sizes {
            let lo = prev.unwrap_or(b.bytes / 2);
            size_ranges.push((lo.min(b.bytes), b.bytes));
            prev = Some(b.bytes);
        }
        let base = p.dirs.first().map(|d| d.depth).unwrap_or(0);
        Targets {
            size_ranges,
            size: p.size_fractions(),
            depths: p.dirs.iter().map(|d| d.depth - base).collect(),
            depth: p.depth_file_fractions(),
            ages_rel: p.ages.iter().map(|a| a.age).collect(),
            age: p.age_fractions(),
        }
    }

    /// Mean size of the files a create makes, from the bucket ranges.
    pub fn mean_size(&self) -> f64 {
        self.size_ranges
            .iter()
            .zip(&self.size)
            .map(|(&(lo, hi), f)| {
                if hi == lo {
                    hi as f64 * f
                } else {
                    (lo as f64 + 1.0 + hi as f64) / 2.0 * f
                }
            })
            .sum()
    }

    /// Bucket of a size (the first whose upper bound holds it).
    pub fn size_bin(&self, size: u64) -> usize {
        self.size_ranges
            .iter()
            .position(|&(_, hi)| size <= hi)
            .unwrap_or(self.size_ranges.len() - 1)
    }

    /// Bucket of a directory depth (the nearest listed depth).
    pub fn depth_bin(&self, depth: u32) -> usize {
        self.depths
            .iter()
            .enumerate()
            .min_by_key(|(_, &d)| d.abs_diff(depth))
            .map(|(i, _)| i)
            .unwrap_or(0)
    }
}

/// One dimension of the live population against its target.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Distribution {
    /// Bucket labels: size upper bounds, depths below the aged directory, or age upper
    /// bounds in operations.
    pub buckets: Vec<String>,
    /// The profile's share of files per bucket.
    pub target: Vec<f64>,
    /// The aged population's share per bucket.
    pub actual: Vec<f64>,
    /// Live files per bucket.
    pub counts: Vec<u64>,
}

/// The live population against the profile in each dimension.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Distributions {
    pub size: Distribution,
    pub depth: Distribution,
    /// `None` when the profile has no age distribution.
    pub age: Option<Distribution>,
}

/// Distances of the live population from the targets.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Distances {
    pub size: Distance,
    pub depth: Distance,
    /// `None` when the profile has no age distribution.
    pub age: Option<Distance>,
}

impl Distances {
    /// The largest total variation over the dimensions.
    pub fn max_tv(&self) -> f64 {
        let a = self.age.map(|d| d.tv).unwrap_or(0.0);
        self.size.tv.max(self.depth.tv).max(a)
    }
}

/// The planner's model and generator.
pub struct Planner {
    pub targets: Targets,
    rng: Rng,
    files: BTreeMap<u64, FileRec>,
    live: Vec<u64>,
    unfinished: Vec<u64>,
    size_counts: Vec<u64>,
    depth_counts: Vec<u64>,
    born: Fenwick,
    pub dirs: Vec<DirRec>,
    dirs_at_depth: Vec<Vec<u32>>,
    /// Name of the next new directory: `d<next_dir_name>`.
    pub next_dir_name: u64,
    /// Operations so far (file operations; also the next file id).
    pub clock: u64,
    /// Modelled bytes in use on the file system (blocks, rounded up).
    pub used: u64,
    /// Target usage in bytes.
    pub budget: u64,
    /// Usage may stray this far from the budget during churn.
    pub slack: u64,
    pub block: u64,
    /// Age bucket upper bounds in operations.
    age_cutoffs: Vec<u64>,
    pub phase: Phase,
    /// Set when the file system refused space: delete until under budget.
    pressure: bool,
}

fn blocks(bytes: u64, bs: u64) -> u64 {
    bytes.div_ceil(bs) * bs
}

impl Planner {
    /// A planner for an empty aged directory. `used` is the file system's
    /// usage by everything but the aged directory's files and directories
    /// (register those with [`Planner::adopt_dir`] and
    /// [`Planner::adopt_file`]), `budget` the target usage, both in bytes.
    pub fn new(
        targets: Targets,
        seed: u64,
        clock: u64,
        used: u64,
        budget: u64,
        block: u64,
    ) -> Planner {
        let expected_files = (budget.saturating_sub(used) as f64 / targets.mean_size()).max(1.0);
        let mean_rel: f64 = targets
            .ages_rel
            .iter()
            .zip(&targets.age)
            .map(|(a, f)| a * f)
            .sum();
        // Little's law: mean lifetime = live files / creates per operation.
        let scale = if mean_rel > 0.0 {
            expected_files / CREATE_SHARE / mean_rel
        } else {
            1.0
        };
        let age_cutoffs = targets
            .ages_rel
            .iter()
            .map(|a| (a * scale).round() as u64)
            .collect();
        let nsize = targets.size.len();
        let ndepth = targets.depth.len();
        Planner {
            rng: dist::rng(seed, 0xA6E0_0000 ^ clock),
            files: BTreeMap::new(),
            live: Vec::new(),
            unfinished: Vec::new(),
            size_counts: vec![0; nsize],
            depth_counts: vec![0; ndepth],
            born: Fenwick::with_len(1024),
            dirs: vec![DirRec {
                path: String::new(),
                depth: 0,
            }],
            dirs_at_depth: vec![vec![0]],
            next_dir_name: 1,
            clock,
            used,
            budget,
            slack: (budget / 100).max(targets.mean_size() as u64 * 2),
            block: block.max(1),
            age_cutoffs,
            phase: if used >= budget {
                Phase::Churn
            } else {
                Phase::Fill
            },
            pressure: false,
            targets,
        }
    }

    pub fn live_files(&self) -> usize {
        self.live.len()
    }

    pub fn unfinished_files(&self) -> usize {
        self.unfinished.len()
    }

    pub fn live_bytes(&self) -> u64 {
        self.files.values().map(|f| f.written).sum()
    }

    pub fn file(&self, id: u64) -> Option<&FileRec> {
        self.files.get(&id)
    }

    /// Every live file as (id, directory, clock of its last write), in id order.
    pub fn live(&self) -> impl Iterator<Item = (u64, u32, u64)> + '_ {
        self.files.iter().map(|(&id, f)| (id, f.dir, f.modified))
    }

    /// Age bucket upper bounds, in operations.
    pub fn age_cutoffs(&self) -> &[u64] {
        &self.age_cutoffs
    }

    /// Path of file `id` relative to the aged directory.
    pub fn file_path(&self, id: u64, out: &mut String) {
        self.path_in(self.files[&id].dir, id, out)
    }

    /// Path of file `id` in directory `dir`, relative to the aged directory.
    pub fn path_in(&self, dir: u32, id: u64, out: &mut String) {
        out.clear();
        let d = &self.dirs[dir as usize];
        if !d.path.is_empty() {
            out.push_str(&d.path);
            out.push('/');
        }
        out.push('f');
        out.push_str(&id.to_string());
    }

    /// Register an existing directory `d<name>` (when continuing an earlier
    /// aging). Returns its index.
    pub fn adopt_dir(&mut self, path: String, depth: u32, name: u64) -> u32 {
        let i = self.dirs.len() as u32;
        self.next_dir_name = self.next_dir_name.max(name + 1);
        self.used += self.block;
        self.dirs.push(DirRec { path, depth });
        self.at_depth(depth).push(i);
        i
    }

    /// Register an existing file (when continuing an earlier aging), last written at clock
    /// `modified`.
    pub fn adopt_file(&mut self, id: u64, dir: u32, size: u64, modified: u64) {
        let depth = self.dirs[dir as usize].depth;
        self.insert(id, dir, size, size, self.targets.depth_bin(depth));
        if let Some(f) = self.files.get_mut(&id) {
            f.modified = modified.max(id);
        }
        self.used += blocks(size, self.block);
        self.clock = self.clock.max(id + 1);
    }

    fn at_depth(&mut self, depth: u32) -> &mut Vec<u32> {
        let d = depth as usize;
        if self.dirs_at_depth.len() <= d {
            self.dirs_at_depth.resize(d + 1, Vec::new());
        }
        &mut self.dirs_at_depth[d]
    }

    fn insert(&mut self, id: u64, dir: u32, size: u64, written: u64, depth_bin: usize) {
        let size_bin = self.targets.size_bin(size);
        let unfinished_pos = (written < size).then(|| {
            self.unfinished.push(id);
            (self.unfinished.len() - 1) as u32
        });
        self.files.insert(
            id,
            FileRec {
                size,
                written,
                dir,
                modified: id,
                size_bin: size_bin as u16,
                depth_bin: depth_bin as u16,
                pos: self.live.len() as u32,
                unfinished_pos,
            },
        );
        self.live.push(id);
        self.size_counts[size_bin] += 1;
        self.depth_counts[depth_bin] += 1;
        let idx = id as usize;
        if idx >= self.born.len() {
            let mut n = self.born.len().max(1024);
            while n <= idx {
                n *= 2;
            }
            self.born = Fenwick::with_len(n);
            for &l in &self.live {
                if l != id {
                    self.born.add(l as usize, 1);
                }
            }
        }
        self.born.add(idx, 1);
    }

    fn remove(&mut self, id: u64) -> FileRec {
        let f = self.files.remove(&id).expect("live file");
        let last = *self.live.last().unwrap();
        self.live.swap_remove(f.pos as usize);
        if last != id {
            self.files.get_mut(&last).unwrap().pos = f.pos;
        }
        if let Some(p) = f.unfinished_pos {
            self.drop_unfinished(id, p);
        }
        self.size_counts[f.size_bin as usize] -= 1;
        self.depth_counts[f.depth_bin as usize] -= 1;
        self.born.add(id as usize, -1);
        f
    }

    fn drop_unfinished(&mut self, id: u64, p: u32) {
        let last = *self.unfinished.last().unwrap();
        self.unfinished.swap_remove(p as usize);
        if last != id {
            self.files.get_mut(&last).unwrap().unfinished_pos = Some(p);
        }
        if let Some(f) = self.files.get_mut(&id) {
            f.unfinished_pos = None;
        }
    }

    /// Live files per age bucket now.
    pub fn age_counts(&self) -> Vec<u64> {
        let total = self.live.len() as i64;
        let mut out = Vec::with_capacity(self.age_cutoffs.len());
        let mut below = 0i64; // files with age ≤ previous cutoff
        let n = self.age_cutoffs.len();
        for (i, &c) in self.age_cutoffs.iter().enumerate() {
            // age ≤ c  ⇔  id ≥ clock − c
            let upto = if i + 1 == n {
                total
            } else {
                total - self.born.prefix(self.clock.saturating_sub(c) as usize)
            };
            out.push((upto - below).max(0) as u64);
            below = upto.max(below);
        }
        out
    }

    fn age_bin(&self, id: u64) -> usize {
        let age = self.clock.saturating_sub(id);
        self.age_cutoffs
            .iter()
            .position(|&c| age <= c)
            .unwrap_or(self.age_cutoffs.len().saturating_sub(1))
    }

    pub fn size_counts(&self) -> &[u64] {
        &self.size_counts
    }

    pub fn depth_counts(&self) -> &[u64] {
        &self.depth_counts
    }

    /// The live population against the targets, bucket by bucket, for reports.
    pub fn distributions(&self) -> Distributions {
        let dist = |buckets: Vec<String>, counts: &[u64], target: &[f64]| Distribution {
            buckets,
            target: target.to_vec(),
            actual: super::distance::normalise(counts),
            counts: counts.to_vec(),
        };
        let t = &self.targets;
        Distributions {
            size: dist(
                t.size_ranges
                    .iter()
                    .map(|&(_, hi)| format!("≤{}", fsbench_base::units::human_bytes_u64(hi)))
                    .collect(),
                &self.size_counts,
                &t.size,
            ),
            depth: dist(
                t.depths.iter().map(|d| d.to_string()).collect(),
                &self.depth_counts,
                &t.depth,
            ),
            age: (!self.age_cutoffs.is_empty()).then(|| {
                dist(
                    self.age_cutoffs.iter().map(|c| format!("≤{c}")).collect(),
                    &self.age_counts(),
                    &t.age,
                )
            }),
        }
    }

    pub fn distances(&self) -> Distances {
        Distances {
            size: distance(&self.size_counts, &self.targets.size),
            depth: distance(&self.depth_counts, &self.targets.depth),
            age: (!self.age_cutoffs.is_empty())
                .then(|| distance(&self.age_counts(), &self.targets.age)),
        }
    }

    fn sample(&mut self, weights: &[f64]) -> usize {
        let mut x: f64 = self.rng.random::<f64>();
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.iter().rposition(|w| *w > 0.0).unwrap_or(0)
    }

    /// The bucket furthest below its target share, or a draw from the
    /// target when none is noticeably short.
    fn neediest(&mut self, counts: &[u64], target: &[f64]) -> usize {
        let total = counts.iter().sum::<u64>().max(1) as f64;
        let mut best = (0usize, f64::MIN);
        for (i, (&c, &t)) in counts.iter().zip(target).enumerate() {
            let deficit = t - c as f64 / total;
            if deficit > best.1 {
                best = (i, deficit);
            }
        }
        if best.1 > 0.005 {
            best.0
        } else {
            self.sample(target)
        }
    }

    /// A directory at `depth`, made (with its missing parents) if needed.
    fn dir_at(&mut self, depth: u32, ops: &mut Vec<Op>) -> u32 {
        if depth == 0 {
            return 0;
        }
        let have = self
            .dirs_at_depth
            .get(depth as usize)
            .map(|v| v.len())
            .unwrap_or(0);
        // A new directory only when those at this depth hold FILES_PER_DIR
        // files on average: directories are never deleted, so making them
        // at random would let empty ones pile up during churn.
        let files_here = self
            .targets
            .depths
            .iter()
            .position(|&d| d == depth)
            .map(|b| self.depth_counts[b])
            .unwrap_or(0);
        if have > 0 && files_here < have as u64 * FILES_PER_DIR as u64 {
            let i = self.rng.random_range(0..have);
            return self.dirs_at_depth[depth as usize][i];
        }
        let parent = self.dir_at_existing_or_new(depth - 1, ops);
        let idx = self.dirs.len() as u32;
        let name = self.next_dir_name;
        self.next_dir_name += 1;
        let pp = &self.dirs[parent as usize].path;
        let path = if pp.is_empty() {
            format!("d{name}")
        } else {
            format!("{pp}/d{name}")
        };
        self.dirs.push(DirRec { path, depth });
        self.at_depth(depth).push(idx);
        self.used += self.block;
        ops.push(Op::Mkdir { dir: idx });
        idx
    }

    fn dir_at_existing_or_new(&mut self, depth: u32, ops: &mut Vec<Op>) -> u32 {
        let have = self
            .dirs_at_depth
            .get(depth as usize)
            .map(|v| v.len())
            .unwrap_or(0);
        if have > 0 {
            let i = self.rng.random_range(0..have);
            self.dirs_at_depth[depth as usize][i]
        } else {
            self.dir_at(depth, ops)
        }
    }

    fn create(&mut self, ops: &mut Vec<Op>) {
        let (sb, db) = match self.phase {
            Phase::Fill => {
                let s = self.targets.size.clone();
                let d = self.targets.depth.clone();
                (self.sample(&s), self.sample(&d))
            }
            Phase::Churn => {
                let (sc, st) = (self.size_counts.clone(), self.targets.size.clone());
                let (dc, dt) = (self.depth_counts.clone(), self.targets.depth.clone());
                (self.neediest(&sc, &st), self.neediest(&dc, &dt))
            }
        };
        let (lo, hi) = self.targets.size_ranges[sb];
        let size = if hi > lo {
            self.rng.random_range(lo + 1..=hi)
        } else {
            hi
        };
        let dir = self.dir_at(self.targets.depths[db], ops);
        let write = if size > PIECEWISE_ABOVE && self.rng.random_bool(0.5) {
            let f: f64 = self.rng.random_range(0.1..0.9);
            (((size as f64 * f) as u64) / 4096 * 4096).max(4096)
        } else {
            size
        };
        let id = self.clock;
        self.insert(id, dir, size, write, db);
        self.used += blocks(write, self.block);
        ops.push(Op::Create {
            id,
            dir,
            size,
            write,
        });
    }

    fn append(&mut self, ops: &mut Vec<Op>) {
        let i = self.rng.random_range(0..self.unfinished.len());
        let id = self.unfinished[i];
        let f = &self.files[&id];
        let (off, left) = (f.written, f.size - f.written);
        let chunk = (f.size / 4).max(PIECEWISE_ABOVE) / 4096 * 4096;
        let len = left.min(chunk);
        let before = blocks(off, self.block);
        let f = self.files.get_mut(&id).unwrap();
        f.written += len;
        f.modified = self.clock;
        let after = blocks(f.written, self.block);
        if f.written >= f.size {
            self.drop_unfinished(id, i as u32);
        }
        self.used += after - before;
        ops.push(Op::Append { id, off, len });
    }

    fn overwrite(&mut self, ops: &mut Vec<Op>) {
        let id = self.live[self.rng.random_range(0..self.live.len())];
        let w = self.files[&id].written;
        if w == 0 {
            // Nothing to overwrite: an empty file gets its data instead.
            return self.create(ops);
        }
        let off = self.rng.random_range(0..w.div_ceil(4096)) * 4096;
        let len = (w - off).min(self.rng.random_range(1..=64u64) * 4096);
        self.files.get_mut(&id).unwrap().modified = self.clock;
        ops.push(Op::Overwrite { id, off, len });
    }

    fn delete(&mut self, ops: &mut Vec<Op>) {
        let size_frac: Vec<f64> = super::distance::normalise(&self.size_counts);
        let depth_frac = super::distance::normalise(&self.depth_counts);
        let age_frac = super::distance::normalise(&self.age_counts());
        let mut best: Option<(u64, f64)> = None;
        for _ in 0..DELETE_CANDIDATES.min(self.live.len()) {
            let id = self.live[self.rng.random_range(0..self.live.len())];
            let f = &self.files[&id];
            let (s, d) = (f.size_bin as usize, f.depth_bin as usize);
            let mut excess =
                (size_frac[s] - self.targets.size[s]) + (depth_frac[d] - self.targets.depth[d]);
            if !age_frac.is_empty() {
                let a = self.age_bin(id);
                excess += age_frac[a] - self.targets.age[a];
            }
            if best.is_none_or(|(_, e)| excess > e) {
                best = Some((id, excess));
            }
        }
        let (id, _) = best.expect("delete needs a live file");
        let f = self.remove(id);
        self.used = self.used.saturating_sub(blocks(f.written, self.block));
        ops.push(Op::Delete { id, dir: f.dir });
    }

    /// Plan the next file operation (preceded by any directories it needs)
    /// into `ops`, which is cleared first. Advances the clock by one.
    pub fn next(&mut self, ops: &mut Vec<Op>) {
        ops.clear();
        if self.phase == Phase::Fill && self.used >= self.budget {
            self.phase = Phase::Churn;
        }
        let r: f64 = self.rng.random();
        match self.phase {
            Phase::Fill => {
                if !self.unfinished.is_empty() && r < 0.3 {
                    self.append(ops)
                } else {
                    self.create(ops)
                }
            }
            Phase::Churn => {
                if self.pressure && self.used + self.slack <= self.budget {
                    self.pressure = false;
                }
                let over = self.pressure || self.used > self.budget + self.slack;
                let under = self.used + self.slack < self.budget;
                if self.live.is_empty() {
                    self.create(ops)
                } else if over {
                    self.delete(ops)
                } else if !self.unfinished.is_empty() && r < 0.15 {
                    self.append(ops)
                } else if r < 0.2 {
                    self.overwrite(ops)
                } else if under || self.rng.random_bool(0.5) {
                    self.create(ops)
                } else {
                    self.delete(ops)
                }
            }
        }
        self.clock += 1;
    }

    /// The file system wrote fewer bytes than planned (out of space):
    /// record the file's real length and delete until under budget.
    pub fn short_write(&mut self, id: u64, written: u64) {
        let bs = self.block;
        if let Some(f) = self.files.get_mut(&id) {
            let lost = blocks(f.written, bs).saturating_sub(blocks(written, bs));
            f.written = written;
            f.size = f.size.max(written);
            self.used = self.used.saturating_sub(lost);
        }
        self.pressure = true;
        self.phase = Phase::Churn;
        // Usage was under-modelled: aim lower from now on.
        self.budget = self.budget.min(self.used.saturating_sub(self.slack));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planner(seed: u64) -> Planner {
        let p = Profile::builtin("agrawal").unwrap();
        Planner::new(Targets::from_profile(&p), seed, 0, 0, 64 << 20, 4096)
    }

    fn run(seed: u64, n: usize) -> Vec<Op> {
        let mut pl = planner(seed);
        let mut out = Vec::new();
        let mut ops = Vec::new();
        for _ in 0..n {
            pl.next(&mut ops);
            out.extend_from_slice(&ops);
        }
        out
    }

    #[test]
    fn same_seed_same_operations() {
        let a = run(7, 5000);
        assert_eq!(a, run(7, 5000));
        assert_ne!(a, run(8, 5000));
        assert!(a.iter().any(|o| matches!(o, Op::Delete { .. })));
        assert!(a.iter().any(|o| matches!(o, Op::Append { .. })));
        assert!(a.iter().any(|o| matches!(o, Op::Mkdir { .. })));
    }

    #[test]
    fn fenwick_counts() {
        let mut f = Fenwick::with_len(16);
        for i in [1usize, 3, 3, 9, 15] {
            f.add(i, 1);
        }
        assert_eq!(f.prefix(0), 0);
        assert_eq!(f.prefix(2), 1);
        assert_eq!(f.prefix(4), 3);
        assert_eq!(f.prefix(16), 5);
        assert_eq!(f.prefix(100), 5);
    }

    #[test]
    fn fills_to_budget_then_holds_usage_and_converges() {
        let mut pl = planner(1);
        let mut ops = Vec::new();
        let mut creates = 0;
        while pl.phase == Phase::Fill {
            pl.next(&mut ops);
            creates += ops
                .iter()
                .filter(|o| matches!(o, Op::Create { .. }))
                .count();
        }
        assert!(creates > 100, "{creates} creates");
        let start = pl.distances();
        for _ in 0..40_000 {
            pl.next(&mut ops);
            assert!(pl.used <= pl.budget + 2 * pl.slack + (8 << 20));
        }
        assert!(pl.used + pl.slack * 3 >= pl.budget);
        let end = pl.distances();
        assert!(end.size.tv < 0.08, "{start:?} -> {end:?}");
        assert!(end.depth.tv < 0.08, "{start:?} -> {end:?}");
        assert!(
            end.age.unwrap().tv < start.age.unwrap().tv,
            "{start:?} -> {end:?}"
        );
        // The distributions a report draws are the ones the distances measure.
        let d = pl.distributions();
        assert_eq!(d.size.buckets.len(), d.size.target.len());
        assert_eq!(d.size.counts, pl.size_counts());
        assert_eq!(d.depth.counts, pl.depth_counts());
        assert!((d.size.actual.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let tv = crate::age::distance::total_variation(&d.size.actual, &d.size.target);
        assert!((tv - end.size.tv).abs() < 1e-12);
        assert!(d.size.buckets[0].starts_with('≤'), "{:?}", d.size.buckets);
        // The model's counts agree with a recount.
        let ages = pl.age_counts();
        assert_eq!(ages.iter().sum::<u64>() as usize, pl.live_files());
        let mut by_age = vec![0u64; ages.len()];
        for &id in &pl.live {
            by_age[pl.age_bin(id)] += 1;
        }
        assert_eq!(by_age, ages);
        // And its usage agrees with its files and directories.
        let recount: u64 = pl
            .files
            .values()
            .map(|f| blocks(f.written, 4096))
            .sum::<u64>()
            + (pl.dirs.len() as u64 - 1) * 4096;
        assert_eq!(recount, pl.used);
    }
}
