//! Capturing traces: `fsbench trace record` runs a command under `strace` and converts its
//! log; `fsbench trace import` converts a log recorded elsewhere with the same options.
//!
//! # Reading strace's log
//! strace is run with [`STRACE_ARGS`]: every thread and child (`-f`), absolute start times
//! (`-ttt`), durations (`-T`), descriptors annotated with what they name (`-yy`: `3</a/b>`,
//! also `AT_FDCWD</cwd>`), data buffers left out (`-s 0`), no signal lines. A line is
//!
//! ```text
//! TID SECONDS.MICROS NAME(ARGS) = RESULT[<annotation>] [ERRNO (text)] <DURATION>
//! TID SECONDS.MICROS NAME(ARGS <unfinished ...>          (another thread ran meanwhile)
//! TID SECONDS.MICROS <... NAME resumed>REST) = RESULT ...
//! TID SECONDS.MICROS +++ exited with 0 +++
//! ```
//!
//! Arguments are split at top-level commas (strings, `[]`, `{}`, `()` and the `<...>`
//! annotations nest); strings are unescaped; symbolic flag sets become Linux's numbers.
//! Paths are made absolute with the annotation of the directory descriptor (`AT_FDCWD` is
//! annotated with the working directory, so `*at` calls need no tracking); for the older
//! calls without a directory argument each process's working directory is followed
//! (`chdir`, `fchdir`, inherited by clones, and corrected by every `AT_FDCWD` annotation).
//! A successful open's path is the kernel's: its returned descriptor's annotation.
//!
//! A call still unfinished when the log ends (the command was killed) is dropped and
//! counted with the lines that could not be used.

use super::format::{self, Call, EntryKind, Header, Initial, Record};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// The strace options fsbench records with (before `-o LOG -- COMMAND`).
pub const STRACE_ARGS: &[&str] = &[
    "-f",
    "-ttt",
    "-T",
    "-yy",
    "-s",
    "0",
    "-qq",
    "-e",
    "signal=none",
    "-e",
    "trace=%file,%desc,mmap,munmap,clone,clone3,fork,vfork,execve,execveat,chdir,fchdir",
];

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Where to write the trace.
    #[arg(short, long, value_name = "TRACE")]
    pub output: PathBuf,
    /// A directory the command works in (repeatable; default: the current directory). Its
    /// tree is snapshotted before the command starts, and calls below it are the ones a
    /// replay reproduces.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Keep strace's own log in FILE as well.
    #[arg(long, value_name = "FILE")]
    pub keep_log: Option<PathBuf>,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
#[command(
    after_long_help = "The log must have been written by\n  strace -f -ttt -T -yy -s 0 -qq -e signal=none -e trace=%file,%desc,mmap,munmap,clone,clone3,fork,vfork,execve,execveat,chdir,fchdir -o LOG -- COMMAND"
)]
pub struct ImportArgs {
    /// The strace log.
    pub log: PathBuf,
    /// Where to write the trace.
    #[arg(short, long, value_name = "TRACE")]
    pub output: PathBuf,
    /// The traced command's working directory (default: the first root, else the current
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// A directory whose calls a replay reproduces (repeatable; default: the working
    /// directory).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<String>,
    /// Walk this directory now as the initial state (the tree may have changed since the
    /// log was recorded: off by default). Must be one of the roots.
    #[arg(long, value_name = "DIR")]
    pub snapshot_of: Vec<PathBuf>,
}

/// What a log converted to.
#[derive(Debug, Default)]
pub struct Parsed {
    pub records: Vec<Record>,
    pub started_at: f64,
    pub skipped_lines: u64,
    pub skipped_examples: Vec<String>,
}

/// Per-process state while reading: the working directory.
#[derive(Default, Clone)]
struct Proc {
    cwd: String,
}

struct Reader {
    procs: HashMap<u32, Proc>,
    /// Unfinished calls: tid -> (start, text up to `<unfinished ...>`).
    pending: HashMap<u32, (f64, String)>,
    first_cwd: String,
    out: Vec<(f64, Record)>,
    skipped: u64,
    examples: Vec<String>,
}

/// Convert a log (strace with [`STRACE_ARGS`]); `cwd` is the first process's working
/// directory.
pub fn parse(log: impl BufRead, cwd: &str) -> Result<Parsed> {
    let mut rd = Reader {
        procs: HashMap::new(),
        pending: HashMap::new(),
        first_cwd: normalize(cwd),
        out: Vec::new(),
        skipped: 0,
        examples: Vec::new(),
    };
    for line in log.lines() {
        let line = line.context("reading the strace log")?;
        if line.trim().is_empty() {
            continue;
        }
        if rd.line(&line).is_none() {
            rd.skip(&line);
        }
    }
    // Calls that never finished (the log ends in the middle of them).
    for (_, (_, text)) in std::mem::take(&mut rd.pending) {
        rd.skip(&format!("{text} <unfinished ...> (never resumed)"));
    }
    rd.out.sort_by(|a, b| a.0.total_cmp(&b.0));
    let started_at = rd.out.first().map_or(0.0, |x| x.0);
    let records = rd
        .out
        .into_iter()
        .map(|(t, mut r)| {
            r.start_ns = ((t - started_at) * 1e9).round().max(0.0) as u64;
            r
        })
        .collect();
    Ok(Parsed {
        records,
        started_at,
        skipped_lines: rd.skipped,
        skipped_examples: rd.examples,
    })
}

impl Reader {
    fn skip(&mut self, line: &str) {
        self.skipped += 1;
        if self.examples.len() < 5 {
            self.examples.push(line.chars().take(200).collect());
        }
    }

    fn proc(&mut self, tid: u32) -> &mut Proc {
        let cwd = self.first_cwd.clone();
        self.procs.entry(tid).or_insert_with(|| Proc { cwd })
    }

