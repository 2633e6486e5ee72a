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
pub mod confine;
pub mod distill;
pub mod format;
pub mod printer;
pub mod replay;
pub mod stats;

pub use format::{Call, Header, Record};

/// Set by `fsbench trace record` in the traced command's environment: an `fsbench` run under
/// it marks where its measurement starts and ends with a failing `access()` on these paths,
/// so a trace of a model's run can be compared over the measured window only (not its
/// layout). Nothing exists at these paths; the calls cost a microsecond once per run.
pub const MARK_ENV: &str = "FSBENCH_TRACE_MARK";
pub const MARK_START: &str = "/.fsbench-trace-mark/measure-start";
pub const MARK_END: &str = "/.fsbench-trace-mark/measure-end";

/// Mark the start or end of a measurement when traced (see [`MARK_ENV`]).
pub fn mark(path: &str) {
    if std::env::var_os(MARK_ENV).is_some() {
        if let Ok(c) = std::ffi::CString::new(path) {
            // SAFETY: a valid C string; the result is ignored on purpose.
            unsafe { libc::access(c.as_ptr(), libc::F_OK) };
        }
    }
}

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
