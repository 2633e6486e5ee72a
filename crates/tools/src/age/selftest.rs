//! `fsbench selftest age`: aging against a bare loop issuing the same operations.
//!
//! A RAM-backed ext4 image (its backing file in a marked directory under DIR, /dev/shm by
//! default) is made fresh for every round. One unmeasured `fsbench age` with a fixed seed
//! writes its operation log (`--log`); that sequence is read once into memory. Then, in
//! alternating rounds, each on a fresh identical image: `fsbench age` (the binary itself,
//! one thread, and with `--threads N`), and a bare loop issuing the logged creates,
//! appends, overwrites, deletes and mkdirs with their sizes and nothing else (paths from
//! the aged directory's descriptor, a 1 MiB buffer, no bookkeeping, no statistics). Both
//! end with a `syncfs`. The rates are over the same operations; fsbench's user time per
//! operation is its whole process's (start, planning, operations and layout scores).

use std::ffi::CString;
use std::fmt::Write as _;
use std::os::fd::{AsRawFd, IntoRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};
use serde::Deserialize;

use fsbench_base::sys::io as sys;
use fsbench_engine::engine::rundir::RunDir;

/// What `fsbench selftest age` measures.
#[derive(Debug, Clone)]
pub struct Options {
    /// Directory for the image's backing file (a tmpfs keeps the image in RAM).
    pub dir: PathBuf,
    /// Image size in MiB.
    pub mib: u64,
    /// Target fullness.
    pub fill: f64,
    /// Churn operations after the fill.
    pub ops: u64,
    pub rounds: u32,
    /// Threads of the parallel case (1: no parallel case).
    pub threads: u32,
    pub seed: u64,
}

/// One logged operation, its path relative to the aged directory.
#[derive(Debug, PartialEq)]
enum BareOp {
    Mkdir(CString),
    Create(CString, u64),
    Write(CString, u64, u64),
    Delete(CString),
}

/// The part of `fsbench age --json` read back here.
#[derive(Deserialize)]
struct Seen {
    ops: u64,
    elapsed_s: f64,
    bytes_written: u64,
    counts: SeenCounts,
}

#[derive(Deserialize)]
struct SeenCounts {
    enospc: u64,
    errors: u64,
}

/// An ext4 image attached to a loop device and mounted; unmounted when dropped (the
/// loop device, attached with autoclear, goes with the last close).
struct Mounted {
    mnt: PathBuf,
    _lo: crate::disk::loopdev::LoopDevice,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let c = CString::new(self.mnt.as_os_str().as_bytes()).expect("no NUL in a path");
        // SAFETY: a NUL-terminated path; we mounted it.
        if unsafe { libc::umount2(c.as_ptr(), 0) } < 0 {
            let e = std::io::Error::last_os_error();
            fsbench_base::exit::left_behind(format!("mount {} ({e})", self.mnt.display()));
        }
    }
}

