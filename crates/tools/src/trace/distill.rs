//! `fsbench trace distill` (a trace → a workload in the Filebench language that behaves
//! like it) and `fsbench trace compare` (how close two traces are).
//!
//! Distilling reads the trace's measured window (all of it when unmarked), below its roots:
//! - every open file is a *session* (open … close): created by its open or not, how many
//!   reads and writes it saw, whether it was synced; a directory read is a listing;
//!   path calls (stat, unlink) stand alone;
//! - sessions are grouped by that signature, and each group becomes a block of flowops
//!   (`createfile`/`openfile`, `write`/`read` with `iters` = the group's mean count,
//!   `fsync`, `closefile`) repeated in the loop in proportion to how often the group
//!   occurred, so the loop's operation mix is the trace's;
//! - I/O sizes are tabular randvars of the requested sizes, file sizes a tabular randvar
//!   of the sizes the opened files had, the fileset as many files as were touched, with
//!   room for those created.
//!
//! Calls the language has no flowop for (rename, link, chmod, seek, mmap ...) are counted
//! in a comment at the top, not modelled.

use super::format::{self, Call, Header, Record};
use super::printer::{self, ident, Attr, Comment, Flowop, Op, Quoted, Value, Workload};
use super::stats::Tracker;
use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct DistillArgs {
    /// The trace file.
    pub trace: PathBuf,
    /// Where to write the workload (`-` for standard output).
    #[arg(short, long, value_name = "FILE.f")]
    pub output: PathBuf,
    /// Run the model traced in DIR (`--dir`) and compare its trace with this one.
    #[arg(long, requires = "dir")]
    pub check: bool,
    /// Where `--check` runs the model.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// How long `--check` runs the model, in seconds.
    #[arg(long, default_value_t = 3.0)]
    pub duration: f64,
    /// `--check` fails when the op mix differs by more than this (total variation
    /// distance, 0..1).
    #[arg(long, default_value_t = 0.05)]
    pub max_tvd: f64,
    /// `--check` fails when a size distribution differs by more than this
    /// (Kolmogorov–Smirnov distance, 0..1).
    #[arg(long, default_value_t = 0.1)]
    pub max_ks: f64,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The reference trace.
    pub reference: PathBuf,
    /// The trace to compare with it (e.g. of a distilled model's run).
    pub other: PathBuf,
    /// Write the comparison as JSON to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl fsbench_base::export::check::Outputs for DistillArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        vec![named(Some(self.output.as_path()), "-o")]
    }
}

impl fsbench_base::export::check::Outputs for CompareArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        vec![named(self.json.as_deref(), "--json")]
    }
}

/// The operation categories a model can reproduce (and the op mix is measured over).
fn category(r: &Record) -> Option<&'static str> {
    Some(match r.call {
        Call::Open => "open",
        Call::Close => "close",
        Call::Read => "read",
        Call::Write => "write",
        Call::Stat => "stat",
        Call::Unlink => "unlink",
        Call::Getdents => "getdents",
        Call::Fsync => "fsync",
        Call::Mkdir => "mkdir",
        Call::Rmdir => "rmdir",
        _ => return None,
    })
}

/// A sample of sizes: how many times each value occurred (memory follows the distinct
/// values, not the sample's size).
type Sizes = BTreeMap<u64, u64>;

fn push(s: &mut Sizes, v: u64) {
    *s.entry(v).or_default() += 1;
}

/// What a window of a trace did, below its roots.
#[derive(Debug, Default)]
struct Window {
    mix: BTreeMap<&'static str, u64>,
    other: BTreeMap<String, u64>,
    read_sizes: Sizes,
    write_sizes: Sizes,
    /// Sizes of files when they were opened.
    open_sizes: Sizes,
    calls: u64,
    bytes: u64,
    seconds: f64,
    /// Sessions by signature: (directory, created, read, written, synced).
    groups: BTreeMap<(bool, bool, bool, bool, bool), Group>,
    stats: u64,
    unlinks: u64,
    files: std::collections::BTreeSet<String>,
    created: u64,
    /// Threads with at least a tenth of the calls, and the pauses of over a millisecond
    /// between one call's end and the next one's start in a thread (µs, summed).
    threads: u64,
    gaps_us: f64,
}

