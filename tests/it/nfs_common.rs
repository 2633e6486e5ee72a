//! A user-space NFS server for the tests of fsbench's NFS client: NFS-Ganesha with its VFS
//! back end, exporting a fresh temporary directory on free loopback ports (NFSv3 and v4,
//! no grace period). Started by hand here; it will use `fsbench nfs create` once that
//! exists. Everything it started is killed when it is dropped.

use super::common;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One server at a time: they share rpcbind, and each takes two cores' worth of start-up.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A running Ganesha and its export.
pub struct Server {
    _serial: MutexGuard<'static, ()>,
    dir: common::Scratch,
    ganesha: Child,
    /// rpcbind, when this server started it (none was running).
    rpcbind: Option<u32>,
    pub nfs_port: u16,
    pub mnt_port: u16,
}

/// A free TCP port on the loopback.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
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

fn rpcbind_running() -> bool {
    std::net::TcpStream::connect_timeout(
        &"127.0.0.1:111".parse().unwrap(),
        Duration::from_millis(300),
    )
    .is_ok()
}

fn config(export: &Path, nfs_port: u16, mnt_port: u16) -> String {
    format!(
        "NFS_CORE_PARAM {{
    Protocols = 3, 4;
    NFS_Port = {nfs_port};
    MNT_Port = {mnt_port};
    Bind_addr = 127.0.0.1;
    Enable_NLM = false;
    Enable_RQUOTA = false;
}}
NFSv4 {{
    Graceless = true;
}}
NFS_KRB5 {{
    Active_krb5 = false;
}}
EXPORT {{
    Export_Id = 77;
    Path = {export};
    Pseudo = /export;
    Protocols = 3, 4;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    FSAL {{
        Name = VFS;
    }}
}}
LOG {{
    Default_Log_Level = WARN;
}}
",
        export = export.display()
    )
}

impl Server {
    /// Start a server, or say why the test is skipped (not root, Ganesha, rpcbind or libnfs
    /// missing) and return `None`.
    pub fn start(test: &str) -> Option<Server> {
        if !common::is_root() {
            common::skip(&format!("{test}: needs root (NFS-Ganesha's VFS back end)"));
            return None;
        }
        let (Some(ganesha), Some(rpcbind)) = (find("ganesha.nfsd"), find("rpcbind")) else {
            common::skip(&format!(
                "{test}: needs nfs-ganesha, nfs-ganesha-vfs and rpcbind"
            ));
            return None;
        };
        if !have_libnfs() || !common::have("nfs-ls") {
            common::skip(&format!("{test}: needs libnfs (libnfs13) and libnfs-utils"));
            return None;
        }
        let serial = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let rpcbind = if rpcbind_running() {
            None
        } else {
            start_rpcbind(&rpcbind)
        };
        let dir = common::Scratch::new("nfs");
        let export = dir.path().join("export");
        std::fs::create_dir(&export).unwrap();
        let (nfs_port, mnt_port) = (free_port(), free_port());
        let conf = dir.path().join("ganesha.conf");
        std::fs::write(&conf, config(&export, nfs_port, mnt_port)).unwrap();
        let child = Command::new(ganesha)
            .arg("-F")
            .arg("-f")
            .arg(&conf)
            .arg("-p")
            .arg(dir.path().join("ganesha.pid"))
            .arg("-L")
            .arg(dir.path().join("ganesha.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ganesha.nfsd starts");
        let s = Server {
            _serial: serial,
            dir,
            ganesha: child,
            rpcbind,
            nfs_port,
            mnt_port,
        };
        s.wait_ready();
        Some(s)
    }

    /// Wait until the export mounts (Ganesha answers MOUNT and NFS), up to a minute.
    fn wait_ready(&self) {
        let t0 = Instant::now();
        loop {
            let ok = Command::new("nfs-ls")
                .arg(self.url())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "NFS-Ganesha did not serve {} within a minute; its log:\n{}",
                self.url(),
                std::fs::read_to_string(self.dir.path().join("ganesha.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// The export's URL for libnfs (NFSv3, the ports given: no portmapper lookup).
    pub fn url(&self) -> String {
        format!(
            "nfs://127.0.0.1{}?nfsport={}&mountport={}&version=3",
            self.export().display(),
            self.nfs_port,
            self.mnt_port
        )
    }

    /// The exported directory on this machine.
    pub fn export(&self) -> PathBuf {
        self.dir.path().join("export")
    }
}

fn start_rpcbind(bin: &Path) -> Option<u32> {
    // -f: in the foreground, so this fixture holds its pid; -w: warm start.
    let child = Command::new(bin)
        .args(["-f", "-w"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let t0 = Instant::now();
    while !rpcbind_running() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(child.id())
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.ganesha.kill();
        let _ = self.ganesha.wait();
        if let Some(pid) = self.rpcbind.take() {
            // SAFETY: kill and waitpid on the rpcbind this fixture started (its child).
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGTERM);
                libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0);
            }
        }
    }
}
