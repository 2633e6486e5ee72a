//! The costs the estimate adds up, and how fast each target's device is.
//!
//! Measured on the machine class fsbench is developed on (2 shared cores, a virtual disk,
//! 24 GiB of memory), as root, with loop devices and simulated disks: each constant says
//! how. Costs of the program's own work (starting a child, calibrating its clock, writing
//! its results) were measured on the release build; a debug build (`cargo test`) takes
//! [`DEBUG_CPU`] times as long for them.

use crate::experiment::plan::{Plan, TargetKind};
use fsbench_tools::disk::model::DiskParams;

/// How much longer the program's own work takes in a debug build: `fsbench run webserver
/// --duration 0.1` on tmpfs took 0.15 to 0.24 s release and 0.61 to 0.87 s debug (1 to 32
/// threads, best of three); `fsbench find` of 300 entries 0.03 and 0.08 s; `fsbench scan`
/// of them 0.01 and 0.03 s.
const DEBUG_CPU: f64 = 4.0;

/// The program's own work scaled to this build.
pub(super) fn cpu(s: f64) -> f64 {
    if cfg!(debug_assertions) {
        s * DEBUG_CPU
    } else {
        s
    }
}

/// A workload child's own time beyond its layout and measured window (`fsbench run`):
/// start, clock calibration, workers started and stopped, result assembly, JSON: 0.3 to
/// 0.75 s debug in the quick plans' runs, 0.9 s in the varmail run above less its 0.1 s,
/// on a busier machine; 0.23 to 0.3 s with the cache drop in the 0.5-s runs of the
/// deceptive-idleness plan on a quiet machine, once its simulated disk's statistics came
/// on request (they had cost a wait of a second or more).
pub(super) const WORKLOAD_CHILD_S: f64 = 0.075;
/// The other children's (postmark, find, build, ...): `fsbench find` above.
pub(super) const CHILD_S: f64 = 0.025;
/// `fsbench layout` and `fsbench scan` of a small tree: `fsbench scan` above.
pub(super) const TOOL_S: f64 = 0.015;
/// The runner's own part of each run: its memory cgroup, the load samples before and after,
/// storing the run (an SQLite commit): between the runs on images of the filebench-macro
/// plan's quick scale, 0.06 s (debug).
pub(super) const RUNNER_S: f64 = 0.015;
/// Before a run that does not start cold the runner commits what the last one left
/// (`syncfs`, its deletes): a journal commit and the bitmaps and directories it touched,
/// about 4 accesses; with it the gaps between runs on simulated disks were 0.16 to 0.23 s
/// (the deceptive-idleness, aging and lookaside plans' quick scales, debug).
pub(super) const SYNCFS_ACCESSES: f64 = 4.0;
/// `sync; echo 3 > /proc/sys/vm/drop_caches` with nothing dirty: 0.2 to 0.4 s on a busy
/// machine with much cached; 0.1 to 0.15 s between the quick plans' runs on a quiet one.
pub(super) const DROP_S: f64 = 0.2;
/// A create, unlink or mkdir in the page cache: 0.04 to 0.08 ms (a Python loop of creates of
/// 4 KiB files on ext4), 0.15 ms per file in a workload's layout (2,000 webproxy files in
/// 0.31 s, their data included).
pub(super) const META_S: f64 = 0.1e-3;
/// A file laid out or removed over NFS through libnfs (NFS-Ganesha on loopback): fileserver's
/// 1,000 files of 16 KiB laid out and removed in 3.5 to 4.5 s of a 6-s run (a debug build
/// at a load of 8), about 2 ms a file each way; 1.5 ms allows for a quieter machine.
pub(super) const NFS_META_S: f64 = 1.5e-3;
/// Bytes a second written into the page cache or read back from it: 1 GB/s.
pub(super) const CACHE_BPS: f64 = 1e9;
/// The host's disk under a loop-mounted image (direct I/O): 16 MiB written and fsynced at
/// 280 to 900 MiB/s, read cold at 480 to 540 MiB/s.
const HOST_READ_BPS: f64 = 500e6;
const HOST_WRITE_BPS: f64 = 300e6;
/// One synchronous directory update on an image: a create on ext4 without a journal mounted
/// `dirsync`, 0.8 ms.
const HOST_SYNC_WRITE_S: f64 = 0.8e-3;
/// An fsync of a small file on an image (a journal commit and the host's cache flushes):
/// 16 to 17.5 ms per 16 KiB file created, written and fsynced; a create mounted `dirsync`
/// with a journal, 8 ms (half of it).
const HOST_FSYNC_S: f64 = 16e-3;
/// The size of the writes that reach a simulated disk when the page cache is written back:
/// with this size and a lost revolution between two of them, the model's write rates match
/// the measured ones (16 MiB written and fsynced: 42 MiB/s on `hdd`, 33 on
/// `hdd-cheetah36lp`, 5.0 on `hdd-m2694es`).
const WRITEBACK_CHUNK: f64 = 512.0 * 1024.0;
/// Accesses an fsync of a small file costs on a simulated disk (its data, the inode and the
/// journal commit): 64 files of 16 KiB created, written and fsynced took 35 to 57 ms each,
/// 3 to 4 accesses of the model, and 47 ms each with a journal on `hdd-m2694es` (the aging
/// plan's write-16k).
const DISK_FSYNC_ACCESSES: f64 = 3.0;

