//! Shell completion scripts: clap_complete's, plus what it cannot know. The workload of
//! `run`, `check` and `show` is a built-in name or a `.f` file; the built-ins are compiled
//! in, so their names are written into the script. Options that take a directory (`--dir`,
//! `clean DIR`) complete directories.

use clap::{Command, ValueHint};
use clap_complete::Shell;
use std::fmt::Write;

/// Subcommands whose first positional argument is a workload: (name, files too).
const WORKLOAD_COMMANDS: &[(&str, bool)] = &[("run", true), ("check", true), ("show", false)];

/// The completion script for `shell` of the command line `cmd` (named `bin`).
pub fn script(shell: Shell, cmd: Command, bin: &str) -> String {
    let mut cmd = with_dir_hints(cmd);
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, bin, &mut out);
    let base = String::from_utf8_lossy(&out).into_owned();
    let names: Vec<&str> = fsbench_model::workloads::BUILTINS
        .iter()
        .map(|(n, _)| *n)
        .collect();
    match shell {
        Shell::Bash => bash(&base, &cmd, &names, bin),
        Shell::Zsh => zsh(&base, &names, bin),
        Shell::Fish => fish(&base, &names, bin),
        _ => base,
    }
}

/// `--dir` options (whatever the subcommand) take a directory: say so to the generators.
fn with_dir_hints(cmd: Command) -> Command {
    let cmd = cmd.mut_args(|a| {
        // A path parser's own hint is AnyPath; a hint set on purpose is kept.
        let unset = matches!(a.get_value_hint(), ValueHint::Unknown | ValueHint::AnyPath);
        if a.get_long() == Some("dir") && unset {
            a.value_hint(ValueHint::DirPath)
        } else {
            a
        }
    });
    cmd.mut_subcommands(with_dir_hints)
}

/// Options of `sub` (a top-level subcommand) that take a value, as typed (`-s`, `--set`).
fn value_options(cmd: &Command, sub: &str) -> Vec<String> {
    let Some(sc) = cmd.find_subcommand(sub) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    for a in sc.get_arguments() {
        if a.is_positional() || !a.get_action().takes_values() {
            continue;
        }
        if let Some(l) = a.get_long() {
            v.push(format!("--{l}"));
        }
        if let Some(s) = a.get_short() {
            v.push(format!("-{s}"));
        }
    }
    v
}

/// Long options that take a directory in every subcommand that has them.
fn dir_options(cmd: &Command) -> Vec<String> {
    fn walk(c: &Command, dirs: &mut Vec<String>, other: &mut Vec<String>) {
        for a in c.get_arguments() {
            if let (Some(l), true) = (a.get_long(), a.get_action().takes_values()) {
                let to = if a.get_value_hint() == ValueHint::DirPath {
                    &mut *dirs
                } else {
                    &mut *other
                };
                to.push(format!("--{l}"));
            }
        }
        for s in c.get_subcommands() {
            walk(s, dirs, other);
        }
    }
    let (mut dirs, mut other) = (Vec::new(), Vec::new());
    walk(cmd, &mut dirs, &mut other);
    dirs.sort();
    dirs.dedup();
    dirs.retain(|d| !other.contains(d));
    dirs
}

/// Bash: a wrapper around clap's function that completes the workload (built-in names, `.f`
/// files and directories to reach them), directory options and `clean DIR` with directories,
/// and leaves the rest to clap's.
fn bash(base: &str, cmd: &Command, names: &[&str], bin: &str) -> String {
    let f = format!("_{bin}");
    let mut o = base.replace(
        &format!("complete -F {f} "),
        &format!("complete -F {f}_workloads "),
    );
    let _ = writeln!(
        o,
        "\n# Built-in workloads, .f files and directories (added by {bin})."
    );
    let _ = writeln!(o, "{f}_builtins=\"{}\"", names.join(" "));
    let _ = writeln!(o, "{f}_workloads() {{");
    let _ = writeln!(
        o,
        "    local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\""
    );
    let _ = writeln!(o, "    case \"${{prev}}\" in");
    let dirs = dir_options(cmd);
    if !dirs.is_empty() {
        let _ = writeln!(
            o,
            "        {})\n            COMPREPLY=( $(compgen -d -- \"${{cur}}\") )\n            return 0\n            ;;",
            dirs.join("|")
        );
    }
    let _ = writeln!(o, "    esac");
    let _ = writeln!(
        o,
        "    if [[ ${{COMP_CWORD}} -ge 2 && ${{cur}} != -* ]]; then\n        local takes files=1\n        case \"${{COMP_WORDS[1]}}\" in"
    );
    for (sub, files) in WORKLOAD_COMMANDS {
        let _ = writeln!(
            o,
            "            {sub}) takes=\" {} \"{} ;;",
            value_options(cmd, sub).join(" "),
            if *files { "" } else { "; files=0" }
        );
    }
    let _ = writeln!(
        o,
        "            clean) if [[ ${{COMP_CWORD}} -eq 2 ]]; then COMPREPLY=( $(compgen -d -- \"${{cur}}\") ); return 0; fi; takes=\"\" ;;"
    );
    let _ = writeln!(o, "            *) takes=\"\" ;;\n        esac");
    // The workload is the first word after the subcommand that is neither an option nor
    // an option's value.
    o.push_str(
        r#"        if [[ -n ${takes} && ${takes} != *" ${prev} "* ]]; then
            local i n=0 skip=0
            for ((i = 2; i < COMP_CWORD; i++)); do
                if ((skip)); then skip=0; continue; fi
                if [[ ${takes} == *" ${COMP_WORDS[i]} "* ]]; then skip=1; continue; fi
                [[ ${COMP_WORDS[i]} == -* ]] || n=$((n + 1))
            done
            if ((n == 0)); then
"#,
    );
    let _ = writeln!(
        o,
        "                COMPREPLY=( $(compgen -W \"${{{f}_builtins}}\" -- \"${{cur}}\") )"
    );
    o.push_str(
        r#"                if ((files)); then
                    COMPREPLY+=( $(compgen -d -- "${cur}") $(compgen -f -X '!*.f' -- "${cur}") )
                fi
                return 0
            fi
        fi
    fi
"#,
    );
    let _ = writeln!(o, "    {f} \"$@\"\n}}");
    o
}

