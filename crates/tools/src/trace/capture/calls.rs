//! The strace calls fsbench reads, one family at a time: each family fills a record from a
//! call's arguments.

use super::syntax::{
    fd_num, fd_path, flags, iov_total, normalize, number, signed, struct_field, unquote,
};
use crate::trace::format::{Call, Record};

/// One call's name and arguments, and what its relative paths resolve against.
pub(super) struct CallArgs<'a> {
    pub name: &'a str,
    pub args: &'a [String],
    /// The process's working directory before the call.
    pub cwd: String,
    /// The path annotating the result (a new descriptor's).
    pub ret_path: Option<String>,
}

impl CallArgs<'_> {
    /// The `i`th argument ("" when missing).
    pub fn a(&self, i: usize) -> &str {
        self.args.get(i).map(|s| s.as_str()).unwrap_or("")
    }
    /// A path argument `p` relative to the directory argument `d`.
    pub fn at(&self, d: &str, p: &str) -> Option<String> {
        let p = unquote(p)?;
        if p.starts_with('/') {
            return Some(normalize(&p));
        }
        let base = fd_path(d).unwrap_or_else(|| self.cwd.clone());
        Some(normalize(&format!("{base}/{p}")))
    }
    /// A path argument relative to the working directory.
    pub fn rel(&self, p: &str) -> Option<String> {
        self.at("AT_FDCWD", p)
    }
}

// The call families. Each fills `r` from the arguments when `c` is one of its calls and
// says whether the record is kept (a call that is not on a file is not); None when `c` is
// not one of its calls.

/// open, openat, openat2, creat.
pub(super) fn opens(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
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
pub(super) fn reads_writes(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
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
pub(super) fn descriptors(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
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
pub(super) fn metadata(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
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
pub(super) fn directories(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
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
pub(super) fn links_renames(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
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
pub(super) fn sizes_mappings(c: &CallArgs<'_>, r: &mut Record) -> Option<bool> {
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
pub(super) fn other(c: &CallArgs<'_>, r: &mut Record) -> bool {
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
