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

//! The modules stand in layers. A module uses modules of its own layer or below, never one
//! above, and no two modules use each other: `tests/it/architecture.rs` reads `src/` and holds
//! the code to the layers written here (one `// layer NAME` line, then its modules).

// layer commands: what the binary's subcommands call (main.rs is here too)
pub mod complete;
pub mod experiment;
pub mod fiocmd;
pub mod manpage;
pub mod runcmd;
pub mod selftestcmd;

// layer benchmarks: producers of work for the engine, consumers of its Results
pub mod age;
pub mod apps;
pub mod disk;
pub mod nfs;
pub mod remote;
pub mod trace;
pub mod workload_run;

// layer harness: the one measurement driver and the ranks of a multi-client run
pub mod measure;
#[cfg(feature = "mpi")]
pub mod mpirun;

// layer engine: filesets on disk, workers running flowops, tree walks and layout scores
pub mod engine;
pub mod fileset;
pub mod layout;
pub mod scan;

// layer results: recorders and Results, and their renderers
pub mod report;
pub mod stats;

// layer model: the workload language and what it resolves to
pub mod content;
pub mod dist;
pub mod fio;
pub mod fioverify;
pub mod lang;
pub mod model;
pub mod verify;
pub mod workloads;

// layer bottom: system calls, units, interruption, exit status, cluster and remount seams,
// named daemons' state and processes
pub mod beneath;
pub mod cancel;
pub mod cluster;
pub mod console;
pub mod created;
pub mod daemon;
pub mod exit;
pub mod export;
pub mod fuse;
pub mod input;
pub mod libnfs;
pub mod limits;
pub mod owned;
pub mod remount;
pub mod sys;
pub mod units;
pub mod walk;