/// The sessions of one signature.
#[derive(Debug, Default)]
struct Group {
    n: u64,
    reads: u64,
    writes: u64,
    fsync: bool,
}

#[derive(Debug, Clone, Default)]
struct Session {
    created: bool,
    dir: bool,
    reads: u32,
    writes: u32,
    fsyncs: u32,
}

impl Window {
    fn session(&mut self, s: Session) {
        let key = (s.dir, s.created, s.reads > 0, s.writes > 0, s.fsyncs > 0);
        let g = self.groups.entry(key).or_default();
        g.n += 1;
        g.reads += s.reads as u64;
        g.writes += s.writes as u64;
        g.fsync |= s.fsyncs > 0;
    }
}

/// Follows a trace one record at a time and gathers its measured window's [`Window`].
struct Analyser {
    tr: Tracker,
    w: Window,
    open_sessions: BTreeMap<usize, Session>,
    /// Per thread: calls, and the end of its last call.
    per: BTreeMap<u32, (u64, u64)>,
    span: Option<(u64, u64)>,
}

impl Analyser {
    fn new(h: &Header) -> Analyser {
        Analyser {
            tr: Tracker::new(h),
            w: Window::default(),
            open_sessions: BTreeMap::new(),
            per: BTreeMap::new(),
            span: None,
        }
    }

    /// A record before the window: only followed.
    fn skip(&mut self, r: &Record) {
        self.tr.apply(r);
    }

    /// A record of the window.
    fn add(&mut self, r: &Record) {
        let (tr, w) = (&mut self.tr, &mut self.w);
        let start = self.span.map_or(r.start_ns, |s| s.0);
        self.span = Some((start, r.start_ns + r.dur_ns));
        let (file, inside) = tr.file_of(r);
        let before = tr.open_of(r.tid, r.fd);
        let size_now = file.as_ref().and_then(|p| tr.sizes.get(p).copied());
        tr.apply(r);
        if !inside {
            return;
        }
        w.calls += 1;
        let e = self.per.entry(r.tid).or_insert((0, u64::MAX));
        e.0 += 1;
        if e.1 != u64::MAX && r.start_ns > e.1 + 1_000_000 {
            w.gaps_us += (r.start_ns - e.1) as f64 / 1000.0;
        }
        e.1 = r.start_ns + r.dur_ns;
        match category(r) {
            Some(c) => *w.mix.entry(c).or_default() += 1,
            None => {
                if !matches!(r.call, Call::Clone | Call::Exit | Call::Exec | Call::Wait) {
                    *w.other.entry(r.syscall.clone()).or_default() += 1;
                }
                return;
            }
        }
        if r.ok() && matches!(r.call, Call::Read | Call::Write) {
            w.bytes += r.ret as u64;
        }
        match r.call {
            Call::Open if r.ok() => {
                let o = tr.open_of(r.tid, Some(r.ret as i32));
                let dir = r.flags.unwrap_or(0) as i32 & libc::O_DIRECTORY != 0
                    || file.as_ref().is_some_and(|f| tr.dirs.contains(f));
                let created = o.is_some_and(|o| tr.opens.get(&o).is_some_and(|x| x.created));
                if let Some(f) = &file {
                    if !dir {
                        w.files.insert(f.clone());
                    }
                }
                if created {
                    w.created += 1;
                } else if !dir {
                    push(&mut w.open_sizes, size_now.unwrap_or(0));
                }
                if let Some(o) = o {
                    let s = Session {
                        created,
                        dir,
                        ..Default::default()
                    };
                    self.open_sessions.insert(o, s);
                }
            }
            Call::Read | Call::Write | Call::Fsync | Call::Getdents => {
                if r.call == Call::Read {
                    push(&mut w.read_sizes, r.size.unwrap_or(0));
                }
                if r.call == Call::Write {
                    push(&mut w.write_sizes, r.size.unwrap_or(0));
                }
                if let Some(s) = before.and_then(|o| self.open_sessions.get_mut(&o)) {
                    match r.call {
                        Call::Read => s.reads += 1,
                        Call::Write => s.writes += 1,
                        Call::Fsync => s.fsyncs += 1,
                        _ => s.dir = true,
                    }
                }
            }
            Call::Close => {
                if let Some(s) = before.and_then(|o| self.open_sessions.remove(&o)) {
                    w.session(s);
                }
            }
            Call::Stat => w.stats += 1,
            Call::Unlink if r.ok() => w.unlinks += 1,
            _ => {}
        }
    }

