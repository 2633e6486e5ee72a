//! `fsbench selftest`: its subcommands and their arguments; each measures one part of
//! fsbench against a bare reference in alternating rounds.

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;

fn parse_size_arg(s: &str) -> Result<u64, String> {
    fsbench_base::units::parse_size(s)
}

#[derive(Args)]
pub struct SelftestArgs {
    #[command(subcommand)]
    what: SelftestWhat,
}

#[derive(Subcommand)]
pub enum SelftestWhat {
    /// Measure fsbench's own overhead: the engine against bare loops of the same system calls.
    Overhead {
        /// Seconds per measured round.
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
        /// Rounds per case (engine and bare loop alternate).
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Directory for the test file (default /dev/shm, a tmpfs).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Size of the file the random reads cover (K, M, G): the overhead grows with it,
        /// so the default is the size of `randomread`-like runs users make.
        #[arg(long, default_value = "256M", value_parser = parse_size_arg)]
        size: u64,
    },
    /// Measure how fast fsbench lays a fileset out against a bare loop creating the same
    /// files (one writer, and one per core).
    Layout {
        /// Files per round.
        #[arg(long, default_value_t = 20_000)]
        files: u64,
        /// Size of each file (K, M, G).
        #[arg(long, default_value = "16K", value_parser = parse_size_arg)]
        size: u64,
        /// Rounds per case (the cases alternate).
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Directory to lay out in (default: the system's temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Measure how fast `fsbench scan` walks a generated tree against `find -printf`.
    Scan {
        /// Entries of the generated tree.
        #[arg(long, default_value_t = 200_000)]
        entries: u64,
        /// Rounds per tool (they alternate).
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Drop the kernel's caches before every round (root).
        #[arg(long)]
        cold: bool,
        /// Directory to make the tree in (default: the system's temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The scan's worker threads (`scan -j`; default: its own default).
        #[arg(long, value_name = "N")]
        walkers: Option<usize>,
    },
    /// Measure `fsbench age` against a bare loop issuing the same operations, on a fresh
    /// RAM-backed ext4 loop image each round (root).
    Age {
        /// Size of the image (M, G); `--size 512M --ops 100000` is the full-size run.
        #[arg(long, default_value = "128M", value_parser = parse_size_arg)]
        size: u64,
        /// Target fullness of the image.
        #[arg(long, default_value_t = 0.8)]
        fill: f64,
        /// Churn operations after the fill.
        #[arg(long, default_value_t = 10_000)]
        ops: u64,
        /// Rounds per case (the cases alternate).
        #[arg(long, default_value_t = 3)]
        rounds: u32,
        /// Threads of the parallel case (`age --threads N`; 1 leaves it out).
        #[arg(long, default_value_t = 2)]
        threads: u32,
        /// Seed of the aging.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Directory for the image's backing file (default /dev/shm, so the image is in RAM).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Measure how fast the data generator fills buffers (GB/s on one core) per content kind.
    Content {
        /// MiB generated per kind.
        #[arg(long, default_value_t = 2048)]
        mib: usize,
    },
}

/// `--dir`, or `default`: an existing directory (a FIFO there would hold the selftest in
/// its open for ever; it is refused, saying what it is).
fn target(dir: &Option<PathBuf>, default: PathBuf) -> Result<PathBuf> {
    fsbench_harness::measure::guard::target_dir(Some(&dir.clone().unwrap_or(default)))
}

/// `fsbench selftest ...`.
pub fn run(a: &SelftestArgs) -> Result<()> {
    // Each selftest makes trees, files or images: a signal stops it and removes them.
    fsbench_base::cancel::install_signal_handlers();
    match &a.what {
        SelftestWhat::Overhead {
            seconds,
            rounds,
            dir,
            size,
        } => {
            let dir = target(dir, PathBuf::from("/dev/shm"))?;
            let report =
                fsbench_engine::engine::selftest::overhead(&dir, *seconds, *rounds, *size)?;
            fsbench_base::out!("{report}");
            Ok(())
        }
        SelftestWhat::Layout {
            files,
            size,
            rounds,
            dir,
        } => {
            let dir = target(dir, std::env::temp_dir())?;
            let report =
                fsbench_engine::engine::selftest_layout::layout(&dir, *files, *size, *rounds)?;
            fsbench_base::out!("{report}");
            Ok(())
        }
        SelftestWhat::Scan {
            entries,
            rounds,
            cold,
            dir,
            walkers,
        } => {
            let dir = target(dir, std::env::temp_dir())?;
            let report = fsbench_engine::engine::selftest_scan::scan(
                &dir, *entries, *rounds, *cold, *walkers,
            )?;
            fsbench_base::out!("{report}");
            Ok(())
        }
        SelftestWhat::Age {
            size,
            fill,
            ops,
            rounds,
            threads,
            seed,
            dir,
        } => {
            if !(0.0..=0.95).contains(fill) {
                bail!("--fill {fill} is outside 0.0..0.95");
            }
            let o = fsbench_tools::age::selftest::Options {
                dir: target(dir, PathBuf::from("/dev/shm"))?,
                mib: (*size >> 20).max(16),
                fill: *fill,
                ops: *ops,
                rounds: (*rounds).max(1),
                threads: *threads,
                seed: *seed,
            };
            fsbench_base::out!("{}", fsbench_tools::age::selftest::age(&o)?);
            Ok(())
        }
        SelftestWhat::Content { mib } => {
            fsbench_base::out!("{}", fsbench_model::content::speed_report(*mib << 20));
            Ok(())
        }
    }
}
