//! The outputs of a command line, looked at before the command does any work: which export
//! takes standard output (decided once at start-up, so that every message printed before
//! the options are parsed follows it), and whether each output file can be written, with at
//! most one of them on standard output.

use std::path::Path;

/// Give standard output to the exports if the command line sends one there: `--json -`,
/// `--json=-` (likewise `--csv`, `--markdown`, `-o`/`--output`, `--log`, `--keep-log`),
/// before a `--`. Decided once at start-up, so every command, and every message printed
/// before its options are looked at, follows it.
pub fn reserve_stdout_for_args<S: AsRef<std::ffi::OsStr>>(args: &[S]) {
    if export_to_stdout(args) {
        crate::console::reserve_stdout();
    }
}

fn export_to_stdout<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> bool {
    const EXPORTS: [&str; 7] = [
        "--json",
        "--csv",
        "--markdown",
        "-o",
        "--output",
        "--log",
        "--keep-log",
    ];
    let args: Vec<&str> = args
        .iter()
        .map(|a| a.as_ref().to_str().unwrap_or(""))
        .collect();
    let end = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    // fio's JSON, json+ and terse output (`--output-format`, for a fio job) go to
    // standard output too.
    let stdout_format =
        |f: Option<&&str>| f.is_some_and(|f| matches!(*f, "json" | "json+" | "terse"));
    let fio_json = args[..end].iter().enumerate().any(|(i, a)| {
        (*a == "--output-format" && stdout_format(args.get(i + 1)))
            || stdout_format(a.strip_prefix("--output-format=").as_ref())
    });
    fio_json
        || args[..end].iter().enumerate().any(|(i, a)| {
            EXPORTS.iter().any(|e| {
                (a == e && args.get(i + 1) == Some(&"-"))
                    || a.strip_prefix(e).and_then(|r| r.strip_prefix('=')) == Some("-")
            })
        })
}

/// Check before a run that an output file given as `flag FILE` can be written: not a
/// directory, its directory exists and is writable. `-` (standard output) is always fine. A
/// file that does not exist yet is created and removed again, so nothing is left behind.
pub fn output(path: Option<&Path>, flag: &str) -> Result<(), String> {
    let Some(path) = path else { return Ok(()) };
    if crate::console::is_stdout(path) {
        return Ok(());
    }
    if path.is_dir() {
        return Err(format!("{flag} {}: is a directory", path.display()));
    }
    let existed = path.exists();
    match std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
    {
        Ok(_) => {
            if !existed {
                let _ = crate::owned::path::remove_file(path);
            }
            Ok(())
        }
        Err(e) => Err(format!("{flag} {}: cannot write: {e}", path.display())),
    }
}

/// [`output`] for the output options of a command line, before the command does any work:
/// a usage error (status 2) that says what to give instead. Two of them given `-` would run
/// two documents together on standard output: refused too.
pub fn outputs(outputs: &[(Option<&Path>, &str)]) -> anyhow::Result<()> {
    // A flag with its value in it (`--output-format json`) is shown as it is.
    let to_stdout: Vec<String> = (outputs.iter())
        .filter(|(p, _)| p.is_some_and(crate::console::is_stdout))
        .map(|(_, flag)| match flag.contains(' ') {
            true => flag.to_string(),
            false => format!("{flag} -"),
        })
        .collect();
    if let [first, .., last] = &to_stdout[..] {
        return Err(crate::exit::usage(format!(
            "{first} and {last} both write to standard output: give one of them a file"
        )));
    }
    for (path, flag) in outputs {
        output(*path, flag).map_err(|e| {
            crate::exit::usage(format!(
                "{e}: give a file in a directory that exists and that you can write, or - for standard output"
            ))
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{export_to_stdout, output, outputs};
    use std::path::Path;

    #[test]
    fn recognises_exports_to_stdout() {
        assert!(export_to_stdout(&["run", "x", "--json", "-"]));
        assert!(export_to_stdout(&["run", "x", "--csv=-"]));
        assert!(export_to_stdout(&["find", "d", "--markdown", "-", "-q"]));
        assert!(!export_to_stdout(&["run", "x", "--json", "out.json"]));
        assert!(!export_to_stdout(&["run", "x", "--json"]));
        assert!(!export_to_stdout(&["run", "x", "--", "--json", "-"]));
        assert!(!export_to_stdout(&["run", "-", "--jsonx=-"]));
        assert!(export_to_stdout(&["report", "a.json", "-o", "-"]));
        assert!(export_to_stdout(&["trace", "import", "l", "--output=-"]));
        assert!(!export_to_stdout(&["report", "a.json", "-o", "x.html"]));
        assert!(export_to_stdout(&[
            "run",
            "j.fio",
            "--output-format",
            "json"
        ]));
        assert!(export_to_stdout(&["run", "j.fio", "--output-format=json"]));
        assert!(!export_to_stdout(&[
            "run",
            "j.fio",
            "--output-format=normal"
        ]));
    }

    /// Two outputs on standard output are a usage error naming both; a directory or a file in
    /// a missing directory is refused with the flag; a file checked is not left behind.
    #[test]
    fn one_output_on_stdout_and_files_that_can_be_written() {
        let d = std::env::temp_dir().join(format!("fsbench-export-check-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let dash = Some(Path::new("-"));
        let e = outputs(&[(dash, "--json"), (None, "--csv"), (dash, "--markdown")]).unwrap_err();
        assert!(crate::exit::is_usage(&e), "{e:#}");
        assert_eq!(
            e.to_string(),
            "--json - and --markdown - both write to standard output: give one of them a file"
        );
        outputs(&[(dash, "--json"), (Some(d.join("r.csv").as_path()), "--csv")]).unwrap();
        assert!(
            !d.join("r.csv").exists(),
            "the checked file was left behind"
        );
        let e = output(Some(d.as_path()), "--csv").unwrap_err();
        assert!(e.ends_with("is a directory"), "{e}");
        let e = outputs(&[(Some(d.join("no/r.csv").as_path()), "--csv")]).unwrap_err();
        assert!(
            crate::exit::is_usage(&e) && e.to_string().starts_with("--csv "),
            "{e:#}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
