//! A block-I/O stream: reads and writes over a few named files, in fixed, ranged or split
//! block sizes, sequential or random (each block once per pass, or not), bounded by bytes,
//! passes, a count of I/Os or a time, with syncs every N writes. It is what a fio job
//! does; `fio::` maps a job onto one, and the engine runs it as one flowop
//! ([`super::FlowopKind::Stream`]) whose I/Os count under read, write and sync statistics.

use std::sync::Arc;

/// Block sizes of one direction.
#[derive(Debug, Clone, PartialEq)]
pub enum Sizes {
    Fixed(u64),
    /// A random multiple of `lo` in `lo..=hi`.
    Range(u64, u64),
    /// (size, percent) parts, drawn as fio draws them: a number 1..=100, the first part
    /// whose running sum of percentages reaches it, else the last part.
    Split(Vec<(u64, u32)>),
}

impl Sizes {
    pub fn max(&self) -> u64 {
        match self {
            Sizes::Fixed(b) => *b,
            Sizes::Range(_, hi) => *hi,
            Sizes::Split(p) => p.iter().map(|x| x.0).max().unwrap_or(0),
        }
    }
    pub fn min(&self) -> u64 {
        match self {
            Sizes::Fixed(b) => *b,
            Sizes::Range(lo, _) => *lo,
            Sizes::Split(p) => p.iter().map(|x| x.0).min().unwrap_or(0),
        }
    }
}

/// How random offsets are drawn (fio's `random_distribution`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Skew {
    Uniform,
    /// Block ranks from a Zipf distribution of exponent `theta` (Gray et al.'s method, as
    /// fio), scattered over the file by a multiplicative hash, shifted by a random or
    /// given (`center`, a fraction of the file) offset.
    Zipf {
        theta: f64,
        center: Option<f64>,
    },
    /// Pareto with parameter `h` (`h` of the blocks take `1 - h` of the I/O), scattered
    /// the same way.
    Pareto {
        h: f64,
        center: Option<f64>,
    },
    /// fio's `normal` (`lib/gauss.c`): the mean of 12 uniform draws over the ranges, moved
    /// by a uniform deviation of `dev` percent of them, scattered by the same hash and
    /// shifted by `center` (a fraction of the file, 0.5 meaning none).
    Normal {
        dev: f64,
        center: Option<f64>,
    },
    /// fio's `zoned` / `zoned_abs`: a zone drawn by its access share, then a block uniform
    /// in it; the zones of each direction are [`Stream::zones`]. Keeps the random map.
    Zoned,
}

/// One zone of fio's `zoned` (`zoned_abs`) distribution: the percentage of the accesses
/// that go to it, and its size, in percent of the file (in bytes for `zoned_abs`). The
/// zones follow one another from the start of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone {
    pub access: u32,
    pub size: u64,
}

/// The zones of one direction (none: uniform), and whether their sizes are bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Zones {
    pub abs: bool,
    pub parts: Vec<Zone>,
}

/// How a file's blocks are reserved before it is filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prealloc {
    None,
    /// `fallocate(fd, 0, 0, size)`: the size is set, the blocks allocated unwritten.
    Native,
    /// `posix_fallocate`.
    Posix,
    /// `fallocate` with `FALLOC_FL_KEEP_SIZE`.
    KeepSize,
}

/// One file of a stream, in the run directory under `name`.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamFile {
    pub name: String,
    /// Where the stream's I/O starts in the file, and how many bytes it covers.
    pub offset: u64,
    pub len: u64,
    /// How it is laid out before the measurement: created (an existing one removed),
    /// blocks reserved, and, when `fill`, extended to `offset + len` and written in
    /// `fill_bs` requests.
    pub prealloc: Prealloc,
    pub fill: bool,
    pub fill_bs: u64,
    /// Not laid out: the stream creates the file when it opens it (fio's
    /// `create_on_open`).
    pub create_on_open: bool,
    /// Synced once written at layout (fio's `create_fsync`, on by default): the job's
    /// `invalidate` then drops every cached page of it, where dirty pages would stay.
    pub create_fsync: bool,
    /// A file fsbench did not create (fio's `opendir`): `name` is its absolute path; it
    /// is not laid out, only read, and never removed.
    pub external: bool,
    /// A block device (`filename=/dev/X`), by its device number: `name` is its path; it
    /// is not laid out and never removed, and the engine touches it only after
    /// `fsbench_base::sys::device::guard` let it.
    pub device: Option<u64>,
}

