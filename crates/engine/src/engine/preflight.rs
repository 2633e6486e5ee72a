//! Before planning: estimate from the workload's parameters alone what the run will hold in
//! memory (the fileset plans and per-entry state, every thread's buffers and recorders) and
//! write to disk, and refuse with the numbers when the machine cannot give it. Planning a
//! fileset of 10^12 entries to find out it does not fit would take the machine down first.

use super::EngineError;
use fsbench_base::limits::Machine;
use fsbench_base::units::human_bytes;
use fsbench_model::model::{Flowop, Thread, Workload};
use std::path::Path;

/// Bytes per file or leaf directory while planning and running: the entry (20: planned in
/// place, sized there and moved into the run; the vector is reserved exactly) and its
/// preallocation bit. Measured: 100 million entries held 1.97 GB in all.
const BYTES_PER_ENTRY: u64 = 20;
/// Bytes per directory: the planned directory (12), its path string and the listing index.
const BYTES_PER_DIR: u64 = 112;
/// A thread's directory-listing buffer.
const DIRBUF: u64 = 64 << 10;
/// What the program holds whatever the workload: its code, libraries and start-up data
/// (the resident size of a run of a one-flowop workload).
const BASE: u64 = 16 << 20;
/// Per flowop of the workload (composites' children included): its parsed and checked form.
const PER_FLOWOP: u64 = 2 << 10;
/// Per flowop name, once per run: the run's latency counts (allocated per range of latencies
/// met: a flowop whose latencies spread from microseconds to milliseconds fills several
/// chunks of 512 bytes), the flowop's results and report line.
const PER_STAT: u64 = 4 << 10;
/// Per flowop name, per thread: counters, the interval histograms (grown to the largest
/// latency met) and the batch of latencies not yet counted.
const PER_STAT_THREAD: u64 = 3 << 9;
// Measured with `run` of 1,000 to 20,000 `statfile` flowops in one thread for 4 and 30
// seconds, the resident size was within 35% of the estimate, and within 10% at 10 seconds,
// where tests/memory.rs checks it to 30% (docs/guide/memory.md). Histograms grow with the
// spread of latencies a flowop meets; its tail's rare latencies cost 16 bytes each (see
// `stats::HdrCounts`).
/// The buffers of a `stream` flowop's io_uring queue: one of the largest block size for
/// each I/O in flight.
fn ring_buffers(t: &Thread) -> u64 {
    t.flowops
        .iter()
        .filter_map(|f| f.stream.as_deref())
        .map(|s| (s.depth as u64).saturating_mul(s.max_bs()))
        .sum()
}

/// Estimated directories of a tree of `n` leaves with mean width `w`.
fn dirs_for(n: u64, w: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let w = w.max(2);
    n / (w - 1) + 1
}

/// What the estimate found, for the start-up line.
#[derive(Debug, Clone, Copy, Default)]
pub struct Estimate {
    pub plan_bytes: u64,
    /// The program and the workload's flowops (see `BASE`, `PER_FLOWOP`, `PER_STAT`).
    pub workload_bytes: u64,
    pub flowops: u64,
    pub thread_bytes: u64,
    pub threads: u64,
    pub layout_bytes: u64,
}

/// Check the workload against memory, threads and the free space of `parent`.
pub fn check(wl: &Workload, parent: &Path) -> Result<Estimate, EngineError> {
    let (est, files_total) = check_here(wl)?;
    check_free_space(wl, parent, &est, files_total)?;
    Ok(est)
}

/// [`check`] for a run whose files are on an NFS server: this machine's memory, threads
/// and descriptors (the server's free space is the server's to refuse).
pub fn check_remote(wl: &Workload) -> Result<Estimate, EngineError> {
    check_here(wl).map(|(est, _)| est)
}

/// The checks against this machine; returns the estimate and the files planned.
fn check_here(wl: &Workload) -> Result<(Estimate, f64), EngineError> {
    let m = Machine::probe();
    let mut est = Estimate::default();
    let files_total = check_filesets(wl, &m, &mut est)?;
    // The workload itself, and what a run keeps per flowop.
    let nstats = wl.stat_names.len() as u64;
    est.flowops = wl.all_flowops().len() as u64;
    est.workload_bytes = BASE
        .saturating_add(est.flowops.saturating_mul(PER_FLOWOP))
        .saturating_add(nstats.saturating_mul(PER_STAT));
    check_threads(wl, &m, &mut est)?;
    check_descriptors(wl, crate::fileset::dirs::raise_nofile())?;
    check_memory(&m, &est)?;
    Ok((est, files_total))
}

