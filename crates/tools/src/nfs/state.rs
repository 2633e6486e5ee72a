//! The state of fsbench's NFS servers: one directory per server, and the few files all of
//! them share.
//!
//! `$FSBENCH_NFS_STATE_DIR/NAME/` (default `/run/fsbench/nfs/NAME/`) holds:
//!
//! | file           | written by   | content                                                |
//! |----------------|--------------|--------------------------------------------------------|
//! | `config.json`  | create       | [`NfsConfig`]: what was made, step by step, and ports  |
//! | `ganesha.conf` | create       | NFS-Ganesha's configuration (first line: [`CONF_MARK`]) |
//! | `ganesha.pid`  | ganesha      | its pid file                                           |
//! | `ganesha.log`  | ganesha      | its log (and its standard output and error)            |
//! | `recovery/`    | ganesha      | its NFSv4 recovery directory                           |
//! | `mnt/`         | create       | where an `--image` file system is mounted              |
//!
//! `config.json` is rewritten after every step `create` takes (image made, loop device
//! attached, file system mounted, directory made, ganesha started), so `remove` undoes
//! exactly what was done, also after a crash half-way.
//!
//! What every server shares lives in `/run/fsbench/` whatever the state directory: the lock
//! that serialises starting and stopping (rpcbind and ganesha's registrations with it are
//! the machine's, not one state directory's) and the record of an rpcbind fsbench started.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use fsbench_base::daemon::owned::{FileId, MountRecord};
use fsbench_base::daemon::state::{read_json, write_json_atomic};

/// The first line of every `ganesha.conf` fsbench writes: a ganesha whose `-f` file starts
/// with it is one of fsbench's (rpcbind registrations on its ports are fsbench's).
pub const CONF_MARK: &str = "# fsbench nfs server";

/// The marker file in the directory fsbench makes inside a `--dir` (beside the export).
pub const MARKER: &str = ".fsbench-nfs";
/// The marker's first bytes.
pub const MARKER_HEADER: &str = "fsbench nfs export";

/// Root of all NFS servers' state directories.
pub fn state_root() -> PathBuf {
    KIND.state_root()
}

/// NFS servers among fsbench's daemons (their names and state directories).
pub const KIND: fsbench_base::daemon::Kind = fsbench_base::daemon::Kind {
    word: "nfs",
    plural: "NFS servers",
    env: "FSBENCH_NFS_STATE_DIR",
    default_root: "/run/fsbench/nfs",
    root_needs: "loop devices, mounts, rpcbind and NFS-Ganesha",
};

/// Where the files every server shares live (the start lock, the rpcbind record).
pub fn shared_dir() -> PathBuf {
    PathBuf::from("/run/fsbench")
}

/// Paths of one server's state.
#[derive(Debug, Clone)]
pub struct StateDir {
    pub dir: PathBuf,
}

impl StateDir {
    pub fn new(name: &str) -> anyhow::Result<StateDir> {
        KIND.check_name(name)?;
        Ok(StateDir {
            dir: state_root().join(name),
        })
    }
    pub fn config(&self) -> PathBuf {
        self.dir.join("config.json")
    }
    pub fn ganesha_conf(&self) -> PathBuf {
        self.dir.join("ganesha.conf")
    }
    pub fn pid_file(&self) -> PathBuf {
        self.dir.join("ganesha.pid")
    }
    pub fn log(&self) -> PathBuf {
        self.dir.join("ganesha.log")
    }
    pub fn recovery(&self) -> PathBuf {
        self.dir.join("recovery")
    }
    pub fn mnt(&self) -> PathBuf {
        self.dir.join("mnt")
    }
    pub fn read_config(&self) -> anyhow::Result<NfsConfig> {
        read_json(&self.config())
    }
    pub fn write_config(&self, c: &NfsConfig) -> anyhow::Result<()> {
        write_json_atomic(&self.config(), c)
    }
}

/// A process fsbench started, as it was when started: signalled only while the pid still
/// names a process that began at the same moment (a reused pid is someone else's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcId {
    pub pid: i32,
    /// Field 22 of /proc/PID/stat: when it started, in clock ticks after boot.
    pub start: u64,
}

