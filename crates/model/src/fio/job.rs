//! fio's options, read into one typed [`Job`] per job section: `[global]` first (each
//! `[global]` section adds to the defaults of the jobs after it), then the job's own lines
//! in order, the later line winning, as in fio. Every option fsbench reads is in
//! [`apply`]; any other is refused with its place and name, never ignored.

use super::ini::{Opt, Section};
use super::value;
use crate::lang::{Diagnostic, SourceFile, Span};
use crate::model::stream::{Skew, Zones};
use std::sync::Arc;

/// Block sizes of one direction.
#[derive(Debug, Clone, PartialEq)]
pub enum Bs {
    Fixed(u64),
    /// `bsrange`: a random multiple of `lo` in `lo..=hi` (fio's default `bs_unaligned=0`).
    Range(u64, u64),
    /// `bssplit`: (size, percent) parts.
    Split(Vec<(u64, u32)>),
}

impl Bs {
    pub fn min(&self) -> u64 {
        match self {
            Bs::Fixed(b) => *b,
            Bs::Range(lo, _) => *lo,
            Bs::Split(p) => p.iter().map(|x| x.0).min().unwrap_or(0),
        }
    }
    pub fn max(&self) -> u64 {
        match self {
            Bs::Fixed(b) => *b,
            Bs::Range(_, hi) => *hi,
            Bs::Split(p) => p.iter().map(|x| x.0).max().unwrap_or(0),
        }
    }
    pub fn describe(&self) -> String {
        let h = |b: u64| fsbench_base::units::human_bytes_u64(b);
        match self {
            Bs::Fixed(b) => h(*b),
            Bs::Range(lo, hi) => format!("{}-{}", h(*lo), h(*hi)),
            Bs::Split(p) => p
                .iter()
                .map(|(b, pc)| format!("{}/{pc}", h(*b)))
                .collect::<Vec<_>>()
                .join(":"),
        }
    }
}

/// `sync=`: how writes reach the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    None,
    /// `O_SYNC` (fio's `sync=1` / `sync=sync`).
    Sync,
    /// `O_DSYNC`.
    Dsync,
}

/// `ioengine=`, the ones fsbench runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// `pread`/`pwrite` (psync, pvsync, pvsync2 with one buffer: the same system calls).
    Psync,
    /// `lseek` then `read`/`write` (fio's `sync`).
    Sync,
    /// io_uring with `iodepth` in flight (`io_uring`; `libaio` and `posixaio` run so too).
    Uring,
    /// Copies to and from a shared mapping of the file (fio's `mmap`).
    Mmap,
}

/// `random_distribution=`: `random`, `zipf[:theta[:center]]`, `pareto[:h[:center]]`,
/// `normal[:dev[:center]]` (fio's defaults: theta 1.1, h 0.2, dev 0), and `zoned:` /
/// `zoned_abs:` with their zones per direction (`read,write`, one list for both).
fn distribution(v: &str, kb: u64) -> Result<(Skew, [Zones; 2]), String> {
    let (kind, rest) = match v.split_once(':') {
        Some((k, r)) => (k.trim(), Some(r.trim())),
        None => (v.trim(), None),
    };
    if matches!(kind, "zoned" | "zoned_abs") {
        let abs = kind == "zoned_abs";
        let rest = rest.unwrap_or("");
        // fio's str_split_parse: `read,write[,trim]`, or one list for every direction.
        let (r, w) = match rest.split_once(',') {
            Some((r, w)) => (r, w.split(',').next().unwrap_or("")),
            None => (rest, rest),
        };
        let zones = [value::zones(r, kb, abs)?, value::zones(w, kb, abs)?];
        return Ok((Skew::Zoned, zones));
    }
    let (val, center) = match rest {
        None => (None, None),
        Some(r) => {
            let (a, c) = match r.split_once(':') {
                Some((a, c)) => (a, Some(c)),
                None => (r, None),
            };
            let num = |t: &str| {
                t.trim()
                    .parse::<f64>()
                    .map_err(|_| format!("`{t}` is not a number"))
            };
            let center = c.map(num).transpose()?;
            if let Some(c) = center {
                if !(0.0..=1.0).contains(&c) {
                    return Err(format!("center {c} out of range (0 to 1)"));
                }
            }
            (Some(num(a)?), center)
        }
    };
    let skew = match kind {
        "random" => Skew::Uniform,
        "zipf" => {
            let theta = val.unwrap_or(1.1);
            if theta == 1.0 || theta <= 0.0 {
                return Err(format!("zipf theta {theta}: must be above 0 and not 1"));
            }
            Skew::Zipf { theta, center }
        }
        "pareto" => {
            let h = val.unwrap_or(0.2);
            if !(h > 0.0 && h < 1.0) {
                return Err(format!("pareto {h}: out of range (0 < h < 1)"));
            }
            Skew::Pareto { h, center }
        }
        "normal" => {
            let dev = val.unwrap_or(0.0);
            if !(0.0..100.0).contains(&dev) {
                return Err(format!("normal deviation {dev}: out of range (0 <= dev < 100)"));
            }
            Skew::Normal { dev, center }
        }
        _ => return Err(format!("`{v}` is not a distribution fsbench runs (random, zipf, pareto, normal, zoned, zoned_abs)")),
    };
    Ok((skew, Default::default()))
}

/// `rate=` (bytes per second) or `rate_iops=` of one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    Bytes(u64),
    Iops(u64),
}

/// `fallocate=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Falloc {
    None,
    Native,
    Posix,
    Keep,
}

