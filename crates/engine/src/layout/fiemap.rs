//! `FS_IOC_FIEMAP`: the extent map of a file (linux/fiemap.h,
//! Documentation/filesystems/fiemap.rst).
//!
//! The libc crate does not carry the structures, so they are declared here
//! with the kernel's layout.

use std::io;
use std::os::fd::RawFd;

/// `_IOWR('f', 11, struct fiemap)`.
pub const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;

pub const FIEMAP_FLAG_SYNC: u32 = 0x1;
pub const FIEMAP_MAX_OFFSET: u64 = u64::MAX;

pub const FIEMAP_EXTENT_LAST: u32 = 0x1;
pub const FIEMAP_EXTENT_UNKNOWN: u32 = 0x2;
pub const FIEMAP_EXTENT_DELALLOC: u32 = 0x4;
pub const FIEMAP_EXTENT_ENCODED: u32 = 0x8;
pub const FIEMAP_EXTENT_DATA_ENCRYPTED: u32 = 0x80;
pub const FIEMAP_EXTENT_NOT_ALIGNED: u32 = 0x100;
pub const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x200;
pub const FIEMAP_EXTENT_DATA_TAIL: u32 = 0x400;
pub const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x800;
pub const FIEMAP_EXTENT_MERGED: u32 = 0x1000;
pub const FIEMAP_EXTENT_SHARED: u32 = 0x2000;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct RawFiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct RawExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

/// One extent, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    pub flags: u32,
}

/// Extents fetched per ioctl; a file with more is read in several calls.
pub const EXTENTS_PER_CALL: usize = 256;

#[repr(C)]
struct Request {
    head: RawFiemap,
    extents: [RawExtent; EXTENTS_PER_CALL],
}

/// Reusable buffer for FIEMAP calls (one per worker: 14 KiB).
pub struct Mapper {
    req: Box<Request>,
    /// Number of ioctl calls made (for tests of the continuation loop).
    pub calls: u64,
    per_call: u32,
}

impl Default for Mapper {
    fn default() -> Self {
        Self::with_extents_per_call(EXTENTS_PER_CALL)
    }
}

impl Mapper {
    /// A mapper asking for at most `n` extents per ioctl (1..=256); small
    /// values exercise the continuation loop.
    pub fn with_extents_per_call(n: usize) -> Mapper {
        Mapper {
            req: Box::new(Request {
                head: RawFiemap::default(),
                extents: [RawExtent::default(); EXTENTS_PER_CALL],
            }),
            calls: 0,
            per_call: n.clamp(1, EXTENTS_PER_CALL) as u32,
        }
    }

    /// All extents of the open file `fd`, appended to `out` in logical order.
    ///
    /// With `sync`, the first call passes `FIEMAP_FLAG_SYNC` so that delayed
    /// allocations get real blocks before they are mapped. When the array
    /// fills up without an extent flagged LAST, the next call starts at the
    /// end of the last extent returned.
    pub fn map(&mut self, fd: RawFd, sync: bool, out: &mut Vec<Extent>) -> io::Result<()> {
        let mut start = 0u64;
        let mut first = true;
        loop {
            self.req.head = RawFiemap {
                fm_start: start,
                fm_length: FIEMAP_MAX_OFFSET - start,
                fm_flags: if sync && first { FIEMAP_FLAG_SYNC } else { 0 },
                fm_mapped_extents: 0,
                fm_extent_count: self.per_call,
                fm_reserved: 0,
            };
            first = false;
            self.calls += 1;
            let r = unsafe { libc::ioctl(fd, FS_IOC_FIEMAP as _, &mut *self.req as *mut Request) };
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = self.req.head.fm_mapped_extents as usize;
            if n == 0 {
                return Ok(());
            }
            let mut last = None;
            for e in &self.req.extents[..n.min(EXTENTS_PER_CALL)] {
                let x = Extent {
                    logical: e.fe_logical,
                    physical: e.fe_physical,
                    length: e.fe_length,
                    flags: e.fe_flags,
                };
                out.push(x);
                last = Some(x);
            }
            let last = last.expect("n > 0");
            if last.flags & FIEMAP_EXTENT_LAST != 0 || (n as u32) < self.per_call {
                return Ok(());
            }
            let next = last.logical.saturating_add(last.length);
            if next <= start || next == FIEMAP_MAX_OFFSET {
                return Ok(());
            }
            start = next;
        }
    }
}

/// Name of a file system type from `statfs.f_type` (linux/magic.h).
pub fn fs_type_name(magic: i64) -> String {
    fsbench_base::sys::fsmagic::name(magic)
}

/// `fstatfs` of an fd: (file system type name, block size).
pub fn fs_info(fd: RawFd) -> io::Result<(String, u64)> {
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(fd, &mut s) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((fs_type_name(s.f_type as i64), s.f_bsize as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_layout_sizes() {
        assert_eq!(std::mem::size_of::<RawFiemap>(), 32);
        assert_eq!(std::mem::size_of::<RawExtent>(), 56);
        // _IOWR('f', 11, 32 bytes)
        let ioc = (3u64 << 30) | (32 << 16) | ((b'f' as u64) << 8) | 11;
        assert_eq!(ioc as libc::c_ulong, FS_IOC_FIEMAP);
    }

    #[test]
    fn names() {
        assert_eq!(fs_type_name(0x01021994), "tmpfs");
        assert_eq!(fs_type_name(0xEF53), "ext2/ext3/ext4");
        assert_eq!(fs_type_name(0x1234), "file system type 0x1234");
    }
}
