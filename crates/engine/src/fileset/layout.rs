//! Laying a fileset out on disk: plan the tree and every file's size from the seed, then make
//! the directories and write the preallocated files with real, non-zero pseudo-random data
//! (optionally on several threads). With `reuse`, files already of the right size are kept,
//! larger ones truncated and smaller ones rewritten.

use super::tree::Dir;
use super::{Bits, FilesetRt, List, Shape, Tree, EXISTS};
use fsbench_base::beneath;
use fsbench_base::owned::{self, Open};
use fsbench_model::content::{self, ContentReport, Generator, BLOCK};
use fsbench_model::dist::{rng, Rng};
use fsbench_model::model::{Fileset, RandVarDef};
use rand::Rng as _;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// What layout will do for one fileset, decided before anything is written.
#[derive(Debug)]
pub struct Plan {
    pub index: usize,
    /// The tree, its files already sized.
    pub tree: Tree,
    /// Which files and leaf directories exist before the run.
    pub prealloc_files: Bits,
    pub prealloc_leafdirs: Bits,
}

impl Plan {
    /// Bytes the preallocated files will hold.
    pub fn bytes(&self) -> u64 {
        self.tree
            .files
            .iter()
            .enumerate()
            .filter(|(i, _)| self.prealloc_files.get(*i))
            .map(|(_, e)| e.size())
            .sum()
    }
}

/// Plan fileset `index` of a workload from the run seed.
pub fn plan(index: usize, fs: &Fileset, randvars: &[RandVarDef], seed: u64) -> Plan {
    let stream = 0x1000 + index as u64;
    let mut r = rng(seed, stream);
    let mut tree = Tree::build(
        Shape {
            entries: fs.entries,
            leafdirs: fs.leafdirs,
            dirwidth: fs.dirwidth,
            dirgamma: fs.dirgamma,
        },
        &mut r,
    );
    let mut rngs: Vec<Rng> = (0..randvars.len())
        .map(|i| rng(randvars[i].seed.unwrap_or(seed), stream ^ (i as u64) << 20))
        .collect();
    // Millions of sizes take a while: stop at Ctrl-C (the caller checks before using the
    // plan, so a short one is never laid out).
    for (i, e) in tree.files.iter_mut().enumerate() {
        if i % 65_536 == 0 && fsbench_base::cancel::interrupted() {
            break;
        }
        e.set_size(fs.size.get(randvars, &mut rngs).max(0) as u64);
    }
    let p = fs.prealloc as f64 / 100.0;
    let mut pick =
        |n: usize| -> Bits { Bits::from_fn(n, |_| p >= 1.0 || (p > 0.0 && r.random::<f64>() < p)) };
    let prealloc_files = pick(tree.files.len());
    let prealloc_leafdirs = pick(tree.leafdirs.len());
    Plan {
        index,
        tree,
        prealloc_files,
        prealloc_leafdirs,
    }
}

/// Totals of a layout.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct LayoutStats {
    pub dirs: u64,
    pub files_written: u64,
    pub files_reused: u64,
    pub bytes_written: u64,
    pub seconds: f64,
    /// The achieved content of a sample of the laid-out data.
    pub content: Option<ContentReport>,
}

/// Layout failed: which path, what happened.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("cannot create {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("interrupted")]
    Interrupted,
}

fn io_err(path: &Path, source: io::Error) -> LayoutError {
    LayoutError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// How a fileset is laid out: the run's seed, the threads writing its files, and whether
/// every block written carries a verification header (`--verify`).
#[derive(Debug, Clone, Copy)]
pub struct How {
    pub seed: u64,
    /// Threads writing the preallocated files (`None`: [`threads`]'s rule).
    pub threads: Option<usize>,
    pub verify: bool,
}

impl Default for How {
    fn default() -> How {
        How {
            seed: 1,
            threads: None,
            verify: false,
        }
    }
}

/// Create the fileset's directories and preallocated files in `<run dir>/<fileset name>`,
/// reached from the run directory's open descriptor `run_dir` without following any link.
/// `root` is that path, for messages. The plan's entries become the run's.
pub fn create(
    plan: Plan,
    fs: &Fileset,
    run_dir: RawFd,
    root: PathBuf,
    How {
        seed,
        threads,
        verify,
    }: How,
) -> Result<(FilesetRt, LayoutStats), LayoutError> {
    let t0 = std::time::Instant::now();
    let name = beneath::component(OsStr::new(&fs.name)).map_err(|e| io_err(&root, e))?;
    match owned::mkdir(run_dir, &name, 0o755) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && fs.reuse => {}
        Err(e) => return Err(io_err(&root, e)),
    }
    let root_fd = beneath::open_dir(run_dir, &name).map_err(|e| io_err(&root, not_ours(e)))?;
    let Plan {
        index,
        mut tree,
        prealloc_files,
        prealloc_leafdirs,
    } = plan;
    let mut rt = FilesetRt::new(&fs.name, root.clone(), root_fd, &mut tree);
    if verify {
        rt.track_verify();
    }
    rt.readonly = fs.readonly;
    rt.writeonly = fs.writeonly;
    rt.content = fs.content;
    rt.content_seed = seed ^ index as u64;
    let dirs = make_dirs(&tree.dirs, fs, &mut rt)?;
    drop(tree);
    make_leafdirs(&prealloc_leafdirs, fs, &rt)?;
    let gen = Generator::new(fs.content, seed ^ index as u64);
    let threads = threads.unwrap_or_else(|| self::threads(fs));
    let tally = write_files(&prealloc_files, index, threads, fs, &rt, &gen)?;
    if fs.reuse {
        drop_shared_links(&rt, &prealloc_files)?;
    }
    let stats = LayoutStats {
        dirs,
        files_written: tally.written.into_inner(),
        bytes_written: tally.bytes.into_inner(),
        files_reused: tally.reused.into_inner(),
        seconds: t0.elapsed().as_secs_f64(),
        content: Some(sample_content(&rt, &prealloc_files, fs, &gen)),
    };
    rt.recount();
    Ok((rt, stats))
}

