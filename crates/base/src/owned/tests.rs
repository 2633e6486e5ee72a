use super::audit::{self, Verdict};
use super::*;
use std::ffi::CString;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(tag: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("fsbench-owned-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn dirfd(p: &Path) -> OwnedFd {
    std::fs::File::open(p).unwrap().into()
}

/// Say a test is skipped where the user sees it (the harness captures the printing macros).
fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why}");
}

fn is_root() -> bool {
    beneath::euid() == 0
}

/// A bind mount, undone on drop (root only).
struct Bind(PathBuf);
impl Bind {
    fn new(src: &Path, dst: &Path) -> Option<Bind> {
        let ok = Command::new("mount")
            .args(["--bind"])
            .arg(src)
            .arg(dst)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Bind(dst.to_path_buf()))
    }
}
impl Drop for Bind {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn writes_never_go_through_links_or_shared_data() {
    let base = scratch("links");
    let outside = scratch("links-outside");
    std::fs::write(outside.join("victim"), b"precious").unwrap();
    symlink(outside.join("victim"), base.join("sym")).unwrap();
    std::fs::hard_link(outside.join("victim"), base.join("hard")).unwrap();
    std::fs::write(base.join("mine"), b"old").unwrap();
    let d = dirfd(&base);
    let fd = d.as_raw_fd();
    // Through a symbolic link: refused whatever the mode.
    for how in [Open::Own, Open::OwnOrNew, Open::New] {
        assert!(
            open_write(fd, c"sym", how, libc::O_WRONLY).is_err(),
            "{how:?}"
        );
    }
    // A hard link to data outside: refused in place, replaced by a new inode on request.
    let e = open_write(fd, c"hard", Open::Own, libc::O_WRONLY).unwrap_err();
    assert!(e.to_string().contains("2 hard links"), "{e}");
    assert!(open_truncated(fd, c"hard", Open::OwnOrNew, libc::O_WRONLY).is_err());
    let f = open_truncated(fd, c"hard", Open::Replace, libc::O_WRONLY).unwrap();
    std::fs::File::from(f).write_all(b"new").unwrap();
    assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"precious");
    assert_eq!(std::fs::read(base.join("hard")).unwrap(), b"new");
    // The link itself is replaced, not its target.
    let f = open_write(fd, c"sym", Open::Replace, libc::O_WRONLY).unwrap();
    drop(f);
    assert!(base.join("sym").symlink_metadata().unwrap().is_file());
    // Our own file: written in place, truncated when asked.
    let f = open_truncated(fd, c"mine", Open::Own, libc::O_WRONLY).unwrap();
    drop(f);
    assert_eq!(std::fs::read(base.join("mine")).unwrap(), b"");
    assert!(open_write(fd, c"mine", Open::New, libc::O_WRONLY).is_err());
    assert!(open_write(fd, c"absent", Open::Own, libc::O_WRONLY).is_err());
    assert!(open_write(fd, c"absent", Open::OwnOrNew, libc::O_WRONLY).is_ok());
    assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"precious");
    std::fs::remove_dir_all(&base).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

#[test]
fn removal_removes_links_not_targets() {
    let base = scratch("remove");
    let outside = scratch("remove-outside");
    std::fs::write(outside.join("victim"), b"precious").unwrap();
    std::fs::create_dir_all(base.join("a/b")).unwrap();
    symlink(&outside, base.join("a/link")).unwrap();
    std::fs::hard_link(outside.join("victim"), base.join("a/b/hard")).unwrap();
    std::fs::write(base.join("keep"), b"x").unwrap();
    let d = dirfd(&base);
    remove::contents(d.as_raw_fd(), &|n| n.to_bytes() == b"keep").unwrap();
    assert!(base.join("keep").exists() && !base.join("a").exists());
    assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"precious");
    remove::tree(d.as_raw_fd(), c"keep").unwrap();
    assert!(beneath::list_names(d.as_raw_fd()).unwrap().is_empty());
    std::fs::remove_dir_all(&base).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

