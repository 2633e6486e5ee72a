//! Thin wrappers over the system calls the flowops make. They take NUL-terminated paths that
//! the caller built in a reusable buffer, so the hot path does not allocate.

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cvt_size(r: libc::ssize_t) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// How a flowop opens a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenHow {
    pub create: bool,
    pub readonly: bool,
    pub writeonly: bool,
    pub dsync: bool,
    pub directio: bool,
}

impl OpenHow {
    pub fn flags(&self) -> libc::c_int {
        let mut f = if self.readonly {
            libc::O_RDONLY
        } else if self.writeonly {
            libc::O_WRONLY
        } else {
            libc::O_RDWR
        };
        f |= libc::O_CLOEXEC;
        if self.create {
            f |= libc::O_CREAT;
        }
        if self.dsync {
            f |= libc::O_DSYNC;
        }
        if self.directio {
            f |= libc::O_DIRECT;
        }
        f
    }
}

pub fn open(path: &CStr, how: OpenHow) -> io::Result<RawFd> {
    // SAFETY: path is NUL-terminated; mode is used only with O_CREAT.
    cvt(unsafe { libc::open(path.as_ptr(), how.flags(), 0o644 as libc::c_uint) })
}

/// Open `name` in directory `dir` (never through a link: `O_NOFOLLOW`).
#[inline]
pub fn open_at(dir: RawFd, name: &CStr, how: OpenHow) -> io::Result<RawFd> {
    // SAFETY: name is NUL-terminated; mode is used only with O_CREAT.
    cvt(unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            how.flags() | libc::O_NOFOLLOW,
            0o644 as libc::c_uint,
        )
    })
}

/// `fstatat(dir, name)` without following a link.
#[inline]
pub fn stat_at(dir: RawFd, name: &CStr) -> io::Result<libc::stat> {
    crate::beneath::lstat_at(dir, name)
}

/// Remove file `name` from directory `dir` (a link itself, never its target).
#[inline]
pub fn unlink_at(dir: RawFd, name: &CStr) -> io::Result<()> {
    crate::owned::unlink(dir, name)
}

#[inline]
pub fn mkdir_at(dir: RawFd, name: &CStr) -> io::Result<()> {
    crate::owned::mkdir(dir, name, 0o755)
}

#[inline]
pub fn rmdir_at(dir: RawFd, name: &CStr) -> io::Result<()> {
    crate::owned::rmdir(dir, name)
}

/// Read the whole directory open as `dir` (through a fresh descriptor, so its offset is
/// its own); returns (entries, name bytes).
pub fn list_dir_at(dir: RawFd, buf: &mut [u8]) -> io::Result<(u64, u64)> {
    // SAFETY: "." is NUL-terminated.
    let fd = cvt(unsafe {
        libc::openat(
            dir,
            c".".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })?;
    let r = read_dir_fd(fd, buf);
    let _ = close(fd);
    r
}

pub fn close(fd: RawFd) -> io::Result<()> {
    // SAFETY: the caller owns fd and forgets it afterwards.
    cvt(unsafe { libc::close(fd) }).map(|_| ())
}

pub fn pread(fd: RawFd, buf: &mut [u8], off: u64) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes.
    cvt_size(unsafe { raw_pread(fd, buf.as_mut_ptr(), buf.len(), off) })
}

pub fn pwrite(fd: RawFd, buf: &[u8], off: u64) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes.
    cvt_size(unsafe { raw_pwrite(fd, buf.as_ptr(), buf.len(), off) })
}

/// `pread(2)` as the bare system call. The C library's wrapper is a thread cancellation
/// point: in a process with more than one thread (every run) it switches asynchronous
/// cancellation on and off around each call, about 10 ns that a single-threaded loop does
/// not pay. fsbench never cancels threads, so the measured operation is the system call
/// alone. Returns the byte count or -1 with `errno` set.
///
/// # Safety
/// `buf` must be valid for writes of `len` bytes.
#[inline(always)]
pub unsafe fn raw_pread(fd: RawFd, buf: *mut u8, len: usize, off: u64) -> libc::ssize_t {
    libc::syscall(libc::SYS_pread64, fd, buf, len, off as libc::off_t) as libc::ssize_t
}

