//! Experiments: one plan file sets up every environment, sweeps the factors, repeats, and
//! stores every result.
//!
//! - [`plan`]: the TOML plan, typed and validated with file:line:column errors;
//! - [`target`]: environments (existing directory, loop image, overlayfs, simulated disk,
//!   device settings, aging), each with set-up, read-back and a teardown journal;
//! - [`runner`]: the matrix, its order, cold caches, time limits, progress, resume and the
//!   noise guard; each measurement is a child `fsbench ... --json FILE`;
//! - [`store`]: the SQLite results database;
//! - [`summary`]: `fsbench results`, means, confidence intervals and comparisons.

pub mod cli;
pub mod noise;
pub mod plan;
pub mod runner;
pub mod store;
pub mod summary;
pub mod target;
