//! What a fio job's clone records beside the engine's statistics, as fio's `thread_stat`
//! (see `fsbench_results::stats::fiojob`): each I/O's submission, completion and total latencies,
//! the depth it was queued at, the bandwidth and IOPS samples every `bw_avg_time`, its
//! `write_*_log` entries, its runtime (per direction: a verifying writer's reads run in
//! its verify phase) and its own CPU, from `getrusage(RUSAGE_THREAD)` at its start and end.

use super::Worker;
use fsbench_model::model::stream::{FioOut, Stream};
use fsbench_results::stats::clock::Clock;
use fsbench_results::stats::clock::Stamp;
use fsbench_results::stats::fiojob::{thread_usage, FioClone, FioLogs, FioVerify, LogEntry};
use std::sync::Arc;

type Usage = (f64, f64, u64, u64, u64);

/// A log window's latencies of one direction: (sum, count, max) of slat, clat and lat.
type Window = [(f64, u64, u64); 3];

pub(super) struct FioRun {
    rec: FioClone,
    out: Arc<FioOut>,
    start: Stamp,
    usage0: Usage,
    /// Time spent in verify phases, and when the current one began.
    verify_ns: u64,
    verify_from: Option<Stamp>,
    /// The last bandwidth and IOPS samples: when, and (bytes, I/Os) per direction then.
    bw_at: Stamp,
    bw_base: [(u64, u64); 2],
    iops_at: Stamp,
    iops_base: [u64; 2],
    /// The current log window (`log_avg_msec`): when it began, the counts then, and its
    /// latencies.
    win_at: Stamp,
    win_base: [(u64, u64); 2],
    win: [Window; 2],
    logs: Option<Box<FioLogs>>,
    /// The statistics of the fsyncs and fdatasyncs every N writes (fio's `sync`), if the
    /// job has them.
    sync_stat: Option<usize>,
    datasync_stat: Option<usize>,
}

impl FioRun {
    fn new(out: Arc<FioOut>, now: Stamp) -> FioRun {
        let logs = (out.bw_log.is_some() || out.lat_log.is_some() || out.iops_log.is_some())
            .then(Box::default);
        FioRun {
            rec: FioClone {
                report: String::new(),
                job: 0,
                thread_number: out.thread_number,
                group: out.group,
                out: (*out).clone(),
                ..Default::default()
            },
            out,
            start: now,
            usage0: thread_usage(),
            verify_ns: 0,
            verify_from: None,
            bw_at: now,
            bw_base: [(0, 0); 2],
            iops_at: now,
            iops_base: [0; 2],
            win_at: now,
            win_base: [(0, 0); 2],
            win: [[(0.0, 0, 0); 3]; 2],
            logs,
            sync_stat: None,
            datasync_stat: None,
        }
    }

    fn ms(clock: &Clock, a: Stamp, b: Stamp) -> u64 {
        clock.delta(a, b) / 1_000_000
    }

    /// fio's `add_bw_samples` / `add_iops_samples`: a sample per direction that moved
    /// data, every `bw_avg_time` (`iops_avg_time`).
    fn samples(&mut self, clock: &Clock, now: Stamp) {
        let spent = Self::ms(clock, self.bw_at, now);
        if spent + 1 >= self.out.bw_avg_ms && spent > 0 {
            for d in 0..2 {
                let (b, n) = (self.rec.dirs[d].io_bytes, self.rec.dirs[d].total_ios);
                if b > self.bw_base[d].0 {
                    let kib = (b - self.bw_base[d].0) * 1000 / spent / 1024;
                    self.rec.dirs[d].bw.add(kib as f64);
                }
                self.bw_base[d] = (b, n);
            }
            self.bw_at = now;
        }
        let spent = Self::ms(clock, self.iops_at, now);
        if spent + 1 >= self.out.iops_avg_ms && spent > 0 {
            for d in 0..2 {
                let n = self.rec.dirs[d].total_ios;
                if n > self.iops_base[d] {
                    let iops = (n - self.iops_base[d]) * 1000 / spent;
                    self.rec.dirs[d].iops.add(iops as f64);
                }
                self.iops_base[d] = n;
            }
            self.iops_at = now;
        }
    }

    /// A log entry per I/O (without `log_avg_msec`), as fio's per-unit logs.
    fn log_io(&mut self, t_ms: u64, dir: usize, bytes: u64, off: u64, lat: [u64; 3], sub: bool) {
        let Some(l) = self.logs.as_mut() else { return };
        let e = |value| LogEntry {
            t_ms,
            value,
            dir: dir as u8,
            bs: bytes,
            offset: off,
        };
        if self.out.lat_log.is_some() {
            if sub {
                l.slat.push(e(lat[0]));
            }
            l.clat.push(e(lat[1]));
            l.lat.push(e(lat[2]));
        }
        if self.out.bw_log.is_some() && !self.out.no_bw {
            // fio's add_bw_sample: bytes × 10^6 over the completion latency in ns.
            l.bw.push(e(bytes * 1_000_000 / lat[1].max(1)));
        }
        if self.out.iops_log.is_some() {
            l.iops.push(e(1));
        }
    }

