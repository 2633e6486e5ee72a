//! Flowops: attributes, the requirements of each kind, composite expansion.

use super::attrs::ContentAttrs;
use super::{suggest, Builder, Locals, MAX_EXPANDED, MAX_NESTING};
use crate::lang::ast::{Attr, FlowopDecl, LocalVar};
use crate::lang::{Diagnostic, Span};
use crate::model::kind::{all_flowop_attrs, FileUse, FlowopDef, FlowopKind, COMMON_ATTRS};
use crate::model::{Fileset, Flowop, Num};
use std::collections::HashMap;

/// A flowop of `kind` with every attribute at its default.
pub(super) fn blank_flowop(kind: FlowopKind, span: Span) -> Flowop {
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
        stream: None,
    }
}

/// A `stream` flowop (a fio job) at `span`, its stream to be set by the caller.
pub fn stream_flowop(span: Span) -> Flowop {
    blank_flowop(FlowopKind::Stream, span)
}

/// The field of a flowop's true-or-false attribute `name`, if it is one.
pub(super) fn flowop_flag<'a>(f: &'a mut Flowop, name: &str) -> Option<&'a mut bool> {
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

/// What `f` (declared as `d`) lacks of what its row requires, in the order it is asked for.
fn missing(d: &FlowopDecl, f: &Flowop) -> Option<&'static str> {
    let def = f.kind.def();
    let given = |name: &str| d.attrs.iter().any(|a| a.name == name);
    let no_fileset = f.fileset.is_none();
    if def.file.needs_fileset() && no_fileset {
        Some("needs `filesetname=`")
    } else if def.file == FileUse::Entry && no_fileset && f.fd == Some(0) {
        Some("with fd=0 and no fileset: slot 0 is only used for opening; name a fileset or an fd from 1 to 127")
    } else if def.file.needs_file_or_fd() && no_fileset && f.fd.is_none() && !f.opennext {
        Some("needs `filesetname=` or `fd=`")
    } else if def.needs_iosize && !given("iosize") {
        Some("needs `iosize=`: without it every I/O is of 0 bytes and fails")
    } else if def.wakes.is_some() && f.target.is_none() {
        Some("needs `target=` naming the flowop to wake")
    } else if def.needs_value && !given("value") {
        Some("needs `value=`")
    } else {
        None
    }
}

impl Builder {
    pub(super) fn stat_id(&mut self, name: &str, kind: FlowopKind) -> usize {
        if let Some(&i) = self.stat_index.get(name) {
            return i;
        }
        self.stat_names.push((name.to_string(), kind));
        let i = self.stat_names.len() - 1;
        self.stat_index.insert(name.to_string(), i);
        i
    }

    /// The kind of a flowop declaration: a built-in type or a composite defined earlier.
    pub(super) fn flowop_kind(&mut self, d: &FlowopDecl) -> Option<FlowopKind> {
        match FlowopKind::from_name(&d.kind) {
            Some(k) => Some(k),
            None if self.composites.contains_key(&d.kind) => Some(FlowopKind::Composite),
            None => {
                let mut names: Vec<&str> = FlowopDef::named().map(|d| d.name).collect();
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

    pub(super) fn flowop(
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
        self.check_flowop_io(d, &f);
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
    pub(super) fn flowop_attrs(
        &mut self,
        d: &FlowopDecl,
        f: &mut Flowop,
        filesets: &[Fileset],
        locals: &Locals,
    ) -> bool {
        let allowed: Vec<&str> = (COMMON_ATTRS.iter().copied())
            .chain(f.kind.def().attrs())
            .collect();
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
    pub(super) fn fileset_index(
        &mut self,
        name: &str,
        a: &Attr,
        filesets: &[Fileset],
    ) -> Option<usize> {
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
    pub(super) fn flowop_attr(&mut self, a: &Attr, f: &mut Flowop, locals: &Locals) {
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
                        } else if c == 0 {
                            self.err(
                                a.span(),
                                "iters=0: the flowop would never run, and a thread of such flowops spins doing nothing; give 1 or more, or remove the flowop",
                            );
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
                        } else if c == 0 && !f.kind.def().whole_file {
                            self.err(
                                a.span(),
                                format!(
                                    "iosize=0: a {} of 0 bytes fails every time it runs; give the bytes per I/O, e.g. iosize=8k",
                                    f.kind.name()
                                ),
                            );
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

    /// What a flowop's row of the table says it must be given: the first thing missing.
    pub(super) fn check_flowop_needs(&mut self, d: &FlowopDecl, f: &Flowop) {
        let named_fileset = d
            .attrs
            .iter()
            .any(|a| a.name == "filesetname" || a.name == "filename");
        if named_fileset && f.fileset.is_none() {
            return; // already reported
        }
        if let Some(why) = missing(d, f) {
            let msg = format!("flowop `{}` ({}) {why}", f.name, f.kind.name());
            self.err(d.span, msg);
        }
    }

    /// Combinations of I/O modes that cannot work: `directio` sizes, `mmap` with `directio`.
    pub(super) fn check_flowop_io(&mut self, d: &FlowopDecl, f: &Flowop) {
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
        if let Some(why) = f.kind.def().check.and_then(|check| check(f)) {
            self.err(d.span, why);
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
    pub(super) fn expand_composite(
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
    pub(super) fn composite_fits(&mut self, d: &FlowopDecl, depth: usize) -> bool {
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
    pub(super) fn composite_locals(
        &mut self,
        d: &FlowopDecl,
        params: &[LocalVar],
        locals: &Locals,
    ) -> Locals {
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
    pub(super) fn too_deep(
        &self,
        name: &str,
        fine: &mut HashMap<String, usize>,
        path: &mut Vec<String>,
    ) -> bool {
        self.height(name, fine, path).is_none()
    }

    /// Levels of composite flowops a call of `name` spans (itself included), or None when
    /// a call sits deeper than [`MAX_NESTING`] below the top (see `too_deep`).
    pub(super) fn height(
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
    pub(super) fn expansion_size(
        &self,
        name: &str,
        memo: &mut HashMap<String, u64>,
        depth: usize,
    ) -> u64 {
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
}
