//! What a fio job file does, in words: `fsbench show` and `fsbench check` print this.

use super::job::{Engine, SyncMode};
use super::map::{Mapped, UNBOUNDED_S};
use crate::model::stream::Sizes;
use fsbench_base::units::human_bytes_u64 as h;
use std::fmt::Write;

fn sizes(s: &Sizes) -> String {
    match s {
        Sizes::Fixed(b) => h(*b),
        Sizes::Range(lo, hi) => format!("{} to {} (multiples of {})", h(*lo), h(*hi), h(*lo)),
        Sizes::Split(p) => p
            .iter()
            .map(|(b, pc)| format!("{} {pc}%", h(*b)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Describe every job clone: files, pattern, sizes, bounds, syncs.
pub fn explain(m: &Mapped) -> String {
    let mut o = String::new();
    let wl = &m.workload;
    let groups = super::map::groups(&m.jobs);
    let phases = groups.last().map_or(1, |g| g + 1);
    let waits = wl
        .processes
        .iter()
        .any(|p| (p.threads[0].flowops[0].stream.as_deref()).is_some_and(|s| !s.wait.is_empty()));
    let when = if waits {
        format!(
            "in {}: a job that waits starts when what it waits for has ended",
            fsbench_base::units::count(phases as u64, "group")
        )
    } else {
        "all at once".to_string()
    };
    let _ = writeln!(
        o,
        "fio job file {}: {} run by fsbench's engine, {when}",
        wl.source.name,
        fsbench_base::units::count(wl.processes.len() as u64, "job"),
    );
    match &m.directory {
        Some(d) => {
            let _ = writeln!(o, "files in a run directory made in {d} (directory=)");
        }
        None => {
            let _ = writeln!(
                o,
                "files in a run directory made in --dir (default $TMPDIR)"
            );
        }
    }
    for (p, job) in wl.processes.iter().zip(job_of_process(m)) {
        if let Some(s) = p.threads[0].flowops[0].stream.as_deref() {
            explain_job(&mut o, &p.name, job, s);
            let _ = writeln!(o, "  groupid={}", s.out.group);
            if s.start_delay_ns > 0 {
                let _ = writeln!(
                    o,
                    "  starts {} s late (startdelay)",
                    s.start_delay_ns as f64 / 1e9
                );
            }
            if !s.wait.is_empty() {
                let names: Vec<&str> = s
                    .wait
                    .iter()
                    .map(|(i, _)| m.jobs[*i].name.as_str())
                    .collect();
                let _ = writeln!(
                    o,
                    "  starts when {} ha{} ended (stonewall, wait_for)",
                    names.join(", "),
                    if names.len() == 1 { "s" } else { "ve" }
                );
            }
        }
    }
    let secs = wl.run_seconds.unwrap_or(0);
    if secs >= UNBOUNDED_S {
        let _ = writeln!(
            o,
            "\nthe run ends when every job is done (bounded by its bytes, loops or I/O count: no time limit)"
        );
    } else {
        let _ = writeln!(
            o,
            "\nthe run ends when every job is done, after {secs} s at most"
        );
    }
    if m.ramp_s > 0.0 {
        let _ = writeln!(o, "the first {} s are not measured (ramp_time)", m.ramp_s);
    }
    o
}

/// One job clone: its pattern, sizes, files and bounds.
fn explain_job(
    o: &mut String,
    name: &str,
    job: &super::job::Job,
    s: &crate::model::stream::Stream,
) {
    let pattern = match (s.reads, s.writes, s.random) {
        (true, false, false) => "sequential reads".to_string(),
        (true, false, true) => "random reads".to_string(),
        (false, true, false) => "sequential writes".to_string(),
        (false, true, true) => "random writes".to_string(),
        (_, _, r) => format!(
            "{} reads and writes, {}% reads",
            if r { "random" } else { "sequential" },
            s.read_pct
        ),
    };
    let _ = writeln!(o, "\njob {name} (section [{}]): {pattern}", job.name);
    let bs = if s.bs[0] == s.bs[1] || !s.writes {
        sizes(&s.bs[0])
    } else if !s.reads {
        sizes(&s.bs[1])
    } else {
        format!("reads {}, writes {}", sizes(&s.bs[0]), sizes(&s.bs[1]))
    };
    let _ = writeln!(o, "  block size: {bs}");
    if s.seq_skip > 0 {
        let _ = writeln!(o, "  {} skipped after each I/O", h(s.seq_skip));
    }
    if s.random {
        use crate::model::stream::Skew;
        let center = |c: Option<f64>| c.map_or(String::new(), |c| format!(", centred at {c}"));
        let how = match s.skew {
            Skew::Uniform if s.random_map => {
                "uniform, each block once per pass (random map)".to_string()
            }
            Skew::Uniform => "uniform, blocks may repeat (norandommap)".to_string(),
            Skew::Zipf { theta, center: c } => format!(
                "zipf, theta {theta}{}, scattered as fio scatters them",
                center(c)
            ),
            Skew::Pareto { h, center: c } => {
                format!("pareto, h {h}{}, scattered as fio scatters them", center(c))
            }
            Skew::Normal { dev, center: c } => format!(
                "normal, deviation {dev}%{}, scattered as fio scatters them",
                center(c)
            ),
            Skew::Zoned => {
                let dir = |d: usize| {
                    let z = &s.zones[d];
                    if z.parts.is_empty() {
                        return "uniform".to_string();
                    }
                    z.parts
                        .iter()
                        .map(|p| {
                            let size = if z.abs {
                                h(p.size)
                            } else {
                                format!("{}%", p.size)
                            };
                            format!("{}% of the I/O in {size}", p.access)
                        })
                        .collect::<Vec<_>>()
                        .join(", then ")
                };
                let map = if s.random_map {
                    ", each block once per pass"
                } else {
                    ""
                };
                format!("zoned: reads {}; writes {}{map}", dir(0), dir(1))
            }
        };
        let _ = writeln!(o, "  offsets: {how}");
    }
    for f in &s.files {
        let _ = writeln!(
            o,
            "  file {}: {} from offset {}, {}",
            f.name,
            h(f.len),
            f.offset,
            if f.device.is_some() {
                device_text(s.writes, &f.name)
            } else if f.external {
                "read where it is (opendir): not laid out, never written or removed".to_string()
            } else if f.create_on_open {
                "not laid out: created when the job opens it (create_on_open)".to_string()
            } else if f.fill {
                format!("laid out written whole ({} requests)", h(f.fill_bs))
            } else {
                "laid out empty (a write job creates its file anew)".into()
            }
        );
    }
    explain_bounds(o, job, s);
}

/// A block device as a job's file: what the run needs and what it refuses.
fn device_text(writes: bool, name: &str) -> String {
    let (how, data) = if writes {
        (
            "read and written",
            ", or carries a file system, RAID or partition table (unless --allow-device-with-data)",
        )
    } else {
        ("read", "")
    };
    format!("a block device, {how} where it is, never laid out or removed: the run needs --allow-device {name} and refuses it when it is mounted or in use{data}")
}

/// How a job clone ends, its engine and open flags, its syncs and think time.
fn explain_bounds(o: &mut String, job: &super::job::Job, s: &crate::model::stream::Stream) {
    let mut bound = format!("{} a pass", h(s.pass_bytes));
    if s.passes > 1 {
        let _ = write!(bound, ", {} passes", s.passes);
    }
    if s.number_ios > 0 {
        let _ = write!(bound, ", at most {} I/Os a pass", s.number_ios);
    }
    if s.time_based {
        bound = format!(
            "passes repeated for {} s (time_based)",
            s.runtime_ns / 1_000_000_000
        );
    } else if s.runtime_ns > 0 {
        let _ = write!(
            bound,
            ", or {} s, whichever ends first",
            s.runtime_ns / 1_000_000_000
        );
    }
    let _ = writeln!(o, "  ends after: {bound}");
    let engine = match job.engine {
        Engine::Psync if job.nfs_url.is_some() => {
            "libnfs READ/WRITE calls on the export, one at a time"
        }
        Engine::Psync => "pread/pwrite",
        Engine::Sync => "lseek + read/write",
        Engine::Uring => "io_uring",
        Engine::Mmap => "copies to and from a shared mapping of each file (msync for syncs)",
    };
    let mut flags = Vec::new();
    if s.direct {
        flags.push("O_DIRECT");
    }
    match job.sync {
        SyncMode::Sync => flags.push("O_SYNC"),
        SyncMode::Dsync => flags.push("O_DSYNC"),
        SyncMode::None => {}
    }
    let _ = writeln!(
        o,
        "  ioengine {} ({engine}{}), iodepth {}{}",
        job.ioengine_name,
        if matches!(job.ioengine_name.as_str(), "libaio" | "posixaio") {
            ": fsbench runs it through io_uring"
        } else {
            ""
        },
        s.depth.max(1),
        if flags.is_empty() {
            String::new()
        } else {
            format!(", opened {}", flags.join(" | "))
        }
    );
    if s.fsync_every > 0 {
        let _ = writeln!(o, "  fsync after every {} writes", s.fsync_every);
    }
    if s.fdatasync_every > 0 {
        let _ = writeln!(o, "  fdatasync after every {} writes", s.fdatasync_every);
    }
    if s.end_fsync {
        let _ = writeln!(o, "  fsync of every file at the end");
    }
    for (d, p) in ["reads", "writes"].iter().zip(s.pace) {
        match p {
            crate::model::stream::Pace::None => {}
            crate::model::stream::Pace::Bytes(b) => {
                let _ = writeln!(o, "  {d} paced at {}/s", h(b));
            }
            crate::model::stream::Pace::PerIo(us) => {
                let _ = writeln!(o, "  {d} paced at one I/O every {us} µs");
            }
        }
    }
    if s.unlink {
        let _ = writeln!(o, "  its files removed when it ends (unlink)");
    }
    if job.iodepth > 1 && s.depth == 0 {
        let _ = writeln!(
            o,
            "  iodepth {} changes nothing with a synchronous engine (as in fio)",
            job.iodepth
        );
    }
    if s.think_us > 0 {
        let _ = writeln!(
            o,
            "  {} µs think time after every {} I/Os",
            s.think_us, s.think_blocks
        );
    }
    explain_verify(o, s);
    explain_logs(o, &s.out);
    explain_ctl(o, job, s);
}

/// How the clone's thread runs and ends beyond its I/O (fio's run options).
fn explain_ctl(o: &mut String, job: &super::job::Job, s: &crate::model::stream::Stream) {
    use super::ctl::{ON_READ, ON_VERIFY, ON_WRITE};
    let c = &s.ctl;
    let mut lines: Vec<String> = Vec::new();
    if c.refill {
        lines.push("every write's buffer filled anew with random data (refill_buffers)".into());
    }
    let off: Vec<&str> = [
        (s.out.no_lat, "total latency"),
        (s.out.no_clat, "completion latency"),
        (s.out.no_slat, "submission latency"),
        (s.out.no_bw, "per-I/O bandwidth log entries"),
    ]
    .iter()
    .filter_map(|(on, what)| on.then_some(*what))
    .collect();
    if !off.is_empty() {
        lines.push(format!(
            "fio's reports leave out {} (gtod_reduce, disable_*), with their percentiles and logs",
            off.join(", ")
        ));
    }
    if !c.exit_with.is_empty() {
        lines.push(
            "ends as soon as a job of its group ends (exitall), and then reads nothing back".into(),
        );
    }
    if c.continue_on != 0 {
        let kinds: Vec<&str> = [
            (ON_READ, "reads"),
            (ON_WRITE, "writes"),
            (ON_VERIFY, "verify (EILSEQ)"),
        ]
        .iter()
        .filter_map(|(b, w)| (c.continue_on & b != 0).then_some(*w))
        .collect();
        lines.push(format!("goes past fio's non-fatal errors (EIO, EILSEQ) of {} and counts them (continue_on_error: total_err, first_error); any other error ends it", kinds.join(", ")));
    }
    if s.depth > 0 && c.depth_low < s.depth {
        lines.push(format!(
            "once all {} slots are busy, reaps until at most {} are in flight (iodepth_low)",
            s.depth, c.depth_low
        ));
    } else if s.depth == 0 && job.ctl.depth_low > 0 {
        lines.push("iodepth_low changes nothing with a synchronous engine (as in fio)".into());
    }
    lines.extend(thread_lines(job, s));
    for l in lines {
        let _ = writeln!(o, "  {l}");
    }
}

/// The clone's thread (CPUs, priorities), its verify options and the device's scheduler.
fn thread_lines(job: &super::job::Job, s: &crate::model::stream::Stream) -> Vec<String> {
    let c = &s.ctl;
    let mut lines: Vec<String> = Vec::new();
    if !c.cpus.is_empty() {
        let cpus: Vec<String> = c.cpus.iter().map(usize::to_string).collect();
        let split = if job.ctl.cpus_split {
            ", one per clone (cpus_allowed_policy=split)"
        } else {
            ""
        };
        lines.push(format!(
            "its thread runs on CPU {} (cpus_allowed{split})",
            cpus.join(",")
        ));
    }
    if c.nice != 0 {
        lines.push(format!(
            "its thread's nice value moved by {} (nice)",
            c.nice
        ));
    }
    if let Some((class, level)) = c.ioprio {
        let name = ["none", "realtime", "best-effort", "idle"][class as usize & 3];
        lines.push(format!(
            "its I/O priority class {class} ({name}), level {level} (prioclass, prio)"
        ));
    }
    if c.verify_only {
        lines.push("verify_only: nothing is written; the writes are planned as a run of the job does them, and what an earlier run wrote is read back and checked".into());
    }
    if c.verify_async > 0 && s.verify.is_some() {
        lines.push(format!(
            "its reads checked by {} threads of their own (verify_async)",
            c.verify_async
        ));
    }
    if c.verify_dump && s.verify.is_some() {
        lines.push("a bad block as read and as written goes to FILE.OFFSET.received and .expected in the current directory (verify_dump; an existing file of that name is left alone)".into());
    }
    if let Some(sched) = &job.ctl.ioscheduler {
        lines.push(format!("the I/O scheduler of the device under its files set to {sched} for the run and set back after (ioscheduler; a device fsbench made only)"));
    }
    lines
}

/// What a verifying job checks, and how its verify phase reads.
fn explain_verify(o: &mut String, s: &crate::model::stream::Stream) {
    let Some(v) = &s.verify else {
        return;
    };
    let how = if s.depth > 0 {
        format!(
            "queued {} at a time through io_uring, as the job's I/O",
            s.depth
        )
    } else {
        "one at a time, as the job's engine reads".to_string()
    };
    let with = match v.kind {
        crate::fioverify::Kind::Null => "nothing (verify=null)".to_string(),
        crate::fioverify::Kind::PatternNoHdr => "the pattern alone, no header".to_string(),
        crate::fioverify::Kind::Meta | crate::fioverify::Kind::Pattern => {
            "fio's 40-byte header (and the pattern when given)".to_string()
        }
        k => format!("fio's 40-byte header and {}", k.name()),
    };
    let every = format!("every {} bytes", v.interval);
    let what = if s.writes && s.do_verify {
        let when = if s.verify_backlog > 0 {
            let batch = match s.ctl.verify_batch {
                0 => String::new(),
                b => format!(" ({b} of them each time, verify_backlog_batch)"),
            };
            format!(
                "after every {} writes{batch} and at its end",
                s.verify_backlog
            )
        } else {
            "after each pass".to_string()
        };
        format!("writes carry {with} {every}, in fio's format; read back {when}, {how}")
    } else {
        format!("every block read is checked against {with} {every}, in fio's format; {how}")
    };
    let _ = writeln!(o, "  verify: {what}");
    let _ = writeln!(
        o,
        "  verify summary in the report: blocks checked, mismatches, the first bad file and offset; the first bad read ends the job, as in fio{}",
        if s.verify_fatal {
            " (verify_fatal: its other blocks unchecked)"
        } else {
            ""
        }
    );
}

/// The log files a job writes.
fn explain_logs(o: &mut String, out: &crate::model::stream::FioOut) {
    let files: Vec<String> = out.log_files().into_iter().map(|(_, f)| f).collect();
    if files.is_empty() {
        return;
    }
    let avg = if out.log_avg_ms > 0 {
        format!(
            "{} over every {} ms",
            if out.log_max { "maxima" } else { "averages" },
            out.log_avg_ms
        )
    } else {
        "a line per I/O".to_string()
    };
    let _ = writeln!(o, "  logs: {} ({avg})", files.join(", "));
}

/// The job section of each process, in order (clones repeat their job).
fn job_of_process(m: &Mapped) -> Vec<&super::job::Job> {
    m.jobs
        .iter()
        .flat_map(|j| std::iter::repeat_n(j, j.numjobs as usize))
        .collect()
}
