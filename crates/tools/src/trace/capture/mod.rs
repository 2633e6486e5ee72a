//! Capturing traces: `fsbench trace record` runs a command under `strace` and converts its
//! log; `fsbench trace import` converts a log recorded elsewhere with the same options.
//!
//! `strace.rs` reads the log into records, a call family at a time (`calls.rs`), with the
//! lexical helpers of `syntax.rs` (arguments, strings, flags, errno names).

mod calls;
mod strace;
mod syntax;

pub use strace::{parse, Parsed};
pub use syntax::normalize;

use super::format::{self, EntryKind, Header, Initial};
use anyhow::{bail, Context, Result};
use clap::Args;
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
    "trace=%file,%desc,mmap,munmap,clone,clone3,fork,vfork,execve,execveat,chdir,fchdir,wait4,waitid",
];

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Where to write the trace (`-` for standard output).
    #[arg(short, long, value_name = "TRACE")]
    pub output: PathBuf,
    /// A directory the command works in (repeatable; default: the current directory). Its
    /// tree is snapshotted before the command starts, and calls below it are the ones a
    /// replay reproduces.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Keep strace's own log in FILE as well (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub keep_log: Option<PathBuf>,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
#[command(
    after_long_help = "The log must have been written by\n  strace -f -ttt -T -yy -s 0 -qq -e signal=none -e trace=%file,%desc,mmap,munmap,clone,clone3,fork,vfork,execve,execveat,chdir,fchdir,wait4,waitid -o LOG -- COMMAND\n(wait4 and waitid may be left out: a replay in afap mode then cannot keep a parent's calls after its children's)"
)]
pub struct ImportArgs {
    /// The strace log, or `-` for standard input.
    pub log: PathBuf,
    /// Where to write the trace (`-` for standard output).
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

impl fsbench_base::export::check::Outputs for RecordArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        vec![
            named(Some(self.output.as_path()), "-o"),
            named(self.keep_log.as_deref(), "--keep-log"),
        ]
    }
}

impl fsbench_base::export::check::Outputs for ImportArgs {
    fn outputs(&self) -> Vec<fsbench_base::export::check::Named<'_>> {
        use fsbench_base::export::check::named;
        vec![named(Some(self.output.as_path()), "-o")]
    }
}

/// The initial tree below each root, as the header carries it.
pub fn snapshot(roots: &[String]) -> Result<Vec<Initial>> {
    use fsbench_base::walk::{self, Visitor, WalkEntry, WalkOptions};
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
    check_outputs(a, &roots)?;
    let initial = snapshot(&roots)?;
    // The log goes to a private directory removed afterwards, unless it is to be kept in a
    // file (kept on standard output, it is copied there at the end).
    let scratch = super::ScratchDir::new("strace").context("a directory for strace's log")?;
    let log_path = match &a.keep_log {
        Some(p) if !fsbench_base::console::is_stdout(p) => p.clone(),
        _ => scratch.join("strace.log"),
    };
    let mut strace = std::process::Command::new("strace");
    strace
        .args(STRACE_ARGS)
        .arg("-o")
        .arg(&log_path)
        .arg("--")
        .args(&a.command)
        .env(fsbench_base::sys::mark::MARK_ENV, "1");
    if to_stdout(a) {
        // Standard output carries the trace or the log: the command's own goes to stderr.
        strace.stdout(std::io::stderr());
    }
    let status = strace.status().context("starting strace")?;
    let f = fsbench_base::input::open_stream(&log_path)
        .with_context(|| format!("strace's log {}", log_path.display()))?;
    let parsed = parse(std::io::BufReader::new(f), &cwd)
        .with_context(|| format!("strace's log {}", log_path.display()))?;
    if let Some(keep) = a
        .keep_log
        .as_deref()
        .filter(|p| fsbench_base::console::is_stdout(p))
    {
        fsbench_base::export::copy(&log_path, keep, "strace log")?;
    }
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

/// Whether the trace or the kept log goes to standard output.
fn to_stdout(a: &RecordArgs) -> bool {
    fsbench_base::console::is_stdout(&a.output)
        || a.keep_log
            .as_deref()
            .is_some_and(fsbench_base::console::is_stdout)
}

/// The outputs of a recording: writable, at most one on standard output, and the trace not
/// inside a root (it is written after the command ends, but would be in the next recording's
/// snapshot).
fn check_outputs(a: &RecordArgs, roots: &[String]) -> Result<()> {
    fsbench_base::export::check::outputs(&fsbench_base::export::check::Outputs::outputs(a))?;
    if fsbench_base::console::is_stdout(&a.output) {
        return Ok(());
    }
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
    Ok(())
}

fn summary(out: &Path, p: &Parsed, n: u64) {
    let threads: std::collections::HashSet<u32> = p.records.iter().map(|r| r.tid).collect();
    let span = p.records.last().map_or(0, |r| r.start_ns + r.dur_ns) as f64 / 1e9;
    let bytes = if fsbench_base::console::is_stdout(out) {
        "written to standard output".into()
    } else {
        fsbench_base::units::human_bytes(std::fs::metadata(out).map_or(0, |m| m.len()) as f64)
    };
    fsbench_base::errln!(
        "fsbench: trace {}: {} from {} over {span:.3} s, {bytes}{}",
        out.display(),
        fsbench_base::units::count(n, "call"),
        fsbench_base::units::count(threads.len() as u64, "thread"),
        if p.skipped_lines > 0 {
            format!(
                "; {} of the log could not be used (first: {})",
                fsbench_base::units::count(p.skipped_lines, "line"),
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
    let f =
        fsbench_base::input::open_stream(&a.log).with_context(|| format!("{}", a.log.display()))?;
    let parsed =
        parse(std::io::BufReader::new(f), &cwd).with_context(|| format!("{}", a.log.display()))?;
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
