//! [`Results`]: the one value every report reads. Serialized as JSON it is fsbench's
//! interchange format (documented in docs/results.md); `schema_version` changes when a field
//! changes meaning or disappears.

use super::{OpRecorder, Recorder};
use fsbench_model::model::{FlowopKind, IoClass};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Latency {
    pub mean: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub p99_99: f64,
    pub max: f64,
}

impl Latency {
    /// From a recorder and its histogram (`o.hist` made whole) in nanoseconds, to
    /// microseconds.
    pub fn from_recorder(o: &OpRecorder, h: &hdrhistogram::Histogram<u64>) -> Latency {
        if o.count == 0 {
            return Latency::default();
        }
        let q = |p: f64| h.value_at_quantile(p) as f64 / 1000.0;
        Latency {
            mean: o.lat_sum_ns as f64 / o.count as f64 / 1000.0,
            min: h.min() as f64 / 1000.0,
            p50: q(0.5),
            p90: q(0.9),
            p95: q(0.95),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
            max: h.max() as f64 / 1000.0,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FlowopResult {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// "read", "write", "meta" or "none": how the flowop counts in the IO summary.
    pub io_class: String,
    pub ops: u64,
    pub ops_per_s: f64,
    pub bytes: u64,
    pub mb_per_s: f64,
    pub latency_us: Latency,
    pub errors: u64,
    /// Times the flowop found no file or directory in the state it needed.
    pub no_resource: u64,
    /// Times the flowop passed over its file without an operation, as Filebench does: a
    /// `deletefile` whose file another thread has open (or, with `fd=N`, deleted first).
    #[serde(default)]
    pub skipped: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub first_error: Option<String>,
    /// CPU (user + system) per operation, in microseconds: each thread's CPU time shared
    /// among its flowops in proportion to the time they took.
    #[serde(default)]
    pub cpu_us_per_op: f64,
    /// The latency histogram, mergeable: `[value_ns, count]` for every non-empty bucket
    /// (value = the bucket's highest equivalent value, 3 significant digits).
    #[serde(default)]
    pub histogram_ns: Vec<[u64; 2]>,
    /// `aiowrite` only: its operations are submissions (as Filebench counts them); these are
    /// the writes reaped and their mean time from submission to completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aio: Option<AioCompletions>,
    /// With `--cache-stat`, a flowop of buffered reads: the pages read, and of those the
    /// pages the page cache held when each read began (cachestat(2)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_cache: Option<PageCache>,
    /// Writes with `compress=`/`dedupe=`/`content=` (on the flowop or its fileset): what was
    /// asked and what a sample of the written data achieved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<fsbench_model::content::ContentReport>,
    /// With `--verify`: what the flowop's reads checked and found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<fsbench_model::verify::VerifyResult>,
    /// Over NFS with `--nfs-rpcs` or a dialled network: the calls the flowop made, per
    /// procedure, most called first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rpcs: Vec<super::rpcs::RpcResult>,
}

/// The page cache as a flowop's buffered reads met it (`--cache-stat`).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct PageCache {
    /// Pages the reads read.
    pub pages: u64,
    /// Of those, pages in the page cache when their read began.
    pub cached: u64,
    /// `cached` ÷ `pages`, in percent.
    pub hit_pct: f64,
}

impl PageCache {
    pub fn new(pages: u64, cached: u64) -> PageCache {
        PageCache {
            pages,
            cached,
            hit_pct: if pages > 0 {
                100.0 * cached as f64 / pages as f64
            } else {
                0.0
            },
        }
    }
}

/// Completions of an `aiowrite` flowop's asynchronous writes.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct AioCompletions {
    pub completions: u64,
    pub completion_mean_us: f64,
}

/// One time-series sample: rates over the interval that ended at `t_s`.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct SeriesPoint {
    /// Seconds since measurement started.
    pub t_s: f64,
    pub ops_per_s: f64,
    pub mb_per_s: f64,
    /// Per flowop, in the order of `flowops`.
    pub flowops: Vec<SeriesFlowop>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct SeriesFlowop {
    pub ops_per_s: f64,
    pub mb_per_s: f64,
    #[serde(default)]
    pub mean_us: f64,
    pub p99_us: f64,
}

/// A time-series point from per-flowop interval counts and histograms; the point's own rates
/// count the flowops marked in `counted` (those of the IO summary).
pub fn series_point(
    t: f64,
    dt: f64,
    ops: &[u64],
    bytes: &[u64],
    hists: &[super::loghist::LogHist],
    counted: &[bool],
) -> SeriesPoint {
    let flowops: Vec<SeriesFlowop> = (0..ops.len())
        .map(|i| SeriesFlowop {
            ops_per_s: ops[i] as f64 / dt,
            mb_per_s: bytes[i] as f64 / dt / (1024.0 * 1024.0),
            mean_us: if hists[i].is_empty() {
                0.0
            } else {
                hists[i].mean() / 1000.0
            },
            p99_us: if hists[i].is_empty() {
                0.0
            } else {
                hists[i].quantile(0.99) as f64 / 1000.0
            },
        })
        .collect();
    SeriesPoint {
        t_s: t,
        ops_per_s: ops
            .iter()
            .zip(counted)
            .filter(|(_, c)| **c)
            .map(|(o, _)| o)
            .sum::<u64>() as f64
            / dt,
        mb_per_s: bytes
            .iter()
            .zip(counted)
            .filter(|(_, c)| **c)
            .map(|(b, _)| b)
            .sum::<u64>() as f64
            / dt
            / (1024.0 * 1024.0),
        flowops,
    }
}

/// Facts about the machine and the target, recorded with every result.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Host {
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cpus: usize,
    pub memory_bytes: u64,
    pub target_dir: String,
    pub fs_type: String,
    pub mount_point: String,
    pub mount_options: String,
    pub device: String,
    pub io_scheduler: String,
    pub free_bytes: u64,
    /// The kernel's proactive reclaim running during the run (DAMON pageout: it evicts
    /// cached pages without memory pressure), or empty.
    #[serde(default)]
    pub proactive_reclaim: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Summary {
    /// Operations of IO flowops (reads, writes and metadata operations), as Filebench's IO
    /// Summary counts them.
    pub ops: u64,
    pub ops_per_s: f64,
    pub read_ops_per_s: f64,
    pub write_ops_per_s: f64,
    pub mb_per_s: f64,
    /// Mean latency over those operations, in milliseconds.
    pub mean_latency_ms: f64,
    pub errors: u64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// CPU (user + system, all threads) per IO-summary operation, in microseconds.
    #[serde(default)]
    pub cpu_us_per_op: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct LayoutResult {
    pub dirs: u64,
    pub files_written: u64,
    pub files_reused: u64,
    pub bytes_written: u64,
    pub seconds: f64,
    /// Per fileset, the achieved compress and dedupe shares of a sample of the laid-out data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<fsbench_model::content::ContentReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Results {
    pub schema_version: u32,
    pub fsbench_version: String,
    pub workload: String,
    /// Where the workload text came from (a path or `builtin:NAME`).
    pub workload_source: String,
    /// Every variable's final value.
    pub variables: BTreeMap<String, String>,
    pub seed: u64,
    /// The run directory the filesets lived in.
    pub run_dir: String,
    /// Seconds since the Unix epoch when measurement started.
    pub started_at: f64,
    pub duration_s: f64,
    /// True when the run was stopped early by Ctrl-C.
    pub interrupted: bool,
    /// Why a timed run ended before its duration (a full file system, an exhausted
    /// fileset, its threads finishing), with the time it ran; absent when it ran its time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_early: Option<String>,
    /// What the block device under the measured directory read during the measurement
    /// (its sector count in /sys/block/DEV/stat, × 512); absent when there is no block
    /// device (tmpfs, overlay, a remote). For a workload, its measured window after the warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_read_bytes: Option<u64>,
    /// The seconds the same device was busy over the same window (`io_ticks`, the tenth
    /// field of its `stat`: time with at least one request in flight); divided by
    /// `duration_s` it is the disk's utilisation, the figure `device_util`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_busy_s: Option<f64>,
    /// The machine's busy CPU seconds over the same window, every CPU's summed (`/proc/stat`:
    /// user, nice, system, irq, softirq, steal); divided by `duration_s` × `host.cpus` it is
    /// the share of the machine the run kept busy, the figure `cpu_busy_pct`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_busy_s: Option<f64>,
    /// How many times another process dropped the kernel's caches during the measurement
    /// (`drop_pagecache` in /proc/vmstat, less fsbench's own drops); absent when none did,
    /// or where the kernel does not count them. The measurement did not run from the cache
    /// state it asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches_dropped_elsewhere: Option<u64>,
    /// With two or more processes: each one's bytes, bandwidth and share of the bytes
    /// (see [`super::shares`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<super::shares::ProcessShare>,
    pub threads: u64,
    pub layout: LayoutResult,
    pub flowops: Vec<FlowopResult>,
    pub summary: Summary,
    /// Messages from the run (e.g. `testrandvar` statistics).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// FNV-1a 64-bit hash of the workload text, hex.
    #[serde(default)]
    pub workload_hash: String,
    #[serde(default)]
    pub warmup_s: f64,
    #[serde(default)]
    pub interval_s: f64,
    /// Whether the page cache was dropped before measuring.
    #[serde(default)]
    pub cold: bool,
    #[serde(default)]
    pub host: Host,
    #[serde(default)]
    pub calibration: super::clock::Calibration,
    #[serde(default)]
    pub series: Vec<SeriesPoint>,
    /// Per-repetition figures when the run was repeated (`--repeat N`); the top-level
    /// figures then merge every repetition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repetitions: Vec<Repetition>,
    /// Named figures beyond the per-flowop table, as the original tool of an application
    /// benchmark prints them (PostMark's transaction rate, Andrew's phase times, ...); with
    /// repetitions, the mean over them. Keys are documented in docs/guide/apps.md.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, f64>,
    /// Version and git commit the binary was built from.
    #[serde(default)]
    pub build: super::build_info::BuildInfo,
    /// When the measured directory lay on a simulated disk: how late the disk server's
    /// replies were during the measurement (with repetitions, the worst repetition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskLateness>,
    /// When the measured directory lay on a simulated remote: its traffic over the
    /// measured window alone (with repetitions, over all of them), not over the
    /// preparation before it (a listing, a layout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_window: Option<RemoteWindow>,
    /// Many clients (`mpirun ... fsbench run`): each rank's figures, in rank order; the
    /// flowops and summary above merge every rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<super::ranks::RankResult>,
    /// The hosts the ranks ran on, in order of first rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// A fio job file's clones, each as fio's `thread_stat` records it (see
    /// [`super::fiojob`]): what reports in fio's shapes are made of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fio_jobs: Vec<super::fiojob::FioClone>,
    /// What the device under the measured directory wrote over the same window as
    /// `device_read_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_write_bytes: Option<u64>,
    /// The device's own counters over the measured window (fio's `disk_util`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_stats: Option<fsbench_base::sys::blockstat::DiskStats>,
}

impl Results {
    /// The share of the machine's CPU the measured window kept busy, in percent
    /// (`cpu_busy_s` ÷ (`duration_s` × `host.cpus`), at most 100: the kernel counts in clock
    /// ticks, so a short window can count a tick more than it lasted); `None` without those.
    pub fn cpu_busy_pct(&self) -> Option<f64> {
        let busy = self.cpu_busy_s?;
        let cpus = self.host.cpus as f64;
        (cpus > 0.0 && self.duration_s > 0.0)
            .then(|| (100.0 * busy / (self.duration_s * cpus)).min(100.0))
    }

    /// The bytes the measurement read: its read flowops' bytes, else the `bytes` figure of a
    /// measurement that reports what it read (`fsbench read`, `hot`); 0 when it read no data
    /// (a `find` reads metadata only).
    pub fn measured_read_bytes(&self) -> u64 {
        let from_flowops: u64 = (self.flowops.iter())
            .filter(|f| f.io_class == "read")
            .map(|f| f.bytes)
            .sum();
        if from_flowops > 0 {
            return from_flowops;
        }
        self.figures.get("bytes").map_or(0, |b| *b as u64)
    }

    /// The share of the bytes read that the page cache served, in percent: 100 × (1 − the
    /// device's reads ÷ [`Self::measured_read_bytes`]), at least 0 (read-ahead can make the
    /// device read more than was asked). `None` without the device's counters over the
    /// measured window (no block device under it) or when nothing was read. The one
    /// computation behind the report's cache line and the experiments' `cache_hit_pct`.
    pub fn cache_hit_pct(&self) -> Option<f64> {
        let device = self.device_read_bytes?;
        let read = self.measured_read_bytes();
        (read > 0).then(|| (100.0 * (1.0 - device as f64 / read as f64)).max(0.0))
    }

    /// With `--cache-stat`: the share of the pages the buffered reads read that the page
    /// cache held when each read began, in percent, over every flowop; `None` without it
    /// (or without a buffered read).
    pub fn read_hit_pct(&self) -> Option<f64> {
        let (pages, cached) = self
            .flowops
            .iter()
            .filter_map(|f| f.page_cache.as_ref())
            .fold((0, 0), |(p, c), x| (p + x.pages, c + x.cached));
        (pages > 0).then(|| PageCache::new(pages, cached).hit_pct)
    }

    /// The 99th percentile latency (ms) over the flowops that count as I/O, from their merged
    /// histograms; `None` without any.
    pub fn summary_p99_ms(&self) -> Option<f64> {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).ok()?;
        for f in self.flowops.iter().filter(|f| f.io_class != "none") {
            for [v, c] in &f.histogram_ns {
                let _ = h.record_n(*v, *c);
            }
        }
        (!h.is_empty()).then(|| h.value_at_quantile(0.99) as f64 / 1e6)
    }

    /// The results of one run, identified by its workload, where that came from, its seed
    /// and its run directory; the build, schema and version filled in, every figure empty
    /// or zero for the caller to set (`Results { flowops, summary, .. Results::new(...) }`).
    pub fn new(
        workload: &str,
        workload_source: &str,
        seed: u64,
        run_dir: &std::path::Path,
    ) -> Results {
        Results {
            build: super::build_info::BuildInfo::current(),
            schema_version: SCHEMA_VERSION,
            fsbench_version: env!("CARGO_PKG_VERSION").to_string(),
            workload: workload.to_string(),
            workload_source: workload_source.to_string(),
            variables: BTreeMap::new(),
            seed,
            run_dir: run_dir.display().to_string(),
            started_at: 0.0,
            duration_s: 0.0,
            interrupted: false,
            ended_early: None,
            device_read_bytes: None,
            device_busy_s: None,
            cpu_busy_s: None,
            caches_dropped_elsewhere: None,
            processes: Vec::new(),
            threads: 0,
            layout: LayoutResult::default(),
            flowops: Vec::new(),
            summary: Summary::default(),
            notes: Vec::new(),
            workload_hash: String::new(),
            warmup_s: 0.0,
            interval_s: 0.0,
            cold: false,
            host: Host::default(),
            calibration: super::clock::Calibration::default(),
            series: Vec::new(),
            repetitions: Vec::new(),
            figures: BTreeMap::new(),
            disk: None,
            remote_window: None,
            ranks: Vec::new(),
            hosts: Vec::new(),
            fio_jobs: Vec::new(),
            device_write_bytes: None,
            disk_stats: None,
        }
    }
}

/// A simulated disk's reply lateness during one measurement.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct DiskLateness {
    /// The simulated disk's name (`fsbench disk list`).
    pub name: String,
    /// Requests the disk served during the measurement.
    pub requests: u64,
    /// Mean modelled service time per request.
    pub service_mean_us: f64,
    /// Mean and 99th percentile of how late the server sent its replies.
    pub late_mean_us: f64,
    pub late_p99_us: f64,
    /// Mean lateness as a percentage of the mean modelled service time; above 5% the run
    /// warns that its figures include the server's own delays.
    pub late_pct: f64,
    /// The server's scheduling policy (e.g. `SCHED_FIFO 50`).
    pub scheduling: String,
}