/// A job as fio's options describe it (one section, before `numjobs` makes clones).
#[derive(Debug, Clone)]
pub struct Job {
    pub name: String,
    pub src: Arc<SourceFile>,
    pub span: Span,
    pub kb_base: u64,
    pub read: bool,
    pub write: bool,
    pub random: bool,
    /// The `:N` of `rw=read:N`: bytes skipped after each sequential I/O.
    pub seq_skip: u64,
    pub rwmixread: u32,
    pub bs: [Bs; 2],
    pub size: Option<u64>,
    /// `size=N%`: that share of each existing file's or device's size.
    pub size_pct: Option<f64>,
    pub filesize: Option<(u64, u64)>,
    pub nrfiles: u64,
    pub filename: Option<(String, Span, Arc<SourceFile>)>,
    /// `filename_format` (fio's default `$jobname.$jobnum.$filenum`), with its place.
    pub filename_format: Option<(String, Span, Arc<SourceFile>)>,
    pub directory: Option<String>,
    pub numjobs: u32,
    pub group_reporting: bool,
    pub engine: Engine,
    pub ioengine_name: String,
    /// `nfs_url=` (fio's nfs engine): the export the job's files are on, with the place it
    /// was given.
    pub nfs_url: Option<(String, Span, Arc<SourceFile>)>,
    pub iodepth: u32,
    /// io_uring's `hipri` (polled completions), `fixedbufs` (registered buffers) and
    /// `registered_files` (registered descriptors).
    pub uring_opts: [bool; 3],
    /// `iodepth_batch_submit`, `iodepth_batch_complete_min`, `iodepth_batch_complete_max`.
    pub iodepth_batch: [u32; 3],
    pub direct: bool,
    pub sync: SyncMode,
    pub fsync: u64,
    pub fdatasync: u64,
    pub end_fsync: bool,
    pub fsync_on_close: bool,
    pub runtime_us: u64,
    pub time_based: bool,
    pub ramp_time_us: u64,
    pub startdelay_us: u64,
    /// `startdelay=lo-hi`: each clone starts a time drawn in the range (0: no range).
    pub startdelay_hi_us: u64,
    pub loops: u64,
    pub number_ios: u64,
    pub io_size: Option<u64>,
    pub thinktime_us: u64,
    pub thinktime_blocks: u64,
    /// `thinktime_spin`: of the think time, this much spent busy.
    pub thinktime_spin_us: u64,
    /// `rate_min` / `rate_iops_min` per direction, checked every `ratecycle` ms.
    pub rate_min: [Option<Rate>; 2],
    pub ratecycle_ms: u64,
    pub rate: [Option<Rate>; 2],
    /// `rate_process=poisson`.
    pub poisson: bool,
    pub unlink: bool,
    /// `buffer_compress_percentage`, `buffer_compress_chunk`, `dedupe_percentage`.
    pub compress_pct: u8,
    pub compress_chunk: u64,
    pub dedupe_pct: u8,
    /// `verify=` (fio's type; `verify_named`: given, even as `0`), `verify_pattern`,
    /// `verify_interval` and `verify_offset` (0: not given), `do_verify`,
    /// `verify_backlog`, `verify_fatal`.
    pub verify: Option<crate::fioverify::Kind>,
    pub verify_named: bool,
    pub verify_pattern: Vec<u8>,
    pub verify_interval: u64,
    pub verify_offset: u64,
    pub do_verify: bool,
    pub verify_backlog: u64,
    pub verify_fatal: bool,
    /// `opendir=`: every regular file below the directory (absolute path, size), in name
    /// order.
    pub opendir: Option<Vec<(String, u64)>>,
    /// `zonesize`, `zonerange` (0: the size), `zoneskip`, and `zonemode=none`.
    pub zone: [u64; 3],
    pub zone_none: bool,
    /// `scramble_buffers` (fio's default: on).
    pub scramble: bool,
    pub create_on_open: bool,
    /// `create_fsync` (fio's default: on): sync a file after laying it out.
    pub create_fsync: bool,
    pub randrepeat: bool,
    pub randseed: u64,
    pub norandommap: bool,
    pub distribution: Skew,
    /// The zones of reads and writes with `zoned` / `zoned_abs`.
    pub zones: [Zones; 2],
    pub invalidate: bool,
    pub fadvise_hint: bool,
    pub offset: u64,
    pub offset_increment: u64,
    pub fallocate: Falloc,
    pub stonewall: bool,
    /// `wait_for=NAME`: start when every clone of that job has ended.
    pub wait_for: Option<String>,
    pub new_group: bool,
    pub description: Option<String>,
    /// Options given, with where (for `show`/`check` and for refusing combinations).
    pub given: Vec<(String, Span, Arc<SourceFile>)>,
    /// Each option as it was read (expanded), in order: the run's record of the job.
    pub values: Vec<(String, String)>,
    /// The options of the job's own section and of the `[global]` sections before it, as
    /// written (fio's JSON lists them as `job options` and `global options`).
    pub own: Vec<(String, String)>,
    pub globals: Vec<(String, String)>,
    /// Reports and logs (`write_lat_log`, `percentile_list`, ...).
    pub out: super::job_out::JobOut,
    /// How it runs: refills, exits, errors, CPUs, priorities (`refill_buffers`, ...).
    pub ctl: super::ctl::JobCtl,
    /// One of its options was refused (its other checks are then partial).
    pub had_errors: bool,
}

