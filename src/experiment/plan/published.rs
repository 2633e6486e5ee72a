//! `[[published]]`: the paper's figures a plan reproduces, each with the rule that judges
//! ours against it, written before the run. A figure is a ratio of two cells (one pair of
//! levels, as `compare` names one) or one cell's figure; `fsbench results` computes the
//! verdict from the stored runs (docs/experiments.md, "Published figures").

use super::check::{scalar, Ctx};
use super::levels::Levels;
use super::schema::{PublishedOnly, RawPublished};
use super::{Adaptive, Measurement, PlanError};
use std::collections::BTreeMap;
use std::path::Path;
use toml::Spanned;

/// The most rounds a cell carrying a published figure runs when its runs take under a
/// second, whatever the plan's maximum: short runs are the noisiest, and ten of them cost
/// less than one long one.
pub const SUB_SECOND_MAX: u32 = 10;

/// The 95% half-width, as a share of the mean, that a published figure's cells repeat
/// until (a tighter `ci` of an adaptive plan applies instead).
pub const PUBLISHED_CI: f64 = 0.05;

/// The sign of a change the paper claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    Higher,
    Lower,
}

/// How ours is judged against the paper's figure (docs/experiments.md has the verdicts).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rule {
    /// The ratio moves the way the paper's did, significantly.
    Direction(Dir),
    /// Ours within this factor of the paper's ratio or value.
    Within(f64),
    /// Our whole 95% interval inside [lo, hi].
    Range(f64, f64),
}

impl Rule {
    pub fn text(&self) -> String {
        match self {
            Rule::Direction(Dir::Higher) => "direction: higher".into(),
            Rule::Direction(Dir::Lower) => "direction: lower".into(),
            Rule::Within(f) => format!("within {}×", num(*f)),
            Rule::Range(lo, hi) => format!("range [{}, {}]", num(*lo), num(*hi)),
        }
    }
}

/// A number as the plan would write it (no trailing zeros).
pub fn num(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// The pair of levels a published ratio compares: the cell at `level` ÷ the cell at
/// `against` that differs from it only in `factor`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Pair {
    pub factor: String,
    pub level: String,
    pub against: String,
}

/// One `[[published]]` entry, checked.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Published {
    /// The entry's place in the plan (`file:line:col`).
    pub place: String,
    /// Its line, naming it in the summary.
    pub line: usize,
    pub claim: String,
    pub measurement: String,
    pub figure: String,
    /// A ratio of two cells, or `None` for one cell's figure.
    pub compare: Option<Pair>,
    /// The other factors' levels it is at; factors not named take every level.
    pub at: Vec<(String, String)>,
    /// The paper's ratio or value, when it gives one.
    pub published: Option<f64>,
    pub rule: Rule,
    /// Why it cannot be measured yet, if so.
    pub pending: Option<String>,
}

impl Published {
    /// Whether a cell with these factor levels is one this entry judges (the numerator of
    /// its ratio, or its cell).
    pub fn selects(&self, f: &BTreeMap<String, String>) -> bool {
        f.get("measurement") == Some(&self.measurement)
            && self.at.iter().all(|(k, v)| f.get(k) == Some(v))
            && self
                .compare
                .as_ref()
                .is_none_or(|p| f.get(&p.factor) == Some(&p.level))
    }

    /// The factor levels of the cell a selected cell is compared with (`None` for one
    /// cell's figure).
    pub fn baseline_of(&self, f: &BTreeMap<String, String>) -> Option<BTreeMap<String, String>> {
        let p = self.compare.as_ref()?;
        let mut b = f.clone();
        b.insert(p.factor.clone(), p.against.clone());
        Some(b)
    }

    /// The paper's figure and the rule, e.g. "1.8 (within 1.5×)" or "range [0.99, 1.01]".
    pub fn published_text(&self) -> String {
        match (self.published, self.rule) {
            (Some(v), r) => format!("{} ({})", num(v), r.text()),
            (None, r) => r.text(),
        }
    }

    /// "ovl-ext4 ÷ ext4", or "" for a cell's figure.
    pub fn ratio_text(&self) -> String {
        self.compare
            .as_ref()
            .map_or(String::new(), |p| format!("{} ÷ {}", p.level, p.against))
    }
}

