//! Simulated disk end to end: create (with ext4 and a mount), sequential and
//! random O_DIRECT reads timed against the model's prediction, remove, and
//! nothing left behind. Needs root, /dev/fuse, loop devices and mkfs.ext4;
//! skips with a printed reason elsewhere.

use crate::common::{free_loop_queue, loop_queues, queue_of, skip};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use fsbench_tools::disk::model::{Disk, DiskParams, Op};
use fsbench_tools::disk::state::DiskStats;
use rand::{Rng, SeedableRng};

const BIN: &str = env!("CARGO_BIN_EXE_fsbench");
const MIB: u64 = 1 << 20;
const FILE_SIZE: u64 = 16 * MIB;
const SEQ_BLOCK: usize = 64 * 1024;
const RAND_BLOCK: usize = 4096;
const RAND_COUNT: usize = 300;

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    for p in ["/dev/fuse", "/dev/loop-control"] {
        if !Path::new(p).exists() {
            return Some(format!("{p} missing"));
        }
    }
    let mkfs = Command::new("mkfs.ext4").arg("-V").output();
    if mkfs.is_err() {
        return Some("mkfs.ext4 not found".into());
    }
    if !fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .contains("fuse")
    {
        return Some("no fuse in /proc/filesystems".into());
    }
    None
}

/// The model parameters the test disk gets: quick, and one media rate
/// everywhere so that the prediction does not depend on where ext4 puts the file.
fn test_params() -> DiskParams {
    let mut p = DiskParams::preset("hdd").unwrap();
    p.rpm = 15000.0;
    p.seek_track_ms = 0.5;
    p.seek_avg_ms = 3.0;
    p.seek_full_ms = 6.0;
    p.transfer_outer = 40.0;
    p.transfer_inner = 40.0;
    p
}

fn cli_params(p: &DiskParams) -> Vec<String> {
    vec![
        "--model".into(),
        p.model.clone(),
        "--rpm".into(),
        p.rpm.to_string(),
        "--seek-track".into(),
        format!("{}ms", p.seek_track_ms),
        "--seek-avg".into(),
        format!("{}ms", p.seek_avg_ms),
        "--seek-full".into(),
        format!("{}ms", p.seek_full_ms),
        "--transfer".into(),
        format!("{}MB/s", p.transfer_outer),
        "--transfer-inner".into(),
        format!("{}MB/s", p.transfer_inner),
    ]
}

/// The model's busy time predicted for the test's (sequential, random) access patterns,
/// with `gaps` seconds of host time between one reply and the next request in each: the
/// model's read-ahead runs in real time, so what a sequential request costs depends on
/// when it arrives.
fn predict(p: &DiskParams, capacity: u64, gaps: (f64, f64)) -> (f64, f64) {
    let mut d = Disk::new(p.clone(), capacity).unwrap();
    let base = capacity / 4;
    let mut t = 0.0;
    let (mut seq, mut rand) = (0.0, 0.0);
    let mut off = base;
    while off < base + FILE_SIZE {
        let s = d.serve(Op::Read, off, SEQ_BLOCK as u64, t);
        seq += s.total();
        t += s.total() + gaps.0;
        off += SEQ_BLOCK as u64;
    }
    let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
    for _ in 0..RAND_COUNT {
        let off = base + rng.random_range(0..FILE_SIZE / RAND_BLOCK as u64) * RAND_BLOCK as u64;
        let s = d.serve(Op::Read, off, RAND_BLOCK as u64, t);
        rand += s.total();
        t += s.total() + gaps.1;
    }
    (seq, rand)
}

/// A buffer aligned for O_DIRECT.
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let layout = std::alloc::Layout::from_size_align(len, 4096).unwrap();
        // SAFETY: non-zero size layout.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Aligned { ptr, layout }
    }
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