    /// One line; None when it could not be used.
    fn line(&mut self, line: &str) -> Option<()> {
        let (tid, rest) = line.split_once(' ')?;
        let tid: u32 = tid.trim().parse().ok()?;
        let rest = rest.trim_start();
        let (ts, rest) = rest.split_once(' ')?;
        let t: f64 = ts.parse().ok()?;
        if let Some(what) = rest.strip_prefix("+++ ") {
            if what.starts_with("exited") || what.starts_with("killed") {
                self.out.push((
                    t,
                    Record {
                        tid,
                        syscall: "exit".into(),
                        call: Call::Exit,
                        ret: 0,
                        ..Default::default()
                    },
                ));
            }
            return Some(());
        }
        if rest.starts_with("---") {
            return Some(());
        }
        if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            self.pending.insert(tid, (t, head.trim_end().to_string()));
            return Some(());
        }
        if let Some(r) = rest.strip_prefix("<... ") {
            let (_name, tail) = r.split_once(" resumed>")?;
            let (t0, head) = self.pending.remove(&tid)?;
            let mut text = head;
            // `read(3</a>, ` + `""..., 10) = 10` (strace keeps the separator on one side).
            text.push_str(tail.trim_start());
            return self.call(tid, t0, &text);
        }
        self.call(tid, t, rest)
    }

    /// A complete `NAME(ARGS) = RESULT ... <DUR>`.
    fn call(&mut self, tid: u32, t: f64, text: &str) -> Option<()> {
        let open = text.find('(')?;
        let name = &text[..open];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        let (args, close) = split_args(&text[open + 1..])?;
        let after = text[open + 1 + close + 1..].trim_start();
        let after = after.strip_prefix('=')?.trim_start();
        // Duration at the end: `<0.000012>`.
        let (body, dur) = match after.rfind(" <") {
            Some(i) if after.ends_with('>') => {
                let d: f64 = after[i + 2..after.len() - 1].parse().unwrap_or(0.0);
                (&after[..i], d)
            }
            _ => (after, 0.0),
        };
        let (ret, ret_path) = parse_result(body)?;
        let mut r = Record {
            tid,
            syscall: name.to_string(),
            dur_ns: (dur * 1e9).round() as u64,
            ret,
            ..Default::default()
        };
        let c = CallArgs {
            name,
            args: &args,
            cwd: self.proc(tid).cwd.clone(),
            ret_path,
        };
        // Keep the working directory the kernel reports.
        if let Some(d) = args.iter().find_map(|x| x.strip_prefix("AT_FDCWD<")) {
            if let Some(p) = d.strip_suffix('>') {
                if p.starts_with('/') {
                    self.proc(tid).cwd = normalize(p);
                }
            }
        }
        let keep = opens(&c, &mut r)
            .or_else(|| reads_writes(&c, &mut r))
            .or_else(|| descriptors(&c, &mut r))
            .or_else(|| metadata(&c, &mut r))
            .or_else(|| directories(&c, &mut r))
            .or_else(|| links_renames(&c, &mut r))
            .or_else(|| sizes_mappings(&c, &mut r))
            .or_else(|| self.processes(&c, &mut r))
            .unwrap_or_else(|| other(&c, &mut r));
        if keep {
            self.out.push((t, r));
        }
        Some(())
    }

    /// chdir, fchdir, the clones and exec: the calls that change a process's working
    /// directory or make a process. None when `c` is not one of them.
    fn processes(&mut self, c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
        let (name, a) = (c.name, |i| c.a(i));
        let ok = r.ret >= 0;
        match name {
            "chdir" => {
                r.call = Call::Chdir;
                r.path = c.rel(a(0));
                if ok {
                    if let Some(p) = &r.path {
                        self.proc(r.tid).cwd = p.clone();
                    }
                }
            }
            "fchdir" => {
                r.call = Call::Chdir;
                r.fd = fd_num(a(0));
                if let (true, Some(p)) = (ok, fd_path(a(0))) {
                    self.proc(r.tid).cwd = p;
                }
            }
            "clone" | "clone3" | "fork" | "vfork" => {
                r.call = Call::Clone;
                r.flags = Some(match name {
                    "fork" => libc::SIGCHLD as u64,
                    "vfork" => (libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD) as u64,
                    _ => c
                        .args
                        .iter()
                        .find_map(|x| {
                            struct_field(x, "flags")
                                .or_else(|| x.strip_prefix("flags="))
                                .map(flags)
                        })
                        .unwrap_or(0),
                });
                if ok && r.ret > 0 {
                    let parent = self.proc(r.tid).clone();
                    self.procs.insert(r.ret as u32, parent);
                }
            }
            "execve" => {
                r.call = Call::Exec;
                r.path = c.rel(a(0));
            }
            "execveat" => {
                r.call = Call::Exec;
                r.path = c.at(a(0), a(1));
            }
            "exit" | "exit_group" => return Some(false),
            _ => return None,
        }
        Some(true)
    }
}

/// One call's name and arguments, and what its relative paths resolve against.
struct CallArgs<'a> {
    name: &'a str,
    args: &'a [String],
    /// The process's working directory before the call.
    cwd: String,
    /// The path annotating the result (a new descriptor's).
    ret_path: Option<String>,
}

impl CallArgs<'_> {
    /// The `i`th argument ("" when missing).
    fn a(&self, i: usize) -> &str {
        self.args.get(i).map(|s| s.as_str()).unwrap_or("")
    }
    /// A path argument `p` relative to the directory argument `d`.
    fn at(&self, d: &str, p: &str) -> Option<String> {
        let p = unquote(p)?;
        if p.starts_with('/') {
            return Some(normalize(&p));
        }
        let base = fd_path(d).unwrap_or_else(|| self.cwd.clone());
        Some(normalize(&format!("{base}/{p}")))
    }
    /// A path argument relative to the working directory.
    fn rel(&self, p: &str) -> Option<String> {
        self.at("AT_FDCWD", p)
    }
}

// The call families. Each fills `r` from the arguments when `c` is one of its calls and
// says whether the record is kept (a call that is not on a file is not); None when `c` is
// not one of its calls.

/// open, openat, openat2, creat.
fn opens(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
    let (name, args, a) = (c.name, c.args, |i| c.a(i));
    if !matches!(name, "open" | "openat" | "openat2" | "creat") {
        return None;
    }
    r.call = Call::Open;
    let (p, rest): (Option<String>, &[String]) = match name {
        "open" | "creat" => (c.rel(a(0)), args.get(1..).unwrap_or(&[])),
        _ => (c.at(a(0), a(1)), args.get(2..).unwrap_or(&[])),
    };
    r.path = match (&c.ret_path, r.ret >= 0) {
        (Some(rp), true) if rp.starts_with('/') => Some(rp.clone()),
        _ => p,
    };
    if name == "creat" {
        r.flags = Some((libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC) as u64);
        r.mode = rest.first().and_then(|m| number(m)).map(|m| m as u32);
    } else if name == "openat2" {
        let how = rest.first().map(|s| s.as_str()).unwrap_or("");
        r.flags = struct_field(how, "flags").map(flags);
        r.mode = struct_field(how, "mode").and_then(number).map(|m| m as u32);
    } else {
        r.flags = rest.first().map(|f| flags(f));
        r.mode = rest.get(1).and_then(|m| number(m)).map(|m| m as u32);
    }
    Some(true)
}

