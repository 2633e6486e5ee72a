//! Helpers shared by the integration tests: the real binary, scratch directories.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The entry of flowop `name` in a run's JSON (`flowops`); panics naming it when absent.
pub fn flowop<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no flowop {name} in {v}"))
}

/// Write an experiment plan `name` into `dir`; its path.
pub fn write_plan(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fsbench"))
}

pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("fsbench runs")
}

/// `fsbench ARGS`, and the peak resident size of that process alone in bytes (from
/// `wait4` on its pid: `getrusage(RUSAGE_CHILDREN)` would mix in the children other tests
/// of this program waited for).
pub fn run_with_peak_rss(args: &[&str]) -> (Output, f64) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let mut child = bin()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("fsbench starts");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).unwrap();
        v
    });
    let mut stderr = Vec::new();
    err.read_to_end(&mut stderr).unwrap();
    let stdout = reader.join().unwrap();
    let mut status = 0;
    // SAFETY: wait4 on our own child's pid writes the status and the usage we pass; the
    // child is reaped here and its `Child` handle is not waited on again.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        let pid = child.id() as libc::pid_t;
        assert_eq!(libc::wait4(pid, &mut status, 0, &mut ru), pid);
        ru
    };
    std::mem::forget(child);
    let o = Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout,
        stderr,
    };
    (o, ru.ru_maxrss as f64 * 1024.0)
}

/// The memory estimate a run printed (`fsbench: memory: about N UNIT ... in all`): the line
/// and its bytes.
pub fn memory_estimate(o: &Output) -> (String, f64) {
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("fsbench: memory: about"))
        .unwrap_or_else(|| panic!("no estimate: {err}"))
        .to_string();
    let amount = line
        .split("about ")
        .nth(1)
        .and_then(|r| r.split(" in all").next())
        .unwrap();
    let (n, unit) = amount.trim().split_once(' ').expect("a number and a unit");
    let n: f64 = n.parse().expect("a number");
    let scale = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        u => panic!("unit {u}"),
    };
    (line, n * scale)
}

/// A run's peak resident size within 30% of the estimate it printed.
pub fn assert_resident_near_estimate(rss: f64, est: f64, line: &str) {
    let ratio = rss / est;
    assert!(
        (0.7..=1.3).contains(&ratio),
        "resident {:.1} MiB against an estimate of {:.1} MiB ({line})",
        rss / 1048576.0,
        est / 1048576.0
    );
}

/// `fsbench experiment PLAN -o OUT`, which must succeed (its output is in the panic if not).
pub fn experiment_ok(plan: &Path, out: &Path) -> Output {
    let o = run(&[
        "experiment",
        plan.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    o
}

pub fn text(o: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A scratch directory under the system temporary directory, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!(
            "fsbench-test-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn s(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The Filebench workload corpus beside the project, when present. Under CI (`CI` set), where
/// it is always beside the clone, its absence is a failure, not a skip.
pub fn corpus() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/filebench-workloads");
    if !p.is_dir() && std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!(
            "CI is set but {} is missing: the corpus tests must run in CI",
            p.display()
        );
    }
    p.is_dir().then_some(p)
}

/// Say that a test (or part of one) is skipped and why, where the user sees it: the test
/// harness captures `eprintln!` of passing tests, so this writes to the process's standard
/// error directly, between the harness's own "test ... ok" lines, naming the test.
pub fn skip(msg: &str) {
    use std::io::Write;
    let name = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let msg = msg
        .strip_prefix("skipping")
        .unwrap_or(msg)
        .trim_start_matches([':', ' ']);
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {name}: {msg}");
    count_skip();
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Entries (recursively) below `dir`.
pub fn count_entries(dir: &Path) -> (usize, usize) {
    let (mut files, mut dirs) = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                dirs += 1;
                stack.push(e.path());
            } else {
                files += 1;
            }
        }
    }
    (files, dirs)
}

