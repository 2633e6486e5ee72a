//! The FUSE kernel protocol, spoken on `/dev/fuse` directly (the structures of
//! `linux/fuse.h`, protocol 7.31; root mounts with mount(2), no libfuse): opcodes,
//! request parsing helpers, replies, the INIT handshake, mounting and unmounting,
//! the daemons' signal handling and real-time scheduling, and the sleeper that
//! sends replies at modelled times. Shared by the simulated disk (`crate::disk`)
//! and the simulated remote file system (`crate::remote`).

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use hdrhistogram::Histogram;
use zerocopy::IntoBytes;

pub mod abi;

// Opcodes (linux/fuse.h).
pub const FUSE_LOOKUP: u32 = 1;
pub const FUSE_FORGET: u32 = 2;
pub const FUSE_GETATTR: u32 = 3;
pub const FUSE_SETATTR: u32 = 4;
pub const FUSE_OPEN: u32 = 14;
pub const FUSE_READ: u32 = 15;
pub const FUSE_WRITE: u32 = 16;
pub const FUSE_STATFS: u32 = 17;
pub const FUSE_RELEASE: u32 = 18;
pub const FUSE_FSYNC: u32 = 20;
pub const FUSE_FLUSH: u32 = 25;
pub const FUSE_INIT: u32 = 26;
pub const FUSE_OPENDIR: u32 = 27;
pub const FUSE_READDIR: u32 = 28;
pub const FUSE_RELEASEDIR: u32 = 29;
pub const FUSE_FSYNCDIR: u32 = 30;
pub const FUSE_ACCESS: u32 = 34;
pub const FUSE_INTERRUPT: u32 = 36;
pub const FUSE_DESTROY: u32 = 38;
pub const FUSE_BATCH_FORGET: u32 = 42;
pub const FUSE_FALLOCATE: u32 = 43;

// INIT flags.
pub const FUSE_ASYNC_READ: u32 = 1 << 0;
pub const FUSE_BIG_WRITES: u32 = 1 << 5;
pub const FUSE_ASYNC_DIO: u32 = 1 << 15;
pub const FUSE_MAX_PAGES: u32 = 1 << 22;

pub const FOPEN_DIRECT_IO: u32 = 1 << 0;
pub const FATTR_SIZE: u32 = 1 << 3;

pub const PROTO_MINOR: u32 = 31;
pub const IN_HEADER: usize = 40;
pub const MAX_WRITE: u32 = 1 << 20;
pub const MAX_PAGES: u16 = 256;

// Opcodes the passthrough file systems need beyond the disk's.
pub const FUSE_READLINK: u32 = 5;
pub const FUSE_SYMLINK: u32 = 6;
pub const FUSE_MKNOD: u32 = 8;
pub const FUSE_MKDIR: u32 = 9;
pub const FUSE_UNLINK: u32 = 10;
pub const FUSE_RMDIR: u32 = 11;
pub const FUSE_RENAME: u32 = 12;
pub const FUSE_LINK: u32 = 13;
pub const FUSE_SETXATTR: u32 = 21;
pub const FUSE_GETXATTR: u32 = 22;
pub const FUSE_LISTXATTR: u32 = 23;
pub const FUSE_REMOVEXATTR: u32 = 24;
pub const FUSE_CREATE: u32 = 35;
pub const FUSE_RENAME2: u32 = 45;

// SETATTR valid bits (linux/fuse.h).
pub const FATTR_MODE: u32 = 1 << 0;
pub const FATTR_UID: u32 = 1 << 1;
pub const FATTR_GID: u32 = 1 << 2;
pub const FATTR_ATIME: u32 = 1 << 4;
pub const FATTR_MTIME: u32 = 1 << 5;
pub const FATTR_FH: u32 = 1 << 6;
pub const FATTR_ATIME_NOW: u32 = 1 << 7;
pub const FATTR_MTIME_NOW: u32 = 1 << 8;

