//! From syntax tree to [`Workload`]: variables, overrides, filesets, processes, threads,
//! flowops (with composite flowops expanded) and every check that can be made before
//! anything touches the disk.

use super::kind::FlowopKind;
use super::{Action, Num, QuitMode, RandVarDef, Workload};
use crate::lang::ast::{self, Attr, FlowopDecl, LocalVar, SetValue, Stmt, Value, ValueNode};
use crate::lang::lexer::parse_int;
use crate::lang::{Collected, Diagnostic, Diagnostics, SourceFile, Span};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

mod attrs;
mod filesets;
mod flowops;
mod processes;
mod randvars;

pub use flowops::stream_flowop;

/// The warning for a workload without `run`; `fsbench run --duration` leaves it out, since the
/// duration is then given.
pub const NO_RUN_WARNING: &str =
    "the workload has no `run` command; `fsbench run` runs it for --duration (default 60 s)";

/// `-s name=value` settings, applied before the script runs: a `set` of an overridden
/// variable keeps the override.
#[derive(Debug, Clone, Default)]
pub struct Overrides(pub Vec<(String, String)>);

impl Overrides {
    /// Parse `name=value` (a leading `$` on the name is allowed).
    pub fn parse_one(s: &str) -> Result<(String, String), String> {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}`: expected NAME=VALUE, e.g. -s nfiles=500"))?;
        let k = k.trim().trim_start_matches('$');
        if k.is_empty() || !k.chars().next().unwrap().is_ascii_alphabetic() {
            return Err(format!("`{s}`: variable names start with a letter"));
        }
        Ok((k.to_string(), v.trim().to_string()))
    }
}

/// A variable's value while the script is being read.
#[derive(Debug, Clone, PartialEq)]
enum Val {
    Int(i64),
    Bool(bool),
    Str(String),
    Rand(usize),
}

impl Val {
    fn from_text(s: &str) -> Val {
        if let Some(i) = parse_int(s) {
            Val::Int(i)
        } else if s == "true" {
            Val::Bool(true)
        } else if s == "false" {
            Val::Bool(false)
        } else {
            Val::Str(s.to_string())
        }
    }
}

/// A resolved attribute value with where it came from.
struct AVal {
    val: Val,
    span: Span,
}

/// The most flowops a workload may hold after composite flowops are expanded (each costs
/// about a kilobyte to check and to hold; this is far beyond any real workload).
pub const MAX_EXPANDED: u64 = 1_000_000;

/// The deepest a composite flowop may be called inside others (the top call is level 0).
pub const MAX_NESTING: usize = 16;

struct Builder {
    src: Arc<SourceFile>,
    vars: BTreeMap<String, Val>,
    overridden: HashSet<String>,
    randvars: Vec<RandVarDef>,
    errors: Collected,
    warnings: Collected,
    fileset_decls: Vec<(bool, Vec<Attr>, Span)>,
    process_decls: Vec<(Vec<Attr>, Vec<ast::ThreadDecl>, Span)>,
    composites: HashMap<String, (Vec<LocalVar>, Vec<FlowopDecl>, Span)>,
    stat_names: Vec<(String, FlowopKind)>,
    /// Position of each name in `stat_names`: looking names up by scanning made checking a
    /// workload of many flowops quadratic.
    stat_index: HashMap<String, usize>,
    /// Leaf flowops produced by composite expansion so far (bounded, see `MAX_EXPANDED`).
    expanded: u64,
    /// Names of the composite flowops being expanded, outermost first: their children are
    /// reported as `composite.child`, as Filebench names them.
    prefix: Vec<String>,
}

/// Build a workload from its source text. All errors found are returned together.
pub fn build(
    name: &str,
    src: &Arc<SourceFile>,
    script: &ast::Script,
    overrides: &Overrides,
) -> Result<Workload, Diagnostics> {
    let mut b = Builder::new(src, overrides);
    let mut s = ScriptState::default();
    for st in &script.statements {
        if s.has_run {
            b.warnings.push(Diagnostic::warning(
                src,
                st.span,
                "ignored: commands after the first `run` are never executed",
            ));
            break;
        }
        if !b.statement(st, &mut s) {
            break;
        }
    }
    b.check_overrides(overrides, &s.defined);

    let filesets = b.filesets();
    let processes = b.processes(&filesets);
    b.check_targets(&processes);

    if !b.errors.is_empty() {
        let errors = b.errors.into_vec();
        return Err(Diagnostics(
            errors
                .into_iter()
                .map(|d| at_override(d, overrides))
                .collect(),
        ));
    }
    if !s.has_run && !s.actions.iter().any(|a| matches!(a, Action::CreateFiles)) {
        // Point at the workload's last line of text (where a `run` would go), not at the
        // blank end of the file.
        let text = src.text.trim_end();
        let last = text.rfind('\n').map_or(0, |i| i + 1);
        b.warnings.push(Diagnostic::warning(
            src,
            Span::new(last, text.len()),
            NO_RUN_WARNING,
        ));
    }
    let vars = b
        .vars
        .iter()
        .filter(|(k, _)| s.defined.contains(*k))
        .map(|(k, v)| (k.clone(), b.val_text(v)))
        .collect();
    Ok(Workload {
        name: name.to_string(),
        source: src.clone(),
        vars,
        randvars: b.randvars,
        filesets,
        processes,
        actions: s.actions,
        mode: s.mode,
        run_seconds: s.run_seconds,
        has_run: s.has_run,
        psrun_period: s.psrun_period,
        eventgen_rate: s.eventgen_rate,
        lathist: s.lathist,
        nousestats: s.nousestats,
        stat_names: b.stat_names,
        warnings: b.warnings.into_vec(),
        nfs_url: None,
    })
}

/// What the script's commands set, read statement by statement.
struct ScriptState {
    defined: HashSet<String>,
    actions: Vec<Action>,
    mode: QuitMode,
    run_seconds: Option<u64>,
    has_run: bool,
    psrun_period: Option<i64>,
    eventgen_rate: Option<Num>,
    lathist: bool,
    nousestats: bool,
}

impl Default for ScriptState {
    fn default() -> ScriptState {
        ScriptState {
            defined: HashSet::new(),
            actions: Vec::new(),
            mode: QuitMode::Timeout,
            run_seconds: None,
            has_run: false,
            psrun_period: None,
            eventgen_rate: None,
            lathist: false,
            nousestats: false,
        }
    }
}

/// An error at a use of a variable given on the command line (`-s nthreads=abc`, an error
/// at `instances=$nthreads`) is located at the `-s` argument, where the wrong value was
/// typed; the use in the workload goes into the help.
fn at_override(d: Diagnostic, overrides: &Overrides) -> Diagnostic {
    let text = d.source.text.get(d.span.start..d.span.end).unwrap_or("");
    let used = |k: &str| {
        text.match_indices(&format!("${k}")).any(|(i, m)| {
            let next = text[i + m.len()..].chars().next();
            !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    let Some((k, v)) = overrides.0.iter().find(|(k, _)| used(k)) else {
        return d;
    };
    let cmdline = SourceFile::new("<command line>", format!("-s {k}={v}"));
    let at = 4 + k.len();
    let line = d.source.line_text(d.line_col().0).trim();
    let mut help = format!("`${k}` is used at {}: `{line}`", d.location());
    if let Some(h) = &d.help {
        help = format!("{h}; {help}");
    }
    Diagnostic {
        source: cmdline,
        span: Span::new(at, at + v.len().max(1)),
        help: Some(help),
        ..d
    }
}

/// Edit distance, for "did you mean" suggestions.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The candidate closest to `word`, if it is close enough to be what was meant.
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (distance(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4) && *d < c.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Variables in scope while resolving one flowop: a composite's locals, then the globals.
type Locals = HashMap<String, (Val, Span)>;

impl Builder {
    fn new(src: &Arc<SourceFile>, overrides: &Overrides) -> Builder {
        let mut b = Builder {
            src: src.clone(),
            vars: BTreeMap::new(),
            overridden: HashSet::new(),
            randvars: Vec::new(),
            errors: Collected::default(),
            warnings: Collected::default(),
            fileset_decls: Vec::new(),
            process_decls: Vec::new(),
            composites: HashMap::new(),
            stat_names: Vec::new(),
            stat_index: HashMap::new(),
            expanded: 0,
            prefix: Vec::new(),
        };
        for (k, v) in &overrides.0 {
            b.vars.insert(k.clone(), Val::from_text(v));
            b.overridden.insert(k.clone());
        }
        b
    }

    /// One command of the script; false when it ends the script (`quit`).
    fn statement(&mut self, st: &ast::Statement, s: &mut ScriptState) -> bool {
        let src = self.src.clone();
        match &st.stmt {
            Stmt::Set {
                var,
                var_span,
                value,
            } => {
                s.defined.insert(var.clone());
                if !self.overridden.contains(var) {
                    if let Some(v) = self.set_value(var, *var_span, value) {
                        self.vars.insert(var.clone(), v);
                    }
                }
            }
            Stmt::DefineRandvar { attrs, table } => {
                self.define_randvar(attrs, table.as_deref(), st.span, s)
            }
            Stmt::SetModeQuit(m) => {
                s.mode = match m.as_str() {
                    "alldone" => QuitMode::AllDone,
                    "firstdone" => QuitMode::FirstDone,
                    _ => QuitMode::Timeout,
                }
            }
            Stmt::SetModeNoUseStats => s.nousestats = true,
            Stmt::DefineFileset { file, attrs } => {
                self.fileset_decls.push((*file, attrs.clone(), st.span))
            }
            Stmt::DefineProcess { attrs, threads } => {
                self.process_decls
                    .push((attrs.clone(), threads.clone(), st.span))
            }
            Stmt::DefineFlowop {
                attrs,
                params,
                flowops,
            } => self.define_flowop(attrs, params, flowops, st.span),
            Stmt::CreateFiles => s.actions.push(Action::CreateFiles),
            Stmt::Run(v) => {
                s.has_run = true;
                if let Some(v) = v {
                    s.run_seconds = self.positive_int(v, "the run time").map(|x| x as u64);
                }
                s.actions.push(Action::Run);
            }
            Stmt::Psrun { period, runtime } => self.psrun(period, runtime, s),
            Stmt::Eventgen(attrs) => {
                for a in attrs {
                    if a.name == "rate" {
                        s.eventgen_rate = self.num_attr(a, false);
                    } else {
                        self.errors
                            .push(self.unknown_attr(a, "eventgen", &["rate"]));
                    }
                }
            }
            Stmt::Echo(text) => {
                if !text.is_empty() {
                    s.actions.push(Action::Echo(self.interpolate(text)))
                }
            }
            Stmt::System(text) => s.actions.push(Action::System(self.interpolate(text))),
            Stmt::Sleep(v) => {
                if let Some(secs) = self.int_value(v) {
                    if secs < 0 {
                        self.errors.push(Diagnostic::error(
                            &src,
                            v.span,
                            "sleep takes a non-negative number of seconds",
                        ));
                    } else {
                        s.actions.push(Action::Sleep(secs as u64));
                    }
                }
            }
            Stmt::List(w) => s.actions.push(match w.as_deref() {
                Some("flowop") | Some("flowops") => Action::ListFlowops,
                _ => Action::ListFilesets,
            }),
            Stmt::Debug(_) => {}
            Stmt::Version => s.actions.push(Action::Version),
            Stmt::Quit => return false,
            Stmt::EnableLathist => s.lathist = true,
            Stmt::EnableMulti(_) | Stmt::DoMultiSync(_) => self.errors.push(
                Diagnostic::error(&src, st.span, "multi-client runs are not supported yet")
                    .with_help("remove `enable multi`/`domultisync` to run on this machine alone"),
            ),
        }
        true
    }

    /// Legacy `define randvar name=$v, ...`: the same as `set $v = randvar(...)`.
    fn define_randvar(
        &mut self,
        attrs: &[Attr],
        table: Option<&[ast::TableRow]>,
        span: Span,
        s: &mut ScriptState,
    ) {
        let name_attr = attrs.iter().find(|a| a.name == "name");
        match name_attr.and_then(|a| a.value.as_ref()) {
            Some(ValueNode {
                value: Value::Var(v),
                ..
            }) => {
                s.defined.insert(v.clone());
                let rest: Vec<Attr> = attrs.iter().filter(|a| a.name != "name").cloned().collect();
                if !self.overridden.contains(v) {
                    if let Some(i) = self.randvar(v, &rest, table, span) {
                        self.vars.insert(v.clone(), Val::Rand(i));
                    }
                }
                self.warnings.push(
                    Diagnostic::warning(&self.src, span, "`define randvar` is legacy syntax")
                        .with_help(format!("write `set ${v} = randvar(...)`")),
                );
            }
            _ => self.errors.push(
                Diagnostic::error(&self.src, span, "`define randvar` needs `name=$variable`")
                    .with_help("better: `set $name = randvar(type=..., ...)`"),
            ),
        }
    }

    /// `define flowop name=...`: a composite flowop, expanded where it is used.
    fn define_flowop(
        &mut self,
        attrs: &[Attr],
        params: &[LocalVar],
        flowops: &[FlowopDecl],
        span: Span,
    ) {
        let name = attrs.iter().find(|a| a.name == "name");
        let Some(nm) = name.and_then(|a| self.attr_str(a)) else {
            self.errors.push(Diagnostic::error(
                &self.src,
                span,
                "a composite flowop needs `name=...`",
            ));
            return;
        };
        for a in attrs {
            if a.name != "name" && a.name != "iters" {
                self.errors.push(self.unknown_attr(
                    a,
                    "a composite flowop definition",
                    &["name", "iters"],
                ));
            }
        }
        if FlowopKind::from_name(&nm).is_some() {
            self.errors.push(Diagnostic::error(
                &self.src,
                name.unwrap().span(),
                format!("`{nm}` is a built-in flowop type; choose another name"),
            ));
        }
        self.composites
            .insert(nm, (params.to_vec(), flowops.to_vec(), span));
    }

    /// `psrun [-period] [runtime]`: a run that samples every `period` seconds (10 by default).
    fn psrun(
        &mut self,
        period: &Option<ValueNode>,
        runtime: &Option<ValueNode>,
        s: &mut ScriptState,
    ) {
        s.has_run = true;
        if let Some(p) = period {
            s.psrun_period = self.int_value(p).filter(|p| *p != 0);
            if s.psrun_period.is_none() {
                self.err(p.span, "psrun period must be a non-zero number of seconds");
            }
        } else {
            s.psrun_period = Some(10);
        }
        if let Some(r) = runtime {
            s.run_seconds = self.positive_int(r, "the run time").map(|x| x as u64);
        }
        s.actions.push(Action::Run);
    }

    /// Every `-s name=value` must name a variable the script defines.
    fn check_overrides(&mut self, overrides: &Overrides, defined: &HashSet<String>) {
        for (k, _) in &overrides.0 {
            if defined.contains(k) {
                continue;
            }
            let mut names: Vec<&str> = defined.iter().map(|s| s.as_str()).collect();
            names.sort();
            // Located on the command line, not in the workload.
            let cmdline = SourceFile::new("<command line>", format!("-s {k}=..."));
            self.errors.push(
                Diagnostic::error(
                    &cmdline,
                    Span::new(3, 3 + k.len()),
                    format!(
                        "-s {k}: the workload {} has no variable `${k}`",
                        self.src.name
                    ),
                )
                .with_help(format!(
                    "{}its variables: {}",
                    suggest(k, names.iter().copied())
                        .map(|n| format!("did you mean `{n}`? "))
                        .unwrap_or_default(),
                    names
                        .iter()
                        .map(|n| format!("${n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            );
        }
    }

    fn err(&mut self, span: Span, msg: impl Into<String>) {
        self.errors.push(Diagnostic::error(&self.src, span, msg));
    }

    fn val_text(&self, v: &Val) -> String {
        match v {
            Val::Int(i) => i.to_string(),
            Val::Bool(b) => b.to_string(),
            Val::Str(s) => s.clone(),
            Val::Rand(i) => self.randvars[*i].rv.describe(),
        }
    }

    fn interpolate(&self, s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find('$') {
            out.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            let (braced, body) = match after.chars().next() {
                Some('{') | Some('(') => (true, &after[1..]),
                _ => (false, after),
            };
            let n = body
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(body.len());
            let name = &body[..n];
            match self.vars.get(name) {
                Some(v) if !name.is_empty() => {
                    out.push_str(&self.val_text(v));
                    rest = &body[n + usize::from(braced && n < body.len())..];
                }
                _ => {
                    out.push('$');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// A value as written, resolved through locals and variables.
    fn resolve(&mut self, v: &ValueNode, locals: &Locals) -> Option<AVal> {
        let val = match &v.value {
            Value::Int(i) => Val::Int(*i),
            Value::Bool(b) => Val::Bool(*b),
            Value::Word(w) => Val::Str(w.clone()),
            Value::Quoted(q) => Val::Str(self.interpolate(q)),
            Value::Var(name) => {
                if let Some((val, _)) = locals.get(name) {
                    val.clone()
                } else if let Some(val) = self.vars.get(name) {
                    val.clone()
                } else {
                    let cands: Vec<&str> = self
                        .vars
                        .keys()
                        .map(|s| s.as_str())
                        .chain(locals.keys().map(|s| s.as_str()))
                        .collect();
                    let mut d = Diagnostic::error(
                        &self.src,
                        v.span,
                        format!("undefined variable `${name}`"),
                    );
                    d = match suggest(name, cands) {
                        Some(s) => d.with_help(format!("did you mean `${s}`?")),
                        None => d.with_help(format!(
                            "set it first: `set ${name} = ...`, or pass -s {name}=..."
                        )),
                    };
                    self.errors.push(d);
                    return None;
                }
            }
            Value::Product(parts) => {
                let mut acc: i64 = 1;
                for p in parts {
                    match self.resolve(p, locals)?.val {
                        Val::Int(i) => match acc.checked_mul(i) {
                            Some(x) => acc = x,
                            None => {
                                self.err(
                                    v.span,
                                    format!(
                                        "this product overflows: {acc} * {i} is beyond {}, the largest whole number a workload holds",
                                        i64::MAX
                                    ),
                                );
                                return None;
                            }
                        },
                        _ => {
                            self.err(p.span, "only whole numbers can be multiplied");
                            return None;
                        }
                    }
                }
                self.warnings.push(
                    Diagnostic::warning(
                        &self.src,
                        v.span,
                        "arithmetic is legacy syntax, evaluated once here",
                    )
                    .with_help(
                        "Filebench 1.5 has no arithmetic; set the product as its own variable",
                    ),
                );
                Val::Int(acc)
            }
        };
        Some(AVal { val, span: v.span })
    }

    fn int_value(&mut self, v: &ValueNode) -> Option<i64> {
        let a = self.resolve(v, &Locals::new())?;
        match a.val {
            Val::Int(i) => Some(i),
            Val::Bool(b) => Some(b as i64),
            other => {
                let t = self.val_text(&other);
                self.err(a.span, format!("expected a whole number, found `{t}`"));
                None
            }
        }
    }

    fn positive_int(&mut self, v: &ValueNode, what: &str) -> Option<i64> {
        let i = self.int_value(v)?;
        if i <= 0 {
            self.err(v.span, format!("{what} must be positive, found {i}"));
            return None;
        }
        Some(i)
    }

    fn set_value(&mut self, var: &str, span: Span, value: &SetValue) -> Option<Val> {
        match value {
            SetValue::Value(v) => Some(self.resolve(v, &Locals::new())?.val),
            SetValue::Randvar { attrs, table } => self
                .randvar(var, attrs, table.as_deref(), span)
                .map(Val::Rand),
            SetValue::Cvar { attrs } => self.cvar(var, attrs, span).map(Val::Rand),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::parse;

    fn wl(s: &str) -> Result<Workload, Diagnostics> {
        wl_with(s, &[])
    }
    fn wl_with(s: &str, o: &[(&str, &str)]) -> Result<Workload, Diagnostics> {
        let src = SourceFile::new("t.f", s);
        let script = parse(&src).map_err(Diagnostics::from)?;
        build(
            "t",
            &src,
            &script,
            &Overrides(
                o.iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect(),
            ),
        )
    }
    fn first_err(s: &str) -> Diagnostic {
        wl(s).unwrap_err().0.remove(0)
    }

    const BASE: &str = "set $dir=/tmp\nset $n=100\ndefine fileset name=fs,path=$dir,entries=$n,dirwidth=10,size=4k,prealloc\n";

    #[test]
    fn builds_a_simple_workload() {
        let w = wl(&format!("{BASE}define process name=p,instances=2 {{\n thread name=t,instances=3 {{\n  flowop createfile name=c,filesetname=fs,fd=1\n  flowop appendfile name=a,fd=1,iosize=1k\n  flowop closefile name=cl,fd=1\n }}\n}}\nrun 5\n")).unwrap();
        assert_eq!(w.filesets[0].entries, 100);
        assert_eq!(w.filesets[0].prealloc, 100);
        assert_eq!(w.filesets[0].size, Num::Const(4096));
        assert_eq!(w.thread_count(), 6);
        assert_eq!(w.run_seconds, Some(5));
        assert_eq!(
            w.processes[0].threads[0].flowops[1].iosize,
            Num::Const(1024)
        );
        assert_eq!(w.stat_names.len(), 3);
    }

    #[test]
    fn overrides_win_over_set() {
        let w = wl_with(&format!("{BASE}define process name=p {{ thread name=t {{ flowop statfile name=s,filesetname=fs }} }}\n"), &[("n", "7")]).unwrap();
        assert_eq!(w.filesets[0].entries, 7);
        let e = wl_with(BASE, &[("nfile", "7")]).unwrap_err();
        assert!(e.to_string().contains("no variable `$nfile`"), "{e}");
    }

    #[test]
    fn randvars_are_bound_not_resolved() {
        let w = wl(&format!("{BASE}set $sz=randvar(type=gamma,mean=8k,gamma=1500)\ndefine process name=p {{ thread name=t {{ flowop read name=r,filesetname=fs,iosize=$sz }} }}\n")).unwrap();
        assert_eq!(w.processes[0].threads[0].flowops[0].iosize, Num::Rand(0));
        assert_eq!(w.randvars[0].name, "sz");
    }

    #[test]
    fn set_after_define_is_seen() {
        let w = wl("define fileset name=fs,path=$dir,entries=5,dirwidth=4\nset $dir=/mnt/x\ndefine process name=p { thread name=t { flowop statfile name=s,filesetname=fs } }\n").unwrap();
        assert_eq!(w.filesets[0].path, "/mnt/x");
    }

    #[test]
    fn composite_with_fileset_local() {
        let w = wl(&format!("{BASE}define flowop name=rw, $fsn {{\n flowop openfile name=o,filesetname=$fsn,fd=1\n flowop readwholefile name=r,fd=1\n flowop closefile name=c,fd=1\n}}\ndefine flowop name=outer, $x {{ flowop rw name=inner, $fsn=$x }}\ndefine process name=p {{ thread name=t {{ flowop outer name=o1, iters=2, $x=fs }} }}\n")).unwrap();
        let f = &w.processes[0].threads[0].flowops[0];
        assert_eq!(f.kind, FlowopKind::Composite);
        assert_eq!(f.iters, Num::Const(2));
        assert_eq!(f.children[0].children[0].fileset, Some(0));
    }

    #[test]
    fn errors_are_located() {
        let e = first_err(&format!("{BASE}define process name=p {{ thread name=t {{\n  flowop reed name=r,filesetname=fs }} }}\n"));
        assert_eq!(e.line_col(), (5, 10));
        assert!(e.help.as_deref().unwrap().contains("read"));

        let e = first_err(&format!("{BASE}define process name=p {{ thread name=t {{\n flowop read name=r,filesetname=nope }} }}\n"));
        assert!(
            e.message.contains("no fileset named `nope`"),
            "{}",
            e.message
        );
        assert_eq!(e.line_col(), (5, 21));

        let e = first_err(&format!("{BASE}define process name=p {{ thread name=t {{\n flowop read name=r,fd=3,iosize=1k }} }}\n"));
        assert!(e.message.contains("fd=3"), "{}", e.message);

        let e = first_err(&format!("{BASE}define process name=p {{ thread name=t {{\n flowop closefile name=c,fd=1,iosize=4k }} }}\n"));
        assert!(
            e.message.contains("does not take `iosize`"),
            "{}",
            e.message
        );

        let e = first_err(&format!("{BASE}define process name=p {{ thread name=t {{\n flowop read name=r,filesetname=fs,iosize=$undef }} }}\n"));
        assert!(
            e.message.contains("undefined variable `$undef`"),
            "{}",
            e.message
        );

        let e = first_err("define fileset name=fs,path=/tmp,entries=10,dirwidht=3\n");
        assert!(e.help.as_deref().unwrap().contains("dirwidth"));

        let e = first_err(&format!("{BASE}define process name=p {{ thread name=t {{\n flowop sempost name=s,value=1,target=nothing }} }}\n"));
        assert!(e.message.contains("target `nothing`"), "{}", e.message);

        let e = first_err("set $t=randvar(type=tabular,randtable={{50,1,2},{40,3,4}})\n");
        assert!(e.message.contains("add up to 90"), "{}", e.message);

        let e = first_err(&format!(
            "{BASE}define fileset name=fs,path=/tmp,entries=1,dirwidth=2\n"
        ));
        assert!(e.message.contains("already defined"), "{}", e.message);
    }

    #[test]
    fn legacy_forms() {
        let w = wl("set $a=3\nset $b=4k\nset $c = $a * $b\ndefine randvar name=$r, type=gamma, mean=100\ndefine fileset name=fs,path=/tmp,entries=$c,dirwidth=10,cached=false,filesizegamma=1500,size=1k\ndefine process name=p { thread name=t { flowop read name=r,filesetname=fs,iosize=$r } }\n").unwrap();
        assert_eq!(w.filesets[0].entries, 12288);
        assert!(matches!(w.filesets[0].size, Num::Rand(_)));
        assert!(w.warnings.iter().any(|d| d.message.contains("cached")));
        assert!(w
            .warnings
            .iter()
            .any(|d| d.message.contains("define randvar")));
    }

    #[test]
    fn first_run_ends_the_script() {
        let w = wl(&format!("{BASE}define process name=p {{ thread name=t {{ flowop statfile name=s,filesetname=fs }} }}\nrun 3\necho \"never\"\n")).unwrap();
        assert_eq!(w.actions.last(), Some(&Action::Run));
        assert!(w
            .warnings
            .iter()
            .any(|d| d.message.contains("after the first `run`")));
    }

    /// `iosize=0` and `iters=0` are refused where they are written; a read or write with no
    /// iosize at its flowop; whole-file flowops keep 0 as "the whole file".
    #[test]
    fn zero_iosize_and_iters_are_refused_at_their_attribute() {
        let e = first_err(&format!("{BASE}define process name=p {{ thread name=t {{\n flowop read name=r,filesetname=fs,iosize=0 }} }}\n"));
        assert_eq!(e.line_col(), (5, 36), "{e}");
        assert!(e.message.contains("iosize=0"), "{e}");
        let e = first_err(&format!("{BASE}define process name=p {{ thread name=t {{\n flowop statfile name=s,filesetname=fs,iters=0 }} }}\n"));
        assert_eq!(e.line_col(), (5, 40), "{e}");
        assert!(e.message.contains("iters=0"), "{e}");
        let e = first_err(&format!("{BASE}define process name=p {{ thread name=t {{\n flowop write name=w,filesetname=fs }} }}\n"));
        assert!(e.message.contains("needs `iosize=`"), "{e}");
        wl(&format!("{BASE}define process name=p {{ thread name=t {{\n flowop readwholefile name=r,filesetname=fs,iosize=0 }} }}\n")).unwrap();
    }

    /// Legacy products that do not fit in 64 bits are an error at the product, not a
    /// silently saturated number.
    #[test]
    fn an_overflowing_product_is_an_error() {
        let e = first_err("set $a=4294967296\nset $b = $a * $a\n");
        assert_eq!(e.line_col(), (2, 10), "{e}");
        assert!(e.message.contains("overflows"), "{e}");
        let w = wl("set $a=3037000499\nset $b = $a * $a\n").unwrap();
        assert_eq!(
            w.vars.iter().find(|(k, _)| k == "b").unwrap().1,
            "9223372030926249001"
        );
    }
}