impl Job {
    fn new(name: &str, src: &Arc<SourceFile>, span: Span) -> Job {
        Job {
            name: name.to_string(),
            src: src.clone(),
            span,
            kb_base: 1024,
            read: true,
            write: false,
            random: false,
            seq_skip: 0,
            rwmixread: 50,
            bs: [Bs::Fixed(4096), Bs::Fixed(4096)],
            size: None,
            size_pct: None,
            filesize: None,
            nrfiles: 1,
            filename: None,
            filename_format: None,
            directory: None,
            numjobs: 1,
            group_reporting: false,
            engine: Engine::Psync,
            ioengine_name: "psync".into(),
            nfs_url: None,
            iodepth: 1,
            uring_opts: [false; 3],
            iodepth_batch: [1, 1, 0],
            direct: false,
            sync: SyncMode::None,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            fsync_on_close: false,
            runtime_us: 0,
            time_based: false,
            ramp_time_us: 0,
            startdelay_us: 0,
            startdelay_hi_us: 0,
            loops: 1,
            number_ios: 0,
            io_size: None,
            thinktime_us: 0,
            thinktime_blocks: 1,
            thinktime_spin_us: 0,
            rate_min: [None, None],
            ratecycle_ms: 1000,
            rate: [None, None],
            poisson: false,
            unlink: false,
            compress_pct: 0,
            compress_chunk: 512,
            dedupe_pct: 0,
            scramble: true,
            zone: [0; 3],
            opendir: None,
            zone_none: false,
            verify: None,
            verify_named: false,
            verify_pattern: Vec::new(),
            verify_interval: 0,
            verify_offset: 0,
            do_verify: true,
            verify_backlog: 0,
            verify_fatal: false,
            create_on_open: false,
            create_fsync: true,
            randrepeat: true,
            randseed: 0x89,
            norandommap: false,
            distribution: Skew::Uniform,
            zones: Default::default(),
            invalidate: true,
            fadvise_hint: true,
            offset: 0,
            offset_increment: 0,
            fallocate: Falloc::Native,
            stonewall: false,
            wait_for: None,
            new_group: false,
            description: None,
            given: Vec::new(),
            values: Vec::new(),
            own: Vec::new(),
            globals: Vec::new(),
            out: Default::default(),
            ctl: Default::default(),
            had_errors: false,
        }
    }

    /// Whether `key` was given for this job (its global sections included).
    pub fn has(&self, key: &str) -> bool {
        self.given.iter().any(|g| g.0 == key)
    }

    /// Where `key` was given last.
    pub fn place(&self, key: &str) -> Option<(Span, &Arc<SourceFile>)> {
        self.given
            .iter()
            .rev()
            .find(|g| g.0 == key)
            .map(|g| (g.1, &g.2))
    }
}

/// The jobs of a file: each job section over the `[global]` sections before it.
pub fn jobs(sections: &[Section]) -> Result<Vec<Job>, Vec<Diagnostic>> {
    let (jobs, errors) = read_jobs(sections);
    if errors.is_empty() {
        Ok(jobs)
    } else {
        Err(errors)
    }
}

/// The jobs of a file and every error in their options, each once: a `[global]` line
/// applies to every job after it, and its error is reported at its place once, not once
/// per job.
pub fn read_jobs(sections: &[Section]) -> (Vec<Job>, Vec<Diagnostic>) {
    let mut errors: Vec<Diagnostic> = Vec::new();
    let mut global: Vec<&Opt> = Vec::new();
    let mut out = Vec::new();
    for s in sections {
        if s.is_global() {
            global.extend(s.opts.iter());
            continue;
        }
        let mut job = Job::new(&s.name, &s.src, s.span);
        let all: Vec<&Opt> = global.iter().copied().chain(s.opts.iter()).collect();
        // kb_base decides how every size reads: fio applies it first (its priority).
        let (kb, rest): (Vec<&Opt>, Vec<&Opt>) = all.iter().partition(|o| o.key == "kb_base");
        for o in kb.into_iter().chain(rest) {
            if let Err(d) = apply(&mut job, o) {
                job.had_errors = true;
                let seen = errors.iter().any(|e| {
                    e.span == d.span && e.source.name == d.source.name && e.message == d.message
                });
                if !seen {
                    errors.push(d);
                }
            }
        }
        // fio lists the options given with a value (a bare `stonewall` is not listed).
        let written = |o: &&Opt| Some((o.key.clone(), o.value.clone()?));
        job.globals = global.iter().filter_map(written).collect();
        job.own = s.opts.iter().filter_map(|o| written(&o)).collect();
        out.push(job);
    }
    if out.is_empty() && errors.is_empty() {
        if let Some(s) = sections.first() {
            errors.push(Diagnostic::error(
                &s.src,
                s.span,
                "no job section: a job file needs a section other than [global]",
            ));
        }
    }
    (out, errors)
}

/// Canonical names of the aliases fsbench reads.
fn canonical(key: &str) -> &str {
    match key {
        "readwrite" => "rw",
        "blocksize" => "bs",
        "blocksize_range" => "bsrange",
        "nr_files" => "nrfiles",
        "timeout" => "runtime",
        "io_limit" => "io_size",
        "fileoffset" => "offset",
        "allrandrepeat" => "randrepeat",
        "wait_for_previous" => "stonewall",
        other => other,
    }
}

type R = Result<(), String>;

