//! What fsbench made, recognised again before it is undone.
//!
//! A mount point or a loop device number names whatever is there *now*: after a crash, a
//! hand-made unmount or a `losetup -d`, the same path or number may belong to someone else.
//! So fsbench records, when it mounts or attaches, what identifies the object (the mount's
//! id, device and source in /proc/self/mountinfo; the backing file's device and inode as
//! the loop driver reports them), and unmounts or detaches only when that still matches.
//! Anything else is reported and left alone.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A file by device and inode (`st_dev`, `st_ino`), and its birth time where the file
/// system keeps one (`statx`'s `stx_btime`: ext4, xfs, btrfs, tmpfs).
///
/// An inode number is reused as soon as its file is deleted (ext4 gives a new file in the
/// same directory the number just freed), so device and inode alone can take a file made
/// since for the one fsbench created. The birth time, to the nanosecond, is not repeated by
/// a reused number. Two identities are the same file when device and inode agree and so do
/// their birth times where both know one: a loop device reports its backing file by device
/// and inode only, and records written before birth times were kept have none.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
    /// Seconds and nanoseconds since the epoch; `None` where unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub born: Option<(i64, u32)>,
}

impl PartialEq for FileId {
    /// The same file as far as both identities tell (see the type): deliberately not `Eq`,
    /// since an identity without a birth time matches two that differ in theirs.
    fn eq(&self, o: &FileId) -> bool {
        self.dev == o.dev
            && self.ino == o.ino
            && match (self.born, o.born) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

impl FileId {
    pub fn of(md: &std::fs::Metadata) -> FileId {
        let born = md
            .created()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| (d.as_secs() as i64, d.subsec_nanos()));
        FileId {
            dev: md.dev(),
            ino: md.ino(),
            born,
        }
    }

    /// From what `statx` returned (its birth time only when the file system gave one).
    pub fn of_statx(st: &libc::statx) -> FileId {
        FileId {
            dev: libc::makedev(st.stx_dev_major, st.stx_dev_minor),
            ino: st.stx_ino,
            born: (st.stx_mask & libc::STATX_BTIME != 0)
                .then_some((st.stx_btime.tv_sec, st.stx_btime.tv_nsec)),
        }
    }

    /// The file at `p` (not following a final link).
    pub fn of_path(p: &Path) -> io::Result<FileId> {
        std::fs::symlink_metadata(p).map(|m| FileId::of(&m))
    }
}

impl std::fmt::Display for FileId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "device {:#x} inode {}", self.dev, self.ino)?;
        if let Some((s, ns)) = self.born {
            write!(f, " born {s}.{ns:09}")?;
        }
        Ok(())
    }
}

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq)]
pub struct MountEntry {
    pub mount_id: u64,
    /// `MAJOR:MINOR` of the mounted file system's device.
    pub majmin: String,
    pub point: PathBuf,
    pub fstype: String,
    pub source: String,
}

fn parse_line(l: &str) -> Option<MountEntry> {
    let f: Vec<&str> = l.split(' ').collect();
    let dash = f.iter().position(|w| *w == "-")?;
    Some(MountEntry {
        mount_id: f.first()?.parse().ok()?,
        majmin: f.get(2)?.to_string(),
        point: PathBuf::from(crate::fuse::unescape_mount(f.get(4)?)),
        fstype: f.get(dash + 1)?.to_string(),
        source: crate::fuse::unescape_mount(f.get(dash + 2)?),
    })
}

/// Mount points (decoded) currently listed in /proc/self/mounts.
pub fn mount_points() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|m| PathBuf::from(crate::fuse::unescape_mount(m)))
        .collect()
}

/// Whether `path` (or its canonical form) is a mount point now.
pub fn is_mounted(path: &Path) -> bool {
    let canon = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    mount_points().iter().any(|m| m == &canon || m == path)
}

/// The mount on top at `point` (the last one listed there: it hides those below), if any.
pub fn mount_at(point: &Path) -> Option<MountEntry> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines()
        .rev()
        .filter_map(parse_line)
        .find(|e| e.point == point)
}

