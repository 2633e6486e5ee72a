//! A block device's own count of what it read (`/sys/block/DEV/stat`, sectors of 512 bytes),
//! so that a measurement can tell the reads its device served from those the page cache did,
//! and of the time it was busy (`io_ticks`), so that throughput can be shown beside the
//! disk's utilisation.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Bytes read so far by the block device at `/sys/dev/block/MAJ:MIN` (a disk or partition,
/// a loop device), from its `stat` file's third field (sectors read, in 512-byte units).
fn read_bytes_of(sysfs: &Path) -> Option<u64> {
    counters_of(sysfs).map(|c| c.read_bytes)
}

/// What a block device's `stat` file counts, read at one moment: bytes read (the third
/// field, sectors of 512 bytes) and the milliseconds the device had I/O in flight (the
/// tenth, `io_ticks`: the time it was busy, whatever the number of requests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    pub read_bytes: u64,
    pub busy_ms: u64,
    /// Bytes written (the seventh field, sectors of 512 bytes).
    pub write_bytes: u64,
    /// The first eleven fields as they stand: reads, merged reads, sectors read, ms
    /// reading, writes, merged writes, sectors written, ms writing, in flight, ms busy, ms
    /// weighted by the requests in flight (`Documentation/block/stat.rst`).
    pub fields: [u64; 11],
}

/// What a block device did over a window, as fio's `disk_util` reports it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DiskStats {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: u64,
    pub write_ticks: u64,
    pub in_queue: u64,
    /// Percent of the window the device was busy.
    pub util: f64,
}

impl DiskStats {
    /// The difference of two readings of device `name`, over a window of `secs`.
    pub fn between(name: &str, before: &Counters, after: &Counters, secs: f64) -> DiskStats {
        let d = |i: usize| after.fields[i].saturating_sub(before.fields[i]);
        DiskStats {
            name: name.to_string(),
            read_ios: d(0),
            read_merges: d(1),
            read_ticks: d(3),
            write_ios: d(4),
            write_merges: d(5),
            write_ticks: d(7),
            in_queue: d(10),
            util: (100.0 * d(9) as f64 / (secs * 1000.0).max(1e-9)).min(100.0),
        }
    }
}

