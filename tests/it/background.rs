//! `[[background]]` in an experiment plan, end to end on the real binary: a background
//! fsbench workload that only sleeps, run beside a real measurement at a chosen nice and
//! ionice, stored beside the run, shown by `fsbench results`, and stopped after it.

use crate::common::*;
use std::path::Path;

const NAP: &str = "define process name=sleeper,instances=1
{
  thread name=napper,memsize=1m,instances=1
  {
    flowop delay name=nap,value=1
  }
}
run 60
";

fn plan(target: &Path) -> String {
    format!(
        r#"
[experiment]
name = "bg"
repetitions = 2
order = "interleaved"

[[target]]
name = "here"
kind = "dir"
path = "{}"

[[background]]
name = "napper"
factor = "load"
kind = "workload"
params = {{ workload = "nap.f", duration = 60 }}
nice = 7
ionice = "idle"

[[background]]
name = "ticker"
factor = "load"
kind = "command"
command = ["sleep", "0.1"]
restart = true

[[measurement]]
name = "nap"
kind = "workload"
params = {{ workload = "nap.f", duration = 1.5 }}
factors = {{ load = ["ticker"] }}

[[measurement]]
name = "walk"
kind = "find"
params = {{ tree_files = 200, tree_dirs = 4 }}
factors = {{ load = ["none", "napper"] }}
"#,
        target.display()
    )
}

#[test]
fn a_background_runs_beside_the_measurement_at_its_priority_and_is_stopped_after_it() {
    let s = Scratch::new("bg");
    let target = s.path().join("t");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(s.path().join("nap.f"), NAP).unwrap();
    let p = s.path().join("p.toml");
    std::fs::write(&p, plan(&target)).unwrap();
    let out = s.path().join("out");
    let dry = run(&["experiment", p.to_str().unwrap(), "--dry-run"]);
    let dt = text(&dry);
    assert!(dry.status.success(), "{dt}");
    assert!(
        dt.contains("background napper (in TARGET, nice 7 ionice idle): fsbench run "),
        "{dt}"
    );
    assert!(dt.contains("--duration 60"), "{dt}");
    experiment_ok(&p, &out);
    let db = rusqlite::Connection::open(out.join("results.db")).unwrap();
    // Stored beside the runs of the cell that names it, and only those.
    type Row = (i64, String, String, String, f64, Option<String>, String);
    let rows: Vec<Row> = db
        .prepare(
            "SELECT b.run_id, b.kind, b.status, b.applied_json, b.elapsed_s, b.results_json, json_extract(c.factors_json, '$.load') FROM backgrounds b JOIN runs r ON r.id = b.run_id JOIN cells c ON c.id = r.cell_id ORDER BY b.rowid",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let (ticks, rows): (Vec<Row>, Vec<Row>) = rows.into_iter().partition(|r| r.6 == "ticker");
    assert_eq!(ticks.len(), 2, "{ticks:?}");
    for (_, kind, status, applied, _, _, _) in &ticks {
        // A command started again each time it ended, until the 1.5 s run was over.
        let a: serde_json::Value = serde_json::from_str(applied).unwrap();
        assert_eq!(kind, "command");
        assert_eq!(status, "stopped");
        assert!(a["passes"].as_u64().unwrap() >= 5, "{a}");
    }
    assert_eq!(
        rows.len(),
        2,
        "one per repetition of the napper cell: {rows:?}"
    );
    for (_, kind, status, applied, elapsed, results, load) in &rows {
        assert_eq!(load, "napper");
        assert_eq!(kind, "workload");
        // Interrupted after the measurement, long before its 60 s.
        assert_eq!(status, "stopped");
        assert!(*elapsed < 50.0, "{elapsed}");
        // The priority as the kernel held it for the child (/proc/PID/stat, ioprio_get).
        let a: serde_json::Value = serde_json::from_str(applied).unwrap();
        assert_eq!(a["nice"], 7, "{a}");
        assert_eq!(a["ionice"], "idle", "{a}");
        // No process of it is left.
        let pid = a["pid"].as_i64().unwrap();
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&cmd).contains("nap.f"),
            "background {pid} still running"
        );
        // Its own results: the fsbench child's JSON, cut short by the stop.
        let r: serde_json::Value = serde_json::from_str(results.as_deref().unwrap()).unwrap();
        assert_eq!(r["interrupted"], true, "{r}");
        assert!(r["duration_s"].as_f64().unwrap() < 50.0);
    }
    let none: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM runs r JOIN cells c ON c.id = r.cell_id WHERE json_extract(c.factors_json, '$.load') = 'none' AND r.status = 'ok'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(none, 2);
    let res = run(&["results", out.to_str().unwrap()]);
    let rt = text(&res);
    assert!(res.status.success(), "{rt}");
    assert!(rt.contains("background loads"), "{rt}");
    assert!(rt.contains("napper"), "{rt}");
    assert!(rt.contains("nice 7 ionice idle  (2 stopped)"), "{rt}");
    let summary = stdout_ok(&["results", out.to_str().unwrap(), "--json", "-"]);
    assert_schema("summary.schema.json", &summary);
    assert!(summary.contains("\"backgrounds\""), "{summary}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("Background loads"),
        "report without backgrounds"
    );
}

