//! `fsbench scan` and `fsbench layout` on real trees.
//!
//! The ext4 test needs root, loop devices, `losetup`, `mkfs.ext4` and
//! `mount`; without them it prints why and passes.

use crate::common::{is_root, skip, Scratch};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fsbench_engine::scan::snapshot::{Kind, Snapshot};
use serde_json::Value;

fn fsbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fsbench"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run fsbench")
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "fsbench failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn scan_counts_the_tree_and_does_not_follow_symlinks() {
    let t = Scratch::new("scan");
    let root = t.path().join("root");
    let outside = t.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    for i in 0..50 {
        std::fs::write(outside.join(format!("o{i}")), vec![0u8; 1000]).unwrap();
    }
    let mut files = 0u64;
    let mut bytes = 0u64;
    let mut dirs = 0u64;
    for a in 0..4 {
        for b in 0..3 {
            let d = root.join(format!("a{a}")).join(format!("b{b}"));
            std::fs::create_dir_all(&d).unwrap();
            for f in 0..7u64 {
                let size = (a * 1000 + b * 100) as u64 + f * 3;
                let ext = ["txt", "rs", "TXT"][f as usize % 3];
                std::fs::write(d.join(format!("f{f}.{ext}")), vec![7u8; size as usize]).unwrap();
                files += 1;
                bytes += size;
            }
        }
    }
    dirs += 4 + 12;
    std::os::unix::fs::symlink(&outside, root.join("a0/link-to-outside")).unwrap();
    std::os::unix::fs::symlink("../../outside/o1", root.join("a1/file-link")).unwrap();
    std::fs::write(root.join("top.bin"), vec![1u8; 1 << 20]).unwrap();
    files += 1;
    bytes += 1 << 20;

    let snap = t.path().join("snap");
    let js = t.path().join("summary.json");
    for threads in ["1", "2", "5"] {
        let text = ok(fsbench(&[
            "scan",
            s(&root),
            "-o",
            s(&snap),
            "--json",
            s(&js),
            "-j",
            threads,
        ]));
        assert!(text.contains("files"), "{text}");
        let v = json(&js);
        assert_eq!(v["files"], files);
        assert_eq!(v["dirs"], dirs);
        assert_eq!(v["symlinks"], 2);
        assert_eq!(v["bytes"], bytes);
        assert_eq!(v["entries"], files + dirs + 2);
        assert_eq!(v["errors"], 0);
        assert_eq!(v["top_extensions"][0]["ext"], "txt");
        assert_eq!(v["top_extensions"][0]["files"], 4 * 3 * 5);
        let size_total: u64 = v["file_size"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["count"].as_u64().unwrap())
            .sum();
        assert_eq!(size_total, files);

        let stream = Snapshot::open(&snap).unwrap();
        assert_eq!(stream.header().root, s(&root));
        let entries: Vec<_> = stream.collect::<Result<_, _>>().unwrap();
        assert_eq!(entries.len() as u64, files + dirs + 2);
        let snap_bytes: u64 = entries
            .iter()
            .filter(|e| e.kind == Kind::File)
            .map(|e| e.size)
            .sum();
        assert_eq!(snap_bytes, bytes);
        assert!(entries
            .iter()
            .all(|e| !e.path.starts_with(b"a0/link-to-outside/")));
        let link = entries
            .iter()
            .find(|e| e.path == b"a0/link-to-outside")
            .unwrap();
        assert_eq!(link.kind, Kind::Symlink);
        let top = entries.iter().find(|e| e.path == b"top.bin").unwrap();
        let meta = std::fs::symlink_metadata(root.join("top.bin")).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(top.size, meta.size());
        assert_eq!(top.blocks, meta.blocks());
        assert_eq!(top.mtime.sec, meta.mtime());
        assert_eq!(top.mtime.nsec as i64, meta.mtime_nsec());
        assert_eq!(top.uid, meta.uid());
        assert_eq!(top.nlink, meta.nlink());
        let deep = entries.iter().find(|e| e.path == b"a3/b2/f6.txt").unwrap();
        assert_eq!(deep.depth(), 2);
        assert_eq!(deep.size, 3000 + 200 + 18);
    }
}

