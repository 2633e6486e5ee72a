//! References to factor levels: the experiment's `baseline` and the `[[exclude]]` tables.

use super::check::{scalar, Ctx};
use super::{Measurement, PlanError, Value, REMOTE_FACTORS, SETTING_FACTORS};
use std::collections::BTreeMap;
use toml::Spanned;

/// Every factor of the plan and its levels.
pub(super) struct Levels<'a> {
    pub(super) measurements: &'a [Measurement],
    pub(super) target: &'a [String],
    pub(super) cache: &'a [String],
    pub(super) settings: &'a [(String, Vec<String>)],
}

/// A plan's `compare` table: factor → { level = the level it is compared with }.
pub(super) type CompareTable =
    BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, Spanned<toml::Value>>>;

impl Levels<'_> {
    pub(super) fn of(&self, k: &str) -> Option<Vec<String>> {
        match k {
            "measurement" => Some(self.measurements.iter().map(|m| m.name.clone()).collect()),
            "target" => Some(self.target.to_vec()),
            "cache" => Some(self.cache.to_vec()),
            k if SETTING_FACTORS.contains(&k)
                || REMOTE_FACTORS.contains(&k)
                || (k == "memory" && self.settings.iter().any(|(f, _)| f == k)) =>
            {
                self.settings
                    .iter()
                    .find(|(f, _)| f == k)
                    .map(|(_, l)| l.clone())
            }
            _ => {
                let mut all: Vec<String> = Vec::new();
                let mut found = false;
                for m in self.measurements {
                    if let Some((_, l)) = m.factors.iter().find(|(f, _)| f == k) {
                        found = true;
                        all.extend(l.iter().cloned());
                    }
                }
                found.then_some(all)
            }
        }
    }

    fn check(
        &self,
        ctx: &Ctx,
        k: &Spanned<String>,
        v: &Spanned<toml::Value>,
        what: &str,
    ) -> Result<(String, String), PlanError> {
        let levels = self.of(k.get_ref()).ok_or_else(|| {
            ctx.err(
                k.span(),
                format!("{what}: `{}` is not a factor of this plan", k.get_ref()),
            )
        })?;
        let s = scalar(v.get_ref())
            .ok_or_else(|| ctx.err(v.span(), "expected a level (number, string or boolean)"))?;
        if !levels.contains(&s) {
            return Err(ctx.err(
                v.span(),
                format!(
                    "{what}: {s:?} is not a level of `{}` (levels: {})",
                    k.get_ref(),
                    levels.join(", ")
                ),
            ));
        }
        Ok((k.get_ref().clone(), s))
    }

    /// The `compare` table: per factor, `{ level = the level it is compared with }`, each
    /// level checked and none paired with itself.
    /// The compare table with only the pairs whose two levels this scale has (at `--quick`,
    /// a pair may name targets only the full scale runs).
    pub(super) fn present_only(&self, table: &CompareTable) -> CompareTable {
        table
            .iter()
            .map(|(factor, pairs)| {
                let levels = self.of(factor.get_ref()).unwrap_or_default();
                let has = |v: &str| levels.iter().any(|l| l == v);
                let kept = pairs
                    .iter()
                    .filter(|(l, w)| has(l.get_ref()) && w.get_ref().as_str().is_some_and(has))
                    .map(|(l, w)| (l.clone(), w.clone()))
                    .collect();
                (factor.clone(), kept)
            })
            .filter(|(_, p): &(_, BTreeMap<_, _>)| !p.is_empty())
            .collect()
    }

    pub(super) fn pairs(
        &self,
        ctx: &Ctx,
        table: &CompareTable,
    ) -> Result<super::ComparePairs, PlanError> {
        let mut out = Vec::new();
        for (factor, pairs) in table {
            let levels = self.of(factor.get_ref()).ok_or_else(|| {
                ctx.err(
                    factor.span(),
                    format!(
                        "compare: `{}` is not a factor of this plan",
                        factor.get_ref()
                    ),
                )
            })?;
            if pairs.is_empty() {
                return Err(ctx.err(
                    factor.span(),
                    format!(
                        "compare: `{}` pairs no levels (write {{ LEVEL = OTHER_LEVEL }})",
                        factor.get_ref()
                    ),
                ));
            }
            let mut these = Vec::new();
            for (level, with) in pairs {
                if !levels.contains(level.get_ref()) {
                    return Err(ctx.err(
                        level.span(),
                        format!(
                            "compare: {:?} is not a level of `{}` (levels: {})",
                            level.get_ref(),
                            factor.get_ref(),
                            levels.join(", ")
                        ),
                    ));
                }
                let (_, with_level) = self.check(ctx, factor, with, "compare")?;
                if &with_level == level.get_ref() {
                    return Err(ctx.err(
                        with.span(),
                        format!("compare: {with_level:?} is compared with itself"),
                    ));
                }
                these.push((level.get_ref().clone(), with_level));
            }
            out.push((factor.get_ref().clone(), these));
        }
        Ok(out)
    }

    /// An `[[exclude]]` table: each key a level, or a list of levels any of which matches
    /// (one exclusion per combination), every one checked; with `skip_absent` (a quick scale
    /// whose full scale has them) levels this scale lacks are left out instead.
    pub(super) fn exclusions(
        &self,
        ctx: &Ctx,
        table: &BTreeMap<Spanned<String>, Spanned<toml::Value>>,
        skip_absent: bool,
    ) -> Result<Vec<Vec<(String, Value)>>, PlanError> {
        let mut out: Vec<Vec<(String, Value)>> = vec![Vec::new()];
        for (k, v) in table {
            let levels: Vec<Spanned<toml::Value>> = match v.get_ref() {
                toml::Value::Array(a) if a.is_empty() => {
                    return Err(ctx.err(v.span(), "exclude: an empty list matches no level"))
                }
                // Elements of an inline array keep no places of their own: the list's.
                toml::Value::Array(a) => a
                    .iter()
                    .map(|x| Spanned::new(v.span(), x.clone()))
                    .collect(),
                _ => vec![v.clone()],
            };
            let mut checked = Vec::new();
            for l in &levels {
                match self.check(ctx, k, l, "exclude") {
                    Ok(kv) => checked.push(kv),
                    Err(_) if skip_absent => {}
                    Err(e) => return Err(e),
                }
            }
            out = out
                .into_iter()
                .flat_map(|c| {
                    checked.iter().map(move |kv| {
                        let mut c = c.clone();
                        c.push(kv.clone());
                        c
                    })
                })
                .collect();
        }
        Ok(out)
    }

    /// A table of factor levels (`baseline` or one `[[exclude]]`), each checked.
    pub(super) fn cell(
        &self,
        ctx: &Ctx,
        table: &BTreeMap<Spanned<String>, Spanned<toml::Value>>,
        what: &str,
    ) -> Result<Vec<(String, Value)>, PlanError> {
        table
            .iter()
            .map(|(k, v)| self.check(ctx, k, v, what))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::plan::parse;
    use std::path::Path;

    const PLAN: &str = r#"[experiment]
name = "x"
repetitions = 1

[[target]]
name = "a"
kind = "dir"
path = "/tmp"

[[target]]
name = "b"
kind = "dir"
path = "/tmp"

[factors]
target = ["a", "b"]

[[measurement]]
name = "p"
kind = "postmark"
factors = { instances = [1, 2, 4] }

[[measurement]]
name = "f"
kind = "find"

[[exclude]]
target = "b"
measurement = ["p", "f"]
"#;

    /// A list in an exclusion matches any of its levels: one exclusion per combination.
    #[test]
    fn an_exclusion_may_list_levels() {
        let p = parse(Path::new("x.toml"), PLAN, false).unwrap();
        assert_eq!(p.excludes.len(), 2);
        assert!(p
            .excludes
            .iter()
            .all(|e| e.contains(&("target".into(), "b".into()))));
        let p = parse(
            Path::new("x.toml"),
            &PLAN.replace("target = \"b\"", "instances = [2, 4]"),
            false,
        )
        .unwrap();
        assert_eq!(p.excludes.len(), 4);
        let e = parse(
            Path::new("x.toml"),
            &PLAN.replace("[\"p\", \"f\"]", "[\"p\", \"q\"]"),
            false,
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("x.toml:29:15: exclude: \"q\" is not a level of `measurement`"),
            "{e}"
        );
        let e = parse(
            Path::new("x.toml"),
            &PLAN.replace("[\"p\", \"f\"]", "[]"),
            false,
        )
        .unwrap_err()
        .0;
        assert!(e.contains("an empty list matches no level"), "{e}");
        // A quick scale without some listed levels keeps the exclusions of the others; one
        // whose key has none of its levels there excludes nothing.
        let quick = PLAN.replace(
            "repetitions = 1\n",
            "repetitions = 1\n[quick]\nfactors = { target = [\"a\"] }\n",
        ) + "\n[[exclude]]\nmeasurement = \"p\"\ntarget = [\"a\", \"b\"]\n";
        let q = parse(Path::new("x.toml"), &quick, true).unwrap();
        assert_eq!(
            q.excludes,
            [[
                ("measurement".to_string(), "p".to_string()),
                ("target".into(), "a".into())
            ]]
        );
    }
}
