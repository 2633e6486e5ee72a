//! From syntax tree to [`Workload`]: variables, overrides, filesets, processes, threads,
//! flowops (with composite flowops expanded) and every check that can be made before
//! anything touches the disk.

use super::kind::{all_flowop_attrs, FlowopKind, COMMON_ATTRS};
use super::*;
use crate::dist::{self, Dist, RandVar, TableRow};
use crate::lang::ast::{self, Attr, FlowopDecl, LocalVar, SetValue, Stmt, Value, ValueNode};
use crate::lang::lexer::parse_int;
use crate::lang::{Collected, Diagnostic, Diagnostics, SourceFile, Span};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

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
        return Err(Diagnostics(b.errors.into_vec()));
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

fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (distance(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4) && *d < c.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The attributes of `randvar(...)` as written (Filebench's defaults: gamma, shape 1.5).
struct RandvarAttrs {
    kind: String,
    min: f64,
    min_given: bool,
    mean: Option<f64>,
    /// The gamma shape written x1000.
    gamma: f64,
    round: Option<f64>,
    seed: Option<u64>,
    /// False when an attribute was wrong (reported); the randvar is then not made.
    ok: bool,
}

/// The attributes of `define file`.
const FILE_ATTRS: &[&str] = &[
    "name",
    "path",
    "size",
    "filesize",
    "prealloc",
    "paralloc",
    "reuse",
    "trusttree",
    "readonly",
    "writeonly",
    "cached",
    "compress",
    "dedupe",
    "content",
];

/// The attributes of `define fileset`.
const FILESET_ATTRS: &[&str] = &[
    "name",
    "path",
    "entries",
    "size",
    "filesize",
    "dirwidth",
    "dirgamma",
    "dirdepthrv",
    "leafdirs",
    "prealloc",
    "paralloc",
    "reuse",
    "trusttree",
    "readonly",
    "writeonly",
    "cached",
    "filesizegamma",
    "compress",
    "dedupe",
    "content",
];

/// A file (`is_file`) or fileset with every attribute at its default.
fn blank_fileset(is_file: bool, span: Span) -> Fileset {
    Fileset {
        name: String::new(),
        span,
        path: String::new(),
        is_file,
        entries: if is_file { 1 } else { 0 },
        leafdirs: 0,
        dirwidth: if is_file { 10 } else { 0 },
        dirgamma: 1.5,
        widthgamma: 1.5,
        dirdepthrv: None,
        size: Num::Const(1024),
        prealloc: 0,
        paralloc: false,
        reuse: false,
        trusttree: false,
        readonly: false,
        writeonly: false,
        content: crate::content::Content::RANDOM,
    }
}

/// A flowop of `kind` with every attribute at its default.
fn blank_flowop(kind: FlowopKind, span: Span) -> Flowop {
    Flowop {
        name: String::new(),
        kind,
        span,
        stat: 0,
        iters: Num::Const(1),
        fileset: None,
        fd: None,
        srcfd: None,
        opennext: false,
        indexed: None,
        iosize: Num::Const(0),
        workingset: Num::Const(0),
        random: false,
        dsync: false,
        directio: false,
        noreadahead: false,
        mmap: false,
        stride: Num::Const(0),
        sameoffset: false,
        verify: false,
        content: None,
        value: Num::Const(0),
        target: None,
        blocking: false,
        highwater: Num::Const(1),
        children: Vec::new(),
    }
}

/// The field of a flowop's true-or-false attribute `name`, if it is one.
fn flowop_flag<'a>(f: &'a mut Flowop, name: &str) -> Option<&'a mut bool> {
    Some(match name {
        "opennext" => &mut f.opennext,
        "random" => &mut f.random,
        "dsync" => &mut f.dsync,
        "directio" => &mut f.directio,
        "noreadahead" => &mut f.noreadahead,
        "mmap" => &mut f.mmap,
        "sameoffset" => &mut f.sameoffset,
        "verify" => &mut f.verify,
        "blocking" => &mut f.blocking,
        _ => return None,
    })
}

/// The `compress=`, `dedupe=` and `content=` attributes of a fileset or a flowop: `content=`
/// gives both shares; an explicit `compress=`/`dedupe=` wins, in any order.
#[derive(Default)]
struct ContentAttrs {
    compress: Option<u8>,
    dedupe: Option<u8>,
    named: Option<crate::content::Content>,
}

impl ContentAttrs {
    fn read(&mut self, b: &mut Builder, a: &Attr) {
        match a.name.as_str() {
            "compress" => self.compress = b.percent_attr(a),
            "dedupe" => self.dedupe = b.percent_attr(a),
            "content" => self.named = b.content_attr(a),
            _ => unreachable!("only content attributes are read here"),
        }
    }

    fn given(&self) -> bool {
        self.compress.is_some() || self.dedupe.is_some() || self.named.is_some()
    }

    fn resolve(&self) -> crate::content::Content {
        let base = self.named.unwrap_or(crate::content::Content::RANDOM);
        crate::content::Content {
            compress: self.compress.unwrap_or(base.compress),
            dedupe: self.dedupe.unwrap_or(base.dedupe),
        }
    }
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

