//! Random variables: `randvar(...)`, `cvar(...)` and their tables.

use super::{AVal, Builder, Locals, Val};
use crate::dist::{self, Dist, RandVar, TableRow};
use crate::lang::ast::{self, Attr};
use crate::lang::{Diagnostic, Span};
use crate::model::RandVarDef;

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

impl Builder {
    pub(super) fn randvar(
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

    pub(super) fn cvar(&mut self, var: &str, attrs: &[Attr], span: Span) -> Option<usize> {
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
}
