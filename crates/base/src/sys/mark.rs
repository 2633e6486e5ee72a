//! Marks in a system-call trace: when fsbench itself is traced (`fsbench trace record`
//! sets [`MARK_ENV`]), the start and end of the measured window are marked by an `access`
//! of a path that cannot exist, which the tracer sees and the trace keeps.

/// Set in the environment of a traced fsbench: mark the measured window.
pub const MARK_ENV: &str = "FSBENCH_TRACE_MARK";
/// The path accessed when the measurement starts.
pub const MARK_START: &str = "/.fsbench-trace-mark/measure-start";
/// The path accessed when the measurement ends.
pub const MARK_END: &str = "/.fsbench-trace-mark/measure-end";

/// Set in the environment of an experiment's background load: the file to create when the
/// measured window starts (after the preparation), which the experiment waits for before it
/// starts the measurement the load runs beside.
pub const READY_ENV: &str = "FSBENCH_READY_FILE";

/// Set in the environment of a background load that starts with the measurement: after
/// its preparation (and [`READY_ENV`]), it waits for this file, which the experiment makes
/// when the measurement's own window starts, so that the load falls inside it.
pub const GO_ENV: &str = "FSBENCH_GO_FILE";

/// Mark the start or end of a measurement when traced (see [`MARK_ENV`]); at the start, also
/// say so to an experiment waiting for this process (see [`READY_ENV`]), and wait for its
/// go-ahead when it gives one (see [`GO_ENV`]).
pub fn mark(path: &str) {
    if path == MARK_START {
        if let Some(f) = std::env::var_os(READY_ENV) {
            // Created once, never truncated or followed: the first start is the one waited for.
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(f);
        }
        if let Some(go) = std::env::var_os(GO_ENV) {
            let go = std::path::PathBuf::from(go);
            while !go.exists() && !crate::cancel::interrupted() {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    }
    if std::env::var_os(MARK_ENV).is_some() {
        if let Ok(c) = std::ffi::CString::new(path) {
            // SAFETY: a valid C string; the result is ignored on purpose.
            unsafe { libc::access(c.as_ptr(), libc::F_OK) };
        }
    }
}
