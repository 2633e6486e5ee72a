//! The `stream` flowop: a block-I/O stream ([`fsbench_model::model::stream::Stream`], what a fio
//! job does), one read, write or sync per call, with fio's rules (`backend.c`, `io_u.c`):
//!
//! - the next I/O goes to the next file not yet done in this pass (round robin);
//! - a mixed job draws its direction 1..=100 against the read percentage, and after a
//!   switch keeps it for (I/Os so far in the old direction × the new one's share / 100);
//! - sequential I/O moves on from where the direction's last I/O on the file ended (plus
//!   the `:N` skip); random offsets are block numbers drawn uniformly, a taken one
//!   replaced by the next free block when the pass keeps a map, so each block is done once;
//! - a pass ends when its bytes (reads and writes together) are done, its number of I/Os,
//!   or when every file is exhausted; passes repeat `loops` times, or until the run time
//!   ends when time based;
//! - an fsync (fdatasync) goes after every Nth write, on the file the write went to.

use super::stream_skew::{SkewState, ZoneTable};
use super::{Fail, Flow, Worker};
use fsbench_base::sys::io::{self, OpenHow};
use fsbench_model::dist::Rng;
use fsbench_model::model::stream::{MinRate, Pace, Sizes, Stream};
use fsbench_model::model::{Flowop, FlowopKind};
use rand::Rng as _;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// fio's poisson gap: `(1000000 / iops) × -ln(U)` µs for a uniform `U` in (0, 1], as
/// `usec_for_io` computes it (a single-precision logarithm, as fio's `logf`).
fn poisson_gap_us(per_io_us: u64, u: f32) -> u64 {
    (per_io_us as f64 * -(u.ln() as f64)) as u64
}

/// Busy for `d` (fio's `usec_spin`); how long it spun.
fn spin(d: Duration) -> Duration {
    let t0 = Instant::now();
    while t0.elapsed() < d {
        std::hint::spin_loop();
    }
    t0.elapsed()
}

/// One file of the stream, open.
pub(super) struct OpenFile {
    pub(super) fd: RawFd,
    /// Next sequential position per direction, relative to the file's offset.
    pos: [u64; 2],
    /// Done for this pass.
    done: bool,
    /// Random map: one bit per `unit` bytes.
    map: Vec<u64>,
    blocks: u64,
    /// A skewed distribution's state (fio keeps one per file).
    skew: Option<SkewState>,
    /// With zones (`zonesize`): where the current zone starts, relative to the range.
    zone_base: u64,
    /// With `ioengine=mmap`: the file's mapping.
    mapping: Option<super::stream_mmap::Map>,
}

impl OpenFile {
    fn taken(&self, b: u64) -> bool {
        self.map[(b / 64) as usize] & (1 << (b % 64)) != 0
    }
    fn set(&mut self, b: u64) {
        self.map[(b / 64) as usize] |= 1 << (b % 64);
    }
}

pub(super) struct StreamState {
    pub(super) files: Vec<OpenFile>,
    next_file: usize,
    pass: u64,
    pass_bytes: u64,
    pass_ios: u64,
    /// I/Os issued per direction (in the stream's whole life: fio's io_issues).
    pub(super) issues: [u64; 2],
    mix_dir: usize,
    mix_issues: u64,
    last_write_file: Option<usize>,
    last_was_write: bool,
    unit: u64,
    rng: Rng,
    /// `zoned` / `zoned_abs`: the zones of each direction.
    zones: ZoneTable,
    started: Instant,
    since_think: u64,
    /// Bytes and I/Os issued per direction, for pacing, and when (µs after the start)
    /// each direction's next I/O is due (fio's `rate_next_io_time`).
    paced: [(u64, u64); 2],
    next_us: [u64; 2],
    /// The exponential gaps of `rate_process=poisson` (fio's `poisson_state`).
    pace_rng: Rng,
    /// `rate_min`: bytes and I/Os of each direction at its last check, and when.
    rate_check: [Option<(u64, u64, Instant)>; 2],
    /// Its runtime is recorded.
    timed: bool,
    /// Writes to read back (fio's verify log), and verifying writes so far.
    pub(super) written: Vec<super::stream_verify::Logged>,
    pub(super) verify_writes: u64,
    /// Of the writes logged, how many the current `verify_backlog` batch still reads back.
    pub(super) verify_owed: u64,
    /// A bad block was read: the stream ends (fio ends the job at a verify error).
    pub(super) verify_stop: bool,
    /// Bytes of I/O in the current zone (fio's `zone_bytes`).
    zone_bytes: u64,
    /// The seed of the written content (`buffer_compress_percentage`, ...).
    pub(super) content_seed: u64,
    /// The ring of an asynchronous stream.
    pub(super) ring: Option<super::stream_uring::Ring>,
    /// `verify_async`: the threads checking what the stream reads.
    pub(super) verifiers: Option<super::stream_vasync::Verifiers>,
    /// The files are the local kernel's (not over NFS): page cache advice applies.
    local: bool,
}

