//! Shell completion scripts: the workload of `run`, `check` and `show` completes with the
//! built-in names (and `.f` files for `run` and `check`), `--dir` and `clean DIR` with
//! directories. The bash and fish scripts are run for real (fish when installed); zsh's is
//! checked for the completers it names (and its syntax, when zsh is installed).

use crate::common::*;
use std::process::Command;

fn script(shell: &str) -> String {
    let o = run(&["completions", shell]);
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

fn builtins() -> Vec<String> {
    let o = run(&["list"]);
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("  ") && !l.trim_start().starts_with("vars:"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// What bash's completion offers for the words typed (the last one being completed), run
/// in `dir`.
fn bash_complete(script: &str, dir: &std::path::Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let prog = format!(
        "{script}\nCOMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_LINE=\"${{COMP_WORDS[*]}}\"\nCOMP_POINT=${{#COMP_LINE}}\nCOMPREPLY=()\nf=$(complete -p fsbench | grep -o -- '-F [^ ]*' | cut -c4-)\n\"$f\" fsbench \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        quoted.join(" "),
        words.len() - 1
    );
    // On standard input: the script is longer than one argument may be (128 KiB).
    let mut child = Command::new("bash")
        .arg("-s")
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bash runs");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), prog.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let mut v: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

#[test]
fn bash_completes_builtins_workload_files_and_directories() {
    let names = builtins();
    assert!(names.contains(&"fileserver".to_string()), "{names:?}");
    let d = Scratch::new("complete-bash");
    std::fs::write(d.path().join("mine.f"), "run 1\n").unwrap();
    std::fs::write(d.path().join("notes.txt"), "").unwrap();
    std::fs::create_dir(d.path().join("sub")).unwrap();
    let s = script("bash");
    let got = bash_complete(&s, d.path(), &["fsbench", "run", ""]);
    for n in &names {
        assert!(got.contains(n), "`run <TAB>` offers {n}: {got:?}");
    }
    assert!(got.contains(&"mine.f".to_string()), "{got:?}");
    assert!(got.contains(&"sub".to_string()), "{got:?}");
    assert!(!got.contains(&"notes.txt".to_string()), "{got:?}");
    // After options and their values, still the workload.
    let got = bash_complete(
        &s,
        d.path(),
        &["fsbench", "check", "-s", "nfiles=5", "file"],
    );
    assert!(got.contains(&"fileserver".to_string()), "{got:?}");
    assert!(got.iter().all(|g| g.starts_with("file")), "{got:?}");
    // `show` takes only built-ins.
    let got = bash_complete(&s, d.path(), &["fsbench", "show", ""]);
    assert_eq!(got.len(), names.len(), "{got:?}");
    // --dir and `clean DIR`: directories only.
    let got = bash_complete(&s, d.path(), &["fsbench", "run", "--dir", ""]);
    assert_eq!(got, ["sub"], "{got:?}");
    let got = bash_complete(&s, d.path(), &["fsbench", "postmark", "--dir", ""]);
    assert_eq!(got, ["sub"], "{got:?}");
    let got = bash_complete(&s, d.path(), &["fsbench", "clean", ""]);
    assert_eq!(got, ["sub"], "{got:?}");
    // Once the workload is there, clap's own completion (the options) goes on.
    let got = bash_complete(&s, d.path(), &["fsbench", "run", "varmail", "--du"]);
    assert_eq!(got, ["--duration"], "{got:?}");
}

#[test]
fn zsh_script_completes_workloads_and_directories() {
    let s = script("zsh");
    assert!(s.starts_with("#compdef fsbench\n"), "{}", &s[..40]);
    for n in builtins() {
        let line = s.lines().find(|l| l.contains("builtins=(")).unwrap();
        assert!(
            line.split(['(', ' ', ')']).any(|w| w == n),
            "zsh offers {n}"
        );
    }
    let section = |sub: &str| -> String {
        // The first `(sub)` line (the top-level subcommand's; the first is indented).
        let start = s
            .lines()
            .scan(0, |at, l| {
                let here = *at;
                *at += l.len() + 1;
                Some((here, l))
            })
            .find(|(_, l)| l.trim() == format!("({sub})"))
            .unwrap()
            .0;
        let end = start + s[start..].find("\n;;\n").unwrap();
        s[start..end].to_string()
    };
    assert!(
        section("run").contains(":_fsbench_workloads' \\"),
        "{}",
        section("run")
    );
    assert!(section("check").contains(":_fsbench_workloads' \\"));
    assert!(section("show").contains(":_fsbench_builtins' \\"));
    assert!(s.contains("_files -g \"*.f\""));
    let dir = section("run")
        .lines()
        .find(|l| l.starts_with("'--dir="))
        .unwrap()
        .to_string();
    assert!(dir.ends_with(":_files -/' \\"), "{dir}");
    assert!(
        section("clean").contains(":_files -/' \\"),
        "{}",
        section("clean")
    );
    if Command::new("zsh").arg("--version").output().is_ok() {
        let d = Scratch::new("complete-zsh");
        let f = d.path().join("_fsbench");
        std::fs::write(&f, &s).unwrap();
        let o = Command::new("zsh").arg("-n").arg(&f).output().unwrap();
        assert!(o.status.success(), "zsh -n: {}", text(&o));
    } else {
        skip("zsh is not installed, so the script's syntax is not checked");
    }
}

#[test]
fn fish_script_completes_workloads_and_directories() {
    let s = script("fish");
    let names = builtins();
    for n in &names {
        assert!(
            s.contains(&format!(
                "-n \"__fish_fsbench_using_subcommand run check show\" -f -a '{n}'"
            )),
            "fish offers {n}"
        );
    }
    assert!(s.contains(
        "__fish_fsbench_using_subcommand run check\" -a '(__fish_fsbench_workload_files)'"
    ));
    let dir = s
        .lines()
        .find(|l| l.contains("using_subcommand run\"") && l.contains("-l dir"))
        .unwrap();
    assert!(dir.contains("__fish_complete_directories"), "{dir}");
    if Command::new("fish").arg("--version").output().is_err() {
        return skip("fish is not installed, so the script is not run");
    }
    // Run for real: `complete -C LINE` prints what fish offers for LINE.
    let d = Scratch::new("complete-fish");
    std::fs::write(d.path().join("mine.f"), "run 1\n").unwrap();
    std::fs::write(d.path().join("notes.txt"), "").unwrap();
    std::fs::create_dir(d.path().join("sub")).unwrap();
    std::fs::write(d.path().join("c.fish"), &s).unwrap();
    let offers = |line: &str| -> Vec<String> {
        let o = Command::new("fish")
            .arg("-c")
            .arg(format!("source c.fish; complete -C '{line}'"))
            .current_dir(d.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let mut v: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    let got = offers("fsbench run ");
    for n in &names {
        assert!(got.contains(n), "`run <TAB>` offers {n}: {got:?}");
    }
    assert!(
        got.contains(&"mine.f".to_string()) && got.contains(&"sub/".to_string()),
        "{got:?}"
    );
    assert!(!got.contains(&"notes.txt".to_string()), "{got:?}");
    assert_eq!(offers("fsbench show ").len(), names.len());
    assert_eq!(offers("fsbench run --dir "), ["sub/"]);
    assert_eq!(offers("fsbench clean "), ["sub/"]);
    assert!(offers("fsbench run --json ").contains(&"notes.txt".to_string()));
}
