//! NFS servers end to end: the real binary starts NFS-Ganesha over an image or a fresh
//! directory inside one of ours, a real NFS client (libnfs's `nfs-ls`) lists a file written
//! into the export, and `remove` (or a signal during `create`) leaves no ganesha, no rpcbind
//! fsbench started, no mount, no loop device, no image and no port behind. Needs root,
//! NFS-Ganesha, rpcbind and libnfs-utils; skips elsewhere.

use crate::common::skip;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_fsbench");

// One server test at a time (with the NFS client's tests): rpcbind and ganesha's
// registrations in it are the machine's, and "nothing fsbench started is left" is only
// checkable when no other server runs.
use crate::nfs_common::SERIAL;

fn locate(prog: &str) -> Option<PathBuf> {
    fsbench_tools::nfs::rpcbind::locate(prog)
}

fn skip_reason() -> Option<String> {
    if !crate::common::is_root() {
        return Some("not root".into());
    }
    for (prog, pkg) in [
        ("ganesha.nfsd", "nfs-ganesha"),
        ("rpcbind", "rpcbind"),
        ("rpcinfo", "rpcbind"),
        ("nfs-ls", "libnfs-utils"),
        ("mkfs.ext4", "e2fsprogs"),
    ] {
        if locate(prog).is_none() {
            return Some(format!("{prog} missing (install {pkg})"));
        }
    }
    if !Path::new("/dev/loop-control").exists() {
        return Some("no loop devices".into());
    }
    // fsbench refuses to start beside another NFS server registered with rpcbind (ganesha
    // would clear its registrations): nothing here can run then.
    if let Ok(f) = fsbench_tools::nfs::rpcbind::foreign_nfs_registrations() {
        if let Some(first) = f.first() {
            return Some(format!(
                "another NFS server is registered with rpcbind ({first}), and fsbench does not start one beside it"
            ));
        }
    }
    None
}

/// A scratch root with the servers' state and images; every server made through it is
/// removed on drop.
struct Env {
    root: PathBuf,
    names: Vec<String>,
}

