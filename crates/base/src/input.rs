//! Reading what the user points fsbench at, with a bound: the one way in for input files.
//!
//! A path on the command line, in a plan or in a job file can name anything: a FIFO (a read
//! waits for a writer, then may never end), `/dev/zero` (endless), `/proc/self/pagemap` (a
//! "regular" file of size 0 that reads hundreds of gigabytes), `/proc/kcore` (claims 128 TiB),
//! a sysfs attribute (claims 4 KiB whatever it holds), an 8 GiB sparse file of zeros. Reading
//! one to its end grows memory without bound or never finishes. So every input is read here:
//!
//! - it is a regular file, opened with `O_NONBLOCK` (a FIFO is refused, never waited on), not
//!   on a pseudo file system (proc, sysfs, debugfs ...: their sizes say nothing of their
//!   contents), and read no further than its size says (one that holds more is refused);
//!   or it is `-`, standard input, read once;
//! - a whole-file input ([`read`], [`read_text`]) has a size limit per kind ([`Kind`]: a
//!   workload 16 MiB, a plan 4 MiB ...); a streamed one ([`open_stream`]: traces, strace
//!   logs, snapshots) has none, but is read a piece at a time, and line-based readers take
//!   lines of bounded length ([`read_line`]);
//! - a directory argument is checked without opening it ([`check_dir`]), or opened with
//!   `O_DIRECTORY` ([`open_dir`]): opening a FIFO there would wait for a writer.

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// A kind of input read whole: what it is called in messages, and the most of it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub what: &'static str,
    pub max: u64,
}

/// A workload file, Filebench's or a fio job file (`check`, `run`, `show`, plans naming one).
/// The largest Filebench workloads are a few kilobytes; 16 MiB leaves room for generated ones
/// (tens of thousands of flowops) and keeps a mistaken path from costing gigabytes.
pub const WORKLOAD: Kind = Kind {
    what: "workload file",
    max: 16 << 20,
};

/// A file a fio job file includes (`include FILE`): a job file's part.
pub const INCLUDE: Kind = Kind {
    what: "include file",
    max: 16 << 20,
};

/// An experiment plan (TOML): the largest in `plans/` are a few kilobytes.
pub const PLAN: Kind = Kind {
    what: "plan",
    max: 4 << 20,
};

/// A result file (`compare`, `report`, an experiment's per-run JSON): a long run's time
/// series and histograms of many flowops take tens of megabytes; a gigabyte is a mistake.
pub const RESULTS: Kind = Kind {
    what: "result file",
    max: 1 << 30,
};

/// A configuration file (PostMark's): a few lines.
pub const CONFIG: Kind = Kind {
    what: "configuration",
    max: 1 << 20,
};

/// A state file fsbench wrote and reads back (an aging directory's state, a simulated
/// disk's or remote's configuration, statistics and lookaside index, an experiment's
/// journal): the largest, a lookaside index of a million files, takes some hundred MiB.
pub const STATE: Kind = Kind {
    what: "state file",
    max: 512 << 20,
};

/// A file of a tree `age --next-version` copies and edits in memory: sources and
/// documents; a file past a gigabyte is not the tree this models.
pub const TREE_FILE: Kind = Kind {
    what: "file of the source tree",
    max: 1 << 30,
};

/// The largest line of a line-based stream ([`read_line`]): an strace line holds a call
/// with its paths (`PATH_MAX` each) and annotations, a few kilobytes at most.
pub const LINE_MAX: usize = 1 << 20;

/// The most of a log read back for a message ([`read_tail`]).
pub const LOG_TAIL: u64 = 64 << 10;

/// Standard input, once streamed for one input, is not there for another.
static STDIN_TAKEN: AtomicBool = AtomicBool::new(false);

/// Standard input read whole (at most the first reader's limit and one byte), kept: a
/// command that loads its workload more than once (to choose its directory, then to run
/// it) reads the same text.
static STDIN_DATA: std::sync::OnceLock<io::Result<Vec<u8>>> = std::sync::OnceLock::new();

/// Whether `path` is `-`, standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

