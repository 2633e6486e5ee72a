//! The one guard in front of a block device a fio job names (`filename=/dev/X`). Everything
//! fsbench writes inside a tree goes through `crate::owned`; a device is not a tree, and
//! this module is where fsbench decides whether it may touch one. [`guard`] is called by
//! the engine before anything is laid out or opened, for every device of the run, and
//! refuses with the reason:
//!
//! - the device was not named on the command line (`--allow-device /dev/X`, or
//!   `--allow-device-with-data /dev/X`), compared by device number;
//! - the device, one of its partitions or anything holding it (device-mapper, RAID, a loop
//!   or LVM stack, followed through `holders/` in sysfs) is mounted or used as swap;
//! - it cannot be opened exclusively (`O_EXCL`: the kernel refuses while a file system,
//!   a device-mapper target, RAID or another exclusive user holds it);
//! - for a job that writes: it carries a file-system, RAID, LVM or partition-table
//!   signature (blkid's low-level probe, else fsbench's own look at the known superblock
//!   magics), unless `--allow-device-with-data /dev/X` says its data may go.
//!
//! Reads of an allowed device need only the first checks (not mounted, not in use). The
//! exclusive descriptor is kept for the run ([`Guarded`]): while fsbench holds it, nothing
//! can mount the device or claim it.

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A device that passed the guard, held exclusively until dropped.
#[derive(Debug)]
pub struct Guarded {
    pub path: PathBuf,
    pub rdev: u64,
    _claim: OwnedFd,
}

/// The device number of `path` when it is a block device.
pub fn block_rdev(path: &Path) -> Option<u64> {
    let m = std::fs::metadata(path).ok()?;
    m.file_type().is_block_device().then(|| m.rdev())
}

/// The size in bytes of block device `rdev` (sysfs `size`, in 512-byte sectors).
pub fn size_of(rdev: u64) -> Option<u64> {
    let sys = sysfs(rdev);
    let s = std::fs::read_to_string(sys.join("size")).ok()?;
    Some(s.trim().parse::<u64>().ok()? * 512)
}

fn sysfs(rdev: u64) -> PathBuf {
    PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        libc::major(rdev),
        libc::minor(rdev)
    ))
}

/// `major:minor` of a sysfs block entry (its `dev` file).
fn dev_of(entry: &Path) -> Option<String> {
    Some(
        std::fs::read_to_string(entry.join("dev"))
            .ok()?
            .trim()
            .to_string(),
    )
}

/// The device, its partitions and everything holding any of them, as `major:minor`.
fn family(rdev: u64) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![std::fs::canonicalize(sysfs(rdev)).unwrap_or_else(|_| sysfs(rdev))];
    while let Some(e) = stack.pop() {
        let Some(dev) = dev_of(&e) else { continue };
        let name = e
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned());
        if out.iter().any(|(d, _)| *d == dev) || out.len() > 4096 {
            continue;
        }
        out.push((dev, name.clone()));
        // Partitions are subdirectories with a `partition` file.
        if let Ok(rd) = std::fs::read_dir(&e) {
            for p in rd.flatten() {
                if p.path().join("partition").is_file() {
                    stack.push(p.path());
                }
            }
        }
        if let Ok(rd) = std::fs::read_dir(e.join("holders")) {
            for h in rd.flatten() {
                stack.push(std::fs::canonicalize(h.path()).unwrap_or(h.path()));
            }
        }
    }
    out
}

