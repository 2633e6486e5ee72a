//! The `[[measurement]]` tables: a kind, its parameters (a workload's variables among them),
//! the quick scale's overrides and the measurement's own factors.

use super::check::{scalar, typed, Ctx};
use super::schema::RawMeasurement;
use super::{Arg, Kind, Measurement, PlanError, Ty, REMOTE_FACTORS, SETTING_FACTORS};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

type Factors = Vec<(String, Vec<String>)>;

/// Every measurement of the plan, checked, in the plan's order. `bg_factors` are the
/// background factors ([`super::background`]) and the backgrounds each may name.
pub(super) fn measurements(
    ctx: &Ctx,
    raw: &[Spanned<RawMeasurement>],
    base_dir: &Path,
    quick: bool,
    bg_factors: &[(String, Vec<String>)],
) -> Result<Vec<Measurement>, PlanError> {
    if raw.is_empty() {
        return Err(PlanError(format!(
            "{}: the plan has no [[measurement]]",
            ctx.file.display()
        )));
    }
    let mut measurements: Vec<Measurement> = Vec::new();
    for m in raw {
        let mname = m.get_ref().name.get_ref().clone();
        if measurements.iter().any(|o| o.name == mname) {
            return Err(ctx.err(
                m.get_ref().name.span(),
                format!("measurement {mname:?} is defined twice"),
            ));
        }
        measurements.push(measurement(
            ctx,
            m.get_ref(),
            m.span(),
            base_dir,
            quick,
            bg_factors,
        )?);
    }
    Ok(measurements)
}

/// One measurement table (or a background's, read as one), checked.
pub(super) fn measurement(
    ctx: &Ctx,
    m: &RawMeasurement,
    m_span: Range<usize>,
    base_dir: &Path,
    quick: bool,
    bg_factors: &[(String, Vec<String>)],
) -> Result<Measurement, PlanError> {
    let mname = m.name.get_ref().clone();
    {
        let kind = kind_of(ctx, m)?;
        if kind == Kind::Replay && !m.params.contains_key("trace") {
            return Err(ctx.err(
                m_span.clone(),
                "a replay measurement needs params.trace (a trace file from `fsbench trace record`, relative to the plan)",
            ));
        }
        let cx = MeasurementCx {
            ctx,
            kind,
            workload_vars: None,
            base_dir,
            bg_factors,
        };
        let loaded = workload_vars(ctx, m, &m_span, kind, base_dir)?;
        let ends_by_itself = loaded.as_ref().is_some_and(|l| l.1);
        let cache_blind = kind
            .cache_blind()
            .map(str::to_string)
            .or_else(|| loaded.as_ref().and_then(|l| l.2.clone()))
            .map(|why| (ctx.at(m_span.clone()), why));
        let cx = MeasurementCx {
            workload_vars: loaded.map(|l| l.0),
            ..cx
        };
        let mut params = cx.params(m, quick)?;
        if let Some(v) = &m.memory {
            if m.params.contains_key("memory") {
                return Err(ctx.err(v.span(), "memory is set here and in params: set it once"));
            }
            // The quick scale's `memory` (in `quick`) replaces the measurement's own.
            if !params.iter().any(|(k, _)| k == "memory") {
                params.push((
                    "memory".into(),
                    super::check::scalar(v.get_ref()).unwrap_or_default(),
                ));
            }
        }
        let factors = cx.factors(m, quick)?;
        for (k, _) in &factors {
            if let Some(i) = params.iter().position(|(pk, _)| pk == k) {
                params.remove(i);
            }
        }
        if kind == Kind::Find
            && params.iter().any(|(k, _)| k == "tree_dirs")
            && !params.iter().any(|(k, _)| k == "tree_files")
        {
            return Err(ctx.err(m_span.clone(), "find: tree_dirs needs tree_files"));
        }
        if let Some(v) = m.params.get("tree_file_size") {
            let ok = super::check::scalar(v.get_ref())
                .and_then(|s| fsbench_base::units::parse_size(&s).ok())
                .is_some_and(|b| (1..=(64 << 20)).contains(&b));
            if !ok || !params.iter().any(|(k, _)| k == "tree_files") {
                return Err(ctx.err(
                    v.span(),
                    "tree_file_size: a size from 1 byte to 64M, with tree_files",
                ));
            }
        }
        Ok(Measurement {
            name: mname,
            kind,
            params,
            factors,
            figures: figures(ctx, m, kind)?,
            ends_by_itself,
            cache_blind,
            device_work: device_work(ctx, m)?,
        })
    }
}