/// Read one option into `job`.
pub fn apply(job: &mut Job, o: &Opt) -> Result<(), Diagnostic> {
    let key = canonical(&o.key);
    let known = apply_io(job, key, o)
        .or_else(|| apply_engine(job, key, o))
        .or_else(|| apply_rate(job, key, o))
        .or_else(|| apply_files(job, key, o))
        .or_else(|| apply_data(job, key, o))
        .or_else(|| apply_time(job, key, o))
        .or_else(|| apply_misc(job, key, o))
        .or_else(|| super::job_out::apply(&mut job.out, &job.name, key, o))
        .or_else(|| super::ctl::apply(&mut job.ctl, key, o, job.kb_base));
    match known {
        Some(Ok(())) => {
            job.given.push((key.to_string(), o.key_span, o.src.clone()));
            let v = o.value.clone().unwrap_or_else(|| "1".into());
            match job.values.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = v,
                None => job.values.push((key.to_string(), v)),
            }
            Ok(())
        }
        Some(Err(msg)) => Err(o.value_error(format!("{}: {msg}", o.key))),
        None => Err(o
            .error(format!(
                "fio option `{}` is not supported by fsbench",
                o.key
            ))
            .with_help(
                "fsbench refuses the options it does not run rather than ignore them; docs/fio.md lists the ones it runs",
            )),
    }
}

fn need(o: &Opt) -> Result<&str, String> {
    o.value
        .as_deref()
        .ok_or_else(|| "needs a value".to_string())
}

/// A `STR_SET` option: bare, or 0/1.
fn set(o: &Opt) -> Result<bool, String> {
    match o.value.as_deref() {
        None => Ok(true),
        Some(v) => value::boolean(v),
    }
}

fn pct(o: &Opt, kb: u64) -> Result<u32, String> {
    let v = value::int(need(o)?, kb)?;
    if v > 100 {
        return Err(format!("{v} is over 100"));
    }
    Ok(v as u32)
}

fn apply_rw(job: &mut Job, v: &str) -> R {
    let (mode, suffix) = match v.split_once(':') {
        Some((m, s)) => (m.trim(), Some(s.trim())),
        None => (v.trim(), None),
    };
    let (r, w, rand) = match mode {
        "read" => (true, false, false),
        "write" => (false, true, false),
        "randread" => (true, false, true),
        "randwrite" => (false, true, true),
        "rw" | "readwrite" => (true, true, false),
        "randrw" => (true, true, true),
        "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => {
            return Err(format!("`{mode}`: trims are not supported by fsbench"))
        }
        _ => {
            return Err(format!(
                "`{mode}` is not an I/O pattern (read, write, randread, randwrite, rw, readwrite, randrw)"
            ))
        }
    };
    job.read = r;
    job.write = w;
    job.random = rand;
    job.seq_skip = 0;
    if let Some(s) = suffix {
        let n = value::size(s, job.kb_base)?;
        if rand {
            return Err(format!(
                "`{v}`: the `:N` suffix of random patterns (a new random offset every N I/Os) is not supported by fsbench"
            ));
        }
        job.seq_skip = n;
    }
    Ok(())
}

fn apply_io(job: &mut Job, key: &str, o: &Opt) -> Option<R> {
    let kb = job.kb_base;
    let r = (|| -> R {
        match key {
            "rw" => apply_rw(job, need(o)?),
            "rwmixread" => {
                job.rwmixread = pct(o, kb)?;
                Ok(())
            }
            "rwmixwrite" => {
                job.rwmixread = 100 - pct(o, kb)?;
                Ok(())
            }
            "bs" => {
                let (r, w) = value::per_ddir(need(o)?)?;
                if let Some(r) = r {
                    job.bs[0] = Bs::Fixed(nonzero(value::size(r, kb)?)?);
                }
                if let Some(w) = w {
                    job.bs[1] = Bs::Fixed(nonzero(value::size(w, kb)?)?);
                }
                Ok(())
            }
            "bsrange" => {
                let (r, w) = value::per_ddir(need(o)?)?;
                for (i, p) in [(0, r), (1, w)] {
                    if let Some(p) = p {
                        let (lo, hi) = value::range(p, kb)?;
                        job.bs[i] = Bs::Range(nonzero(lo)?, hi);
                    }
                }
                Ok(())
            }
            "bssplit" => {
                let (r, w) = value::per_ddir(need(o)?)?;
                for (i, p) in [(0, r), (1, w)] {
                    if let Some(p) = p {
                        job.bs[i] = Bs::Split(value::bssplit(p, kb)?);
                    }
                }
                Ok(())
            }
            _ => Err(String::from("\0")),
        }
    })();
    unknown_is_none(r)
}

