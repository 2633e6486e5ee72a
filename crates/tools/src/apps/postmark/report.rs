//! PostMark's reports (verbose and terse, as PostMark prints them) and its named figures.

use super::{slowest, Config, Counters, Outcome, Times};
use std::fmt::Write as _;

/// Every figure PostMark's report prints, by name (rates per second, MB = 2^20 bytes).
pub fn figures(c: &Counters, t: &Times) -> Vec<(&'static str, f64)> {
    let total = t.total();
    let ts = t.transactions_s;
    let mixed_created = c.created - c.created_alone;
    let mixed_deleted = c.deleted - c.deleted_alone;
    vec![
        ("total_s", total),
        ("create_s", t.create_s),
        ("transactions_s", ts),
        ("delete_s", t.delete_s),
        ("transactions", c.transactions_done as f64),
        ("transactions_per_s", rate(c.transactions_done, ts)),
        ("created", c.created as f64),
        ("created_per_s", rate(c.created, total)),
        ("created_alone", c.created_alone as f64),
        ("created_alone_per_s", rate(c.created_alone, t.create_s)),
        ("created_mixed", mixed_created as f64),
        ("created_mixed_per_s", rate(mixed_created, ts)),
        ("read", c.read as f64),
        ("read_per_s", rate(c.read, ts)),
        ("appended", c.appended as f64),
        ("appended_per_s", rate(c.appended, ts)),
        ("deleted", c.deleted as f64),
        ("deleted_per_s", rate(c.deleted, total)),
        ("deleted_alone", c.deleted_alone as f64),
        ("deleted_alone_per_s", rate(c.deleted_alone, t.delete_s)),
        ("deleted_mixed", mixed_deleted as f64),
        ("deleted_mixed_per_s", rate(mixed_deleted, ts)),
        ("bytes_read", c.bytes_read as f64),
        ("bytes_written", c.bytes_written as f64),
        (
            "read_mb_per_s",
            c.bytes_read as f64 / total.max(1e-9) / 1048576.0,
        ),
        (
            "written_mb_per_s",
            c.bytes_written as f64 / total.max(1e-9) / 1048576.0,
        ),
    ]
}

/// Bytes as PostMark prints them (MB = 1024 KB), with the exact count beside.
fn scaled(b: u64) -> String {
    let f = b as f64;
    let s = if f / 1048576.0 > 1.0 {
        format!("{:.2} megabytes", f / 1048576.0)
    } else if b >= 1024 {
        format!("{:.2} kilobytes", f / 1024.0)
    } else {
        format!("{b} bytes")
    };
    format!("{s} ({b} bytes)")
}

fn rate(n: u64, s: f64) -> f64 {
    n as f64 / s.max(1e-9)
}

