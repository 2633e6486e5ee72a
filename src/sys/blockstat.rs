//! A block device's own count of what it read (`/sys/block/DEV/stat`, sectors of 512 bytes),
//! so that a measurement can tell the reads its device served from those the page cache did.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Bytes read so far by the block device at `/sys/dev/block/MAJ:MIN` (a disk or partition,
/// a loop device), from its `stat` file's third field (sectors read, in 512-byte units).
fn read_bytes_of(sysfs: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(sysfs.join("stat")).ok()?;
    let sectors: u64 = text.split_whitespace().nth(2)?.parse().ok()?;
    Some(sectors * 512)
}

/// The device number (major, minor) of the file system holding `path`.
pub fn device_of(path: &Path) -> Option<(u32, u32)> {
    let dev = std::fs::metadata(path).ok()?.dev();
    Some((libc::major(dev), libc::minor(dev)))
}

/// Bytes read so far by the block device numbered `dev`; `None` when it is no block device
/// (tmpfs, an overlay, FUSE and NFS have anonymous device numbers).
pub fn read_bytes(dev: (u32, u32)) -> Option<u64> {
    read_bytes_of(Path::new(&format!("/sys/dev/block/{}:{}", dev.0, dev.1)))
}

/// Bytes read so far by the block device that holds `path`'s file system.
pub fn device_read_bytes(path: &Path) -> Option<u64> {
    read_bytes(device_of(path)?)
}

/// Bytes read so far by the block device `dev` (`/dev/loop3`, `sdb`).
pub fn named_device_read_bytes(dev: &str) -> Option<u64> {
    let name = dev.trim_start_matches("/dev/");
    read_bytes_of(&Path::new("/sys/class/block").join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sectors_are_512_bytes() {
        let d = std::env::temp_dir().join(format!("fsbench-blockstat-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("stat"), "  10 0 24 5 0 0 0 0 0 0 0\n").unwrap();
        assert_eq!(read_bytes_of(&d), Some(24 * 512));
        std::fs::write(d.join("stat"), "garbage").unwrap();
        assert_eq!(read_bytes_of(&d), None);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