/// Mount points at or below `dir` (a real path): a tree holding one must not be removed
/// recursively, which would delete what the mounted file system holds.
pub fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(parse_line)
        .map(|e| e.point)
        .filter(|p| p.starts_with(dir))
        .collect()
}

/// A mount fsbench made, as recorded right after making it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MountRecord {
    /// The mount point, canonical when recorded.
    pub point: PathBuf,
    pub mount_id: u64,
    pub majmin: String,
    pub fstype: String,
    pub source: String,
    /// For a file system on a loop device: the backing file the device had when fsbench
    /// mounted it. Such a mount stays recognisable when it is mounted again (a remount gives
    /// it a new mount id) and is not taken for another file on a reused device number.
    #[serde(default)]
    pub loop_backing: Option<FileId>,
}

/// Whether what is mounted at a recorded point is still the recorded mount.
#[derive(Debug, PartialEq)]
pub enum MountState {
    /// It is: unmounting it undoes what fsbench did.
    Ours,
    /// Nothing is mounted there any more.
    Gone,
    /// Something else is mounted there now; why it is not the recorded one.
    Foreign(String),
}

impl MountRecord {
    /// Record the mount now on top at `point` (right after mounting it); `loop_backing` is
    /// the backing file of the loop device mounted, if it is one.
    pub fn capture(point: &Path, loop_backing: Option<FileId>) -> anyhow::Result<MountRecord> {
        let point = point.canonicalize()?;
        let e = mount_at(&point).ok_or_else(|| {
            anyhow::anyhow!(
                "{} is not listed in /proc/self/mountinfo right after mounting it",
                point.display()
            )
        })?;
        Ok(MountRecord {
            point,
            mount_id: e.mount_id,
            majmin: e.majmin,
            fstype: e.fstype,
            source: e.source,
            loop_backing,
        })
    }

    /// Compare the mount at the recorded point with the record.
    pub fn state(&self) -> MountState {
        let Some(e) = mount_at(&self.point) else {
            return MountState::Gone;
        };
        let what = format!(
            "{} on {} (mount id {}, device {})",
            e.fstype, e.source, e.mount_id, e.majmin
        );
        if e.fstype != self.fstype || e.source != self.source || e.majmin != self.majmin {
            return MountState::Foreign(format!(
                "{} is now mounted there, not the {} on {} (device {}) fsbench mounted",
                what, self.fstype, self.source, self.majmin
            ));
        }
        if let Some(want) = self.loop_backing {
            return match loop_backing(&self.source) {
                Ok(Some(have)) if have == want => MountState::Ours,
                Ok(Some(have)) => MountState::Foreign(format!(
                    "{what} is mounted there, but {} is now backed by another file ({have}, not {want})",
                    self.source
                )),
                Ok(None) => MountState::Foreign(format!(
                    "{what} is mounted there, but {} has no backing file now",
                    self.source
                )),
                Err(err) => MountState::Foreign(format!(
                    "{what} is mounted there, and {} cannot be checked: {err}",
                    self.source
                )),
            };
        }
        if e.mount_id != self.mount_id {
            return MountState::Foreign(format!(
                "{what} is mounted there, not mount id {} that fsbench made",
                self.mount_id
            ));
        }
        MountState::Ours
    }

    /// Unmount the recorded mount if it is still there and still the one recorded
    /// (`lazy`: detach it even while busy). `Ok(false)` when nothing was mounted there;
    /// an error naming the mount found when another one is there (left alone).
    pub fn unmount(&self, lazy: bool) -> anyhow::Result<bool> {
        match self.state() {
            MountState::Gone => Ok(false),
            MountState::Foreign(why) => {
                anyhow::bail!("not unmounting {}: {why}; left alone", self.point.display())
            }
            MountState::Ours => {
                umount(&self.point, lazy)
                    .map_err(|e| anyhow::anyhow!("unmounting {}: {e}", self.point.display()))?;
                Ok(true)
            }
        }
    }
}

