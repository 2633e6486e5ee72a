//! `fsbench layout DIR`: how contiguous are the files under DIR on disk?
//!
//! Computes the Smith–Seltzer layout score (see [`score`]) of every regular
//! file from its FIEMAP extents, aggregated over the tree, per file-size
//! bucket, with the extents-per-file distribution and the most fragmented
//! files; the split files, whose data lies in another allocation group than
//! their directory's inode (see [`geometry`]); and the cross-file locality of a
//! whole-tree read in directory order (see [`order`]). The walk is the parallel
//! one of `scan`; each worker owns a FIEMAP buffer and its accumulators.

pub mod fiemap;
pub mod geometry;
pub mod order;
pub mod score;

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::scan::summary::{log2_bounds, log2_bucket, Log2Hist, Log2Row};
use fiemap::{Extent, Mapper};
use fsbench_base::walk::{self, Visitor, WalkEntry, WalkOptions};
use geometry::Geometry;
use order::{Child, Listing, Locality, Run};
use score::{score_extents, FileScore};

/// Arguments of `fsbench layout`.
#[derive(clap::Args, Debug)]
pub struct LayoutArgs {
    /// Directory (or single file) to examine.
    pub dir: PathBuf,
    /// Sync each file before mapping it (FIEMAP_FLAG_SYNC), so that delayed
    /// allocations have their final blocks.
    #[arg(long)]
    pub sync: bool,
    /// Write the report as JSON to this file ("-" for stdout, replacing the text).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Number of most fragmented files listed.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Descend into directories on other file systems.
    #[arg(long)]
    pub cross_mounts: bool,
    /// Worker threads (default: one per core).
    #[arg(short = 'j', long)]
    pub threads: Option<usize>,
}

impl fsbench_base::export::check::Outputs for LayoutArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        vec![named(self.json.as_deref(), "--json")]
    }
}

/// Library errors of `layout`.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("layout: FIEMAP not supported on {fs} at {path}")]
    Unsupported { fs: String, path: PathBuf },
    #[error("layout: {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A signal arrived: the walk stops (see [`fsbench_base::cancel`]).
    #[error("interrupted")]
    Interrupted,
}

/// One file in the list of the most fragmented.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileRow {
    pub path: String,
    pub size: u64,
    pub blocks: u64,
    pub extents: u64,
    pub fragments: u64,
    pub score: Option<f64>,
}

/// Totals for files in one log2 size bucket.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SizeRow {
    /// File sizes in `[lo, hi)` bytes.
    pub lo: u64,
    pub hi: u64,
    pub files: u64,
    /// Files with at least two blocks (the others have no score).
    pub scored_files: u64,
    pub blocks: u64,
    pub contiguous: u64,
    pub score: Option<f64>,
    pub mean_extents: f64,
    pub mean_fragments: f64,
}

/// The report of one `layout` run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LayoutReport {
    pub root: String,
    pub fs_type: String,
    pub block_size: u64,
    pub sync: bool,
    pub elapsed_s: f64,
    /// Regular files examined.
    pub files: u64,
    /// Files with at least two mapped blocks.
    pub scored_files: u64,
    pub blocks: u64,
    pub contiguous: u64,
    /// Σ (blocks − 1) over scored files: the score's denominator.
    pub pairs: u64,
    /// Σ contiguous / Σ (blocks − 1) over scored files; `None` if no file has 2 blocks.
    pub score: Option<f64>,
    pub extents: u64,
    /// Physically contiguous runs (filefrag's "extents").
    pub fragments: u64,
    pub unwritten_extents: u64,
    /// Delayed-allocation/unknown extents, not scored (use --sync).
    pub unknown_extents: u64,
    pub inline_extents: u64,
    pub encoded_extents: u64,
    pub shared_extents: u64,
    pub errors: u64,
    pub by_size: Vec<SizeRow>,
    /// Fragments per file (files with at least one block), log2 buckets.
    pub fragments_per_file: Vec<Log2Row>,
    pub most_fragmented: Vec<FileRow>,
    /// Files with data in another allocation group than their directory's inode; `None`
    /// where the geometry could not be read (`geometry_note` says why).
    pub split_files: Option<u64>,
    /// Files whose groups were compared (those with scored blocks).
    pub split_checked_files: u64,
    /// ext4 with flex_bg: files with data in another flex group than their directory's
    /// inode (ext4 places by flex group); `None` elsewhere.
    pub split_flex_files: Option<u64>,
    /// The allocation groups, from the file system's superblock.
    pub geometry: Option<Geometry>,
    pub geometry_note: Option<String>,
    /// Cross-file locality: the share of the blocks of a whole-tree read in directory order
    /// that follow the block read before them on disk; `None` with fewer than two blocks.
    pub locality: Option<f64>,
    pub locality_pairs: u64,
    pub locality_contiguous: u64,
}

