//! Setting up and tearing down the targets: images, simulated disks, overlays, remotes,
//! aging, and the trees `find`, `read` and `scan` cells walk.

use super::super::{tree_dir_name, Cell};
use super::rates::{cpu, Speed, CACHE_BPS, META_S};
use crate::experiment::plan::{Age, AgePer, Measurement, Plan, Target, TargetKind};

/// An image: sparse file, loop device, `mkfs` and mount: 0.04 to 0.15 s for ext4, xfs and
/// btrfs of 512 MiB to 2 GiB (the filesystems and filebench-macro plans' logs).
const IMAGE_S: f64 = 0.15;
/// Unmounting, detaching and deleting an image: 0.03 to 0.1 s.
const IMAGE_DOWN_S: f64 = 0.05;
/// A simulated disk: `fsbench disk create`, mount, `dumpe2fs`: 0.3 s, and what `mkfs` writes
/// through the model (its inode tables zeroed out of band): about 2.5 MB, 1.0 to 1.5 s on a
/// 128 MiB `hdd-m2694es` (1 KiB blocks), 0.45 s on 1 GiB, 0.3 s on 128 MiB to 5 GiB of
/// `hdd`.
const DISK_S: f64 = 0.3;
const MKFS_BYTES: f64 = 2.5e6;
/// `fsbench disk remove` after the unmount: 0.1 to 0.4 s.
const DISK_DOWN_S: f64 = 0.25;
/// An overlay mount, or a remote's server started with its tree generated: 0.02 and 0.08 s.
const OVERLAY_S: f64 = 0.02;
const REMOTE_S: f64 = 0.1;
/// Starting NFS-Ganesha until its export answers, or stopping it (`fsbench nfs create` of a
/// directory took 0.3 s here, rpcbind started with it; `remove` 0.1 s).
const NFS_S: f64 = 0.3;
/// `fsbench age` with profile `agrawal` on a plain 128 MiB image, writeback `range` (each
/// write waited for): filling 70% took 1,098 operations (74 KB each), 974 files of 83 KB
/// left; with 5,000 churn operations more, 1,200 operations a second release, 700 to 980
/// debug (the waits for the host's disk, not the program, set the pace); on 1 GiB, 918 a
/// second release (9,122 to fill 70%, then 20,000), 3,800 when the machine was not shared.
const AGE_FILL_OP_BYTES: f64 = 74e3;
const AGE_FILE_BYTES: f64 = 83e3;
const AGE_OPS_PER_S: f64 = 1_000.0;
/// Its start and the layout it scores before and after: 0.1 s.
const AGE_FIXED_S: f64 = 0.1;
/// Creates are this share of aging's operations (3,186 of 6,097 in the run above, the fill's
/// included): the files the last days wrote.
const AGE_CREATE_SHARE: f64 = 0.55;
/// At most this share of the population is that recent: `agrawal`'s file ages keep about a
/// third of the files old (the last 30 days wrote 63% and 68% of the live files after
/// 5,000 and 1,000 churn operations of 50 a day).
const AGE_RECENT_MOST: f64 = 0.65;
/// Without `ops`, aging churns until its distributions converge: about five turnovers of
/// the population (5,000 operations for 1,000 files above).
const AGE_TURNOVERS: f64 = 5.0;
/// A made tree's directories written back from the page cache cost half an access each
/// (their blocks and inodes lie close together): the stacked plan's three trees of 163
/// directories and 600 files on ext4 took 3.1 s to write back on `hdd-cheetah36lp`.
const DIR_WRITEBACK_ACCESS: f64 = 0.5;
/// The mean size of a made tree's files when the plan gives none (1 to 8 KiB).
const TREE_FILE_BYTES: f64 = 4608.0;

/// What setting up the targets once costs, and tearing them down.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct SetUp {
    pub targets_s: f64,
    pub aging_s: f64,
    pub trees_s: f64,
    pub teardown_s: f64,
    /// Aging again before each further round (`per = "repetition"`).
    pub per_round_s: f64,
}

impl SetUp {
    pub fn total(&self) -> f64 {
        self.targets_s + self.aging_s + self.trees_s + self.teardown_s
    }
}

/// Copying an aged image kept for `--resume` into place: its blocks read and written on the
/// host's disk (a 1 GiB ext4 aged to 85%, 1,009 MiB allocated in its image, copied sparsely
/// and synced in 2.7 s here, caches dropped first).
const KEPT_COPY_BPS: f64 = 400e6;

