//! The patterns of the cluster tools users already have numbers from: `fsbench mdtest`
//! (mdtest's phases: create, stat, read, remove N files per rank) and `fsbench ior` (IOR's
//! basic pattern: each rank writes a block in transfers, syncs, reads it back). Both run
//! alone or on every rank of an MPI job (`mpirun -np N fsbench mdtest ...`), with every rank
//! starting each phase together, as the originals do.
//!
//! One marked run directory holds everything: rank 0 makes it and tells the others where
//! it is; each rank works in `rank<N>/` below it (or all in `shared/` with `--shared-dir`,
//! or on one `shared.data` file without `--file-per-proc`). The phase rates are the
//! originals' ones: items (bytes) over the phase's wall time, barrier to barrier; with many
//! ranks, rank 0 reports them summed over ranks, with the slowest rank's time.

use super::{AppRun, OpTable, PathBuf0, Recorder};
use anyhow::{bail, Result};
use clap::Args;
use fsbench_base::sys::io;
use fsbench_engine::engine::rundir::RunDir;
use fsbench_harness::measure::{MeasureArgs, Measurement};
use fsbench_model::model::FlowopKind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args, Debug, Clone)]
pub struct MdtestArgs {
    /// Files each rank creates, stats, reads and removes.
    #[arg(short = 'n', long, default_value_t = 1000)]
    pub items: u64,
    /// Bytes written into each file when it is created (mdtest -w).
    #[arg(short = 'w', long, default_value_t = 0)]
    pub write_bytes: u64,
    /// Bytes read from each file in the read phase (mdtest -e); 0 leaves the phase out.
    #[arg(short = 'e', long, default_value_t = 0)]
    pub read_bytes: u64,
    /// All ranks work in one directory (names carry the rank) instead of one each.
    #[arg(long)]
    pub shared_dir: bool,
    /// Directory in which fsbench creates its run directory (default: $TMPDIR); on a shared
    /// file system, the same path on every host.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the run directory afterwards.
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub m: MeasureArgs,
}

#[derive(Args, Debug, Clone)]
pub struct IorArgs {
    /// Bytes each rank writes and reads (K, M, G).
    #[arg(short = 'b', long, default_value = "64M", value_parser = parse_size)]
    pub block_size: u64,
    /// Bytes per write and read call (K, M, G); must divide the block size.
    #[arg(short = 't', long, default_value = "1M", value_parser = parse_size)]
    pub transfer_size: u64,
    /// One shared file, each rank at its block's offset (IOR without -F); default: a file
    /// per rank.
    #[arg(long)]
    pub shared_file: bool,
    /// Read the next rank's block instead of its own (IOR -C), so a rank's own writes in
    /// its page cache do not serve its reads.
    #[arg(short = 'C', long)]
    pub read_other: bool,
    /// Open with O_DIRECT (the transfer size must be a multiple of 4 KiB).
    #[arg(long)]
    pub direct: bool,
    /// Do not fsync after writing (IOR syncs with -e; fsbench does by default).
    #[arg(long)]
    pub no_fsync: bool,
    /// Directory in which fsbench creates its run directory (default: $TMPDIR).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the run directory afterwards.
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub m: MeasureArgs,
}

fsbench_harness::outputs_of_measurement!(MdtestArgs, IorArgs);

fn parse_size(s: &str) -> std::result::Result<u64, String> {
    fsbench_base::units::parse_size(s)
}

const MD_OPS: OpTable = &[
    ("create", FlowopKind::CreateFile),
    ("stat", FlowopKind::StatFile),
    ("read", FlowopKind::ReadWholeFile),
    ("remove", FlowopKind::DeleteFile),
];

const IOR_OPS: OpTable = &[("write", FlowopKind::Write), ("read", FlowopKind::Read)];

/// Rank 0 makes the marked run directory and tells every rank where it is.
fn shared_run_dir(
    parent: &Path,
    name: &str,
) -> Result<(
    Option<fsbench_harness::measure::guard::RunDirGuard>,
    PathBuf,
)> {
    let rank = fsbench_base::cluster::rank();
    let (guard, path) = if rank == 0 {
        match RunDir::create(parent, name, false) {
            Ok(rd) => {
                let g = fsbench_harness::measure::guard::RunDirGuard::new(rd);
                let p = g.path().to_path_buf();
                (Some(g), Some(p.display().to_string()))
            }
            Err(e) => {
                fsbench_base::cluster::broadcast_string(Some(String::new()));
                return Err(e.into());
            }
        }
    } else {
        (None, None)
    };
    let p = fsbench_base::cluster::broadcast_string(path);
    if p.is_empty() {
        return Err(fsbench_base::cluster::failed_elsewhere());
    }
    Ok((guard, PathBuf::from(p)))
}