impl StreamFile {
    /// The file's size once laid out (before the stream writes it).
    pub fn laid_size(&self) -> u64 {
        if self.create_on_open {
            return 0;
        }
        match (self.fill, self.prealloc) {
            (true, _) | (false, Prealloc::Native | Prealloc::Posix) => self.offset + self.len,
            _ => 0,
        }
    }
}

/// How fast a direction may go: fio's `rate` and `rate_iops` (linear pacing: the next I/O
/// waits until the bytes issued so far would have taken their time at the rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    None,
    /// Bytes per second.
    Bytes(u64),
    /// Microseconds per I/O.
    PerIo(u64),
}

/// fio's `rate_min` (bytes per second) or `rate_iops_min` of one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinRate {
    None,
    Bytes(u64),
    Iops(u64),
}

/// fio's strided zones (`zonesize`, `zonerange`, `zoneskip`): the I/O stays in a range of
/// `range` bytes until `size` bytes were done there, then moves on by `range + skip`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stride {
    pub size: u64,
    pub range: u64,
    pub skip: u64,
}

/// What a stream is.
#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    /// The files, served in turn: the next I/O goes to the next file (fio's round robin).
    pub files: Vec<StreamFile>,
    pub reads: bool,
    pub writes: bool,
    /// With both: the percentage of reads.
    pub read_pct: u32,
    pub random: bool,
    /// Bytes skipped after each sequential I/O.
    pub seq_skip: u64,
    /// Sequential I/O starts the file over at its end (fio: time based on one file, or a
    /// writing job with more to do than the file holds); otherwise the file is done.
    pub seq_wrap: bool,
    /// Read and write block sizes.
    pub bs: [Sizes; 2],
    /// Bytes a pass moves (reads and writes together), and how many passes.
    pub pass_bytes: u64,
    pub passes: u64,
    /// Stop after this many reads and writes per pass (0: no such bound).
    pub number_ios: u64,
    /// Go on until the run time ends, starting passes over as needed.
    pub time_based: bool,
    /// This stream's own time limit in ns (0: the run's).
    pub runtime_ns: u64,
    /// Drop the files' cached pages when a pass opens them (fio's `invalidate`).
    pub invalidate: bool,
    /// Advise the kernel of the pattern (random: no readahead) at open (`fadvise_hint`).
    pub fadvise_hint: bool,
    /// How random offsets are drawn; a skewed one keeps no random map (as fio).
    pub skew: Skew,
    /// fio's strided zones, when `zonesize` is given.
    pub stride: Option<Stride>,
    /// With [`Skew::Zoned`], the zones of reads and writes.
    pub zones: [Zones; 2],
    /// Random offsets cover each block once per pass (fio's random map).
    pub random_map: bool,
    /// The seed of the offsets, sizes and directions; `None`: from the run seed.
    pub seed: Option<u64>,
    pub fsync_every: u64,
    pub fdatasync_every: u64,
    pub end_fsync: bool,
    pub fsync_on_close: bool,
    pub direct: bool,
    pub osync: bool,
    pub dsync: bool,
    /// `lseek` then `read`/`write` instead of `pread`/`pwrite`.
    pub lseek: bool,
    /// fio's `ioengine=mmap`: copies to and from a shared mapping of each file.
    pub mmap: bool,
    /// Through io_uring with up to this many I/Os in flight (0: synchronous calls).
    pub depth: u32,
    /// fio's `iodepth_batch_submit` (0: the depth), `iodepth_batch_complete_min` and
    /// `iodepth_batch_complete_max` (below the min: the min).
    pub batch: [u32; 3],
    /// io_uring's `hipri` (a polled ring), `fixedbufs` (registered buffers, read and
    /// written with the fixed opcodes) and `registered_files` (registered descriptors).
    pub uring_opts: [bool; 3],
    /// Pacing of reads and writes.
    pub pace: [Pace; 2],
    /// fio's `rate_process=poisson`: the gaps between I/Os are exponential with the
    /// rate's mean (at the smallest block size), not even.
    pub poisson: bool,
    /// What written blocks hold (fio's `buffer_compress_percentage`, `dedupe_percentage`),
    /// the compressible part laid out per `compress_chunk` bytes; `None`: random data.
    pub content: Option<crate::content::Content>,
    pub compress_chunk: u32,
    /// Without a content setting: stamp each 512-byte sector of a write with its offset
    /// and the time, as fio's `scramble_buffers` (its default), so that blocks differ.
    pub scramble: bool,
    /// fio's `verify` (its block format, `crate::fioverify`): writes carry fio's headers
    /// and checksums, reads check them; with `do_verify`, what a pass wrote is read back
    /// after it (or after every `verify_backlog` writes); the first bad read ends the
    /// stream, as fio ends the job; `verify_fatal` stops checking a read at its first bad
    /// interval.
    pub verify: Option<crate::fioverify::Spec>,
    pub do_verify: bool,
    pub verify_backlog: u64,
    pub verify_fatal: bool,
    /// Remove the files when the stream ends (fio's `unlink`).
    pub unlink: bool,
    /// Sleep this many µs after every `think_blocks` I/Os.
    pub think_us: u64,
    pub think_blocks: u64,
    /// Of the think time, this many µs spent spinning (fio's `thinktime_spin`).
    pub think_spin_us: u64,
    /// The least rate of reads and writes (fio's `rate_min`, `rate_iops_min`), checked
    /// every `ratecycle_ms` after two seconds: below it the stream fails.
    pub rate_min: [MinRate; 2],
    pub ratecycle_ms: u64,
    /// Statistics of its reads, writes, fsyncs every N writes, fdatasyncs every N writes,
    /// and the syncs at the end (`end_fsync`, `fsync_on_close`).
    pub stat_read: usize,
    pub stat_write: usize,
    pub stat_sync: usize,
    pub stat_datasync: usize,
    pub stat_end_sync: usize,
    /// How long the stream ran, from its first I/O to its end, less its ramp: one sample
    /// per thread (not an I/O; reports in fio's shape take it as the job's runtime).
    pub stat_time: usize,
    pub ramp_ns: u64,
    /// Wait this long (after what it waits for) before starting (fio's `startdelay`).
    pub start_delay_ns: u64,
    /// The job this stream is a clone of (its index in the job file), and what it waits
    /// for before it starts: (job, clones) whose every clone must have ended.
    pub job: usize,
    pub wait: Vec<(usize, u32)>,
    /// What fio's reports and logs need to know of the job this stream runs.
    pub out: Arc<FioOut>,
    /// How the clone's thread runs and ends beyond its I/O (fio's run options).
    pub ctl: Ctl,
}

