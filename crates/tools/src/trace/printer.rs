//! The one printer of the workloads fsbench generates (`trace distill`).
//!
//! A generated workload is built as typed values and printed only here, so that text taken
//! from a trace (the traced command line, its roots, system call names, all of which anyone
//! can write into a trace or an strace log) can never become a statement: names are
//! [`Ident`]s (checked against the language's identifier rules), paths are [`Quoted`]
//! (refused when they hold a quote, a `$`, a backslash or a control character), flowops are
//! an [`Op`] from a closed list (no `system`), and free text is a [`Comment`], folded onto a
//! single line with every control character escaped, so it ends where the printer ends it.

use std::fmt::{self, Write as _};

/// A name in the workload language: `[A-Za-z_][A-Za-z0-9_]*`, at most 64 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident(String);

impl Ident {
    pub fn new(s: &str) -> Result<Ident, String> {
        let b = s.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= 64
            && (b[0].is_ascii_alphabetic() || b[0] == b'_')
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
        if ok {
            Ok(Ident(s.to_string()))
        } else {
            Err(format!(
                "{s:?} is not a name (letters, digits and _, not first a digit)"
            ))
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A quoted string value: printed between `"`; nothing in it the lexer or the variable
/// expansion would read as anything but text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quoted(String);

impl Quoted {
    pub fn new(s: &str) -> Result<Quoted, String> {
        match s
            .chars()
            .find(|c| matches!(c, '"' | '$' | '\\') || c.is_control())
        {
            Some(c) => Err(format!(
                "{s:?} cannot be quoted in a workload (it holds {c:?})"
            )),
            None => Ok(Quoted(s.to_string())),
        }
    }
}

/// Free text for a comment: one line, control characters (newlines included) and the
/// Unicode line separators escaped, at most 300 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment(String);

impl Comment {
    pub fn new(s: &str) -> Comment {
        const MAX: usize = 300;
        let mut out = String::new();
        for (n, c) in s.chars().enumerate() {
            if n == MAX {
                out.push_str("...");
                break;
            }
            if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        Comment(out)
    }
}

/// A value of an attribute or a variable.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(u64),
    /// A bare name (`name=open1`, `filesetname=traced`).
    Name(Ident),
    /// `$name`.
    Var(Ident),
    Quoted(Quoted),
    /// `randvar(type=tabular, randtable={{pct, lo, hi}, ...})`.
    Tabular(Vec<(u64, u64, u64)>),
}

/// The flowops a generated workload uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    CreateFile,
    OpenFile,
    Read,
    Write,
    Fsync,
    CloseFile,
    ListDir,
    StatFile,
    DeleteFile,
    Think,
}

impl Op {
    fn word(self) -> &'static str {
        match self {
            Op::CreateFile => "createfile",
            Op::OpenFile => "openfile",
            Op::Read => "read",
            Op::Write => "write",
            Op::Fsync => "fsync",
            Op::CloseFile => "closefile",
            Op::ListDir => "listdir",
            Op::StatFile => "statfile",
            Op::DeleteFile => "deletefile",
            Op::Think => "think",
        }
    }
}

/// `name=value` in an attribute list.
pub type Attr = (Ident, Value);

#[derive(Debug, Clone, PartialEq)]
pub struct Flowop {
    pub op: Op,
    pub attrs: Vec<Attr>,
}

/// A generated workload: comments, variables, filesets, one process of one thread kind,
/// and `run SECONDS`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Workload {
    pub comments: Vec<Comment>,
    pub vars: Vec<(Ident, Value)>,
    pub filesets: Vec<Vec<Attr>>,
    pub process: Vec<Attr>,
    pub thread: Vec<Attr>,
    pub flowops: Vec<Flowop>,
    pub run_s: u64,
}

/// An identifier from a name the program itself chose (a literal or one it built from
/// counters): a bad one is a bug, not input.
pub fn ident(s: &str) -> Ident {
    Ident::new(s).unwrap_or_else(|e| panic!("a generated name: {e}"))
}