/// Zsh: the workload argument of `run`, `check` and `show` completes with a function that
/// offers the built-ins (and `.f` files), in place of clap's `_default`.
fn zsh(base: &str, names: &[&str], bin: &str) -> String {
    let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
    for (sub, files) in WORKLOAD_COMMANDS {
        let func = if *files {
            format!("_{bin}_workloads")
        } else {
            format!("_{bin}_builtins")
        };
        // The first `(sub)` section is the top-level subcommand's (nested ones come later).
        let Some(start) = lines.iter().position(|l| l.trim() == format!("({sub})")) else {
            continue;
        };
        for l in lines.iter_mut().skip(start + 1) {
            if l == ";;" {
                break;
            }
            if l.starts_with("':") && l.ends_with(":_default' \\") {
                *l = format!("{}:{func}' \\", &l[..l.len() - ":_default' \\".len()]);
                break;
            }
        }
    }
    let quoted: Vec<String> = names.iter().map(|n| n.replace(':', "\\:")).collect();
    let helpers = format!(
        "_{bin}_builtins() {{\n    local -a builtins\n    builtins=({})\n    _describe -t builtins 'built-in workload' builtins\n}}\n_{bin}_workloads() {{\n    _alternative 'builtins:built-in workload:_{bin}_builtins' 'files:workload file:_files -g \"*.f\"'\n}}\n",
        quoted.join(" ")
    );
    // After `#compdef`, before anything runs the completion.
    let mut o = String::new();
    let mut it = lines.into_iter();
    if let Some(first) = it.next() {
        o.push_str(&first);
        o.push('\n');
    }
    o.push_str(&helpers);
    for l in it {
        o.push_str(&l);
        o.push('\n');
    }
    o
}

/// Fish: the built-in names (with their descriptions) and `.f` files for the workload.
fn fish(base: &str, names: &[&str], bin: &str) -> String {
    let mut o = base.to_string();
    let cond = |subs: &str| format!("__fish_{bin}_using_subcommand {subs}");
    let _ = writeln!(o, "# Built-in workloads and .f files (added by {bin}).");
    for n in names {
        let desc = fsbench_model::workloads::builtin(n)
            .map(fsbench_model::workloads::description)
            .unwrap_or_default()
            .replace('\\', "\\\\")
            .replace('\'', "\\'");
        let _ = writeln!(
            o,
            "complete -c {bin} -n \"{}\" -f -a '{n}' -d '{desc}'",
            cond("run check show")
        );
    }
    // fish's __fish_complete_suffix offers every other file after the matching ones.
    let _ = writeln!(
        o,
        "function __fish_{bin}_workload_files --description 'Workload files and directories'\n    set -l tok (commandline -ct)\n    for p in $tok*.f $tok*/\n        echo $p\n    end\nend"
    );
    let _ = writeln!(
        o,
        "complete -c {bin} -n \"{}\" -a '(__fish_{bin}_workload_files)'",
        cond("run check")
    );
    // Only those: no other file is a workload (options taking files keep theirs, -F).
    let _ = writeln!(o, "complete -c {bin} -n \"{}\" -f", cond("run check show"));
    let _ = writeln!(
        o,
        "complete -c {bin} -n \"{}\" -f -a '(__fish_complete_directories)'",
        cond("clean")
    );
    o
}
