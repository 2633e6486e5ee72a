//! The outputs of a command line, looked at before the command does any work: which export
//! takes standard output (decided once, from the parsed arguments' [`Outputs`], before the
//! command prints anything), and whether each output file can be written, with at most one
//! of them on standard output.

use std::borrow::Cow;
use std::path::Path;

/// An output option of a command line: the file it names (`-` for standard output) and the
/// flag it was given with, as a message names it (`--json`, or `--output-format json` for a
/// flag whose value sends it to standard output).
pub type Named<'a> = (Option<&'a Path>, Cow<'static, str>);

/// Arguments that name files a command writes its results to. Each arguments type lists its
/// outputs once, here: `main` gives standard output to an export given `-` from this list
/// before the command prints anything ([`reserve_stdout`]), and the command checks the same
/// list before it does any work ([`outputs`]).
pub trait Outputs {
    fn outputs(&self) -> Vec<Named<'_>>;
}

/// An output named by `flag`, as [`Outputs`] lists it.
pub fn named<'a>(path: Option<&'a Path>, flag: &'static str) -> Named<'a> {
    (path, Cow::Borrowed(flag))
}

/// Give standard output to the exports if one of `outputs` is `-`: the text report then goes
/// to standard error.
pub fn reserve_stdout<S: AsRef<str>>(outputs: &[(Option<&Path>, S)]) {
    crate::console::reserve_stdout_for(outputs.iter().map(|(p, _)| *p));
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
pub fn outputs<S: AsRef<str>>(outputs: &[(Option<&Path>, S)]) -> anyhow::Result<()> {
    // A flag with its value in it (`--output-format json`) is shown as it is.
    let to_stdout: Vec<String> = (outputs.iter())
        .filter(|(p, _)| p.is_some_and(crate::console::is_stdout))
        .map(|(_, flag)| match flag.as_ref().contains(' ') {
            true => flag.as_ref().to_string(),
            false => format!("{} -", flag.as_ref()),
        })
        .collect();
    if let [first, .., last] = &to_stdout[..] {
        return Err(crate::exit::usage(format!(
            "{first} and {last} both write to standard output: give one of them a file"
        )));
    }
    for (path, flag) in outputs {
        output(*path, flag.as_ref()).map_err(|e| {
            crate::exit::usage(format!(
                "{e}: give a file in a directory that exists and that you can write, or - for standard output"
            ))
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{output, outputs};
    use std::path::Path;

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
