//! PostMark as Debian packages it (upstream 1.53, which prints "v1.51"): a pool of small
//! files, transactions that each pair a read-or-append with a create-or-delete, then the
//! pool's deletion.
//!
//! To be comparable with published PostMark numbers fsbench performs *the same
//! transactions*: the same generator (MT19937 with the original 1998 `sgenrand` seeding by
//! the 69069 LCG), the same draws in the same order, the same file table of `2 x number`
//! slots with its "next slot, else first hole" allocation and its rejection sampling of used
//! slots. The draw order, for the record:
//!
//! 1. `2 x high` draws `% 95` fill the text buffer that all writes copy from;
//! 2. each create draws a location (`% total weight`, only with more than one location), a
//!    subdirectory (`% subdirectories`, only with more than one), then a size
//!    (`low + draw % (high - low)`, no draw when low = high);
//! 3. each transaction draws `% 10` against `bias read` (unless -1), then picks a used slot
//!    (`% 2number` until a used one comes up), and for an append draws the length
//!    `1 + draw % (high - size)` (no append, and no draw, when the file is at `high`); then
//!    draws `% 10` against `bias create` (unless -1) and creates, or picks a used slot and
//!    deletes it.
//!
//! A draw of `% 0` draws nothing. The run stops early, as PostMark does, when every file
//! created has been deleted.
//!
//! What differs from PostMark, on purpose: time is measured with a monotonic clock (PostMark
//! uses whole seconds and reports at least one), every file operation's latency goes into an
//! HDR histogram (create, read, append, delete; pool creation and deletion apart),
//! `--instances N` runs N copies at once, and files live in a marked run directory under
//! `location`. Buffered I/O is modelled as C stdio does it: transfers gathered into
//! 4 KiB system calls.

use super::cli::PostmarkArgs;
use super::{timed, AppRun, OpTable, PathBuf0, Recorder};
use anyhow::{bail, Context, Result};
use fsbench_base::sys::io::{self, OpenHow};
use fsbench_engine::engine::rundir::RunDir;
use fsbench_model::model::FlowopKind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

mod config;
mod report;
pub use config::{Command, Config};
pub use report::{figures, report, terse_report, verbose_report};

/// Operation types, in report order.
pub const OPS: OpTable = &[
    ("create-pool", FlowopKind::CreateFile),
    ("read", FlowopKind::ReadWholeFile),
    ("append", FlowopKind::AppendFile),
    ("create", FlowopKind::CreateFile),
    ("delete", FlowopKind::DeleteFile),
    ("delete-pool", FlowopKind::DeleteFile),
];
const CREATE_POOL: usize = 0;
const READ: usize = 1;
const APPEND: usize = 2;
const CREATE: usize = 3;
const DELETE: usize = 4;
const DELETE_POOL: usize = 5;

/// The C library's stdio buffer on Linux file systems (st_blksize).
const STDIO_BUF: usize = 4096;

// ---------------------------------------------------------------------------------------
// The generator

/// MT19937 with the 1998 seeding (`sgenrand`), which PostMark 1.5 uses. Outputs are 32 bits
/// (PostMark's `unsigned long` state holds only 32-bit values even where `long` is 64 bits).
pub struct Mt19937 {
    mt: [u32; 624],
    i: usize,
}

impl Mt19937 {
    pub fn new(seed: u32) -> Mt19937 {
        let mut mt = [0u32; 624];
        let mut s = seed;
        for x in mt.iter_mut() {
            let hi = s & 0xffff_0000;
            s = s.wrapping_mul(69069).wrapping_add(1);
            *x = hi | ((s & 0xffff_0000) >> 16);
            s = s.wrapping_mul(69069).wrapping_add(1);
        }
        Mt19937 { mt, i: 624 }
    }

    fn twist(&mut self) {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        const A: u32 = 0x9908_b0df;
        for k in 0..624 {
            let y = (self.mt[k] & UPPER) | (self.mt[(k + 1) % 624] & LOWER);
            let mag = if y & 1 == 1 { A } else { 0 };
            self.mt[k] = self.mt[(k + 397) % 624] ^ (y >> 1) ^ mag;
        }
        self.i = 0;
    }

