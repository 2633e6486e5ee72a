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

/// Bytes read so far by the block device that holds `path`'s file system; `None` when it
/// is on none (tmpfs, an overlay, FUSE, NFS).
pub fn device_read_bytes(path: &Path) -> Option<u64> {
    let dev = std::fs::metadata(path).ok()?.dev();
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    read_bytes_of(Path::new(&format!("/sys/dev/block/{maj}:{min}")))
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
