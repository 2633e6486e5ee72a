//! The headline figures of each measurement kind: what `fsbench results`, the summary and
//! the report lead with, and what an adaptive plan's repetitions converge on (the first).
//! A plan may choose others per measurement (`figures = [...]`), from what the kind
//! produces ([`produces`]).

/// The headline figures of a kind (its name in a plan), most important first.
pub fn headline(kind: &str) -> &'static [&'static str] {
    match kind {
        "postmark" => &["transactions_per_s", "total_s"],
        "andrew" => &[
            "total_s",
            "cpu_user_s",
            "cpu_sys_s",
            "mkdir_s",
            "copy_s",
            "stat_s",
            "scan_s",
            "compile_s",
        ],
        "build" => &["elapsed_s", "user_s", "system_s", "compile_s", "link_s"],
        "find" => &["elapsed_s", "entries_per_s"],
        "read" => &["elapsed_s", "mb_per_s"],
        "layout" => &["score", "fragments"],
        "hot" => &["read_mb_per_s", "overwrite_mb_per_s"],
        "scan" => &["elapsed_s", "entries_per_s"],
        "prune" => &[
            "elapsed_s",
            "user_s",
            "system_s",
            "freed_bytes",
            "files_deleted",
        ],
        // Workloads and trace replays: Filebench's own summary figures.
        _ => &["ops_per_s", "mb_per_s", "p99_ms"],
    }
}

/// Whole-run figures of every run's results (`fsbench ... --json`, read as `Results`).
/// `device_busy_s` and `device_util` come with runs on a block device, `cpu_busy_pct` with
/// runs that measured the machine's CPU over their window.
pub const RUN_FIGURES: [&str; 13] = [
    "ops_per_s",
    "mb_per_s",
    "mean_latency_ms",
    "p99_ms",
    "read_ops_per_s",
    "write_ops_per_s",
    "cpu_user_s",
    "cpu_sys_s",
    "duration_s",
    "errors",
    "device_busy_s",
    "device_util",
    "cpu_busy_pct",
];

/// `fsbench layout`'s numbers: the Smith–Seltzer score, split files and cross-file locality.
const LAYOUT_FIGURES: &[&str] = &[
    "elapsed_s",
    "files",
    "scored_files",
    "blocks",
    "contiguous",
    "pairs",
    "score",
    "extents",
    "fragments",
    "unwritten_extents",
    "errors",
    "split_files",
    "split_flex_files",
    "split_checked_files",
    "locality",
    "locality_pairs",
    "locality_contiguous",
];

/// `fsbench hot`'s numbers: the hot files, and each phase's time and rate.
const HOT_FIGURES: &[&str] = &[
    "files",
    "bytes",
    "read_s",
    "read_mb_per_s",
    "overwrite_s",
    "overwrite_mb_per_s",
    "elapsed_s",
];

/// The whole-run figures a kind produces beyond [`RUN_FIGURES`] (its named `figures`, or for
/// layout and scan their JSON's numbers).
pub fn produces(kind: &str) -> &'static [&'static str] {
    match kind {
        "postmark" => &[
            "transactions_per_s",
            "transactions",
            "transactions_s",
            "total_s",
            "create_s",
            "delete_s",
            "created",
            "created_per_s",
            "created_alone",
            "created_alone_per_s",
            "created_mixed",
            "created_mixed_per_s",
            "deleted",
            "deleted_per_s",
            "deleted_alone",
            "deleted_alone_per_s",
            "deleted_mixed",
            "deleted_mixed_per_s",
            "read",
            "read_per_s",
            "appended",
            "appended_per_s",
            "bytes_read",
            "bytes_written",
            "read_mb_per_s",
            "written_mb_per_s",
        ],
        "andrew" => &[
            "total_s",
            "mkdir_s",
            "copy_s",
            "stat_s",
            "scan_s",
            "compile_s",
        ],
        "build" => &[
            "elapsed_s",
            "user_s",
            "system_s",
            "compile_s",
            "link_s",
            "sources",
        ],
        "find" => &["elapsed_s", "entries", "entries_per_s", "files", "dirs"],
        "read" => &["elapsed_s", "bytes", "files", "files_per_s", "mb_per_s"],
        "layout" => LAYOUT_FIGURES,
        "hot" => HOT_FIGURES,
        "scan" => &[
            "elapsed_s",
            "entries",
            "entries_per_s",
            "files",
            "dirs",
            "symlinks",
            "bytes",
            "allocated_bytes",
            "errors",
            "per_user.user_s",
            "per_user.system_s",
            "per_user.workers",
            "per_user.users",
        ],
        "prune" => &[
            "elapsed_s",
            "user_s",
            "system_s",
            "files_deleted",
            "bytes_deleted",
            "freed_bytes",
            "skipped_changed",
            "skipped_missing",
            "delete_errors",
        ],
        // On a block device (image, disk): what the device read in the measured window, and
        // the share of the read flowops' bytes it did not have to read (the page cache's);
        // with `cache_stat`, the share of the pages read that the cache held (any target).
        "workload" => &["device_read_mb", "cache_hit_pct", "read_hit_pct"],
        _ => &[],
    }
}

