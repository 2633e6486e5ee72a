//! Each process's share of the bytes a run moved: the proportional-share question ("two
//! readers with weights 1:2: does each get its share of the disk?") asked of any workload
//! with more than one `define process`.
//!
//! A process's bytes are those of the read and write flowops of its threads. Flowops of the
//! same name share their statistics across processes (as in Filebench), so a workload whose
//! processes share a flowop name cannot be split: it gets no shares.

use super::FlowopResult;
use fsbench_model::model::{Flowop, IoClass, Workload};
use serde::{Deserialize, Serialize};

/// One process's part of a run's transfer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProcessShare {
    /// The process's name (all its instances together).
    pub name: String,
    /// Bytes its read and write flowops moved.
    pub bytes: u64,
    /// Its bandwidth over the run, MiB/s (as a flowop's `mb_per_s`).
    pub mb_per_s: f64,
    /// Its bytes over all processes' bytes, 0 to 1.
    pub share: f64,
}

/// The statistics slots of the I/O flowops under `fs` (composites included).
fn io_stats(fs: &[Flowop], out: &mut Vec<usize>) {
    for f in fs {
        if matches!(f.kind.io_class(), IoClass::Read | IoClass::Write) && !out.contains(&f.stat) {
            out.push(f.stat);
        }
        io_stats(&f.children, out);
    }
}

/// Each process's share of the bytes of `flowops` (the run's results, indexed by statistics
/// slot) over `duration_s`; empty with fewer than two processes, when no bytes moved, or when
/// two processes share an I/O flowop's name.
pub fn process_shares(
    wl: &Workload,
    flowops: &[FlowopResult],
    duration_s: f64,
) -> Vec<ProcessShare> {
    if wl.processes.len() < 2 {
        return Vec::new();
    }
    let mut per: Vec<(String, Vec<usize>)> = Vec::new();
    for p in &wl.processes {
        let mut stats = Vec::new();
        for t in &p.threads {
            io_stats(&t.flowops, &mut stats);
        }
        if per.iter().any(|(_, s)| s.iter().any(|x| stats.contains(x))) {
            return Vec::new();
        }
        per.push((p.name.clone(), stats));
    }
    let bytes: Vec<(String, u64)> = per
        .into_iter()
        .map(|(n, s)| {
            (
                n,
                s.iter()
                    .filter_map(|&i| flowops.get(i))
                    .map(|f| f.bytes)
                    .sum(),
            )
        })
        .collect();
    shares_of(bytes, duration_s)
}

/// Shares from each process's bytes.
fn shares_of(bytes: Vec<(String, u64)>, duration_s: f64) -> Vec<ProcessShare> {
    let total: u64 = bytes.iter().map(|b| b.1).sum();
    if total == 0 {
        return Vec::new();
    }
    let d = duration_s.max(1e-9);
    bytes
        .into_iter()
        .map(|(name, b)| ProcessShare {
            name,
            bytes: b,
            mb_per_s: b as f64 / d / (1024.0 * 1024.0),
            share: b as f64 / total as f64,
        })
        .collect()
}

/// The shares of repeated runs: each process's bytes summed over them, over their summed
/// duration (as the flowops are combined).
pub fn combine(runs: &[&[ProcessShare]], duration_s: f64) -> Vec<ProcessShare> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    let bytes = first
        .iter()
        .map(|p| {
            let b = runs
                .iter()
                .filter_map(|r| r.iter().find(|q| q.name == p.name))
                .map(|q| q.bytes)
                .sum();
            (p.name.clone(), b)
        })
        .collect();
    shares_of(bytes, duration_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(text: &str) -> Workload {
        let src = fsbench_model::lang::SourceFile::new("t.f", text);
        let script = fsbench_model::lang::parse(&src).unwrap();
        fsbench_model::model::build::build(
            "t",
            &src,
            &script,
            &fsbench_model::model::build::Overrides(Vec::new()),
        )
        .unwrap()
    }

    fn flowop(name: &str, bytes: u64) -> FlowopResult {
        serde_json::from_value(serde_json::json!({
            "name": name, "type": "read", "io_class": "read", "ops": 1, "ops_per_s": 1.0,
            "bytes": bytes, "mb_per_s": 0.0, "errors": 0, "no_resource": 0,
            "latency_us": {"mean": 1.0, "min": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0,
                "p99": 1.0, "p99_9": 1.0, "p99_99": 1.0, "max": 1.0}
        }))
        .unwrap()
    }

    const TWO: &str = "define file name=a, path=/tmp, size=1m\n\
        define file name=b, path=/tmp, size=1m\n\
        define process name=p1 { thread name=t1 { flowop read name=r1, filename=a, iosize=64k\n\
        flowop think name=k1, value=10 } }\n\
        define process name=p2 { thread name=t2 { flowop read name=r2, filename=b, iosize=64k } }\n";

    #[test]
    fn each_process_gets_its_flowops_bytes() {
        let wl = workload(TWO);
        let mut fl: Vec<FlowopResult> = Vec::new();
        for (name, _) in &wl.stat_names {
            let b = match name.as_str() {
                "r1" => 1 << 20,
                "r2" => 2 << 20,
                _ => 0,
            };
            fl.push(flowop(name, b));
        }
        let s = process_shares(&wl, &fl, 2.0);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].name.as_str(), s[0].bytes), ("p1", 1 << 20));
        assert!((s[0].share - 1.0 / 3.0).abs() < 1e-9);
        assert!((s[1].share - 2.0 / 3.0).abs() < 1e-9);
        assert!((s[1].mb_per_s - 1.0).abs() < 1e-9);
        // Two runs of the same: the same shares, the rates over the summed time.
        let c = combine(&[&s, &s], 4.0);
        assert_eq!(c[1].bytes, 4 << 20);
        assert!((c[1].share - 2.0 / 3.0).abs() < 1e-9);
        assert!((c[1].mb_per_s - 1.0).abs() < 1e-9);
    }

    #[test]
    fn shared_flowop_names_or_one_process_give_no_shares() {
        let shared = TWO.replace("name=r2", "name=r1");
        let wl = workload(&shared);
        let fl: Vec<FlowopResult> = wl.stat_names.iter().map(|(n, _)| flowop(n, 10)).collect();
        assert!(process_shares(&wl, &fl, 1.0).is_empty());
        let one = workload(
            "define file name=a, path=/tmp, size=1m\n\
             define process name=p1 { thread name=t1 { flowop read name=r1, filename=a, iosize=64k } }\n",
        );
        let fl: Vec<FlowopResult> = one.stat_names.iter().map(|(n, _)| flowop(n, 10)).collect();
        assert!(process_shares(&one, &fl, 1.0).is_empty());
    }
}