impl ProcId {
    /// The live process `pid` as it is now (`None` when it is gone or a zombie).
    pub fn of(pid: i32) -> Option<ProcId> {
        if !fsbench_base::daemon::process::pid_alive(pid) {
            return None;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after = &stat[stat.rfind(')')? + 1..];
        let start = after.split_whitespace().nth(19)?.parse().ok()?;
        Some(ProcId { pid, start })
    }

    /// Whether the recorded process still runs (same pid, same start).
    pub fn alive(&self) -> bool {
        ProcId::of(self.pid) == Some(*self)
    }

    /// The process's command name (`/proc/PID/comm`).
    pub fn comm(&self) -> String {
        std::fs::read_to_string(format!("/proc/{}/comm", self.pid))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    }

    /// Its arguments (`/proc/PID/cmdline`).
    pub fn args(&self) -> Vec<String> {
        std::fs::read(format!("/proc/{}/cmdline", self.pid))
            .map(|b| {
                b.split(|&c| c == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// NFS protocol version the server speaks (and the client URL names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Version {
    #[value(name = "3")]
    #[serde(rename = "3")]
    V3,
    #[value(name = "4")]
    #[serde(rename = "4")]
    V4,
}

impl Version {
    pub fn number(self) -> u32 {
        match self {
            Version::V3 => 3,
            Version::V4 => 4,
        }
    }
}

/// The image file system under an `--image` export, as far as `create` got.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ImageRecord {
    pub image: PathBuf,
    pub size: u64,
    pub fs: String,
    /// The image file fsbench created (by device and inode): deleted only while it is still
    /// this file.
    pub image_id: Option<FileId>,
    /// The loop device it was attached to (with autoclear: it goes with the last user).
    pub loop_dev: Option<String>,
    /// The image as the loop driver reported it backing `loop_dev` (device and inode): the
    /// device is detached only while it is still backed by this file.
    pub loop_backing: Option<FileId>,
    /// The mount fsbench made on `STATE/mnt`.
    pub mount: Option<MountRecord>,
}

/// The directory fsbench made inside the user's `--dir` (`DIR/fsbench-nfs-NAME`), marked.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DirRecord {
    /// The user's directory, canonical: never exported, never removed.
    pub parent: PathBuf,
    /// `parent/fsbench-nfs-NAME`, made by fsbench.
    pub base: PathBuf,
    pub base_id: Option<FileId>,
}

/// Where the exported directory lives.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum BackingRecord {
    Image(Box<ImageRecord>),
    Dir(DirRecord),
}

/// What `nfs create` decided and did, rewritten after each step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NfsConfig {
    pub name: String,
    pub version: Version,
    pub backing: BackingRecord,
    /// The exported directory (made by fsbench, empty when made).
    pub export: PathBuf,
    /// The export's path in the server's pseudo file system: `/NAME`.
    pub pseudo: String,
    pub nfs_port: u16,
    /// The MOUNT protocol's port (NFSv3 only).
    pub mount_port: Option<u16>,
    /// The ganesha fsbench started, once started.
    pub ganesha: Option<ProcId>,
    /// When the export first answered: the server is ready.
    #[serde(default)]
    pub ready: bool,
}

impl NfsConfig {
    /// The URL a libnfs client (libnfs 4.0) uses: `nfs://127.0.0.1/NAME?nfsport=P&mountport=M&version=3`.
    pub fn url(&self) -> String {
        let mut u = format!("nfs://127.0.0.1{}?nfsport={}", self.pseudo, self.nfs_port);
        if let Some(m) = self.mount_port {
            u.push_str(&format!("&mountport={m}"));
        }
        u.push_str(&format!("&version={}", self.version.number()));
        u
    }
}

/// The ports the server listens on.
pub fn ports_of(c: &NfsConfig) -> Vec<u16> {
    std::iter::once(c.nfs_port).chain(c.mount_port).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(version: Version, mount_port: Option<u16>) -> NfsConfig {
        NfsConfig {
            name: "n".into(),
            version,
            backing: BackingRecord::Image(Box::default()),
            export: "/x".into(),
            pseudo: "/n".into(),
            nfs_port: 2050,
            mount_port,
            ganesha: None,
            ready: false,
        }
    }

    #[test]
    fn urls_name_the_ports_and_the_version() {
        assert_eq!(
            cfg(Version::V3, Some(2051)).url(),
            "nfs://127.0.0.1/n?nfsport=2050&mountport=2051&version=3"
        );
        assert_eq!(
            cfg(Version::V4, None).url(),
            "nfs://127.0.0.1/n?nfsport=2050&version=4"
        );
    }

    #[test]
    fn this_process_is_identified_by_its_start() {
        let me = ProcId::of(std::process::id() as i32).unwrap();
        assert!(me.alive());
        let other = ProcId {
            pid: me.pid,
            start: me.start + 1,
        };
        assert!(
            !other.alive(),
            "a pid with another start time is not the same process"
        );
        assert!(!me.args().is_empty());
    }
}
