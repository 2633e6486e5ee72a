//! Cgroups this process makes: each is marked when it is made (an extended attribute holding
//! a random token) and remembered by its inode, so that fsbench, or `--cleanup` after fsbench
//! was killed, kills and removes only the cgroup it made there, never one of the same name
//! made by someone else since; a cgroup that is gone is gone, never taken for fsbench's.

use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The attribute holding the token (trusted.*: only a privileged process can set it).
const XATTR: &str = "trusted.fsbench-cgroup";
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
const CGROUP_SUPER_MAGIC: i64 = 0x0027_e0eb;

/// A cgroup fsbench made, as recorded when it made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnedCgroup {
    pub path: PathBuf,
    /// Its inode (in cgroup v2, its cgroup id) when made.
    pub ino: u64,
    /// The random token written to its attribute when made.
    pub token: String,
}

/// What is at a recorded cgroup's path now.
#[derive(Debug, PartialEq)]
pub enum Found {
    Ours,
    /// Nothing: removed already.
    Gone,
    /// Something else; why it is not the recorded cgroup.
    Foreign(String),
}

/// Where the cgroup v2 hierarchy is mounted, if it is.
pub fn v2_root() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let point = left.split(' ').nth(4)?;
        (right.split(' ').next() == Some("cgroup2")).then(|| PathBuf::from(point))
    })
}

fn cpath(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

/// Whether `p` lies on a cgroup file system (v1 or v2).
fn on_cgroupfs(p: &Path) -> bool {
    super::fsmagic::of_path(p).is_ok_and(|m| [CGROUP2_SUPER_MAGIC, CGROUP_SUPER_MAGIC].contains(&m))
}

fn random_token() -> String {
    let mut b = [0u8; 16];
    // SAFETY: getrandom fills the buffer it is given.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != b.len() as isize {
        // No entropy source: the time and pid still differ between runs.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        b = (t ^ (std::process::id() as u128) << 64).to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn read_token(p: &Path) -> io::Result<Vec<u8>> {
    let (c, name) = (cpath(p)?, CString::new(XATTR).expect("no NUL"));
    let mut buf = [0u8; 64];
    // SAFETY: NUL-terminated strings and a buffer of the size given; no link followed.
    let n = unsafe {
        libc::lgetxattr(
            c.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(buf[..n as usize].to_vec())
}

impl OwnedCgroup {
    /// Make the cgroup `path` (its parent must be a cgroup; it must not exist) and mark it.
    pub fn create(path: &Path) -> io::Result<OwnedCgroup> {
        let parent = path.parent().unwrap_or(Path::new("/"));
        if !on_cgroupfs(parent) {
            return Err(io::Error::other(format!(
                "{} is not in a cgroup file system",
                parent.display()
            )));
        }
        std::fs::create_dir(path)?;
        let token = random_token();
        let (c, name) = (cpath(path)?, CString::new(XATTR).expect("no NUL"));
        // SAFETY: NUL-terminated strings and a value of the length given.
        let r = unsafe {
            libc::lsetxattr(
                c.as_ptr(),
                name.as_ptr(),
                token.as_ptr().cast(),
                token.len(),
                0,
            )
        };
        let made = std::fs::symlink_metadata(path).map(|m| m.ino());
        if r != 0 || made.is_err() {
            let e = if r != 0 {
                io::Error::last_os_error()
            } else {
                made.unwrap_err()
            };
            let _ = crate::owned::path::remove_empty_dir(path);
            return Err(io::Error::other(format!(
                "marking the cgroup {}: {e}",
                path.display()
            )));
        }
        Ok(OwnedCgroup {
            path: path.to_path_buf(),
            ino: made?,
            token,
        })
    }

    /// Whether the cgroup at the recorded path is the one made: a directory on a cgroup file
    /// system, with the recorded inode and token.
    pub fn found(&self) -> Found {
        let md = match std::fs::symlink_metadata(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Found::Gone,
            Err(e) => return Found::Foreign(format!("cannot check it: {e}")),
            Ok(md) => md,
        };
        if !md.is_dir() || !on_cgroupfs(&self.path) {
            return Found::Foreign("it is not a cgroup".into());
        }
        if md.ino() != self.ino {
            return Found::Foreign(format!(
                "it is cgroup {} now, not {} that fsbench made",
                md.ino(),
                self.ino
            ));
        }
        match read_token(&self.path) {
            Ok(t) if t == self.token.as_bytes() => Found::Ours,
            Ok(_) => Found::Foreign("it carries another fsbench run's mark".into()),
            Err(e) => Found::Foreign(format!("it carries no fsbench mark ({e})")),
        }
    }

    /// The cgroup's processes (and its child cgroups', `cgroup.procs` of each).
    fn pids(&self) -> Vec<i32> {
        let mut out = Vec::new();
        let mut dirs = vec![self.path.clone()];
        while let Some(d) = dirs.pop() {
            let procs = std::fs::read_to_string(d.join("cgroup.procs")).unwrap_or_default();
            out.extend(procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
            dirs.extend(children(&d));
        }
        out
    }

    /// Kill every process in it (`cgroup.kill`, or SIGKILL to each listed process where the
    /// kernel has no `cgroup.kill`) and wait, 10 s at most, until none is left.
    pub fn kill(&self) -> io::Result<()> {
        let killed = std::fs::write(self.path.join("cgroup.kill"), "1").is_ok();
        let t = Instant::now();
        loop {
            let pids = self.pids();
            if pids.is_empty() {
                return Ok(());
            }
            if !killed {
                for p in pids.iter().filter(|&&p| p > 0) {
                    // SAFETY: kill(2) of a process in a cgroup this process made.
                    unsafe { libc::kill(*p, libc::SIGKILL) };
                }
            }
            if t.elapsed() > Duration::from_secs(10) {
                return Err(io::Error::other(format!(
                    "processes {pids:?} still in it 10 s after they were killed"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kill what runs in it, then remove it and the cgroups fsbench made inside it (a cgroup
    /// directory holds only cgroups). Retried briefly: the kernel releases an exited
    /// process's cgroup a moment after it is reaped.
    pub fn remove(&self) -> io::Result<()> {
        self.kill()?;
        let mut last = None;
        for _ in 0..100 {
            for c in children(&self.path) {
                let _ = crate::owned::path::remove_empty_dir(c);
            }
            match crate::owned::path::remove_empty_dir(&self.path) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(last.unwrap_or_else(|| io::Error::other("still there")))
    }
}

/// The child cgroups of `dir`.
fn children(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|it| {
            it.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_differ() {
        assert_ne!(random_token(), random_token());
        assert_eq!(random_token().len(), 32);
    }

    /// A cgroup of the same name made by someone else is not fsbench's; a removed one is
    /// gone.
    #[test]
    fn only_the_cgroup_made_is_ours() {
        // SAFETY: geteuid has no preconditions.
        let Some(root) = v2_root().filter(|_| unsafe { libc::geteuid() } == 0) else {
            return;
        };
        let p = root.join(format!("fsbench-unit-{}", std::process::id()));
        let Ok(cg) = OwnedCgroup::create(&p) else {
            return; // no cgroup may be made here (a container): nothing to check
        };
        assert_eq!(cg.found(), Found::Ours);
        cg.remove().unwrap();
        assert_eq!(cg.found(), Found::Gone);
        std::fs::create_dir(&p).unwrap();
        assert!(matches!(cg.found(), Found::Foreign(_)), "{:?}", cg.found());
        std::fs::remove_dir(&p).unwrap();
    }
}