/// Why the device is in use: a mount or swap of it, a partition or a holder; `None` when
/// nothing uses it.
pub fn in_use(rdev: u64) -> Option<String> {
    let fam = family(rdev);
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(dev), Some(point)) = (f.get(2), f.get(4)) else {
            continue;
        };
        if let Some((_, name)) = fam.iter().find(|(d, _)| d == dev) {
            return Some(format!("{name} is mounted on {point}"));
        }
    }
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    for line in swaps.lines().skip(1) {
        let Some(p) = line.split_whitespace().next() else {
            continue;
        };
        if let Some(r) = block_rdev(Path::new(p)) {
            let dev = format!("{}:{}", libc::major(r), libc::minor(r));
            if let Some((_, name)) = fam.iter().find(|(d, _)| *d == dev) {
                return Some(format!("{name} is in use as swap"));
            }
        }
    }
    // Holders beyond the device and its partitions (dm, md, bcache ...) use it even when
    // nothing on them is mounted.
    let own = format!("{}:{}", libc::major(rdev), libc::minor(rdev));
    let base = std::fs::canonicalize(sysfs(rdev)).unwrap_or_else(|_| sysfs(rdev));
    let holders = |e: &Path| -> Vec<String> {
        std::fs::read_dir(e.join("holders"))
            .map(|rd| {
                rd.flatten()
                    .map(|h| h.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut held = holders(&base);
    if let Ok(rd) = std::fs::read_dir(&base) {
        for p in rd
            .flatten()
            .filter(|p| p.path().join("partition").is_file())
        {
            held.extend(holders(&p.path()));
        }
    }
    if let Some(h) = held.first() {
        return Some(format!(
            "{own} is held by {h} (device-mapper, RAID or another stack)"
        ));
    }
    None
}

/// Magic numbers at fixed offsets: (offset, bytes, what).
const MAGICS: &[(u64, &[u8], &str)] = &[
    (0x438, &[0x53, 0xEF], "an ext2/3/4 file system"),
    (0, b"XFSB", "an XFS file system"),
    (0x10040, b"_BHRfS_M", "a Btrfs file system"),
    (3, b"NTFS    ", "an NTFS file system"),
    (0x52, b"FAT32   ", "a FAT file system"),
    (0x36, b"FAT1", "a FAT file system"),
    (4086, b"SWAPSPACE2", "a swap area"),
    (512, b"EFI PART", "a GPT partition table"),
    (512, b"LABELONE", "an LVM physical volume"),
    (4096, &[0xfc, 0x4e, 0x2b, 0xa9], "a Linux RAID (md) member"),
    (0x8001, b"CD001", "an ISO 9660 file system"),
];

/// fsbench's own look at the known signatures, in the first 128 KiB.
fn magic_signature(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let mut head = vec![0u8; 128 << 10];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    head.truncate(n);
    for (off, magic, what) in MAGICS {
        let at = *off as usize;
        if head.get(at..at + magic.len()) == Some(*magic) {
            return Some(what.to_string());
        }
    }
    // An MBR: the boot signature and at least one partition entry.
    if head.get(510..512) == Some(&[0x55, 0xAA]) && head[446..510].iter().any(|b| *b != 0) {
        return Some("an MBR partition table".into());
    }
    None
}

/// What the device carries, by blkid's low-level probe when it is installed (it knows
/// every signature), else by the known magics; `None` when it looks empty.
pub fn signature(path: &Path) -> Option<String> {
    let probe = std::process::Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(path)
        .output();
    if let Ok(o) = probe {
        // 0: something found; 2: nothing found; other: blkid could not tell.
        if o.status.code() == Some(0) {
            let text = String::from_utf8_lossy(&o.stdout);
            let kv: Vec<&str> = text
                .lines()
                .filter(|l| {
                    l.starts_with("TYPE=") || l.starts_with("PTTYPE=") || l.starts_with("USAGE=")
                })
                .collect();
            return Some(format!("a signature blkid reads as {}", kv.join(", ")));
        }
        if o.status.code() == Some(2) {
            return magic_signature(path);
        }
    }
    magic_signature(path)
}

fn named(list: &[PathBuf], rdev: u64) -> bool {
    list.iter().any(|p| block_rdev(p) == Some(rdev))
}

/// The guard (see the module's comment): `Ok` with the exclusive claim held, or why not.
pub fn guard(
    path: &Path,
    allowed: &[PathBuf],
    with_data: &[PathBuf],
    writes: bool,
) -> Result<Guarded, String> {
    let shown = path.display();
    let rdev = block_rdev(path).ok_or_else(|| format!("{shown} is not a block device"))?;
    if !named(allowed, rdev) && !named(with_data, rdev) {
        return Err(format!(
            "{shown} is a block device the command line does not name: fsbench touches a device only with --allow-device {shown}"
        ));
    }
    if let Some(why) = in_use(rdev) {
        return Err(format!(
            "{shown} is in use: {why}; fsbench refuses a device that is mounted or held"
        ));
    }
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{shown}: the path holds a NUL"))?;
    // SAFETY: a NUL-terminated path; O_EXCL on a block device claims it (no O_CREAT).
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_EXCL | libc::O_CLOEXEC) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(if e.raw_os_error() == Some(libc::EBUSY) {
            format!("{shown} is in use (the kernel refuses an exclusive open: a file system, device-mapper, RAID or another program holds it)")
        } else {
            format!("{shown}: {e}")
        });
    }
    // SAFETY: a descriptor just opened and owned by nothing else.
    let claim = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat into a zeroed struct on our descriptor.
    if unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_rdev != rdev {
        return Err(format!("{shown} changed while it was checked"));
    }
    if writes && !named(with_data, rdev) {
        if let Some(what) = signature(path) {
            return Err(format!(
                "{shown} carries {what}: a job that writes would destroy it; --allow-device-with-data {shown} says its data may go"
            ));
        }
    }
    Ok(Guarded {
        path: path.to_path_buf(),
        rdev,
        _claim: claim,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_magics_are_found_and_an_empty_start_is_not() {
        let d = std::env::temp_dir().join(format!("fsbench-device-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("img");
        let mut img = vec![0u8; 128 << 10];
        std::fs::write(&f, &img).unwrap();
        assert_eq!(magic_signature(&f), None);
        img[0x438] = 0x53;
        img[0x439] = 0xEF;
        std::fs::write(&f, &img).unwrap();
        assert!(magic_signature(&f).unwrap().contains("ext"));
        let mut mbr = vec![0u8; 128 << 10];
        mbr[510] = 0x55;
        mbr[511] = 0xAA;
        mbr[450] = 0x83;
        std::fs::write(&f, &mbr).unwrap();
        assert!(magic_signature(&f).unwrap().contains("MBR"));
        assert!(guard(&f, &[], &[], false)
            .unwrap_err()
            .contains("not a block device"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