/// The fileset's directory tree, each directory opened (and its handle cached) as it is
/// made; the number made (with reuse, those that existed are not counted).
fn make_dirs(planned: &[Dir], fs: &Fileset, rt: &mut FilesetRt) -> Result<u64, LayoutError> {
    let mut made = 0;
    let mut buf = Vec::new();
    for (d, dir) in planned.iter().enumerate().skip(1) {
        let path = || rt.dir_pathbuf(d as u32);
        let parent = rt.dir_handle(dir.parent).map_err(|e| io_err(&path(), e))?;
        let n = dir_name(dir.name, &mut buf);
        match owned::mkdir(parent.fd(), n, 0o755) {
            Ok(()) => made += 1,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && fs.reuse => {}
            Err(e) => return Err(io_err(&path(), e)),
        }
        // Open it now (and cache the handle): with reuse this also refuses a link.
        let h = beneath::open_dir(parent.fd(), n).map_err(|e| io_err(&path(), not_ours(e)))?;
        rt.dirs.offer(d as u32, h);
    }
    Ok(made)
}

/// The preallocated leaf directories.
fn make_leafdirs(prealloc: &Bits, fs: &Fileset, rt: &FilesetRt) -> Result<(), LayoutError> {
    let mut buf = Vec::new();
    for i in (0..prealloc.len()).filter(|i| prealloc.get(*i)) {
        let (dir, n) = rt
            .entry_at(List::LeafDirs, i, &mut buf)
            .map_err(|e| io_err(&rt.entry_pathbuf(List::LeafDirs, i), e))?;
        match owned::mkdir(dir.fd(), n, 0o755) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && fs.reuse => {
                // Must be a directory, not a link planted in its place.
                beneath::open_dir(dir.fd(), n)
                    .map_err(|e| io_err(&rt.entry_pathbuf(List::LeafDirs, i), not_ours(e)))?;
            }
            Err(e) => return Err(io_err(&rt.entry_pathbuf(List::LeafDirs, i), e)),
        }
        rt.leafdirs[i].state.store(EXISTS, Ordering::Relaxed);
    }
    Ok(())
}

/// The preallocated files' shared cursor and what their writers did.
#[derive(Default)]
struct Tally {
    cursor: AtomicUsize,
    written: AtomicU64,
    bytes: AtomicU64,
    reused: AtomicU64,
    failure: Mutex<Option<LayoutError>>,
}

/// Files: a shared cursor over the preallocated ones, one or more writer threads.
/// Filebench's rule for the writers of a fileset: one, or several with `paralloc` (here one
/// per core, between 2 and 16).
pub fn threads(fs: &Fileset) -> usize {
    if fs.paralloc {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, 16)
    } else {
        1
    }
}

fn write_files(
    prealloc: &Bits,
    index: usize,
    threads: usize,
    fs: &Fileset,
    rt: &FilesetRt,
    gen: &Generator,
) -> Result<Tally, LayoutError> {
    let tally = Tally::default();
    let threads = threads.clamp(1, prealloc.count().div_ceil(CHUNK).max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            let tally = &tally;
            s.spawn(move || file_writer(prealloc, index, fs, rt, gen, tally));
        }
    });
    let mut tally = tally;
    if let Some(e) = tally.failure.get_mut().unwrap().take() {
        return Err(e);
    }
    Ok(tally)
}