    pub fn next_u32(&mut self) -> u32 {
        if self.i >= 624 {
            self.twist();
        }
        let mut y = self.mt[self.i];
        self.i += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// PostMark's `RND(x)`: a draw modulo x, or 0 without drawing when x is not positive.
    #[inline]
    pub fn rnd(&mut self, x: i64) -> u32 {
        if x > 0 {
            (self.next_u32() as u64 % x as u64) as u32
        } else {
            0
        }
    }
}

// ---------------------------------------------------------------------------------------
// Configuration

/// PostMark's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    pub created: u64,
    pub created_alone: u64,
    pub read: u64,
    pub appended: u64,
    pub deleted: u64,
    pub deleted_alone: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub transactions_done: u64,
    pub out_of_files: bool,
}

impl Counters {
    fn add(&mut self, o: &Counters) {
        self.created += o.created;
        self.created_alone += o.created_alone;
        self.read += o.read;
        self.appended += o.appended;
        self.deleted += o.deleted;
        self.deleted_alone += o.deleted_alone;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.transactions_done += o.transactions_done;
        self.out_of_files |= o.out_of_files;
    }
}

/// Seconds of each phase of one instance.
#[derive(Debug, Clone, Copy, Default)]
pub struct Times {
    pub create_s: f64,
    pub transactions_s: f64,
    pub delete_s: f64,
}

impl Times {
    pub fn total(&self) -> f64 {
        self.create_s + self.transactions_s + self.delete_s
    }
}

/// A slot of the file table: 0 size means free. The name is derived, not stored.
#[derive(Clone, Copy, Default)]
struct Slot {
    size: u32,
    loc: u16,
    /// Subdirectory + 1, 0 for none.
    sub: u32,
    num: u32,
}

/// The path of a slot's file, in its location's reusable buffer.
fn slot_path(dirs: &mut [PathBuf0], e: Slot) -> &std::ffi::CStr {
    let d = &mut dirs[e.loc as usize];
    if e.sub > 0 {
        d.with(format_args!("s{}/{}", e.sub - 1, e.num))
    } else {
        d.with(e.num)
    }
}

/// Write `len` bytes of the text buffer to `fd` in the configured blocks (gathered into
/// stdio-sized calls when buffered).
fn write_blocks(cfg: &Config, source: &[u8], fd: i32, len: usize) -> std::io::Result<()> {
    let block = cfg.write_block as usize;
    let chunk = if cfg.buffered {
        block.max(STDIO_BUF)
    } else {
        block
    };
    let mut off = 0;
    while off < len {
        let n = chunk.min(len - off);
        let w = io::write(fd, &source[off..off + n])?;
        if w != n {
            return Err(std::io::Error::other(format!("short write: {w} of {n}")));
        }
        off += n;
    }
    Ok(())
}

struct Instance<'a> {
    cfg: &'a Config,
    rng: Mt19937,
    /// One path buffer per location: this instance's directory there.
    dirs: Vec<PathBuf0>,
    /// Location index by weight (`location_index` in PostMark).
    weighted: Vec<u16>,
    table: Vec<Slot>,
    allocated: usize,
    source: Vec<u8>,
    buf: Vec<u8>,
    c: Counters,
    rec: Recorder,
}