#[test]
fn nothing_is_written_or_removed_across_a_bind_mount() {
    if !is_root() {
        skip(
            "nothing_is_written_or_removed_across_a_bind_mount",
            "needs root to bind-mount",
        );
        return;
    }
    // A bind mount of the same file system: the device is the same, the mount is not.
    let base = scratch("bind");
    let outside = scratch("bind-outside");
    std::fs::write(outside.join("victim"), b"precious").unwrap();
    std::fs::write(outside.join("file"), b"precious").unwrap();
    std::fs::create_dir_all(base.join("d/m")).unwrap();
    std::fs::write(base.join("d/f"), b"ours").unwrap();
    let Some(_m) = Bind::new(&outside, &base.join("d/m")) else {
        skip(
            "nothing_is_written_or_removed_across_a_bind_mount",
            "mount --bind failed",
        );
        return;
    };
    let Some(_fm) = Bind::new(&outside.join("file"), &base.join("d/f")) else {
        skip(
            "nothing_is_written_or_removed_across_a_bind_mount",
            "mount --bind of a file failed",
        );
        return;
    };
    let d = dirfd(&base);
    let fd = d.as_raw_fd();
    let e = beneath::open_dir_path(fd, b"d/m").unwrap_err();
    assert!(beneath::is_mount_error(&e), "{e}");
    let sub = beneath::open_dir(fd, c"d").unwrap();
    assert!(beneath::open_dir(sub.as_raw_fd(), c"m").is_err());
    // A file bind-mounted over one of ours: neither written nor truncated.
    for how in [Open::Own, Open::OwnOrNew, Open::Replace] {
        assert!(open_truncated(sub.as_raw_fd(), c"f", how, libc::O_WRONLY).is_err());
    }
    let mut seen = Vec::new();
    let sum = audit::walk(fd, &mut |e| {
        seen.push((
            String::from_utf8_lossy(e.rel).into_owned(),
            e.verdict.clone(),
        ));
        Ok(())
    })
    .unwrap();
    assert_eq!(sum.mounts, 2, "{seen:?}");
    assert!(seen.contains(&("d/m".into(), Verdict::Mount)), "{seen:?}");
    assert!(seen.contains(&("d/f".into(), Verdict::Mount)), "{seen:?}");
    assert!(!seen.iter().any(|(p, _)| p.starts_with("d/m/")), "{seen:?}");
    let e = remove::tree(fd, c"d").unwrap_err();
    assert!(e.to_string().contains("mounted"), "{e}");
    assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"precious");
    assert_eq!(std::fs::read(outside.join("file")).unwrap(), b"precious");
    drop((_fm, _m));
    std::fs::remove_dir_all(&base).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

