//! File-system aging: `fsbench age`.
//!
//! - [`profile`]: the target populations (published studies, or a scan);
//! - [`distance`]: how far the live population is from its target;
//! - [`plan`]: which operation comes next (Geriatrix-style fill and churn),
//!   decided from a model so that a seed fixes the whole sequence;
//! - [`exec`]: the operations on disk, through the engine's system-call
//!   wrappers, with the operation log;
//! - [`parallel`]: the operations over several threads, the plan still one;
//! - [`replay`]: Smith–Seltzer replay of the differences between snapshots;
//! - [`selftest`]: `fsbench selftest age`, aging against a bare loop of its operations;
//! - [`args`]: what the command is asked;
//! - [`cli`]: the command, its progress and its report.

pub mod args;
pub mod churn;
pub mod cli;
pub mod distance;
pub mod exec;
pub mod hot;
pub mod nextver;
pub mod parallel;
pub mod plan;
pub mod profile;
pub mod progress;
pub mod record;
pub mod replay;
pub mod report;
pub mod selftest;
