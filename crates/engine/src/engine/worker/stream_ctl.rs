//! A fio job's run options on its clone's thread ([`fsbench_model::model::stream::Ctl`]), as fio's
//! `backend.c` applies them: the thread's CPUs, nice value and I/O priority before its
//! first I/O (`cpus_allowed`, `nice`, `prio`/`prioclass`); the end of the stream when a job
//! of its group ended (`exitall`); what an I/O error does (`continue_on_error`: fio's
//! `break_on_this_error`, going past EIO and EILSEQ of the kinds it names, ending the job
//! at any other); the writes `verify_only` plans without doing; and the fresh buffer of
//! every write with `refill_buffers`.

use super::{Fail, Flow, Worker};
use fsbench_model::model::stream::Stream;
use std::sync::atomic::Ordering;

/// The error number in an error's text (Rust's `io::Error` ends it with "(os error N)");
/// EIO when there is none.
pub(super) fn errno_of(msg: &str) -> i32 {
    msg.rsplit_once("(os error ")
        .and_then(|(_, r)| r.split(')').next()?.parse().ok())
        .unwrap_or(libc::EIO)
}

/// fio's `refill_buffers`: the write's buffer filled anew with random data (fio's
/// `fill_random_buf`), from the stream's seed and the write's number.
pub(super) fn refill(out: &mut [u8], seed: u64, n: u64) {
    fsbench_model::fioverify::fill_random(out, seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
}

/// Keep the calling thread on `cpus` (fio's `fio_setaffinity`).
fn set_affinity(cpus: &[usize]) -> Result<(), String> {
    if cpus.is_empty() {
        return Ok(());
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET stays within its size
    // (the CPUs were checked against the machine's count, far below CPU_SETSIZE).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid set of `size` bytes; 0 is the calling thread.
    if unsafe { libc::sched_setaffinity(0, size, &set) } < 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!("cpus_allowed {cpus:?}: sched_setaffinity: {e}"));
    }
    Ok(())
}

/// fio's `nice(o->nice)`: the calling thread's nice value moved by `inc` (Linux keeps one
/// per thread), and its `ioprio_set(IOPRIO_WHO_PROCESS, 0, class, level)`.
fn set_priorities(inc: i32, ioprio: Option<(u32, u32)>) -> Result<(), String> {
    // SAFETY: plain system calls on the calling thread's own id.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
    if inc != 0 {
        // SAFETY: as above; errno is cleared first, as getpriority may return -1.
        let now = unsafe {
            *libc::__errno_location() = 0;
            libc::getpriority(libc::PRIO_PROCESS, tid)
        };
        let to = (now + inc).clamp(-20, 19);
        // SAFETY: as above.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, to) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(format!("nice={inc}: setpriority: {e}"));
        }
    }
    if let Some((class, level)) = ioprio {
        const IOPRIO_WHO_PROCESS: libc::c_int = 1;
        // SAFETY: ioprio_set on the calling thread.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                tid as libc::c_int,
                (class << 13) | level,
            )
        };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            return Err(format!("prioclass={class} prio={level}: ioprio_set: {e}"));
        }
    }
    Ok(())
}