/// The memory a run of `wl` holds, as [`check`] estimates it, without checking it against
/// this machine (an experiment compares it with a cell's memory limit).
pub fn estimate(wl: &Workload) -> Estimate {
    let mut est = Estimate::default();
    for fs in &wl.filesets {
        let n = fs.entries.saturating_add(fs.leafdirs);
        est.plan_bytes = est.plan_bytes.saturating_add(
            n.saturating_mul(BYTES_PER_ENTRY)
                .saturating_add(dirs_for(n, fs.dirwidth).saturating_mul(BYTES_PER_DIR)),
        );
    }
    let nstats = wl.stat_names.len() as u64;
    est.flowops = wl.all_flowops().len() as u64;
    est.workload_bytes = BASE
        .saturating_add(est.flowops.saturating_mul(PER_FLOWOP))
        .saturating_add(nstats.saturating_mul(PER_STAT));
    for p in &wl.processes {
        for t in &p.threads {
            let n = p.instances as u64 * t.instances as u64;
            let per = super::worker::buffer::initial_buffer(t)
                + DIRBUF
                + nstats.saturating_mul(PER_STAT_THREAD);
            est.threads += n;
            est.thread_bytes = est.thread_bytes.saturating_add(n.saturating_mul(per));
        }
    }
    est
}

/// What an application benchmark (PostMark, Andrew, find, read, build, replay) or a layout
/// or scan holds when it starts: the program (the resident size of `fsbench find` or
/// `fsbench postmark` at start is about 17 MiB) with room for its first buffers.
pub const APP_START_BYTES: u64 = BASE + (8 << 20);
/// The descriptors `opennext` slots hold at once: per thread, one per distinct file its
/// rotation reaches, at most the 128 slots (slots on one file share a descriptor).
fn opennext_descriptors(wl: &Workload) -> u64 {
    fn walk(f: &Flowop, out: &mut Vec<usize>) {
        if let (true, Some(i)) = (f.opennext, f.fileset) {
            if !out.contains(&i) {
                out.push(i);
            }
        }
        for c in &f.children {
            walk(c, out);
        }
    }
    let mut total: u64 = 0;
    for p in &wl.processes {
        for t in &p.threads {
            let mut sets = Vec::new();
            for f in &t.flowops {
                walk(f, &mut sets);
            }
            let per: u64 = sets.iter().map(|&i| wl.filesets[i].entries).sum();
            let per = per.min(super::worker::MAX_FD as u64);
            total = total.saturating_add(
                per.saturating_mul(p.instances as u64)
                    .saturating_mul(t.instances as u64),
            );
        }
    }
    total
}

/// Refuse a run whose `opennext` slots would hold more descriptors than half the limit on
/// open files (the other half is for directory handles and the rest of the run).
fn check_descriptors(wl: &Workload, limit: u64) -> Result<(), EngineError> {
    let need = opennext_descriptors(wl);
    if need > limit / 2 {
        return Err(refuse(format!(
            "the opennext flowops' descriptor slots would hold about {need} files open at once \
             (up to 128 per thread, one per file its rotation reaches), more than half the \
             limit of {limit} open files: raise it (ulimit -n) or run fewer threads"
        )));
    }
    Ok(())
}

fn refuse(msg: String) -> EngineError {
    EngineError::TooLarge(msg)
}

/// What the filesets' plans hold in memory and their files on disk; the number of
/// preallocated files.
fn check_filesets(wl: &Workload, m: &Machine, est: &mut Estimate) -> Result<f64, EngineError> {
    let mut files_total: f64 = 0.0;
    for fs in &wl.filesets {
        let n = fs.entries.saturating_add(fs.leafdirs);
        // Names are 32-bit numbers, as Filebench's are.
        if n > u32::MAX as u64 {
            return Err(refuse(format!(
                "fileset `{}`: entries={} leafdirs={} is more than the {} entries a fileset can hold",
                fs.name,
                fs.entries,
                fs.leafdirs,
                u32::MAX
            )));
        }
        let dirs = dirs_for(n, fs.dirwidth);
        let bytes = n
            .saturating_mul(BYTES_PER_ENTRY)
            .saturating_add(dirs.saturating_mul(BYTES_PER_DIR));
        if let Err(e) = m.check_memory(
            bytes,
            &format!(
                "fileset `{}` (entries={} dirwidth={})",
                fs.name, fs.entries, fs.dirwidth
            ),
        ) {
            return Err(refuse(e));
        }
        est.plan_bytes = est.plan_bytes.saturating_add(bytes);
        let pre = fs.prealloc.min(100) as f64 / 100.0;
        let files = fs.entries as f64 * pre;
        files_total += files;
        est.layout_bytes = est
            .layout_bytes
            .saturating_add((files * fs.size.mean(&wl.randvars).max(0.0)) as u64);
    }
    Ok(files_total)
}

