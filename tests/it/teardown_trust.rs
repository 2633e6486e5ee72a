//! `fsbench experiment --cleanup`, disk and remote removal, and plan options must never undo
//! what fsbench did not do: a forged or stale journal, a mount point or loop device number
//! taken over by someone else, options naming another device. Each test leaves a sentinel
//! (a file, a loop device, a mount) outside what fsbench made and checks it is unchanged.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn have_loop_tools(what: &str) -> bool {
    let have = is_root()
        && Path::new("/dev/loop-control").exists()
        && run_ok("sh", &["-c", "command -v mkfs.ext4 && command -v losetup"]).is_ok();
    if !have {
        skip(&format!("{what}: needs root, loop devices and mkfs.ext4"));
    }
    have
}

/// An output directory as an experiment leaves it: the marker, and `journal` as its
/// teardown journal.
fn outdir_with_journal(base: &Path, journal: &str) -> PathBuf {
    let out = base.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join(".fsbench-experiment"), b"").unwrap();
    std::fs::write(out.join("teardown.json"), journal).unwrap();
    out
}

/// Files and a marked tree outside the output directory, a file whose content a "restore"
/// would overwrite.
struct Victims {
    file: PathBuf,
    tree: PathBuf,
    config: PathBuf,
}

fn victims(base: &Path) -> Victims {
    let v = base.join("victims");
    std::fs::create_dir(&v).unwrap();
    let file = v.join("precious.txt");
    std::fs::write(&file, b"precious").unwrap();
    let tree = v.join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join(".fsbench-experiment-target"), b"").unwrap();
    std::fs::write(tree.join("data"), b"data").unwrap();
    let config = v.join("config");
    std::fs::write(&config, b"setting=1\n").unwrap();
    Victims { file, tree, config }
}

fn assert_untouched(v: &Victims) {
    assert_eq!(std::fs::read(&v.file).unwrap(), b"precious");
    assert_eq!(std::fs::read(v.tree.join("data")).unwrap(), b"data");
    assert_eq!(std::fs::read(&v.config).unwrap(), b"setting=1\n");
}

/// A journal as the previous format wrote it, and one in the present format, both naming the
/// victims; planted in an output directory anyone may write (and owned by another user),
/// neither is acted on.
#[test]
fn cleanup_refuses_a_journal_others_could_have_written() {
    let s = Scratch::new("trust-perm");
    let v = victims(s.path());
    let old_format = serde_json::json!([
        {"RemoveFile": v.file},
        {"RemoveMarkedTree": {"dir": v.tree, "marker": ".fsbench-experiment-target"}},
        {"Restore": {"path": v.config, "value": "setting=0\n"}},
    ])
    .to_string();
    let id = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(p).unwrap();
        serde_json::json!({"dev": m.dev(), "ino": m.ino()})
    };
    let new_format = serde_json::json!([
        {"RemoveFile": {"path": v.file, "id": id(&v.file)}},
        {"RemoveMarkedTree": {"dir": v.tree, "id": id(&v.tree), "marker": ".fsbench-experiment-target"}},
    ])
    .to_string();
    for (n, journal) in [old_format, new_format].iter().enumerate() {
        let base = s.path().join(format!("case{n}"));
        std::fs::create_dir(&base).unwrap();
        let out = outdir_with_journal(&base, journal);
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
        if is_root() {
            // Owned by another user, as a planted directory would be.
            std::os::unix::fs::chown(&out, Some(65534), Some(65534)).unwrap();
        }
        let o = run(&["experiment", "--cleanup", out.to_str().unwrap()]);
        assert!(!o.status.success(), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("not trusting"), "{err}");
        assert!(err.contains(out.to_str().unwrap()), "{err}");
        assert_untouched(&v);
    }
}