/// Format `img` afresh (`mib` MiB, the same UUID and directory hash seed each time, inode
/// tables and journal written now rather than by a background thread during a round), attach
/// it and mount it on `mnt`.
fn fresh_image(img: &Path, mnt: &Path, mib: u64) -> anyhow::Result<Mounted> {
    const UUID: &str = "5e1f7e57-a6e0-4f5b-9c1d-000000000034";
    let _ = fsbench_base::owned::path::remove_file(img);
    let f = std::fs::File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(img)
        .with_context(|| format!("creating {}", img.display()))?;
    f.set_len(mib << 20)?;
    let out = fsbench_base::created::output(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-U", UUID, "-E"])
            .arg(format!(
                "hash_seed={UUID},lazy_itable_init=0,lazy_journal_init=0"
            ))
            .arg(img),
    )
    .context("cannot run mkfs.ext4 (e2fsprogs)")?;
    fsbench_base::cancel::check()?;
    if !out.status.success() {
        bail!(
            "mkfs.ext4 {} failed: {}",
            img.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let lo = crate::disk::loopdev::attach(
        &f,
        crate::disk::loopdev::LO_FLAGS_AUTOCLEAR,
        &img.to_string_lossy(),
    )
    .with_context(|| format!("attaching {} to a loop device", img.display()))?;
    let _ = std::fs::create_dir(mnt);
    let (dev, at) = (
        CString::new(lo.path())?,
        CString::new(mnt.as_os_str().as_bytes())?,
    );
    // SAFETY: NUL-terminated strings; no data argument.
    let r = unsafe {
        libc::mount(
            dev.as_ptr(),
            at.as_ptr(),
            c"ext4".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        bail!("mounting {} on {}: {e}", lo.path(), mnt.display());
    }
    Ok(Mounted {
        mnt: mnt.to_path_buf(),
        _lo: lo,
    })
}

/// One `fsbench age` on `mnt`: what it reports and its user time.
fn run_fsbench(
    o: &Options,
    mnt: &Path,
    threads: u32,
    json: &Path,
    log: Option<&Path>,
) -> anyhow::Result<(Seen, (f64, f64))> {
    let exe = std::env::current_exe().context("finding the fsbench binary")?;
    let mut cmd = Command::new(exe);
    cmd.arg("age")
        .arg(mnt)
        .args(["--quiet", "--seed", &o.seed.to_string()])
        .args(["--fill", &o.fill.to_string(), "--ops", &o.ops.to_string()])
        .args(["--threads", &threads.to_string()])
        .arg("--json")
        .arg(json);
    if let Some(l) = log {
        cmd.arg("--log").arg(l);
    }
    let c0 = fsbench_results::stats::rusage_cpu(libc::RUSAGE_CHILDREN);
    // The child gets this process's signals: it stops and cleans up, then so does this one.
    let out = fsbench_base::created::output(&mut cmd).context("running fsbench age")?;
    let c1 = fsbench_results::stats::rusage_cpu(libc::RUSAGE_CHILDREN);
    let used = (c1.0 - c0.0, c1.1 - c0.1);
    fsbench_base::cancel::check()?;
    if !out.status.success() {
        bail!(
            "fsbench age {} failed: {}",
            mnt.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let seen: Seen = serde_json::from_slice(&fsbench_base::input::read(
        json,
        fsbench_base::input::RESULTS,
    )?)
    .with_context(|| format!("reading {}", json.display()))?;
    if seen.counts.enospc > 0 || seen.counts.errors > 0 {
        bail!(
            "fsbench age met {} out-of-space writes and {} errors: the sequence is not the planned one (lower --fill)",
            seen.counts.enospc,
            seen.counts.errors
        );
    }
    Ok((seen, used))
}

fn path_of(line: usize, p: &str) -> anyhow::Result<CString> {
    if p.is_empty() || p.starts_with('/') || p.split('/').any(|c| c.is_empty() || c == "..") {
        bail!("operation log line {line}: unsafe path {p:?}");
    }
    Ok(CString::new(p)?)
}

/// Read the operation log `fsbench age --log` wrote.
fn parse_log(text: &str) -> anyhow::Result<Vec<BareOp>> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let n = i + 1;
        let w: Vec<&str> = l.split(' ').collect();
        let num = |s: &str| -> anyhow::Result<u64> {
            s.parse()
                .with_context(|| format!("operation log line {n}: {s:?} is not a number"))
        };
        let span = |s: &str| -> anyhow::Result<(u64, u64)> {
            let (a, b) = s
                .split_once('+')
                .with_context(|| format!("operation log line {n}: {s:?} is not OFF+LEN"))?;
            Ok((num(a)?, num(b)?))
        };
        out.push(match (w.get(1).copied(), w.len()) {
            (Some("mkdir"), 3) => BareOp::Mkdir(path_of(n, w[2])?),
            (Some("create"), 7) => BareOp::Create(path_of(n, w[2])?, num(w[6])?),
            (Some("append" | "overwrite"), 4) => {
                let (off, len) = span(w[3])?;
                BareOp::Write(path_of(n, w[2])?, off, len)
            }
            (Some("delete"), 3) => BareOp::Delete(path_of(n, w[2])?),
            _ => bail!("operation log line {n}: cannot read {l:?}"),
        });
    }
    Ok(out)
}

fn bare_write(fd: i32, buf: &[u8], off: u64, len: u64) -> std::io::Result<()> {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        done += sys::pwrite(fd, &buf[..n], off + done)? as u64;
    }
    Ok(())
}

/// The bare loop over `ops` in the directory `dir` (created here): seconds in all, with the
/// final syncfs; the syncfs's seconds; CPU seconds (user and system) of the loop.
fn run_bare(dir: &Path, ops: &[BareOp]) -> anyhow::Result<(f64, f64, f64)> {
    std::fs::create_dir(dir)?;
    let d = std::fs::File::open(dir)?;
    let dfd = d.as_raw_fd();
    let buf = sys::AlignedBuf::new(1 << 20, &mut fsbench_model::dist::rng(1, 0xDA7A));
    let buf = buf.as_slice();
    let c0 = fsbench_results::stats::rusage_cpu(libc::RUSAGE_THREAD);
    let t0 = Instant::now();
    for (i, op) in ops.iter().enumerate() {
        if i % 256 == 0 {
            fsbench_base::cancel::check()?;
        }
        let r = match op {
            BareOp::Mkdir(p) => sys::mkdir_at(dfd, p),
            BareOp::Create(p, len) => {
                let how = fsbench_base::owned::Open::OwnOrReplace;
                fsbench_base::owned::open_truncated(dfd, p, how, libc::O_WRONLY).and_then(|f| {
                    let fd = f.into_raw_fd();
                    bare_write(fd, buf, 0, *len).and(sys::close(fd))
                })
            }
            BareOp::Write(p, off, len) => fsbench_base::owned::open_write(
                dfd,
                p,
                fsbench_base::owned::Open::Own,
                libc::O_WRONLY,
            )
            .and_then(|f| {
                let fd = f.into_raw_fd();
                bare_write(fd, buf, *off, *len).and(sys::close(fd))
            }),
            BareOp::Delete(p) => sys::unlink_at(dfd, p),
        };
        r.with_context(|| format!("bare loop: {op:?}"))?;
    }
    let t1 = Instant::now();
    // SAFETY: a descriptor we hold.
    if unsafe { libc::syncfs(dfd) } < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    let (all, sync) = (t0.elapsed().as_secs_f64(), t1.elapsed().as_secs_f64());
    let c1 = fsbench_results::stats::rusage_cpu(libc::RUSAGE_THREAD);
    Ok((all, sync, c1.0 - c0.0 + c1.1 - c0.1))
}

/// Measured rounds, in seconds: fsbench with one thread (elapsed, user CPU, user and system
/// CPU), the bare loop (in all, its final syncfs, its CPU), fsbench with N threads.
#[derive(Default)]
struct Rounds {
    one: Vec<f64>,
    user: Vec<f64>,
    one_cpu: Vec<f64>,
    bare: Vec<f64>,
    bare_sync: Vec<f64>,
    bare_cpu: Vec<f64>,
    many: Vec<f64>,
}

/// Run the selftest and describe its ratios.
pub fn age(o: &Options) -> anyhow::Result<String> {
    if !fsbench_engine::engine::is_root() {
        bail!("selftest age makes, mounts and unmounts its own ext4 loop image: run as root");
    }
    let rd = RunDir::create(&o.dir, "selftest-age", false)?;
    let r = age_in(o, &rd);
    if let Err(e) = rd.remove() {
        fsbench_base::exit::left_behind(e.to_string());
    }
    r
}

fn age_in(o: &Options, rd: &RunDir) -> anyhow::Result<String> {
    let (img, mnt) = (rd.path.join("ext4.img"), rd.path.join("mnt"));
    let (json, log) = (rd.path.join("age.json"), rd.path.join("ops.log"));
    // The sequence, once (unmeasured; it also warms the binary and the page allocator).
    let (first, _) = {
        let _m = fresh_image(&img, &mnt, o.mib)?;
        run_fsbench(o, &mnt, 1, &json, Some(&log))?
    };
    let ops = parse_log(&fsbench_base::input::read_text(
        &log,
        fsbench_base::input::RESULTS,
    )?)?;
    fsbench_base::owned::path::remove_file(&log)?;
    let file_ops = ops
        .iter()
        .filter(|o| !matches!(o, BareOp::Mkdir(_)))
        .count() as u64;
    if file_ops != first.ops {
        bail!(
            "the operation log holds {file_ops} file operations, fsbench reported {}",
            first.ops
        );
    }
    let mut r = Rounds::default();
    for _ in 0..o.rounds {
        fsbench_base::cancel::check()?;
        let m = fresh_image(&img, &mnt, o.mib)?;
        let (s, (user, sys)) = run_fsbench(o, &mnt, 1, &json, None)?;
        check_same(&first, &s)?;
        r.one.push(s.elapsed_s);
        r.user.push(user);
        r.one_cpu.push(user + sys);
        drop(m);
        fsbench_base::cancel::check()?;
        let m = fresh_image(&img, &mnt, o.mib)?;
        let (all, sync, cpu) = run_bare(&mnt.join(crate::age::args::AGED_DIR), &ops)?;
        r.bare.push(all);
        r.bare_sync.push(sync);
        r.bare_cpu.push(cpu);
        drop(m);
        if o.threads > 1 {
            fsbench_base::cancel::check()?;
            let _m = fresh_image(&img, &mnt, o.mib)?;
            let (s, _) = run_fsbench(o, &mnt, o.threads, &json, None)?;
            check_same(&first, &s)?;
            r.many.push(s.elapsed_s);
        }
    }
    Ok(describe(o, &first, ops.len() as u64 - file_ops, r))
}

/// Every run made the same operations.
fn check_same(first: &Seen, s: &Seen) -> anyhow::Result<()> {
    if (s.ops, s.bytes_written) != (first.ops, first.bytes_written) {
        bail!(
            "fsbench age made {} operations writing {} bytes, the first run {} writing {}: not repeatable",
            s.ops,
            s.bytes_written,
            first.ops,
            first.bytes_written
        );
    }
    Ok(())
}

/// The rounds' spread, "min-max".
fn spread(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    format!("{lo:.3}-{hi:.3}")
}

fn describe(o: &Options, first: &Seen, mkdirs: u64, r: Rounds) -> String {
    use fsbench_engine::engine::selftest::median;
    let n = first.ops as f64;
    let (s_one, s_bare, s_many) = (spread(&r.one), spread(&r.bare), spread(&r.many));
    let bare_sync = median(r.bare_sync);
    let (one_cpu, bare_cpu) = (median(r.one_cpu), median(r.bare_cpu));
    let (one, bare) = (median(r.one), median(r.bare));
    let user = median(r.user);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "aging a {} MiB ext4 loop image (backing file in {}, {}) to {:.0}% and {} churn operations, seed {}: {} file operations ({} mkdirs beside), {} written; {} rounds alternating, a fresh image each",
        o.mib,
        o.dir.display(),
        fsbench_results::stats::host::mount_of(&o.dir)
            .map(|m| m.1)
            .unwrap_or_default(),
        o.fill * 100.0,
        o.ops,
        o.seed,
        first.ops,
        mkdirs,
        fsbench_base::units::human_bytes_u64(first.bytes_written),
        o.rounds
    );
    let _ = writeln!(
        out,
        "  fsbench age, 1 thread: {one:.3} s ({:.0} ops/s; rounds {s_one} s)",
        n / one
    );
    let _ = writeln!(
        out,
        "  bare loop, same operations: {bare:.3} s ({:.0} ops/s; rounds {s_bare} s; the final syncfs {bare_sync:.3} s of it)",
        n / bare
    );
    let _ = writeln!(
        out,
        "  fsbench is {:.3} of the bare loop (goal >= 0.95); its user time {:.2} us per operation (goal < 5; whole process)",
        bare / one,
        user / n * 1e6
    );
    let _ = writeln!(
        out,
        "  CPU time (user + system; steadier than elapsed time on a busy machine): fsbench {:.2} us per operation (with its layout scores), bare loop {:.2} us, ratio {:.3}",
        one_cpu / n * 1e6,
        bare_cpu / n * 1e6,
        bare_cpu / one_cpu
    );
    if !r.many.is_empty() {
        let many = median(r.many);
        let _ = writeln!(
            out,
            "  fsbench age, {} threads: {many:.3} s ({:.0} ops/s; rounds {s_many} s), {:.3} of the one-thread bare loop (goal >= 1.5)",
            o.threads,
            n / many,
            bare / many
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operation_log_reads_back() {
        let text = "0 mkdir d1\n0 create d1/f0 size 9000 write 4096\n1 append d1/f0 4096+4904\n2 overwrite f1 0+8192\n3 delete d1/f0\n";
        let ops = parse_log(text).unwrap();
        let c = |s: &str| CString::new(s).unwrap();
        assert_eq!(
            ops,
            vec![
                BareOp::Mkdir(c("d1")),
                BareOp::Create(c("d1/f0"), 4096),
                BareOp::Write(c("d1/f0"), 4096, 4904),
                BareOp::Write(c("f1"), 0, 8192),
                BareOp::Delete(c("d1/f0")),
            ]
        );
        let e = parse_log("0 mkdir d1\n1 append f2 12\n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = parse_log("0 delete ../x\n").unwrap_err();
        assert!(e.to_string().contains("unsafe path"), "{e}");
    }
}