/// The rounds of the cells carrying a published figure: the plan's count (an adaptive
/// plan's `min`), then more until the figure's 95% half-width is within [`PUBLISHED_CI`]
/// (or the plan's tighter `ci`) of its mean, up to the plan's maximum (its count when it
/// fixes one); cells whose runs take under a second up to at least [`SUB_SECOND_MAX`]
/// ([`max_rounds`]).
pub fn rounds(repetitions: u32, adaptive: Option<Adaptive>) -> Adaptive {
    match adaptive {
        Some(a) => Adaptive {
            ci: a.ci.min(PUBLISHED_CI),
            ..a
        },
        None => Adaptive {
            min: repetitions,
            max: repetitions,
            ci: PUBLISHED_CI,
        },
    }
}

/// The most rounds of a published figure's cell whose measured runs take `seconds`.
pub fn max_rounds(a: &Adaptive, seconds: Option<f64>) -> u32 {
    if seconds.is_some_and(|s| s < 1.0) {
        a.max.max(SUB_SECOND_MAX)
    } else {
        a.max
    }
}

/// The entries of a stored plan's text, read as they were checked when it ran (levels are
/// not checked again: the plan's targets need not exist now).
pub fn stored(text: &str) -> Vec<Published> {
    let Ok(raw) = toml::from_str::<PublishedOnly>(text) else {
        return Vec::new();
    };
    let ctx = Ctx {
        file: Path::new("plan"),
        text,
    };
    raw.published
        .iter()
        .filter_map(|e| shape(&ctx, e).ok())
        .collect()
}

/// Every entry, checked. Under --quick an entry may name a level only the full scale has
/// (`full_scale_ok` says whether the full-scale plan is valid): it judges nothing there.
pub(super) fn entries(
    ctx: &Ctx,
    raw: &[Spanned<RawPublished>],
    levels: &Levels,
    quick: bool,
    full_scale_ok: &mut dyn FnMut() -> bool,
) -> Result<Vec<Published>, PlanError> {
    let mut out = Vec::new();
    for e in raw {
        let p = shape(ctx, e)?;
        if p.pending.is_none() {
            match check_levels(ctx, e.get_ref(), &p, levels) {
                Ok(()) => {}
                Err(_) if quick && full_scale_ok() => {}
                Err(err) => return Err(err),
            }
        }
        out.push(p);
    }
    Ok(out)
}

/// An entry's own consistency: one rule, the paper's figure where the rule needs it, a
/// ratio only for a comparison and a value only for a cell.
fn shape(ctx: &Ctx, e: &Spanned<RawPublished>) -> Result<Published, PlanError> {
    let r = e.get_ref();
    let compare = pair(ctx, e)?;
    let measurement = match (&r.measurement, &compare) {
        (Some(m), Some(p)) if p.factor == "measurement" && *m.get_ref() != p.level => {
            return Err(ctx.err(
                m.span(),
                format!(
                    "published: measurement {:?} is not the compared level {:?} (leave `measurement` out when comparing measurements)",
                    m.get_ref(),
                    p.level
                ),
            ))
        }
        (Some(m), _) => m.get_ref().clone(),
        (None, Some(p)) if p.factor == "measurement" => p.level.clone(),
        (None, _) => {
            return Err(ctx.err(
                e.span(),
                "published: name the `measurement` whose figure this is",
            ))
        }
    };
    let at = at_levels(ctx, r, compare.as_ref())?;
    let published = figure_value(ctx, e, compare.is_some())?;
    let rule = rule(ctx, e, published, compare.is_some())?;
    let (line, col) = super::line_col(ctx.text, e.span().start);
    Ok(Published {
        place: format!("{}:{line}:{col}", ctx.file.display()),
        line,
        claim: r
            .claim
            .as_ref()
            .map(|c| c.get_ref().clone())
            .unwrap_or_default(),
        measurement,
        figure: r.figure.get_ref().clone(),
        compare,
        at,
        published,
        rule,
        pending: r.pending.as_ref().map(|p| p.get_ref().clone()),
    })
}

