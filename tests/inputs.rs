//! Inputs without a bound are refused, with a message naming the path: a workload that is a
//! FIFO, a device or larger than 16 MiB, a pseudo file to verify, pseudo files to hash. Each
//! command must end within a deadline (the unbounded reads never ended, or grew to gigabytes).

#[path = "it/common.rs"]
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
    refused(
        &["check", f],
        f,
        "a FIFO; only regular files (or `-` for standard input) are read",
    );
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
        "a FIFO; only regular files (or `-` for standard input) are read",
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

/// What a bounded run of fsbench ended with: its exit code, standard error, and the peak
/// resident memory of the process (KiB, from `wait4`'s resource usage).
struct Measured {
    code: Option<i32>,
    stderr: String,
    max_rss_kib: i64,
}

/// Run fsbench with `args` and `stdin`, under an address-space limit of 2 GiB (an unbounded
/// read ends in an allocation failure, not in the machine's memory), killed after
/// `secs` seconds (a wait for a writer fails the test instead of blocking it). The child is
/// reaped by `wait4`, for its resource usage, not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run_measured(args: &[&str], stdin: Stdio, secs: u64) -> Measured {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let mut cmd = bin();
    cmd.args(args)
        .stdin(stdin)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("fsbench starts");
    let pid = child.id() as libc::pid_t;
    let mut err = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: an rusage the call fills; the child is reaped here, not by `Child`.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        let _ = tx.send((status, ru.ru_maxrss));
    });
    let (status, max_rss_kib) = match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(x) => x,
        Err(_) => {
            // SAFETY: the child is not reaped until the waiting thread returns.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let _ = rx.recv();
            panic!(
                "{args:?} did not end within {secs} s: {}",
                reader.join().unwrap()
            );
        }
    };
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Measured {
        code,
        stderr: reader.join().unwrap(),
        max_rss_kib,
    }
}

/// The peak resident memory a refusal may take: fsbench's own start-up is some 20 MB.
const REFUSAL_RSS_KIB: i64 = 50 << 10;

fn refused_small(args: &[&str], stdin: Stdio, path: &str, why: &str) {
    let m = run_measured(args, stdin, 30);
    assert_eq!(m.code, Some(1), "{args:?}: {}", m.stderr);
    assert!(
        m.stderr.contains(path),
        "{args:?}: names {path}: {}",
        m.stderr
    );
    assert!(
        m.stderr.contains(why),
        "{args:?}: says {why:?}: {}",
        m.stderr
    );
    assert!(
        m.max_rss_kib < REFUSAL_RSS_KIB,
        "{args:?}: {} KiB resident to refuse it ({})",
        m.max_rss_kib,
        m.stderr
    );
}

#[test]
fn endless_and_huge_inputs_are_refused_in_little_memory() {
    if !Path::new("/dev/zero").exists() || !Path::new("/proc/self/pagemap").exists() {
        skip("no /dev/zero or /proc/self/pagemap here");
        return;
    }
    let dir = Scratch::new("inputs-huge");
    let null = Stdio::null;
    // A plan read whole: /dev/zero grew to gigabytes, pagemap to its hundreds.
    let (z, pm) = ("/dev/zero", "/proc/self/pagemap");
    refused_small(
        &["experiment", z, "--dry-run"],
        null(),
        z,
        "a character device",
    );
    refused_small(&["experiment", pm, "--dry-run"], null(), pm, "on proc");
    // An 8 GiB sparse file: a plan too large to read, an strace log of one endless line.
    let sparse = dir.path().join("big.log");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let s = sparse.to_str().unwrap();
    refused_small(
        &["experiment", s, "--dry-run"],
        null(),
        s,
        "a plan may have at most",
    );
    let out = dir.path().join("x.trace");
    let o = out.to_str().unwrap();
    let import = ["trace", "import", s, "-o", o];
    refused_small(&import, null(), s, "a line longer than 1048576 bytes");
    refused_small(
        &["trace", "import", z, "-o", o],
        null(),
        z,
        "a character device",
    );
    // `-`: standard input, read with the same bounds.
    let zero = || Stdio::from(std::fs::File::open(z).unwrap());
    let exp = ["experiment", "-", "--dry-run"];
    refused_small(
        &exp,
        zero(),
        "standard input",
        "a plan may have at most 4 MiB",
    );
    let import = ["trace", "import", "-", "-o", o];
    refused_small(&import, zero(), "-", "a line longer than 1048576 bytes");
    assert!(!out.exists(), "no trace written");
}

/// A FIFO with no writer where fsbench reads a file or works in a directory: each open of
/// it waited for a writer for ever (signals did not end the wait). Each is refused at once,
/// naming the path and what it is.
#[test]
fn fifos_are_refused_not_waited_on() {
    let dir = Scratch::new("inputs-fifo");
    let fifo = dir.path().join("p");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let f = fifo.to_str().unwrap();
    let out = dir.path().join("x.trace");
    let o = out.to_str().unwrap();
    let cases: [&[&str]; 9] = [
        &["experiment", f, "--dry-run"],
        &["trace", "import", f, "-o", o],
        &["trace", "show", f],
        &["trace", "stats", f],
        &["age", f, "--ops", "1"],
        &["selftest", "age", "--dir", f],
        &["selftest", "layout", "--dir", f, "--files", "10"],
        &["run", "fileserver", "--dir", f, "-s", "nfiles=10"],
        &["verify", f],
    ];
    for args in cases {
        let m = run_measured(args, Stdio::null(), 20);
        assert_eq!(m.code, Some(1), "{args:?}: {}", m.stderr);
        assert!(
            m.stderr.contains(f) && m.stderr.contains("a FIFO"),
            "{args:?}: names the path and says it is a FIFO: {}",
            m.stderr
        );
    }
    // A fio job's `directory=` naming the FIFO: refused by `check`, at its place.
    let job = dir.path().join("j.fio");
    std::fs::write(&job, format!("[j]\nrw=read\nsize=1m\ndirectory={f}\n")).unwrap();
    let j = job.to_str().unwrap();
    for cmd in ["check", "run"] {
        let m = run_measured(&[cmd, j], Stdio::null(), 20);
        assert_eq!(m.code, Some(1), "{cmd}: {}", m.stderr);
        let at = format!("{j}:4:11");
        assert!(
            m.stderr.contains(&at) && m.stderr.contains("a FIFO, not a directory"),
            "{cmd}: {}",
            m.stderr
        );
    }
}

/// `read /proc/self` read `pagemap` (hundreds of gigabytes, "size" 0) and ignored signals.
/// A tree on a pseudo file system is refused, naming it.
#[test]
fn read_refuses_trees_on_pseudo_file_systems() {
    if !Path::new("/proc/self/pagemap").exists() {
        skip("no /proc here");
        return;
    }
    let m = run_measured(&["read", "/proc/self"], Stdio::null(), 20);
    assert_eq!(m.code, Some(1), "{}", m.stderr);
    assert!(
        m.stderr.contains("/proc/self") && m.stderr.contains("on proc, a pseudo file system"),
        "{}",
        m.stderr
    );
}