/// Whether `kind` produces the whole-run figure `name`. A workload of several processes
/// also produces `process.NAME.mb_per_s` and `process.NAME.share` for each.
pub fn known(kind: &str, name: &str) -> bool {
    let run_json = !matches!(kind, "layout" | "scan");
    let process = kind == "workload"
        && name.strip_prefix("process.").is_some_and(|r| {
            r.strip_suffix(".mb_per_s")
                .or(r.strip_suffix(".share"))
                .is_some_and(|n| !n.is_empty())
        });
    // A run on a simulated remote: what crossed its network (ignored elsewhere).
    let remote = REMOTE_FIGURES.contains(&name);
    process || remote || produces(kind).contains(&name) || (run_json && RUN_FIGURES.contains(&name))
}

/// Every figure name `kind` produces, for an error message.
pub fn known_list(kind: &str) -> String {
    let mut v: Vec<&str> = produces(kind).to_vec();
    if !matches!(kind, "layout" | "scan") {
        for f in RUN_FIGURES {
            if !v.contains(&f) {
                v.push(f);
            }
        }
    }
    v.join(", ")
}

/// Order figure names: the headline ones first, in their order, then the rest as given.
pub fn lead<'a>(headline: &[String], names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut all: Vec<&str> = names.collect();
    all.sort_by_key(|n| headline.iter().position(|h| h == n).unwrap_or(usize::MAX));
    all
}

/// The figures of a run's remote traffic (`remote.NAME`), for plans' `figures`.
pub const REMOTE_FIGURES: [&str; 12] = [
    "remote.bytes_fetched",
    "remote.bytes_sent",
    "remote.foreign_cache_drops",
    "remote.late_pct",
    "remote.lookaside_bytes",
    "remote.lookaside_hits",
    "remote.lookaside_misses",
    "remote.lost_requests",
    "remote.model_s",
    "remote.network_wait_s",
    "remote.requests",
    "remote.round_trips",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_headline_figure_is_produced() {
        for k in [
            "workload", "replay", "postmark", "andrew", "build", "find", "read", "layout", "scan",
            "prune",
        ] {
            for h in headline(k) {
                assert!(known(k, h), "{k}: {h}");
            }
        }
        assert!(!known("layout", "ops_per_s"));
        assert!(known("workload", "process.reader1.share"));
        assert!(known("workload", "process.reader2.mb_per_s"));
        assert!(!known("workload", "process..share"));
        assert!(!known("postmark", "process.reader1.share"));
        assert!(known("workload", "device_util"));
        assert!(known_list("find").contains("entries_per_s"));
    }

    #[test]
    fn headline_figures_lead() {
        let h = vec!["b".to_string(), "a".to_string()];
        assert_eq!(
            lead(&h, ["x", "a", "y", "b"].into_iter()),
            ["b", "a", "x", "y"]
        );
    }
}
