//! Laying out the files of `stream` flowops (fio jobs) in the run directory, before the
//! measurement and outside it, as fio's `extend_file` does: the file is created anew,
//! its blocks reserved (`fallocate=`), and for a job that reads it is extended to its size
//! and written whole in requests of the largest write block size. A file several jobs
//! name is laid out once, the first time, and filled if any of them reads it.

use fsbench_base::sys::io;
use fsbench_model::model::stream::{Prealloc, StreamFile};
use fsbench_model::model::{FlowopKind, Workload};
use std::os::fd::{AsRawFd, RawFd};

/// What the stream files' layout did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Laid {
    pub files: u64,
    pub bytes_written: u64,
}

/// Every stream file of the workload once, filled when any stream that names it reads.
/// Names are found again through a hash map: a job of a million files made a search of
/// the list per file quadratic (hours of CPU before the run started).
pub fn files(wl: &Workload) -> Vec<StreamFile> {
    let mut out: Vec<StreamFile> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for f in wl.all_flowops() {
        if f.kind != FlowopKind::Stream {
            continue;
        }
        let Some(s) = &f.stream else { continue };
        for sf in s
            .files
            .iter()
            .filter(|f| !f.create_on_open && !f.external && f.device.is_none())
        {
            match at.get(sf.name.as_str()).map(|&i| &mut out[i]) {
                Some(o) => {
                    // One file of the largest size any of them needs.
                    let end = (o.offset + o.len).max(sf.offset + sf.len);
                    o.fill |= sf.fill;
                    o.create_fsync |= sf.create_fsync;
                    o.fill_bs = o.fill_bs.max(sf.fill_bs);
                    o.offset = 0;
                    o.len = end;
                }
                None => {
                    at.insert(&sf.name, out.len());
                    out.push(sf.clone());
                }
            }
        }
    }
    out
}

