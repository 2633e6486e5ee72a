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
    /// Wait until every rank reaches this point.
    fn barrier(&self);
    /// This rank's measurement ended (its duration, a finish flowop, an exhausted
    /// fileset ...). With stonewalling the others are told to stop.
    fn finished(&self);
    /// Whether another rank's end asks this one to stop (stonewalling); polled by the
    /// run's control loop.
    fn stop_requested(&self) -> bool;
}

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

/// Wait for every rank (returns at once without a cluster).
pub fn barrier() {
    if let Some(c) = get() {
        c.barrier();
    }
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
