//! fio jobs onto the engine: each job clone (`numjobs`) is a process with one thread whose
//! one flowop is a [`Stream`] over the clone's files, laid out in the run directory under
//! fio's names (`jobname.jobnum.filenum`, or the `filename=` names). What fio would do
//! differently from what the engine can do is refused here, with the option's place.

use super::job::{Bs, Engine, Falloc, Job, Rate, SyncMode};
use super::job_ctl::{at, verify_kind};
use crate::lang::{Diagnostic, Diagnostics, SourceFile, Span};
use crate::model::stream::{FioOut, MinRate, Pace, Prealloc, Sizes, Skew, Stream, StreamFile};
use crate::model::{FlowopKind, Process, QuitMode, Thread, Workload};
use rand::Rng as _;
use std::path::Path;
use std::sync::Arc;

/// A job file mapped: the workload the engine runs, and what `run`, `show` and `check`
/// say about it.
#[derive(Debug, Clone)]
pub struct Mapped {
    pub workload: Workload,
    pub jobs: Vec<Job>,
    /// `directory=`, when the jobs give one: where the run directory goes by default.
    pub directory: Option<String>,
    /// `ramp_time` in seconds: the warm-up, when the jobs are time based.
    pub ramp_s: f64,
    /// What the run should say about how the jobs were mapped.
    pub notes: Vec<String>,
}

/// What a run of fio jobs keeps of them besides the workload they were mapped onto: what
/// its directory, warm-up and report take from the jobs.
#[derive(Debug, Clone)]
pub struct FioJobs {
    pub jobs: Vec<Job>,
    /// `directory=`, when the jobs give one: where the run directory goes by default.
    pub directory: Option<String>,
    /// `ramp_time` in seconds: the warm-up, when the jobs are time based.
    pub ramp_s: f64,
}

impl Mapped {
    /// The workload to run, and what else the run needs of the jobs.
    pub fn split(self) -> (Workload, FioJobs) {
        let Mapped {
            workload,
            jobs,
            directory,
            ramp_s,
            ..
        } = self;
        (
            workload,
            FioJobs {
                jobs,
                directory,
                ramp_s,
            },
        )
    }
}

