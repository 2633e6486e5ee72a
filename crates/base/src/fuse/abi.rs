//! The structures of `linux/fuse.h` (protocol 7.31) that fsbench's servers read and write,
//! laid out as the kernel lays them out. `zerocopy`'s derives check at compile time that each
//! has no padding and that any bytes make a valid value, so a request is read with
//! [`parse`] and a reply written with `as_bytes()`, without byte offsets or unsafe casts.
//!
//! The kernel speaks the host's byte order; the fields are native integers.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// The structure `T` at the start of a request's `body`, or None when the body is shorter.
pub fn parse<T: FromBytes>(body: &[u8]) -> Option<T> {
    T::read_from_prefix(body).ok().map(|(t, _)| t)
}

/// What follows a request structure `T` in `body` (a name, written data), empty when none.
pub fn after<T>(body: &[u8]) -> &[u8] {
    body.get(std::mem::size_of::<T>()..).unwrap_or(&[])
}

/// `fuse_in_header`: every request starts with it.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct InHeader {
    pub len: u32,
    pub opcode: u32,
    pub unique: u64,
    pub nodeid: u64,
    pub uid: u32,
    pub gid: u32,
    pub pid: u32,
    pub total_extlen: u16,
    pub padding: u16,
}

/// `fuse_out_header`: every reply starts with it.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct OutHeader {
    pub len: u32,
    pub error: i32,
    pub unique: u64,
}

/// The start of `fuse_init_in` (later kernels append `flags2` and room).
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct InitIn {
    pub major: u32,
    pub minor: u32,
    pub max_readahead: u32,
    pub flags: u32,
}

/// `fuse_init_out`.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct InitOut {
    pub major: u32,
    pub minor: u32,
    pub max_readahead: u32,
    pub flags: u32,
    pub max_background: u16,
    pub congestion_threshold: u16,
    pub max_write: u32,
    pub time_gran: u32,
    pub max_pages: u16,
    pub map_alignment: u16,
    pub flags2: u32,
    pub unused: [u32; 7],
}

/// `fuse_attr`.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Attr {
    pub ino: u64,
    pub size: u64,
    pub blocks: u64,
    pub atime: u64,
    pub mtime: u64,
    pub ctime: u64,
    pub atimensec: u32,
    pub mtimensec: u32,
    pub ctimensec: u32,
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u32,
    pub blksize: u32,
    pub flags: u32,
}

/// `fuse_entry_out`: the reply to LOOKUP, CREATE, MKDIR.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct EntryOut {
    pub nodeid: u64,
    pub generation: u64,
    pub entry_valid: u64,
    pub attr_valid: u64,
    pub entry_valid_nsec: u32,
    pub attr_valid_nsec: u32,
    pub attr: Attr,
}

/// `fuse_attr_out`: the reply to GETATTR and SETATTR.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct AttrOut {
    pub attr_valid: u64,
    pub attr_valid_nsec: u32,
    pub dummy: u32,
    pub attr: Attr,
}

/// `fuse_open_out`: the reply to OPEN, OPENDIR (and CREATE, after an [`EntryOut`]).
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct OpenOut {
    pub fh: u64,
    pub open_flags: u32,
    pub padding: u32,
}

/// `fuse_write_out`.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct WriteOut {
    pub size: u32,
    pub padding: u32,
}

/// `fuse_kstatfs` (all of `fuse_statfs_out`).
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct StatfsOut {
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub bsize: u32,
    pub namelen: u32,
    pub frsize: u32,
    pub padding: u32,
    pub spare: [u32; 6],
}

/// `fuse_open_in`.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct OpenIn {
    pub flags: u32,
    pub open_flags: u32,
}

/// `fuse_read_in`: READ and READDIR.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ReadIn {
    pub fh: u64,
    pub offset: u64,
    pub size: u32,
    pub read_flags: u32,
    pub lock_owner: u64,
    pub flags: u32,
    pub padding: u32,
}

/// `fuse_write_in`; the data follows it.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct WriteIn {
    pub fh: u64,
    pub offset: u64,
    pub size: u32,
    pub write_flags: u32,
    pub lock_owner: u64,
    pub flags: u32,
    pub padding: u32,
}

/// The file handle that starts `fuse_release_in`, `fuse_flush_in` and `fuse_fsync_in`.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct FhIn {
    pub fh: u64,
}

/// `fuse_setattr_in`.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct SetattrIn {
    pub valid: u32,
    pub padding: u32,
    pub fh: u64,
    pub size: u64,
    pub lock_owner: u64,
    pub atime: u64,
    pub mtime: u64,
    pub ctime: u64,
    pub atimensec: u32,
    pub mtimensec: u32,
    pub ctimensec: u32,
    pub mode: u32,
    pub unused4: u32,
    pub uid: u32,
    pub gid: u32,
    pub unused5: u32,
}

