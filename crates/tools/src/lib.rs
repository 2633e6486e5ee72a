//! fsbench's benchmarks and devices: workload runs, application benchmarks (PostMark, Andrew,
//! build, web server), aging, traces, and the simulated disk, simulated remote and NFS server
//! daemons. They produce work for the harness and engine and consume their results.

pub mod age;
pub mod apps;
pub mod disk;
pub mod nfs;
pub mod remote;
pub mod trace;
pub mod workload_run;