fn apply_engine(job: &mut Job, key: &str, o: &Opt) -> Option<R> {
    let kb = job.kb_base;
    let r = (|| -> R {
        match key {
            "ioengine" => {
                let v = need(o)?;
                job.engine = match v {
                    "psync" | "pvsync" | "pvsync2" => Engine::Psync,
                    "sync" => Engine::Sync,
                    "io_uring" | "libaio" | "posixaio" => Engine::Uring,
                    "mmap" => Engine::Mmap,
                    // fio's nfs engine: libnfs calls on the export `nfs_url` names, one at a
                    // time here (fio's queues up to iodepth; see docs/guide/nfs-client.md).
                    "nfs" => Engine::Psync,
                    _ => return Err(format!("`{v}` is not an I/O engine fsbench runs")),
                };
                job.ioengine_name = v.to_string();
                Ok(())
            }
            "nfs_url" => {
                let v = need(o)?;
                fsbench_base::libnfs::check_url(v)?;
                job.nfs_url = Some((v.to_string(), o.val_span, o.src.clone()));
                Ok(())
            }
            "hipri" | "fixedbufs" | "registered_files" => {
                let on = match o.value.as_deref() {
                    None => true,
                    Some(v) => value::boolean(v)?,
                };
                let i = ["hipri", "fixedbufs", "registered_files"]
                    .iter()
                    .position(|k| *k == key)
                    .expect("one of the three");
                job.uring_opts[i] = on;
                Ok(())
            }
            "iodepth" => {
                // The synchronous engines complete each I/O as they issue it: fio runs them
                // at depth 1 whatever iodepth says, and so does fsbench.
                let d = value::int(need(o)?, kb)?;
                if d == 0 || d > 16384 {
                    return Err(format!("{d} (1 to 16384)"));
                }
                job.iodepth = d as u32;
                Ok(())
            }
            "iodepth_batch"
            | "iodepth_batch_submit"
            | "iodepth_batch_complete_min"
            | "iodepth_batch_complete"
            | "iodepth_batch_complete_max" => {
                let v = value::int(need(o)?, kb)?.min(16384) as u32;
                let i = match key {
                    "iodepth_batch" | "iodepth_batch_submit" => 0,
                    "iodepth_batch_complete_max" => 2,
                    _ => 1,
                };
                job.iodepth_batch[i] = v;
                Ok(())
            }
            "direct" => {
                job.direct = value::boolean(need(o)?)?;
                Ok(())
            }
            "buffered" => {
                job.direct = !value::boolean(need(o)?)?;
                Ok(())
            }
            "sync" => {
                job.sync = match need(o)? {
                    "0" | "none" => SyncMode::None,
                    "1" | "sync" => SyncMode::Sync,
                    "dsync" => SyncMode::Dsync,
                    v => return Err(format!("`{v}` (none, sync or dsync; 0 or 1)")),
                };
                Ok(())
            }
            "fsync" => {
                job.fsync = value::int(need(o)?, kb)?;
                Ok(())
            }
            "fdatasync" => {
                job.fdatasync = value::int(need(o)?, kb)?;
                Ok(())
            }
            "end_fsync" => {
                job.end_fsync = value::boolean(need(o)?)?;
                Ok(())
            }
            "fsync_on_close" => {
                job.fsync_on_close = value::boolean(need(o)?)?;
                Ok(())
            }
            _ => Err(String::from("\0")),
        }
    })();
    unknown_is_none(r)
}

