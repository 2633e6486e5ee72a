//! What each cell's runs ran under, as the runner recorded it: the I/O scheduler of the
//! target's device, the share of the machine's CPU kept busy, the device's utilisation and
//! the page cache's share of the reads, and how many runs were flagged `device_idle` (the
//! measurement's `device_work` not met). Shown beside the cell's figures, so that a
//! throughput is read with what limited it. A cold cell whose reads the page cache served
//! all the same (above [`COLD_HIT_PCT`]) is marked: the measurement read what it had
//! written itself while measuring (PostMark's pool, a create-then-read workload), or read
//! a small set of files over and over, so dropping the caches before it changed little and
//! the cell is cold in name only.

use super::CellRow;
use crate::experiment::store::{RunFlags, Store};
use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct Conditions {
    pub cell: usize,
    pub factors: BTreeMap<String, String>,
    /// The schedulers the runs' devices ran under (each once, as recorded per run).
    pub schedulers: Vec<String>,
    /// Means over the cell's successful runs, where they have the figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_busy_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_util: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_hit_pct: Option<f64>,
    /// Runs flagged `device_idle`, and what their measurement asked of the device.
    pub device_idle: usize,
    /// A cold (or remounted) cell whose reads the page cache served more than
    /// [`COLD_HIT_PCT`] percent of, on average: dropping the caches changed little.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cold_in_name_only: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_work: Option<crate::experiment::plan::DeviceWork>,
    pub runs: usize,
}

const FIGURES: [&str; 3] = ["cpu_busy_pct", "device_util", "cache_hit_pct"];

/// The page cache's share of a cold cell's reads (percent, mean over its runs) above which
/// the cell is cold in name only. Read-ahead and metadata make a truly cold run's share far
/// lower; a run that reads back what it wrote in the same window sits near 100.
pub const COLD_HIT_PCT: f64 = 90.0;

