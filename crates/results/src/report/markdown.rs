//! Markdown: a table per run, for reports and issue trackers.

use super::Exporter;
use crate::stats::Results;
use std::fmt::Write;

pub struct Markdown;

impl Exporter for Markdown {
    fn render(&self, r: &Results) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "### {} ({:.1} s, {}, {} on {})\n",
            text(&r.workload),
            r.duration_s,
            fsbench_base::units::count(r.threads, "thread"),
            text(&r.host.fs_type),
            text(&r.host.device)
        );
        let _ = writeln!(o, "| flowop | type | ops/s | MB/s | mean µs | p50 µs | p99 µs | p99.9 µs | max µs | CPU µs/op | errors |");
        let _ = writeln!(o, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for f in &r.flowops {
            let l = &f.latency_us;
            let _ = writeln!(
                o,
                "| {} | {} | {:.0} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
                cell(&f.name),
                cell(&f.kind),
                f.ops_per_s,
                f.mb_per_s,
                l.mean,
                l.p50,
                l.p99,
                l.p99_9,
                l.max,
                f.cpu_us_per_op,
                f.errors
            );
        }
        let s = &r.summary;
        let _ = writeln!(
            o,
            "\n**IO summary:** {} ops, {:.1} ops/s, {:.1} MB/s, {:.3} ms/op, {:.1} µs CPU/op",
            s.ops, s.ops_per_s, s.mb_per_s, s.mean_latency_ms, s.cpu_us_per_op
        );
        if !r.figures.is_empty() {
            let _ = writeln!(o, "\n| figure | value | ± 95% | CV |\n|---|---:|---:|---:|");
            for (k, v) in &r.figures {
                let reps: Vec<f64> = r
                    .repetitions
                    .iter()
                    .filter_map(|p| p.figures.get(k).copied())
                    .collect();
                if reps.len() > 1 {
                    let sp = crate::stats::repeat::spread(&reps);
                    let _ = writeln!(
                        o,
                        "| {} | {:.4} | {:.4} | {:.1}% |",
                        cell(k),
                        sp.mean,
                        sp.ci95,
                        sp.cv * 100.0
                    );
                } else {
                    let _ = writeln!(o, "| {} | {v:.4} | | |", cell(k));
                }
            }
        }
        o
    }
}

/// Text for a line of Markdown (a heading): backslashes, `|`, `*`, backquotes, `<`, `>` and
/// `&` escaped, line breaks made spaces, so that a name shows as
/// written and cannot open an HTML tag or end the line early.
pub fn text(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' | '`' | '*' | '|' => {
                o.push('\\');
                o.push(c);
            }
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    o.push(' ');
                }
            }
            '\n' => o.push(' '),
            c if c.is_control() => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// Text for a table cell: as [`text`] (a `|` escaped cannot end the cell, a line break
/// cannot end the row).
pub fn cell(s: &str) -> String {
    text(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_break_the_table() {
        assert_eq!(cell("a|b"), "a\\|b");
        assert_eq!(cell("<script>x</script>"), "&lt;script&gt;x&lt;/script&gt;");
        assert_eq!(cell("two\nlines\r\nhere"), "two lines here");
        assert_eq!(cell("read_file*1"), "read_file\\*1");
        assert_eq!(cell("a\\|b"), "a\\\\\\|b");
    }
}
