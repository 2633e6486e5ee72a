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

//! This crate is the top of the workspace: the commands the binary's subcommands call. The
//! layers below are crates of their own (`crates/*`, docs/architecture.md): tools
//! (benchmarks, aging, traces, devices), harness, engine, results, model and base. It may use
//! all of them; none of them uses it.

pub mod complete;
pub mod experiment;
pub mod fiocmd;
pub mod manpage;
pub mod runcmd;
pub mod selftestcmd;
