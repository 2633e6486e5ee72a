//! Many clients on MPI (the `mpi` feature): `mpirun -np N fsbench run ...` runs the workload
//! on every rank and rank 0 reports the merged results.
//!
//! What MPI carries:
//! - the set-up, broadcast from rank 0 (the workload text and variables it parsed, the
//!   shared run directory it made), so every rank runs the same thing;
//! - votes instead of plain barriers: at each synchronisation point every rank says whether
//!   it is still healthy, so one rank's failure stops the others at their next such point
//!   instead of leaving them waiting forever (see [`Session::end`]); the same vote agrees
//!   on a wall-clock instant a little ahead, and every rank sleeps until it, so the starts
//!   do not spread by however late the scheduler let each rank see the vote's end;
//! - stonewalling: the first rank to finish tells the others (a small message each), which
//!   poll for it every 20 ms and stop where they are;
//! - the results, gathered to rank 0 as JSON and merged by [`fsbench_results::stats::ranks::merge`].
//!
//! MPI is only ever called from the thread that initialised it (`MPI_THREAD_FUNNELED`):
//! the run's control thread, never a worker.

use anyhow::{anyhow, Result};
use fsbench_base::cluster::Cluster;
use fsbench_results::stats::Results;
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const STONE: mpi::Tag = 7;

/// Whether this process was started by an MPI launcher (mpirun, mpiexec, srun).
pub fn launched() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALNRANKS",
        "SLURM_STEP_NUM_TASKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

/// The cluster the engine sees: rank, votes, stonewalling.
struct Handle {
    world: SimpleCommunicator,
    rank: usize,
    size: usize,
    stonewall: bool,
    sent: AtomicBool,
    stop: AtomicBool,
    votes: AtomicU64,
}

// SAFETY: the communicator is only used from the thread that initialised MPI (the
// engine calls the cluster from its control thread only, see `fsbench_base::cluster`).
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

impl Handle {
    /// One all-reduce (max) of `[1 - at_end, 1 - ok, proposed start]`: whether every rank is
    /// at its end, whether every rank is healthy, and the latest start time any rank
    /// proposed (seconds since the Unix epoch).
    fn vote(&self, at_end: bool, ok: bool) -> (bool, bool, f64) {
        let mine = [
            1.0 - at_end as i32 as f64,
            1.0 - ok as i32 as f64,
            wall_now() + START_MARGIN_S,
        ];
        let mut all = [0f64; 3];
        self.world
            .all_reduce_into(&mine[..], &mut all[..], SystemOperation::max());
        self.votes.fetch_add(1, Ordering::Relaxed);
        (all[0] == 0.0, all[1] == 0.0, all[2])
    }
}

/// How far ahead of the vote the ranks agree to start: long enough for every rank to have
/// left the vote on a busy (or oversubscribed) machine, whose scheduler would otherwise
/// spread the starts by its time slices.
const START_MARGIN_S: f64 = 0.03;

fn wall_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Sleep until the wall-clock time `t` (seconds since the Unix epoch). Across hosts the
/// starts agree as well as their clocks do (NTP: typically well under a millisecond).
fn sleep_until(t: f64) {
    let ts = libc::timespec {
        tv_sec: t.floor() as libc::time_t,
        tv_nsec: ((t - t.floor()) * 1e9) as libc::c_long,
    };
    // SAFETY: a valid timespec; interrupted sleeps are resumed.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_REALTIME,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {
        if fsbench_base::cancel::interrupted() {
            return;
        }
    }
}

