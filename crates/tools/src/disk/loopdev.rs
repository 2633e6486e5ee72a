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
    fn kernel_struct_sizes() {
        assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
        assert_eq!(std::mem::size_of::<LoopConfig>(), 304);
    }
}