#[derive(Debug, Clone, Default)]
struct Acc {
    files: u64,
    scored: u64,
    sum: FileScore,
    pairs: u64,
}

impl Acc {
    fn add(&mut self, s: &FileScore) {
        self.files += 1;
        self.scored += (s.pairs() > 0) as u64;
        self.pairs += s.pairs();
        self.sum_fields(s);
    }
    fn sum_fields(&mut self, s: &FileScore) {
        let t = &mut self.sum;
        t.blocks += s.blocks;
        t.contiguous += s.contiguous;
        t.extents += s.extents;
        t.fragments += s.fragments;
        t.unwritten_extents += s.unwritten_extents;
        t.unknown_extents += s.unknown_extents;
        t.inline_extents += s.inline_extents;
        t.encoded_extents += s.encoded_extents;
        t.shared_extents += s.shared_extents;
    }
    fn merge(&mut self, o: &Acc) {
        self.files += o.files;
        self.scored += o.scored;
        self.pairs += o.pairs;
        self.sum_fields(&o.sum);
    }
    fn score(&self) -> Option<f64> {
        (self.pairs > 0).then(|| self.sum.contiguous as f64 / self.pairs as f64)
    }
}

/// Accumulated layout facts; one per worker, merged at the end.
#[derive(Debug, Default)]
pub struct LayoutStats {
    total: Acc,
    by_size: Vec<Acc>,
    fragments: Log2Hist,
    top: Vec<FileRow>,
    top_n: usize,
    split: u64,
    split_flex: u64,
    split_checked: u64,
    listing: Listing,
}

