//! Data safety of run directories: fsbench never writes, truncates or deletes through a link
//! planted inside its run directories, adopts an existing reuse directory only when it is the
//! user's own and closed to others, and lets one run at a time use a reuse directory.

use crate::common::*;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A workload with one `reuse` fileset of 20 files of 4 KiB that reads and appends.
const REUSE: &str = "\
define fileset name=data,path=/tmp,entries=20,dirwidth=5,size=4k,prealloc,reuse
define process name=p,instances=1
{
  thread name=t,memsize=1m,instances=1
  {
    flowop openfile name=open1,filesetname=data,fd=1
    flowop appendfile name=app1,fd=1,iosize=4k
    flowop closefile name=close1,fd=1
  }
}
run 1
";

fn workload(dir: &Scratch) -> String {
    let p = dir.path().join("reusable.f");
    std::fs::write(&p, REUSE).unwrap();
    p.to_str().unwrap().to_string()
}

fn run_reuse(wl: &str, target: &Scratch) -> std::process::Output {
    run(&["run", wl, "--dir", target.s(), "--duration", "0.5", "-q"])
}

/// Every regular file below `dir` with its size.
fn files(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push((e.path(), e.metadata().unwrap().len()));
            }
        }
    }
    out.sort();
    out
}

/// The fileset's directory, files and sizes, moved outside and each file grown to 100,000
/// bytes: what a run following a link would truncate, rewrite or append to.
fn plant_outside(fileset: &Path, outside: &Path) -> Vec<(PathBuf, u64)> {
    let moved = outside.join("data");
    std::fs::rename(fileset, &moved).unwrap();
    for (p, _) in files(&moved) {
        std::fs::write(&p, vec![7u8; 100_000]).unwrap();
    }
    files(&moved)
}

#[test]
fn a_fileset_swapped_for_a_link_is_refused_and_nothing_outside_changes() {
    let dir = Scratch::new("safety-wl");
    let target = Scratch::new("safety-target");
    let outside = Scratch::new("safety-outside");
    let wl = workload(&dir);
    let o = run_reuse(&wl, &target);
    assert!(o.status.success(), "{}", text(&o));
    let fileset = target.path().join("fsbench-reusable/data");
    assert!(fileset.is_dir());

    let before = plant_outside(&fileset, outside.path());
    symlink(outside.path().join("data"), &fileset).unwrap();
    let o = run_reuse(&wl, &target);
    let t = text(&o);
    assert!(!o.status.success(), "must refuse: {t}");
    assert!(t.contains("symbolic link"), "{t}");
    assert_eq!(
        files(&outside.path().join("data")),
        before,
        "outside changed"
    );
    assert!(outside.path().join("data").is_dir());
}

#[test]
fn a_directory_or_file_inside_the_fileset_swapped_for_a_link_is_refused() {
    let dir = Scratch::new("safety-deep-wl");
    let target = Scratch::new("safety-deep-target");
    let outside = Scratch::new("safety-deep-outside");
    let wl = workload(&dir);
    assert!(run_reuse(&wl, &target).status.success());
    let fileset = target.path().join("fsbench-reusable/data");

    // A tree directory below the fileset root.
    let sub = std::fs::read_dir(&fileset)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .expect("a directory in the fileset");
    let before = plant_outside(&sub, outside.path());
    symlink(outside.path().join("data"), &sub).unwrap();
    let o = run_reuse(&wl, &target);
    assert!(!o.status.success(), "must refuse: {}", text(&o));
    assert_eq!(files(&outside.path().join("data")), before);

    // A single file of the fileset, linked to an outside file.
    std::fs::remove_file(&sub).unwrap();
    std::fs::rename(outside.path().join("data"), &sub).unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, vec![9u8; 100_000]).unwrap();
    let (file, _) = files(&fileset).into_iter().next().unwrap();
    std::fs::remove_file(&file).unwrap();
    symlink(&victim, &file).unwrap();
    let o = run_reuse(&wl, &target);
    let t = text(&o);
    assert!(!o.status.success(), "must refuse: {t}");
    assert!(t.contains("symbolic link"), "{t}");
    assert_eq!(std::fs::read(&victim).unwrap(), vec![9u8; 100_000]);
}

