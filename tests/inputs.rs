//! Inputs without a bound are refused, with a message naming the path: a workload that is a
//! FIFO, a device or larger than 16 MiB, a pseudo file to verify, pseudo files to hash. Each
//! command must end within a deadline (the unbounded reads never ended, or grew to gigabytes).

mod common;
use common::*;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

/// Run fsbench with `args`, failing the test if it has not ended within 60 s.
fn run_bounded(args: &[&str]) -> Output {
    let child = bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fsbench starts");
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output().expect("output")));
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(o) => o,
        Err(_) => {
            // SAFETY: the child is not reaped until its output is collected.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let o = rx.recv().expect("ends");
            panic!("{args:?} did not end within 60 s: {}", text(&o));
        }
    }
}

fn refused(args: &[&str], path: &str, why: &str) {
    let o = run_bounded(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
    assert!(
        err.contains(path),
        "{args:?}: the message names {path}: {err}"
    );
    assert!(
        err.contains(why),
        "{args:?}: the message says {why:?}: {err}"
    );
}

#[test]
fn a_workload_must_be_a_regular_file_of_at_most_16_mib() {
    let dir = Scratch::new("inputs-workload");
    // A FIFO with no writer: opening it waited for one; with a writer, it never ended.
    let fifo = dir.path().join("w.f");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let f = fifo.to_str().unwrap();
    refused(&["check", f], f, "a FIFO; only regular files are read");
    refused(&["run", f, "--dir", dir.s()], f, "a FIFO");
    // A FIFO named like a built-in's name is still read as the file it is.
    let bare = dir.path().join("pipe");
    let c = std::ffi::CString::new(bare.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let o = bin()
        .current_dir(dir.path())
        .args(["check", "pipe"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("pipe: a FIFO"),
        "{}",
        text(&o)
    );
    // An endless device: `check /dev/zero` grew to 2.1 GB.
    if Path::new("/dev/zero").exists() {
        refused(&["check", "/dev/zero"], "/dev/zero", "a character device");
    }
    // Too large (sparse: the size alone decides, nothing is read).
    let big = dir.path().join("big.f");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((16 << 20) + 1)
        .unwrap();
    let b = big.to_str().unwrap();
    refused(
        &["check", b],
        b,
        "a workload file may have at most 16777216 (16 MiB)",
    );
    // 16 MiB exactly is read (and then judged as text); its diagnostics show the one long
    // line in part (they printed all of it, twice).
    let edge = dir.path().join("edge.f");
    let mut text16 = b"# ".to_vec();
    text16.resize((16 << 20) - 1, b'x');
    text16.push(b'\n');
    std::fs::write(&edge, &text16).unwrap();
    let o = run_bounded(&["check", edge.to_str().unwrap()]);
    assert!(
        o.stderr.len() < 10_000,
        "{} bytes of diagnostics",
        o.stderr.len()
    );
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("at most"),
        "{}",
        text(&o)
    );
}

#[test]
fn verify_refuses_pseudo_files() {
    let p = "/proc/self/pagemap";
    if !Path::new(p).exists() {
        skip("no /proc/self/pagemap here");
        return;
    }
    // pagemap reads 8 bytes per page of the address space: hundreds of gigabytes.
    refused(&["verify", p], p, "on proc, a pseudo file system");
}

#[test]
fn scan_hash_skips_pseudo_files_and_says_so() {
    if !Path::new("/proc/self/status").exists() {
        skip("no /proc here");
        return;
    }
    let dir = Scratch::new("inputs-scan");
    let snap = dir.path().join("p.snap");
    let o = run_bounded(&["scan", "/proc/self", "--hash", "-o", snap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("/proc/self/") && err.contains("cannot hash: on proc"),
        "{err}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("hashed 0 B"), "{out}");
    assert!(snap.is_file());
}

#[test]
fn result_and_configuration_files_must_be_regular_files() {
    let dir = Scratch::new("inputs-results");
    let fifo = dir.path().join("r.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let f = fifo.to_str().unwrap();
    refused(&["compare", f, f], f, "a FIFO");
    let html = dir.path().join("r.html");
    refused(&["report", f, "-o", html.to_str().unwrap()], f, "a FIFO");
    refused(
        &["postmark", f, "--dir", dir.s()],
        f,
        "a FIFO; only regular files are read",
    );
    if Path::new("/dev/zero").exists() {
        refused(
            &["compare", "/dev/zero", "/dev/zero"],
            "/dev/zero",
            "a character device",
        );
    }
}

#[test]
fn diff_refuses_snapshots_that_are_not_regular_files() {
    let dir = Scratch::new("inputs-diff");
    let fifo = dir.path().join("s.snap");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let f = fifo.to_str().unwrap();
    refused(&["diff", f, f], f, "a FIFO");
    // /dev/zero has no first line: reading one never ended.
    if Path::new("/dev/zero").exists() {
        refused(
            &["diff", "/dev/zero", "/dev/zero"],
            "/dev/zero",
            "a character device",
        );
    }
}
