//! Reading attribute values: names, numbers, flags, percentages, content.

use super::{suggest, AVal, Builder, Locals, Val};
use crate::lang::ast::Attr;
use crate::lang::Diagnostic;
use crate::model::Num;

/// The `compress=`, `dedupe=` and `content=` attributes of a fileset or a flowop: `content=`
/// gives both shares; an explicit `compress=`/`dedupe=` wins, in any order.
#[derive(Default)]
pub(super) struct ContentAttrs {
    compress: Option<u8>,
    dedupe: Option<u8>,
    named: Option<crate::content::Content>,
}

impl ContentAttrs {
    pub(super) fn read(&mut self, b: &mut Builder, a: &Attr) {
        match a.name.as_str() {
            "compress" => self.compress = b.percent_attr(a),
            "dedupe" => self.dedupe = b.percent_attr(a),
            "content" => self.named = b.content_attr(a),
            _ => unreachable!("only content attributes are read here"),
        }
    }

    pub(super) fn given(&self) -> bool {
        self.compress.is_some() || self.dedupe.is_some() || self.named.is_some()
    }

    pub(super) fn resolve(&self) -> crate::content::Content {
        let base = self.named.unwrap_or(crate::content::Content::RANDOM);
        crate::content::Content {
            compress: self.compress.unwrap_or(base.compress),
            dedupe: self.dedupe.unwrap_or(base.dedupe),
        }
    }
}

impl Builder {
    pub(super) fn number_f64(&mut self, a: &Attr) -> Option<f64> {
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

    pub(super) fn unknown_attr(&self, a: &Attr, what: &str, allowed: &[&str]) -> Diagnostic {
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

    pub(super) fn attr_val(&mut self, a: &Attr, locals: &Locals) -> Option<AVal> {
        match &a.value {
            Some(v) => self.resolve(v, locals),
            None => Some(AVal {
                val: Val::Bool(true),
                span: a.name_span,
            }),
        }
    }

    pub(super) fn attr_str(&mut self, a: &Attr) -> Option<String> {
        self.attr_str_in(a, &Locals::new())
    }

    pub(super) fn attr_str_in(&mut self, a: &Attr, locals: &Locals) -> Option<String> {
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

    pub(super) fn bool_attr(&mut self, a: &Attr, locals: &Locals) -> Option<bool> {
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
    pub(super) fn num_attr_in(&mut self, a: &Attr, rand_ok: bool, locals: &Locals) -> Option<Num> {
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

    pub(super) fn num_attr(&mut self, a: &Attr, rand_ok: bool) -> Option<Num> {
        self.num_attr_in(a, rand_ok, &Locals::new())
    }

    pub(super) fn const_attr(&mut self, a: &Attr, min: i64) -> Option<i64> {
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
    pub(super) fn percent_attr(&mut self, a: &Attr) -> Option<u8> {
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
    pub(super) fn content_attr(&mut self, a: &Attr) -> Option<crate::content::Content> {
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
    pub(super) fn count_attr(&mut self, a: &Attr) -> u32 {
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
}