/// Every rank starts the next phase together; an error when one failed.
fn together() -> Result<()> {
    if fsbench_base::cluster::barrier() {
        Ok(())
    } else {
        Err(fsbench_base::cluster::failed_elsewhere())
    }
}

/// Every rank has finished the phase (its time ends when the slowest rank's does).
fn all_done() -> Result<()> {
    if fsbench_base::cluster::sync() {
        Ok(())
    } else {
        Err(fsbench_base::cluster::failed_elsewhere())
    }
}

/// When a run began, on each clock its Results need: the wall clock (`started_at`), the
/// monotonic one (the duration) and the process's CPU time (user and system CPU).
struct Started {
    epoch_s: f64,
    at: Instant,
    cpu: (f64, f64),
}

impl Started {
    fn now() -> Started {
        Started {
            epoch_s: super::now_epoch(),
            at: Instant::now(),
            cpu: super::process_cpu(false),
        }
    }
}

/// The Results of one run begun at `started`: the time and CPU since, the configuration as
/// variables, the phase figures.
fn finish(
    name: &str,
    ops: OpTable,
    mut rec: Recorder,
    started: Started,
    vars: &[(&str, String)],
    base: &Path,
    figures: BTreeMap<String, f64>,
) -> fsbench_results::stats::Results {
    let cpu1 = super::process_cpu(false);
    rec.cpu_user_s = cpu1.0 - started.cpu.0;
    rec.cpu_sys_s = cpu1.1 - started.cpu.1;
    let variables = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let mut r = super::results(
        AppRun {
            name,
            variables,
            seed: 0,
            run_dir: base,
            started_at: started.epoch_s,
            duration_s: started.at.elapsed().as_secs_f64(),
            threads: 1,
            notes: Vec::new(),
        },
        ops,
        &rec,
    );
    r.figures = figures;
    r
}

struct Mdtest<'a> {
    a: &'a MdtestArgs,
    parent: PathBuf,
    rd: Option<fsbench_harness::measure::guard::RunDirGuard>,
    base: PathBuf,
}

