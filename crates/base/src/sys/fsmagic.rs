//! File-system types by their `statfs.f_type` magic number (linux/magic.h): one table for
//! every report and message that names a file system.

/// The file systems fsbench names: magic number and name.
const TABLE: &[(u32, &str)] = &[
    (0xEF53, "ext2/ext3/ext4"),
    (0x5846_5342, "xfs"),
    (0x9123_683E, "btrfs"),
    (0x0102_1994, "tmpfs"),
    (0x8584_58F6, "ramfs"),
    (0x794C_7630, "overlayfs"),
    (0x6969, "nfs"),
    (0xFF53_4D42, "cifs/smb"),
    (0xFE53_4D42, "cifs/smb"),
    (0x2FC1_2FC1, "zfs"),
    (0xF2F5_2010, "f2fs"),
    (0x4D44, "vfat"),
    (0x2011_BAB0, "exfat"),
    (0x5346_544E, "ntfs"),
    (0x7371_7368, "squashfs"),
    (0x6573_5546, "fuse"),
    (0x9FA0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x1373, "devfs"),
    (0x0027_E0EB, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0xCA45_1A4E, "bcachefs"),
    (0x2478_0A50, "9p"),
];

/// The magic number of the file system holding `path` (`statfs`, which opens nothing).
pub fn of_path(path: &std::path::Path) -> std::io::Result<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "a path holding a NUL")
    })?;
    // SAFETY: a zeroed statfs is a valid value; statfs fills it from a NUL-terminated path.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(s.f_type as i64)
}

/// The name of a file system type, if fsbench knows it.
pub fn known(magic: i64) -> Option<&'static str> {
    TABLE
        .iter()
        .find(|(m, _)| *m == magic as u32)
        .map(|(_, n)| *n)
}

/// The name of a file system type, or its number in hex.
pub fn name(magic: i64) -> String {
    known(magic).map_or_else(
        || format!("file system type 0x{:x}", magic as u32),
        str::to_string,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn names() {
        assert_eq!(super::name(0xEF53), "ext2/ext3/ext4");
        assert_eq!(super::known(0x6573_5546), Some("fuse"));
        assert_eq!(super::name(0x1234), "file system type 0x1234");
    }
}
