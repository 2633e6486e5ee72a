//! Experiments: one plan file sets up every environment, sweeps the factors, repeats, and
//! stores every result.
//!
//! - [`plan`]: the TOML plan, typed and validated with file:line:column errors;
//! - [`target`]: environments (existing directory, loop image, overlayfs, simulated disk,
//!   device settings, aging), each with set-up, read-back and a teardown journal;
//! - [`runner`]: the matrix, its order, cold caches, time limits, progress, resume and the
//!   noise guard; each measurement is a child `fsbench ... --json FILE`;
//! - [`options`]: pass-through mkfs and mount options, checked to be options only;
//! - [`store`]: the SQLite results database;
//! - [`summary`]: `fsbench results`, means, confidence intervals and comparisons;
//! - [`runs`]: every run as a row (`fsbench results --runs-csv/--runs-json`);
//! - [`report_input`]: an output directory as the HTML report's input.

pub mod cli;
pub mod handoff;
pub mod headline;
pub mod noise;
pub mod options;
pub mod output;
pub mod plan;
pub mod report_input;
pub mod runner;
pub mod runs;
pub mod store;
pub mod summary;
pub mod target;

/// The running fsbench binary, for the child processes that do the measuring.
///
/// `/proc/self/exe` where there is one: it still opens when the file on disk has been
/// replaced (a rebuild during a long experiment), where the path `current_exe` returns
/// would then run the new binary or nothing.
pub fn self_exe() -> anyhow::Result<std::path::PathBuf> {
    let proc = std::path::PathBuf::from("/proc/self/exe");
    if proc.exists() {
        return Ok(proc);
    }
    use anyhow::Context;
    std::env::current_exe().context("finding the fsbench binary")
}