/// `pwrite(2)` as the bare system call (see [`raw_pread`]).
///
/// # Safety
/// `buf` must be valid for reads of `len` bytes.
#[inline(always)]
pub unsafe fn raw_pwrite(fd: RawFd, buf: *const u8, len: usize, off: u64) -> libc::ssize_t {
    libc::syscall(libc::SYS_pwrite64, fd, buf, len, off as libc::off_t) as libc::ssize_t
}

pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes.
    cvt_size(unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) })
}

pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of buf.len() bytes.
    cvt_size(unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) })
}

/// `lseek(fd, off, SEEK_SET)`.
pub fn seek_to(fd: RawFd, off: u64) -> io::Result<()> {
    // SAFETY: plain lseek on an fd we own.
    if unsafe { libc::lseek(fd, off as libc::off_t, libc::SEEK_SET) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub fn seek_end(fd: RawFd) -> io::Result<u64> {
    // SAFETY: plain lseek on an fd we own.
    let r = unsafe { libc::lseek(fd, 0, libc::SEEK_END) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as u64)
    }
}

pub fn fsync(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain fsync.
    cvt(unsafe { libc::fsync(fd) }).map(|_| ())
}

/// Write back `len` bytes at `off` of `fd` and wait for it (`sync_file_range` with
/// `SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER`): the
/// dirty pages of that range go to the file system's writepages in the caller's context, so
/// a delayed allocation gets its blocks now, and the call returns once their I/O has ended
/// (and, on ext4, the unwritten extents it allocated are converted), without committing a
/// journal or flushing the device's cache as `fdatasync` would.
pub fn write_back(fd: RawFd, off: u64, len: u64) -> io::Result<()> {
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
        | libc::SYNC_FILE_RANGE_WRITE
        | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: plain sync_file_range on an fd the caller holds.
    cvt(unsafe { libc::sync_file_range(fd, off as libc::off64_t, len as libc::off64_t, flags) })
        .map(|_| ())
}

/// `syncfs` of the file system holding `fd`.
pub fn syncfs(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syncfs on an fd the caller holds.
    cvt(unsafe { libc::syncfs(fd) }).map(|_| ())
}

pub fn stat(path: &CStr) -> io::Result<libc::stat> {
    // SAFETY: path is NUL-terminated; st is written by the kernel.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        cvt(libc::stat(path.as_ptr(), &mut st))?;
        Ok(st)
    }
}

/// `unlink(path)`: for the application benchmarks that time whole-path operations inside
/// their own run directory ([`crate::owned::unlink_path`]).
#[inline]
pub fn unlink(path: &CStr) -> io::Result<()> {
    crate::owned::unlink_path(path)
}

pub fn mkdir(path: &CStr) -> io::Result<()> {
    // SAFETY: path is NUL-terminated.
    cvt(unsafe { libc::mkdir(path.as_ptr(), 0o755) }).map(|_| ())
}

/// `rmdir(path)`, as [`unlink`].
#[inline]
pub fn rmdir(path: &CStr) -> io::Result<()> {
    crate::owned::rmdir_path(path)
}

/// Advise the kernel that access will be random (no read-ahead).
pub fn fadvise_random(fd: RawFd) {
    // SAFETY: advisory only.
    unsafe {
        libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_RANDOM);
    }
}

/// Tell the kernel how the file will be read: `POSIX_FADV_RANDOM` (no readahead) or
/// `POSIX_FADV_SEQUENTIAL`.
pub fn fadvise_pattern(fd: RawFd, random: bool) {
    let advice = if random {
        libc::POSIX_FADV_RANDOM
    } else {
        libc::POSIX_FADV_SEQUENTIAL
    };
    // SAFETY: advisory only.
    unsafe {
        libc::posix_fadvise(fd, 0, 0, advice);
    }
}