impl Measurement for Mdtest<'_> {
    fn name(&self) -> &str {
        "mdtest"
    }
    fn target(&self) -> PathBuf {
        self.base.clone()
    }
    fn run_dir(&mut self) -> Option<&mut fsbench_harness::measure::guard::RunDirGuard> {
        self.rd.as_mut()
    }
    fn prepare(&mut self) -> Result<()> {
        let (g, base) = shared_run_dir(&self.parent, "mdtest")?;
        self.rd = g;
        let rank = fsbench_base::cluster::rank();
        let work = if self.a.shared_dir {
            base.join("shared")
        } else {
            base.join(format!("rank{rank}"))
        };
        if rank == 0 || !self.a.shared_dir {
            std::fs::create_dir_all(&work)?;
        }
        self.base = work;
        together()
    }
    fn cleanup(&mut self) -> Result<()> {
        // Every rank is done with the directory before rank 0 removes it.
        let _ = fsbench_base::cluster::sync();
        match self.rd.take() {
            Some(rd) => rd.finish(self.a.keep),
            None => Ok(()),
        }
    }
    fn run_once(&mut self) -> Result<fsbench_results::stats::Results> {
        let a = self.a;
        let rank = fsbench_base::cluster::rank();
        let mut rec = Recorder::new(MD_OPS.len());
        let mut p = PathBuf0::new(&self.base);
        let name = |i: u64| format!("file.{rank}.{i}");
        let data = vec![0x5au8; a.write_bytes.max(a.read_bytes).max(1) as usize];
        let mut buf = vec![0u8; a.read_bytes.max(1) as usize];
        let clock = fsbench_results::stats::clock::global();
        let mut figures = BTreeMap::new();
        let started = Started::now();
        let mut phase = |label: &str,
                         slot: usize,
                         f: &mut dyn FnMut(&std::ffi::CStr) -> std::io::Result<u64>|
         -> Result<()> {
            together()?;
            let t0 = Instant::now();
            for i in 0..a.items {
                if fsbench_base::cancel::interrupted() {
                    break;
                }
                let path = p.with(name(i));
                let c0 = clock.now();
                match f(path) {
                    Ok(bytes) => rec.ops[slot].record(clock.since(c0), bytes),
                    Err(e) => rec.ops[slot].error(|| format!("{label} {}: {e}", name(i))),
                }
            }
            all_done()?;
            let s = t0.elapsed().as_secs_f64();
            figures.insert(format!("{label}_s"), s);
            figures.insert(format!("{label}_ops_per_s"), a.items as f64 / s.max(1e-9));
            Ok(())
        };
        let create = io::OpenHow {
            writeonly: true,
            create: true,
            ..Default::default()
        };
        phase("create", 0, &mut |path| {
            let fd = io::open(path, create)?;
            let mut n = 0;
            let r = (|| {
                while n < a.write_bytes {
                    n += io::write(fd, &data[..(a.write_bytes - n) as usize])? as u64;
                }
                Ok(n)
            })();
            io::close(fd)?;
            r
        })?;
        phase("stat", 1, &mut |path| io::stat(path).map(|_| 0))?;
        if a.read_bytes > 0 {
            phase("read", 2, &mut |path| {
                let fd = io::open(
                    path,
                    io::OpenHow {
                        readonly: true,
                        ..Default::default()
                    },
                )?;
                let r = io::pread(fd, &mut buf, 0);
                io::close(fd)?;
                r.map(|n| n as u64)
            })?;
        }
        phase("remove", 3, &mut |path| io::unlink(path).map(|_| 0))?;
        Ok(finish(
            "mdtest",
            MD_OPS,
            rec,
            started,
            &[
                ("items", a.items.to_string()),
                ("write_bytes", a.write_bytes.to_string()),
                ("read_bytes", a.read_bytes.to_string()),
                ("shared_dir", a.shared_dir.to_string()),
            ],
            &self.base,
            figures,
        ))
    }
}

pub fn mdtest(a: &MdtestArgs) -> Result<()> {
    if a.items == 0 {
        return Err(fsbench_base::exit::usage("-n/--items must be at least 1"));
    }
    a.m.check()?;
    let parent = fsbench_harness::measure::guard::target_dir(a.dir.as_deref())?;
    let mut m = Mdtest {
        a,
        parent: parent.clone(),
        rd: None,
        base: parent,
    };
    fsbench_harness::measure::measure_and_report(&mut m, &a.m)?;
    Ok(())
}

struct Ior<'a> {
    a: &'a IorArgs,
    parent: PathBuf,
    rd: Option<fsbench_harness::measure::guard::RunDirGuard>,
    base: PathBuf,
}

impl Ior<'_> {
    /// The file and offset of rank `r`'s block.
    fn place(&self, r: usize) -> (PathBuf, u64) {
        if self.a.shared_file {
            (self.base.join("shared.data"), r as u64 * self.a.block_size)
        } else {
            (self.base.join(format!("rank{r}.data")), 0)
        }
    }
}

