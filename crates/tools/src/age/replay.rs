//! Smith–Seltzer replay: age a file system by recreating the history of a
//! real tree from its snapshots.
//!
//! The first snapshot's tree is created (directories, then files in mtime
//! order). Between each pair of consecutive snapshots, entries are joined by
//! path: files only in the older are deleted, files only in the newer are
//! created, files that grew are appended to, files that shrank are rewritten
//! and files whose mtime changed are overwritten. Snapshots record entries in
//! no particular order (the scan is parallel), so both are loaded and sorted
//! by path; creates and changes then run in mtime order (the order they
//! happened in), with the deletes spread among them at seeded random points,
//! since a snapshot does not say when a file went away.
//!
//! `--short-lived N` adds N files per interval that live and die between two
//! snapshots (the files a daily snapshot never sees: editor temporaries,
//! build outputs), each beside a file created in that interval and of the
//! size of one, so they take and then leave holes among the long-lived files.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context};
use rand::Rng as _;

use super::args::AgeArgs;
use super::exec::{self, Exec};
use super::record::{FILES_FILE, STATE_FILE};
use super::report::AgeReport;
use fsbench_base::owned::trust::{LOCK, MARKER};
use fsbench_engine::scan::snapshot::{Kind, Snapshot};

/// One entry of a snapshot as replay needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rec {
    pub dir: bool,
    pub size: u64,
    pub mtime: (i64, u32),
}

/// A snapshot's files and directories by path (sorted).
pub type Tree = BTreeMap<Vec<u8>, Rec>;

/// Whether a snapshot path is safe to recreate under the aged directory.
pub fn safe_path(p: &[u8]) -> bool {
    !p.is_empty()
        && p.split(|&b| b == b'/')
            .all(|c| !c.is_empty() && c != b"." && c != b"..")
        && p != MARKER.as_bytes()
        && p != LOCK.as_bytes()
        && p != STATE_FILE.as_bytes()
        && p != FILES_FILE.as_bytes()
}

/// Load a snapshot's regular files and directories; other kinds and unsafe
/// paths are skipped (their count is returned).
pub fn load(path: &Path) -> anyhow::Result<(Tree, u64)> {
    let stream =
        Snapshot::open(path).with_context(|| format!("cannot read snapshot {}", path.display()))?;
    let mut t = Tree::new();
    let mut skipped = 0;
    for e in stream {
        let e = e.with_context(|| format!("reading snapshot {}", path.display()))?;
        let dir = match e.kind {
            Kind::File => false,
            Kind::Dir => true,
            _ => {
                skipped += 1;
                continue;
            }
        };
        if !safe_path(&e.path) {
            skipped += 1;
            continue;
        }
        t.insert(
            e.path,
            Rec {
                dir,
                size: if dir { 0 } else { e.size },
                mtime: (e.mtime.sec, e.mtime.nsec),
            },
        );
    }
    Ok((t, skipped))
}

/// One replayed file-system operation (paths relative to the aged directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Mkdir(Vec<u8>),
    Rmdir(Vec<u8>),
    Create(Vec<u8>, u64),
    Append(Vec<u8>, u64, u64),
    Overwrite(Vec<u8>, u64),
    Delete(Vec<u8>),
}

fn parent(p: &[u8]) -> &[u8] {
    match p.iter().rposition(|&b| b == b'/') {
        Some(i) => &p[..i],
        None => b"",
    }
}

