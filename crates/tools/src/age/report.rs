//! The report of one `fsbench age` run: what it did, where the population ended up against
//! its profile, and the layout before and after.

use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::exec::{self, WritebackPolicy};
use super::plan::{Distances, Phase};
use fsbench_base::units::human_bytes_u64;
use fsbench_base::walk::WalkOptions;
use fsbench_engine::layout::{LayoutError, LayoutReport};

/// Layout facts before or after aging.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LayoutFacts {
    pub files: u64,
    pub scored_files: u64,
    pub blocks: u64,
    pub fragments: u64,
    /// Smith–Seltzer aggregate score; `None` without multi-block files.
    pub score: Option<f64>,
    /// Files per number of fragments (log2 buckets: 1, 2-3, 4-7, ...).
    pub fragments_per_file: Vec<fsbench_engine::scan::summary::Log2Row>,
    /// Files with data in another allocation group than their directory (`None` without
    /// the file system's geometry), of the files compared.
    #[serde(default)]
    pub split_files: Option<u64>,
    #[serde(default)]
    pub split_checked_files: u64,
    /// ext4 with flex_bg: files with data in another flex group than their directory.
    #[serde(default)]
    pub split_flex_files: Option<u64>,
    /// Cross-file locality of a whole-tree read in directory order.
    #[serde(default)]
    pub locality: Option<f64>,
}

impl From<&LayoutReport> for LayoutFacts {
    fn from(r: &LayoutReport) -> Self {
        LayoutFacts {
            files: r.files,
            scored_files: r.scored_files,
            blocks: r.blocks,
            fragments: r.fragments,
            score: r.score,
            fragments_per_file: r.fragments_per_file.clone(),
            split_files: r.split_files,
            split_flex_files: r.split_flex_files,
            split_checked_files: r.split_checked_files,
            locality: r.locality,
        }
    }
}

/// The report of one `fsbench age` run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgeReport {
    pub schema_version: u32,
    pub fsbench_version: String,
    pub dir: String,
    /// "profile" or "replay".
    pub mode: String,
    pub profile: Option<String>,
    pub seed: u64,
    /// When written data reached the allocator, and how often the journal was committed.
    pub writeback: WritebackPolicy,
    /// The CPU the aging thread was held on (one thread only; see `sys::cpu`).
    pub cpu: Option<usize>,
    /// Operations per simulated day, and the days aging has run in all (its clock ÷ that).
    pub day_ops: u64,
    pub days: f64,
    /// The live files the last 30 days wrote (profile aging): what the hot-file benchmark
    /// reads and overwrites.
    pub recent: Option<Recent>,
    pub target_fill: f64,
    /// Whether the aged directory existed (aging continued).
    pub continued: bool,
    pub elapsed_s: f64,
    /// File operations (mkdirs not counted).
    pub ops: u64,
    pub ops_per_s: f64,
    /// Operations after the target fullness was reached.
    pub churn_ops: u64,
    pub phase: Phase,
    pub counts: exec::ExecCounts,
    pub bytes_written: u64,
    pub live_files: u64,
    pub live_bytes: u64,
    /// Usage as aging modelled it (the target it steers by) and the target.
    pub model_used_bytes: u64,
    pub target_used_bytes: u64,
    pub fullness_start: f64,
    pub fullness_end: f64,
    pub capacity_bytes: u64,
    pub distances: Option<Distances>,
    /// The live population against the profile, bucket by bucket.
    pub distributions: Option<super::plan::Distributions>,
    pub threshold: f64,
    pub converged: bool,
    pub interrupted: bool,
    pub layout_before: Option<LayoutFacts>,
    pub layout_after: Option<LayoutFacts>,
    /// Why the layout score is missing, if it is.
    pub layout_note: Option<String>,
}

/// Live files written in the last days of an aging.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recent {
    pub days: u64,
    pub files: u64,
    pub bytes: u64,
}

/// The writeback policy in words, for the text report.
fn writeback_text(r: &AgeReport) -> String {
    use super::exec::Writeback::*;
    let w = r.writeback;
    let mut s = match w.policy {
        Range => "range (each write written back and waited for at once)".to_string(),
        Fsync => "fsync (each file after each write)".to_string(),
        Syncfs => "syncfs (only at the commits)".to_string(),
        None => "none (the kernel's own writeback)".to_string(),
    };
    if matches!(w.policy, Range | Syncfs) && w.commit_every > 0 {
        s += &format!(", commit every {} operations", w.commit_every);
    }
    if let Some(c) = r.cpu {
        s += &format!(", on CPU {c}");
    }
    s
}

