//! fio's `verify` on a stream, in fio's own block format (`fsbench_model::fioverify`): a verifying
//! write is filled as fio fills it (its buffer refilled, then random data from a seed of
//! its own, or the pattern) and carries fio's headers and checksums; reads of a job that
//! only reads check every block they read; and with `do_verify` a writing job reads back
//! what it wrote after each pass, or after every `verify_backlog` writes, as fio's verify
//! phase (`backend.c`'s `do_verify`, `verify.c`), expecting each block's write number and
//! seed as fio does. The first bad read is an error that ends the job, as in fio (fio's
//! failure lines on stderr, the count and the first in the report, the run ending nonzero);
//! `verify_fatal` stops checking that read at its first bad block.

use super::{Fail, Worker};
use fsbench_base::sys::io;
use fsbench_model::fioverify::{Read, Spec, Want, Write};
use fsbench_model::model::stream::Stream;
use fsbench_model::model::FlowopKind;
use std::os::unix::fs::OpenOptionsExt;

/// A verifying write to read back: where, and the seed and number its headers carry.
#[derive(Debug, Clone, Copy)]
pub(super) struct Logged {
    pub(super) fi: usize,
    pub(super) off: u64,
    pub(super) len: u64,
    pub(super) seed: u64,
    pub(super) numberio: u16,
}

/// fio's `io_u->flags` in its failure line: a read is counted in the queue depth
/// (`IO_U_F_IN_CUR_DEPTH`), a verify-phase read also on the verify list
/// (`IO_U_F_VER_LIST`), as fio 3.33 prints them.
const IN_DEPTH_FLAGS: u32 = 0x8;
const VER_LIST_FLAGS: u32 = 0x88;

/// fio's `io_u->flags` of a read in its failure line (`verify_phase`: on the verify list).
pub(super) fn flags(verify_phase: bool) -> u32 {
    if verify_phase {
        VER_LIST_FLAGS
    } else {
        IN_DEPTH_FLAGS
    }
}

