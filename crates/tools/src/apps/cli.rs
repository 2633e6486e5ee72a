//! Command-line options of the application benchmarks, parsed once into plain structs.

use clap::{Args, ValueEnum};
use fsbench_harness::measure::MeasureArgs;
use std::path::PathBuf;

/// `fsbench postmark [CONFIG]`.
#[derive(Args, Debug, Clone, Default)]
pub struct PostmarkArgs {
    /// A PostMark configuration file (`set ...`, `run`, `quit`), read unchanged. Without one,
    /// or when it has no `run`, one run with the settings below follows.
    pub config: Option<PathBuf>,
    /// Number of files in the pool (PostMark `set number`).
    #[arg(long)]
    pub number: Option<u32>,
    /// File sizes: LOW or LOW,HIGH in bytes (PostMark `set size`).
    #[arg(long, value_name = "LOW[,HIGH]")]
    pub size: Option<String>,
    /// Number of transactions (PostMark `set transactions`).
    #[arg(long)]
    pub transactions: Option<u32>,
    /// Read block size in bytes (PostMark `set read`).
    #[arg(long)]
    pub read: Option<u32>,
    /// Write block size in bytes (PostMark `set write`).
    #[arg(long)]
    pub write: Option<u32>,
    /// Chance in tenths of read over append, -1 disables (PostMark `set bias read`).
    #[arg(long, allow_hyphen_values = true)]
    pub bias_read: Option<i32>,
    /// Chance in tenths of create over delete, -1 disables (PostMark `set bias create`).
    #[arg(long, allow_hyphen_values = true)]
    pub bias_create: Option<i32>,
    /// Number of subdirectories (PostMark `set subdirectories`).
    #[arg(long)]
    pub subdirectories: Option<u32>,
    /// Buffered (C-library-like) I/O: true or false (PostMark `set buffering`).
    #[arg(long)]
    pub buffering: Option<bool>,
    /// Seed of the Mersenne Twister (PostMark `set seed`).
    #[arg(long)]
    pub seed: Option<u32>,
    /// Directory to work in (PostMark `set location`; also the default for --dir).
    #[arg(long)]
    pub location: Option<PathBuf>,
    /// Report format: verbose or terse (PostMark `set report`).
    #[arg(long)]
    pub report: Option<String>,
    /// Allow a location inside a system directory (/etc, /usr, /var/lib, ...), which is
    /// otherwise refused.
    #[arg(long)]
    pub force_location: bool,
    /// Concurrent copies, each in its own subdirectory with the same configuration. Instance
    /// i uses seed + i (wrapping at 2^32), so instances do different transactions; see
    /// --same-seed.
    #[arg(long, default_value_t = 1)]
    pub instances: u32,
    /// Give every instance the configured seed itself (identical transactions).
    #[arg(long)]
    pub same_seed: bool,
    /// Where fsbench creates its run directory when the configuration names no location
    /// (default: $TMPDIR).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Keep the run directory (the pool is still deleted, as PostMark does).
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub m: MeasureArgs,
}

/// `fsbench andrew`.
#[derive(Args, Debug, Clone)]
pub struct AndrewArgs {
    /// Copies of the source tree each client makes.
    #[arg(long, default_value_t = 1)]
    pub copies: u32,
    /// Concurrent clients, each in its own directory.
    #[arg(long, default_value_t = 1)]
    pub clients: u32,
    /// Directory in which fsbench creates its run directory (default: $TMPDIR).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// C compiler for the compile phase (default: cc, then gcc, then clang).
    #[arg(long)]
    pub cc: Option<String>,
    /// Skip the compile phase.
    #[arg(long)]
    pub no_compile: bool,
    /// Multiply every generated file's size by K (the tree is about 190 KB at 1), so that
    /// the stat, scan and compile phases can outgrow the page cache.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub scale: u32,
    /// Before each phase after the first, sync and drop the page, dentry and inode caches
    /// (needs root), so every phase starts cold.
    #[arg(long)]
    pub drop_caches_between_phases: bool,
    /// Seed for the generated source tree.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep the run directory afterwards.
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub m: MeasureArgs,
}

/// `fsbench find`.
#[derive(Args, Debug, Clone)]
pub struct FindArgs {
    /// Directory to walk.
    pub dir: PathBuf,
    /// Walker threads (1 walks like `find`).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Descend into other file systems mounted below DIR.
    #[arg(long)]
    pub cross_mounts: bool,
    #[command(flatten)]
    pub m: MeasureArgs,
}

/// `fsbench build`.
#[derive(Args, Debug, Clone)]
pub struct BuildArgs {
    /// Build over this existing source tree instead of a generated one: every `.c`, `.cc`,
    /// `.cpp`, `.cxx`, `.S`, `.s` and `.rs` file is a compile job, every `.h`/`.hpp` a
    /// header. DIR is only read; objects and output go to the run directory.
    #[arg(long, value_name = "DIR")]
    pub src: Option<PathBuf>,
    /// Source files (one compile job each).
    #[arg(long, default_value_t = 200)]
    pub files: u32,
    /// Directories the sources are spread over.
    #[arg(long, default_value_t = 10)]
    pub dirs: u32,
    /// Concurrent jobs.
    #[arg(short = 'j', long = "jobs", default_value_t = 2)]
    pub jobs: u32,
    /// Shared headers; each job reads `--headers-per-job` of them.
    #[arg(long, default_value_t = 20)]
    pub headers: u32,
    /// Headers each compile job reads (chosen with --seed from the shared ones).
    #[arg(long, default_value_t = 5)]
    pub headers_per_job: u32,
    /// Mean source file size in bytes (sizes vary from half to one and a half times it).
    #[arg(long, default_value_t = 8192)]
    pub source_size: u64,
    /// Source sizes with a heavy tail, as in a kernel tree: log-normal (σ = 1) with mean
    /// about --source-size, from 64 bytes to 16 times it, instead of uniform.
    #[arg(long)]
    pub heavy_tail: bool,
    /// CPU burnt per job, in milliseconds.
    #[arg(long, default_value_t = 5)]
    pub cpu_ms: u64,
    /// Temporary files each job writes and deletes.
    #[arg(long, default_value_t = 2)]
    pub temps: u32,
    /// Directory in which fsbench creates its run directory (default: $TMPDIR).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Seed for the generated tree (sizes, includes) and for the headers each job reads.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Keep the run directory (tree, objects and output) afterwards.
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub m: MeasureArgs,
}

/// In which order `fsbench read` reads the files.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadOrder {
    /// By path name (as `find | sort`).
    #[default]
    Name,
    /// By inode number (close to on-disk order on many file systems).
    Inode,
    /// Shuffled with --seed.
    Random,
}

/// `fsbench read`.
#[derive(Args, Debug, Clone)]
pub struct ReadArgs {
    /// Directory whose files are read (only read; nothing is written there).
    pub dir: PathBuf,
    /// Reader threads, taking files in order.
    #[arg(short = 'j', long = "jobs", default_value_t = 1)]
    pub jobs: u32,
    /// Order in which the files are read.
    #[arg(long, value_enum, default_value_t = ReadOrder::Name)]
    pub order: ReadOrder,
    /// Request size in bytes.
    #[arg(long, default_value_t = 1 << 20)]
    pub block: usize,
    /// Seed for --order random.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Descend into other file systems mounted below DIR.
    #[arg(long)]
    pub cross_mounts: bool,
    #[command(flatten)]
    pub m: MeasureArgs,
}

fsbench_harness::outputs_of_measurement!(PostmarkArgs, AndrewArgs, FindArgs, BuildArgs, ReadArgs);