/// Preallocated files a writer takes at once: consecutive files share directories, so
/// writers mostly work in different ones (a directory's creates serialise on its lock).
const CHUNK: usize = 64;

/// One writer thread: take the next chunk of preallocated files off the cursor and write
/// them, until none is left, one fails or the run is interrupted.
fn file_writer(
    prealloc: &Bits,
    index: usize,
    fs: &Fileset,
    rt: &FilesetRt,
    gen: &Generator,
    tally: &Tally,
) {
    let mut data = vec![0u8; 1 << 20];
    let mut name = Vec::new();
    let mut last = (0usize, 0usize);
    loop {
        // The cursor counts chunks of preallocated files; each writer finds the k-th file by
        // skipping from where it found its last (clear runs of the bit set a word at once).
        let first = tally.cursor.fetch_add(1, Ordering::Relaxed) * CHUNK;
        for k in first..(first + CHUNK).min(prealloc.count()) {
            if fsbench_base::cancel::interrupted() {
                tally
                    .failure
                    .lock()
                    .unwrap()
                    .get_or_insert(LayoutError::Interrupted);
                return;
            }
            let Some(i) = nth_set(prealloc, k, &mut last) else {
                return;
            };
            if let Err(e) = write_one(i, index, fs, rt, gen, tally, (&mut data, &mut name)) {
                tally.failure.lock().unwrap().get_or_insert(e);
                return;
            }
        }
        if first + CHUNK >= prealloc.count() {
            return;
        }
    }
}

/// Write preallocated file `i` and count it.
fn write_one(
    i: usize,
    index: usize,
    fs: &Fileset,
    rt: &FilesetRt,
    gen: &Generator,
    tally: &Tally,
    (data, name): (&mut [u8], &mut Vec<u8>),
) -> Result<(), LayoutError> {
    let size = rt.files[i].size();
    let r = rt.entry_at(List::Files, i, name).and_then(|(dir, n)| {
        write_file(
            dir.fd(),
            n,
            size,
            (gen, i as u64),
            data,
            Reuse {
                reuse: fs.reuse,
                trust: fs.trusttree,
            },
            rt.verify
                .get(i)
                .map(|st| (st, fsbench_model::verify::file_id(index as u32, i as u32))),
        )
    });
    match r {
        Ok(Some(n)) => {
            tally.written.fetch_add(1, Ordering::Relaxed);
            tally.bytes.fetch_add(n, Ordering::Relaxed);
        }
        Ok(None) => {
            tally.reused.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => return Err(io_err(&rt.entry_pathbuf(List::Files, i), not_ours(e))),
    }
    rt.files[i].state.store(EXISTS, Ordering::Relaxed);
    Ok(())
}

/// The index of the `k`-th set bit, counting on from `last` (the rank and index of the last one
/// found) when `k` is beyond it: writers take increasing ranks, so each walk is short.
fn nth_set(bits: &Bits, k: usize, last: &mut (usize, usize)) -> Option<usize> {
    let (mut rank, mut at) = if k >= last.0 && (last.0 > 0 || bits.get(last.1)) {
        *last
    } else {
        (0, bits.next_set(0)?)
    };
    while rank < k {
        at = bits.next_set(at + 1)?;
        rank += 1;
    }
    *last = (rank, at);
    Some(at)
}

/// Measure the content of (up to 4 MiB of) what layout wrote: the blocks of the preallocated
/// files in order, at most 64 blocks from each file so the sample spans many files.
pub(super) fn sample_content(
    rt: &FilesetRt,
    prealloc: &Bits,
    fs: &Fileset,
    gen: &Generator,
) -> ContentReport {
    const SAMPLE: usize = 4 << 20;
    let mut sample = Vec::with_capacity(SAMPLE);
    for (i, e) in rt.files.iter().enumerate() {
        if !prealloc.get(i) {
            continue;
        }
        let take = e.size().min(64 * BLOCK as u64) as usize;
        let take = take.min(SAMPLE - sample.len());
        let at = sample.len();
        sample.resize(at + take, 0);
        gen.fill(i as u64, 0, &mut sample[at..]);
        if sample.len() >= SAMPLE {
            break;
        }
    }
    content::report(&fs.name, fs.content, &sample)
}

/// A directory's eight-digit name as a C string in `buf`.
fn dir_name(n: u32, buf: &mut Vec<u8>) -> &std::ffi::CStr {
    buf.clear();
    buf.extend_from_slice(format!("{n:08}").as_bytes());
    buf.push(0);
    std::ffi::CStr::from_bytes_with_nul(buf).expect("digits and one NUL")
}

/// Say what a refused link or mount means.
fn not_ours(e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(libc::EXDEV) => owned::explain(e),
        Some(libc::ELOOP) | Some(libc::ENOTDIR) => io::Error::other(
            "it is a symbolic link or not the kind of entry fsbench created; fsbench never follows links inside its run directories (remove it, or the run directory, yourself)",
        ),
        _ => e,
    }
}