/// The name of the block device numbered `dev` (`vda`, `loop3`), from sysfs.
pub fn name_of(dev: (u32, u32)) -> Option<String> {
    let link = std::fs::read_link(format!("/sys/dev/block/{}:{}", dev.0, dev.1)).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

impl Counters {
    /// What the device did between `self` and a later reading: bytes read and seconds busy.
    pub fn since(self, earlier: Counters) -> (u64, f64) {
        (
            self.read_bytes.saturating_sub(earlier.read_bytes),
            self.busy_ms.saturating_sub(earlier.busy_ms) as f64 / 1000.0,
        )
    }

    /// Bytes written between `earlier` and `self`.
    pub fn written_since(self, earlier: Counters) -> u64 {
        self.write_bytes.saturating_sub(earlier.write_bytes)
    }
}

fn counters_of(sysfs: &Path) -> Option<Counters> {
    let text = std::fs::read_to_string(sysfs.join("stat")).ok()?;
    let words: Vec<&str> = text.split_whitespace().collect();
    let sectors: u64 = words.get(2)?.parse().ok()?;
    let busy_ms: u64 = words.get(9)?.parse().ok()?;
    let mut fields = [0u64; 11];
    for (f, w) in fields.iter_mut().zip(&words) {
        *f = w.parse().unwrap_or(0);
    }
    Some(Counters {
        read_bytes: sectors * 512,
        busy_ms,
        write_bytes: fields[6] * 512,
        fields,
    })
}

/// The counters of the block device numbered `dev`; `None` when it is no block device.
pub fn counters(dev: (u32, u32)) -> Option<Counters> {
    counters_of(Path::new(&format!("/sys/dev/block/{}:{}", dev.0, dev.1)))
}

/// The counters of the block device `dev` (`/dev/loop3`, `sdb`).
pub fn named_counters(dev: &str) -> Option<Counters> {
    let name = dev.trim_start_matches("/dev/");
    counters_of(&Path::new("/sys/class/block").join(name))
}

/// The device number (major, minor) of the file system holding `path`; for an overlay, of
/// the file system under its upper layer (where what it writes goes, and what it reads
/// when its layers share one file system, as an experiment's overlays do), so that runs on
/// an overlay count the disk under it.
pub fn device_of(path: &Path) -> Option<(u32, u32)> {
    let dev = std::fs::metadata(path).ok()?.dev();
    let num = (libc::major(dev), libc::minor(dev));
    if num.0 == 0 {
        let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        if let Some(upper) = overlay_upper(&info, num) {
            let d = std::fs::metadata(&upper).ok()?.dev();
            return Some((libc::major(d), libc::minor(d)));
        }
    }
    Some(num)
}

/// The upper directory of the overlay mounted with device number `dev`, from the text of
/// /proc/self/mountinfo; `None` when `dev` is no overlay (or one without an upper layer).
fn overlay_upper(mountinfo: &str, dev: (u32, u32)) -> Option<std::path::PathBuf> {
    let want = format!("{}:{}", dev.0, dev.1);
    mountinfo.lines().find_map(|l| {
        let fields: Vec<&str> = l.split(' ').collect();
        if fields.get(2) != Some(&want.as_str()) {
            return None;
        }
        let dash = fields.iter().position(|f| *f == "-")?;
        if fields.get(dash + 1) != Some(&"overlay") {
            return None;
        }
        let opts = fields.get(dash + 3)?;
        let up = opts.split(',').find_map(|o| o.strip_prefix("upperdir="))?;
        Some(std::path::PathBuf::from(unescape(up)))
    })
}

/// A mountinfo field with its octal escapes (`\040` for a space) undone.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b.get(i + 1..i + 4).and_then(|d| {
            let t = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(t, 8).ok()
        });
        match (b[i], oct) {
            (b'\\', Some(c)) => {
                out.push(c);
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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
    fn an_overlay_counts_the_device_under_its_upper_layer() {
        let info = "36 25 0:50 / /mnt/ovl rw,relatime - overlay overlay rw,lowerdir=/o/l,upperdir=/o/my\\040up,workdir=/o/w\n\
                    37 25 7:3 / /mnt/img rw - ext4 /dev/loop3 rw\n";
        assert_eq!(
            overlay_upper(info, (0, 50)),
            Some(std::path::PathBuf::from("/o/my up"))
        );
        assert_eq!(overlay_upper(info, (7, 3)), None);
        assert_eq!(overlay_upper(info, (0, 51)), None);
    }

    #[test]
    fn sectors_are_512_bytes() {
        let d = std::env::temp_dir().join(format!("fsbench-blockstat-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("stat"), "  10 0 24 5 0 0 0 0 0 0 0\n").unwrap();
        assert_eq!(read_bytes_of(&d), Some(24 * 512));
        let c = counters_of(&d).unwrap();
        assert_eq!((c.read_bytes, c.busy_ms, c.write_bytes), (24 * 512, 0, 0));
        std::fs::write(d.join("stat"), " 10 0 24 5 0 0 0 0 2 7350 9 0 0 0 0\n").unwrap();
        let later = counters_of(&d).unwrap();
        assert_eq!(later.busy_ms, 7350);
        let (bytes, busy) = later.since(Counters {
            read_bytes: 8 * 512,
            busy_ms: 350,
            ..later
        });
        assert_eq!((bytes, busy), (16 * 512, 7.0));
        assert_eq!((later.write_bytes, later.fields[8]), (0, 2));
        std::fs::write(d.join("stat"), "garbage").unwrap();
        assert_eq!(read_bytes_of(&d), None);
        assert_eq!(counters_of(&d), None);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
