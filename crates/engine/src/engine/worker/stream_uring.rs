//! A stream with an asynchronous engine (fio's `io_uring`, and `libaio` and `posixaio`,
//! which fsbench runs through io_uring): up to `depth` reads, writes and syncs in flight,
//! each with a buffer (fio's `io_u`) of its own. As fio's `do_io` and `td_io_queue`:
//!
//! - an I/O is queued, and the queue submitted once `iodepth_batch_submit` are waiting
//!   (or when completions are awaited);
//! - completions are reaped only when every slot is busy: at least
//!   `iodepth_batch_complete_min` (at least one), at most `iodepth_batch_complete_max`;
//!   and all of them before the stream sleeps (pacing, think time) and at the end;
//! - an fsync (fdatasync) every N writes is queued like the others, without ordering
//!   against the writes in flight (no drain, as fio's io_uring engine);
//! - a pass's bytes count when an I/O is queued; its latency runs from then to its reaping
//!   (fio's `clat` for these engines).
//!
//! The ring drains before its buffers and the files go away.

use super::{Fail, Flow, Worker};
use fsbench_base::sys::io::AlignedBuf;
use fsbench_model::dist::Rng;
use fsbench_model::model::stream::Stream;
use fsbench_model::model::FlowopKind;
use io_uring::{opcode, types, IoUring};
use std::os::fd::RawFd;

struct Slot {
    buf: AlignedBuf,
    busy: bool,
    t0: fsbench_results::stats::clock::Stamp,
    /// 0 read, 1 write, [`SYNC`] or [`DATASYNC`].
    dir: usize,
    /// The file and offset of a read or write.
    fi: usize,
    off: u64,
    /// When it was submitted (fio's `issue_time`), and for a verify-phase read what its
    /// blocks are checked against when it completes.
    sub: fsbench_results::stats::clock::Stamp,
    check: Option<fsbench_model::fioverify::Want>,
    /// Bytes asked.
    len: u64,
}

const SYNC: usize = 2;
const DATASYNC: usize = 3;

pub(super) struct Ring {
    ring: IoUring,
    slots: Vec<Slot>,
    inflight: usize,
    /// Queued and not yet submitted, and their slots.
    queued: u32,
    unsub: Vec<usize>,
    /// fio's `iodepth_batch_submit`, `iodepth_batch_complete_min` and `_max` (as fio
    /// settles them: the batch at most the depth, the max at least the min).
    batch: u32,
    complete_min: u32,
    complete_max: u32,
    /// `fixedbufs` and `registered_files`: the slot's registered buffer, and the file's
    /// registered index, are used instead of the pointer and the descriptor.
    fixed: (bool, bool),
}

