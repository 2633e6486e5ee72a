//! Hostile inputs: absurd sizes, counts and widths, closed pipes, failed starts, Ctrl-C.
//! Each test reproduces a failure fsbench once had (a panic, an abort, gigabytes spent
//! before a refusal, a directory left behind, a wrong exit status) and checks the refusal
//! now comes first, names the value and leaves nothing behind.

use crate::common::*;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Address space a child may use: far below what the absurd inputs used to take, so any
/// input that still allocates before refusing fails the test (as an abort) instead of
/// slowing the machine down.
const CHILD_AS: u64 = 4 << 30;

fn limited(cmd: &mut Command) -> &mut Command {
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let r = libc::rlimit {
                rlim_cur: CHILD_AS,
                rlim_max: CHILD_AS,
            };
            libc::setrlimit(libc::RLIMIT_AS, &r);
            Ok(())
        })
    }
}

fn run_limited(args: &[&str]) -> Output {
    limited(bin().args(args).stdin(Stdio::null()))
        .output()
        .expect("fsbench runs")
}

/// A refusal: exit status 1, no signal, no panic, and the message names one of `names`.
fn refused(o: &Output, names: &[&str]) {
    let t = text(o);
    assert_eq!(o.status.signal(), None, "killed by a signal\n{t}");
    assert!(!t.contains("panicked"), "panicked\n{t}");
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        names.iter().any(|n| t.contains(n)),
        "the message names none of {names:?}\n{t}"
    );
}

/// Entries under `dir` whose name starts with `fsbench-`.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("fsbench-"))
        .collect()
}

fn workload(dir: &Scratch, body: &str) -> String {
    let p = dir.path().join("w.f");
    std::fs::write(&p, body).unwrap();
    p.to_str().unwrap().to_string()
}

const FILESET: &str = "set $n=10\nset $w=10\nset $i=1\ndefine fileset name=fs,path=/tmp,entries=$n,dirwidth=$w,size=4k,prealloc\ndefine process name=p,instances=$i { thread name=t { flowop statfile name=s,filesetname=fs } }\nrun 1\n";

#[test]
fn absurd_entries_and_widths_are_refused_before_planning() {
    let d = Scratch::new("robust-entries");
    let w = workload(&d, FILESET);
    for (n, width) in [
        ("1000000000000", "10"),
        ("9223372036854775807", "9223372036854775807"),
        ("100000000", "20"),
        ("1000000000", "2"),
    ] {
        let o = run_limited(&[
            "run",
            &w,
            "--dir",
            d.s(),
            "-q",
            "-s",
            &format!("n={n}"),
            "-s",
            &format!("w={width}"),
        ]);
        refused(&o, &[&format!("entries={n}")]);
        assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
    }
}

#[test]
fn thread_counts_beyond_the_machine_are_refused() {
    let d = Scratch::new("robust-threads");
    let w = workload(&d, FILESET);
    let o = run_limited(&["run", &w, "--dir", d.s(), "-q", "-s", "i=100000"]);
    refused(&o, &["instances=100000"]);
    assert!(leftovers(d.path()).is_empty());
    let o = run_limited(&["andrew", "--clients", "100000", "--dir", d.s()]);
    refused(&o, &["--clients 100000"]);
    let o = run_limited(&["find", d.s(), "--threads", "100000"]);
    refused(&o, &["--threads 100000"]);
    let o = run_limited(&["build", "-j", "100000", "--dir", d.s()]);
    refused(&o, &["-j 100000"]);
    assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
}

