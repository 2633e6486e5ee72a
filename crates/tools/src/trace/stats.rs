//! `fsbench trace stats`: what a trace did — calls, bytes, I/O sizes, inter-arrival times,
//! files touched, read/write mix, sequentiality, threads — and the bookkeeping that
//! [`super::distill`] shares: which file each descriptor names, where each open file's
//! position is, how big each file is.

use super::format::{self, Call, EntryKind, Header, Record};
use anyhow::Result;
use clap::Args;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// The trace file.
    pub trace: PathBuf,
    /// Count every call, not only those below the trace's roots (libraries, /proc, ...).
    #[arg(long)]
    pub all_paths: bool,
    /// Only the measured window of an fsbench run recorded under `trace record`.
    #[arg(long)]
    pub window: bool,
    /// Write the statistics as JSON to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl fsbench_base::export::check::Outputs for StatsArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        vec![named(self.json.as_deref(), "--json")]
    }
}

/// One call type's counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallStat {
    pub count: u64,
    pub failed: u64,
    pub total_us: f64,
    pub mean_us: f64,
}

/// A log2 histogram: `(lower bound, count)` for each non-empty bucket `[2^k, 2^(k+1))`
/// (bucket 0 holds 0).
pub type Log2 = Vec<(u64, u64)>;

fn log2_push(h: &mut BTreeMap<u64, u64>, v: u64) {
    let lo = if v == 0 {
        0
    } else {
        1u64 << (63 - v.leading_zeros())
    };
    *h.entry(lo).or_default() += 1;
}

/// One traced thread's activity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadStat {
    pub tid: u32,
    pub calls: u64,
    pub bytes: u64,
    pub first_s: f64,
    pub last_s: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceStats {
    pub command: String,
    pub records: u64,
    /// Records counted (below the roots unless `--all-paths`), and those left out.
    pub counted: u64,
    pub outside_roots: u64,
    pub duration_s: f64,
    /// Per system call as traced, and per call family.
    pub syscalls: BTreeMap<String, CallStat>,
    pub families: BTreeMap<String, CallStat>,
    pub read_calls: u64,
    pub write_calls: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Requested sizes of reads and writes, and inter-arrival times per thread (µs).
    pub read_sizes: Log2,
    pub write_sizes: Log2,
    pub interarrival_us: Log2,
    pub files_touched: u64,
    pub dirs_touched: u64,
    /// Share of reads (writes) that start where the previous one on the same open file
    /// ended (the first at offset 0 counts as sequential).
    pub sequential_read_pct: f64,
    pub sequential_write_pct: f64,
    pub threads: Vec<ThreadStat>,
}

/// An open file while following a trace.
#[derive(Debug, Clone, Default)]
pub struct Open {
    pub path: Option<String>,
    pub inside: bool,
    pub pos: u64,
    /// Where the last read or write on it ended (None before the first).
    pub last_end: Option<u64>,
    pub append: bool,
    pub cloexec: bool,
    /// Whether it was created by its open (O_CREAT of a file that did not exist).
    pub created: bool,
    /// Descriptors naming it: it is forgotten when the last one is closed.
    refs: u32,
}

/// Follows descriptors, positions and file sizes through a trace, record by record.
///
/// Descriptor tables are per process (threads created with `CLONE_FILES` share one, forks
/// copy it, exec closes the close-on-exec ones); open files are shared between the
/// descriptors that name them (dup, fork), so positions are too. File sizes start from the
/// header's initial tree and follow creates, writes, truncations, renames and unlinks of
/// files (a renamed directory's files keep their old paths: an approximation).
///
/// Memory follows what is open and the distinct paths, not the trace's length: an open
/// file is forgotten when its last descriptor is closed.
pub struct Tracker {
    roots: Vec<String>,
    table_of: HashMap<u32, usize>,
    tables: Vec<HashMap<i32, usize>>,
    /// Open files by id (ids are never reused).
    pub opens: HashMap<usize, Open>,
    next_open: usize,
    pub sizes: HashMap<String, u64>,
    pub dirs: HashSet<String>,
}

