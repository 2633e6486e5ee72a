//! `fsbench selftest overhead`: how much of an operation's cost is fsbench's own. The engine
//! runs a one-thread workload; a bare loop makes the same system calls with nothing else;
//! rounds alternate so both see the same machine state, and the ratio of their rates is
//! reported (1.0 means fsbench costs nothing).

use super::rundir::RunDir;
use super::{measure, MeasureOptions};
use crate::fileset;
use fsbench_base::cancel;
use fsbench_model::dist::rng;
use fsbench_model::lang::{parse, SourceFile};
use fsbench_model::model::build::{build, Overrides};
use fsbench_results::stats::clock;
use std::ffi::CString;
use std::fmt::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// The middle of a selftest's rounds.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

/// A generated name as a C string (digits and letters, never a NUL).
pub(super) fn cname(s: &str) -> CString {
    CString::new(s).expect("no NUL in a generated name")
}

/// A workload laid out once in `rd`; every round measures on the same files.
struct Prepared {
    wl: fsbench_model::model::Workload,
    rts: Vec<fileset::FilesetRt>,
}

impl Prepared {
    fn new(rd: &RunDir, text: &str) -> anyhow::Result<Prepared> {
        let src = SourceFile::new("selftest", text);
        let script = parse(&src).map_err(|d| anyhow::anyhow!("{d}"))?;
        let wl = build("selftest", &src, &script, &Overrides::default())
            .map_err(|d| anyhow::anyhow!("{d}"))?;
        let mut rts = Vec::new();
        for (i, fs) in wl.filesets.iter().enumerate() {
            let plan = fileset::layout::plan(i, fs, &wl.randvars, 1);
            let root = rd.path.join(&fs.name);
            let (rt, _) = fileset::layout::create(plan, fs, rd.fd(), root, Default::default())?;
            rts.push(rt);
        }
        Ok(Prepared { wl, rts })
    }

    /// Engine ops/s of flowop `stat_name` over `seconds`, and its mean recorded latency (us).
    fn rate(&self, stat_name: &str, seconds: f64) -> anyhow::Result<(f64, f64)> {
        let m = measure(
            &self.wl,
            &self.rts,
            1,
            MeasureOptions {
                seconds,
                warmup: 0.0,
                interval: 1.0,
                progress: false,
                continue_when_exhausted: false,
                continue_on_enospc: false,
                device: None,
                finish_ends_run: false,
                latency: Default::default(),
                // The bare loop's buffer is page-aligned: the overhead figure compares the
                // tools, not where their buffers lie.
                buffers: crate::engine::Buffers::Aligned,
                cache_stat: false,
                stream_dir: None,
                nfs: None,
                verify: Default::default(),
            },
        )?;
        let i = self
            .wl
            .stat_names
            .iter()
            .position(|(n, _)| n == stat_name)
            .expect("flowop exists");
        let o = &m.rec.ops[i];
        let mean_us = o.lat_sum_ns as f64 / o.count.max(1) as f64 / 1000.0;
        Ok((o.count as f64 / m.duration, mean_us))
    }
}

/// Bare loop: random 4 KiB preads of `path` for `seconds`, as a plain C loop makes them
/// (`../shared/bench/rawpread.c`'s shape): one page-aligned buffer, xorshift offsets, the
/// clock read once per 1024 reads.
fn bare_pread(path: &Path, size: u64, seconds: f64) -> anyhow::Result<f64> {
    let c = CString::new(path.to_str().unwrap())?;
    let fd = fsbench_base::sys::io::open(
        &c,
        fsbench_base::sys::io::OpenHow {
            readonly: true,
            ..Default::default()
        },
    )?;
    let mut buf = fsbench_base::sys::io::AlignedBuf::try_new(4096, &mut rng(1, 77))
        .map_err(anyhow::Error::msg)?;
    let blocks = (size / 4096).max(1);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let t0 = Instant::now();
    let limit = Duration::from_secs_f64(seconds);
    let mut n = 0u64;
    loop {
        for _ in 0..1024 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let off = (x % blocks) * 4096;
            fsbench_base::sys::io::pread(fd, &mut buf.as_mut_slice()[..4096], off)?;
        }
        n += 1024;
        if t0.elapsed() >= limit || fsbench_base::cancel::interrupted() {
            break;
        }
    }
    let rate = n as f64 / t0.elapsed().as_secs_f64();
    fsbench_base::sys::io::close(fd)?;
    Ok(rate)
}

/// Bare loop: create, close, unlink in `dir` for `seconds`; returns cycles/s. Like the
/// engine, it names each file relative to its open directory.
fn bare_create(dir: &Path, seconds: f64) -> anyhow::Result<f64> {
    let names: Vec<CString> = (0..1000)
        .map(|i| CString::new(format!("{:08}", 90_000_000 + i)).unwrap())
        .collect();
    let dirf = std::fs::File::open(dir)?;
    let dfd = std::os::fd::AsRawFd::as_raw_fd(&dirf);
    let t0 = Instant::now();
    let limit = Duration::from_secs_f64(seconds);
    let mut n = 0u64;
    loop {
        for name in names.iter().take(256) {
            let fd = fsbench_base::sys::io::open_at(
                dfd,
                name,
                fsbench_base::sys::io::OpenHow {
                    create: true,
                    ..Default::default()
                },
            )?;
            fsbench_base::sys::io::close(fd)?;
            fsbench_base::sys::io::unlink_at(dfd, name)?;
        }
        n += 256;
        if t0.elapsed() >= limit || fsbench_base::cancel::interrupted() {
            break;
        }
    }
    Ok(n as f64 / t0.elapsed().as_secs_f64())
}

