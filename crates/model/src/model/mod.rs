//! The workload model: what the engine runs. Built from the syntax tree plus `-s` overrides,
//! with every variable resolved to a constant or bound to a random variable that is re-sampled
//! at each use, every name checked, every fd traced to a flowop that opens it.

pub mod build;
pub mod explain;
mod kind;
pub mod nfs;
pub mod stream;

pub use kind::{Cost, FileUse, FlowopDef, FlowopKind, IoClass, FLOWOPS};

use crate::dist::{RandVar, Rng};
use crate::lang::{Diagnostic, SourceFile, Span};
use std::sync::Arc;

/// A numeric attribute: a constant or a random variable sampled at each use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Const(i64),
    /// Index into [`Workload::randvars`].
    Rand(usize),
}

impl Num {
    /// The value now: constants as they are, random variables sampled from the caller's
    /// generator for that variable (one generator per random variable per thread).
    #[inline]
    pub fn get(&self, randvars: &[RandVarDef], rngs: &mut [Rng]) -> i64 {
        match *self {
            Num::Const(v) => v,
            Num::Rand(i) => randvars[i].rv.sample(&mut rngs[i]).round() as i64,
        }
    }

    pub fn is_zero(&self) -> bool {
        *self == Num::Const(0)
    }

    /// The expected value (the mean for random variables).
    pub fn mean(&self, randvars: &[RandVarDef]) -> f64 {
        match *self {
            Num::Const(v) => v as f64,
            Num::Rand(i) => randvars[i].rv.mean(),
        }
    }

    pub fn describe(&self, randvars: &[RandVarDef]) -> String {
        match *self {
            Num::Const(v) => v.to_string(),
            Num::Rand(i) => format!("${} ~ {}", randvars[i].name, randvars[i].rv.describe()),
        }
    }
}

/// A named random variable (`set $v = randvar(...)` or `cvar(...)`).
#[derive(Debug, Clone)]
pub struct RandVarDef {
    pub name: String,
    pub rv: RandVar,
    /// `seed=` when the workload fixes one; otherwise the run seed is used.
    pub seed: Option<u64>,
}

/// How a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QuitMode {
    /// After the run time.
    Timeout,
    /// When every thread has finished (finishoncount/finishonbytes), or the run time.
    AllDone,
    /// When the first thread finishes, or the run time.
    FirstDone,
}

impl QuitMode {
    /// What the mode means, for the line that announces a run ("AllDone mode: ..."), so a
    /// reader need not know Filebench's `set mode quit`.
    pub fn explain(self) -> &'static str {
        match self {
            QuitMode::Timeout => "Timeout mode: the run ends after that time, or when a finish flowop is done",
            QuitMode::AllDone => "AllDone mode: the run ends when every thread has done its work (finishoncount/finishonbytes), or after that time",
            QuitMode::FirstDone => "FirstDone mode: the run ends when the first thread has done its work, or after that time",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Fileset {
    pub name: String,
    pub span: Span,
    /// The `path=` the workload gave (informational: fsbench lays filesets out in its run directory).
    pub path: String,
    /// `define file`: one entry.
    pub is_file: bool,
    pub entries: u64,
    pub leafdirs: u64,
    pub dirwidth: u64,
    /// Gamma shape for depth and width (dirgamma/1000); 0 means deterministic.
    pub dirgamma: f64,
    pub dirdepthrv: Option<usize>,
    /// File size, sampled once per file at layout.
    pub size: Num,
    /// Percentage of files created at layout (0-100).
    pub prealloc: u32,
    pub paralloc: bool,
    pub reuse: bool,
    pub trusttree: bool,
    pub readonly: bool,
    pub writeonly: bool,
    /// What the laid-out data looks like (`compress=`, `dedupe=`, `content=`).
    pub content: crate::content::Content,
}

#[derive(Debug, Clone)]
pub struct Process {
    pub name: String,
    pub span: Span,
    pub instances: u32,
    pub nice: Option<i32>,
    pub threads: Vec<Thread>,
}

#[derive(Debug, Clone)]
pub struct Thread {
    pub name: String,
    pub span: Span,
    pub instances: u32,
    pub memsize: u64,
    pub useism: bool,
    pub ioprio: Option<u32>,
    pub flowops: Vec<Flowop>,
}

/// One flowop with typed, resolved attributes.
#[derive(Debug, Clone)]
pub struct Flowop {
    pub name: String,
    pub kind: FlowopKind,
    pub span: Span,
    /// Index into [`Workload::stat_names`]: flowops of the same name share statistics,
    /// across threads and instances, as in Filebench.
    pub stat: usize,
    pub iters: Num,
    pub fileset: Option<usize>,
    pub fd: Option<usize>,
    pub srcfd: Option<usize>,
    pub opennext: bool,
    pub indexed: Option<Num>,
    pub iosize: Num,
    pub workingset: Num,
    pub random: bool,
    pub dsync: bool,
    pub directio: bool,
    pub noreadahead: bool,
    pub mmap: bool,
    /// Extension: sequential reads and writes advance by this many bytes per operation
    /// (e.g. twice the iosize reads every other chunk); 0 means by what was transferred.
    pub stride: Num,
    /// Extension: read or write at the offset of the slot's previous read or write (a
    /// read-modify-write of the same record).
    pub sameoffset: bool,
    /// Extension: check the blocks this read returns (see `--verify`).
    pub verify: bool,
    /// Extension: what this write's data looks like (`compress=`, `dedupe=`, `content=`),
    /// overriding its fileset's.
    pub content: Option<crate::content::Content>,
    pub value: Num,
    pub target: Option<String>,
    pub blocking: bool,
    pub highwater: Num,
    /// The body of a composite flowop, with its local variables bound.
    pub children: Vec<Flowop>,
    /// What a `stream` flowop (a fio job) does.
    pub stream: Option<Arc<stream::Stream>>,
}

/// Things the script does in order, up to and including the first `run`.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Echo(String),
    /// `system "..."`: run by the engine only when allowed.
    System(String),
    Sleep(u64),
    CreateFiles,
    Version,
    ListFilesets,
    ListFlowops,
    Run,
}

impl Workload {
    /// Whether the run can end before its time by itself: a finish flowop (`finishoncount`,
    /// `finishonbytes`), or a fio job that is not `time_based`. A warm-up inside such a run
    /// would use up what the measured window is to count.
    pub fn ends_by_itself(&self) -> bool {
        fn any(fs: &[Flowop]) -> bool {
            fs.iter().any(|f| {
                f.kind.def().finishes
                    || f.stream.as_ref().is_some_and(|s| !s.time_based)
                    || any(&f.children)
            })
        }
        self.processes
            .iter()
            .any(|p| p.threads.iter().any(|t| any(&t.flowops)))
    }