/// Refuse a stream file named as one of fsbench's own files in the run directory (its
/// marker or lock): writing or unlinking one would take the directory's proof of
/// ownership. A fio job file's `check` refuses these with their place; this holds for
/// whatever reached the engine.
fn check_names(wl: &Workload) -> std::io::Result<()> {
    use fsbench_base::owned::trust::{LOCK, MARKER};
    for f in wl
        .all_flowops()
        .into_iter()
        .filter(|f| f.kind == FlowopKind::Stream)
    {
        let Some(s) = &f.stream else { continue };
        for sf in s.files.iter().filter(|f| !f.external && f.device.is_none()) {
            if sf.name == MARKER || sf.name == LOCK {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "file {}: fsbench's own file in the run directory; a job may not write or remove it",
                        sf.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Pass every block device a stream names through the device guard (once per device,
/// as a writer when any stream naming it writes); the claims are held for the run.
pub fn guard_devices(
    wl: &Workload,
    opts: &super::RunOptions,
) -> Result<Vec<fsbench_base::sys::device::Guarded>, String> {
    let mut devs: Vec<(String, u64, bool)> = Vec::new();
    for f in wl.all_flowops() {
        let Some(s) = f.stream.as_ref().filter(|_| f.kind == FlowopKind::Stream) else {
            continue;
        };
        for sf in &s.files {
            let Some(rdev) = sf.device else { continue };
            match devs.iter_mut().find(|d| d.1 == rdev) {
                Some(d) => d.2 |= s.writes,
                None => devs.push((sf.name.clone(), rdev, s.writes)),
            }
        }
    }
    let mut out = Vec::new();
    for (name, rdev, writes) in devs {
        let path = std::path::Path::new(&name);
        let g = fsbench_base::sys::device::guard(
            path,
            &opts.allow_devices,
            &opts.allow_device_data,
            writes,
        )?;
        if g.rdev != rdev {
            return Err(format!(
                "{name} is not the device it was when the job file was read"
            ));
        }
        out.push(g);
    }
    Ok(out)
}

/// Lay the stream files out in `dir` (the run directory's descriptor).
pub fn lay_out(wl: &Workload, dir: RawFd, quiet: bool) -> std::io::Result<Laid> {
    check_names(wl)?;
    let list = files(wl);
    let mut laid = Laid::default();
    if list.is_empty() {
        return Ok(laid);
    }
    let total: u64 = list
        .iter()
        .filter(|f| f.fill)
        .map(|f| f.offset + f.len)
        .sum();
    if !quiet {
        fsbench_base::errln!(
            "fsbench: laying out {} ({} written)",
            fsbench_base::units::count(list.len() as u64, "file"),
            fsbench_base::units::human_bytes_u64(total)
        );
    }
    let mut rng = fsbench_model::dist::rng(0x5eed, 0xf10);
    let mut buf = io::AlignedBuf::try_new(4096, &mut rng).map_err(std::io::Error::other)?;
    for f in &list {
        if fsbench_base::cancel::interrupted() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "interrupted",
            ));
        }
        let name = fsbench_base::beneath::component(std::ffi::OsStr::new(&f.name))?;
        let how = fsbench_base::owned::Open::OwnOrReplace;
        let fd = fsbench_base::owned::open_truncated(dir, &name, how, libc::O_WRONLY)
            .map_err(|e| std::io::Error::new(e.kind(), format!("create {}: {e}", f.name)))?;
        let size = f.offset + f.len;
        prealloc(fd.as_raw_fd(), f.prealloc, size)
            .map_err(|e| std::io::Error::new(e.kind(), format!("fallocate {}: {e}", f.name)))?;
        if f.fill {
            fill(fd.as_raw_fd(), size, f.fill_bs, &mut buf, &mut rng)
                .map_err(|e| std::io::Error::new(e.kind(), format!("write {}: {e}", f.name)))?;
            // fio's `create_fsync`: written back now, so that the job's `invalidate` leaves
            // none of it cached (fadvise cannot drop a dirty page).
            if f.create_fsync {
                io::fsync(fd.as_raw_fd())
                    .map_err(|e| std::io::Error::new(e.kind(), format!("fsync {}: {e}", f.name)))?;
            }
            laid.bytes_written += size;
        }
        laid.files += 1;
    }
    Ok(laid)
}

/// [`lay_out`] on an NFS export, below `run_path`, through `client`: each file created
/// anew and, when read, written whole. NFS has no `fallocate` (v3): the blocks a job asks
/// to reserve are not, as fio's nfs engine does not either.
pub fn lay_out_remote(
    wl: &Workload,
    client: &mut fsbench_base::libnfs::Client,
    run_path: &str,
    quiet: bool,
) -> std::io::Result<Laid> {
    check_names(wl)?;
    let list = files(wl);
    let mut laid = Laid::default();
    if list.is_empty() {
        return Ok(laid);
    }
    if !quiet {
        fsbench_base::errln!(
            "fsbench: laying out {} over NFS",
            fsbench_base::units::count(list.len() as u64, "file")
        );
    }
    let mut rng = fsbench_model::dist::rng(0x5eed, 0xf10);
    let mut buf = io::AlignedBuf::try_new(1 << 20, &mut rng).map_err(std::io::Error::other)?;
    for f in &list {
        fsbench_base::beneath::component(std::ffi::OsStr::new(&f.name))?;
        let path = fsbench_base::libnfs::cpath(&format!("{run_path}/{}", f.name))?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
        let h = client
            .create(&path, flags, 0o644)
            .map_err(|e| std::io::Error::new(e.kind(), format!("create {}: {e}", f.name)))?;
        let size = f.offset + f.len;
        let r = if f.fill {
            fill_remote(client, h, size, &mut buf)
        } else {
            Ok(())
        };
        let c = client.close(h);
        r.and(c)
            .map_err(|e| std::io::Error::new(e.kind(), format!("write {}: {e}", f.name)))?;
        if f.fill {
            laid.bytes_written += size;
        }
        laid.files += 1;
    }
    Ok(laid)
}

/// Write `size` bytes of the layout's data through an NFS handle.
fn fill_remote(
    client: &mut fsbench_base::libnfs::Client,
    h: fsbench_base::libnfs::Handle,
    size: u64,
    buf: &mut io::AlignedBuf,
) -> std::io::Result<()> {
    let mut off = 0;
    while off < size {
        if fsbench_base::cancel::interrupted() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "interrupted",
            ));
        }
        let n = (size - off).min(buf.len() as u64) as usize;
        off += client.pwrite(h, &buf.as_slice()[..n], off)? as u64;
    }
    Ok(())
}