/// The operations that turn tree `old` into tree `new`, with `short_lived`
/// temporary files (interval number `interval`, for their names).
pub fn diff(old: &Tree, new: &Tree, short_lived: u64, interval: usize, seed: u64) -> Vec<Step> {
    let mut rng = fsbench_model::dist::rng(seed, 0x5E1A_0000 + interval as u64);
    let mut out = Vec::new();
    // A: files that become directories go first.
    for (p, o) in old {
        if !o.dir && new.get(p).is_some_and(|n| n.dir) {
            out.push(Step::Delete(p.clone()));
        }
    }
    // B: new directories (also where a file was), parents first (a parent sorts before its children).
    for (p, n) in new {
        if n.dir && !old.get(p).is_some_and(|o| o.dir) {
            out.push(Step::Mkdir(p.clone()));
        }
    }
    // C: creates and changes in mtime order, deletes spread among them.
    let (merged, late) = changes(old, new, &mut rng);
    // Short-lived files: created at a random point, deleted at a later one,
    // beside (and as large as) a file created in this interval.
    let mut at = short_lived_files(&merged, short_lived, interval, &mut rng);
    for (i, s) in merged.into_iter().enumerate() {
        if let Some(extra) = at.remove(&i) {
            out.extend(extra);
        }
        out.push(s);
    }
    for (_, extra) in at {
        out.extend(extra);
    }
    // D: directories that went away, children first.
    for (p, o) in old.iter().rev() {
        if o.dir && !new.get(p).is_some_and(|n| n.dir) {
            out.push(Step::Rmdir(p.clone()));
        }
    }
    // E: files where a directory was.
    out.extend(late);
    out
}

/// Creates and changes of `new` over `old` in mtime order, with the deletes spread among
/// them at random; and the files to create last, where a directory was.
fn changes(old: &Tree, new: &Tree, rng: &mut fsbench_model::dist::Rng) -> (Vec<Step>, Vec<Step>) {
    let mut changes: Vec<(&(i64, u32), &Vec<u8>, Step)> = Vec::new();
    let mut late = Vec::new();
    for (p, n) in new {
        if n.dir {
            continue;
        }
        match old.get(p) {
            None => changes.push((&n.mtime, p, Step::Create(p.clone(), n.size))),
            Some(o) if o.dir => late.push(Step::Create(p.clone(), n.size)),
            Some(o) if n.size > o.size => changes.push((
                &n.mtime,
                p,
                Step::Append(p.clone(), o.size, n.size - o.size),
            )),
            Some(o) if n.size < o.size => {
                changes.push((&n.mtime, p, Step::Create(p.clone(), n.size)))
            }
            Some(o) if n.mtime != o.mtime && n.size > 0 => {
                changes.push((&n.mtime, p, Step::Overwrite(p.clone(), n.size)))
            }
            Some(_) => {}
        }
    }
    changes.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let changes: Vec<Step> = changes.into_iter().map(|c| c.2).collect();
    let deletes: Vec<Step> = old
        .iter()
        .filter(|(p, o)| !o.dir && !new.contains_key(*p))
        .map(|(p, _)| Step::Delete(p.clone()))
        .collect();
    let mut merged = Vec::with_capacity(changes.len() + deletes.len());
    let (mut nc, mut nd) = (changes.len(), deletes.len());
    let (mut c, mut d) = (changes.into_iter(), deletes.into_iter());
    while nc + nd > 0 {
        if nd > 0 && (nc == 0 || rng.random_range(0..nc + nd) < nd) {
            merged.extend(d.next());
            nd -= 1;
        } else {
            merged.extend(c.next());
            nc -= 1;
        }
    }
    (merged, late)
}

/// Short-lived files around the steps of `merged`: at each position, what to do before
/// its step (the key `merged.len()` for after the last).
fn short_lived_files(
    merged: &[Step],
    short_lived: u64,
    interval: usize,
    rng: &mut fsbench_model::dist::Rng,
) -> BTreeMap<usize, Vec<Step>> {
    let created: Vec<(&[u8], u64)> = merged
        .iter()
        .filter_map(|s| match s {
            Step::Create(p, n) => Some((parent(p), *n)),
            _ => None,
        })
        .collect();
    let mut at: BTreeMap<usize, Vec<Step>> = BTreeMap::new();
    let len = merged.len();
    for j in 0..short_lived {
        let (dir, size) = if created.is_empty() {
            (&b""[..], 4096)
        } else {
            created[rng.random_range(0..created.len())]
        };
        let mut name = dir.to_vec();
        if !name.is_empty() {
            name.push(b'/');
        }
        name.extend_from_slice(format!(".fsbench-short-{interval}-{j}").as_bytes());
        let a = rng.random_range(0..=len);
        let b = rng.random_range(a..=len);
        at.entry(a)
            .or_default()
            .push(Step::Create(name.clone(), size));
        // Deletes after creates at the same point: key b, pushed later for a == b.
        at.entry(b).or_default().push(Step::Delete(name));
    }
    at
}