/// Run a command; its trimmed stdout, or a message with its stderr.
pub fn run_ok(cmd: &str, args: &[&str]) -> Result<String, String> {
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
pub struct Mount(pub PathBuf);
impl Drop for Mount {
    fn drop(&mut self) {
        let p = self.0.to_string_lossy().into_owned();
        if run_ok("umount", &[&p]).is_err() {
            let _ = run_ok("umount", &["-l", &p]);
        }
    }
}

/// A loop device detached on drop.
pub struct Loop(pub String);
impl Drop for Loop {
    /// Detach the device, its scheduler set back to `none` first (what the kernel gives a
    /// new loop device): a queue setting outlives the detach, and the next test or
    /// experiment that attaches this number would otherwise run under what a test chose
    /// (a study found `loop1` under `bfq` that way).
    fn drop(&mut self) {
        self.schedule_none();
        let _ = run_ok("losetup", &["-d", &self.0]);
    }
}

impl Loop {
    /// Put the device under `none`, what the kernel gives a new loop device.
    pub fn schedule_none(&self) {
        let name = self.0.trim_start_matches("/dev/");
        let f = format!("/sys/block/{name}/queue/scheduler");
        if std::fs::read_to_string(&f).is_ok_and(|s| !s.contains("[none]")) {
            let _ = std::fs::write(&f, "none");
        }
    }
}

/// A loop device's scheduler, read-ahead and queue depth, as sysfs shows them (`loop3`).
pub fn queue_of(dev: &str) -> (String, String, String) {
    let q = |k: &str| {
        std::fs::read_to_string(format!("/sys/block/{dev}/queue/{k}"))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let active = fsbench_base::sys::iosched::active_scheduler(&q("scheduler"))
        .unwrap_or("")
        .to_string();
    (active, q("read_ahead_kb"), q("nr_requests"))
}

/// Every loop device's queue settings now.
pub fn loop_queues() -> std::collections::BTreeMap<String, (String, String, String)> {
    std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("loop"))
        .map(|n| {
            let q = queue_of(&n);
            (n, q)
        })
        .collect()
}

/// [`queue_of`] for a loop device no one has attached, read while holding it exclusively
/// (no one can attach it meanwhile); `None` when another test has it.
pub fn free_loop_queue(dev: &str) -> Option<(String, String, String)> {
    use std::os::unix::fs::OpenOptionsExt;
    let _claim = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(format!("/dev/{dev}"))
        .ok()?;
    if Path::new(&format!("/sys/block/{dev}/loop/backing_file")).exists() {
        return None;
    }
    Some(queue_of(dev))
}

/// A freshly made ext4 image, loop-mounted; unmounted, detached and deleted
/// on drop (fields drop in order: mount, loop device, scratch directory).
pub struct LoopExt4 {
    pub mount: Mount,
    pub dev: Loop,
    pub scratch: Scratch,
}

impl LoopExt4 {
    /// `Err(reason)` where this cannot work (not root, no tools, no loop devices).
    pub fn new(tag: &str, mib: u64) -> Result<LoopExt4, String> {
        if !is_root() {
            return Err("needs root for loop devices and mount".into());
        }
        for tool in ["losetup", "mkfs.ext4", "mount", "umount"] {
            if run_ok("sh", &["-c", &format!("command -v {tool}")]).is_err() {
                return Err(format!("{tool} not found"));
            }
        }
        let scratch = Scratch::new(tag);
        let img = scratch.path().join("ext4.img");
        std::fs::File::create(&img)
            .and_then(|f| f.set_len(mib << 20))
            .map_err(|e| e.to_string())?;
        run_ok(
            "mkfs.ext4",
            &["-q", "-F", "-b", "4096", img.to_str().unwrap()],
        )?;
        Self::mount_image(scratch)
    }
    pub fn path(&self) -> &Path {
        &self.mount.0
    }
    pub fn s(&self) -> &str {
        self.mount.0.to_str().unwrap()
    }

    /// Two loop-mounted copies of one freshly made ext4 image (same UUID, hash seed and
    /// layout: two identical file systems), made without lazy initialisation so that no
    /// kernel thread writes to them afterwards.
    pub fn twins(tag: &str, mib: u64) -> Result<(LoopExt4, LoopExt4), String> {
        if !is_root() {
            return Err("needs root for loop devices and mount".into());
        }
        for tool in ["losetup", "mkfs.ext4", "mount", "umount"] {
            if run_ok("sh", &["-c", &format!("command -v {tool}")]).is_err() {
                return Err(format!("{tool} not found"));
            }
        }
        let (a, b) = (
            Scratch::new(&format!("{tag}-a")),
            Scratch::new(&format!("{tag}-b")),
        );
        let img = a.path().join("ext4.img");
        std::fs::File::create(&img)
            .and_then(|f| f.set_len(mib << 20))
            .map_err(|e| e.to_string())?;
        let lazy = "lazy_itable_init=0,lazy_journal_init=0";
        run_ok(
            "mkfs.ext4",
            &["-q", "-F", "-b", "4096", "-E", lazy, img.to_str().unwrap()],
        )?;
        std::fs::copy(&img, b.path().join("ext4.img")).map_err(|e| e.to_string())?;
        Ok((Self::mount_image(a)?, Self::mount_image(b)?))
    }

    fn mount_image(scratch: Scratch) -> Result<LoopExt4, String> {
        let img = scratch.path().join("ext4.img");
        let dev = Loop(run_ok("losetup", &["-f", "--show", img.to_str().unwrap()])?);
        // Whatever an earlier user left on this device number (a queue setting outlives a
        // detach): the kernel's own choice for a new loop device.
        dev.schedule_none();
        let mnt = scratch.path().join("mnt");
        std::fs::create_dir_all(&mnt).map_err(|e| e.to_string())?;
        run_ok("mount", &["-t", "ext4", &dev.0, mnt.to_str().unwrap()])?;
        Ok(LoopExt4 {
            mount: Mount(mnt),
            dev,
            scratch,
        })
    }
}

/// Every entry below `dir` as (relative path, size; directories as size
/// `u64::MAX`), sorted. fsbench's lock and run-directory marker hold the pid of the
/// process that wrote them, whose number of digits is the machine's and not the run's
/// (one suite run here crossed pid 100,000 between two agings): they are listed with size 0.
pub fn tree_listing(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let md = e.metadata().unwrap();
            let rel = e
                .path()
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if md.is_dir() {
                out.push((rel, u64::MAX));
                stack.push(e.path());
            } else if matches!(
                e.file_name().to_str(),
                Some(".fsbench-lock" | ".fsbench-run")
            ) {
                out.push((rel, 0));
            } else {
                out.push((rel, md.len()));
            }
        }
    }
    out.sort();
    out
}

