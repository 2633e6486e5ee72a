//! A workload cell's cost from its workload as the child will run it (the plan's `-s`
//! variables applied): the filesets it lays out, and, for a workload that ends by its own
//! counts (`finishoncount`, as the aging plan's seq-write.f and read-once.f), the work of
//! its flowops until then on the target's device.

use super::rates::{Speed, CACHE_BPS, META_S};
use crate::experiment::plan::{Arg, Kind, Measurement};
use fsbench_model::model::{Cost, Flowop, FlowopKind, Workload};

/// What a workload run costs besides its measured duration.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct WorkloadCost {
    /// Seconds to lay out its filesets, and the bytes the layout leaves in the page cache.
    pub layout_s: f64,
    pub dirty_bytes: f64,
    /// Files the layout makes (deleted when the run ends).
    pub files: f64,
    /// Seconds until its counts are reached, for a workload that ends by itself.
    pub counted_s: Option<f64>,
    /// The run time the workload itself gives (`run N`).
    pub run_s: Option<f64>,
    /// Filesets kept for the next run of the same workload (`reuse`): laid out by the first
    /// run on a target only. What names them, and their layout's seconds and bytes.
    pub reused: Option<(String, f64, f64)>,
}

/// The workload of measurement `m` with parameter `values`, as the child loads it.
fn load(m: &Measurement, values: &[(String, String)]) -> Option<Workload> {
    let spec = values
        .iter()
        .find(|(k, _)| matches!(m.kind.param(k), Some((_, _, Arg::Positional, _))))?;
    let mut vars: Vec<(String, String)> = values
        .iter()
        .filter(|(k, _)| m.kind.param(k).is_none())
        .cloned()
        .collect();
    // `idle+1ms` and the like take the I/O scheduler's idle window at run time; before the
    // device is there, BFQ's default.
    fsbench_base::sys::iosched::resolve_sets(&mut vars, || {
        Ok(fsbench_base::sys::iosched::IdleWindow {
            us: fsbench_base::sys::iosched::BFQ_DEFAULT_IDLE_US,
            source: "BFQ's default".into(),
        })
    })
    .ok()?;
    fsbench_model::workloads::load(
        &fsbench_model::workloads::Source::named(&spec.1),
        &fsbench_model::model::build::Overrides(vars),
    )
    .ok()
    .map(|(w, _)| w)
}

/// The cost of a run of workload measurement `m` with `values` on a device of `speed`;
/// `cold`: it reads what it laid out from the device.
pub(super) fn cost(
    m: &Measurement,
    values: &[(String, String)],
    speed: &Speed,
    cold: bool,
) -> Option<WorkloadCost> {
    if m.kind != Kind::Workload {
        return None;
    }
    let w = load(m, values)?;
    let mut c = WorkloadCost {
        run_s: w.run_seconds.map(|s| s as f64),
        ..WorkloadCost::default()
    };
    for f in &w.filesets {
        let entries = if f.is_file { 1.0 } else { f.entries as f64 };
        let files = entries * f.prealloc.min(100) as f64 / 100.0;
        let bytes = files * f.size.mean(&w.randvars).max(0.0);
        let dirs = match (f.leafdirs, f.dirwidth) {
            (0, 0) => 1.0,
            (0, w) => (entries / w as f64).ceil(),
            (l, _) => l as f64,
        };
        let layout_s = (files + dirs) * speed.meta_s + bytes / CACHE_BPS;
        if f.reuse {
            let r = c.reused.get_or_insert_with(|| (w.name.clone(), 0.0, 0.0));
            r.0 += &format!(" {}:{files}x{bytes}", f.name);
            r.1 += layout_s;
            r.2 += bytes;
            continue;
        }
        c.layout_s += layout_s;
        c.dirty_bytes += bytes;
        c.files += files;
    }
    if m.ends_by_itself {
        c.counted_s = counted(&w, speed, cold);
    }
    Some(c)
}

/// Seconds the workload's threads take to reach their finish counts, their device work
/// added up (they share one device).
fn counted(w: &Workload, speed: &Speed, cold: bool) -> Option<f64> {
    let mut total = None;
    for p in &w.processes {
        for t in &p.threads {
            let Some(rounds) = rounds_to_finish(w, &t.flowops) else {
                continue;
            };
            let per = Pass::new(w, speed, cold).flowops(&t.flowops);
            let copies = (p.instances.max(1) * t.instances.max(1)) as f64;
            *total.get_or_insert(0.0) += rounds * per * copies;
        }
    }
    total
}

/// Passes of a thread's flowop list until its `finishoncount` (or `finishonbytes`) is
/// reached: the limit over what one pass adds to the count it watches.
fn rounds_to_finish(w: &Workload, flowops: &[Flowop]) -> Option<f64> {
    let rv = &w.randvars;
    let fin = flowops.iter().find(|f| f.kind.def().finishes)?;
    let limit = fin.value.mean(rv).max(0.0);
    let watched = flowops
        .iter()
        .filter(|f| fin.target.as_deref().is_none_or(|t| f.name == t));
    let per: f64 = if fin.kind == FlowopKind::FinishOnBytes {
        watched
            .map(|f| f.iters.mean(rv).max(1.0) * bytes_of(w, flowops, f))
            .sum()
    } else {
        watched.map(|f| f.iters.mean(rv).max(1.0)).sum()
    };
    (per > 0.0).then(|| (limit / per).ceil().max(1.0))
}

/// The fileset `f` works on: its own, or the one of the flowop in `list` that opened its
/// file descriptor.
fn fileset_of(list: &[Flowop], f: &Flowop) -> Option<usize> {
    f.fileset.or_else(|| {
        list.iter()
            .find(|o| o.fd.is_some() && o.fd == f.fd && o.fileset.is_some())?
            .fileset
    })
}

