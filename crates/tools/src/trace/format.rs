//! fsbench's trace format: what a traced program asked of the file system, one record per
//! system call, in a compact binary stream that can be written and read one record at a
//! time.
//!
//! ```text
//! "FSBTRACE"  u32 LE version  u32 LE header length  header (JSON, [`Header`])
//! frames:     0x01 varint len, bytes        a string; the next id (from 0) names it
//!             0x02 record                   see [`Record`] and `encode_record`
//!             0xFF varint count             the end, with the number of records
//! ```
//!
//! Strings (system call names, paths) are written once and referred to by id afterwards,
//! so a trace costs a few bytes per call. Records are in order of their start times, each
//! start stored as the difference from the previous one. A trace without its end frame was
//! cut short: reading it stops with an error naming how many records it held.
//!
//! Paths are absolute, resolved at record time from the directory descriptor or working
//! directory the call used. The header carries the initial state of the traced program's
//! working directories (a [`fsbench_engine::scan`] walk taken before it started), so a replay can
//! rebuild it.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{self, BufRead, Read, Write};

pub const MAGIC: &[u8; 8] = b"FSBTRACE";
/// The format version: readers refuse newer ones.
pub const VERSION: u32 = 1;

/// What a trace says about itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub version: u32,
    /// The traced command line (empty when imported from a log recorded elsewhere).
    pub command: Vec<String>,
    /// The command's working directory.
    pub cwd: String,
    /// The directories whose calls a replay reproduces (absolute). Calls on other paths
    /// (shared libraries, /proc, /dev) are kept in the trace but not replayed.
    pub roots: Vec<String>,
    /// When the first record started (seconds since the Unix epoch).
    pub started_at: f64,
    /// Where the records came from: "strace 6.1 (recorded)", "strace log FILE (imported)".
    pub source: String,
    /// The initial tree below each root, taken before the command started (empty when
    /// imported without `--snapshot-of`).
    pub initial: Vec<Initial>,
    /// Log lines the converter could not use, with the first few quoted.
    #[serde(default)]
    pub skipped_lines: u64,
    #[serde(default)]
    pub skipped_examples: Vec<String>,
}

/// One entry of the initial tree: `path` relative to `roots[root]` ("" is the root itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Initial {
    pub root: u32,
    pub path: String,
    pub kind: EntryKind,
    pub size: u64,
    pub mode: u32,
    /// A symbolic link's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    Dir,
    File,
    Symlink,
    Other,
}

/// What a system call does, as far as the file system is concerned. The traced call's
/// own name is kept beside it in [`Record::syscall`].
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum Call {
    /// open, openat, openat2, creat: `path`, `flags` (Linux O_ values), `mode`; ret = fd.
    Open = 1,
    /// close: `fd`.
    Close,
    /// read, pread64, readv, preadv, preadv2: `fd`, `size` (requested), `offset` for the
    /// positional ones; ret = bytes.
    Read,
    /// write, pwrite64, writev, pwritev, pwritev2: as Read.
    Write,
    /// lseek: `fd`, `offset`, `flags` = whence; ret = the new position.
    Seek,
    /// dup, dup2, dup3, fcntl(F_DUPFD, F_DUPFD_CLOEXEC): `fd` = old, `fd2` = the new one
    /// asked for (dup2/dup3); ret = the new fd.
    Dup,
    /// stat, lstat, fstat, newfstatat, statx, access, faccessat(2): `path` or `fd`,
    /// `flags` = AT_ flags (AT_SYMLINK_NOFOLLOW for lstat).
    Stat,
    /// readlink, readlinkat: `path`.
    Readlink,
    /// mkdir, mkdirat: `path`, `mode`.
    Mkdir,
    /// rmdir, unlinkat(AT_REMOVEDIR): `path`.
    Rmdir,
    /// unlink, unlinkat: `path`.
    Unlink,
    /// rename, renameat, renameat2: `path` = old, `path2` = new, `flags`.
    Rename,
    /// link, linkat: `path` = existing, `path2` = new.
    Link,
    /// symlink, symlinkat: `path` = the new link, `path2` = its target as given.
    Symlink,
    /// getdents, getdents64: `fd`, `size` = buffer; ret = bytes.
    Getdents,
    /// fsync, fdatasync: `fd`; `flags` = 1 for fdatasync.
    Fsync,
    /// truncate, ftruncate: `path` or `fd`, `size` = the length.
    Truncate,
    /// fallocate: `fd`, `flags` = mode, `offset`, `size`.
    Fallocate,
    /// mmap of a file: `fd`, `size`, `offset`, `flags` = MAP_ flags, `mode` = PROT_ bits.
    Mmap,
    /// munmap: `size`.
    Munmap,
    /// chdir (`path`), fchdir (`fd`).
    Chdir,
    /// clone, clone3, fork, vfork: `flags` = CLONE_ flags (fork: SIGCHLD only); ret = the
    /// new thread's id.
    Clone,
    /// execve, execveat: `path`.
    Exec,
    /// The thread exited (strace's `+++ exited +++`, exit, exit_group).
    Exit,
    /// sendfile: `fd` = out, `fd2` = in, `size`, `offset` (of in, when given).
    Sendfile,
    /// copy_file_range: `fd` = in, `fd2` = out, `size`.
    CopyRange,
    /// chmod, fchmod, fchmodat: `path` or `fd`, `mode`.
    Chmod,
    /// utime, utimes, utimensat, futimesat: `path` or `fd`.
    Utimes,
    /// Any other traced call on a path or descriptor (kept for statistics, not replayed).
    #[default]
    Other,
    /// wait4, waitid: ret = the id of the child waited for (waitid: its `si_pid`); 0 or
    /// less when none. Not replayed: a replay orders by it (a parent's later calls wait for
    /// the child's last one).
    Wait,
}