#[test]
fn scan_of_missing_directory_fails_clearly() {
    let out = fsbench(&["scan", "/nonexistent/fsbench-test"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/fsbench-test"), "{err}");
}

fn fs_magic(p: &Path) -> Option<i64> {
    let c = CString::new(p.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0).then_some(st.f_type as i64)
}

const TMPFS_MAGIC: i64 = 0x0102_1994;

fn run_ok(cmd: &str, args: &[&str]) -> Result<String, String> {
    match Command::new(cmd).args(args).output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => Err(format!(
            "{cmd} {args:?}: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("{cmd}: {e}")),
    }
}

/// A mount undone on drop.
struct Mount(PathBuf);
impl Drop for Mount {
    fn drop(&mut self) {
        if run_ok("umount", &[s(&self.0)]).is_err() {
            let _ = run_ok("umount", &["-l", s(&self.0)]);
        }
    }
}

/// A loop device detached on drop.
struct Loop(String);
impl Drop for Loop {
    fn drop(&mut self) {
        let _ = run_ok("losetup", &["-d", &self.0]);
    }
}

#[test]
fn layout_on_tmpfs_is_a_clear_error() {
    let t = Scratch::new("tmpfs");
    let (dir, _mount) = if fs_magic(Path::new("/dev/shm")) == Some(TMPFS_MAGIC) {
        let d = Path::new("/dev/shm").join(format!("fsbench-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        (d, None)
    } else if is_root() {
        let m = t.path().join("mnt");
        std::fs::create_dir_all(&m).unwrap();
        if let Err(e) = run_ok("mount", &["-t", "tmpfs", "-o", "size=8m", "none", s(&m)]) {
            skip(&format!(
                "skipping: no tmpfs at /dev/shm and cannot mount one: {e}"
            ));
            return;
        }
        (m.clone(), Some(Mount(m)))
    } else {
        skip("skipping: no tmpfs at /dev/shm and not root");
        return;
    };
    std::fs::write(dir.join("file"), vec![1u8; 100_000]).unwrap();
    let out = fsbench(&["layout", s(&dir)]);
    let out_file = fsbench(&["layout", s(&dir.join("file"))]);
    if _mount.is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    for out in [out, out_file] {
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("layout: FIEMAP not supported on tmpfs at"),
            "{err}"
        );
        assert!(err.contains("file"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

fn fallocate(fd: i32, mode: i32, off: u64, len: u64) {
    let r = unsafe { libc::fallocate(fd, mode, off as i64, len as i64) };
    assert_eq!(r, 0, "fallocate: {}", std::io::Error::last_os_error());
}

fn write_file(path: &Path, bytes: u64, chunk: usize, sync: bool) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    let buf: Vec<u8> = (0..chunk).map(|i| (i * 7 + 1) as u8).collect();
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk as u64) as usize;
        f.write_all(&buf[..n]).unwrap();
        left -= n as u64;
    }
    if sync {
        f.sync_all().unwrap();
    }
}

fn layout_json(t: &Scratch, target: &Path, extra: &[&str]) -> Value {
    let js = t.path().join("layout.json");
    let mut args = vec!["layout", s(target), "--json", s(&js)];
    args.extend_from_slice(extra);
    ok(fsbench(&args));
    json(&js)
}

#[test]
fn layout_and_mount_boundaries_on_loop_ext4() {
    if !is_root() {
        skip("skipping: needs root for loop devices and mount");
        return;
    }
    for tool in ["losetup", "mkfs.ext4", "mount", "umount"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(true)
        {
            skip(&format!("skipping: {tool} not found"));
            return;
        }
    }
    let t = Scratch::new("ext4");
    let img = t.path().join("ext4.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(96 << 20)
        .unwrap();
    if let Err(e) = run_ok(
        "mkfs.ext4",
        &["-q", "-F", "-b", "4096", "-N", "4096", s(&img)],
    ) {
        skip(&e);
        return;
    }
    let dev = match run_ok("losetup", &["-f", "--show", s(&img)]) {
        Ok(d) => Loop(d),
        Err(e) => {
            skip(&format!("skipping: no loop device: {e}"));
            return;
        }
    };
    // Tree: root/{plain, mnt/ (ext4 mounted here)}.
    let root = t.path().join("root");
    let mnt = root.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    std::fs::write(root.join("plain"), b"abc").unwrap();
    if let Err(e) = run_ok("mount", &["-t", "ext4", &dev.0, s(&mnt)]) {
        skip(&format!("skipping: cannot mount: {e}"));
        return;
    }
    let _mount = Mount(mnt.clone());
    // (Drop order: _mount, then dev, then t: unmount, detach, delete.)

    // 1. A large file written sequentially is contiguous.
    let big = mnt.join("big");
    write_file(&big, 24 << 20, 1 << 20, true);
    let v = layout_json(&t, &big, &[]);
    assert_eq!(v["fs_type"], "ext2/ext3/ext4");
    assert_eq!(v["block_size"], 4096);
    assert_eq!(v["blocks"], (24 << 20) / 4096);
    let fresh = v["score"].as_f64().unwrap();
    assert!(fresh > 0.99, "fresh file scored {fresh}");

    // 2. Delayed allocation is flagged without --sync and resolved with it.
    let lazy = mnt.join("lazy");
    write_file(&lazy, 256 << 10, 64 << 10, false);
    let v = layout_json(&t, &lazy, &[]);
    let v_sync = layout_json(&t, &lazy, &["--sync"]);
    assert_eq!(v_sync["unknown_extents"], 0);
    assert_eq!(v_sync["blocks"], 64);
    if v["unknown_extents"].as_u64().unwrap() == 0 {
        eprintln!("note: writeback allocated `lazy` before layout looked at it");
    }

    // 3. Free space cut into single blocks: fill the rest of the file system
    // with a preallocated file, punch out every other block, then write a
    // file that can only land in the holes.
    let c = CString::new(mnt.as_os_str().as_bytes()).unwrap();
    let mut vfs: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut vfs) }, 0);
    let free = vfs.f_bavail as u64 * vfs.f_frsize as u64;
    let filler_len = (free - (2 << 20)) / 4096 * 4096;
    let filler = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o644)
        .open(mnt.join("filler"))
        .unwrap();
    let fd = filler.as_raw_fd();
    fallocate(fd, 0, 0, filler_len);
    let mut off = 0;
    while off < filler_len {
        fallocate(
            fd,
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off,
            4096,
        );
        off += 8192;
    }
    filler.sync_all().unwrap();
    drop(filler);
    let victim = mnt.join("victim");
    write_file(&victim, 8 << 20, 64 << 10, true);
    let v = layout_json(&t, &victim, &["--sync"]);
    let aged = v["score"].as_f64().unwrap();
    let fragments = v["fragments"].as_u64().unwrap();
    assert!(aged < 0.5, "fragmented file scored {aged}");
    // More extents than one FIEMAP call returns (256): the loop continued.
    assert!(
        v["extents"].as_u64().unwrap() > 256,
        "only {} extents",
        v["extents"]
    );
    if let Ok(ff) = run_ok("filefrag", &[s(&victim)]) {
        // "<path>: N extents found" counts physical discontiguities, as ours.
        let n: u64 = ff
            .rsplit(": ")
            .next()
            .and_then(|t| t.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert_eq!(n, fragments, "filefrag says {ff}");
    }
    eprintln!("ext4: fresh file {fresh:.4}, file written into punched holes {aged:.4}");

    // The whole file system: the filler (unwritten extents) is the most
    // fragmented file.
    let v = layout_json(&t, &mnt, &["--top", "2"]);
    assert!(v["unwritten_extents"].as_u64().unwrap() > 1000);
    assert_eq!(v["most_fragmented"][0]["path"], "filler");
    assert_eq!(v["most_fragmented"][1]["path"], "victim");
    let agg = v["score"].as_f64().unwrap();
    assert!(agg < fresh, "aggregate {agg}");

    // 4. Mount points: not crossed by default, crossed when asked.
    let js = t.path().join("scan.json");
    ok(fsbench(&["scan", s(&root), "--json", s(&js)]));
    let v = json(&js);
    assert_eq!(v["mount_points_skipped"], 1);
    assert_eq!(v["files"], 1);
    assert_eq!(v["dirs"], 1);
    ok(fsbench(&[
        "scan",
        s(&root),
        "--cross-mounts",
        "--json",
        s(&js),
    ]));
    let v = json(&js);
    assert_eq!(v["mount_points_skipped"], 0);
    assert_eq!(v["files"], 1 + 4); // plain + big, lazy, filler, victim
    assert!(v["dirs"].as_u64().unwrap() >= 2); // mnt, lost+found
}

/// Group of a block and of an inode, from `dumpe2fs -h` (not from fsbench's own reading of
/// the superblock), and the physical blocks of a file from `filefrag -v`.
struct Ext4Groups {
    blocks_per_group: u64,
    inodes_per_group: u64,
    first_data_block: u64,
}

impl Ext4Groups {
    fn of(dev: &str) -> Ext4Groups {
        let out = run_ok("dumpe2fs", &["-h", dev]).unwrap();
        let field = |name: &str| -> u64 {
            out.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim_start_matches(':').trim().parse().ok())
                .unwrap_or_else(|| panic!("{name} not in dumpe2fs -h:\n{out}"))
        };
        Ext4Groups {
            blocks_per_group: field("Blocks per group"),
            inodes_per_group: field("Inodes per group"),
            first_data_block: field("First block"),
        }
    }

    /// Whether any block of `file` lies outside the group of its directory's inode.
    fn split(&self, file: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        let dir_ino = std::fs::metadata(file.parent().unwrap()).unwrap().ino();
        let home = (dir_ino - 1) / self.inodes_per_group;
        let out = run_ok("filefrag", &["-v", "-b4096", s(file)]).unwrap();
        out.lines()
            .filter_map(|l| {
                // " 0:        0..      63:      12480..     12543:     64: ..."
                let cols: Vec<&str> = l.split(':').collect();
                let phys = cols.get(2)?.trim();
                let (a, b) = phys.split_once("..")?;
                Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?))
            })
            .any(|(a, b)| {
                let g = |x: u64| (x - self.first_data_block) / self.blocks_per_group;
                g(a) != home || g(b) != home
            })
    }
}