/// Replay `args.replay_snapshots` into the aged directory `root`.
pub fn replay(
    args: &AgeArgs,
    root: &Path,
    ex: &mut Exec,
    report: &mut AgeReport,
) -> anyhow::Result<()> {
    let foreign: Vec<String> = std::fs::read_dir(root)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != MARKER && n != LOCK && n != STATE_FILE && n != FILES_FILE)
        .collect();
    if !foreign.is_empty() {
        bail!(
            "replay starts from an empty aged directory, and {} holds {} entries; \
             remove it (it is fsbench's) or give another DIR",
            root.display(),
            foreign.len()
        );
    }
    let mut cur = Tree::new();
    let mut errors = 0u64;
    let mut n = 0u64;
    for (i, snap) in args.replay_snapshots.iter().enumerate() {
        let (next, skipped) = load(snap)?;
        if skipped > 0 && !args.quiet {
            fsbench_base::errln!(
                "replay: {}: {skipped} entries skipped (not a file or directory, or an unsafe path)",
                snap.display()
            );
        }
        let steps = diff(
            &cur,
            &next,
            if i == 0 { 0 } else { args.short_lived },
            i,
            args.seed,
        );
        let before = ex.counts.clone();
        for s in &steps {
            if fsbench_base::cancel::interrupted() {
                report.interrupted = true;
                break;
            }
            n += 1;
            let r = apply(ex, s, n);
            if let Err(e) = r {
                if exec::is_enospc(&e) {
                    ex.counts.enospc += 1;
                }
                ex.counts.errors += 1;
                errors += 1;
                if errors <= 5 {
                    fsbench_base::errln!("replay: {e}");
                }
            }
            ex.tick()?;
        }
        if !args.quiet {
            let c = &ex.counts;
            let (f, _, _) = exec::fullness(root).unwrap_or((0.0, 0, 0));
            fsbench_base::errln!(
                "replay: {}: {} steps: {} creates, {} appends, {} overwrites, {} deletes, {} mkdirs, {} rmdirs; fullness {:.1}%",
                snap.display(),
                steps.len(),
                c.creates - before.creates,
                c.appends - before.appends,
                c.overwrites - before.overwrites,
                c.deletes - before.deletes,
                c.mkdirs - before.mkdirs,
                c.rmdirs - before.rmdirs,
                f * 100.0
            );
        }
        cur = next;
        if report.interrupted {
            break;
        }
    }
    report.ops = n;
    report.live_files = cur.values().filter(|r| !r.dir).count() as u64;
    report.live_bytes = cur.values().map(|r| r.size).sum();
    Ok(())
}

