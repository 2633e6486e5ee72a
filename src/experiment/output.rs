//! What a measurement's child writes with `--json`, read back once, where the runner reads
//! it, into the types the commands write it from: [`Results`] for `fsbench run` and the
//! application benchmarks, [`LayoutReport`] for `layout`, [`ScanSummary`] for `scan`. The
//! runner, the run flags and the store read their fields. The JSON is stored as the child
//! wrote it, with the runner's `experiment` record (and `remote` traffic) beside its fields.

use crate::experiment::plan::Kind;
use anyhow::{Context, Result};
use fsbench_engine::layout::LayoutReport;
use fsbench_engine::scan::ScanSummary;
use fsbench_results::stats::Results;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A child's output, one variant per kind of output.
#[derive(Debug)]
pub enum Output {
    Run(Box<Results>),
    Layout(Box<LayoutReport>),
    Scan(Box<ScanSummary>),
}

/// What crossed a simulated remote's network during a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RemoteTraffic {
    pub requests: u64,
    pub round_trips: u64,
    pub bytes_fetched: u64,
    pub bytes_sent: u64,
    pub lookaside_hits: u64,
    pub lookaside_misses: u64,
    pub lookaside_bytes: u64,
    pub network_wait_s: f64,
    pub lost_requests: u64,
    /// Emptyings of the client cache the run did not make itself.
    pub foreign_cache_drops: u64,
    pub late_pct: f64,
    /// The seconds the modelled network charges for this traffic: its round trips × the
    /// round-trip time, plus the bytes fetched and sent ÷ the bandwidth (the network the run
    /// ran at). Beside the measured time it shows how much of a run the model accounts for.
    #[serde(default)]
    pub model_s: f64,
}

impl RemoteTraffic {
    /// Its figures, named `remote.FIELD`, in name order.
    /// The seconds `net` charges for this traffic (see `model_s`).
    pub fn model_time(&self, net: &fsbench_tools::remote::model::Net) -> f64 {
        self.round_trips as f64 * net.rtt_s + net.wire_time(self.bytes_fetched + self.bytes_sent)
    }

    pub fn figures(&self) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = [
            ("bytes_fetched", self.bytes_fetched as f64),
            ("bytes_sent", self.bytes_sent as f64),
            ("foreign_cache_drops", self.foreign_cache_drops as f64),
            ("late_pct", self.late_pct),
            ("lookaside_bytes", self.lookaside_bytes as f64),
            ("lookaside_hits", self.lookaside_hits as f64),
            ("lookaside_misses", self.lookaside_misses as f64),
            ("lost_requests", self.lost_requests as f64),
            ("model_s", self.model_s),
            ("network_wait_s", self.network_wait_s),
            ("requests", self.requests as f64),
            ("round_trips", self.round_trips as f64),
        ]
        .into_iter()
        .map(|(k, v)| (format!("remote.{k}"), v))
        .collect();
        out.retain(|(_, v)| v.is_finite());
        out
    }
}

/// A child's output as the runner read it, and the JSON that is stored for it.
#[derive(Debug)]
pub struct ChildOutput {
    pub output: Output,
    /// What crossed a simulated remote's network, when the target is one.
    pub remote: Option<RemoteTraffic>,
    /// The child's JSON, with what the runner adds beside its fields.
    pub json: Value,
}

impl Output {
    /// Read what a measurement of `kind` wrote.
    pub fn read(kind: Kind, json: &Value) -> Result<Output> {
        let what = match kind {
            Kind::Layout => "a layout report (fsbench layout --json)",
            Kind::Scan => "a scan summary (fsbench scan --json)",
            _ => "results (fsbench run --json)",
        };
        let read = || -> serde_json::Result<Output> {
            Ok(match kind {
                Kind::Layout => Output::Layout(Box::new(LayoutReport::deserialize(json)?)),
                Kind::Scan => Output::Scan(Box::new(ScanSummary::deserialize(json)?)),
                _ => Output::Run(Box::new(Results::deserialize(json)?)),
            })
        };
        read().with_context(|| format!("the measurement's JSON is not {what}"))
    }

    /// The results, for a run or an application benchmark.
    pub fn results(&self) -> Option<&Results> {
        match self {
            Output::Run(r) => Some(r),
            _ => None,
        }
    }

    /// Whether the measurement says it was interrupted.
    pub fn interrupted(&self) -> bool {
        self.results().is_some_and(|r| r.interrupted)
    }

