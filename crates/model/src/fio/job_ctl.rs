//! What a job's run options (read in `ctl.rs`) become: the ones fsbench refuses for a job,
//! with the reason, and the stream's control settings; with the two facts about a job the
//! mapping asks everywhere (where an option was given, for errors; which verify type runs).

use super::job::Job;
use crate::lang::Diagnostic;

/// An error at the place `key` was given in `job` (the job's header when it was not).
pub fn at(job: &Job, key: &str, msg: String) -> Diagnostic {
    match job.place(key) {
        Some((span, src)) => Diagnostic::error(src, span, msg),
        None => Diagnostic::error(&job.src, job.span, msg),
    }
}

/// The verify type a job runs: `verify=`'s, or a header and pattern when only
/// `verify_pattern` is given (fio's `str_verify_pattern_cb`).
pub fn verify_kind(job: &Job) -> Option<crate::fioverify::Kind> {
    if job.verify_named {
        job.verify
    } else {
        (!job.verify_pattern.is_empty()).then_some(crate::fioverify::Kind::Pattern)
    }
}

/// Whether every file of `job` is a block device (`filename=/dev/X:...`): the only files
/// fsbench does not lay out anew, so the only ones an earlier run's data is still on.
fn devices_only(job: &Job) -> bool {
    job.filename.as_ref().is_some_and(|(n, _, _)| {
        n.split(':').all(|p| {
            p.starts_with('/')
                && fsbench_base::sys::device::block_rdev(std::path::Path::new(p)).is_some()
        })
    })
}

/// Refuse the run options fsbench cannot honour for this job, with the reason.
pub fn check(job: &Job, errors: &mut Vec<Diagnostic>) {
    let c = &job.ctl;
    if c.verify_only && job.write {
        if verify_kind(job).is_none() || !job.do_verify {
            errors.push(at(job, "verify_only", "`verify_only` on a job without `verify=` (or with do_verify=0): there is nothing to read back".into()));
        }
        if job.time_based {
            errors.push(at(job, "verify_only", "`verify_only` with `time_based`: fio does not support it (the writes to check are not known)".into()));
        }
        if !devices_only(job) {
            errors.push(at(job, "verify_only", "`verify_only` checks data an earlier run of the job wrote, and fsbench lays a job's files out anew in the run directory it creates: it runs on block devices only (filename=/dev/X, with --allow-device)".into()));
        }
    }
    if c.refill == Some(false) && (job.compress_pct > 0 || job.dedupe_pct > 0) {
        errors.push(at(job, "refill_buffers", "`refill_buffers=0` with buffer_compress_percentage or dedupe_percentage: fio then writes one buffer over and over, and fsbench's content model makes each block anew; leave refill_buffers out".into()));
    }
    if let Some(sched) = &c.ioscheduler {
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        if sched.is_empty() || sched.len() > 32 || !sched.bytes().all(word) {
            errors.push(at(
                job,
                "ioscheduler",
                format!(
                    "`{sched}` is not the name of an I/O scheduler (none, mq-deadline, bfq, kyber)"
                ),
            ));
        }
    }
}

/// The stream's run options of a clone of `job` (its CPUs and the jobs it ends with are
/// set per clone, where the clones and groups are known).
pub fn stream_ctl(job: &Job) -> crate::model::stream::Ctl {
    let c = &job.ctl;
    crate::model::stream::Ctl {
        refill: c.refill.unwrap_or(false),
        exit_with: Vec::new(),
        continue_on: c.continue_on,
        // fio's fixup_options: above the depth, or 0, is the depth.
        depth_low: if c.depth_low == 0 || c.depth_low > job.iodepth {
            job.iodepth
        } else {
            c.depth_low
        },
        cpus: Vec::new(),
        nice: c.nice,
        ioprio: c.ioprio(),
        verify_only: c.verify_only && job.write,
        verify_batch: c.verify_batch,
        verify_dump: c.verify_dump,
        verify_async: c.verify_async,
        scheduler: c.ioscheduler.as_ref().map(|name| {
            let place = at(job, "ioscheduler", String::new()).location();
            (name.clone(), place)
        }),
    }
}

/// fio's `exitall`: one job with it makes every job's end terminate the jobs of its group
/// (fio keeps it in one global, `exitall_on_terminate`). The jobs whose end ends job `j`:
/// those of its group, itself included (another clone of it ending ends it too).
pub fn exit_with(jobs: &[Job], group: &[u32], j: usize) -> Vec<usize> {
    if !jobs.iter().any(|x| x.ctl.exitall) {
        return Vec::new();
    }
    (0..jobs.len()).filter(|&i| group[i] == group[j]).collect()
}