/// A journal only its owner could write still names nothing outside OUTDIR, and no setting
/// in a shape other than the ones fsbench records.
#[test]
fn cleanup_refuses_journal_steps_outside_outdir() {
    let s = Scratch::new("trust-steps");
    let v = victims(s.path());
    let id = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(p).unwrap();
        serde_json::json!({"dev": m.dev(), "ino": m.ino()})
    };
    let cases = [
        serde_json::json!([{"RemoveFile": {"path": v.file, "id": id(&v.file)}}]),
        serde_json::json!([{"Restore": {"disk": "../../../..", "devt": "0:0", "loop_backing": null,
            "knob": v.config.to_str().unwrap(), "value": "setting=0"}}]),
        serde_json::json!([{"RemoveDisk": {"name": "somebodys-disk", "mount": "/mnt"}}]),
        serde_json::json!([{"DetachLoop": {"dev": "/dev/sda", "backing": {"dev": 1, "ino": 2}}}]),
    ];
    for (n, journal) in cases.iter().enumerate() {
        let base = s.path().join(format!("case{n}"));
        std::fs::create_dir(&base).unwrap();
        let out = outdir_with_journal(&base, &journal.to_string());
        let o = run(&["experiment", "--cleanup", out.to_str().unwrap()]);
        assert!(!o.status.success(), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("not trusting"), "{err}");
        assert_untouched(&v);
    }
}

fn image_only_plan() -> String {
    r#"
[experiment]
name = "kill"
repetitions = 1

[[target]]
name = "ext4"
kind = "image"
size = "64M"
fs = "ext4"
[target.device]
read_ahead_kb = 256

[[measurement]]
name = "fs"
kind = "workload"
params = { workload = "fileserver", nfiles = 200, filesize = "4k", nthreads = 1, duration = 3 }
"#
    .to_string()
}

fn backing_file(dev: &str) -> Option<String> {
    let n = dev.trim_start_matches("/dev/");
    std::fs::read_to_string(format!("/sys/block/{n}/loop/backing_file"))
        .ok()
        .map(|s| s.trim().to_string())
}

fn mounted_at(p: &Path) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    text.lines()
        .rev()
        .find(|l| l.split(' ').nth(4) == Some(p.to_str().unwrap()))
        .map(String::from)
}

