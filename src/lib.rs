//! fsbench: a file-system benchmarking workbench.
//!
//! The source tree follows one pipeline:
//!
//! ```text
//! workload text (.f file or built-in)  --lang-->   AST with spans
//! AST + overrides (-s var=value)       --model-->  Workload (typed, validated)
//! Workload + target directory          --engine--> filesets on disk, workers running flowops
//! workers' thread-local recorders      --stats-->  Results (one serde value)
//! Results                              --report--> text, JSON, CSV, Markdown
//! ```

pub mod age;
pub mod apps;
pub mod beneath;
pub mod cluster;
pub mod console;
pub mod content;
pub mod disk;
pub mod dist;
pub mod engine;
pub mod exit;
pub mod experiment;
pub mod fileset;
pub mod fuse;
pub mod input;
pub mod lang;
pub mod layout;
pub mod limits;
pub mod model;
#[cfg(feature = "mpi")]
pub mod mpirun;
pub mod remote;
pub mod remount;
pub mod report;
pub mod scan;
pub mod stats;
pub mod trace;
pub mod verify;
pub mod workloads;