impl MountRecord {
    /// Unmount the recorded mount if it is still the one recorded, lazily when it is busy
    /// (for servers stopping: their users see errors rather than hang). What was done, as
    /// a sentence for the user; an error naming the mount found when another one is there.
    pub fn unmount_even_busy(&self) -> anyhow::Result<Option<String>> {
        match self.unmount(false) {
            Ok(true) => Ok(Some(format!("unmounted {}", self.point.display()))),
            Ok(false) => Ok(None),
            Err(e) if self.state() == MountState::Ours => {
                umount(&self.point, true)
                    .map_err(|l| anyhow::anyhow!("{e:#}; detaching it lazily: {l}"))?;
                Ok(Some(format!(
                    "unmounted {} (lazily: it was busy)",
                    self.point.display()
                )))
            }
            Err(e) => Err(e),
        }
    }
}

impl MountRecord {
    /// The recorded mount, when it is still mounted at its point but hidden under another
    /// mount stacked on top of it since: fsbench can neither unmount it (that would take the
    /// other one) nor stop what serves it (it would stay mounted on a dead device).
    pub fn buried(&self) -> Option<MountEntry> {
        let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let here: Vec<MountEntry> = text
            .lines()
            .filter_map(parse_line)
            .filter(|e| e.point == self.point)
            .collect();
        let (_top, below) = here.split_last()?;
        below
            .iter()
            .rev()
            .find(|e| {
                e.fstype == self.fstype
                    && e.source == self.source
                    && e.majmin == self.majmin
                    && (e.mount_id == self.mount_id || self.loop_backing.is_some())
            })
            .cloned()
    }
}

/// Before `fsbench KIND remove NAME` stops the server of a simulated disk or remote: an
/// error, and nothing done, when the mount fsbench made (`rec`) is still there under a mount
/// stacked on it since. Removing anyway would leave fsbench's mount on a dead device (every
/// access failing with EIO) and drop the state that lets `remove` be run again.
pub fn refuse_buried(rec: &MountRecord, kind: &str, name: &str) -> anyhow::Result<()> {
    let Some(ours) = rec.buried() else {
        return Ok(());
    };
    let top = mount_at(&rec.point)
        .map(|e| format!("{} on {}", e.fstype, e.source))
        .unwrap_or_default();
    anyhow::bail!(
        "not removing {kind} {name}: its file system ({} on {}, mount id {}) is still mounted at {}, under {top} mounted there since; left alone, with the server running and the state kept: unmount what is on top ({}), then run `fsbench {kind} remove {name}` again",
        ours.fstype,
        ours.source,
        ours.mount_id,
        rec.point.display(),
        rec.point.display()
    )
}

/// Whether the mount on top at `point` is one of fsbench's own FUSE servers' (`fuse.fsbench`
/// with source `source`), the only mounts fsbench unmounts there without a record.
pub fn is_own_fuse(point: &Path, source: &str) -> bool {
    mount_at(point).is_some_and(|e| e.fstype == "fuse.fsbench" && e.source == source)
}

/// `umount2(point, UMOUNT_NOFOLLOW [| MNT_DETACH])`.
pub fn umount(point: &Path, lazy: bool) -> io::Result<()> {
    let c = std::ffi::CString::new(point.as_os_str().as_encoded_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut flags = libc::UMOUNT_NOFOLLOW;
    if lazy {
        flags |= libc::MNT_DETACH;
    }
    // SAFETY: c is a valid C string.
    if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;

/// The part of `struct loop_info64` read here; the rest is room for the kernel to fill.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    rest: [u8; 216],
}

/// Whether `dev` names a loop device node (`/dev/loopN`), the only devices fsbench detaches.
pub fn is_loop_path(dev: &str) -> bool {
    dev.strip_prefix("/dev/loop")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn open_loop(dev: &str) -> io::Result<File> {
    if !is_loop_path(dev) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{dev} is not a loop device (/dev/loopN)"),
        ));
    }
    let f = OpenOptions::new().read(true).open(dev)?;
    let md = f.metadata()?;
    use std::os::unix::fs::FileTypeExt;
    if !md.file_type().is_block_device() || libc::major(md.rdev()) != 7 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{dev} is not a loop block device"),
        ));
    }
    Ok(f)
}