/// `device_work = { busy_min = 0.5, cache_hit_max = 50 }`: a utilisation between 0 and 1, a
/// percentage from 0 to 100, at least one of them.
fn device_work(ctx: &Ctx, m: &RawMeasurement) -> Result<Option<super::DeviceWork>, PlanError> {
    let Some(w) = &m.device_work else {
        return Ok(None);
    };
    let r = w.get_ref();
    let check = |v: &Option<Spanned<f64>>, hi: f64, what: &str| match v {
        Some(x) if !(x.get_ref().is_finite() && *x.get_ref() > 0.0 && *x.get_ref() <= hi) => {
            Err(ctx.err(x.span(), format!("device_work.{what}")))
        }
        _ => Ok(v.as_ref().map(|x| *x.get_ref())),
    };
    let busy_min = check(
        &r.busy_min,
        1.0,
        "busy_min: the share of the measured window the device must be busy, above 0 and at most 1",
    )?;
    let cache_hit_max = check(
        &r.cache_hit_max,
        100.0,
        "cache_hit_max: the percentage of the bytes read the page cache may serve, above 0 and at most 100",
    )?;
    if busy_min.is_none() && cache_hit_max.is_none() {
        return Err(ctx.err(w.span(), "device_work needs busy_min or cache_hit_max"));
    }
    Ok(Some(super::DeviceWork {
        busy_min,
        cache_hit_max,
    }))
}

/// The plan's headline figures, each one the kind produces.
fn figures(ctx: &Ctx, m: &RawMeasurement, kind: Kind) -> Result<Vec<String>, PlanError> {
    use crate::experiment::headline;
    let Some(fs) = &m.figures else {
        return Ok(Vec::new());
    };
    if fs.get_ref().is_empty() {
        return Err(ctx.err(
            fs.span(),
            "figures: name at least one figure, or leave `figures` out for the kind's headline figures",
        ));
    }
    for f in fs.get_ref() {
        if !headline::known(kind.name(), f.get_ref()) {
            return Err(ctx.err(
                f.span(),
                format!(
                    "figure {:?} is not one a {} measurement produces; it produces: {}",
                    f.get_ref(),
                    kind.name(),
                    headline::known_list(kind.name())
                ),
            ));
        }
    }
    Ok(fs.get_ref().iter().map(|f| f.get_ref().clone()).collect())
}

fn kind_of(ctx: &Ctx, m: &RawMeasurement) -> Result<Kind, PlanError> {
    Kind::ALL
        .iter()
        .find(|(n, _)| n == m.kind.get_ref())
        .map(|(_, k)| *k)
        .ok_or_else(|| {
            ctx.err(
                m.kind.span(),
                format!(
                    "measurement kind {:?}: expected one of {}",
                    m.kind.get_ref(),
                    Kind::ALL.map(|(n, _)| n).join(", ")
                ),
            )
        })
}

/// A workload's variables are parameters too; check them against the workload. With them,
/// whether the workload can end by itself ([`fsbench_model::model::Workload::ends_by_itself`]), and
/// why a cold cache changes little of it when it reads nothing laid out before it started
/// ([`fsbench_model::model::Workload::creates_all_it_reads`], judged at the workload's defaults).
fn workload_vars(
    ctx: &Ctx,
    m: &RawMeasurement,
    m_span: &Range<usize>,
    kind: Kind,
    base_dir: &Path,
) -> Result<Option<WorkloadFacts>, PlanError> {
    if kind != Kind::Workload {
        return Ok(None);
    }
    let w = m.params.get("workload").ok_or_else(|| {
        ctx.err(
            m_span.clone(),
            "a workload measurement needs params.workload (a .f file or a built-in name)",
        )
    })?;
    let wname = typed(ctx, w, Ty::Str, "workload")?;
    let resolved = if fsbench_model::workloads::builtin(&wname).is_some() {
        wname.clone()
    } else {
        base_dir.join(&wname).display().to_string()
    };
    match fsbench_model::workloads::load(&fsbench_model::workloads::Source::named(&resolved), &fsbench_model::model::build::Overrides::default()) {
        Ok((wl, _)) => Ok(Some((
            wl.vars.iter().map(|(k, _)| k.clone()).collect(),
            wl.ends_by_itself(),
            wl.creates_all_it_reads().then(|| {
                format!("workload {wname:?} reads no file laid out before it starts (it creates what it reads, or only writes)")
            }),
        ))),
        Err(e) => Err(ctx.err(w.span(), format!("workload {wname:?}: {e}"))),
    }
}

/// A workload's variables, whether it can end by itself, and why a cold cache changes
/// little of it (see [`workload_vars`]).
type WorkloadFacts = (Vec<String>, bool, Option<String>);