/// The reads and writes, plain, positioned and vectored; sendfile, copy_file_range.
fn reads_writes(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
    let (name, a) = (c.name, |i| c.a(i));
    match name {
        "read" | "write" | "pread64" | "pwrite64" | "readv" | "writev" | "preadv" | "pwritev"
        | "preadv2" | "pwritev2" => {
            r.call = if name.contains("read") {
                Call::Read
            } else {
                Call::Write
            };
            r.fd = fd_num(a(0));
            if name.ends_with('v') || name.ends_with("v2") {
                r.size = Some(iov_total(a(1)));
                if name.starts_with('p') {
                    r.offset = number(a(3));
                }
            } else {
                r.size = number(a(2));
                if name.starts_with('p') {
                    r.offset = number(a(3));
                }
            }
        }
        "sendfile" | "sendfile64" => {
            r.call = Call::Sendfile;
            r.fd = fd_num(a(0));
            r.fd2 = fd_num(a(1));
            r.offset = a(2).trim_matches(['[', ']']).parse().ok();
            r.size = number(a(3));
        }
        "copy_file_range" => {
            r.call = Call::CopyRange;
            r.fd = fd_num(a(0));
            r.fd2 = fd_num(a(2));
            r.size = number(a(4));
        }
        _ => return None,
    }
    Some(true)
}

/// close, lseek, the dups (and fcntl's), fsync, fdatasync.
fn descriptors(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
    let (name, a) = (c.name, |i| c.a(i));
    match name {
        "close" => {
            r.call = Call::Close;
            r.fd = fd_num(a(0));
        }
        "lseek" => {
            r.call = Call::Seek;
            r.fd = fd_num(a(0));
            r.offset = signed(a(1)).map(|v| v as u64);
            r.flags = Some(flags(a(2)));
        }
        "dup" | "dup2" | "dup3" => {
            r.call = Call::Dup;
            r.fd = fd_num(a(0));
            if name != "dup" {
                r.fd2 = fd_num(a(1));
            }
            if name == "dup3" {
                r.flags = Some(flags(a(2)));
            }
        }
        "fcntl" | "fcntl64" => {
            let cmd = a(1);
            if cmd != "F_DUPFD" && cmd != "F_DUPFD_CLOEXEC" {
                // Not a file-system call (locks, flags): left out.
                return Some(false);
            }
            r.call = Call::Dup;
            r.fd = fd_num(a(0));
            if cmd == "F_DUPFD_CLOEXEC" {
                r.flags = Some(libc::O_CLOEXEC as u64);
            }
        }
        "fsync" | "fdatasync" => {
            r.call = Call::Fsync;
            r.fd = fd_num(a(0));
            if name == "fdatasync" {
                r.flags = Some(1);
            }
        }
        _ => return None,
    }
    Some(true)
}

/// The stats and access checks, readlink, chmod, the utimes.
fn metadata(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
    let (name, a) = (c.name, |i| c.a(i));
    match name {
        "stat" | "lstat" | "access" => {
            r.call = Call::Stat;
            r.path = c.rel(a(0));
            if name == "lstat" {
                r.flags = Some(libc::AT_SYMLINK_NOFOLLOW as u64);
            }
            if name == "access" {
                r.mode = Some(flags(a(1)) as u32);
            }
        }
        "fstat" => {
            r.call = Call::Stat;
            r.fd = fd_num(a(0));
        }
        "newfstatat" | "fstatat64" | "statx" | "faccessat" | "faccessat2" => {
            r.call = Call::Stat;
            let fl = match name {
                "statx" => flags(a(2)),
                "faccessat2" => flags(a(3)),
                "faccessat" => 0,
                _ => flags(a(3)),
            };
            let p = unquote(a(1)).unwrap_or_default();
            if p.is_empty() && fl & libc::AT_EMPTY_PATH as u64 != 0 {
                r.fd = fd_num(a(0));
            } else {
                r.path = c.at(a(0), a(1));
            }
            r.flags = Some(fl);
            if name.starts_with("faccessat") {
                r.mode = Some(flags(a(2)) as u32);
            }
        }
        "readlink" => {
            r.call = Call::Readlink;
            r.path = c.rel(a(0));
        }
        "readlinkat" => {
            r.call = Call::Readlink;
            r.path = c.at(a(0), a(1));
        }
        "chmod" => {
            r.call = Call::Chmod;
            r.path = c.rel(a(0));
            r.mode = number(a(1)).map(|m| m as u32);
        }
        "fchmod" => {
            r.call = Call::Chmod;
            r.fd = fd_num(a(0));
            r.mode = number(a(1)).map(|m| m as u32);
        }
        "fchmodat" => {
            r.call = Call::Chmod;
            r.path = c.at(a(0), a(1));
            r.mode = number(a(2)).map(|m| m as u32);
        }
        "utime" | "utimes" => {
            r.call = Call::Utimes;
            r.path = c.rel(a(0));
        }
        "utimensat" | "futimesat" => {
            r.call = Call::Utimes;
            if name == "utimensat" {
                r.flags = Some(flags(a(3)));
            }
            let p = unquote(a(1));
            if a(1) == "NULL" || p.as_deref() == Some("") {
                r.fd = fd_num(a(0));
            } else {
                r.path = c.at(a(0), a(1));
            }
        }
        _ => return None,
    }
    Some(true)
}

/// mkdir, rmdir, unlink and their `*at` forms, getdents.
fn directories(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
    let (name, a) = (c.name, |i| c.a(i));
    match name {
        "mkdir" => {
            r.call = Call::Mkdir;
            r.path = c.rel(a(0));
            r.mode = number(a(1)).map(|m| m as u32);
        }
        "mkdirat" => {
            r.call = Call::Mkdir;
            r.path = c.at(a(0), a(1));
            r.mode = number(a(2)).map(|m| m as u32);
        }
        "rmdir" => {
            r.call = Call::Rmdir;
            r.path = c.rel(a(0));
        }
        "unlink" => {
            r.call = Call::Unlink;
            r.path = c.rel(a(0));
        }
        "unlinkat" => {
            let fl = flags(a(2));
            r.call = if fl & libc::AT_REMOVEDIR as u64 != 0 {
                Call::Rmdir
            } else {
                Call::Unlink
            };
            r.path = c.at(a(0), a(1));
            r.flags = Some(fl);
        }
        "getdents" | "getdents64" => {
            r.call = Call::Getdents;
            r.fd = fd_num(a(0));
            r.size = number(a(2));
        }
        _ => return None,
    }
    Some(true)
}