    /// Whether a read flowop asks to verify (the `verify` attribute), composites included.
    pub fn has_verify_flowop(&self) -> bool {
        fn any(fs: &[Flowop]) -> bool {
            fs.iter().any(|f| f.verify || any(&f.children))
        }
        self.processes
            .iter()
            .any(|p| p.threads.iter().any(|t| any(&t.flowops)))
    }
}

#[derive(Debug, Clone)]
pub struct Workload {
    pub name: String,
    pub source: Arc<SourceFile>,
    /// Every variable with its final value as text (constants) or distribution.
    pub vars: Vec<(String, String)>,
    pub randvars: Vec<RandVarDef>,
    pub filesets: Vec<Fileset>,
    pub processes: Vec<Process>,
    pub actions: Vec<Action>,
    pub mode: QuitMode,
    /// `run N`; `None` when the script has no `run` or `run` without a number.
    pub run_seconds: Option<u64>,
    /// Whether the script has a `run` or `psrun` at all.
    pub has_run: bool,
    /// `psrun [period [runtime]]`: periodic reports every `period` seconds.
    pub psrun_period: Option<i64>,
    pub eventgen_rate: Option<Num>,
    pub lathist: bool,
    pub nousestats: bool,
    /// Distinct flowop names, with their type, in order of first appearance.
    pub stat_names: Vec<(String, FlowopKind)>,
    pub warnings: Vec<Diagnostic>,
    /// A fio job file's `nfs_url` (every job `ioengine=nfs`): the run is on that export, as
    /// with `--nfs`.
    pub nfs_url: Option<String>,
}

impl Workload {
    pub fn fileset_index(&self, name: &str) -> Option<usize> {
        self.filesets.iter().position(|f| f.name == name)
    }

    /// Total OS threads the run will start.
    pub fn thread_count(&self) -> u64 {
        self.processes
            .iter()
            .map(|p| p.instances as u64 * p.threads.iter().map(|t| t.instances as u64).sum::<u64>())
            .sum()
    }

    /// Every flowop, composites' children included, depth first.
    pub fn all_flowops(&self) -> Vec<&Flowop> {
        fn walk<'a>(f: &'a Flowop, out: &mut Vec<&'a Flowop>) {
            out.push(f);
            for c in &f.children {
                walk(c, out);
            }
        }
        let mut out = Vec::new();
        for p in &self.processes {
            for t in &p.threads {
                for f in &t.flowops {
                    walk(f, &mut out);
                }
            }
        }
        out
    }

    /// Whether the run reads nothing that was on disk before it started: no flowop that
    /// reads a file or looks one up (`read`, `readwholefile`, `openfile`, `statfile`,
    /// `listdir`, `deletefile`, `removedir`) names a fileset whose files are laid out
    /// beforehand (`prealloc`, `reuse`), and no fio job (which reads the files fio lays
    /// out). What such a run reads it made itself while running (or it only writes), so a
    /// cold cache changes little of what it measures: `fsbench check` and an experiment's
    /// plan say so.
    pub fn creates_all_it_reads(&self) -> bool {
        self.all_flowops().iter().all(|f| {
            let laid_out = f
                .fileset
                .and_then(|i| self.filesets.get(i))
                .is_some_and(|fs| fs.prealloc > 0 || fs.reuse);
            f.stream.is_none() && !(f.kind.def().reads_before && laid_out)
        })
    }

    /// Flowops the engine cannot run yet, with their location: `check` and `run` refuse these.
    pub fn unsupported(&self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for f in self.all_flowops() {
            if let Some(why) = f.kind.def().unsupported {
                out.push(
                    Diagnostic::error(&self.source, f.span, format!("flowop `{}`: {why}", f.name))
                        .with_help(
                            "fsbench refuses to run a workload with flowops it would have to skip",
                        ),
                );
            }
        }
        out
    }
}
