//! Exports written to standard output (`--json -`, `--csv -`, `--markdown -`) own it: every
//! subcommand that has them prints exactly one parseable document there, and its text report
//! goes to standard error. Output that cannot be written never panics and never ends in
//! success: status 141 when the reader went away, 1 with a message otherwise.

use crate::common::*;
use std::process::{Output, Stdio};

/// Run `args` plus `--FORMAT -` and check standard output holds only that document.
fn check(args: &[&str], format: &str) {
    let mut a: Vec<&str> = args.to_vec();
    a.push(match format {
        "json" => "--json",
        "csv" => "--csv",
        _ => "--markdown",
    });
    a.push("-");
    let o = run(&a);
    assert!(o.status.success(), "{:?}: {}", a, text(&o));
    let out = String::from_utf8(o.stdout.clone()).unwrap();
    match format {
        "json" => {
            let v: serde_json::Value = serde_json::from_str(&out)
                .unwrap_or_else(|e| panic!("{a:?}: stdout is not one JSON document ({e}):\n{out}"));
            assert!(v.is_object(), "{a:?}");
        }
        "csv" => {
            let lines: Vec<&str> = out.lines().collect();
            assert!(lines.len() >= 2, "{a:?}: {out}");
            let cols = lines[0].split(',').count();
            assert!(cols > 3, "{a:?}: header {}", lines[0]);
            for l in &lines {
                assert_eq!(
                    l.split(',').count(),
                    cols,
                    "{a:?}: ragged CSV line {l:?} in\n{out}"
                );
            }
        }
        _ => {
            assert!(
                out.lines().any(|l| l.starts_with('|')),
                "{a:?}: no Markdown table:\n{out}"
            );
            assert!(
                out.lines()
                    .filter(|l| !l.trim().is_empty())
                    .all(|l| l.starts_with('|')
                        || l.starts_with('#')
                        || l.starts_with('*')
                        || l.starts_with('-')
                        || l.starts_with('>')
                        || l.chars().next().is_some_and(|c| c.is_alphanumeric())),
                "{a:?}: {out}"
            );
        }
    }
    assert!(
        !out.contains("IO Summary") && !out.contains("Per-Operation"),
        "{a:?}: the text report leaked into stdout:\n{out}"
    );
}

#[test]
fn run_exports_own_stdout() {
    let dir = Scratch::new("stdout-run");
    let wl = dir.path().join("echo.f");
    std::fs::write(
        &wl,
        "define fileset name=fs,path=/tmp,entries=10,dirwidth=5,size=4k,prealloc\n\
         define process name=p { thread name=t { flowop openfile name=o,filesetname=fs,fd=1\n\
         flowop readwholefile name=r,fd=1,iosize=4k\nflowop closefile name=c,fd=1 } }\n\
         echo \"an echo that must not reach stdout\"\nrun 1\n",
    )
    .unwrap();
    for f in ["json", "csv", "markdown"] {
        check(
            &[
                "run",
                wl.to_str().unwrap(),
                "--dir",
                dir.s(),
                "--duration",
                "0.3",
            ],
            f,
        );
    }
    // `--json=-` too; the report and the echo reach standard error instead.
    let o = run(&[
        "run",
        wl.to_str().unwrap(),
        "--dir",
        dir.s(),
        "--duration",
        "0.3",
        "--json=-",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert!(v.is_object());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("IO Summary"), "{err}");
    assert!(err.contains("an echo that must not reach stdout"), "{err}");
}

#[test]
fn application_benchmark_exports_own_stdout() {
    let dir = Scratch::new("stdout-apps");
    std::fs::write(dir.path().join("a"), vec![1u8; 10_000]).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/b"), vec![2u8; 5_000]).unwrap();
    let d = dir.s();
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "postmark",
            "--number",
            "20",
            "--transactions",
            "50",
            "--dir",
            d,
        ],
        vec!["andrew", "--no-compile", "--dir", d],
        vec!["find", d],
        vec![
            "build", "--files", "10", "--dirs", "2", "--cpu-ms", "0", "--dir", d,
        ],
        vec!["read", d],
    ];
    for c in &cases {
        for f in ["json", "csv", "markdown"] {
            check(c, f);
        }
    }
}

