//! Many clients: what a run needs to know when it is one rank of several (under `mpirun`
//! with the `mpi` feature), behind one small interface so that the engine and the
//! benchmarks do not depend on MPI. Without a cluster every call here is a no-op for a
//! single client: rank 0 of 1.

use std::sync::OnceLock;

/// The services a multi-client run provides. Calls come from the thread that started the
/// run (the one that initialised the cluster), never from workers.
pub trait Cluster: Send + Sync {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// Wait until every rank reaches this point. False when another rank failed: the caller
    /// stops what it was about to do and returns (its error says why).
    fn barrier(&self) -> bool;
    /// Wait until every rank reaches this point, without agreeing on a start instant (the
    /// end of a timed phase). False when another rank failed.
    fn sync(&self) -> bool;
    /// This rank's measurement ended (its duration, a finish flowop, an exhausted
    /// fileset ...). With stonewalling the others are told to stop.
    fn finished(&self);
    /// Whether another rank's end asks this one to stop (stonewalling); polled by the
    /// run's control loop.
    fn stop_requested(&self) -> bool;
    /// Rank 0's bytes on every rank (`data` is rank 0's; others pass None).
    fn broadcast(&self, data: Option<Vec<u8>>) -> Vec<u8>;
}

/// Process-wide: MPI is initialised once per process, and the ranks are processes; what a
/// run asks of the cluster (`--stonewall`) is given to it when it is installed.
static CLUSTER: OnceLock<Box<dyn Cluster>> = OnceLock::new();

/// Install the cluster (once, before the run).
pub fn install(c: Box<dyn Cluster>) {
    let _ = CLUSTER.set(c);
}

pub fn get() -> Option<&'static dyn Cluster> {
    CLUSTER.get().map(|b| b.as_ref())
}

/// This client's rank (0 without a cluster).
pub fn rank() -> usize {
    get().map_or(0, |c| c.rank())
}

/// The number of clients (1 without a cluster).
pub fn size() -> usize {
    get().map_or(1, |c| c.size())
}

/// Wait for every rank (returns at once without a cluster). False when another rank
/// failed: stop and return an error ([`failed_elsewhere`]).
pub fn barrier() -> bool {
    get().is_none_or(|c| c.barrier())
}

/// Wait for every rank at the end of a timed phase (no common start to wait for). False
/// when another rank failed.
pub fn sync() -> bool {
    get().is_none_or(|c| c.sync())
}

/// The error of a rank that stops because another failed.
pub fn failed_elsewhere() -> anyhow::Error {
    anyhow::anyhow!(
        "rank {}: stopped because another rank failed (its error is reported by rank 0)",
        rank()
    )
}

/// This rank's measurement ended.
pub fn finished() {
    if let Some(c) = get() {
        c.finished();
    }
}

/// Whether the run should stop because another rank ended (stonewalling).
pub fn stop_requested() -> bool {
    get().is_some_and(|c| c.stop_requested())
}

/// Rank 0's string on every rank (`mine` as it is without a cluster).
pub fn broadcast_string(mine: Option<String>) -> String {
    match get() {
        Some(c) => String::from_utf8_lossy(&c.broadcast(mine.map(String::into_bytes))).into_owned(),
        None => mine.unwrap_or_default(),
    }
}
