//! What one pass of each measurement kind does, in seconds on its target's device: its
//! preparation (a layout, a tree, a pool), the bytes that leaves to write back, its
//! measured work and its clean-up.

use super::rates::{cpu, Speed, CACHE_BPS, META_S};
use super::remote::{remote_build, remote_read, remote_replay};
use super::{setup, workload};
use crate::experiment::plan::{Kind, Measurement, Plan};
use crate::experiment::runner::Cell;

/// Entries a second `find` and `scan` walk in the page cache (one stat each): the stacked
/// plan's warm `find` of 763 entries through an overlay, two passes in 0.27 s (debug) with
/// the child's start.
const WALK_PER_S: f64 = 30_000.0;
/// A cold walk reads each directory from the device; its directories lie close together,
/// so each costs a quarter of an access of the model (the stacked plan's cold `find` at
/// quick scale: 163 directories in 0.4 s on `hdd-cheetah36lp`).
const COLD_DIR_ACCESS: f64 = 0.25;
/// Through a merged overlay each directory is read in both layers, which lie apart on the
/// device, and each entry is looked up in both: about one whole access of the model per
/// directory (the stacked plan's full-scale cold `find` through its merged overlays: 7,715
/// directories in 66 s over ext4 and 119 s over ext4 mounted dirsync on `hdd-cheetah36lp`,
/// 8.6 and 15.4 ms each, against 4.7 s natively).
const MERGED_DIR_ACCESS: f64 = 1.0;
/// Files a second `fsbench layout` maps (FIEMAP): the aging plan's quick `layout` cell, about
/// 1,000 aged files in 0.3 s.
const LAYOUT_FILES_PER_S: f64 = 5_000.0;
/// Replaying a call costs this much of the replayer's own time besides the call.
const REPLAY_CALL_S: f64 = 20e-6;

/// One pass of a measurement.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Work {
    /// Before the measured window: a layout, a generated tree, a pool.
    pub prep_s: f64,
    /// Bytes the preparation leaves in the page cache (written back by a cold cell's drop).
    pub dirty_bytes: f64,
    pub work_s: f64,
    /// After it: what the pass made, deleted.
    pub cleanup_s: f64,
    /// A workload's in-run warm-up (`--warmup SECONDS`), instead of a second pass.
    pub warm_s: Option<f64>,
    /// A workload's filesets kept for its next run: what names them, their layout's seconds
    /// and the bytes it leaves to write back.
    pub reused: Option<(String, f64, f64)>,
}

/// A cell seen by the estimate: its plan, measurement, parameter values and device.
pub(super) struct Cx<'a> {
    pub plan: &'a Plan,
    pub cell: &'a Cell,
    pub m: &'a Measurement,
    /// The measurement's parameters and the cell's factor levels, as the child gets them.
    pub values: Vec<(String, String)>,
    /// The child's command line (its `--duration` and `--warmup`).
    pub args: Vec<String>,
    pub speed: Speed,
    pub cold: bool,
}

impl Cx<'_> {
    /// A parameter as a number (sizes with their units).
    pub fn get(&self, k: &str) -> Option<f64> {
        let v = &self.values.iter().find(|(pk, _)| pk == k)?.1;
        fsbench_base::units::parse_size(v)
            .ok()
            .map(|b| b as f64)
            .or_else(|| v.parse().ok())
    }

    fn flag(&self, flag: &str) -> Option<f64> {
        let i = self.args.iter().position(|a| a == flag)?;
        self.args.get(i + 1)?.parse().ok()
    }

    fn is(&self, k: &str) -> bool {
        self.values.iter().any(|(pk, v)| pk == k && v == "true")
    }

    /// Bytes a second the cell reads what was there before it: the device when cold.
    fn read_bps(&self) -> f64 {
        if self.cold {
            self.speed.read_bps
        } else {
            CACHE_BPS
        }
    }
}

/// One pass of the cell's measurement; None when nothing tells how long it takes.
pub(super) fn work(cx: &Cx) -> Option<Work> {
    match cx.m.kind {
        Kind::Workload => workload(cx),
        Kind::Postmark => Some(postmark(cx)),
        Kind::Find | Kind::Scan => walk(cx),
        Kind::Read => read(cx),
        Kind::Build => Some(build(cx)),
        Kind::Andrew => Some(andrew(cx)),
        Kind::Prune => Some(prune(cx)),
        Kind::Layout => layout(cx),
        Kind::Hot => hot(cx),
        Kind::Replay => replay(cx),
    }
}