/// rename, link, symlink and their `*at` forms.
fn links_renames(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
    let (name, a) = (c.name, |i| c.a(i));
    match name {
        "rename" => {
            r.call = Call::Rename;
            r.path = c.rel(a(0));
            r.path2 = c.rel(a(1));
        }
        "renameat" | "renameat2" => {
            r.call = Call::Rename;
            r.path = c.at(a(0), a(1));
            r.path2 = c.at(a(2), a(3));
            if name == "renameat2" {
                r.flags = Some(flags(a(4)));
            }
        }
        "link" => {
            r.call = Call::Link;
            r.path = c.rel(a(0));
            r.path2 = c.rel(a(1));
        }
        "linkat" => {
            r.call = Call::Link;
            r.path = c.at(a(0), a(1));
            r.path2 = c.at(a(2), a(3));
            r.flags = Some(flags(a(4)));
        }
        "symlink" => {
            r.call = Call::Symlink;
            r.path = c.rel(a(1));
            r.path2 = unquote(a(0));
        }
        "symlinkat" => {
            r.call = Call::Symlink;
            r.path = c.at(a(1), a(2));
            r.path2 = unquote(a(0));
        }
        _ => return None,
    }
    Some(true)
}

/// The truncates, fallocate, mmap and munmap.
fn sizes_mappings(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
    let (name, a) = (c.name, |i| c.a(i));
    match name {
        "truncate" | "truncate64" => {
            r.call = Call::Truncate;
            r.path = c.rel(a(0));
            r.size = number(a(1));
        }
        "ftruncate" | "ftruncate64" => {
            r.call = Call::Truncate;
            r.fd = fd_num(a(0));
            r.size = number(a(1));
        }
        "fallocate" => {
            r.call = Call::Fallocate;
            r.fd = fd_num(a(0));
            r.flags = Some(flags(a(1)));
            r.offset = number(a(2));
            r.size = number(a(3));
        }
        "mmap" | "mmap2" => {
            let fd = fd_num(a(4));
            if fd.is_none_or(|f| f < 0) || flags(a(3)) & libc::MAP_ANONYMOUS as u64 != 0 {
                return Some(false); // not a file
            }
            r.call = Call::Mmap;
            r.fd = fd;
            r.size = number(a(1));
            r.mode = Some(flags(a(2)) as u32);
            r.flags = Some(flags(a(3)));
            r.offset = number(a(5));
            // The result is an address, not a count.
            if r.ret >= 0 {
                r.ret = 0;
            }
        }
        "munmap" => {
            r.call = Call::Munmap;
            r.size = number(a(1));
        }
        _ => return None,
    }
    Some(true)
}

/// Another call on a descriptor or a path: kept for the statistics (not when on a socket,
/// a pipe, a terminal ...).
fn other(c: &CallArgs<'_>, r: &mut Record) -> bool {
    r.call = Call::Other;
    let first = c.a(0);
    if first.starts_with('"') {
        r.path = c.rel(first);
    } else if let Some(fd) = fd_num(first) {
        if fd_path(first).is_some() {
            r.fd = Some(fd);
        } else {
            return false; // a socket, pipe, terminal ...: not a file
        }
    } else {
        return false;
    }
    true
}