/// Tests skipped so far; printed to standard error when the test program exits.
static SKIPPED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn count_skip() {
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    extern "C" fn report() {
        let n = SKIPPED.load(std::sync::atomic::Ordering::Relaxed);
        eprintln!("SKIPPED: {n} test(s) skipped, each with its reason above (SKIPPED name: why)");
    }
    SKIPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: registers a function with no captured state, run once at exit.
    AT_EXIT.call_once(|| unsafe {
        libc::atexit(report);
    });
}

/// A JSON file fsbench wrote.
pub fn json_of(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// `fsbench ARGS`, which must succeed; its standard output.
pub fn stdout_ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(o.status.success(), "fsbench {args:?} failed\n{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Whether `cmd` is a file in a directory of PATH.
pub fn have(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

/// Root, or the test `what` is skipped with `why` root is needed.
pub fn root_or_skip_because(what: &str, why: &str) -> bool {
    if !is_root() {
        skip(&format!("{what}: needs root ({why})"));
        return false;
    }
    true
}

/// Root, loop devices and mkfs.ext4, or the test `what` is skipped saying so.
pub fn loop_devices_or_skip(what: &str) -> bool {
    let have = is_root()
        && Path::new("/dev/loop-control").exists()
        && Command::new("mkfs.ext4").arg("-V").output().is_ok();
    if !have {
        skip(&format!("{what}: needs root, loop devices and mkfs.ext4"));
    }
    have
}

/// `python3` with the `jsonschema` package, or the reason there is none.
pub fn jsonschema() -> Result<(), String> {
    match std::process::Command::new("python3")
        .args(["-c", "import jsonschema"])
        .output()
    {
        Ok(o) if o.status.success() => Ok(()),
        Ok(_) => Err("python3 has no jsonschema module".into()),
        Err(e) => Err(format!("no python3: {e}")),
    }
}

/// What the Draft 2020-12 validator finds wrong with `doc` against `schema` (the schema
/// itself checked first): one line per error, none when it validates.
pub fn schema_errors(schema: &Path, doc: &Path) -> Vec<String> {
    let script = "import json, sys\n\
                  from jsonschema import Draft202012Validator as V\n\
                  schema = json.load(open(sys.argv[1]))\n\
                  V.check_schema(schema)\n\
                  errs = V(schema).iter_errors(json.load(open(sys.argv[2])))\n\
                  for e in sorted(errs, key=lambda e: e.json_path):\n    print(e.json_path + ': ' + e.message)\n";
    let o = std::process::Command::new("python3")
        .args([
            "-c",
            script,
            schema.to_str().unwrap(),
            doc.to_str().unwrap(),
        ])
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "the validator failed: {}", text(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(String::from)
        .collect()
}

pub fn schema(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/schema")
        .join(name)
}

/// What the validator finds wrong with the JSON text `doc` against `docs/schema/NAME`; `None`
/// (the skip said) where Python's `jsonschema` is missing.
pub fn schema_errors_in(name: &str, doc: &str) -> Option<Vec<String>> {
    if let Err(why) = jsonschema() {
        skip(&format!("the check against {name}: {why}"));
        return None;
    }
    let path = std::env::temp_dir().join(format!(
        "fsbench-schema-{}-{}.json",
        std::process::id(),
        SCHEMA_DOCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::write(&path, doc).unwrap();
    let errs = schema_errors(&schema(name), &path);
    let _ = std::fs::remove_file(&path);
    Some(errs)
}

/// Validate the JSON text `doc` against `docs/schema/NAME`, failing with every error.
pub fn assert_schema(name: &str, doc: &str) {
    if let Some(errs) = schema_errors_in(name, doc) {
        assert!(errs.is_empty(), "{name}:\n{}\n{doc}", errs.join("\n"));
    }
}

static SCHEMA_DOCS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