fn value(out: &mut String, v: &Value) -> fmt::Result {
    match v {
        Value::Int(i) => write!(out, "{i}"),
        Value::Name(n) => out.write_str(&n.0),
        Value::Var(n) => write!(out, "${}", n.0),
        Value::Quoted(q) => write!(out, "\"{}\"", q.0),
        Value::Tabular(rows) => {
            out.push_str("randvar(type=tabular, randtable={");
            for (i, (p, lo, hi)) in rows.iter().enumerate() {
                let sep = if i == 0 { "" } else { ", " };
                write!(out, "{sep}{{{p}, {lo}, {hi}}}")?;
            }
            out.push_str("})");
            Ok(())
        }
    }
}

fn attrs(out: &mut String, a: &[Attr]) -> fmt::Result {
    for (i, (n, v)) in a.iter().enumerate() {
        write!(out, "{}{}=", if i == 0 { "" } else { ", " }, n.0)?;
        value(out, v)?;
    }
    Ok(())
}

/// The workload's text.
pub fn print(w: &Workload) -> String {
    let mut out = String::new();
    let _ = print_into(&mut out, w);
    out
}

fn print_into(out: &mut String, w: &Workload) -> fmt::Result {
    for c in &w.comments {
        writeln!(out, "# {}", c.0)?;
    }
    out.push('\n');
    for (n, v) in &w.vars {
        write!(out, "set ${}=", n.0)?;
        value(out, v)?;
        out.push('\n');
    }
    out.push('\n');
    for f in &w.filesets {
        out.push_str("define fileset ");
        attrs(out, f)?;
        out.push('\n');
    }
    out.push_str("\ndefine process ");
    attrs(out, &w.process)?;
    out.push_str("\n{\n  thread ");
    attrs(out, &w.thread)?;
    out.push_str("\n  {\n");
    for f in &w.flowops {
        write!(out, "    flowop {} ", f.op.word())?;
        attrs(out, &f.attrs)?;
        out.push('\n');
    }
    writeln!(out, "  }}\n}}\n\nrun {}", w.run_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_paths_and_comments_cannot_carry_statements() {
        assert!(Ident::new("open3").is_ok());
        for bad in ["", "3x", "a b", "a\nsystem", "a=b", "x$", &"a".repeat(65)] {
            assert!(Ident::new(bad).is_err(), "{bad:?}");
        }
        assert!(Quoted::new("/tmp/a b").is_ok());
        for bad in ["a\"b", "$x", "a\nb", "a\\b", "\u{7}"] {
            assert!(Quoted::new(bad).is_err(), "{bad:?}");
        }
        let c = Comment::new("sh -c 'x\nsystem \"touch /tmp/x\"\r\u{2028}y'");
        assert!(!c.0.contains(['\n', '\r', '\u{2028}']), "{c:?}");
        assert!(c.0.contains("\\n"), "{c:?}");
        assert_eq!(Comment::new(&"x".repeat(400)).0.len(), 303);
    }

    #[test]
    fn a_workload_prints_in_the_language_and_parses() {
        let w = Workload {
            comments: vec![Comment::new("from a\ntrace")],
            vars: vec![
                (ident("dir"), Value::Quoted(Quoted::new("/tmp").unwrap())),
                (ident("size"), Value::Tabular(vec![(60, 1, 1), (40, 2, 8)])),
            ],
            filesets: vec![vec![
                (ident("name"), Value::Name(ident("f"))),
                (ident("entries"), Value::Int(10)),
            ]],
            process: vec![(ident("name"), Value::Int(1))],
            thread: vec![(ident("instances"), Value::Int(1))],
            flowops: vec![Flowop {
                op: Op::Read,
                attrs: vec![(ident("iosize"), Value::Var(ident("size")))],
            }],
            run_s: 10,
        };
        let t = print(&w);
        assert!(t.starts_with("# from a\\ntrace\n"), "{t}");
        assert!(t.contains("set $dir=\"/tmp\"\n"), "{t}");
        assert!(
            t.contains("set $size=randvar(type=tabular, randtable={{60, 1, 1}, {40, 2, 8}})"),
            "{t}"
        );
        assert!(t.contains("    flowop read iosize=$size\n"), "{t}");
        assert!(t.ends_with("run 10\n"), "{t}");
    }
}