/// What a fio job asks of its clone's thread beyond the I/O itself: fresh data in every
/// write (`refill_buffers`), ending with the jobs of its group (`exitall`), going past
/// errors (`continue_on_error`), the queue's low-water mark (`iodepth_low`), its CPUs and
/// priorities (`cpus_allowed`, `nice`, `prio`/`prioclass`), and its verify phase
/// (`verify_only`, `verify_backlog_batch`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ctl {
    /// Fill every write's buffer anew with random data (fio's `refill_buffers`).
    pub refill: bool,
    /// The jobs (indexes) whose first clone to end ends this stream too (fio's `exitall`:
    /// every job of its group); empty without `exitall`.
    pub exit_with: Vec<usize>,
    /// The errors the stream counts and goes past, fio's `continue_on_error` bits (1
    /// reads, 2 writes, 4 verify); fio's non-fatal errors only (EIO, EILSEQ).
    pub continue_on: u8,
    /// With io_uring: once every slot is busy, reap until no more than this many are in
    /// flight (fio's `iodepth_low`; the depth by default: one reaping).
    pub depth_low: u32,
    /// The CPUs the clone's thread may run on (empty: as it is).
    pub cpus: Vec<usize>,
    /// fio's `nice` (an increment to the thread's nice value), and its I/O priority
    /// (class, level) from `prioclass` and `prio`.
    pub nice: i32,
    pub ioprio: Option<(u32, u32)>,
    /// fio's `verify_only`: the writes are planned (offsets, seeds, numbers) but not
    /// done, and read back and checked: data an earlier run of the job wrote.
    pub verify_only: bool,
    /// fio's `verify_backlog_batch`: blocks read back each time the backlog is reached
    /// (0: the whole backlog).
    pub verify_batch: u64,
    /// fio's `verify_dump`: a bad block's data as read and as written, into files in
    /// the current directory.
    pub verify_dump: bool,
    /// fio's `verify_async`: this many threads check what the stream reads (0: the
    /// stream's own thread does).
    pub verify_async: u32,
    /// fio's `ioscheduler`: the scheduler the device under the job's files runs under
    /// for the run (set back after), with the option's place (`file:line:col`) for the
    /// engine's refusal when fsbench did not make that device.
    pub scheduler: Option<(String, String)>,
}

