//! The state directory of a simulated disk and the files in it.
//!
//! `$FSBENCH_STATE_DIR/NAME/` (default `/run/fsbench/disks/NAME/`) holds:
//!
//! | file          | written by | content                                          |
//! |---------------|------------|--------------------------------------------------|
//! | `config.json` | create     | [`DiskConfig`]: image, size, model parameters    |
//! | `server.pid`  | server     | the server's pid while it runs                   |
//! | `ready.json`  | server     | [`Ready`]: loop device, once it is attached      |
//! | `stats.json`  | server     | [`DiskStats`], rewritten every second and at exit |
//! | `server.log`  | server     | its stdout/stderr                                |
//! | `fuse/`       | server     | the FUSE mount point; `fuse/disk` is the file    |
//!
//! The image itself defaults to `/var/lib/fsbench/images/NAME.img` (not under
//! /run, which is often a small tmpfs).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::model::DiskParams;
use fsbench_base::daemon::owned::{FileId, MountRecord};
use fsbench_base::daemon::state::read_json;
use fsbench_base::daemon::{DaemonDir, Kind, Summary};

/// Simulated disks among fsbench's daemons.
pub const KIND: Kind = Kind {
    word: "disk",
    plural: "simulated disks",
    env: "FSBENCH_STATE_DIR",
    default_root: "/run/fsbench/disks",
    root_needs: "FUSE mount and loop devices",
};

/// Name of the single file the FUSE file system serves.
pub const FUSE_FILE: &str = "disk";

/// Default directory for images.
pub fn image_root() -> PathBuf {
    match std::env::var_os("FSBENCH_IMAGE_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from("/var/lib/fsbench/images"),
    }
}

/// Paths of one disk's state.
#[derive(Debug, Clone)]
pub struct StateDir(DaemonDir);

impl std::ops::Deref for StateDir {
    type Target = DaemonDir;
    fn deref(&self) -> &DaemonDir {
        &self.0
    }
}

impl StateDir {
    pub fn new(name: &str) -> anyhow::Result<StateDir> {
        KIND.dir(name).map(StateDir)
    }
    pub fn fuse_dir(&self) -> PathBuf {
        self.dir.join("fuse")
    }
    pub fn fuse_file(&self) -> PathBuf {
        self.fuse_dir().join(FUSE_FILE)
    }
    pub fn read_config(&self) -> anyhow::Result<DiskConfig> {
        read_json(&self.config())
    }
    pub fn read_ready(&self) -> Option<Ready> {
        read_json(&self.ready()).ok()
    }
    pub fn read_stats(&self) -> Option<DiskStats> {
        read_json(&self.stats()).ok()
    }
}

/// What `disk create` decided; the server reads it at start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiskConfig {
    pub name: String,
    pub image: PathBuf,
    pub size: u64,
    /// fsbench created the image (and deletes it on remove unless --keep).
    pub created_image: bool,
    pub params: DiskParams,
    /// File system made by --mkfs.
    pub mkfs: Option<String>,
    /// Where --mount mounted it (unmounted by remove).
    pub mount: Option<PathBuf>,
    /// That mount as /proc/self/mountinfo listed it right after mounting: remove and the
    /// server unmount only this mount, never another one made at the same point since.
    #[serde(default)]
    pub mount_record: Option<MountRecord>,
}

/// Written by the server once the loop device is attached.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ready {
    pub device: String,
    pub pid: i32,
    /// The loop device does direct I/O on the FUSE file.
    pub direct_io: bool,
    pub cylinders: u64,
    /// The FUSE file the loop device was attached to, by device and inode: a loop device
    /// is detached by remove only while this file backs it.
    #[serde(default)]
    pub backing: Option<FileId>,
    /// The server writes its statistics at once on SIGUSR1 (a server of an older fsbench
    /// would be ended by it).
    #[serde(default)]
    pub stats_on_request: bool,
    /// The loop device's queue settings before the server attached it, set back before it
    /// is detached (by the server, or by `remove` after a server that died).
    #[serde(default)]
    pub found_queue: Option<super::loopdev::QueueFound>,
}

/// Counters and latency split of a disk, written by the server.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DiskStats {
    pub uptime_s: f64,
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub fsyncs: u64,
    pub cache_hits: u64,
    pub streamed: u64,
    /// Sum of cylinders the arm travelled.
    pub head_travel_cylinders: u64,
    pub seeks: u64,
    /// Sum of modelled service times, s (the disk's busy time).
    pub busy_s: f64,
    /// Modelled service time per request and its parts, us.
    pub service_us: Summary,
    pub overhead_us: Summary,
    pub seek_us: Summary,
    pub rotation_us: Summary,
    pub transfer_us: Summary,
    /// Time a request waited for the disk (queueing in the drive), us.
    pub queue_us: Summary,
    /// Server's own cost: reply time past the modelled completion, us.
    pub server_late_us: Summary,
    /// Server's own cost: the pread/pwrite of the image, us.
    pub server_io_us: Summary,
    /// Server's own cost: wake-up after the modelled completion, before the reply, us.
    #[serde(default)]
    pub server_wake_us: Summary,
    /// Sum of every reply's lateness, s: with `requests` and `busy_s`, the mean lateness of
    /// any stretch of time from two snapshots.
    #[serde(default)]
    pub server_late_sum_s: f64,
    /// The lateness histogram as (value in us, count) pairs of its non-empty buckets, so that
    /// the percentiles of a stretch of time come from two snapshots.
    #[serde(default)]
    pub server_late_hist_us: Vec<(u64, u64)>,
    /// How many times the server wrote these statistics because it was asked to (SIGUSR1):
    /// a reader that asks waits for a count above the one it saw.
    #[serde(default)]
    pub written_on_request: u64,
    /// How the request path is scheduled: "SCHED_FIFO priority N" or why not.
    #[serde(default)]
    pub scheduling: String,
    /// Whether the server's memory is locked (mlockall), or why not.
    #[serde(default)]
    pub memory_locked: String,
}