fn take_stdin() -> io::Result<io::Stdin> {
    if STDIN_TAKEN.swap(true, Ordering::SeqCst) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "standard input (`-`) was already read for another input; give a file instead",
        ));
    }
    Ok(io::stdin())
}

/// The pseudo file system an open file is on, if any: its sizes are not its contents.
pub fn pseudo_fs(f: &File) -> io::Result<Option<&'static str>> {
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs writes the struct; the fd is open for the call.
    if unsafe { libc::fstatfs(f.as_raw_fd(), &mut s) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pseudo_fs_name(s.f_type as i64))
}

/// The pseudo file system `path` is on, if any (`statfs`, which opens nothing).
pub fn pseudo_fs_of(path: &Path) -> io::Result<Option<&'static str>> {
    Ok(pseudo_fs_name(crate::sys::fsmagic::of_path(path)?))
}

/// The name of a pseudo file system by its `statfs` magic (linux/magic.h).
fn pseudo_fs_name(magic: i64) -> Option<&'static str> {
    Some(match magic as u32 {
        0x9FA0 => "proc",
        0x6265_6572 => "sysfs",
        0x6462_6720 => "debugfs",
        0x7472_6163 => "tracefs",
        0x7363_6673 => "securityfs",
        0x6265_6570 => "configfs",
        0x0027_E0EB => "cgroup",
        0x6367_7270 => "cgroup2",
        0xCAFE_4A11 => "bpf",
        0xF97C_FF8C => "selinuxfs",
        0x4341_5D53 => "smackfs",
        0x6165_676C => "pstore",
        0xDE5E_81E4 => "efivarfs",
        0x4249_4E4D => "binfmt_misc",
        0x1CD1 => "devpts",
        0x6E73_6673 => "nsfs",
        _ => return None,
    })
}

/// Why files on the pseudo file system `fs` are not read.
pub fn pseudo_refusal(fs: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("on {fs}, a pseudo file system whose sizes say nothing of its contents; not read"),
    )
}

/// What a file is, for messages: "a regular file", "a directory", "a block device" ...
pub fn file_kind(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::MetadataExt;
    if m.is_file() {
        "a regular file"
    } else {
        kind(m.mode())
    }
}

/// What a non-regular file is, for messages.
fn kind(mode: u32) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => "a directory",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFSOCK => "a socket",
        libc::S_IFLNK => "a symbolic link",
        _ => "not a regular file",
    }
}

/// The size of an open file that can be read with a bound: a regular file on a file system
/// whose sizes are true. Anything else is refused, saying what it is.
pub fn regular_size(f: &File) -> io::Result<u64> {
    let st = crate::beneath::fstat(f.as_raw_fd())?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{}; only regular files (or `-` for standard input) are read",
                kind(st.st_mode)
            ),
        ));
    }
    if let Some(fs) = pseudo_fs(f)? {
        return Err(pseudo_refusal(fs));
    }
    Ok(st.st_size as u64)
}

/// Read `r` through `buf`, no further than `size` bytes, handing each piece to `each`, and
/// refuse a file that holds more than its size says (it grew, or its size lies). The
/// number of bytes read.
pub fn read_bounded(
    r: &mut impl Read,
    size: u64,
    buf: &mut [u8],
    each: &mut dyn FnMut(&[u8]),
) -> io::Result<u64> {
    let mut total = 0u64;
    let mut r = r.take(size.saturating_add(1));
    loop {
        let n = match r.read(buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        total += n as u64;
        if total > size {
            return Err(more_than(size));
        }
        each(&buf[..n]);
    }
}

fn more_than(size: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("holds more than its size ({size} bytes) says: it grows or is not a plain file; not read"),
    )
}

/// Open `path` for reading (following a symbolic link) without waiting on a FIFO.
pub fn open(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

fn too_large(size: u64, k: Kind) -> io::Error {
    let max = k.max;
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{size} bytes: a {} may have at most {max} ({} MiB)",
            k.what,
            max >> 20
        ),
    )
}

