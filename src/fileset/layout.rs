//! Laying a fileset out on disk: plan the tree and every file's size from the seed, then make
//! the directories and write the preallocated files with real, non-zero pseudo-random data
//! (optionally on several threads). With `reuse`, files already of the right size are kept,
//! larger ones truncated and smaller ones rewritten.

use super::{FilesetRt, List, Shape, Tree, EXISTS};
use crate::dist::{rng, Rng};
use crate::model::{Fileset, RandVarDef};
use rand::{Rng as _, RngCore};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// What layout will do for one fileset, decided before anything is written.
#[derive(Debug)]
pub struct Plan {
    pub index: usize,
    pub tree: Tree,
    pub sizes: Vec<u64>,
    /// Which files and leaf directories exist before the run.
    pub prealloc_files: Vec<bool>,
    pub prealloc_leafdirs: Vec<bool>,
}

impl Plan {
    /// Bytes the preallocated files will hold.
    pub fn bytes(&self) -> u64 {
        self.sizes
            .iter()
            .zip(&self.prealloc_files)
            .filter(|(_, p)| **p)
            .map(|(s, _)| *s)
            .sum()
    }
}

/// Plan fileset `index` of a workload from the run seed.
pub fn plan(index: usize, fs: &Fileset, randvars: &[RandVarDef], seed: u64) -> Plan {
    let stream = 0x1000 + index as u64;
    let mut r = rng(seed, stream);
    let tree = Tree::build(
        Shape {
            entries: fs.entries,
            leafdirs: fs.leafdirs,
            dirwidth: fs.dirwidth,
            dirgamma: fs.dirgamma,
            widthgamma: fs.widthgamma,
        },
        &mut r,
    );
    let mut rngs: Vec<Rng> = (0..randvars.len())
        .map(|i| rng(randvars[i].seed.unwrap_or(seed), stream ^ (i as u64) << 20))
        .collect();
    let sizes = (0..tree.files.len())
        .map(|_| fs.size.get(randvars, &mut rngs).max(0) as u64)
        .collect();
    let p = fs.prealloc as f64 / 100.0;
    let mut pick = |n: usize| -> Vec<bool> {
        (0..n)
            .map(|_| p >= 1.0 || (p > 0.0 && r.random::<f64>() < p))
            .collect()
    };
    let prealloc_files = pick(tree.files.len());
    let prealloc_leafdirs = pick(tree.leafdirs.len());
    Plan {
        index,
        tree,
        sizes,
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

/// Create the fileset's directories and preallocated files under `root`.
pub fn create(
    plan: &Plan,
    fs: &Fileset,
    root: PathBuf,
    seed: u64,
    interrupt: &AtomicBool,
) -> Result<(FilesetRt, LayoutStats), LayoutError> {
    let t0 = std::time::Instant::now();
    let rt = FilesetRt::new(
        &fs.name,
        root.clone(),
        &plan.tree,
        &plan.sizes,
        fs.readonly,
        fs.writeonly,
    );
    let mut stats = LayoutStats::default();
    fs::create_dir_all(&root).map_err(|e| io_err(&root, e))?;
    let mut buf = Vec::new();
    for d in 1..plan.tree.dirs.len() {
        let p = rt.dir_path(d as u32, &mut buf);
        let path = Path::new(std::ffi::OsStr::from_bytes_ext(p.to_bytes()));
        match fs::create_dir(path) {
            Ok(()) => stats.dirs += 1,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && fs.reuse => {}
            Err(e) => return Err(io_err(path, e)),
        }
    }
    for (i, pre) in plan.prealloc_leafdirs.iter().enumerate() {
        if *pre {
            let p = rt.entry_pathbuf(List::LeafDirs, i);
            match fs::create_dir(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && fs.reuse => {}
                Err(e) => return Err(io_err(&p, e)),
            }
            rt.leafdirs[i].state.store(EXISTS, Ordering::Relaxed);
        }
    }

    // Files: a shared cursor over the preallocated ones, one or more writer threads.
    let todo: Vec<usize> = (0..rt.files.len())
        .filter(|i| plan.prealloc_files[*i])
        .collect();
    let cursor = AtomicUsize::new(0);
    let written = AtomicU64::new(0);
    let bytes = AtomicU64::new(0);
    let reused = AtomicU64::new(0);
    let failure: Mutex<Option<LayoutError>> = Mutex::new(None);
    let threads = if fs.paralloc {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, 16)
    } else {
        1
    };
    std::thread::scope(|s| {
        for t in 0..threads {
            let (rt, todo, cursor, written, bytes, reused, failure) =
                (&rt, &todo, &cursor, &written, &bytes, &reused, &failure);
            s.spawn(move || {
                let mut data = vec![0u8; 1 << 20];
                rng(seed, 0x2000 + t as u64).fill_bytes(&mut data);
                // Never all zeros, whatever the generator gives.
                for b in data.iter_mut().step_by(512) {
                    *b |= 1;
                }
                loop {
                    if interrupt.load(Ordering::Relaxed) {
                        failure
                            .lock()
                            .unwrap()
                            .get_or_insert(LayoutError::Interrupted);
                        return;
                    }
                    let k = cursor.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = todo.get(k) else { return };
                    let path = rt.entry_pathbuf(List::Files, i);
                    let size = rt.files[i].size;
                    match write_file(&path, size, &data, fs.reuse, fs.trusttree) {
                        Ok(Some(n)) => {
                            written.fetch_add(1, Ordering::Relaxed);
                            bytes.fetch_add(n, Ordering::Relaxed);
                        }
                        Ok(None) => {
                            reused.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            failure.lock().unwrap().get_or_insert(io_err(&path, e));
                            return;
                        }
                    }
                    rt.files[i].state.store(EXISTS, Ordering::Relaxed);
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().unwrap() {
        return Err(e);
    }
    stats.files_written = written.into_inner();
    stats.bytes_written = bytes.into_inner();
    stats.files_reused = reused.into_inner();
    stats.seconds = t0.elapsed().as_secs_f64();
    rt.recount();
    Ok((rt, stats))
}

/// Write one file of `size` bytes. Returns `None` when an existing file was kept as it was.
fn write_file(
    path: &Path,
    size: u64,
    data: &[u8],
    reuse: bool,
    trust: bool,
) -> io::Result<Option<u64>> {
    if reuse {
        if trust && path.exists() {
            return Ok(None);
        }
        if let Ok(m) = fs::metadata(path) {
            if m.size() == size {
                return Ok(None);
            }
            if m.size() > size {
                OpenOptions::new().write(true).open(path)?.set_len(size)?;
                return Ok(None);
            }
        }
    }
    let mut f: File = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(path)?;
    let mut left = size;
    let mut off = 0usize;
    while left > 0 {
        let n = left.min(data.len() as u64) as usize;
        // Rotate through the buffer so consecutive files do not share content.
        let start = off % (data.len() - n + 1).max(1);
        f.write_all(&data[start..start + n])?;
        left -= n as u64;
        off = off.wrapping_add(4099);
    }
    Ok(Some(size))
}

/// `OsStr` from bytes without the unstable API.
trait FromBytesExt {
    fn from_bytes_ext(b: &[u8]) -> &std::ffi::OsStr;
}

impl FromBytesExt for std::ffi::OsStr {
    fn from_bytes_ext(b: &[u8]) -> &std::ffi::OsStr {
        use std::os::unix::ffi::OsStrExt;
        std::ffi::OsStr::from_bytes(b)
    }
}