/// One measurement table being read.
struct MeasurementCx<'a> {
    ctx: &'a Ctx<'a>,
    kind: Kind,
    /// The workload's variables, for a workload measurement.
    workload_vars: Option<Vec<String>>,
    base_dir: &'a Path,
    /// Background factors and the backgrounds each names.
    bg_factors: &'a [(String, Vec<String>)],
}

impl MeasurementCx<'_> {
    /// The type a key takes: a parameter of the kind, or a variable of the workload.
    fn check_key(&self, k: &str, span: Range<usize>) -> Result<Ty, PlanError> {
        let kind = self.kind;
        if let Some(p) = kind.param(k) {
            return Ok(p.3);
        }
        let names = || {
            kind.params()
                .iter()
                .map(|p| p.0)
                .collect::<Vec<_>>()
                .join(", ")
        };
        if let Some(vars) = &self.workload_vars {
            if vars.iter().any(|v| v == k) && k != "dir" {
                return Ok(Ty::Str);
            }
            return Err(self.ctx.err(span, format!("`{k}` is neither a parameter of a workload measurement ({}) nor a variable of the workload ({})", names(), vars.iter().filter(|v| *v != "dir").cloned().collect::<Vec<_>>().join(", "))));
        }
        Err(self.ctx.err(
            span,
            format!(
                "`{k}` is not a parameter of a {} measurement (it takes: {})",
                kind.name(),
                names()
            ),
        ))
    }

    fn scalar_for(&self, k: &str, v: &Spanned<toml::Value>, ty: Ty) -> Result<String, PlanError> {
        if self.workload_vars.is_some() && self.kind.param(k).is_none() {
            // A variable: any scalar the language accepts.
            return scalar(v.get_ref()).ok_or_else(|| {
                self.ctx.err(
                    v.span(),
                    format!("variable `{k}`: expected a number, string or boolean"),
                )
            });
        }
        typed(self.ctx, v, ty, k)
    }

    /// Parameters naming a file (a workload that is not built in, PostMark's
    /// configuration, a trace) are relative to the plan and must exist.
    fn resolve_file(
        &self,
        k: &str,
        s: &mut String,
        v: &Spanned<toml::Value>,
    ) -> Result<(), PlanError> {
        let kind = self.kind;
        let names_file = (kind == Kind::Postmark && k == "config")
            || (kind == Kind::Replay && k == "trace")
            || (kind == Kind::Workload
                && k == "workload"
                && fsbench_model::workloads::builtin(s).is_none());
        if names_file {
            let p = self.base_dir.join(&*s);
            if !p.is_file() {
                return Err(self
                    .ctx
                    .err(v.span(), format!("{} is not a file", p.display())));
            }
            *s = p.display().to_string();
        }
        // Places the runner joins to the target's directory: inside the target only.
        if matches!(kind.param(k), Some((_, _, Arg::Runner, _)))
            && ["path", "src", "over"].contains(&k)
        {
            let inside = std::path::Path::new(&*s).components().all(|c| {
                matches!(
                    c,
                    std::path::Component::Normal(_) | std::path::Component::CurDir
                )
            });
            if !inside {
                return Err(self.ctx.err(
                    v.span(),
                    format!("{k} {s:?}: a path inside the target, relative to it, without `..`"),
                ));
            }
        }
        Ok(())
    }

    /// The fixed parameters, the quick scale's over the full ones under `quick`.
    fn params(&self, m: &RawMeasurement, quick: bool) -> Result<Vec<(String, String)>, PlanError> {
        let mut params: Vec<(String, String)> = Vec::new();
        for (k, v) in &m.params {
            let ty = self.check_key(k, v.span())?;
            let mut s = self.scalar_for(k, v, ty)?;
            if let Some(choices) = self.kind.choices(k) {
                if !choices.contains(&s) {
                    let list = choices
                        .iter()
                        .map(|c| format!("{c:?}"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    return Err(self
                        .ctx
                        .err(v.span(), format!("{k}: expected one of {list}")));
                }
            }
            self.resolve_file(k, &mut s, v)?;
            params.push((k.clone(), s));
        }
        if quick {
            for (k, v) in &m.quick {
                let ty = self.check_key(k, v.span())?;
                let mut s = self.scalar_for(k, v, ty)?;
                self.resolve_file(k, &mut s, v)?;
                match params.iter_mut().find(|(pk, _)| pk == k) {
                    Some(p) => p.1 = s,
                    None => params.push((k.clone(), s)),
                }
            }
        } else {
            for (k, v) in &m.quick {
                self.check_key(k, v.span())?;
            }
        }
        Ok(params)
    }

    /// The measurement's own factors, the quick scale's levels over the full ones.
    fn factors(&self, m: &RawMeasurement, quick: bool) -> Result<Factors, PlanError> {
        let mut factors = self.read_factors(&m.factors)?;
        let q = self.read_factors(&m.quick_factors)?;
        if quick {
            for (k, levels) in q {
                match factors.iter_mut().find(|(fk, _)| *fk == k) {
                    Some(f) => f.1 = levels,
                    None => factors.push((k, levels)),
                }
            }
        }
        Ok(factors)
    }

    fn read_factors(
        &self,
        src: &BTreeMap<String, Spanned<Vec<Spanned<toml::Value>>>>,
    ) -> Result<Factors, PlanError> {
        let ctx = self.ctx;
        let mut out = Vec::new();
        for (k, levels) in src {
            if let Some((_, names)) = self.bg_factors.iter().find(|(f, _)| f == k) {
                out.push((k.clone(), self.background_levels(k, levels, names)?));
                continue;
            }
            if ["target", "cache", "measurement"].contains(&k.as_str())
                || SETTING_FACTORS.contains(&k.as_str())
                || REMOTE_FACTORS.contains(&k.as_str())
            {
                return Err(ctx.err(
                    levels.span(),
                    format!("`{k}` is a plan-wide factor: list it under [factors]"),
                ));
            }
            if k != "memory"
                && matches!(
                    self.kind.param(k),
                    Some((_, _, Arg::Positional, _)) | Some((_, _, Arg::Runner, _))
                )
            {
                return Err(ctx.err(levels.span(), format!("`{k}` cannot be a factor (it chooses what is measured, not how); use a second [[measurement]]")));
            }
            let ty = self.check_key(k, levels.span())?;
            if levels.get_ref().is_empty() {
                return Err(ctx.err(
                    levels.span(),
                    format!("factor `{k}` needs at least one level"),
                ));
            }
            let mut v: Vec<String> = Vec::new();
            for l in levels.get_ref() {
                let s = self.scalar_for(k, l, ty)?;
                if v.contains(&s) {
                    return Err(ctx.err(l.span(), "level listed twice"));
                }
                v.push(s);
            }
            out.push((k.clone(), v));
        }
        Ok(out)
    }

    /// The levels of a background factor: "none" or the name of one of its backgrounds.
    fn background_levels(
        &self,
        k: &str,
        levels: &Spanned<Vec<Spanned<toml::Value>>>,
        names: &[String],
    ) -> Result<Vec<String>, PlanError> {
        let ctx = self.ctx;
        if levels.get_ref().is_empty() {
            return Err(ctx.err(
                levels.span(),
                format!("factor `{k}` needs at least one level"),
            ));
        }
        let mut v: Vec<String> = Vec::new();
        for l in levels.get_ref() {
            let s = match l.get_ref() {
                toml::Value::String(s) => s.clone(),
                _ => {
                    return Err(ctx.err(
                        l.span(),
                        format!("`{k}`: expected \"none\" or a background's name"),
                    ))
                }
            };
            if s != "none" && !names.contains(&s) {
                return Err(ctx.err(
                    l.span(),
                    format!(
                        "unknown background {s:?} for factor `{k}` (its backgrounds: {}; or \"none\")",
                        names.join(", ")
                    ),
                ));
            }
            if v.contains(&s) {
                return Err(ctx.err(l.span(), "level listed twice"));
            }
            v.push(s);
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::plan::{parse, DeviceWork};
    use std::path::Path;

    const PLAN: &str = r#"[experiment]
name = "w"
repetitions = 1

[[target]]
name = "a"
kind = "dir"
path = "/tmp"

[[measurement]]
name = "f"
kind = "find"
device_work = { busy_min = 0.5, cache_hit_max = 20 }
"#;

    #[test]
    fn device_work_is_read_and_its_bounds_located() {
        let p = parse(Path::new("w.toml"), PLAN, false).unwrap();
        assert_eq!(
            p.measurements[0].device_work,
            Some(DeviceWork {
                busy_min: Some(0.5),
                cache_hit_max: Some(20.0)
            })
        );
        let err = |from: &str, to: &str| {
            parse(Path::new("w.toml"), &PLAN.replace(from, to), false)
                .unwrap_err()
                .0
        };
        let e = err("busy_min = 0.5", "busy_min = 1.5");
        assert!(e.starts_with("w.toml:13:28: device_work.busy_min"), "{e}");
        let e = err("cache_hit_max = 20", "cache_hit_max = 0");
        assert!(e.contains("device_work.cache_hit_max"), "{e}");
        let e = err("{ busy_min = 0.5, cache_hit_max = 20 }", "{}");
        assert!(
            e.contains("device_work needs busy_min or cache_hit_max"),
            "{e}"
        );
        let e = err("busy_min = 0.5", "busy = 0.5");
        assert!(e.contains("unknown field `busy`"), "{e}");
    }
}