    /// With `log_avg_msec`: add to the window, and at its end write its averages (or
    /// maxima, `log_max_value`) and rates, a line per direction that did I/O.
    fn log_window(&mut self, clock: &Clock, now: Stamp, dir: usize, lat: [u64; 3], sub: bool) {
        for (i, v) in lat.iter().enumerate() {
            if i == 0 && !sub {
                continue;
            }
            let w = &mut self.win[dir][i];
            w.0 += *v as f64;
            w.1 += 1;
            w.2 = w.2.max(*v);
        }
        let spent = Self::ms(clock, self.win_at, now);
        if spent + 1 < self.out.log_avg_ms || spent == 0 {
            return;
        }
        let t_ms = Self::ms(clock, self.start, now);
        let Some(l) = self.logs.as_mut() else { return };
        for d in 0..2 {
            let e = |value| LogEntry {
                t_ms,
                value,
                dir: d as u8,
                bs: 0,
                offset: 0,
            };
            let (b, n) = (self.rec.dirs[d].io_bytes, self.rec.dirs[d].total_ios);
            let (b0, n0) = self.win_base[d];
            if n > n0 {
                if self.out.bw_log.is_some() {
                    l.bw.push(e((b - b0) * 1000 / spent / 1024));
                }
                if self.out.iops_log.is_some() {
                    l.iops.push(e((n - n0) * 1000 / spent));
                }
            }
            self.win_base[d] = (b, n);
            if self.out.lat_log.is_some() {
                for (i, list) in [&mut l.slat, &mut l.clat, &mut l.lat]
                    .into_iter()
                    .enumerate()
                {
                    let (sum, cnt, max) = self.win[d][i];
                    if cnt > 0 {
                        list.push(e(if self.out.log_max {
                            max
                        } else {
                            (sum / cnt as f64) as u64
                        }));
                    }
                }
            }
            self.win[d] = [(0.0, 0, 0); 3];
        }
        self.win_at = now;
    }
}