impl Cluster for Handle {
    fn broadcast(&self, data: Option<Vec<u8>>) -> Vec<u8> {
        let root = self.world.process_at_rank(0);
        let mut len = data.as_ref().map_or(0u64, |d| d.len() as u64);
        root.broadcast_into(&mut len);
        let mut buf = data.unwrap_or_default();
        buf.resize(len as usize, 0);
        if len > 0 {
            root.broadcast_into(&mut buf[..]);
        }
        buf
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn barrier(&self) -> bool {
        let (_, ok, start) = self.vote(false, true);
        if ok {
            sleep_until(start);
        }
        ok
    }
    fn sync(&self) -> bool {
        self.vote(false, true).1
    }
    fn finished(&self) {
        if !self.stonewall || self.stop.load(Ordering::Relaxed) || self.sent.load(Ordering::Relaxed)
        {
            return;
        }
        self.sent.store(true, Ordering::Relaxed);
        for r in 0..self.size {
            if r != self.rank {
                self.world
                    .process_at_rank(r as i32)
                    .send_with_tag(&1u8, STONE);
            }
        }
    }
    fn stop_requested(&self) -> bool {
        if !self.stonewall {
            return false;
        }
        if self.stop.load(Ordering::Relaxed) {
            return true;
        }
        if self
            .world
            .any_process()
            .immediate_probe_with_tag(STONE)
            .is_some()
        {
            self.stop.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }
}

/// One rank's part of a multi-client run.
pub struct Session {
    // Dropped last: finalises MPI.
    _universe: mpi::environment::Universe,
    handle: &'static Handle,
    pub host: String,
}

/// What each rank sends rank 0 at the end.
#[derive(Serialize, Deserialize)]
pub struct Outcome {
    pub rank: u32,
    pub host: String,
    pub result: std::result::Result<Results, String>,
}

impl Session {
    /// Initialise MPI and install the cluster the engine sees.
    pub fn init(stonewall: bool) -> Result<Session> {
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .ok_or_else(|| anyhow!("MPI could not be initialised (was it already?)"))?;
        let world = universe.world();
        let rank = world.rank() as usize;
        let size = world.size() as usize;
        let host = mpi::environment::processor_name().unwrap_or_else(|_| "?".into());
        let handle: &'static Handle = Box::leak(Box::new(Handle {
            world,
            rank,
            size,
            stonewall,
            sent: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            votes: AtomicU64::new(0),
        }));
        fsbench_base::cluster::install(Box::new(Proxy(handle)));
        Ok(Session {
            _universe: universe,
            handle,
            host,
        })
    }

    pub fn rank(&self) -> usize {
        self.handle.rank
    }
    pub fn size(&self) -> usize {
        self.handle.size
    }

    /// Rank 0's bytes on every rank.
    pub fn broadcast(&self, data: Option<Vec<u8>>) -> Vec<u8> {
        self.handle.broadcast(data)
    }

    /// A synchronisation point outside the engine (set-up): false when a rank failed.
    pub fn barrier(&self, ok: bool) -> bool {
        let (_, all_ok, start) = self.handle.vote(false, ok);
        if all_ok {
            sleep_until(start);
        }
        all_ok
    }

    /// This rank is done (`ok`: without error). Keeps voting until every rank is done, so
    /// a rank that failed early releases the others from their synchronisation points (they
    /// see the failure there and stop); then collects any stonewalling messages still in
    /// flight. Returns whether every rank was healthy.
    pub fn end(&self, ok: bool) -> bool {
        let all_ok = loop {
            let (all_end, all_ok, _) = self.handle.vote(true, ok);
            if all_end {
                break all_ok;
            }
        };
        // Every rank that sent stones sent one to each other rank: receive them.
        let mine = self.handle.sent.load(Ordering::Relaxed) as u8;
        let mut sent = vec![0u8; self.size()];
        self.handle.world.all_gather_into(&mine, &mut sent[..]);
        let expected = sent
            .iter()
            .enumerate()
            .filter(|(r, s)| *r != self.rank() && **s == 1)
            .count();
        for _ in 0..expected {
            let _ = self
                .handle
                .world
                .any_process()
                .receive_with_tag::<u8>(STONE);
        }
        all_ok
    }

    /// The last synchronisation: every rank waits here until rank 0 has reported (a
    /// launcher ends the job when a rank exits with an error, cutting rank 0 short).
    pub fn finish(&self) {
        let _ = self.handle.vote(false, true);
    }

    /// Send this rank's outcome to rank 0; rank 0 gets every rank's.
    pub fn gather(&self, mine: &Outcome) -> Option<Vec<Outcome>> {
        let bytes = serde_json::to_vec(mine).unwrap_or_else(|e| {
            serde_json::to_vec(&Outcome {
                rank: mine.rank,
                host: mine.host.clone(),
                result: Err(format!("results could not be encoded: {e}")),
            })
            .expect("a plain outcome encodes")
        });
        let root = self.handle.world.process_at_rank(0);
        let len = bytes.len() as i32;
        if self.rank() == 0 {
            let mut lens = vec![0i32; self.size()];
            root.gather_into_root(&len, &mut lens[..]);
            let displs: Vec<i32> = lens
                .iter()
                .scan(0i32, |acc, &l| {
                    let d = *acc;
                    *acc += l;
                    Some(d)
                })
                .collect();
            let total: i32 = lens.iter().sum();
            let mut all = vec![0u8; total as usize];
            {
                let mut part = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
                root.gather_varcount_into_root(&bytes[..], &mut part);
            }
            let mut out = Vec::new();
            for (r, (&d, &l)) in displs.iter().zip(&lens).enumerate() {
                let slice = &all[d as usize..(d + l) as usize];
                out.push(serde_json::from_slice(slice).unwrap_or_else(|e| Outcome {
                    rank: r as u32,
                    host: "?".into(),
                    result: Err(format!("its results could not be read: {e}")),
                }));
            }
            Some(out)
        } else {
            root.gather_into(&len);
            root.gather_varcount_into(&bytes[..]);
            None
        }
    }
}

