//! A stream with an asynchronous engine (fio's `io_uring`, and `libaio` and `posixaio`,
//! which fsbench runs through io_uring): up to `depth` reads and writes in flight, each
//! with a buffer of its own. As in fio, a pass's bytes are counted when an I/O is issued,
//! and its latency runs from submission to completion (fio's `clat` for these engines);
//! each call issues at most one I/O, waiting for a completion first when the queue is
//! full. The ring drains before its buffers and the files go away.

use super::*;
use crate::model::stream::Stream;
use io_uring::{opcode, types, IoUring};

struct Slot {
    buf: AlignedBuf,
    busy: bool,
    t0: crate::stats::clock::Stamp,
    dir: usize,
}

pub(super) struct Ring {
    ring: IoUring,
    slots: Vec<Slot>,
    inflight: usize,
}

impl Ring {
    pub(super) fn new(depth: u32, max_bs: u64, rng: &mut Rng) -> Result<Ring, String> {
        // Submitted one at a time: the submission queue need not hold them all; the
        // completion queue (twice as long) must.
        let ring = IoUring::new(depth.next_power_of_two().clamp(2, 16384))
            .map_err(|e| format!("io_uring is not available here ({e}): use ioengine=psync"))?;
        let mut slots = Vec::with_capacity(depth as usize);
        for _ in 0..depth {
            slots.push(Slot {
                buf: AlignedBuf::try_new(max_bs as usize, rng)?,
                busy: false,
                t0: 0,
                dir: 0,
            });
        }
        Ok(Ring {
            ring,
            slots,
            inflight: 0,
        })
    }

    pub(super) fn inflight(&self) -> usize {
        self.inflight
    }

    fn free_slot(&self) -> Option<usize> {
        self.slots.iter().position(|s| !s.busy)
    }

    /// Wait for everything in flight (the kernel must not outlive the buffers).
    pub(super) fn drain(&mut self) {
        while self.inflight > 0 {
            if self.ring.submit_and_wait(1).is_err() {
                break;
            }
            let ids: Vec<u64> = self.ring.completion().map(|c| c.user_data()).collect();
            for id in ids {
                if let Some(s) = self.slots.get_mut(id as usize) {
                    if s.busy {
                        s.busy = false;
                        self.inflight -= 1;
                    }
                }
            }
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        self.drain();
    }
}

impl Worker<'_> {
    /// Record the completions available, waiting for `want` of them first.
    pub(super) fn uring_reap(&mut self, s: &Stream, want: usize) -> Result<(), Fail> {
        let st = self.stream.as_mut().expect("set");
        let ring = st.ring.as_mut().expect("an async stream has its ring");
        if want > 0 {
            loop {
                match ring.ring.submit_and_wait(want.min(ring.inflight)) {
                    Ok(_) => break,
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                    Err(e) => return Err(Fail::Error(format!("io_uring: {e}"))),
                }
            }
        }
        let done: Vec<(u64, i32)> = ring
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        let mut rec = Vec::with_capacity(done.len());
        for (id, res) in done {
            let Some(slot) = ring.slots.get_mut(id as usize) else {
                continue;
            };
            slot.busy = false;
            ring.inflight -= 1;
            rec.push((slot.t0, slot.dir, res));
        }
        for (t0, dir, res) in rec {
            let ns = self.clock.since(t0);
            if res < 0 {
                return Err(Fail::Error(format!(
                    "{}: {}",
                    if dir == 0 { "read" } else { "write" },
                    std::io::Error::from_raw_os_error(-res)
                )));
            }
            let (stat, kind) = if dir == 0 {
                (s.stat_read, FlowopKind::Read)
            } else {
                (s.stat_write, FlowopKind::Write)
            };
            self.done_stat(stat, kind, ns, res as u64);
        }
        Ok(())
    }

    /// Issue one read or write of `len` bytes at `off` of file `fi` through the ring.
    pub(super) fn uring_issue(
        &mut self,
        s: &Stream,
        dir: usize,
        fi: usize,
        off: u64,
        len: u64,
    ) -> Result<Flow, Fail> {
        if self
            .stream
            .as_ref()
            .and_then(|st| st.ring.as_ref())
            .is_some_and(|r| r.free_slot().is_none())
        {
            self.uring_reap(s, 1)?;
        }
        let t0 = self.clock.now();
        let st = self.stream.as_mut().expect("set");
        let fd = st.files[fi].fd;
        let ring = st.ring.as_mut().expect("an async stream has its ring");
        let id = ring.free_slot().expect("a slot was freed above");
        let slot = &mut ring.slots[id];
        let ptr = slot.buf.as_mut_slice().as_mut_ptr();
        let entry = if dir == 0 {
            opcode::Read::new(types::Fd(fd), ptr, len as u32)
                .offset(off)
                .build()
        } else {
            opcode::Write::new(types::Fd(fd), ptr as *const u8, len as u32)
                .offset(off)
                .build()
        }
        .user_data(id as u64);
        slot.busy = true;
        slot.t0 = t0;
        slot.dir = dir;
        // SAFETY: the buffer belongs to the slot, which stays busy (untouched) until its
        // completion is reaped; the ring drains before the slots are dropped.
        let pushed = unsafe { ring.ring.submission().push(&entry) };
        if pushed.is_err() {
            slot.busy = false;
            return Err(Fail::Error("io_uring submission queue full".into()));
        }
        ring.inflight += 1;
        if let Err(e) = ring.ring.submit() {
            return Err(Fail::Error(format!("io_uring submit: {e}")));
        }
        self.uring_reap(s, 0)?;
        Ok(Flow::Continue)
    }
}