/// Write one file of `size` bytes as `name` in `dir`. Returns `None` when an existing file
/// was kept as it was. Through the owned-tree layer: never through a link or into a mount; an
/// existing file that is not fsbench's own (other hard links, another owner) is replaced by a
/// new inode, never written or truncated; anything but a regular file is refused.
fn write_file(
    dir: RawFd,
    name: &std::ffi::CStr,
    size: u64,
    content: (&Generator, u64),
    data: &mut [u8],
    reuse: Reuse,
    verify: Option<(&fsbench_model::verify::FileState, u64)>,
) -> io::Result<Option<u64>> {
    // With --verify a kept file is written again: what earlier runs left in it is unknown.
    if reuse.reuse && verify.is_none() {
        match owned::open_write(dir, name, Open::Own, libc::O_WRONLY) {
            Ok(fd) => {
                let have = beneath::fstat(fd.as_raw_fd())?.st_size as u64;
                if reuse.trust || have == size {
                    return Ok(None);
                }
                if have > size {
                    owned::set_len(&fd, size)?;
                    return Ok(None);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) if e.raw_os_error() == Some(libc::EISDIR) => {
                return Err(io::Error::from_raw_os_error(libc::ENOTDIR))
            }
            // Not fsbench's own: replaced below.
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {}
            Err(e) => return Err(e),
        }
    }
    let how = if reuse.reuse {
        Open::Replace
    } else {
        Open::New
    };
    let fd = owned::open_write(dir, name, how, libc::O_WRONLY)?;
    fill(fd, size, content, data, verify)
}

/// What a layout may do with files it finds.
#[derive(Debug, Clone, Copy)]
struct Reuse {
    /// The fileset has `reuse`: existing files of the right size are kept.
    reuse: bool,
    /// The fileset has `trusttree`: existing files are kept whatever their size.
    trust: bool,
}

/// In a reuse directory, the entries not preallocated that an earlier run left as files:
/// those that share their data with another link, or belong to another user, are removed
/// (they are fsbench's names in fsbench's directory), so no flowop writes through them.
fn drop_shared_links(rt: &FilesetRt, prealloc: &Bits) -> Result<(), LayoutError> {
    let mut name = Vec::new();
    for i in (0..rt.files.len()).filter(|i| !prealloc.get(*i)) {
        let path = || rt.entry_pathbuf(List::Files, i);
        let (dir, n) = rt
            .entry_at(List::Files, i, &mut name)
            .map_err(|e| io_err(&path(), not_ours(e)))?;
        match beneath::lstat_at(dir.fd(), n) {
            Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFREG && !owned::sole_own_link(&st) => {
                owned::unlink(dir.fd(), n).map_err(|e| io_err(&path(), e))?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn fill(
    fd: std::os::fd::OwnedFd,
    size: u64,
    content: (&Generator, u64),
    data: &mut [u8],
    verify: Option<(&fsbench_model::verify::FileState, u64)>,
) -> io::Result<Option<u64>> {
    let mut f = File::from(fd);
    let (gen, file) = content;
    let mut off = 0u64;
    while off < size {
        let n = (size - off).min(data.len() as u64) as usize;
        gen.fill(file, off / BLOCK as u64, &mut data[..n]);
        if let Some((_, id)) = verify {
            fsbench_model::verify::stamp(1, id, off, &mut data[..n]);
        }
        f.write_all(&data[..n])?;
        off += n as u64;
    }
    if let Some((vs, _)) = verify {
        vs.laid_out(size);
    }
    Ok(Some(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kth_preallocated_file_is_found_in_order_and_out_of_order() {
        let bits = Bits::from_fn(1000, |i| i % 7 == 3);
        let want: Vec<usize> = (0..1000).filter(|i| i % 7 == 3).collect();
        let mut last = (0, 0);
        for (k, w) in want.iter().enumerate() {
            assert_eq!(nth_set(&bits, k, &mut last), Some(*w));
        }
        assert_eq!(nth_set(&bits, want.len(), &mut last), None);
        // Another writer took some ranks in between: still the k-th.
        let mut last = (0, 0);
        for k in [0, 3, 4, 9, 2, 50] {
            assert_eq!(nth_set(&bits, k, &mut last), Some(want[k]));
        }
        let none = Bits::from_fn(100, |_| false);
        assert_eq!(nth_set(&none, 0, &mut (0, 0)), None);
    }
}
