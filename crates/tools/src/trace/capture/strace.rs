//! Reading strace's log into records.
//!
//! strace is run with [`STRACE_ARGS`](super::STRACE_ARGS): every thread and child (`-f`), absolute start times
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

use super::calls::{self, CallArgs};
use super::syntax::{fd_num, fd_path, flags, normalize, parse_result, split_args, struct_field};
use crate::trace::format::{Call, Record};
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::io::BufRead;

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
    let mut log = log;
    let mut buf = Vec::new();
    let mut n = 0u64;
    // Lines of bounded length: a log that is one endless line (a sparse file of zeros)
    // is refused at its first megabyte, not read into memory whole.
    while fsbench_base::input::read_line(&mut log, &mut buf, fsbench_base::input::LINE_MAX)
        .with_context(|| format!("reading the strace log, line {}", n + 1))?
    {
        n += 1;
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            continue;
        }
        if rd.line(line).is_none() {
            rd.skip(line);
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
        let keep = calls::opens(&c, &mut r)
            .or_else(|| calls::reads_writes(&c, &mut r))
            .or_else(|| calls::descriptors(&c, &mut r))
            .or_else(|| calls::metadata(&c, &mut r))
            .or_else(|| calls::directories(&c, &mut r))
            .or_else(|| calls::links_renames(&c, &mut r))
            .or_else(|| calls::sizes_mappings(&c, &mut r))
            .or_else(|| self.processes(&c, &mut r))
            .unwrap_or_else(|| calls::other(&c, &mut r));
        if keep {
            self.out.push((t, r));
        }
        Some(())
    }

    /// chdir, fchdir, the clones, exec and the waits: the calls that change a process's
    /// working directory, make a process or wait for one. None when `c` is not one of them.
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
            "wait4" => r.call = Call::Wait,
            "waitid" => {
                r.call = Call::Wait;
                // waitid returns 0; the child is the `si_pid` of the siginfo it fills.
                if r.ret == 0 {
                    r.ret = c
                        .args
                        .iter()
                        .find_map(|x| struct_field(x, "si_pid"))
                        .and_then(|p| p.trim().parse().ok())
                        .unwrap_or(0);
                }
            }
            "exit" | "exit_group" => return Some(false),
            _ => return None,
        }
        Some(true)
    }
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
    fn waits_keep_the_child_they_waited_for() {
        let log = r#"100 1795583549.000001 wait4(-1, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 101 <0.000500>
100 1795583549.000002 waitid(P_ALL, 0, {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=102, si_uid=0, si_status=0, si_utime=0, si_stime=0}, WEXITED, NULL) = 0 <0.000100>
100 1795583549.000003 wait4(-1, 0x7ffd, WNOHANG, NULL) = -1 ECHILD (No child processes) <0.000010>
"#;
        let p = parse(log.as_bytes(), "/tmp").unwrap();
        let w: Vec<(Call, i64)> = p.records.iter().map(|r| (r.call, r.ret)).collect();
        assert_eq!(
            w,
            vec![
                (Call::Wait, 101),
                (Call::Wait, 102),
                (Call::Wait, -(libc::ECHILD as i64))
            ]
        );
    }
}