/// Layout of the aged directory; `Err(note)` where FIEMAP is unsupported.
pub(super) fn layout_of(dir: &Path) -> Result<LayoutFacts, String> {
    let opts = WalkOptions::default();
    match fsbench_engine::layout::layout(dir, &opts, true, 0) {
        Ok(r) => Ok(LayoutFacts::from(&r)),
        Err(e) => match e.downcast_ref::<LayoutError>() {
            Some(LayoutError::Unsupported { fs, .. }) => Err(format!(
                "FIEMAP is not supported on {fs}: no layout score here"
            )),
            _ => Err(format!("layout failed: {e:#}")),
        },
    }
}

fn fmt_score(s: Option<f64>) -> String {
    s.map(|v| format!("{v:.4}")).unwrap_or_else(|| "-".into())
}

impl fsbench_base::export::report::Report for AgeReport {
    fn write_text(&self, mut out: &mut dyn Write) -> io::Result<()> {
        print_report(self, &mut out)
    }
}

/// Print the report as text.
pub fn print_report(r: &AgeReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "aged {} ({})", r.dir, r.mode)?;
    if let Some(p) = &r.profile {
        writeln!(out, "  profile            {p}, seed {}", r.seed)?;
    }
    writeln!(out, "  writeback          {}", writeback_text(r))?;
    writeln!(
        out,
        "  operations         {} in {:.1} s ({:.0}/s), {} after reaching the target",
        r.ops, r.elapsed_s, r.ops_per_s, r.churn_ops
    )?;
    writeln!(
        out,
        "  days               {:.1} of {} operations{}",
        r.days,
        r.day_ops,
        r.recent
            .as_ref()
            .map(|x| format!(
                "; the last {} wrote {} live files, {}",
                x.days,
                x.files,
                human_bytes_u64(x.bytes)
            ))
            .unwrap_or_default()
    )?;
    let c = &r.counts;
    writeln!(
        out,
        "                     creates {} appends {} overwrites {} deletes {} mkdirs {} rmdirs {} fsyncs {}",
        c.creates, c.appends, c.overwrites, c.deletes, c.mkdirs, c.rmdirs, c.fsyncs
    )?;
    if c.enospc > 0 || c.errors > 0 {
        writeln!(
            out,
            "                     out-of-space writes {} errors {}",
            c.enospc, c.errors
        )?;
    }
    writeln!(
        out,
        "  bytes written      {}",
        human_bytes_u64(r.bytes_written)
    )?;
    writeln!(
        out,
        "  live               {} files, {}",
        r.live_files,
        human_bytes_u64(r.live_bytes)
    )?;
    writeln!(
        out,
        "  fullness           {:.1}% -> {:.1}% of {} (target {:.0}%)",
        r.fullness_start * 100.0,
        r.fullness_end * 100.0,
        human_bytes_u64(r.capacity_bytes),
        r.target_fill * 100.0
    )?;
    if let Some(d) = &r.distances {
        writeln!(
            out,
            "  distance (TV/KS)   size {:.3}/{:.3}  depth {:.3}/{:.3}{}",
            d.size.tv,
            d.size.ks,
            d.depth.tv,
            d.depth.ks,
            d.age
                .map(|a| format!("  age {:.3}/{:.3}", a.tv, a.ks))
                .unwrap_or_default()
        )?;
        writeln!(
            out,
            "  converged          {} (threshold {} total variation)",
            if r.converged { "yes" } else { "no" },
            r.threshold
        )?;
    }
    let l = |x: &Option<LayoutFacts>| {
        x.as_ref()
            .map(|l| {
                format!(
                    "{} ({} files, {} blocks, {} fragments), split files {}, locality {}",
                    fmt_score(l.score),
                    l.files,
                    l.blocks,
                    l.fragments,
                    l.split_files
                        .map_or("-".into(), |n| format!("{n} of {}", l.split_checked_files)),
                    fmt_score(l.locality)
                )
            })
            .unwrap_or_else(|| "-".into())
    };
    writeln!(out, "  layout score       before {}", l(&r.layout_before))?;
    writeln!(out, "                     after  {}", l(&r.layout_after))?;
    if let Some(n) = &r.layout_note {
        writeln!(out, "  note               {n}")?;
    }
    Ok(())
}

