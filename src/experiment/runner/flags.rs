//! What a run's results and its device say about whether it measured what its cell says:
//! the run flags (`runs.flags_json`) the runner stores beside each run.

use crate::experiment::output::Output;
use crate::experiment::plan::DeviceWork;
use crate::experiment::plan::Kind;
use crate::experiment::store::{CacheServed, DeviceIdle, RunFlags};

/// Why the run ended before its duration: the engine's own account (`ended_early`), or for
/// results written without it, a duration more than 2% short of the one asked for (with
/// the note that says why, when there is one).
///
/// A workload that ends as it is written to (a finish flowop, its threads finishing) in a
/// measurement that sets no `duration` is not flagged: its own run time is only a bound
/// (the aging plan's read-once reads each file once, under `run 600`).
pub(super) fn ended_early(results: &Output, asked_s: Option<f64>) -> Option<String> {
    // A layout or a scan runs until it has seen the whole tree.
    let r = results.results()?;
    if let Some(why) = &r.ended_early {
        let by_design =
            why.starts_with("finish flowop") || why.starts_with("the workload's threads finished");
        return (asked_s.is_some() || !by_design).then(|| why.clone());
    }
    let ran = r.duration_s;
    let asked = asked_s?;
    if ran >= asked * 0.98 {
        return None;
    }
    let note = r.notes.iter().find(|n| n.starts_with("run ended early"));
    Some(match note {
        Some(n) => format!("{n} (ran {ran:.3} s of {asked} s)"),
        None => format!("ran {ran:.3} s of {asked} s"),
    })
}

/// The bytes the measurement says it read: its read operations' bytes (a workload's read
/// flowops, PostMark's reads, `read`'s files), or a `bytes` figure.
pub(super) fn measured_read_bytes(results: &Output) -> u64 {
    results
        .results()
        .map_or(0, fsbench_results::stats::Results::measured_read_bytes)
}

/// `cache_served` when the device read less than `share` of what the measurement read.
/// Only a measurement that reports what it read is judged (a `find` reads metadata only).
pub(super) fn cache_served(device: u64, measured: u64, share: f64) -> Option<CacheServed> {
    if measured == 0 || device as f64 >= share * measured as f64 {
        return None;
    }
    Some(CacheServed {
        device_read_bytes: device,
        measured_read_bytes: measured,
        threshold: share,
    })
}

/// What a cold cell's run had dropped, by whom and when.
pub(super) fn cold_description(kind: Kind) -> String {
    let what = fsbench_engine::engine::COLD_DROP;
    match kind {
        Kind::Layout | Kind::Scan => {
            format!("{what}, by the runner right before the child started (it takes no --cold)")
        }
        Kind::Workload => {
            format!("{what}, by the child (--cold) after its layout, right before the measurement")
        }
        _ => format!(
            "{what}, by the child (--cold) after its preparation, right before the measurement"
        ),
    }
}

/// The flags of a run that succeeded.
pub(super) struct Facts<'a> {
    pub(super) kind: Kind,
    pub(super) cache: &'a str,
    pub(super) warmed: bool,
    pub(super) asked_s: Option<f64>,
    /// Whether the device's reads are judged (a cold cell, or an image or disk target).
    pub(super) judge_device: bool,
    /// The device's reads over the measured window, when known.
    pub(super) device_read_bytes: Option<u64>,
    pub(super) share: f64,
    /// What the device must do, when the measurement says (and the cell is judged).
    pub(super) device_work: Option<DeviceWork>,
}

impl Facts<'_> {
    pub(super) fn flags(&self, results: &Output) -> RunFlags {
        let device = results
            .results()
            .and_then(|r| r.device_read_bytes)
            .or(self.device_read_bytes);
        let cache_served = match device {
            Some(d) if self.judge_device => {
                cache_served(d, measured_read_bytes(results), self.share)
            }
            _ => None,
        };
        RunFlags {
            ended_early: ended_early(results, self.asked_s),
            cache_served,
            warmed: self.warmed && self.cache == "warm",
            cold: (self.cache == "cold").then(|| cold_description(self.kind)),
            caches_dropped_elsewhere: results.results().and_then(|r| r.caches_dropped_elsewhere),
            device_idle: self.device_work.and_then(|w| device_idle(results, w)),
        }
    }
}