impl Worker<'_> {
    /// Open one of the stream's files: in the local run directory `dir` (with fio's page
    /// cache advice), or over NFS in the run directory on the export (where libnfs keeps
    /// no cache to advise).
    fn stream_open_one(
        &mut self,
        s: &Stream,
        f: &fsbench_model::model::stream::StreamFile,
        dir: Option<RawFd>,
    ) -> Result<RawFd, Fail> {
        if let Some(r) = self.remote.as_deref_mut() {
            let how = OpenHow {
                create: f.create_on_open,
                readonly: !s.writes,
                writeonly: false,
                dsync: s.dsync,
                directio: false,
            };
            return (r.open_in_run(&f.name, how, s.osync))
                .map_err(|e| Fail::Error(format!("open {}: {e}", f.name)));
        }
        let Some(dir) = dir else {
            return Err(Fail::Error(
                "a stream flowop without its run directory".into(),
            ));
        };
        let fd = Self::stream_open_file(s, f, dir)?;
        if s.invalidate {
            io::fadvise_dontneed(fd, f.offset, f.len);
        }
        // fio's fadvise_hint=1 (its default): the pattern's hint at each open.
        if s.fadvise_hint {
            io::fadvise_pattern(fd, s.random);
        }
        Ok(fd)
    }

    fn stream_open(&mut self, s: &Stream) -> Result<StreamState, Fail> {
        let dir = self.sh.stream_dir;
        let unit = s.bs[0].min().min(s.bs[1].min()).max(1);
        let rng_seed = s.seed.unwrap_or_else(|| self.rng.random());
        let mut files = Vec::with_capacity(s.files.len());
        for f in &s.files {
            let fd = self.stream_open_one(s, f, dir)?;
            let blocks = f.len / unit;
            let skew = SkewState::new(s.skew, f.len, unit, rng_seed ^ ((files.len() as u64) << 40));
            files.push(OpenFile {
                fd,
                pos: [0, 0],
                done: false,
                map: if s.random && s.random_map {
                    vec![0; blocks.div_ceil(64) as usize]
                } else {
                    Vec::new()
                },
                blocks,
                skew,
                zone_base: 0,
                mapping: if s.mmap {
                    Some(super::stream_mmap::Map::new(s, f, fd).map_err(Fail::Error)?)
                } else {
                    None
                },
            });
        }
        let fds: Vec<RawFd> = files.iter().map(|f| f.fd).collect();
        let seed = rng_seed;
        let mut rng = fsbench_model::dist::rng(seed, 0x5157);
        let first = if s.reads && s.writes {
            usize::from(rng.random_range(1..=100u32) > s.read_pct)
        } else {
            usize::from(!s.reads)
        };
        Ok(StreamState {
            files,
            next_file: 0,
            pass: 0,
            pass_bytes: 0,
            pass_ios: 0,
            issues: [0, 0],
            mix_dir: first,
            mix_issues: 0,
            last_write_file: None,
            last_was_write: false,
            unit,
            rng,
            zones: ZoneTable::new(&s.zones),
            started: Instant::now(),
            since_think: 0,
            paced: [(0, 0); 2],
            next_us: [0, 0],
            pace_rng: fsbench_model::dist::rng(seed, 0x9015),
            rate_check: [None, None],
            written: Vec::new(),
            verify_writes: 0,
            verify_owed: 0,
            zone_bytes: 0,
            verify_stop: false,
            content_seed: seed ^ ((s.job as u64) << 32),
            timed: false,
            verifiers: match (&s.verify, s.ctl.verify_async) {
                (Some(v), n) if n > 0 => {
                    Some(super::stream_vasync::Verifiers::new(s, v, n).map_err(Fail::Error)?)
                }
                _ => None,
            },
            local: self.remote.is_none(),
            ring: if s.depth > 0 {
                Some(super::stream_uring::Ring::new(s, &mut self.rng, &fds).map_err(Fail::Error)?)
            } else {
                None
            },
        })
    }

    /// Open a stream file: in the run directory by its name, or (opendir) read-only by
    /// its path.
    fn stream_open_file(
        s: &Stream,
        f: &fsbench_model::model::stream::StreamFile,
        dir: RawFd,
    ) -> Result<RawFd, Fail> {
        let how = OpenHow {
            create: f.create_on_open,
            readonly: !s.writes,
            writeonly: false,
            dsync: s.dsync,
            directio: s.direct,
        };
        let name = std::ffi::CString::new(f.name.as_bytes())
            .map_err(|_| Fail::Error(format!("file name {:?} holds a NUL", f.name)))?;
        let flags_extra = if s.osync { libc::O_SYNC } else { 0 };
        if let Some(rdev) = f.device {
            return Self::stream_open_device(&name, rdev, how.flags() | flags_extra)
                .map_err(|e| Fail::Error(format!("open {}: {e}", f.name)));
        }
        if f.external {
            // opendir: a file fsbench did not create, opened read-only by its path (the job
            // file's check refuses a writing job; this holds whatever reached here).
            if s.writes || f.create_on_open {
                return Err(Fail::Error(format!(
                    "open {}: fsbench does not write a file it did not create",
                    f.name
                )));
            }
            // O_NONBLOCK: a FIFO put where the job file's check listed a file is never
            // waited on (on a regular file it changes nothing).
            let flags = how.flags() | flags_extra | libc::O_NOFOLLOW | libc::O_NONBLOCK;
            // SAFETY: a NUL-terminated path; no O_CREAT, so no mode.
            match unsafe { libc::open(name.as_ptr(), flags) } {
                -1 => Err(std::io::Error::last_os_error()),
                fd => Ok(fd),
            }
        } else if fsbench_base::owned::writes(how.flags()) {
            // A file the layout made (or the job creates) in the run directory: opened as
            // fsbench's own, never through a link, a mount or a file with other links.
            let flags = how.flags() | flags_extra;
            fsbench_base::owned::open_write(
                dir,
                &name,
                fsbench_base::owned::how_for_flags(flags),
                flags,
            )
            .map(std::os::fd::IntoRawFd::into_raw_fd)
        } else if flags_extra != 0 {
            fsbench_base::beneath::open_file(dir, &name, how.flags() | flags_extra)
                .map(std::os::fd::IntoRawFd::into_raw_fd)
        } else {
            io::open_at(dir, &name, how)
        }
        .map_err(|e| Fail::Error(format!("open {}: {e}", f.name)))
    }

    /// Open a block device the engine's guard let (`fsbench_base::sys::device`), by its path,
    /// and make sure it is still that device.
    fn stream_open_device(
        name: &std::ffi::CStr,
        rdev: u64,
        flags: libc::c_int,
    ) -> std::io::Result<RawFd> {
        let flags = (flags & !(libc::O_CREAT | libc::O_TRUNC)) | libc::O_CLOEXEC;
        // SAFETY: a NUL-terminated path; no O_CREAT, so no mode.
        let fd = unsafe { libc::open(name.as_ptr(), flags) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat into a zeroed struct on the descriptor just opened.
        let ok = unsafe { libc::fstat(fd, &mut st) } == 0
            && st.st_mode & libc::S_IFMT == libc::S_IFBLK
            && st.st_rdev == rdev;
        if !ok {
            let _ = io::close(fd);
            return Err(std::io::Error::other(
                "not the block device the guard let (it changed)",
            ));
        }
        Ok(fd)
    }

    pub(super) fn op_stream(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let s = f
            .stream
            .as_ref()
            .expect("a stream flowop carries its stream")
            .clone();
        if self.stream.is_none() {
            if let Some(r) = self.stream_start(&s) {
                return r;
            }
        }
        if self.stream_exit_due(&s) {
            return self.stream_end(&s);
        }
        if s.runtime_ns > 0 {
            let st = self.stream.as_ref().expect("set above");
            if st.started.elapsed().as_nanos() as u64 >= s.runtime_ns {
                return self.stream_end(&s);
            }
        }
        if self.stream_pass_over(&s) {
            if s.depth > 0 {
                self.uring_quiesce(&s)?;
            }
            if s.verify.is_some() && s.do_verify && !self.stream_verify(&s, true)? {
                return self.stream_end(&s);
            }
            self.stream_close_pass(&s)?;
            let st = self.stream.as_mut().expect("set above");
            st.pass += 1;
            if st.pass >= s.passes && !s.time_based {
                return self.stream_end(&s);
            }
            st.pass_bytes = 0;
            st.pass_ios = 0;
            st.zone_bytes = 0;
            for (of, sf) in st.files.iter_mut().zip(&s.files) {
                // fio reopens the files for each pass, dropping their cached pages.
                if s.invalidate && st.local {
                    io::fadvise_dontneed(of.fd, sf.offset, sf.len);
                }
                of.pos = [0, 0];
                of.zone_base = 0;
                of.done = false;
                of.map.iter_mut().for_each(|w| *w = 0);
            }
        }
        self.stream_verified(&s, false)?;
        if self.stream.as_ref().is_some_and(|st| st.verify_stop) {
            return self.stream_end(&s);
        }
        if let Some(msg) = self.stream_rate_min(&s) {
            // fio ends the job with an error (EIO, check_min_rate).
            self.rec.ops[s.stat_time].error(|| msg);
            return self.stream_end(&s);
        }
        if let Some(r) = self.stream_sync_due(&s) {
            return match r {
                // continue_on_error: fio counts a sync's error as a write's.
                Err(Fail::Error(msg))
                    if s.depth == 0
                        && self.stream_continues(&s, 1, super::stream_ctl::errno_of(&msg)) =>
                {
                    Ok(Flow::Continue)
                }
                Err(Fail::Error(msg)) => self.stream_failed(&s, None, msg),
                r => r,
            };
        }
        let dir = self.stream_dir(&s);
        let Some(dir) = self.stream_pace(&s, dir)? else {
            return Ok(Flow::Stop);
        };
        let Some((fi, off, len)) = self.stream_place(&s, dir) else {
            // Every file is exhausted: the pass is over (checked at the next call).
            let st = self.stream.as_mut().expect("set above");
            st.files.iter_mut().for_each(|f| f.done = true);
            return Ok(Flow::Continue);
        };
        if s.ctl.verify_only {
            return self.stream_dry_io(&s, dir, (fi, off, len));
        }
        match self.stream_io(&s, dir, fi, off, len) {
            // A synchronous I/O failed before it was counted; an asynchronous one's error
            // came from the ring (counted there, or the job's end).
            Err(Fail::Error(msg)) => {
                let at = (s.depth == 0).then_some((dir, fi, off, len));
                self.stream_failed(&s, at, msg)
            }
            r => r,
        }
    }

    /// The stream's start: after what it waits for (a job after a stonewall, or with
    /// wait_for, starts when its waits have ended) and its delay, its files open and its
    /// thread set up. `Some` when the stream does not go on to its first I/O.
    fn stream_start(&mut self, s: &Stream) -> Option<Result<Flow, Fail>> {
        for &(job, clones) in &s.wait {
            while self.sh.streams_ended[job].load(Ordering::Acquire) < clones as u64 {
                if !self.sleep(Duration::from_millis(1)) {
                    return Some(Ok(Flow::Stop));
                }
            }
        }
        if s.start_delay_ns > 0 && !self.stream_delay(s) {
            return Some(Ok(Flow::Stop));
        }
        let st = match self.stream_open(s) {
            Ok(st) => st,
            Err(e) => return Some(Err(e)),
        };
        self.stream = Some(Box::new(st));
        self.fio_begin(s);
        if let Err(msg) = self.stream_thread_setup(s) {
            return Some(self.stream_setup_failed(s, msg));
        }
        None
    }

    fn stream_pass_over(&self, s: &Stream) -> bool {
        let st = self.stream.as_ref().expect("set");
        st.pass_bytes >= s.pass_bytes
            || (s.number_ios > 0 && st.pass_ios >= s.number_ios)
            || st.files.iter().all(|f| f.done)
    }

    /// fio's `rate_ddir`: the direction `dir` goes when its next I/O is due; else, in a
    /// job that also does the other one, that one when it is due; else the stream sleeps
    /// until the earlier of the two and goes in that direction (which the mix then
    /// keeps). `None` when the run stopped meanwhile.
    fn stream_pace(&mut self, s: &Stream, dir: usize) -> Result<Option<usize>, Fail> {
        if s.pace == [Pace::None, Pace::None] {
            return Ok(Some(dir));
        }
        let st = self.stream.as_mut().expect("set");
        let now = st.started.elapsed().as_micros() as u64;
        if st.next_us[dir] <= now {
            return Ok(Some(dir));
        }
        let odir = dir ^ 1;
        let other_share = if odir == 0 {
            s.read_pct
        } else {
            100 - s.read_pct
        };
        let (due, d) = if s.reads && s.writes && other_share > 0 {
            if st.next_us[odir] <= now {
                st.mix_dir = odir;
                return Ok(Some(odir));
            }
            if st.next_us[dir] <= st.next_us[odir] {
                (st.next_us[dir], dir)
            } else {
                (st.next_us[odir], odir)
            }
        } else {
            (st.next_us[dir], dir)
        };
        st.mix_dir = d;
        if s.depth > 0 {
            // fio's rate_ddir quiesces before it sleeps.
            self.uring_quiesce(s)?;
        }
        let now = self.stream.as_ref().expect("set").started.elapsed();
        let wait = Duration::from_micros(due).saturating_sub(now);
        Ok(self.sleep(wait).then_some(d))
    }

    /// fio's `usec_for_io` after an I/O in direction `dir`: linear, the time the bytes
    /// issued so far take at the rate (`rate_iops` with `bssplit`: a fixed time per I/O);
    /// poisson, the last due time plus an exponential gap of mean 1 / IOPS (the rate at
    /// the smallest block size), as fio draws it: `(1000000 / iops) × -ln(U)`.
    fn stream_next_due(st: &mut StreamState, s: &Stream, dir: usize) {
        let (bytes, ios) = st.paced[dir];
        let per_io_us = match s.pace[dir] {
            Pace::None => return,
            Pace::Bytes(bps) => 1_000_000 / (bps / s.bs[dir].min().max(1)).max(1),
            Pace::PerIo(us) => us,
        };
        st.next_us[dir] = if s.poisson {
            let u: f32 = st.pace_rng.random_range(f32::EPSILON..=1.0);
            st.next_us[dir] + poisson_gap_us(per_io_us, u)
        } else {
            match s.pace[dir] {
                Pace::Bytes(bps) => (bytes as u128 * 1_000_000 / bps.max(1) as u128) as u64,
                _ => ios.saturating_mul(per_io_us),
            }
        };
    }

    /// fio's `get_rw_ddir` for a mixed stream; the one direction otherwise.
    fn stream_dir(&mut self, s: &Stream) -> usize {
        let st = self.stream.as_mut().expect("set");
        if !(s.reads && s.writes) {
            return usize::from(!s.reads);
        }
        if st.issues[st.mix_dir] >= st.mix_issues {
            let d = usize::from(st.rng.random_range(1..=100u32) > s.read_pct);
            if d != st.mix_dir {
                let share = if d == 0 { s.read_pct } else { 100 - s.read_pct } as u64;
                st.mix_issues = st.issues[st.mix_dir] * share / 100;
            }
            st.mix_dir = d;
        }
        st.mix_dir
    }

    /// fio's `get_next_buflen`: the next block size of `sizes` that fits in the `room`
    /// bytes from the offset to the end of the file's range (`None` when not even the
    /// smallest does). A range draws `lo + hi × U`, a split the first part whose running
    /// share reaches `U` and that fits (else the last part); then aligned down to the
    /// smallest size and capped at the largest, drawn again until it fits.
    fn stream_bs(st: &mut StreamState, sizes: &Sizes, room: u64) -> Option<u64> {
        let (lo, hi) = (sizes.min().max(1), sizes.max());
        if lo == hi {
            return (lo <= room).then_some(lo);
        }
        if lo > room {
            return None;
        }
        loop {
            let u: f64 = st.rng.random();
            let mut b = match sizes {
                Sizes::Split(parts) => {
                    let mut sum = 0.0;
                    let mut pick = lo;
                    for (size, pct) in parts.iter().filter(|p| p.1 > 0) {
                        pick = *size;
                        sum += *pct as f64;
                        if u * 100.0 <= sum && *size <= room {
                            break;
                        }
                    }
                    pick
                }
                _ => lo + (hi as f64 * u) as u64,
            };
            b -= b % lo;
            b = b.min(hi);
            if b <= room {
                return Some(b);
            }
        }
    }

    /// The file, offset and length of the next I/O; `None` when every file is exhausted.
    fn stream_place(&mut self, s: &Stream, dir: usize) -> Option<(usize, u64, u64)> {
        let st = self.stream.as_mut().expect("set");
        let n = st.files.len();
        for _ in 0..n {
            let fi = st.next_file % n;
            st.next_file = (fi + 1) % n;
            if st.files[fi].done {
                continue;
            }
            let len = s.files[fi].len;
            if let Some(z) = s.stride {
                Self::stream_zone(st, fi, dir, z, len);
            }
            let got = if s.random {
                Self::stream_random(st, fi, s, dir, len)
            } else {
                Self::stream_seq(st, fi, s, dir, len)
            };
            match got {
                Some((rel, l)) => return Some((fi, s.files[fi].offset + rel, l)),
                None => st.files[fi].done = true,
            }
        }
        None
    }

    /// fio's `setup_strided_zone_mode`: after `zonesize` bytes the zone moves on by
    /// `zonerange + zoneskip` (back to the start past the end of the file); a position past
    /// the zone's range goes back to its start; every `zonerange` bytes the positions and
    /// the random map start over (fio's `fio_file_reset`).
    fn stream_zone(
        st: &mut StreamState,
        fi: usize,
        dir: usize,
        z: fsbench_model::model::stream::Stride,
        len: u64,
    ) {
        let f = &mut st.files[fi];
        if st.zone_bytes >= z.size {
            st.zone_bytes = 0;
            f.zone_base += z.range + z.skip;
            if f.zone_base >= len {
                f.zone_base = 0;
            }
            f.pos[dir] = f.zone_base;
        }
        if f.pos[dir] >= f.zone_base + z.range {
            f.pos[dir] = f.zone_base;
        }
        if st.zone_bytes.is_multiple_of(z.range.max(1)) {
            f.pos = [f.zone_base; 2];
            f.map.iter_mut().for_each(|w| *w = 0);
        }
    }

    /// fio's `get_next_seq_offset`: on from where the direction's last I/O ended, plus the
    /// `:N` skip (wrapping to the start past the end); at the end, over again only when
    /// the stream wraps (time based on one file, or writing more than the file holds).
    fn stream_seq(
        st: &mut StreamState,
        fi: usize,
        s: &Stream,
        dir: usize,
        len: u64,
    ) -> Option<(u64, u64)> {
        let f = &mut st.files[fi];
        if f.pos[dir] >= len && s.seq_wrap {
            f.pos[dir] = 0;
            // fio's loop_cache_invalidate, when time based and not O_DIRECT.
            if s.invalidate && s.time_based && !s.direct && st.local {
                io::fadvise_dontneed(f.fd, s.files[fi].offset, len);
            }
        }
        let last = f.pos[dir];
        if last >= len {
            return None;
        }
        let mut pos = last;
        if pos > 0 && s.seq_skip > 0 {
            pos += s.seq_skip;
            if pos >= len {
                pos = 0;
            }
        }
        let b = Self::stream_bs(st, &s.bs[dir], len - pos)?;
        Some((pos, b))
    }

    /// fio's random offset: a block drawn uniformly, and with the map the next free one
    /// after a taken one (`axmap_next_free`, wrapping; `None` when the map is full); the
    /// I/O then covers only the free blocks from there (`mark_random_map`).
    fn stream_random(
        st: &mut StreamState,
        fi: usize,
        s: &Stream,
        dir: usize,
        len: u64,
    ) -> Option<(u64, u64)> {
        let unit = st.unit;
        let blocks = st.files[fi].blocks;
        if blocks == 0 {
            return None;
        }
        // With zones (zonesize), blocks are drawn in the current zone's range only.
        let (lo, n) = match s.stride {
            Some(z) => {
                let lo = (st.files[fi].zone_base / unit).min(blocks - 1);
                (lo, (z.range / unit).clamp(1, blocks - lo))
            }
            None => (0, blocks),
        };
        let mut b = match &mut st.files[fi].skew {
            Some(sk) => sk.next(),
            None => match st.zones.draw(dir, blocks, unit, &mut st.rng) {
                Some(b) => b,
                None => lo + st.rng.random_range(0..n),
            },
        };
        if b >= blocks {
            // The last, partial range of a skewed draw: no whole block there.
            return None;
        }
        let map = s.random_map;
        if map {
            let f = &st.files[fi];
            if f.taken(b) {
                b = (1..n)
                    .map(|k| lo + (b - lo + k) % n)
                    .find(|c| !f.taken(*c))?;
            }
        }
        let off = b * unit;
        let mut l = Self::stream_bs(st, &s.bs[dir], len - off)?;
        if map {
            let f = &mut st.files[fi];
            let want = l.div_ceil(unit);
            let mut got = 0;
            while got < want && b + got < blocks && !f.taken(b + got) {
                f.set(b + got);
                got += 1;
            }
            l = l.min(got * unit);
        }
        Some((off, l))
    }

    fn stream_io(
        &mut self,
        s: &Stream,
        dir: usize,
        fi: usize,
        off: u64,
        len: u64,
    ) -> Result<Flow, Fail> {
        if s.depth > 0 {
            // Asynchronous: counted when issued, as fio counts a pass's bytes.
            self.stream_account(s, dir, fi, off, len, len);
            let r = self.uring_issue(s, dir, fi, off, len)?;
            return Ok(self.stream_think(s)?.unwrap_or(r));
        }
        let (boff, len) = self.buffer(len as usize)?;
        let fd = self.stream.as_ref().expect("set").files[fi].fd;
        let logged = if dir == 1 {
            self.stream_shape_write(s, fi, off, boff, len)
        } else {
            None
        };
        let t0 = self.clock.now();
        let r = if s.mmap {
            let m = self.stream.as_ref().expect("set").files[fi]
                .mapping
                .as_ref();
            let buf = &mut self.buf.as_mut_slice()[boff..boff + len];
            m.expect("an mmap stream maps its files")
                .copy(off, buf, dir == 1, s.direct)
                .map_err(std::io::Error::other)
        } else if s.lseek && self.remote.is_none() {
            // (Over NFS every call names its offset: the pread/pwrite below.)
            if let Err(e) = io::seek_to(fd, off) {
                Err(e)
            } else if dir == 0 {
                io::read(fd, &mut self.buf.as_mut_slice()[boff..boff + len])
            } else {
                io::write(fd, &self.buf.as_slice()[boff..boff + len])
            }
        } else if dir == 0 {
            self.read_at(fd, boff, len, off)
        } else {
            self.write_at(fd, boff, len, off)
        };
        let ns = self.clock.since(t0);
        let n = r.map_err(|e| {
            Fail::Error(format!(
                "{} {} at offset {off}: {e}",
                if dir == 0 { "read" } else { "write" },
                s.files[fi].name
            ))
        })? as u64;
        let (stat, kind) = if dir == 0 {
            (s.stat_read, FlowopKind::Read)
        } else {
            (s.stat_write, FlowopKind::Write)
        };
        self.done_stat(stat, kind, ns, n);
        self.fio_sync_io(dir, n, len as u64, off, ns);
        self.stream_account(s, dir, fi, off, len as u64, n);
        // fio checks the reads of a job that only reads; a mixed job's own reads are not
        // checked (its verify phase reads are).
        if s.verify.is_some() && dir == 0 && !s.writes {
            let mut data = self.buf.as_slice()[boff..boff + n as usize].to_vec();
            if !self.stream_check(s, fi, off, &mut data, None) {
                return self.stream_end(s);
            }
        } else if let Some(l) = logged.filter(|_| s.do_verify) {
            if !self.stream_logged(s, super::stream_verify::Logged { len: n, ..l })? {
                return self.stream_end(s);
            }
        }
        Ok(self.stream_think(s)?.unwrap_or(Flow::Continue))
    }

    /// Fill the buffer bytes `boff..boff + len` for a write to `off` of file `fi`: the
    /// content setting's data, fio's scramble, or with `verify` fio's verified data and
    /// headers (then what the verify phase expects back).
    fn stream_shape_write(
        &mut self,
        s: &Stream,
        fi: usize,
        off: u64,
        boff: usize,
        len: usize,
    ) -> Option<super::stream_verify::Logged> {
        let now = self.clock.now();
        let logged = if let Some(v) = &s.verify {
            let seed = self.stream_next_write();
            let numberio = self.stream.as_ref().expect("set").issues[1];
            let out = &mut self.buf.as_mut_slice()[boff..boff + len];
            let w = super::stream_verify::fill_write(s, v, seed, (fi, off, numberio), out, now);
            Some(super::stream_verify::Logged {
                fi,
                off,
                len: len as u64,
                seed: w.seed,
                numberio: w.numberio,
            })
        } else {
            None
        };
        let st = self.stream.as_ref().expect("set");
        if logged.is_none() && s.content.is_some() {
            let out = &mut self.buf.as_mut_slice()[boff..boff + len];
            super::stream_data::shape_into(s, st.content_seed, fi, off, out);
        } else if logged.is_none() && s.ctl.refill {
            let out = &mut self.buf.as_mut_slice()[boff..boff + len];
            super::stream_ctl::refill(out, st.content_seed, st.issues[1]);
        } else if logged.is_none() && s.scramble {
            super::stream_data::scramble(&mut self.buf.as_mut_slice()[boff..boff + len], off, now);
        }
        if s.content.is_some() {
            self.stream_sample(s, boff, len);
        }
        logged
    }

    /// Keep the start of what a write with a content setting wrote (from the worker's
    /// buffer at `boff`), for the achieved shares in the results.
    pub(super) fn stream_sample(&mut self, s: &Stream, boff: usize, len: usize) {
        let o = &mut self.rec.ops[s.stat_write];
        let take = fsbench_results::stats::SAMPLE_BYTES
            .saturating_sub(o.sample.len())
            .min(len);
        if take > 0 {
            o.content = s.content;
            o.sample
                .extend_from_slice(&self.buf.as_slice()[boff..boff + take]);
        }
    }

    /// Count an I/O of `len` bytes at `off` that moved `n` bytes: the pass, the pacing,
    /// the position, the last write.
    pub(super) fn stream_account(
        &mut self,
        s: &Stream,
        dir: usize,
        fi: usize,
        off: u64,
        len: u64,
        n: u64,
    ) {
        let st = self.stream.as_mut().expect("set");
        st.issues[dir] += 1;
        st.paced[dir].0 += len;
        st.paced[dir].1 += 1;
        Self::stream_next_due(st, s, dir);
        st.pass_ios += 1;
        st.pass_bytes += n;
        st.zone_bytes += len;
        if !s.random {
            st.files[fi].pos[dir] = off - s.files[fi].offset + len;
        }
        st.last_was_write = dir == 1;
        if dir == 1 {
            st.last_write_file = Some(fi);
        }
        if n == 0 {
            // The file ended early (it shrank): nothing more to do in it this pass.
            st.files[fi].done = true;
        }
    }

    /// `thinktime` after every `thinktime_blocks` I/Os; `Some(Stop)` when the run stopped.
    fn stream_think(&mut self, s: &Stream) -> Result<Option<Flow>, Fail> {
        let st = self.stream.as_mut().expect("set");
        st.since_think += 1;
        if s.think_us > 0 && st.since_think >= s.think_blocks {
            st.since_think = 0;
            if s.depth > 0 {
                // fio's handle_thinktime quiesces first.
                self.uring_quiesce(s)?;
            }
            // fio's handle_thinktime: spin `thinktime_spin`, then sleep what is left.
            let spun = spin(Duration::from_micros(s.think_spin_us));
            let left = Duration::from_micros(s.think_us).saturating_sub(spun);
            if !left.is_zero() && !self.sleep(left) {
                return Ok(Some(Flow::Stop));
            }
        }
        Ok(None)
    }

    /// fio's `check_min_rate`: after a two-second settling time, every `ratecycle` the
    /// rate of each direction since the last check must reach `rate_min` (`rate_iops_min`);
    /// the message when it did not.
    fn stream_rate_min(&mut self, s: &Stream) -> Option<String> {
        if s.rate_min == [MinRate::None, MinRate::None] {
            return None;
        }
        let st = self.stream.as_mut().expect("set");
        let now = Instant::now();
        if now.duration_since(st.started) < Duration::from_secs(2) {
            return None;
        }
        for d in 0..2 {
            let (bytes, ios) = st.paced[d];
            if s.rate_min[d] == MinRate::None || bytes == 0 {
                continue;
            }
            if let Some((b0, n0, t0)) = st.rate_check[d] {
                let spent = now.duration_since(t0).as_millis() as u64;
                if spent < s.ratecycle_ms || spent == 0 {
                    continue;
                }
                let (got, want, what) = match s.rate_min[d] {
                    MinRate::Bytes(m) => ((bytes - b0) * 1000 / spent, m, "rate_min"),
                    MinRate::Iops(m) => ((ios - n0) * 1000 / spent, m, "rate_iops_min"),
                    MinRate::None => continue,
                };
                if got < want {
                    let unit = if what == "rate_min" { "B/s" } else { " IOPS" };
                    return Some(format!("{what}={want}{unit} not met, got {got}{unit}"));
                }
            }
            st.rate_check[d] = Some((bytes, ios, now));
        }
        None
    }

    /// fio's check before each I/O: after the Nth write, an fsync (or fdatasync) first.
    fn stream_sync_due(&mut self, s: &Stream) -> Option<Result<Flow, Fail>> {
        let st = self.stream.as_mut().expect("set");
        if !st.last_was_write {
            return None;
        }
        let w = st.issues[1];
        let data = if s.fsync_every > 0 && w.is_multiple_of(s.fsync_every) {
            false
        } else if s.fdatasync_every > 0 && w.is_multiple_of(s.fdatasync_every) {
            true
        } else {
            return None;
        };
        st.last_was_write = false;
        let fi = st.last_write_file?;
        let stat = if data { s.stat_datasync } else { s.stat_sync };
        if s.depth > 0 {
            return Some(self.uring_sync(s, fi, data));
        }
        Some(self.stream_sync(stat, fi, data))
    }

    /// fsync (`data`: fdatasync) file `fi`; with mmap, `msync` of its mapping, as fio.
    fn stream_sync(&mut self, stat: usize, fi: usize, data: bool) -> Result<Flow, Fail> {
        let f = &self.stream.as_ref().expect("set").files[fi];
        let t0 = self.clock.now();
        let r = match (&f.mapping, self.remote.as_deref_mut()) {
            (Some(m), _) => m.sync().map_err(std::io::Error::other),
            // NFS's COMMIT is both an fsync and an fdatasync.
            (None, Some(r)) => r.fsync(f.fd),
            // SAFETY: fsync/fdatasync on a descriptor this worker owns.
            (None, None) => match unsafe {
                if data {
                    libc::fdatasync(f.fd)
                } else {
                    libc::fsync(f.fd)
                }
            } {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            },
        };
        let ns = self.clock.since(t0);
        if let Err(e) = r {
            return Err(Fail::Error(format!("fsync: {e}")));
        }
        self.done_stat(stat, FlowopKind::Fsync, ns, 0);
        self.fio_fsync(stat, ns);
        Ok(Flow::Continue)
    }

    /// At the end of a pass: `fsync_on_close` syncs every file written.
    fn stream_close_pass(&mut self, s: &Stream) -> Result<(), Fail> {
        if s.fsync_on_close && s.writes {
            for fi in 0..s.files.len() {
                self.stream_sync(s.stat_end_sync, fi, false)?;
            }
        }
        Ok(())
    }

    /// The stream is over: `end_fsync` syncs every file, `unlink` removes them, then this
    /// thread is done.
    pub(super) fn stream_end(&mut self, s: &Stream) -> Result<Flow, Fail> {
        // Whatever fails at the end is counted, and the stream ends all the same: the jobs
        // waiting for it must not wait for ever.
        if let Err(Fail::Error(msg)) = self.stream_end_work(s) {
            self.rec.ops[s.stat_time].error(|| msg);
        }
        self.sh.streams_ended[s.job].fetch_add(1, Ordering::Release);
        Ok(Flow::Finished)
    }

    fn stream_end_work(&mut self, s: &Stream) -> Result<(), Fail> {
        if s.depth > 0 {
            // What is in flight completes and counts, as fio reaps it at the end.
            self.uring_quiesce(s)?;
        }
        self.stream_verified(s, true)?;
        let pending = self
            .stream
            .as_ref()
            .is_some_and(|st| !st.written.is_empty() && !st.verify_stop);
        // A job that exitall ended reads nothing back, as fio's terminated job.
        let ended = self.stream_exit_due(s);
        if pending && s.verify.is_some() && s.do_verify && !self.sh.ctl.stopping() && !ended {
            self.stream_verify(s, true)?;
        }
        if s.end_fsync && s.writes {
            for fi in 0..s.files.len() {
                self.stream_sync(s.stat_end_sync, fi, false)?;
            }
        }
        self.stream_timed();
        if s.unlink {
            self.stream_unlink(s)?;
        }
        Ok(())
    }

    /// fio's `unlink`: close the files and remove them from the run directory (a file
    /// another stream removed first is not an error).
    fn stream_unlink(&mut self, s: &Stream) -> Result<(), Fail> {
        self.stream_close();
        let dir = self.sh.stream_dir;
        for f in s.files.iter().filter(|f| !f.external && f.device.is_none()) {
            let name = fsbench_base::beneath::component(std::ffi::OsStr::new(&f.name))
                .map_err(|e| Fail::Error(format!("unlink {}: {e}", f.name)))?;
            let r = match (self.remote.as_deref_mut(), dir) {
                (Some(r), _) => r.unlink_in_run(&f.name),
                (None, Some(dir)) => fsbench_base::owned::unlink(dir, &name),
                (None, None) => return Ok(()),
            };
            match r {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e) => return Err(Fail::Error(format!("unlink {}: {e}", f.name))),
            }
        }
        Ok(())
    }

    /// Record how long the stream ran (once: at its end, or when the run stops it).
    pub(super) fn stream_timed(&mut self) {
        let Some(st) = self.stream.as_mut() else {
            return;
        };
        if st.timed {
            return;
        }
        st.timed = true;
        let ns = st.started.elapsed().as_nanos() as u64;
        // The stream's statistic sits on its flowop.
        let Some(s) = self.thread.flowops.iter().find_map(|f| f.stream.as_deref()) else {
            return;
        };
        let (stat, ramp) = (s.stat_time, s.ramp_ns);
        self.done_stat(stat, FlowopKind::Stream, ns.saturating_sub(ramp), 0);
        self.fio_end(s);
    }

    /// Close the stream's files (at the end of the run, not measured).
    pub(super) fn stream_close(&mut self) {
        if let Some(mut st) = self.stream.take() {
            // What is in flight lands before its buffers and files go.
            if let Some(mut r) = st.ring.take() {
                r.drain();
            }
            for f in st.files {
                let _ = self.close_fd(f.fd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_gaps_are_exponential_with_the_rates_mean() {
        // Exponential gaps of mean 5000 µs: mean and standard deviation both about 5000,
        // the median 5000 × ln 2 (linear pacing has a standard deviation of 0).
        let mut rng = fsbench_model::dist::rng(11, 2);
        let mut gaps: Vec<f64> = (0..50_000)
            .map(|_| poisson_gap_us(5000, rng.random_range(f32::EPSILON..=1.0)) as f64)
            .collect();
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n).sqrt();
        gaps.sort_by(f64::total_cmp);
        let median = gaps[gaps.len() / 2];
        assert!((4850.0..5150.0).contains(&mean), "{mean}");
        assert!((4800.0..5200.0).contains(&sd), "{sd}");
        assert!((3300.0..3630.0).contains(&median), "{median}");
    }
}