/// Answer FUSE_INIT (`body` is the request after the header). False when the
/// kernel offered a major version above 7: then the reply said 7 and the kernel
/// asks again.
pub fn reply_init(dev: &File, unique: u64, body: &[u8], want_flags: u32) -> bool {
    let Some(init) = abi::parse::<abi::InitIn>(body) else {
        reply_err(dev, unique, libc::EINVAL);
        return true;
    };
    if init.major > 7 {
        // The kernel will ask again with 7: the reply is the major and minor only.
        let out = abi::InitOut {
            major: 7,
            ..Default::default()
        };
        reply(dev, unique, 0, &[&out.as_bytes()[..8]]);
        return false;
    }
    let out = abi::InitOut {
        major: 7,
        minor: PROTO_MINOR,
        max_readahead: init.max_readahead,
        flags: init.flags & want_flags,
        max_background: 64,
        congestion_threshold: 48,
        max_write: MAX_WRITE,
        time_gran: 1,
        max_pages: MAX_PAGES,
        ..Default::default()
    };
    reply(dev, unique, 0, &[out.as_bytes()]);
    true
}

/// Monotonic seconds since the server started: the model's clock.
#[derive(Clone, Copy)]
pub struct Clock(pub Instant);

impl Clock {
    pub fn now(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

/// Sleeps until a modelled completion time. nanosleep overshoots by tens of
/// microseconds even with a 1 ns timer slack (more in a VM), so the sleeper
/// learns its typical overshoot, sleeps that much less, and spins the rest:
/// replies then leave within a few microseconds of the modelled time at the
/// cost of about that overshoot in CPU per request.
pub struct Sleeper {
    clock: Clock,
    /// Running estimate of nanosleep's overshoot, s.
    overshoot: f64,
}

impl Sleeper {
    pub fn new(clock: Clock) -> Sleeper {
        Sleeper {
            clock,
            overshoot: 50e-6,
        }
    }

    pub fn sleep_until(&mut self, t: f64) {
        let target = t - self.overshoot;
        let rem = target - self.clock.now();
        if rem > 0.0 {
            thread::sleep(Duration::from_secs_f64(rem));
            let over = (self.clock.now() - target).clamp(0.0, 500e-6);
            self.overshoot = 0.9 * self.overshoot + 0.1 * over;
        }
        let spin_start = self.clock.now();
        while self.clock.now() < t {
            if self.clock.now() - spin_start > 300e-6 {
                thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// Write one reply (header + payload parts) to /dev/fuse.
pub fn reply(dev: &File, unique: u64, error: i32, parts: &[&[u8]]) {
    let len = std::mem::size_of::<abi::OutHeader>() + parts.iter().map(|p| p.len()).sum::<usize>();
    let hdr = abi::OutHeader {
        len: len as u32,
        error: -error,
        unique,
    };
    let mut iov = Vec::with_capacity(parts.len() + 1);
    iov.push(IoSlice::new(hdr.as_bytes()));
    for p in parts {
        iov.push(IoSlice::new(p));
    }
    // One writev: the kernel takes a reply whole. ENOENT means the request
    // was interrupted meanwhile; nothing to do.
    let mut w = dev;
    if let Err(e) = w.write_vectored(&iov) {
        if e.raw_os_error() != Some(libc::ENOENT) {
            crate::errln!("fsbench: FUSE reply failed: {e}");
        }
    }
}

pub fn reply_err(dev: &File, unique: u64, errno: i32) {
    reply(dev, unique, errno, &[]);
}

/// A READDIR reply: `fuse_dirent` records (ino, next offset, name length, type, name,
/// padded to 8 bytes) of `entries` from index `offset`, as many as fit in `size` bytes.
pub fn dirents<'a>(
    entries: impl IntoIterator<Item = (u64, &'a [u8], u32)>,
    offset: u64,
    size: usize,
) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (ino, name, typ)) in entries.into_iter().enumerate().skip(offset as usize) {
        let head = std::mem::size_of::<abi::Dirent>();
        let rec = (head + name.len()).div_ceil(8) * 8;
        if out.len() + rec > size {
            break;
        }
        let d = abi::Dirent {
            ino,
            off: i as u64 + 1,
            namelen: name.len() as u32,
            typ,
        };
        out.extend_from_slice(d.as_bytes());
        out.extend_from_slice(name);
        out.resize(out.len() + rec - head - name.len(), 0);
    }
    out
}

pub fn read_full_at(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Ask for precise sleeps on the calling thread (a replying thread): the default 50 us
/// timer slack would show in every reply.
pub fn precise_timer_slack() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// The longest time a server's histograms hold, us (an hour).
const HIST_MAX_US: u64 = 3_600_000_000;

/// A histogram of a server's times in microseconds (1 us to an hour, 3 significant digits).
pub fn us_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_US, 3).expect("valid histogram bounds")
}

/// Seconds as the microseconds a [`us_histogram`] records (at least 1, at most an hour).
pub fn to_us(seconds: f64) -> u64 {
    ((seconds * 1e6).round().max(0.0) as u64).clamp(1, HIST_MAX_US)
}

/// A histogram's non-empty buckets as (value, count) pairs: what the statistics files keep,
/// so that the percentiles of a stretch of time come from two snapshots.
pub fn histogram_pairs(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

/// Real-time priority of the request path (reader and disk thread): above every normal task
/// and the kernel's default threaded interrupt handlers (50), so CPU-bound work on the machine
/// does not delay replies; one below the maximum leaves room for watchdogs.
pub const RT_PRIORITY: i32 = 60;

/// `FSBENCH_DISK_REALTIME=0` in the environment of `disk create` or `disk serve` turns off
/// real-time scheduling and memory locking (to compare, or where they are unwelcome).
pub fn realtime_disabled() -> bool {
    std::env::var_os("FSBENCH_DISK_REALTIME").is_some_and(|v| v == "0")
}

/// Put the calling thread under SCHED_FIFO at `prio`; says what it got, or why not.
pub fn realtime(prio: i32) -> String {
    if realtime_disabled() {
        return "normal (FSBENCH_DISK_REALTIME=0)".into();
    }
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: sched_setscheduler(0, ...) changes only the calling thread's policy.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
    if r == 0 {
        format!("SCHED_FIFO priority {prio}")
    } else {
        let e = io::Error::last_os_error();
        let why = if unsafe { libc::geteuid() } != 0 {
            "not root".to_string()
        } else {
            e.to_string()
        };
        format!("normal (SCHED_FIFO refused: {why}); replies may be late under CPU load")
    }
}

/// Lock the server's memory (now and future) so no reply waits for a page-in.
pub fn lock_memory() -> String {
    if realtime_disabled() {
        return "not locked (FSBENCH_DISK_REALTIME=0)".into();
    }
    // SAFETY: mlockall has no memory-safety preconditions.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } == 0 {
        "locked".into()
    } else {
        format!("not locked ({})", io::Error::last_os_error())
    }
}

/// `read(2)` on /dev/fuse: one call returns one whole request.
pub trait FuseRead {
    fn read_at_fuse(&self, buf: &mut [u8]) -> io::Result<usize>;
}

impl FuseRead for &File {
    fn read_at_fuse(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::read(self.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

/// A request as [`next_request`] read it: its header, and the body after it.
pub fn split_request(msg: &[u8]) -> Option<(abi::InHeader, &[u8])> {
    abi::parse::<abi::InHeader>(msg).map(|h| (h, abi::after::<abi::InHeader>(msg)))
}

/// The next whole request from /dev/fuse into `buf`: interrupted reads are retried and
/// anything shorter than a header skipped. `None` once the connection is gone (unmounted)
/// or broken (said on standard error, naming `who`).
pub fn next_request(dev: &File, buf: &mut [u8], who: &str) -> Option<usize> {
    loop {
        match dev.read_at_fuse(buf) {
            Ok(n) if n < IN_HEADER => continue,
            Ok(n) => return Some(n),
            Err(e) => match e.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::EINTR) | Some(libc::EAGAIN) => continue,
                Some(libc::ENODEV) => return None,
                _ => {
                    crate::errln!("fsbench {who}: reading /dev/fuse: {e}");
                    return None;
                }
            },
        }
    }
}

pub fn cstr(p: &Path) -> anyhow::Result<CString> {
    Ok(CString::new(p.as_os_str().as_encoded_bytes())?)
}

/// mount(2) a FUSE file system on `mountpoint` served through a new
/// /dev/fuse descriptor.
pub fn mount_fuse(mountpoint: &Path, source: &str) -> anyhow::Result<File> {
    let dev = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .context("opening /dev/fuse (is the fuse module loaded?)")?;
    let opts = format!(
        "fd={},rootmode=40000,user_id=0,group_id=0,allow_other",
        dev.as_raw_fd()
    );
    let src = CString::new(source)?;
    let fstype = CString::new("fuse.fsbench")?;
    let target = cstr(mountpoint)?;
    let data = CString::new(opts)?;
    // SAFETY: all pointers are valid NUL-terminated strings for the call.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            data.as_ptr().cast(),
        )
    };
    if r != 0 {
        let e = io::Error::last_os_error();
        bail!(
            "mounting FUSE on {}: {e} (needs root)",
            mountpoint.display()
        );
    }
    Ok(dev)
}

/// Decode the octal escapes of /proc/self/mounts and mountinfo (`\040` for a space).
pub fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// umount2 with MNT_DETACH (lazy), ignoring "not mounted".
pub fn lazy_unmount(path: &Path) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: valid C string.
    let r = unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINVAL) || e.raw_os_error() == Some(libc::ENOENT) {
        return Ok(());
    }
    Err(e)
}

