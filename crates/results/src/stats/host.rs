//! Host facts recorded with every result: kernel, CPU, memory, and for the target directory
//! its file system, mount options, block device, I/O scheduler and free space.

use super::Host;
use std::path::Path;

fn read(p: &str) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// Mount points in /proc/self/mountinfo have their spaces and tabs escaped (`\040`).
use fsbench_base::fuse::unescape_mount as unescape;

/// (mount point, fs type, options, source) of the mount holding `dir`.
pub fn mount_of(dir: &Path) -> Option<(String, String, String, String)> {
    let dir = dir.canonicalize().ok()?;
    let mut best: Option<(String, String, String, String)> = None;
    for line in read("/proc/self/mountinfo").lines() {
        // id parent maj:min root mountpoint options [optional...] - fstype source superoptions
        let (left, right) = line.split_once(" - ")?;
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 6 || r.len() < 2 {
            continue;
        }
        let mp = unescape(l[4]);
        if dir.starts_with(&mp) && best.as_ref().is_none_or(|b| mp.len() >= b.0.len()) {
            let opts = format!("{},{}", l[5], r.get(2).unwrap_or(&""));
            best = Some((mp, r[0].to_string(), opts, r[1].to_string()));
        }
    }
    best
}

/// The I/O scheduler of a block device such as `/dev/vda1` (its disk's, for a partition).
pub fn scheduler_of(device: &str) -> String {
    let Some(name) = device.strip_prefix("/dev/") else {
        return String::new();
    };
    let name = name.rsplit('/').next().unwrap_or(name);
    let sys = format!("/sys/class/block/{name}");
    let mut q = format!("{sys}/queue/scheduler");
    if !Path::new(&q).exists() {
        // A partition: the queue belongs to the parent disk.
        if let Ok(real) = std::fs::canonicalize(&sys) {
            if let Some(parent) = real.parent() {
                q = format!("{}/queue/scheduler", parent.display());
            }
        }
    }
    let s = read(&q);
    // "mq-deadline [none]" -> "none"
    s.split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        .unwrap_or_else(|| s.trim().to_string())
}

fn free_bytes(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return 0;
    };
    // SAFETY: st is written by the kernel.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return 0;
        }
        st.f_bavail as u64 * st.f_frsize as u64
    }
}

/// Collect the facts for a run in `dir`.
pub fn collect(dir: &Path) -> Host {
    let cpuinfo = read("/proc/cpuinfo");
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    let memory_bytes = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0);
    let (mount_point, fs_type, mount_options, device) = mount_of(dir).unwrap_or_default();
    Host {
        hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        cpu_model,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes,
        target_dir: dir.display().to_string(),
        io_scheduler: scheduler_of(&device),
        fs_type,
        mount_point,
        mount_options,
        device,
        free_bytes: free_bytes(dir),
        proactive_reclaim: fsbench_base::sys::damon::summary(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_of_the_temp_dir() {
        let h = collect(&std::env::temp_dir());
        assert!(!h.kernel.is_empty());
        assert!(h.cpus >= 1);
        assert!(h.memory_bytes > 0);
        assert!(!h.fs_type.is_empty(), "{h:?}");
        assert!(h.free_bytes > 0);
        assert_eq!(unescape("a\\040b"), "a b");
    }
}
