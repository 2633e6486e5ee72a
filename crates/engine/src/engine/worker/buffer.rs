//! The I/O buffer a worker thread starts with, sized from the thread's flowops; the run's
//! memory check (`preflight`) counts the same size.

use fsbench_model::model::{Flowop, Num, Thread};

/// Floor of a thread's I/O buffer.
const MIN_BUFFER: u64 = 4096;
/// A thread's buffer holds at most this much of `memsize` up front; it grows on demand to
/// the largest I/O the thread does.
const MEMSIZE_CAP: u64 = 1 << 20;

/// The I/O buffer a thread starts with: as large as the largest fixed `iosize` it uses (so
/// that its operations never reallocate), and up to 1 MiB of its `memsize` (the region random
/// buffer offsets are drawn from). Filebench allocates `memsize` whole; with many threads
/// that is gigabytes nobody reads from.
pub fn initial_buffer(t: &Thread) -> u64 {
    fn walk(f: &Flowop, m: &mut u64) {
        if let Num::Const(v) = f.iosize {
            *m = (*m).max(v.max(0) as u64);
        }
        for c in &f.children {
            walk(c, m);
        }
    }
    let mut m = MIN_BUFFER;
    for f in &t.flowops {
        walk(f, &mut m);
    }
    m.max(t.memsize.min(MEMSIZE_CAP))
}