fn rank(a: &FileRow, b: &FileRow) -> std::cmp::Ordering {
    b.fragments
        .cmp(&a.fragments)
        .then_with(|| {
            a.score
                .unwrap_or(1.0)
                .partial_cmp(&b.score.unwrap_or(1.0))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .then_with(|| a.path.cmp(&b.path))
}

impl LayoutStats {
    pub fn new(top_n: usize) -> Self {
        LayoutStats {
            top_n,
            ..Default::default()
        }
    }

    /// Account one file of `size` bytes.
    pub fn add(&mut self, path: &[u8], size: u64, s: &FileScore) {
        self.total.add(s);
        let b = log2_bucket(size);
        if self.by_size.len() <= b {
            self.by_size.resize(b + 1, Acc::default());
        }
        self.by_size[b].add(s);
        if s.blocks > 0 {
            self.fragments.add(s.fragments);
        }
        if self.top_n > 0 && s.fragments > 1 {
            self.top.push(FileRow {
                path: String::from_utf8_lossy(path).into_owned(),
                size,
                blocks: s.blocks,
                extents: s.extents,
                fragments: s.fragments,
                score: s.score(),
            });
            if self.top.len() >= 4 * self.top_n.max(16) {
                self.trim_top();
            }
        }
    }

    fn trim_top(&mut self) {
        self.top.sort_by(rank);
        self.top.truncate(self.top_n);
    }

    pub fn merge(&mut self, o: LayoutStats) {
        self.total.merge(&o.total);
        if self.by_size.len() < o.by_size.len() {
            self.by_size.resize(o.by_size.len(), Acc::default());
        }
        for (a, b) in self.by_size.iter_mut().zip(&o.by_size) {
            a.merge(b);
        }
        self.fragments.merge(&o.fragments);
        self.top.extend(o.top);
        self.trim_top();
        self.split += o.split;
        self.split_flex += o.split_flex;
        self.split_checked += o.split_checked;
        self.listing.merge(o.listing);
    }
}

struct LayoutVisitor {
    stats: LayoutStats,
    mapper: Mapper,
    extents: Vec<Extent>,
    sync: bool,
    root: PathBuf,
    root_dev: libc::dev_t,
    root_bs: u64,
    other_bs: HashMap<libc::dev_t, u64>,
    problems: Vec<LayoutError>,
    problem_count: u64,
    geometry: Option<std::sync::Arc<Geometry>>,
    /// The directory whose entries come now (its path from the root) and its inode.
    parent: (Vec<u8>, u64),
}

fn open_file(dirfd: RawFd, name: &CStr) -> io::Result<OwnedFd> {
    let fd = unsafe {
        libc::openat(
            dirfd,
            name.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn is_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP) | Some(libc::ENOTTY) | Some(libc::ENOSYS)
    )
}

impl LayoutVisitor {
    fn problem(&mut self, e: LayoutError) {
        self.problem_count += 1;
        if self.problems.len() < walk::MAX_PROBLEMS {
            self.problems.push(e);
        }
    }

    /// Map and score one open file in the directory with inode `dir_ino`; where a read of
    /// it starts and ends on disk.
    fn file(
        &mut self,
        fd: RawFd,
        path: &[u8],
        st: &libc::stat,
        dir_ino: u64,
    ) -> Result<Option<Run>, LayoutError> {
        let full = || self.root.join(OsStr::from_bytes(path));
        let bs = if st.st_dev == self.root_dev {
            self.root_bs
        } else if let Some(&b) = self.other_bs.get(&st.st_dev) {
            b
        } else {
            let b = fiemap::fs_info(fd)
                .map(|(_, b)| b)
                .unwrap_or(st.st_blksize as u64);
            self.other_bs.insert(st.st_dev, b);
            b
        };
        self.extents.clear();
        if let Err(e) = self.mapper.map(fd, self.sync, &mut self.extents) {
            if is_unsupported(&e) {
                let fs = fiemap::fs_info(fd)
                    .map(|(n, _)| n)
                    .unwrap_or_else(|_| "this file system".into());
                return Err(LayoutError::Unsupported { fs, path: full() });
            }
            self.problem(LayoutError::Io {
                path: full(),
                source: e,
            });
            return Ok(None);
        }
        let s = score_extents(&self.extents, bs);
        self.stats.add(path, st.st_size as u64, &s);
        if st.st_dev == self.root_dev && s.blocks > 0 {
            self.count_split(dir_ino, bs);
        }
        Ok(s.first_block.zip(s.last_block).map(|(first, last)| Run {
            first,
            last,
            blocks: s.blocks,
            contiguous: s.contiguous,
        }))
    }

    /// Whether the mapped file has data outside its directory inode's group.
    fn count_split(&mut self, dir_ino: u64, bs: u64) {
        let Some(g) = &self.geometry else { return };
        let home = g.group_of_inode(dir_ino);
        let flex = g.groups_per_flex.max(1);
        let (mut away, mut away_flex) = (false, false);
        for e in self
            .extents
            .iter()
            .filter(|e| FIEMAP_NO_ADDRESS & e.flags == 0)
        {
            let first = e.physical / bs;
            let last = first + e.length.div_ceil(bs).max(1) - 1;
            for grp in [g.group_of_block(first), g.group_of_block(last)] {
                away |= grp != home;
                away_flex |= grp / flex != home / flex;
            }
        }
        self.stats.split_checked += 1;
        self.stats.split += away as u64;
        self.stats.split_flex += away_flex as u64;
    }

    /// The inode of the directory holding `e`, fstat'ed once per directory.
    fn parent_of(&mut self, e: &WalkEntry<'_>) -> (Vec<u8>, u64) {
        let parent = &e.path[..e.path.len() - e.name.to_bytes().len()];
        let parent = parent.strip_suffix(b"/").unwrap_or(parent);
        if self.parent.0 != parent || self.parent.1 == u64::MAX {
            let ino =
                fsbench_base::beneath::fstat(e.dirfd.as_raw_fd()).map_or(u64::MAX, |st| st.st_ino);
            self.parent = (parent.to_vec(), ino);
        }
        self.parent.clone()
    }
}

/// Extents without a physical address of their own (not scored, not placed).
const FIEMAP_NO_ADDRESS: u32 = fiemap::FIEMAP_EXTENT_DELALLOC
    | fiemap::FIEMAP_EXTENT_UNKNOWN
    | fiemap::FIEMAP_EXTENT_DATA_INLINE
    | fiemap::FIEMAP_EXTENT_DATA_TAIL
    | fiemap::FIEMAP_EXTENT_NOT_ALIGNED;

impl Visitor for LayoutVisitor {
    type Error = LayoutError;

    fn entry(&mut self, e: &WalkEntry<'_>) -> Result<(), LayoutError> {
        if fsbench_base::cancel::interrupted() {
            return Err(LayoutError::Interrupted);
        }
        if !(e.is_file() || e.is_dir()) {
            return Ok(());
        }
        let (parent, dir_ino) = self.parent_of(e);
        if e.is_dir() {
            self.stats
                .listing
                .push(&parent, Child::Dir(e.path.to_vec()));
            return Ok(());
        }
        let fd = match open_file(e.dirfd.as_raw_fd(), e.name) {
            Ok(fd) => fd,
            Err(err) => {
                let path = self.root.join(OsStr::from_bytes(e.path));
                self.problem(LayoutError::Io { path, source: err });
                return Ok(());
            }
        };
        let run = self.file(fd.as_raw_fd(), e.path, e.stat, dir_ino)?;
        self.stats.listing.push(&parent, Child::File(run));
        Ok(())
    }
}

/// Examine the files under `root` (or the single file `root`).
pub fn layout(
    root: &Path,
    opts: &WalkOptions,
    sync: bool,
    top: usize,
) -> Result<LayoutReport, anyhow::Error> {
    let started = Instant::now();
    let c = CString::new(root.as_os_str().as_bytes()).context("path contains a NUL byte")?;
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error())
            .with_context(|| format!("cannot open {}", root.display()));
    }
    let root_fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let st = fsbench_base::beneath::fstat(root_fd.as_raw_fd())?;
    let (fs_type, block_size) = fiemap::fs_info(root_fd.as_raw_fd())
        .with_context(|| format!("cannot statfs {}", root.display()))?;
    let geometry = geometry::of_dev(st.st_dev);
    let shared = geometry.as_ref().ok().cloned().map(std::sync::Arc::new);
    let make = |_| LayoutVisitor {
        stats: LayoutStats::new(top),
        mapper: Mapper::default(),
        extents: Vec::new(),
        sync,
        root: root.to_path_buf(),
        root_dev: st.st_dev,
        root_bs: block_size,
        other_bs: HashMap::new(),
        problems: Vec::new(),
        problem_count: 0,
        geometry: shared.clone(),
        parent: (Vec::new(), u64::MAX),
    };
    let (visitors, walk_problems) = if st.st_mode & libc::S_IFMT == libc::S_IFREG {
        (vec![single_file(make(0), root, &root_fd, &st)?], Vec::new())
    } else {
        drop(root_fd);
        let out = walk::walk(root, opts, make).map_err(|e| match e {
            walk::WalkError::Visit(l) => anyhow::Error::new(l),
            other => anyhow::Error::new(other),
        })?;
        (out.visitors, out.stats.problems)
    };
    let mut stats = LayoutStats::new(top);
    let mut errors = walk_problems.len() as u64;
    for p in &walk_problems {
        fsbench_base::errln!("layout: {}: {}", root.join(&p.path).display(), p.error);
    }
    for v in visitors {
        errors += v.problem_count;
        for p in &v.problems {
            fsbench_base::errln!("{p}");
        }
        stats.merge(v.stats);
    }
    let mut r = report(
        root,
        (fs_type, block_size),
        sync,
        started.elapsed().as_secs_f64(),
        stats,
        errors,
    );
    match geometry {
        Ok(g) => {
            if g.groups_per_flex <= 1 {
                r.split_flex_files = None;
            }
            r.geometry = Some(g);
        }
        Err(why) => {
            r.split_files = None;
            r.split_flex_files = None;
            r.geometry_note = Some(why);
        }
    }
    Ok(r)
}

