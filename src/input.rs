//! Reading files the user points fsbench at, with a bound.
//!
//! A path on the command line can name anything: a FIFO (a read waits for a writer, then
//! may never end), `/dev/zero` (endless), `/proc/self/pagemap` (a "regular" file of size 0
//! that reads hundreds of gigabytes), `/proc/kcore` (claims 128 TiB), a sysfs attribute
//! (claims 4 KiB whatever it holds). Reading one to its end grows memory without bound or
//! never finishes. So every file read here is checked first: it must be a regular file, not
//! on a pseudo file system (proc, sysfs, debugfs ...: their sizes say nothing of their
//! contents), and is read no further than its size says (a file that holds more, because it
//! grows or lies, is refused). Workload files are also capped ([`WORKLOAD_MAX`]).

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The largest workload file read (`check`, `run` and everything that loads one). The
/// largest Filebench workloads are a few kilobytes; 16 MiB leaves room for generated ones
/// (tens of thousands of flowops) and keeps a mistaken path from costing gigabytes.
pub const WORKLOAD_MAX: u64 = 16 << 20;

/// The pseudo file system an open file is on, if any: its sizes are not its contents.
pub fn pseudo_fs(f: &File) -> io::Result<Option<&'static str>> {
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs writes the struct; the fd is open for the call.
    if unsafe { libc::fstatfs(f.as_raw_fd(), &mut s) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pseudo_fs_name(s.f_type as i64))
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

/// Why an open file cannot be read with a bound, or its size: it must be a regular file on
/// a file system whose sizes are true.
pub fn regular_size(f: &File) -> io::Result<u64> {
    let st = crate::beneath::fstat(f.as_raw_fd())?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}; only regular files are read", kind(st.st_mode)),
        ));
    }
    if let Some(fs) = pseudo_fs(f)? {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "on {fs}, a pseudo file system whose sizes say nothing of its contents; not read"
            ),
        ));
    }
    Ok(st.st_size as u64)
}

/// The largest result file read (`compare`, `report`): a long run's time series and
/// histograms of many flowops take tens of megabytes; a gigabyte is a mistaken path.
pub const RESULTS_MAX: u64 = 1 << 30;

/// The largest configuration file read (PostMark's): they are a few lines.
pub const CONFIG_MAX: u64 = 1 << 20;

/// [`read_capped`] as UTF-8 text.
pub fn read_text_capped(path: &Path, max: u64, what: &str) -> io::Result<String> {
    String::from_utf8(read_capped(path, max, what)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
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

/// The whole of the regular file `path`, when it is at most `max` bytes (`what` names such
/// files in the message).
pub fn read_capped(path: &Path, max: u64, what: &str) -> io::Result<Vec<u8>> {
    let f = open(path)?;
    let size = regular_size(&f)?;
    if size > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{size} bytes: a {what} may have at most {max} ({} MiB)",
                max >> 20
            ),
        ));
    }
    let mut out = Vec::with_capacity(size as usize);
    let mut buf = vec![0u8; 64 << 10];
    read_bounded(&mut &f, size, &mut buf, &mut |b| out.extend_from_slice(b))?;
    Ok(out)
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

    #[test]
    fn regular_files_are_read_whole_and_others_refused() {
        let d = scratch("regular");
        let f = d.join("a");
        std::fs::write(&f, b"hello").unwrap();
        assert_eq!(read_capped(&f, 5, "file").unwrap(), b"hello");
        let e = read_capped(&f, 4, "file").unwrap_err();
        assert!(e.to_string().contains("5 bytes"), "{e}");
        let e = read_capped(&d, 100, "file").unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let e = read_capped(Path::new("/dev/zero"), 100, "file").unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_capped(&fifo, 100, "file").unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn pseudo_files_are_refused() {
        let p = Path::new("/proc/self/pagemap");
        if !p.exists() {
            return;
        }
        let e = read_capped(p, WORKLOAD_MAX, "file").unwrap_err();
        assert!(e.to_string().contains("on proc"), "{e}");
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
}
