//! `fsbench diff OLD NEW`: how much of a new tree is identical, by content, to
//! an older one (the "files same / bytes same" table of source-tree version
//! studies), and how the rest splits into changed, added and removed files.
//!
//! Each side is a snapshot written by `scan --hash` or a directory, which is
//! then scanned with hashes first. Only regular files count.
//!
//! Given several OLD trees and one NEW (`fsbench diff OLD1 OLD2 ... NEW`), it
//! prints the commonality table of those studies: one row per OLD, its files
//! same and bytes same against NEW (Linux 2.4.17, 2.4.13, 2.4.9 and 2.4.0
//! against 2.4.18 in the lookaside-caching study).

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::Serialize;

use super::hash::HashAlgo;
use super::snapshot::{Kind, Snapshot};
use super::summary::{Log2Hist, Log2Row};
use fsbench_base::export::report::{text_beside, Displaced};
use fsbench_base::units::human_bytes_u64;
use fsbench_base::walk::{self, WalkOptions};

/// Arguments of `fsbench diff`.
#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The older tree or trees, then the newer one (OLD... NEW): each a snapshot from
    /// `scan --hash`, or a directory. Several OLDs print one row each against NEW.
    #[arg(value_name = "TREE", num_args = 2.., required = true)]
    pub trees: Vec<PathBuf>,
    /// Hash used to scan a side given as a directory (default: the snapshot's, else blake3).
    #[arg(long, value_name = "ALGO")]
    pub hash: Option<HashAlgo>,
    /// Worker threads for scanning directories (default: one per core).
    #[arg(short = 'j', long)]
    pub threads: Option<usize>,
    /// Write the comparison as JSON to this file ("-" for stdout, replacing the text).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the comparison as a Markdown table to this file ("-" for stdout, replacing the text).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

/// Files and bytes of one class, with their size distribution.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Class {
    pub files: u64,
    pub bytes: u64,
    /// File sizes in log2 buckets `[lo, hi)`.
    pub sizes: Vec<Log2Row>,
    #[serde(skip)]
    hist: Log2Hist,
}

impl Class {
    fn add(&mut self, size: u64) {
        self.files += 1;
        self.bytes += size;
        self.hist.add(size);
    }
    fn finish(&mut self) {
        self.sizes = self.hist.rows();
    }
}

/// The comparison of two trees.
#[derive(Debug, Serialize)]
pub struct DiffReport {
    pub old: String,
    pub new: String,
    pub hash: String,
    pub old_files: u64,
    pub old_bytes: u64,
    pub new_files: u64,
    pub new_bytes: u64,
    /// Files of NEW whose content equals that of some file of OLD (any path).
    pub identical: Class,
    /// Files of NEW identical to the file at the same path in OLD.
    pub same_path: Class,
    /// Files of NEW whose path exists in OLD with other content.
    pub changed: Class,
    /// Files of NEW whose path does not exist in OLD.
    pub added: Class,
    /// Added files whose content exists somewhere in OLD (moved or copied).
    pub added_known_content: Class,
    /// Files of OLD whose path does not exist in NEW (sizes from OLD).
    pub removed: Class,
    /// Files (of either side) stored without a hash (unreadable when scanned); never identical.
    pub unhashed: u64,
    /// `identical` as a share of NEW's files, percent.
    pub files_same_pct: f64,
    /// `identical` as a share of NEW's bytes, percent.
    pub bytes_same_pct: f64,
}

/// The commonality of several OLD trees with one NEW: a row per OLD.
#[derive(Debug, Serialize)]
pub struct DiffTable {
    pub new: String,
    pub hash: String,
    pub new_files: u64,
    pub new_bytes: u64,
    pub rows: Vec<TableRow>,
}

/// One OLD tree against NEW.
#[derive(Debug, Serialize)]
pub struct TableRow {
    pub old: String,
    pub old_files: u64,
    pub old_bytes: u64,
    /// Files of NEW identical by content to a file of this OLD.
    pub files_same: u64,
    pub bytes_same: u64,
    pub files_same_pct: f64,
    pub bytes_same_pct: f64,
    pub changed_files: u64,
    pub added_files: u64,
    pub removed_files: u64,
}

struct Side {
    label: String,
    algo: String,
    /// path -> (hash, size) of regular files.
    files: HashMap<Vec<u8>, (Option<Vec<u8>>, u64)>,
}