/// `layout FILE`: the one file, in its directory.
fn single_file(
    mut v: LayoutVisitor,
    root: &Path,
    fd: &OwnedFd,
    st: &libc::stat,
) -> Result<LayoutVisitor, LayoutError> {
    let name = root
        .file_name()
        .map(|n| n.as_bytes().to_vec())
        .unwrap_or_default();
    let parent = root.parent().unwrap_or(Path::new(""));
    v.root = parent.to_path_buf();
    let dir = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let dir_ino = std::fs::metadata(dir).map_or(u64::MAX, |m| {
        use std::os::unix::fs::MetadataExt;
        m.ino()
    });
    let run = v.file(fd.as_raw_fd(), &name, st, dir_ino)?;
    v.stats.listing.push(b"", Child::File(run));
    Ok(v)
}

/// The report from the merged statistics.
fn report(
    root: &Path,
    (fs_type, block_size): (String, u64),
    sync: bool,
    elapsed_s: f64,
    stats: LayoutStats,
    errors: u64,
) -> LayoutReport {
    let t = &stats.total;
    let locality: Locality = stats.listing.locality();
    LayoutReport {
        root: root.display().to_string(),
        fs_type,
        block_size,
        sync,
        elapsed_s,
        files: t.files,
        scored_files: t.scored,
        blocks: t.sum.blocks,
        contiguous: t.sum.contiguous,
        pairs: t.pairs,
        score: t.score(),
        extents: t.sum.extents,
        fragments: t.sum.fragments,
        unwritten_extents: t.sum.unwritten_extents,
        unknown_extents: t.sum.unknown_extents,
        inline_extents: t.sum.inline_extents,
        encoded_extents: t.sum.encoded_extents,
        shared_extents: t.sum.shared_extents,
        errors,
        by_size: stats
            .by_size
            .iter()
            .enumerate()
            .filter(|(_, a)| a.files > 0)
            .map(|(b, a)| {
                let (lo, hi) = log2_bounds(b);
                SizeRow {
                    lo,
                    hi,
                    files: a.files,
                    scored_files: a.scored,
                    blocks: a.sum.blocks,
                    contiguous: a.sum.contiguous,
                    score: a.score(),
                    mean_extents: a.sum.extents as f64 / a.files as f64,
                    mean_fragments: a.sum.fragments as f64 / a.files as f64,
                }
            })
            .collect(),
        fragments_per_file: stats.fragments.rows(),
        most_fragmented: stats.top,
        split_files: Some(stats.split),
        split_checked_files: stats.split_checked,
        split_flex_files: Some(stats.split_flex),
        geometry: None,
        geometry_note: None,
        locality: locality.score,
        locality_pairs: locality.pairs,
        locality_contiguous: locality.contiguous,
    }
}