/// fio's `add_dir_files`: every regular file below `dir` (links not followed), with its
/// absolute path and size; sorted by path (fio takes readdir's order).
fn list_dir(dir: &str) -> Result<Vec<(String, u64)>, String> {
    let root = std::fs::canonicalize(dir).map_err(|e| format!("`{dir}`: {e}"))?;
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(d) = todo.pop() {
        let rd = std::fs::read_dir(&d).map_err(|e| format!("`{}`: {e}", d.display()))?;
        for e in rd {
            let e = e.map_err(|e| format!("`{}`: {e}", d.display()))?;
            let m = std::fs::symlink_metadata(e.path())
                .map_err(|err| format!("`{}`: {err}", e.path().display()))?;
            if m.is_dir() {
                todo.push(e.path());
            } else if m.is_file() {
                let p = e.path().to_str().map(str::to_string);
                let p = p.ok_or_else(|| format!("`{}`: not UTF-8", e.path().display()))?;
                out.push((p, m.len()));
            }
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(format!("`{dir}` holds no regular file"));
    }
    Ok(out)
}

fn nonzero(v: u64) -> Result<u64, String> {
    if v == 0 {
        Err("a block size of 0".into())
    } else {
        Ok(v)
    }
}

/// The closures above answer `\0` for a key that is not theirs.
fn unknown_is_none(r: R) -> Option<R> {
    match r {
        Err(e) if e == "\0" => None,
        other => Some(other),
    }
}

/// `rate`, `rate_iops`, their minimums and `rate_process`.
fn apply_rate(job: &mut Job, key: &str, o: &Opt) -> Option<R> {
    let kb = job.kb_base;
    let r = (|| -> R {
        match key {
            "rate" => {
                let (r, w) = value::per_ddir(need(o)?)?;
                for (i, p) in [(0, r), (1, w)] {
                    if let Some(p) = p {
                        job.rate[i] = Some(Rate::Bytes(value::size(p, kb)?));
                    }
                }
                Ok(())
            }
            "rate_iops" => {
                let (r, w) = value::per_ddir(need(o)?)?;
                for (i, p) in [(0, r), (1, w)] {
                    if let Some(p) = p {
                        job.rate[i] = Some(Rate::Iops(value::int(p, kb)?));
                    }
                }
                Ok(())
            }
            "rate_min" | "ratemin" => {
                let (r, w) = value::per_ddir(need(o)?)?;
                for (i, p) in [(0, r), (1, w)] {
                    if let Some(p) = p {
                        job.rate_min[i] = Some(Rate::Bytes(value::size(p, kb)?));
                    }
                }
                Ok(())
            }
            "rate_iops_min" => {
                let (r, w) = value::per_ddir(need(o)?)?;
                for (i, p) in [(0, r), (1, w)] {
                    if let Some(p) = p {
                        job.rate_min[i] = Some(Rate::Iops(value::int(p, kb)?));
                    }
                }
                Ok(())
            }
            "ratecycle" => {
                job.ratecycle_ms = value::int(need(o)?, kb)?.max(1);
                Ok(())
            }
            "rate_process" => {
                job.poisson = match need(o)? {
                    "linear" => false,
                    "poisson" => true,
                    v => return Err(format!("`{v}` (linear or poisson)")),
                };
                Ok(())
            }
            _ => Err(String::from("\0")),
        }
    })();
    unknown_is_none(r)
}

/// What written data holds and how it is checked: content and verify options.
fn apply_data(job: &mut Job, key: &str, o: &Opt) -> Option<R> {
    let kb = job.kb_base;
    let r = (|| -> R {
        match key {
            "buffer_compress_percentage" | "dedupe_percentage" => {
                let v = value::int(need(o)?, kb)?;
                if v > 100 {
                    return Err(format!("{v} (0 to 100)"));
                }
                if key == "dedupe_percentage" {
                    job.dedupe_pct = v as u8;
                } else {
                    job.compress_pct = v as u8;
                }
                Ok(())
            }
            "verify" | "verify_pattern" | "verify_interval" | "verify_offset" => {
                verify_opt(job, key, need(o)?)
            }
            "do_verify" | "verify_fatal" => {
                let b = value::boolean(need(o)?)?;
                if key == "do_verify" {
                    job.do_verify = b;
                } else {
                    job.verify_fatal = b;
                }
                Ok(())
            }
            "verify_backlog" => {
                job.verify_backlog = value::int(need(o)?, kb)?;
                Ok(())
            }
            "scramble_buffers" => {
                job.scramble = value::boolean(need(o)?)?;
                Ok(())
            }
            "buffer_compress_chunk" => {
                let v = value::size(need(o)?, kb)?;
                if v == 0 || v > 4096 {
                    return Err(format!("{v}: fsbench lays the compressible part out in chunks of 1 byte to 4 KiB (its content blocks)"));
                }
                job.compress_chunk = v;
                Ok(())
            }
            _ => Err(String::from("\0")),
        }
    })();
    unknown_is_none(r)
}

/// fio's `verify=` (its type names; `0` for none) and the options that shape the blocks:
/// `verify_pattern` (its bytes), `verify_interval` (at least twice a header) and
/// `verify_offset` (at least a header), as fio's option table bounds them.
fn verify_opt(job: &mut Job, key: &str, v: &str) -> R {
    use crate::fioverify::{pattern, Kind, HEADER};
    let kb = job.kb_base;
    match key {
        "verify" => {
            job.verify_named = true;
            job.verify = match v {
                "0" | "none" => None,
                _ => Some(Kind::parse(v).ok_or_else(|| {
                    format!("`{v}` is not a verify type fio has (md5, crc64, crc32c, crc32c-intel, crc32, crc16, crc7, xxhash, sha1, sha256, sha512, sha3-224, sha3-256, sha3-384, sha3-512, meta, pattern, null)")
                })?),
            };
        }
        "verify_pattern" => job.verify_pattern = pattern::parse(v)?,
        "verify_interval" => {
            let n = value::size(v, kb)?;
            if n < 2 * HEADER as u64 {
                return Err(format!(
                    "{n}: fio takes at least {} (twice its header)",
                    2 * HEADER
                ));
            }
            job.verify_interval = n;
        }
        _ => {
            let n = value::size(v, kb)?;
            if n < HEADER as u64 {
                return Err(format!(
                    "{n}: fio takes at least {HEADER} (its header's size)"
                ));
            }
            job.verify_offset = n;
        }
    }
    Ok(())
}

/// `directory=`: one directory; something there that is no directory (a FIFO would hold
/// the run in its open for ever) is refused now, a missing one when the run needs it.
fn directory(v: &str) -> Result<String, String> {
    if v.contains(':') {
        return Err(format!(
            "`{v}`: several directories (`:`-separated) are not supported by fsbench"
        ));
    }
    match fsbench_base::input::check_dir(std::path::Path::new(v)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("`{v}`: {e}")),
        _ => Ok(v.to_string()),
    }
}

fn apply_files(job: &mut Job, key: &str, o: &Opt) -> Option<R> {
    let kb = job.kb_base;
    let r = (|| -> R {
        match key {
            "size" => {
                (job.size, job.size_pct) = super::job_out::size(need(o)?, kb)?;
                Ok(())
            }
            "filesize" => {
                let v = need(o)?;
                let (lo, hi) = if v.trim_start()[1..].contains(['-', ':']) {
                    value::range(v, kb)?
                } else {
                    let s = value::size(v, kb)?;
                    (s, s)
                };
                job.filesize = Some((lo, hi));
                Ok(())
            }
            "nrfiles" => {
                job.nrfiles = value::int(need(o)?, kb)?.max(1);
                Ok(())
            }
            "filename" => {
                job.filename = Some((need(o)?.to_string(), o.val_span, o.src.clone()));
                Ok(())
            }
            "filename_format" => {
                let v = need(o)?;
                super::job_out::filename_format(v)?;
                job.filename_format = Some((v.to_string(), o.val_span, o.src.clone()));
                Ok(())
            }
            "directory" => {
                job.directory = Some(directory(need(o)?)?);
                Ok(())
            }
            "offset" => {
                job.offset = value::size(need(o)?, kb)?;
                Ok(())
            }
            "opendir" => {
                job.opendir = Some(list_dir(need(o)?)?);
                Ok(())
            }
            "zonesize" | "zonerange" | "zoneskip" => {
                let i = ["zonesize", "zonerange", "zoneskip"]
                    .iter()
                    .position(|k| *k == key)
                    .expect("matched");
                job.zone[i] = value::size(need(o)?, kb)?;
                Ok(())
            }
            "zonemode" => {
                job.zone_none = match need(o)? {
                    "none" => true,
                    "strided" => false,
                    v => return Err(format!("`{v}`: fsbench runs zonemode=none and strided")),
                };
                Ok(())
            }
            "offset_increment" => {
                job.offset_increment = value::size(need(o)?, kb)?;
                Ok(())
            }
            "io_size" => {
                job.io_size = Some(value::size(need(o)?, kb)?);
                Ok(())
            }
            "create_on_open" => {
                job.create_on_open = value::boolean(need(o)?)?;
                Ok(())
            }
            "create_fsync" => {
                job.create_fsync = value::boolean(need(o)?)?;
                Ok(())
            }
            "unlink" => {
                job.unlink = value::boolean(need(o)?)?;
                Ok(())
            }
            "fallocate" => {
                job.fallocate = match need(o)? {
                    "none" | "0" => Falloc::None,
                    "native" => Falloc::Native,
                    "posix" | "1" => Falloc::Posix,
                    "keep" => Falloc::Keep,
                    v => return Err(format!("`{v}` (none, native, posix, keep, 0 or 1)")),
                };
                Ok(())
            }
            _ => Err(String::from("\0")),
        }
    })();
    unknown_is_none(r)
}