    /// A layout's or a scan's figures: its numbers, by field name (in name order, as
    /// `fsbench results` lists them).
    pub fn tree_figures(&self) -> Vec<(&'static str, f64)> {
        let mut out: Vec<(&'static str, f64)> = match self {
            Output::Run(_) => Vec::new(),
            Output::Layout(l) => vec![
                ("block_size", l.block_size as f64),
                ("elapsed_s", l.elapsed_s),
                ("files", l.files as f64),
                ("scored_files", l.scored_files as f64),
                ("blocks", l.blocks as f64),
                ("contiguous", l.contiguous as f64),
                ("pairs", l.pairs as f64),
                ("extents", l.extents as f64),
                ("fragments", l.fragments as f64),
                ("unwritten_extents", l.unwritten_extents as f64),
                ("unknown_extents", l.unknown_extents as f64),
                ("inline_extents", l.inline_extents as f64),
                ("encoded_extents", l.encoded_extents as f64),
                ("shared_extents", l.shared_extents as f64),
                ("errors", l.errors as f64),
            ]
            .into_iter()
            .chain(l.score.map(|s| ("score", s)))
            .chain(l.split_files.map(|n| ("split_files", n as f64)))
            .chain(l.split_flex_files.map(|n| ("split_flex_files", n as f64)))
            .chain([
                ("split_checked_files", l.split_checked_files as f64),
                ("locality_pairs", l.locality_pairs as f64),
                ("locality_contiguous", l.locality_contiguous as f64),
            ])
            .chain(l.locality.map(|s| ("locality", s)))
            .collect(),
            Output::Scan(s) => vec![
                ("threads", s.threads as f64),
                ("elapsed_s", s.elapsed_s),
                ("entries", s.entries as f64),
                ("entries_per_s", s.entries_per_s),
                ("files", s.files as f64),
                ("dirs", s.dirs as f64),
                ("symlinks", s.symlinks as f64),
                ("other", s.other as f64),
                ("bytes", s.bytes as f64),
                ("allocated_bytes", s.allocated_bytes as f64),
                ("mount_points_skipped", s.mount_points_skipped as f64),
                ("errors", s.errors as f64),
                ("hashed_bytes", s.hashed_bytes as f64),
                ("hash_mb_per_s", s.hash_mb_per_s),
                ("hash_errors", s.hash_errors as f64),
            ]
            .into_iter()
            .chain(s.per_user.iter().flat_map(|p| {
                [
                    ("per_user.users", p.users as f64),
                    ("per_user.workers", p.workers as f64),
                    ("per_user.user_s", p.user_s),
                    ("per_user.system_s", p.system_s),
                ]
            }))
            .collect(),
        };
        // JSON has no NaN or infinity: such a figure was written as null, and is none.
        out.retain(|(_, v)| v.is_finite());
        out.sort_by(|a, b| a.0.cmp(b.0));
        out
    }
}

impl ChildOutput {
    /// Read the JSON a measurement of `kind` wrote.
    pub fn read(kind: Kind, json: Value) -> Result<ChildOutput> {
        Ok(ChildOutput {
            output: Output::read(kind, &json)?,
            remote: None,
            json,
        })
    }

    /// Put the runner's record of the run (and the remote's traffic) beside the child's
    /// fields, in what is stored.
    pub fn add_records(&mut self, remote: Option<RemoteTraffic>, experiment: Value) {
        if let Some(o) = self.json.as_object_mut() {
            if let Some(r) = &remote {
                o.insert(
                    "remote".into(),
                    serde_json::to_value(r).expect("plain numbers"),
                );
            }
            o.insert("experiment".into(), experiment);
        }
        self.remote = remote;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_charges_round_trips_and_bytes() {
        let t = RemoteTraffic {
            round_trips: 10,
            bytes_fetched: 100_000,
            bytes_sent: 25_000,
            ..Default::default()
        };
        let net = fsbench_tools::remote::model::Net::preset("100kbit").unwrap();
        // 10 × 300 ms + 125,000 bytes × 8 ÷ 100 kbit/s = 3 s + 10 s.
        assert!((t.model_time(&net) - 13.0).abs() < 1e-9);
        let names: Vec<String> = t.figures().into_iter().map(|(k, _)| k).collect();
        assert_eq!(names, crate::experiment::headline::REMOTE_FIGURES);
    }
}