impl Measurement for Ior<'_> {
    fn name(&self) -> &str {
        "ior"
    }
    fn target(&self) -> PathBuf {
        self.base.clone()
    }
    fn run_dir(&mut self) -> Option<&mut fsbench_harness::measure::guard::RunDirGuard> {
        self.rd.as_mut()
    }
    fn prepare(&mut self) -> Result<()> {
        let (g, base) = shared_run_dir(&self.parent, "ior")?;
        self.rd = g;
        self.base = base;
        together()
    }
    fn cleanup(&mut self) -> Result<()> {
        let _ = fsbench_base::cluster::sync();
        match self.rd.take() {
            Some(rd) => rd.finish(self.a.keep),
            None => Ok(()),
        }
    }
    fn run_once(&mut self) -> Result<fsbench_results::stats::Results> {
        let a = self.a;
        let (rank, size) = (fsbench_base::cluster::rank(), fsbench_base::cluster::size());
        let mut rec = Recorder::new(IOR_OPS.len());
        let mut rng = <rand_pcg::Pcg64Mcg as rand::SeedableRng>::seed_from_u64(rank as u64 + 1);
        let mut buf = io::AlignedBuf::try_new(a.transfer_size as usize, &mut rng)
            .map_err(anyhow::Error::msg)?;
        let clock = fsbench_results::stats::clock::global();
        let mut figures = BTreeMap::new();
        let started = Started::now();
        let how = |write: bool| io::OpenHow {
            writeonly: write,
            readonly: !write,
            create: write,
            directio: a.direct,
            ..Default::default()
        };
        for (label, slot, write) in [("write", 0usize, true), ("read", 1usize, false)] {
            let target = if write || !a.read_other {
                rank
            } else {
                (rank + 1) % size
            };
            let (path, base_off) = self.place(target);
            let c = super::cpath(&path);
            together()?;
            let t0 = Instant::now();
            let fd = io::open(&c, how(write))
                .map_err(|e| anyhow::anyhow!("{label} {}: {e}", path.display()))?;
            let mut off = 0;
            while off < a.block_size && !fsbench_base::cancel::interrupted() {
                let c0 = clock.now();
                let r = if write {
                    io::pwrite(fd, buf.as_slice(), base_off + off)
                } else {
                    io::pread(fd, buf.as_mut_slice(), base_off + off)
                };
                match r {
                    Ok(n) if n > 0 => {
                        rec.ops[slot].record(clock.since(c0), n as u64);
                        off += n as u64;
                    }
                    Ok(_) => {
                        rec.ops[slot]
                            .error(|| format!("{label} {}: end of file at {off}", path.display()));
                        break;
                    }
                    Err(e) => {
                        rec.ops[slot].error(|| format!("{label} {}: {e}", path.display()));
                        break;
                    }
                }
            }
            if write && !a.no_fsync {
                io::fsync(fd)?;
            }
            io::close(fd)?;
            all_done()?;
            let s = t0.elapsed().as_secs_f64();
            figures.insert(format!("{label}_s"), s);
            figures.insert(
                format!("{label}_mib_per_s"),
                off as f64 / s.max(1e-9) / (1 << 20) as f64,
            );
        }
        Ok(finish(
            "ior",
            IOR_OPS,
            rec,
            started,
            &[
                ("block_size", a.block_size.to_string()),
                ("transfer_size", a.transfer_size.to_string()),
                ("shared_file", a.shared_file.to_string()),
                ("read_other", a.read_other.to_string()),
            ],
            &self.base,
            figures,
        ))
    }
}

pub fn ior(a: &IorArgs) -> Result<()> {
    if a.transfer_size == 0 || a.block_size == 0 {
        return Err(fsbench_base::exit::usage(
            "--block-size and --transfer-size must be at least 1 byte",
        ));
    }
    if !a.block_size.is_multiple_of(a.transfer_size) {
        return Err(fsbench_base::exit::usage(format!(
            "--transfer-size {} does not divide --block-size {}: IOR requires it to",
            a.transfer_size, a.block_size
        )));
    }
    if a.direct && !a.transfer_size.is_multiple_of(io::ALIGN as u64) {
        return Err(fsbench_base::exit::usage(format!(
            "--direct needs a transfer size that is a multiple of {} bytes",
            io::ALIGN
        )));
    }
    a.m.check()?;
    fsbench_base::limits::Machine::probe()
        .check_memory(
            a.transfer_size,
            &format!("--transfer-size {}", a.transfer_size),
        )
        .map_err(anyhow::Error::msg)?;
    let parent = fsbench_harness::measure::guard::target_dir(a.dir.as_deref())?;
    if let Some(free) = fsbench_engine::engine::free_space(&parent) {
        let need = a
            .block_size
            .saturating_mul(fsbench_base::cluster::size() as u64);
        if need > free {
            bail!(
                "the ranks would write {} but {} has {} free; lower --block-size",
                fsbench_base::units::human_bytes(need as f64),
                parent.display(),
                fsbench_base::units::human_bytes(free as f64)
            );
        }
    }
    let mut m = Ior {
        a,
        parent: parent.clone(),
        rd: None,
        base: parent,
    };
    fsbench_harness::measure::measure_and_report(&mut m, &a.m)?;
    Ok(())
}