/// The entry's `compare`: one factor, one pair of levels.
fn pair(ctx: &Ctx, e: &Spanned<RawPublished>) -> Result<Option<Pair>, PlanError> {
    let Some(c) = &e.get_ref().compare else {
        return Ok(None);
    };
    let one = "published: compare names one pair, { FACTOR = { LEVEL = OTHER_LEVEL } } (an entry per comparison)";
    let mut factors = c.get_ref().iter();
    let (Some((factor, pairs)), None) = (factors.next(), factors.next()) else {
        return Err(ctx.err(c.span(), one));
    };
    let mut pairs = pairs.iter();
    let (Some((level, against)), None) = (pairs.next(), pairs.next()) else {
        return Err(ctx.err(factor.span(), one));
    };
    let against_text = scalar(against.get_ref()).ok_or_else(|| {
        ctx.err(
            against.span(),
            "published: expected a level (number, string or boolean)",
        )
    })?;
    if &against_text == level.get_ref() {
        return Err(ctx.err(
            against.span(),
            format!("published: {against_text:?} is compared with itself"),
        ));
    }
    Ok(Some(Pair {
        factor: factor.get_ref().clone(),
        level: level.get_ref().clone(),
        against: against_text,
    }))
}

/// The entry's `at` levels, as text; neither the measurement nor the compared factor.
fn at_levels(
    ctx: &Ctx,
    r: &RawPublished,
    compare: Option<&Pair>,
) -> Result<Vec<(String, String)>, PlanError> {
    let mut out = Vec::new();
    for (k, v) in &r.at {
        if k.get_ref() == "measurement" {
            return Err(ctx.err(
                k.span(),
                "published: name the measurement with `measurement`, not in `at`",
            ));
        }
        if compare.is_some_and(|p| &p.factor == k.get_ref()) {
            return Err(ctx.err(
                k.span(),
                format!(
                    "published: `{}` is the compared factor; its levels are in `compare`",
                    k.get_ref()
                ),
            ));
        }
        let s = scalar(v.get_ref()).ok_or_else(|| {
            ctx.err(
                v.span(),
                "published: expected a level (number, string or boolean)",
            )
        })?;
        out.push((k.get_ref().clone(), s));
    }
    Ok(out)
}

/// The paper's ratio (with `compare`) or value (without), checked to be a number a rule can
/// use.
fn figure_value(
    ctx: &Ctx,
    e: &Spanned<RawPublished>,
    is_ratio: bool,
) -> Result<Option<f64>, PlanError> {
    let r = e.get_ref();
    match (&r.ratio, &r.value, is_ratio) {
        (Some(v), _, false) => Err(ctx.err(
            v.span(),
            "published: `ratio` is for a comparison (with `compare`); one cell's figure takes `value`",
        )),
        (_, Some(v), true) => Err(ctx.err(
            v.span(),
            "published: `value` is one cell's figure; a comparison (with `compare`) takes `ratio`",
        )),
        (Some(v), _, true) if !(v.get_ref().is_finite() && *v.get_ref() > 0.0) => Err(ctx.err(
            v.span(),
            format!("published: ratio = {}: expected a positive number (level ÷ the other level)", v.get_ref()),
        )),
        (_, Some(v), false) if !v.get_ref().is_finite() => {
            Err(ctx.err(v.span(), "published: value: expected a finite number"))
        }
        (Some(v), _, true) | (_, Some(v), false) => Ok(Some(*v.get_ref())),
        _ => Ok(None),
    }
}