/// `device_idle` when the run's device was busy less than `w.busy_min` of its window, or
/// the page cache served more than `w.cache_hit_max` percent of what it read. A run without
/// a device's figures over its measured window (no block device under it) is not judged.
pub(super) fn device_idle(results: &Output, w: DeviceWork) -> Option<DeviceIdle> {
    let r = results.results()?;
    let util = r
        .device_busy_s
        .filter(|_| r.duration_s > 0.0)
        .map(|b| b / r.duration_s);
    let hit = r.cache_hit_pct();
    let idle = matches!((util, w.busy_min), (Some(u), Some(m)) if u < m);
    let cached = matches!((hit, w.cache_hit_max), (Some(h), Some(m)) if h > m);
    (idle || cached).then_some(DeviceIdle {
        device_util: util,
        cache_hit_pct: hit,
        asked: w,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_results::stats::Results;
    use serde_json::json;
    use std::path::Path;

    /// A run's output as `f` sets it.
    fn run(f: impl FnOnce(&mut Results)) -> Output {
        let mut r = Results::new("w", "w", 1, Path::new("/x"));
        f(&mut r);
        Output::Run(Box::new(r))
    }

    fn ended(why: &str, ran: f64) -> Output {
        run(|r| {
            r.ended_early = Some(why.into());
            r.duration_s = ran;
        })
    }

    fn noted(note: &str, ran: f64) -> Output {
        run(|r| {
            r.notes.push(note.into());
            r.duration_s = ran;
        })
    }

    fn ran(s: f64) -> Output {
        run(|r| r.duration_s = s)
    }

    #[test]
    fn ended_early_from_the_engine_notes_or_duration() {
        let v = ended("fileset exhausted: flowop x, after 1.5 s of 2 s", 1.5);
        assert!(ended_early(&v, Some(2.0))
            .unwrap()
            .starts_with("fileset exhausted"));
        let v = noted("run ended early: the file system is full", 1.0);
        assert!(ended_early(&v, Some(2.0)).unwrap().contains("full"));
        // An alldone run whose one thread ran out of files while the others ran the time.
        let v = noted("run ended early: flowop x could not obtain a file", 2.0);
        assert_eq!(ended_early(&v, Some(2.0)), None);
        assert_eq!(
            ended_early(&ran(1.0), Some(2.0)).unwrap(),
            "ran 1.000 s of 2 s"
        );
        assert_eq!(ended_early(&ran(1.99), Some(2.0)), None);
        assert_eq!(ended_early(&ran(0.3), None), None);
        let fin = ended("finish flowop f is done, after 0.4 s of 600 s", 0.4);
        assert_eq!(
            ended_early(&fin, None),
            None,
            "the workload ends as written"
        );
        assert!(
            ended_early(&fin, Some(2.0)).is_some(),
            "the plan asked for 2 s"
        );
        let ex = ended("fileset exhausted: flowop c, after 0.4 s of 600 s", 0.4);
        assert!(ended_early(&ex, None).is_some());
    }

    #[test]
    fn cache_served_below_the_share() {
        let flowop = |class: &str, bytes: u64| -> fsbench_results::stats::FlowopResult {
            serde_json::from_value(json!({
                "name": "f", "type": class, "io_class": class, "ops": 1, "ops_per_s": 1.0,
                "bytes": bytes, "mb_per_s": 0.0, "errors": 0, "no_resource": 0,
                "latency_us": {"mean": 1.0, "min": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0,
                    "p99": 1.0, "p99_9": 1.0, "p99_99": 1.0, "max": 1.0}
            }))
            .unwrap()
        };
        let v = run(|r| {
            r.flowops = vec![
                flowop("read", 800),
                flowop("write", 5000),
                flowop("read", 200),
            ]
        });
        assert_eq!(measured_read_bytes(&v), 1000);
        let bytes = |b: f64| run(|r| _ = r.figures.insert("bytes".into(), b));
        assert_eq!(measured_read_bytes(&bytes(42.0)), 42);
        assert!(cache_served(400, 1000, 0.5).is_some());
        assert!(cache_served(500, 1000, 0.5).is_none());
        assert!(
            cache_served(0, 0, 0.5).is_none(),
            "nothing read, nothing judged"
        );
        let f = Facts {
            kind: Kind::Read,
            cache: "warm",
            warmed: true,
            asked_s: None,
            judge_device: true,
            device_read_bytes: Some(4096),
            share: 0.5,
            device_work: None,
        };
        let flags = f.flags(&run(|r| {
            r.figures.insert("bytes".into(), 1.0e8);
            r.duration_s = 1.0;
        }));
        assert!(flags.warmed && flags.cold.is_none() && flags.ended_early.is_none());
        assert_eq!(flags.cache_served.unwrap().device_read_bytes, 4096);
    }

    #[test]
    fn device_idle_below_the_busy_share_or_above_the_cache_share() {
        let w = DeviceWork {
            busy_min: Some(0.5),
            cache_hit_max: Some(50.0),
        };
        let with = |busy: Option<f64>, dev_read: Option<u64>| {
            run(|r| {
                r.duration_s = 10.0;
                r.device_busy_s = busy;
                r.device_read_bytes = dev_read;
                r.figures.insert("bytes".into(), 1000.0);
            })
        };
        // Busy 8 of 10 s, the device read 900 of 1000 bytes: the device did the work.
        assert_eq!(device_idle(&with(Some(8.0), Some(900)), w), None);
        let idle = device_idle(&with(Some(2.0), Some(900)), w).unwrap();
        assert_eq!(idle.device_util, Some(0.2));
        let cached = device_idle(&with(Some(8.0), Some(100)), w).unwrap();
        assert_eq!(cached.cache_hit_pct, Some(90.0));
        // No block device under the run: nothing to judge.
        assert_eq!(device_idle(&with(None, None), w), None);
        let busy_only = DeviceWork {
            cache_hit_max: None,
            ..w
        };
        assert_eq!(device_idle(&with(Some(8.0), Some(0)), busy_only), None);
    }
}