/// Setting up the plan's targets for `cells` once, and tearing them down; aged disks whose
/// image an interrupted run kept in `outdir` are copied, not aged.
pub(super) fn of(plan: &Plan, cells: &[Cell], outdir: &std::path::Path) -> SetUp {
    let mut s = SetUp::default();
    let hash = plan.hash();
    for t in plan.targets_in_setup_order() {
        let (up, down) = target(t);
        s.targets_s += up;
        s.teardown_s += down;
        if let Some(a) = &t.age {
            let kept = matches!(t.kind, TargetKind::Disk { .. })
                && crate::experiment::target::disk::keeps_aged(plan, a)
                && matches!(
                    crate::experiment::target::kept::usable(outdir, &hash, &t.name),
                    Some(Ok(_))
                );
            if kept {
                s.aging_s += capacity(t).unwrap_or(0.0) / KEPT_COPY_BPS;
                continue;
            }
            let aged = aging_s(a, capacity(t));
            s.aging_s += aged;
            if a.per == AgePer::Repetition {
                s.per_round_s += aged;
            }
        }
    }
    let (made, removed) = trees(plan, cells);
    s.trees_s = made;
    s.teardown_s += removed;
    s
}

/// Seconds to set up target `t` and to tear it down.
fn target(t: &Target) -> (f64, f64) {
    match &t.kind {
        TargetKind::Dir { .. } => (0.0, 0.0),
        TargetKind::Image { .. } => (IMAGE_S, IMAGE_DOWN_S),
        TargetKind::Disk { model, params, .. } => {
            let up = match (&t.age, super::rates::disk_params(model, params)) {
                // Made on its image first, aged there, then served by the model.
                (Some(_), _) => IMAGE_S + DISK_S,
                (None, Some(p)) => DISK_S + MKFS_BYTES / Speed::disk(&p, false, true).write_bps,
                (None, None) => DISK_S,
            };
            (up, DISK_DOWN_S + IMAGE_DOWN_S)
        }
        TargetKind::Overlay { .. } => (OVERLAY_S, OVERLAY_S),
        TargetKind::Remote { .. } => (REMOTE_S, OVERLAY_S),
        TargetKind::Nfs { image: None, .. } => (NFS_S, NFS_S),
        TargetKind::Nfs { image: Some(_), .. } => (NFS_S + IMAGE_S, NFS_S + IMAGE_DOWN_S),
    }
}

/// The bytes a target holds, when the plan says (an image or a disk).
fn capacity(t: &Target) -> Option<f64> {
    match &t.kind {
        TargetKind::Image { size, .. } | TargetKind::Disk { size, .. } => Some(*size as f64),
        _ => None,
    }
}

/// The bytes an aging fills `capacity` with, its files and its churn operations.
fn aging_counts(a: &Age, capacity: Option<f64>) -> (f64, f64, f64) {
    let num = |k: &str| a.get(k).and_then(|v| v.parse::<f64>().ok());
    let filled = capacity.map_or(0.0, |c| c * num("fill").unwrap_or(0.8));
    let files = filled / AGE_FILE_BYTES;
    let churn = num("ops").unwrap_or(files * AGE_TURNOVERS);
    (filled, files, churn)
}

/// `fsbench age` on a plain image of `capacity` bytes: its fill's operations and its
/// churn's. A `from_scan` tree's scan is not counted (its size is not known before it is
/// scanned).
fn aging_s(a: &Age, capacity: Option<f64>) -> f64 {
    let (filled, _, churn) = aging_counts(a, capacity);
    cpu(AGE_FIXED_S) + (filled / AGE_FILL_OP_BYTES + churn) / AGE_OPS_PER_S
}

/// The aged population of target `name`: its files.
pub(super) fn aged_files(plan: &Plan, name: &str) -> Option<f64> {
    let t = plan.targets.iter().find(|t| t.name == name)?;
    Some(aging_counts(t.age.as_ref()?, capacity(t)).1)
}

/// Whether target `name` is a file system the runner makes (not an existing directory or
/// a remote's served tree), directly or under an overlay.
pub(super) fn made_here(plan: &Plan, name: &str) -> bool {
    match plan
        .targets
        .iter()
        .find(|t| t.name == name)
        .map(|t| &t.kind)
    {
        Some(TargetKind::Image { .. } | TargetKind::Disk { .. }) => true,
        Some(TargetKind::Overlay { over, .. }) if over != name => made_here(plan, over),
        _ => false,
    }
}

/// The files the last `days` of target `name`'s aging wrote, and their bytes.
pub(super) fn recent_files(plan: &Plan, name: &str, days: f64) -> Option<(f64, f64)> {
    let t = plan.targets.iter().find(|t| t.name == name)?;
    let a = t.age.as_ref()?;
    let (_, files, churn) = aging_counts(a, capacity(t));
    let day_ops = a
        .get("day_ops")
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(fsbench_tools::age::record::DAY_OPS as f64);
    let recent = (days * day_ops).min(files + churn) * AGE_CREATE_SHARE;
    let n = recent.min(files * AGE_RECENT_MOST);
    Some((n, n * AGE_FILE_BYTES))
}

