//! Asynchronous writes for `aiowrite`/`aiowait`, one io_uring per worker thread.
//!
//! Filebench uses POSIX `aio_write` and `aiowait` reaps "about half" of the outstanding
//! requests (at least one). We submit each `aiowrite` at once (one `io_uring_enter`), and
//! `aiowait` waits until at least half of the outstanding writes (at least one) have
//! completed, then reaps every completion that is there. Results count **completions**:
//! ops, bytes actually written and latency from submission until the worker saw the
//! completion, all under the `aiowrite` flowop's name (Filebench records the submission
//! instead). The worker looks at every flowop boundary (no system call: the completion queue
//! is shared memory), so the latency is an upper bound that is tight unless the thread sits
//! in a long blocking flowop (a `semblock`, say) while its writes finish.
//!
//! Where io_uring cannot be set up (old kernel, seccomp, `io_uring_disabled`), the worker
//! prints one warning for the run and writes synchronously with `pwrite`: each `aiowrite`
//! then completes before it returns and `aiowait` has nothing to wait for.

use io_uring::{opcode, types, IoUring};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Most writes one worker keeps in flight; a further `aiowrite` first reaps one.
const MAX_INFLIGHT: usize = 256;

/// Whether the fallback was said: process-wide, as io_uring's absence is the kernel's, and
/// said once for every worker of every run in the process.
static WARNED: AtomicBool = AtomicBool::new(false);

/// One finished write.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    /// The `aiowrite` flowop's statistics slot.
    pub stat: usize,
    pub ns: u64,
    /// Bytes written, or the error number.
    pub result: Result<u64, i32>,
}

/// A verified asynchronous write: its own copy of the data (the worker's buffer is reused
/// while the write is in flight) and the file state to update when it lands.
pub struct Verified {
    pub data: Vec<u8>,
    pub state: *const fsbench_model::verify::FileState,
    pub gen: u32,
    pub off: u64,
    pub done: bool,
}

impl Verified {
    fn landed(&mut self, n: u64) {
        if !self.done {
            self.done = true;
            // SAFETY: file states live in the run's filesets, which outlive every worker
            // and so every write in flight (workers drain before they end).
            unsafe { &*self.state }.end_write(self.gen, self.off, n);
        }
    }
}

impl Drop for Verified {
    fn drop(&mut self) {
        // Never submitted, or lost: the file's state must not wait for it.
        self.landed(0);
    }
}

pub struct Aio {
    ring: Option<IoUring>,
    /// Indexed by user_data: (stat, submitted at, verified data) of writes in flight.
    slots: Vec<Option<(usize, Instant, Option<Verified>)>>,
    free: Vec<usize>,
    outstanding: usize,
    /// Completions reaped and not yet recorded by the worker.
    pub done: Vec<Completion>,
}

impl Aio {
    pub fn setup() -> Aio {
        let ring = match IoUring::new(MAX_INFLIGHT as u32) {
            Ok(r) => Some(r),
            Err(e) => {
                if !WARNED.swap(true, Ordering::Relaxed) {
                    fsbench_base::errln!(
                        "fsbench: warning: io_uring is not available ({e}); aiowrite falls back \
                         to synchronous pwrite and aiowait has nothing to wait for"
                    );
                }
                None
            }
        };
        Aio {
            ring,
            slots: Vec::new(),
            free: Vec::new(),
            outstanding: 0,
            done: Vec::new(),
        }
    }

    pub fn outstanding(&self) -> usize {
        self.outstanding
    }

    /// Start writing `len` bytes at `ptr` to `fd` at `off`.
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay valid and unchanged until the write is reaped by
    /// [`Aio::wait`] (the worker's I/O buffer lives as long as the worker, which drains
    /// before dropping it).
    pub unsafe fn write(
        &mut self,
        fd: RawFd,
        ptr: *const u8,
        len: usize,
        off: u64,
        stat: usize,
        verified: Option<Verified>,
    ) -> io::Result<()> {
        // A verified write goes from its own copy.
        let (ptr, len) = match &verified {
            Some(v) => (v.data.as_ptr(), v.data.len()),
            None => (ptr, len),
        };
        if self.ring.is_none() {
            let t0 = Instant::now();
            let r = libc::pwrite(fd, ptr.cast(), len, off as libc::off_t);
            let ns = t0.elapsed().as_nanos() as u64;
            let result = if r < 0 {
                Err(io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO))
            } else {
                Ok(r as u64)
            };
            if let Some(mut v) = verified {
                v.landed(*result.as_ref().unwrap_or(&0));
            }
            self.done.push(Completion { stat, ns, result });
            return Ok(());
        }
        if self.outstanding >= MAX_INFLIGHT {
            self.wait(1)?;
        }
        let id = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        let sqe = opcode::Write::new(types::Fd(fd), ptr, len as u32)
            .offset(off)
            .build()
            .user_data(id as u64);
        let ring = self.ring.as_mut().expect("checked above");
        self.slots[id] = Some((stat, Instant::now(), verified));
        // SAFETY: the caller keeps the buffer valid until completion; the queue has room
        // because at most MAX_INFLIGHT entries are outstanding and each is submitted at once.
        if ring.submission().push(&sqe).is_err() {
            // Dropping the verified copy tells the file's state nothing landed.
            self.slots[id] = None;
            self.free.push(id);
            return Err(io::Error::other("io_uring submission queue full"));
        }
        self.outstanding += 1;
        loop {
            match ring.submit() {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Reap what has completed, without a system call (the completion queue is shared
    /// memory). Workers call this at flowop boundaries while writes are in flight, so a
    /// completion's latency ends close to when it happened.
    pub fn poll(&mut self) {
        let _ = self.wait(0);
    }

    /// Wait until `want` (at most the outstanding count) writes have completed, then reap
    /// every completion available into [`Aio::done`].
    pub fn wait(&mut self, want: usize) -> io::Result<()> {
        let want = want.min(self.outstanding);
        let Some(ring) = self.ring.as_mut() else {
            return Ok(());
        };
        if want > 0 {
            loop {
                match ring.submit_and_wait(want) {
                    Ok(_) => break,
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                    Err(e) => return Err(e),
                }
            }
        }
        let now = Instant::now();
        for cqe in ring.completion() {
            let id = cqe.user_data() as usize;
            if let Some((stat, t0, verified)) = self.slots.get_mut(id).and_then(|s| s.take()) {
                self.free.push(id);
                self.outstanding -= 1;
                let r = cqe.result();
                if let Some(mut v) = verified {
                    v.landed(if r < 0 { 0 } else { r as u64 });
                }
                self.done.push(Completion {
                    stat,
                    ns: now.saturating_duration_since(t0).as_nanos() as u64,
                    result: if r < 0 { Err(-r) } else { Ok(r as u64) },
                });
            }
        }
        Ok(())
    }

    /// Wait for everything in flight (before fds close and buffers go away).
    pub fn drain(&mut self) {
        while self.outstanding > 0 {
            if self.wait(self.outstanding).is_err() {
                break;
            }
        }
    }
}

impl Drop for Aio {
    fn drop(&mut self) {
        // The kernel may still write from the worker's buffer: never let it outlive us.
        self.drain();
    }
}