#[test]
fn scan_layout_and_age_json_own_stdout() {
    let dir = Scratch::new("stdout-scan");
    std::fs::write(dir.path().join("a"), vec![1u8; 10_000]).unwrap();
    check(&["scan", dir.s()], "json");
    let probe = run(&["layout", dir.s()]);
    if probe.status.success() {
        check(&["layout", dir.s()], "json");
    } else {
        skip(&format!(
            "the layout part: `fsbench layout` cannot run here: {}",
            text(&probe)
        ));
    }
}

#[test]
fn csv_carries_the_named_figures() {
    let dir = Scratch::new("stdout-figures");
    let o = run(&[
        "postmark",
        "--number",
        "20",
        "--transactions",
        "50",
        "--dir",
        dir.s(),
        "--csv",
        "-",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let row = out
        .lines()
        .find(|l| l.starts_with("postmark,transactions_per_s,figure,"))
        .unwrap_or_else(|| panic!("no transaction rate row:\n{out}"));
    let v: f64 = row.rsplit(',').next().unwrap().parse().unwrap();
    assert!(v > 0.0, "{row}");
}

#[test]
fn diff_read_age_and_results_exports_own_stdout() {
    let dir = Scratch::new("stdout-more");
    let old = dir.path().join("old");
    let new = dir.path().join("new");
    for (d, extra) in [(&old, "a"), (&new, "b")] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("same"), vec![7u8; 5000]).unwrap();
        std::fs::write(d.join(extra), vec![extra.as_bytes()[0]; 3000]).unwrap();
    }
    for f in ["json", "markdown"] {
        check(&["diff", old.to_str().unwrap(), new.to_str().unwrap()], f);
    }
    for f in ["json", "csv", "markdown"] {
        check(&["read", old.to_str().unwrap()], f);
    }
    // Aging a directory of this file system (a few operations, no fill target reached).
    let aged = dir.path().join("aged");
    std::fs::create_dir_all(&aged).unwrap();
    check(
        &[
            "age",
            aged.to_str().unwrap(),
            "--fill",
            "0.0001",
            "--ops",
            "50",
        ],
        "json",
    );
    // An experiment's summary.
    let target = dir.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        format!(
            "[experiment]\nname = \"s\"\nrepetitions = 2\n\n[[target]]\nname = \"here\"\nkind = \"dir\"\npath = \"{}\"\n\n[[measurement]]\nname = \"w\"\nkind = \"find\"\nparams = {{ tree_files = 20, tree_dirs = 2 }}\n",
            target.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    experiment_ok(&plan, &out);
    for f in ["json", "csv", "markdown"] {
        check(&["results", out.to_str().unwrap()], f);
    }
}

/// Where a command's standard output or standard error goes in the lost-output tests.
#[derive(Clone, Copy, Debug)]
enum Sink {
    /// `/dev/full`: every write fails with ENOSPC.
    Full,
    /// A pipe whose reader is closed before the command starts: every write fails with EPIPE.
    ClosedPipe,
}

impl Sink {
    fn stdio(self) -> Stdio {
        match self {
            Sink::Full => std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .expect("/dev/full opens")
                .into(),
            Sink::ClosedPipe => {
                let (reader, writer) = std::io::pipe().expect("a pipe");
                drop(reader);
                writer.into()
            }
        }
    }
}

fn run_with(args: &[&str], stdout: Option<Sink>, stderr: Option<Sink>) -> Output {
    let mut c = bin();
    c.args(args).stdin(Stdio::null());
    c.stdout(stdout.map_or(Stdio::piped(), Sink::stdio));
    c.stderr(stderr.map_or(Stdio::piped(), Sink::stdio));
    c.output().expect("fsbench runs")
}

/// A tiny workload file, a result file it wrote, a trace of a few hundred records and an
/// experiment's output directory: the inputs of the commands under test.
fn lost_output_inputs(dir: &Scratch) -> (String, String, String, String) {
    let wl = dir.path().join("w.f");
    std::fs::write(
        &wl,
        "define fileset name=fs,path=/tmp,entries=10,dirwidth=5,size=4k,prealloc\n\
         define process name=p { thread name=t { flowop openfile name=o,filesetname=fs,fd=1\n\
         flowop readwholefile name=r,fd=1,iosize=4k\nflowop closefile name=c,fd=1 } }\nrun 1\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let o = run(&[
        "run",
        wl.to_str().unwrap(),
        "--dir",
        dir.s(),
        "--duration",
        "0.2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    use fsbench_tools::trace::format::{self, Call, Header, Record};
    let records: Vec<Record> = (0..500)
        .map(|i| Record {
            start_ns: i * 1000,
            dur_ns: 10,
            tid: 7,
            syscall: "stat".into(),
            call: Call::Stat,
            path: Some(format!("/traced/f{i}")),
            ..Default::default()
        })
        .collect();
    let tr = dir.path().join("t.trace");
    format::write_all(&tr, &Header::default(), &records).unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        format!(
            "[experiment]\nname = \"s\"\nrepetitions = 1\n\n[[target]]\nname = \"here\"\nkind = \"dir\"\npath = \"{}\"\n\n[[measurement]]\nname = \"w\"\nkind = \"find\"\nparams = {{ tree_files = 20, tree_dirs = 2 }}\n",
            target.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    experiment_ok(&plan, &out);
    let s = |p: std::path::PathBuf| p.to_str().unwrap().to_string();
    (s(wl), s(json), s(tr), s(out))
}

#[test]
fn lost_standard_output_is_an_error_never_a_panic() {
    if !std::path::Path::new("/dev/full").exists() {
        skip("no /dev/full here");
        return;
    }
    let dir = Scratch::new("stdout-lost");
    let (wl, json, trace, experiment) = lost_output_inputs(&dir);
    let d = dir.s();
    let cases: Vec<Vec<&str>> = vec![
        vec!["list"],
        vec!["show", "varmail"],
        vec!["completions", "bash"],
        vec!["check", "varmail"],
        vec!["--help"],
        vec!["compare", &json, &json],
        vec!["scan", d],
        vec!["scan", d, "--json", "-"],
        vec!["trace", "show", &trace],
        vec!["results", &experiment],
        vec!["run", &wl, "--dir", d, "--duration", "0.2"],
        vec!["run", &wl, "--dir", d, "--duration", "0.2", "--json", "-"],
    ];
    for args in &cases {
        let o = run_with(args, Some(Sink::Full), None);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{args:?} > /dev/full: {err}");
        assert_eq!(o.status.code(), Some(1), "{args:?} > /dev/full: {err}");
        assert!(
            err.contains("cannot write to standard output: No space left on device"),
            "{args:?} > /dev/full: {err}"
        );
        assert_eq!(
            err.matches("cannot write to standard output").count(),
            1,
            "{args:?} > /dev/full: said once: {err}"
        );
        let o = run_with(args, Some(Sink::ClosedPipe), None);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{args:?} | closed: {err}");
        assert_eq!(o.status.code(), Some(141), "{args:?} | closed: {err}");
        assert!(
            !err.contains("Broken pipe") && !err.contains("cannot write"),
            "{args:?} | closed: the closed pipe is reported: {err}"
        );
    }
}

#[test]
fn lost_standard_error_ends_in_status_1_without_a_panic() {
    if !std::path::Path::new("/dev/full").exists() {
        skip("no /dev/full here");
        return;
    }
    let dir = Scratch::new("stderr-lost");
    let (wl, _, _, _) = lost_output_inputs(&dir);
    let bad = dir.path().join("bad.f");
    std::fs::write(&bad, "define nonsense\n").unwrap();
    let bad = bad.to_str().unwrap();
    // Each of these writes to standard error (run's notes, check's diagnostics, a usage
    // error): the panic of a failed `eprintln!` ended them with status 101 and no message.
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", &wl, "--dir", dir.s(), "--duration", "0.2"],
        vec!["check", bad],
        vec!["check", "no-such-workload"],
        vec!["run", "--no-such-option"],
    ];
    for args in &cases {
        for sink in [Sink::Full, Sink::ClosedPipe] {
            let o = run_with(args, None, Some(sink));
            assert_eq!(
                o.status.code(),
                Some(1),
                "{args:?} 2> {sink:?}: stdout {}",
                String::from_utf8_lossy(&o.stdout)
            );
        }
    }
    // A command that writes nothing to standard error succeeds with it unwritable.
    let o = run_with(&["check", "varmail"], None, Some(Sink::Full));
    assert!(o.status.success(), "{:?}", o.status);
    assert!(String::from_utf8_lossy(&o.stdout).contains("varmail: ok"));
}

/// `-` is standard output for every output option: `report -o -` wrote a file named `-`.
/// The HTML page, a trace (read back from standard input), a distilled workload and the man
/// page go to standard output; nothing named `-` is made; an output that is a directory
/// (`experiment -o`) or not yet a stream refuses `-` instead of making the file.
#[test]
fn dash_is_standard_output_for_every_output_option() {
    let dir = Scratch::new("stdout-dash");
    let at = |args: &[&str], stdin: Vec<u8>| -> Output {
        use std::io::Write;
        let mut c = bin()
            .current_dir(dir.path())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut i = c.stdin.take().unwrap();
        std::thread::spawn(move || i.write_all(&stdin));
        c.wait_with_output().unwrap()
    };
    let o = at(
        &[
            "run",
            "fileserver",
            "-s",
            "nfiles=20",
            "--dir",
            dir.s(),
            "--duration",
            "0.3",
            "--json",
            "r.json",
            "-q",
        ],
        vec![],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = at(&["report", "r.json", "-o", "-"], vec![]);
    assert!(o.status.success(), "{}", text(&o));
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(
        page.contains("<html") && page.trim_end().ends_with("</html>"),
        "{}",
        text(&o)
    );
    // An strace log from standard input, a trace to standard output, read back from it.
    let log = b"7 1700000000.000001 openat(AT_FDCWD</w>, \"a\", O_RDONLY) = 3</w/a> <0.000010>\n\
                7 1700000000.000020 close(3</w/a>) = 0 <0.000002>\n";
    let o = at(
        &["trace", "import", "-", "-o", "-", "--root", "/w"],
        log.to_vec(),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(o.stdout.starts_with(b"FSBTRACE"), "{}", text(&o));
    let trace = o.stdout;
    let o = at(&["trace", "show", "-"], trace.clone());
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("/w/a"),
        "{}",
        text(&o)
    );
    std::fs::write(dir.path().join("t.trace"), &trace).unwrap();
    let o = at(&["trace", "distill", "t.trace", "-o", "-"], vec![]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("define process"),
        "{}",
        text(&o)
    );
    let o = at(&["man", "-"], vec![]);
    assert!(
        o.status.success() && o.stdout.starts_with(b".ie"),
        "{}",
        text(&o)
    );
    // Outputs that cannot be one stream say so, and make nothing (usage errors, status 2).
    for args in [
        &["experiment", "x.toml", "-o", "-"][..],
        &["scan", dir.s(), "-o", "-"],
    ] {
        let o = at(args, vec![]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("-o -"),
            "{}",
            text(&o)
        );
    }
    assert!(!dir.path().join("-").exists(), "a file named `-` was made");
}
