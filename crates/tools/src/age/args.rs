//! What `fsbench age` is asked: its arguments, and the names its parts share.

use super::exec::{self, Writeback, WritebackPolicy};
use super::record;
use std::path::PathBuf;

/// Name of the aged directory fsbench creates under DIR.
pub const AGED_DIR: &str = "fsbench-aged";

/// Arguments of `fsbench age`.
#[derive(clap::Args, Debug)]
pub struct AgeArgs {
    /// Directory on the file system to age; fsbench works in DIR/fsbench-aged/
    /// (created and marked, or continued if it carries fsbench's marker).
    pub dir: PathBuf,
    /// Target fullness of the file system, as df counts it (used / (used + available)).
    #[arg(long, default_value_t = 0.8)]
    pub fill: f64,
    /// Seed: the same seed and starting state give the same operations.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Built-in aging profile (see the list in the error for an unknown name).
    #[arg(long, default_value = "agrawal", conflicts_with = "from_snapshot")]
    pub profile: String,
    /// Age towards the population of a tree scanned with `fsbench scan -o`.
    #[arg(long, value_name = "SNAPSHOT")]
    pub from_snapshot: Option<PathBuf>,
    /// Stop after N churn operations once the target fullness is reached.
    #[arg(long, value_name = "N")]
    pub ops: Option<u64>,
    /// Stop once every distance (total variation) is below --threshold.
    #[arg(long)]
    pub until_converged: bool,
    /// Convergence threshold for --until-converged (total variation; the
    /// age dimension settles around 0.05-0.1 with the published profiles).
    #[arg(long, default_value_t = 0.1)]
    pub threshold: f64,
    /// When what aging writes reaches the file system's block allocator. ext4 and xfs
    /// allocate at writeback (delayed allocation); left to the kernel (`none`), most of the
    /// churn is created and deleted in the page cache before any block is allocated, and the
    /// survivors are allocated late in big batches, so the aged layout depends on the host's
    /// memory, dirty-page settings and speed. `range` (the default) starts writeback of every
    /// write's range right after it, in aging's thread, so blocks are allocated in operation
    /// order, as a file system that allocates on write (FFS) did; it costs about a third more
    /// time than `none`, against several times more for `fsync` (a journal commit per write).
    #[arg(long, value_enum, default_value_t = Writeback::Range, alias = "fsync")]
    pub writeback: Writeback,
    /// Operations between two commits (`syncfs`) under `range` and `syncfs` (0: only at the
    /// end). Freed blocks become reusable when the journal commits; committing in aging's own
    /// time, well inside the file system's commit interval (5 s), keeps that out of the
    /// host's hands too.
    #[arg(long, default_value_t = exec::COMMIT_EVERY, value_name = "N")]
    pub commit_every: u64,
    /// Operations in a simulated day: progress is shown per day, and the hot-file benchmark
    /// (`fsbench hot`) takes the files the last days changed. The default is the published
    /// aging workload's rate (about 1.3 million operations in seven months).
    #[arg(long, default_value_t = record::DAY_OPS, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub day_ops: u64,
    /// The days the report's record of recent files looks back (the files `fsbench hot
    /// --days N` reads and overwrites): the published study's 30 by default.
    #[arg(long, default_value_t = HOT_DAYS, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub hot_days: u64,
    /// Show the layout score (FIEMAP, not synced) in the progress every N days (0: never).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub layout_every: u64,
    /// Write every operation to FILE, one line each.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Smith–Seltzer replay: recreate the first snapshot's tree, then apply
    /// the creates, deletes and changes between each pair of consecutive
    /// snapshots.
    #[arg(long, value_name = "SNAPSHOT", num_args = 1.., conflicts_with_all = ["from_snapshot", "until_converged"])]
    pub replay_snapshots: Vec<PathBuf>,
    /// In replay, short-lived files created and deleted between two
    /// snapshots (per interval), beside the files created there.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub short_lived: u64,
    /// Write the report as JSON to FILE ("-" for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress lines.
    #[arg(short, long)]
    pub quiet: bool,
    /// Threads issuing the operations (profile aging only). One plans every operation in
    /// order, as with one thread; the operations in directory number d go to thread d % N,
    /// and directories are made before any operation in them is handed out, so a seed gives
    /// the same tree (names, sizes, content) whatever N. Only a full file system (short
    /// writes reach the plan later) can make the trees differ.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256), conflicts_with_all = ["replay_snapshots", "next_version"])]
    pub threads: u32,
    /// Write a next version of the tree SRC (SRC is only read) into a new marked directory
    /// DIR/fsbench-next-version-<unique>/tree/, with --keep of its files unchanged.
    #[arg(long, value_name = "SRC", requires = "keep", conflicts_with_all = ["from_snapshot", "replay_snapshots", "until_converged", "ops"])]
    pub next_version: Option<PathBuf>,
    /// With --next-version: share of files kept unchanged (the new tree's "files same", 0..1).
    #[arg(long, value_name = "F", requires = "next_version")]
    pub keep: Option<f64>,
    /// With --next-version: share of SRC's bytes the kept files hold (0..1): the kept files
    /// are chosen to hold it, and each added file takes a removed file's size.
    #[arg(long, value_name = "B", requires = "keep")]
    pub keep_bytes: Option<f64>,
    /// With --next-version: share of the other files edited in place; the rest are removed
    /// and as many new files added.
    #[arg(
        long,
        value_name = "F",
        default_value_t = 0.5,
        requires = "next_version"
    )]
    pub edit_share: f64,
}

impl fsbench_base::export::check::Outputs for AgeArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        vec![
            named(self.log.as_deref(), "--log"),
            named(self.json.as_deref(), "--json"),
        ]
    }
}

impl AgeArgs {
    /// The writeback policy these arguments ask for.
    pub fn writeback(&self) -> WritebackPolicy {
        WritebackPolicy {
            policy: self.writeback,
            commit_every: self.commit_every,
        }
    }
}

/// The days the hot-file benchmark looks back by default (the published study's "files
/// modified in the last 30 days").
pub const HOT_DAYS: u64 = 30;
