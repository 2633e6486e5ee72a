//! Loop devices through their ioctls (linux/loop.h) and sysfs.
//!
//! We attach with `LOOP_CONFIGURE` in one step, asking for direct I/O (so the
//! page cache of the backing file cannot hide the model) and autoclear. The
//! server keeps the loop device open for its lifetime: with autoclear, the
//! kernel detaches the device by itself once the last opener is gone, so a
//! server that dies leaves no loop device behind once nothing (no mount) uses
//! it.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::Path;

const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;

pub const LO_FLAGS_AUTOCLEAR: u32 = 4;
pub const LO_FLAGS_DIRECT_IO: u32 = 16;

#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

/// An attached loop device, held open.
#[derive(Debug)]
pub struct LoopDevice {
    pub file: File,
    pub index: u32,
    /// Its queue settings as they were before the attach (`None` where sysfs could not be
    /// read).
    pub found: Option<QueueFound>,
}

/// A loop device's queue settings as found before fsbench attached it, to be set back
/// once fsbench has let it go. A loop device keeps its scheduler across detach and attach,
/// so the next user of `/dev/loopN` would otherwise run under the one fsbench chose; its
/// read-ahead the kernel sets anew at attach and detach from the backing file's device
/// (2,560 KiB for an image on this machine's disk) or keeps (a file on tmpfs), and its
/// queue depth goes with the scheduler. Its `rotational` flag needs no record: the kernel
/// sets it from the backing file at every attach.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueueFound {
    pub scheduler: String,
    pub read_ahead_kb: String,
    pub nr_requests: String,
}

impl QueueFound {
    /// The settings `dev` has now.
    pub fn read(dev: &str) -> Option<QueueFound> {
        let list = get_queue_attr(dev, "scheduler")?;
        Some(QueueFound {
            scheduler: fsbench_base::sys::iosched::active_scheduler(&list)
                .unwrap_or("none")
                .to_string(),
            read_ahead_kb: get_queue_attr(dev, "read_ahead_kb")?,
            nr_requests: get_queue_attr(dev, "nr_requests")?,
        })
    }

    /// Refuse values that are no scheduler's name or no number (they are read back from
    /// records on disk before being written to sysfs).
    pub fn check_shape(&self) -> Result<(), String> {
        let word = |v: &str| {
            !v.is_empty() && v.len() <= 32 && v.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
        };
        let num = |v: &str| !v.is_empty() && v.len() <= 12 && v.bytes().all(|b| b.is_ascii_digit());
        if word(&self.scheduler) && num(&self.read_ahead_kb) && num(&self.nr_requests) {
            Ok(())
        } else {
            Err(format!("queue settings of an unexpected shape: {self:?}"))
        }
    }

    /// Set the detached loop device `dev` back to these settings where it differs (the
    /// scheduler first: selecting one resets the queue depth); what was set back, as
    /// `knob now -> was`, or `None` when someone else has attached it since.
    ///
    /// After the detach, not before it: the detach sets the read-ahead anew (to twice the
    /// device's largest request, 2,560 KiB here). The device is held
    /// exclusively meanwhile, so no one can attach it (their `LOOP_CONFIGURE` fails with
    /// `EBUSY` and they take another) while its settings are written.
    pub fn restore_detached(&self, dev: &str) -> io::Result<Option<Vec<String>>> {
        use std::os::unix::fs::OpenOptionsExt;
        self.check_shape().map_err(io::Error::other)?;
        if !fsbench_base::daemon::owned::is_loop_path(dev) {
            return Err(io::Error::other(format!("{dev} is not a loop device")));
        }
        let _claim = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL)
            .open(dev)?;
        let name = dev.trim_start_matches("/dev/");
        if Path::new(&format!("/sys/block/{name}/loop/backing_file")).exists() {
            return Ok(None);
        }
        let mut done = Vec::new();
        let now = QueueFound::read(dev)
            .ok_or_else(|| io::Error::other(format!("{dev}: no queue settings to read")))?;
        if now.scheduler != self.scheduler {
            set_queue_attr(dev, "scheduler", &self.scheduler)?;
            done.push(format!("scheduler {} -> {}", now.scheduler, self.scheduler));
        }
        for (knob, was) in [
            ("nr_requests", &self.nr_requests),
            ("read_ahead_kb", &self.read_ahead_kb),
        ] {
            let have = get_queue_attr(dev, knob).unwrap_or_default();
            if &have != was {
                set_queue_attr(dev, knob, was)?;
                done.push(format!("{knob} {have} -> {was}"));
            }
        }
        Ok(Some(done))
    }
}

impl LoopDevice {
    pub fn path(&self) -> String {
        format!("/dev/loop{}", self.index)
    }

    /// Does the kernel do direct I/O on the backing file?
    pub fn direct_io(&self) -> bool {
        fs::read_to_string(format!("/sys/block/loop{}/loop/dio", self.index))
            .map(|s| s.trim() == "1")
            .unwrap_or(false)
    }
}

