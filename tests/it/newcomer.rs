//! A newcomer's first day: a wrong command line is refused before anything is made, with
//! the usage status; the report says when the page cache served the reads, what its units
//! are, and leaves out rows that measured nothing; the man pages show every option's value.

use crate::common::*;
use std::path::Path;

/// Run fsbench and return (exit status, standard output, standard error).
fn outcome(args: &[&str]) -> (Option<i32>, String, String) {
    let o = run(args);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn wrong_option_combinations_are_refused_before_anything_is_made() {
    let d = Scratch::new("newcomer-usage");
    std::fs::write(d.path().join("sentinel"), "mine\n").unwrap();
    let dir = d.s();
    let missing = d.path().join("missing");
    let json = format!("{}/r.json", missing.display());
    let fio_log = format!(
        "rw=read bs=4k size=1m write_bw_log={}/log",
        missing.display()
    );
    let snap = format!("{dir}/tree.snap");
    // (arguments, what the message must say). Runs are --keep: a run that started would
    // leave its directory behind, so the listing below catches work done before a refusal.
    let run = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["run", "varmail", "--dir", dir, "--keep", "--duration", "1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let fio = |job: &str, extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "run",
            "--fio",
            job,
            "--dir",
            dir,
            "--keep",
            "--duration",
            "1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let cases: Vec<(Vec<String>, &[&str])> = vec![
        (
            run(&["--output-format", "json"]),
            &["--output-format", "fio job", "leave out"],
        ),
        (
            run(&["--allow-device", "/dev/null"]),
            &["--allow-device", "leave out"],
        ),
        (
            run(&["--json", &json]),
            &["--json", "missing", "give a file"],
        ),
        (run(&["--repeat", "0"]), &["--repeat 0", "at least 1"]),
        (run(&["--interval", "0"]), &["--interval", "positive"]),
        (
            run(&["--verify-only", "--csv", "x.csv"]),
            &["--verify-only", "--csv"],
        ),
        (
            run(&["--json", "-", "--csv", "-"]),
            &["--json - and --csv -", "give one"],
        ),
        (
            fio("rw=randrw bs=4k size=1m", &["--verify"]),
            &["--verify", "verify="],
        ),
        (
            fio(
                "rw=read bs=4k size=1m",
                &["--output-format", "json", "--json", "-"],
            ),
            &["--json - and --output-format json", "standard output"],
        ),
        (fio(&fio_log, &[]), &["write_bw_log", "missing", "prefix"]),
        (
            [
                "prune",
                "--dir",
                dir,
                "--files",
                "10",
                "--free",
                "1M",
                "--file-size",
                "lots",
            ]
            .map(String::from)
            .to_vec(),
            &["--file-size lots", "give a size"],
        ),
        (
            ["scan", dir, "--per-user", "-o", &snap]
                .map(String::from)
                .to_vec(),
            &["--per-user", "leave out -o"],
        ),
        (
            ["diff", dir, dir, "--markdown", &json]
                .map(String::from)
                .to_vec(),
            &["--markdown", "missing"],
        ),
    ];
    for (args, says) in cases {
        let before = tree_listing(d.path());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = outcome(&args);
        assert_eq!(
            code,
            Some(2),
            "{args:?}: status 2, a usage error\n{out}\n{err}"
        );
        for s in says {
            assert!(err.contains(s), "{args:?}: the message says {s:?}: {err}");
        }
        assert!(
            !out.contains("IO Summary") && !err.contains("IO Summary"),
            "{args:?}: refused before the run: {out}{err}"
        );
        assert_eq!(
            tree_listing(d.path()),
            before,
            "{args:?}: nothing made in --dir"
        );
    }
    assert_eq!(
        std::fs::read_to_string(d.path().join("sentinel")).unwrap(),
        "mine\n"
    );
}

/// A workload of one thread over `fs` (4 files of `size`), with `body` for flowops.
fn workload(d: &Path, name: &str, size: &str, body: &str) -> String {
    let f = d.join(name);
    std::fs::write(
        &f,
        format!(
            "define fileset name=fs,path=/tmp,entries=4,dirwidth=4,size={size},prealloc\n\
             define process name=p {{\n  thread name=t {{\n{body}  }}\n}}\nrun 1\n"
        ),
    )
    .unwrap();
    f.display().to_string()
}

const READS: &str = "    flowop openfile name=open1,filesetname=fs,fd=1\n\
    flowop readwholefile name=read1,fd=1,iosize=64k\n\
    flowop closefile name=close1,fd=1\n\
    flowop eventlimit name=pace\n\
    flowop hog name=spin,value=10\n";

#[test]
fn a_warm_read_run_says_the_page_cache_served_it_and_a_write_run_does_not() {
    let d = Scratch::new("newcomer-cache");
    let reads = workload(d.path(), "reads.f", "1m", READS);
    let (code, out, err) = outcome(&["run", &reads, "--dir", d.s(), "-q"]);
    assert_eq!(code, Some(0), "{out}{err}");
    if !out.contains("Device: busy") {
        skip("no block device under the temporary directory: no device counters to compare");
        return;
    }
    let line = out
        .lines()
        .find(|l| l.starts_with("Page cache: "))
        .unwrap_or_else(|| panic!("a warm re-read of 4 MiB is served by the cache: {out}"));
    for s in [
        "% of the",
        "came from memory",
        "the device (it read",
        "--cold",
        "directio",
    ] {
        assert!(line.contains(s), "{s:?} in {line}");
    }
    let pct: f64 = line["Page cache: ".len()..]
        .split('%')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(pct > 90.0 && pct <= 100.0, "{line}");
    let writes = workload(
        d.path(),
        "writes.f",
        "64k",
        "    flowop appendfilerand name=append1,filesetname=fs,iosize=4k\n",
    );
    let (code, out, err) = outcome(&["run", &writes, "--dir", d.s(), "-q"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("IO Summary: "), "{out}");
    assert!(
        !out.contains("Page cache"),
        "nothing read, no cache line: {out}"
    );
}

#[test]
fn the_io_summary_keeps_filebenchs_shape_and_a_legend_states_its_units() {
    let d = Scratch::new("newcomer-units");
    let reads = workload(d.path(), "reads.f", "256k", READS);
    let json = d.path().join("r.json");
    let o = run(&[
        "run",
        &reads,
        "--dir",
        d.s(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("IO Summary: "))
        .expect("IO Summary");
    // Filebench's line: N ops X ops/s R/W rd/wr Mmb/s Lms/op, then fsbench's cpu/op.
    let words: Vec<&str> = lines[at].split(' ').collect();
    assert_eq!(
        [words[3], words[5], words[7], words[11]],
        ["ops", "ops/s", "rd/wr", "cpu/op"],
        "{}",
        lines[at]
    );
    assert!(words[9].ends_with("ms/op"), "{}", lines[at]);
    // mb/s is bytes of the summed flowops ÷ 2^20 ÷ seconds, and the legend says MiB/s.
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let bytes: f64 = r["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["io_class"] != "none")
        .map(|f| f["bytes"].as_f64().unwrap())
        .sum();
    let mib_s = bytes / r["duration_s"].as_f64().unwrap() / 1048576.0;
    let printed: f64 = words[8].strip_suffix("mb/s").unwrap().parse().unwrap();
    assert!(
        (printed - mib_s).abs() <= 0.051,
        "{mib_s} MiB/s: {}",
        lines[at]
    );
    let legend = lines[at + 1];
    for s in ["mb/s: MiB/s (2^20 B/s", "rd/wr: read/write ops/s", "cpu/op"] {
        assert!(legend.contains(s), "{s:?} in the legend: {legend}");
    }
    // The rate limit counted nothing: left out of the table, named under it; the hog is
    // marked as outside the summary; both stay in the JSON.
    let table = &lines[..at];
    assert!(!table.iter().any(|l| l.starts_with("pace ")), "{out}");
    assert!(lines[at + 2].contains("not shown: pace"), "{out}");
    let spin = table
        .iter()
        .find(|l| l.starts_with("spin "))
        .expect("spin row");
    assert!(spin.ends_with("(not I/O: not in IO Summary)"), "{spin}");
    assert!(table
        .iter()
        .any(|l| l.starts_with("read1 ") && !l.contains("not I/O")));
    let names: Vec<&str> = r["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"pace") && names.contains(&"spin"),
        "{names:?}"
    );
    // The run's announcement says what its quit mode means.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("(Timeout mode: the run ends after that time"),
        "{err}"
    );
}

#[test]
fn man_page_synopses_show_the_values_options_take() {
    let d = Scratch::new("newcomer-man");
    let o = run(&["man", d.s()]);
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(d.path().join("fsbench-run.1")).unwrap();
    let synopsis = page.split(".SH SYNOPSIS\n").nth(1).unwrap();
    let synopsis = synopsis.split("\n.SH").next().unwrap();
    for s in [
        r"[\fB\-\-dir\fR <\fIDIR\fR>]",
        r"[\fB\-\-duration\fR <\fISECONDS\fR>]",
        r"[\fB\-s\fR|\fB\-\-set\fR <\fINAME=VALUE\fR>]...",
        r"[\fB\-\-keep\fR]",
        r"<\fIWORKLOAD\fR>",
    ] {
        assert!(synopsis.contains(s), "{s} in {synopsis}");
    }
    assert!(!synopsis.contains(r"[\fB\-\-dir\fR]"), "{synopsis}");
    assert!(
        page.contains(".TH fsbench-run 1  \"fsbench "),
        "the version: {page}"
    );
}