impl Call {
    pub const ALL: [Call; 30] = [
        Call::Open,
        Call::Close,
        Call::Read,
        Call::Write,
        Call::Seek,
        Call::Dup,
        Call::Stat,
        Call::Readlink,
        Call::Mkdir,
        Call::Rmdir,
        Call::Unlink,
        Call::Rename,
        Call::Link,
        Call::Symlink,
        Call::Getdents,
        Call::Fsync,
        Call::Truncate,
        Call::Fallocate,
        Call::Mmap,
        Call::Munmap,
        Call::Chdir,
        Call::Clone,
        Call::Exec,
        Call::Exit,
        Call::Sendfile,
        Call::CopyRange,
        Call::Chmod,
        Call::Utimes,
        Call::Other,
        Call::Wait,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Call::Open => "open",
            Call::Close => "close",
            Call::Read => "read",
            Call::Write => "write",
            Call::Seek => "seek",
            Call::Dup => "dup",
            Call::Stat => "stat",
            Call::Readlink => "readlink",
            Call::Mkdir => "mkdir",
            Call::Rmdir => "rmdir",
            Call::Unlink => "unlink",
            Call::Rename => "rename",
            Call::Link => "link",
            Call::Symlink => "symlink",
            Call::Getdents => "getdents",
            Call::Fsync => "fsync",
            Call::Truncate => "truncate",
            Call::Fallocate => "fallocate",
            Call::Mmap => "mmap",
            Call::Munmap => "munmap",
            Call::Chdir => "chdir",
            Call::Clone => "clone",
            Call::Exec => "exec",
            Call::Exit => "exit",
            Call::Sendfile => "sendfile",
            Call::CopyRange => "copy_file_range",
            Call::Chmod => "chmod",
            Call::Utimes => "utimes",
            Call::Other => "other",
            Call::Wait => "wait",
        }
    }

    fn from_code(c: u8) -> Option<Call> {
        Call::ALL.iter().copied().find(|k| *k as u8 == c)
    }
}

/// One system call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Start, in nanoseconds since the header's `started_at`.
    pub start_ns: u64,
    /// How long the call took (strace's `-T`).
    pub dur_ns: u64,
    /// The calling thread's id as traced.
    pub tid: u32,
    /// The system call's name as traced ("openat", "pread64").
    pub syscall: String,
    pub call: Call,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path2: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd2: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// The result: a count, descriptor or position when ≥ 0, minus the errno otherwise.
    pub ret: i64,
}