fn apply_time(job: &mut Job, key: &str, o: &Opt) -> Option<R> {
    let kb = job.kb_base;
    let r = (|| -> R {
        match key {
            "runtime" => {
                job.runtime_us = value::time_us(need(o)?, true)?;
                Ok(())
            }
            "time_based" => {
                job.time_based = set(o)?;
                Ok(())
            }
            "startdelay" => {
                // fio: a range `lo-hi` draws each clone's delay in it.
                let v = need(o)?;
                let (lo, hi) = match v.trim_start().get(1..).and_then(|r| r.find('-')) {
                    Some(i) => (&v[..i + 1], Some(&v[i + 2..])),
                    None => (v, None),
                };
                job.startdelay_us = value::time_us(lo, true)?;
                job.startdelay_hi_us = match hi {
                    Some(h) => value::time_us(h, true)?,
                    None => 0,
                };
                if job.startdelay_hi_us > 0 && job.startdelay_hi_us < job.startdelay_us {
                    std::mem::swap(&mut job.startdelay_us, &mut job.startdelay_hi_us);
                }
                Ok(())
            }
            "thinktime_spin" => {
                job.thinktime_spin_us = value::time_us(need(o)?, false)?;
                Ok(())
            }
            "ramp_time" => {
                job.ramp_time_us = value::time_us(need(o)?, true)?;
                Ok(())
            }
            "loops" => {
                job.loops = value::int(need(o)?, kb)?.max(1);
                Ok(())
            }
            "number_ios" => {
                job.number_ios = value::int(need(o)?, kb)?;
                Ok(())
            }
            "thinktime" => {
                job.thinktime_us = value::time_us(need(o)?, false)?;
                Ok(())
            }
            "thinktime_blocks" => {
                job.thinktime_blocks = value::int(need(o)?, kb)?.max(1);
                Ok(())
            }
            _ => Err(String::from("\0")),
        }
    })();
    unknown_is_none(r)
}

fn apply_misc(job: &mut Job, key: &str, o: &Opt) -> Option<R> {
    let kb = job.kb_base;
    let r = (|| -> R {
        match key {
            "kb_base" => {
                job.kb_base = match need(o)? {
                    "1024" => 1024,
                    "1000" => 1000,
                    v => return Err(format!("`{v}` (1000 or 1024)")),
                };
                Ok(())
            }
            "name" => {
                job.name = need(o)?.to_string();
                Ok(())
            }
            "description" => {
                job.description = Some(need(o)?.to_string());
                Ok(())
            }
            "numjobs" => {
                let n = value::int(need(o)?, kb)?;
                if n == 0 || n > 4096 {
                    return Err(format!("{n} (1 to 4096)"));
                }
                job.numjobs = n as u32;
                Ok(())
            }
            "group_reporting" => {
                job.group_reporting = set(o)?;
                Ok(())
            }
            // fio's clones are processes unless `thread`; fsbench's are always threads of
            // one process, so the line asks for what fsbench does anyway.
            "thread" => set(o).map(|_| ()),
            "randrepeat" => {
                job.randrepeat = value::boolean(need(o)?)?;
                Ok(())
            }
            "randseed" => {
                job.randseed = value::int(need(o)?, kb)?;
                Ok(())
            }
            "random_distribution" => {
                (job.distribution, job.zones) = distribution(need(o)?, kb)?;
                Ok(())
            }
            "fadvise_hint" => {
                job.fadvise_hint = match need(o)? {
                    "0" => false,
                    "1" => true,
                    v => return Err(format!("`{v}`: fsbench takes 0 or 1 (the pattern's hint)")),
                };
                Ok(())
            }
            "invalidate" => {
                job.invalidate = value::boolean(need(o)?)?;
                Ok(())
            }
            "norandommap" => {
                job.norandommap = set(o)?;
                Ok(())
            }
            "stonewall" => {
                job.stonewall = set(o)?;
                Ok(())
            }
            "wait_for" => {
                job.wait_for = Some(need(o)?.to_string());
                Ok(())
            }
            "new_group" => {
                job.new_group = set(o)?;
                Ok(())
            }
            _ => Err(String::from("\0")),
        }
    })();
    unknown_is_none(r)
}

#[cfg(test)]
mod tests {
    use super::super::ini::{parse, Expand, Keywords};
    use super::*;

    fn read(text: &str) -> Result<Vec<Job>, Vec<Diagnostic>> {
        let x = Expand {
            keywords: Keywords {
                ncpus: 2,
                pagesize: 4096,
                mb_memory: 100,
            },
            env: &|_| None,
        };
        let s = parse(&SourceFile::new("j.fio", text), &x).map_err(|d| d.0)?;
        jobs(&s)
    }

