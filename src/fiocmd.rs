//! What `fsbench run`, `check` and `show` add for fio jobs: their explanation, the check
//! of their log files, and their results in fio's shapes after the usual report.

use anyhow::Result;
use fsbench_model::fio::map::FioJobs;
use fsbench_model::workloads::{Parsed, Source};

/// `fsbench check`'s explanation of a fio job; `None` for other workloads.
pub fn explain(parsed: &Parsed) -> Option<String> {
    parsed.fio().map(fsbench_model::fio::explain::explain)
}

/// `fsbench show JOB.fio`: the job file's text, then what fsbench makes of it; `None` when
/// `source` names no fio job.
pub fn show(source: &Source) -> Result<Option<String>> {
    if !source.is_fio() {
        return Ok(None);
    }
    let parsed = source.parse()?;
    let Some(m) = parsed.fio() else {
        return Ok(None);
    };
    let mut text = m.workload.source.text.clone();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push('\n');
    for line in fsbench_model::fio::explain::explain(m).lines() {
        text.push_str(&format!("# {line}\n").replace("# \n", "#\n"));
    }
    Ok(Some(text))
}

/// Before a fio job runs: that every log file its `write_bw_log`, `write_iops_log` and
/// `write_lat_log` name can be written, so that a wrong prefix is refused before the
/// layout rather than found after the run (a usage error, status 2).
pub fn check_logs(wl: &fsbench_model::model::Workload) -> Result<()> {
    let streams = wl
        .processes
        .iter()
        .flat_map(|p| &p.threads)
        .flat_map(|t| &t.flowops)
        .filter_map(|f| f.stream.as_deref());
    for s in streams {
        for (kind, file) in s.out.log_files() {
            let option = match kind {
                "bw" => "write_bw_log",
                "iops" => "write_iops_log",
                _ => "write_lat_log",
            };
            let what = format!("job {}: {option}", s.out.jobname);
            if let Err(e) =
                fsbench_base::export::check::output(Some(std::path::Path::new(&file)), &what)
            {
                return Err(fsbench_base::exit::usage(format!(
                    "{e}: give {option} a prefix in a directory you can write (the logs are PREFIX_{kind}.N.log)"
                )));
            }
        }
    }
    Ok(())
}

/// After a fio job's run: its summary in fio's shape (fio's normal output), its log
/// files, and with `--output-format` fio's JSON, `json+` or terse line on standard output.
/// (`--output-format` for any other workload is refused before the run.)
pub fn report(
    jobs: &FioJobs,
    r: &fsbench_results::stats::Results,
    format: Option<&str>,
) -> Result<()> {
    for j in &jobs.jobs {
        if matches!(j.ioengine_name.as_str(), "libaio" | "posixaio") {
            fsbench_base::console::human(&format!(
                "note: job {} (ioengine={}) ran through io_uring\n",
                j.name, j.ioengine_name
            ));
        }
        if j.ioengine_name == "nfs" && j.iodepth > 1 {
            fsbench_base::console::human(&format!(
                "note: job {} (ioengine=nfs, iodepth={}) issued one synchronous libnfs call at a time (fio queues up to iodepth)\n",
                j.name, j.iodepth
            ));
        }
    }
    fsbench_base::console::human(&fsbench_results::report::fio::text(r));
    for (name, text) in fsbench_results::report::fio_log::files(r) {
        fsbench_base::export::write_text(std::path::Path::new(&name), &text, "fio log")?;
        fsbench_base::console::human(&format!("fsbench: wrote {name}\n"));
    }
    let out = match format {
        Some("json") => Some(pretty(&fsbench_results::report::fio_json::json(r, false))?),
        Some("json+") => Some(pretty(&fsbench_results::report::fio_json::json(r, true))?),
        Some("terse") => Some(fsbench_results::report::fio_terse::terse(r)),
        _ => None,
    };
    if let Some(text) = out {
        let stdout = fsbench_base::export::Output::open(std::path::Path::new("-"), "fio's output")?;
        stdout.bytes(text.as_bytes())?;
    }
    let failed = fsbench_results::report::fio::failures(r);
    if !failed.is_empty() {
        anyhow::bail!("{}", failed.join("; "));
    }
    Ok(())
}

fn pretty(v: &serde_json::Value) -> Result<String> {
    Ok(serde_json::to_string_pretty(v)? + "\n")
}