/// Attach `backing` to a free loop device with `flags` (LO_FLAGS_*).
/// `name` is recorded as the loop's file name (shown by `losetup -l`).
pub fn attach(backing: &File, flags: u32, name: &str) -> io::Result<LoopDevice> {
    let ctl = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/loop-control")?;
    let mut last_err = io::Error::other("no free loop device");
    for _ in 0..10 {
        // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns an index.
        let idx = unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_GET_FREE as _) };
        if idx < 0 {
            return Err(io::Error::last_os_error());
        }
        let path = format!("/dev/loop{idx}");
        let dev = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) => {
                last_err = e;
                std::thread::sleep(std::time::Duration::from_millis(20));
                continue;
            }
        };
        let found = QueueFound::read(&path);
        let mut file_name = [0u8; 64];
        let n = name.len().min(63);
        file_name[..n].copy_from_slice(&name.as_bytes()[..n]);
        let cfg = LoopConfig {
            fd: backing.as_raw_fd() as u32,
            block_size: 512,
            info: LoopInfo64 {
                lo_device: 0,
                lo_inode: 0,
                lo_rdevice: 0,
                lo_offset: 0,
                lo_sizelimit: 0,
                lo_number: 0,
                lo_encrypt_type: 0,
                lo_encrypt_key_size: 0,
                lo_flags: flags,
                lo_file_name: file_name,
                lo_crypt_name: [0; 64],
                lo_encrypt_key: [0; 32],
                lo_init: [0; 2],
            },
            reserved: [0; 8],
        };
        // SAFETY: cfg is a properly laid out struct loop_config that lives
        // across the call.
        let r = unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CONFIGURE as _, &cfg) };
        if r == 0 {
            return Ok(LoopDevice {
                file: dev,
                index: idx as u32,
                found,
            });
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EBUSY) {
            // Someone took it between GET_FREE and CONFIGURE: try another.
            last_err = e;
            continue;
        }
        return Err(e);
    }
    Err(last_err)
}

/// Detach a loop device (`LOOP_CLR_FD`). If it is still in use (mounted), the
/// kernel detaches it when the last user closes it.
pub fn detach_fd(dev: &File) -> io::Result<()> {
    // SAFETY: LOOP_CLR_FD takes no argument.
    let r = unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CLR_FD as _, 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Detach `/dev/loopN` by path.
pub fn detach_path(dev: &str) -> io::Result<()> {
    let f = OpenOptions::new().read(true).write(true).open(dev)?;
    detach_fd(&f)
}

/// Loop devices whose backing file is `backing` (by the path the kernel
/// reports in sysfs).
pub fn devices_backed_by(backing: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/sys/block") else {
        return out;
    };
    let want = backing.to_string_lossy().into_owned();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        if let Ok(b) = fs::read_to_string(e.path().join("loop/backing_file")) {
            let b = b.trim().trim_end_matches(" (deleted)");
            if b == want {
                out.push(format!("/dev/{name}"));
            }
        }
    }
    out
}

fn sysfs_queue(dev: &str, knob: &str) -> String {
    let name = dev.trim_start_matches("/dev/");
    format!("/sys/block/{name}/queue/{knob}")
}

/// Write a block queue attribute (`rotational`, `scheduler`, `iosched/...`).
pub fn set_queue_attr(dev: &str, knob: &str, value: &str) -> io::Result<()> {
    let p = sysfs_queue(dev, knob);
    fs::write(&p, value).map_err(|e| io::Error::new(e.kind(), format!("{p}: {e}")))
}

pub fn get_queue_attr(dev: &str, knob: &str) -> Option<String> {
    fs::read_to_string(sysfs_queue(dev, knob))
        .ok()
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_settings_of_an_unexpected_shape_are_refused() {
        let ok = QueueFound {
            scheduler: "mq-deadline".into(),
            read_ahead_kb: "128".into(),
            nr_requests: "256".into(),
        };
        assert!(ok.check_shape().is_ok());
        for bad in [
            QueueFound {
                scheduler: "none\nbfq".into(),
                ..ok.clone()
            },
            QueueFound {
                scheduler: "../x".into(),
                ..ok.clone()
            },
            QueueFound {
                read_ahead_kb: "1\n2".into(),
                ..ok.clone()
            },
            QueueFound {
                nr_requests: "".into(),
                ..ok.clone()
            },
        ] {
            assert!(bad.check_shape().is_err(), "{bad:?}");
            assert!(bad.restore_detached("/dev/loop0").is_err(), "{bad:?}");
        }
        assert!(ok.restore_detached("/dev/sda").is_err());
    }

    #[test]
    fn kernel_struct_sizes() {
        assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
        assert_eq!(std::mem::size_of::<LoopConfig>(), 304);
    }
}
