//! A user-space NFS server for the tests of fsbench's NFS client, started and removed by
//! fsbench itself (`fsbench nfs create NAME --dir SCRATCH`, NFS-Ganesha with its VFS back
//! end on free loopback ports, NFSv3), with its state under the test's scratch directory.
//! Removed (`fsbench nfs remove`) when dropped. The lock [`SERIAL`] keeps every NFS test of
//! the program (these and `nfs_target`'s) one at a time: servers share rpcbind, and
//! Ganesha clears the registrations in it when it starts and stops.

use super::common;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// One NFS test at a time, across the NFS test modules.
pub static SERIAL: Mutex<()> = Mutex::new(());

static SERVERS: AtomicUsize = AtomicUsize::new(0);

/// A running server and its export.
pub struct Server {
    _serial: MutexGuard<'static, ()>,
    dir: common::Scratch,
    name: String,
    url: String,
}

fn find(cmd: &str) -> Option<PathBuf> {
    ["/usr/bin", "/usr/sbin", "/sbin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(cmd))
        .find(|p| p.is_file())
}

/// Whether libnfs's runtime (4.x or 5.x) is installed.
fn have_libnfs() -> bool {
    ["libnfs.so.13", "libnfs.so.14"].iter().any(|n| {
        [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib",
            "/lib",
        ]
        .iter()
        .any(|d| Path::new(d).join(n).exists())
    })
}

impl Server {
    /// Start a server, or say why the test is skipped (not root, Ganesha, rpcbind or libnfs
    /// missing) and return `None`.
    pub fn start(test: &str) -> Option<Server> {
        if !common::is_root() {
            common::skip(&format!("{test}: needs root (NFS-Ganesha's VFS back end)"));
            return None;
        }
        if find("ganesha.nfsd").is_none() || find("rpcbind").is_none() {
            common::skip(&format!(
                "{test}: needs nfs-ganesha, nfs-ganesha-vfs and rpcbind"
            ));
            return None;
        }
        if !have_libnfs() || !common::have("nfs-ls") {
            common::skip(&format!("{test}: needs libnfs (libnfs13) and libnfs-utils"));
            return None;
        }
        let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let dir = common::Scratch::new("nfs");
        std::fs::create_dir_all(dir.path().join("user")).unwrap();
        let name = format!(
            "nc{}-{}",
            std::process::id(),
            SERVERS.fetch_add(1, Ordering::Relaxed)
        );
        let mut s = Server {
            _serial: serial,
            dir,
            name,
            url: String::new(),
        };
        let user = s.dir.path().join("user");
        let o = s
            .command()
            .args(["nfs", "create", &s.name, "--dir"])
            .arg(&user)
            .output()
            .expect("running fsbench nfs create");
        if !o.status.success() && common::text(&o).contains("another NFS server") {
            common::skip(&format!("{test}: {}", common::text(&o).trim()));
            return None;
        }
        assert!(o.status.success(), "nfs create: {}", common::text(&o));
        s.url = String::from_utf8_lossy(&o.stdout).trim().to_string();
        Some(s)
    }

    fn command(&self) -> Command {
        let mut c = common::bin();
        c.env("FSBENCH_NFS_STATE_DIR", self.dir.path().join("state"));
        c
    }

    /// The export's URL for libnfs (NFSv3, its ports given: no portmapper lookup).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The exported directory on this machine.
    pub fn export(&self) -> PathBuf {
        self.dir
            .path()
            .join("user")
            .join(format!("fsbench-nfs-{}", self.name))
            .join("export")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.url.is_empty() {
            return;
        }
        let o = self.command().args(["nfs", "remove", &self.name]).output();
        if let Ok(o) = o {
            if !o.status.success() {
                eprintln!("nfs remove {}: {}", self.name, common::text(&o));
            }
        }
    }
}
