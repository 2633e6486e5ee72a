//! fio's `ioengine=mmap` (`engines/mmap.c`) for a stream: each file's range is mapped
//! shared (readable, and writable when the job writes), advised of the pattern and
//! dropped from the cache (`POSIX_MADV_DONTNEED`) when mapped; a read is a copy out of the
//! mapping into the I/O buffer, a write a copy into it; with `direct=1` each I/O's range is
//! then `msync`ed and dropped ("not really direct", as fio says); an fsync or fdatasync
//! (every N writes, `end_fsync`, `fsync_on_close`) is `msync(MS_SYNC)` of the whole
//! mapping; closing unmaps without syncing, as fio.

use fsbench_model::model::stream::{Stream, StreamFile};
use std::os::fd::RawFd;

/// One file's mapping: the address of file offset `off`, `len` bytes.
pub(super) struct Map {
    ptr: *mut u8,
    off: u64,
    len: usize,
}

// SAFETY: the mapping belongs to the one worker thread that made it and uses it.
unsafe impl Send for Map {}

impl Map {
    /// Map `f`'s range of the open file `fd` for stream `s`. The file is first made as
    /// long as the range (fio lays out the files of engines that cannot extend them).
    pub(super) fn new(s: &Stream, f: &StreamFile, fd: RawFd) -> Result<Map, String> {
        let end = f.offset + f.len;
        // SAFETY: fstat/ftruncate on a descriptor this worker owns.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) != 0 {
                return Err(format!(
                    "fstat {}: {}",
                    f.name,
                    std::io::Error::last_os_error()
                ));
            }
            if (st.st_size as u64) < end
                && s.writes
                && fsbench_base::owned::raw::ftruncate(fd, end as i64) != 0
            {
                return Err(format!(
                    "ftruncate {}: {}",
                    f.name,
                    std::io::Error::last_os_error()
                ));
            }
        }
        // mmap needs a page-aligned file offset: map from the page the range starts in.
        let page = fsbench_base::sys::io::ALIGN as u64;
        let off = f.offset - f.offset % page;
        let len = (end - off) as usize;
        if len == 0 {
            return Ok(Map {
                ptr: std::ptr::null_mut(),
                off,
                len,
            });
        }
        let prot = libc::PROT_READ | if s.writes { libc::PROT_WRITE } else { 0 };
        // SAFETY: a fresh shared mapping of a file this worker opened; unmapped on drop.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd,
                off as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(format!(
                "mmap {}: {}",
                f.name,
                std::io::Error::last_os_error()
            ));
        }
        let map = Map {
            ptr: ptr.cast(),
            off,
            len,
        };
        // fio_madvise_file: the pattern's hint, then the range dropped from the cache.
        if s.fadvise_hint {
            let adv = if s.random {
                libc::POSIX_MADV_RANDOM
            } else {
                libc::POSIX_MADV_SEQUENTIAL
            };
            map.advise(0, len, adv)?;
        }
        map.advise(0, len, libc::POSIX_MADV_DONTNEED)?;
        Ok(map)
    }

    fn advise(&self, at: usize, len: usize, adv: libc::c_int) -> Result<(), String> {
        // SAFETY: a range inside this mapping.
        let rc = unsafe { libc::posix_madvise(self.ptr.add(at).cast(), len, adv) };
        if rc != 0 {
            return Err(format!(
                "madvise: {}",
                std::io::Error::from_raw_os_error(rc)
            ));
        }
        Ok(())
    }

    /// Copy between the mapping at file offset `off` and `buf` (`write`: into the
    /// mapping); with `direct`, then `msync` and drop that range. The bytes copied.
    pub(super) fn copy(
        &self,
        off: u64,
        buf: &mut [u8],
        write: bool,
        direct: bool,
    ) -> Result<usize, String> {
        let at = off
            .checked_sub(self.off)
            .filter(|a| *a as usize + buf.len() <= self.len)
            .ok_or_else(|| format!("offset {off} outside the mapping"))? as usize;
        // SAFETY: `at..at + buf.len()` lies inside the mapping (checked above), which stays
        // mapped while `self` lives; `buf` is the worker's own buffer.
        unsafe {
            let p = self.ptr.add(at);
            if write {
                std::ptr::copy_nonoverlapping(buf.as_ptr(), p, buf.len());
            } else {
                std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), buf.len());
            }
        }
        if direct {
            // msync needs a page-aligned start: the page the range starts in.
            let page = fsbench_base::sys::io::ALIGN;
            let start = at - at % page;
            self.sync_range(start, at + buf.len() - start)?;
            self.advise(start, at + buf.len() - start, libc::POSIX_MADV_DONTNEED)?;
        }
        Ok(buf.len())
    }

    fn sync_range(&self, at: usize, len: usize) -> Result<(), String> {
        if len == 0 {
            return Ok(());
        }
        // SAFETY: a page-aligned range inside this mapping.
        let rc = unsafe { libc::msync(self.ptr.add(at).cast(), len, libc::MS_SYNC) };
        if rc != 0 {
            return Err(format!("msync: {}", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// fio's sync of an mmap file: `msync(MS_SYNC)` of the whole mapping.
    pub(super) fn sync(&self) -> Result<(), String> {
        self.sync_range(0, self.len)
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: the mapping made in `new`, not used after this.
            unsafe {
                libc::munmap(self.ptr.cast(), self.len);
            }
        }
    }
}