/// What each job waits for before it starts: (job index, clones) of every job in an
/// earlier `stonewall` group, and of its `wait_for` job. Errors for a `wait_for` naming no
/// earlier job.
fn waits(jobs: &[Job]) -> Result<Vec<Vec<(usize, u32)>>, Vec<Diagnostic>> {
    let mut group = vec![0usize; jobs.len()];
    for j in 1..jobs.len() {
        group[j] = group[j - 1] + usize::from(jobs[j].stonewall);
    }
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for (j, job) in jobs.iter().enumerate() {
        let mut w: Vec<(usize, u32)> = (0..j)
            .filter(|&i| group[i] < group[j])
            .map(|i| (i, jobs[i].numjobs))
            .collect();
        if let Some(name) = &job.wait_for {
            match jobs[..j].iter().position(|x| &x.name == name) {
                Some(i) if !w.iter().any(|x| x.0 == i) => w.push((i, jobs[i].numjobs)),
                Some(_) => {}
                None => errors.push(at(
                    job,
                    "wait_for",
                    format!("`wait_for={name}`: no job of that name before this one"),
                )),
            }
        }
        out.push(w);
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The run's time limit: the jobs' runtimes, one group after another (each group as long
/// as its longest job); a year when a job is bounded by its bytes only.
fn run_limit(jobs: &[Job], waits: &[Vec<(usize, u32)>]) -> u64 {
    if !jobs.iter().all(|j| j.runtime_us > 0) {
        return UNBOUNDED_S;
    }
    // When each job may end at the latest: its runtime after the latest of its waits.
    let mut end = vec![0u64; jobs.len()];
    for (j, job) in jobs.iter().enumerate() {
        let start = waits[j].iter().map(|(i, _)| end[*i]).max().unwrap_or(0);
        let delay = job.startdelay_us.max(job.startdelay_hi_us);
        end[j] = start + delay + job.runtime_us + job.ramp_time_us;
    }
    end.iter().max().unwrap_or(&0).div_ceil(1_000_000)
}

/// A year: the run time of jobs bounded by their bytes, not by time.
pub const UNBOUNDED_S: u64 = 365 * 86_400;

fn sizes(b: &Bs) -> Sizes {
    match b {
        Bs::Fixed(v) => Sizes::Fixed(*v),
        Bs::Range(lo, hi) => Sizes::Range(*lo, *hi),
        Bs::Split(p) => Sizes::Split(p.clone()),
    }
}

/// The most files a job file lays out in all (each clone's `nrfiles`, or its `filename=`
/// names): the engine keeps a name and a size per file and clone, so ten million took
/// gigabytes and a quarter of an hour before `check` said ok. Trees of millions of files
/// are Filebench filesets' work (compact entries, names from indices).
pub const MAX_FILES: u64 = 1_000_000;

/// The files each clone of `job` works on (`opendir` aside: those exist already).
fn files_per_clone(job: &Job) -> u64 {
    match &job.filename {
        Some((n, _, _)) => n.split(':').count() as u64,
        None => job.nrfiles,
    }
}

/// Refuse a job file that lays out more than [`MAX_FILES`] files in all, at the job
/// where the count crosses it (its `nrfiles`, `filename` or `numjobs`).
fn check_file_count(jobs: &[Job], errors: &mut Vec<Diagnostic>) {
    let mut total = 0u64;
    for job in jobs.iter().filter(|j| j.opendir.is_none()) {
        total = total.saturating_add(files_per_clone(job).saturating_mul(job.numjobs as u64));
        if total > MAX_FILES {
            let key = if job.filename.is_some() {
                "filename"
            } else if job.has("nrfiles") {
                "nrfiles"
            } else {
                "numjobs"
            };
            errors.push(at(
                job,
                key,
                format!(
                    "job `{}`: {total} files in all (nrfiles or filename names, times numjobs, over the jobs so far); fsbench lays out at most {MAX_FILES} for a job file",
                    job.name
                ),
            ).with_help("fewer files; a Filebench fileset holds trees of millions"));
            return;
        }
    }
}

/// Names fsbench keeps for its own files in a run directory (its marker `.fsbench-run`, its
/// lock `.fsbench-lock`): a job that wrote or unlinked one would take the directory's
/// proof of ownership, and the run directory was left behind.
pub const OWN_PREFIX: &str = ".fsbench";

/// `filename=`: plain names inside the run directory, none of them fsbench's own; each
/// refused at its own place in the value (the value's, when `${ENV}` changed it).
fn check_filenames(job: &Job, errors: &mut Vec<Diagnostic>) {
    let Some((name, span, src)) = &job.filename else {
        return;
    };
    let written = src.text.get(span.start..span.end) == Some(name.as_str());
    let mut at = 0;
    for part in name.split(':') {
        let place = if written {
            Span::new(span.start + at, span.start + at + part.len())
        } else {
            *span
        };
        at += part.len() + 1;
        if part.starts_with('/') && fsbench_base::sys::device::block_rdev(Path::new(part)).is_some()
        {
            check_device(job, part, errors);
        } else if part.is_empty() || part.contains('/') || part == "." || part == ".." {
            errors.push(
                Diagnostic::error(src, place, format!("filename `{part}`: fsbench writes only inside the run directory it creates; give plain file names"))
                    .with_help("choose where the run directory goes with `directory=` or `--dir`"),
            );
        } else if part.starts_with(OWN_PREFIX) {
            errors.push(
                Diagnostic::error(src, place, format!("filename `{part}`: names starting with `{OWN_PREFIX}` are fsbench's own in its run directory (its marker and lock); a job may not write or remove them"))
                    .with_help("choose another file name"),
            );
        }
    }
}

/// A block device as a job's file: read and written where it is, after the engine's
/// guard; never laid out or removed.
fn check_device(job: &Job, part: &str, errors: &mut Vec<Diagnostic>) {
    for (key, on) in [
        ("unlink", job.unlink),
        ("create_on_open", job.create_on_open),
        ("opendir", job.opendir.is_some()),
    ] {
        if on {
            errors.push(at(
                job,
                key,
                format!("`{key}` with the block device {part}: fsbench never creates or removes a device"),
            ));
        }
    }
}

/// Refuse what the engine cannot run as fio would.
fn check(job: &Job, first: bool, errors: &mut Vec<Diagnostic>) {
    if job.ramp_time_us > 0 && job.startdelay_us > 0 {
        errors.push(at(
            job,
            "startdelay",
            "`startdelay` with `ramp_time` (the run's warm-up is at its start) is not supported by fsbench".into(),
        ));
    }
    if job.ramp_time_us > 0 && (job.stonewall || job.wait_for.is_some()) && !first {
        errors.push(at(
            job,
            "ramp_time",
            "`ramp_time` on a job that waits for others (the run's warm-up is at its start) is not supported by fsbench".into(),
        ));
    }
    if job.ramp_time_us > 0 && !job.time_based {
        errors.push(at(
            job,
            "ramp_time",
            "`ramp_time` without `time_based` (fio then counts the ramp's I/O against size=) is not supported by fsbench".into(),
        ));
    }
    if job.time_based && job.runtime_us == 0 {
        errors.push(at(
            job,
            "time_based",
            "`time_based` needs `runtime=`".into(),
        ));
    }
    let devices_only = job.filename.as_ref().is_some_and(|(n, _, _)| {
        n.split(':').all(|p| {
            p.starts_with('/') && fsbench_base::sys::device::block_rdev(Path::new(p)).is_some()
        })
    });
    if job.size_pct.is_some() && !devices_only && job.opendir.is_none() {
        errors.push(at(
            job,
            "size",
            "`size=N%` takes a share of an existing file's or device's size, and fsbench's files are made anew in its run directory: give a size, or name a block device (filename=/dev/X) or opendir=".into(),
        ));
    }
    if job.opendir.is_some() {
        check_opendir(job, errors);
    } else if job.size.is_none()
        && job.filesize.is_none()
        && job.size_pct.is_none()
        && !devices_only
    {
        errors.push(Diagnostic::error(
            &job.src,
            job.span,
            format!(
                "job `{}`: no `size=` (or `filesize=`): fio needs one to know how much to do",
                job.name
            ),
        ));
    }
    check_filenames(job, errors);
    check_format(job, errors);
    check_uring_opts(job, errors);
    check_rates(job, errors);
    check_verify(job, errors);
    check_stride(job, errors);
    super::job_ctl::check(job, errors);
    // fio_mmapio_init: "mmap options dictate a minimum block size of a page".
    let page = fsbench_base::sys::io::ALIGN as u64;
    let small = !job.bs[0].min().min(job.bs[1].min()).is_multiple_of(page);
    if job.engine == Engine::Mmap && small && (job.direct || job.fsync > 0 || job.fdatasync > 0) {
        errors.push(at(
            job,
            "ioengine",
            format!("ioengine=mmap with direct, fsync or fdatasync needs block sizes of multiples of {page} bytes (fio: mmap options dictate a minimum block size)"),
        ));
    }
    let min_bs = job.bs[0].min().min(job.bs[1].min());
    check_zones(job, min_bs, errors);
    if let Some(size) = job.size {
        if size < min_bs {
            errors.push(at(
                job,
                "size",
                format!("size {size} is less than the smallest block size {min_bs} (fio: size too small)"),
            ));
        }
    }
    if job.direct && !min_bs.is_multiple_of(512) {
        errors.push(at(
            job,
            "direct",
            format!("`direct=1` with a block size of {min_bs} bytes: O_DIRECT needs multiples of the logical block size"),
        ));
    }
}

/// `verify_interval` as fio's `fixup_options` settles it: the smallest write size when
/// sizes vary, never more than it (nor than the smallest read of a job that reads), and
/// a divisor of the smallest and largest write sizes (their gcd otherwise).
fn verify_interval(job: &Job) -> u64 {
    let (wmin, wmax, rmin) = (job.bs[1].min(), job.bs[1].max(), job.bs[0].min());
    let mut vi = job.verify_interval;
    if wmax != wmin && vi == 0 {
        vi = wmin;
    }
    if vi > wmin {
        vi = wmin;
    } else if job.read && vi > rmin {
        vi = rmin;
    }
    if vi == 0 || !wmin.is_multiple_of(vi) || !wmax.is_multiple_of(vi) {
        let (mut a, mut b) = (wmin, wmax);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        vi = a;
    }
    vi
}

/// What fio would stop at or fail on: a pattern type without a pattern, an interval no
/// larger than its header and checksum ("Blocksize too small"), a header moved past the
/// interval's end, fio 3.33's sha512 over fewer than 128 bytes.
fn check_verify(job: &Job, errors: &mut Vec<Diagnostic>) {
    use crate::fioverify::Kind;
    let Some(kind) = verify_kind(job) else { return };
    let mut err = |m: String| errors.push(at(job, "verify", m));
    let vi = verify_interval(job);
    let hs = kind.hdr_size() as u64;
    if matches!(kind, Kind::PatternNoHdr) && job.verify_pattern.is_empty() {
        err("`verify=pattern` without `verify_pattern`: there is nothing to check the data against (fio stops on it)".into());
    }
    if hs > 0 && vi <= hs {
        err(format!("verify={}: its header and checksum take {hs} bytes, more than each verify interval of {vi} (fio: Blocksize too small); use larger blocks", kind.name()));
    } else if job.verify_offset > 0 && job.verify_offset + hs > vi {
        err(format!("verify_offset={} puts the {hs}-byte header past the end of each {vi}-byte verify interval", job.verify_offset));
    } else if kind == Kind::Sha512 && vi < hs + 128 {
        err(format!("verify=sha512 over {} bytes: fio 3.33's sha512 needs at least 128 after its header (a verify interval of {})", vi.saturating_sub(hs), hs + 128));
    }
}

/// How a clone of `job` verifies (its `thread` is set with its number).
fn verify_spec(job: &Job) -> Option<crate::fioverify::Spec> {
    let kind = verify_kind(job)?;
    let (lo, hi) = (
        job.bs[0].min().min(job.bs[1].min()),
        job.bs[0].max().max(job.bs[1].max()),
    );
    Some(crate::fioverify::Spec {
        kind,
        interval: verify_interval(job),
        offset: job.verify_offset,
        pattern: job.verify_pattern.clone(),
        compress: job.compress_pct,
        thread: 0,
        // fio's verify_only skips the write number, and its dry run draws no seeds.
        check_numberio: job.write && lo == hi && !job.time_based && !job.ctl.verify_only,
        check_seed: job.read && job.write && job.verify_backlog == 0 && !job.ctl.verify_only,
    })
}

/// fsbench writes only where it created: `opendir` is for jobs that only read, and
/// without `filename`, `unlink` or `create_on_open`.
fn check_opendir(job: &Job, errors: &mut Vec<Diagnostic>) {
    if job.write {
        errors.push(at(
            job,
            "opendir",
            "`opendir` on a job that writes: fsbench writes only in the run directory it creates, never into a directory it did not create (a job that only reads may read the files there)".into(),
        ));
    }
    let set = [
        ("filename", job.filename.is_some()),
        ("unlink", job.unlink),
        ("create_on_open", job.create_on_open),
    ];
    for (key, on) in set {
        if on {
            errors.push(at(
                job,
                key,
                format!("`{key}` with `opendir` (files fsbench did not create) is not supported by fsbench"),
            ));
        }
    }
}

/// fio's strided zones: with `zonesize` (and not `zonemode=none`), the range defaulting
/// to the size.
fn stride(job: &Job) -> Option<crate::model::stream::Stride> {
    let [size, range, skip] = job.zone;
    (size > 0 && !job.zone_none).then_some(crate::model::stream::Stride {
        size,
        range: if range == 0 { size } else { range },
        skip,
    })
}

/// Strided zones with several files (fio then drops the zones) or a skewed distribution.
fn check_stride(job: &Job, errors: &mut Vec<Diagnostic>) {
    if stride(job).is_none() {
        return;
    }
    if files_per_clone(job) > 1 {
        errors.push(at(
            job,
            "zonesize",
            "`zonesize` with several files: fio then runs without zones; fsbench refuses rather than ignore it".into(),
        ));
    }
    if !matches!(job.distribution, Skew::Uniform) && job.random {
        errors.push(at(
            job,
            "zonesize",
            "`zonesize` with a random_distribution other than random is not supported by fsbench"
                .into(),
        ));
    }
}

/// A rate of 0, or a poisson rate under one block a second (fio divides by it).
fn check_rates(job: &Job, errors: &mut Vec<Diagnostic>) {
    for (d, r) in job.rate.iter().enumerate() {
        let key = if job.has("rate") { "rate" } else { "rate_iops" };
        if *r == Some(Rate::Bytes(0)) || *r == Some(Rate::Iops(0)) {
            errors.push(at(
                job,
                key,
                format!("`{key}` of 0 (fio: rate lower than supported)"),
            ));
        } else if let (true, Some(Rate::Bytes(b))) = (job.poisson, r) {
            // fio's poisson gap divides by the rate in blocks per second.
            if *b < job.bs[d].min() {
                errors.push(at(
                    job,
                    key,
                    format!(
                        "`rate={b}` with rate_process=poisson: less than one block ({}) a second",
                        job.bs[d].min()
                    ),
                ));
            }
        }
    }
}

/// fio: "zoned_abs sizes exceed file size", found at the first draw; here before.
fn check_zones(job: &Job, min_bs: u64, errors: &mut Vec<Diagnostic>) {
    if !(job.random && job.distribution == Skew::Zoned) {
        return;
    }
    let unit = min_bs.max(1);
    let shortest = clone_files(job, 0).iter().map(|f| f.len).min().unwrap_or(0);
    for z in job.zones.iter().filter(|z| z.abs) {
        let total: u64 = z.parts.iter().map(|p| p.size).sum();
        if total / unit > shortest / unit {
            errors.push(at(
                job,
                "random_distribution",
                format!("zoned_abs zones of {total} bytes exceed the file's {shortest} bytes (fio: zoned_abs sizes exceed file size)"),
            ));
        }
    }
}

/// The names and lengths of clone `k`'s files.
fn clone_files(job: &Job, k: u32) -> Vec<StreamFile> {
    if let Some(list) = &job.opendir {
        return dir_files(job, list, k);
    }
    let names: Vec<String> = match &job.filename {
        Some((n, _, _)) => n.split(':').map(str::to_string).collect(),
        None => (0..job.nrfiles).map(|i| file_name(job, k, i)).collect(),
    };
    let nr = names.len() as u64;
    let offset = job.offset + job.offset_increment * k as u64;
    let min_bs = job.bs[0].min().min(job.bs[1].min()).max(1);
    let size = job.size.unwrap_or(0);
    // fio's setup_files: size / nrfiles each, the first files a block larger while the
    // remainder lasts.
    let each = size / nr;
    let mut extra = (size - each * nr) / min_bs;
    let prealloc = match job.fallocate {
        Falloc::None => Prealloc::None,
        Falloc::Native => Prealloc::Native,
        Falloc::Posix => Prealloc::Posix,
        Falloc::Keep => Prealloc::KeepSize,
    };
    // fio's get_rand_file_size: `lo + (hi - lo) × U`, aligned down to the smallest block
    // size (drawn from the job's seed and clone number, the same every run).
    let mut rng = crate::dist::rng(job.randseed ^ u64::from(k), 0xf11e);
    names
        .into_iter()
        .map(|name| {
            let len = match job.filesize {
                Some((lo, hi)) if hi > lo => {
                    let u = rng.random::<u32>() as f64 / (u32::MAX as f64 + 1.0);
                    let s = lo + ((hi - lo) as f64 * u) as u64;
                    (s - s % min_bs).saturating_sub(offset)
                }
                Some((fs, _)) => fs.saturating_sub(offset),
                None => {
                    let mut l = each;
                    if extra > 0 {
                        extra -= 1;
                        l += min_bs;
                    }
                    l
                }
            };
            let device = name
                .starts_with('/')
                .then(|| fsbench_base::sys::device::block_rdev(Path::new(&name)))
                .flatten();
            let len = match device {
                // fio: a device without `size=` is used whole from the offset; with
                // `size=N%`, that share of it.
                Some(rdev) if job.size.is_none() && job.filesize.is_none() => {
                    let whole = fsbench_base::sys::device::size_of(rdev).unwrap_or(0);
                    share(whole, job.size_pct, min_bs).saturating_sub(offset)
                }
                _ => len,
            };
            StreamFile {
                name,
                offset,
                len,
                prealloc: if device.is_some() {
                    Prealloc::None
                } else {
                    prealloc
                },
                fill: job.read && device.is_none(),
                fill_bs: job.bs[1].max(),
                create_on_open: job.create_on_open,
                create_fsync: job.create_fsync,
                external: false,
                device,
            }
        })
        .collect()
}

/// A file's name, as fio's `make_filename` expands `filename_format` (by default
/// `$jobname.$jobnum.$filenum`): the job's name, the clone's number and the file's.
fn file_name(job: &Job, k: u32, i: u64) -> String {
    match &job.filename_format {
        None => format!("{}.{k}.{i}", job.name),
        Some((f, _, _)) => f
            .replace("$jobname", &job.name)
            .replace("$jobnum", &k.to_string())
            .replace("$filenum", &i.to_string()),
    }
}

/// `hipri`, `fixedbufs` and `registered_files` are io_uring's options, as in fio; polled
/// completions (`hipri`) are the kernel's for O_DIRECT I/O only, and have no fsync.
fn check_uring_opts(job: &Job, errors: &mut Vec<Diagnostic>) {
    for (i, key) in ["hipri", "fixedbufs", "registered_files"]
        .iter()
        .enumerate()
    {
        if job.uring_opts[i] && job.ioengine_name != "io_uring" {
            errors.push(at(
                job,
                key,
                format!(
                    "`{key}` is an option of ioengine=io_uring (this job's engine is {})",
                    job.ioengine_name
                ),
            ));
        }
    }
    if job.uring_opts[0] && job.ioengine_name == "io_uring" {
        if !job.direct {
            errors.push(at(
                job,
                "hipri",
                "`hipri` polls for completions, which the kernel does for O_DIRECT I/O only: add direct=1".into(),
            ));
        }
        if job.fsync > 0 || job.fdatasync > 0 {
            errors.push(at(
                job,
                "hipri",
                "`hipri` with `fsync`/`fdatasync`: a polled ring cannot queue a sync (the kernel refuses it)".into(),
            ));
        }
    }
}

/// `filename_format`'s names must be plain names in the run directory.
fn check_format(job: &Job, errors: &mut Vec<Diagnostic>) {
    let Some((f, span, src)) = &job.filename_format else {
        return;
    };
    if job.filename.is_some() {
        return;
    }
    let name = file_name(job, 0, 0);
    let bad = name.is_empty() || name.contains('/') || name == "." || name == "..";
    if bad || name.starts_with(OWN_PREFIX) {
        errors.push(Diagnostic::error(
            src,
            *span,
            format!("filename_format `{f}` makes `{name}`: fsbench writes only plain names inside the run directory it creates, and names starting with `{OWN_PREFIX}` are its own"),
        ));
    }
}

/// `size=N%` of a file or device of `whole` bytes (all of it without), in whole blocks.
fn share(whole: u64, pct: Option<f64>, min_bs: u64) -> u64 {
    let Some(p) = pct else { return whole };
    let s = (whole as f64 * p / 100.0) as u64;
    s - s % min_bs.max(1)
}

/// `opendir`'s files, read where they are: each its whole size from the offset (with
/// `size=`, at most size / files), aligned down to the smallest block size.
fn dir_files(job: &Job, list: &[(String, u64)], k: u32) -> Vec<StreamFile> {
    let offset = job.offset + job.offset_increment * k as u64;
    let min_bs = job.bs[0].min().min(job.bs[1].min()).max(1);
    let each = job.size.map(|s| s / list.len() as u64);
    list.iter()
        .map(|(path, real)| {
            let mut len = share(*real, job.size_pct, min_bs).saturating_sub(offset);
            if let Some(e) = each {
                len = len.min(e);
            }
            StreamFile {
                name: path.clone(),
                offset,
                len: len - len % min_bs,
                prealloc: Prealloc::None,
                fill: false,
                fill_bs: 0,
                create_on_open: false,
                create_fsync: false,
                external: true,
                device: None,
            }
        })
        .collect()
}

/// fio's rate of direction `d` (`__setup_rate`, `usec_for_io`): bytes per second, or
/// (`rate_iops` with `bssplit`) a fixed time per I/O.
fn pace(job: &Job, d: usize) -> Pace {
    match job.rate[d] {
        None => Pace::None,
        Some(Rate::Bytes(b)) => Pace::Bytes(b),
        Some(Rate::Iops(n)) => match &job.bs[d] {
            Bs::Split(_) => Pace::PerIo(1_000_000 / n.max(1)),
            b => Pace::Bytes(n * b.min()),
        },
    }
}

/// The statistics name of every job clone, as fio's `stat.c` groups them: clones in
/// order, each starting a report of its own unless it has `group_reporting` and is in
/// the same group (`new_group` starts one) as the clone before it; a report is named after
/// its first clone's job, with that clone's number after it when two reports would share
/// a name.
fn report_names(jobs: &[Job]) -> Vec<Vec<String>> {
    let mut group = 0;
    let mut last_group = None;
    // (job name, number of the first clone) per report; report index per clone.
    let mut reports: Vec<(String, usize)> = Vec::new();
    let mut of: Vec<Vec<usize>> = Vec::new();
    let mut n = 0;
    for (j, job) in jobs.iter().enumerate() {
        if (job.stonewall || job.new_group) && j > 0 {
            group += 1;
        }
        let mut mine = Vec::new();
        for _ in 0..job.numjobs {
            if reports.is_empty() || !job.group_reporting || last_group != Some(group) {
                reports.push((job.name.clone(), n));
            }
            last_group = Some(group);
            mine.push(reports.len() - 1);
            n += 1;
        }
        of.push(mine);
    }
    let names: Vec<String> = reports
        .iter()
        .map(|(name, first)| {
            if reports.iter().filter(|(o, _)| o == name).count() > 1 {
                format!("{name}.{first}")
            } else {
                name.clone()
            }
        })
        .collect();
    of.into_iter()
        .map(|v| v.into_iter().map(|r| names[r].clone()).collect())
        .collect()
}

struct Stats {
    names: Vec<(String, FlowopKind)>,
}

impl Stats {
    fn id(&mut self, name: String, kind: FlowopKind) -> usize {
        if let Some(i) = self.names.iter().position(|(n, _)| *n == name) {
            return i;
        }
        self.names.push((name, kind));
        self.names.len() - 1
    }
}

/// `startdelay`, or with a range fio's `rand_between` for each clone (drawn from the job's
/// seed, its number and the clone's).
fn start_delay_us(job: &Job, j: usize, k: u32) -> u64 {
    if job.startdelay_hi_us <= job.startdelay_us {
        return job.startdelay_us;
    }
    let mut rng = crate::dist::rng(job.randseed ^ ((j as u64) << 32) ^ u64::from(k), 0xde1a);
    rng.random_range(job.startdelay_us..=job.startdelay_hi_us)
}

/// The statistics of a clone of `job` reported as `report`: read, write, sync, datasync,
/// end-sync and runtime (0 for those it has not).
fn job_stats(job: &Job, stats: &mut Stats, report: &str) -> [usize; 6] {
    // Read first, then write, then sync: the order a report lists them.
    let verify_reads = verify_kind(job).is_some() && job.write && job.do_verify;
    let stat_read = if job.read || verify_reads {
        stats.id(format!("{report} read"), FlowopKind::Read)
    } else {
        0
    };
    let stat_write = if job.write {
        stats.id(format!("{report} write"), FlowopKind::Write)
    } else {
        0
    };
    // fio's JSON counts only the fsyncs every N writes as `sync`; the others apart.
    let mut sync_stat = |on: bool, what: &str| {
        if on && job.write {
            stats.id(format!("{report} {what}"), FlowopKind::Fsync)
        } else {
            0
        }
    };
    let stat_sync = sync_stat(job.fsync > 0, "sync");
    let stat_datasync = sync_stat(job.fdatasync > 0, "datasync");
    let stat_end_sync = sync_stat(job.end_fsync || job.fsync_on_close, "end-sync");
    // How long the job ran (fio's per-job runtime), one sample per clone.
    let stat_time = stats.id(format!("{report} runtime"), FlowopKind::Stream);
    [
        stat_read,
        stat_write,
        stat_sync,
        stat_datasync,
        stat_end_sync,
        stat_time,
    ]
}

fn stream_of(job: &Job, j: usize, k: u32, stats: &mut Stats, report: &str) -> Stream {
    let files = clone_files(job, k);
    let total: u64 = files.iter().map(|f| f.len).sum();
    let size = job.size.map_or(total, |s| s.min(total));
    let [stat_read, stat_write, stat_sync, stat_datasync, stat_end_sync, stat_time] =
        job_stats(job, stats, report);
    let pass_bytes = job.io_size.unwrap_or(size);
    let nfiles = files.len();
    Stream {
        files,
        reads: job.read,
        writes: job.write,
        read_pct: job.rwmixread,
        random: job.random,
        seq_skip: job.seq_skip,
        bs: [sizes(&job.bs[0]), sizes(&job.bs[1])],
        pass_bytes,
        seq_wrap: (job.time_based && nfiles == 1) || (job.write && pass_bytes > size),
        passes: job.loops,
        number_ios: job.number_ios,
        time_based: job.time_based,
        // fio's runtime starts after the ramp (the run's warm-up here).
        runtime_ns: (job.runtime_us + job.ramp_time_us).saturating_mul(1000),
        random_map: !job.norandommap && matches!(job.distribution, Skew::Uniform | Skew::Zoned),
        skew: job.distribution,
        zones: job.zones.clone(),
        stride: stride(job),
        invalidate: job.invalidate,
        fadvise_hint: job.fadvise_hint,
        seed: job
            .randrepeat
            .then_some(job.randseed ^ ((j as u64) << 32) ^ k as u64),
        fsync_every: job.fsync,
        fdatasync_every: job.fdatasync,
        end_fsync: job.end_fsync,
        fsync_on_close: job.fsync_on_close,
        direct: job.direct,
        osync: job.sync == SyncMode::Sync,
        dsync: job.sync == SyncMode::Dsync,
        lseek: job.engine == Engine::Sync,
        mmap: job.engine == Engine::Mmap,
        depth: if job.engine == Engine::Uring {
            job.iodepth
        } else {
            0
        },
        batch: job.iodepth_batch,
        uring_opts: job.uring_opts,
        pace: [0, 1].map(|d| pace(job, d)),
        poisson: job.poisson,
        unlink: job.unlink,
        content: (job.compress_pct > 0 || job.dedupe_pct > 0).then_some(crate::content::Content {
            compress: job.compress_pct,
            dedupe: job.dedupe_pct,
        }),
        compress_chunk: job.compress_chunk as u32,
        scramble: job.scramble,
        verify: verify_spec(job),
        do_verify: job.do_verify,
        verify_backlog: job.verify_backlog,
        verify_fatal: job.verify_fatal,
        think_us: job.thinktime_us,
        think_blocks: job.thinktime_blocks,
        think_spin_us: job.thinktime_spin_us,
        rate_min: job.rate_min.map(|r| match r {
            None => MinRate::None,
            Some(Rate::Bytes(b)) => MinRate::Bytes(b),
            Some(Rate::Iops(n)) => MinRate::Iops(n),
        }),
        ratecycle_ms: job.ratecycle_ms,
        stat_read,
        stat_write,
        stat_sync,
        stat_datasync,
        stat_end_sync,
        stat_time,
        ramp_ns: job.ramp_time_us.saturating_mul(1000),
        start_delay_ns: start_delay_us(job, j, k).saturating_mul(1000),
        job: j,
        wait: Vec::new(),
        out: Arc::new(FioOut::default()),
        ctl: super::job_ctl::stream_ctl(job),
    }
}

/// fio's line about a job before it runs: its pattern, block sizes, engine and depth.
fn header(job: &Job) -> String {
    let rw = job
        .values
        .iter()
        .rev()
        .find(|(k, _)| k == "rw")
        .map_or("read", |(_, v)| v.as_str());
    let b = |d: usize| format!("{}B-{}B", job.bs[d].min(), job.bs[d].max());
    format!(
        "rw={rw}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}",
        b(0),
        b(1),
        b(0),
        job.ioengine_name,
        job.iodepth
    )
}

/// A clone's reporting: its job's options, its `group` and `thread_number`.
fn fio_out(job: &Job, group: u32, thread_number: u32) -> FioOut {
    let o = &job.out;
    FioOut {
        jobname: job.name.clone(),
        group,
        thread_number,
        percentiles: o.percentiles.clone(),
        bw_log: o.bw_log.clone(),
        lat_log: o.lat_log.clone(),
        iops_log: o.iops_log.clone(),
        log_avg_ms: o.log_avg_ms,
        log_max: o.log_max,
        log_offset: o.log_offset,
        bw_avg_ms: o.bw_avg_ms,
        iops_avg_ms: o.iops_avg_ms,
        options: job.own.clone(),
        globals: job.globals.clone(),
        header: header(job),
        iodepth: job.iodepth,
        // fio's fixup_options: no percentiles of a latency it does not measure.
        clat_percentiles: o.clat_percentiles && !job.ctl.no_clat,
        lat_percentiles: o.lat_percentiles && !job.ctl.no_lat,
        slat_percentiles: o.slat_percentiles && !job.ctl.no_slat,
        no_lat: job.ctl.no_lat,
        no_clat: job.ctl.no_clat,
        no_slat: job.ctl.no_slat,
        no_bw: job.ctl.no_bw,
        continue_on_error: job.ctl.continue_on != 0,
        prio_rt: job.ctl.ioprio().is_some_and(|(class, _)| class == 1),
    }
}

/// Each job's `groupid`, as fio counts them: one more at each `stonewall` or `new_group`
/// after the first job.
pub fn groups(jobs: &[Job]) -> Vec<u32> {
    let mut g = 0;
    (jobs.iter().enumerate())
        .map(|(j, job)| {
            if j > 0 && (job.stonewall || job.new_group) {
                g += 1;
            }
            g
        })
        .collect()
}

/// A process of one thread per job clone, whose one flowop is the clone's stream.
fn processes(jobs: &[Job], waits: &[Vec<(usize, u32)>], stats: &mut Stats) -> Vec<Process> {
    let mut processes = Vec::new();
    let names = report_names(jobs);
    let group = groups(jobs);
    let mut thread_number = 0;
    for (j, job) in jobs.iter().enumerate() {
        for k in 0..job.numjobs {
            let report = names[j][k as usize].clone();
            let mut stream = stream_of(job, j, k, stats, &report);
            stream.job = j;
            stream.wait = waits[j].clone();
            thread_number += 1;
            if let Some(v) = &mut stream.verify {
                v.thread = thread_number as u16;
            }
            stream.out = Arc::new(fio_out(job, group[j], thread_number));
            stream.ctl.cpus = job.ctl.cpus_of(thread_number as usize - 1);
            stream.ctl.exit_with = super::job_ctl::exit_with(jobs, &group, j);
            let mut f = crate::model::build::stream_flowop(job.span);
            f.name = report.clone();
            f.stat = if job.read {
                stream.stat_read
            } else {
                stream.stat_write
            };
            let memsize = stream.max_bs();
            f.stream = Some(Arc::new(stream));
            processes.push(Process {
                name: report.clone(),
                span: job.span,
                instances: 1,
                nice: None,
                threads: vec![Thread {
                    name: report,
                    span: job.span,
                    instances: 1,
                    memsize,
                    useism: false,
                    ioprio: None,
                    flowops: vec![f],
                }],
            });
        }
    }
    processes
}

/// fio's nfs engine: `ioengine=nfs` with `nfs_url=`. A job file runs in one run directory,
/// so over NFS every job names the same export; returns its URL.
fn check_nfs(jobs: &[Job], errors: &mut Vec<Diagnostic>) -> Option<String> {
    let nfs = |j: &Job| j.ioengine_name == "nfs";
    let mut url: Option<&str> = None;
    for j in jobs.iter().filter(|j| nfs(j)) {
        // What fio's nfs engine cannot do either, said at the option.
        let kernel = [
            (
                "direct",
                j.direct,
                "direct=1 is O_DIRECT, an open flag of the kernel's file systems",
            ),
            (
                "verify",
                j.verify.is_some(),
                "verify= does not run over NFS in fsbench yet",
            ),
            ("opendir", j.opendir.is_some(), "opendir= reads local files"),
        ];
        for (key, _, why) in kernel.into_iter().filter(|k| k.1) {
            errors.push(at(
                j,
                key,
                format!("{why}: not with ioengine=nfs (leave out {key})"),
            ));
        }
    }
    for j in jobs {
        match (&j.nfs_url, nfs(j)) {
            (None, true) => errors.push(at(
                j,
                "ioengine",
                "ioengine=nfs needs nfs_url=nfs://SERVER/EXPORT (as fio's nfs engine)".into(),
            )),
            (Some(_), false) => errors.push(at(
                j,
                "nfs_url",
                format!("`nfs_url` is an option of ioengine=nfs (this job's engine is {})", j.ioengine_name),
            )),
            (Some((u, _, _)), true) => match url {
                None => url = Some(u),
                Some(first) if first != u => errors.push(at(
                    j,
                    "nfs_url",
                    format!("jobs on different exports (`{first}` and `{u}`): fsbench runs a job file in one run directory"),
                )),
                Some(_) => {}
            },
            (None, false) => {}
        }
    }
    if url.is_some() {
        if let Some(j) = jobs.iter().find(|j| !nfs(j)) {
            errors.push(at(
                j,
                "ioengine",
                format!("this job's engine is {} while others run over NFS: fsbench runs a job file in one run directory, so every job uses ioengine=nfs", j.ioengine_name),
            ));
        }
    }
    url.map(str::to_string)
}

/// Map the jobs of a file onto a workload named `name`.
pub fn map(name: &str, src: &Arc<SourceFile>, jobs: Vec<Job>) -> Result<Mapped, Diagnostics> {
    let mut errors = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        check(j, i == 0, &mut errors);
    }
    check_file_count(&jobs, &mut errors);
    let dirs: Vec<&String> = jobs.iter().filter_map(|j| j.directory.as_ref()).collect();
    if let Some(d) = dirs.iter().find(|d| **d != dirs[0]) {
        let j = jobs
            .iter()
            .find(|j| j.directory.as_ref() == Some(*d))
            .expect("found above");
        errors.push(at(
            j,
            "directory",
            format!("jobs in different directories (`{}` and `{d}`): fsbench runs a job file in one run directory", dirs[0]),
        ));
    }
    let nfs_url = check_nfs(&jobs, &mut errors);
    let waits = match waits(&jobs) {
        Ok(w) => w,
        Err(e) => {
            errors.extend(e);
            Vec::new()
        }
    };
    if !errors.is_empty() {
        return Err(Diagnostics(errors));
    }
    let mut stats = Stats { names: Vec::new() };
    let processes = processes(&jobs, &waits, &mut stats);
    let run_seconds = run_limit(&jobs, &waits);
    let ramp_s = jobs.iter().map(|j| j.ramp_time_us).max().unwrap_or(0) as f64 / 1e6;
    let workload = Workload {
        name: name.to_string(),
        source: src.clone(),
        // The options each job ran with, as the results' variables (`JOB.option`).
        vars: jobs
            .iter()
            .flat_map(|j| {
                j.values
                    .iter()
                    .map(move |(k, v)| (format!("{}.{k}", j.name), v.clone()))
            })
            .collect(),
        randvars: Vec::new(),
        filesets: Vec::new(),
        processes,
        actions: vec![crate::model::Action::Run],
        mode: QuitMode::AllDone,
        run_seconds: Some(run_seconds),
        has_run: true,
        psrun_period: None,
        eventgen_rate: None,
        lathist: false,
        nousestats: false,
        stat_names: stats.names,
        warnings: Vec::new(),
        nfs_url,
    };
    Ok(Mapped {
        directory: dirs.first().map(|d| d.to_string()),
        notes: Vec::new(),
        ramp_s,
        jobs,
        workload,
    })
}

#[cfg(test)]
mod tests {
    use super::super::ini::{parse, Expand, Keywords};
    use super::*;

    fn names(text: &str) -> Vec<Vec<String>> {
        let x = Expand {
            keywords: Keywords {
                ncpus: 2,
                pagesize: 4096,
                mb_memory: 100,
            },
            env: &|_| None,
        };
        let s = parse(&SourceFile::new("m.fio", text), &x).unwrap();
        report_names(&super::super::job::jobs(&s).unwrap())
    }

    #[test]
    fn reports_are_grouped_as_fios_stat_c_groups_them() {
        // Clones apart, each numbered.
        assert_eq!(names("[a]\nnumjobs=2\n"), [["a.0", "a.1"]]);
        // group_reporting joins a clone to the report before it, within its group.
        let n = names("[global]\ngroup_reporting\n[a]\nnumjobs=2\n[b]\n[c]\nnew_group\n");
        assert_eq!(n, vec![vec!["a", "a"], vec!["a"], vec!["c"]]);
        // Without it on the second job, that job reports alone.
        let n = names("[a]\nnumjobs=2\ngroup_reporting\n[b]\n");
        assert_eq!(n, vec![vec!["a", "a"], vec!["b"]]);
        // Two jobs of one name: numbered by their first clone.
        let n = names("[a]\n[a]\n");
        assert_eq!(n, vec![vec!["a.0"], vec!["a.1"]]);
    }

    #[test]
    fn jobs_wait_for_earlier_groups_and_named_jobs() {
        let x = Expand {
            keywords: Keywords {
                ncpus: 2,
                pagesize: 4096,
                mb_memory: 100,
            },
            env: &|_| None,
        };
        let text = "[global]\nsize=1m\n[a]\nnumjobs=2\n[b]\nstonewall\n[c]\n[d]\nwait_for=c\n";
        let src = SourceFile::new("m.fio", text);
        let jobs = super::super::job::jobs(&parse(&src, &x).unwrap()).unwrap();
        let w = waits(&jobs).unwrap();
        assert_eq!(w[0], []);
        assert_eq!(w[1], [(0, 2)]);
        assert_eq!(w[2], [(0, 2)]);
        assert_eq!(w[3], [(0, 2), (2, 1)]);
        let src = SourceFile::new("m.fio", "[a]\nsize=1m\n[b]\nsize=1m\nwait_for=z\n");
        let jobs = super::super::job::jobs(&parse(&src, &x).unwrap()).unwrap();
        let e = map("m", &src, jobs).unwrap_err();
        assert_eq!(e.0[0].location(), "m.fio:5:1");
        // Runtimes add up group after group.
        let text = "[a]\nsize=1m\nruntime=2\n[b]\nsize=1m\nruntime=3\nstonewall\n[c]\nsize=1m\nruntime=1\n";
        let src = SourceFile::new("m.fio", text);
        let m = map(
            "m",
            &src,
            super::super::job::jobs(&parse(&src, &x).unwrap()).unwrap(),
        )
        .unwrap();
        assert_eq!(m.workload.run_seconds, Some(5));
    }
}