#[test]
fn a_reuse_directory_open_to_others_or_owned_by_another_user_is_refused() {
    let dir = Scratch::new("safety-own-wl");
    let target = Scratch::new("safety-own-target");
    let wl = workload(&dir);
    assert!(run_reuse(&wl, &target).status.success());
    let rd = target.path().join("fsbench-reusable");

    std::fs::set_permissions(&rd, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = run_reuse(&wl, &target);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("writable by group or others"), "{t}");
    std::fs::set_permissions(&rd, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(run_reuse(&wl, &target).status.success());

    if !is_root() {
        skip("needs root to chown: a reuse directory owned by another user");
        return;
    }
    let nobody = 65534;
    std::os::unix::fs::chown(&rd, Some(nobody), Some(nobody)).unwrap();
    let o = run_reuse(&wl, &target);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("owned by uid 65534"), "{t}");
    assert_eq!(std::fs::metadata(&rd).unwrap().uid(), nobody);
}

#[test]
fn two_runs_never_share_a_reuse_directory() {
    let dir = Scratch::new("safety-lock-wl");
    let target = Scratch::new("safety-lock-target");
    let wl = workload(&dir);
    assert!(run_reuse(&wl, &target).status.success());
    let mut first = bin()
        .args([
            "run",
            &wl,
            "--dir",
            target.s(),
            "--duration",
            "3",
            "-q",
            "--json",
        ])
        .arg(dir.path().join("first.json"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first run holds the directory.
    let lock = target.path().join("fsbench-reusable/.fsbench-lock");
    let want = format!("pid {}", first.id());
    for _ in 0..200 {
        if std::fs::read_to_string(&lock).is_ok_and(|s| s.contains(&want)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = run_reuse(&wl, &target);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.contains(&format!(
            "in use by another fsbench run (pid {})",
            first.id()
        )),
        "{t}"
    );
    assert!(first.wait().unwrap().success());
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("first.json")).unwrap()).unwrap();
    assert_eq!(
        v["summary"]["errors"], 0,
        "the first run was disturbed: {v}"
    );
    // Free again once the first run is over.
    assert!(run_reuse(&wl, &target).status.success());
}

#[test]
fn a_postmark_location_in_a_system_directory_is_refused() {
    let cfg_dir = Scratch::new("safety-pm");
    let cfg = cfg_dir.path().join("pm.cfg");
    // Resolves to /etc from anywhere below /.
    let loc = format!("{}/../../../../../../../../etc", cfg_dir.s());
    std::fs::write(
        &cfg,
        format!("set location {loc}\nset number 10\nset transactions 10\nrun\nquit\n"),
    )
    .unwrap();
    let before: Vec<_> = std::fs::read_dir("/etc")
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let o = run(&["postmark", cfg.to_str().unwrap()]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("/etc is a system directory"), "{t}");
    assert!(t.contains("is /etc"), "the resolved location is shown: {t}");
    let after: Vec<_> = std::fs::read_dir("/etc")
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before.len(), after.len());
    assert!(!after
        .iter()
        .any(|n| n.to_string_lossy().starts_with("fsbench-")));
}