impl Worker<'_> {
    /// fio's `thread_main` before the I/O: the thread's CPUs, nice value and I/O priority.
    /// An error ends the job, as in fio.
    pub(super) fn stream_thread_setup(&mut self, s: &Stream) -> Result<(), String> {
        set_affinity(&s.ctl.cpus)?;
        set_priorities(s.ctl.nice, s.ctl.ioprio)
    }

    /// fio's `exitall`: a job of this stream's group has ended (one of its clones), so
    /// this one ends too (fio's `fio_terminate_threads` for the group).
    pub(super) fn stream_exit_due(&self, s: &Stream) -> bool {
        !s.ctl.exit_with.is_empty()
            && (s.ctl.exit_with.iter())
                .any(|&j| self.sh.streams_ended[j].load(Ordering::Acquire) > 0)
    }

    /// `startdelay`: sleep it, cut short when `exitall` ended the stream's group (fio
    /// then drops the delay). False when the run stopped.
    pub(super) fn stream_delay(&mut self, s: &Stream) -> bool {
        let end = std::time::Instant::now() + std::time::Duration::from_nanos(s.start_delay_ns);
        loop {
            let left = end.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() || self.stream_exit_due(s) {
                return true;
            }
            if !self.sleep(left.min(std::time::Duration::from_millis(10))) {
                return false;
            }
        }
    }

    /// fio's `break_on_this_error` for an error `errno` of a read (`dir` 0), a write (1)
    /// or a verify (EILSEQ): with the kind's `continue_on_error` bit, the error is counted
    /// (fio's `update_error_count`), and the job goes past it when it is one of fio's
    /// non-fatal errors (EIO, EILSEQ). True when it goes on.
    pub(super) fn stream_continues(&mut self, s: &Stream, dir: usize, errno: i32) -> bool {
        let bit = if errno == libc::EILSEQ {
            4
        } else if dir == 0 {
            1
        } else {
            2
        };
        // fio's job error is the first error, whether the job goes on or not.
        self.fio_errno(errno);
        if s.ctl.continue_on & bit == 0 {
            return false;
        }
        self.fio_error(errno);
        errno == libc::EIO || errno == libc::EILSEQ
    }

    /// A read or write of `len` bytes at `off` of file `fi` in direction `dir` failed
    /// (`at`; `None` for a sync, an error of its own kind, or a failure already counted):
    /// it is counted and passed over when `continue_on_error` lets it go on, and
    /// otherwise it is the job's error and ends it, as fio ends a job at its first error.
    pub(super) fn stream_failed(
        &mut self,
        s: &Stream,
        at: Option<(usize, usize, u64, u64)>,
        msg: String,
    ) -> Result<Flow, Fail> {
        let errno = errno_of(&msg);
        let dir = at.map_or(1, |a| a.0);
        if let Some((dir, fi, off, len)) = at {
            // Issued, not done: it counts in fio's I/O count (and in the pass's bytes when
            // the job goes on).
            self.fio_failed_io(dir, true);
            if self.stream_continues(s, dir, errno) {
                self.stream_account(s, dir, fi, off, len, len);
                return Ok(Flow::Continue);
            }
        } else {
            self.fio_errno(errno);
        }
        let stat = if dir == 0 { s.stat_read } else { s.stat_write };
        self.rec.ops[stat].error(|| msg);
        self.stream_end(s)
    }

    /// fio's `do_dry_run` (`verify_only`): the I/O is planned as the job would do it, and
    /// counted, but not done; a write is logged for the verify phase with the seed and
    /// number it would have carried.
    pub(super) fn stream_dry_io(
        &mut self,
        s: &Stream,
        dir: usize,
        (fi, off, len): (usize, u64, u64),
    ) -> Result<Flow, Fail> {
        let logged = (dir == 1 && s.verify.is_some()).then(|| {
            let seed = self.stream_next_write();
            let numberio = self.stream.as_ref().expect("set").issues[1];
            super::stream_verify::planned(seed, (fi, off, len), numberio)
        });
        self.fio_sync_io(dir, len, len, off, 0);
        self.stream_account(s, dir, fi, off, len, len);
        if let Some(l) = logged.filter(|_| s.do_verify) {
            if !self.stream_logged(s, l)? {
                return self.stream_end(s);
            }
        }
        Ok(Flow::Continue)
    }

    /// The stream's thread setup failed: the job's error, and its end.
    pub(super) fn stream_setup_failed(&mut self, s: &Stream, msg: String) -> Result<Flow, Fail> {
        self.rec.ops[s.stat_time].error(|| msg);
        self.stream_end(s)
    }
}