fn fmt_score(s: Option<f64>) -> String {
    s.map(|v| format!("{v:.4}")).unwrap_or_else(|| "-".into())
}

/// Print the report as text.
pub fn print_report(r: &LayoutReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "layout of {} ({}, block size {}){}",
        r.root,
        r.fs_type,
        r.block_size,
        if r.sync { ", synced" } else { "" }
    )?;
    writeln!(
        out,
        "  layout score {}  ({} of {} block pairs contiguous)",
        fmt_score(r.score),
        r.contiguous,
        r.pairs,
    )?;
    writeln!(
        out,
        "  files {} (scored {})  blocks {}  extents {}  fragments {}",
        r.files, r.scored_files, r.blocks, r.extents, r.fragments
    )?;
    print_split_and_locality(r, out)?;
    if r.unwritten_extents > 0 {
        writeln!(
            out,
            "  {} unwritten (preallocated) extents, scored as allocated",
            r.unwritten_extents
        )?;
    }
    if r.unknown_extents > 0 {
        writeln!(
            out,
            "  {} extents not allocated yet (delayed allocation), not scored{}",
            r.unknown_extents,
            if r.sync { "" } else { ": rerun with --sync" }
        )?;
    }
    if r.inline_extents > 0 {
        writeln!(
            out,
            "  {} inline/tail extents, not scored",
            r.inline_extents
        )?;
    }
    if r.encoded_extents > 0 {
        writeln!(
            out,
            "  {} encoded (compressed/encrypted) extents: extent counts are inflated",
            r.encoded_extents
        )?;
    }
    if r.shared_extents > 0 {
        writeln!(out, "  {} shared (reflinked) extents", r.shared_extents)?;
    }
    if r.errors > 0 {
        writeln!(
            out,
            "  {} could not be examined",
            fsbench_base::units::count(r.errors, "file")
        )?;
    }
    print_tables(r, out)
}

