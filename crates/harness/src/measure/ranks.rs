//! Measurements on every rank of an MPI job.

use anyhow::Result;
use fsbench_results::stats::Results;

/// An application benchmark on every rank (`mpirun -np N fsbench postmark ...`): each rank
/// measures in its own run directory (the benchmark's, below the same `--dir`), starting
/// together; rank 0 merges and reports. Returns the merged results on rank 0 and this
/// rank's own elsewhere.
pub fn measure_ranks(m: &mut dyn super::Measurement, a: &super::MeasureArgs) -> Result<Results> {
    let session = crate::mpirun::Session::init(false)?;
    let rank = session.rank();
    let mut ra = a.clone();
    ra.json = None;
    ra.csv = None;
    ra.markdown = None;
    let outcome = super::drive(m, &ra);
    let all_ok = session.end(outcome.is_ok());
    let (mine, own) = match outcome {
        Ok(r) => (Ok(r.clone()), Some(r)),
        Err(e) => (Err(format!("{e:#}")), None),
    };
    let gathered = session.gather(&crate::mpirun::Outcome {
        rank: rank as u32,
        host: session.host.clone(),
        result: mine,
    });
    let Some(all) = gathered else {
        session.finish();
        return match own {
            Some(r) if all_ok => Ok(r),
            _ => {
                // Rank 0 reports which rank failed and why; the exit status says it here.
                drop(session);
                std::process::exit(1)
            }
        };
    };
    let merged = crate::mpirun::merge_outcomes(all).and_then(|m| {
        super::emit(&m, a)?;
        Ok(m)
    });
    if let Err(e) = &merged {
        // Said before the last synchronisation: once the others exit, the launcher may end
        // this rank too.
        fsbench_base::errln!("fsbench: {}", fsbench_base::exit::render(e));
        session.finish();
        drop(session);
        std::process::exit(1);
    }
    session.finish();
    merged
}