/// Run both cases and describe the ratios.
pub fn overhead(dir: &Path, seconds: f64, rounds: u32, size: u64) -> anyhow::Result<String> {
    let rd = RunDir::create(dir, "selftest", false)?;
    let result = (|| -> anyhow::Result<String> {
        let base = rd.path.display().to_string();
        let size = size.max(1 << 20) / 4096 * 4096;
        let pread_wl = format!(
            "define file name=data,path={base},size={size},prealloc\n\
             define process name=p {{ thread name=t,memsize=5m {{ flowop read name=pread4k,filename=data,iosize=4k,random }} }}\n"
        );
        // The same reads into one fixed buffer (no memsize), over the same file.
        let pread_fixed_wl = format!(
            "define file name=data,path={base},size={size},prealloc,reuse\n\
             define process name=p {{ thread name=t {{ flowop read name=pread4k,filename=data,iosize=4k,random }} }}\n"
        );
        let create_wl = format!(
            "define fileset name=meta,path={base},entries=1000,dirwidth=1000000,size=0\n\
             define process name=p {{ thread name=t {{\n flowop createfile name=create,filesetname=meta,fd=1\n flowop closefile name=close,fd=1\n flowop deletefile name=unlink,filesetname=meta\n}} }}\n"
        );
        let mut out = String::new();
        let cal = clock::Calibration::measure(clock::global());
        let _ = writeln!(
            out,
            "clock {}: {:.1} ns per read, {:.1} ns per record, {:.1} ns per operation in all",
            cal.clock, cal.timer_ns, cal.record_ns, cal.overhead_ns_per_op
        );
        let _ = writeln!(
            out,
            "target {} ({}), {rounds} rounds of {seconds} s each, engine and bare loop alternating",
            dir.display(),
            fsbench_results::stats::host::mount_of(dir)
                .map(|m| m.1)
                .unwrap_or_default()
        );

        // Case 1: random 4 KiB pread, shaped as the built-in `randomread` (one buffer per
        // thread), and beside it as Filebench's randomread.f (memsize=5m: each read lands at
        // a random place in the thread's buffer).
        let (mut e, mut b, mut lat, mut sc) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        // Lay the file out once through the engine, then reuse its path for the bare loop.
        let scattered = Prepared::new(&rd, &pread_wl)?;
        let fixed = Prepared::new(&rd, &pread_fixed_wl)?;
        let data = find_file(&rd.path.join("data"))?;
        // One short round of each first, to warm caches and the branch predictors alike.
        scattered.rate("pread4k", 0.2)?;
        fixed.rate("pread4k", 0.2)?;
        bare_pread(&data, size, 0.2)?;
        cancel::check()?;
        for _ in 0..rounds {
            cancel::check()?;
            let (r, l) = fixed.rate("pread4k", seconds)?;
            e.push(r);
            lat.push(l);
            b.push(bare_pread(&data, size, seconds)?);
            sc.push(scattered.rate("pread4k", seconds)?.0);
        }
        let (me, mb, ms) = (median(e), median(b), median(sc));
        let _ = writeln!(
            out,
            "4 KiB random pread over {}, as `randomread`: engine {me:.0} ops/s, bare loop {mb:.0} ops/s, ratio {:.3} (bare cost {:.0} ns/op, engine {:.0} ns/op, recorded latency {:.2} us)",
            fsbench_base::units::human_bytes(size as f64),
            me / mb,
            1e9 / mb,
            1e9 / me,
            median(lat)
        );
        let _ = writeln!(
            out,
            "  with memsize=5m, as Filebench's randomread.f (each read at a random place in the thread's buffer; `-s memsize=5m`): {ms:.0} ops/s, ratio {:.3} ({:.0} ns/op)",
            ms / mb,
            1e9 / ms
        );

        // Case 2: create + close + unlink.
        let (mut e, mut b) = (Vec::new(), Vec::new());
        cancel::check()?;
        let create = Prepared::new(&rd, &create_wl)?;
        create.rate("create", 0.2)?;
        let meta_dir = first_dir(&rd.path.join("meta"))?;
        bare_create(&meta_dir, 0.2)?;
        for _ in 0..rounds {
            cancel::check()?;
            let (r, _) = create.rate("create", seconds)?;
            e.push(r);
            b.push(bare_create(&meta_dir, seconds)?);
        }
        let (me, mb) = (median(e), median(b));
        let _ = writeln!(
            out,
            "create+close+unlink: engine {me:.0} cycles/s, bare loop {mb:.0} cycles/s, ratio {:.3} (bare {:.0} ns/cycle, engine {:.0} ns/cycle)",
            me / mb,
            1e9 / mb,
            1e9 / me
        );
        Ok(out)
    })();
    if let Err(e) = rd.remove() {
        fsbench_base::exit::left_behind(e.to_string());
    }
    result
}

fn find_file(root: &Path) -> anyhow::Result<std::path::PathBuf> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            if e.file_type()?.is_dir() {
                stack.push(e.path());
            } else {
                return Ok(e.path());
            }
        }
    }
    anyhow::bail!("no file under {}", root.display())
}

fn first_dir(root: &Path) -> anyhow::Result<std::path::PathBuf> {
    for e in std::fs::read_dir(root)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            return Ok(e.path());
        }
    }
    Ok(root.to_path_buf())
}
