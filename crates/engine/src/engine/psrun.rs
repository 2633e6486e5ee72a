//! `psrun [period]`: a per-flowop block printed every `period` seconds during the run, made
//! from the same interval samples as the time series (the run samples every `period` seconds
//! when the workload has `psrun`). A negative period (Filebench: "reset the statistics every
//! period") prints the same per-period figures; the final results always cover the whole run.

use fsbench_model::model::{IoClass, Workload};
use fsbench_results::stats::SeriesPoint;
use std::fmt::Write;

/// The block for one interval of `secs` seconds ending `at` seconds into the run.
pub fn block(wl: &Workload, p: &SeriesPoint, secs: f64) -> String {
    let at = p.t_s;
    let mut out = format!("{at:.3}: Per-Operation Breakdown (last {secs:.1} s)\n");
    let (mut ops, mut rd, mut wr, mut mb, mut lat) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for ((name, kind), f) in wl.stat_names.iter().zip(&p.flowops) {
        let n = f.ops_per_s * secs;
        let _ = writeln!(
            out,
            "{name:<20} {:>8.0}ops {:>8.0}ops/s {:>6.1}mb/s {:>8.3}ms/op",
            n,
            f.ops_per_s,
            f.mb_per_s,
            f.mean_us / 1000.0
        );
        match kind.io_class() {
            IoClass::None => continue,
            IoClass::Read => rd += f.ops_per_s,
            IoClass::Write => wr += f.ops_per_s,
            IoClass::Meta => {}
        }
        ops += f.ops_per_s;
        mb += f.mb_per_s;
        lat += f.mean_us * f.ops_per_s;
    }
    let _ = writeln!(
        out,
        "{at:.3}: IO Summary: {:.0} ops {ops:.3} ops/s {rd:.0}/{wr:.0} rd/wr {mb:.1}mb/s {:.3}ms/op",
        ops * secs,
        if ops > 0.0 { lat / ops / 1000.0 } else { 0.0 }
    );
    out
}