/// How fast a target's device serves what a measurement asks of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Speed {
    /// Sequential bytes a second read from the device and written back to it.
    pub read_bps: f64,
    pub write_bps: f64,
    /// One positioning of the device: a small synchronous write or a random read.
    pub access_s: f64,
    /// An fsync of a small file beyond its data.
    pub fsync_s: f64,
    /// A create, unlink or mkdir: in the page cache, or written at once on a `dirsync` or
    /// `sync` mount.
    pub meta_s: f64,
    /// After each measured repetition on a simulated disk the child waits for the server's
    /// statistics that include the run's end ([`fsbench_tools::disk::lateness::STATS_WAIT_S`]).
    pub probe_s: f64,
}

impl Speed {
    /// The host's disk under an image or an existing directory.
    pub(super) fn host(sync_dirs: bool, journal: bool) -> Speed {
        Speed {
            read_bps: HOST_READ_BPS,
            write_bps: HOST_WRITE_BPS,
            access_s: HOST_SYNC_WRITE_S,
            fsync_s: HOST_FSYNC_S,
            meta_s: match (sync_dirs, journal) {
                (false, _) => META_S,
                (true, true) => HOST_FSYNC_S / 2.0,
                (true, false) => HOST_SYNC_WRITE_S,
            },
            probe_s: 0.0,
        }
    }

    /// A simulated disk of model `p`: its mean media rate for reads; for writes the same
    /// with a revolution lost between writeback chunks; an access is the average seek, the
    /// command overhead and half a revolution (a `dirsync` create on `hdd` took 12.8 ms,
    /// 8.5 + 0.1 + 4.2 modelled; 9.5 ms on `hdd-cheetah36lp`, 14.1 ms on `hdd-m2694es`).
    pub(super) fn disk(p: &DiskParams, sync_dirs: bool, journal: bool) -> Speed {
        let rev = 60.0 / p.rpm;
        let read_bps = (p.transfer_outer + p.transfer_inner) / 2.0 * 1e6;
        let access_s = (p.seek_avg_ms + p.overhead_ms) / 1000.0 + rev / 2.0;
        let fsync_s = DISK_FSYNC_ACCESSES * access_s;
        Speed {
            read_bps,
            write_bps: WRITEBACK_CHUNK / (WRITEBACK_CHUNK / read_bps + rev),
            access_s,
            fsync_s,
            meta_s: match (sync_dirs, journal) {
                (false, _) => META_S,
                (true, true) => fsync_s,
                (true, false) => access_s,
            },
            probe_s: fsbench_tools::disk::lateness::STATS_WAIT_S,
        }
    }