#[test]
fn the_audit_names_what_is_not_ours_in_name_order() {
    let base = scratch("audit");
    let outside = scratch("audit-outside");
    std::fs::write(outside.join("victim"), b"precious").unwrap();
    std::fs::create_dir_all(base.join("b/c")).unwrap();
    std::fs::write(base.join("b/c/f1"), b"x").unwrap();
    std::fs::write(base.join("a"), b"x").unwrap();
    std::fs::hard_link(outside.join("victim"), base.join("b/hard")).unwrap();
    symlink("a", base.join("b/sym")).unwrap();
    let d = dirfd(&base);
    let mut seen = Vec::new();
    let sum = audit::walk(d.as_raw_fd(), &mut |e| {
        let ours = e.verdict == Verdict::Ours;
        seen.push(format!("{}:{}", String::from_utf8_lossy(e.rel), ours));
        Ok(())
    })
    .unwrap();
    assert_eq!(
        seen,
        [
            "a:true",
            "b:true",
            "b/c:true",
            "b/hard:false",
            "b/sym:false",
            "b/c/f1:true"
        ]
    );
    assert_eq!((sum.entries, sum.foreign, sum.mounts), (6, 2, 0));
    std::fs::remove_dir_all(&base).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

#[test]
fn a_marker_is_trusted_only_from_its_owner_in_a_closed_directory() {
    use std::os::unix::fs::PermissionsExt;
    let base = scratch("trust");
    let run = base.join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(!trust::is_run_dir(&run));
    std::fs::write(
        run.join(trust::MARKER),
        format!("{}\n", trust::MARKER_HEADER),
    )
    .unwrap();
    assert!(trust::is_run_dir(&run));
    // Writable by others: anyone could have planted it.
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(!trust::is_run_dir(&run));
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A marker that is a link: not trusted.
    std::fs::remove_file(run.join(trust::MARKER)).unwrap();
    std::fs::write(base.join("m"), format!("{}\n", trust::MARKER_HEADER)).unwrap();
    symlink(base.join("m"), run.join(trust::MARKER)).unwrap();
    assert!(!trust::is_run_dir(&run));
    std::fs::remove_file(run.join(trust::MARKER)).unwrap();
    std::fs::write(run.join(trust::MARKER), b"something else").unwrap();
    assert!(!trust::is_run_dir(&run));
    if is_root() {
        // Another user's marker in a directory of ours.
        std::fs::write(
            run.join(trust::MARKER),
            format!("{}\n", trust::MARKER_HEADER),
        )
        .unwrap();
        let c = CString::new(run.join(trust::MARKER).to_str().unwrap()).unwrap();
        // SAFETY: a valid path.
        assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
        assert!(!trust::is_run_dir(&run));
        let why = trust::check_run_dir(dirfd(&run).as_raw_fd()).unwrap_err();
        assert!(why.to_string().contains("uid 65534"), "{why}");
    }
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn open_following_follows_inner_links_and_refuses_the_way_out() {
    let base = scratch("obeneath");
    let outside = scratch("obeneath-outside");
    std::fs::write(outside.join("victim"), b"precious").unwrap();
    std::fs::create_dir(base.join("d")).unwrap();
    std::fs::write(base.join("d/f"), b"in").unwrap();
    symlink("d", base.join("in")).unwrap();
    symlink("../d/f", base.join("d/up")).unwrap();
    symlink(&outside, base.join("abs")).unwrap();
    symlink("../../../../../../../..", base.join("rel")).unwrap();
    let d = dirfd(&base);
    let fd = d.as_raw_fd();
    let rd = libc::O_RDONLY;
    assert!(open_following(fd, c"in/f", rd, 0).is_ok());
    assert!(open_following(fd, c"d/up", rd, 0).is_ok());
    assert!(open_following(fd, c"", libc::O_PATH, 0).is_ok());
    for bad in [
        c"../x",
        c"d/../../x",
        c"/etc/passwd",
        c"abs/victim",
        c"rel/tmp",
    ] {
        let e = open_following(fd, bad, libc::O_WRONLY | libc::O_TRUNC, 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EXDEV), "{bad:?}: {e}");
    }
    assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"precious");
    std::fs::remove_dir_all(&base).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

use std::io::Write;

/// The layer's wall: no module of `src/` outside `crates/base/src/owned/` and `crates/base/src/beneath.rs` removes,
/// renames or truncates anything itself. Test code (`#[cfg(test)]` items and `tests.rs`
/// files) may clean up its own scratch directories.
#[test]
fn nothing_outside_the_layer_removes_renames_or_truncates() {
    const CALLS: [&str; 11] = [
        "remove_file(",
        "remove_dir_all(",
        "remove_dir(",
        "libc::unlink",
        "libc::rmdir",
        "libc::rename",
        "fs::rename(",
        "libc::ftruncate",
        ".truncate(true)",
        "| libc::O_TRUNC",
        "libc::O_TRUNC |",
    ];
    let mut found = Vec::new();
    for (root, p) in crate::testsrc::rust_files() {
        let rel = p
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let layer = rel.starts_with("owned/") || rel == "beneath.rs";
        if layer || p.extension().is_none_or(|e| e != "rs") || rel.ends_with("tests.rs") {
            continue;
        }
        // The trace's parser and its choke point name `O_TRUNC` as a flag of a traced call
        // (what `creat` means, which flags are passed on to this layer's open): no open.
        let describes_flags = rel.starts_with("trace/capture/") || rel == "trace/confine.rs";
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, line) in code_lines(&text) {
            let hit = CALLS.iter().find(|c| {
                line.match_indices(*c).any(|(at, _)| {
                    let flag = c.contains("O_TRUNC");
                    // A call of this layer's own (`crate::owned::path::remove_file`).
                    !line[..at].trim_end_matches("path::").ends_with("owned::")
                        && !(flag && (describes_flags || line.contains('&')))
                })
            });
            if let Some(c) = hit {
                found.push(format!("{}:{}: {c}: {}", p.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "go through crate::owned (crates/base/src/owned/) instead:\n{}",
        found.join("\n")
    );
}

/// The lines of a source file outside comments, string literals and `#[cfg(test)]` items,
/// with their indexes (a line inside a literal or a test item comes back empty).
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_str = false;
    let mut skip_depth: Option<i64> = None;
    let mut depth = 0i64;
    let mut test_next = false;
    for (i, line) in text.lines().enumerate() {
        let mut code = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if in_str => {
                    chars.next();
                }
                '"' => in_str = !in_str,
                '/' if !in_str && chars.peek() == Some(&'/') => break,
                _ if in_str => {}
                _ => code.push(c),
            }
        }
        if code.trim() == "#[cfg(test)]" {
            test_next = true;
            continue;
        }
        let opens = code.matches('{').count() as i64;
        let closes = code.matches('}').count() as i64;
        if test_next && skip_depth.is_none() {
            test_next = false;
            if opens > 0 {
                skip_depth = Some(depth);
            }
            depth += opens - closes;
            out.push((i, String::new()));
            continue;
        }
        depth += opens - closes;
        match skip_depth {
            Some(d) if depth > d => out.push((i, String::new())),
            Some(_) => {
                skip_depth = None;
                out.push((i, String::new()));
            }
            None => out.push((i, code)),
        }
    }
    out
}