/// The whole of the input `path` (`-`: standard input), when it is at most `k.max` bytes.
pub fn read(path: &Path, k: Kind) -> io::Result<Vec<u8>> {
    if is_stdin(path) {
        // Read once, up to this kind's limit; later reads get the same bytes.
        let data = STDIN_DATA.get_or_init(|| {
            let mut out = Vec::new();
            take_stdin()?.lock().take(k.max + 1).read_to_end(&mut out)?;
            Ok(out)
        });
        let out = data
            .as_ref()
            .map_err(|e| io::Error::new(e.kind(), e.to_string()))?;
        if out.len() as u64 > k.max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "more than {} bytes on standard input: a {} may have at most {} MiB",
                    k.max,
                    k.what,
                    k.max >> 20
                ),
            ));
        }
        return Ok(out.clone());
    }
    read_open(&open(path)?, k)
}

/// The whole of an already open input (a regular file, see [`regular_size`]), when it is
/// at most `k.max` bytes.
pub fn read_open(f: &File, k: Kind) -> io::Result<Vec<u8>> {
    let size = regular_size(f)?;
    if size > k.max {
        return Err(too_large(size, k));
    }
    let mut out = Vec::with_capacity(size as usize);
    let mut buf = vec![0u8; 64 << 10];
    read_bounded(&mut &*f, size, &mut buf, &mut |b| out.extend_from_slice(b))?;
    Ok(out)
}

/// [`read`] as UTF-8 text.
pub fn read_text(path: &Path, k: Kind) -> io::Result<String> {
    String::from_utf8(read(path, k)?).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not UTF-8 text: {}", e.utf8_error()),
        )
    })
}

/// The last `max` bytes (at most) of the regular file `path`, as text: a log read back to
/// say why something failed. Empty when it cannot be read.
pub fn read_tail(path: &Path, max: u64) -> String {
    use std::io::{Seek, SeekFrom};
    let Ok(mut f) = open(path) else {
        return String::new();
    };
    let Ok(size) = regular_size(&f) else {
        return String::new();
    };
    let from = size.saturating_sub(max);
    if f.seek(SeekFrom::Start(from)).is_err() {
        return String::new();
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 16 << 10];
    let _ = read_bounded(&mut f, size - from, &mut buf, &mut |b| {
        out.extend_from_slice(b)
    });
    String::from_utf8_lossy(&out).into_owned()
}

/// A streamed input: a regular file read no further than its size said when it was opened
/// (one that grows is refused), or standard input.
pub struct Stream {
    src: Source,
    size: Option<u64>,
    read: u64,
}

enum Source {
    File(File),
    Stdin(io::Stdin),
}

impl Stream {
    /// The file's size; `None` for standard input.
    pub fn size(&self) -> Option<u64> {
        self.size
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match &mut self.src {
            Source::File(f) => f.read(buf)?,
            Source::Stdin(s) => s.read(buf)?,
        };
        self.read += n as u64;
        match self.size {
            Some(size) if self.read > size => Err(more_than(size)),
            _ => Ok(n),
        }
    }
}

/// Open a streamed input (a trace, an strace log, a snapshot): a regular file not on a
/// pseudo file system, opened without waiting on a FIFO, or `-` for standard input. No
/// size limit: its reader keeps a bounded part of it in memory at a time.
pub fn open_stream(path: &Path) -> io::Result<Stream> {
    if is_stdin(path) {
        return Ok(Stream {
            src: Source::Stdin(take_stdin()?),
            size: None,
            read: 0,
        });
    }
    let f = open(path)?;
    let size = regular_size(&f)?;
    Ok(Stream {
        src: Source::File(f),
        size: Some(size),
        read: 0,
    })
}

/// Read one line (through `\n`, which is kept) into `line`, cleared first; `Ok(false)` at
/// the end. A line longer than `max` bytes is refused: an endless one (a sparse file of
/// zeros, `/dev/zero` on standard input) never fills memory.
pub fn read_line(r: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> io::Result<bool> {
    line.clear();
    let n = r.take(max as u64 + 1).read_until(b'\n', line)?;
    if n > max && !line.ends_with(b"\n") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a line longer than {max} bytes: not a text log of the kind expected"),
        ));
    }
    Ok(n > 0)
}

/// Refuse `path` unless it is a directory (following a symbolic link), saying what it is;
/// nothing is opened (opening a FIFO waits for a writer). A missing path is `NotFound`.
pub fn check_dir(path: &Path) -> io::Result<()> {
    let m = std::fs::metadata(path)?;
    if m.is_dir() {
        return Ok(());
    }
    Err(not_a_dir(&m))
}

