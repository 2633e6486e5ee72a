//! `define file` and `define fileset`: attributes, defaults and checks.

use super::attrs::ContentAttrs;
use super::{AVal, Builder, Locals, Val};
use crate::dist::{Dist, RandVar};
use crate::lang::ast::Attr;
use crate::lang::{Diagnostic, Span};
use crate::model::{Fileset, Num, RandVarDef};

/// The attributes of `define file`.
pub(super) const FILE_ATTRS: &[&str] = &[
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
pub(super) const FILESET_ATTRS: &[&str] = &[
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
pub(super) fn blank_fileset(is_file: bool, span: Span) -> Fileset {
    Fileset {
        name: String::new(),
        span,
        path: String::new(),
        is_file,
        entries: if is_file { 1 } else { 0 },
        leafdirs: 0,
        dirwidth: if is_file { 10 } else { 0 },
        dirgamma: 1.5,
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

impl Builder {
    pub(super) fn filesets(&mut self) -> Vec<Fileset> {
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
    pub(super) fn fileset_attrs(&mut self, fs: &mut Fileset, attrs: &[Attr], what: &str) -> bool {
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
    pub(super) fn fileset_attr(&mut self, fs: &mut Fileset, a: &Attr) {
        match a.name.as_str() {
            "name" => {
                fs.name = self.attr_str(a).unwrap_or_default();
                self.check_fileset_name(&fs.name, a);
            }
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
    pub(super) fn prealloc_attr(&mut self, a: &Attr) -> u32 {
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
    pub(super) fn legacy_size_gamma(&mut self, fs: &mut Fileset, g: i64, gspan: Span) {
        self.warnings.push(
            Diagnostic::warning(&self.src, gspan, "`filesizegamma` is legacy syntax").with_help(
                "write `size=$v` with `set $v = randvar(type=gamma, mean=..., gamma=...)`",
            ),
        );
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

    /// A fileset's name is a directory's name in the run directory: a plain name, never
    /// `..`, a path or one of fsbench's own (hidden) names. Refused at the value's place.
    fn check_fileset_name(&mut self, name: &str, a: &Attr) {
        let plain = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            && !name.starts_with('.');
        if !plain {
            let at = a.value.as_ref().map_or(a.name_span, |v| v.span);
            self.errors.push(
                Diagnostic::error(
                    &self.src,
                    at,
                    format!("fileset name `{name}` must be a plain file name (letters, digits, . _ -, not starting with .)"),
                )
                .with_help("fsbench makes each fileset a directory of that name in its run directory; `path=` says nothing of where"),
            );
        }
    }

    /// What a named fileset must satisfy: a plain name, a path, a tree that ends, a
    /// consistent access mode and a name not used before (in `earlier`).
    pub(super) fn check_fileset(
        &mut self,
        fs: &Fileset,
        what: &str,
        dirwidth_given: bool,
        earlier: &[Fileset],
    ) {
        let span = fs.span;
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
}