/// The `last` files target `name`'s aging wrote last (`fsbench hot --files`), at most its
/// population, and their bytes.
pub(super) fn last_files(plan: &Plan, name: &str, last: f64) -> Option<(f64, f64)> {
    let n = last.min(aged_files(plan, name)?);
    Some((n, n * AGE_FILE_BYTES))
}

/// A tree a `find`, `read` or `scan` measurement walks, made at set-up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Tree {
    pub files: f64,
    /// Leaf directories (the tree puts them under the square root of their number of
    /// top directories).
    pub leaf_dirs: f64,
    pub file_bytes: f64,
}

impl Tree {
    pub fn dirs(&self) -> f64 {
        self.leaf_dirs + self.leaf_dirs.sqrt().ceil() + 1.0
    }

    pub fn entries(&self) -> f64 {
        self.files + self.dirs()
    }
}

/// The tree measurement `m` makes (`tree_files`), or the one of another measurement it
/// walks (its `path` names that tree's directory).
pub(super) fn made_tree(plan: &Plan, m: &Measurement) -> Option<Tree> {
    let get = |m: &Measurement, k: &str| {
        m.params
            .iter()
            .find(|(pk, _)| pk == k)
            .and_then(|(_, v)| fsbench_base::units::parse_size(v).ok())
            .map(|b| b as f64)
    };
    let maker = match get(m, "tree_files") {
        Some(_) => m,
        None => {
            let path = &m.params.iter().find(|(k, _)| k == "path")?.1;
            plan.measurements.iter().find(|o| {
                o.kind.makes_tree()
                    && get(o, "tree_files").is_some()
                    && &tree_dir_name(&o.name) == path
            })?
        }
    };
    Some(Tree {
        files: get(maker, "tree_files")?,
        leaf_dirs: get(maker, "tree_dirs").unwrap_or(10.0).max(1.0),
        file_bytes: get(maker, "tree_file_size").unwrap_or(TREE_FILE_BYTES),
    })
}

/// Making each cell's tree once per target at set-up, and removing them at teardown (unless
/// they go with their simulated disk): a merged overlay's tree lies in its lower layer with
/// every directory also in the upper one, both on the target under it.
fn trees(plan: &Plan, cells: &[Cell]) -> (f64, f64) {
    let mut seen: Vec<(usize, &str)> = Vec::new();
    let (mut made, mut removed) = (0.0, 0.0);
    let needed = cells.iter().flat_map(|c| {
        crate::experiment::runner::trees_needed(plan, c)
            .into_iter()
            .map(move |i| (c, i))
    });
    for (c, i) in needed {
        let m = &plan.measurements[i];
        if seen.contains(&(i, c.target.as_str())) {
            continue;
        }
        seen.push((i, c.target.as_str()));
        let Some(tree) = made_tree(plan, m) else {
            continue;
        };
        let speed = Speed::of(plan, &c.target);
        let meta = speed.meta_s.max(META_S);
        let merged = matches!(
            plan.targets
                .iter()
                .find(|t| t.name == c.target)
                .map(|t| &t.kind),
            Some(TargetKind::Overlay { merged: true, .. })
        );
        let dirs = tree.dirs() + if merged { tree.dirs() } else { 0.0 };
        let bytes = tree.files * tree.file_bytes;
        made += (tree.files + dirs) * meta + bytes / CACHE_BPS;
        // Written back before the first run on the target (the runner's `syncfs`, or a cold
        // child's `sync`): the files' data, and the directories not written at once.
        made += bytes / speed.write_bps;
        if speed.meta_s <= META_S {
            made += dirs * speed.access_s * DIR_WRITEBACK_ACCESS;
        }
        // A tree on a simulated disk goes with the disk at teardown, not file by file.
        if !on_a_disk(plan, &c.target) {
            removed += (tree.files + dirs) * meta;
        }
    }
    (made, removed)
}

/// Whether target `name` lies on a simulated disk fsbench makes (directly, or an overlay
/// over one).
fn on_a_disk(plan: &Plan, name: &str) -> bool {
    match plan
        .targets
        .iter()
        .find(|t| t.name == name)
        .map(|t| &t.kind)
    {
        Some(TargetKind::Disk { .. }) => true,
        Some(TargetKind::Overlay { over, .. }) if over != name => on_a_disk(plan, over),
        _ => false,
    }
}