/// SplitMix64: each verifying write's seed from the stream's seed and its count.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fill `out`, a write of the stream `s` to `off` of file `fi` numbered `numberio` among
/// its writes, as fio does with `verify`: the buffer is refilled first (verify turns
/// `refill_buffers` on: the content setting's data, or random), then `populate_verify_io_u`
/// writes the verified data, headers and checksums over it. Returns what the headers say.
pub(super) fn fill_write(
    s: &Stream,
    v: &Spec,
    (seed, n): (u64, u64),
    (fi, off, numberio): (usize, u64, u64),
    out: &mut [u8],
    now_ns: u64,
) -> Write {
    let w = Write {
        seed: mix(seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        time: (
            (now_ns / 1_000_000_000) as u32,
            (now_ns % 1_000_000_000) as u32,
        ),
        numberio: numberio as u16,
    };
    if s.content.is_some() {
        super::stream_data::shape_into(s, seed, fi, off, out);
    } else {
        fsbench_model::fioverify::fill_random(out, mix(w.seed));
    }
    fsbench_model::fioverify::fill(v, out, off, w);
    w
}

/// A write `verify_only` plans without doing (fio's dry run): what its headers would
/// have said, from the same seed and count as [`fill_write`].
pub(super) fn planned(
    (seed, n): (u64, u64),
    (fi, off, len): (usize, u64, u64),
    numberio: u64,
) -> Logged {
    Logged {
        fi,
        off,
        len,
        seed: mix(seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        numberio: numberio as u16,
    }
}

impl Worker<'_> {
    /// The seed and count for the next verifying write's data.
    pub(super) fn stream_next_write(&mut self) -> (u64, u64) {
        let st = self.stream.as_mut().expect("set");
        st.verify_writes += 1;
        (st.content_seed, st.verify_writes)
    }

    /// Check the blocks of `data`, read at `off` of file `fi` (expecting `want`, in a
    /// verify phase); false when the job must stop: a bad block ends it, as fio's
    /// verify error ends a job.
    pub(super) fn stream_check(
        &mut self,
        s: &Stream,
        fi: usize,
        off: u64,
        data: &mut [u8],
        want: Option<Want>,
    ) -> bool {
        let Some(v) = &s.verify else { return true };
        if self.stream_check_async(fi, off, data, want) {
            return true;
        }
        let r = Read {
            file: &s.files[fi].name,
            off,
            want: want.unwrap_or_default(),
            fatal: s.verify_fatal,
            flags: flags(want.is_some()),
        };
        let (blocks, bad) = fsbench_model::fioverify::check(v, data, &r);
        self.stream_judge(s, (fi, off), data, blocks, bad)
    }

    /// Count a checked read of `data` at `off` of file `fi` (its `blocks` checked, its
    /// `bad` ones): a bad block is reported in fio's words and ends the job, unless
    /// `continue_on_error` names verify errors. False when the job must stop.
    pub(super) fn stream_judge(
        &mut self,
        s: &Stream,
        (fi, off): (usize, u64),
        data: &mut [u8],
        blocks: u64,
        bad: Vec<fsbench_model::fioverify::Bad>,
    ) -> bool {
        let Some(v) = &s.verify else { return true };
        self.rec.ops[s.stat_read].verify_blocks += blocks;
        if bad.is_empty() {
            return true;
        }
        // continue_on_error=verify (or all): one error (EILSEQ) per bad read, counted,
        // and the job goes on.
        let goes_on = self.stream_continues(s, 0, libc::EILSEQ);
        let o = &mut self.rec.ops[s.stat_read];
        o.verify_mismatches += bad.len() as u64;
        for b in &bad {
            for line in &b.lines {
                fsbench_base::errln!("{line}");
            }
        }
        if s.ctl.verify_dump {
            for line in dump_bad(v, &s.files[fi].name, off, data, &bad) {
                fsbench_base::errln!("{line}");
            }
        }
        // fio's job error: the read's first failure line.
        let first = bad[0]
            .lines
            .iter()
            .find(|l| !l.starts_with("fio: got"))
            .cloned();
        if !goes_on {
            o.error(|| first.unwrap_or_default());
        }
        for b in bad {
            if o.mismatches.len() < fsbench_model::verify::KEEP {
                o.mismatches.push(fsbench_model::verify::Mismatch {
                    path: s.files[fi].name.clone(),
                    offset: b.offset,
                    expected: b.expected,
                    found: b.found,
                });
            }
        }
        if goes_on {
            return true;
        }
        self.stream.as_mut().expect("set").verify_stop = true;
        false
    }

    /// After a write to verify: remember it, and with `verify_backlog` read the backlog
    /// back once it is long enough.
    pub(super) fn stream_logged(&mut self, s: &Stream, l: Logged) -> Result<bool, Fail> {
        let st = self.stream.as_mut().expect("set");
        st.written.push(l);
        if s.verify_backlog == 0 {
            return Ok(true);
        }
        // fio's get_io_u: every `verify_backlog` logged writes, `verify_backlog_batch` of
        // them (the backlog by default) are read back, the lowest places first; what is
        // owed when fewer are logged is read back as the next writes come.
        if st.verify_owed == 0 && (st.written.len() as u64).is_multiple_of(s.verify_backlog) {
            st.verify_owed = match s.ctl.verify_batch {
                0 => s.verify_backlog,
                b => b,
            };
        }
        let take = st.verify_owed.min(st.written.len() as u64);
        if take == 0 {
            return Ok(true);
        }
        st.verify_owed -= take;
        self.stream_verify_n(s, false, take as usize)
    }

    /// fio's verify phase: everything in flight completes, then each block written since
    /// the last one is read back (in file and offset order, once: the last write to a
    /// place) and checked; its reads count as the job's reads. After a pass (`whole`, fio's
    /// `do_verify`; not a `verify_backlog` batch) the files are first synced and their
    /// cached pages dropped, "to make sure we really read from disk". False when the job
    /// must stop.
    pub(super) fn stream_verify(&mut self, s: &Stream, whole: bool) -> Result<bool, Fail> {
        self.stream.as_mut().expect("set").verify_owed = 0;
        self.stream_verify_n(s, whole, usize::MAX)
    }

    /// A verify phase over the first `limit` of the writes to read back (in file and
    /// offset order), the rest kept for the next one.
    fn stream_verify_n(&mut self, s: &Stream, whole: bool, limit: usize) -> Result<bool, Fail> {
        if s.depth > 0 {
            self.uring_quiesce(s)?;
        }
        if whole {
            self.stream_sync_and_drop(s)?;
        }
        let st = self.stream.as_mut().expect("set");
        let mut pieces = std::mem::take(&mut st.written);
        // A stable sort: of the writes to one place the last is what the file holds
        // (dedup keeps the first of a run, so the later one is copied into it).
        pieces.sort_by_key(|p| (p.fi, p.off));
        pieces.dedup_by(|b, a| {
            (a.fi == b.fi && a.off == b.off) && {
                *a = *b;
                true
            }
        });
        st.written = pieces.split_off(limit.min(pieces.len()));
        self.fio_verify_phase(true);
        let r = self.stream_verify_reads(s, pieces);
        // verify_async: every check handed over is in before the phase ends.
        self.stream_verified(s, true)?;
        self.fio_verify_phase(false);
        Ok(r? && !self.stream.as_ref().is_some_and(|st| st.verify_stop))
    }

    /// fio's `fio_io_sync` and `file_invalidate_cache` on each file of the stream.
    fn stream_sync_and_drop(&mut self, s: &Stream) -> Result<(), Fail> {
        let st = self.stream.as_ref().expect("set");
        for (of, sf) in st.files.iter().zip(&s.files) {
            io::fsync(of.fd).map_err(|e| Fail::Error(format!("fsync {}: {e}", sf.name)))?;
            io::fadvise_dontneed(of.fd, sf.offset, sf.len);
        }
        Ok(())
    }

    fn stream_verify_reads(&mut self, s: &Stream, pieces: Vec<Logged>) -> Result<bool, Fail> {
        if s.depth > 0 {
            // At the job's depth through its ring, as fio's verify phase; checked as
            // they complete, all of them before the phase ends.
            for p in pieces {
                self.uring_verify_read(s, p)?;
                if self.stream.as_ref().is_some_and(|st| st.verify_stop) {
                    break;
                }
            }
            self.uring_quiesce(s)?;
            return Ok(!self.stream.as_ref().is_some_and(|st| st.verify_stop));
        }
        for p in pieces {
            let (boff, len) = self.buffer(p.len as usize)?;
            let fd = self.stream.as_ref().expect("set").files[p.fi].fd;
            let t0 = self.clock.now();
            let r = io::pread(fd, &mut self.buf.as_mut_slice()[boff..boff + len], p.off);
            let ns = self.clock.since(t0);
            let n = r.map_err(|e| {
                Fail::Error(format!(
                    "verify read {} at offset {}: {e}",
                    s.files[p.fi].name, p.off
                ))
            })?;
            self.done_stat(s.stat_read, FlowopKind::Read, ns, n as u64);
            self.fio_sync_io(0, n as u64, len as u64, p.off, ns);
            let mut data = self.buf.as_slice()[boff..boff + n].to_vec();
            if !self.stream_check(s, p.fi, p.off, &mut data, Some(want(&p))) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// What a verify-phase read of `p` expects in its headers.
pub(super) fn want(p: &Logged) -> Want {
    Want {
        seed: Some(p.seed),
        numberio: Some(p.numberio),
    }
}

/// fio's `verify_dump` (`__dump_verify_buffers`): each bad interval of a read of `data`
/// at `off` of `file`, as read (`BASENAME.OFFSET.received`) and as its write made it
/// (`.expected`, regenerated from the header's seed, time and number, as fio does), in the
/// current directory, as fio names them; fio's lines saying so. A file of that name already
/// there is left alone (fio would truncate it), and the line says so.
pub(super) fn dump_bad(
    v: &fsbench_model::fioverify::Spec,
    file: &str,
    off: u64,
    data: &[u8],
    bad: &[fsbench_model::fioverify::Bad],
) -> Vec<String> {
    let inc = v.hdr_inc(data.len());
    let base = std::path::Path::new(file)
        .file_name()
        .map_or_else(|| file.to_string(), |n| n.to_string_lossy().into_owned());
    let mut lines = Vec::new();
    for b in bad {
        let at = (b.offset.saturating_sub(off)) as usize;
        let Some(got) = data.get(at..(at + inc).min(data.len())) else {
            continue;
        };
        let h = if v.kind.hdr_size() > 0 && got.len() >= fsbench_model::fioverify::HEADER {
            fsbench_model::fioverify::Header::decode(got)
        } else {
            fsbench_model::fioverify::Header::default()
        };
        let mut want = vec![0u8; data.len()];
        let w = fsbench_model::fioverify::Write {
            seed: h.rand_seed,
            time: (h.time_sec, h.time_nsec),
            numberio: h.numberio,
        };
        fsbench_model::fioverify::fill(v, &mut want, off, w);
        for (kind, bytes) in [("received", got), ("expected", &want[at..at + got.len()])] {
            let name = format!("{base}.{}.{kind}", b.offset);
            let r = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .mode(0o644)
                .open(&name)
                .and_then(|mut f| std::io::Write::write_all(&mut f, bytes));
            lines.push(match r {
                Ok(()) => format!("       {kind} data dumped as {name}"),
                Err(e) => format!("       {kind} data not dumped as {name}: {e}"),
            });
        }
    }
    lines
}