/// `fuse_create_in`; the name follows it.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CreateIn {
    pub flags: u32,
    pub mode: u32,
    pub umask: u32,
    pub open_flags: u32,
}

/// `fuse_mkdir_in`; the name follows it.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct MkdirIn {
    pub mode: u32,
    pub umask: u32,
}

/// `fuse_rename_in`; the old and new names follow it.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct RenameIn {
    pub newdir: u64,
}

/// `fuse_rename2_in`; the old and new names follow it.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Rename2In {
    pub newdir: u64,
    pub flags: u32,
    pub padding: u32,
}

/// `fuse_fallocate_in`.
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct FallocateIn {
    pub fh: u64,
    pub offset: u64,
    pub length: u64,
    pub mode: u32,
    pub padding: u32,
}

/// `fuse_dirent` without its name (which follows, padded to 8 bytes).
#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Dirent {
    pub ino: u64,
    pub off: u64,
    pub namelen: u32,
    pub typ: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    /// The sizes `linux/fuse.h` gives (protocol 7.31).
    #[test]
    fn structures_have_the_kernels_sizes() {
        assert_eq!(size_of::<InHeader>(), 40);
        assert_eq!(size_of::<OutHeader>(), 16);
        assert_eq!(size_of::<InitIn>(), 16);
        assert_eq!(size_of::<InitOut>(), 64);
        assert_eq!(size_of::<Attr>(), 88);
        assert_eq!(size_of::<EntryOut>(), 128);
        assert_eq!(size_of::<AttrOut>(), 104);
        assert_eq!(size_of::<OpenOut>(), 16);
        assert_eq!(size_of::<WriteOut>(), 8);
        assert_eq!(size_of::<StatfsOut>(), 80);
        assert_eq!(size_of::<ReadIn>(), 40);
        assert_eq!(size_of::<WriteIn>(), 40);
        assert_eq!(size_of::<SetattrIn>(), 88);
        assert_eq!(size_of::<CreateIn>(), 16);
        assert_eq!(size_of::<Rename2In>(), 16);
        assert_eq!(size_of::<FallocateIn>(), 32);
        assert_eq!(size_of::<Dirent>(), 24);
    }

    /// Where `linux/fuse.h` puts the fields the servers use (the offsets the code read and
    /// wrote by hand before).
    #[test]
    fn fields_sit_at_the_kernels_offsets() {
        use std::mem::offset_of;
        let attr = [
            offset_of!(Attr, blocks),
            offset_of!(Attr, atime),
            offset_of!(Attr, atimensec),
            offset_of!(Attr, mode),
            offset_of!(Attr, uid),
            offset_of!(Attr, blksize),
        ];
        assert_eq!(attr, [16, 24, 48, 60, 68, 80]);
        assert_eq!(offset_of!(EntryOut, attr), 40);
        assert_eq!(offset_of!(AttrOut, attr), 16);
        assert_eq!(offset_of!(InitOut, max_write), 20);
        assert_eq!(offset_of!(InitOut, max_pages), 28);
        assert_eq!(offset_of!(OpenOut, open_flags), 8);
        assert_eq!(
            (offset_of!(ReadIn, offset), offset_of!(ReadIn, size)),
            (8, 16)
        );
        assert_eq!(
            (offset_of!(WriteIn, offset), offset_of!(WriteIn, size)),
            (8, 16)
        );
        let setattr = [
            offset_of!(SetattrIn, size),
            offset_of!(SetattrIn, atime),
            offset_of!(SetattrIn, mtime),
            offset_of!(SetattrIn, atimensec),
            offset_of!(SetattrIn, mtimensec),
            offset_of!(SetattrIn, mode),
            offset_of!(SetattrIn, uid),
            offset_of!(SetattrIn, gid),
        ];
        assert_eq!(setattr, [16, 32, 40, 56, 60, 68, 76, 80]);
        assert_eq!(offset_of!(FallocateIn, mode), 24);
        assert_eq!(offset_of!(StatfsOut, bsize), 40);
        assert_eq!(offset_of!(Rename2In, flags), 8);
    }

    #[test]
    fn requests_read_their_fields_where_the_kernel_puts_them() {
        let mut b = vec![0u8; 88];
        b[68..72].copy_from_slice(&0o644u32.to_ne_bytes());
        b[76..80].copy_from_slice(&1000u32.to_ne_bytes());
        b[16..24].copy_from_slice(&4096u64.to_ne_bytes());
        let s: SetattrIn = parse(&b).unwrap();
        assert_eq!((s.mode, s.uid, s.size), (0o644, 1000, 4096));
        assert!(parse::<SetattrIn>(&b[..87]).is_none());
        assert_eq!(after::<MkdirIn>(b"\0\0\0\0\0\0\0\0name\0"), b"name\0");
        assert_eq!(after::<Rename2In>(b"short"), b"");
    }
}