/// The entry's one rule, consistent with the paper's figure.
fn rule(
    ctx: &Ctx,
    e: &Spanned<RawPublished>,
    published: Option<f64>,
    is_ratio: bool,
) -> Result<Rule, PlanError> {
    let r = e.get_ref();
    let mut given: Vec<std::ops::Range<usize>> = [
        r.direction.as_ref().map(|d| d.span()),
        r.within.as_ref().map(|w| w.span()),
        r.range.as_ref().map(|x| x.span()),
    ]
    .into_iter()
    .flatten()
    .collect();
    given.sort_by_key(|s| s.start);
    if given.len() != 1 {
        let (span, what) = match given.get(1) {
            Some(second) => (second.clone(), "one rule only"),
            None => (e.span(), "give one rule"),
        };
        return Err(ctx.err(
            span,
            format!("published: {what}: direction = \"higher\" or \"lower\", within = FACTOR, or range = [LOW, HIGH]"),
        ));
    }
    if let Some(d) = &r.direction {
        return direction(ctx, d, published, is_ratio);
    }
    if let Some(w) = &r.within {
        return within(ctx, w, published, is_ratio);
    }
    let range = r.range.as_ref().expect("one rule given");
    let (lo, hi) = match range.get_ref().as_slice() {
        [lo, hi]
            if lo.get_ref().is_finite()
                && hi.get_ref().is_finite()
                && lo.get_ref() < hi.get_ref() =>
        {
            (*lo.get_ref(), *hi.get_ref())
        }
        _ => {
            return Err(ctx.err(
                range.span(),
                "published: range: expected [LOW, HIGH], two numbers with LOW below HIGH",
            ))
        }
    };
    if let Some(v) = published.filter(|v| !(lo..=hi).contains(v)) {
        return Err(ctx.err(
            range.span(),
            format!(
                "published: the paper's figure {} lies outside its own range [{}, {}]",
                num(v),
                num(lo),
                num(hi)
            ),
        ));
    }
    Ok(Rule::Range(lo, hi))
}

fn direction(
    ctx: &Ctx,
    d: &Spanned<String>,
    published: Option<f64>,
    is_ratio: bool,
) -> Result<Rule, PlanError> {
    if !is_ratio {
        return Err(ctx.err(
            d.span(),
            "published: a direction is a change between two cells; one cell's figure takes within or range",
        ));
    }
    let dir = match d.get_ref().as_str() {
        "higher" => Dir::Higher,
        "lower" => Dir::Lower,
        x => {
            return Err(ctx.err(
                d.span(),
                format!("published: direction {x:?}: expected \"higher\" or \"lower\" (the level's figure against the other's)"),
            ))
        }
    };
    if let Some(v) = published.filter(|v| (*v > 1.0) != (dir == Dir::Higher) || *v == 1.0) {
        return Err(ctx.err(
            d.span(),
            format!(
                "published: direction {:?} does not match the ratio {}",
                d.get_ref(),
                num(v)
            ),
        ));
    }
    Ok(Rule::Direction(dir))
}

fn within(
    ctx: &Ctx,
    w: &Spanned<f64>,
    published: Option<f64>,
    is_ratio: bool,
) -> Result<Rule, PlanError> {
    let f = *w.get_ref();
    if !(f.is_finite() && f > 1.0) {
        return Err(ctx.err(
            w.span(),
            format!("published: within = {f}: expected a factor above 1 (1.5: ours from ⅔ to 1.5 times the paper's)"),
        ));
    }
    match published {
        None => Err(ctx.err(
            w.span(),
            format!("published: within needs the paper's {}", if is_ratio { "`ratio`" } else { "`value`" }),
        )),
        Some(v) if is_ratio && v == 1.0 => Err(ctx.err(
            w.span(),
            "published: within judges a change; for a claim of no difference give range = [LOW, HIGH] around 1",
        )),
        Some(v) if !is_ratio && v <= 0.0 => Err(ctx.err(
            w.span(),
            "published: within a factor needs a positive value; give range = [LOW, HIGH]",
        )),
        Some(_) => Ok(Rule::Within(f)),
    }
}

/// The levels an entry names exist for its measurement: the measurement, the figure (for
/// both measurements when it compares two), the compared pair and `at`.
fn check_levels(
    ctx: &Ctx,
    r: &RawPublished,
    p: &Published,
    levels: &Levels,
) -> Result<(), PlanError> {
    let m_span = r
        .measurement
        .as_ref()
        .map(|m| m.span())
        .unwrap_or_else(|| r.compare.as_ref().map_or(0..0, |c| c.span()));
    let m = measurement_named(ctx, levels, &p.measurement, m_span.clone())?;
    figure_of(ctx, r, m)?;
    if let (Some(pair), Some(c)) = (&p.compare, &r.compare) {
        let (factor, table) = c.get_ref().iter().next().expect("one pair");
        let (level, against) = table.iter().next().expect("one pair");
        if pair.factor == "measurement" {
            let other = measurement_named(ctx, levels, &pair.against, against.span())?;
            figure_of(ctx, r, other)?;
        } else {
            let known = factor_levels(ctx, levels, m, factor)?;
            level_in(ctx, &known, factor.get_ref(), &pair.level, level.span(), m)?;
            level_in(
                ctx,
                &known,
                factor.get_ref(),
                &pair.against,
                against.span(),
                m,
            )?;
        }
    }
    for ((k, v), (_, text)) in r.at.iter().zip(&p.at) {
        let known = factor_levels(ctx, levels, m, k)?;
        level_in(ctx, &known, k.get_ref(), text, v.span(), m)?;
    }
    Ok(())
}

