//! Application benchmarks from the literature: PostMark, the Andrew benchmark, a recursive
//! `find`, a compile-like build. Each is another producer of work for the same measurement
//! path as `fsbench run`: operations go through [`fsbench_base::sys::io`], are timed into the
//! thread-local [`OpRecorder`]s of a [`Recorder`], and end as one [`Results`] value with one
//! "flowop" per operation type, so the text and JSON reports work unchanged.
//!
//! The scheduler micro-workloads of the same literature are plain built-in personalities
//! (`workloads/seqread2.f`, `tpcb.f`, ...), run by `fsbench run`.

pub mod andrew;
pub mod build;
pub mod cli;
pub mod find;
pub mod hpc;
pub mod postmark;
pub mod prune;
pub mod read;

use fsbench_model::model::FlowopKind;
use fsbench_results::stats::{self, OpRecorder, Recorder, Results};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The operation types of one application benchmark: a name and the flowop kind whose IO
/// class it counts as in the summary.
pub type OpTable = &'static [(&'static str, FlowopKind)];

/// Time `f` (one system call or one whole-file operation) into `rec`, counting `bytes`
/// on success and the error (with its first message) otherwise.
#[inline]
pub fn timed<T>(
    rec: &mut OpRecorder,
    bytes: u64,
    what: impl FnOnce() -> String,
    f: impl FnOnce() -> std::io::Result<T>,
) -> Option<T> {
    let clock = stats::clock::global();
    let t0 = clock.now();
    let r = f();
    let ns = clock.since(t0);
    match r {
        Ok(v) => {
            rec.record(ns, bytes);
            Some(v)
        }
        Err(e) => {
            rec.error(|| format!("{}: {e}", what()));
            None
        }
    }
}

/// A new recorder with one slot per operation type of `ops`.
pub fn recorder(ops: OpTable) -> Recorder {
    Recorder::new(ops.len())
}

/// What an application benchmark hands to [`results`] besides its recorders.
pub struct AppRun<'a> {
    pub name: &'a str,
    /// How it was configured: shown as the Results' `variables`.
    pub variables: BTreeMap<String, String>,
    pub seed: u64,
    pub run_dir: &'a Path,
    pub started_at: f64,
    pub duration_s: f64,
    pub threads: u64,
    pub notes: Vec<String>,
}

/// One [`Results`] value from an application benchmark's merged recorder.
pub fn results(run: AppRun<'_>, ops: OpTable, merged: &Recorder) -> Results {
    let names: Vec<(String, FlowopKind)> = ops.iter().map(|(n, k)| (n.to_string(), *k)).collect();
    // Application benchmarks stamp and check no data.
    let (flowops, summary) = stats::summarize(&names, merged, run.duration_s, false);
    Results {
        variables: run.variables,
        started_at: run.started_at,
        duration_s: run.duration_s,
        interrupted: fsbench_base::cancel::interrupted(),
        threads: run.threads,
        flowops,
        summary,
        notes: run.notes,
        host: stats::host::collect(run.run_dir),
        ..Results::new(
            run.name,
            &format!("app:{}", run.name),
            run.seed,
            run.run_dir,
        )
    }
}

/// Seconds since the Unix epoch.
pub fn now_epoch() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A path as a NUL-terminated string for [`fsbench_base::sys::io`].
pub fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("paths built by fsbench have no NUL")
}

/// A reusable path buffer: a base directory plus a relative part, NUL-terminated, so the
/// per-operation path costs no allocation once it has grown.
pub struct PathBuf0 {
    buf: Vec<u8>,
    base_len: usize,
}

impl PathBuf0 {
    pub fn new(base: &Path) -> PathBuf0 {
        let mut buf = base.as_os_str().as_bytes().to_vec();
        buf.push(b'/');
        let base_len = buf.len();
        PathBuf0 { buf, base_len }
    }

    /// `base/rel` as a C string borrowed from the buffer.
    pub fn with(&mut self, rel: impl std::fmt::Display) -> &std::ffi::CStr {
        use std::io::Write;
        self.buf.truncate(self.base_len);
        let _ = write!(self.buf, "{rel}");
        self.buf.push(0);
        std::ffi::CStr::from_bytes_with_nul(&self.buf).expect("one NUL at the end")
    }
}