impl Env {
    fn new(tag: &str) -> Env {
        let root = PathBuf::from(format!("/tmp/fsbench-nfs-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for d in ["state", "images", "user"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        Env {
            root,
            names: Vec::new(),
        }
    }
    fn state(&self, name: &str) -> PathBuf {
        self.root.join("state").join(name)
    }
    fn user(&self) -> PathBuf {
        self.root.join("user")
    }
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("FSBENCH_NFS_STATE_DIR", self.root.join("state"))
            .env("FSBENCH_IMAGE_DIR", self.root.join("images"));
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("running fsbench")
    }
    fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "fsbench {args:?} failed: {}",
            crate::common::text(&o)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
    /// `nfs create NAME ARGS`: the URL it printed.
    fn create(&mut self, name: &str, extra: &[&str]) -> String {
        self.names.push(name.to_string());
        let mut args = vec!["nfs", "create", name];
        args.extend_from_slice(extra);
        self.ok(&args).trim().to_string()
    }
    fn config(&self, name: &str) -> serde_json::Value {
        crate::common::json_of(&self.state(name).join("config.json"))
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        for n in &self.names {
            if self.state(n).exists() {
                let _ = self.run(&["nfs", "remove", n]);
            }
        }
        let mounted = fs::read_to_string("/proc/mounts")
            .unwrap_or_default()
            .contains(self.root.to_str().unwrap());
        if !mounted {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

/// What a server made, read from its state before it is removed, to check afterwards.
struct Made {
    ganesha: i32,
    ports: Vec<u16>,
    mount: Option<PathBuf>,
    image: Option<PathBuf>,
    rpcbind: Option<i32>,
}

impl Made {
    fn of(env: &Env, name: &str) -> Made {
        let c = env.config(name);
        let img = &c["backing"]["Image"];
        let mut ports = vec![c["nfs_port"].as_u64().unwrap() as u16];
        ports.extend(c["mount_port"].as_u64().map(|p| p as u16));
        Made {
            ganesha: c["ganesha"]["pid"].as_i64().unwrap() as i32,
            ports,
            mount: img["mount"]["point"].as_str().map(PathBuf::from),
            image: img["image"].as_str().map(PathBuf::from),
            rpcbind: rpcbind_started(),
        }
    }

    /// Nothing of it is left: no ganesha, no rpcbind fsbench started (no server runs any
    /// more), no mount, no loop device on the image, no image, the ports free.
    fn check_gone(&self) {
        assert!(!alive(self.ganesha), "ganesha {} still runs", self.ganesha);
        if let Some(p) = self.rpcbind {
            assert!(!alive(p), "the rpcbind fsbench started ({p}) still runs");
        }
        if let Some(m) = &self.mount {
            let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
            assert!(
                !mounts.contains(&format!(" {} ", m.display())),
                "{} still mounted",
                m.display()
            );
        }
        if let Some(i) = &self.image {
            assert!(!i.exists(), "image {} still there", i.display());
            wait_for(|| loops_on(i).is_empty(), "the loop device to go");
        }
        for p in &self.ports {
            std::net::TcpListener::bind(("127.0.0.1", *p))
                .unwrap_or_else(|e| panic!("port {p} still taken: {e}"));
        }
    }
}

/// The rpcbind fsbench recorded starting, if it runs.
fn rpcbind_started() -> Option<i32> {
    let v: serde_json::Value =
        serde_json::from_str(&fs::read_to_string("/run/fsbench/rpcbind.json").ok()?).ok()?;
    let pid = v["rpcbind"]["pid"].as_i64()? as i32;
    alive(pid).then_some(pid)
}

fn alive(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z") && !s.contains(") X"))
        .unwrap_or(false)
}

fn wait_for(mut f: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < deadline, "waited 5 s for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Loop devices whose backing file is `image`.
fn loops_on(image: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in fs::read_dir("/sys/block").unwrap().flatten() {
        let b = fs::read_to_string(e.path().join("loop/backing_file")).unwrap_or_default();
        if Path::new(b.trim().trim_end_matches(" (deleted)")) == image {
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    out
}

/// `nfs-ls URL`: the names it lists.
fn nfs_ls(url: &str) -> String {
    let o = Command::new(locate("nfs-ls").unwrap())
        .arg(url)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "nfs-ls {url}: {}",
        crate::common::text(&o)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn begin(what: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    if let Some(why) = skip_reason() {
        skip(&format!("skipping NFS {what}: {why}"));
        return None;
    }
    Some(SERIAL.lock().unwrap_or_else(|e| e.into_inner()))
}

#[test]
fn an_image_export_answers_is_listed_and_leaves_nothing_after_remove() {
    let Some(_serial) = begin("image export") else {
        return;
    };
    let mut env = Env::new("img");
    let url = env.create("img0", &["--image", "64M", "--mkfs", "ext4"]);
    let c = env.config("img0");
    let (nfs, mnt) = (
        c["nfs_port"].as_u64().unwrap(),
        c["mount_port"].as_u64().unwrap(),
    );
    assert_eq!(
        url,
        format!("nfs://127.0.0.1/img0?nfsport={nfs}&mountport={mnt}&version=3")
    );
    let export = PathBuf::from(c["export"].as_str().unwrap());
    assert!(
        export.starts_with(env.state("img0").join("mnt")),
        "{}",
        export.display()
    );
    fs::write(export.join("hello-over-nfs.txt"), b"hello").unwrap();
    let listed = nfs_ls(&url);
    assert!(
        listed.contains("hello-over-nfs.txt"),
        "nfs-ls listed:\n{listed}"
    );

    let rows: serde_json::Value =
        serde_json::from_str(&env.ok(&["nfs", "list", "--json"])).unwrap();
    let row = &rows.as_array().unwrap()[0];
    assert_eq!(row["name"], "img0");
    assert_eq!(row["state"], "running");
    assert_eq!(row["url"], url.as_str());
    assert_eq!(row["pid"], c["ganesha"]["pid"]);
    let table = env.ok(&["nfs", "list"]);
    assert!(
        table.contains("img0") && table.contains("running"),
        "{table}"
    );

    let made = Made::of(&env, "img0");
    assert!(made.image.as_ref().unwrap().exists());
    let out = env.ok(&["nfs", "remove", "img0"]);
    assert!(out.contains("stopped ganesha.nfsd"), "{out}");
    made.check_gone();
    assert!(!env.state("img0").exists());
}

#[test]
fn a_dir_export_is_a_fresh_subdirectory_and_the_users_directory_stays_unchanged() {
    let Some(_serial) = begin("directory export") else {
        return;
    };
    let mut env = Env::new("dir");
    let user = env.user();
    fs::write(user.join("precious"), b"the user's data").unwrap();
    fs::create_dir(user.join("sub")).unwrap();
    fs::write(user.join("sub/kept"), b"more").unwrap();
    let before = crate::common::tree_listing(&user);

    let url = env.create("dir0", &["--dir", user.to_str().unwrap(), "--version", "4"]);
    let c = env.config("dir0");
    assert_eq!(
        url,
        format!("nfs://127.0.0.1/dir0?nfsport={}&version=4", c["nfs_port"])
    );
    let export = PathBuf::from(c["export"].as_str().unwrap());
    let base = user.canonicalize().unwrap().join("fsbench-nfs-dir0");
    assert_eq!(
        export,
        base.join("export"),
        "the user's directory itself is never exported"
    );
    fs::write(export.join("written-here"), b"x").unwrap();
    let listed = nfs_ls(&url);
    assert!(listed.contains("written-here"), "nfs-ls listed:\n{listed}");
    assert!(
        !listed.contains("precious"),
        "the user's files are not exported:\n{listed}"
    );

    let made = Made::of(&env, "dir0");
    env.ok(&["nfs", "remove", "dir0"]);
    made.check_gone();
    assert!(!base.exists(), "{} left", base.display());
    assert_eq!(
        crate::common::tree_listing(&user),
        before,
        "the user's directory changed"
    );
    assert_eq!(fs::read(user.join("precious")).unwrap(), b"the user's data");
}

#[test]
fn a_name_in_use_is_refused_and_the_running_server_is_untouched() {
    let Some(_serial) = begin("name in use") else {
        return;
    };
    let mut env = Env::new("dup");
    let user = env.user();
    let url = env.create("dup0", &["--dir", user.to_str().unwrap()]);
    let o = env.run(&["nfs", "create", "dup0", "--dir", user.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("exists already"), "{err}");
    // The first one still serves, with its state.
    assert!(env.config("dup0")["ready"].as_bool().unwrap());
    nfs_ls(&url);
    let made = Made::of(&env, "dup0");
    env.ok(&["nfs", "remove", "dup0"]);
    made.check_gone();
}

/// A stand-in for `nfs-ls` that never sees the export answer: `create` waits.
fn silent_client(env: &Env) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = env.root.join("no-answer");
    fs::write(&p, "#!/bin/sh\nexit 1\n").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// `nfs create NAME ARGS` in the background, and the first state of its configuration that
/// `when` accepts (`None` if create ended or 30 s passed first).
fn create_until(
    env: &Env,
    name: &str,
    extra: &[&str],
    client: Option<&Path>,
    when: impl Fn(&serde_json::Value) -> bool,
) -> (std::process::Child, Option<serde_json::Value>) {
    let mut args = vec!["nfs", "create", name];
    args.extend_from_slice(extra);
    let mut cmd = env.command(&args);
    if let Some(c) = client {
        cmd.env("FSBENCH_NFS_LS", c);
    }
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let config = env.state(name).join("config.json");
    loop {
        let text = fs::read_to_string(&config).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if when(&v) {
            return (child, Some(v));
        }
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            return (child, None);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Nothing of an interrupted or failed `create` is left: no state, no ganesha, no image,
/// no loop device, no mount, no rpcbind fsbench started.
fn check_nothing_left(env: &Env, name: &str, seen: &serde_json::Value) {
    let state = env.state(name);
    assert!(!state.exists(), "state {} left", state.display());
    if let Some(pid) = seen["ganesha"]["pid"].as_i64() {
        assert!(!alive(pid as i32), "ganesha {pid} still runs");
    }
    if let Some(image) = seen["backing"]["Image"]["image"].as_str() {
        let image = PathBuf::from(image);
        assert!(!image.exists(), "image {} left", image.display());
        wait_for(|| loops_on(&image).is_empty(), "the loop device to go");
    }
    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(state.to_str().unwrap()),
        "a mount left under {}",
        state.display()
    );
    if let Some(p) = rpcbind_started() {
        assert!(!alive(p), "the rpcbind fsbench started ({p}) still runs");
    }
}

/// SIGTERM while `create` waits for the export to answer (ganesha started), and while it
/// makes the image (loop device attached, mkfs running): nothing is left, status 130.
#[test]
fn sigterm_during_create_leaves_nothing_behind() {
    let Some(_serial) = begin("interrupted create") else {
        return;
    };
    let env = Env::new("sig");
    let silent = silent_client(&env);
    let waiting = |v: &serde_json::Value| v["ganesha"].is_object();
    let making = |v: &serde_json::Value| v["backing"]["Image"]["loop_dev"].is_string();
    let image = ["--image", "256M", "--mkfs", "ext4"];
    for (name, client, when) in [
        (
            "sigwait",
            Some(silent.as_path()),
            &waiting as &dyn Fn(&serde_json::Value) -> bool,
        ),
        ("sigmake", None, &making),
    ] {
        let (child, seen) = create_until(&env, name, &image, client, when);
        let seen =
            seen.unwrap_or_else(|| panic!("{name}: create never reached the state to signal in"));
        // SAFETY: signalling the child this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{name}: {err}");
        check_nothing_left(&env, name, &seen);
    }
}

/// An export that never answers (a client that never gets an answer) fails `create` after
/// `--timeout`, and ganesha dying while `create` waits fails it at once: either way with the
/// end of ganesha's log, and nothing left.
#[test]
fn a_failed_create_reports_ganeshas_log_and_leaves_nothing() {
    let Some(_serial) = begin("failed create") else {
        return;
    };
    let env = Env::new("fail");
    let silent = silent_client(&env);
    let dir = env.user();
    let (child, seen) = create_until(
        &env,
        "late",
        &["--dir", dir.to_str().unwrap(), "--timeout", "1"],
        Some(&silent),
        |v| v["ganesha"].is_object(),
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("did not answer within 1 s"), "{err}");
    assert!(err.contains("ganesha.nfsd-"), "no log tail in: {err}");
    check_nothing_left(&env, "late", &seen.expect("ganesha was started"));
    assert!(
        fs::read_dir(&dir).unwrap().next().is_none(),
        "the user's directory changed"
    );

    let (child, seen) = create_until(
        &env,
        "dies",
        &["--image", "64M", "--mkfs", "ext4"],
        Some(&silent),
        |v| v["ganesha"].is_object(),
    );
    let seen = seen.expect("ganesha was started");
    let pid = seen["ganesha"]["pid"].as_i64().unwrap() as i32;
    let log = env.state("dies").join("ganesha.log");
    wait_for(
        || fs::read_to_string(&log).is_ok_and(|t| t.contains("INITIALIZED")),
        "ganesha to start",
    );
    // SAFETY: killing the ganesha this test's create started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("ganesha.nfsd exited"), "{err}");
    assert!(err.contains("ganesha.nfsd-"), "no log tail in: {err}");
    check_nothing_left(&env, "dies", &seen);
}

/// Start time (field 22 of /proc/PID/stat) of a live process.
fn start_of(pid: i32) -> u64 {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &s[s.rfind(')').unwrap() + 1..];
    after.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// `remove` signals only the ganesha it started: a recorded pid that names another process
/// now (a `sleep` here, with its own start time) is left alone, and the state is kept until
/// the server is really gone.
#[test]
fn remove_signals_only_the_ganesha_it_started() {
    let Some(_serial) = begin("pid re-check") else {
        return;
    };
    let mut env = Env::new("pid");
    let user = env.user();
    env.create("pid0", &["--dir", user.to_str().unwrap()]);
    let cfg_path = env.state("pid0").join("config.json");
    let real = env.config("pid0");
    let ganesha = real["ganesha"]["pid"].as_i64().unwrap() as i32;
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let other = sleeper.id() as i32;
    let mut forged = real.clone();
    forged["ganesha"] = serde_json::json!({"pid": other, "start": start_of(other)});
    fs::write(&cfg_path, forged.to_string()).unwrap();

    let o = env.run(&["nfs", "remove", "pid0"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains(&format!("not signalling pid {other}")),
        "{err}"
    );
    assert!(alive(other), "remove signalled a process it did not start");
    assert!(
        env.state("pid0").exists(),
        "the state goes only once everything is undone"
    );
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();

    // The real one, recorded again: remove finishes.
    fs::write(&cfg_path, real.to_string()).unwrap();
    env.ok(&["nfs", "remove", "pid0"]);
    assert!(!alive(ganesha));
    assert!(!env.state("pid0").exists());
}

/// A file system mounted inside the directory fsbench made in `--dir` since (a bind mount of
/// a sentinel tree): `remove` leaves that directory and the sentinel alone, keeps the state
/// and fails; once it is unmounted, the same `remove` finishes.
#[test]
fn remove_leaves_a_mount_inside_the_export_alone() {
    let Some(_serial) = begin("mount inside the export") else {
        return;
    };
    let mut env = Env::new("bind");
    let user = env.user();
    env.create("bind0", &["--dir", user.to_str().unwrap()]);
    let export = PathBuf::from(env.config("bind0")["export"].as_str().unwrap());
    let sentinel = env.root.join("sentinel");
    fs::create_dir(&sentinel).unwrap();
    fs::write(sentinel.join("keep"), b"not fsbench's").unwrap();
    let point = export.join("m");
    fs::create_dir(&point).unwrap();
    let st = Command::new("mount")
        .args([
            "--bind",
            sentinel.to_str().unwrap(),
            point.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let o = env.run(&["nfs", "remove", "bind0"]);
    let _ = Command::new("umount").arg(&point).status();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("mounted inside"), "{err}");
    assert_eq!(fs::read(sentinel.join("keep")).unwrap(), b"not fsbench's");
    assert!(env.state("bind0").exists());
    env.ok(&["nfs", "remove", "bind0"]);
    assert!(!env.state("bind0").exists());
    assert!(fs::read_dir(&user).unwrap().next().is_none());
    assert_eq!(fs::read(sentinel.join("keep")).unwrap(), b"not fsbench's");
}

/// An experiment's `kind = "nfs"` target: the dry run says what it starts, the run measures
/// in the export with the client URL in its settings, and teardown stops the server and
/// removes what it made (the journal ends empty).
#[test]
fn an_experiments_nfs_target_is_set_up_recorded_and_torn_down() {
    let Some(_serial) = begin("experiment target") else {
        return;
    };
    let env = Env::new("exp");
    let plan = env.root.join("plan.toml");
    fs::write(
        &plan,
        "[experiment]\nname = \"nfs-target\"\nrepetitions = 1\n\n[[target]]\nname = \"share\"\nkind = \"nfs\"\nversion = 3\n\n[[measurement]]\nname = \"walk\"\nkind = \"find\"\n",
    )
    .unwrap();
    let out = env.root.join("out");
    let dry = env.ok(&["experiment", plan.to_str().unwrap(), "--dry-run"]);
    let o = env.run(&["experiment", plan.to_str().unwrap(), "--dry-run"]);
    let said = format!("{dry}{}", String::from_utf8_lossy(&o.stderr));
    assert!(said.contains("NFS-Ganesha (NFSv3)"), "{said}");
    env.ok(&[
        "experiment",
        plan.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);

    let db = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let (status, applied): (String, String) = db
        .query_row("SELECT status, applied_json FROM runs LIMIT 1", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(status, "ok");
    let a: serde_json::Value = serde_json::from_str(&applied).unwrap();
    let url = a["settings"]["url"].as_str().unwrap().to_string();
    assert!(url.starts_with("nfs://127.0.0.1/fsbx-share-"), "{a}");
    assert!(url.contains("&version=3"), "{url}");
    let export = PathBuf::from(a["settings"]["export"].as_str().unwrap());
    assert_eq!(a["dir"], export.display().to_string());
    assert!(
        export.starts_with(out.canonicalize().unwrap().join("nfs/share")),
        "{}",
        export.display()
    );

    // Torn down: no server state, no export, nothing left in the journal.
    let states: Vec<_> = fs::read_dir(env.root.join("state")).unwrap().collect();
    assert!(states.is_empty(), "servers left: {states:?}");
    assert!(!out.join("nfs/share").exists());
    let journal = fs::read_to_string(out.join("teardown.json")).unwrap();
    assert_eq!(journal.trim(), "[]");
    assert!(
        fsbench_tools::nfs::rpcbind::processes_named("ganesha.nfsd")
            .iter()
            .all(|p| !fsbench_tools::nfs::rpcbind::is_fsbench_ganesha(p)),
        "a ganesha of fsbench's still runs"
    );
}

/// `experiment --cleanup` stops an NFS server only while the server's record names the
/// export its journal does: a journal naming another export leaves the running server
/// alone (and the step stays for later); the right one stops it.
#[test]
fn cleanup_stops_only_the_server_its_journal_names() {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let Some(_serial) = begin("journal cleanup") else {
        return;
    };
    let mut env = Env::new("journal");
    let user = env.user();
    env.create("fsbx-share-1", &["--dir", user.to_str().unwrap()]);
    let export = env.config("fsbx-share-1")["export"]
        .as_str()
        .unwrap()
        .to_string();
    let out = env.root.join("out");
    fs::create_dir(&out).unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(out.join(".fsbench-experiment"), b"").unwrap();
    let journal = |export: &str| {
        let p = out.join("teardown.json");
        let _ = fs::remove_file(&p);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&p)
            .unwrap();
        let steps = serde_json::json!([{"RemoveNfs": {"name": "fsbx-share-1", "export": export}}]);
        std::io::Write::write_all(&mut f, steps.to_string().as_bytes()).unwrap();
    };
    journal("/srv/someone-elses/export");
    let o = env.run(&["experiment", "--cleanup", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("not stopping NFS server fsbx-share-1"),
        "{err}"
    );
    let pid = env.config("fsbx-share-1")["ganesha"]["pid"]
        .as_i64()
        .unwrap() as i32;
    assert!(
        alive(pid),
        "the server was stopped on a journal naming another export"
    );

    journal(&export);
    env.ok(&["experiment", "--cleanup", out.to_str().unwrap()]);
    assert!(!alive(pid));
    assert!(!env.state("fsbx-share-1").exists());
}