fn measurement_named<'a>(
    ctx: &Ctx,
    levels: &'a Levels,
    name: &str,
    span: std::ops::Range<usize>,
) -> Result<&'a Measurement, PlanError> {
    levels
        .measurements
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = levels.measurements.iter().map(|m| m.name.as_str()).collect();
            ctx.err(
                span,
                format!(
                    "published: {name:?} is not a measurement of this plan (measurements: {}); an entry for one still to come takes `pending`",
                    names.join(", ")
                ),
            )
        })
}

fn figure_of(ctx: &Ctx, r: &RawPublished, m: &Measurement) -> Result<(), PlanError> {
    use crate::experiment::headline;
    let kind = m.kind.name();
    if headline::known(kind, r.figure.get_ref()) {
        return Ok(());
    }
    Err(ctx.err(
        r.figure.span(),
        format!(
            "published: figure {:?} is not one a {kind} measurement ({}) produces; it produces: {}",
            r.figure.get_ref(),
            m.name,
            headline::known_list(kind)
        ),
    ))
}

/// The levels of `factor` in measurement `m`'s cells: a plan-wide factor's, or the
/// measurement's own.
fn factor_levels(
    ctx: &Ctx,
    levels: &Levels,
    m: &Measurement,
    factor: &Spanned<String>,
) -> Result<Vec<String>, PlanError> {
    let k = factor.get_ref().as_str();
    if let Some((_, l)) = m.factors.iter().find(|(f, _)| f == k) {
        return Ok(l.clone());
    }
    let plan_wide = ["target", "cache"].contains(&k) || levels.settings.iter().any(|(f, _)| f == k);
    match levels.of(k).filter(|_| plan_wide) {
        Some(l) => Ok(l),
        None => Err(ctx.err(
            factor.span(),
            format!("published: `{k}` is not a factor of measurement {}", m.name),
        )),
    }
}