impl Tracker {
    pub fn new(h: &Header) -> Tracker {
        let mut sizes = HashMap::new();
        let mut dirs = HashSet::new();
        for e in &h.initial {
            let Some(root) = h.roots.get(e.root as usize) else {
                continue;
            };
            let p = if e.path.is_empty() {
                root.clone()
            } else {
                format!("{}/{}", root.trim_end_matches('/'), e.path)
            };
            match e.kind {
                EntryKind::File => {
                    sizes.insert(p, e.size);
                }
                EntryKind::Dir => {
                    dirs.insert(p);
                }
                _ => {}
            }
        }
        Tracker {
            roots: h.roots.clone(),
            table_of: HashMap::new(),
            tables: Vec::new(),
            opens: HashMap::new(),
            next_open: 0,
            sizes,
            dirs,
        }
    }

    pub fn inside(&self, p: &str) -> bool {
        self.roots.iter().any(|r| {
            p == r
                || r == "/"
                || p.strip_prefix(r.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    fn table(&mut self, tid: u32) -> usize {
        if let Some(&t) = self.table_of.get(&tid) {
            return t;
        }
        self.tables.push(HashMap::new());
        let t = self.tables.len() - 1;
        self.table_of.insert(tid, t);
        t
    }

    /// Descriptor `fd` of table `t` names open file `o` now (replacing what it named).
    fn put(&mut self, t: usize, fd: i32, o: usize) {
        if let Some(x) = self.opens.get_mut(&o) {
            x.refs += 1;
        }
        if let Some(old) = self.tables[t].insert(fd, o) {
            self.unref(old);
        }
    }

    /// A descriptor naming `o` is gone.
    fn unref(&mut self, o: usize) {
        if let Some(x) = self.opens.get_mut(&o) {
            x.refs = x.refs.saturating_sub(1);
            if x.refs == 0 {
                self.opens.remove(&o);
            }
        }
    }

    /// The open file a descriptor of `tid` names.
    pub fn open_of(&mut self, tid: u32, fd: Option<i32>) -> Option<usize> {
        let t = self.table(tid);
        fd.and_then(|fd| self.tables[t].get(&fd).copied())
    }

    /// The file a record is about (its path, or its descriptor's) and whether it lies
    /// below the roots. Call before [`Tracker::apply`].
    pub fn file_of(&mut self, r: &Record) -> (Option<String>, bool) {
        if let Some(p) = &r.path {
            return (Some(p.clone()), self.inside(p));
        }
        match self.open_of(r.tid, r.fd) {
            Some(o) => self
                .opens
                .get(&o)
                .map_or((None, false), |x| (x.path.clone(), x.inside)),
            None => (None, false),
        }
    }

    /// Advance past `r`. Returns, for a read or write, whether it is sequential (1 when it
    /// starts where the open file's previous access ended, or at 0 for the first, else 0).
    pub fn apply(&mut self, r: &Record) -> Option<u64> {
        let t = self.table(r.tid);
        let ok = r.ok();
        match r.call {
            Call::Read | Call::Write => return self.read_write(t, r),
            Call::Open if ok => self.open(t, r),
            Call::Dup if ok => {
                if let Some(o) = r.fd.and_then(|fd| self.tables[t].get(&fd).copied()) {
                    self.put(t, r.ret as i32, o);
                }
            }
            Call::Close => {
                if let Some(o) = self.tables[t].remove(&r.fd.unwrap_or(-1)) {
                    self.unref(o);
                }
            }
            Call::Clone if ok && r.ret > 0 => self.clone_table(t, r),
            Call::Exec if ok => self.exec(t),
            Call::Seek if ok => {
                if let Some(o) = r.fd.and_then(|fd| self.tables[t].get(&fd).copied()) {
                    if let Some(x) = self.opens.get_mut(&o) {
                        x.pos = r.ret as u64;
                    }
                }
            }
            Call::CopyRange | Call::Sendfile if ok => self.copy(t, r),
            _ if ok => self.paths(r),
            _ => {}
        }
        None
    }

    /// A successful open: a new open file (created, or truncated, sizes 0).
    fn open(&mut self, t: usize, r: &Record) {
        let f = r.flags.unwrap_or(0) as i32;
        let path = r.path.clone();
        let mut created = false;
        if let Some(p) = &path {
            if f & libc::O_CREAT != 0 && !self.sizes.contains_key(p) {
                created = true;
                self.sizes.insert(p.clone(), 0);
            }
            if f & libc::O_TRUNC != 0 && f & libc::O_ACCMODE != libc::O_RDONLY {
                self.sizes.insert(p.clone(), 0);
            }
        }
        let inside = path.as_deref().is_some_and(|p| self.inside(p));
        let o = self.next_open;
        self.next_open += 1;
        self.opens.insert(
            o,
            Open {
                path,
                inside,
                append: f & libc::O_APPEND != 0,
                cloexec: f & libc::O_CLOEXEC != 0,
                created,
                ..Default::default()
            },
        );
        self.put(t, r.ret as i32, o);
    }

    /// A successful clone: the child shares the table (`CLONE_FILES`) or gets a copy.
    fn clone_table(&mut self, t: usize, r: &Record) {
        let child = r.ret as u32;
        if r.flags.unwrap_or(0) & libc::CLONE_FILES as u64 != 0 {
            self.table_of.insert(child, t);
        } else {
            let copy = self.tables[t].clone();
            for o in copy.values() {
                if let Some(x) = self.opens.get_mut(o) {
                    x.refs += 1;
                }
            }
            self.tables.push(copy);
            let n = self.tables.len() - 1;
            self.table_of.insert(child, n);
        }
    }

    /// A successful exec: the close-on-exec descriptors close.
    fn exec(&mut self, t: usize) {
        let opens = &self.opens;
        let gone: Vec<usize> = self.tables[t]
            .values()
            .copied()
            .filter(|o| opens.get(o).is_some_and(|x| x.cloexec))
            .collect();
        self.tables[t].retain(|_, o| !opens.get(o).is_some_and(|x| x.cloexec));
        for o in gone {
            self.unref(o);
        }
    }

    /// A read or a write: its open file's position and the file's size move on; whether it
    /// is sequential (see [`Tracker::apply`]).
    fn read_write(&mut self, t: usize, r: &Record) -> Option<u64> {
        let ok = r.ok();
        let o = r.fd.and_then(|fd| self.tables[t].get(&fd).copied())?;
        let n = r.ret.max(0) as u64;
        let file_size = self
            .opens
            .get(&o)?
            .path
            .as_ref()
            .and_then(|p| self.sizes.get(p).copied())
            .unwrap_or(0);
        let open = self.opens.get_mut(&o)?;
        let start = match r.offset {
            Some(off) => off,
            None if r.call == Call::Write && open.append => file_size,
            None => open.pos,
        };
        if r.offset.is_none() && ok {
            open.pos = start + n;
        }
        let was = open.last_end;
        if ok {
            open.last_end = Some(start + n);
        }
        if r.call == Call::Write && ok {
            if let Some(p) = open.path.clone() {
                let s = self.sizes.entry(p).or_default();
                *s = (*s).max(start + n);
            }
        }
        Some(
            if was.is_some_and(|e| e == start) || (was.is_none() && start == 0) {
                1
            } else {
                0
            },
        )
    }

    /// A successful sendfile or copy_file_range: the written file's position and size.
    fn copy(&mut self, t: usize, r: &Record) {
        let out = match r.call {
            Call::Sendfile => r.fd,
            _ => r.fd2,
        };
        let out = out.and_then(|fd| self.tables[t].get(&fd).copied());
        if let Some(open) = out.and_then(|o| self.opens.get_mut(&o)) {
            let n = r.ret.max(0) as u64;
            let start = open.pos;
            open.pos += n;
            if let Some(p) = open.path.clone() {
                let s = self.sizes.entry(p).or_default();
                *s = (*s).max(start + n);
            }
        }
    }

    /// Another successful call: the sizes and directories that paths change.
    fn paths(&mut self, r: &Record) {
        match r.call {
            Call::Truncate => {
                let p = r.path.clone().or_else(|| {
                    self.open_of(r.tid, r.fd)
                        .and_then(|o| self.opens.get(&o).and_then(|x| x.path.clone()))
                });
                if let Some(p) = p {
                    self.sizes.insert(p, r.size.unwrap_or(0));
                }
            }
            Call::Unlink => {
                if let Some(p) = &r.path {
                    self.sizes.remove(p);
                }
            }
            Call::Mkdir => {
                if let Some(p) = &r.path {
                    self.dirs.insert(p.clone());
                }
            }
            Call::Rmdir => {
                if let Some(p) = &r.path {
                    self.dirs.remove(p);
                }
            }
            Call::Rename => {
                if let (Some(a), Some(b)) = (&r.path, &r.path2) {
                    if let Some(s) = self.sizes.remove(a) {
                        self.sizes.insert(b.clone(), s);
                    }
                }
            }
            Call::Link => {
                if let (Some(a), Some(b)) = (&r.path, &r.path2) {
                    if let Some(&s) = self.sizes.get(a) {
                        self.sizes.insert(b.clone(), s);
                    }
                }
            }
            _ => {}
        }
    }
}

fn to_log2(h: BTreeMap<u64, u64>) -> Log2 {
    h.into_iter().collect()
}

/// The statistics of `records` (all of them, or those below the roots).
pub fn compute(h: &Header, records: &[Record], all_paths: bool) -> TraceStats {
    let mut acc = Acc::new(h, all_paths);
    for r in records {
        acc.add(r);
    }
    acc.finish()
}

/// Statistics gathered one record at a time: memory follows the distinct paths, threads
/// and sizes seen, not the number of records.
pub struct Acc {
    s: TraceStats,
    all_paths: bool,
    tr: Tracker,
    rs: BTreeMap<u64, u64>,
    ws: BTreeMap<u64, u64>,
    ia: BTreeMap<u64, u64>,
    last_start: HashMap<u32, u64>,
    threads: BTreeMap<u32, ThreadStat>,
    files: HashSet<String>,
    dirs: HashSet<String>,
    /// Sequential reads, writes, and all reads and writes with a known start.
    seq: [u64; 4],
    span: Option<(u64, u64)>,
}

impl Acc {
    pub fn new(h: &Header, all_paths: bool) -> Acc {
        Acc {
            s: TraceStats {
                command: h.command.join(" "),
                ..Default::default()
            },
            all_paths,
            tr: Tracker::new(h),
            rs: BTreeMap::new(),
            ws: BTreeMap::new(),
            ia: BTreeMap::new(),
            last_start: HashMap::new(),
            threads: BTreeMap::new(),
            files: HashSet::new(),
            dirs: HashSet::new(),
            seq: [0; 4],
            span: None,
        }
    }

    pub fn add(&mut self, r: &Record) {
        let s = &mut self.s;
        s.records += 1;
        let end = r.start_ns + r.dur_ns;
        self.span = Some(match self.span {
            None => (r.start_ns, end),
            Some((a, b)) => (a, b.max(end)),
        });
        let (file, inside) = self.tr.file_of(r);
        let seq = self.tr.apply(r);
        let structural = matches!(r.call, Call::Clone | Call::Exit | Call::Exec | Call::Wait);
        if !self.all_paths && !inside && !structural {
            s.outside_roots += 1;
            return;
        }
        if !self.all_paths && structural {
            return;
        }
        s.counted += 1;
        let us = r.dur_ns as f64 / 1000.0;
        for (map, key) in [
            (&mut s.syscalls, r.syscall.as_str()),
            (&mut s.families, r.call.name()),
        ] {
            let c = match map.get_mut(key) {
                Some(c) => c,
                None => map.entry(key.to_string()).or_default(),
            };
            c.count += 1;
            c.failed += (!r.ok()) as u64;
            c.total_us += us;
        }
        if let Some(prev) = self.last_start.insert(r.tid, r.start_ns) {
            log2_push(&mut self.ia, (r.start_ns - prev.min(r.start_ns)) / 1000);
        }
        let t = self.threads.entry(r.tid).or_insert_with(|| ThreadStat {
            tid: r.tid,
            first_s: r.start_ns as f64 / 1e9,
            ..Default::default()
        });
        t.calls += 1;
        t.last_s = r.start_ns as f64 / 1e9;
        let moved = if r.ok()
            && matches!(
                r.call,
                Call::Read | Call::Write | Call::Sendfile | Call::CopyRange
            ) {
            r.ret as u64
        } else {
            0
        };
        t.bytes += moved;
        match r.call {
            Call::Read => {
                s.read_calls += 1;
                s.bytes_read += moved;
                log2_push(&mut self.rs, r.size.unwrap_or(0));
                if let Some(q) = seq {
                    self.seq[2] += 1;
                    self.seq[0] += q;
                }
            }
            Call::Write | Call::Sendfile | Call::CopyRange => {
                s.write_calls += 1;
                s.bytes_written += moved;
                // sendfile and copy_file_range ask for "as much as there is".
                let asked = match r.call {
                    Call::Write => r.size.unwrap_or(moved),
                    _ => moved,
                };
                log2_push(&mut self.ws, asked);
                if let Some(q) = seq {
                    self.seq[3] += 1;
                    self.seq[1] += q;
                }
            }
            _ => {}
        }
        if let Some(f) = file {
            if matches!(r.call, Call::Mkdir | Call::Rmdir | Call::Getdents)
                || self.tr.dirs.contains(&f)
            {
                self.dirs.insert(f);
            } else {
                self.files.insert(f);
            }
        }
    }

    pub fn finish(self) -> TraceStats {
        let mut s = self.s;
        let (first, last) = self.span.unwrap_or((0, 0));
        s.duration_s = last.saturating_sub(first) as f64 / 1e9;
        for c in s.syscalls.values_mut().chain(s.families.values_mut()) {
            c.mean_us = c.total_us / c.count.max(1) as f64;
        }
        s.read_sizes = to_log2(self.rs);
        s.write_sizes = to_log2(self.ws);
        s.interarrival_us = to_log2(self.ia);
        s.files_touched = self.files.len() as u64;
        s.dirs_touched = self.dirs.len() as u64;
        let [seq_r, seq_w, n_r, n_w] = self.seq;
        s.sequential_read_pct = 100.0 * seq_r as f64 / n_r.max(1) as f64;
        s.sequential_write_pct = 100.0 * seq_w as f64 / n_w.max(1) as f64;
        s.threads = self.threads.into_values().collect();
        s
    }
}

/// 4096 -> "4K", 1048576 -> "1M".
fn short(v: u64) -> String {
    match v {
        v if v >= 1 << 30 && v % (1 << 30) == 0 => format!("{}G", v >> 30),
        v if v >= 1 << 20 && v % (1 << 20) == 0 => format!("{}M", v >> 20),
        v if v >= 1 << 10 && v % (1 << 10) == 0 => format!("{}K", v >> 10),
        v => v.to_string(),
    }
}

fn hist_line(out: &mut impl Write, name: &str, h: &Log2, unit: &str) -> std::io::Result<()> {
    if h.is_empty() {
        return Ok(());
    }
    write!(out, "{name:<16}")?;
    for (lo, n) in h {
        write!(out, " {}{unit}:{n}", short(*lo))?;
    }
    writeln!(out)
}

pub fn print_text(s: &TraceStats, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{}: {} over {:.3} s, {} counted ({} outside the roots)",
        if s.command.is_empty() {
            "trace"
        } else {
            &s.command
        },
        fsbench_base::units::count(s.records, "call"),
        s.duration_s,
        s.counted,
        s.outside_roots
    )?;
    writeln!(
        out,
        "{:<20} {:>9} {:>8} {:>10}",
        "call", "count", "failed", "mean(us)"
    )?;
    let mut v: Vec<(&String, &CallStat)> = s.syscalls.iter().collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.1.count));
    for (k, c) in v {
        // As text: a crafted name cannot send control sequences to the terminal.
        let k = k.escape_debug().to_string();
        writeln!(
            out,
            "{k:<20} {:>9} {:>8} {:>10.1}",
            c.count, c.failed, c.mean_us
        )?;
    }
    writeln!(
        out,
        "reads: {} calls, {}; writes: {} calls, {}; read/write {:.2} by bytes, {:.2} by calls",
        s.read_calls,
        fsbench_base::units::human_bytes(s.bytes_read as f64),
        s.write_calls,
        fsbench_base::units::human_bytes(s.bytes_written as f64),
        s.bytes_read as f64 / s.bytes_written.max(1) as f64,
        s.read_calls as f64 / s.write_calls.max(1) as f64
    )?;
    writeln!(
        out,
        "sequential: {:.1}% of reads, {:.1}% of writes; {} files and {} directories touched",
        s.sequential_read_pct, s.sequential_write_pct, s.files_touched, s.dirs_touched
    )?;
    hist_line(out, "read sizes", &s.read_sizes, "")?;
    hist_line(out, "write sizes", &s.write_sizes, "")?;
    hist_line(out, "inter-arrival", &s.interarrival_us, "us")?;
    writeln!(out, "threads: {}", s.threads.len())?;
    for t in &s.threads {
        writeln!(
            out,
            "  {:>8}  {:>7} calls  {:>10}  {:.3}-{:.3} s",
            t.tid,
            t.calls,
            fsbench_base::units::human_bytes(t.bytes as f64),
            t.first_s,
            t.last_s
        )?;
    }
    Ok(())
}

pub fn main(a: &StatsArgs) -> Result<()> {
    // Streamed: one pass to find the measured window when asked, one to count.
    let window = if a.window {
        super::measured_window_of(&a.trace)?
    } else {
        0..u64::MAX
    };
    let mut rd = format::Reader::open(&a.trace)?;
    let mut acc = Acc::new(&rd.header, a.all_paths);
    let mut i = 0u64;
    while let Some(r) = rd
        .next_record()
        .map_err(|e| anyhow::anyhow!("trace {}: {e}", a.trace.display()))?
    {
        if window.contains(&i) {
            acc.add(&r);
        }
        i += 1;
    }
    let s = acc.finish();
    if let Some(j) = &a.json {
        let text = serde_json::to_string_pretty(&s)? + "\n";
        fsbench_base::export::write_text(j, &text, "JSON file")?;
    }
    let displaced = fsbench_base::export::report::Displaced::ToStderr;
    fsbench_base::export::report::text_beside(&[a.json.as_deref()], displaced, |mut o| {
        print_text(&s, &mut o)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(tid: u32, call: Call, path: Option<&str>, fd: Option<i32>, ret: i64) -> Record {
        Record {
            tid,
            syscall: call.name().into(),
            call,
            path: path.map(String::from),
            fd,
            ret,
            ..Default::default()
        }
    }

    #[test]
    fn counts_sizes_and_sequentiality_follow_descriptors() {
        let h = Header {
            roots: vec!["/w".into()],
            initial: vec![format::Initial {
                root: 0,
                path: "a".into(),
                kind: EntryKind::File,
                size: 8192,
                mode: 0o644,
                target: None,
            }],
            ..Default::default()
        };
        let mut recs = vec![rec(1, Call::Open, Some("/w/a"), None, 3)];
        for (i, off) in [None, None, Some(100u64)].into_iter().enumerate() {
            let mut r = rec(1, Call::Read, None, Some(3), 4096);
            r.size = Some(4096);
            r.offset = off;
            r.start_ns = (i as u64 + 1) * 1000;
            recs.push(r);
        }
        recs.push(rec(1, Call::Close, None, Some(3), 0));
        recs.push(rec(1, Call::Open, Some("/usr/lib/x"), None, 3));
        let s = compute(&h, &recs, false);
        assert_eq!(s.read_calls, 3);
        assert_eq!(s.bytes_read, 3 * 4096);
        assert_eq!(s.outside_roots, 1);
        // Two reads in a row from 0, then a pread elsewhere.
        assert!((s.sequential_read_pct - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!(s.read_sizes, vec![(4096, 3)]);
        assert_eq!(s.files_touched, 1);
        assert_eq!(s.families["open"].count, 1);
    }
}