impl Record {
    pub fn ok(&self) -> bool {
        self.ret >= 0
    }
    /// The errno of a failed call.
    pub fn errno(&self) -> Option<i32> {
        (self.ret < 0).then_some((-self.ret) as i32)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("not an fsbench trace (it does not start with FSBTRACE)")]
    NotATrace,
    #[error("trace format version {0} is newer than this fsbench reads ({VERSION}): use a newer fsbench")]
    Newer(u32),
    #[error("trace header: {0}")]
    Header(String),
    #[error("the trace is cut short at byte {at}, after {records} records (no end frame): the recording was interrupted or the file truncated")]
    Truncated { records: u64, at: u64 },
    #[error("corrupt trace at record {0}: {1}")]
    Corrupt(u64, String),
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

const F_PATH: u64 = 1;
const F_PATH2: u64 = 2;
const F_FD: u64 = 4;
const F_FD2: u64 = 8;
const F_OFFSET: u64 = 16;
const F_SIZE: u64 = 32;
const F_FLAGS: u64 = 64;
const F_MODE: u64 = 128;

/// Writes a trace one record at a time.
pub struct Writer<W: Write> {
    out: W,
    strings: HashMap<String, u64>,
    last_start: u64,
    count: u64,
    buf: Vec<u8>,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W, header: &Header) -> io::Result<Writer<W>> {
        let h = serde_json::to_vec(header).map_err(io::Error::other)?;
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&(h.len() as u32).to_le_bytes())?;
        out.write_all(&h)?;
        Ok(Writer {
            out,
            strings: HashMap::new(),
            last_start: 0,
            count: 0,
            buf: Vec::with_capacity(256),
        })
    }

    fn string(&mut self, s: &str) -> io::Result<u64> {
        if let Some(&id) = self.strings.get(s) {
            return Ok(id);
        }
        let id = self.strings.len() as u64;
        let mut b = vec![0x01];
        put_varint(&mut b, s.len() as u64);
        b.extend_from_slice(s.as_bytes());
        self.out.write_all(&b)?;
        self.strings.insert(s.to_string(), id);
        Ok(id)
    }

    pub fn write(&mut self, r: &Record) -> io::Result<()> {
        let sys = self.string(&r.syscall)?;
        let p1 = r.path.as_deref().map(|p| self.string(p)).transpose()?;
        let p2 = r.path2.as_deref().map(|p| self.string(p)).transpose()?;
        let mut present = 0;
        for (bit, on) in [
            (F_PATH, p1.is_some()),
            (F_PATH2, p2.is_some()),
            (F_FD, r.fd.is_some()),
            (F_FD2, r.fd2.is_some()),
            (F_OFFSET, r.offset.is_some()),
            (F_SIZE, r.size.is_some()),
            (F_FLAGS, r.flags.is_some()),
            (F_MODE, r.mode.is_some()),
        ] {
            if on {
                present |= bit;
            }
        }
        let b = &mut self.buf;
        b.clear();
        b.push(0x02);
        put_varint(b, zigzag(r.start_ns as i64 - self.last_start as i64));
        put_varint(b, r.dur_ns);
        put_varint(b, r.tid as u64);
        put_varint(b, sys);
        b.push(r.call as u8);
        put_varint(b, present);
        if let Some(v) = p1 {
            put_varint(b, v);
        }
        if let Some(v) = p2 {
            put_varint(b, v);
        }
        if let Some(v) = r.fd {
            put_varint(b, zigzag(v as i64));
        }
        if let Some(v) = r.fd2 {
            put_varint(b, zigzag(v as i64));
        }
        if let Some(v) = r.offset {
            put_varint(b, v);
        }
        if let Some(v) = r.size {
            put_varint(b, v);
        }
        if let Some(v) = r.flags {
            put_varint(b, v);
        }
        if let Some(v) = r.mode {
            put_varint(b, v as u64);
        }
        put_varint(b, zigzag(r.ret));
        self.out.write_all(b)?;
        self.last_start = r.start_ns;
        self.count += 1;
        Ok(())
    }

    /// Write the end frame and flush; returns the number of records.
    pub fn finish(mut self) -> io::Result<u64> {
        let mut b = vec![0xFF];
        put_varint(&mut b, self.count);
        self.out.write_all(&b)?;
        self.out.flush()?;
        Ok(self.count)
    }
}

/// Reads a trace one record at a time.
pub struct Reader<R: BufRead> {
    inp: R,
    pub header: Header,
    strings: Vec<String>,
    last_start: u64,
    count: u64,
    done: bool,
    /// Bytes read so far (where a cut-short file ends).
    pos: u64,
}

impl Reader<io::BufReader<fsbench_base::input::Stream>> {
    /// Open a trace file (`-`: standard input) through the bounded reader
    /// ([`fsbench_base::input::open_stream`]: a FIFO, a device or a pseudo file is refused). A
    /// regular file's size bounds what its header may claim; standard input's header is
    /// read as it comes ([`Reader::with_size`]).
    pub fn open(path: &std::path::Path) -> anyhow::Result<Self> {
        let f = fsbench_base::input::open_stream(path)
            .map_err(|e| anyhow::anyhow!("trace {}: {e}", path.display()))?;
        let size = f.size();
        Reader::with_size(io::BufReader::with_capacity(1 << 16, f), size)
            .map_err(|e| anyhow::anyhow!("trace {}: {e}", path.display()))
    }
}