impl Instance<'_> {
    fn find_free(&mut self) -> Option<usize> {
        let n = self.table.len();
        if self.allocated < n && self.table[self.allocated].size == 0 {
            self.allocated += 1;
            return Some(self.allocated - 1);
        }
        let i = self.table.iter().position(|e| e.size == 0)?;
        self.allocated = i + 1;
        Some(i)
    }

    fn find_used(&mut self) -> usize {
        let n = self.table.len() as i64;
        loop {
            let i = self.rng.rnd(n) as usize;
            if self.table[i].size != 0 {
                return i;
            }
        }
    }

    fn create(&mut self, op: usize) {
        let Some(s) = self.find_free() else { return };
        let loc = match self.weighted.len() {
            0 | 1 => 0,
            n => self.weighted[self.rng.rnd(n as i64) as usize],
        };
        let sub = if self.cfg.subdirectories > 1 {
            self.rng.rnd(self.cfg.subdirectories as i64) + 1
        } else {
            0
        };
        self.c.created += 1;
        let size = self.cfg.size_low
            + self
                .rng
                .rnd(self.cfg.size_high as i64 - self.cfg.size_low as i64);
        self.table[s] = Slot {
            size,
            loc,
            sub,
            num: self.c.created as u32,
        };
        let how = OpenHow {
            create: true,
            writeonly: self.cfg.buffered,
            ..Default::default()
        };
        let path = slot_path(&mut self.dirs, self.table[s]);
        let (cfg, source) = (self.cfg, &self.source);
        let ok = timed(
            &mut self.rec.ops[op],
            size as u64,
            || format!("creating {}", path.to_string_lossy()),
            || {
                let fd = io::open(path, how)?;
                let r = write_blocks(cfg, source, fd, size as usize);
                io::close(fd)?;
                r
            },
        );
        if ok.is_some() {
            self.c.bytes_written += size as u64;
        }
    }

    fn delete(&mut self, s: usize, op: usize) -> bool {
        if self.table[s].size == 0 {
            return false;
        }
        let path = slot_path(&mut self.dirs, self.table[s]);
        let ok = timed(
            &mut self.rec.ops[op],
            0,
            || format!("deleting {}", path.to_string_lossy()),
            || io::unlink(path),
        );
        if ok.is_some() {
            self.table[s].size = 0;
            self.c.deleted += 1;
        }
        ok.is_some()
    }

    fn read(&mut self, s: usize) {
        let size = self.table[s].size as usize;
        let block = if self.cfg.buffered {
            STDIO_BUF.max(self.cfg.read_block as usize)
        } else {
            self.cfg.read_block as usize
        };
        if self.buf.len() < block {
            self.buf.resize(block, 0);
        }
        let path = slot_path(&mut self.dirs, self.table[s]);
        let buf = &mut self.buf;
        let ok = timed(
            &mut self.rec.ops[READ],
            size as u64,
            || format!("reading {}", path.to_string_lossy()),
            || {
                let fd = io::open(
                    path,
                    OpenHow {
                        readonly: true,
                        ..Default::default()
                    },
                )?;
                let mut off = 0;
                let r = loop {
                    if off >= size {
                        break Ok(());
                    }
                    let n = block.min(size - off);
                    match io::pread(fd, &mut buf[..n], off as u64) {
                        Ok(0) => break Err(std::io::Error::other("file shorter than expected")),
                        Ok(k) => off += k,
                        Err(e) => break Err(e),
                    }
                };
                io::close(fd)?;
                r
            },
        );
        if ok.is_some() {
            self.c.read += 1;
            self.c.bytes_read += size as u64;
        }
    }

    fn append(&mut self, s: usize) {
        let size = self.table[s].size;
        if size >= self.cfg.size_high {
            return;
        }
        let block = 1 + self.rng.rnd(self.cfg.size_high as i64 - size as i64);
        let path = slot_path(&mut self.dirs, self.table[s]);
        let (cfg, source) = (self.cfg, &self.source);
        let ok = timed(
            &mut self.rec.ops[APPEND],
            block as u64,
            || format!("appending to {}", path.to_string_lossy()),
            || {
                let fd = io::open(path, OpenHow::default())?;
                let r =
                    io::seek_end(fd).and_then(|_| write_blocks(cfg, source, fd, block as usize));
                io::close(fd)?;
                r
            },
        );
        if ok.is_some() {
            self.table[s].size += block;
            self.c.appended += 1;
            self.c.bytes_written += block as u64;
        }
    }

    fn run(&mut self) -> Times {
        let mut t = Times::default();
        let t0 = Instant::now();
        for _ in 0..self.cfg.number {
            self.create(CREATE_POOL);
        }
        self.c.created_alone = self.c.created;
        t.create_s = t0.elapsed().as_secs_f64();

        let t1 = Instant::now();
        for _ in 0..self.cfg.transactions {
            if self.c.created == self.c.deleted {
                self.c.out_of_files = true;
                break;
            }
            if fsbench_base::cancel::interrupted() {
                break;
            }
            if self.cfg.bias_read != -1 {
                let read = (self.rng.rnd(10) as i32) < self.cfg.bias_read;
                let s = self.find_used();
                if read {
                    self.read(s);
                } else {
                    self.append(s);
                }
            }
            if self.cfg.bias_create != -1 {
                if (self.rng.rnd(10) as i32) < self.cfg.bias_create {
                    self.create(CREATE);
                } else {
                    let s = self.find_used();
                    self.delete(s, DELETE);
                }
            }
            self.c.transactions_done += 1;
        }
        t.transactions_s = t1.elapsed().as_secs_f64();

        let t2 = Instant::now();
        let before = self.c.deleted;
        for s in 0..self.table.len() {
            self.delete(s, DELETE_POOL);
        }
        self.c.deleted_alone = self.c.deleted - before;
        t.delete_s = t2.elapsed().as_secs_f64();
        t
    }
}