/// A fio job's reporting: its name, group and number, the percentiles it reports, the
/// logs it writes, and its options as fio's JSON lists them.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FioOut {
    pub jobname: String,
    /// `groupid`: 0, then one more at each `stonewall` or `new_group`.
    pub group: u32,
    /// fio's `thread_number`: the clone's place among all the file's clones, from 1
    /// (the number in log file names).
    pub thread_number: u32,
    /// `percentile_list` (fio's 17 by default), and which latencies get percentiles:
    /// `clat_percentiles` (on), `lat_percentiles`, `slat_percentiles` (off).
    pub percentiles: Vec<f64>,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    /// `write_bw_log`, `write_lat_log`, `write_iops_log` prefixes; `log_avg_msec`,
    /// `log_max_value`, `log_offset`.
    pub bw_log: Option<String>,
    pub lat_log: Option<String>,
    pub iops_log: Option<String>,
    pub log_avg_ms: u64,
    pub log_max: bool,
    pub log_offset: bool,
    /// `bw_avg_time` and `iops_avg_time` (500 ms): the interval of the bandwidth and IOPS
    /// samples.
    pub bw_avg_ms: u64,
    pub iops_avg_ms: u64,
    /// The options of the job's own section and of the `[global]` sections before it, as
    /// given (fio's `job options` and `global options`).
    pub options: Vec<(String, String)>,
    pub globals: Vec<(String, String)>,
    /// fio's header line of the job: its pattern, block sizes, engine and depth.
    pub header: String,
    pub iodepth: u32,
    /// fio's `disable_lat`, `disable_clat`, `disable_slat` and `disable_bw_measurement`
    /// (all with `gtod_reduce`): those latencies, and the bandwidth and IOPS samples, are
    /// not recorded.
    #[serde(default)]
    pub no_lat: bool,
    #[serde(default)]
    pub no_clat: bool,
    #[serde(default)]
    pub no_slat: bool,
    #[serde(default)]
    pub no_bw: bool,
    /// `continue_on_error` was set: the reports add the error count and the first error
    /// (fio's `total_err`, `first_error`).
    #[serde(default)]
    pub continue_on_error: bool,
    /// The job's I/O priority class is realtime (`prioclass=1`): fio's logs say so.
    #[serde(default)]
    pub prio_rt: bool,
}

impl FioOut {
    /// The log files this clone writes, as fio names them: (`bw`, `iops`, `slat`, `clat` or
    /// `lat`, file name `PREFIX_KIND.N.log`, N the clone's `thread_number`). One list for
    /// `fsbench check`'s explanation, the check before a run that they can be written, and
    /// the writing after it.
    pub fn log_files(&self) -> Vec<(&'static str, String)> {
        let n = self.thread_number;
        let mut files = Vec::new();
        let mut add = |prefix: &Option<String>, kinds: &[&'static str]| {
            if let Some(p) = prefix {
                files.extend(kinds.iter().map(|k| (*k, format!("{p}_{k}.{n}.log"))));
            }
        };
        add(&self.bw_log, &["bw"]);
        add(&self.iops_log, &["iops"]);
        // fio sets up no log of a latency it does not measure (`disable_*lat`).
        let lat: Vec<&'static str> = [
            ("slat", self.no_slat),
            ("clat", self.no_clat),
            ("lat", self.no_lat),
        ]
        .into_iter()
        .filter_map(|(k, off)| (!off).then_some(k))
        .collect();
        add(&self.lat_log, &lat);
        files
    }
}

/// fio's default `percentile_list`.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

impl Stream {
    /// The largest block either direction uses.
    pub fn max_bs(&self) -> u64 {
        self.bs[0].max().max(self.bs[1].max())
    }
}