#[cfg(test)]
mod report_tests {
    use super::*;
    use crate::age::distance::Distance;
    use crate::age::plan::{Distribution, Distributions};
    use fsbench_engine::scan::summary::Log2Row;

    /// The HTML report reads aging reports into its own `report::html::Aging` (it stands
    /// below this module): what it reads must be what this report writes.
    #[test]
    fn the_report_reads_what_an_aging_report_writes() {
        let facts = |score: Option<f64>, fragments: u64| LayoutFacts {
            files: 3,
            scored_files: 2,
            blocks: 9,
            fragments,
            score,
            fragments_per_file: vec![Log2Row {
                lo: 1,
                hi: 2,
                count: 3,
                sum: 3,
            }],
            split_files: Some(1),
            split_checked_files: 3,
            split_flex_files: None,
            locality: Some(0.5),
        };
        let dist = |n: &str| Distribution {
            buckets: vec![n.into(), "2".into()],
            target: vec![0.25, 0.75],
            actual: vec![0.5, 0.5],
            counts: vec![4, 4],
        };
        let d = |tv: f64| Distance { tv, ks: tv / 2.0 };
        let r = AgeReport {
            schema_version: 1,
            fsbench_version: "0".into(),
            dir: "/x".into(),
            mode: "profile".into(),
            profile: Some("agrawal".into()),
            seed: 1,
            writeback: WritebackPolicy {
                policy: super::exec::Writeback::Range,
                commit_every: 1000,
            },
            cpu: Some(0),
            day_ops: 100,
            days: 3.0,
            recent: None,
            target_fill: 0.5,
            continued: false,
            elapsed_s: 1.5,
            ops: 300,
            ops_per_s: 200.0,
            churn_ops: 100,
            phase: Phase::Churn,
            counts: Default::default(),
            bytes_written: 1,
            live_files: 8,
            live_bytes: 1,
            model_used_bytes: 1,
            target_used_bytes: 1,
            fullness_start: 0.1,
            fullness_end: 0.45,
            capacity_bytes: 1,
            distances: Some(crate::age::plan::Distances {
                size: d(0.1),
                depth: d(0.2),
                age: None,
            }),
            distributions: Some(Distributions {
                size: dist("1K"),
                depth: dist("0"),
                age: None,
            }),
            threshold: 0.1,
            converged: true,
            interrupted: false,
            layout_before: None,
            layout_after: Some(facts(Some(0.9), 12)),
            layout_note: None,
        };
        let text = serde_json::to_string(&r).unwrap();
        let a =
            fsbench_results::report::html::Aging::parse(&text).expect("read as an aging report");
        assert_eq!(a.profile.as_deref(), Some("agrawal"));
        assert_eq!(
            (a.fullness_start, a.fullness_end, a.target_fill),
            (Some(0.1), Some(0.45), Some(Some(0.5)))
        );
        assert_eq!(
            (a.ops, a.elapsed_s, a.converged),
            (Some(300.0), Some(1.5), Some(true))
        );
        let ds = a.distances.unwrap();
        assert_eq!(
            (ds.size.unwrap().tv, ds.depth.unwrap().tv),
            (Some(0.1), Some(0.2))
        );
        assert!(ds.age.is_none());
        let size = a.distributions.unwrap().size.unwrap();
        assert_eq!(size.buckets, ["1K", "2"]);
        assert_eq!(size.target, [Some(0.25), Some(0.75)]);
        assert_eq!(size.actual, [Some(0.5), Some(0.5)]);
        assert_eq!(size.counts, [4, 4]);
        assert!(a.layout_before.is_none());
        let after = a.layout_after.flatten().unwrap();
        assert_eq!((after.score, after.fragments), (Some(0.9), Some(12.0)));
        let row = &after.fragments_per_file[0];
        assert_eq!((row.lo, row.hi, row.count), (1, 2, 3));
        // And the report reads back into the aging code's own type.
        let back: AgeReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back.ops, 300);
    }
}