    /// One warning for every `useism`, at the first, naming the lines of the others.
    fn warn_useism(&mut self, span: Span) {
        let line = self.src.line_col(span.start).0;
        match self.warnings.iter_mut().find(|w| w.message.contains("useism")) {
            Some(w) => {
                w.help = Some(match w.help.take() {
                    None => format!("also on line {line}"),
                    Some(h) => format!("{}, {line}", h.replace("on line ", "on lines ")),
                });
            }
            None => self.warnings.push(Diagnostic::warning(
                &self.src,
                span,
                "`useism` is accepted and has no effect: fsbench runs every thread in one process, so buffers are already shared memory",
            )),
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
                        Val::Int(i) => acc = acc.saturating_mul(i),
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

    fn number_f64(&mut self, a: &Attr) -> Option<f64> {
        let Some(v) = &a.value else {
            self.err(a.name_span, format!("`{}` needs a value", a.name));
            return None;
        };
        match self.resolve(v, &Locals::new())?.val {
            Val::Int(i) => Some(i as f64),
            other => {
                let t = self.val_text(&other);
                self.err(
                    v.span,
                    format!("`{}` takes a whole number, found `{t}`", a.name),
                );
                None
            }
        }
    }

    fn randvar(
        &mut self,
        var: &str,
        attrs: &[Attr],
        table: Option<&[ast::TableRow]>,
        span: Span,
    ) -> Option<usize> {
        let r = self.randvar_attrs(attrs)?;
        let dist = match r.kind.as_str() {
            "tabular" => {
                let Some(rows) = table else {
                    self.errors.push(Diagnostic::error(
                        &self.src,
                        span,
                        "a tabular randvar needs `randtable={{percent, min, max}, ...}`",
                    ));
                    return None;
                };
                Dist::Tabular {
                    rows: self.randtable(rows)?,
                    min: r.min_given.then_some(r.min),
                }
            }
            _ if table.is_some() => {
                self.err(span, "`randtable` belongs to `type=tabular`");
                return None;
            }
            "uniform" => Dist::Uniform {
                min: r.min,
                mean: r.mean.unwrap_or(r.min),
            },
            _ => {
                // Without `mean`, Filebench takes the shape itself as the mean.
                let mean = r.mean.unwrap_or(r.gamma / 1000.0);
                if r.gamma <= 0.0 {
                    self.err(
                        span,
                        "gamma must be positive (written x1000: 1500 means 1.5)",
                    );
                    return None;
                }
                if mean < r.min {
                    self.err(span, "the mean must not be below min");
                    return None;
                }
                Dist::Gamma {
                    min: r.min,
                    mean,
                    shape: r.gamma / 1000.0,
                }
            }
        };
        if !r.ok {
            return None;
        }
        if let Err(e) = dist.validate() {
            self.errors.push(Diagnostic::error(
                &self.src,
                span,
                format!("randvar `${var}`: {e}"),
            ));
            return None;
        }
        let rv = RandVar {
            dist,
            min: None,
            max: None,
            round: r.round,
        };
        self.randvars.push(RandVarDef {
            name: var.to_string(),
            rv,
            seed: r.seed,
        });
        Some(self.randvars.len() - 1)
    }

    /// The attributes of `randvar(...)`; None at the first number that cannot be read.
    fn randvar_attrs(&mut self, attrs: &[Attr]) -> Option<RandvarAttrs> {
        let mut r = RandvarAttrs {
            kind: "gamma".to_string(),
            min: 0.0,
            min_given: false,
            mean: None,
            gamma: 1500.0,
            round: None,
            seed: None,
            ok: true,
        };
        for a in attrs {
            match a.name.as_str() {
                "type" => match a
                    .value
                    .as_ref()
                    .and_then(|v| self.resolve(v, &Locals::new()))
                {
                    Some(AVal {
                        val: Val::Str(s),
                        span,
                    }) => {
                        if matches!(s.as_str(), "uniform" | "gamma" | "tabular") {
                            r.kind = s
                        } else {
                            self.errors.push(Diagnostic::error(&self.src, span, format!("unknown randvar type `{s}`")).with_help("randvar types are uniform, gamma and tabular; for other distributions use cvar(type=...)"));
                            r.ok = false;
                        }
                    }
                    _ => {
                        self.err(a.span(), "`type` needs uniform, gamma or tabular");
                        r.ok = false
                    }
                },
                "min" => {
                    r.min = self.number_f64(a)?;
                    r.min_given = true;
                }
                "mean" => r.mean = Some(self.number_f64(a)?),
                "gamma" => r.gamma = self.number_f64(a)?,
                "round" => r.round = Some(self.number_f64(a)?),
                "seed" => r.seed = Some(self.number_f64(a)? as u64),
                "randsrc" | "name" => {}
                _ => {
                    let d = self.unknown_attr(
                        a,
                        "randvar",
                        &[
                            "type",
                            "min",
                            "mean",
                            "gamma",
                            "round",
                            "seed",
                            "randsrc",
                            "randtable",
                        ],
                    );
                    self.errors.push(d);
                    r.ok = false;
                }
            }
        }
        Some(r)
    }

    /// The rows of a `randtable`, whose percentages add up to 100.
    fn randtable(&mut self, rows: &[ast::TableRow]) -> Option<Vec<TableRow>> {
        let mut out = Vec::new();
        for r in rows {
            let pct = self.int_value(&r.pct)?;
            let lo = self.int_value(&r.lo)?;
            let hi = self.int_value(&r.hi)?;
            if hi < lo || pct < 0 {
                self.err(r.span, "a randtable row is {percent >= 0, min, max >= min}");
                return None;
            }
            out.push(TableRow {
                pct: pct as f64,
                lo: lo as f64,
                hi: hi as f64,
            });
        }
        let total: f64 = out.iter().map(|r| r.pct).sum();
        if (total - 100.0).abs() > 0.5 {
            self.err(
                rows[0].span,
                format!("the randtable's percentages add up to {total}, not 100"),
            );
            return None;
        }
        Some(out)
    }

    fn cvar(&mut self, var: &str, attrs: &[Attr], span: Span) -> Option<usize> {
        let (mut ty, mut params, mut min, mut max, mut round) =
            (None, String::new(), None, None, None);
        for a in attrs {
            match a.name.as_str() {
                "type" => ty = self.attr_str(a).map(|s| (s, a.span())),
                "parameters" => params = self.attr_str(a).unwrap_or_default(),
                "min" => min = Some(self.number_f64(a)?),
                "max" => max = Some(self.number_f64(a)?),
                "round" => round = Some(self.number_f64(a)?),
                _ => {
                    let d = self.unknown_attr(
                        a,
                        "cvar",
                        &["type", "parameters", "min", "max", "round"],
                    );
                    self.errors.push(d);
                    return None;
                }
            }
        }
        let Some((ty, tspan)) = ty else {
            self.errors.push(
                Diagnostic::error(&self.src, span, "a cvar needs `type=`")
                    .with_help(format!("types: {}", dist::cvar_types().join(", "))),
            );
            return None;
        };
        match dist::parse_cvar(&ty, &params) {
            Ok(d) => {
                self.randvars.push(RandVarDef {
                    name: var.to_string(),
                    rv: RandVar {
                        dist: d,
                        min,
                        max,
                        round,
                    },
                    seed: None,
                });
                Some(self.randvars.len() - 1)
            }
            Err(e) => {
                self.errors.push(
                    Diagnostic::error(&self.src, tspan, format!("cvar `${var}`: {e}"))
                        .with_help(format!("types: {}", dist::cvar_types().join(", "))),
                );
                None
            }
        }
    }

    fn unknown_attr(&self, a: &Attr, what: &str, allowed: &[&str]) -> Diagnostic {
        let d = Diagnostic::error(
            &self.src,
            a.name_span,
            format!("unknown attribute `{}` for {what}", a.name),
        );
        match suggest(&a.name, allowed.iter().copied()) {
            Some(s) => d.with_help(format!(
                "did you mean `{s}`? ({what} takes: {})",
                allowed.join(", ")
            )),
            None => d.with_help(format!("{what} takes: {}", allowed.join(", "))),
        }
    }

    fn attr_val(&mut self, a: &Attr, locals: &Locals) -> Option<AVal> {
        match &a.value {
            Some(v) => self.resolve(v, locals),
            None => Some(AVal {
                val: Val::Bool(true),
                span: a.name_span,
            }),
        }
    }

    fn attr_str(&mut self, a: &Attr) -> Option<String> {
        self.attr_str_in(a, &Locals::new())
    }

    fn attr_str_in(&mut self, a: &Attr, locals: &Locals) -> Option<String> {
        let Some(_) = &a.value else {
            self.err(a.name_span, format!("`{}` needs a value", a.name));
            return None;
        };
        match self.attr_val(a, locals)? {
            AVal {
                val: Val::Str(s), ..
            } => Some(s),
            AVal {
                val: Val::Int(i), ..
            } => Some(i.to_string()),
            AVal { val, span } => {
                let t = self.val_text(&val);
                self.err(span, format!("`{}` takes a name, found `{t}`", a.name));
                None
            }
        }
    }

    fn bool_attr(&mut self, a: &Attr, locals: &Locals) -> Option<bool> {
        match self.attr_val(a, locals)? {
            AVal {
                val: Val::Bool(b), ..
            } => Some(b),
            AVal {
                val: Val::Int(i), ..
            } => Some(i != 0),
            AVal { val, span } => {
                let t = self.val_text(&val);
                self.err(span, format!("`{}` is true or false, found `{t}`", a.name));
                None
            }
        }
    }

    /// A numeric attribute; random variables allowed when `rand_ok`.
    fn num_attr_in(&mut self, a: &Attr, rand_ok: bool, locals: &Locals) -> Option<Num> {
        if a.value.is_none() {
            self.err(
                a.name_span,
                format!("`{}` needs a value, e.g. {}=1", a.name, a.name),
            );
            return None;
        }
        match self.attr_val(a, locals)? {
            AVal {
                val: Val::Int(i), ..
            } => Some(Num::Const(i)),
            AVal {
                val: Val::Bool(b), ..
            } => Some(Num::Const(b as i64)),
            AVal {
                val: Val::Rand(i),
                span,
            } => {
                if rand_ok {
                    Some(Num::Rand(i))
                } else {
                    self.err(
                        span,
                        format!("`{}` must be a constant, not a random variable", a.name),
                    );
                    None
                }
            }
            AVal {
                val: Val::Str(s),
                span,
            } => {
                self.err(span, format!("`{}` takes a number, found `{s}`", a.name));
                None
            }
        }
    }

    fn num_attr(&mut self, a: &Attr, rand_ok: bool) -> Option<Num> {
        self.num_attr_in(a, rand_ok, &Locals::new())
    }

    fn const_attr(&mut self, a: &Attr, min: i64) -> Option<i64> {
        match self.num_attr(a, false)? {
            Num::Const(i) if i >= min => Some(i),
            Num::Const(i) => {
                self.err(
                    a.span(),
                    format!("`{}` must be at least {min}, found {i}", a.name),
                );
                None
            }
            Num::Rand(_) => None,
        }
    }

    /// A percentage attribute (0-100), e.g. `compress=50`.
    fn percent_attr(&mut self, a: &Attr) -> Option<u8> {
        match self.num_attr(a, false)? {
            Num::Const(i) if (0..=100).contains(&i) => Some(i as u8),
            Num::Const(i) => {
                self.err(
                    a.span(),
                    format!("`{}` is a percentage (0-100), found {i}", a.name),
                );
                None
            }
            Num::Rand(_) => None,
        }
    }

    /// A `content=` name: random, zero, compressible or dedupable.
    fn content_attr(&mut self, a: &Attr) -> Option<crate::content::Content> {
        let name = self.attr_str(a)?;
        match crate::content::Content::named(&name) {
            Some(c) => Some(c),
            None => {
                let known: Vec<&str> = crate::content::Content::NAMES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect();
                self.err(
                    a.span(),
                    format!(
                        "unknown content `{name}`: it is one of {}",
                        known.join(", ")
                    ),
                );
                None
            }
        }
    }

    /// An `instances=` count: at least 1 and at most u32::MAX (never silently truncated).
    fn count_attr(&mut self, a: &Attr) -> u32 {
        let v = self.const_attr(a, 1).unwrap_or(1);
        match u32::try_from(v) {
            Ok(n) => n,
            Err(_) => {
                self.err(
                    a.span(),
                    format!("`{}` must be at most {}, found {v}", a.name, u32::MAX),
                );
                1
            }
        }
    }

    fn filesets(&mut self) -> Vec<Fileset> {
        let decls = std::mem::take(&mut self.fileset_decls);
        let mut out: Vec<Fileset> = Vec::new();
        for (is_file, attrs, span) in decls {
            let what = if is_file {
                "define file"
            } else {
                "define fileset"
            };
            let mut fs = blank_fileset(is_file, span);
            let dirwidth_given = self.fileset_attrs(&mut fs, &attrs, what);
            if fs.name.is_empty() {
                self.errors.push(Diagnostic::error(
                    &self.src,
                    span,
                    format!("`{what}` needs `name=...`"),
                ));
                continue;
            }
            self.check_fileset(&fs, what, dirwidth_given, &out);
            out.push(fs);
        }
        out
    }

    /// Reads a fileset's attributes into `fs`; true when `dirwidth` was given (or is implied,
    /// for a single file).
    fn fileset_attrs(&mut self, fs: &mut Fileset, attrs: &[Attr], what: &str) -> bool {
        let allowed = if fs.is_file {
            FILE_ATTRS
        } else {
            FILESET_ATTRS
        };
        let mut content = ContentAttrs::default();
        let mut sizegamma = None;
        let mut dirwidth_given = fs.is_file;
        for a in attrs {
            let n = a.name.as_str();
            if !allowed.contains(&n) {
                let d = self.unknown_attr(a, what, allowed);
                self.errors.push(d);
                continue;
            }
            match n {
                "dirwidth" => {
                    dirwidth_given = true;
                    fs.dirwidth = self.const_attr(a, 0).unwrap_or(0) as u64
                }
                "filesizegamma" => sizegamma = self.const_attr(a, 0).map(|g| (g, a.span())),
                "compress" | "dedupe" | "content" => content.read(self, a),
                _ => self.fileset_attr(fs, a),
            }
        }
        fs.content = content.resolve();
        if let Some((g, gspan)) = sizegamma {
            self.legacy_size_gamma(fs, g, gspan);
        }
        dirwidth_given
    }

    /// One attribute of a fileset other than `dirwidth`, `filesizegamma` and its content.
    fn fileset_attr(&mut self, fs: &mut Fileset, a: &Attr) {
        match a.name.as_str() {
            "name" => fs.name = self.attr_str(a).unwrap_or_default(),
            "path" => fs.path = self.attr_str(a).unwrap_or_default(),
            "entries" => fs.entries = self.const_attr(a, 0).unwrap_or(0) as u64,
            "leafdirs" => fs.leafdirs = self.const_attr(a, 0).unwrap_or(0) as u64,
            "dirgamma" => fs.dirgamma = self.const_attr(a, 0).unwrap_or(1500) as f64 / 1000.0,
            "dirdepthrv" => match self.num_attr(a, true) {
                Some(Num::Rand(i)) => fs.dirdepthrv = Some(i),
                Some(Num::Const(_)) => self.err(a.span(), "`dirdepthrv` takes a random variable"),
                None => {}
            },
            "size" | "filesize" => {
                if let Some(s) = self.num_attr(a, true) {
                    if let Num::Const(c) = s {
                        if c < 0 {
                            self.err(a.span(), "a file size cannot be negative");
                        }
                    }
                    fs.size = s;
                }
            }
            "prealloc" => fs.prealloc = self.prealloc_attr(a),
            "paralloc" => fs.paralloc = self.bool_attr(a, &Locals::new()).unwrap_or(false),
            "reuse" => fs.reuse = self.bool_attr(a, &Locals::new()).unwrap_or(false),
            "trusttree" => fs.trusttree = self.bool_attr(a, &Locals::new()).unwrap_or(false),
            "readonly" => fs.readonly = self.bool_attr(a, &Locals::new()).unwrap_or(false),
            "writeonly" => fs.writeonly = self.bool_attr(a, &Locals::new()).unwrap_or(false),
            "cached" => self.warnings.push(
                Diagnostic::warning(
                    &self.src,
                    a.span(),
                    "`cached` is legacy syntax and is ignored",
                )
                .with_help("use `fsbench run --cold` to start each run with a cold page cache"),
            ),
            _ => unreachable!("attribute list checked above"),
        }
    }

    /// `prealloc`: a percentage of the files, or all of them when given alone or as true.
    fn prealloc_attr(&mut self, a: &Attr) -> u32 {
        if a.value.is_none() {
            return 100;
        }
        match self.attr_val(a, &Locals::new()) {
            Some(AVal {
                val: Val::Bool(b), ..
            }) => u32::from(b) * 100,
            Some(AVal {
                val: Val::Int(i),
                span,
            }) => {
                if !(0..=100).contains(&i) {
                    self.err(span, format!("prealloc is a percentage (0-100), found {i}"));
                }
                i.clamp(0, 100) as u32
            }
            Some(AVal { span, .. }) => {
                self.err(span, "prealloc takes a percentage (0-100)");
                0
            }
            None => 0,
        }
    }

    /// Legacy `filesizegamma=g`: a gamma-distributed size around the constant `size`.
    fn legacy_size_gamma(&mut self, fs: &mut Fileset, g: i64, gspan: Span) {
        self.warnings.push(
            Diagnostic::warning(&self.src, gspan, "`filesizegamma` is legacy syntax").with_help(
                "write `size=$v` with `set $v = randvar(type=gamma, mean=..., gamma=...)`",
            ),
        );
        fs.widthgamma = g as f64 / 1000.0;
        if g > 0 {
            if let Num::Const(mean) = fs.size {
                self.randvars.push(RandVarDef {
                    name: format!("{}.size", fs.name),
                    rv: RandVar {
                        dist: Dist::Gamma {
                            min: 0.0,
                            mean: mean as f64,
                            shape: g as f64 / 1000.0,
                        },
                        min: None,
                        max: None,
                        round: None,
                    },
                    seed: None,
                });
                fs.size = Num::Rand(self.randvars.len() - 1);
            }
        }
    }

    /// What a named fileset must satisfy: a plain name, a path, a tree that ends, a
    /// consistent access mode and a name not used before (in `earlier`).
    fn check_fileset(
        &mut self,
        fs: &Fileset,
        what: &str,
        dirwidth_given: bool,
        earlier: &[Fileset],
    ) {
        let span = fs.span;
        if !fs
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            || fs.name.starts_with('.')
        {
            self.errors.push(Diagnostic::error(
                &self.src,
                span,
                format!(
                    "fileset name `{}` must be a plain file name (letters, digits, . _ -)",
                    fs.name
                ),
            ));
        }
        if fs.path.is_empty() {
            self.errors.push(
                Diagnostic::error(&self.src, span, format!("`{what}` needs `path=...`")).with_help(
                    "usually `path=$dir`; fsbench places every fileset in its run directory",
                ),
            );
        }
        if !dirwidth_given {
            self.errors.push(
                Diagnostic::error(
                    &self.src,
                    span,
                    format!("fileset `{}` needs `dirwidth=`", fs.name),
                )
                .with_help("the mean number of entries per directory, e.g. dirwidth=20"),
            );
        } else if fs.dirwidth == 1 && fs.entries + fs.leafdirs > 1 {
            self.errors.push(
                Diagnostic::error(
                    &self.src,
                    span,
                    format!("fileset `{}`: dirwidth=1 makes an endless tree", fs.name),
                )
                .with_help("use dirwidth >= 2"),
            );
        } else if fs.dirwidth == 0 && fs.entries + fs.leafdirs > 0 {
            self.errors.push(Diagnostic::error(
                &self.src,
                span,
                format!("fileset `{}`: dirwidth must be at least 2", fs.name),
            ));
        }
        if fs.readonly && fs.writeonly {
            self.errors.push(Diagnostic::error(
                &self.src,
                span,
                format!(
                    "fileset `{}` cannot be both readonly and writeonly",
                    fs.name
                ),
            ));
        }
        if earlier.iter().any(|o| o.name == fs.name) {
            self.errors.push(Diagnostic::error(
                &self.src,
                span,
                format!("a fileset named `{}` is already defined", fs.name),
            ));
        }
    }

    fn processes(&mut self, filesets: &[Fileset]) -> Vec<Process> {
        let decls = std::mem::take(&mut self.process_decls);
        let mut out: Vec<Process> = Vec::new();
        for (attrs, threads, span) in decls {
            let mut p = Process {
                name: String::new(),
                span,
                instances: 1,
                nice: None,
                threads: Vec::new(),
            };
            for a in &attrs {
                match a.name.as_str() {
                    "name" => p.name = self.attr_str(a).unwrap_or_default(),
                    "instances" => p.instances = self.count_attr(a),
                    "nice" => p.nice = self.const_attr(a, -20).map(|n| n.min(19) as i32),
                    _ => {
                        let d =
                            self.unknown_attr(a, "define process", &["name", "instances", "nice"]);
                        self.errors.push(d)
                    }
                }
            }
            if p.name.is_empty() {
                self.errors.push(Diagnostic::error(
                    &self.src,
                    span,
                    "`define process` needs `name=...`",
                ));
            }
            if threads.is_empty() {
                self.errors.push(Diagnostic::error(
                    &self.src,
                    span,
                    format!("process `{}` has no threads", p.name),
                ));
            }
            for td in &threads {
                let t = self.thread(td, filesets);
                p.threads.push(t);
            }
            if out.iter().any(|o| o.name == p.name) {
                self.errors.push(Diagnostic::error(
                    &self.src,
                    span,
                    format!("a process named `{}` is already defined", p.name),
                ));
            }
            out.push(p);
        }
        out
    }

    /// One `thread` of a process, with its flowops.
    fn thread(&mut self, td: &ast::ThreadDecl, filesets: &[Fileset]) -> Thread {
        let mut t = Thread {
            name: String::new(),
            span: td.span,
            instances: 1,
            memsize: 0,
            useism: false,
            ioprio: None,
            flowops: Vec::new(),
        };
        for a in &td.attrs {
            match a.name.as_str() {
                "name" => t.name = self.attr_str(a).unwrap_or_default(),
                "instances" => t.instances = self.count_attr(a),
                "memsize" => t.memsize = self.const_attr(a, 0).unwrap_or(0) as u64,
                "useism" => {
                    t.useism = self.bool_attr(a, &Locals::new()).unwrap_or(false);
                    if t.useism {
                        self.warn_useism(a.span());
                    }
                }
                "ioprio" => match self.const_attr(a, 0) {
                    Some(v) if v <= 7 => t.ioprio = Some(v as u32),
                    Some(8) => {}
                    Some(v) => self.err(
                        a.span(),
                        format!("ioprio is 0 (highest) to 7 (lowest), found {v}"),
                    ),
                    None => {}
                },
                _ => {
                    let d = self.unknown_attr(
                        a,
                        "thread",
                        &["name", "instances", "memsize", "useism", "ioprio"],
                    );
                    self.errors.push(d)
                }
            }
        }
        if t.name.is_empty() {
            self.errors.push(Diagnostic::error(
                &self.src,
                td.span,
                "`thread` needs `name=...`",
            ));
        }
        if td.flowops.is_empty() {
            self.errors.push(Diagnostic::error(
                &self.src,
                td.span,
                format!("thread `{}` has no flowops", t.name),
            ));
        }
        for fd in &td.flowops {
            if let Some(f) = self.flowop(fd, filesets, &Locals::new(), 0) {
                t.flowops.push(f);
            }
        }
        self.check_fds(&t);
        t
    }

    fn stat_id(&mut self, name: &str, kind: FlowopKind) -> usize {
        if let Some(&i) = self.stat_index.get(name) {
            return i;
        }
        self.stat_names.push((name.to_string(), kind));
        let i = self.stat_names.len() - 1;
        self.stat_index.insert(name.to_string(), i);
        i
    }

    /// The kind of a flowop declaration: a built-in type or a composite defined earlier.
    fn flowop_kind(&mut self, d: &FlowopDecl) -> Option<FlowopKind> {
        match FlowopKind::from_name(&d.kind) {
            Some(k) => Some(k),
            None if self.composites.contains_key(&d.kind) => Some(FlowopKind::Composite),
            None => {
                let mut names: Vec<&str> = FlowopKind::ALL.iter().map(|k| k.name()).collect();
                let comps: Vec<String> = self.composites.keys().cloned().collect();
                names.extend(comps.iter().map(|s| s.as_str()));
                let mut diag = Diagnostic::error(
                    &self.src,
                    d.kind_span,
                    format!("unknown flowop type `{}`", d.kind),
                );
                diag = match suggest(&d.kind, names.iter().copied()) {
                    Some(s) => diag.with_help(format!("did you mean `{s}`?")),
                    None => diag.with_help(
                        "define composite flowops with `define flowop name=...` before using them",
                    ),
                };
                self.errors.push(diag);
                None
            }
        }
    }

    fn flowop(
        &mut self,
        d: &FlowopDecl,
        filesets: &[Fileset],
        locals: &Locals,
        depth: usize,
    ) -> Option<Flowop> {
        let kind = self.flowop_kind(d)?;
        let mut f = blank_flowop(kind, d.span);
        let bad_fileset = self.flowop_attrs(d, &mut f, filesets, locals);
        if f.name.is_empty() {
            self.errors.push(Diagnostic::error(
                &self.src,
                d.span,
                format!("flowop `{}` needs `name=...`", d.kind),
            ));
            return None;
        }
        if bad_fileset {
            // Reported above; checks that depend on the fileset would only add noise.
            return None;
        }
        self.check_flowop_needs(d, &f);
        self.check_flowop_io(d, &f, filesets);
        if kind == FlowopKind::Composite {
            self.expand_composite(d, &mut f, filesets, locals, depth)?;
        } else if !d.locals.is_empty() {
            self.err(
                d.locals[0].span,
                format!("built-in flowop `{}` takes no `$local` variables", d.kind),
            );
        }
        let reported = if self.prefix.is_empty() {
            f.name.clone()
        } else {
            format!("{}.{}", self.prefix.join("."), f.name)
        };
        f.stat = self.stat_id(&reported, kind);
        self.expanded += 1;
        Some(f)
    }

    /// Reads a flowop's attributes into `f`; true when it names a fileset that does not exist.
    fn flowop_attrs(
        &mut self,
        d: &FlowopDecl,
        f: &mut Flowop,
        filesets: &[Fileset],
        locals: &Locals,
    ) -> bool {
        let allowed: Vec<&str> = COMMON_ATTRS.iter().chain(f.kind.attrs()).copied().collect();
        let mut bad_fileset = false;
        let mut content = ContentAttrs::default();
        for a in &d.attrs {
            let n = a.name.as_str();
            if !allowed.contains(&n) {
                let what = format!("flowop `{}`", d.kind);
                let mut diag = self.unknown_attr(a, &what, &allowed);
                if all_flowop_attrs().contains(&n) {
                    diag.message = format!("flowop `{}` does not take `{n}`", d.kind);
                }
                self.errors.push(diag);
                continue;
            }
            match n {
                "filesetname" | "filename" => {
                    if let Some(s) = self.attr_str_in(a, locals) {
                        match self.fileset_index(&s, a, filesets) {
                            Some(i) => f.fileset = Some(i),
                            None => bad_fileset = true,
                        }
                    }
                }
                "compress" | "dedupe" | "content" => content.read(self, a),
                _ => self.flowop_attr(a, f, locals),
            }
        }
        if content.given() {
            // As on filesets: `content=` gives both shares, `compress=`/`dedupe=` win.
            f.content = Some(content.resolve());
        }
        bad_fileset
    }

    /// The position of fileset `name`, or an error (with a suggestion) at `a`.
    fn fileset_index(&mut self, name: &str, a: &Attr, filesets: &[Fileset]) -> Option<usize> {
        if let Some(i) = filesets.iter().position(|fs| fs.name == name) {
            return Some(i);
        }
        let mut diag = Diagnostic::error(&self.src, a.span(), format!("no fileset named `{name}`"));
        diag = match suggest(name, filesets.iter().map(|f| f.name.as_str())) {
            Some(c) => diag.with_help(format!("did you mean `{c}`?")),
            None => diag.with_help(format!(
                "defined filesets: {}",
                filesets
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
        self.errors.push(diag);
        None
    }

    /// One attribute of a flowop other than its fileset and its content.
    fn flowop_attr(&mut self, a: &Attr, f: &mut Flowop, locals: &Locals) {
        let n = a.name.as_str();
        if let Some(flag) = flowop_flag(f, n) {
            *flag = self.bool_attr(a, locals).unwrap_or(false);
            return;
        }
        match n {
            "name" => f.name = self.attr_str_in(a, locals).unwrap_or_default(),
            "iters" => {
                if let Some(v) = self.num_attr_in(a, true, locals) {
                    if let Num::Const(c) = v {
                        if c < 0 {
                            self.err(a.span(), format!("iters cannot be negative, found {c}"));
                        }
                    }
                    f.iters = v
                }
            }
            "fd" | "srcfd" => {
                if let Some(v) = self.num_attr_in(a, false, locals) {
                    match v {
                        Num::Const(i) if (0..128).contains(&i) => {
                            if n == "fd" {
                                f.fd = Some(i as usize)
                            } else {
                                f.srcfd = Some(i as usize)
                            }
                        }
                        _ => self.err(
                            a.span(),
                            format!("`{n}` is a file descriptor slot from 0 to 127"),
                        ),
                    }
                }
            }
            "indexed" => f.indexed = self.num_attr_in(a, true, locals),
            "iosize" => {
                if let Some(v) = self.num_attr_in(a, true, locals) {
                    if let Num::Const(c) = v {
                        if c < 0 {
                            self.err(a.span(), "iosize cannot be negative");
                        }
                    }
                    f.iosize = v
                }
            }
            "workingset" => {
                f.workingset = self.num_attr_in(a, true, locals).unwrap_or(Num::Const(0))
            }
            "stride" => f.stride = self.num_attr_in(a, true, locals).unwrap_or(Num::Const(0)),
            "value" => f.value = self.num_attr_in(a, true, locals).unwrap_or(Num::Const(0)),
            "highwater" => {
                f.highwater = self.num_attr_in(a, false, locals).unwrap_or(Num::Const(1))
            }
            "target" => f.target = self.attr_str_in(a, locals),
            _ => unreachable!("attribute checked against the flowop's list"),
        }
    }

    /// Requirements of a flowop's kind that the attribute list alone cannot express.
    fn check_flowop_needs(&mut self, d: &FlowopDecl, f: &Flowop) {
        use FlowopKind::*;
        let kind = f.kind;
        let named_fileset = d
            .attrs
            .iter()
            .any(|a| a.name == "filesetname" || a.name == "filename");
        match kind {
            _ if named_fileset && f.fileset.is_none() => {} // already reported
            CreateFile | OpenFile | FsyncSet | MakeDir | RemoveDir | ListDir
                if f.fileset.is_none() =>
            {
                self.err(
                    d.span,
                    format!("flowop `{}` ({}) needs `filesetname=`", f.name, kind.name()),
                )
            }
            DeleteFile | StatFile if f.fileset.is_none() && f.fd == Some(0) => self.err(
                d.span,
                format!(
                    "flowop `{}` ({}) with fd=0 and no fileset: slot 0 is only used for opening; name a fileset or an fd from 1 to 127",
                    f.name,
                    kind.name()
                ),
            ),
            Read | Write | AppendFile | AppendFileRand | ReadWholeFile | WriteWholeFile
            | AioWrite | DeleteFile | StatFile
                if f.fileset.is_none() && f.fd.is_none() && !f.opennext =>
            {
                self.err(
                    d.span,
                    format!(
                        "flowop `{}` ({}) needs `filesetname=` or `fd=`",
                        f.name,
                        kind.name()
                    ),
                )
            }
            Wakeup | SemPost if f.target.is_none() => self.err(
                d.span,
                format!(
                    "flowop `{}` ({}) needs `target=` naming the flowop to wake",
                    f.name,
                    kind.name()
                ),
            ),
            Hog | Delay | Think | FinishOnCount | FinishOnBytes
                if d.attrs.iter().all(|a| a.name != "value") =>
            {
                self.err(
                    d.span,
                    format!("flowop `{}` ({}) needs `value=`", f.name, kind.name()),
                )
            }
            _ => {}
        }
    }

    /// Combinations of I/O modes that cannot work: `directio` sizes, `opennext` slots,
    /// `mmap` with `directio`.
    fn check_flowop_io(&mut self, d: &FlowopDecl, f: &Flowop, filesets: &[Fileset]) {
        if let (true, Num::Const(n)) = (f.directio, f.iosize) {
            if n > 0 && n & 511 != 0 {
                self.err(
                    d.span,
                    format!(
                        "flowop `{}`: `directio` needs an iosize that is a multiple of the device's logical block size (512 or 4096 bytes), not {n}",
                        f.name
                    ),
                );
            } else if n > 0
                && n & 4095 != 0
                && !self.warnings.iter().any(|w| w.message.contains("O_DIRECT"))
            {
                self.warnings.push(Diagnostic::warning(
                    &self.src,
                    d.span,
                    format!(
                        "flowop `{}`: iosize {n} with `directio`: O_DIRECT on a device with 4096-byte sectors refuses it (EINVAL); 512-byte-sector devices accept it",
                        f.name
                    ),
                ));
            }
        }
        if f.opennext {
            if let Some(fs) = f.fileset.map(|i| &filesets[i]) {
                if fs.entries > 64 {
                    self.err(
                        d.span,
                        format!(
                            "flowop `{}`: opennext keeps one fd slot per file, at most 64, but fileset `{}` has {} entries",
                            f.name, fs.name, fs.entries
                        ),
                    );
                }
            }
        }
        if f.directio && f.kind == FlowopKind::AppendFileRand {
            self.err(
                d.span,
                format!("flowop `{}`: appendfilerand writes random sizes at the file's end, which O_DIRECT refuses; drop `directio`", f.name),
            );
        }
        if f.mmap && f.directio {
            self.err(
                d.span,
                format!(
                    "flowop `{}`: `mmap` and `directio` exclude each other",
                    f.name
                ),
            );
        }
    }

    /// Expands a composite call into `f.children`; None when it nests or expands too far.
    fn expand_composite(
        &mut self,
        d: &FlowopDecl,
        f: &mut Flowop,
        filesets: &[Fileset],
        locals: &Locals,
        depth: usize,
    ) -> Option<()> {
        if !self.composite_fits(d, depth) {
            return None;
        }
        let (params, body, _) = self.composites.get(&d.kind).cloned().unwrap();
        let inner = self.composite_locals(d, &params, locals);
        self.prefix.push(f.name.clone());
        for b in &body {
            if let Some(c) = self.flowop(b, filesets, &inner, depth + 1) {
                f.children.push(c);
            }
        }
        self.prefix.pop();
        Some(())
    }

    /// Whether a composite call stays within [`MAX_NESTING`] and [`MAX_EXPANDED`]; the
    /// error when it does not.
    fn composite_fits(&mut self, d: &FlowopDecl, depth: usize) -> bool {
        if depth > MAX_NESTING {
            // Caught at the outermost call by `too_deep`; kept so expansion can never
            // recurse without end.
            self.err(
                d.span,
                format!(
                    "composite flowop `{}` nests more than {MAX_NESTING} levels (does it call itself?)",
                    d.kind
                ),
            );
            return false;
        }
        if depth == 0 && self.too_deep(&d.kind, &mut HashMap::new(), &mut Vec::new()) {
            // Said once, at the call, before anything is expanded: found at every
            // innermost call instead, it was said 2^17 times for 17 levels of two calls.
            self.err(
                d.span,
                format!(
                    "composite flowop `{}` nests composite flowops more than {MAX_NESTING} levels deep (does one call itself?)",
                    d.kind
                ),
            );
            return false;
        }
        if depth == 0 {
            // Count what the whole call will expand to before expanding any of it: a few
            // lines of nested composites can describe billions of flowops.
            let n = self.expansion_size(&d.kind, &mut HashMap::new(), 0);
            if self.expanded.saturating_add(n) > MAX_EXPANDED {
                self.err(
                    d.span,
                    format!(
                        "composite flowop `{}` expands to {n} flowops ({} already in the workload); at most {MAX_EXPANDED} are allowed",
                        d.kind, self.expanded
                    ),
                );
                return false;
            }
        }
        true
    }

    /// The `$local=value` arguments of a composite call, checked against its parameters.
    fn composite_locals(&mut self, d: &FlowopDecl, params: &[LocalVar], locals: &Locals) -> Locals {
        let mut inner = Locals::new();
        for lv in &d.locals {
            if !params.iter().any(|p| p.name == lv.name) {
                self.errors.push(
                    Diagnostic::error(
                        &self.src,
                        lv.span,
                        format!(
                            "composite flowop `{}` has no parameter `${}`",
                            d.kind, lv.name
                        ),
                    )
                    .with_help(format!(
                        "its parameters: {}",
                        params
                            .iter()
                            .map(|p| format!("${}", p.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                );
                continue;
            }
            let Some(v) = &lv.value else {
                self.err(lv.span, format!("pass a value: `${}=...`", lv.name));
                continue;
            };
            if let Some(av) = self.resolve(v, locals) {
                inner.insert(lv.name.clone(), (av.val, lv.span));
            }
        }
        inner
    }

    /// Whether a call of composite `name` at the top of a thread reaches a composite call
    /// nested deeper than [`MAX_NESTING`] (a composite that calls itself does). `path` holds
    /// the composites being looked into; `fine` those known not to nest too deep below
    /// them, with their height (levels of composites, themselves included).
    fn too_deep(
        &self,
        name: &str,
        fine: &mut HashMap<String, usize>,
        path: &mut Vec<String>,
    ) -> bool {
        self.height(name, fine, path).is_none()
    }

    /// Levels of composite flowops a call of `name` spans (itself included), or None when
    /// a call sits deeper than [`MAX_NESTING`] below the top (see `too_deep`).
    fn height(
        &self,
        name: &str,
        fine: &mut HashMap<String, usize>,
        path: &mut Vec<String>,
    ) -> Option<usize> {
        if let Some(&h) = fine.get(name) {
            return (path.len() + h <= MAX_NESTING + 1).then_some(h);
        }
        if path.len() > MAX_NESTING || path.iter().any(|p| p == name) {
            return None;
        }
        let Some((_, body, _)) = self.composites.get(name) else {
            return Some(0);
        };
        path.push(name.to_string());
        let mut h = 1;
        for b in body {
            if self.composites.contains_key(&b.kind) {
                let Some(sub) = self.height(&b.kind, fine, path) else {
                    path.pop();
                    return None;
                };
                h = h.max(sub + 1);
            }
        }
        path.pop();
        fine.insert(name.to_string(), h);
        Some(h)
    }

    /// How many flowops a call of composite `name` becomes, itself included (saturating;
    /// nesting past the depth limit counts as one, the expansion reports it).
    fn expansion_size(&self, name: &str, memo: &mut HashMap<String, u64>, depth: usize) -> u64 {
        if let Some(&n) = memo.get(name) {
            return n;
        }
        let Some((_, body, _)) = self.composites.get(name) else {
            return 1;
        };
        if depth > 17 {
            return 1;
        }
        let mut n: u64 = 1;
        for b in body {
            let sub = if self.composites.contains_key(&b.kind) {
                self.expansion_size(&b.kind, memo, depth + 1)
            } else {
                1
            };
            n = n.saturating_add(sub);
        }
        memo.insert(name.to_string(), n);
        n
    }

    /// Every fd a flowop uses without a fileset must be opened by some flowop of the thread.
    fn check_fds(&mut self, t: &Thread) {
        fn walk<'a>(f: &'a Flowop, out: &mut Vec<&'a Flowop>) {
            out.push(f);
            for c in &f.children {
                walk(c, out);
            }
        }
        let mut all = Vec::new();
        for f in &t.flowops {
            walk(f, &mut all);
        }
        let mut opened = HashSet::new();
        let mut rotating = false;
        for f in &all {
            if f.opennext {
                rotating = true;
            }
            // Only flowops that can open a file fill a slot: create and open, and the reads and
            // writes that open their file implicitly when the slot is empty.
            let opens = matches!(f.kind, FlowopKind::CreateFile | FlowopKind::OpenFile)
                || (f.fileset.is_some()
                    && matches!(
                        f.kind,
                        FlowopKind::Read
                            | FlowopKind::Write
                            | FlowopKind::AppendFile
                            | FlowopKind::AppendFileRand
                            | FlowopKind::ReadWholeFile
                            | FlowopKind::WriteWholeFile
                            | FlowopKind::AioWrite
                    ));
            if opens {
                opened.insert(f.fd.unwrap_or(0));
            }
        }
        use FlowopKind::*;
        for f in &all {
            // Flowops that work on a slot without naming a fileset use `fd=` or slot 0.
            let slot_user = matches!(
                f.kind,
                Read | Write
                    | AppendFile
                    | AppendFileRand
                    | ReadWholeFile
                    | WriteWholeFile
                    | AioWrite
                    | CloseFile
                    | Fsync
            );
            let fd_use = if slot_user && f.fileset.is_none() && !f.opennext {
                Some(f.fd.unwrap_or(0))
            } else {
                None
            };
            for (what, fd) in [("fd", fd_use), ("srcfd", f.srcfd)] {
                let Some(fd) = fd else { continue };
                if !opened.contains(&fd) && !rotating {
                    self.errors.push(
                        Diagnostic::error(&self.src, f.span, format!("flowop `{}` uses {what}={fd}, which no flowop in thread `{}` opens", f.name, t.name))
                            .with_help(format!("open it first, e.g. `flowop openfile name=open{fd},filesetname=...,fd={fd}`")),
                    );
                }
            }
        }
    }

    fn check_targets(&mut self, processes: &[Process]) {
        let mut by_name: HashMap<&str, FlowopKind> = HashMap::new();
        let mut all = Vec::new();
        fn walk<'a>(f: &'a Flowop, out: &mut Vec<&'a Flowop>) {
            out.push(f);
            for c in &f.children {
                walk(c, out);
            }
        }
        for p in processes {
            for t in &p.threads {
                for f in &t.flowops {
                    walk(f, &mut all);
                }
            }
        }
        for f in &all {
            by_name.insert(&f.name, f.kind);
        }
        let mut errs = Vec::new();
        for f in &all {
            let Some(target) = &f.target else { continue };
            let want = match f.kind {
                FlowopKind::SemPost => Some(FlowopKind::SemBlock),
                FlowopKind::Wakeup => Some(FlowopKind::Block),
                _ => None,
            };
            match by_name.get(target.as_str()) {
                None => errs.push(Diagnostic::error(&self.src, f.span, format!("flowop `{}`: target `{target}` is not a flowop of this workload", f.name))),
                Some(k) if want.is_some_and(|w| w != *k) => errs.push(Diagnostic::error(&self.src, f.span, format!("flowop `{}` ({}) targets `{target}`, a {} flowop; it must target a {} flowop", f.name, f.kind.name(), k.name(), want.unwrap().name()))),
                _ => {}
            }
        }
        self.errors.extend(errs);
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
}