    fn finish(mut self) -> Window {
        for s in std::mem::take(&mut self.open_sessions).into_values() {
            self.w.session(s);
        }
        let mut w = self.w;
        if let Some((a, b)) = self.span {
            w.seconds = b.saturating_sub(a) as f64 / 1e9;
        }
        w.threads = self
            .per
            .values()
            .filter(|(n, _)| *n * 10 >= w.calls)
            .count() as u64;
        w
    }
}

/// The window of a trace file, read one record at a time (two passes: one finds the
/// window). Returns its header too.
fn analyse_file(path: &std::path::Path) -> Result<(Header, Window)> {
    let win = super::measured_window_of(path)?;
    let mut rd = format::Reader::open(path)?;
    let mut a = Analyser::new(&rd.header);
    let mut i = 0u64;
    while let Some(r) = rd
        .next_record()
        .map_err(|e| anyhow::anyhow!("trace {}: {e}", path.display()))?
    {
        if i < win.start {
            a.skip(&r);
        } else if i < win.end {
            a.add(&r);
        } else {
            break;
        }
        i += 1;
    }
    Ok((rd.header.clone(), a.finish()))
}

/// The rows `(pct, lo, hi)` of a tabular randvar of a sample: distinct values when there
/// are few, quantile bins otherwise; percentages by largest remainder so that they add up
/// to 100.
fn randtable(distinct: &Sizes) -> Option<Vec<(u64, u64, u64)>> {
    if distinct.is_empty() {
        return None;
    }
    let rows: Vec<(u64, u64, u64)> = if distinct.len() <= 12 {
        distinct.iter().map(|(&v, &n)| (v, v, n)).collect()
    } else {
        // Quantile bins (each about 1/BINS of the sample, from its smallest to its largest
        // value), so a value many calls share stays a point and the rest stays close.
        const BINS: u64 = 25;
        // The k-th smallest value (from 0): the first whose cumulative count passes k.
        let mut cum = Vec::with_capacity(distinct.len());
        let mut n = 0u64;
        for (&v, &c) in distinct {
            n += c;
            cum.push((v, n));
        }
        let nth = |k: u64| cum[cum.partition_point(|&(_, end)| end <= k)].0;
        let mut rows: Vec<(u64, u64, u64)> = Vec::new();
        for b in 0..BINS {
            let (s, e) = (b * n / BINS, ((b + 1) * n / BINS).min(n));
            if e > s {
                rows.push((nth(s), nth(e - 1), e - s));
            }
        }
        rows
    };
    let total: u64 = rows.iter().map(|r| r.2).sum();
    let mut pct: Vec<(u64, f64, usize)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let exact = r.2 as f64 * 100.0 / total as f64;
            (exact.floor() as u64, exact - exact.floor(), i)
        })
        .collect();
    let mut left = 100 - pct.iter().map(|p| p.0).sum::<u64>();
    let mut order: Vec<usize> = (0..pct.len()).collect();
    order.sort_by(|&a, &b| pct[b].1.total_cmp(&pct[a].1));
    for i in order {
        if left == 0 {
            break;
        }
        pct[i].0 += 1;
        left -= 1;
    }
    Some(
        pct.iter()
            .filter(|p| p.0 > 0)
            .map(|p| (p.0, rows[p.2].0, rows[p.2].1))
            .collect(),
    )
}