/// Process CPU time so far: (user, system) seconds, children included (compilers).
pub fn process_cpu(children: bool) -> (f64, f64) {
    fsbench_results::stats::rusage_cpu(if children {
        libc::RUSAGE_CHILDREN
    } else {
        libc::RUSAGE_SELF
    })
}

/// Write `data` to a new file at `path` (created or truncated): open, write, close.
pub fn write_file(path: &std::ffi::CStr, data: &[u8]) -> std::io::Result<()> {
    use fsbench_base::sys::io;
    let fd = io::open(
        path,
        io::OpenHow {
            create: true,
            writeonly: true,
            ..Default::default()
        },
    )?;
    let mut off = 0;
    let r = loop {
        if off >= data.len() {
            break Ok(());
        }
        match io::pwrite(fd, &data[off..], off as u64) {
            Ok(0) => break Err(std::io::Error::other("write returned 0")),
            Ok(n) => off += n,
            Err(e) => break Err(e),
        }
    };
    io::close(fd)?;
    r
}

/// Read the whole file at `path` into `buf` (replacing its contents, grown as needed) in
/// `block`-sized requests, for callers that use the contents (a copy, an object made from
/// a source); returns the number of bytes read, which are `buf[..n]`.
pub fn slurp_file(path: &std::ffi::CStr, buf: &mut Vec<u8>, block: usize) -> std::io::Result<u64> {
    use fsbench_base::sys::io;
    let fd = io::open(
        path,
        io::OpenHow {
            readonly: true,
            ..Default::default()
        },
    )?;
    let mut off = 0usize;
    let r = loop {
        if buf.len() < off + block {
            buf.resize(off + block, 0);
        }
        match io::pread(fd, &mut buf[off..off + block], off as u64) {
            Ok(0) => break Ok(off as u64),
            Ok(n) => off += n,
            Err(e) => break Err(e),
        }
    };
    io::close(fd)?;
    r
}

/// Read the whole file at `path` in `block`-sized requests into `buf` (which only ever
/// holds one block: the contents are not kept); returns the number of bytes read. Only a
/// regular file is read, opened without waiting (a FIFO put where a file was listed would
/// hold its open for ever) and no further than a block past its size when opened (a pseudo file's size
/// says nothing of what it yields: `/proc/self/pagemap` reads without end).
pub fn read_file(path: &std::ffi::CStr, buf: &mut Vec<u8>, block: usize) -> std::io::Result<u64> {
    use fsbench_base::sys::io;
    // SAFETY: a NUL-terminated path; no O_CREAT, so no mode.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let size = match fsbench_base::beneath::fstat(fd) {
        Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFREG => st.st_size as u64,
        Ok(_) => {
            io::close(fd)?;
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file (any more); not read",
            ));
        }
        Err(e) => {
            io::close(fd)?;
            return Err(e);
        }
    };
    if buf.len() < block {
        buf.resize(block, 0);
    }
    // To its end, as `cat` reads (the last request finds it); no further than a block past
    // its size, should it grow meanwhile.
    let mut off = 0u64;
    let r = loop {
        match io::pread(fd, &mut buf[..block], off) {
            Ok(0) => break Ok(off),
            Ok(n) => off += n as u64,
            Err(e) => break Err(e),
        }
        if off > size {
            break Ok(off);
        }
    };
    io::close(fd)?;
    r
}

/// Deterministic generated C source text: `funcs` small functions named after `tag`, with
/// comment padding up to about `size` bytes. Valid C that a compiler accepts with
/// `-c`, so the Andrew compile phase and the build workload look like real sources.
pub fn c_source(tag: &str, includes: &[String], size: usize, rng: &mut impl rand::Rng) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(size + 256);
    let _ = writeln!(s, "/* {tag}.c: generated by fsbench */");
    for i in includes {
        let _ = writeln!(s, "#include \"{i}\"");
    }
    let mut n = 0;
    while s.len() < size {
        let (a, b, c) = (
            rng.random_range(1..100u32),
            rng.random_range(1..31u32),
            rng.random_range(1..1000u32),
        );
        let _ = writeln!(
            s,
            "\n/* Step {n} of {tag}: mixes its argument with constants {a}, {b} and {c}. */\n\
             int {tag}_f{n}(int x)\n{{\n    int acc = x * {a} + {c};\n    \
             for (int i = 0; i < {b}; i++)\n        acc ^= (acc << 1) + i;\n    \
             return acc;\n}}"
        );
        n += 1;
    }
    s
}
