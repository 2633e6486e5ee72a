//! `define process` and its threads, and the checks that span a thread or the workload
//! (file descriptor slots, wake-up targets).

use super::{Builder, Locals};
use crate::lang::{ast, Diagnostic, Span};
use crate::model::kind::FlowopKind;
use crate::model::{Fileset, Flowop, Process, Thread};
use std::collections::{HashMap, HashSet};

impl Builder {
    /// One warning for every `useism`, at the first, naming the lines of the others.
    pub(super) fn warn_useism(&mut self, span: Span) {
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

    pub(super) fn processes(&mut self, filesets: &[Fileset]) -> Vec<Process> {
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
    pub(super) fn thread(&mut self, td: &ast::ThreadDecl, filesets: &[Fileset]) -> Thread {
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

    /// Every fd a flowop uses without a fileset must be opened by some flowop of the thread.
    pub(super) fn check_fds(&mut self, t: &Thread) {
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
            if f.kind.def().file.opens_slot(f.fileset.is_some()) {
                opened.insert(f.fd.unwrap_or(0));
            }
        }
        for f in &all {
            // Flowops that work on a slot without naming a fileset use `fd=` or slot 0.
            let slot_user = f.kind.def().file.uses_slot();
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

    pub(super) fn check_targets(&mut self, processes: &[Process]) {
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
            let want = f.kind.def().wakes;
            match by_name.get(target.as_str()) {
                None => errs.push(Diagnostic::error(&self.src, f.span, format!("flowop `{}`: target `{target}` is not a flowop of this workload", f.name))),
                Some(k) if want.is_some_and(|w| w != *k) => errs.push(Diagnostic::error(&self.src, f.span, format!("flowop `{}` ({}) targets `{target}`, a {} flowop; it must target a {} flowop", f.name, f.kind.name(), k.name(), want.unwrap().name()))),
                _ => {}
            }
        }
        self.errors.extend(errs);
    }
}