fn not_a_dir(m: &std::fs::Metadata) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}, not a directory", file_kind(m)),
    )
}

/// Open the directory `path` (following a symbolic link) to list it or to work beneath
/// it. Anything else is refused without waiting: `O_DIRECTORY` fails before a FIFO's open
/// would wait for a writer.
pub fn open_dir(path: &Path) -> io::Result<File> {
    let r = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    match r {
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => match std::fs::metadata(path) {
            Ok(m) => Err(not_a_dir(&m)),
            Err(_) => Err(e),
        },
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("fsbench-input-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    fn fifo(p: &Path) {
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    const TINY: Kind = Kind {
        what: "file",
        max: 5,
    };

    #[test]
    fn regular_files_are_read_whole_and_others_refused() {
        let d = scratch("regular");
        let f = d.join("a");
        std::fs::write(&f, b"hello").unwrap();
        assert_eq!(read(&f, TINY).unwrap(), b"hello");
        let e = read(&f, Kind { max: 4, ..TINY }).unwrap_err();
        assert!(e.to_string().contains("5 bytes"), "{e}");
        let e = read(&d, TINY).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let e = read(Path::new("/dev/zero"), TINY).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        fifo(&d.join("fifo"));
        let e = read(&d.join("fifo"), TINY).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let e = open_stream(&d.join("fifo")).err().unwrap();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn pseudo_files_are_refused() {
        let p = Path::new("/proc/self/pagemap");
        if !p.exists() {
            return;
        }
        let e = read(p, WORKLOAD).unwrap_err();
        assert!(e.to_string().contains("on proc"), "{e}");
        let e = open_stream(p).err().unwrap();
        assert!(e.to_string().contains("on proc"), "{e}");
        assert_eq!(pseudo_fs_of(Path::new("/proc/self")).unwrap(), Some("proc"));
    }

    #[test]
    fn a_file_holding_more_than_its_size_is_refused() {
        let data = [1u8; 100];
        let mut buf = [0u8; 7];
        let mut seen = 0;
        let e = read_bounded(&mut &data[..], 50, &mut buf, &mut |b| seen += b.len()).unwrap_err();
        assert!(e.to_string().contains("50 bytes"), "{e}");
        assert!(seen <= 50);
        let n = read_bounded(&mut &data[..], 100, &mut buf, &mut |_| {}).unwrap();
        assert_eq!(n, 100);
    }

    #[test]
    fn lines_are_bounded() {
        let mut r = &b"ab\ncd"[..];
        let mut line = Vec::new();
        assert!(read_line(&mut r, &mut line, 4).unwrap());
        assert_eq!(line, b"ab\n");
        assert!(read_line(&mut r, &mut line, 4).unwrap());
        assert_eq!(line, b"cd");
        assert!(!read_line(&mut r, &mut line, 4).unwrap());
        let zeros = [0u8; 100];
        let e = read_line(&mut &zeros[..], &mut line, 10).unwrap_err();
        assert!(e.to_string().contains("longer than 10 bytes"), "{e}");
        assert!(line.len() <= 11);
        // A line of exactly the limit, with its newline, is taken.
        assert!(read_line(&mut &b"0123456789\n"[..], &mut line, 10).unwrap());
    }

    #[test]
    fn directories_are_checked_without_opening() {
        let d = scratch("dirs");
        fifo(&d.join("p"));
        for e in [
            check_dir(&d.join("p")).unwrap_err(),
            open_dir(&d.join("p")).unwrap_err(),
        ] {
            assert!(e.to_string().contains("a FIFO, not a directory"), "{e}");
        }
        assert!(open_dir(&d).is_ok() && check_dir(&d).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_tail_of_a_log() {
        let d = scratch("tail");
        std::fs::write(d.join("log"), b"0123456789").unwrap();
        assert_eq!(read_tail(&d.join("log"), 4), "6789");
        assert_eq!(read_tail(&d.join("log"), 40), "0123456789");
        assert_eq!(read_tail(&d, 40), "");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
