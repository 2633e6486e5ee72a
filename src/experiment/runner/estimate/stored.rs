//! Runs measured earlier in the output directory's results database: a cell whose command,
//! target and cache state were measured before (the same plan resumed, or an earlier
//! experiment in that database) takes as long as they took.

use super::super::{stored_command, Cell};
use crate::experiment::plan::Plan;
use std::collections::BTreeMap;
use std::path::Path;

/// The mean seconds of the successful runs stored in `outdir` for each cell (by index into
/// `cells`) that was measured before.
pub(super) fn means(plan: &Plan, cells: &[Cell], outdir: &Path) -> BTreeMap<usize, f64> {
    let mut out = BTreeMap::new();
    let path = outdir.join(crate::experiment::store::FILE);
    if !path.is_file() {
        return out;
    }
    let Ok(db) =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return out;
    };
    let Ok(mut q) = db.prepare(
        "SELECT AVG(runs.elapsed_s) FROM runs JOIN cells ON cells.id = runs.cell_id \
         WHERE cells.command_json = ?1 AND cells.target = ?2 AND cells.cache = ?3 \
         AND runs.status = 'ok'",
    ) else {
        return out;
    };
    for (i, c) in cells.iter().enumerate() {
        let cmd = serde_json::json!(stored_command(plan, c)).to_string();
        let mean = q
            .query_row([cmd.as_str(), c.target.as_str(), c.cache.as_str()], |r| {
                r.get::<_, Option<f64>>(0)
            })
            .ok()
            .flatten();
        if let Some(s) = mean {
            out.insert(i, s);
        }
    }
    out
}