/// After SIGKILL, someone unmounts fsbench's file system, frees its loop device, attaches
/// their own image to the same loop device number, mounts it at the same mount point and
/// sets the device's read-ahead: `--cleanup` leaves their device, mount, setting and files
/// alone.
#[test]
fn cleanup_after_kill_leaves_a_reused_loop_device_and_mount_point_alone() {
    if !have_loop_tools("cleanup_after_kill_leaves_a_reused_loop_device_and_mount_point_alone") {
        return;
    }
    let s = Scratch::new("trust-kill");
    let plan = s.path().join("p.toml");
    std::fs::write(&plan, image_only_plan()).unwrap();
    let out = s.path().join("out");
    let mut child = bin()
        .args([
            "experiment",
            plan.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !out.join("runs/c001-r00.log").exists() {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no measurement started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let journal = std::fs::read_to_string(out.join("teardown.json")).unwrap();
    let steps: serde_json::Value = serde_json::from_str(&journal).unwrap();
    let dev = steps
        .as_array()
        .unwrap()
        .iter()
        .find_map(|u| u["DetachLoop"]["dev"].as_str())
        .unwrap_or_else(|| panic!("no loop device in {journal}"))
        .to_string();
    let mnt = out.join("mnt/ext4").canonicalize().unwrap();
    // Their image is made first, so that the device is free for as short a time as can be:
    // tests run side by side, and another one may attach the lowest free loop device.
    let theirs = s.path().join("theirs.img");
    std::fs::File::create(&theirs)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    run_ok("mkfs.ext4", &["-q", "-F", theirs.to_str().unwrap()]).unwrap();
    // Someone else takes over: unmount, wait for the measurement to let go, detach, attach
    // theirs (again if another test took the device number meanwhile, once it is free).
    run_ok("umount", &["-l", mnt.to_str().unwrap()]).unwrap();
    let t = Instant::now();
    loop {
        let _ = run_ok("losetup", &["-d", &dev]);
        if backing_file(&dev).is_none() {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "{dev} stays busy");
        std::thread::sleep(Duration::from_millis(200));
    }
    let t = Instant::now();
    while let Err(e) = run_ok("losetup", &[&dev, theirs.to_str().unwrap()]) {
        assert!(t.elapsed() < Duration::from_secs(60), "{e}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Detached when the test ends: the device is theirs now, not another test's.
    let their_loop = Loop(dev.clone());
    let their_mount = Mount(mnt.clone());
    run_ok("mount", &[&dev, mnt.to_str().unwrap()]).unwrap();
    std::fs::write(mnt.join("their-file"), b"theirs").unwrap();
    let ra = format!(
        "/sys/block/{}/queue/read_ahead_kb",
        dev.trim_start_matches("/dev/")
    );
    std::fs::write(&ra, "1024").unwrap();
    let before = mounted_at(&mnt);

    let c = run(&["experiment", "--cleanup", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&c.stderr).into_owned();
    assert!(!c.status.success(), "{}", text(&c));
    assert!(err.contains("left alone"), "{err}");
    assert_eq!(
        backing_file(&dev).as_deref(),
        Some(theirs.canonicalize().unwrap().to_str().unwrap()),
        "{err}"
    );
    assert_eq!(mounted_at(&mnt), before, "{err}");
    assert_eq!(std::fs::read(mnt.join("their-file")).unwrap(), b"theirs");
    assert_eq!(
        std::fs::read_to_string(&ra).unwrap().trim(),
        "1024",
        "{err}"
    );
    // What was fsbench's own went: the image file.
    assert!(!out.join("images/ext4.img").exists(), "{err}");
    drop(their_mount);
    drop(their_loop);
}

/// `mkfs_options` hold options only: a path given as an extra device (btrfs formats every
/// device it is given) or as the file of an option (`mke2fs -z` writes its undo file there)
/// is refused with the plan's file:line:column, before anything is made.
#[test]
fn mkfs_options_cannot_name_another_file() {
    let s = Scratch::new("trust-mkfs");
    let other = s.path().join("other.img");
    std::fs::write(&other, b"someone else's image").unwrap();
    let cases = [
        ("btrfs", format!("[\"{}\"]", other.display()), 0),
        (
            "ext4",
            format!("[\"-q\", \"-z\", \"{}\"]", other.display()),
            1,
        ),
        ("ext4", "[\"-J\", \"device=LABEL=other\"]".to_string(), 1),
    ];
    for (n, (fs, opts, bad)) in cases.iter().enumerate() {
        let plan = format!(
            r#"[experiment]
name = "mkfs"
repetitions = 1

[[target]]
name = "img"
kind = "image"
size = "64M"
fs = "{fs}"
mkfs_options = {opts}

[[measurement]]
name = "fs"
kind = "workload"
params = {{ workload = "fileserver", nfiles = 20, filesize = "4k", duration = 0.5 }}
"#
        );
        let p = s.path().join(format!("p{n}.toml"));
        std::fs::write(&p, &plan).unwrap();
        let out = s.path().join(format!("out{n}"));
        let o = run(&[
            "experiment",
            p.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(!o.status.success(), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        // The column of the offending element in `mkfs_options = [...]`.
        let line = plan.lines().nth(9).unwrap();
        let starts: Vec<usize> = line
            .match_indices("[\"")
            .chain(line.match_indices(" \""))
            .map(|(i, _)| i + 2)
            .collect();
        let col = starts[*bad];
        let want = format!("p{n}.toml:10:{col}: mkfs_options:");
        assert!(err.contains(&want), "want {want} in {err}");
        assert_eq!(std::fs::read(&other).unwrap(), b"someone else's image");
        assert!(!out.join("images").exists(), "{err}");
    }
}

/// A `dir` target at a system directory is refused as `run --dir` refuses it, so an overlay
/// stacked on it never creates its directories there.
#[test]
fn dir_targets_in_system_directories_are_refused() {
    let s = Scratch::new("trust-etc");
    let listing = |d: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    for dir in ["/etc", "/", "/usr/share"] {
        let before = listing(dir);
        let plan = format!(
            r#"[experiment]
name = "sys"
repetitions = 1

[[target]]
name = "sys"
kind = "dir"
path = "{dir}"

[[target]]
name = "ovl"
kind = "overlay"
over = "sys"

[[measurement]]
name = "fs"
kind = "workload"
params = {{ workload = "fileserver", nfiles = 20, filesize = "4k", duration = 0.5 }}
"#
        );
        let p = s.path().join("p.toml");
        std::fs::write(&p, &plan).unwrap();
        let out = s.path().join("out");
        let o = run(&[
            "experiment",
            p.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(!o.status.success(), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("p.toml:8:8:"), "{err}");
        assert!(err.contains("is a system directory"), "{err}");
        assert_eq!(listing(dir), before, "{dir} changed: {err}");
        let _ = std::fs::remove_dir_all(&out);
    }
}

fn have_fuse(what: &str, loops: bool) -> bool {
    let mut have = is_root()
        && Path::new("/dev/fuse").exists()
        && std::fs::read_to_string("/proc/filesystems")
            .unwrap_or_default()
            .contains("fuse");
    if loops {
        have = have
            && Path::new("/dev/loop-control").exists()
            && run_ok("sh", &["-c", "command -v mkfs.ext4"]).is_ok();
    }
    if !have {
        skip(&format!(
            "{what}: needs root, /dev/fuse{}",
            if loops {
                ", loop devices and mkfs.ext4"
            } else {
                ""
            }
        ));
    }
    have
}

/// Someone else's file system mounted at `mnt`, holding a sentinel file; unmounted on drop.
fn foreign_tmpfs(mnt: &Path) -> Mount {
    run_ok(
        "mount",
        &[
            "-t",
            "tmpfs",
            "-o",
            "size=1m",
            "someone-elses",
            mnt.to_str().unwrap(),
        ],
    )
    .unwrap();
    std::fs::write(mnt.join("precious"), b"not fsbench's").unwrap();
    Mount(mnt.to_path_buf())
}

fn foreign_still_there(mnt: &Path) -> bool {
    mounted_at(mnt).is_some_and(|l| l.contains(" - tmpfs someone-elses "))
        && std::fs::read(mnt.join("precious")).is_ok_and(|b| b == b"not fsbench's")
}

fn wait_pid_gone(pid: i32) {
    let t = Instant::now();
    while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z")) {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "server {pid} does not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The disk's file system is unmounted by hand and another one mounted at its mount
/// point: neither stopping the disk's server nor `disk remove` unmounts it.
#[test]
fn disk_remove_leaves_a_mount_made_since_alone() {
    if !have_fuse("disk_remove_leaves_a_mount_made_since_alone", true) {
        return;
    }
    let s = Scratch::new("trust-disk");
    let (state, images, mnt) = (
        s.path().join("state"),
        s.path().join("images"),
        s.path().join("mnt"),
    );
    let fsbench = |args: &[&str]| {
        bin()
            .args(args)
            .env("FSBENCH_STATE_DIR", &state)
            .env("FSBENCH_IMAGE_DIR", &images)
            .output()
            .unwrap()
    };
    struct Remove<'a>(&'a dyn Fn(&[&str]) -> std::process::Output);
    impl Drop for Remove<'_> {
        fn drop(&mut self) {
            let _ = (self.0)(&["disk", "remove", "dtrust"]);
        }
    }
    let o = fsbench(&[
        "disk",
        "create",
        "dtrust",
        "--size",
        "64M",
        "--mkfs",
        "ext4",
        "--mount",
        mnt.to_str().unwrap(),
        "--rpm",
        "15000",
        "--seek-avg",
        "1ms",
        "--transfer",
        "200MB/s",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let _remove = Remove(&fsbench);
    let mnt = mnt.canonicalize().unwrap();
    run_ok("umount", &[mnt.to_str().unwrap()]).unwrap();
    let theirs = foreign_tmpfs(&mnt);
    // Stopping the server: it unmounts only what `create` mounted.
    let pid: i32 = std::fs::read_to_string(state.join("dtrust/server.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    unsafe { libc::kill(pid, libc::SIGTERM) };
    wait_pid_gone(pid);
    assert!(
        foreign_still_there(&mnt),
        "the server unmounted {}",
        mnt.display()
    );
    let o = fsbench(&["disk", "remove", "dtrust"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        err.contains("left alone") && err.contains(mnt.to_str().unwrap()),
        "{err}"
    );
    assert!(
        foreign_still_there(&mnt),
        "disk remove unmounted {}",
        mnt.display()
    );
    assert!(!state.join("dtrust").exists(), "{}", text(&o));
    drop(theirs);
}

/// The same for a remote: unmounted by hand, another file system mounted at its mount
/// point, then `remote remove`.
#[test]
fn remote_remove_leaves_a_mount_made_since_alone() {
    if !have_fuse("remote_remove_leaves_a_mount_made_since_alone", false) {
        return;
    }
    let s = Scratch::new("trust-remote");
    let (state, srv, mnt) = (
        s.path().join("state"),
        s.path().join("srv"),
        s.path().join("mnt"),
    );
    std::fs::create_dir_all(&srv).unwrap();
    std::fs::write(srv.join("f"), b"served").unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    let fsbench = |args: &[&str]| {
        bin()
            .args(args)
            .env("FSBENCH_REMOTE_STATE_DIR", &state)
            .output()
            .unwrap()
    };
    let o = fsbench(&[
        "remote",
        "create",
        "rtrust",
        "--server",
        srv.to_str().unwrap(),
        "--mount",
        mnt.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let mnt = mnt.canonicalize().unwrap();
    let pid: i32 = std::fs::read_to_string(state.join("rtrust/server.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    run_ok("umount", &["-l", mnt.to_str().unwrap()]).unwrap();
    let theirs = foreign_tmpfs(&mnt);
    let o = fsbench(&["remote", "remove", "rtrust"]);
    wait_pid_gone(pid);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        foreign_still_there(&mnt),
        "remote remove unmounted {}: {err}",
        mnt.display()
    );
    assert!(!state.join("rtrust").exists(), "{}", text(&o));
    drop(theirs);
}

/// Lazily unmounts whatever is still mounted at a point when dropped (what a failing test
/// would otherwise leave: fsbench's own mount on a stopped server).
struct UnmountAll(PathBuf);
impl Drop for UnmountAll {
    fn drop(&mut self) {
        for _ in 0..5 {
            if mounted_at(&self.0).is_none() {
                return;
            }
            let _ = run_ok("umount", &["-l", self.0.to_str().unwrap()]);
        }
    }
}

/// The remove of a server whose mount is buried: refused, with the foreign mount, fsbench's
/// own mount (still readable: its server runs) and the state kept; once the foreign mount
/// is gone, the same `remove` succeeds.
fn remove_refused_then_retried(
    fsbench: &dyn Fn(&[&str]) -> std::process::Output,
    kind: &str,
    name: &str,
    mnt: &Path,
    state: &Path,
) {
    let pid: i32 = std::fs::read_to_string(state.join(name).join("server.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let theirs = foreign_tmpfs(mnt);
    let o = fsbench(&[kind, "remove", name]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(err.contains("run `fsbench"), "{err}");
    assert!(foreign_still_there(mnt), "{kind} remove unmounted theirs");
    assert!(state.join(name).exists(), "state removed: {}", text(&o));
    let listed = fsbench(&[kind, "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains(name));
    assert!(std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z")));
    drop(theirs);
    assert_eq!(
        std::fs::read(mnt.join("ours")).unwrap(),
        b"fsbench's own",
        "fsbench's mount does not answer"
    );
    let o = fsbench(&[kind, "remove", name]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(mounted_at(mnt).is_none(), "{}", text(&o));
    assert!(!state.join(name).exists(), "{}", text(&o));
}

/// Someone mounts a file system on top of a disk's mount: `disk remove` leaves both, and
/// the server and state, so that it can be run again once theirs is gone.
#[test]
fn disk_remove_under_a_stacked_mount_keeps_its_state() {
    if !have_fuse("disk_remove_under_a_stacked_mount_keeps_its_state", true) {
        return;
    }
    let s = Scratch::new("trust-disk-stack");
    let (state, images, mnt) = (
        s.path().join("state"),
        s.path().join("images"),
        s.path().join("mnt"),
    );
    let fsbench = |args: &[&str]| {
        bin()
            .args(args)
            .env("FSBENCH_STATE_DIR", &state)
            .env("FSBENCH_IMAGE_DIR", &images)
            .output()
            .unwrap()
    };
    let mnt_s = mnt.to_str().unwrap();
    let o = fsbench(&[
        "disk",
        "create",
        "dstack",
        "--size",
        "64M",
        "--mkfs",
        "ext4",
        "--mount",
        mnt_s,
        "--rpm",
        "15000",
        "--seek-avg",
        "1ms",
        "--transfer",
        "200MB/s",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let mnt = mnt.canonicalize().unwrap();
    let _last = UnmountAll(mnt.clone());
    std::fs::write(mnt.join("ours"), b"fsbench's own").unwrap();
    remove_refused_then_retried(&fsbench, "disk", "dstack", &mnt, &state);
}

/// The same for a remote.
#[test]
fn remote_remove_under_a_stacked_mount_keeps_its_state() {
    if !have_fuse("remote_remove_under_a_stacked_mount_keeps_its_state", false) {
        return;
    }
    let s = Scratch::new("trust-remote-stack");
    let (state, srv, mnt) = (
        s.path().join("state"),
        s.path().join("srv"),
        s.path().join("mnt"),
    );
    std::fs::create_dir_all(&srv).unwrap();
    std::fs::write(srv.join("ours"), b"fsbench's own").unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    let fsbench = |args: &[&str]| {
        bin()
            .args(args)
            .env("FSBENCH_REMOTE_STATE_DIR", &state)
            .output()
            .unwrap()
    };
    let (srv_s, mnt_s) = (srv.to_str().unwrap(), mnt.to_str().unwrap());
    let o = fsbench(&[
        "remote", "create", "rstack", "--server", srv_s, "--mount", mnt_s, "--preset", "100mbit",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let mnt = mnt.canonicalize().unwrap();
    let _last = UnmountAll(mnt.clone());
    remove_refused_then_retried(&fsbench, "remote", "rstack", &mnt, &state);
}

/// SIGTERM to `fsbench experiment` is Ctrl-C: the measurement stops and every target is torn
/// down (no loop device, mount or journal step left).
#[test]
fn sigterm_to_experiment_tears_everything_down() {
    if !have_loop_tools("sigterm_to_experiment_tears_everything_down") {
        return;
    }
    let s = Scratch::new("trust-term");
    let plan = s.path().join("p.toml");
    std::fs::write(&plan, image_only_plan()).unwrap();
    let out = s.path().join("out");
    let child = bin()
        .args([
            "experiment",
            plan.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !out.join("runs/c001-r00.log").exists() {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no measurement started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let journal = std::fs::read_to_string(out.join("teardown.json")).unwrap();
    let dev = serde_json::from_str::<serde_json::Value>(&journal)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .find_map(|u| u["DetachLoop"]["dev"].as_str().map(String::from))
        .unwrap_or_else(|| panic!("no loop device in {journal}"));
    let image = out.join("images/ext4.img").canonicalize().unwrap();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("interrupted"), "{err}");
    let outs = out.canonicalize().unwrap();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(outs.to_str().unwrap()), "{err}");
    assert_ne!(
        backing_file(&dev).as_deref(),
        Some(image.to_str().unwrap()),
        "{dev} still attached: {err}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("teardown.json"))
            .unwrap()
            .trim(),
        "[]",
        "{err}"
    );
}

/// The places a measurement names on its target (`path`, `src`, `over`) stay inside it.
#[test]
fn measurement_paths_stay_inside_their_target() {
    let s = Scratch::new("trust-mpath");
    let target = s.path().join("target");
    std::fs::create_dir(&target).unwrap();
    for (n, (kind, param)) in [
        ("find", "path = \"/etc\""),
        ("scan", "path = \"../..\""),
        ("build", "src = \"a/../../b\""),
    ]
    .iter()
    .enumerate()
    {
        let plan = format!(
            r#"[experiment]
name = "paths"
repetitions = 1

[[target]]
name = "here"
kind = "dir"
path = "{}"

[[measurement]]
name = "m"
kind = "{kind}"
params = {{ {param} }}
"#,
            target.display()
        );
        let p = s.path().join(format!("p{n}.toml"));
        std::fs::write(&p, &plan).unwrap();
        let o = run(&["experiment", p.to_str().unwrap(), "--dry-run"]);
        assert!(!o.status.success(), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        let col = plan.lines().nth(12).unwrap().rfind(" = ").unwrap() + 4;
        let want = format!("p{n}.toml:13:{col}:");
        assert!(
            err.contains(&want) && err.contains("inside the target"),
            "want {want}: {err}"
        );
    }
}

/// A simulated disk's parameters are passed on as `--KEY VALUE`: a value that is another
/// option (`--image /dev/sdb`) is refused.
#[test]
fn disk_parameters_are_values() {
    let s = Scratch::new("trust-diskp");
    let plan = r#"[experiment]
name = "d"
repetitions = 1

[[target]]
name = "hdd"
kind = "disk"
size = "64M"
fs = "ext4"
disk = { rpm = "--image=/dev/sdb" }

[[measurement]]
name = "fs"
kind = "workload"
params = { workload = "fileserver", nfiles = 20, filesize = "4k", duration = 0.5 }
"#;
    let p = s.path().join("p.toml");
    std::fs::write(&p, plan).unwrap();
    let o = run(&["experiment", p.to_str().unwrap(), "--dry-run"]);
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("p.toml:10:16:") && err.contains("is not a value"),
        "{err}"
    );
}

/// A forged journal naming a cgroup fsbench did not make (empty, named as fsbench names
/// its own), and one naming a cgroup that does not exist yet: `--cleanup` removes neither
/// the first nor, once someone makes it, the second.
#[test]
fn cleanup_leaves_cgroups_it_did_not_make() {
    let root = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            right
                .starts_with("cgroup2 ")
                .then(|| PathBuf::from(left.split(' ').nth(4).unwrap()))
        });
    let Some(root) = root.filter(|_| is_root()) else {
        skip("needs root and cgroup v2");
        return;
    };
    let theirs = root.join(format!("fsbench-theirs-{}", std::process::id()));
    let later = root.join(format!("fsbench-later-{}", std::process::id()));
    std::fs::create_dir(&theirs).unwrap();
    struct Rmdir(Vec<PathBuf>);
    impl Drop for Rmdir {
        fn drop(&mut self) {
            for p in &self.0 {
                let _ = std::fs::remove_dir(p);
            }
        }
    }
    let _rm = Rmdir(vec![theirs.clone(), later.clone()]);
    let step = |p: &Path| {
        serde_json::json!({"RemoveCgroup": {
            "path": p, "ino": 1, "token": "0123456789abcdef0123456789abcdef"
        }})
    };
    let s = Scratch::new("trust-cgroup");
    let journal = serde_json::json!([step(&later), step(&theirs)]).to_string();
    let out = outdir_with_journal(s.path(), &journal);
    let o = run(&["experiment", "--cleanup", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        theirs.is_dir(),
        "--cleanup removed {}: {err}",
        theirs.display()
    );
    assert!(!o.status.success(), "{}", text(&o));
    assert!(err.contains("left alone"), "{err}");
    // The step for the one that did not exist is done (gone is gone); made now, it is
    // someone else's, and a second --cleanup leaves it too.
    std::fs::create_dir(&later).unwrap();
    let o = run(&["experiment", "--cleanup", out.to_str().unwrap()]);
    assert!(
        later.is_dir(),
        "--cleanup removed {}: {}",
        later.display(),
        text(&o)
    );
    assert!(theirs.is_dir(), "{}", text(&o));
}
