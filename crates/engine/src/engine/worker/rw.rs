//! Reads and writes: `read`, `write`, `aiowrite`, appends, whole-file reads and writes.

use super::{Fail, Flow, Map, Worker, MAX_FD};
use crate::engine::aio::Aio;
use fsbench_model::model::{Flowop, FlowopKind};
use rand::Rng as _;
use std::os::fd::RawFd;
use FlowopKind::*;

/// Where one read or write goes: the slot and its descriptor, the file offset, the part of
/// the worker's buffer, and the working set the offset advances within.
#[derive(Clone, Copy)]
struct At {
    slot: usize,
    fd: RawFd,
    off: u64,
    boff: usize,
    len: usize,
    wss: u64,
}

impl Worker<'_> {
    /// `--cache-stat`: the pages of `fd` from `off` (`len` 0: to the end of the file) the page
    /// cache holds now, before a buffered read of them; None without the option, for a
    /// direct or remote read, or when the kernel does not answer.
    fn cached_before(&self, f: &Flowop, fd: RawFd, off: u64, len: u64) -> Option<u64> {
        if !self.sh.cache_stat || f.directio || self.remote.is_some() {
            return None;
        }
        fsbench_base::sys::cachestat::cachestat(fd, off, len)
            .ok()
            .map(|c| c.nr_cache)
    }

    /// Count a read of `n` bytes at `off` of which `cached` pages were in the page cache.
    fn count_cached(&mut self, f: &Flowop, cached: Option<u64>, off: u64, n: u64) {
        if let Some(c) = cached {
            let pages = fsbench_base::sys::cachestat::pages_of(off, n);
            let rec = &mut self.rec.ops[f.stat];
            rec.cache_pages += pages;
            rec.cache_hits += c.min(pages);
        }
    }

    pub(super) fn op_read(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let iosize = self.num(&f.iosize).max(0) as usize;
        if iosize == 0 {
            return Err(Fail::Error(format!("flowop {} has iosize 0", f.name)));
        }
        if f.directio && iosize & 511 != 0 {
            return Err(Fail::Error(format!(
                    "flowop {}: directio needs iosize to be a multiple of the logical block size (512 or 4096 bytes); it is {iosize}",
                    f.name
                )));
        }
        let (slot, fd) = self.setup(f)?;
        // The working set matters only for random offsets and strides.
        let wss = if f.random || f.stride != fsbench_model::model::Num::Const(0) {
            self.wss(f, slot)
        } else {
            0
        };
        let (boff, len) = self.flowop_buffer(slot, iosize)?;
        let off = if f.sameoffset {
            self.slots[slot].last_off
        } else if f.random {
            self.random_offset(wss, iosize as u64)
        } else {
            self.slots[slot].off
        };
        if f.directio && off & 511 != 0 {
            return Err(Fail::Error(format!(
                    "flowop {}: directio needs offsets aligned to the logical block size (offset {off})",
                    f.name
                )));
        }
        let at = At {
            slot,
            fd,
            off,
            boff,
            len,
            wss,
        };
        if f.kind == AioWrite {
            return self.aio_write(f, at);
        }
        if f.mmap && f.kind == Read {
            return self.mmap_read(f, at);
        }
        if f.kind != Read {
            self.shape(f, slot, off, boff, len);
        }
        let v = self.vstate(slot);
        let (snap, vgen) = match v {
            Some(v) if f.kind == Read => (Some(v.0.snapshot(off, len as u64)), None),
            Some(v) => (None, Some(self.vstamp(v, off, boff, len))),
            None => (None, None),
        };
        let cached = if f.kind == Read {
            self.cached_before(f, fd, off, len as u64)
        } else {
            None
        };
        let t0 = self.clock.now();
        let r = if f.kind == Read {
            self.read_at(fd, boff, len, off)
        } else {
            self.write_at(fd, boff, len, off)
        };
        let ns = self.clock.since(t0);
        if let Ok(n) = &r {
            self.count_cached(f, cached, off, *n as u64);
        }
        if let Some(v) = v {
            let n = *r.as_ref().unwrap_or(&0);
            if let Some(g) = vgen {
                v.0.end_write(g, off, n as u64);
            } else if let (Some(s), Ok(_)) = (&snap, &r) {
                self.vcheck(f, slot, v, s, boff, n);
            }
        }
        match r {
            Ok(n) => {
                self.done(f, ns, n as u64);
                self.advance(f, slot, off, n as u64, wss);
                Ok(Flow::Continue)
            }
            Err(e) => Err(self.rw_error(f, slot, off, e)),
        }
    }

    /// `aiowrite`: submit the write; the submission is what is timed.
    fn aio_write(
        &mut self,
        f: &Flowop,
        At {
            slot,
            fd,
            off,
            boff,
            len,
            wss,
        }: At,
    ) -> Result<Flow, Fail> {
        if self.aio.is_none() {
            self.aio = Some(Aio::setup());
        }
        self.shape(f, slot, off, boff, len);
        // With --verify the write goes from its own stamped copy (this buffer is reused
        // while it is in flight); the file's state counts it in flight until it lands.
        let verified = self.vstate(slot).map(|(st, id)| {
            let mut data = self.buf.as_slice()[boff..boff + len].to_vec();
            let gen = st.begin_write_at(off, off + len as u64);
            fsbench_model::verify::stamp(gen, id, off, &mut data);
            crate::engine::aio::Verified {
                data,
                state: st,
                gen,
                off,
                done: false,
            }
        });
        let ptr = self.buf.as_slice()[boff..].as_ptr();
        let aio = self.aio.as_mut().expect("set above");
        // SAFETY: the worker's buffer is only replaced after draining (buffer())
        // and is dropped after `aio`, which drains on drop.
        let t0 = self.clock.now();
        let r = unsafe { aio.write(fd, ptr, len, off, f.stat, verified) };
        let ns = self.clock.since(t0);
        self.record_aio();
        self.advance(f, slot, off, len as u64, wss);
        match r {
            // As Filebench: the submission is the operation, with its bytes.
            Ok(()) => {
                self.done(f, ns, len as u64);
                Ok(Flow::Continue)
            }
            Err(e) => Err(Fail::Error(format!("aiowrite at offset {off}: {e}"))),
        }
    }

    /// `read` with `mmap`: copy from the file's mapping.
    fn mmap_read(
        &mut self,
        f: &Flowop,
        At {
            slot,
            fd,
            off,
            boff,
            len,
            wss,
        }: At,
    ) -> Result<Flow, Fail> {
        let map = self
            .mapping(slot, fd, off + len as u64)
            .map_err(|e| Fail::Error(format!("mmap: {e}")))?;
        let v = self.vstate(slot);
        let snap = v.map(|v| v.0.snapshot(off, len as u64));
        let t0 = self.clock.now();
        let n = self.copy_from_map(map, off, boff, len);
        let ns = self.clock.since(t0);
        if let (Some(v), Some(s)) = (v, &snap) {
            self.vcheck(f, slot, v, s, boff, n);
        }
        self.done(f, ns, n as u64);
        self.advance(f, slot, off, n as u64, wss);
        Ok(Flow::Continue)
    }

    /// The error of a read or write of `f` at `off` through `slot`.
    pub(super) fn rw_error(&self, f: &Flowop, slot: usize, off: u64, e: std::io::Error) -> Fail {
        Fail::Error(format!(
            "{} {} at offset {off}: {e}{}",
            f.kind.name(),
            self.slot_path(slot),
            if f.directio && e.raw_os_error() == Some(libc::EINVAL) {
                " (O_DIRECT: iosize and offset must be multiples of the device's logical block size)"
            } else {
                ""
            }
        ))
    }

    pub(super) fn op_appendfile(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let iosize = self.num(&f.iosize).max(0) as u64;
        let size = if f.kind == AppendFileRand {
            if iosize == 0 {
                return Err(Fail::Error(format!("flowop {} has iosize 0", f.name)));
            }
            self.rng.random_range(0..iosize)
        } else {
            iosize
        };
        let (slot, fd) = self.setup(f)?;
        if size == 0 {
            self.done(f, 0, 0);
            return Ok(Flow::Continue);
        }
        let (boff, len) = self.flowop_buffer(slot, size as usize)?;
        // With --verify the data is stamped for where the file ends now (untimed).
        let v = self.vstate(slot);
        let at = if v.is_some() || self.shapes(f, slot).is_some() {
            let at = self.fd_size(fd).unwrap_or(0);
            self.shape(f, slot, at, boff, len);
            at
        } else {
            0
        };
        let planned = v.map(|(st, id)| {
            // Where it lands is known only after: everything from the current end is in
            // flight meanwhile.
            let g = st.begin_write_at(at, u64::MAX);
            fsbench_model::verify::stamp(g, id, at, &mut self.buf.as_mut_slice()[boff..boff + len]);
            (at, g)
        });
        let t0 = self.clock.now();
        let r = self.append_at_end(fd, boff, len);
        let ns = self.clock.since(t0);
        if let (Some(v), Some((at, g))) = (v, planned) {
            match &r {
                Ok((end, n)) if *end == at => v.0.end_write(g, at, *n as u64),
                // Another writer moved the end: the stamps name the wrong offsets.
                Ok((end, n)) => v.0.forget(g, *end, *n as u64),
                Err(_) => v.0.end_write(g, at, 0),
            }
        }
        match r {
            Ok((end, n)) => {
                self.done(f, ns, n as u64);
                // As after Filebench's lseek(END) + write: the position is the new end.
                self.slots[slot].off = end + n as u64;
                Ok(Flow::Continue)
            }
            Err(e) => Err(Fail::Error(format!(
                "append to {}: {e}{}",
                self.slot_path(slot),
                if f.directio && e.raw_os_error() == Some(libc::EINVAL) {
                    " (O_DIRECT appends land at unaligned file ends; drop `directio` here)"
                } else {
                    ""
                }
            ))),
        }
    }

    pub(super) fn op_readwholefile(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let (slot, fd) = self.setup(f)?;
        let wss = self.wss(f, slot);
        let mut iosize = self.num(&f.iosize).max(0) as u64;
        if iosize == 0 {
            // One I/O for the whole planned size, as Filebench; a file planned empty (it may
            // have grown since) is read in 1 MiB requests rather than byte by byte.
            iosize = if wss > 0 { wss } else { 1 << 20 };
        }
        let (boff, len) = self.flowop_buffer(slot, iosize as usize)?;
        let mut total = 0u64;
        if f.mmap {
            let map = self
                .mapping(slot, fd, wss)
                .map_err(|e| Fail::Error(format!("mmap: {e}")))?;
            let v = self.vstate(slot);
            let mut vns = 0;
            let t0 = self.clock.now();
            loop {
                let snap = v.map(|v| v.0.snapshot(total, len as u64));
                let n = self.copy_from_map(map, total, boff, len);
                if let (Some(v), Some(s)) = (v, &snap) {
                    let c0 = self.clock.now();
                    self.vcheck(f, slot, v, s, boff, n);
                    vns += self.clock.since(c0);
                }
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
            // Checking is not the operation: its time is taken out.
            self.done(f, self.clock.since(t0).saturating_sub(vns), total);
            return Ok(Flow::Continue);
        }
        let v = self.vstate(slot);
        let mut vns = 0;
        let cached = self.cached_before(f, fd, 0, 0);
        let t0 = self.clock.now();
        let r = loop {
            let snap = v.map(|v| v.0.snapshot(total, len as u64));
            let r = self.read_at(fd, boff, len, total);
            if let (Some(v), Some(s), Ok(n)) = (v, &snap, &r) {
                let c0 = self.clock.now();
                self.vcheck(f, slot, v, s, boff, *n);
                vns += self.clock.since(c0);
            }
            match r {
                Ok(0) => break Ok(()),
                Ok(n) => total += n as u64,
                Err(e) => break Err(e),
            }
        };
        let ns = self.clock.since(t0).saturating_sub(vns);
        match r {
            Ok(()) => {
                self.count_cached(f, cached, 0, total);
                self.done(f, ns, total);
                Ok(Flow::Continue)
            }
            Err(e) => Err(Fail::Error(format!(
                "readwholefile {}: {e}",
                self.slot_path(slot)
            ))),
        }
    }

    pub(super) fn op_writewholefile(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let (slot, fd) = self.setup(f)?;
        let mut wss = self.wss(f, slot);
        if let Some(src) = f.srcfd {
            match self.slots[src].last {
                Some((fs, e)) => wss = self.sh.filesets[fs as usize].files[e as usize].size(),
                None => return Err(self.closed(src, "writewholefile srcfd")),
            }
        }
        let mut iosize = self.num(&f.iosize).max(0) as u64;
        if iosize == 0 {
            iosize = wss.max(1);
        }
        let (boff, len) = self.flowop_buffer(slot, iosize.min(wss.max(1)) as usize)?;
        let start = self.slots[slot].off;
        let mut done = 0u64;
        let v = self.vstate(slot);
        let prepares = v.is_some() || self.shapes(f, slot).is_some();
        let mut vns = 0;
        let t0 = self.clock.now();
        let r = loop {
            if done >= wss {
                break Ok(());
            }
            let n = (wss - done).min(len as u64) as usize;
            let mut vgen = None;
            if prepares {
                let c0 = self.clock.now();
                self.shape(f, slot, start + done, boff, n);
                vgen = v.map(|v| self.vstamp(v, start + done, boff, n));
                vns += self.clock.since(c0);
            }
            let r = self.write_at(fd, boff, n, start + done);
            if let (Some(v), Some(g)) = (v, vgen) {
                v.0.end_write(g, start + done, *r.as_ref().unwrap_or(&0) as u64);
            }
            match r {
                Ok(0) => break Err(std::io::Error::other("wrote 0 bytes")),
                Ok(w) => done += w as u64,
                Err(e) => break Err(e),
            }
        };
        // Shaping and stamping are not the operation: their time is taken out.
        let ns = self.clock.since(t0).saturating_sub(vns);
        self.slots[slot].off = start + done;
        match r {
            Ok(()) => {
                self.done(f, ns, done);
                Ok(Flow::Continue)
            }
            Err(e) => Err(Fail::Error(format!(
                "writewholefile {}: {e}",
                self.slot_path(slot)
            ))),
        }
    }

    /// Map (or remap, when the file grew past the mapping) the file in `slot` so that
    /// `need` bytes are covered where the file has them. Returns the mapping's address and
    /// length. Not timed: the copy that faults the pages in is.
    fn mapping(
        &mut self,
        slot: usize,
        fd: RawFd,
        need: u64,
    ) -> std::io::Result<(*const u8, usize)> {
        if self.maps.is_empty() {
            self.maps.resize_with(MAX_FD, || None);
        }
        if let Some(m) = &self.maps[slot] {
            if m.fd == fd && m.len as u64 >= need {
                return Ok((m.ptr, m.len));
            }
        }
        let size = fsbench_base::beneath::fstat(fd)?.st_size.max(0) as usize;
        if let Some(m) = &self.maps[slot] {
            if m.fd == fd && m.len >= size {
                return Ok((m.ptr, m.len));
            }
        }
        self.maps[slot] = None;
        if size == 0 {
            return Ok((std::ptr::null(), 0));
        }
        // SAFETY: a fresh shared read-only mapping of an fd we own; unmapped on drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        self.maps[slot] = Some(Map {
            fd,
            ptr: p.cast(),
            len: size,
        });
        Ok((p as *const u8, size))
    }

    /// Copy up to `len` bytes at `off` of a mapping into the I/O buffer at `boff`.
    fn copy_from_map(
        &mut self,
        map: (*const u8, usize),
        off: u64,
        boff: usize,
        len: usize,
    ) -> usize {
        let avail = (map.1 as u64).saturating_sub(off).min(len as u64) as usize;
        if avail > 0 {
            // SAFETY: off + avail <= mapping length; the buffer has room for len bytes.
            let src = unsafe { std::slice::from_raw_parts(map.0.add(off as usize), avail) };
            self.buf.as_mut_slice()[boff..boff + avail].copy_from_slice(src);
        }
        avail
    }
}
