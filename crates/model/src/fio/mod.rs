//! fio job files, run by fsbench's engine: the INI format as fio reads it ([`ini`]), values
//! with fio's units ([`value`], [`expr`]), the options into typed jobs ([`job`]), and jobs
//! onto the engine's streams ([`map`]); [`explain`] says what a job does, [`output`] writes
//! results in fio's shapes. docs/fio.md lists the options fsbench runs.

pub mod ctl;
pub mod explain;
pub mod expr;
pub mod ini;
pub mod job;
pub mod job_ctl;
pub mod job_out;
pub mod map;
pub mod value;

use crate::lang::{Diagnostics, SourceFile};
use std::sync::Arc;

use map::Mapped;

/// Whether `spec` names a fio job file by its extension.
pub fn is_job_file(spec: &str) -> bool {
    spec.ends_with(".fio")
}

/// Read, map and check a job file's text (`src`), for a workload called `name`.
pub fn load_source(name: &str, src: &Arc<SourceFile>) -> Result<Mapped, Diagnostics> {
    let env = |k: &str| std::env::var(k).ok();
    let x = ini::Expand {
        keywords: ini::Keywords::of_host(),
        env: &env,
    };
    let sections = ini::parse(src, &x)?;
    let (jobs, mut errors) = job::read_jobs(&sections);
    if errors.is_empty() {
        return map::map(name, src, jobs);
    }
    // Every error in one pass: the options' and the jobs' checks, less a check of a whole
    // job whose options had errors (a refused `size=` is not also "no size").
    let partial: Vec<crate::lang::Span> = jobs
        .iter()
        .filter(|j| j.had_errors)
        .map(|j| j.span)
        .collect();
    if !jobs.is_empty() {
        if let Err(Diagnostics(more)) = map::map(name, src, jobs) {
            for d in more {
                let dup = errors.iter().any(|e| {
                    e.span == d.span && e.source.name == d.source.name && e.message == d.message
                });
                if !dup && !partial.contains(&d.span) {
                    errors.push(d);
                }
            }
        }
    }
    errors.sort_by(|a, b| {
        (a.source.name.as_str(), a.span.start).cmp(&(b.source.name.as_str(), b.span.start))
    });
    Err(Diagnostics(errors))
}

/// The text of a one-line job (`--fio 'rw=randread bs=4k size=1g'`): a `[fio]` section
/// with one option a line. Options are separated by blanks; a value holding blanks is not
/// possible on this line (use a job file).
pub fn one_line_job(line: &str) -> String {
    let mut text = String::from("[fio]\n");
    for opt in line.split_whitespace() {
        let opt = opt.strip_prefix("--").unwrap_or(opt);
        text.push_str(opt);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_line_job_is_a_section() {
        assert_eq!(
            one_line_job("rw=randread --bs=4k  size=1g"),
            "[fio]\nrw=randread\nbs=4k\nsize=1g\n"
        );
        let src = SourceFile::new("--fio", one_line_job("rw=randread bs=4k size=1m"));
        let m = load_source("fio", &src).unwrap();
        assert_eq!(m.workload.processes.len(), 1);
        let s = m.workload.processes[0].threads[0].flowops[0]
            .stream
            .clone()
            .unwrap();
        assert_eq!(s.files[0].name, "fio.0.0");
        assert_eq!(s.files[0].len, 1 << 20);
        assert!(s.random && s.reads && !s.writes);
    }
}
