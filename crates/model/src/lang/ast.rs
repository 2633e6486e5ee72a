//! The syntax tree of a workload, exactly as written, with spans. Meaning is given in `model`.

use super::source::Span;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Bool(bool),
    /// An unquoted word (a name, a path, a type).
    Word(String),
    /// A `"quoted"` string, not yet interpolated.
    Quoted(String),
    /// A `$variable` reference.
    Var(String),
    /// Legacy product `$a * $b * 10` (Filebench 1.4 syntax, still in shipped workloads).
    Product(Vec<ValueNode>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ValueNode {
    pub value: Value,
    pub span: Span,
}

/// `key` or `key=value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Attr {
    pub name: String,
    pub name_span: Span,
    pub value: Option<ValueNode>,
}

impl Attr {
    pub fn span(&self) -> Span {
        match &self.value {
            Some(v) => self.name_span.to(v.span),
            None => self.name_span,
        }
    }
}

/// A local variable of a composite flowop: `$name` in a definition (a parameter),
/// `$name=value` in an invocation (an argument).
#[derive(Debug, Clone, PartialEq)]
pub struct LocalVar {
    pub name: String,
    pub span: Span,
    pub value: Option<ValueNode>,
}

/// `flowop TYPE attr, attr, $local=v ...`
#[derive(Debug, Clone, PartialEq)]
pub struct FlowopDecl {
    pub kind: String,
    pub kind_span: Span,
    pub attrs: Vec<Attr>,
    pub locals: Vec<LocalVar>,
    pub span: Span,
}

/// `thread attrs { flowops }`
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadDecl {
    pub attrs: Vec<Attr>,
    pub flowops: Vec<FlowopDecl>,
    pub span: Span,
}

/// One row `{pct, lo, hi}` of a `randtable`.
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    pub pct: ValueNode,
    pub lo: ValueNode,
    pub hi: ValueNode,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    Value(ValueNode),
    /// `randvar(type=..., min=..., ..., randtable={{..}})`
    Randvar {
        attrs: Vec<Attr>,
        table: Option<Vec<TableRow>>,
    },
    /// `cvar(type=..., parameters=..., min=, max=, round=)`
    Cvar {
        attrs: Vec<Attr>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    /// `define fileset` (file = false) or `define file` (file = true).
    DefineFileset {
        file: bool,
        attrs: Vec<Attr>,
    },
    DefineProcess {
        attrs: Vec<Attr>,
        threads: Vec<ThreadDecl>,
    },
    /// Composite flowop: `define flowop name=X, $param {...}`
    DefineFlowop {
        attrs: Vec<Attr>,
        params: Vec<LocalVar>,
        flowops: Vec<FlowopDecl>,
    },
    /// Legacy `define randvar name=$v, type=..., randtable = {{..}}`.
    DefineRandvar {
        attrs: Vec<Attr>,
        table: Option<Vec<TableRow>>,
    },
    Set {
        var: String,
        var_span: Span,
        value: SetValue,
    },
    /// `set mode quit timeout|alldone|firstdone`
    SetModeQuit(String),
    /// `set mode nousestats`
    SetModeNoUseStats,
    CreateFiles,
    Run(Option<ValueNode>),
    Psrun {
        period: Option<ValueNode>,
        runtime: Option<ValueNode>,
    },
    Eventgen(Vec<Attr>),
    Echo(String),
    System(String),
    Sleep(ValueNode),
    List(Option<String>),
    Debug(ValueNode),
    Version,
    Quit,
    EnableLathist,
    EnableMulti(Vec<Attr>),
    DoMultiSync(Vec<Attr>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub stmt: Stmt,
    /// From the command keyword to the end of the statement.
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    pub statements: Vec<Statement>,
}