/// Plain unmount; falls back to lazy if busy.
pub fn unmount(path: &Path) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: valid C string.
    let r = unsafe { libc::umount2(c.as_ptr(), 0) };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOENT) => Ok(()),
        Some(libc::EBUSY) => lazy_unmount(path),
        _ => Err(e),
    }
}

pub fn block_signals() -> libc::sigset_t {
    block_signals_with(&[])
}

/// [`block_signals`] plus `extra` signals the caller waits for too.
pub fn block_signals_with(extra: &[i32]) -> libc::sigset_t {
    // SAFETY: sigset manipulation on a local set; pthread_sigmask on this
    // thread before any other thread exists, so all threads inherit it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP]
            .iter()
            .chain(extra)
        {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Why a server stops, as its log says: the signal it got, or the kernel closing the
/// connection (`sig` None).
pub fn stop_reason(sig: Option<i32>) -> String {
    match sig {
        Some(s) => format!("signal {s}"),
        None => "FUSE connection closed".into(),
    }
}

/// After the unmount: wait up to `timeout` for the reader to see the connection close
/// (`reader_done`); whether it did.
pub fn connection_closed(reader_done: &std::sync::atomic::AtomicBool, timeout: Duration) -> bool {
    use std::sync::atomic::Ordering;
    let deadline = Instant::now() + timeout;
    while !reader_done.load(Ordering::SeqCst) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    reader_done.load(Ordering::SeqCst)
}

/// Wait up to `timeout` for one of the blocked signals; returns it.
pub fn wait_signal(set: &libc::sigset_t, timeout: Duration) -> Option<i32> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: set and ts are valid for the call.
    let r = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
    (r > 0).then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_escapes_are_decoded() {
        assert_eq!(unescape_mount("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape_mount("/plain"), "/plain");
    }
}
