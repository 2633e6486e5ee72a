//! Traces: record what a real program asks of the file system (`strace`), replay it on any
//! file system, and distil it into a workload in the Filebench language.
//!
//! ```text
//! program --record (strace -f)--> strace log --capture--> Records --format--> trace file
//! trace file --replay--> calls issued again in a marked run directory --> Results
//! trace file --stats--> counts, sizes, sequentiality   --distill--> model.f
//! ```

pub mod capture;
pub mod cli;
pub mod distill;
pub mod format;
pub mod replay;
pub mod stats;

pub use format::{Call, Header, Record};

/// The marks of the measured window (set by `fsbench trace record`'s environment).
pub use crate::sys::mark::{mark, MARK_END, MARK_ENV, MARK_START};

/// The measured window of a trace: the records between the first start mark and the end
/// mark after it (all records when unmarked), marks excluded.
pub fn measured_window(records: &[Record]) -> std::ops::Range<usize> {
    let is = |r: &Record, p: &str| r.path.as_deref() == Some(p);
    match records.iter().position(|r| is(r, MARK_START)) {
        Some(s) => {
            let e = records[s..]
                .iter()
                .position(|r| is(r, MARK_END))
                .map_or(records.len(), |e| s + e);
            s + 1..e
        }
        None => 0..records.len(),
    }
}