/// Split `ARGS) ...` at top-level commas; returns the arguments and the index of the
/// closing parenthesis.
fn split_args(s: &str) -> Option<(Vec<String>, usize)> {
    let b = s.as_bytes();
    let mut args = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            // An annotation `<...>` follows a descriptor number or AT_FDCWD.
            b'<' if i > 0
                && (b[i - 1].is_ascii_digit() || b[i - 1] == b'D' || b[i - 1] == b'>') =>
            {
                let mut d = 1;
                i += 1;
                while i < b.len() && d > 0 {
                    match b[i] {
                        b'<' => d += 1,
                        b'>' => d -= 1,
                        _ => {}
                    }
                    i += 1;
                }
                continue;
            }
            b']' | b'}' => depth -= 1,
            b')' => {
                if depth == 0 {
                    let last = s[start..i].trim();
                    if !last.is_empty() || !args.is_empty() {
                        args.push(last.to_string());
                    }
                    return Some((args, i));
                }
                depth -= 1;
            }
            b',' if depth == 0 => {
                args.push(s[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `RESULT[<annotation>] [ERRNO (text)]`: the number (minus the errno on failure) and the
/// annotation's path.
fn parse_result(s: &str) -> Option<(i64, Option<String>)> {
    let s = s.trim();
    if s.starts_with('?') {
        return Some((0, None));
    }
    let num_end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(s.len());
    let num = &s[..num_end];
    let rest = &s[num_end..];
    let v = if let Some(h) = num.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok().map(|v| v.max(0))?
    } else {
        num.parse::<i64>().ok()?
    };
    if v < 0 {
        let name = rest.split_whitespace().next().unwrap_or("");
        return Some((-(errno_of(name) as i64), None));
    }
    let ann = rest
        .strip_prefix('<')
        .map(|a| annotation_path(&format!("<{a}")));
    Some((v, ann.flatten()))
}

/// The path inside a descriptor's annotation (`</a/b>` or `</dev/null<char 1:3>>`), when it
/// names a path.
fn annotation_path(a: &str) -> Option<String> {
    let inner = a.strip_prefix('<')?;
    let inner = inner.strip_suffix('>').unwrap_or(inner);
    // A device's `<char 1:3>` suffix.
    let inner = match inner.rfind('<') {
        Some(i) if inner.ends_with('>') => &inner[..i],
        _ => inner,
    };
    inner.starts_with('/').then(|| unescape(inner))
}

/// A descriptor argument's number (`3</a/b>`, `3`, `AT_FDCWD` is none).
fn fd_num(s: &str) -> Option<i32> {
    let end = s.find('<').unwrap_or(s.len());
    s[..end].trim().parse().ok()
}

/// A descriptor argument's path (`3</a/b>` or `AT_FDCWD</cwd>`).
fn fd_path(s: &str) -> Option<String> {
    let i = s.find('<')?;
    annotation_path(&s[i..]).map(|p| normalize(&p))
}

/// A quoted string's content, unescaped (`None` when not a string).
fn unquote(s: &str) -> Option<String> {
    let s = s.trim();
    let s = s.strip_suffix("...").unwrap_or(s);
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    Some(unescape(inner))
}

/// strace's C escapes: `\"`, `\\`, `\n`, `\t`, `\xHH`, octal.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            i += 1;
            match b[i] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'v' => out.push(0x0b),
                b'f' => out.push(0x0c),
                b'x' => {
                    let h = std::str::from_utf8(&b[i + 1..(i + 3).min(b.len())]).unwrap_or("");
                    if let Ok(v) = u8::from_str_radix(h, 16) {
                        out.push(v);
                        i += 2;
                    }
                }
                b'0'..=b'7' => {
                    let mut v = 0u32;
                    let mut k = 0;
                    while k < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                        v = v * 8 + (b[i] - b'0') as u32;
                        i += 1;
                        k += 1;
                    }
                    out.push(v as u8);
                    continue;
                }
                c => out.push(c),
            }
            i += 1;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Remove `.`, `..` and repeated slashes (lexically).
pub fn normalize(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

/// A number: decimal, `0x` hex or `0` octal (strace prints modes as `0644`).
fn number(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit()) {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

fn signed(s: &str) -> Option<i64> {
    let s = s.trim();
    match s.strip_prefix('-') {
        Some(r) => number(r).map(|v| -(v as i64)),
        None => number(s).map(|v| v as i64),
    }
}

/// `{a=1, flags=X|Y, ...}`'s field.
fn struct_field<'a>(s: &'a str, field: &str) -> Option<&'a str> {
    let inner = s.trim().strip_prefix('{')?;
    let key = format!("{field}=");
    let mut depth = 0;
    let mut start = 0;
    let b = inner.as_bytes();
    for i in 0..=b.len() {
        let end = i == b.len() || (depth == 0 && (b[i] == b',' || b[i] == b'}'));
        if end {
            let part = inner[start..i].trim();
            if let Some(v) = part.strip_prefix(&key) {
                return Some(v);
            }
            start = i + 1;
            continue;
        }
        match b[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The total length of an iovec array `[{iov_base=""..., iov_len=4096}, ...]`.
fn iov_total(s: &str) -> u64 {
    s.split("iov_len=")
        .skip(1)
        .filter_map(|x| {
            let end = x
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(x.len());
            number(&x[..end])
        })
        .sum()
}

/// A symbolic flag set (`O_WRONLY|O_CREAT|0x80000`) as Linux's number; unknown names count
/// as 0.
fn flags(s: &str) -> u64 {
    s.split('|')
        .map(|p| {
            let p = p.trim();
            number(p).unwrap_or_else(|| flag_value(p))
        })
        .fold(0, |a, b| a | b)
}

fn flag_value(name: &str) -> u64 {
    let v: i64 = match name {
        "O_RDONLY" | "F_OK" | "SEEK_SET" | "PROT_NONE" | "AT_STATX_SYNC_AS_STAT" => 0,
        "O_WRONLY" => libc::O_WRONLY as i64,
        "O_RDWR" => libc::O_RDWR as i64,
        "O_CREAT" => libc::O_CREAT as i64,
        "O_EXCL" => libc::O_EXCL as i64,
        "O_NOCTTY" => libc::O_NOCTTY as i64,
        "O_TRUNC" => libc::O_TRUNC as i64,
        "O_APPEND" => libc::O_APPEND as i64,
        "O_NONBLOCK" | "O_NDELAY" => libc::O_NONBLOCK as i64,
        "O_DSYNC" => libc::O_DSYNC as i64,
        "O_SYNC" => libc::O_SYNC as i64,
        "O_ASYNC" | "FASYNC" => libc::O_ASYNC as i64,
        "O_DIRECT" => libc::O_DIRECT as i64,
        "O_LARGEFILE" => libc::O_LARGEFILE as i64,
        "O_DIRECTORY" => libc::O_DIRECTORY as i64,
        "O_NOFOLLOW" => libc::O_NOFOLLOW as i64,
        "O_NOATIME" => libc::O_NOATIME as i64,
        "O_CLOEXEC" => libc::O_CLOEXEC as i64,
        "O_PATH" => libc::O_PATH as i64,
        "O_TMPFILE" => libc::O_TMPFILE as i64,
        "AT_SYMLINK_NOFOLLOW" => libc::AT_SYMLINK_NOFOLLOW as i64,
        "AT_REMOVEDIR" | "AT_EACCESS" => libc::AT_REMOVEDIR as i64,
        "AT_SYMLINK_FOLLOW" => libc::AT_SYMLINK_FOLLOW as i64,
        "AT_NO_AUTOMOUNT" => libc::AT_NO_AUTOMOUNT as i64,
        "AT_EMPTY_PATH" => libc::AT_EMPTY_PATH as i64,
        "R_OK" => libc::R_OK as i64,
        "W_OK" => libc::W_OK as i64,
        "X_OK" => libc::X_OK as i64,
        "SEEK_CUR" => 1,
        "SEEK_END" => 2,
        "SEEK_DATA" => 3,
        "SEEK_HOLE" => 4,
        "PROT_READ" => libc::PROT_READ as i64,
        "PROT_WRITE" => libc::PROT_WRITE as i64,
        "PROT_EXEC" => libc::PROT_EXEC as i64,
        "MAP_SHARED" => libc::MAP_SHARED as i64,
        "MAP_PRIVATE" => libc::MAP_PRIVATE as i64,
        "MAP_FIXED" => libc::MAP_FIXED as i64,
        "MAP_ANONYMOUS" | "MAP_ANON" => libc::MAP_ANONYMOUS as i64,
        "MAP_DENYWRITE" => libc::MAP_DENYWRITE as i64,
        "MAP_POPULATE" => libc::MAP_POPULATE as i64,
        "MAP_NORESERVE" => libc::MAP_NORESERVE as i64,
        "CLONE_VM" => libc::CLONE_VM as i64,
        "CLONE_FS" => libc::CLONE_FS as i64,
        "CLONE_FILES" => libc::CLONE_FILES as i64,
        "CLONE_SIGHAND" => libc::CLONE_SIGHAND as i64,
        "CLONE_THREAD" => libc::CLONE_THREAD as i64,
        "CLONE_VFORK" => libc::CLONE_VFORK as i64,
        "CLONE_SYSVSEM" => libc::CLONE_SYSVSEM as i64,
        "CLONE_SETTLS" => libc::CLONE_SETTLS as i64,
        "CLONE_PARENT_SETTID" => libc::CLONE_PARENT_SETTID as i64,
        "CLONE_CHILD_CLEARTID" => libc::CLONE_CHILD_CLEARTID as i64,
        "CLONE_CHILD_SETTID" => libc::CLONE_CHILD_SETTID as i64,
        "SIGCHLD" => libc::SIGCHLD as i64,
        "RENAME_NOREPLACE" => 1,
        "RENAME_EXCHANGE" => 2,
        "RENAME_WHITEOUT" => 4,
        "FALLOC_FL_KEEP_SIZE" => 1,
        "FALLOC_FL_PUNCH_HOLE" => 2,
        "FALLOC_FL_COLLAPSE_RANGE" => 8,
        "FALLOC_FL_ZERO_RANGE" => 0x10,
        "FALLOC_FL_INSERT_RANGE" => 0x20,
        _ => 0,
    };
    v as u64
}

/// An errno name's number (ERESTARTSYS and its kin are the kernel's internal 512..516).
fn errno_of(name: &str) -> i32 {
    match name {
        "EPERM" => libc::EPERM,
        "ENOENT" => libc::ENOENT,
        "ESRCH" => libc::ESRCH,
        "EINTR" => libc::EINTR,
        "EIO" => libc::EIO,
        "ENXIO" => libc::ENXIO,
        "E2BIG" => libc::E2BIG,
        "ENOEXEC" => libc::ENOEXEC,
        "EBADF" => libc::EBADF,
        "ECHILD" => libc::ECHILD,
        "EAGAIN" => libc::EAGAIN,
        "ENOMEM" => libc::ENOMEM,
        "EACCES" => libc::EACCES,
        "EFAULT" => libc::EFAULT,
        "EBUSY" => libc::EBUSY,
        "EEXIST" => libc::EEXIST,
        "EXDEV" => libc::EXDEV,
        "ENODEV" => libc::ENODEV,
        "ENOTDIR" => libc::ENOTDIR,
        "EISDIR" => libc::EISDIR,
        "EINVAL" => libc::EINVAL,
        "ENFILE" => libc::ENFILE,
        "EMFILE" => libc::EMFILE,
        "ENOTTY" => libc::ENOTTY,
        "ETXTBSY" => libc::ETXTBSY,
        "EFBIG" => libc::EFBIG,
        "ENOSPC" => libc::ENOSPC,
        "ESPIPE" => libc::ESPIPE,
        "EROFS" => libc::EROFS,
        "EMLINK" => libc::EMLINK,
        "EPIPE" => libc::EPIPE,
        "ERANGE" => libc::ERANGE,
        "ENAMETOOLONG" => libc::ENAMETOOLONG,
        "ENOSYS" => libc::ENOSYS,
        "ENOTEMPTY" => libc::ENOTEMPTY,
        "ELOOP" => libc::ELOOP,
        "ENODATA" => libc::ENODATA,
        "EOPNOTSUPP" | "ENOTSUP" => libc::EOPNOTSUPP,
        "EOVERFLOW" => libc::EOVERFLOW,
        "EDQUOT" => libc::EDQUOT,
        "ESTALE" => libc::ESTALE,
        "ERESTARTSYS" => 512,
        "ERESTARTNOINTR" => 513,
        "ERESTARTNOHAND" => 514,
        "ENOIOCTLCMD" => 515,
        "ERESTART_RESTARTBLOCK" => 516,
        _ => libc::EIO,
    }
}

/// The initial tree below each root, as the header carries it.
pub fn snapshot(roots: &[String]) -> Result<Vec<Initial>> {
    use crate::walk::{self, Visitor, WalkEntry, WalkOptions};
    struct Collect(Vec<(Vec<u8>, libc::stat, Option<String>)>);
    impl Visitor for Collect {
        type Error = std::convert::Infallible;
        fn entry(&mut self, e: &WalkEntry<'_>) -> Result<(), Self::Error> {
            let target = (e.stat.st_mode & libc::S_IFMT == libc::S_IFLNK).then(|| {
                let mut buf = [0u8; 4096];
                // SAFETY: a valid directory descriptor, name and buffer.
                let n = unsafe {
                    libc::readlinkat(
                        std::os::fd::AsRawFd::as_raw_fd(&e.dirfd),
                        e.name.as_ptr(),
                        buf.as_mut_ptr().cast(),
                        buf.len(),
                    )
                };
                String::from_utf8_lossy(&buf[..n.max(0) as usize]).into_owned()
            });
            self.0.push((e.path.to_vec(), *e.stat, target));
            Ok(())
        }
    }
    let mut out = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let md = std::fs::metadata(root).with_context(|| format!("root {root}"))?;
        out.push(Initial {
            root: i as u32,
            path: String::new(),
            kind: EntryKind::Dir,
            size: 0,
            mode: std::os::unix::fs::PermissionsExt::mode(&md.permissions()),
            target: None,
        });
        let opts = WalkOptions {
            cross_mounts: false,
            threads: walk::default_threads(),
        };
        let w = walk::walk(Path::new(root), &opts, |_| Collect(Vec::new()))
            .map_err(|e| anyhow::anyhow!("snapshot of {root}: {e}"))?;
        let mut all: Vec<_> = w.visitors.into_iter().flat_map(|v| v.0).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        for (p, st, target) in all {
            let kind = match st.st_mode & libc::S_IFMT {
                libc::S_IFDIR => EntryKind::Dir,
                libc::S_IFREG => EntryKind::File,
                libc::S_IFLNK => EntryKind::Symlink,
                _ => EntryKind::Other,
            };
            out.push(Initial {
                root: i as u32,
                path: String::from_utf8_lossy(&p).into_owned(),
                kind,
                size: if kind == EntryKind::File {
                    st.st_size.max(0) as u64
                } else {
                    0
                },
                mode: st.st_mode & 0o7777,
                target,
            });
        }
    }
    Ok(out)
}

fn strace_version() -> Option<String> {
    let o = std::process::Command::new("strace")
        .arg("-V")
        .output()
        .ok()?;
    let s = String::from_utf8_lossy(&o.stdout);
    s.lines()
        .next()?
        .split_whitespace()
        .last()
        .map(String::from)
}

fn abs_root(p: &Path) -> Result<String> {
    let c = p
        .canonicalize()
        .with_context(|| format!("root {}", p.display()))?;
    if !c.is_dir() {
        bail!("root {} is not a directory", p.display());
    }
    Ok(c.display().to_string())
}

/// `fsbench trace record`.
pub fn record(a: &RecordArgs) -> Result<()> {
    let Some(version) = strace_version() else {
        bail!("trace record needs strace: apt install strace");
    };
    let cwd = std::env::current_dir()?.display().to_string();
    let roots: Vec<String> = if a.roots.is_empty() {
        vec![abs_root(Path::new("."))?]
    } else {
        a.roots.iter().map(|r| abs_root(r)).collect::<Result<_>>()?
    };
    // The trace is written after the command ends, but a trace inside a root would be in
    // the next recording's snapshot: refuse it.
    let out_dir = a
        .output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .canonicalize()
        .with_context(|| format!("{}", a.output.display()))?;
    let out_abs = out_dir.join(a.output.file_name().unwrap_or_default());
    if let Some(r) = roots.iter().find(|r| out_abs.starts_with(r.as_str())) {
        bail!(
            "the trace {} would be inside root {r}: write it elsewhere (it is not part of what the command does)",
            a.output.display()
        );
    }
    let initial = snapshot(&roots)?;
    // The log goes to a private directory removed afterwards, unless it is to be kept.
    let scratch = super::ScratchDir::new("strace").context("a directory for strace's log")?;
    let log_path = match &a.keep_log {
        Some(p) => p.clone(),
        None => scratch.join("strace.log"),
    };
    let status = std::process::Command::new("strace")
        .args(STRACE_ARGS)
        .arg("-o")
        .arg(&log_path)
        .arg("--")
        .args(&a.command)
        .env(super::MARK_ENV, "1")
        .status()
        .context("starting strace")?;
    let f = std::fs::File::open(&log_path)
        .with_context(|| format!("strace's log {}", log_path.display()))?;
    let parsed = parse(std::io::BufReader::new(f), &cwd)?;
    let header = Header {
        version: format::VERSION,
        command: a.command.clone(),
        cwd,
        roots,
        started_at: parsed.started_at,
        source: format!("strace {version} (recorded)"),
        initial,
        skipped_lines: parsed.skipped_lines,
        skipped_examples: parsed.skipped_examples.clone(),
    };
    let n = format::write_all(&a.output, &header, &parsed.records)?;
    summary(&a.output, &parsed, n);
    if !status.success() {
        bail!(
            "the traced command failed ({status}); its trace is in {} all the same",
            a.output.display()
        );
    }
    Ok(())
}

fn summary(out: &Path, p: &Parsed, n: u64) {
    let threads: std::collections::HashSet<u32> = p.records.iter().map(|r| r.tid).collect();
    let span = p.records.last().map_or(0, |r| r.start_ns + r.dur_ns) as f64 / 1e9;
    let bytes = std::fs::metadata(out).map_or(0, |m| m.len());
    crate::errln!(
        "fsbench: trace {}: {} from {} over {span:.3} s, {}{}",
        out.display(),
        crate::report::count(n, "call"),
        crate::report::count(threads.len() as u64, "thread"),
        crate::limits::human(bytes as f64),
        if p.skipped_lines > 0 {
            format!(
                "; {} of the log could not be used (first: {})",
                crate::report::count(p.skipped_lines, "line"),
                p.skipped_examples.first().map(String::as_str).unwrap_or("")
            )
        } else {
            String::new()
        }
    );
}

/// `fsbench trace import`.
pub fn import(a: &ImportArgs) -> Result<()> {
    let roots: Vec<String> = a.roots.iter().map(|r| normalize(r)).collect();
    let cwd = match (&a.cwd, roots.first()) {
        (Some(c), _) => normalize(c),
        (None, Some(r)) => r.clone(),
        (None, None) => std::env::current_dir()?.display().to_string(),
    };
    let roots = if roots.is_empty() {
        vec![cwd.clone()]
    } else {
        roots
    };
    let mut initial = Vec::new();
    for s in &a.snapshot_of {
        let abs = abs_root(s)?;
        let Some(i) = roots.iter().position(|r| *r == abs) else {
            bail!(
                "--snapshot-of {abs} is not one of the roots ({})",
                roots.join(", ")
            );
        };
        for mut e in snapshot(std::slice::from_ref(&abs))? {
            e.root = i as u32;
            initial.push(e);
        }
    }
    let f = std::fs::File::open(&a.log).with_context(|| format!("{}", a.log.display()))?;
    let parsed = parse(std::io::BufReader::new(f), &cwd)?;
    if parsed.records.is_empty() {
        bail!(
            "{}: no system call could be read (is it an strace log of `strace -f -ttt -T -yy`? {})",
            a.log.display(),
            parsed
                .skipped_examples
                .first()
                .map(String::as_str)
                .unwrap_or("")
        );
    }
    let header = Header {
        version: format::VERSION,
        command: Vec::new(),
        cwd,
        roots,
        started_at: parsed.started_at,
        source: format!("strace log {} (imported)", a.log.display()),
        initial,
        skipped_lines: parsed.skipped_lines,
        skipped_examples: parsed.skipped_examples.clone(),
    };
    let n = format::write_all(&a.output, &header, &parsed.records)?;
    summary(&a.output, &parsed, n);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = r#"25430 1795583549.533416 openat(AT_FDCWD</tmp/st>, "dst", O_RDONLY|O_PATH|O_DIRECTORY) = -1 ENOENT (No such file or directory) <0.000017>
25430 1795583549.533569 mkdirat(AT_FDCWD</tmp/st>, "dst", 0755) = 0 <0.000051>
25430 1795583549.533722 openat(AT_FDCWD</tmp/st>, "src", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 3</tmp/st/src> <0.000017>
25430 1795583549.533776 newfstatat(3</tmp/st/src>, "", {st_mode=S_IFDIR|0755, st_size=4096, ...}, AT_EMPTY_PATH) = 0 <0.000015>
25430 1795583549.533832 getdents64(3</tmp/st/src>, 0x55f16efda8d0 /* 5 entries */, 32768) = 120 <0.000021>
25430 1795583549.534417 newfstatat(AT_FDCWD</tmp/st>, "src/d/a", {st_mode=S_IFREG|0644, st_size=6, ...}, AT_SYMLINK_NOFOLLOW) = 0 <0.000017>
25430 1795583549.534587 openat(AT_FDCWD</tmp/st>, "dst/d/a", O_WRONLY|O_CREAT|O_EXCL, 0644) = 4</tmp/st/dst/d/a> <0.000035>
25430 1795583549.534822 copy_file_range(3</tmp/st/src/d/a>, NULL, 4</tmp/st/dst/d/a>, NULL, 9223372035781033984, 0) = 6 <0.000031>
25430 1795583549.535738 symlinkat("d", AT_FDCWD</tmp/st>, "dst/l") = 0 <0.000042>
25431 1795583549.536715 openat(AT_FDCWD</tmp/st>, "/dev/null", O_RDONLY) = 0</dev/null<char 1:3>> <0.000023>
25431 1795583549.543713 read(3</tmp/st/src/b>, ""..., 131072) = 6 <0.000018>
25429 1795583549.524736 vfork( <unfinished ...>
25430 1795583549.524900 execve("/usr/bin/cp", [...], 0x5589eeb49348 /* 35 vars */ <unfinished ...>
25429 1795583549.525106 <... vfork resumed>) = 25430 <0.000361>
25430 1795583549.525399 <... execve resumed>) = 0 <0.000462>
25440 1795583550.000001 pwrite64(5</tmp/st/x y\"z>, ""..., 4096, 8192) = 4096 <0.000010>
25440 1795583550.000002 writev(5</tmp/st/f>, [{iov_base=""..., iov_len=100}, {iov_base=""..., iov_len=28}], 2) = 128 <0.000010>
25440 1795583550.000003 lseek(5</tmp/st/f>, -10, SEEK_END) = 118 <0.000010>
25440 1795583550.000004 renameat2(AT_FDCWD</tmp/st>, "a", AT_FDCWD</tmp/st>, "../b", RENAME_NOREPLACE) = 0 <0.000010>
25440 1795583550.000005 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, child_tid=0x7f, parent_tid=0x7f, exit_signal=0, stack=0x7f, stack_size=0x7fff00, tls=0x7f} => {parent_tid=[25441]}, 88) = 25441 <0.000020>
25440 1795583550.000006 unlinkat(5</tmp/st/dir>, "sub", AT_REMOVEDIR) = 0 <0.000010>
25440 1795583550.000007 mmap(NULL, 45059, PROT_READ, MAP_PRIVATE, 3</etc/ld.so.cache>, 0) = 0x7f446155c000 <0.000018>
25440 1795583550.000008 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f4461568000 <0.000019>
25440 1795583550.000009 chdir("sub2") = 0 <0.000010>
25440 1795583550.000010 stat("f\nx", {st_mode=S_IFREG|0644, st_size=6, ...}) = 0 <0.000010>
25440 1795583550.000011 fcntl(5</tmp/st/f>, F_SETFD, FD_CLOEXEC) = 0 <0.000010>
25440 1795583550.000012 fcntl(5</tmp/st/f>, F_DUPFD_CLOEXEC, 10) = 10</tmp/st/f> <0.000010>
25440 1795583550.000013 +++ exited with 0 +++
25442 1795583550.000014 read(0</dev/pts/0<char 136:0>>, <unfinished ...>
"#;

    #[test]
    fn a_real_log_converts_call_by_call() {
        let p = parse(LOG.as_bytes(), "/tmp/st").unwrap();
        let by =
            |sys: &str| -> Vec<&Record> { p.records.iter().filter(|r| r.syscall == sys).collect() };
        assert_eq!(
            p.skipped_lines, 1,
            "the read never resumed: {:?}",
            p.skipped_examples
        );
        let o = by("openat");
        assert_eq!(o[0].path.as_deref(), Some("/tmp/st/dst"));
        assert_eq!(o[0].ret, -(libc::ENOENT as i64));
        assert_eq!(
            o[0].flags,
            Some((libc::O_RDONLY | libc::O_PATH | libc::O_DIRECTORY) as u64)
        );
        assert_eq!(o[1].path.as_deref(), Some("/tmp/st/src"));
        assert_eq!(o[1].ret, 3);
        assert_eq!(o[2].path.as_deref(), Some("/tmp/st/dst/d/a"));
        assert_eq!(o[2].mode, Some(0o644));
        assert_eq!(
            o[3].path.as_deref(),
            Some("/dev/null"),
            "the device suffix is dropped"
        );
        let m = by("mkdirat")[0];
        assert_eq!(
            (m.call, m.path.as_deref(), m.mode),
            (Call::Mkdir, Some("/tmp/st/dst"), Some(0o755))
        );
        let st = by("newfstatat");
        assert_eq!(
            (st[0].fd, st[0].path.as_deref()),
            (Some(3), None),
            "AT_EMPTY_PATH is an fstat"
        );
        assert_eq!(st[1].path.as_deref(), Some("/tmp/st/src/d/a"));
        assert_eq!(st[1].flags, Some(libc::AT_SYMLINK_NOFOLLOW as u64));
        let g = by("getdents64")[0];
        assert_eq!(
            (g.call, g.fd, g.size, g.ret),
            (Call::Getdents, Some(3), Some(32768), 120)
        );
        let c = by("copy_file_range")[0];
        assert_eq!(
            (c.call, c.fd, c.fd2, c.ret),
            (Call::CopyRange, Some(3), Some(4), 6)
        );
        let s = by("symlinkat")[0];
        assert_eq!(
            (s.path.as_deref(), s.path2.as_deref()),
            (Some("/tmp/st/dst/l"), Some("d"))
        );
        // The unfinished vfork and execve, merged with their resumptions.
        let v = by("vfork")[0];
        assert_eq!((v.call, v.ret, v.tid), (Call::Clone, 25430, 25429));
        assert_eq!(v.dur_ns, 361_000);
        assert!(v.flags.unwrap() & libc::CLONE_VFORK as u64 != 0);
        let e = by("execve")[0];
        assert_eq!(
            (e.call, e.path.as_deref(), e.ret),
            (Call::Exec, Some("/usr/bin/cp"), 0)
        );
        let pw = by("pwrite64")[0];
        assert_eq!(
            (pw.fd, pw.size, pw.offset),
            (Some(5), Some(4096), Some(8192))
        );
        assert_eq!(by("writev")[0].size, Some(128));
        let l = by("lseek")[0];
        assert_eq!(
            (l.offset, l.flags, l.ret),
            (Some(-10i64 as u64), Some(2), 118)
        );
        let rn = by("renameat2")[0];
        assert_eq!(
            (rn.path.as_deref(), rn.path2.as_deref(), rn.flags),
            (Some("/tmp/st/a"), Some("/tmp/b"), Some(1))
        );
        let cl = by("clone3")[0];
        assert_eq!(cl.ret, 25441);
        assert!(cl.flags.unwrap() & libc::CLONE_FILES as u64 != 0);
        let u = by("unlinkat")[0];
        assert_eq!(
            (u.call, u.path.as_deref()),
            (Call::Rmdir, Some("/tmp/st/dir/sub"))
        );
        let mm = by("mmap");
        assert_eq!(mm.len(), 1, "the anonymous mapping is not a file");
        assert_eq!((mm[0].fd, mm[0].size, mm[0].ret), (Some(3), Some(45059), 0));
        // chdir moves the working directory of the old-style calls after it.
        assert_eq!(by("stat")[0].path.as_deref(), Some("/tmp/st/sub2/f\nx"));
        let f = by("fcntl");
        assert_eq!(f.len(), 1, "only F_DUPFD* is a file-system call");
        assert_eq!((f[0].call, f[0].fd, f[0].ret), (Call::Dup, Some(5), 10));
        assert_eq!(by("exit").len(), 1);
        // Sorted by start, relative to the first.
        assert!(p.records.windows(2).all(|w| w[0].start_ns <= w[1].start_ns));
        assert_eq!(p.records[0].start_ns, 0);
        assert_eq!(p.records[0].syscall, "vfork");
    }

    #[test]
    fn paths_normalise_and_strings_unescape() {
        assert_eq!(normalize("/a/./b/../c//d/"), "/a/c/d");
        assert_eq!(normalize("/.."), "/");
        assert_eq!(unescape(r#"a\"b\\c\x41\101\n"#), "a\"b\\cAA\n");
        assert_eq!(number("0644"), Some(0o644));
        assert_eq!(number("0x10"), Some(16));
        assert_eq!(number("0"), Some(0));
        assert_eq!(
            flags("O_WRONLY|O_CREAT|0x100000"),
            (libc::O_WRONLY | libc::O_CREAT) as u64 | 0x100000
        );
    }
}