/// Drop the cached pages of `len` bytes at `off` of the file (`posix_fadvise` DONTNEED;
/// dirty pages stay until written back).
pub fn fadvise_dontneed(fd: RawFd, off: u64, len: u64) {
    // SAFETY: advisory only.
    unsafe {
        libc::posix_fadvise(
            fd,
            off as libc::off_t,
            len as libc::off_t,
            libc::POSIX_FADV_DONTNEED,
        );
    }
}

/// Read a whole directory with getdents64 into `buf`; returns (entries, name bytes).
pub fn list_dir(path: &CStr, buf: &mut [u8]) -> io::Result<(u64, u64)> {
    // SAFETY: path is NUL-terminated; getdents64 writes at most buf.len() bytes.
    let fd = cvt(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })?;
    let r = read_dir_fd(fd, buf);
    let _ = close(fd);
    r
}

/// getdents64 over an open directory until its end; returns (entries, name bytes).
fn read_dir_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<(u64, u64)> {
    let mut entries = 0;
    let mut names = 0;
    let result = loop {
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            break Err(io::Error::last_os_error());
        }
        if n == 0 {
            break Ok((entries, names));
        }
        let mut off = 0usize;
        while off < n as usize {
            // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name...
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            let name = &buf[off + 19..off + reclen];
            let len = name.iter().position(|b| *b == 0).unwrap_or(name.len());
            entries += 1;
            names += len as u64;
            off += reclen;
        }
    };
    result
}

/// A heap buffer aligned for O_DIRECT, filled with non-zero pseudo-random bytes.
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is owned by one worker at a time.
unsafe impl Send for AlignedBuf {}

pub const ALIGN: usize = 4096;

impl AlignedBuf {
    pub fn new(len: usize, fill: &mut impl rand::RngCore) -> AlignedBuf {
        match AlignedBuf::try_new(len, fill) {
            Ok(b) => b,
            Err(e) => panic!("{e}"),
        }
    }

    /// A buffer of at least `len` bytes, or an error saying how much could not be had.
    pub fn try_new(len: usize, fill: &mut impl rand::RngCore) -> Result<AlignedBuf, String> {
        let too_big = || {
            format!("cannot allocate a {len}-byte I/O buffer (memsize or iosize too large for this machine)")
        };
        let len = len
            .max(ALIGN)
            .checked_next_multiple_of(ALIGN)
            .ok_or_else(too_big)?;
        let layout = std::alloc::Layout::from_size_align(len, ALIGN).map_err(|_| too_big())?;
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(too_big());
        }
        let mut b = AlignedBuf { ptr, len };
        fill.fill_bytes(b.as_mut_slice());
        for x in b.as_mut_slice().iter_mut().step_by(512) {
            *x |= 1;
        }
        Ok(b)
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes while self lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for len bytes and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len, ALIGN).expect("valid layout");
        // SAFETY: allocated with the same layout.
        unsafe { std::alloc::dealloc(self.ptr, layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::beneath::fstat;
    use std::ffi::CString;

    #[test]
    fn file_round_trip_and_listing() {
        let dir = std::env::temp_dir().join(format!("fsbench-io-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = CString::new(dir.join("f").to_str().unwrap()).unwrap();
        let fd = open(
            &p,
            OpenHow {
                create: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(pwrite(fd, b"hello world", 0).unwrap(), 11);
        assert_eq!(seek_end(fd).unwrap(), 11);
        assert_eq!(write(fd, b"!").unwrap(), 1);
        let mut b = [0u8; 32];
        assert_eq!(pread(fd, &mut b, 6).unwrap(), 6);
        assert_eq!(&b[..6], b"world!");
        assert_eq!(fstat(fd).unwrap().st_size, 12);
        fsync(fd).unwrap();
        close(fd).unwrap();
        let d = CString::new(dir.join("sub").to_str().unwrap()).unwrap();
        mkdir(&d).unwrap();
        let mut lb = vec![0u8; 4096];
        let (n, names) = list_dir(&CString::new(dir.to_str().unwrap()).unwrap(), &mut lb).unwrap();
        assert_eq!(n, 4); // . .. f sub
        assert_eq!(names, 1 + 2 + 1 + 3);
        rmdir(&d).unwrap();
        unlink(&p).unwrap();
        assert!(stat(&p).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
