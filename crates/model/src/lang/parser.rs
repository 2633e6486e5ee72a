//! Recursive-descent parser for the workload language (Filebench 1.5 dialect plus the legacy
//! forms that shipped workloads still use). Produces an [`ast::Script`]; no meaning is given
//! here beyond the shape of each command.

use super::ast::*;
use super::diag::Diagnostic;
use super::lexer::{lex, Tok, Token};
use super::source::{SourceFile, Span};
use std::sync::Arc;

/// Parse a whole workload.
pub fn parse(src: &Arc<SourceFile>) -> Result<Script, Diagnostic> {
    let tokens = lex(src)?;
    let mut p = Parser {
        src: src.clone(),
        toks: tokens,
        pos: 0,
    };
    p.script()
}

/// Commands Filebench once had and removed; we name them and say what to write instead.
const REMOVED: &[(&str, &str)] = &[
    ("load", "`load` was removed with the interactive shell; run the workload file directly"),
    ("stats", "`stats` commands were removed; fsbench reports statistics at the end of `run` (use --json for machine-readable output)"),
    ("foreach", "`foreach` was removed; use `fsbench run --repeat` or -s overrides in a shell loop"),
    ("warmup", "`warmup` was removed; use `fsbench run --warmup SECONDS`"),
    ("fscheck", "`fscheck` was removed; there is no replacement"),
    ("fsflush", "`fsflush` was removed; use `fsbench run --cold` to start with a cold page cache"),
    ("posset", "`posset` was removed; there is no replacement"),
];

struct Parser {
    src: Arc<SourceFile>,
    toks: Vec<Token>,
    pos: usize,
}