// ---------------------------------------------------------------------------------------
// A run

/// Refuse, before creating anything, a configuration the machine cannot hold: the file
/// table and source buffer of every instance in memory, the instances as threads, the files
/// and subdirectories in the locations' free space and inodes.
fn preflight(cfg: &Config, instances: u32, locations: &[(PathBuf, u32)]) -> Result<()> {
    let m = fsbench_base::limits::Machine::probe();
    let per = (cfg.number as u64)
        .saturating_mul(2 * std::mem::size_of::<Slot>() as u64)
        .saturating_add((cfg.size_high as u64).saturating_mul(3));
    m.check_threads(
        instances as u64,
        per,
        &format!(
            "--instances {instances} with set number {} and set size {} {}",
            cfg.number, cfg.size_low, cfg.size_high
        ),
    )
    .map_err(anyhow::Error::msg)?;
    // Files and directories spread over the locations by weight; the first must hold its share
    // (checking each against the whole is simpler and only stricter for several locations).
    let files = (cfg.number as u64).saturating_mul(instances as u64);
    let dirs = (cfg.subdirectories as u64).saturating_mul(instances as u64);
    let bytes = files.saturating_mul((cfg.size_low as u64 + cfg.size_high as u64) / 2);
    for (d, _) in locations {
        let Ok(c) = std::ffi::CString::new(d.as_os_str().as_encoded_bytes()) else {
            continue;
        };
        // SAFETY: st is written by the kernel.
        let st = unsafe {
            let mut st: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(c.as_ptr(), &mut st) != 0 {
                continue;
            }
            st
        };
        let free = st.f_bavail as u64 * st.f_frsize as u64;
        if bytes > free {
            bail!(
                "set number {} with set size {} {} needs about {} for the file pool, but {} has {} free; lower them",
                cfg.number, cfg.size_low, cfg.size_high,
                fsbench_base::units::human_bytes(bytes as f64),
                d.display(),
                fsbench_base::units::human_bytes(free as f64)
            );
        }
        // File systems without inode accounting report 0 files.
        let inodes = st.f_favail as u64;
        if st.f_files > 0 && files.saturating_add(dirs) > inodes {
            bail!(
                "set number {} and set subdirectories {} need {} inodes, but {} has {} free; lower them",
                cfg.number,
                cfg.subdirectories,
                files.saturating_add(dirs),
                d.display(),
                inodes
            );
        }
    }
    Ok(())
}

/// What one `run` measured.
pub struct Outcome {
    pub totals: Counters,
    pub per_instance: Vec<(Counters, Times)>,
    pub elapsed_s: f64,
    pub results: fsbench_results::stats::Results,
}

/// Run `instances` copies of the configured benchmark at once, each in its own directory
/// `i<N>` inside a marked run directory in every location.
/// The seed of instance `i`: the configured seed plus i (wrapping at 2^32), or the
/// configured seed itself with `same`. Instance 0 always uses the configured seed, so a
/// single instance performs PostMark's own transactions.
pub fn instance_seed(seed: u32, i: u32, same: bool) -> u32 {
    if same {
        seed
    } else {
        seed.wrapping_add(i)
    }
}

