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

use format::Record;

use fsbench_base::sys::mark::{MARK_END, MARK_START};

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

/// A directory of fsbench's own for scratch files (an strace log, a model's trace): made
/// with `mkdtemp` (a fresh name, mode 0700) in the temporary directory and removed with what
/// is in it when dropped. A fixed or guessable name there (`/tmp/fsbench-strace-PID.log`)
/// could be a link planted by another user, and writing it as root would clobber its target.
pub struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    pub fn new(tag: &str) -> std::io::Result<ScratchDir> {
        use std::os::unix::ffi::OsStrExt;
        // mkdtemp's template: the last six characters, all `X`, become a unique suffix.
        let template = format!("fsbench-{tag}-{}", "X".repeat(6));
        let t = std::env::temp_dir().join(template);
        let mut b = std::ffi::CString::new(t.as_os_str().as_bytes())
            .map_err(std::io::Error::other)?
            .into_bytes_with_nul();
        // SAFETY: a NUL-terminated template the call rewrites in place.
        if unsafe { libc::mkdtemp(b.as_mut_ptr().cast()) }.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        b.pop();
        Ok(ScratchDir(std::path::PathBuf::from(
            std::ffi::OsStr::from_bytes(&b),
        )))
    }
    pub fn join(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fsbench_base::owned::path::remove_tree(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::format::Header;
    use super::*;

    #[test]
    fn scratch_dirs_are_private_and_removed() {
        use std::os::unix::fs::PermissionsExt;
        let d = ScratchDir::new("t").unwrap();
        let p = d.0.clone();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o700
        );
        std::fs::write(d.join("x"), b"x").unwrap();
        assert_ne!(ScratchDir::new("t").unwrap().0, p, "a fresh name each time");
        drop(d);
        assert!(!p.exists());
    }

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
