//! Experiment targets that keep the mechanism a study measures, end to end on the real
//! binary: the I/O scheduler set on every device fsbench makes and recorded per run (and a
//! plan that would mix schedulers unsaid refused), merged overlays, simulated disks with
//! mkfs and mount options.

use crate::common::*;
use std::path::Path;

fn applied(out: &Path, measurement: &str) -> Vec<(String, serde_json::Value, Option<String>)> {
    let db = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let mut q = db
        .prepare(
            "SELECT r.status, r.applied_json, r.error FROM runs r JOIN cells c ON c.id = r.cell_id \
             WHERE c.measurement = ?1 ORDER BY r.id",
        )
        .unwrap();
    q.query_map([measurement], |r| {
        let a: String = r.get(1)?;
        Ok((
            r.get(0)?,
            serde_json::from_str(&a).unwrap(),
            r.get::<_, Option<String>>(2)?,
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

const MIXED: &str = r#"[experiment]
name = "mixed"
repetitions = 1

[[target]]
name = "idling"
kind = "image"
size = "64M"
fs = "ext4"
[target.device]
scheduler = "bfq"

[[target]]
name = "plain"
kind = "image"
size = "64M"
fs = "ext4"

[factors]
target = ["idling", "plain"]

[[measurement]]
name = "walk"
kind = "find"
"#;

/// Cells that would run under different I/O schedulers without the plan saying so are
/// refused before anything is set up, at the target that names none; naming it, or making
/// the scheduler a factor, says so.
#[test]
fn a_plan_mixing_schedulers_unsaid_is_refused_with_its_place() {
    let s = Scratch::new("sched-mixed");
    let p = s.path().join("p.toml");
    std::fs::write(&p, MIXED).unwrap();
    let o = run(&["experiment", p.to_str().unwrap(), "--dry-run"]);
    assert!(!o.status.success(), "{}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("p.toml:13:1: target plain would run under the I/O scheduler `none`"),
        "{e}"
    );
    assert!(e.contains("while target idling runs under `bfq`"), "{e}");
    let named = MIXED.replace(
        "fs = \"ext4\"\n\n[factors]",
        "fs = \"ext4\"\n[target.device]\nscheduler = \"none\"\n\n[factors]",
    );
    std::fs::write(&p, named).unwrap();
    let o = run(&["experiment", p.to_str().unwrap(), "--dry-run"]);
    assert!(o.status.success(), "{}", text(&o));
}

/// Every image's scheduler is set (none, as the plan names none) and each run records the
/// scheduler it ran under; a run during which something else changed it fails, saying so.
#[test]
fn a_run_records_its_scheduler_and_fails_when_it_changes() {
    if !loop_devices_or_skip("a_run_records_its_scheduler_and_fails_when_it_changes") {
        return;
    }
    let s = Scratch::new("sched-run");
    let p = s.path().join("p.toml");
    std::fs::write(
        &p,
        r#"[experiment]
name = "sched"
repetitions = 1
order = "interleaved"

[[target]]
name = "img"
kind = "image"
size = "64M"
fs = "ext4"

[[background]]
name = "meddler"
factor = "other"
kind = "command"
command = ["sh", "-c", "sleep 0.3; d=$(findmnt -no SOURCE {target}); echo bfq > /sys/block/${d#/dev/}/queue/scheduler"]
stop = "end"

[[measurement]]
name = "quiet"
kind = "workload"
params = { workload = "fileserver", nfiles = 50, filesize = "4k", nthreads = 1, duration = 1 }

[[measurement]]
name = "meddled"
kind = "workload"
params = { workload = "fileserver", nfiles = 50, filesize = "4k", nthreads = 1, duration = 1.5 }
factors = { other = ["meddler"] }
"#,
    )
    .unwrap();
    let out = s.path().join("out");
    let o = run(&[
        "experiment",
        p.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let quiet = applied(&out, "quiet");
    assert_eq!(quiet.len(), 1, "{}", text(&o));
    let (status, a, _) = &quiet[0];
    assert_eq!(status, "ok", "{}", text(&o));
    assert_eq!(a["settings"]["scheduler"], "none", "{a}");
    assert_eq!(a["scheduler"]["active"], "none", "{a}");
    assert_eq!(a["scheduler"]["set"], "none", "{a}");
    let meddled = applied(&out, "meddled");
    let (status, _, error) = &meddled[0];
    assert_eq!(status, "failed", "{}", text(&o));
    assert!(
        error
            .as_deref()
            .unwrap_or_default()
            .contains("changed from none to bfq during the measurement"),
        "{error:?}"
    );
    assert!(!o.status.success(), "a failed run fails the experiment");
    assert!(!out.join("images/img.img").exists());
}

/// A merged overlay: the tree a find measurement walks lies in the lower layer, each of its
/// directories also in the upper layer (which holds no file of the tree), so every
/// directory of the merged view is merged. Walked through the overlay and, through the
/// target under it, layer by layer.
#[test]
fn a_merged_overlay_has_its_tree_below_and_its_directories_in_both_layers() {
    if !loop_devices_or_skip(
        "a_merged_overlay_has_its_tree_below_and_its_directories_in_both_layers",
    ) {
        return;
    }
    let s = Scratch::new("merged");
    let base = s.path().join("base");
    std::fs::create_dir(&base).unwrap();
    let p = s.path().join("p.toml");
    std::fs::write(
        &p,
        format!(
            r#"[experiment]
name = "merged"
repetitions = 1

[[target]]
name = "base"
kind = "dir"
path = "{}"

[[target]]
name = "m"
kind = "overlay"
over = "base"
merged = true

[factors]
target = ["base", "m"]

[[measurement]]
name = "walk"
kind = "find"
params = {{ tree_files = 40, tree_dirs = 9 }}

[[measurement]]
name = "lower"
kind = "find"
params = {{ path = "fsbench-overlay-m/lower/fsbench-tree-walk" }}

[[measurement]]
name = "upper"
kind = "find"
params = {{ path = "fsbench-overlay-m/upper/fsbench-tree-walk" }}

[[exclude]]
measurement = "walk"
target = "base"

[[exclude]]
measurement = ["lower", "upper"]
target = "m"
"#,
            base.display()
        ),
    )
    .unwrap();
    let out = s.path().join("out");
    experiment_ok(&p, &out);
    let db = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let fig = |m: &str, f: &str| -> f64 {
        db.query_row(
            "SELECT f.value FROM figures f JOIN runs r ON r.id = f.run_id JOIN cells c ON c.id = r.cell_id \
             WHERE c.measurement = ?1 AND f.flowop = '' AND f.figure = ?2",
            [m, f],
            |r| r.get(0),
        )
        .unwrap_or_else(|e| panic!("{m} {f}: {e}"))
    };
    // 40 files and the marker; 9 directories in 3 top-level ones, and the root.
    assert_eq!(fig("walk", "files"), 41.0);
    assert_eq!(fig("lower", "files"), 41.0);
    assert_eq!(
        fig("upper", "files"),
        1.0,
        "the upper layer holds only its marker"
    );
    assert_eq!(fig("lower", "dirs"), fig("upper", "dirs"));
    assert_eq!(fig("walk", "dirs"), fig("lower", "dirs"));
    // Every directory merged: the tree's root and the directories `find` counts below it.
    let a = &applied(&out, "walk")[0].1;
    assert_eq!(
        a["settings"]["merged_dirs/fsbench-tree-walk"].as_f64(),
        Some(fig("upper", "dirs") + 1.0),
        "{a}"
    );
    // Torn down: unmounted, the layers removed, the directory as it was.
    assert!(std::fs::read_dir(&base).unwrap().next().is_none());
}

/// A simulated disk takes `mkfs_options` and `mount_options` as an image does: made without
/// a journal and mounted `dirsync` (the stand-in for UFS without logging), read back.
#[test]
fn a_simulated_disk_is_made_and_mounted_with_the_plans_options() {
    if !loop_devices_or_skip("a_simulated_disk_is_made_and_mounted_with_the_plans_options")
        || !Path::new("/dev/fuse").exists()
    {
        return;
    }
    let s = Scratch::new("disk-opts");
    let p = s.path().join("p.toml");
    std::fs::write(
        &p,
        r#"[experiment]
name = "disk"
repetitions = 1

[[target]]
name = "nolog"
kind = "disk"
model = "hdd-cheetah36lp"
size = "64M"
fs = "ext4"
mkfs_options = ["-O", "^has_journal"]
mount_options = "noatime,dirsync"

[[measurement]]
name = "walk"
kind = "find"
params = { tree_files = 20 }
"#,
    )
    .unwrap();
    let out = s.path().join("out");
    experiment_ok(&p, &out);
    let a = &applied(&out, "walk")[0].1["settings"];
    let mkfs = a["mkfs"].as_str().unwrap();
    assert!(
        mkfs.contains("lazy_itable_init=0") && mkfs.ends_with("-O ^has_journal"),
        "{a}"
    );
    assert!(
        !a["ext4 filesystem features"]
            .as_str()
            .unwrap()
            .contains("has_journal"),
        "{a}"
    );
    let opts = a["mount_options"].as_str().unwrap();
    assert!(opts.contains("dirsync") && opts.contains("noatime"), "{a}");
    assert_eq!(a["disk_model"], "hdd-cheetah36lp", "{a}");
    assert_eq!(a["scheduler"], "none", "{a}");
    let o = run(&["disk", "list"]);
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("fsbx-nolog"),
        "{}",
        text(&o)
    );
}