fn status(f: &File) -> io::Result<Option<FileId>> {
    let mut info = LoopInfo64 {
        lo_device: 0,
        lo_inode: 0,
        rest: [0; 216],
    };
    // SAFETY: info is as large as struct loop_info64 and lives across the call.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), LOOP_GET_STATUS64 as _, &mut info) };
    if r == 0 {
        return Ok(Some(FileId {
            dev: info.lo_device,
            ino: info.lo_inode,
            born: None,
        }));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENXIO) {
        return Ok(None); // not bound to any file
    }
    Err(e)
}

/// The backing file of loop device `dev` (by device and inode, as the loop driver reports
/// them), `None` when it is unbound.
pub fn loop_backing(dev: &str) -> io::Result<Option<FileId>> {
    status(&open_loop(dev)?)
}

/// What detaching a recorded loop device found.
#[derive(Debug, PartialEq)]
pub enum Detach {
    Detached,
    /// The device is bound to nothing, or does not exist any more.
    Gone,
    /// Another file backs it now (the number was reused): left alone.
    Foreign(FileId),
}

/// Detach `dev` only if its backing file is `want`: the check and the detach go through one
/// open descriptor of the device.
pub fn detach_if_backed_by(dev: &str, want: FileId) -> io::Result<Detach> {
    let f = match open_loop(dev) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Detach::Gone),
        Err(e) => return Err(e),
    };
    match status(&f)? {
        None => Ok(Detach::Gone),
        Some(have) if have != want => Ok(Detach::Foreign(have)),
        Some(_) => {
            // SAFETY: LOOP_CLR_FD takes no argument.
            if unsafe { libc::ioctl(f.as_raw_fd(), LOOP_CLR_FD as _, 0) } == 0 {
                Ok(Detach::Detached)
            } else {
                Err(io::Error::last_os_error())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_differ_by_birth_only_where_both_know_it() {
        let f = std::env::temp_dir().join(format!("fsbench-fileid-{}", std::process::id()));
        std::fs::write(&f, b"x").unwrap();
        let a = FileId::of_path(&f).unwrap();
        std::fs::remove_file(&f).unwrap();
        assert_eq!(a, a);
        let unknown = FileId { born: None, ..a };
        assert_eq!(a, unknown, "a loop device's report has no birth time");
        let other = FileId {
            born: Some((1, 2)),
            ..a
        };
        assert_eq!(unknown, other);
        if a.born.is_some() {
            assert_ne!(a, other, "a reused inode number born at another time");
        }
        let json = serde_json::to_string(&unknown).unwrap();
        assert!(!json.contains("born"), "{json}");
        let old: FileId = serde_json::from_str(r#"{"dev":1,"ino":2}"#).unwrap();
        assert_eq!(old.born, None);
        let back: FileId = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(back.born, a.born);
    }

    #[test]
    fn mountinfo_lines_are_parsed() {
        let l = "36 25 7:3 / /mnt/a\\040b rw,noatime shared:1 - ext4 /dev/loop3 rw";
        let e = parse_line(l).unwrap();
        assert_eq!(e.mount_id, 36);
        assert_eq!(e.majmin, "7:3");
        assert_eq!(e.point, PathBuf::from("/mnt/a b"));
        assert_eq!(
            (e.fstype.as_str(), e.source.as_str()),
            ("ext4", "/dev/loop3")
        );
        let l = "40 25 0:50 / /m rw - overlay overlay rw,lowerdir=/x";
        assert_eq!(parse_line(l).unwrap().fstype, "overlay");
    }

    #[test]
    fn root_is_mounted_and_loop_paths_are_strict() {
        assert!(mount_at(Path::new("/")).is_some());
        assert!(is_loop_path("/dev/loop12"));
        assert!(!is_loop_path("/dev/loop"));
        assert!(!is_loop_path("/dev/loop1/../sda"));
        assert!(!is_loop_path("/dev/sda"));
        assert!(loop_backing("/dev/sda").is_err());
    }

    #[test]
    fn a_record_of_nothing_mounted_is_gone() {
        let r = MountRecord {
            point: PathBuf::from("/nonexistent/fsbench/point"),
            mount_id: 1,
            majmin: "0:1".into(),
            fstype: "tmpfs".into(),
            source: "x".into(),
            loop_backing: None,
        };
        assert_eq!(r.state(), MountState::Gone);
        assert!(!r.unmount(false).unwrap());
    }
}