fn level_in(
    ctx: &Ctx,
    known: &[String],
    factor: &str,
    level: &str,
    span: std::ops::Range<usize>,
    m: &Measurement,
) -> Result<(), PlanError> {
    if known.iter().any(|l| l == level) {
        return Ok(());
    }
    Err(ctx.err(
        span,
        format!(
            "published: {level:?} is not a level of `{factor}` for measurement {} (levels: {}); an entry for a level still to come takes `pending`",
            m.name,
            known.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::plan::parse;

    const PLAN: &str = r#"
[experiment]
name = "t"
repetitions = 3
baseline = { target = "a" }

[quick]
repetitions = 1

[[target]]
name = "a"
kind = "dir"
path = "/tmp"

[[target]]
name = "b"
kind = "overlay"
over = "a"

[factors]
target = ["a", "b"]
cache = ["warm", "cold"]

[[measurement]]
name = "pm"
kind = "postmark"
params = { number = 100 }
factors = { instances = [1, 2] }
quick_factors = { instances = [1] }

[[measurement]]
name = "walk"
kind = "find"
params = { tree_files = 10 }

[[published]]
claim = "stacked within 1%"
measurement = "pm"
figure = "transactions_per_s"
compare = { target = { b = "a" } }
at = { cache = "cold" }
ratio = 1.0
range = [0.99, 1.01]

[[published]]
measurement = "pm"
figure = "total_s"
at = { target = "a", instances = 2 }
value = 2.0
within = 2
"#;

    fn p(text: &str, quick: bool) -> Result<crate::experiment::plan::Plan, PlanError> {
        parse(Path::new("t.toml"), text, quick)
    }

    /// The error of the plan with `from` replaced by `to`: it starts at the line of `to`
    /// that holds `at` and says `want`.
    fn refused(from: &str, to: &str, want: &str) {
        let at = to.lines().last().unwrap_or(to);
        refused_at(from, to, at, want)
    }

    fn refused_at(from: &str, to: &str, at: &str, want: &str) {
        let text = PLAN.replace(from, to);
        assert_ne!(text, PLAN, "{from:?} is in the plan");
        let e = p(&text, false).unwrap_err().0;
        let start = text.find(to).unwrap() + to.find(at).unwrap();
        let line = text[..start].matches('\n').count() + 1;
        assert!(e.starts_with(&format!("t.toml:{line}:")), "{to:?}: {e}");
        assert!(e.contains(want), "{to:?}: {e}");
    }

    #[test]
    fn entries_are_read_with_their_rule() {
        let plan = p(PLAN, false).unwrap();
        let [a, b] = &plan.published[..] else {
            panic!("{:?}", plan.published)
        };
        assert_eq!(a.claim, "stacked within 1%");
        assert_eq!(a.line, 36);
        assert_eq!(a.place, "t.toml:36:1");
        assert_eq!(
            a.compare,
            Some(Pair {
                factor: "target".into(),
                level: "b".into(),
                against: "a".into()
            })
        );
        assert_eq!(a.at, [("cache".to_string(), "cold".to_string())]);
        assert_eq!((a.published, a.rule), (Some(1.0), Rule::Range(0.99, 1.01)));
        assert_eq!(a.published_text(), "1 (range [0.99, 1.01])");
        assert_eq!((b.compare.clone(), b.rule), (None, Rule::Within(2.0)));
        assert_eq!(
            plan.published_rounds,
            Some(Adaptive {
                min: 3,
                max: 3,
                ci: 0.05
            })
        );
        // A cell selects by its levels; the baseline differs only in the compared factor.
        let f: BTreeMap<String, String> = [
            ("measurement", "pm"),
            ("target", "b"),
            ("cache", "cold"),
            ("instances", "2"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert!(a.selects(&f) && !b.selects(&f));
        assert_eq!(a.baseline_of(&f).unwrap()["target"], "a");
        // The quick scale's count replaces the extra rounds; it keeps an entry naming a
        // level only the full scale has (instances = 2), which judges nothing there.
        let q = p(PLAN, true).unwrap();
        assert_eq!((q.published.len(), q.published_rounds), (2, None));
        // Stored text reads back the same entries, without checking levels.
        assert_eq!(stored(PLAN).len(), 2);
    }

    #[test]
    fn errors_name_the_line_and_say_what_to_do() {
        refused_at(
            "measurement = \"pm\"\nfigure = \"total_s\"",
            "measurement = \"pmx\"\nfigure = \"total_s\"",
            "measurement",
            "\"pmx\" is not a measurement of this plan",
        );
        refused(
            "figure = \"total_s\"",
            "figure = \"tps\"",
            "figure \"tps\" is not one a postmark measurement (pm) produces",
        );
        refused(
            "{ b = \"a\" }",
            "{ b = \"c\" }",
            "\"c\" is not a level of `target` for measurement pm (levels: a, b)",
        );
        refused(
            "{ b = \"a\" }",
            "{ b = \"b\" }",
            "\"b\" is compared with itself",
        );
        refused(
            "{ target = { b = \"a\" } }",
            "{ target = { b = \"a\" }, cache = { cold = \"warm\" } }",
            "compare names one pair",
        );
        refused(
            "instances = 2 }",
            "threads = 2 }",
            "`threads` is not a factor of measurement pm",
        );
        refused(
            "instances = 2 }",
            "instances = 4 }",
            "\"4\" is not a level of `instances`",
        );
        refused(
            "at = { cache = \"cold\" }",
            "at = { target = \"a\" }",
            "`target` is the compared factor",
        );
        refused(
            "at = { cache = \"cold\" }",
            "at = { measurement = \"walk\" }",
            "name the measurement with `measurement`",
        );
        refused(
            "ratio = 1.0\nrange = [0.99, 1.01]",
            "ratio = 1.0\nwithin = 1.5\nrange = [0.99, 1.01]",
            "one rule only",
        );
        refused(
            "value = 2.0\nwithin = 2",
            "value = 2.0\nwithin = 1",
            "within = 1: expected a factor above 1",
        );
        refused_at(
            "value = 2.0\nwithin = 2",
            "ratio = 2.0\nwithin = 2",
            "ratio",
            "`ratio` is for a comparison",
        );
        refused(
            "value = 2.0\nwithin = 2",
            "value = 2.0\ndirection = \"higher\"",
            "a direction is a change between two cells",
        );
        refused(
            "ratio = 1.0\nrange = [0.99, 1.01]",
            "ratio = 1.5\ndirection = \"lower\"",
            "direction \"lower\" does not match the ratio 1.5",
        );
        refused(
            "ratio = 1.0\nrange = [0.99, 1.01]",
            "ratio = 1.0\ndirection = \"up\"",
            "expected \"higher\" or \"lower\"",
        );
        refused(
            "ratio = 1.0\nrange = [0.99, 1.01]",
            "ratio = 1.0\nrange = [0.99, 1.01]\nwithin = 1.5",
            "one rule only",
        );
        refused(
            "ratio = 1.0\nrange = [0.99, 1.01]",
            "ratio = 1.0\nwithin = 1.5",
            "for a claim of no difference give range",
        );
        refused(
            "range = [0.99, 1.01]",
            "range = [1.01, 0.99]",
            "two numbers with LOW below HIGH",
        );
        refused(
            "range = [0.99, 1.01]",
            "range = [1.1, 1.2]",
            "the paper's figure 1 lies outside its own range",
        );
        refused_at(
            "ratio = 1.0\n",
            "ratio = -1.0\n",
            "ratio",
            "ratio = -1: expected a positive number",
        );
        refused(
            "claim = \"stacked within 1%\"",
            "claim = \"x\"\nsource = \"p. 3\"",
            "unknown field `source`",
        );
        refused_at(
            "ratio = 1.0\nrange",
            "value = 1.0\nrange",
            "value",
            "`value` is one cell's figure",
        );
    }

    #[test]
    fn a_pending_entry_names_levels_still_to_come() {
        let pending = "[[published]]\nmeasurement = \"pm\"\nfigure = \"total_s\"\ncompare = { target = { merged = \"a\" } }\nratio = 1.8\nwithin = 1.5\n";
        let e = p(&format!("{PLAN}\n{pending}"), false).unwrap_err().0;
        assert!(
            e.contains("an entry for a level still to come takes `pending`"),
            "{e}"
        );
        let plan = p(
            &format!("{PLAN}\n{pending}pending = \"a merged overlay target\"\n"),
            false,
        )
        .unwrap();
        assert_eq!(
            plan.published[2].pending.as_deref(),
            Some("a merged overlay target")
        );
        // Its rule is still checked.
        let e = p(
            &format!("{PLAN}\n{pending}pending = \"x\"\nrange = [1, 2]\n"),
            false,
        )
        .unwrap_err()
        .0;
        assert!(e.contains("one rule only"), "{e}");
    }

    #[test]
    fn comparing_measurements_takes_the_level_as_the_measurement() {
        let text = PLAN.replace(
            "measurement = \"pm\"\nfigure = \"total_s\"\nat = { target = \"a\", instances = 2 }\nvalue = 2.0\nwithin = 2",
            "figure = \"elapsed_s\"\ncompare = { measurement = { walk = \"pm\" } }\nratio = 0.5\nwithin = 2",
        );
        // pm (PostMark) has no elapsed_s: the figure must be one both produce.
        let e = p(&text, false).unwrap_err().0;
        assert!(
            e.contains("figure \"elapsed_s\" is not one a postmark measurement (pm)"),
            "{e}"
        );
        let plan = p(&text.replace("\"elapsed_s\"", "\"duration_s\""), false).unwrap();
        assert_eq!(plan.published[1].measurement, "walk");
        assert_eq!(plan.published[1].ratio_text(), "walk ÷ pm");
    }
}