    /// A workload over an NFS target's URL (`nfs = true`): every create and removal of its
    /// layout and its cleanup is RPCs (a LOOKUP per directory of the path, then the call).
    pub(super) fn over_nfs() -> Speed {
        Speed {
            meta_s: NFS_META_S,
            ..Speed::host(false, true)
        }
    }

    /// The speed of target `name` of `plan`: an overlay's is the speed of the target it
    /// stands on, without the probe (its directory is on no simulated disk); a remote's
    /// local side is the host's.
    pub(super) fn of(plan: &Plan, name: &str) -> Speed {
        let Some(t) = plan.targets.iter().find(|t| t.name == name) else {
            return Speed::host(false, true);
        };
        match &t.kind {
            TargetKind::Dir { .. } | TargetKind::Remote { .. } | TargetKind::Nfs { .. } => {
                Speed::host(false, true)
            }
            TargetKind::Image {
                fs,
                mkfs_options,
                mount_options,
                ..
            } => Speed::host(sync_dirs(mount_options), journal(fs, mkfs_options)),
            TargetKind::Disk {
                fs,
                model,
                params,
                mkfs_options,
                mount_options,
                ..
            } => match disk_params(model, params) {
                Some(p) => Speed::disk(&p, sync_dirs(mount_options), journal(fs, mkfs_options)),
                None => Speed::host(sync_dirs(mount_options), journal(fs, mkfs_options)),
            },
            TargetKind::Overlay { over, .. } if over != name => Speed {
                probe_s: 0.0,
                ..Speed::of(plan, over)
            },
            TargetKind::Overlay { .. } => Speed::host(false, true),
        }
    }
}

/// A disk target's drive: its model with the plan's `fsbench disk create` options.
pub(super) fn disk_params(model: &str, params: &[(String, String)]) -> Option<DiskParams> {
    fsbench_tools::disk::cli::model_with(model, params).ok()
}

/// Whether directory updates are written at once (`dirsync`, or `sync` for everything).
fn sync_dirs(mount_options: &str) -> bool {
    mount_options
        .split(',')
        .any(|o| o.trim() == "dirsync" || o.trim() == "sync")
}

/// Whether the file system keeps a journal: ext4 unless made without one (`-O
/// ^has_journal`); xfs and btrfs always log.
fn journal(fs: &str, mkfs_options: &[String]) -> bool {
    !(fs.starts_with("ext") && mkfs_options.iter().any(|o| o.contains("^has_journal")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_speeds_match_the_measured_rates() {
        // Measured: 16 MiB written and fsynced, read back cold; a dirsync create.
        for (model, write_mib_s, read_mib_s, create_ms) in [
            ("hdd", 42.1, 91.0, 12.8),
            ("hdd-cheetah36lp", 32.9, 48.9, 9.5),
            ("hdd-m2694es", 4.96, 5.49, 14.1),
        ] {
            let s = Speed::disk(&DiskParams::preset(model).unwrap(), true, false);
            let mib = 1024.0 * 1024.0;
            let near = |a: f64, b: f64| (a / b - 1.0).abs() < 0.25;
            assert!(near(s.write_bps / mib, write_mib_s), "{model}: {s:?}");
            assert!(near(s.read_bps / mib, read_mib_s), "{model}: {s:?}");
            assert!(near(s.meta_s * 1000.0, create_ms), "{model}: {s:?}");
        }
    }

    #[test]
    fn plan_options_change_a_disk_model() {
        let p = disk_params("hdd", &[("rpm".into(), "15000".into())]).unwrap();
        assert_eq!(p.rpm, 15000.0);
        let p = disk_params("hdd", &[("seek_avg".into(), "4ms".into())]).unwrap();
        assert_eq!(p.seek_avg_ms, 4.0);
        assert_eq!(disk_params("hdd", &[]).unwrap().rpm, 7200.0);
        assert!(disk_params("no-such-model", &[]).is_none());
    }
}
