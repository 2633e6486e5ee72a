//! The aging loop: fill, then churn, each planned operation applied (by this thread or by
//! the pool of `--threads`), logged, and shown in the per-day progress.

use std::io;
use std::path::Path;

use super::args::AgeArgs;
use super::exec::{self, Exec};
use super::plan::{Op, Phase, Planner};
use super::progress::{Progress, Totals};
use super::report::AgeReport;

/// Churn operations at most: `--ops`, or until converged but never forever (fifty
/// population turnovers).
fn max_churn(args: &AgeArgs, pl: &Planner) -> u64 {
    if let Some(n) = args.ops {
        return n;
    }
    let n = 50 * (pl.budget as f64 / pl.targets.mean_size()).max(100.0) as u64;
    if !args.until_converged && !args.quiet {
        fsbench_base::errln!(
            "age: no --ops given: churning until converged (at most {n} operations)"
        );
    }
    n
}

/// The first few errors are shown, all are counted.
struct Errors(u64);

impl Errors {
    fn show(&mut self, e: &io::Error) {
        self.0 += 1;
        if self.0 <= 5 {
            fsbench_base::errln!("age: {e}");
        }
    }
}

/// Fill, then churn until `--ops`, convergence or an interrupt; the operations done and
/// how many of them churned.
pub(super) fn age_loop(
    args: &AgeArgs,
    root: &Path,
    ex: &mut Exec,
    report: &mut AgeReport,
    pl: &mut Planner,
) -> anyhow::Result<(u64, u64)> {
    let max_churn = max_churn(args, pl);
    let stop_on_convergence = args.until_converged || args.ops.is_none();
    let mut pool = super::parallel::Pool::start(root, args)?;
    if pool.is_none() {
        ex.defer_deletes();
    }
    let days = (args.day_ops, args.layout_every);
    let mut progress = Progress::new(args.quiet, days, args.fill, root, pl.clock);
    let (mut ops, mut rel) = (Vec::new(), String::new());
    let mut errors = Errors(0);
    let (mut done, mut churn) = (0u64, 0u64);
    loop {
        if fsbench_base::cancel::interrupted() {
            report.interrupted = true;
            break;
        }
        if pl.phase == Phase::Churn {
            if churn >= max_churn {
                break;
            }
            if stop_on_convergence
                && churn.is_multiple_of(100)
                && pl.distances().max_tv() < args.threshold
            {
                report.converged = true;
                break;
            }
        }
        let clock = pl.clock;
        pl.next(&mut ops);
        churn += (pl.phase == Phase::Churn) as u64;
        done += 1;
        for op in &ops {
            let r = match pool.as_mut() {
                Some(p) => p.submit(pl, ex, op, clock, &mut rel),
                None => apply(pl, ex, op, clock, &mut rel),
            };
            if let Err(e) = r {
                ex.counts.errors += 1;
                errors.show(&e);
            }
        }
        ex.tick()?;
        for e in std::mem::take(&mut ex.late_errors) {
            errors.show(&e);
        }
        let written = ex.counts.bytes_written + pool.as_ref().map_or(0, |p| p.bytes_written());
        let t = Totals {
            done,
            churn,
            max_churn,
            written,
        };
        progress.tick(pl, &t);
    }
    if let Some(p) = pool {
        for e in p.finish(pl, ex)? {
            ex.counts.errors += 1;
            errors.show(&e);
        }
    }
    Ok((done, churn))
}

/// Apply one planned operation, logging it.
fn apply(pl: &mut Planner, ex: &mut Exec, op: &Op, clock: u64, rel: &mut String) -> io::Result<()> {
    // Sets `rel` to the file's path for file operations.
    exec::log_op(pl, ex, op, clock, rel)?;
    match *op {
        Op::Mkdir { dir } => ex.mkdir(pl.dirs[dir as usize].path.as_bytes()),
        Op::Create { id, write, .. } => {
            let r = ex.create(rel.as_bytes(), write);
            short(pl, ex, id, r)
        }
        Op::Append { id, off, len } => {
            let r = ex.write(rel.as_bytes(), off, len, true);
            short(
                pl,
                ex,
                id,
                r.map_err(|mut s| {
                    s.written += off;
                    s
                }),
            )
        }
        Op::Overwrite { off, len, .. } => ex
            .write(rel.as_bytes(), off, len, false)
            .map_err(|s| s.error),
        Op::Delete { .. } => ex.delete(rel.as_bytes()),
    }
}

pub(super) fn short(
    pl: &mut Planner,
    ex: &mut Exec,
    id: u64,
    r: Result<(), exec::ShortWrite>,
) -> io::Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(s) if exec::is_enospc(&s.error) => {
            ex.counts.enospc += 1;
            pl.short_write(id, s.written);
            Ok(())
        }
        Err(s) => Err(s.error),
    }
}