pub fn run(
    cfg: &Config,
    instances: u32,
    same_seed: bool,
    default_dir: &Path,
    keep: bool,
) -> Result<Outcome> {
    if instances == 0 {
        return Err(fsbench_base::exit::usage("--instances must be at least 1"));
    }
    let locations: Vec<(PathBuf, u32)> = if cfg.locations.is_empty() {
        vec![(default_dir.to_path_buf(), 1)]
    } else {
        cfg.locations.clone()
    };
    preflight(cfg, instances, &locations)?;
    let rundirs = run_dirs(&locations, cfg.force_location)?;
    let mut weighted = Vec::new();
    for (i, (_, w)) in locations.iter().enumerate() {
        weighted.extend(std::iter::repeat_n(i as u16, *w as usize));
    }
    if locations.len() == 1 {
        weighted.truncate(1);
    }
    instance_dirs(cfg, instances, &rundirs)?;
    let started_at = super::now_epoch();
    let t0 = Instant::now();
    let per: Vec<(Counters, Times, Recorder)> = fsbench_harness::measure::guard::run_gated(
        instances,
        |i| format!("postmark {i}"),
        "a PostMark instance",
        |i| {
            let dirs: Vec<PathBuf0> = rundirs
                .iter()
                .map(|rd| PathBuf0::new(&rd.path().join(format!("i{i}"))))
                .collect();
            run_instance(cfg, i, same_seed, dirs, weighted.clone())
        },
    )?;
    let elapsed_s = t0.elapsed().as_secs_f64();

    // The pool is gone; remove the (now empty) directories unless asked to keep them.
    let first_dir = rundirs[0].path().to_path_buf();
    for rd in rundirs {
        rd.finish(keep)?;
    }
    let run = AppRun {
        name: "postmark",
        variables: BTreeMap::new(),
        seed: cfg.seed as u64,
        run_dir: &first_dir,
        started_at,
        duration_s: elapsed_s,
        threads: instances as u64,
        notes: Vec::new(),
    };
    Ok(outcome(cfg, instances, same_seed, run, per))
}

/// A marked run directory in each location (the location's real path), in a directory of
/// the operating system too when `forced` (`--force-location`).
fn run_dirs(
    locations: &[(PathBuf, u32)],
    forced: bool,
) -> Result<Vec<fsbench_harness::measure::guard::RunDirGuard>> {
    let mut rundirs = Vec::new();
    for (d, _) in locations {
        let real = d
            .canonicalize()
            .with_context(|| format!("PostMark location {}", d.display()))?;
        if real != *d {
            fsbench_base::errln!(
                "fsbench: PostMark location {} is {}",
                d.display(),
                real.display()
            );
        }
        let rd = if forced {
            RunDir::create_forced(&real, "postmark")?
        } else {
            RunDir::create(&real, "postmark", false)?
        };
        rundirs.push(fsbench_harness::measure::guard::RunDirGuard::new(rd));
    }
    Ok(rundirs)
}

/// Directories: i<N> per instance and location, and its subdirectories.
fn instance_dirs(
    cfg: &Config,
    instances: u32,
    rundirs: &[fsbench_harness::measure::guard::RunDirGuard],
) -> Result<()> {
    for rd in rundirs {
        for i in 0..instances {
            let base = rd.path().join(format!("i{i}"));
            std::fs::create_dir(&base).with_context(|| format!("creating {}", base.display()))?;
            if cfg.subdirectories > 1 {
                for s in 0..cfg.subdirectories {
                    if fsbench_base::cancel::interrupted() {
                        bail!("interrupted while creating subdirectories");
                    }
                    let p = base.join(format!("s{s}"));
                    std::fs::create_dir(&p).with_context(|| format!("creating {}", p.display()))?;
                }
            }
        }
    }
    Ok(())
}