fn prealloc(fd: RawFd, how: Prealloc, size: u64) -> std::io::Result<()> {
    if size == 0 {
        return Ok(());
    }
    // SAFETY: fallocate on a descriptor we own.
    let rc = unsafe {
        match how {
            Prealloc::None => return Ok(()),
            Prealloc::Native => libc::fallocate(fd, 0, 0, size as libc::off_t),
            Prealloc::KeepSize => {
                libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, 0, size as libc::off_t)
            }
            Prealloc::Posix => {
                let e = libc::posix_fallocate(fd, 0, size as libc::off_t);
                if e != 0 {
                    return Err(std::io::Error::from_raw_os_error(e));
                }
                0
            }
        }
    };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        // As fio: a file system without fallocate is not an error for `native`.
        if matches!(
            e.raw_os_error(),
            Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)
        ) {
            return Ok(());
        }
        return Err(e);
    }
    Ok(())
}

/// fio's layout write: `ftruncate` to the size, then the whole file in `bs` requests.
fn fill(
    fd: RawFd,
    size: u64,
    bs: u64,
    buf: &mut io::AlignedBuf,
    rng: &mut fsbench_model::dist::Rng,
) -> std::io::Result<()> {
    // The descriptor came from the owned-tree layer: a file of the run's own.
    if fsbench_base::owned::raw::ftruncate(fd, size as i64) != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let bs = bs.clamp(1, 64 << 20).min(size.max(1)) as usize;
    if buf.len() < bs {
        *buf = io::AlignedBuf::try_new(bs, rng).map_err(std::io::Error::other)?;
    }
    let mut left = size;
    while left > 0 {
        if fsbench_base::cancel::interrupted() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "interrupted",
            ));
        }
        let n = (left.min(bs as u64)) as usize;
        let w = io::write(fd, &buf.as_slice()[..n])?;
        if w == 0 {
            return Err(std::io::Error::other("wrote 0 bytes"));
        }
        left -= w as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_base::owned::trust::{LOCK, MARKER};

    /// The run directory's marker and lock, named by a job, are refused by the job file's
    /// check (at the name's place) and by the engine.
    #[test]
    fn the_marker_and_lock_are_no_job_files() {
        for own in [MARKER, LOCK] {
            let text = format!("[j]\nrw=write\nsize=4k\nfilename=a:{own}\nunlink=1\n");
            let src = fsbench_model::lang::SourceFile::new("j.fio", text);
            let e = fsbench_model::fio::load_source("j", &src)
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("filename `{own}`")), "{e}");
            assert!(e.contains("j.fio:4:12"), "{e}");
            let ok = fsbench_model::lang::SourceFile::new("j.fio", "[j]\nrw=write\nsize=4k\n");
            let mut m = fsbench_model::fio::load_source("j", &ok).unwrap();
            let f = &mut m.workload.processes[0].threads[0].flowops[0];
            let mut s = (**f.stream.as_ref().unwrap()).clone();
            s.files[0].name = own.to_string();
            f.stream = Some(std::sync::Arc::new(s));
            let e = check_names(&m.workload).unwrap_err().to_string();
            assert!(e.contains(own), "{e}");
        }
    }
}