/// A simulated remote's traffic during the measured window (`fsbench remote stats`' counts).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct RemoteWindow {
    /// The remote's name (`fsbench remote list`).
    pub name: String,
    pub requests: u64,
    /// Round trips the network model charged.
    pub round_trips: u64,
    pub bytes_fetched: u64,
    pub bytes_sent: u64,
    pub lookaside_hits: u64,
    pub lookaside_misses: u64,
    pub lookaside_bytes: u64,
    /// Time replies waited on the modelled network.
    pub network_wait_s: f64,
}

impl RemoteWindow {
    /// This window and `o` together (two repetitions of one measurement).
    pub fn and(mut self, o: &RemoteWindow) -> RemoteWindow {
        self.requests += o.requests;
        self.round_trips += o.round_trips;
        self.bytes_fetched += o.bytes_fetched;
        self.bytes_sent += o.bytes_sent;
        self.lookaside_hits += o.lookaside_hits;
        self.lookaside_misses += o.lookaside_misses;
        self.lookaside_bytes += o.lookaside_bytes;
        self.network_wait_s += o.network_wait_s;
        self
    }
}

/// The headline figures of one repetition.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Repetition {
    pub duration_s: f64,
    pub summary: Summary,
    /// `(ops_per_s, mb_per_s, mean latency us, p99 latency us)` per flowop, in the order of
    /// `flowops`.
    pub flowops: Vec<[f64; 4]>,
    /// This repetition's [`Results::figures`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, f64>,
}

