//! Laying a fileset out on an NFS export (`fsbench run --nfs`): the same tree, sizes and
//! content as [`super::layout`] plans, made through libnfs in the run directory on the
//! server. One client writes them in order (a fileset's `paralloc` is not used: the
//! layout is not measured, and one connection keeps the order of creation fixed).

use super::layout::{LayoutError, LayoutStats, Plan};
use super::{Bits, FilesetRt, List, EXISTS};
use fsbench_base::libnfs::{cpath, Client};
use fsbench_model::content::{Generator, BLOCK};
use fsbench_model::model::Fileset;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

fn io_err(path: String, source: io::Error) -> LayoutError {
    LayoutError::Io {
        path: PathBuf::from(path),
        source,
    }
}

/// Create the fileset's directories and preallocated files below `run_path` (the run
/// directory's path on the export); `shown` is the run directory as messages show it.
pub fn create(
    plan: Plan,
    fs: &Fileset,
    client: &mut Client,
    (run_path, shown): (&str, &str),
    seed: u64,
) -> Result<(FilesetRt, LayoutStats), LayoutError> {
    let t0 = std::time::Instant::now();
    let remote_root = format!("{run_path}/{}", fs.name);
    let shown_root = format!("{shown}/{}", fs.name);
    let c = cpath(&remote_root).map_err(|e| io_err(shown_root.clone(), e))?;
    client
        .mkdir(&c, 0o755)
        .map_err(|e| io_err(shown_root.clone(), e))?;
    let Plan {
        index,
        mut tree,
        prealloc_files,
        prealloc_leafdirs,
    } = plan;
    let mut rt = FilesetRt::remote(&fs.name, PathBuf::from(&shown_root), remote_root, &mut tree);
    drop(tree);
    rt.readonly = fs.readonly;
    rt.writeonly = fs.writeonly;
    rt.content = fs.content;
    rt.content_seed = seed ^ index as u64;
    make_dirs(client, &rt, &prealloc_leafdirs)?;
    let gen = Generator::new(fs.content, seed ^ index as u64);
    let (files, bytes) = write_files(client, &rt, &prealloc_files, &gen)?;
    let stats = LayoutStats {
        dirs: rt.dir_paths.len().saturating_sub(1) as u64,
        files_written: files,
        bytes_written: bytes,
        files_reused: 0,
        seconds: t0.elapsed().as_secs_f64(),
        content: Some(super::layout::sample_content(
            &rt,
            &prealloc_files,
            fs,
            &gen,
        )),
    };
    rt.recount();
    Ok((rt, stats))
}

/// The tree's directories and its preallocated leaf directories.
fn make_dirs(client: &mut Client, rt: &FilesetRt, leafdirs: &Bits) -> Result<(), LayoutError> {
    let mut buf = Vec::new();
    for d in 1..rt.dir_paths.len() as u32 {
        let p = rt.remote_dir(d, &mut buf);
        client
            .mkdir(p, 0o755)
            .map_err(|e| io_err(rt.dir_pathbuf(d).display().to_string(), e))?;
    }
    for i in (0..leafdirs.len()).filter(|i| leafdirs.get(*i)) {
        let p = rt.remote_path(List::LeafDirs, i, &mut buf);
        client
            .mkdir(p, 0o755)
            .map_err(|e| io_err(rt.entry_pathbuf(List::LeafDirs, i).display().to_string(), e))?;
        rt.leafdirs[i].state.store(EXISTS, Ordering::Relaxed);
    }
    Ok(())
}

/// The preallocated files, in order; how many and their bytes.
fn write_files(
    client: &mut Client,
    rt: &FilesetRt,
    prealloc: &Bits,
    gen: &Generator,
) -> Result<(u64, u64), LayoutError> {
    let (mut buf, mut data) = (Vec::new(), vec![0u8; 1 << 20]);
    let (mut files, mut bytes) = (0u64, 0u64);
    for i in (0..prealloc.len()).filter(|i| prealloc.get(*i)) {
        if fsbench_base::cancel::interrupted() {
            return Err(LayoutError::Interrupted);
        }
        let size = rt.files[i].size();
        let p = rt.remote_path(List::Files, i, &mut buf);
        write_file(client, p, size, (gen, i as u64), &mut data)
            .map_err(|e| io_err(rt.entry_pathbuf(List::Files, i).display().to_string(), e))?;
        rt.files[i].state.store(EXISTS, Ordering::Relaxed);
        files += 1;
        bytes += size;
    }
    Ok((files, bytes))
}

/// A new file of `size` bytes of the fileset's content (`O_EXCL`: never one that exists).
fn write_file(
    client: &mut Client,
    path: &std::ffi::CStr,
    size: u64,
    (gen, file): (&Generator, u64),
    data: &mut [u8],
) -> io::Result<()> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
    let h = client.create(path, flags, 0o644)?;
    let mut off = 0u64;
    let r = loop {
        if off >= size {
            break Ok(());
        }
        let n = (size - off).min(data.len() as u64) as usize;
        gen.fill(file, off / BLOCK as u64, &mut data[..n]);
        match client.pwrite(h, &data[..n], off) {
            Ok(w) => off += w as u64,
            Err(e) => break Err(e),
        }
    };
    let c = client.close(h);
    r.and(c)
}