/// Threads: what the machine can start and what each holds.
fn check_threads(wl: &Workload, m: &Machine, est: &mut Estimate) -> Result<(), EngineError> {
    let nstats = wl.stat_names.len() as u64;
    for p in &wl.processes {
        for t in &p.threads {
            let n = p.instances as u64 * t.instances as u64;
            let per = super::worker::buffer::initial_buffer(t)
                + ring_buffers(t)
                + DIRBUF
                + nstats.saturating_mul(PER_STAT_THREAD);
            est.threads += n;
            est.thread_bytes = est.thread_bytes.saturating_add(n.saturating_mul(per));
            if let Err(e) = m.check_threads(
                n,
                per,
                &format!(
                    "process `{}` instances={} with thread `{}` instances={} memsize={}",
                    p.name, p.instances, t.name, t.instances, t.memsize
                ),
            ) {
                return Err(refuse(e));
            }
        }
    }
    if est.threads > m.threads_left {
        return Err(refuse(format!(
            "the workload has {} threads in all, but this machine can start at most {} more ({}); lower the processes' or threads' instances",
            est.threads, m.threads_left, m.threads_reason
        )));
    }
    Ok(())
}

/// All the memory the run would hold, against what the machine has.
fn check_memory(m: &Machine, est: &Estimate) -> Result<(), EngineError> {
    let total = est.total();
    if total > m.memory_budget() {
        return Err(refuse(format!(
            "the workload would need {} of memory ({} for fileset plans, {} for the program and {}, {} for the buffers and recorders of {}), but this machine has {} of {}; lower entries, instances, memsize or the number of flowops",
            human_bytes(total as f64),
            human_bytes(est.plan_bytes as f64),
            human_bytes(est.workload_bytes as f64),
            fsbench_base::units::count(est.flowops, "flowop"),
            human_bytes(est.thread_bytes as f64),
            fsbench_base::units::count(est.threads, "thread"),
            human_bytes(m.mem_available as f64),
            m.mem_source
        )));
    }
    Ok(())
}

/// Free space, from the mean size, before any plan exists (the exact check follows the plan).
fn check_free_space(
    wl: &Workload,
    parent: &Path,
    est: &Estimate,
    files_total: f64,
) -> Result<(), EngineError> {
    if let Some(free) = super::statvfs_free(parent) {
        // A rerun of a workload with `reuse` filesets reuses the files it left.
        let free = free.saturating_add(if wl.filesets.iter().any(|f| f.reuse) {
            super::rundir::reusable_bytes(&super::rundir::RunDir::stable_path(parent, &wl.name), wl)
        } else {
            0
        });
        let need = est.layout_bytes as f64 * 1.02 + files_total * 4096.0;
        if need > free as f64 * 1.05 {
            let big = wl
                .filesets
                .iter()
                .max_by(|a, b| {
                    let f = |x: &fsbench_model::model::Fileset| {
                        x.entries as f64 * x.size.mean(&wl.randvars).max(0.0)
                    };
                    f(a).total_cmp(&f(b))
                })
                .expect("a fileset needs space");
            return Err(refuse(format!(
                "the filesets need about {} ({:.0} preallocated files), but {} has {} free; lower -s filesize/-s nfiles (the largest fileset is `{}`, entries={}), or pass --dir on a larger file system",
                human_bytes(need),
                files_total,
                parent.display(),
                human_bytes(free as f64),
                big.name,
                big.entries
            )));
        }
    }
    Ok(())
}

impl Estimate {
    /// All the memory the run is expected to hold.
    pub fn total(&self) -> u64 {
        self.plan_bytes
            .saturating_add(self.workload_bytes)
            .saturating_add(self.thread_bytes)
    }

    /// One line for the start of a run.
    pub fn describe(&self) -> String {
        format!(
            "memory: about {} in all: {} for fileset plans, {} for the program and {}, {} for the buffers and recorders of {}",
            human_bytes(self.total() as f64),
            human_bytes(self.plan_bytes as f64),
            human_bytes(self.workload_bytes as f64),
            fsbench_base::units::count(self.flowops, "flowop"),
            human_bytes(self.thread_bytes as f64),
            fsbench_base::units::count(self.threads, "thread")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_estimate() {
        assert_eq!(dirs_for(0, 20), 0);
        assert_eq!(dirs_for(100, 1_000_000), 1);
        assert_eq!(dirs_for(1000, 11), 101);
        assert_eq!(dirs_for(u64::MAX, u64::MAX), 2);
    }

    #[test]
    fn opennext_slots_count_one_descriptor_per_file_up_to_128_per_thread() {
        use fsbench_model::model::build::Overrides;
        let oltp = |nfiles: &str| {
            let o = Overrides(vec![("nfiles".into(), nfiles.into())]);
            fsbench_model::workloads::load(&fsbench_model::workloads::Source::named("oltp"), &o)
                .unwrap()
                .0
        };
        // 200 shadows and 10 database writers rotate over the data files.
        let wl = oltp("10");
        assert_eq!(opennext_descriptors(&wl), 210 * 10);
        assert!(check_descriptors(&wl, 20_000).is_ok());
        let wl = oltp("1000");
        assert_eq!(opennext_descriptors(&wl), 210 * 128);
        let e = check_descriptors(&wl, 20_000).unwrap_err().to_string();
        assert!(e.contains("26880") && e.contains("ulimit -n"), "{e}");
    }
}