/// The largest header a trace may have (the initial tree of a few million entries).
pub const MAX_HEADER: usize = 1 << 30;

impl<R: BufRead> Reader<R> {
    pub fn new(inp: R) -> Result<Reader<R>, FormatError> {
        Reader::with_size(inp, None)
    }

    /// Read from `inp`, `size` bytes long when known: a header longer than what follows it
    /// is refused before anything is allocated for it. Unknown, the header is read as it
    /// comes, so memory follows the bytes really there, not what the length claims.
    pub fn with_size(mut inp: R, size: Option<u64>) -> Result<Reader<R>, FormatError> {
        let mut magic = [0u8; 8];
        if inp.read_exact(&mut magic).is_err() || &magic != MAGIC {
            return Err(FormatError::NotATrace);
        }
        let mut w = [0u8; 4];
        let cut = |e: io::Error, at: u64| {
            match e.kind() {
            io::ErrorKind::UnexpectedEof => FormatError::Header(format!(
                "the file ends before byte {at}, inside the 16 bytes that start a trace (magic, version, header length): it is cut short"
            )),
            _ => e.into(),
        }
        };
        inp.read_exact(&mut w).map_err(|e| cut(e, 12))?;
        let version = u32::from_le_bytes(w);
        if version > VERSION {
            return Err(FormatError::Newer(version));
        }
        inp.read_exact(&mut w).map_err(|e| cut(e, 16))?;
        let len = u32::from_le_bytes(w) as usize;
        if len > MAX_HEADER {
            return Err(FormatError::Header(format!(
                "it claims {len} bytes, more than the {MAX_HEADER} a trace's header may have"
            )));
        }
        // 16 bytes so far: magic, version, length.
        if let Some(size) = size {
            if 16 + len as u64 > size {
                return Err(FormatError::Header(format!(
                    "it claims {len} bytes but the file holds {size} bytes in all: the file is cut short or not a trace"
                )));
            }
        }
        let mut h = Vec::with_capacity(len.min(1 << 16));
        (&mut inp).take(len as u64).read_to_end(&mut h)?;
        if h.len() < len {
            return Err(FormatError::Header(format!(
                "it claims {len} bytes but only {} follow: the file is cut short",
                h.len()
            )));
        }
        let header: Header =
            serde_json::from_slice(&h).map_err(|e| FormatError::Header(e.to_string()))?;
        Ok(Reader {
            inp,
            header,
            strings: Vec::new(),
            last_start: 0,
            count: 0,
            done: false,
            pos: 16 + len as u64,
        })
    }

    fn byte(&mut self) -> Result<u8, FormatError> {
        let mut b = [0u8; 1];
        match self.inp.read_exact(&mut b) {
            Ok(()) => {
                self.pos += 1;
                Ok(b[0])
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(FormatError::Truncated {
                records: self.count,
                at: self.pos,
            }),
            Err(e) => Err(e.into()),
        }
    }

    fn varint(&mut self) -> Result<u64, FormatError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(FormatError::Corrupt(self.count, "varint too long".into()))
    }

    fn string(&mut self) -> Result<String, FormatError> {
        let id = self.varint()? as usize;
        self.strings
            .get(id)
            .cloned()
            .ok_or_else(|| FormatError::Corrupt(self.count, format!("string {id} undefined")))
    }