#[test]
fn background_errors_name_the_plan_line_and_column() {
    let s = Scratch::new("bg-err");
    std::fs::write(s.path().join("nap.f"), NAP).unwrap();
    let base = plan(s.path());
    let p = s.path().join("p.toml");
    let check = |from: &str, to: &str, want: &str| {
        std::fs::write(&p, base.replace(from, to)).unwrap();
        let o = run(&["experiment", p.to_str().unwrap(), "--dry-run"]);
        let t = text(&o);
        assert!(!o.status.success(), "{t}");
        assert!(t.contains(want), "want {want:?} in {t}");
    };
    check(
        "[\"none\", \"napper\"]",
        "[\"none\", \"cleaner\"]",
        "p.toml:37:29: unknown background \"cleaner\" for factor `load` (its backgrounds: napper, ticker; or",
    );
    check(
        "nice = 7",
        "nice = 25",
        "p.toml:17:8: nice 25: expected -20 (highest) to 19",
    );
    check(
        "ionice = \"idle\"",
        "ionice = \"best-effort:9\"",
        "p.toml:18:10: ionice \"best-effort:9\": the level is 0 (highest) to 7",
    );
    check(
        "ionice = \"idle\"",
        "ionice = \"low\"",
        "p.toml:18:10: ionice \"low\": expected",
    );
    check(
        "factor = \"load\"",
        "factor = \"target\"",
        "p.toml:14:10: factor \"target\"",
    );
    check(
        "duration = 60 }",
        "duration = 60, tree_files = 10 }",
        "no generated tree (tree_files)",
    );
    check(
        "restart = true",
        "restart = true\nstop = \"end\"",
        "it needs stop = \"after\"",
    );
    check(
        "kind = \"workload\"\nparams",
        "kind = \"command\"\nparams",
        "p.toml:12:1: a background of kind \"command\" needs `command = [",
    );
    check(
        "restart = true",
        "restart = true\nstart = \"with\"",
        "p.toml:26:9: start = \"with\" waits for the load's own measured window",
    );
    check(
        "nice = 7",
        "nice = 7\nstart = \"later\"",
        "p.toml:18:9: start \"later\": expected \"before\"",
    );
}

/// A cleaner that starts with the measurement (`start = "with"`): it lays out its tree
/// first, then deletes only once the build beside it has prepared its own tree and started
/// measuring, so that its deletions fall inside the build's measured window.
#[test]
fn a_load_that_starts_with_the_measurement_waits_for_its_window() {
    let s = Scratch::new("bg-with");
    let target = s.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let p = s.path().join("p.toml");
    std::fs::write(
        &p,
        format!(
            r#"
[experiment]
name = "with"
repetitions = 1

[[target]]
name = "t"
kind = "dir"
path = "{}"

[[background]]
name = "deleting"
factor = "cleaner"
kind = "prune"
params = {{ files = 400, dirs = 8, file_size = "8K", free = "1M", seed = 3 }}
start = "with"

[[measurement]]
name = "build"
kind = "build"
params = {{ files = 300, dirs = 10, jobs = 2, cpu_ms = 5 }}
factors = {{ cleaner = ["deleting"] }}
"#,
            target.display()
        ),
    )
    .unwrap();
    let out = s.path().join("out");
    let o = run(&[
        "experiment",
        p.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let db = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let (build_at, build_s, prune_at, status): (f64, f64, f64, String) = db
        .query_row(
            "SELECT json_extract(r.results_json, '$.started_at'), json_extract(r.results_json, '$.duration_s'), \
             json_extract(b.results_json, '$.started_at'), b.status FROM backgrounds b JOIN runs r ON r.id = b.run_id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(status, "ended", "the cleaner freed its 1M and ended");
    assert!(
        prune_at >= build_at - 0.05 && prune_at <= build_at + build_s,
        "the cleaner's deletions began at {prune_at}, the build measured from {build_at} for {build_s} s"
    );
}

/// Processes (pid, command line) whose command line holds `needle` (zombies aside).
fn processes(needle: &str) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie =
            std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| s.contains(") Z "));
        if cmdline.contains(needle) && !zombie {
            out.push((pid, cmdline));
        }
    }
    out
}