/// A workload: its layout, then its duration (after its warm-up) or its counts' work.
fn workload(cx: &Cx) -> Option<Work> {
    let c = workload::cost(cx.m, &cx.values, &cx.speed, cx.cold)?;
    let duration = cx.flag("--duration").or(c.run_s);
    let work_s = match (c.counted_s, duration) {
        (Some(n), Some(d)) => n.min(d),
        (Some(n), None) => n,
        (None, d) => d?,
    };
    Some(Work {
        prep_s: c.layout_s,
        dirty_bytes: c.dirty_bytes,
        work_s,
        cleanup_s: c.files * cx.speed.meta_s,
        warm_s: Some(cx.flag("--warmup").unwrap_or(0.0)),
        reused: c.reused,
    })
}

/// PostMark: each instance creates its pool, runs its transactions (a read or an append,
/// and a create or a delete each) and deletes what is left. Its namespace operations are
/// what cost on a `dirsync` mount: 2 instances of 100 files and 200 transactions took
/// 5.2 s on `hdd-cheetah36lp` without a journal, 630 accesses, about `number +
/// transactions` a instance.
fn postmark(cx: &Cx) -> Work {
    let n = cx.get("number").unwrap_or(500.0);
    let t = cx.get("transactions").unwrap_or(500.0);
    let inst = cx.get("instances").unwrap_or(1.0).max(1.0);
    let size = cx
        .values
        .iter()
        .find(|(k, _)| k == "size")
        .map(|(_, v)| {
            let sizes: Vec<f64> = v
                .split(',')
                .filter_map(|s| fsbench_base::units::parse_size(s.trim()).ok())
                .map(|b| b as f64)
                .collect();
            sizes.iter().sum::<f64>() / sizes.len().max(1) as f64
        })
        .unwrap_or(5250.0);
    let bytes = inst * (n + t / 2.0) * size;
    Work {
        work_s: inst * (n + t) * cx.speed.meta_s.max(META_S) + bytes / CACHE_BPS,
        ..Work::default()
    }
}

/// `find` and `scan` of a tree the plan makes: a stat of each entry, and each directory
/// read from the device when cold.
fn walk(cx: &Cx) -> Option<Work> {
    let tree = setup::made_tree(cx.plan, cx.m)?;
    let mut work_s = cpu(tree.entries() / WALK_PER_S);
    if cx.cold {
        let per_dir = if merged_overlay(cx.plan, &cx.cell.target) {
            MERGED_DIR_ACCESS
        } else {
            COLD_DIR_ACCESS
        };
        work_s += tree.dirs() * cx.speed.access_s * per_dir;
    }
    Some(Work {
        work_s,
        ..Work::default()
    })
}

/// `read` of a tree the plan makes: its bytes, and a walk of it; over a remote's generated
/// tree, its modelled network.
fn read(cx: &Cx) -> Option<Work> {
    if let Some(s) = remote_read(cx.plan, cx.cell) {
        return Some(Work {
            work_s: s,
            ..Work::default()
        });
    }
    let tree = setup::made_tree(cx.plan, cx.m)?;
    Some(Work {
        work_s: tree.files * tree.file_bytes / cx.read_bps() + cpu(tree.entries() / WALK_PER_S),
        ..Work::default()
    })
}

/// `fsbench build`: its tree generated (sources, headers, directories), each source compiled
/// (its CPU time over the jobs this machine's cores can run at once, two temporary files
/// made and deleted and an object written), the link, and everything deleted. Over a
/// remote's tree: the network's round trips and bytes instead of the generation.
fn build(cx: &Cx) -> Work {
    let cores = fsbench_base::walk::default_threads() as f64;
    let meta = cx.speed.meta_s;
    let cpu_s = cx.get("cpu_ms").unwrap_or(5.0) / 1000.0;
    let temps = cx.get("temps").unwrap_or(2.0);
    if let Some((files, network_s)) = remote_build(cx.plan, cx.cell) {
        // One job at a time over the network; objects go to the local scratch.
        return Work {
            work_s: files * (cpu_s + (2.0 * temps + 1.0) * META_S) + network_s,
            ..Work::default()
        };
    }
    let files = cx.get("files").unwrap_or(200.0);
    let dirs = cx.get("dirs").unwrap_or(10.0);
    let headers = cx.get("headers").unwrap_or(20.0);
    let size = cx.get("source_size").unwrap_or(8192.0);
    let jobs = cx.get("jobs").unwrap_or(2.0).clamp(1.0, cores);
    let bytes = files * size + headers * 2048.0;
    Work {
        prep_s: (files + headers + 2.0 * dirs + 5.0) * meta + bytes / CACHE_BPS,
        dirty_bytes: bytes,
        work_s: files * cpu_s / jobs + files * (2.0 * temps + 1.0) * meta + 2.0 * bytes / CACHE_BPS,
        cleanup_s: (2.0 * files + headers + 2.0 * dirs) * meta,
        ..Work::default()
    }
}