/// One PostMark instance, from its seed to its counters, phase times and recorder.
fn run_instance(
    cfg: &Config,
    i: u32,
    same_seed: bool,
    dirs: Vec<PathBuf0>,
    weighted: Vec<u16>,
) -> (Counters, Times, Recorder) {
    let mut rng = Mt19937::new(instance_seed(cfg.seed, i, same_seed));
    let source: Vec<u8> = (0..(cfg.size_high as usize) * 2)
        .map(|_| 32 + rng.rnd(95) as u8)
        .collect();
    let mut inst = Instance {
        cfg,
        rng,
        dirs,
        weighted,
        table: vec![Slot::default(); cfg.number as usize * 2],
        allocated: 0,
        source,
        buf: Vec::new(),
        c: Counters::default(),
        rec: super::recorder(OPS),
    };
    let (u0, s0) = fsbench_results::stats::thread_cpu();
    let t = inst.run();
    let (u1, s1) = fsbench_results::stats::thread_cpu();
    inst.rec.cpu_user_s = u1 - u0;
    inst.rec.cpu_sys_s = s1 - s0;
    (inst.c, t, inst.rec)
}

/// The instances' counters and times as one outcome: totals, the slowest phases, and with
/// several instances each one's figures.
fn outcome(
    cfg: &Config,
    instances: u32,
    same_seed: bool,
    mut run: AppRun,
    per: Vec<(Counters, Times, Recorder)>,
) -> Outcome {
    let mut totals = Counters::default();
    let mut merged = super::recorder(OPS);
    for (c, _, r) in &per {
        totals.add(c);
        merged.merge(r);
    }
    if totals.out_of_files {
        run.notes.push(
            "out of files: every file created was deleted before the last transaction \
             (increase number or decrease transactions)"
                .to_string(),
        );
    }
    run.variables = cfg.variables(instances);
    run.variables
        .insert("same_seed".into(), same_seed.to_string());
    let elapsed_s = run.duration_s;
    let mut results = super::results(run, OPS, &merged);
    let slowest = slowest(&per.iter().map(|x| x.1).collect::<Vec<_>>());
    for (k, v) in figures(&totals, &slowest) {
        results.figures.insert(k.to_string(), v);
    }
    if instances > 1 {
        for (i, (c, t, _)) in per.iter().enumerate() {
            for (k, v) in figures(c, t) {
                results.figures.insert(format!("instance.{i}.{k}"), v);
            }
            results.figures.insert(
                format!("instance.{i}.seed"),
                instance_seed(cfg.seed, i as u32, same_seed) as f64,
            );
        }
    }
    Outcome {
        totals,
        per_instance: per.into_iter().map(|(c, t, _)| (c, t)).collect(),
        elapsed_s,
        results,
    }
}

/// Phase times of several instances: each phase's slowest.
fn slowest(per: &[Times]) -> Times {
    Times {
        create_s: per.iter().map(|t| t.create_s).fold(0.0, f64::max),
        transactions_s: per.iter().map(|t| t.transactions_s).fold(0.0, f64::max),
        delete_s: per.iter().map(|t| t.delete_s).fold(0.0, f64::max),
    }
}

/// One `run` of a PostMark configuration, measured as often as asked.
/// What PostMark reads, for those who judge a cold cache's effect on it: nothing that was
/// on disk before it started. Its measured window begins with the creation of its pool
/// (there is no unmeasured preparation), and its transactions read and delete only files of
/// that pool, so after a cache drop it reads back what it has just written.
pub const READS_ITS_OWN_POOL: &str =
    "PostMark makes its pool of files inside its measured window and reads only those";

struct Bench<'a> {
    cfg: Config,
    a: &'a PostmarkArgs,
    default_dir: PathBuf,
    /// `run FILE`: where PostMark's own report is appended.
    to: Option<&'a str>,
}

impl fsbench_harness::measure::Measurement for Bench<'_> {
    fn name(&self) -> &str {
        "postmark"
    }
    fn target(&self) -> PathBuf {
        self.cfg
            .locations
            .first()
            .map(|(d, _)| d.clone())
            .unwrap_or_else(|| self.default_dir.clone())
    }
    fn run_once(&mut self) -> Result<fsbench_results::stats::Results> {
        let out = run(
            &self.cfg,
            self.a.instances,
            self.a.same_seed,
            &self.default_dir,
            self.a.keep,
        )?;
        let text = report(&self.cfg, &out);
        match self.to {
            Some(file) => {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(file)
                    .with_context(|| format!("opening {file} for the report"))?;
                f.write_all(text.as_bytes())
                    .with_context(|| format!("writing {file}"))?;
            }
            None => fsbench_base::console::human(&text),
        }
        Ok(out.results)
    }
}