fn apply(ex: &mut Exec, s: &Step, n: u64) -> std::io::Result<()> {
    let show = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    match s {
        Step::Mkdir(p) => {
            ex.log(format_args!("{n} mkdir {}", show(p)))?;
            ex.mkdir(p)
        }
        Step::Rmdir(p) => {
            ex.log(format_args!("{n} rmdir {}", show(p)))?;
            ex.rmdir(p)
        }
        Step::Create(p, size) => {
            ex.log(format_args!("{n} create {} size {size}", show(p)))?;
            ex.create(p, *size).map_err(|e| e.error)
        }
        Step::Append(p, off, len) => {
            ex.log(format_args!("{n} append {} {off}+{len}", show(p)))?;
            ex.write(p, *off, *len, true).map_err(|e| e.error)
        }
        Step::Overwrite(p, len) => {
            ex.log(format_args!("{n} overwrite {} 0+{len}", show(p)))?;
            ex.write(p, 0, *len, false).map_err(|e| e.error)
        }
        Step::Delete(p) => {
            ex.log(format_args!("{n} delete {}", show(p)))?;
            ex.delete(p)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(size: u64, t: i64) -> Rec {
        Rec {
            dir: false,
            size,
            mtime: (t, 0),
        }
    }
    fn d() -> Rec {
        Rec {
            dir: true,
            size: 0,
            mtime: (0, 0),
        }
    }
    fn tree(v: &[(&str, Rec)]) -> Tree {
        v.iter().map(|(p, r)| (p.as_bytes().to_vec(), *r)).collect()
    }

    #[test]
    fn diff_joins_by_path_and_orders_creates_by_mtime() {
        let old = tree(&[
            ("a", d()),
            ("a/x", f(100, 1)),
            ("a/y", f(100, 1)),
            ("gone", d()),
            ("gone/z", f(5, 1)),
            ("k", f(10, 1)),
        ]);
        let new = tree(&[
            ("a", d()),
            ("a/x", f(300, 9)),
            ("b", d()),
            ("b/new2", f(7, 3)),
            ("b/new1", f(8, 2)),
            ("k", f(10, 4)),
        ]);
        let s = diff(&old, &new, 0, 1, 1);
        let mkdir_b = s
            .iter()
            .position(|x| *x == Step::Mkdir(b"b".to_vec()))
            .unwrap();
        let n1 = s
            .iter()
            .position(|x| *x == Step::Create(b"b/new1".to_vec(), 8))
            .unwrap();
        let n2 = s
            .iter()
            .position(|x| *x == Step::Create(b"b/new2".to_vec(), 7))
            .unwrap();
        assert!(mkdir_b < n1 && n1 < n2, "{s:?}");
        assert!(s.contains(&Step::Append(b"a/x".to_vec(), 100, 200)));
        assert!(s.contains(&Step::Overwrite(b"k".to_vec(), 10)));
        let del_z = s
            .iter()
            .position(|x| *x == Step::Delete(b"gone/z".to_vec()))
            .unwrap();
        let rm = s
            .iter()
            .position(|x| *x == Step::Rmdir(b"gone".to_vec()))
            .unwrap();
        assert!(del_z < rm);
        assert!(s.contains(&Step::Delete(b"a/y".to_vec())));
        assert_eq!(s.len(), 8, "{s:?}");
        // Deterministic for a seed; insertion order of the input is irrelevant
        // (trees are sorted maps).
        assert_eq!(s, diff(&old, &new, 0, 1, 1));
    }

    #[test]
    fn short_lived_files_come_and_go_within_the_interval() {
        let old = tree(&[("a", d())]);
        let new = tree(&[("a", d()), ("a/1", f(4096, 1)), ("a/2", f(8192, 2))]);
        let s = diff(&old, &new, 3, 2, 5);
        for j in 0..3 {
            let name = format!("a/.fsbench-short-2-{j}").into_bytes();
            let c = s
                .iter()
                .position(|x| matches!(x, Step::Create(p, _) if *p == name))
                .unwrap();
            let dl = s
                .iter()
                .position(|x| *x == Step::Delete(name.clone()))
                .unwrap();
            assert!(c < dl, "{s:?}");
        }
        assert_eq!(s.len(), 2 + 6);
    }

    #[test]
    fn unsafe_paths_are_refused() {
        assert!(safe_path(b"a/b"));
        for p in [
            &b""[..],
            b"../x",
            b"a/../b",
            b"/abs",
            b"a//b",
            b".fsbench-run",
        ] {
            assert!(!safe_path(p), "{}", String::from_utf8_lossy(p));
        }
    }
}