/// The Andrew benchmark: compiling is most of a copy's time; without it the copy, stat and
/// scan of a copy take a fraction of a second per `scale`.
fn andrew(cx: &Cx) -> Work {
    let per_copy = if cx.is("no_compile") {
        0.05 * cx.get("scale").unwrap_or(1.0)
    } else {
        5.0
    };
    Work {
        work_s: per_copy * cx.get("copies").unwrap_or(1.0) * cx.get("clients").unwrap_or(1.0),
        ..Work::default()
    }
}

/// `fsbench prune`: its tree laid out, scanned, and files deleted until `free` is freed.
fn prune(cx: &Cx) -> Work {
    let meta = cx.speed.meta_s;
    let files = cx.get("files").unwrap_or(2000.0);
    let dirs = cx.get("dirs").unwrap_or(50.0);
    let size = cx.get("file_size").unwrap_or(16384.0).max(1.0);
    let deleted = cx
        .get("free")
        .map_or(files, |f| (f / size).ceil().min(files));
    Work {
        prep_s: (files + dirs) * meta + files * size / CACHE_BPS,
        dirty_bytes: files * size,
        work_s: deleted * meta + cpu(files / WALK_PER_S),
        cleanup_s: (files - deleted + dirs) * meta,
        ..Work::default()
    }
}

/// `fsbench layout` of a tree the plan makes, of a target's aged population, or of a file
/// system the runner made (empty but for what the plan puts there); an existing
/// directory's tree is not known.
fn layout(cx: &Cx) -> Option<Work> {
    let files = match setup::made_tree(cx.plan, cx.m) {
        Some(t) => t.files,
        None => match setup::aged_files(cx.plan, &cx.cell.target) {
            Some(n) => n,
            None if setup::made_here(cx.plan, &cx.cell.target) => 0.0,
            None => return None,
        },
    };
    Some(Work {
        work_s: cpu(files / LAYOUT_FILES_PER_S),
        ..Work::default()
    })
}

/// `fsbench hot`: the files the last `days` of aging wrote (or the `files` it wrote last),
/// read (each one an access and its bytes), then overwritten with an fsync each.
fn hot(cx: &Cx) -> Option<Work> {
    let (files, bytes) = match cx.get("files") {
        Some(n) => setup::last_files(cx.plan, &cx.cell.target, n)?,
        None => setup::recent_files(cx.plan, &cx.cell.target, cx.get("days").unwrap_or(30.0))?,
    };
    let s = &cx.speed;
    let access = if cx.cold { s.access_s } else { 0.0 };
    Some(Work {
        work_s: files * (access + s.fsync_s) + bytes / cx.read_bps() + bytes / s.write_bps,
        ..Work::default()
    })
}

/// A trace replay: the recorded calls' own time (or the recorded span, `--mode timed`,
/// at its `--speed`), the replayer's time per call, and the initial tree rebuilt first.
fn replay(cx: &Cx) -> Option<Work> {
    let path = &cx.values.iter().find(|(k, _)| k == "trace")?.1;
    // A trace too large to read for an estimate is not read.
    if std::fs::metadata(path).ok()?.len() > 16 << 20 {
        return None;
    }
    let (header, records) =
        fsbench_tools::trace::format::read_all(std::path::Path::new(path)).ok()?;
    let calls = records.len() as f64;
    let timed = cx.values.iter().any(|(k, v)| k == "mode" && v == "timed");
    let played = if timed {
        let end = records
            .iter()
            .map(|r| r.start_ns + r.dur_ns)
            .max()
            .unwrap_or(0);
        end as f64 / 1e9 / cx.get("speed").unwrap_or(1.0).max(1e-3)
    } else {
        records.iter().map(|r| r.dur_ns as f64).sum::<f64>() / 1e9
    };
    let initial = header.initial.len() as f64;
    // Over a remote's tree the calls wait for its modelled network, not for the times the
    // trace recorded on a local disk.
    let network_s = remote_replay(cx.plan, cx.cell).unwrap_or(0.0);
    Some(Work {
        prep_s: initial * cx.speed.meta_s,
        work_s: played + network_s + cpu(calls * REPLAY_CALL_S),
        cleanup_s: initial * cx.speed.meta_s,
        ..Work::default()
    })
}

/// Whether target `name` is an overlay whose directories are merged from both layers.
fn merged_overlay(plan: &crate::experiment::plan::Plan, name: &str) -> bool {
    plan.targets.iter().any(|t| {
        t.name == name
            && matches!(
                t.kind,
                crate::experiment::plan::TargetKind::Overlay { merged: true, .. }
            )
    })
}