fn running(needle: &str) -> Vec<String> {
    processes(needle)
        .into_iter()
        .map(|(pid, c)| format!("{pid}: {c}"))
        .collect()
}

/// Kills, by pid, what a failed test left running: the sleeps of this test's unique
/// durations.
struct KillSleeps(Vec<String>);
impl Drop for KillSleeps {
    fn drop(&mut self) {
        for n in &self.0 {
            for (pid, c) in processes(&format!("sleep {n}")) {
                if c.trim() == format!("sleep {n}") {
                    // SAFETY: kill(2) of a process this test's plan started.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
        }
    }
}

/// Durations no other process sleeps for: their command lines find this test's sleeps.
fn unique_sleeps(k: usize) -> Vec<String> {
    let base = 4000 + std::process::id() % 1000;
    (0..k).map(|i| format!("{base}.{i}{}", i + 7)).collect()
}

fn can_make_cgroups(what: &str) -> bool {
    let v2 = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .contains(" - cgroup2 ");
    let ok = is_root() && v2;
    if !ok {
        skip(&format!("{what}: needs root and cgroup v2"));
    }
    ok
}

fn forking_plan(target: &Path, bg: &str, measured_s: f64) -> String {
    format!(
        r#"
[experiment]
name = "forks"
repetitions = 1

[[target]]
name = "here"
kind = "dir"
path = "{}"

[[background]]
name = "forker"
factor = "load"
kind = "command"
command = ["sh", "-c", "{bg}"]

[[measurement]]
name = "nap"
kind = "workload"
params = {{ workload = "nap.f", duration = {measured_s} }}
factors = {{ load = ["forker"] }}
"#,
        target.display()
    )
}

/// A background that escapes its process group (`setsid ... &`) ends with its run.
#[test]
fn a_forking_background_does_not_outlive_its_run() {
    if !can_make_cgroups("a_forking_background_does_not_outlive_its_run") {
        return;
    }
    let s = Scratch::new("bg-fork");
    let target = s.path().join("t");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(s.path().join("nap.f"), NAP).unwrap();
    let n = unique_sleeps(1);
    let _kill = KillSleeps(n.clone());
    let p = s.path().join("p.toml");
    let bg = format!("setsid sleep {} & sleep 300", n[0]);
    std::fs::write(&p, forking_plan(&target, &bg, 3.0)).unwrap();
    let out = s.path().join("out");
    let child = bin()
        .args([
            "experiment",
            p.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The escaped sleep runs during the measurement ...
    let t = std::time::Instant::now();
    while running(&format!("sleep {}", n[0])).is_empty() {
        assert!(t.elapsed().as_secs() < 60, "the background never forked");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    // ... and not after it.
    let left = running(&format!("sleep {}", n[0]));
    assert!(left.is_empty(), "outlived the experiment: {left:?}");
}

/// After SIGKILL of the runner, its measured child and backgrounds stop (parent-death
/// signal), and `--cleanup` kills what they forked and removes the run's cgroup.
#[test]
fn cleanup_after_sigkill_kills_what_the_run_started() {
    if !can_make_cgroups("cleanup_after_sigkill_kills_what_the_run_started") {
        return;
    }
    let s = Scratch::new("bg-kill");
    let target = s.path().join("t");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(s.path().join("nap.f"), NAP).unwrap();
    let n = unique_sleeps(2);
    let _kill = KillSleeps(n.clone());
    let p = s.path().join("p.toml");
    let bg = format!("setsid sleep {} & exec sleep {}", n[0], n[1]);
    std::fs::write(&p, forking_plan(&target, &bg, 60.0)).unwrap();
    let out = s.path().join("out");
    let mut child = bin()
        .args([
            "experiment",
            p.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let outs = out.to_str().unwrap().to_string();
    let measured = || running(&format!("{outs}/runs/c001-r00.json"));
    let t = std::time::Instant::now();
    while measured().is_empty() || running(&format!("sleep {}", n[0])).is_empty() {
        assert!(t.elapsed().as_secs() < 60, "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let journal = std::fs::read_to_string(out.join("teardown.json")).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let cgroups: Vec<String> = serde_json::from_str::<serde_json::Value>(&journal)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|u| u["RemoveCgroup"]["path"].as_str().map(String::from))
        .collect();
    assert!(!cgroups.is_empty(), "no cgroup in {journal}");
    // The direct children go with the runner.
    let t = std::time::Instant::now();
    while !measured().is_empty() || !running(&format!("sleep {}", n[1])).is_empty() {
        assert!(
            t.elapsed().as_secs() < 20,
            "outlived the runner: {:?} {:?}",
            measured(),
            running(&format!("sleep {}", n[1]))
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = run(&["experiment", "--cleanup", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let left = running(&format!("sleep {}", n[0]));
    assert!(left.is_empty(), "outlived --cleanup: {left:?}");
    for c in &cgroups {
        assert!(!Path::new(c).exists(), "{c} left: {}", text(&o));
    }
}

/// A background that walks a `find` measurement's tree finds it on a target where that
/// measurement does not run (the tree is made for it); a background that fails makes its
/// run fail with its reason, so that no figure is taken from a cell that did not run as
/// named.
#[test]
fn a_background_s_tree_is_made_and_a_failed_background_fails_its_run() {
    let s = Scratch::new("bg-tree");
    let (a, b) = (s.path().join("a"), s.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    std::fs::write(s.path().join("nap.f"), NAP).unwrap();
    let p = s.path().join("p.toml");
    std::fs::write(
        &p,
        format!(
            r#"
[experiment]
name = "bg-tree"
repetitions = 1

[factors]
target = ["a", "b"]

[[target]]
name = "a"
kind = "dir"
path = "{}"

[[target]]
name = "b"
kind = "dir"
path = "{}"

[[measurement]]
name = "walk"
kind = "find"
params = {{ tree_files = 300, tree_dirs = 6 }}

[[measurement]]
name = "nap"
kind = "workload"
params = {{ workload = "nap.f", duration = 1.5 }}
factors = {{ cleaner = ["scan", "broken"] }}

[[background]]
name = "scan"
factor = "cleaner"
kind = "scan"
params = {{ path = "fsbench-tree-walk", per_user = true }}
restart = true

[[background]]
name = "broken"
factor = "cleaner"
kind = "command"
command = ["sh", "-c", "echo the cleaner cannot start >&2; exit 3"]

[[exclude]]
measurement = "walk"
target = "b"

[[exclude]]
measurement = "nap"
target = "a"
"#,
            a.display(),
            b.display()
        ),
    )
    .unwrap();
    let out = s.path().join("out");
    let o = run(&[
        "experiment",
        p.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let t = text(&o);
    let db = rusqlite::Connection::open(out.join("results.db")).unwrap();
    type Row = (String, String, String, Option<String>, Option<i64>);
    let rows: Vec<Row> = db
        .prepare(
            "SELECT b.name, b.status, r.status, r.error, json_extract(b.results_json, '$.files') \
             FROM backgrounds b JOIN runs r ON r.id = b.run_id ORDER BY b.name",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}\n{t}");
    let (broken, scan) = (&rows[0], &rows[1]);
    assert_eq!((broken.0.as_str(), scan.0.as_str()), ("broken", "scan"));
    // The tree was made on b, which runs no `find`, for the background that walks it: the
    // scan walked its 300 files (and the tree's marker; its last whole pass), until the run ended.
    assert_ne!(scan.1, "failed", "{rows:?}\n{t}");
    assert_eq!(scan.2, "ok", "{rows:?}\n{t}");
    assert!(scan.4.is_some_and(|n| n >= 300), "{rows:?}\n{t}");
    // The broken one failed, and so did its run, saying why.
    assert_eq!(broken.1, "failed", "{rows:?}");
    assert_eq!(broken.2, "failed", "{rows:?}");
    let e = broken.3.as_deref().unwrap_or_default();
    assert!(
        e.contains("background broken")
            && e.contains("status 3")
            && e.contains("the cleaner cannot start"),
        "{e}"
    );
    assert!(t.contains("background broken"), "{t}");
}