impl Worker<'_> {
    /// The clone starts: its clock, CPU and samples from now.
    pub(super) fn fio_begin(&mut self, s: &Stream) {
        let mut run = FioRun::new(s.out.clone(), self.clock.now());
        run.rec.report = self.thread.name.clone();
        run.rec.job = s.job;
        run.sync_stat = (s.fsync_every > 0 && s.writes).then_some(s.stat_sync);
        run.datasync_stat = (s.fdatasync_every > 0 && s.writes).then_some(s.stat_datasync);
        self.fio = Some(Box::new(run));
    }

    /// The end of the warm-up (`ramp_time`): what the clone recorded so far is dropped.
    pub(super) fn fio_restart(&mut self) {
        if let Some(f) = self.fio.as_mut() {
            let (report, job) = (f.rec.report.clone(), f.rec.job);
            let syncs = (f.sync_stat, f.datasync_stat);
            **f = FioRun::new(f.out.clone(), self.clock.now());
            f.rec.report = report;
            f.rec.job = job;
            (f.sync_stat, f.datasync_stat) = syncs;
        }
    }

    /// A read (0) or write (1) completed: `bytes` of `asked` at `off`, with its
    /// submission, completion and total latencies (`sub`: it had a submission apart).
    #[inline]
    pub(super) fn fio_io(&mut self, io: (usize, u64, u64, u64), lat: [u64; 3], sub: bool) {
        let (dir, bytes, asked, off) = io;
        let clock = self.clock;
        let Some(f) = self.fio.as_mut() else { return };
        f.rec.io(dir, bytes, asked, lat, sub);
        let now = clock.now();
        f.samples(&clock, now);
        if f.logs.is_some() {
            if f.out.log_avg_ms > 0 {
                f.log_window(&clock, now, dir, lat, sub);
            } else {
                let t = FioRun::ms(&clock, f.start, now);
                f.log_io(t, dir, bytes, off, lat, sub);
            }
        }
    }

    /// A synchronous engine's I/O: queued at depth 1, submitted and completed alone.
    #[inline]
    pub(super) fn fio_sync_io(&mut self, dir: usize, bytes: u64, asked: u64, off: u64, ns: u64) {
        if let Some(f) = self.fio.as_mut() {
            f.rec.queued(1);
            f.rec.submitted(1);
            f.rec.completed(1);
        }
        self.fio_io((dir, bytes, asked, off), [0, ns, ns], false);
    }

    /// A sync recorded under `stat`: fio's `sync` entry times the fsyncs and fdatasyncs
    /// every N writes, and counts the fsyncs.
    pub(super) fn fio_fsync(&mut self, stat: usize, ns: u64) {
        if let Some(f) = self.fio.as_mut() {
            let fsync = f.sync_stat == Some(stat);
            if fsync || f.datasync_stat == Some(stat) {
                // fio's add_sync_clat_sample, unless `disable_clat`.
                if !f.out.no_clat {
                    f.rec.sync.add(ns as f64);
                    f.rec.sync_bins.add(ns);
                }
                f.rec.sync_ios += u64::from(fsync);
            }
        }
    }

    /// fio's `update_error_count`: an error of a kind `continue_on_error` names, counted
    /// whether the job goes past it or ends with it.
    pub(super) fn fio_error(&mut self, errno: i32) {
        if let Some(f) = self.fio.as_mut() {
            f.rec.total_err += 1;
            if f.rec.total_err == 1 {
                f.rec.first_errno = errno;
            }
        }
    }

    /// A read (0) or write (1) that failed and that the job went past: fio counts it as
    /// issued (`total_ios`), not as done (no bytes, no latency). `sync`: a synchronous
    /// engine's, queued, submitted and completed alone.
    pub(super) fn fio_failed_io(&mut self, dir: usize, sync: bool) {
        if let Some(f) = self.fio.as_mut() {
            if sync {
                f.rec.queued(1);
                f.rec.submitted(1);
                f.rec.completed(1);
            }
            f.rec.dirs[dir].total_ios += 1;
        }
    }

    /// The job's error number (fio's `td->error`): the first one set stays.
    pub(super) fn fio_errno(&mut self, errno: i32) {
        if let Some(f) = self.fio.as_mut() {
            if f.rec.errno == 0 {
                f.rec.errno = errno;
            }
        }
    }

    /// Depth accounting of an asynchronous engine.
    pub(super) fn fio_queued(&mut self, depth: u64) {
        if let Some(f) = self.fio.as_mut() {
            f.rec.queued(depth);
        }
    }
    pub(super) fn fio_submitted(&mut self, n: u64) {
        if let Some(f) = self.fio.as_mut() {
            f.rec.submitted(n);
        }
    }
    pub(super) fn fio_completed(&mut self, n: u64) {
        if let Some(f) = self.fio.as_mut() {
            f.rec.completed(n);
        }
    }

    /// A verify phase begins (`true`) or ends: its time is the reads' runtime.
    pub(super) fn fio_verify_phase(&mut self, begins: bool) {
        let now = self.clock.now();
        let clock = self.clock;
        let Some(f) = self.fio.as_mut() else { return };
        if begins {
            f.verify_from = Some(now);
        } else if let Some(t) = f.verify_from.take() {
            f.verify_ns += clock.delta(t, now);
        }
    }

    /// The clone ended: its runtime per direction, CPU, errors and verify summary go into
    /// the thread's recorder.
    pub(super) fn fio_end(&mut self, s: &Stream) {
        self.fio_verify_phase(false);
        let now = self.clock.now();
        let Some(f) = self.fio.take() else { return };
        let mut f = *f;
        let total = self.clock.delta(f.start, now);
        let io_ns = total.saturating_sub(f.verify_ns);
        let r = &mut f.rec;
        r.runtime_ns = total;
        // verify_only's writes are not done: fio keeps no runtime for them.
        for (d, does) in [(0, s.reads), (1, s.writes && !s.ctl.verify_only)] {
            r.dirs[d].runtime_ns =
                if does { io_ns } else { 0 } + if d == 0 { f.verify_ns } else { 0 };
        }
        let (u, sy, ctx, maj, min) = thread_usage();
        let (u0, s0, ctx0, maj0, min0) = f.usage0;
        (r.usr_s, r.sys_s) = ((u - u0).max(0.0), (sy - s0).max(0.0));
        (r.ctx, r.majf, r.minf) = (
            ctx.saturating_sub(ctx0),
            maj.saturating_sub(maj0),
            min.saturating_sub(min0),
        );
        for st in stream_stats(s) {
            let o = &self.rec.ops[st];
            r.errors += o.errors;
            if r.first_error.is_none() {
                r.first_error = o.first_error.clone();
            }
        }
        if s.verify.is_some() {
            let o = &self.rec.ops[s.stat_read];
            r.verify = Some(FioVerify {
                blocks: o.verify_blocks,
                mismatches: o.verify_mismatches,
                first_bad: o.mismatches.first().map(|m| (m.path.clone(), m.offset)),
            });
        }
        r.logs = f.logs;
        self.rec.fio.push(f.rec);
    }
}

/// The statistics a stream records into (see `fio::map::job_stats`).
fn stream_stats(s: &Stream) -> Vec<usize> {
    let mut v = vec![s.stat_time];
    if s.reads || (s.verify.is_some() && s.do_verify && s.writes) {
        v.push(s.stat_read);
    }
    if s.writes {
        v.push(s.stat_write);
        if s.fsync_every > 0 {
            v.push(s.stat_sync);
        }
        if s.fdatasync_every > 0 {
            v.push(s.stat_datasync);
        }
        if s.end_fsync || s.fsync_on_close {
            v.push(s.stat_end_sync);
        }
    }
    v.dedup();
    v
}