/// One row per cell with successful runs.
pub(super) fn read(st: &Store, cells: &[CellRow]) -> Result<Vec<Conditions>> {
    let mut runs_q = st.db.prepare(
        "SELECT id, json_extract(applied_json, '$.scheduler.active'), flags_json FROM runs WHERE cell_id = ?1 AND status = 'ok' AND superseded = 0",
    )?;
    let mut figs_q = st.db.prepare(
        "SELECT figure, value FROM figures WHERE run_id = ?1 AND flowop = '' AND figure IN ('cpu_busy_pct', 'device_util', 'cache_hit_pct')",
    )?;
    let mut out = Vec::new();
    for cell in cells {
        let runs: Vec<(i64, Option<String>, String)> = runs_q
            .query_map([cell.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        if runs.is_empty() {
            continue;
        }
        let mut c = Conditions {
            cell: cell.idx,
            factors: cell.factors.clone(),
            schedulers: Vec::new(),
            cpu_busy_pct: None,
            device_util: None,
            cache_hit_pct: None,
            device_idle: 0,
            cold_in_name_only: false,
            device_work: None,
            runs: runs.len(),
        };
        let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
        for (id, sched, flags) in &runs {
            if let Some(s) = sched.as_ref().filter(|s| !c.schedulers.contains(s)) {
                c.schedulers.push(s.clone());
            }
            let flags: RunFlags = serde_json::from_str(flags).unwrap_or_default();
            if let Some(d) = flags.device_idle {
                c.device_idle += 1;
                c.device_work = Some(d.asked);
            }
            for row in figs_q.query_map([id], |r| Ok((r.get::<_, String>(0)?, r.get(1)?)))? {
                let (k, v): (String, f64) = row?;
                let e = sums.entry(k).or_default();
                *e = (e.0 + v, e.1 + 1);
            }
        }
        let mean = |k: &str| sums.get(k).map(|(s, n)| s / *n as f64);
        (c.cpu_busy_pct, c.device_util, c.cache_hit_pct) =
            (mean(FIGURES[0]), mean(FIGURES[1]), mean(FIGURES[2]));
        c.cold_in_name_only = cold_in_name_only(&c.factors, c.cache_hit_pct);
        out.push(c);
    }
    Ok(out)
}

/// The cell's conditions as a line of `fsbench results` ("" when nothing was recorded).
pub fn line(c: &Conditions) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !c.schedulers.is_empty() {
        parts.push(format!("I/O scheduler {}", c.schedulers.join(" and ")));
    }
    if let Some(v) = c.cpu_busy_pct {
        parts.push(format!("machine CPU {v:.0}% busy"));
    }
    if let Some(v) = c.device_util {
        parts.push(format!("device {:.0}% busy", v * 100.0));
    }
    if let Some(v) = c.cache_hit_pct {
        parts.push(format!("page cache served {v:.0}% of reads"));
    }
    let mut text = if parts.is_empty() {
        String::new()
    } else {
        format!("  ran under: {}", parts.join(", "))
    };
    if let Some(idle) = idle_text(c) {
        text.push_str(&format!("\n  [DEVICE IDLE: {idle}]"));
    }
    if let Some(cold) = cold_text(c) {
        text.push_str(&format!("\n  [COLD IN NAME ONLY: {cold}]"));
    }
    text
}

/// Whether a cell at these factors whose reads the page cache served `hit` percent of is
/// cold in name only: its `cache` level is cold (or remount) and `hit` is above
/// [`COLD_HIT_PCT`].
pub fn cold_in_name_only(factors: &BTreeMap<String, String>, hit: Option<f64>) -> bool {
    let cold = matches!(
        factors.get("cache").map(String::as_str),
        Some("cold" | "remount")
    );
    cold && hit.is_some_and(|h| h > COLD_HIT_PCT)
}

/// Why a cold cell is cold in name only, in words; `None` when it is not.
pub fn cold_text(c: &Conditions) -> Option<String> {
    if !c.cold_in_name_only {
        return None;
    }
    let cache = c.factors.get("cache").map_or("cold", String::as_str);
    Some(format!(
        "cache={cache}, yet the page cache served {:.0}% of its reads (over {COLD_HIT_PCT:.0}%): it read what it had written or read before within the measurement, so the cold start changed little of what was measured",
        c.cache_hit_pct.unwrap_or(0.0)
    ))
}

/// The cell's runs flagged `device_idle`, in words; `None` without any.
pub fn idle_text(c: &Conditions) -> Option<String> {
    if c.device_idle == 0 {
        return None;
    }
    let asked = c.device_work.map_or(String::new(), |w| {
        let mut a = Vec::new();
        if let Some(b) = w.busy_min {
            a.push(format!("busy at least {:.0}%", b * 100.0));
        }
        if let Some(h) = w.cache_hit_max {
            a.push(format!("page cache at most {h:.0}% of reads"));
        }
        format!(" (asked: device {})", a.join(", "))
    });
    Some(format!(
        "{} of {} run(s){asked}: the device did not do the study's work; the figures are kept",
        c.device_idle, c.runs
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_what_limited_the_runs() {
        let mut c = Conditions {
            cell: 1,
            factors: BTreeMap::new(),
            schedulers: vec!["none".into()],
            cpu_busy_pct: Some(97.4),
            device_util: Some(0.123),
            cache_hit_pct: None,
            device_idle: 0,
            cold_in_name_only: false,
            device_work: None,
            runs: 3,
        };
        assert_eq!(
            line(&c),
            "  ran under: I/O scheduler none, machine CPU 97% busy, device 12% busy"
        );
        c.device_idle = 2;
        c.device_work = Some(crate::experiment::plan::DeviceWork {
            busy_min: Some(0.5),
            cache_hit_max: None,
        });
        assert!(line(&c).ends_with(
            "[DEVICE IDLE: 2 of 3 run(s) (asked: device busy at least 50%): the device did not do the study's work; the figures are kept]"
        ));
    }

    #[test]
    fn a_cold_cell_served_from_cache_is_cold_in_name_only() {
        let at = |cache: &str| BTreeMap::from([("cache".to_string(), cache.to_string())]);
        assert!(cold_in_name_only(&at("cold"), Some(98.6)));
        assert!(cold_in_name_only(&at("remount"), Some(91.0)));
        assert!(!cold_in_name_only(&at("cold"), Some(90.0)));
        assert!(!cold_in_name_only(&at("cold"), None));
        assert!(!cold_in_name_only(&at("warm"), Some(100.0)));
        assert!(!cold_in_name_only(&BTreeMap::new(), Some(100.0)));
    }
}