fn load_snapshot(path: &Path, label: String) -> anyhow::Result<Side> {
    let stream =
        Snapshot::open(path).with_context(|| format!("cannot read snapshot {}", path.display()))?;
    let Some(algo) = stream.header().hash.clone() else {
        bail!(
            "snapshot {} has no content hashes: write it with `fsbench scan DIR --hash -o SNAPSHOT`",
            path.display()
        );
    };
    let mut files = HashMap::new();
    for e in stream {
        let e = e.with_context(|| format!("cannot read snapshot {}", path.display()))?;
        if e.kind == Kind::File {
            files.insert(e.path, (e.hash, e.size));
        }
    }
    Ok(Side { label, algo, files })
}

/// A snapshot file in the temporary directory, removed when dropped.
struct TempSnapshot(PathBuf);

impl Drop for TempSnapshot {
    fn drop(&mut self) {
        let _ = fsbench_base::owned::path::remove_file(&self.0);
    }
}

fn load(path: &Path, algo: HashAlgo, threads: usize) -> anyhow::Result<Side> {
    if !path.is_dir() {
        return load_snapshot(path, path.display().to_string());
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = TempSnapshot(
        std::env::temp_dir().join(format!("fsbench-diff-{}-{nanos}.snap", std::process::id())),
    );
    let opts = WalkOptions {
        cross_mounts: false,
        threads,
    };
    let summary = super::scan(path, Some(&tmp.0), &opts, 0, Some(algo))
        .with_context(|| format!("scan of {} failed", path.display()))?;
    fsbench_base::errln!(
        "diff: scanned {}: {} files, {} hashed at {:.1} MB/s",
        path.display(),
        summary.files,
        human_bytes_u64(summary.hashed_bytes),
        summary.hash_mb_per_s
    );
    load_snapshot(&tmp.0, path.display().to_string())
}

/// Compare two loaded trees.
fn compare(old: &Side, new: &Side) -> DiffReport {
    let old_hashes: HashSet<&[u8]> = old
        .files
        .values()
        .filter_map(|(h, _)| h.as_deref())
        .collect();
    let mut r = DiffReport {
        old: old.label.clone(),
        new: new.label.clone(),
        hash: new.algo.clone(),
        old_files: old.files.len() as u64,
        old_bytes: old.files.values().map(|(_, s)| s).sum(),
        new_files: new.files.len() as u64,
        new_bytes: new.files.values().map(|(_, s)| s).sum(),
        identical: Class::default(),
        same_path: Class::default(),
        changed: Class::default(),
        added: Class::default(),
        added_known_content: Class::default(),
        removed: Class::default(),
        unhashed: 0,
        files_same_pct: 0.0,
        bytes_same_pct: 0.0,
    };
    r.unhashed += old.files.values().filter(|(h, _)| h.is_none()).count() as u64;
    for (path, (hash, size)) in &new.files {
        let hash = hash.as_deref();
        if hash.is_none() {
            r.unhashed += 1;
        }
        let known = hash.is_some_and(|h| old_hashes.contains(h));
        if known {
            r.identical.add(*size);
        }
        match old.files.get(path) {
            Some((old_hash, _)) => {
                if hash.is_some() && old_hash.as_deref() == hash {
                    r.same_path.add(*size);
                } else {
                    r.changed.add(*size);
                }
            }
            None => {
                r.added.add(*size);
                if known {
                    r.added_known_content.add(*size);
                }
            }
        }
    }
    for (path, (_, size)) in &old.files {
        if !new.files.contains_key(path) {
            r.removed.add(*size);
        }
    }
    for c in [
        &mut r.identical,
        &mut r.same_path,
        &mut r.changed,
        &mut r.added,
        &mut r.added_known_content,
        &mut r.removed,
    ] {
        c.finish();
    }
    r.files_same_pct = pct(r.identical.files, r.new_files);
    r.bytes_same_pct = pct(r.identical.bytes, r.new_bytes);
    r
}

/// The table of several comparisons against one NEW.
fn table(reports: &[DiffReport]) -> DiffTable {
    let first = &reports[0];
    DiffTable {
        new: first.new.clone(),
        hash: first.hash.clone(),
        new_files: first.new_files,
        new_bytes: first.new_bytes,
        rows: reports
            .iter()
            .map(|r| TableRow {
                old: r.old.clone(),
                old_files: r.old_files,
                old_bytes: r.old_bytes,
                files_same: r.identical.files,
                bytes_same: r.identical.bytes,
                files_same_pct: r.files_same_pct,
                bytes_same_pct: r.bytes_same_pct,
                changed_files: r.changed.files,
                added_files: r.added.files,
                removed_files: r.removed.files,
            })
            .collect(),
    }
}

/// Print the table as text: the paper's layout, a row per OLD.
pub fn print_table_text(t: &DiffTable, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "against NEW {}: {} files, {} ({})",
        t.new,
        t.new_files,
        human_bytes_u64(t.new_bytes),
        t.hash
    )?;
    let w = t.rows.iter().map(|r| r.old.len()).max().unwrap_or(3).max(3);
    writeln!(
        out,
        "{:<w$} {:>9} {:>10} {:>11} {:>11} {:>8} {:>8} {:>8}",
        "OLD", "files", "bytes", "files same", "bytes same", "changed", "added", "removed"
    )?;
    for r in &t.rows {
        writeln!(
            out,
            "{:<w$} {:>9} {:>10} {:>10.1}% {:>10.1}% {:>8} {:>8} {:>8}",
            r.old,
            r.old_files,
            human_bytes_u64(r.old_bytes),
            r.files_same_pct,
            r.bytes_same_pct,
            r.changed_files,
            r.added_files,
            r.removed_files
        )?;
    }
    Ok(())
}