/// Split files and the cross-file locality, in words.
fn print_split_and_locality(r: &LayoutReport, out: &mut impl Write) -> io::Result<()> {
    match (&r.geometry, r.split_files) {
        (Some(g), Some(n)) => {
            let group = if g.fs == "xfs" {
                "allocation group"
            } else {
                "block group"
            };
            writeln!(
                out,
                "  split files {n} of {} ({:.1}%): data in another {group} than the directory ({} groups of {} blocks, from the superblock of {})",
                r.split_checked_files,
                100.0 * n as f64 / r.split_checked_files.max(1) as f64,
                g.groups,
                g.group_blocks,
                g.device
            )?;
            if let Some(f) = r.split_flex_files {
                writeln!(
                    out,
                    "              {f} in another flex group ({} block groups each: ext4 keeps their inodes in the first and files' data from the next on)",
                    g.groups_per_flex
                )?;
            }
        }
        _ => writeln!(
            out,
            "  split files -: {}",
            r.geometry_note.as_deref().unwrap_or("no geometry")
        )?,
    }
    writeln!(
        out,
        "  locality {}  ({} of {} block pairs of a whole-tree read in directory order follow on disk)",
        fmt_score(r.locality),
        r.locality_contiguous,
        r.locality_pairs
    )
}

/// The report's tables: by file size, fragments per file, the most fragmented files.
fn print_tables(r: &LayoutReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "\nfile size              files   score   extents/file  fragments/file"
    )?;
    for s in &r.by_size {
        let label = if s.lo == 0 {
            "0".to_string()
        } else {
            format!(
                "{}..{}",
                fsbench_base::units::human_bytes_u64(s.lo),
                fsbench_base::units::human_bytes_u64(s.hi)
            )
        };
        writeln!(
            out,
            "  {label:>20} {:>8} {:>7} {:>13.2} {:>15.2}",
            s.files,
            fmt_score(s.score),
            s.mean_extents,
            s.mean_fragments
        )?;
    }
    writeln!(out, "\nfragments per file     files")?;
    for b in &r.fragments_per_file {
        let label = if b.hi - b.lo <= 1 {
            b.lo.to_string()
        } else {
            format!("{}..{}", b.lo, b.hi - 1)
        };
        writeln!(out, "  {label:>16} {:>9}", b.count)?;
    }
    if !r.most_fragmented.is_empty() {
        writeln!(
            out,
            "\nmost fragmented          fragments   score        size  path"
        )?;
        for f in &r.most_fragmented {
            writeln!(
                out,
                "  {:>33} {:>7} {:>11}  {}",
                f.fragments,
                fmt_score(f.score),
                fsbench_base::units::human_bytes_u64(f.size),
                f.path
            )?;
        }
    }
    Ok(())
}