/// PostMark's verbose report, with sub-second times and the exact byte counts.
pub fn verbose_report(cfg: &Config, c: &Counters, t: &Times) -> String {
    let mut o = String::new();
    let total = t.total();
    let mixed_created = c.created - c.created_alone;
    let mixed_deleted = c.deleted - c.deleted_alone;
    let _ = writeln!(o, "Time:");
    let _ = writeln!(o, "\t{total:.3} seconds total");
    let _ = writeln!(
        o,
        "\t{:.3} seconds of transactions ({:.1} per second)",
        t.transactions_s,
        rate(c.transactions_done, t.transactions_s)
    );
    let _ = writeln!(o, "\nFiles:");
    let _ = writeln!(
        o,
        "\t{} created ({:.1} per second)",
        c.created,
        rate(c.created, total)
    );
    let _ = writeln!(
        o,
        "\t\tCreation alone: {} files ({:.1} per second)",
        c.created_alone,
        rate(c.created_alone, t.create_s)
    );
    let _ = writeln!(
        o,
        "\t\tMixed with transactions: {} files ({:.1} per second)",
        mixed_created,
        rate(mixed_created, t.transactions_s)
    );
    let _ = writeln!(
        o,
        "\t{} read ({:.1} per second)",
        c.read,
        rate(c.read, t.transactions_s)
    );
    let _ = writeln!(
        o,
        "\t{} appended ({:.1} per second)",
        c.appended,
        rate(c.appended, t.transactions_s)
    );
    let _ = writeln!(
        o,
        "\t{} deleted ({:.1} per second)",
        c.deleted,
        rate(c.deleted, total)
    );
    let _ = writeln!(
        o,
        "\t\tDeletion alone: {} files ({:.1} per second)",
        c.deleted_alone,
        rate(c.deleted_alone, t.delete_s)
    );
    let _ = writeln!(
        o,
        "\t\tMixed with transactions: {} files ({:.1} per second)",
        mixed_deleted,
        rate(mixed_deleted, t.transactions_s)
    );
    let _ = writeln!(o, "\nData:");
    let _ = writeln!(
        o,
        "\t{} read ({:.2} MB/s)",
        scaled(c.bytes_read),
        c.bytes_read as f64 / total.max(1e-9) / 1048576.0
    );
    let _ = writeln!(
        o,
        "\t{} written ({:.2} MB/s)",
        scaled(c.bytes_written),
        c.bytes_written as f64 / total.max(1e-9) / 1048576.0
    );
    let _ = cfg;
    o
}

/// PostMark's terse one-line report (same fields, sub-second times).
pub fn terse_report(cfg: &Config, c: &Counters, t: &Times) -> String {
    let total = t.total().max(1e-9);
    let ts = t.transactions_s.max(1e-9);
    format!(
        "{:.3} {:.3} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2}\n",
        total,
        t.transactions_s,
        cfg.transactions as f64 / ts,
        c.created as f64 / total,
        c.created_alone as f64 / t.create_s.max(1e-9),
        (c.created - c.created_alone) as f64 / ts,
        c.read as f64 / ts,
        c.appended as f64 / ts,
        c.deleted as f64 / total,
        c.deleted_alone as f64 / t.delete_s.max(1e-9),
        (c.deleted - c.deleted_alone) as f64 / ts,
        c.bytes_read as f64 / total,
        c.bytes_written as f64 / total,
    )
}

/// The report of one run: PostMark's (for the totals), then per instance, then fsbench's
/// per-operation table.
pub fn report(cfg: &Config, out: &Outcome) -> String {
    let mut o = String::new();
    let n = out.per_instance.len();
    // Totals over instances; times are the wall-clock span of the slowest instance.
    let t = slowest(&out.per_instance.iter().map(|x| x.1).collect::<Vec<_>>());
    if cfg.terse {
        o.push_str(&terse_report(cfg, &out.totals, &t));
    } else {
        if n > 1 {
            let _ = writeln!(o, "All {n} instances (phase times of the slowest):");
        }
        o.push_str(&verbose_report(cfg, &out.totals, &t));
    }
    if n > 1 {
        let _ = writeln!(o, "\nPer instance:");
        let _ = writeln!(
            o,
            "{:>8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>12} {:>12}",
            "instance",
            "total s",
            "trans/s",
            "created",
            "read",
            "appended",
            "deleted",
            "bytes read",
            "bytes wr"
        );
        for (i, (c, t)) in out.per_instance.iter().enumerate() {
            let _ = writeln!(
                o,
                "{:>8} {:>9.3} {:>9.1} {:>8} {:>8} {:>8} {:>8} {:>12} {:>12}",
                i,
                t.total(),
                rate(c.transactions_done, t.transactions_s),
                c.created,
                c.read,
                c.appended,
                c.deleted,
                c.bytes_read,
                c.bytes_written
            );
        }
    }
    if out.totals.out_of_files {
        let _ = writeln!(
            o,
            "out of files!\nFor this workload, either increase the number of files or\ndecrease the number of transactions."
        );
    }
    o.push('\n');
    o
}