#[test]
fn thread_buffers_follow_the_iosize_not_all_of_memsize() {
    // 400 threads with memsize=1g each: 400 GiB if allocated whole. Sized to the largest
    // iosize (4 KiB) the run fits in the child's 4 GiB of address space.
    let d = Scratch::new("robust-memsize");
    let w = workload(
        &d,
        "define fileset name=fs,path=/tmp,entries=4,dirwidth=10,size=4k,prealloc\n\
         define process name=p { thread name=t,instances=400,memsize=1g { flowop read name=r,filesetname=fs,iosize=4k } }\nrun 1\n",
    );
    let o = run_limited(&["run", &w, "--dir", d.s(), "--duration", "0.3"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("buffers and recorders of 400 threads"), "{t}");
}

#[test]
fn composite_expansion_is_bounded_and_named() {
    let d = Scratch::new("robust-composite");
    let mut s = String::from(
        "define fileset name=fs,path=/tmp,entries=10,dirwidth=10,size=4k,prealloc\n\
         define flowop name=c0 { flowop statfile name=s,filesetname=fs }\n",
    );
    for level in 1..=8 {
        let body: Vec<String> = (0..10)
            .map(|i| format!("flowop c{} name=n{level}_{i}", level - 1))
            .collect();
        s += &format!("define flowop name=c{level} {{ {} }}\n", body.join(" "));
    }
    s += "define process name=p { thread name=t { flowop c8 name=top } }\nrun 1\n";
    let w = workload(&d, &s);
    let o = run_limited(&["check", &w, "-q"]);
    refused(&o, &["composite flowop `c8` expands to"]);
}

#[test]
fn closed_stdout_ends_quietly() {
    let mut child = bin()
        .arg("list")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let t = text(&o);
    assert!(!t.contains("panicked"), "{t}");
    assert_ne!(o.status.code(), Some(101), "{t}");
    assert!(o.stderr.is_empty(), "{t}");
}

#[test]
fn failed_starts_leave_nothing_behind() {
    let d = Scratch::new("robust-starts");
    let o = run(&["andrew", "--cc", "/nonexistent/cc", "--dir", d.s()]);
    refused(&o, &["/nonexistent/cc"]);
    let o = run(&["age", d.s(), "--profile", "nope", "--fill", "0.01"]);
    refused(&o, &["nope"]);
    assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
    let o = run(&["andrew", "--dir", "/etc/passwd"]);
    refused(&o, &["/etc/passwd is not a directory"]);
}

#[test]
fn output_paths_are_checked_before_the_run() {
    let d = Scratch::new("robust-json");
    let w = workload(&d, FILESET);
    // A usage error (status 2): the option names something that cannot be written.
    let o = run(&["run", &w, "--dir", d.s(), "-q", "--json", d.s()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is a directory"), "{}", text(&o));
    assert!(!text(&o).contains("IO Summary"), "{}", text(&o));
    let o = run(&["build", "--dir", d.s(), "--json", d.s()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is a directory"), "{}", text(&o));
    assert!(leftovers(d.path()).is_empty());
}

#[test]
fn non_utf8_workloads_get_line_and_column() {
    let d = Scratch::new("robust-utf8");
    let p = d.path().join("bin.f");
    std::fs::write(&p, b"# ok\ndefine fileset name=a\xff\n").unwrap();
    let o = run(&["check", p.to_str().unwrap()]);
    refused(&o, &["bin.f:2:22"]);
}

#[test]
fn errors_do_not_repeat_their_cause() {
    let d = Scratch::new("robust-cause");
    let p = d.path().join("unreadable.f");
    std::fs::create_dir(&p).unwrap();
    let o = run(&["check", p.to_str().unwrap()]);
    let t = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "{t}");
    let line = t.lines().last().unwrap_or_default();
    let words: Vec<&str> = line.split(": ").collect();
    let mut seen = std::collections::HashSet::new();
    for w in &words[1..] {
        assert!(seen.insert(*w), "repeated cause in {line}");
    }
}

#[test]
fn postmark_and_build_sizes_are_refused() {
    let d = Scratch::new("robust-apps");
    for (line, name) in [
        ("set number 4000000000", "set number 4000000000"),
        (
            "set subdirectories 100000000",
            "set subdirectories 100000000",
        ),
    ] {
        let cfg = d.path().join("pm.cfg");
        std::fs::write(&cfg, format!("{line}\n")).unwrap();
        let o = run_limited(&["postmark", cfg.to_str().unwrap(), "--dir", d.s()]);
        refused(&o, &[name]);
    }
    for size in ["1099511627776", "18446744073709551615"] {
        let o = run_limited(&["build", "--source-size", size, "--dir", d.s()]);
        refused(&o, &[&format!("--source-size {size}")]);
    }
    assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
}

#[test]
fn ctrl_c_sighup_and_sigterm_exit_130_after_cleaning_up() {
    let d = Scratch::new("robust-sigint");
    // Each benchmark gets one of the three signals that mean "stop": a closed terminal
    // (SIGHUP) and a service manager (SIGTERM) must clean up as Ctrl-C does.
    for (sig, args) in [
        (
            libc::SIGINT,
            vec![
                "build",
                "--files",
                "20000",
                "--cpu-ms",
                "20",
                "--dir",
                d.s(),
            ],
        ),
        (
            libc::SIGHUP,
            vec!["andrew", "--copies", "3000", "--no-compile", "--dir", d.s()],
        ),
        (
            libc::SIGTERM,
            vec![
                "run",
                "fileserver",
                "--dir",
                d.s(),
                "-q",
                "--duration",
                "30",
            ],
        ),
    ] {
        let child = bin()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = child;
        // Signal only once the run has visibly started (its run directory
        // exists), so the handler is installed and there is work to stop.
        let started = std::time::Instant::now();
        while leftovers(d.path()).is_empty() && started.elapsed().as_secs() < 20 {
            assert!(
                child.try_wait().unwrap().is_none(),
                "{args:?} ended before it created its run directory"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(
            child.try_wait().unwrap().is_none(),
            "{args:?} finished before the signal: the workload is too small to interrupt"
        );
        // SAFETY: kill with a pid we started.
        unsafe { libc::kill(child.id() as i32, sig) };
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(130), "{args:?}\n{}", text(&o));
        assert!(
            leftovers(d.path()).is_empty(),
            "{args:?}: {:?}",
            leftovers(d.path())
        );
    }
}

/// Planning a very large fileset (its tree and every file's size) stops at Ctrl-C: exit 130
/// before any run directory exists.
#[test]
fn ctrl_c_during_planning_exits_130_before_creating_anything() {
    use std::io::BufRead;
    let d = Scratch::new("robust-sigint-plan");
    let w = workload(
        &d,
        "define fileset name=fs,path=/tmp,entries=20000000,dirwidth=20,size=1k\n\
         define process name=p { thread name=t { flowop statfile name=s,filesetname=fs } }\n\
         run 1\n",
    );
    let mut child = bin()
        .args(["run", &w, "--dir", d.s()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The memory estimate is printed just before planning starts.
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "ended before planning: {seen}"
        );
        seen.push_str(&line);
        if line.contains("for fileset plans") {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    // SAFETY: kill with a pid we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    seen.push_str(&rest);
    let status = child.wait().unwrap();
    assert!(
        !seen.contains("run directory"),
        "planning 20 million entries finished before the signal, or went on after it:\n{seen}"
    );
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
}

/// A small deterministic generator (the test needs no seed crate).
struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[(self.next() % v.len() as u64) as usize]
    }
}

/// Random and extreme sizes, counts and widths thrown at every command that takes them:
/// never a panic or an abort, memory bounded by the child's RLIMIT_AS, and an error that
/// names the value (or its option) whenever the command refuses.
#[test]
fn fuzz_sizes_counts_and_widths() {
    let d = Scratch::new("robust-fuzz");
    let w = workload(&d, FILESET);
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let extremes = [
        "0",
        "-1",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "18446744073709551615",
        "100000000000",
        "1e12",
    ];
    let mut random_big = || format!("{}", 10_000_000 + rng.next() % 1_000_000_000_000_000);
    let mut g = XorShift(0x9e37_79b9_7f4a_7c15);
    for i in 0..40 {
        let v = if g.next().is_multiple_of(2) {
            g.pick(&extremes).to_string()
        } else {
            random_big()
        };
        let (args, names): (Vec<String>, Vec<String>) = match i % 8 {
            0 => (
                vec![
                    "check".into(),
                    w.clone(),
                    "-q".into(),
                    "-s".into(),
                    format!("n={v}"),
                ],
                vec![v.clone(), "n=".into()],
            ),
            1 => (
                vec![
                    "run".into(),
                    w.clone(),
                    "-q".into(),
                    "--dir".into(),
                    d.s().into(),
                    "-s".into(),
                    format!("n={v}"),
                    "-s".into(),
                    format!("w={}", g.pick(&extremes)),
                ],
                vec![
                    format!("entries={v}"),
                    v.clone(),
                    "dirwidth".into(),
                    "w=".into(),
                ],
            ),
            2 => (
                vec![
                    "run".into(),
                    w.clone(),
                    "-q".into(),
                    "--dir".into(),
                    d.s().into(),
                    "-s".into(),
                    format!("i={v}"),
                ],
                vec![format!("instances={v}"), v.clone(), "i=".into()],
            ),
            3 => {
                let cfg = d.path().join(format!("pm{i}.cfg"));
                // (a huge `transactions` is valid and merely long, so it is not thrown here)
                let what = g.pick(&["number", "subdirectories", "size"]);
                std::fs::write(&cfg, format!("set {what} {v}\n")).unwrap();
                (
                    vec![
                        "postmark".into(),
                        cfg.to_str().unwrap().into(),
                        "--dir".into(),
                        d.s().into(),
                    ],
                    vec![format!("set {what}"), what.into(), v.clone()],
                )
            }
            4 => (
                vec![
                    "andrew".into(),
                    "--clients".into(),
                    v.clone(),
                    "--dir".into(),
                    d.s().into(),
                ],
                vec!["--clients".into(), v.clone()],
            ),
            5 => (
                vec![
                    "build".into(),
                    "--source-size".into(),
                    v.clone(),
                    "--dir".into(),
                    d.s().into(),
                ],
                vec!["--source-size".into(), v.clone()],
            ),
            6 => (
                vec![
                    "build".into(),
                    "-j".into(),
                    v.clone(),
                    "--files".into(),
                    v.clone(),
                    "--dir".into(),
                    d.s().into(),
                ],
                vec!["-j".into(), "--files".into(), "--jobs".into(), v.clone()],
            ),
            _ => (
                vec![
                    "age".into(),
                    d.s().into(),
                    "--ops".into(),
                    v.clone(),
                    "--fill".into(),
                    v.clone(),
                ],
                vec!["--ops".into(), "--fill".into(), v.clone()],
            ),
        };
        let o = limited(
            bin()
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .output()
        .unwrap();
        let t = text(&o);
        assert_eq!(o.status.signal(), None, "{args:?}: killed by a signal\n{t}");
        assert!(!t.contains("panicked"), "{args:?}: panicked\n{t}");
        if !o.status.success() {
            assert!(
                names.iter().any(|n| t.contains(n.as_str())),
                "{args:?}: the error names none of {names:?}\n{t}"
            );
        }
        assert!(
            leftovers(d.path()).is_empty(),
            "{args:?}: {:?}",
            leftovers(d.path())
        );
    }
}

#[test]
fn a_reuse_rerun_counts_its_own_files_as_free_space() {
    // A second run of a `reuse` workload reuses the files of the first: the space checks
    // must not ask for room to write them again (a 5 MiB file on an 8 MiB file system).
    if !is_root() {
        skip("needs root to mount a small tmpfs");
        return;
    }
    let t = Scratch::new("reuse-space");
    let m = t.path().join("mnt");
    std::fs::create_dir_all(&m).unwrap();
    if let Err(e) = run_ok(
        "mount",
        &["-t", "tmpfs", "-o", "size=8m", "none", m.to_str().unwrap()],
    ) {
        skip(&e);
        return;
    }
    let _mount = Mount(m.clone());
    let f = t.path().join("big.f");
    std::fs::write(
        &f,
        "define file name=big,path=/tmp,size=5m,prealloc,reuse
define process name=p { thread name=t { flowop read name=r,filename=big,iosize=4k,random } }
run 1
",
    )
    .unwrap();
    for round in 1..=2 {
        let o = run(&[
            "run",
            f.to_str().unwrap(),
            "--dir",
            m.to_str().unwrap(),
            "-q",
        ]);
        assert!(o.status.success(), "round {round}: {}", text(&o));
    }
    // Still one copy of the file.
    let kept = m.join("fsbench-big");
    assert!(kept.is_dir());
}

/// A second Ctrl-C while a run removes its files cuts the removal short: the results are
/// still printed, and the command says what it left and how to remove it (exit 130).
#[test]
fn a_second_ctrl_c_during_teardown_says_what_was_left() {
    let d = Scratch::new("robust-sigint-twice");
    let w = workload(
        &d,
        "define fileset name=fs,path=/tmp,entries=60000,dirwidth=100,size=0,prealloc\n\
         define process name=p { thread name=t { flowop statfile name=s,filesetname=fs } }\n\
         run 60\n",
    );
    let mut child = bin()
        .args(["run", &w, "--dir", d.s()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The measurement has started once the run says so on standard error.
    use std::io::BufRead;
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("running 1 thread") {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "ended early: {seen}");
        seen.push_str(&line);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    for _ in 0..2 {
        // SAFETY: kill with a pid we started.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    seen.push_str(&rest);
    let o = child.wait_with_output().unwrap();
    let t = format!("{}{seen}", text(&o));
    assert_eq!(o.status.code(), Some(130), "{t}");
    assert!(t.contains("IO Summary"), "results printed: {t}");
    let left = leftovers(d.path());
    if !left.is_empty() {
        assert!(
            t.contains("left behind") && t.contains("fsbench clean"),
            "{t}"
        );
        let o = run(&["clean", d.s()]);
        assert!(o.status.success(), "{}", text(&o));
    }
    assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
}

/// Run fsbench with `args` and the environment `env` under the address-space limit, killed
/// after `secs` seconds: a run that spins or waits fails the test instead of blocking it.
fn run_for(args: &[&str], env: &[(&str, &str)], secs: u64) -> Output {
    let mut cmd = bin();
    cmd.args(args).envs(env.iter().copied());
    let child = limited(&mut cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fsbench starts");
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output().expect("output")));
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(o) => o,
        Err(_) => {
            // SAFETY: the child is not reaped until its output is collected.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let o = rx.recv().expect("ends");
            let shown: String = text(&o).chars().take(3000).collect();
            panic!("{:?} did not end within {secs} s: {shown}", &args[..2]);
        }
    }
}

/// A command line, its environment, and where its error must point.
type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], String);

/// 30,000 nested parentheses in a fio value overflowed the parser's stack: the process
/// aborted (status 134) from a job file, `${ENV}`, `run --fio` and a plan naming the job.
/// Each is now an error at the value's place.
#[test]
fn deeply_nested_fio_expressions_are_errors_at_their_place() {
    let d = Scratch::new("robust-deep-fio");
    let deep = format!("{}1{}", "(".repeat(30_000), ")".repeat(30_000));
    let job = d.path().join("deep.fio");
    std::fs::write(&job, format!("[j]\nrw=read\nsize={deep}\n")).unwrap();
    let j = job.to_str().unwrap();
    let env_job = d.path().join("env.fio");
    std::fs::write(&env_job, "[j]\nrw=read\nsize=${DEEP}\n").unwrap();
    let e = env_job.to_str().unwrap();
    let plan = d.path().join("p.toml");
    std::fs::write(
        &plan,
        format!("[experiment]\nname = \"deep\"\nrepetitions = 1\n\n[[target]]\nname = \"here\"\nkind = \"dir\"\npath = \"{}\"\n\n[[measurement]]\nname = \"m\"\nkind = \"workload\"\nparams = {{ workload = \"deep.fio\", duration = 1 }}\n", d.s()),
    )
    .unwrap();
    let line = format!("rw=read size={deep}");
    let cases: [Case; 5] = [
        (&["check", j], &[], format!("{j}:3:6")),
        (&["run", j, "--dir", d.s()], &[], format!("{j}:3:6")),
        (&["check", e], &[("DEEP", &deep)], format!("{e}:3:6")),
        (
            &["run", "--fio", &line, "--dir", d.s()],
            &[],
            "--fio:3:6".into(),
        ),
        (
            &["experiment", plan.to_str().unwrap(), "--dry-run"],
            &[],
            format!("{j}:3:6"),
        ),
    ];
    for (args, env, place) in cases {
        let o = run_for(args, env, 60);
        // The command line and the messages hold the expression: shown by their start.
        let shown: String = text(&o).chars().take(3000).collect();
        let cmd = &args[..2];
        assert_eq!(
            o.status.signal(),
            None,
            "{cmd:?}: killed by a signal\n{shown}"
        );
        assert_eq!(o.status.code(), Some(1), "{cmd:?}: {shown}");
        assert!(
            shown.contains("nested more than 256 deep"),
            "{cmd:?}: {shown}"
        );
        assert!(shown.contains(&place), "{cmd:?}: at {place}: {shown}");
        assert!(o.stderr.len() < 20_000, "{cmd:?}: {} bytes", o.stderr.len());
    }
}

/// The parsers fsbench does not write keep their own limits: TOML's nesting (a located plan
/// error, its line shown in part) and serde_json's (a result file refused).
#[test]
fn deeply_nested_plans_and_result_files_are_errors() {
    let d = Scratch::new("robust-deep-toml");
    let n = 100_000;
    let plan = d.path().join("deep.toml");
    let text = format!(
        "[experiment]\nname = \"x\"\nrepetitions = 1\nx = {}{}\n",
        "[".repeat(n),
        "]".repeat(n)
    );
    std::fs::write(&plan, text).unwrap();
    let p = plan.to_str().unwrap();
    let json = d.path().join("deep.json");
    std::fs::write(&json, format!("{}{}", "[".repeat(n), "]".repeat(n))).unwrap();
    let j = json.to_str().unwrap();
    for (args, place) in [
        (&["experiment", p, "--dry-run"][..], format!("{p}:4:")),
        (&["compare", j, j], j.to_string()),
    ] {
        let o = run_for(args, &[], 60);
        refused(&o, &[&place]);
        assert!(o.stderr.len() < 2_000, "{args:?}: {} bytes", o.stderr.len());
    }
}

/// `nrfiles=10000000`: `check` said ok after a quarter of an hour and gigabytes, and `run`
/// searched its list of names once per file. Refused at `check`, at the option's place.
#[test]
fn a_fio_job_of_millions_of_files_is_refused_at_check() {
    let d = Scratch::new("robust-nrfiles");
    for (body, place) in [
        ("[j]\nrw=read\nsize=1g\nnrfiles=10000000\n", ":4:1"),
        ("[j]\nrw=read\nsize=1g\nnrfiles=600000\nnumjobs=2\n", ":4:1"),
    ] {
        let job = d.path().join("many.fio");
        std::fs::write(&job, body).unwrap();
        let j = job.to_str().unwrap();
        for args in [&["check", j][..], &["run", j, "--dir", d.s()]] {
            let o = run_for(args, &[], 20);
            refused(&o, &["at most 1000000"]);
            assert!(text(&o).contains(&format!("{j}{place}")), "{}", text(&o));
        }
    }
    // A million in all is taken (and checked in moments).
    let job = d.path().join("ok.fio");
    std::fs::write(&job, "[j]\nrw=read\nsize=1g\nnrfiles=500000\nnumjobs=2\n").unwrap();
    let o = run_for(&["check", job.to_str().unwrap(), "-q"], &[], 20);
    assert!(o.status.success(), "{}", text(&o));
}