fn run(args: &[&str], env: &[(&str, &Path)]) -> String {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running fsbench");
    assert!(
        out.status.success(),
        "fsbench {args:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The disk's statistics as of now: `disk stats --json` asks the server for them.
fn stats_now(name: &str, env: &[(&str, &Path)]) -> DiskStats {
    serde_json::from_str(&run(&["disk", "stats", name, "--json"], env)).unwrap()
}

fn drop_caches() {
    let _ = fs::write("/proc/sys/vm/drop_caches", "3");
}

/// A test's own disk state and image directories under `/tmp`. Dropped, whatever failed,
/// it removes the disks named (server, mount, loop device, image); the directory itself
/// the test removes once they are gone.
struct Sandbox {
    root: PathBuf,
    state: PathBuf,
    images: PathBuf,
    disks: &'static [&'static str],
}

impl Sandbox {
    fn new(tag: &str, disks: &'static [&'static str]) -> Sandbox {
        let root = PathBuf::from(format!("/tmp/fsbench-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        Sandbox {
            state: root.join("state"),
            images: root.join("images"),
            root,
            disks,
        }
    }

    /// The environment that points `fsbench disk` at the sandbox.
    fn env(&self) -> [(&'static str, &Path); 2] {
        [
            ("FSBENCH_STATE_DIR", self.state.as_path()),
            ("FSBENCH_IMAGE_DIR", self.images.as_path()),
        ]
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        for name in self.disks {
            let mut cmd = Command::new(BIN);
            cmd.args(["disk", "remove", name]);
            for (k, v) in self.env() {
                cmd.env(k, v);
            }
            let _ = cmd.output();
        }
    }
}

#[test]
fn simulated_disk_end_to_end() {
    if let Some(why) = skip_reason() {
        skip(&format!("skipping simulated disk test: {why}"));
        return;
    }
    let started = Instant::now();
    let name = "itest";
    // Whatever fails below, the disk goes: server, mount, loop device, image.
    let sb = Sandbox::new("disk-test", &["itest"]);
    let (root, state, images) = (&sb.root, &sb.state, &sb.images);
    let mnt = root.join("mnt");
    let env = sb.env();
    let size = 256 * MIB;
    let params = test_params();

    let mut args: Vec<String> = vec![
        "disk".into(),
        "create".into(),
        name.into(),
        "--size".into(),
        "256M".into(),
        "--mkfs".into(),
        "ext4".into(),
        "--mount".into(),
        mnt.to_string_lossy().into_owned(),
    ];
    args.extend(cli_params(&params));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&argv, &env);
    let device = out.trim().to_string();
    assert!(device.starts_with("/dev/loop"), "create printed {out:?}");
    let sysname = device.trim_start_matches("/dev/");
    let pid: i32 = fs::read_to_string(state.join(name).join("server.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        fs::read_to_string(format!("/sys/block/{sysname}/queue/rotational"))
            .unwrap()
            .trim(),
        "1"
    );

    // mkfs reached the image: the ext4 superblock magic is in the file.
    let image = images.join(format!("{name}.img"));
    let mut magic = [0u8; 2];
    File::open(&image)
        .unwrap()
        .read_exact_at(&mut magic, 1024 + 56)
        .unwrap();
    assert_eq!(
        u16::from_le_bytes(magic),
        0xEF53,
        "no ext4 superblock in the image"
    );

    // Write the test file and make it durable.
    let path = mnt.join("data");
    {
        let mut f = File::create(&path).unwrap();
        let chunk = vec![0x5au8; MIB as usize];
        for _ in 0..FILE_SIZE / MIB {
            f.write_all(&chunk).unwrap();
        }
        f.sync_all().unwrap();
    }
    drop_caches();
    // The server's statistics before, between and after the two patterns. A host delay
    // between two requests leaves the disk idle and adds to the wall clock, and lets the
    // model's read-ahead (which runs in real time) read further ahead, so a late sequential
    // request is charged less: the prediction replays each pattern with the host time
    // measured between requests (the wall clock less the disk's busy time, per request),
    // the model's own busy time is compared with it, and the wall clock is held to "not
    // faster than the disk".
    let s0 = stats_now(name, &env);

    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .unwrap();
    let mut buf = Aligned::new(SEQ_BLOCK);
    let t = Instant::now();
    let mut off = 0;
    while off < FILE_SIZE {
        let n = f.read_at(buf.as_mut(), off).unwrap();
        assert_eq!(n, SEQ_BLOCK);
        off += n as u64;
    }
    let seq = t.elapsed().as_secs_f64();
    let s1 = stats_now(name, &env);
    assert!(
        buf.as_mut().iter().all(|&b| b == 0x5a),
        "data read back differs"
    );

    let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
    let mut small = Aligned::new(RAND_BLOCK);
    let t = Instant::now();
    for _ in 0..RAND_COUNT {
        let off = rng.random_range(0..FILE_SIZE / RAND_BLOCK as u64) * RAND_BLOCK as u64;
        let n = f.read_at(small.as_mut(), off).unwrap();
        assert_eq!(n, RAND_BLOCK);
    }
    let rand_t = t.elapsed().as_secs_f64();
    let s2 = stats_now(name, &env);
    drop(f);

    let (busy_seq, busy_rand) = (s1.busy_s - s0.busy_s, s2.busy_s - s1.busy_s);
    let (req_seq, req_rand) = (s1.requests - s0.requests, s2.requests - s1.requests);
    let gap = |wall: f64, busy: f64, n: u64| ((wall - busy) / n.max(1) as f64).max(0.0);
    let gaps = (
        gap(seq, busy_seq, req_seq),
        gap(rand_t, busy_rand, req_rand),
    );
    let (p_seq, p_rand) = predict(&params, size, gaps);
    let (late_seq, late_rand) = (
        s1.server_late_sum_s - s0.server_late_sum_s,
        s2.server_late_sum_s - s1.server_late_sum_s,
    );
    let predicted = p_rand / p_seq;
    let modelled = busy_rand / busy_seq;
    eprintln!(
        "sequential: wall {seq:.3} s, disk busy {busy_seq:.3} s, server late {late_seq:.3} s, \
         prediction {p_seq:.3} s, {req_seq} requests ({:.0} µs between), {} bytes read\n\
         random: wall {rand_t:.3} s, disk busy {busy_rand:.3} s, server late {late_rand:.3} s, \
         prediction {p_rand:.3} s, {req_rand} requests ({:.0} µs between), {} bytes read\n\
         random/sequential: modelled {modelled:.2}, predicted {predicted:.2}, wall {:.2}",
        gaps.0 * 1e6,
        s1.read_bytes - s0.read_bytes,
        gaps.1 * 1e6,
        s2.read_bytes - s1.read_bytes,
        rand_t / seq,
    );
    // Each pattern reached the disk as issued: the O_DIRECT reads went through the loop
    // device without a page cache's read-ahead in between (a few other requests, such as a
    // journal commit, may come along).
    let rand_bytes = s2.read_bytes - s1.read_bytes;
    assert!(
        ((RAND_COUNT * RAND_BLOCK) as u64..(RAND_COUNT * RAND_BLOCK) as u64 + MIB)
            .contains(&rand_bytes),
        "the random phase read {rand_bytes} bytes from the disk"
    );
    let seq_bytes = s1.read_bytes - s0.read_bytes;
    assert!(
        (FILE_SIZE..FILE_SIZE + MIB).contains(&seq_bytes),
        "the sequential phase read {seq_bytes} bytes from the disk"
    );
    // The model charged what the prediction says, and the two patterns relate as it says.
    for (what, busy, p) in [
        ("sequential", busy_seq, p_seq),
        ("random", busy_rand, p_rand),
    ] {
        assert!(
            busy > 0.7 * p && busy < 1.5 * p,
            "{what}: the disk was busy {busy:.3} s, the model predicts {p:.3} s"
        );
    }
    assert!(
        modelled > predicted / 1.5 && modelled < predicted * 1.5,
        "random/sequential busy time {modelled:.2}, model predicts {predicted:.2}"
    );
    // The model is not hidden: no reply came before its modelled time, so the reader waited
    // at least what the disk was busy (no page cache in the way).
    assert!(
        seq > 0.95 * busy_seq,
        "sequential reads took {seq:.3} s, faster than the disk's {busy_seq:.3} s"
    );
    assert!(
        rand_t > 0.95 * busy_rand,
        "random reads took {rand_t:.3} s, faster than the disk's {busy_rand:.3} s"
    );

    // Results measured on the simulated disk carry its reply lateness: a workload run and an
    // application benchmark, each from a cold cache so that the disk serves requests.
    let wl = root.join("cold.f");
    fs::write(
        &wl,
        "set $dir=/tmp\n\
         define fileset name=fs1,path=$dir,entries=16,dirwidth=16,size=64k,prealloc\n\
         define process name=p,instances=1 {\n\
           thread name=t,memsize=1m,instances=1 {\n\
             flowop openfile name=open1,filesetname=fs1,fd=1\n\
             flowop readwholefile name=read1,fd=1,iosize=64k\n\
             flowop closefile name=close1,fd=1\n\
           }\n\
         }\n\
         run 1\n",
    )
    .unwrap();
    let wl_s = wl.to_string_lossy().into_owned();
    let mnt_s = mnt.to_string_lossy().into_owned();
    let run_json = root.join("run.json");
    let find_json = root.join("find.json");
    run(
        &[
            "run",
            &wl_s,
            "--dir",
            &mnt_s,
            "--cold",
            "-q",
            "--json",
            &run_json.to_string_lossy(),
        ],
        &env,
    );
    run(
        &[
            "find",
            &mnt_s,
            "--cold",
            "--json",
            &find_json.to_string_lossy(),
        ],
        &env,
    );
    for path in [&run_json, &find_json] {
        let v: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
        let d = &v["disk"];
        assert_eq!(d["name"], name, "{}: {d}", path.display());
        assert!(
            d["requests"].as_u64().unwrap() > 0,
            "{}: {d}",
            path.display()
        );
        assert!(d["service_mean_us"].as_f64().unwrap() > 0.0, "{d}");
        assert!(d["late_pct"].as_f64().is_some(), "{d}");
    }

    let stats = run(&["disk", "stats", name], &env);
    assert!(stats.contains("seek"), "{stats}");
    let list = run(&["disk", "list"], &env);
    assert!(list.contains(name) && list.contains("running"), "{list}");

    run(&["disk", "remove", name], &env);

    // Nothing left: no state, no image, no server, no mount, no loop device.
    assert!(!state.join(name).exists(), "state directory left behind");
    assert!(!image.exists(), "image left behind");
    let alive = Path::new(&format!("/proc/{pid}")).exists()
        && !fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z");
    assert!(!alive, "server {pid} still running");
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap();
    let root_s = root.to_string_lossy().into_owned();
    assert!(!mounts.contains(&root_s), "mount left behind:\n{mounts}");
    let losetup = Command::new("losetup").arg("-a").output();
    if let Ok(out) = losetup {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains(&root_s), "loop device left behind:\n{text}");
    }
    let backing =
        fs::read_to_string(format!("/sys/block/{sysname}/loop/backing_file")).unwrap_or_default();
    assert!(
        !backing.contains(&root_s),
        "{device} still bound to {backing}"
    );

    let _ = fs::remove_dir_all(root);
    let took = started.elapsed().as_secs_f64();
    eprintln!("simulated disk test took {took:.1} s");
    assert!(took < 60.0);
}

/// A simulated disk gives its loop device back as it found it: the scheduler `create
/// --scheduler` chose, the queue depth that choice set and the read-ahead the kernel sets
/// when a direct-I/O loop device is detached (twice its largest request) are all set back,
/// by the server when it stops and by `remove` after a server that was killed.
#[test]
fn a_removed_disk_leaves_its_loop_device_as_found() {
    if let Some(why) = skip_reason() {
        skip(&format!("skipping the loop device's settings test: {why}"));
        return;
    }
    let sb = Sandbox::new("disk-found", &["found-a", "found-b"]);
    let env = sb.env();
    let mut todo = vec![("found-b", true), ("found-a", false)];
    let mut attempts = 0;
    while let Some((name, kill)) = todo.pop() {
        // The device `create` will most likely get: choose a scheduler it does not run.
        let next = Command::new("losetup").arg("-f").output().unwrap();
        let next = String::from_utf8_lossy(&next.stdout)
            .trim()
            .trim_start_matches("/dev/")
            .to_string();
        let offered =
            fs::read_to_string(format!("/sys/block/{next}/queue/scheduler")).unwrap_or_default();
        let now = queue_of(&next).0;
        let Some(sched) = ["bfq", "mq-deadline", "kyber"]
            .into_iter()
            .find(|s| offered.contains(s) && *s != now)
        else {
            skip(&format!(
                "skipping the loop device's settings test: {next} offers `{offered}`"
            ));
            return;
        };
        let before = loop_queues();
        run(
            &[
                "disk",
                "create",
                name,
                "--size",
                "32M",
                "--scheduler",
                sched,
            ],
            &env,
        );
        let ready: serde_json::Value = serde_json::from_str(
            &fs::read_to_string(sb.state.join(name).join("ready.json")).unwrap(),
        )
        .unwrap();
        let dev = ready["device"]
            .as_str()
            .unwrap()
            .trim_start_matches("/dev/")
            .to_string();
        assert_eq!(queue_of(&dev).0, sched, "{dev} while the disk runs");
        if kill {
            let pid = ready["pid"].as_i64().unwrap() as i32;
            // SAFETY: kill has no memory preconditions; the pid is the server's.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let t = Instant::now();
            while Path::new(&format!("/sys/block/{dev}/loop/backing_file")).exists() {
                assert!(
                    t.elapsed().as_secs() < 20,
                    "{dev} still bound 20 s after the kill"
                );
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        let out = run(&["disk", "remove", name], &env);
        let Some(after) = free_loop_queue(&dev) else {
            // Tests beside this one attach loop devices too: try again, a few times.
            attempts += 1;
            if attempts < 4 {
                todo.push((name, kill));
            } else {
                skip(&format!(
                    "skipping the check of {dev} after `disk remove`: other tests attached it meanwhile, {attempts} times"
                ));
            }
            continue;
        };
        assert_eq!(
            after,
            before[&dev],
            "{dev} after `disk remove` ({}): {out}",
            if kill {
                "the server killed"
            } else {
                "the server stopped"
            }
        );
    }
    let _ = fs::remove_dir_all(&sb.root);
}
