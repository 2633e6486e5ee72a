//! Simulated remote file system end to end: the real binary mounts a server tree
//! through FUSE, and the tests time reads against the network model, check the
//! lookaside cache, read-only and writable mounts, and that `remove` leaves
//! nothing mounted or running. Needs root and /dev/fuse; skips elsewhere.

use crate::common::skip;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_fsbench");
const MIB: usize = 1 << 20;

/// One remote at a time: timing tests should not share the two cores.
static SERIAL: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<String> {
    if !crate::common::is_root() {
        return Some("not root".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse missing".into());
    }
    if !fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .contains("fuse")
    {
        return Some("no fuse in /proc/filesystems".into());
    }
    None
}

/// Deterministic, incompressible-enough content.
/// What every test here starts with: a skip that says why where remotes cannot run, else
/// the serial lock (one remote test at a time) and fresh directories for one remote. The
/// remote is declared after the lock, so it is torn down before the next test starts.
fn begin(what: &str, tag: &str) -> Option<(std::sync::MutexGuard<'static, ()>, Remote)> {
    if let Some(why) = skip_reason() {
        skip(&format!("skipping remote {what} test: {why}"));
        return None;
    }
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    Some((serial, Remote::new(tag)))
}

fn content(len: usize, seed: u8) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9 ^ seed as u32;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// A remote under a scratch root; removed (and checked gone) on drop.
struct Remote {
    root: PathBuf,
    name: String,
    removed: bool,
}

impl Remote {
    fn new(tag: &str) -> Remote {
        let root = PathBuf::from(format!("/tmp/fsbench-remote-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for d in ["srv", "mnt", "state", "la"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        Remote {
            root,
            name: format!("t-{tag}"),
            removed: false,
        }
    }
    fn srv(&self) -> PathBuf {
        self.root.join("srv")
    }
    fn mnt(&self) -> PathBuf {
        self.root.join("mnt")
    }
    fn la(&self) -> PathBuf {
        self.root.join("la")
    }
    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new(BIN)
            .args(args)
            .env("FSBENCH_REMOTE_STATE_DIR", self.root.join("state"))
            .output()
            .expect("running fsbench")
    }
    fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd(args);
        assert!(
            out.status.success(),
            "fsbench {args:?} failed: {}",
            crate::common::text(&out)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    fn create(&self, extra: &[&str]) {
        let srv = self.srv();
        let mnt = self.mnt();
        let mut args = vec![
            "remote",
            "create",
            &self.name,
            "--server",
            srv.to_str().unwrap(),
            "--mount",
            mnt.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.ok(&args);
    }
    fn pid(&self) -> i32 {
        fs::read_to_string(self.root.join("state").join(&self.name).join("server.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
    /// `stats --json`: the counts as of now (the server writes them when asked).
    fn stats(&self) -> serde_json::Value {
        serde_json::from_str(&self.ok(&["remote", "stats", &self.name, "--json"])).unwrap()
    }
    fn mounted(&self) -> bool {
        let m = self.mnt();
        fs::read_to_string("/proc/mounts")
            .unwrap()
            .lines()
            .any(|l| l.split_whitespace().nth(1) == m.to_str())
    }
    /// Remove and check that nothing is left mounted or running.
    fn remove(&mut self) {
        let pid = self.pid();
        self.ok(&["remote", "remove", &self.name]);
        self.removed = true;
        assert!(!self.mounted(), "{} still mounted", self.mnt().display());
        // SAFETY: kill(pid, 0) only checks existence.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            && fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| !s.contains(") Z"))
                .unwrap_or(false);
        assert!(!alive, "server {pid} still running");
        assert!(!self.root.join("state").join(&self.name).exists());
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if !self.removed {
            let _ = self.cmd(&["remote", "remove", &self.name]);
        }
        if !self.mounted() {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

fn read_timed(p: &Path) -> (Vec<u8>, f64) {
    let t = Instant::now();
    let mut f = fs::File::open(p).unwrap();
    let mut v = Vec::new();
    f.read_to_end(&mut v).unwrap();
    (v, t.elapsed().as_secs_f64())
}

#[test]
fn whole_file_read_and_metadata_follow_the_model() {
    let Some((_serial, mut r)) = begin("timing", "timing") else {
        return;
    };
    let data = content(2 * MIB, 1);
    fs::write(r.srv().join("big"), &data).unwrap();
    fs::write(r.srv().join("small"), b"hello").unwrap();
    r.create(&["--bandwidth", "10mbit", "--rtt", "20ms"]);
    let rtt = 0.020;

    // First read: LOOKUP (a round trip) + OPEN, which fetches the file whole
    // (a round trip + 2 MiB at 10 Mbit/s); the reads are then local and fstat's
    // GETATTR is answered by the cached copy.
    let (got, secs) = read_timed(&r.mnt().join("big"));
    assert!(got == data, "content differs");
    let modelled = 2.0 * rtt + (2 * MIB) as f64 * 8.0 / 10e6;
    let err = (secs - modelled) / modelled;
    eprintln!(
        "2 MiB whole-file read: {secs:.4} s, modelled {modelled:.4} s ({:+.2}%)",
        err * 100.0
    );
    assert!(err.abs() < 0.05, "{secs} s vs modelled {modelled} s");
    let st = r.stats();
    assert_eq!(st["round_trips"], 2, "{st:#}");
    assert_eq!(st["bytes_fetched"], 2 * MIB as u64, "{st:#}");
    assert_eq!(st["file_cache_misses"], 1, "{st:#}");

    // A second read is served by the client cache: no network.
    let (_, again) = read_timed(&r.mnt().join("big"));
    assert!(again < rtt, "cached read took {again} s");

    // Metadata: stat of a name the client has not seen pays a round trip, a
    // missing name too; the same name again comes from the attribute cache.
    let t = Instant::now();
    fs::metadata(r.mnt().join("small")).unwrap();
    let first = t.elapsed().as_secs_f64();
    assert!(first >= rtt, "uncached stat took {first} s < RTT");
    let t = Instant::now();
    assert!(fs::metadata(r.mnt().join("missing")).is_err());
    let missing = t.elapsed().as_secs_f64();
    assert!(missing >= rtt, "negative lookup took {missing} s < RTT");
    let t = Instant::now();
    fs::metadata(r.mnt().join("small")).unwrap();
    let cached = t.elapsed().as_secs_f64();
    assert!(cached < rtt / 2.0, "cached stat took {cached} s");
    eprintln!("stat: uncached {first:.4} s, missing {missing:.4} s, cached {cached:.5} s");

    let st = r.stats();
    let late = &st["lateness"];
    assert!(late["pct"].as_f64().unwrap() < 5.0, "{st:#}");
    r.remove();
}

#[test]
fn jitter_and_loss_delay_round_trips_as_modelled() {
    let Some((_serial, mut r)) = begin("loss", "loss") else {
        return;
    };
    r.create(&[
        "--bandwidth",
        "10mbit",
        "--rtt",
        "20ms",
        "--jitter",
        "5ms",
        "--loss",
        "30%",
        "--seed",
        "7",
    ]);
    // Negative lookups are never cached: each costs one (possibly lost) round trip.
    let n = 30;
    let t = Instant::now();
    for i in 0..n {
        assert!(fs::metadata(r.mnt().join(format!("missing{i}"))).is_err());
    }
    let secs = t.elapsed().as_secs_f64();
    let st = r.stats();
    let trips = st["round_trips"].as_u64().unwrap() as f64;
    let lost = st["lost_requests"].as_u64().unwrap() as f64;
    assert!(trips >= n as f64, "{st:#}");
    // 30% of about 30 requests: none lost would be a broken model (p < 0.1%).
    assert!(lost >= 1.0, "{st:#}");
    // Each loss costs at least the first timeout (200 ms); jitter averages out.
    let least = trips * 0.015 + lost * 0.2;
    assert!(secs >= least, "{secs:.3} s < {least:.3} s ({st:#})");
    let wait = st["network_wait_s"].as_f64().unwrap();
    assert!(
        (secs - wait).abs() / wait < 0.1,
        "waited {secs:.3} s, modelled {wait:.3} s"
    );
    eprintln!("{n} lookups with 30% loss: {secs:.3} s, {lost} lost of {trips} round trips");
    r.remove();
}

#[test]
fn lookaside_copies_identical_files_and_fetches_changed_ones() {
    let Some((_serial, mut r)) = begin("lookaside", "lookaside") else {
        return;
    };
    let same = content(256 * 1024, 2);
    let changed = content(128 * 1024, 3);
    fs::write(r.srv().join("same"), &same).unwrap();
    fs::write(r.srv().join("changed"), &changed).unwrap();
    fs::create_dir_all(r.la().join("sub")).unwrap();
    fs::write(r.la().join("sub/copy-of-same"), &same).unwrap();
    let mut old = changed.clone();
    old[1000] ^= 0xff;
    fs::write(r.la().join("changed"), &old).unwrap();
    let la = r.la();
    r.create(&[
        "--bandwidth",
        "10mbit",
        "--rtt",
        "2ms",
        "--lookaside",
        la.to_str().unwrap(),
    ]);

    let (got, _) = read_timed(&r.mnt().join("same"));
    assert!(got == same);
    let st = r.stats();
    assert_eq!(st["bytes_fetched"], 0, "{st:#}");
    assert_eq!(st["lookaside_hits"], 1, "{st:#}");
    assert_eq!(st["lookaside_bytes"], same.len() as u64, "{st:#}");

    let (got, _) = read_timed(&r.mnt().join("changed"));
    assert!(got == changed, "a changed file must come from the server");
    let st = r.stats();
    assert_eq!(st["bytes_fetched"], changed.len() as u64, "{st:#}");
    assert_eq!(st["lookaside_hits"], 1, "{st:#}");
    assert_eq!(st["lookaside_misses"], 1, "{st:#}");
    r.remove();
}

#[test]
fn reset_and_set_change_a_running_remote() {
    let Some((_serial, mut r)) = begin("reset/set", "set") else {
        return;
    };
    let data = content(64 * 1024, 4);
    fs::write(r.srv().join("f"), &data).unwrap();
    fs::create_dir_all(r.la()).unwrap();
    fs::write(r.la().join("copy"), &data).unwrap();
    r.create(&["--bandwidth", "100mbit", "--rtt", "1ms"]);
    let f = r.mnt().join("f");

    // A second read is served by the client cache; after `stats --reset` it is fetched again.
    read_timed(&f);
    read_timed(&f);
    let st = r.stats();
    assert_eq!(st["bytes_fetched"], data.len() as u64, "{st:#}");
    assert_eq!(st["file_cache_hits"], 1, "{st:#}");
    r.ok(&["remote", "stats", &r.name, "--reset"]);
    let st = r.stats();
    assert_eq!(st["bytes_fetched"], 0, "counting restarts: {st:#}");
    assert_eq!(st["cache_bytes"], 0, "the client cache is empty: {st:#}");
    read_timed(&f);
    let st = r.stats();
    assert_eq!(st["bytes_fetched"], data.len() as u64, "cold again: {st:#}");

    // A slower network from now on: the next cold read pays its transfer time.
    r.ok(&[
        "remote",
        "set",
        &r.name,
        "--bandwidth",
        "1mbit",
        "--rtt",
        "20ms",
        "--drop-cache",
    ]);
    let (got, secs) = read_timed(&f);
    assert!(got == data);
    let wire = data.len() as f64 * 8.0 / 1e6;
    assert!(
        secs >= wire + 0.04 && secs < (wire + 0.06) * 1.5,
        "read took {secs:.3} s, modelled {:.3} s",
        wire + 0.04
    );
    let cfg = r.ok(&["remote", "list", "--json"]);
    assert!(
        cfg.contains("1000000"),
        "list shows the new bandwidth: {cfg}"
    );

    // Lookaside trees can be given to a running remote, and taken away.
    let la = r.la();
    r.ok(&[
        "remote",
        "set",
        &r.name,
        "--lookaside",
        la.to_str().unwrap(),
        "--drop-cache",
    ]);
    r.ok(&["remote", "stats", &r.name, "--reset"]);
    read_timed(&f);
    let st = r.stats();
    assert_eq!(st["bytes_fetched"], 0, "{st:#}");
    assert_eq!(st["lookaside_hits"], 1, "{st:#}");
    r.ok(&["remote", "set", &r.name, "--no-lookaside"]);
    r.ok(&["remote", "stats", &r.name, "--reset"]);
    read_timed(&f);
    let st = r.stats();
    assert_eq!(st["bytes_fetched"], data.len() as u64, "{st:#}");
    assert_eq!(st["lookaside_hits"], 0, "{st:#}");
    r.remove();
}

#[test]
fn a_scan_snapshot_serves_as_the_lookaside_index() {
    let Some((_serial, mut r)) = begin("snapshot lookaside", "snapla") else {
        return;
    };
    let same = content(100 * 1024, 7);
    fs::write(r.srv().join("same"), &same).unwrap();
    fs::create_dir_all(r.la().join("d")).unwrap();
    fs::write(r.la().join("d/copy"), &same).unwrap();
    let snap = r.root.join("la.snap");
    // Without hashes the snapshot cannot be an index.
    r.ok(&[
        "scan",
        r.la().to_str().unwrap(),
        "-o",
        snap.to_str().unwrap(),
    ]);
    let o = r.cmd(&[
        "remote",
        "create",
        &r.name,
        "--server",
        r.srv().to_str().unwrap(),
        "--mount",
        r.mnt().to_str().unwrap(),
        "--lookaside",
        snap.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        crate::common::text(&o).contains("no content hashes"),
        "{}",
        crate::common::text(&o)
    );
    r.ok(&[
        "scan",
        r.la().to_str().unwrap(),
        "--hash",
        "-o",
        snap.to_str().unwrap(),
    ]);
    r.create(&[
        "--bandwidth",
        "10mbit",
        "--rtt",
        "2ms",
        "--lookaside",
        snap.to_str().unwrap(),
    ]);
    let (got, _) = read_timed(&r.mnt().join("same"));
    assert!(got == same);
    let st = r.stats();
    assert_eq!(st["bytes_fetched"], 0, "{st:#}");
    assert_eq!(st["lookaside_hits"], 1, "{st:#}");
    // A lookaside file changed since the snapshot is not used.
    r.ok(&["remote", "stats", &r.name, "--reset"]);
    fs::write(r.la().join("d/copy"), b"changed").unwrap();
    read_timed(&r.mnt().join("same"));
    let st = r.stats();
    assert_eq!(st["bytes_fetched"], same.len() as u64, "{st:#}");
    r.remove();
}

#[test]
fn block_protocol_lookaside_reads_identical_files_locally() {
    let Some((_serial, mut r)) = begin("block lookaside", "blockla") else {
        return;
    };
    let same = content(300 * 1024, 5);
    let other = content(200 * 1024, 6);
    fs::write(r.srv().join("same"), &same).unwrap();
    fs::write(r.srv().join("other"), &other).unwrap();
    fs::create_dir_all(r.la()).unwrap();
    fs::write(r.la().join("same"), &same).unwrap();
    let la = r.la();
    r.create(&[
        "--protocol",
        "block",
        "--bandwidth",
        "10mbit",
        "--rtt",
        "2ms",
        "--lookaside",
        la.to_str().unwrap(),
    ]);
    let (got, _) = read_timed(&r.mnt().join("same"));
    assert!(got == same);
    let st = r.stats();
    assert_eq!(st["bytes_fetched"], 0, "{st:#}");
    assert_eq!(st["lookaside_hits"], 1, "{st:#}");
    assert_eq!(st["lookaside_bytes"], same.len() as u64, "{st:#}");
    let (got, _) = read_timed(&r.mnt().join("other"));
    assert!(got == other);
    let st = r.stats();
    assert_eq!(st["bytes_fetched"], other.len() as u64, "{st:#}");
    assert_eq!(st["lookaside_misses"], 1, "{st:#}");
    r.remove();
}

#[test]
fn read_only_refuses_writes_and_writable_writes_through() {
    let Some((_serial, mut r)) = begin("write", "ro") else {
        return;
    };
    fs::write(r.srv().join("f"), b"original").unwrap();
    fs::create_dir(r.srv().join("d")).unwrap();
    let before = crate::common::tree_listing(&r.srv());
    r.create(&["--rtt", "1ms", "--bandwidth", "100mbit"]);
    let erofs = |e: std::io::Error| assert_eq!(e.raw_os_error(), Some(libc::EROFS), "{e}");
    erofs(fs::write(r.mnt().join("new"), b"x").unwrap_err());
    erofs(
        fs::OpenOptions::new()
            .write(true)
            .open(r.mnt().join("f"))
            .unwrap_err(),
    );
    erofs(fs::create_dir(r.mnt().join("nd")).unwrap_err());
    erofs(fs::remove_file(r.mnt().join("f")).unwrap_err());
    erofs(fs::rename(r.mnt().join("f"), r.mnt().join("g")).unwrap_err());
    assert_eq!(fs::read(r.mnt().join("f")).unwrap(), b"original");
    r.remove();
    assert_eq!(crate::common::tree_listing(&r.srv()), before);
    assert_eq!(fs::read(r.srv().join("f")).unwrap(), b"original");

    for protocol in ["whole-file", "block"] {
        let mut w = Remote::new(&format!("rw-{protocol}"));
        fs::write(w.srv().join("f"), b"original").unwrap();
        w.create(&[
            "--rtt",
            "1ms",
            "--bandwidth",
            "100mbit",
            "--writable",
            "--protocol",
            protocol,
        ]);
        let body = content(200 * 1024, 4);
        let mut f = fs::File::create(w.mnt().join("new")).unwrap();
        f.write_all(&body).unwrap();
        drop(f);
        assert!(fs::read(w.srv().join("new")).unwrap() == body, "{protocol}");
        fs::write(w.mnt().join("f"), b"changed").unwrap();
        assert_eq!(
            fs::read(w.srv().join("f")).unwrap(),
            b"changed",
            "{protocol}"
        );
        fs::create_dir(w.mnt().join("dir")).unwrap();
        fs::rename(w.mnt().join("new"), w.mnt().join("dir/moved")).unwrap();
        assert!(
            fs::read(w.mnt().join("dir/moved")).unwrap() == body,
            "{protocol}"
        );
        assert!(w.srv().join("dir/moved").is_file());
        fs::remove_file(w.mnt().join("dir/moved")).unwrap();
        fs::remove_dir(w.mnt().join("dir")).unwrap();
        assert!(!w.srv().join("dir").exists());
        let st = w.stats();
        assert!(
            st["bytes_sent"].as_u64().unwrap() >= body.len() as u64,
            "{st:#}"
        );
        w.remove();
    }
}

/// A directory in a writable server tree swapped for a link to elsewhere while a client
/// holds it open: the client's deletion and truncation must not follow the link out of the
/// tree.
#[test]
fn a_directory_swapped_for_a_link_does_not_redirect_changes() {
    use std::os::unix::io::AsRawFd;
    let Some((_serial, mut r)) = begin("link-swap", "swap") else {
        return;
    };
    let outside = r.root.join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("x"), b"not the server's").unwrap();
    fs::create_dir(r.srv().join("d")).unwrap();
    fs::write(r.srv().join("d/x"), b"server file").unwrap();
    r.create(&["--rtt", "1ms", "--bandwidth", "100mbit", "--writable"]);
    // The client holds d open (as a shell's working directory would).
    let d = fs::File::open(r.mnt().join("d")).unwrap();
    fs::rename(r.srv().join("d"), r.srv().join("d-moved")).unwrap();
    std::os::unix::fs::symlink(&outside, r.srv().join("d")).unwrap();
    // SAFETY: a valid directory descriptor and NUL-terminated name.
    let rc = unsafe { libc::unlinkat(d.as_raw_fd(), c"x".as_ptr(), 0) };
    assert_ne!(rc, 0, "the unlink went through the link");
    let rc = unsafe { libc::openat(d.as_raw_fd(), c"x".as_ptr(), libc::O_WRONLY | libc::O_TRUNC) };
    if rc >= 0 {
        unsafe { libc::close(rc) };
    }
    assert_eq!(fs::read(outside.join("x")).unwrap(), b"not the server's");
    drop(d);
    r.remove();
}

#[test]
fn create_refuses_bad_mount_points_and_servers() {
    if let Some(why) = skip_reason() {
        skip(&format!("skipping remote argument test: {why}"));
        return;
    }
    let r = Remote::new("refuse");
    let srv = r.srv();
    let fail = |server: &Path, mnt: &Path, what: &str| {
        let out = r.cmd(&[
            "remote",
            "create",
            "bad",
            "--server",
            server.to_str().unwrap(),
            "--mount",
            mnt.to_str().unwrap(),
        ]);
        assert!(!out.status.success(), "{what} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(what), "{what}: {err}");
    };
    fail(&r.root.join("nope"), &r.mnt(), "does not exist");
    fs::write(r.la().join("x"), b"x").unwrap();
    fail(&srv, &r.la(), "not empty");
    fs::create_dir(srv.join("inner")).unwrap();
    fail(&srv, &srv.join("inner"), "inside the server tree");
    assert!(!r.root.join("state/bad").exists());
}
