//! fio's `verify` on a stream, onto fsbench's block headers (`crate::verify`): every 4 KiB
//! block a verifying job writes starts with a header (file, offset, length) and a checksum
//! of the block; reads of a verifying job check the blocks they read; and with `do_verify`
//! a writing job reads back what it wrote after each pass, or after every
//! `verify_backlog` writes, as fio's verify phase (`backend.c`'s `do_verify`, `verify.c`).
//! A bad block is an error of the job's reads (its count and the first bad offset in the
//! report, the run ending nonzero); with `verify_fatal` the job stops at the first.

use super::*;
use crate::model::stream::Stream;

/// A file's id in the headers: from its name, so that every job naming the file (a
/// writer, then a reader) agrees.
pub(super) fn file_id(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Worker<'_> {
    /// Check the blocks of `data`, read at `off` of file `fi`; false when the job must
    /// stop (`verify_fatal` after a bad block).
    pub(super) fn stream_check(&mut self, s: &Stream, fi: usize, off: u64, data: &[u8]) -> bool {
        let id = file_id(&s.files[fi].name);
        let o = &mut self.rec.ops[s.stat_read];
        let mut bad = false;
        for (i, block) in data.chunks(crate::verify::BLOCK as usize).enumerate() {
            let at = off + i as u64 * crate::verify::BLOCK;
            match crate::verify::check_block(block, id, at, 0) {
                Ok(true) => o.verify_blocks += 1,
                Ok(false) => {}
                Err((expected, found)) => {
                    bad = true;
                    o.verify_blocks += 1;
                    o.verify_mismatches += 1;
                    let m = crate::verify::Mismatch {
                        path: s.files[fi].name.clone(),
                        offset: at,
                        expected,
                        found,
                    };
                    // fio: "verify: bad header ... at file F offset O, length L".
                    o.error(|| {
                        format!(
                            "verify: bad block at file {} offset {}, length {}: expected {}, found {}",
                            m.path, m.offset, block.len(), m.expected, m.found
                        )
                    });
                    if o.mismatches.len() < crate::verify::KEEP {
                        o.mismatches.push(m);
                    }
                }
            }
        }
        let stop = bad && s.verify_fatal;
        if stop {
            self.stream.as_mut().expect("set").verify_stop = true;
        }
        !stop
    }

    /// After a write to verify: remember it, and with `verify_backlog` read the backlog
    /// back once it is long enough.
    pub(super) fn stream_logged(
        &mut self,
        s: &Stream,
        fi: usize,
        off: u64,
        len: u64,
    ) -> Result<bool, Fail> {
        let st = self.stream.as_mut().expect("set");
        st.written.push((fi, off, len));
        if s.verify_backlog > 0 && st.written.len() as u64 >= s.verify_backlog {
            return self.stream_verify(s);
        }
        Ok(true)
    }

    /// fio's verify phase: everything in flight completes, then each block written since
    /// the last one is read back (in file and offset order, once) and checked; its reads
    /// count as the job's reads. False when the job must stop.
    pub(super) fn stream_verify(&mut self, s: &Stream) -> Result<bool, Fail> {
        if s.depth > 0 {
            self.uring_quiesce(s)?;
        }
        self.fio_verify_phase(true);
        let r = self.stream_verify_reads(s);
        self.fio_verify_phase(false);
        r
    }

    fn stream_verify_reads(&mut self, s: &Stream) -> Result<bool, Fail> {
        let mut pieces = std::mem::take(&mut self.stream.as_mut().expect("set").written);
        pieces.sort_unstable();
        pieces.dedup_by(|b, a| {
            a.0 == b.0 && a.1 == b.1 && {
                a.2 = a.2.max(b.2);
                true
            }
        });
        if s.depth > 0 {
            // At the job's depth through its ring, as fio's verify phase; checked as
            // they complete, all of them before the phase ends.
            for (fi, off, len) in pieces {
                self.uring_verify_read(s, fi, off, len)?;
                if self.stream.as_ref().is_some_and(|st| st.verify_stop) {
                    break;
                }
            }
            self.uring_quiesce(s)?;
            return Ok(!self.stream.as_ref().is_some_and(|st| st.verify_stop));
        }
        for (fi, off, len) in pieces {
            let (boff, len) = self.buffer(len as usize)?;
            let fd = self.stream.as_ref().expect("set").files[fi].fd;
            let t0 = self.clock.now();
            let r = io::pread(fd, &mut self.buf.as_mut_slice()[boff..boff + len], off);
            let ns = self.clock.since(t0);
            let n = r.map_err(|e| {
                Fail::Error(format!(
                    "verify read {} at offset {off}: {e}",
                    s.files[fi].name
                ))
            })?;
            self.done_stat(s.stat_read, FlowopKind::Read, ns, n as u64);
            self.fio_sync_io(0, n as u64, len as u64, off, ns);
            let data = self.buf.as_slice()[boff..boff + n].to_vec();
            if !self.stream_check(s, fi, off, &data) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}
