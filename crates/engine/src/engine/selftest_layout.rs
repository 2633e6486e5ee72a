//! `fsbench selftest layout`: how fast fsbench lays a fileset out against a bare loop that
//! creates the same number of files of the same size in directories of the same width, one
//! thread, writing one fixed buffer. Rounds alternate (fsbench with one writer, fsbench with
//! one writer per core, the bare loop), each on a fresh tree, with `sync` between them; the
//! report gives each case's median files per second and its ratio to the bare loop.

use super::rundir::RunDir;
use super::selftest::{cname, median};
use crate::fileset;
use fsbench_base::beneath;
use fsbench_model::lang::{parse, SourceFile};
use fsbench_model::model::build::{build, Overrides};
use std::fmt::Write;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Instant;

/// Files per directory, in fsbench's fileset and the bare loop alike.
const WIDTH: u64 = 100;

/// Lay out `files` files of `size` bytes with `threads` writers; files per second.
fn engine_round(rd: &RunDir, files: u64, size: u64, threads: usize) -> anyhow::Result<f64> {
    let text = format!(
        "define fileset name=lay,path={},entries={files},dirwidth={WIDTH},dirgamma=0,size={size},prealloc\n\
         define process name=p {{ thread name=t {{ flowop statfile name=s,filesetname=lay }} }}\n",
        rd.path.display()
    );
    let src = SourceFile::new("selftest-layout", &text);
    let script = parse(&src).map_err(|d| anyhow::anyhow!("{d}"))?;
    let wl = build("selftest-layout", &src, &script, &Overrides::default())
        .map_err(|d| anyhow::anyhow!("{d}"))?;
    let fs = &wl.filesets[0];
    let plan = fileset::layout::plan(0, fs, &wl.randvars, 1);
    let t0 = Instant::now();
    let (rt, stats) = fileset::layout::create(
        plan,
        fs,
        rd.fd(),
        rd.path.join(&fs.name),
        fileset::layout::How {
            threads: Some(threads),
            ..Default::default()
        },
    )?;
    let secs = t0.elapsed().as_secs_f64();
    anyhow::ensure!(
        stats.files_written == files,
        "laid out {} files of {files}",
        stats.files_written
    );
    drop(rt);
    fsbench_base::owned::remove::tree(rd.fd(), &cname(&fs.name))?;
    Ok(files as f64 / secs)
}

/// The bare loop: directories of `WIDTH` files, each file created, written from one buffer
/// and closed; files per second.
fn bare_round(rd: &RunDir, files: u64, size: u64) -> anyhow::Result<f64> {
    let top = cname("bare");
    let buf = vec![0x5au8; size.min(1 << 20) as usize];
    let t0 = Instant::now();
    fsbench_base::owned::mkdir(rd.fd(), &top, 0o755)?;
    let top_fd = beneath::open_dir(rd.fd(), &top)?;
    let mut made = 0u64;
    let mut d = 0u64;
    while made < files {
        fsbench_base::cancel::check()?;
        let dn = cname(&format!("{d:08}"));
        fsbench_base::owned::mkdir(top_fd.as_raw_fd(), &dn, 0o755)?;
        let dir = beneath::open_dir(top_fd.as_raw_fd(), &dn)?;
        for f in 0..WIDTH.min(files - made) {
            let name = cname(&format!("{f:08}"));
            let fd = fsbench_base::owned::open_write(
                dir.as_raw_fd(),
                &name,
                fsbench_base::owned::Open::New,
                libc::O_WRONLY,
            )?;
            let mut left = size;
            while left > 0 {
                let n = left.min(buf.len() as u64) as usize;
                // SAFETY: writes from a live buffer of at least n bytes.
                let w = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), n) };
                anyhow::ensure!(w > 0, "write: {}", std::io::Error::last_os_error());
                left -= w as u64;
            }
            made += 1;
        }
        d += 1;
    }
    let secs = t0.elapsed().as_secs_f64();
    drop(top_fd);
    fsbench_base::owned::remove::tree(rd.fd(), &top)?;
    Ok(files as f64 / secs)
}

/// Run the three cases in alternating rounds and describe the ratios.
pub fn layout(dir: &Path, files: u64, size: u64, rounds: u32) -> anyhow::Result<String> {
    let rd = RunDir::create(dir, "selftest-layout", false)?;
    let cores = fsbench_base::walk::default_threads().clamp(1, 16);
    let result = (|| -> anyhow::Result<String> {
        let (mut one, mut many, mut bare) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            // SAFETY: sync(2) takes no arguments and cannot fail.
            unsafe { libc::sync() };
            fsbench_base::cancel::check()?;
            one.push(engine_round(&rd, files, size, 1)?);
            unsafe { libc::sync() };
            fsbench_base::cancel::check()?;
            many.push(engine_round(&rd, files, size, cores)?);
            unsafe { libc::sync() };
            fsbench_base::cancel::check()?;
            bare.push(bare_round(&rd, files, size)?);
        }
        let (one, many, bare) = (median(one), median(many), median(bare));
        let mut out = String::new();
        let _ = writeln!(
            out,
            "layout of {files} files of {size} bytes in directories of {WIDTH} on {} ({}), {rounds} rounds, cases alternating",
            dir.display(),
            fsbench_results::stats::host::mount_of(dir).map(|m| m.1).unwrap_or_default()
        );
        let _ = writeln!(out, "  bare loop, 1 thread:  {bare:.0} files/s");
        let _ = writeln!(
            out,
            "  fsbench, 1 writer:    {one:.0} files/s, ratio {:.3}",
            one / bare
        );
        let _ = writeln!(
            out,
            "  fsbench, {cores} writers:   {many:.0} files/s, ratio {:.3} (--layout-threads {cores})",
            many / bare
        );
        Ok(out)
    })();
    if let Err(e) = rd.remove() {
        fsbench_base::exit::left_behind(e.to_string());
    }
    result
}