    #[test]
    fn globals_apply_to_later_jobs_and_jobs_override() {
        let j = read("[global]\nbs=8k\nrw=randread\n[a]\n[b]\nbs=16k\n[global]\nsize=1m\n[c]\n")
            .unwrap();
        assert_eq!(j.len(), 3);
        assert_eq!(j[0].bs[0], Bs::Fixed(8192));
        assert!(j[0].random && j[0].read && !j[0].write);
        assert_eq!(j[1].bs[1], Bs::Fixed(16384));
        assert_eq!(j[0].size, None);
        assert_eq!(j[2].size, Some(1 << 20));
    }

    #[test]
    fn kb_base_applies_to_the_whole_section() {
        let j = read("[a]\nsize=4k\nkb_base=1000\n").unwrap();
        assert_eq!(j[0].size, Some(4000));
    }

    #[test]
    fn rw_patterns_mixes_and_suffixes() {
        let j = read("[a]\nrw=randrw\nrwmixwrite=30\n[b]\nreadwrite=read:8k\n").unwrap();
        assert!(j[0].read && j[0].write && j[0].random);
        assert_eq!(j[0].rwmixread, 70);
        assert_eq!(j[1].seq_skip, 8192);
        let e = read("[a]\nrw=trim\n").unwrap_err();
        assert_eq!(e[0].location(), "j.fio:2:4");
        assert!(e[0].message.contains("trims are not supported"));
        let e = read("[a]\nrw=randread:4\n").unwrap_err();
        assert!(e[0].message.contains(":N"));
    }

    #[test]
    fn block_sizes_per_direction() {
        let j = read("[a]\nbs=4k,64k\n[b]\nbsrange=1k-8k\n[c]\nbssplit=4k/50:8k/50,16k\n").unwrap();
        assert_eq!(j[0].bs, [Bs::Fixed(4096), Bs::Fixed(65536)]);
        assert_eq!(j[1].bs[0], Bs::Range(1024, 8192));
        assert_eq!(j[2].bs[0], Bs::Split(vec![(4096, 50), (8192, 50)]));
        assert_eq!(j[2].bs[1], Bs::Split(vec![(16384, 100)]));
    }

    #[test]
    fn unknown_and_unsupported_options_are_refused_with_their_place() {
        let e = read("[a]\nrw=read\n  exit_what=all\nbogus\n").unwrap_err();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].location(), "j.fio:3:3");
        assert!(e[0].message.contains("`exit_what`"), "{}", e[0].message);
        assert_eq!(e[1].location(), "j.fio:4:1");
        assert!(e[1].message.contains("`bogus`"));
        let e = read("[a]\nioengine=splice\n").unwrap_err();
        assert_eq!(e[0].location(), "j.fio:2:10");
        let e = read("[a]\niodepth=0\n").unwrap_err();
        assert!(e[0].message.contains("iodepth"));
        let e = read("[a]\nbs=4q\n").unwrap_err();
        assert_eq!(e[0].location(), "j.fio:2:4");
        assert!(e[0].message.contains("unknown size suffix"));
        let e = read("[a]\ndirect=yes\n").unwrap_err();
        assert!(e[0].message.contains("not a boolean"));
        let e = read("[a]\nrandom_distribution=zoned:50/10\n").unwrap_err();
        assert_eq!(e[0].location(), "j.fio:2:21");
        assert!(e[0].message.contains("add up to 50"), "{}", e[0].message);
        let e = read("[a]\nrandom_distribution=normal:100\n").unwrap_err();
        assert!(e[0].message.contains("out of range"), "{}", e[0].message);
        let j = read("[a]\nrandom_distribution=zoned:60/10:40/90,100/5\n[b]\nrandom_distribution=normal:5:0.25\n")
            .unwrap();
        assert_eq!(j[0].distribution, Skew::Zoned);
        assert_eq!(j[0].zones[0].parts.len(), 2);
        assert_eq!(j[0].zones[1].parts[0].size, 5);
        assert_eq!(
            j[1].distribution,
            Skew::Normal {
                dev: 5.0,
                center: Some(0.25)
            }
        );
        let j = read("[a]\nrandom_distribution=zipf\n[b]\nrandom_distribution=pareto:0.3:0.5\n")
            .unwrap();
        assert_eq!(
            j[0].distribution,
            Skew::Zipf {
                theta: 1.1,
                center: None
            }
        );
        assert_eq!(
            j[1].distribution,
            Skew::Pareto {
                h: 0.3,
                center: Some(0.5)
            }
        );
        let e = read("[global]\nbs=4k\n").unwrap_err();
        assert!(e[0].message.contains("no job section"));
    }

    #[test]
    fn booleans_and_set_options() {
        let j = read("[a]\ntime_based\ngroup_reporting=1\ndirect=1\nnorandommap\n").unwrap();
        assert!(j[0].time_based && j[0].group_reporting && j[0].direct && j[0].norandommap);
        let j = read("[a]\nbuffered=0\nsync=dsync\nruntime=2m\n").unwrap();
        assert!(j[0].direct);
        assert_eq!(j[0].sync, SyncMode::Dsync);
        assert_eq!(j[0].runtime_us, 120_000_000);
        // `thread` (fsbench's clones are threads anyway) is a boolean like the others.
        assert!(read("[a]\nthread\n[b]\nthread=0\n").is_ok());
        let e = read("[a]\nthread=2\n").unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
    }
}