/// `fsbench postmark`: read the configuration, run at each `run` (or once at the end).
pub fn main(a: &PostmarkArgs) -> Result<()> {
    a.m.check()?;
    fsbench_base::export::check::reserve_stdout(&fsbench_base::export::check::Outputs::outputs(
        &a.m,
    ));
    let mut cfg = Config::default();
    let default_dir = a.dir.clone().unwrap_or_else(std::env::temp_dir);
    let mut ran = false;
    let do_run = |cfg: &Config, to: Option<&str>| -> Result<()> {
        let mut c = cfg.clone();
        c.apply_flags(a)?;
        if a.instances == 0 {
            return Err(fsbench_base::exit::usage("--instances must be at least 1"));
        }
        fsbench_base::say!("PostMark (fsbench {})", env!("CARGO_PKG_VERSION"));
        let mut b = Bench {
            cfg: c,
            a,
            default_dir: default_dir.clone(),
            to,
        };
        fsbench_harness::measure::measure_and_report(&mut b, &a.m)?;
        Ok(())
    };
    if let Some(path) = &a.config {
        let text = fsbench_base::input::read_text(path, fsbench_base::input::CONFIG)
            .with_context(|| format!("reading the PostMark configuration {}", path.display()))?;
        for (n, line) in text.lines().enumerate() {
            let cmd = cfg
                .apply_line(line)
                .with_context(|| format!("{}:{}", path.display(), n + 1))?;
            match cmd {
                Some(Command::Run(to)) => {
                    do_run(&cfg, to.as_deref())?;
                    ran = true;
                }
                Some(Command::Show) => {
                    let mut c = cfg.clone();
                    c.apply_flags(a)?;
                    fsbench_base::console::human(&c.show());
                }
                Some(Command::Quit) => break,
                _ => {}
            }
        }
    }
    if !ran {
        do_run(&cfg, None)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_matches_the_reference_sgenrand() {
        // Outputs of the 1998 reference code as PostMark 1.53 carries it, built with gcc on
        // x86-64: the first three after sgenrand(4357), the 701st after sgenrand(42) (past a
        // second twist).
        let mut r = Mt19937::new(4357);
        let first: Vec<u32> = (0..3).map(|_| r.next_u32()).collect();
        assert_eq!(first, [2_867_219_139, 1_585_203_162, 3_113_124_129]);
        let mut r = Mt19937::new(42);
        for _ in 0..700 {
            r.next_u32();
        }
        assert_eq!(r.next_u32(), 3_038_556_075);
    }

    #[test]
    fn config_commands() {
        let mut c = Config::default();
        for l in [
            "set size 1000 2000",
            "set number 10",
            "set bias read -1",
            "set location /tmp 3",
            "set location +/var 2",
            "set buffering false",
        ] {
            assert_eq!(c.apply_line(l).unwrap(), Some(Command::Set), "{l}");
        }
        assert_eq!((c.size_low, c.size_high, c.number), (1000, 2000, 10));
        assert_eq!(c.bias_read, -1);
        assert!(!c.buffered);
        assert_eq!(c.locations.len(), 2);
        assert_eq!(c.locations[1], ("/var".into(), 2));
        c.apply_line("set size 700 5").unwrap();
        assert_eq!((c.size_low, c.size_high), (700, 700));
        assert_eq!(
            c.apply_line("run out.txt").unwrap(),
            Some(Command::Run(Some("out.txt".into())))
        );
        assert_eq!(c.apply_line("quit").unwrap(), Some(Command::Quit));
        assert!(c.apply_line("set nonsense 3").is_err());
        assert!(c.apply_line("set number 0").is_err());
        let e = c.apply_line("set number 99999999999999").unwrap_err();
        assert!(
            e.to_string()
                .contains("too large; the largest is 4294967295"),
            "{e}"
        );
    }
}