/// Bytes one operation of `f` (of the flowop list `list`) moves: its `iosize`, or its
/// fileset's file size for whole-file operations (and when it gives no `iosize`).
fn bytes_of(w: &Workload, list: &[Flowop], f: &Flowop) -> f64 {
    let rv = &w.randvars;
    let file = fileset_of(list, f)
        .and_then(|i| w.filesets.get(i))
        .map_or(0.0, |fs| fs.size.mean(rv).max(0.0));
    match f.iosize.mean(rv) {
        x if x > 0.0 && !f.kind.def().whole_file => x,
        _ => file,
    }
}

/// One pass of a flowop list: the seconds of each operation, the bytes written since the
/// last fsync carried to it.
struct Pass<'a> {
    w: &'a Workload,
    speed: &'a Speed,
    cold: bool,
    dirty: f64,
}

impl<'a> Pass<'a> {
    fn new(w: &'a Workload, speed: &'a Speed, cold: bool) -> Self {
        Pass {
            w,
            speed,
            cold,
            dirty: 0.0,
        }
    }

    fn flowops(&mut self, flowops: &[Flowop]) -> f64 {
        flowops
            .iter()
            .map(|f| f.iters.mean(&self.w.randvars).max(1.0) * self.one(flowops, f))
            .sum()
    }

    /// Seconds of one operation of `f`, one of the flowop list `list`, by its cost class.
    fn one(&mut self, list: &[Flowop], f: &Flowop) -> f64 {
        let s = self.speed;
        match f.kind.def().cost {
            Cost::MetaUpdate => s.meta_s,
            Cost::MetaLookup => META_S,
            Cost::ReadBytes => {
                let rate = if self.cold { s.read_bps } else { CACHE_BPS };
                bytes_of(self.w, list, f) / rate
            }
            Cost::WriteBytes => {
                let b = bytes_of(self.w, list, f);
                if f.dsync || f.directio {
                    b / s.write_bps + s.access_s
                } else {
                    self.dirty += b;
                    b / CACHE_BPS
                }
            }
            Cost::Flush => std::mem::take(&mut self.dirty) / s.write_bps + s.fsync_s,
            Cost::SleepMicros => f.value.mean(&self.w.randvars).max(0.0) / 1e6,
            Cost::SleepSeconds => f.value.mean(&self.w.randvars).max(0.0),
            Cost::Children => self.flowops(&f.children),
            Cost::Free => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measurement(workload: &str) -> Measurement {
        let (w, _) = fsbench_model::workloads::load(
            &fsbench_model::workloads::Source::named(workload),
            &fsbench_model::model::build::Overrides::default(),
        )
        .unwrap();
        Measurement {
            name: "m".into(),
            kind: Kind::Workload,
            params: Vec::new(),
            factors: Vec::new(),
            figures: Vec::new(),
            ends_by_itself: w.ends_by_itself(),
            device_work: None,
            cache_blind: None,
        }
    }

    fn plans(f: &str) -> String {
        format!("{}/plans/{f}", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn a_counted_write_costs_its_files_fsyncs_and_bytes() {
        let m = measurement(&plans("seq-write.f"));
        let speed = Speed::disk(
            &fsbench_tools::disk::model::DiskParams::preset("hdd-m2694es").unwrap(),
            false,
            true,
        );
        let v = |n: &str, size: &str| {
            vec![
                ("workload".to_string(), plans("seq-write.f")),
                ("nfiles".to_string(), n.to_string()),
                ("filesize".to_string(), size.to_string()),
            ]
        };
        // Measured on the aging plan's quick runs: 64 files of 16 KiB in 3.0 s, one of
        // 16 MiB in 3.3 s.
        let small = cost(&m, &v("64", "16k"), &speed, true).unwrap();
        let big = cost(&m, &v("1", "16m"), &speed, true).unwrap();
        let (s, b) = (small.counted_s.unwrap(), big.counted_s.unwrap());
        assert!((2.0..4.5).contains(&s), "{small:?}");
        assert!((2.5..5.0).contains(&b), "{big:?}");
        // Nothing laid out: the run makes its files.
        assert_eq!(small.dirty_bytes, 0.0);
    }

    #[test]
    fn a_counted_read_lays_out_then_reads_from_the_device_when_cold() {
        let m = measurement(&plans("read-once.f"));
        let speed = Speed::disk(
            &fsbench_tools::disk::model::DiskParams::preset("hdd-m2694es").unwrap(),
            false,
            true,
        );
        let v = vec![
            ("workload".to_string(), plans("read-once.f")),
            ("nfiles".to_string(), "1".to_string()),
            ("filesize".to_string(), "16m".to_string()),
        ];
        let cold = cost(&m, &v, &speed, true).unwrap();
        let warm = cost(&m, &v, &speed, false).unwrap();
        assert_eq!(cold.dirty_bytes, 16.0 * 1024.0 * 1024.0);
        // Measured: 2.9 s to read 16 MiB from hdd-m2694es.
        assert!((2.5..4.0).contains(&cold.counted_s.unwrap()), "{cold:?}");
        assert!(warm.counted_s.unwrap() < 0.1, "{warm:?}");
    }

    #[test]
    fn a_timed_workload_has_no_counted_end() {
        let m = measurement("varmail");
        let v = vec![
            ("workload".to_string(), "varmail".to_string()),
            ("nfiles".to_string(), "200".to_string()),
        ];
        let c = cost(&m, &v, &Speed::host(false, true), false).unwrap();
        assert_eq!(c.counted_s, None);
        assert!(c.files > 100.0 && c.files <= 200.0, "{c:?}");
    }
}
