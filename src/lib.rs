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
