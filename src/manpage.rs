//! Man pages, generated from the same definitions as `--help`: clap_mangen's pages with
//! their SYNOPSIS written here, because clap_mangen's lists options without their values
//! (`[--dir]` for `--dir <DIR>`), which tells a reader neither that the option takes one
//! nor what it is. Each subcommand's page also names fsbench's version, as the top page does.

use clap::{Arg, ArgAction, Command};
use clap_mangen::roff::{bold, italic, roman, Inline, Roff};
use std::io;
use std::path::Path;

/// The man page of `cmd` (`fsbench.1` for the whole command line).
pub fn page(cmd: Command) -> io::Result<Vec<u8>> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    render(&cmd, cmd.get_version().unwrap_or_default())
}

/// Write `fsbench.1` and one page per subcommand (`fsbench-run.1`, `fsbench-disk-create.1`
/// ...) into `dir`.
pub fn write_all(cmd: Command, dir: &Path) -> io::Result<()> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let version = cmd.get_version().unwrap_or_default().to_string();
    write_tree(&cmd, &version, dir)
}

fn write_tree(cmd: &Command, version: &str, dir: &Path) -> io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_tree(sub, version, dir)?;
    }
    let name = cmd.get_display_name().unwrap_or_else(|| cmd.get_name());
    std::fs::write(dir.join(format!("{name}.1")), render(cmd, version)?)
}

/// clap_mangen's page of `cmd` (built), with [`synopsis`] in place of its own.
fn render(cmd: &Command, version: &str) -> io::Result<Vec<u8>> {
    let top = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    let top = top.split(' ').next().unwrap_or(top);
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .source(format!("{top} {version}"))
        .render(&mut page)?;
    let text = String::from_utf8(page).map_err(io::Error::other)?;
    let head = ".SH SYNOPSIS\n";
    let Some(start) = text.find(head).map(|i| i + head.len()) else {
        return Ok(text.into_bytes());
    };
    let end = text[start..]
        .find("\n.SH ")
        .map_or(text.len(), |i| start + i + 1);
    Ok(format!("{}{}{}", &text[..start], synopsis(cmd), &text[end..]).into_bytes())
}

/// One roff line: the command, each option with its value name (`[--dir <DIR>]`,
/// `[-s|--set <NAME=VALUE>]...` when repeatable, no brackets when required), the
/// positional arguments, and `<subcommand>` when there are subcommands.
pub fn synopsis(cmd: &Command) -> String {
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    let mut line = vec![bold(name)];
    let mut opts: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
        .collect();
    opts.sort_by_key(|a| a.get_display_order());
    for a in opts {
        line.push(roman(" "));
        option(&mut line, a);
    }
    for a in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let (l, r) = if a.is_required_set() {
            ("<", ">")
        } else {
            ("[", "]")
        };
        line.push(roman(format!(" {l}")));
        line.push(italic(value_name(a)));
        line.push(roman(r));
        if repeats(a) {
            line.push(roman("..."));
        }
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        line.push(roman(" <"));
        line.push(italic("subcommand"));
        line.push(roman(">"));
    }
    Roff::new().text(line).to_roff()
}

/// `[-s|--set <NAME=VALUE>]...`: flags in bold, the value in italics.
fn option(line: &mut Vec<Inline>, a: &Arg) {
    let required = a.is_required_set();
    if !required {
        line.push(roman("["));
    }
    match (a.get_short(), a.get_long()) {
        (Some(s), Some(l)) => {
            line.push(bold(format!("-{s}")));
            line.push(roman("|"));
            line.push(bold(format!("--{l}")));
        }
        (Some(s), None) => line.push(bold(format!("-{s}"))),
        (None, Some(l)) => line.push(bold(format!("--{l}"))),
        (None, None) => line.push(italic(value_name(a))),
    }
    let flagged = a.get_short().is_some() || a.get_long().is_some();
    if flagged && a.get_action().takes_values() {
        line.push(roman(" <"));
        line.push(italic(value_name(a)));
        line.push(roman(">"));
    }
    if !required {
        line.push(roman("]"));
    }
    if repeats(a) {
        line.push(roman("..."));
    }
}

/// Whether the argument may be given more than once.
fn repeats(a: &Arg) -> bool {
    matches!(a.get_action(), ArgAction::Append | ArgAction::Count)
        || a.get_num_args().is_some_and(|n| n.max_values() > 1)
}

/// The argument's value names (`NAME=VALUE`), else its id in capitals.
fn value_name(a: &Arg) -> String {
    match a.get_value_names() {
        Some(v) if !v.is_empty() => v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "),
        _ => a.get_id().as_str().to_uppercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    #[command(name = "t", version = "1.2")]
    struct T {
        /// A directory.
        #[arg(long, value_name = "DIR")]
        dir: Option<String>,
        /// Repeatable.
        #[arg(short = 's', long = "set")]
        set: Vec<String>,
        /// A switch.
        #[arg(long)]
        keep: bool,
        /// Required.
        #[arg(long)]
        json: String,
        /// The workload.
        workload: String,
    }

    #[test]
    fn options_keep_their_values_in_the_synopsis() {
        use clap::CommandFactory;
        let page = String::from_utf8(page(T::command()).unwrap()).unwrap();
        let syn = page.split(".SH SYNOPSIS\n").nth(1).unwrap();
        let syn = syn.split("\n.SH").next().unwrap();
        for want in [
            r"[\fB\-\-dir\fR <\fIDIR\fR>]",
            r"[\fB\-s\fR|\fB\-\-set\fR <\fISET\fR>]...",
            r"[\fB\-\-keep\fR]",
            r" \fB\-\-json\fR <\fIJSON\fR> ",
            r"<\fIWORKLOAD\fR>",
        ] {
            assert!(syn.contains(want), "{want} in {syn}");
        }
        assert_eq!(page.matches(".SH SYNOPSIS").count(), 1, "{page}");
        assert!(page.contains(".SH OPTIONS"), "the rest of the page is kept");
    }
}