#[test]
fn split_files_and_locality_on_a_tree_built_to_split() {
    if !is_root() {
        skip("skipping: needs root for loop devices, mount and the superblock");
        return;
    }
    for tool in [
        "losetup",
        "mkfs.ext4",
        "mount",
        "umount",
        "dumpe2fs",
        "filefrag",
    ] {
        if run_ok("sh", &["-c", &format!("command -v {tool}")]).is_err() {
            skip(&format!("skipping: {tool} not found"));
            return;
        }
    }
    let t = Scratch::new("split");
    let img = t.path().join("ext4.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    // Eight block groups of 8 MiB, each with its own inode table (no flex_bg), so orlov
    // spreads top-level directories over them.
    let mkfs = ["-q", "-F", "-b", "4096", "-g", "2048", "-O", "^flex_bg"];
    if let Err(e) = run_ok("mkfs.ext4", &[&mkfs[..], &[s(&img)]].concat()) {
        skip(&e);
        return;
    }
    let dev = match run_ok("losetup", &["-f", "--show", s(&img)]) {
        Ok(d) => Loop(d),
        Err(e) => {
            skip(&format!("skipping: no loop device: {e}"));
            return;
        }
    };
    let mnt = t.path().join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    run_ok("mount", &["-t", "ext4", &dev.0, s(&mnt)]).unwrap();
    let _mount = Mount(mnt.clone());
    let (a, b) = (mnt.join("a"), mnt.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    for i in 0..3 {
        write_file(&a.join(format!("small{i}")), 4096, 4096, true);
    }
    // 20 MiB cannot fit in one 8 MiB group: split by construction.
    write_file(&a.join("big"), 20 << 20, 1 << 20, true);
    // Written in b, then moved to a: its data stays where b's allocation put it.
    write_file(&b.join("moved"), 256 << 10, 64 << 10, true);
    std::fs::rename(b.join("moved"), a.join("moved")).unwrap();

    let groups = Ext4Groups::of(&dev.0);
    let files: Vec<PathBuf> = std::fs::read_dir(&a)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let expected = files.iter().filter(|f| groups.split(f)).count() as u64;
    assert!(
        groups.split(&a.join("big")),
        "a 20 MiB file in 8 MiB groups"
    );
    let v = layout_json(&t, &mnt, &["--sync"]);
    assert_eq!(v["split_files"].as_u64(), Some(expected), "{v}");
    assert_eq!(v["split_checked_files"], 5, "{v}");
    let g = &v["geometry"];
    assert_eq!(g["fs"], "ext4", "{v}");
    assert_eq!(g["group_blocks"], 2048);
    assert_eq!(g["groups"], 8);
    assert_eq!(
        g["inodes_per_group"].as_u64(),
        Some(groups.inodes_per_group)
    );
    // The read in directory order: every block pair counted once, the score a share.
    let pairs = v["locality_pairs"].as_u64().unwrap();
    assert_eq!(pairs, v["blocks"].as_u64().unwrap() - 1);
    let loc = v["locality"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&loc), "{loc}");
    assert!(v["locality_contiguous"].as_u64().unwrap() >= v["contiguous"].as_u64().unwrap());
    // The text says the same.
    let out = ok(fsbench(&["layout", s(&mnt)]));
    assert!(
        out.contains(&format!("split files {expected} of 5")),
        "{out}"
    );
    assert!(out.contains("locality"), "{out}");
}