/// Print the table as Markdown.
pub fn print_table_markdown(t: &DiffTable, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "Against NEW `{}` ({} files, {}), hash {}\n",
        t.new,
        t.new_files,
        human_bytes_u64(t.new_bytes),
        t.hash
    )?;
    writeln!(out, "| OLD | files | bytes | files same | bytes same |")?;
    writeln!(out, "|---|---:|---:|---:|---:|")?;
    for r in &t.rows {
        writeln!(
            out,
            "| `{}` | {} | {} | {:.1}% | {:.1}% |",
            r.old, r.old_files, r.old_bytes, r.files_same_pct, r.bytes_same_pct
        )?;
    }
    Ok(())
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

impl DiffReport {
    /// (label, class, files base, bytes base) in table order.
    fn rows(&self) -> [(&'static str, &Class, u64, u64); 6] {
        let (nf, nb, of, ob) = (
            self.new_files,
            self.new_bytes,
            self.old_files,
            self.old_bytes,
        );
        [
            ("identical content (any path)", &self.identical, nf, nb),
            ("identical at same path", &self.same_path, nf, nb),
            ("changed (same path)", &self.changed, nf, nb),
            ("added (new path)", &self.added, nf, nb),
            ("  added, content in OLD", &self.added_known_content, nf, nb),
            ("removed (share of OLD)", &self.removed, of, ob),
        ]
    }
}

/// Print the comparison as text.
pub fn print_text(r: &DiffReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "OLD {}: {} files, {}",
        r.old,
        r.old_files,
        human_bytes_u64(r.old_bytes)
    )?;
    writeln!(
        out,
        "NEW {}: {} files, {}",
        r.new,
        r.new_files,
        human_bytes_u64(r.new_bytes)
    )?;
    writeln!(
        out,
        "files same {:.1}%  bytes same {:.1}%  ({})",
        r.files_same_pct, r.bytes_same_pct, r.hash
    )?;
    writeln!(
        out,
        "{:<30} {:>9} {:>7} {:>14} {:>7}",
        "class", "files", "files%", "bytes", "bytes%"
    )?;
    for (label, c, fb, bb) in r.rows() {
        writeln!(
            out,
            "{:<30} {:>9} {:>6.1}% {:>14} {:>6.1}%",
            label,
            c.files,
            pct(c.files, fb),
            c.bytes,
            pct(c.bytes, bb)
        )?;
    }
    if r.unhashed > 0 {
        writeln!(
            out,
            "{} without a hash (unreadable), counted as different",
            fsbench_base::units::count(r.unhashed, "file")
        )?;
    }
    writeln!(out, "size distributions (files per size class):")?;
    for (label, c, _, _) in r.rows() {
        if c.sizes.is_empty() {
            continue;
        }
        let cells: Vec<String> = c
            .sizes
            .iter()
            .map(|row| format!("<{}:{}", human_bytes_u64(row.hi), row.count))
            .collect();
        writeln!(out, "  {:<28} {}", label.trim(), cells.join("  "))?;
    }
    Ok(())
}

/// Print the comparison as Markdown.
pub fn print_markdown(r: &DiffReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "OLD `{}` ({} files, {}), NEW `{}` ({} files, {}), hash {}\n",
        r.old,
        r.old_files,
        human_bytes_u64(r.old_bytes),
        r.new,
        r.new_files,
        human_bytes_u64(r.new_bytes),
        r.hash
    )?;
    writeln!(out, "| class | files | files % | bytes | bytes % |")?;
    writeln!(out, "|---|---:|---:|---:|---:|")?;
    for (label, c, fb, bb) in r.rows() {
        writeln!(
            out,
            "| {} | {} | {:.1} | {} | {:.1} |",
            label.trim(),
            c.files,
            pct(c.files, fb),
            c.bytes,
            pct(c.bytes, bb)
        )?;
    }
    writeln!(out, "\n| class | size class | files | bytes |")?;
    writeln!(out, "|---|---|---:|---:|")?;
    for (label, c, _, _) in r.rows() {
        for row in &c.sizes {
            writeln!(
                out,
                "| {} | [{}, {}) | {} | {} |",
                label.trim(),
                row.lo,
                row.hi,
                row.count,
                row.sum
            )?;
        }
    }
    Ok(())
}