/// The installed cluster refers to the session's handle.
struct Proxy(&'static Handle);

impl Cluster for Proxy {
    fn rank(&self) -> usize {
        self.0.rank()
    }
    fn size(&self) -> usize {
        self.0.size()
    }
    fn barrier(&self) -> bool {
        self.0.barrier()
    }
    fn sync(&self) -> bool {
        self.0.sync()
    }
    fn finished(&self) {
        self.0.finished()
    }
    fn stop_requested(&self) -> bool {
        self.0.stop_requested()
    }
    fn broadcast(&self, data: Option<Vec<u8>>) -> Vec<u8> {
        self.0.broadcast(data)
    }
}

/// Rank 0: the merged results, or an error naming every rank that failed.
pub fn merge_outcomes(all: Vec<Outcome>) -> Result<Results> {
    let n = all.len();
    let mut results = Vec::new();
    let mut failures = Vec::new();
    for o in all {
        match o.result {
            Ok(r) => results.push((o.rank, o.host, r)),
            Err(e) if e.contains("another rank failed") => {}
            Err(e) => failures.push(format!("rank {} on {}: {e}", o.rank, o.host)),
        }
    }
    if !failures.is_empty() {
        for f in &failures {
            fsbench_base::errln!("fsbench: {f}");
        }
        anyhow::bail!(
            "{} of {n} failed",
            fsbench_base::units::count(failures.len() as u64, "rank")
        );
    }
    fsbench_results::stats::ranks::merge(results).map_err(anyhow::Error::msg)
}

/// Launchers bind each rank to cores (Open MPI binds to one core per rank by default for
/// small jobs): a rank whose threads outnumber the CPUs it may run on measures its binding,
/// not the file system. Say so, with the way out.
pub fn warn_binding(threads: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set for sched_getaffinity to fill.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let n = if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } == 0 {
        unsafe { libc::CPU_COUNT(&set) as usize }
    } else {
        return;
    };
    // Not available_parallelism(): it counts the affinity mask, the very thing checked.
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    if n < threads && n < online {
        fsbench_base::errln!(
            "fsbench: warning: each rank runs {threads} threads but rank {} may only run on {n} of this host's {online} CPUs (the launcher bound it): start mpirun with --bind-to none, or give each rank as many cores (--map-by slot:PE={threads})",
            fsbench_base::cluster::rank()
        );
    }
}