type PResult<T> = Result<T, Diagnostic>;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }
    fn peek_at(&self, n: usize) -> &Tok {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].tok
    }
    fn span(&self) -> Span {
        self.toks[self.pos].span
    }
    fn prev_span(&self) -> Span {
        self.toks[self.pos.saturating_sub(1)].span
    }
    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }
    fn err(&self, span: Span, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(&self.src, span, msg)
    }
    fn unexpected(&self, expected: &str) -> Diagnostic {
        self.err(
            self.span(),
            format!("expected {expected}, found {}", self.peek().describe()),
        )
    }
    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Tok::Word(x) if x == w)
    }
    fn expect(&mut self, t: Tok, what: &str) -> PResult<Span> {
        if *self.peek() == t {
            Ok(self.bump().span)
        } else {
            Err(self.unexpected(what))
        }
    }
    fn expect_word(&mut self, what: &str) -> PResult<(String, Span)> {
        match self.peek().clone() {
            Tok::Word(w) => {
                let s = self.bump().span;
                Ok((w, s))
            }
            _ => Err(self.unexpected(what)),
        }
    }
    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == t {
            self.bump();
            true
        } else {
            false
        }
    }

    fn script(&mut self) -> PResult<Script> {
        let mut statements = Vec::new();
        while *self.peek() != Tok::Eof {
            statements.push(self.statement()?);
        }
        Ok(Script { statements })
    }

    fn statement(&mut self) -> PResult<Statement> {
        let start = self.span();
        let (kw, kw_span) = match self.peek().clone() {
            Tok::Word(w) => (w, self.bump().span),
            _ => return Err(self.unexpected("a command such as `define`, `set` or `run`")),
        };
        let stmt = match kw.as_str() {
            "define" => self.define()?,
            "set" => self.set()?,
            "create" => self.create_files()?,
            "run" => Stmt::Run(self.opt_number_or_var()),
            "psrun" => self.psrun(),
            "eventgen" => Stmt::Eventgen(self.attr_list(false)?.0),
            "echo" => Stmt::Echo(self.quoted("a quoted string after `echo`")?),
            "usage" => {
                // Legacy help text: kept as an echo of nothing; it never affected a run.
                self.quoted("a quoted string after `usage`")?;
                Stmt::Echo(String::new())
            }
            "system" => Stmt::System(self.quoted("a quoted command after `system`")?),
            "sleep" => Stmt::Sleep(
                self.opt_number_or_var()
                    .ok_or_else(|| self.unexpected("a number of seconds after `sleep`"))?,
            ),
            "list" => self.list(),
            "debug" => Stmt::Debug(
                self.opt_number_or_var()
                    .ok_or_else(|| self.unexpected("a debug level after `debug`"))?,
            ),
            "version" => Stmt::Version,
            "quit" => Stmt::Quit,
            "enable" => self.enable()?,
            "domultisync" => Stmt::DoMultiSync(self.attr_list(false)?.0),
            other => return Err(self.unknown_command(other, kw_span)),
        };
        Ok(Statement {
            stmt,
            span: start.to(self.prev_span()),
        })
    }

    /// `create files` (or `fileset`/`filesets`).
    fn create_files(&mut self) -> PResult<Stmt> {
        let (w, s) = self.expect_word("`files` after `create`")?;
        if w != "files" && w != "fileset" && w != "filesets" {
            return Err(self
                .err(s, format!("expected `files` after `create`, found `{w}`"))
                .with_help("write `create files` to lay out every fileset now"));
        }
        Ok(Stmt::CreateFiles)
    }

    /// `psrun [period [runtime]]`.
    fn psrun(&mut self) -> Stmt {
        let period = self.opt_number_or_var();
        let runtime = if period.is_some() {
            self.opt_number_or_var()
        } else {
            None
        };
        Stmt::Psrun { period, runtime }
    }

    /// `list [fileset|filesets|flowop|flowops]`.
    fn list(&mut self) -> Stmt {
        let what = match self.peek().clone() {
            Tok::Word(w) if matches!(w.as_str(), "fileset" | "filesets" | "flowop" | "flowops") => {
                self.bump();
                Some(w)
            }
            _ => None,
        };
        Stmt::List(what)
    }

    /// `enable lathist` or `enable multi ...`.
    fn enable(&mut self) -> PResult<Stmt> {
        let (w, s) = self.expect_word("`lathist` or `multi` after `enable`")?;
        match w.as_str() {
            "lathist" => Ok(Stmt::EnableLathist),
            "multi" => Ok(Stmt::EnableMulti(self.attr_list(false)?.0)),
            _ => Err(self.err(
                s,
                format!("expected `lathist` or `multi` after `enable`, found `{w}`"),
            )),
        }
    }

    /// The error for a word that is no command: removed, misplaced or unknown.
    fn unknown_command(&self, other: &str, kw_span: Span) -> Diagnostic {
        if let Some((_, help)) = REMOVED.iter().find(|(n, _)| *n == other) {
            return self
                .err(
                    kw_span,
                    format!("`{other}` is not part of the workload language any more"),
                )
                .with_help(*help);
        }
        if other == "flowop" || other == "thread" {
            return self
                .err(kw_span, format!("`{other}` outside of a definition"))
                .with_help(if other == "flowop" {
                    "flowops belong inside `thread ... { }` within `define process`"
                } else {
                    "threads belong inside `define process name=... { }`"
                });
        }
        self.err(kw_span, format!("unknown command `{other}`"))
            .with_help(
                "commands are define, set, create files, run, psrun, eventgen, echo, system, \
                 sleep, list, debug, version, quit, enable",
            )
    }

    fn quoted(&mut self, what: &str) -> PResult<String> {
        match self.peek().clone() {
            Tok::Quoted(s) => {
                self.bump();
                Ok(s)
            }
            _ => Err(self.unexpected(what)),
        }
    }

    fn opt_number_or_var(&mut self) -> Option<ValueNode> {
        match self.peek().clone() {
            Tok::Int(i) => Some(ValueNode {
                value: Value::Int(i),
                span: self.bump().span,
            }),
            Tok::Var(v) => Some(ValueNode {
                value: Value::Var(v),
                span: self.bump().span,
            }),
            _ => None,
        }
    }

    fn define(&mut self) -> PResult<Stmt> {
        let (what, s) =
            self.expect_word("`fileset`, `file`, `process` or `flowop` after `define`")?;
        match what.as_str() {
            "fileset" | "filesets" => Ok(Stmt::DefineFileset {
                file: false,
                attrs: self.attr_list(false)?.0,
            }),
            "file" | "files" => Ok(Stmt::DefineFileset {
                file: true,
                attrs: self.attr_list(false)?.0,
            }),
            "process" | "processes" => {
                let attrs = self.attr_list(false)?.0;
                self.expect(Tok::LBrace, "`{` to open the process body")?;
                let mut threads = Vec::new();
                while !self.eat(&Tok::RBrace) {
                    threads.push(self.thread()?);
                }
                Ok(Stmt::DefineProcess { attrs, threads })
            }
            "flowop" => {
                let (attrs, params) = self.attr_list(true)?;
                for p in &params {
                    if p.value.is_some() {
                        return Err(self
                            .err(p.span, "a composite flowop's parameter takes no value here")
                            .with_help("declare `$name` here; callers pass `$name=value`"));
                    }
                }
                self.expect(Tok::LBrace, "`{` to open the composite flowop's body")?;
                let mut flowops = Vec::new();
                while !self.eat(&Tok::RBrace) {
                    flowops.push(self.flowop()?);
                }
                Ok(Stmt::DefineFlowop {
                    attrs,
                    params,
                    flowops,
                })
            }
            "randvar" => {
                let (attrs, table) = self.randvar_attrs(None)?;
                Ok(Stmt::DefineRandvar { attrs, table })
            }
            other => Err(self.err(
                s,
                format!("cannot define `{other}`: expected fileset, file, process or flowop"),
            )),
        }
    }

    fn thread(&mut self) -> PResult<ThreadDecl> {
        let start = self.span();
        if !self.is_word("thread") {
            return Err(self.unexpected("`thread` or `}` in a process body"));
        }
        self.bump();
        let attrs = self.attr_list(false)?.0;
        self.expect(Tok::LBrace, "`{` to open the thread body")?;
        let mut flowops = Vec::new();
        while !self.eat(&Tok::RBrace) {
            flowops.push(self.flowop()?);
        }
        Ok(ThreadDecl {
            attrs,
            flowops,
            span: start.to(self.prev_span()),
        })
    }

    fn flowop(&mut self) -> PResult<FlowopDecl> {
        let start = self.span();
        if !self.is_word("flowop") {
            return Err(self.unexpected("`flowop` or `}`"));
        }
        self.bump();
        let (kind, kind_span) = self.expect_word("a flowop type such as `read` or `createfile`")?;
        let (attrs, locals) = self.attr_list(true)?;
        Ok(FlowopDecl {
            kind,
            kind_span,
            attrs,
            locals,
            span: start.to(self.prev_span()),
        })
    }

    /// `attr {, attr}`; with `locals`, `$name[=value]` items are allowed too.
    fn attr_list(&mut self, locals: bool) -> PResult<(Vec<Attr>, Vec<LocalVar>)> {
        let mut attrs = Vec::new();
        let mut lvars = Vec::new();
        // An attribute list may be empty (`define process {`, `eventgen`).
        if !(matches!(self.peek(), Tok::Word(_)) || locals && matches!(self.peek(), Tok::Var(_))) {
            return Ok((attrs, lvars));
        }
        loop {
            match self.peek().clone() {
                Tok::Var(name) if locals => {
                    let span = self.bump().span;
                    let value = if self.eat(&Tok::Eq) {
                        Some(self.value()?)
                    } else {
                        None
                    };
                    lvars.push(LocalVar { name, span, value });
                }
                Tok::Word(_) => attrs.push(self.attr()?),
                _ => {
                    return Err(self.unexpected(if locals {
                        "an attribute or a `$local` variable after `,`"
                    } else {
                        "an attribute after `,`"
                    }))
                }
            }
            if !self.eat(&Tok::Comma) {
                break;
            }
            if self.list_ended() {
                return Err(self
                    .err(self.prev_span(), "attribute list ends with a comma")
                    .with_help(format!(
                        "remove this `,` or add the attribute it was meant to introduce (what follows it is {})",
                        self.peek().describe()
                    )));
            }
        }
        Ok((attrs, lvars))
    }

    /// After a `,` in an attribute list: whether what follows cannot be an attribute but
    /// starts something else (a command, a flowop, a brace, the end), so the comma is stray.
    fn list_ended(&self) -> bool {
        const STARTS: &[&str] = &[
            "flowop",
            "thread",
            "define",
            "set",
            "run",
            "psrun",
            "create",
            "echo",
            "usage",
            "system",
            "sleep",
            "list",
            "debug",
            "version",
            "quit",
            "enable",
            "eventgen",
            "domultisync",
        ];
        match self.peek() {
            Tok::RBrace | Tok::LBrace | Tok::Eof => true,
            Tok::Word(w) => STARTS.contains(&w.as_str()) && *self.peek_at(1) != Tok::Eq,
            _ => false,
        }
    }

    fn attr(&mut self) -> PResult<Attr> {
        let (name, name_span) = self.expect_word("an attribute name")?;
        let value = if self.eat(&Tok::Eq) {
            Some(self.value()?)
        } else {
            None
        };
        Ok(Attr {
            name,
            name_span,
            value,
        })
    }

    fn single_value(&mut self) -> PResult<ValueNode> {
        let t = self.peek().clone();
        let value = match t {
            Tok::Int(i) => Value::Int(i),
            Tok::Word(w) if w == "true" => Value::Bool(true),
            Tok::Word(w) if w == "false" => Value::Bool(false),
            Tok::Word(w) => Value::Word(w),
            Tok::Quoted(q) => Value::Quoted(q),
            Tok::Var(v) => Value::Var(v),
            _ => return Err(self.unexpected("a value (number, word, \"string\" or $variable)")),
        };
        let span = self.bump().span;
        Ok(ValueNode { value, span })
    }

    /// A value, or the legacy product `a * b * ...`.
    fn value(&mut self) -> PResult<ValueNode> {
        let first = self.single_value()?;
        if *self.peek() != Tok::Star {
            return Ok(first);
        }
        let mut parts = vec![first];
        while self.eat(&Tok::Star) {
            parts.push(self.single_value()?);
        }
        let span = parts[0].span.to(parts[parts.len() - 1].span);
        Ok(ValueNode {
            value: Value::Product(parts),
            span,
        })
    }

    fn set(&mut self) -> PResult<Stmt> {
        match self.peek().clone() {
            Tok::Word(w) if w == "mode" => {
                self.bump();
                let (what, s) = self.expect_word("`quit` or `nousestats` after `set mode`")?;
                match what.as_str() {
                    "quit" => {
                        let (m, ms) = self.expect_word("`timeout`, `alldone` or `firstdone`")?;
                        if !matches!(m.as_str(), "timeout" | "alldone" | "firstdone") {
                            return Err(self.err(
                                ms,
                                format!("unknown quit mode `{m}`: expected timeout, alldone or firstdone"),
                            ));
                        }
                        Ok(Stmt::SetModeQuit(m))
                    }
                    "nousestats" => Ok(Stmt::SetModeNoUseStats),
                    _ => Err(self.err(
                        s,
                        format!("unknown mode `{what}`: expected `quit` or `nousestats`"),
                    )),
                }
            }
            Tok::Var(var) => {
                let var_span = self.bump().span;
                self.expect(Tok::Eq, "`=` after the variable")?;
                let value = match self.peek().clone() {
                    Tok::Word(w) if w == "randvar" && *self.peek_at(1) == Tok::LParen => {
                        self.bump();
                        self.bump();
                        let (attrs, table) = self.randvar_attrs(Some(Tok::RParen))?;
                        self.expect(Tok::RParen, "`)` to close `randvar(`")?;
                        SetValue::Randvar { attrs, table }
                    }
                    Tok::Word(w) if w == "cvar" && *self.peek_at(1) == Tok::LParen => {
                        self.bump();
                        self.bump();
                        let attrs = self.attr_list(false)?.0;
                        self.expect(Tok::RParen, "`)` to close `cvar(`")?;
                        SetValue::Cvar { attrs }
                    }
                    _ => SetValue::Value(self.value()?),
                };
                Ok(Stmt::Set {
                    var,
                    var_span,
                    value,
                })
            }
            _ => Err(self.unexpected("a `$variable` or `mode` after `set`")),
        }
    }

    /// Attributes of a random variable; `randtable = {{p,lo,hi}, ...}` comes last.
    fn randvar_attrs(
        &mut self,
        _close: Option<Tok>,
    ) -> PResult<(Vec<Attr>, Option<Vec<TableRow>>)> {
        let mut attrs = Vec::new();
        let mut table = None;
        loop {
            if self.is_word("randtable") {
                self.bump();
                self.expect(Tok::Eq, "`=` after `randtable`")?;
                table = Some(self.randtable()?);
                break;
            }
            attrs.push(self.attr()?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        Ok((attrs, table))
    }

    fn randtable(&mut self) -> PResult<Vec<TableRow>> {
        self.expect(Tok::LBrace, "`{` to open the randtable")?;
        let mut rows = Vec::new();
        loop {
            let start = self.expect(
                Tok::LBrace,
                "`{` to open a randtable row {percent, min, max}",
            )?;
            let pct = self.single_value()?;
            self.expect(Tok::Comma, "`,` between randtable fields")?;
            let lo = self.single_value()?;
            self.expect(Tok::Comma, "`,` between randtable fields")?;
            let hi = self.single_value()?;
            let end = self.expect(Tok::RBrace, "`}` to close the randtable row")?;
            rows.push(TableRow {
                pct,
                lo,
                hi,
                span: start.to(end),
            });
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(Tok::RBrace, "`}` to close the randtable")?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Script {
        parse(&SourceFile::new("t.f", s)).unwrap_or_else(|e| panic!("{e}"))
    }
    fn perr(s: &str) -> Diagnostic {
        parse(&SourceFile::new("t.f", s)).unwrap_err()
    }

    #[test]
    fn define_process_with_threads() {
        let s = p("define process name=p1,instances=2\n{\n thread name=t,memsize=10m,\n  instances=$n\n {\n  flowop read name=r1,filesetname=fs,iosize=1m,random\n  flowop closefile name=c,fd=1\n }\n}\nrun 10\n");
        assert_eq!(s.statements.len(), 2);
        match &s.statements[0].stmt {
            Stmt::DefineProcess { attrs, threads } => {
                assert_eq!(attrs.len(), 2);
                assert_eq!(threads[0].attrs.len(), 3);
                assert_eq!(threads[0].flowops.len(), 2);
                let f = &threads[0].flowops[0];
                assert_eq!(f.kind, "read");
                assert_eq!(f.attrs[3].name, "random");
                assert!(f.attrs[3].value.is_none());
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            &s.statements[1].stmt,
            Stmt::Run(Some(ValueNode {
                value: Value::Int(10),
                ..
            }))
        ));
    }

    #[test]
    fn set_forms() {
        let s = p("set $a=1k\nset $b=true\nset $c=\"q $a\"\nset $d=randvar(type=gamma,mean=10,gamma=1500)\nset $e=cvar(type=cvar-gamma,parameters=mean:1;gamma:1.5)\nset $t=randvar(type=tabular, min=1k, randtable={{10,1k,2k},\n {90, 4k, 8k}})\nset mode quit firstdone\nset $f = $a * $b\n");
        assert_eq!(s.statements.len(), 8);
        match &s.statements[5].stmt {
            Stmt::Set {
                value:
                    SetValue::Randvar {
                        attrs,
                        table: Some(t),
                    },
                ..
            } => {
                assert_eq!(attrs.len(), 2);
                assert_eq!(t.len(), 2);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&s.statements[7].stmt, Stmt::Set { value: SetValue::Value(ValueNode { value: Value::Product(v), .. }), .. } if v.len() == 2)
        );
    }

    #[test]
    fn composite_flowop() {
        let s = p("define flowop name=rw, $fs\n{\n flowop openfile name=o,filesetname=$fs,fd=1\n}\ndefine process name=p {\n thread name=t {\n  flowop rw name=x, iters=2, $fs=big\n }\n}");
        match &s.statements[0].stmt {
            Stmt::DefineFlowop {
                params, flowops, ..
            } => {
                assert_eq!(params[0].name, "fs");
                assert_eq!(flowops.len(), 1);
            }
            other => panic!("{other:?}"),
        }
        match &s.statements[1].stmt {
            Stmt::DefineProcess { threads, .. } => {
                assert_eq!(threads[0].flowops[0].locals[0].name, "fs");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_point_at_the_problem() {
        let e = perr("set $a = 1\ndefine process name=p\n{\n  flowop read name=r\n}\n");
        assert_eq!(e.line_col(), (4, 3));
        assert!(e.message.contains("`thread`"), "{}", e.message);
        let e = perr("define fileset name=a,\n");
        assert_eq!(e.line_col(), (1, 22));
        assert!(e.message.contains("ends with a comma"), "{}", e.message);
        let e = perr("stats clear");
        assert!(e.to_string().contains("not part of the workload language"));
        let e = perr("set mode quit sometimes");
        assert_eq!(e.line_col(), (1, 15));
        let e = perr("set $a = randvar(type=tabular, randtable={{1,2}})");
        assert!(e.message.contains("`,`"), "{}", e.message);
        let e = perr("define process name=p { thread name=t { flowop read name=r }");
        assert!(e.message.contains("end of file"), "{}", e.message);
    }

    /// A stray comma at the end of a flowop's line: the error is at the comma, not at the
    /// next line's flowop type; an attribute list continued on the next line still parses.
    #[test]
    fn a_stray_comma_is_pointed_at() {
        let e = perr("define process name=p {\n thread name=t {\n  flowop write name=w,fd=1,\n  flowop appendfilerand name=a,fd=1\n }\n}\n");
        assert_eq!(e.line_col(), (3, 27));
        assert_eq!(e.message, "attribute list ends with a comma");
        let e = perr("define process name=p {\n thread name=t {\n  flowop write name=w,\n }\n}\n");
        assert_eq!(e.line_col(), (3, 22));
        let s = p("define fileset name=a,\n  path=/tmp, prealloc\nrun 1\n");
        assert_eq!(s.statements.len(), 2);
    }
}
