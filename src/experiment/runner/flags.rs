//! What a run's results and its device say about whether it measured what its cell says:
//! the run flags (`runs.flags_json`) the runner stores beside each run.

use super::*;
use crate::experiment::store::{CacheServed, RunFlags};

/// Why the run ended before its duration: the engine's own account (`ended_early`), or for
/// results written without it, a duration more than 2% short of the one asked for (with
/// the note that says why, when there is one).
///
/// A workload that ends as it is written to (a finish flowop, its threads finishing) in a
/// measurement that sets no `duration` is not flagged: its own run time is only a bound
/// (the aging plan's read-once reads each file once, under `run 600`).
pub(super) fn ended_early(results: &Value, asked_s: Option<f64>) -> Option<String> {
    if let Some(why) = results.get("ended_early").and_then(|v| v.as_str()) {
        let by_design =
            why.starts_with("finish flowop") || why.starts_with("the workload's threads finished");
        return (asked_s.is_some() || !by_design).then(|| why.to_string());
    }
    let ran = results.get("duration_s").and_then(|d| d.as_f64())?;
    let asked = asked_s?;
    if ran >= asked * 0.98 {
        return None;
    }
    let notes = results.get("notes").and_then(|n| n.as_array());
    let note = notes
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str())
        .find(|n| n.starts_with("run ended early"));
    Some(match note {
        Some(n) => format!("{n} (ran {ran:.3} s of {asked} s)"),
        None => format!("ran {ran:.3} s of {asked} s"),
    })
}

/// The bytes the measurement says it read: its read operations' bytes (a workload's read
/// flowops, PostMark's reads, `read`'s files), or a `bytes` figure.
pub(super) fn measured_read_bytes(results: &Value) -> u64 {
    let from_flowops: u64 = results
        .get("flowops")
        .and_then(|f| f.as_array())
        .into_iter()
        .flatten()
        .filter(|f| f.get("io_class").and_then(|c| c.as_str()) == Some("read"))
        .filter_map(|f| f.get("bytes").and_then(|b| b.as_u64()))
        .sum();
    if from_flowops > 0 {
        return from_flowops;
    }
    results
        .get("figures")
        .and_then(|f| f.get("bytes"))
        .and_then(|b| b.as_f64())
        .map_or(0, |b| b as u64)
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
    let what = crate::engine::COLD_DROP;
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
}

impl Facts<'_> {
    pub(super) fn flags(&self, results: &Value) -> RunFlags {
        let device = results
            .get("device_read_bytes")
            .and_then(|b| b.as_u64())
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_early_from_the_engine_notes_or_duration() {
        let v = json!({"ended_early": "fileset exhausted: flowop x, after 1.5 s of 2 s", "duration_s": 1.5});
        assert!(ended_early(&v, Some(2.0))
            .unwrap()
            .starts_with("fileset exhausted"));
        let v = json!({"notes": ["run ended early: the file system is full"], "duration_s": 1.0});
        assert!(ended_early(&v, Some(2.0)).unwrap().contains("full"));
        // An alldone run whose one thread ran out of files while the others ran the time.
        let v = json!({"notes": ["run ended early: flowop x could not obtain a file"], "duration_s": 2.0});
        assert_eq!(ended_early(&v, Some(2.0)), None);
        assert_eq!(
            ended_early(&json!({"duration_s": 1.0}), Some(2.0)).unwrap(),
            "ran 1.000 s of 2 s"
        );
        assert_eq!(ended_early(&json!({"duration_s": 1.99}), Some(2.0)), None);
        assert_eq!(ended_early(&json!({"duration_s": 0.3}), None), None);
        let fin = json!({"ended_early": "finish flowop f is done, after 0.4 s of 600 s"});
        assert_eq!(
            ended_early(&fin, None),
            None,
            "the workload ends as written"
        );
        assert!(
            ended_early(&fin, Some(2.0)).is_some(),
            "the plan asked for 2 s"
        );
        let ex = json!({"ended_early": "fileset exhausted: flowop c, after 0.4 s of 600 s"});
        assert!(ended_early(&ex, None).is_some());
    }

    #[test]
    fn cache_served_below_the_share() {
        let v = json!({"flowops": [
            {"io_class": "read", "bytes": 800},
            {"io_class": "write", "bytes": 5000},
            {"io_class": "read", "bytes": 200}]});
        assert_eq!(measured_read_bytes(&v), 1000);
        assert_eq!(
            measured_read_bytes(&json!({"figures": {"bytes": 42.0}})),
            42
        );
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
        };
        let flags = f.flags(&json!({"figures": {"bytes": 1.0e8}, "duration_s": 1.0}));
        assert!(flags.warmed && flags.cold.is_none() && flags.ended_early.is_none());
        assert_eq!(flags.cache_served.unwrap().device_read_bytes, 4096);
    }
}
