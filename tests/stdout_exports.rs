//! Scripts read exports from standard output: `--json -`, `--csv -` and `--markdown -` must
//! leave nothing else there (the text report, echo lines and `psrun` blocks go to standard
//! error instead). Every subcommand with an export is driven here and its standard output parsed.

mod common;
use common::{run, text, Scratch};
use std::process::Output;

/// A small workload that also echoes, so that echo lines are checked too.
const TINY: &str = "\
set $dir=/tmp
define fileset name=f,path=$dir,size=16k,entries=8,dirwidth=4,prealloc
define process name=p,instances=1
{
  thread name=t,memsize=16k,instances=1
  {
    flowop openfile name=open,filesetname=f,fd=1
    flowop readwholefile name=read,fd=1,iosize=4k
    flowop closefile name=close,fd=1
  }
}
echo \"tiny workload starting\"
run 1
";

fn ok(o: Output, what: &str) -> String {
    assert!(o.status.success(), "{what} failed\n{}", text(&o));
    String::from_utf8(o.stdout).expect("stdout is UTF-8")
}

fn parse_json(out: &str, what: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{what}: stdout is not JSON ({e}):\n{out}"))
}

/// Every line a CSV record with the header's column count (no field of ours holds a newline).
fn check_csv(out: &str, what: &str) {
    let mut lines = out.lines();
    let header = lines.next().unwrap_or_else(|| panic!("{what}: empty CSV"));
    assert!(header.starts_with("workload,flowop,"), "{what}: {out}");
    let cols = header.split(',').count();
    let mut rows = 0;
    for l in lines {
        // Quoted fields may hold commas; ours are plain names here.
        assert_eq!(
            l.split(',').count(),
            cols,
            "{what}: ragged row `{l}` in\n{out}"
        );
        rows += 1;
    }
    assert!(rows > 0, "{what}: no rows\n{out}");
}

/// A Markdown document of headings, tables and blank lines only: no report text.
fn check_markdown(out: &str, what: &str) {
    assert!(
        out.lines().any(|l| l.starts_with('|')),
        "{what}: no table\n{out}"
    );
    for l in out.lines() {
        assert!(
            l.is_empty()
                || l.starts_with('|')
                || l.starts_with('#')
                || l.starts_with("- ")
                || l.starts_with('_')
                || l.starts_with('*'),
            "{what}: line `{l}` is not Markdown table material\n{out}"
        );
    }
}

#[test]
fn run_exports_own_stdout() {
    let s = Scratch::new("stdout-run");
    let wl = s.path().join("tiny.f");
    std::fs::write(&wl, TINY).unwrap();
    let base = [
        "run",
        wl.to_str().unwrap(),
        "--dir",
        s.s(),
        "--duration",
        "0.3",
    ];
    for (flag, form) in [
        ("--json", "split"),
        ("--json=-", "joined"),
        ("--csv", "split"),
        ("--markdown", "split"),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        args.push(flag);
        if form == "split" {
            args.push("-");
        }
        let what = format!("run {flag}");
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        let out = ok(o, &what);
        // The text report and the echo went to standard error.
        assert!(
            err.contains("tiny workload starting"),
            "{what}: echo missing\n{err}"
        );
        assert!(err.contains("read"), "{what}: text report missing\n{err}");
        match flag {
            "--json" | "--json=-" => {
                let v = parse_json(&out, &what);
                assert!(
                    v["flowops"].as_array().is_some_and(|f| !f.is_empty()),
                    "{what}"
                );
                // Histograms are kept, one line each (--histograms compact, the default).
                assert!(v["flowops"][0]["histogram_ns"]
                    .as_array()
                    .is_some_and(|h| !h.is_empty()));
                for l in out.lines().filter(|l| l.contains("\"histogram_ns\"")) {
                    let l = l.trim_end();
                    assert!(l.ends_with(']') || l.ends_with("],"), "{what}: {l}");
                }
                assert!(v["build"]["git_commit"].is_string(), "{what}");
            }
            "--csv" => check_csv(&out, &what),
            _ => check_markdown(&out, &what),
        }
    }
}

#[test]
fn apps_json_owns_stdout() {
    let s = Scratch::new("stdout-apps");
    let tree = s.path().join("tree");
    std::fs::create_dir_all(tree.join("a/b")).unwrap();
    std::fs::write(tree.join("a/b/f"), b"x").unwrap();
    let d = s.s();
    let t = tree.to_str().unwrap();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "postmark",
            vec![
                "postmark",
                "--number",
                "20",
                "--transactions",
                "50",
                "--dir",
                d,
                "--json",
                "-",
            ],
        ),
        (
            "andrew",
            vec!["andrew", "--no-compile", "--dir", d, "--json", "-"],
        ),
        ("find", vec!["find", t, "--json", "-"]),
        (
            "build",
            vec![
                "build", "--files", "8", "--dirs", "2", "--cpu-ms", "1", "--dir", d, "--json", "-",
            ],
        ),
        ("scan", vec!["scan", t, "--json", "-"]),
        ("layout", vec!["layout", t, "--json", "-"]),
    ];
    for (what, args) in cases {
        let out = ok(run(&args), what);
        let v = parse_json(&out, what);
        assert!(v.is_object(), "{what}: {out}");
    }
}