    /// The next record, `None` at the end frame.
    pub fn next_record(&mut self) -> Result<Option<Record>, FormatError> {
        if self.done {
            return Ok(None);
        }
        loop {
            match self.byte()? {
                0x01 => {
                    let len = self.varint()? as usize;
                    if len > 1 << 20 {
                        return Err(FormatError::Corrupt(
                            self.count,
                            format!("string of {len} bytes"),
                        ));
                    }
                    let mut s = Vec::with_capacity(len.min(1 << 12));
                    (&mut self.inp).take(len as u64).read_to_end(&mut s)?;
                    self.pos += s.len() as u64;
                    if s.len() < len {
                        return Err(FormatError::Truncated {
                            records: self.count,
                            at: self.pos,
                        });
                    }
                    self.strings.push(String::from_utf8_lossy(&s).into_owned());
                }
                0x02 => {
                    let start = (self.last_start as i64 + unzigzag(self.varint()?)) as u64;
                    let dur_ns = self.varint()?;
                    let tid = self.varint()? as u32;
                    let syscall = self.string()?;
                    let code = self.byte()?;
                    let call = Call::from_code(code).ok_or_else(|| {
                        FormatError::Corrupt(self.count, format!("call code {code}"))
                    })?;
                    let present = self.varint()?;
                    let mut r = Record {
                        start_ns: start,
                        dur_ns,
                        tid,
                        syscall,
                        call,
                        ..Default::default()
                    };
                    if present & F_PATH != 0 {
                        r.path = Some(self.string()?);
                    }
                    if present & F_PATH2 != 0 {
                        r.path2 = Some(self.string()?);
                    }
                    if present & F_FD != 0 {
                        r.fd = Some(unzigzag(self.varint()?) as i32);
                    }
                    if present & F_FD2 != 0 {
                        r.fd2 = Some(unzigzag(self.varint()?) as i32);
                    }
                    if present & F_OFFSET != 0 {
                        r.offset = Some(self.varint()?);
                    }
                    if present & F_SIZE != 0 {
                        r.size = Some(self.varint()?);
                    }
                    if present & F_FLAGS != 0 {
                        r.flags = Some(self.varint()?);
                    }
                    if present & F_MODE != 0 {
                        r.mode = Some(self.varint()? as u32);
                    }
                    r.ret = unzigzag(self.varint()?);
                    self.last_start = start;
                    self.count += 1;
                    return Ok(Some(r));
                }
                0xFF => {
                    let n = self.varint()?;
                    if n != self.count {
                        return Err(FormatError::Corrupt(
                            self.count,
                            format!("the end frame counts {n} records"),
                        ));
                    }
                    self.done = true;
                    return Ok(None);
                }
                t => {
                    return Err(FormatError::Corrupt(
                        self.count,
                        format!("frame type {t:#x}"),
                    ))
                }
            }
        }
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Record, FormatError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// Read a whole trace into memory.
pub fn read_all(path: &std::path::Path) -> anyhow::Result<(Header, Vec<Record>)> {
    let mut r = Reader::open(path)?;
    let mut v = Vec::new();
    while let Some(rec) = r
        .next_record()
        .map_err(|e| anyhow::anyhow!("trace {}: {e}", path.display()))?
    {
        v.push(rec);
    }
    Ok((r.header, v))
}

/// Write a whole trace.
pub fn write_all(
    path: &std::path::Path,
    header: &Header,
    records: &[Record],
) -> anyhow::Result<u64> {
    let f = fsbench_base::export::Output::open(path, "trace")?;
    let mut w = Writer::new(f, header)?;
    for r in records {
        w.write(r)?;
    }
    Ok(w.finish()?)
}

/// The name of an errno value ("ENOENT"), or its number.
pub fn errno_name(e: i32) -> String {
    let n = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        libc::ENOTTY => "ENOTTY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::ESPIPE => "ESPIPE",
        libc::EROFS => "EROFS",
        libc::EPIPE => "EPIPE",
        libc::ERANGE => "ERANGE",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::ENODATA => "ENODATA",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ECHILD => "ECHILD",
        512 => "ERESTARTSYS",
        _ => return format!("errno {e}"),
    };
    n.to_string()
}

/// The human rendering of one record (`fsbench trace show`).
pub fn render(r: &Record, out: &mut impl Write) -> io::Result<()> {
    write!(
        out,
        "{:>12.6} {:>9} {:>7} {}(",
        r.start_ns as f64 / 1e9,
        format!("{}us", r.dur_ns / 1000),
        r.tid,
        // As text: a crafted name cannot send control sequences to the terminal.
        r.syscall.escape_debug()
    )?;
    let mut sep = "";
    let mut arg = |out: &mut dyn Write, s: String| -> io::Result<()> {
        write!(out, "{sep}{s}")?;
        sep = ", ";
        Ok(())
    };
    if let Some(v) = r.fd {
        arg(out, format!("fd={v}"))?;
    }
    if let Some(v) = &r.path {
        arg(out, format!("{v:?}"))?;
    }
    if let Some(v) = &r.path2 {
        arg(out, format!("{v:?}"))?;
    }
    if let Some(v) = r.fd2 {
        arg(out, format!("fd2={v}"))?;
    }
    if let Some(v) = r.offset {
        arg(out, format!("off={v}"))?;
    }
    if let Some(v) = r.size {
        arg(out, format!("size={v}"))?;
    }
    if let Some(v) = r.flags {
        arg(out, format!("flags={v:#x}"))?;
    }
    if let Some(v) = r.mode {
        arg(out, format!("mode={v:#o}"))?;
    }
    match r.errno() {
        Some(e) => writeln!(out, ") = -1 {}  [{}]", errno_name(e), r.call.name()),
        None => writeln!(out, ") = {}  [{}]", r.ret, r.call.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Header, Vec<Record>) {
        let h = Header {
            version: VERSION,
            command: vec!["cp".into(), "-r".into(), "a".into(), "b".into()],
            cwd: "/tmp/x".into(),
            roots: vec!["/tmp/x".into()],
            started_at: 1_700_000_000.5,
            source: "test".into(),
            initial: vec![Initial {
                root: 0,
                path: "a/f".into(),
                kind: EntryKind::File,
                size: 10,
                mode: 0o644,
                target: None,
            }],
            ..Default::default()
        };
        let recs = vec![
            Record {
                start_ns: 10,
                dur_ns: 5,
                tid: 100,
                syscall: "openat".into(),
                call: Call::Open,
                path: Some("/tmp/x/a/f".into()),
                flags: Some(0o100),
                mode: Some(0o644),
                ret: 3,
                ..Default::default()
            },
            Record {
                start_ns: 20,
                dur_ns: 1,
                tid: 100,
                syscall: "pread64".into(),
                call: Call::Read,
                fd: Some(3),
                offset: Some(1 << 40),
                size: Some(4096),
                ret: 10,
                ..Default::default()
            },
            // Out of order by a little (merged unfinished calls) and failed.
            Record {
                start_ns: 15,
                dur_ns: 1,
                tid: 101,
                syscall: "openat".into(),
                call: Call::Open,
                path: Some("/tmp/x/a/f".into()),
                ret: -2,
                ..Default::default()
            },
        ];
        (h, recs)
    }

    #[test]
    fn records_round_trip_and_strings_are_shared() {
        let (h, recs) = sample();
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf, &h).unwrap();
        for r in &recs {
            w.write(r).unwrap();
        }
        assert_eq!(w.finish().unwrap(), 3);
        // "/tmp/x/a/f" is stored once.
        let needle = b"/tmp/x/a/f";
        let n = buf.windows(needle.len()).filter(|w| w == needle).count();
        assert_eq!(n, 1, "the path is written once though two records name it");
        let mut r = Reader::new(io::Cursor::new(&buf)).unwrap();
        assert_eq!(r.header, h);
        let back: Vec<Record> = (&mut r).map(|x| x.unwrap()).collect();
        assert_eq!(back, recs);
        assert_eq!(back[2].errno(), Some(2));
    }

    #[test]
    fn a_header_longer_than_the_file_is_refused_before_it_is_read() {
        let mut t = MAGIC.to_vec();
        t.extend_from_slice(&VERSION.to_le_bytes());
        t.extend_from_slice(&(1u32 << 30).to_le_bytes());
        let e = Reader::with_size(io::Cursor::new(&t), Some(16))
            .err()
            .expect("refused");
        assert!(e.to_string().contains("claims 1073741824 bytes"), "{e}");
        // Without a known size: refused once the bytes run out, having held only those.
        let e = Reader::new(io::Cursor::new(&t)).err().expect("refused");
        assert!(e.to_string().contains("only 0 follow"), "{e}");
        t[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = Reader::new(io::Cursor::new(&t)).err().expect("refused");
        assert!(e.to_string().contains("may have"), "{e}");
    }

    #[test]
    fn a_cut_trace_says_so() {
        let (h, recs) = sample();
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf, &h).unwrap();
        for r in &recs {
            w.write(r).unwrap();
        }
        w.finish().unwrap();
        buf.truncate(buf.len() - 2);
        let r = Reader::new(io::Cursor::new(&buf)).unwrap();
        let err = r.collect::<Result<Vec<_>, _>>().unwrap_err();
        let at = buf.len();
        assert!(
            err.to_string()
                .contains(&format!("cut short at byte {at}, after 3 records")),
            "{err}"
        );
        // Cut inside the 16 bytes that start a trace: said so, not an I/O error's text.
        let e = Reader::new(io::Cursor::new(&buf[..10])).err().unwrap();
        assert!(e.to_string().contains("cut short"), "{e}");
        assert!(matches!(
            Reader::new(io::Cursor::new(b"not a trace at all")),
            Err(FormatError::NotATrace)
        ));
    }
}
