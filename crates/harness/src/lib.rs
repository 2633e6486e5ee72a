//! The measurement harness of fsbench: the one measurement driver (preparation, repetitions,
//! cache state, probes) and the ranks of a multi-client MPI run. It uses the engine and the
//! crates below it.

pub mod measure;
#[cfg(feature = "mpi")]
pub mod mpirun;