/// A flowop of a block, named when it is placed in the loop (`prefix` and its position).
struct Step(Op, &'static str, Vec<Attr>);

/// The workload for a trace's window, as typed values ([`printer::Workload`]).
fn model(h: &Header, w: &Window) -> Result<Workload> {
    if w.calls == 0 {
        bail!(
            "the trace has no calls below its roots ({}) to model",
            h.roots.join(", ")
        );
    }
    let s = Scale::of(w);
    let (mut plan, dropped) = blocks(w, &s);
    add_think_time(&mut plan, w, &s);
    let flowops = interleave(&plan);
    let comments = comments(h, w, dropped);
    Ok(workload(w, &s, comments, flowops))
}

/// Repetitions: the rarest kept unit appears once; at most ~200 blocks in the loop.
struct Scale {
    /// Sessions and path calls of the window.
    total: u64,
    /// How many of them one repetition stands for.
    unit: f64,
}

impl Scale {
    fn of(w: &Window) -> Scale {
        let total: u64 = w.groups.values().map(|g| g.n).sum::<u64>() + w.stats + w.unlinks;
        Scale {
            total,
            unit: (total as f64 / 200.0).max(1.0),
        }
    }
    fn reps(&self, n: u64) -> u64 {
        (n as f64 / self.unit).round() as u64
    }
}

/// The loop's blocks, each with its repetitions.
type Blocks = Vec<(Vec<Step>, u64)>;

/// The loop's blocks and their repetitions: one block per group of sessions, one for the
/// stats, one for the unlinks; and what was too rare to keep, by kind.
fn blocks(w: &Window, s: &Scale) -> (Blocks, BTreeMap<String, u64>) {
    let mut dropped: BTreeMap<String, u64> = w.other.clone();
    // Files read are those that existed at the window's start; files created (and removed)
    // live in a fileset of their own, so opens never pick a file the loop just created.
    let int = Value::Int;
    let var = |n: &str| Value::Var(ident(n));
    let name = |n: &str| Value::Name(ident(n));
    let fs = || (ident("filesetname"), name("traced"));
    let fsn = || (ident("filesetname"), name("created"));
    let fd1 = || (ident("fd"), int(1));
    let mut plan: Blocks = Vec::new();
    for (key, g) in &w.groups {
        let (dir, created, _, _, _) = *key;
        let r = s.reps(g.n);
        if r == 0 {
            *dropped.entry("rare sessions".into()).or_default() += g.n;
            continue;
        }
        let mean = |x: u64| ((x as f64 / g.n as f64).round() as u64).max(1);
        let mut block = Vec::new();
        if dir {
            block.push(Step(Op::ListDir, "list", vec![fs()]));
        } else {
            block.push(if created {
                Step(Op::CreateFile, "create", vec![fsn(), fd1()])
            } else {
                Step(Op::OpenFile, "open", vec![fs(), fd1()])
            });
            for (n, op, name, size) in [
                (g.reads, Op::Read, "read", "readsize"),
                (g.writes, Op::Write, "write", "writesize"),
            ] {
                if n > 0 {
                    let iters = (ident("iters"), int(mean(n)));
                    let a = vec![fd1(), (ident("iosize"), var(size)), iters];
                    block.push(Step(op, name, a));
                }
            }
            if g.fsync {
                block.push(Step(Op::Fsync, "fsync", vec![fd1()]));
            }
            block.push(Step(Op::CloseFile, "close", vec![fd1()]));
        }
        plan.push((block, r));
    }
    if s.reps(w.stats) > 0 {
        plan.push((
            vec![Step(Op::StatFile, "stat", vec![fs()])],
            s.reps(w.stats),
        ));
    }
    if s.reps(w.unlinks) > 0 {
        let d = Step(Op::DeleteFile, "delete", vec![fsn()]);
        plan.push((vec![d], s.reps(w.unlinks)));
    }
    (plan, dropped)
}

/// Think time: the trace's long pauses (over a millisecond: computation between calls),
/// spread over the loop's blocks.
fn add_think_time(plan: &mut [(Vec<Step>, u64)], w: &Window, s: &Scale) {
    let (total, unit) = (s.total, s.unit);
    let blocks: u64 = plan.iter().map(|p| p.1).sum();
    let think_us = if blocks > 0 && w.threads > 0 {
        let scale = total as f64 / unit / blocks.max(1) as f64;
        (w.gaps_us / w.threads as f64) / (total as f64 / w.threads as f64) * scale
    } else {
        0.0
    };
    if think_us >= 1.0 {
        let v = think_us.round() as u64;
        for p in plan.iter_mut() {
            p.0.push(Step(
                Op::Think,
                "think",
                vec![(ident("value"), Value::Int(v))],
            ));
        }
    }
}

/// The loop's flowops: each block's repetitions spread evenly over the rounds, each flowop
/// named by its kind and position.
fn interleave(plan: &[(Vec<Step>, u64)]) -> Vec<Flowop> {
    let mut flowops = Vec::new();
    let rounds = plan.iter().map(|p| p.1).max().unwrap_or(0);
    for round in 0..rounds {
        for (block, r) in plan {
            // Spread each block's repetitions evenly over the rounds.
            let due = |i: u64| (i * r) / rounds.max(1);
            if due(round + 1) > due(round) {
                for Step(op, prefix, a) in block {
                    let n = ident(&format!("{prefix}{}", flowops.len() + 1));
                    let mut attrs = vec![(ident("name"), Value::Name(n))];
                    attrs.extend(a.iter().cloned());
                    flowops.push(Flowop { op: *op, attrs });
                }
            }
        }
    }
    flowops
}

/// The comments at the top: what was traced, the window's call mix, what was not modelled.
fn comments(h: &Header, w: &Window, dropped: BTreeMap<String, u64>) -> Vec<Comment> {
    let list = |m: &mut dyn Iterator<Item = (String, u64)>| {
        m.map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut comments = vec![
        // The command line as one comment line: whatever it holds stays text.
        Comment::new(&format!(
            "Distilled by fsbench from a trace of: {}",
            h.command.join(" ")
        )),
        Comment::new(&format!("({}; roots {})", h.source, h.roots.join(", "))),
        Comment::new(&format!(
            "{} calls below the roots in {:.3} s: {}",
            w.calls,
            w.seconds,
            list(&mut w.mix.iter().map(|(k, v)| (k.to_string(), *v)))
        )),
    ];
    if !dropped.is_empty() {
        comments.push(Comment::new(&format!(
            "Not modelled: {}",
            list(&mut dropped.into_iter())
        )));
    }
    comments
}

/// The workload around the loop: variables of the sizes, the filesets (the files touched,
/// with room for those created over many loops), one process of `nthreads` threads.
fn workload(w: &Window, s: &Scale, comments: Vec<Comment>, flowops: Vec<Flowop>) -> Workload {
    let int = Value::Int;
    let var = |n: &str| Value::Var(ident(n));
    let name = |n: &str| Value::Name(ident(n));
    let existing = w.files.len() as u64 - w.created.min(w.files.len() as u64);
    let per_loop: u64 = w
        .groups
        .iter()
        .filter(|(k, _)| k.1)
        .map(|(_, g)| s.reps(g.n))
        .sum();
    let entries = existing.max(10);
    let new_entries = (per_loop * 500).clamp(100, 200_000);
    let tab = |v: &Sizes, fallback: u64| randtable(v).map_or(int(fallback), Value::Tabular);
    let quoted = |s: &str| Value::Quoted(Quoted::new(s).expect("a plain path"));
    let fileset = |fs: &str, n: u64, size: Value, prealloc: u64| {
        vec![
            (ident("name"), name(fs)),
            (ident("path"), var("dir")),
            (ident("entries"), int(n)),
            (ident("dirwidth"), int(20)),
            (ident("size"), size),
            (ident("prealloc"), int(prealloc)),
        ]
    };
    Workload {
        comments,
        vars: vec![
            (ident("dir"), quoted("/tmp")),
            (ident("nthreads"), int(w.threads.max(1))),
            (ident("readsize"), tab(&w.read_sizes, 4096)),
            (ident("writesize"), tab(&w.write_sizes, 4096)),
            (ident("filesize"), tab(&w.open_sizes, 4096)),
        ],
        filesets: vec![
            fileset("traced", entries, var("filesize"), 100),
            fileset("created", new_entries, int(4096), 0),
        ],
        process: vec![(ident("name"), name("model")), (ident("instances"), int(1))],
        thread: vec![
            (ident("name"), name("model")),
            (ident("memsize"), int(16 << 20)),
            (ident("instances"), var("nthreads")),
        ],
        flowops,
        run_s: 10,
    }
}

/// How close one trace is to another.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Comparison {
    /// The op mix of each (shares per category) and its total variation distance.
    pub mix_reference: BTreeMap<String, f64>,
    pub mix_other: BTreeMap<String, f64>,
    pub op_mix_tvd: f64,
    /// Kolmogorov–Smirnov distances of requested read sizes, write sizes and the sizes of
    /// files when opened (absent when either side has none).
    pub read_size_ks: Option<f64>,
    pub write_size_ks: Option<f64>,
    pub file_size_ks: Option<f64>,
    pub calls_per_s_reference: f64,
    pub calls_per_s_other: f64,
    pub bytes_per_s_reference: f64,
    pub bytes_per_s_other: f64,
}

fn shares(m: &BTreeMap<&'static str, u64>) -> BTreeMap<String, f64> {
    let t: u64 = m.values().sum();
    m.iter()
        .map(|(k, v)| (k.to_string(), *v as f64 / t.max(1) as f64))
        .collect()
}

/// The Kolmogorov–Smirnov distance of two samples (value counts).
fn ks(a: &Sizes, b: &Sizes) -> Option<f64> {
    let (na, nb) = (a.values().sum::<u64>(), b.values().sum::<u64>());
    if na == 0 || nb == 0 {
        return None;
    }
    let values: std::collections::BTreeSet<u64> = a.keys().chain(b.keys()).copied().collect();
    let (mut i, mut j, mut d) = (0u64, 0u64, 0f64);
    for v in values {
        i += a.get(&v).copied().unwrap_or(0);
        j += b.get(&v).copied().unwrap_or(0);
        d = d.max((i as f64 / na as f64 - j as f64 / nb as f64).abs());
        if i == na || j == nb {
            // One sample is used up: from here on the distance only shrinks.
            break;
        }
    }
    Some(d)
}

fn compare(wa: &Window, wb: &Window) -> Comparison {
    let (ma, mb) = (shares(&wa.mix), shares(&wb.mix));
    let keys: std::collections::BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
    let tvd = 0.5
        * keys
            .iter()
            .map(|k| (ma.get(*k).unwrap_or(&0.0) - mb.get(*k).unwrap_or(&0.0)).abs())
            .sum::<f64>();
    let rate = |w: &Window, x: f64| x / w.seconds.max(1e-9);
    Comparison {
        op_mix_tvd: tvd,
        read_size_ks: ks(&wa.read_sizes, &wb.read_sizes),
        write_size_ks: ks(&wa.write_sizes, &wb.write_sizes),
        file_size_ks: ks(&wa.open_sizes, &wb.open_sizes),
        calls_per_s_reference: rate(wa, wa.calls as f64),
        calls_per_s_other: rate(wb, wb.calls as f64),
        bytes_per_s_reference: rate(wa, wa.bytes as f64),
        bytes_per_s_other: rate(wb, wb.bytes as f64),
        mix_reference: ma,
        mix_other: mb,
    }
}

fn print_comparison(c: &Comparison, out: &mut impl std::io::Write) -> std::io::Result<()> {
    writeln!(out, "{:<12} {:>10} {:>10}", "op", "reference", "other")?;
    let keys: std::collections::BTreeSet<&String> =
        c.mix_reference.keys().chain(c.mix_other.keys()).collect();
    for k in keys {
        writeln!(
            out,
            "{k:<12} {:>9.1}% {:>9.1}%",
            c.mix_reference.get(k).unwrap_or(&0.0) * 100.0,
            c.mix_other.get(k).unwrap_or(&0.0) * 100.0
        )?;
    }
    let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    writeln!(out, "op mix: total variation distance {:.3}", c.op_mix_tvd)?;
    writeln!(
        out,
        "sizes (Kolmogorov-Smirnov): reads {}, writes {}, files at open {}",
        f(c.read_size_ks),
        f(c.write_size_ks),
        f(c.file_size_ks)
    )?;
    writeln!(
        out,
        "throughput: {:.0} vs {:.0} calls/s ({:.2}x), {} vs {} per s",
        c.calls_per_s_reference,
        c.calls_per_s_other,
        c.calls_per_s_other / c.calls_per_s_reference.max(1e-9),
        fsbench_base::units::human_bytes(c.bytes_per_s_reference),
        fsbench_base::units::human_bytes(c.bytes_per_s_other)
    )
}

pub fn main(a: &DistillArgs) -> Result<()> {
    fsbench_base::export::check::outputs(&fsbench_base::export::check::Outputs::outputs(a))?;
    // Streamed: memory follows the distinct paths and sizes, not the trace's length.
    let (h, wa) = analyse_file(&a.trace)?;
    let text = printer::print(&model(&h, &wa)?);
    fsbench_base::export::write_text(&a.output, &text, "workload file")?;
    fsbench_base::errln!("fsbench: wrote {}", a.output.display());
    if !a.check {
        return Ok(());
    }
    let dir = a.dir.as_ref().expect("clap requires --dir with --check");
    let me = std::env::current_exe()?;
    let scratch = super::ScratchDir::new("model").context("a directory for the model's trace")?;
    let run_trace = scratch.join("model.trace");
    let st = std::process::Command::new(&me)
        .arg("trace")
        .arg("record")
        .arg("-o")
        .arg(&run_trace)
        .arg("--root")
        .arg(dir)
        .arg("--")
        .arg(&me)
        .args(["run"])
        .arg(&a.output)
        .arg("--dir")
        .arg(dir)
        .args(["--quiet", "--continue-when-exhausted", "--duration"])
        .arg(a.duration.to_string())
        .status()
        .context("running the model under trace record")?;
    if !st.success() {
        bail!("the model's traced run failed ({st})");
    }
    let (_, wb) = analyse_file(&run_trace)?;
    drop(scratch);
    let c = compare(&wa, &wb);
    print_comparison(&c, &mut fsbench_base::console::Stdout)?;
    let worst_ks = [c.read_size_ks, c.write_size_ks, c.file_size_ks]
        .into_iter()
        .flatten()
        .fold(0.0, f64::max);
    if c.op_mix_tvd > a.max_tvd || worst_ks > a.max_ks {
        bail!(
            "the model differs from the trace: op mix {:.3} (at most {}), worst size distance {:.3} (at most {})",
            c.op_mix_tvd,
            a.max_tvd,
            worst_ks,
            a.max_ks
        );
    }
    Ok(())
}

pub fn compare_main(a: &CompareArgs) -> Result<()> {
    fsbench_base::export::check::outputs(&fsbench_base::export::check::Outputs::outputs(a))?;
    let (_, wa) = analyse_file(&a.reference)?;
    let (_, wb) = analyse_file(&a.other)?;
    let c = compare(&wa, &wb);
    if let Some(j) = &a.json {
        let t = serde_json::to_string_pretty(&c)? + "\n";
        fsbench_base::export::write_text(j, &t, "JSON file")?;
    }
    let displaced = fsbench_base::export::report::Displaced::ToStderr;
    fsbench_base::export::report::text_beside(&[a.json.as_deref()], displaced, |mut o| {
        print_comparison(&c, &mut o)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workload text for a trace in memory, printed by [`printer::print`].
    fn distill(h: &Header, records: &[Record]) -> Result<String> {
        Ok(printer::print(&model(h, &analyse(h, records))?))
    }

    /// The window of records in memory.
    fn analyse(h: &Header, records: &[Record]) -> Window {
        let win = crate::trace::measured_window(records);
        let mut a = Analyser::new(h);
        records[..win.start].iter().for_each(|r| a.skip(r));
        records[win].iter().for_each(|r| a.add(r));
        a.finish()
    }

    #[test]
    fn randtables_add_up_to_100() {
        let t = randtable(&sizes(&[1, 1, 1, 2, 3, 3])).unwrap();
        assert_eq!(t, vec![(50, 1, 1), (17, 2, 2), (33, 3, 3)]);
        let many: Vec<u64> = (1..1000).collect();
        let t = randtable(&sizes(&many)).unwrap();
        assert_eq!(t.len(), 25, "25 bins");
        assert_eq!((t[0].1, t[0].2), (1, 39), "the first 39 of 999 values");
        assert_eq!((t[24].1, t[24].2), (960, 999), "the last 40");
        let sum: u64 = t.iter().map(|r| r.0).sum();
        assert_eq!(sum, 100, "{t:?}");
        // A value many share stays a point in the bins.
        let mut skewed: Vec<u64> = (1..=100).collect();
        skewed.extend(std::iter::repeat_n(4096, 900));
        let t = randtable(&sizes(&skewed)).unwrap();
        assert!(t.iter().any(|r| r.1 == 4096 && r.2 == 4096), "{t:?}");
    }

    fn sizes(v: &[u64]) -> Sizes {
        let mut s = Sizes::new();
        v.iter().for_each(|&x| push(&mut s, x));
        s
    }

    #[test]
    fn ks_of_identical_samples_is_zero_and_of_disjoint_one() {
        assert_eq!(ks(&sizes(&[1, 2, 3]), &sizes(&[3, 2, 1])), Some(0.0));
        assert_eq!(ks(&sizes(&[1, 1]), &sizes(&[5, 5])), Some(1.0));
        assert_eq!(ks(&sizes(&[1, 2, 3, 4]), &sizes(&[3, 4])), Some(0.5));
        assert_eq!(ks(&sizes(&[]), &sizes(&[1])), None);
    }

    #[test]
    fn a_trace_file_is_analysed_as_in_memory() {
        let root = "/w";
        let h = Header {
            roots: vec![root.into()],
            ..Default::default()
        };
        let mut recs = Vec::new();
        for i in 0..300u64 {
            let r = |call: Call, path: Option<String>, fd, size, ret| Record {
                start_ns: i * 5_000_000 + ret as u64,
                tid: 1 + (i % 3) as u32,
                syscall: call.name().into(),
                call,
                path,
                fd,
                size,
                ret,
                flags: (call == Call::Open && i % 4 == 0).then_some(libc::O_CREAT as u64),
                ..Default::default()
            };
            recs.push(r(
                Call::Open,
                Some(format!("{root}/f{}", i % 17)),
                None,
                None,
                3,
            ));
            recs.push(r(Call::Read, None, Some(3), Some(1 + i * 37 % 5000), 7));
            recs.push(r(Call::Write, None, Some(3), Some(512), 512));
            recs.push(r(Call::Close, None, Some(3), None, 0));
            recs.push(r(Call::Other, Some(format!("{root}/f1")), None, None, 0));
        }
        let f = std::env::temp_dir().join(format!("fsbench-analyse-{}.trace", std::process::id()));
        format::write_all(&f, &h, &recs).unwrap();
        let (_, wf) = analyse_file(&f).unwrap();
        std::fs::remove_file(&f).unwrap();
        let wm = analyse(&h, &recs);
        assert_eq!(format!("{wf:?}"), format!("{wm:?}"));
        let text = distill(&h, &recs).unwrap();
        assert_eq!(printer::print(&model(&h, &wf).unwrap()), text);
        assert!(text.contains("randtable="), "{text}");
    }
}
