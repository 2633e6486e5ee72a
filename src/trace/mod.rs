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

/// [`measured_window`] of a trace file, read one record at a time: the positions of the
/// records in the window.
pub fn measured_window_of(path: &std::path::Path) -> anyhow::Result<std::ops::Range<u64>> {
    let mut rd = format::Reader::open(path)?;
    let (mut start, mut i) = (None, 0u64);
    while let Some(r) = rd
        .next_record()
        .map_err(|e| anyhow::anyhow!("trace {}: {e}", path.display()))?
    {
        match (start, r.path.as_deref()) {
            (None, Some(MARK_START)) => start = Some(i + 1),
            (Some(s), Some(MARK_END)) => return Ok(s..i),
            _ => {}
        }
        i += 1;
    }
    Ok(start.map_or(0..i, |s| s..i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_streamed_window_is_the_window() {
        let rec = |p: &str| Record {
            path: Some(p.into()),
            ..Default::default()
        };
        let f = std::env::temp_dir().join(format!("fsbench-window-{}.trace", std::process::id()));
        for recs in [
            vec![
                rec("/a"),
                rec(MARK_START),
                rec("/b"),
                rec("/c"),
                rec(MARK_END),
                rec("/d"),
            ],
            vec![rec("/a"), rec(MARK_START), rec("/b")],
            vec![rec("/a"), rec("/b")],
            vec![],
        ] {
            format::write_all(&f, &Header::default(), &recs).unwrap();
            let w = measured_window(&recs);
            assert_eq!(
                measured_window_of(&f).unwrap(),
                w.start as u64..w.end as u64
            );
        }
        std::fs::remove_file(&f).unwrap();
    }
}