impl Ring {
    pub(super) fn new(s: &Stream, rng: &mut Rng, fds: &[RawFd]) -> Result<Ring, String> {
        let (depth, max_bs) = (s.depth, s.max_bs());
        let [hipri, fixedbufs, registered] = s.uring_opts;
        // Submitted one at a time: the submission queue need not hold them all; the
        // completion queue (twice as long) must. `hipri`: completions are polled for.
        let mut b = IoUring::builder();
        if hipri {
            b.setup_iopoll();
        }
        let ring = b
            .build(depth.next_power_of_two().clamp(2, 16384))
            .map_err(|e| format!("io_uring is not available here ({e}): use ioengine=psync"))?;
        let mut slots = Vec::with_capacity(depth as usize);
        for _ in 0..depth {
            slots.push(Slot {
                buf: AlignedBuf::try_new(max_bs as usize, rng)?,
                busy: false,
                t0: 0,
                dir: 0,
                fi: 0,
                off: 0,
                sub: 0,
                check: None,
                len: 0,
            });
        }
        if fixedbufs {
            let iov: Vec<libc::iovec> = (slots.iter_mut())
                .map(|sl| libc::iovec {
                    iov_base: sl.buf.as_mut_slice().as_mut_ptr().cast(),
                    iov_len: sl.buf.as_slice().len(),
                })
                .collect();
            // SAFETY: the buffers live in the slots, which outlive the ring's use of them
            // (the ring drains before the slots are dropped, and unregisters on drop).
            unsafe { ring.submitter().register_buffers(&iov) }
                .map_err(|e| format!("io_uring: registering the buffers (fixedbufs): {e}"))?;
        }
        if registered {
            ring.submitter()
                .register_files(fds)
                .map_err(|e| format!("io_uring: registering the files (registered_files): {e}"))?;
        }
        let [batch, cmin, cmax] = s.batch;
        Ok(Ring {
            fixed: (fixedbufs, registered),
            ring,
            slots,
            inflight: 0,
            queued: 0,
            unsub: Vec::with_capacity(depth as usize),
            batch: if batch == 0 || batch > depth {
                depth
            } else {
                batch
            },
            complete_min: cmin,
            complete_max: cmax.max(cmin),
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

/// A read (`dir` 0) or write of `len` bytes at `off` of file `fi` (descriptor `fd`) into
/// or from slot `id`'s buffer, with the registered buffer and file when the job asks.
fn rw_entry(
    ring: &mut Ring,
    id: usize,
    (dir, fi, fd): (usize, usize, RawFd),
    off: u64,
    len: u64,
) -> io_uring::squeue::Entry {
    let ptr = ring.slots[id].buf.as_mut_slice().as_mut_ptr();
    let (fixedbufs, registered) = ring.fixed;
    macro_rules! build {
        ($target:expr) => {
            match (dir, fixedbufs) {
                (0, false) => opcode::Read::new($target, ptr, len as u32)
                    .offset(off)
                    .build(),
                (0, true) => opcode::ReadFixed::new($target, ptr, len as u32, id as u16)
                    .offset(off)
                    .build(),
                (_, false) => opcode::Write::new($target, ptr as *const u8, len as u32)
                    .offset(off)
                    .build(),
                (_, true) => {
                    opcode::WriteFixed::new($target, ptr as *const u8, len as u32, id as u16)
                        .offset(off)
                        .build()
                }
            }
        };
    }
    if registered {
        build!(types::Fixed(fi as u32))
    } else {
        build!(types::Fd(fd))
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        self.drain();
    }
}

impl Worker<'_> {
    /// fio's `td_io_getevents`: submit what is queued, wait for `min` completions, and
    /// record at most `max` of those available (all, with `usize::MAX`).
    pub(super) fn uring_reap(&mut self, s: &Stream, min: usize, max: usize) -> Result<(), Fail> {
        // fio's td_io_getevents commits what is queued, then its io_uring engine takes
        // what the completion queue holds, entering the kernel only to wait for more.
        self.uring_submit()?;
        let st = self.stream.as_mut().expect("set");
        let ring = st.ring.as_mut().expect("an async stream has its ring");
        let min = min.min(ring.inflight);
        let max = max.max(min);
        let mut done: Vec<(u64, i32)> = Vec::new();
        loop {
            done.extend(
                ring.ring
                    .completion()
                    .take(max - done.len())
                    .map(|c| (c.user_data(), c.result())),
            );
            if done.len() >= min {
                break;
            }
            match ring.ring.submit_and_wait(min - done.len()) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err(Fail::Error(format!("io_uring: {e}"))),
            }
        }
        let mut rec = Vec::with_capacity(done.len());
        for (id, res) in done {
            let Some(slot) = ring.slots.get_mut(id as usize) else {
                continue;
            };
            slot.busy = false;
            ring.inflight -= 1;
            // A verifying job's reads, and verify-phase reads, are checked once recorded.
            let check = slot.check.is_some() || (s.verify.is_some() && !s.writes && slot.dir == 0);
            let data = (check && res > 0)
                .then(|| (slot.buf.as_slice()[..res as usize].to_vec(), slot.check));
            let asked = slot.len;
            rec.push((
                (slot.t0, slot.sub),
                slot.dir,
                res,
                (slot.fi, slot.off, asked),
                data,
            ));
        }
        if !rec.is_empty() {
            self.fio_completed(rec.len() as u64);
        }
        for ((t0, sub), dir, res, (fi, off, asked), data) in rec {
            let now = self.clock.now();
            let ns = self.clock.delta(t0, now);
            let (stat, kind, what) = match dir {
                0 => (s.stat_read, FlowopKind::Read, "read"),
                1 => (s.stat_write, FlowopKind::Write, "write"),
                SYNC => (s.stat_sync, FlowopKind::Fsync, "fsync"),
                _ => (s.stat_datasync, FlowopKind::Fsync, "fdatasync"),
            };
            if res < 0 {
                // continue_on_error: counted (issued, not done), and the job goes on.
                // (A sync's error counts as a write's, as in fio.)
                let goes_on = self.stream_continues(s, dir.min(1), -res);
                if dir < SYNC {
                    self.fio_failed_io(dir, false);
                }
                if goes_on {
                    continue;
                }
                return Err(Fail::Error(format!(
                    "{what}: {}",
                    std::io::Error::from_raw_os_error(-res)
                )));
            }
            let bytes = if dir < SYNC { res as u64 } else { 0 };
            self.done_stat(stat, kind, ns, bytes);
            if dir < SYNC {
                let lat = [self.clock.delta(t0, sub), self.clock.delta(sub, now), ns];
                self.fio_io((dir, bytes, asked, off), lat, true);
            } else {
                self.fio_fsync(stat, ns);
            }
            if let Some((mut d, want)) = data {
                // A bad block: the stream ends at its next call (see `verify_stop`).
                self.stream_check(s, fi, off, &mut d, want);
            }
        }
        Ok(())
    }

    /// fio's `io_u_quiesce`: everything in flight completes and is recorded.
    pub(super) fn uring_quiesce(&mut self, s: &Stream) -> Result<(), Fail> {
        let inflight = self
            .stream
            .as_ref()
            .and_then(|st| st.ring.as_ref())
            .map_or(0, |r| r.inflight());
        self.uring_reap(s, inflight, usize::MAX)
    }

    /// fio's `wait_for_completions` when every slot is busy: at least
    /// `iodepth_batch_complete_min` (one when that is 0), at most `_max`.
    fn uring_full(&mut self, s: &Stream) -> Result<(), Fail> {
        let Some(r) = self.stream.as_ref().and_then(|st| st.ring.as_ref()) else {
            return Ok(());
        };
        if r.free_slot().is_some() {
            return Ok(());
        }
        let min = (r.complete_min as usize).min(r.inflight).max(1);
        let (max, low) = (r.complete_max as usize, s.ctl.depth_low as usize);
        self.uring_reap(s, min, max)?;
        // fio's iodepth_low: from a full queue, reap on until no more than the low-water
        // mark are in flight (the depth by default: one reaping).
        loop {
            let inflight = self.stream.as_ref().and_then(|st| st.ring.as_ref());
            if inflight.map_or(0, |r| r.inflight()) <= low {
                return Ok(());
            }
            self.uring_reap(s, min, max)?;
        }
    }

    /// Queue an fsync (`data`: fdatasync) of file `fi`, as fio queues a `DDIR_SYNC` io_u.
    pub(super) fn uring_sync(&mut self, s: &Stream, fi: usize, data: bool) -> Result<Flow, Fail> {
        let st = self.stream.as_ref().expect("set");
        let fd = st.files[fi].fd;
        let registered = st.ring.as_ref().is_some_and(|r| r.fixed.1);
        let mut entry = if registered {
            opcode::Fsync::new(types::Fixed(fi as u32))
        } else {
            opcode::Fsync::new(types::Fd(fd))
        };
        if data {
            entry = entry.flags(types::FsyncFlags::DATASYNC);
        }
        self.uring_push(s, entry.build(), if data { DATASYNC } else { SYNC })?;
        Ok(Flow::Continue)
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
        let now = self.clock.now();
        let vseed = (dir == 1 && s.verify.is_some()).then(|| self.stream_next_write());
        let st = self.stream.as_mut().expect("set");
        let fd = st.files[fi].fd;
        // Counted when issued (`stream_account` ran): this write's number is one less.
        let numberio = st.issues[1].saturating_sub(1);
        let content_seed = st.content_seed;
        let ring = st.ring.as_mut().expect("an async stream has its ring");
        let id = ring
            .free_slot()
            .expect("a full queue is reaped after each push");
        let out = &mut ring.slots[id].buf.as_mut_slice()[..len as usize];
        let mut logged = None;
        if let (Some(v), Some(seed)) = (&s.verify, vseed) {
            let w = super::stream_verify::fill_write(s, v, seed, (fi, off, numberio), out, now);
            logged = Some(super::stream_verify::Logged {
                fi,
                off,
                len,
                seed: w.seed,
                numberio: w.numberio,
            });
        } else if dir == 1 && s.content.is_some() {
            super::stream_data::shape_into(s, content_seed, fi, off, out);
        } else if dir == 1 && s.ctl.refill {
            super::stream_ctl::refill(out, content_seed, numberio);
        } else if dir == 1 && s.scramble {
            super::stream_data::scramble(out, off, now);
        }
        if dir == 1 && s.content.is_some() {
            let o = &mut self.rec.ops[s.stat_write];
            let take = fsbench_results::stats::SAMPLE_BYTES
                .saturating_sub(o.sample.len())
                .min(out.len());
            if take > 0 {
                o.content = s.content;
                o.sample.extend_from_slice(&out[..take]);
            }
        }
        ring.slots[id].fi = fi;
        ring.slots[id].off = off;
        ring.slots[id].len = len;
        ring.slots[id].check = None;
        let entry = rw_entry(ring, id, (dir, fi, fd), off, len);
        self.uring_push(s, entry, dir)?;
        if let Some(l) = logged.filter(|_| s.do_verify) {
            self.stream_logged(s, l)?;
        }
        Ok(Flow::Continue)
    }

    /// Queue `entry` in a free slot, submit the queue when the batch is full, and when
    /// every slot is then busy reap as fio does.
    fn uring_push(
        &mut self,
        s: &Stream,
        entry: io_uring::squeue::Entry,
        dir: usize,
    ) -> Result<(), Fail> {
        let t0 = self.clock.now();
        let st = self.stream.as_mut().expect("set");
        let ring = st.ring.as_mut().expect("an async stream has its ring");
        let id = ring
            .free_slot()
            .expect("a full queue is reaped after each push");
        let slot = &mut ring.slots[id];
        slot.busy = true;
        slot.t0 = t0;
        slot.dir = dir;
        let entry = entry.user_data(id as u64);
        // SAFETY: the buffer belongs to the slot, which stays busy (untouched) until its
        // completion is reaped; the ring drains before the slots are dropped.
        let pushed = unsafe { ring.ring.submission().push(&entry) };
        if pushed.is_err() {
            ring.slots[id].busy = false;
            return Err(Fail::Error("io_uring submission queue full".into()));
        }
        ring.inflight += 1;
        ring.queued += 1;
        ring.unsub.push(id);
        let (depth, full) = (ring.inflight as u64, ring.queued >= ring.batch);
        self.fio_queued(depth);
        if full {
            self.uring_submit()?;
        }
        self.uring_full(s)
    }

    /// Submit what is queued (fio's `td_io_commit`): each I/O's submission time is now.
    fn uring_submit(&mut self) -> Result<(), Fail> {
        let now = self.clock.now();
        let st = self.stream.as_mut().expect("set");
        let ring = st.ring.as_mut().expect("an async stream has its ring");
        if ring.queued == 0 {
            return Ok(());
        }
        ring.queued = 0;
        let n = ring.unsub.len() as u64;
        for id in ring.unsub.drain(..) {
            ring.slots[id].sub = now;
        }
        if let Err(e) = ring.ring.submit() {
            return Err(Fail::Error(format!("io_uring submit: {e}")));
        }
        self.fio_submitted(n);
        Ok(())
    }

    /// A verify-phase read of `len` bytes at `off` of file `fi` through the ring, at the
    /// job's depth (as fio's verify phase queues its reads): its blocks are checked when
    /// it completes.
    pub(super) fn uring_verify_read(
        &mut self,
        s: &Stream,
        p: super::stream_verify::Logged,
    ) -> Result<(), Fail> {
        let (fi, off, len) = (p.fi, p.off, p.len);
        let st = self.stream.as_mut().expect("set");
        let fd = st.files[fi].fd;
        let ring = st.ring.as_mut().expect("an async stream has its ring");
        let id = ring
            .free_slot()
            .expect("a full queue is reaped after each push");
        ring.slots[id].fi = fi;
        ring.slots[id].off = off;
        ring.slots[id].len = len;
        ring.slots[id].check = Some(super::stream_verify::want(&p));
        let entry = rw_entry(ring, id, (0, fi, fd), off, len);
        self.uring_push(s, entry, 0)
    }
}