#[test]
fn clean_removes_only_marked_directories_not_in_use() {
    let dir = Scratch::new("clean-wl");
    let target = Scratch::new("clean-target");
    let wl = workload(&dir);
    assert!(run_reuse(&wl, &target).status.success());
    // Things clean must leave alone: an unmarked fsbench-named directory, a link to a marked
    // directory, and a file.
    let foreign = target.path().join("fsbench-foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("mine"), b"x").unwrap();
    symlink(
        target.path().join("fsbench-reusable"),
        target.path().join("fsbench-link"),
    )
    .unwrap();
    std::fs::write(target.path().join("fsbench-file"), b"y").unwrap();

    let o = run(&["clean", target.s(), "--dry-run"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("would remove") && t.contains("fsbench-reusable"),
        "{t}"
    );
    assert!(
        !t.contains("fsbench-foreign") && !t.contains("fsbench-link"),
        "{t}"
    );
    assert!(target.path().join("fsbench-reusable").is_dir());

    let o = run(&["clean", target.s()]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("removed") && t.contains("freed"), "{t}");
    assert!(!target.path().join("fsbench-reusable").exists());
    assert_eq!(std::fs::read(foreign.join("mine")).unwrap(), b"x");
    assert!(target.path().join("fsbench-file").exists());
    assert!(std::fs::symlink_metadata(target.path().join("fsbench-link")).is_ok());

    // A directory in use is skipped, with the pid of the run holding it.
    assert!(run_reuse(&wl, &target).status.success());
    let mut busy = bin()
        .args(["run", &wl, "--dir", target.s(), "--duration", "3", "-q"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock = target.path().join("fsbench-reusable/.fsbench-lock");
    let want = format!("pid {}", busy.id());
    for _ in 0..200 {
        if std::fs::read_to_string(&lock).is_ok_and(|s| s.contains(&want)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = run(&["clean", target.s()]);
    let t = text(&o);
    assert!(
        t.contains("in use") && t.contains(&busy.id().to_string()),
        "{t}"
    );
    assert!(target.path().join("fsbench-reusable").is_dir());
    assert!(busy.wait().unwrap().success());
}

#[test]
fn a_hard_link_in_a_reuse_fileset_is_replaced_never_written_through() {
    let dir = Scratch::new("safety-hardlink-wl");
    let target = Scratch::new("safety-hardlink-target");
    let outside = Scratch::new("safety-hardlink-outside");
    let wl = workload(&dir);
    assert!(run_reuse(&wl, &target).status.success());
    let fileset = target.path().join("fsbench-reusable/data");
    let victim = outside.path().join("victim");
    std::fs::write(&victim, vec![9u8; 100_000]).unwrap();
    // Every file of the fileset becomes a hard link to the outside file: whichever the run
    // keeps, truncates, rewrites or appends to, it must not be the outside one.
    for (file, _) in files(&fileset) {
        std::fs::remove_file(&file).unwrap();
        std::fs::hard_link(&victim, &file).unwrap();
    }
    let o = run_reuse(&wl, &target);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(&victim).unwrap(), vec![9u8; 100_000]);
    let ino = std::fs::metadata(&victim).unwrap().ino();
    for (file, _) in files(&fileset) {
        let m = std::fs::metadata(&file).unwrap();
        assert!(
            m.ino() != ino && m.nlink() == 1,
            "{} still linked",
            file.display()
        );
    }
}

/// A bind mount that is undone when the test ends, whatever happens in it.
struct Bind(PathBuf);

impl Bind {
    fn new(from: &Path, to: &Path) -> Bind {
        std::fs::create_dir_all(to).unwrap();
        run_ok(
            "mount",
            &["--bind", from.to_str().unwrap(), to.to_str().unwrap()],
        )
        .expect("mount --bind");
        Bind(to.to_path_buf())
    }
}

impl Drop for Bind {
    fn drop(&mut self) {
        let _ = run_ok("umount", &[self.0.to_str().unwrap()]);
    }
}

/// A directory of files outside every run directory, and its listing.
fn sentinel_tree(outside: &Scratch) -> (PathBuf, Vec<(PathBuf, u64)>) {
    let tree = outside.path().join("precious");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("a"), b"keep me").unwrap();
    std::fs::write(tree.join("sub/b"), vec![1u8; 5000]).unwrap();
    let listing = files(&tree);
    (tree, listing)
}

#[test]
fn clean_never_deletes_across_a_mount_inside_a_run_directory() {
    if !is_root() {
        return skip("needs root to bind-mount a directory into a run directory");
    }
    let dir = Scratch::new("safety-mount-clean-wl");
    let target = Scratch::new("safety-mount-clean-target");
    let outside = Scratch::new("safety-mount-clean-outside");
    let wl = workload(&dir);
    assert!(run_reuse(&wl, &target).status.success());
    let (tree, before) = sentinel_tree(&outside);
    let run_dir = target.path().join("fsbench-reusable");
    {
        // The same file system bound in (same device: only the mount id tells), deep inside.
        let _bind = Bind::new(&tree, &run_dir.join("data/mnt"));
        // The dry run says it would keep the directory, and why.
        let o = run(&["clean", target.s(), "--dry-run"]);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        assert!(
            !t.contains("would remove") && t.contains("would keep") && t.contains("data/mnt"),
            "{t}"
        );
        let o = run(&["clean", target.s()]);
        let t = text(&o);
        assert!(
            !o.status.success(),
            "must fail while a mount is inside: {t}"
        );
        assert!(t.contains("mounted") && t.contains("data/mnt"), "{t}");
        assert_eq!(files(&tree), before, "the mounted tree changed");
        assert!(run_dir.join("data/mnt/a").exists());
    }
    assert_eq!(files(&tree), before);
    let o = run(&["clean", target.s()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!run_dir.exists());
    assert_eq!(files(&tree), before);
}

#[test]
fn a_run_never_deletes_a_mount_made_inside_its_directory_during_the_run() {
    if !is_root() {
        return skip("needs root to bind-mount a directory into a run directory");
    }
    let target = Scratch::new("safety-mount-run-target");
    let outside = Scratch::new("safety-mount-run-outside");
    let (tree, before) = sentinel_tree(&outside);
    let wl = outside.path().join("stats.f");
    std::fs::write(
        &wl,
        REUSE
            .replace(",reuse", "")
            .replace("appendfile", "readwholefile"),
    )
    .unwrap();
    let child = bin()
        .args(["run", wl.to_str().unwrap()])
        .args(["--dir", target.s(), "--duration", "3", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the run directory and its fileset, then mount into it.
    let mut run_dir = None;
    for _ in 0..500 {
        run_dir = std::fs::read_dir(target.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join(".fsbench-run").exists() && p.join("data").is_dir());
        if run_dir.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let run_dir = run_dir.expect("the run directory appears");
    let bind = Bind::new(&tree, &run_dir.join("data/mnt"));
    let o = child.wait_with_output().unwrap();
    let t = text(&o);
    assert!(
        !o.status.success(),
        "must fail: it could not remove its directory: {t}"
    );
    assert!(t.contains("left behind") && t.contains("mounted"), "{t}");
    assert_eq!(files(&tree), before, "the mounted tree changed");
    drop(bind);
    assert_eq!(files(&tree), before);
    assert!(run(&["clean", target.s()]).status.success());
}

#[test]
fn clean_of_a_tree_deeper_than_the_descriptor_limit_fails_and_says_so() {
    let dir = Scratch::new("clean-deep-wl");
    let target = Scratch::new("clean-deep-target");
    let wl = workload(&dir);
    assert!(run_reuse(&wl, &target).status.success());
    // 3,000 nested directories inside the run directory: more levels than a soft limit of
    // 1,024 open files allows descriptors.
    let run_dir = std::fs::File::open(target.path().join("fsbench-reusable")).unwrap();
    let mut fd = std::os::fd::OwnedFd::from(run_dir);
    for _ in 0..3000 {
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: mkdirat/openat on a descriptor we own, with a NUL-terminated name.
        unsafe {
            assert_eq!(libc::mkdirat(fd.as_raw_fd(), c"d".as_ptr(), 0o755), 0);
            let n = libc::openat(
                fd.as_raw_fd(),
                c"d".as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY,
            );
            assert!(n >= 0);
            fd = std::os::fd::OwnedFd::from_raw_fd(n);
        }
    }
    drop(fd);
    // With at most 1,024 descriptors (hard limit) the removal cannot reach the bottom: it
    // must fail and say so, and leave a marked directory that a later clean can finish.
    let o = std::process::Command::new("sh")
        .args(["-c", "ulimit -n 1024 && exec \"$0\" clean \"$1\""])
        .arg(env!("CARGO_BIN_EXE_fsbench"))
        .arg(target.s())
        .output()
        .unwrap();
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.contains("NOT removed") && t.contains("could not be removed"),
        "{t}"
    );
    // With the usual limits (the soft limit is raised to the hard one) it finishes.
    // SAFETY: getrlimit writes the struct.
    let hard = unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_max
    };
    if hard < 4000 {
        return skip(&format!(
            "the hard limit on open files is {hard}: too low to remove 3,000 levels"
        ));
    }
    let o = run(&["clean", target.s()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!target.path().join("fsbench-reusable").exists());
}

// ---- The owned-tree layer: mounts, hard links and planted markers inside trees fsbench
// continues or prunes (each test reproduces a way the data of others was lost).

/// A sentinel: `n` files of known contents in `dir`, and a way to check them unchanged.
struct Sentinel {
    dir: PathBuf,
    files: Vec<(String, u64)>,
}

impl Sentinel {
    /// Named as aging names its files (`f<N>`), so a tool that adopted them would use them.
    fn new(dir: &Path, n: usize) -> Sentinel {
        std::fs::create_dir_all(dir).unwrap();
        for i in 0..n {
            std::fs::write(
                dir.join(format!("f{}", 90_000 + i)),
                format!("precious {i}\n"),
            )
            .unwrap();
        }
        Sentinel {
            dir: dir.to_path_buf(),
            files: tree_listing(dir),
        }
    }
    fn intact(&self) {
        assert_eq!(
            tree_listing(&self.dir),
            self.files,
            "{}",
            self.dir.display()
        );
        for (i, (name, _)) in self.files.iter().enumerate() {
            let got = std::fs::read_to_string(self.dir.join(name)).unwrap();
            assert!(got.starts_with("precious "), "{name} was rewritten ({i})");
        }
    }
}

/// `mount --bind SRC DST`, undone on drop; `None` (and a printed skip) where it cannot be.
fn bind(src: &Path, dst: &Path) -> Option<Mount> {
    if !is_root() {
        skip("needs root to bind-mount");
        return None;
    }
    match run_ok(
        "mount",
        &["--bind", src.to_str().unwrap(), dst.to_str().unwrap()],
    ) {
        Ok(_) => Some(Mount(dst.to_path_buf())),
        Err(e) => {
            skip(&e);
            None
        }
    }
}

/// A 32 MiB tmpfs for aging tests, unmounted on drop.
fn small_tmpfs(s: &Scratch) -> Option<Mount> {
    if !is_root() {
        skip("needs root to mount a small tmpfs");
        return None;
    }
    let m = s.path().join("fs");
    std::fs::create_dir_all(&m).unwrap();
    let r = run_ok(
        "mount",
        &["-t", "tmpfs", "-o", "size=32m", "none", m.to_str().unwrap()],
    );
    match r {
        Ok(_) => Some(Mount(m)),
        Err(e) => {
            skip(&e);
            None
        }
    }
}

fn age(dir: &Path, seed: &str, profile: &str) -> std::process::Output {
    let d = dir.to_str().unwrap();
    run(&[
        "age",
        d,
        "--fill",
        "0.4",
        "--ops",
        "1500",
        "--seed",
        seed,
        "--profile",
        profile,
        "-q",
    ])
}

/// The aged tree's directories below fsbench-aged/ (relative paths).
fn aged_dirs(aged: &Path) -> Vec<PathBuf> {
    tree_listing(aged)
        .into_iter()
        .filter(|(_, len)| *len == u64::MAX)
        .map(|(p, _)| aged.join(p))
        .collect()
}

#[test]
fn continued_aging_never_deletes_across_a_mount_in_the_aged_tree() {
    let s = Scratch::new("own-age-mount");
    let Some(fs) = small_tmpfs(&s) else { return };
    let o = age(&fs.0, "1", "agrawal");
    assert!(o.status.success(), "{}", text(&o));
    let aged = fs.0.join("fsbench-aged");
    // A bind mount from another file system, then one of the same file system (the same
    // device: only the mount tells it apart), each on a directory of the aged tree.
    let other = Sentinel::new(&s.path().join("other-fs"), 100);
    let same = Sentinel::new(&fs.0.join("same-fs"), 100);
    for (sentinel, seed, profile) in [(&other, "2", "agrawal"), (&same, "3", "meyer")] {
        let mut dirs = aged_dirs(&aged);
        dirs.sort();
        let target = dirs.last().expect("aging made directories").clone();
        let Some(m) = bind(&sentinel.dir, &target) else {
            return;
        };
        let o = age(&fs.0, seed, profile);
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            text(&o).contains("a mount point, left alone"),
            "the mount is named: {}",
            text(&o)
        );
        drop(m);
        sentinel.intact();
    }
}

#[test]
fn continued_aging_never_writes_through_a_hard_link() {
    let s = Scratch::new("own-age-links");
    let Some(fs) = small_tmpfs(&s) else { return };
    let o = age(&fs.0, "1", "agrawal");
    assert!(o.status.success(), "{}", text(&o));
    let aged = fs.0.join("fsbench-aged");
    let outside = Sentinel::new(&fs.0.join("outside"), 40);
    // Every aged file's name now links to an outside file (the data aging would write).
    let mut planted = 0;
    let files: Vec<PathBuf> = tree_listing(&aged)
        .into_iter()
        .filter(|(p, len)| *len != u64::MAX && !p.contains(".fsbench"))
        .map(|(p, _)| aged.join(p))
        .collect();
    for (i, f) in files.iter().enumerate() {
        std::fs::remove_file(f).unwrap();
        let src = outside.dir.join(&outside.files[i % outside.files.len()].0);
        std::fs::hard_link(src, f).unwrap();
        planted += 1;
    }
    assert!(planted > 10, "{planted} files planted");
    for (seed, profile) in [("2", "agrawal"), ("3", "meyer"), ("4", "douceur")] {
        let o = age(&fs.0, seed, profile);
        assert!(o.status.success(), "{}", text(&o));
    }
    outside.intact();
}

#[test]
fn a_reuse_run_never_writes_into_a_mount_inside_its_fileset() {
    let dir = Scratch::new("own-reuse-wl");
    let target = Scratch::new("own-reuse-target");
    let wl = workload(&dir);
    let o = run_reuse(&wl, &target);
    assert!(o.status.success(), "{}", text(&o));
    let fileset = target.path().join("fsbench-reusable/data");
    let sub = std::fs::read_dir(&fileset)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .expect("the fileset has directories");
    // Files named as the fileset's would be, so a run following the mount would use them.
    let names: Vec<String> = std::fs::read_dir(&sub)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let victims = Scratch::new("own-reuse-victims");
    for n in &names {
        std::fs::write(victims.path().join(n), vec![9u8; 100_000]).unwrap();
    }
    let before = tree_listing(victims.path());
    let Some(_m) = bind(victims.path(), &sub) else {
        return;
    };
    let o = run_reuse(&wl, &target);
    let t = text(&o);
    assert!(!o.status.success(), "must refuse: {t}");
    assert!(t.contains("mount"), "says why: {t}");
    assert_eq!(tree_listing(victims.path()), before);
    for n in &names {
        assert_eq!(
            std::fs::read(victims.path().join(n)).unwrap(),
            vec![9u8; 100_000]
        );
    }
}

#[test]
fn prune_never_deletes_through_a_bind_mount_of_the_same_file_system() {
    let s = Scratch::new("own-prune-bind");
    let o = run(&[
        "prune",
        "--dir",
        s.s(),
        "--free",
        "1G",
        "--files",
        "200",
        "--dirs",
        "10",
        "--keep",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run_dir = std::fs::read_dir(s.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("fsbench-")
        })
        .expect("the kept run directory");
    // A fresh tree in the kept run directory, with a bind mount of the same file system.
    let tree = run_dir.join("again");
    std::fs::create_dir_all(tree.join("m")).unwrap();
    for i in 0..50 {
        std::fs::write(tree.join(format!("f{i}")), b"ours").unwrap();
    }
    let victims = Sentinel::new(&s.path().join("victims"), 100);
    let Some(_m) = bind(&victims.dir, &tree.join("m")) else {
        return;
    };
    let snap = s.path().join("tree.snap");
    let o = run(&["scan", tree.to_str().unwrap(), "-o", snap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["prune", snap.to_str().unwrap(), "--free", "1G"]);
    assert!(o.status.success(), "{}", text(&o));
    victims.intact();
    assert!(
        !tree.join("f0").exists(),
        "the tree's own files went: {}",
        text(&o)
    );
    // A snapshot that did cross the mount: prune still deletes only on the root's mount.
    let o = run(&[
        "scan",
        tree.to_str().unwrap(),
        "--cross-mounts",
        "-o",
        snap.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["prune", snap.to_str().unwrap(), "--free", "1G"]);
    victims.intact();
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn prune_does_not_trust_a_marker_another_user_planted() {
    if !is_root() {
        skip("needs root to act as two users");
        return;
    }
    let s = Scratch::new("own-prune-marker");
    // A world-writable directory, as /tmp is, and another user's "run directory" in it.
    let shared = s.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let theirs = shared.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join(".fsbench-run"), "fsbench run directory\n").unwrap();
    let victims = Sentinel::new(&theirs.join("t"), 30);
    run_ok("chown", &["-R", "65534:65534", theirs.to_str().unwrap()]).unwrap();
    let snap = s.path().join("t.snap");
    let o = run(&[
        "scan",
        victims.dir.to_str().unwrap(),
        "-o",
        snap.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["prune", snap.to_str().unwrap(), "--free", "1G"]);
    assert!(!o.status.success(), "refused: {}", text(&o));
    assert!(text(&o).contains("nothing deleted"), "{}", text(&o));
    victims.intact();
    // The same marker made by the running user in its own closed directory is trusted.
    run_ok("chown", &["-R", "0:0", theirs.to_str().unwrap()]).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = run(&["prune", snap.to_str().unwrap(), "--free", "1G"]);
    assert!(o.status.success(), "{}", text(&o));
}

/// A fio job naming fsbench's own marker or lock as its file (`filename=.fsbench-run`, with
/// or without `unlink=1`) overwrote or removed it, and the run directory was left behind
/// unmarked. `check` refuses the name at its place, `run` refuses it before anything is
/// made, and the target directory is left as it was.
#[test]
fn a_fio_job_may_not_name_fsbenchs_own_files() {
    let d = Scratch::new("safety-own-names");
    let target = Scratch::new("safety-own-target");
    let cases = [
        (".fsbench-run", ""),
        (".fsbench-run", "unlink=1\n"),
        (".fsbench-lock", "unlink=1\n"),
        ("data:.fsbench-run", ""),
    ];
    for (i, (names, extra)) in cases.iter().enumerate() {
        let job = d.path().join(format!("own{i}.fio"));
        let body = format!("[j]\nrw=write\nbs=4k\nsize=16k\nfilename={names}\n{extra}");
        std::fs::write(&job, &body).unwrap();
        let j = job.to_str().unwrap();
        let col = 10 + names.find(".fsbench").unwrap();
        for cmd in [&["check", j][..], &["run", j, "--dir", target.s(), "-q"]] {
            let o = run(cmd);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{cmd:?}: {}", text(&o));
            assert!(
                err.contains(&format!("{j}:5:{col}")) && err.contains("fsbench's own"),
                "{cmd:?}: {err}"
            );
        }
        let left: Vec<_> = std::fs::read_dir(target.path())
            .unwrap()
            .flatten()
            .collect();
        assert!(left.is_empty(), "{names}: left {:?}", left[0].path());
    }
    // Paths leaving the run directory stay refused at their place.
    for (names, col) in [("../x", 10), ("/etc/passwd", 10), ("a:..", 12)] {
        let job = d.path().join("out.fio");
        std::fs::write(&job, format!("[j]\nrw=write\nsize=16k\nfilename={names}\n")).unwrap();
        let j = job.to_str().unwrap();
        let o = run(&["check", j]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{names}: {err}");
        assert!(err.contains(&format!("{j}:4:{col}")), "{names}: {err}");
    }
}
