//! fio's log files (`write_bw_log`, `write_lat_log`, `write_iops_log`), one set per clone,
//! named as fio names them: `PREFIX_bw.N.log`, `PREFIX_iops.N.log`, `PREFIX_slat.N.log`,
//! `PREFIX_clat.N.log`, `PREFIX_lat.N.log` (N the clone's `thread_number`). Each line is
//! `time (ms), value, direction, block size, priority`, with the offset before the priority
//! under `log_offset`, as fio 3.33 writes them.

use crate::stats::fiojob::LogEntry;
use crate::stats::Results;
use std::fmt::Write as _;

/// The lines of a log; `rt`: the job's I/O priority class is realtime (`prioclass=1`),
/// which fio 3.33 writes as 1 in the last column (`ioprio_value_is_class_rt`), 0 else.
fn lines(entries: &[LogEntry], offset: bool, rt: bool) -> String {
    let mut o = String::with_capacity(entries.len() * 24);
    let p = u8::from(rt);
    for e in entries {
        if offset {
            let _ = writeln!(
                o,
                "{}, {}, {}, {}, {}, {p}",
                e.t_ms, e.value, e.dir, e.bs, e.offset
            );
        } else {
            let _ = writeln!(o, "{}, {}, {}, {}, {p}", e.t_ms, e.value, e.dir, e.bs);
        }
    }
    o
}

/// The log files of a run: (file name, text), in clone order.
pub fn files(r: &Results) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut clones: Vec<_> = r.fio_jobs.iter().collect();
    clones.sort_by_key(|c| c.thread_number);
    for c in clones {
        let Some(l) = &c.logs else { continue };
        for (kind, name) in c.out.log_files() {
            let e = match kind {
                "bw" => &l.bw,
                "iops" => &l.iops,
                "slat" => &l.slat,
                "clat" => &l.clat,
                _ => &l.lat,
            };
            out.push((name, lines(e, c.out.log_offset, c.out.prio_rt)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_fios() {
        let e = LogEntry {
            t_ms: 500,
            value: 38080,
            dir: 0,
            bs: 4096,
            offset: 61440,
        };
        assert_eq!(lines(&[e], false, false), "500, 38080, 0, 4096, 0\n");
        assert_eq!(lines(&[e], true, false), "500, 38080, 0, 4096, 61440, 0\n");
        // A realtime job (prioclass=1): 1 in the last column, as fio 3.33.
        assert_eq!(lines(&[e], false, true), "500, 38080, 0, 4096, 1\n");
    }
}
