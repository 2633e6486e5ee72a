//! cachestat(2) (Linux 6.5 and later): how many pages of a file range the page cache holds.

use std::os::fd::RawFd;
use std::sync::OnceLock;

/// The system call's number: new calls share one number on every architecture.
const SYS_CACHESTAT: libc::c_long = 451;

#[repr(C)]
struct Range {
    off: u64,
    len: u64,
}

/// What the kernel reports for a range, in pages.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStat {
    /// Pages of the range in the page cache.
    pub nr_cache: u64,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    /// Pages of the range evicted from the cache (and, of those, recently).
    pub nr_evicted: u64,
    pub nr_recently_evicted: u64,
}

/// The page cache's state over `[off, off + len)` of `fd` (`len` 0: to the end of the file).
pub fn cachestat(fd: RawFd, off: u64, len: u64) -> std::io::Result<CacheStat> {
    let range = Range { off, len };
    let mut cs = CacheStat::default();
    // SAFETY: `range` and `cs` are valid for the call's duration and laid out as the
    // kernel's `struct cachestat_range` and `struct cachestat`; the flags must be 0.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd,
            &range as *const Range,
            &mut cs as *mut CacheStat,
            0u32,
        )
    };
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(cs)
    }
}

/// Whether this kernel has cachestat(2) (asked once, of this program's own file).
pub fn supported() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        std::fs::File::open("/proc/self/exe").is_ok_and(|f| {
            use std::os::fd::AsRawFd;
            cachestat(f.as_raw_fd(), 0, 0).is_ok()
        })
    })
}

/// The page size the page cache counts in.
pub fn page_size() -> u64 {
    static PS: OnceLock<u64> = OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PS.get_or_init(|| (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(512) as u64)
}

/// The pages `[off, off + n)` touches (0 for `n` 0).
pub fn pages_of(off: u64, n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let ps = page_size();
    (off + n).div_ceil(ps) - off / ps
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::os::fd::AsRawFd;

    #[test]
    fn pages_touched_by_a_range() {
        let ps = page_size();
        assert_eq!(pages_of(0, 0), 0);
        assert_eq!(pages_of(0, 1), 1);
        assert_eq!(pages_of(0, ps), 1);
        assert_eq!(pages_of(ps - 1, 2), 2);
        assert_eq!(pages_of(ps, 3 * ps), 3);
    }

    #[test]
    fn a_file_just_written_is_in_the_cache() {
        if !supported() {
            eprintln!("skipped: this kernel has no cachestat(2) (Linux 6.5 and later)");
            return;
        }
        let dir = std::env::temp_dir().join(format!("fsbench-cachestat-{}", std::process::id()));
        // A directory of its own, made here (not one planted under the shared name).
        std::fs::create_dir(&dir).unwrap();
        let path = dir.join("f");
        let ps = page_size();
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&vec![7u8; 4 * ps as usize]).unwrap();
        let cs = cachestat(f.as_raw_fd(), 0, 0).unwrap();
        // Written through the page cache and not yet evicted: every page is there.
        assert_eq!(cs.nr_cache, 4, "{cs:?}");
        let two = cachestat(f.as_raw_fd(), ps, 2 * ps).unwrap();
        assert_eq!(two.nr_cache, 2, "{two:?}");
        drop(f);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