impl fsbench_base::export::check::Outputs for DiffArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        vec![
            named(self.json.as_deref(), "--json"),
            named(self.markdown.as_deref(), "--markdown"),
        ]
    }
}

/// Run `fsbench diff`.
pub fn run(args: DiffArgs) -> anyhow::Result<()> {
    // A signal stops the scans; the temporary snapshots go with their guards.
    fsbench_base::cancel::install_signal_handlers();
    fsbench_base::export::check::outputs(&fsbench_base::export::check::Outputs::outputs(&args))?;
    let threads = args.threads.unwrap_or_else(walk::default_threads).max(1);
    let Some((new_path, olds)) = args.trees.split_last() else {
        bail!("diff needs an OLD and a NEW tree");
    };
    // A directory side uses --hash, else the first snapshot's hash, else blake3.
    let snapshot_algo = |p: &Path| -> Option<HashAlgo> {
        if p.is_dir() {
            return None;
        }
        Snapshot::open(p)
            .ok()
            .and_then(|s| s.header().hash.as_deref().and_then(HashAlgo::parse))
    };
    let algo = args
        .hash
        .or_else(|| args.trees.iter().find_map(|p| snapshot_algo(p)))
        .unwrap_or(HashAlgo::Blake3);
    let new = load(new_path, algo, threads)?;
    let mut reports = Vec::with_capacity(olds.len());
    for old_path in olds {
        let old = load(old_path, algo, threads)?;
        if old.algo != new.algo {
            bail!(
                "{} is hashed with {} and {} with {}: compare snapshots of one hash",
                old.label,
                old.algo,
                new.label,
                new.algo
            );
        }
        reports.push(compare(&old, &new));
    }
    if let [report] = reports.as_slice() {
        emit(
            &args,
            report,
            |r, mut o| print_text(r, &mut o),
            |r, mut o| print_markdown(r, &mut o),
        )
    } else {
        emit(
            &args,
            &table(&reports),
            |t, mut o| print_table_text(t, &mut o),
            |t, mut o| print_table_markdown(t, &mut o),
        )
    }
}

type Printer<T> = fn(&T, &mut dyn Write) -> io::Result<()>;

/// Text on stdout unless JSON or Markdown goes there; JSON and Markdown where asked.
fn emit<T: Serialize>(
    args: &DiffArgs,
    value: &T,
    text: Printer<T>,
    markdown: Printer<T>,
) -> anyhow::Result<()> {
    let exports = [args.json.as_deref(), args.markdown.as_deref()];
    text_beside(&exports, Displaced::Dropped, |o| text(value, o))?;
    if let Some(j) = &args.json {
        fsbench_base::export::write_json(j, value)?;
    }
    if let Some(m) = &args.markdown {
        let w =
            fsbench_base::export::Output::open(m, fsbench_base::export::Format::Markdown.what())?;
        w.with(|o| markdown(value, o))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(files: &[(&str, &str, u64)]) -> Side {
        Side {
            label: "t".into(),
            algo: "blake3".into(),
            files: files
                .iter()
                .map(|(p, h, s)| (p.as_bytes().to_vec(), (Some(h.as_bytes().to_vec()), *s)))
                .collect(),
        }
    }

    #[test]
    fn classes() {
        let old = side(&[
            ("a", "A", 10),
            ("b", "B", 20),
            ("c", "C", 30),
            ("d", "D", 40),
        ]);
        // a kept, b changed, c moved to e, d removed, f new content.
        let new = side(&[
            ("a", "A", 10),
            ("b", "B2", 25),
            ("e", "C", 30),
            ("f", "F", 5),
        ]);
        let r = compare(&old, &new);
        assert_eq!((r.new_files, r.new_bytes), (4, 70));
        assert_eq!((r.identical.files, r.identical.bytes), (2, 40));
        assert_eq!((r.same_path.files, r.same_path.bytes), (1, 10));
        assert_eq!((r.changed.files, r.changed.bytes), (1, 25));
        assert_eq!((r.added.files, r.added.bytes), (2, 35));
        assert_eq!(r.added_known_content.files, 1);
        assert_eq!((r.removed.files, r.removed.bytes), (2, 70));
        assert_eq!(r.files_same_pct, 50.0);
        assert_eq!(r.identical.sizes.iter().map(|s| s.count).sum::<u64>(), 2);
    }
}