/// `fsbench layout`.
pub fn run(args: LayoutArgs) -> anyhow::Result<()> {
    // A signal stops the walk; the command ends with status 130 (nothing to undo).
    fsbench_base::cancel::install_signal_handlers();
    fsbench_base::export::check::outputs(&fsbench_base::export::check::Outputs::outputs(&args))?;
    let opts = WalkOptions {
        cross_mounts: args.cross_mounts,
        threads: args.threads.unwrap_or_else(walk::default_threads).max(1),
    };
    let report = layout(&args.dir, &opts, args.sync, args.top)?;
    fsbench_base::export::report::emit(&report, args.json.as_deref())
}

impl fsbench_base::export::report::Report for LayoutReport {
    fn write_text(&self, mut out: &mut dyn Write) -> io::Result<()> {
        print_report(self, &mut out)
    }
}

#[cfg(test)]
mod tests {
    use super::fiemap::Extent;
    use super::*;

    fn fs(blocks: u64, contiguous: u64, fragments: u64) -> FileScore {
        FileScore {
            blocks,
            contiguous,
            extents: fragments,
            fragments,
            ..Default::default()
        }
    }

    #[test]
    fn aggregate_is_ratio_of_sums_not_mean_of_ratios() {
        let mut a = LayoutStats::new(2);
        a.add(b"big", 1 << 20, &fs(256, 255, 1));
        a.add(b"small", 12288, &fs(3, 0, 3));
        a.add(b"tiny", 100, &fs(1, 0, 1));
        let mut b = LayoutStats::new(2);
        b.add(b"other", 8192, &fs(2, 1, 1));
        a.merge(b);
        assert_eq!(a.total.files, 4);
        assert_eq!(a.total.scored, 3);
        assert_eq!(a.total.pairs, 255 + 2 + 1);
        let want = (255.0 + 0.0 + 1.0) / 258.0;
        assert!((a.total.score().unwrap() - want).abs() < 1e-12);
        // 12 KiB and 8 KiB share the bucket [8 KiB, 16 KiB).
        let b14 = &a.by_size[log2_bucket(8192)];
        assert_eq!((b14.files, b14.pairs), (2, 3));
        assert_eq!(a.top.len(), 1);
        assert_eq!(a.top[0].path, "small");
    }

    #[test]
    fn top_list_ranks_by_fragments() {
        let mut a = LayoutStats::new(2);
        for i in 0..100u64 {
            a.add(
                format!("f{i}").as_bytes(),
                1 << 20,
                &fs(256, 256 - i - 1, i + 1),
            );
        }
        a.trim_top();
        let names: Vec<_> = a.top.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(names, ["f99", "f98"]);
    }

    #[test]
    fn score_from_extents_feeds_stats() {
        let e = [
            Extent {
                logical: 0,
                physical: 4096 * 10,
                length: 4096 * 2,
                flags: 0,
            },
            Extent {
                logical: 4096 * 2,
                physical: 4096 * 20,
                length: 4096 * 2,
                flags: fiemap::FIEMAP_EXTENT_LAST,
            },
        ];
        let s = score_extents(&e, 4096);
        let mut a = LayoutStats::new(1);
        a.add(b"x", 16384, &s);
        assert!((a.total.score().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    }
}