/// FNV-1a, 64 bits: a stable hash of the workload text.
pub fn text_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// Whether a flowop type counts in the IO summary (reads, writes and metadata operations).
pub fn counts_in_summary(k: FlowopKind) -> bool {
    k.io_class() != IoClass::None
}

fn io_class_name(c: IoClass) -> &'static str {
    match c {
        IoClass::Read => "read",
        IoClass::Write => "write",
        IoClass::Meta => "meta",
        IoClass::None => "none",
    }
}

/// Per-flowop results and the summary from merged recorders.
pub fn summarize(
    stat_names: &[(String, FlowopKind)],
    merged: &Recorder,
    duration_s: f64,
    verified: bool,
) -> (Vec<FlowopResult>, Summary) {
    let d = duration_s.max(1e-9);
    let mut flowops = Vec::new();
    let mut s = Summary::default();
    let mut lat_sum = 0u64;
    let mut rd = 0u64;
    let mut wr = 0u64;
    let mut bytes = 0u64;
    for (i, (name, kind)) in stat_names.iter().enumerate() {
        let o = &merged.ops[i];
        // The flowop's histogram, whole only while its figures are taken.
        let h = o.hist.to_hist();
        let class = kind.io_class();
        flowops.push(FlowopResult {
            name: name.clone(),
            kind: kind.name().to_string(),
            io_class: io_class_name(class).to_string(),
            ops: o.count,
            ops_per_s: o.count as f64 / d,
            bytes: o.bytes,
            mb_per_s: o.bytes as f64 / d / (1024.0 * 1024.0),
            latency_us: Latency::from_recorder(o, &h),
            errors: o.errors,
            no_resource: o.no_resource,
            skipped: o.skipped,
            first_error: o.first_error.clone(),
            cpu_us_per_op: if o.count > 0 {
                o.cpu_ns / o.count as f64 / 1000.0
            } else {
                0.0
            },
            histogram_ns: h
                .iter_recorded()
                .map(|v| [v.value_iterated_to(), v.count_at_value()])
                .collect(),
            page_cache: (o.cache_pages > 0).then(|| PageCache::new(o.cache_pages, o.cache_hits)),
            aio: (*kind == FlowopKind::AioWrite).then(|| AioCompletions {
                completions: o.completions,
                completion_mean_us: if o.completions > 0 {
                    o.completion_ns_sum as f64 / o.completions as f64 / 1000.0
                } else {
                    0.0
                },
            }),
            content: o
                .content
                .filter(|_| !o.sample.is_empty())
                .map(|c| fsbench_model::content::report(name, c, &o.sample)),
            verify: verified.then(|| fsbench_model::verify::VerifyResult {
                blocks_checked: o.verify_blocks,
                mismatches: o.verify_mismatches,
                reads_skipped: o.verify_skipped,
                first: o.mismatches.clone(),
            }),
            rpcs: super::rpcs::results(&o.rpcs, o.count),
        });
        s.errors += o.errors;
        if counts_in_summary(*kind) {
            s.ops += o.count;
            lat_sum += o.lat_sum_ns;
            bytes += o.bytes;
            match class {
                IoClass::Read => rd += o.count,
                IoClass::Write => wr += o.count,
                _ => {}
            }
        }
    }
    s.ops_per_s = s.ops as f64 / d;
    s.read_ops_per_s = rd as f64 / d;
    s.write_ops_per_s = wr as f64 / d;
    s.mb_per_s = bytes as f64 / d / (1024.0 * 1024.0);
    s.mean_latency_ms = if s.ops > 0 {
        lat_sum as f64 / s.ops as f64 / 1e6
    } else {
        0.0
    };
    s.cpu_user_s = merged.cpu_user_s;
    s.cpu_sys_s = merged.cpu_sys_s;
    s.cpu_us_per_op = if s.ops > 0 {
        (s.cpu_user_s + s.cpu_sys_s) * 1e6 / s.ops as f64
    } else {
        0.0
    };
    (flowops, s)
}
