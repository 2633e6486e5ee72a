//! Memory limits, and the share of reads a device must serve (`cache_served_share`).
//!
//! Memory limits: `memory = "256M"` on a target, on a measurement (or as its factor), or as
//! the plan-wide factor `memory`. The runner applies a cell's limit to the measured child
//! through a memory cgroup; here every value is checked to be a size or "none", and no
//! smaller than what the child needs to start.

use super::check::Ctx;
use super::schema::{RawMeasurement, RawPlan};
use super::{Kind, Measurement, PlanError};
use std::ops::Range;
use toml::Spanned;

/// The smallest limit that is not a typing mistake (a bare "64" meaning bytes).
const FLOOR: u64 = 1 << 20;

/// A memory level: `None` for "none", the limit in bytes otherwise.
pub fn parse_level(s: &str) -> Result<Option<u64>, String> {
    if s == "none" {
        return Ok(None);
    }
    let b = fsbench_base::units::parse_size(s)
        .map_err(|e| format!("memory {s:?}: {e}; expected a size such as \"256M\", or \"none\""))?;
    if b < FLOOR {
        return Err(format!(
            "memory {s:?}: at least 1M (a bare number is bytes), or \"none\""
        ));
    }
    Ok(Some(b))
}

/// What a measurement's child needs to start: a workload's preflight estimate with the
/// measurement's variables, or the application benchmarks' start size.
pub(super) fn start_bytes(m: &Measurement) -> u64 {
    if m.kind != Kind::Workload {
        return fsbench_engine::engine::preflight::APP_START_BYTES;
    }
    let Some((_, w)) = m.params.iter().find(|(k, _)| k == "workload") else {
        return fsbench_engine::engine::preflight::APP_START_BYTES;
    };
    let vars = m
        .params
        .iter()
        .filter(|(k, _)| m.kind.param(k).is_none())
        .cloned()
        .collect();
    match fsbench_model::workloads::load(
        &fsbench_model::workloads::Source::named(w),
        &fsbench_model::model::build::Overrides(vars),
    ) {
        Ok((wl, _)) => fsbench_engine::engine::preflight::estimate(&wl).total(),
        Err(_) => fsbench_engine::engine::preflight::APP_START_BYTES,
    }
}

/// One `memory` value in the plan, with the measurements it applies to.
struct Spec<'a> {
    value: &'a Spanned<toml::Value>,
    /// Indices into the plan's measurements.
    applies: Vec<usize>,
}

/// Check every memory value of the plan; returns where the first one is (`file:line:col`),
/// for the runner's refusal when this machine has no memory cgroup.
pub(super) fn check(
    ctx: &Ctx,
    raw: &RawPlan,
    measurements: &[Measurement],
    target_levels: &[String],
    quick: bool,
) -> Result<Option<String>, PlanError> {
    // Which value a cell uses: the plan-wide factor's, else the measurement's (its factor
    // or parameter), else the target's; a value overridden everywhere is only checked as a
    // size.
    let plan_factor = raw.factors.memory.is_some();
    let own = |m: &Measurement| {
        m.params.iter().any(|(k, _)| k == "memory") || m.factors.iter().any(|(k, _)| k == "memory")
    };
    let all: Vec<usize> = (0..measurements.len()).collect();
    let unowned: Vec<usize> = if plan_factor {
        Vec::new()
    } else {
        all.iter()
            .copied()
            .filter(|&i| !own(&measurements[i]))
            .collect()
    };
    let mut specs: Vec<Spec> = Vec::new();
    for t in &raw.targets {
        if let Some(v) = &t.get_ref().memory {
            if target_levels.contains(t.get_ref().name.get_ref()) {
                specs.push(Spec {
                    value: v,
                    applies: unowned.clone(),
                });
            }
        }
    }
    for (i, m) in raw.measurements.iter().enumerate() {
        measurement_specs(m.get_ref(), i, plan_factor, quick, &mut specs);
    }
    if let Some(l) = &raw.factors.memory {
        for v in l.get_ref() {
            specs.push(Spec {
                value: v,
                applies: all.clone(),
            });
        }
    }
    let mut first: Option<Range<usize>> = None;
    let mut starts: Vec<Option<u64>> = vec![None; measurements.len()];
    for s in &specs {
        let span = s.value.span();
        let toml::Value::String(text) = s.value.get_ref() else {
            return Err(ctx.err(
                span,
                "memory: expected a size in quotes such as \"256M\", or \"none\"",
            ));
        };
        let Some(limit) = parse_level(text).map_err(|e| ctx.err(span.clone(), e))? else {
            continue;
        };
        if first.as_ref().is_none_or(|f| span.start < f.start) {
            first = Some(span.clone());
        }
        for &i in &s.applies {
            let need = *starts[i].get_or_insert_with(|| start_bytes(&measurements[i]));
            if limit < need {
                return Err(ctx.err(
                    span,
                    format!(
                        "memory {text:?} is below what measurement {:?} needs to start: about {} (fsbench's estimate of its program, fileset plans and threads' buffers); raise the limit or use \"none\"",
                        measurements[i].name,
                        fsbench_base::units::human_bytes(need as f64)
                    ),
                ));
            }
        }
    }
    Ok(first.map(|s| {
        let (line, col) = super::line_col(ctx.text, s.start);
        format!("{}:{line}:{col}", ctx.file.display())
    }))
}

/// The memory values of measurement `i` (its own, its factor's, at both scales): those of
/// this scale are checked against its start, the others only as sizes (its parameters at
/// this scale are not the ones it will start with at the other).
fn measurement_specs<'a>(
    m: &'a RawMeasurement,
    i: usize,
    plan_factor: bool,
    quick: bool,
    specs: &mut Vec<Spec<'a>>,
) {
    // A value of the other scale is only checked as a size: the measurement's
    // parameters at this scale are not the ones it will start with.
    let quick_value = m.quick.get("memory");
    let quick_levels = m.quick_factors.get("memory");
    let full_values = m.memory.iter().chain(m.params.get("memory"));
    let full_levels = m.factors.get("memory").map(|l| l.get_ref().iter());
    let quick_levels_iter = quick_levels.map(|l| l.get_ref().iter());
    let at_this_scale =
        |is_quick: bool, overridden: bool| !plan_factor && is_quick == quick && !overridden;
    let full_overridden = quick && quick_value.is_some();
    let levels_overridden = quick && quick_levels.is_some();
    let groups: [(Vec<&Spanned<toml::Value>>, bool); 4] = [
        (full_values.collect(), at_this_scale(false, full_overridden)),
        (
            quick_value.into_iter().collect(),
            at_this_scale(true, false),
        ),
        (
            full_levels.into_iter().flatten().collect(),
            at_this_scale(false, levels_overridden),
        ),
        (
            quick_levels_iter.into_iter().flatten().collect(),
            at_this_scale(true, false),
        ),
    ];
    for (values, applies) in groups {
        for v in values {
            specs.push(Spec {
                value: v,
                applies: if applies { vec![i] } else { Vec::new() },
            });
        }
    }
}

/// `cache_served_share` of `[experiment]`: a share in [0, 1] (0: no run is flagged), 0.5
/// when not set.
pub(super) fn cache_served_share(ctx: &Ctx, raw: &RawPlan) -> Result<f64, PlanError> {
    match &raw.experiment.cache_served_share {
        None => Ok(DEFAULT_CACHE_SERVED_SHARE),
        Some(v) if (0.0..=1.0).contains(v.get_ref()) => Ok(*v.get_ref()),
        Some(v) => Err(ctx.err(
            v.span(),
            "cache_served_share: a share of the bytes read, from 0 (no run is flagged) to 1",
        )),
    }
}

/// `proactive_reclaim` of `[experiment]`: whether to pause the kernel's DAMON reclaimers
/// while the experiment is set up (`"pause"`) or leave them (`"leave"`, the default).
pub(super) fn pause_reclaim(ctx: &Ctx, raw: &RawPlan) -> Result<bool, PlanError> {
    match &raw.experiment.proactive_reclaim {
        None => Ok(false),
        Some(v) => match v.get_ref().as_str() {
            "leave" => Ok(false),
            "pause" => Ok(true),
            _ => Err(ctx.err(
                v.span(),
                "proactive_reclaim: expected \"leave\" (the default) or \"pause\" (the kernel's DAMON reclaimers off while the experiment is set up, on again at teardown)",
            )),
        },
    }
}

/// A cold or device run is flagged `cache_served` when its device served less than half of
/// the bytes it read.
pub const DEFAULT_CACHE_SERVED_SHARE: f64 = 0.5;

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(measurement: &str, quick: bool) -> Result<super::super::Plan, PlanError> {
        let text = format!(
            "[experiment]\nname = \"t\"\nrepetitions = 1\n[[target]]\nname = \"a\"\nkind = \"dir\"\npath = \"/tmp\"\nmemory = \"512M\"\n[[measurement]]\nname = \"w\"\nkind = \"find\"\n{measurement}\n"
        );
        super::super::parse(std::path::Path::new("t.toml"), &text, quick)
    }

    #[test]
    fn proactive_reclaim_is_left_or_paused_and_nothing_else() {
        let with = |v: &str| {
            let text = format!(
                "[experiment]\nname = \"t\"\nrepetitions = 1\nproactive_reclaim = {v}\n[[target]]\nname = \"a\"\nkind = \"dir\"\npath = \"/tmp\"\n[[measurement]]\nname = \"w\"\nkind = \"find\"\n"
            );
            super::super::parse(std::path::Path::new("t.toml"), &text, false)
        };
        assert!(!plan("", false).unwrap().pause_reclaim);
        assert!(!with("\"leave\"").unwrap().pause_reclaim);
        assert!(with("\"pause\"").unwrap().pause_reclaim);
        let e = with("\"off\"").unwrap_err();
        assert!(
            e.0.contains("t.toml:4:21: proactive_reclaim: expected"),
            "{}",
            e.0
        );
    }

    #[test]
    fn a_measurement_memory_and_its_quick_scale() {
        let p = plan("memory = \"64M\"\nquick = { memory = \"32M\" }", false).unwrap();
        assert!(p.measurements[0]
            .params
            .contains(&("memory".into(), "64M".into())));
        assert_eq!(p.targets[0].memory, Some(512 << 20));
        assert_eq!(p.memory_at.as_deref(), Some("t.toml:8:10"));
        let q = plan("memory = \"64M\"\nquick = { memory = \"32M\" }", true).unwrap();
        assert!(q.measurements[0]
            .params
            .contains(&("memory".into(), "32M".into())));
        let e = plan("memory = \"64M\"\nparams = { memory = \"32M\" }", false).unwrap_err();
        assert!(
            e.0.contains("t.toml:12:10: memory is set here and in params"),
            "{e}"
        );
        let e = plan("factors = { memory = [\"none\", \"4M\"] }", false).unwrap_err();
        assert!(e.0.contains("t.toml:12:31: memory \"4M\" is below"), "{e}");
        assert_eq!(plan("", false).unwrap().cache_served_share, 0.5);
    }

    #[test]
    fn each_scale_checks_its_own_memory_against_its_own_start() {
        // A workload whose full-scale fileset needs more than its quick-scale limit.
        let plan = |m: &str, quick: bool| {
            let text = format!(
                "[experiment]\nname = \"t\"\nrepetitions = 1\n[[target]]\nname = \"a\"\nkind = \"dir\"\npath = \"/tmp\"\n[[measurement]]\nname = \"w\"\n{m}\n"
            );
            super::super::parse(std::path::Path::new("t.toml"), &text, quick)
        };
        let m = |quick_memory: &str| {
            format!(
                "kind = \"workload\"\nmemory = \"2G\"\nparams = {{ workload = \"fileserver\", nfiles = 5000000 }}\nquick = {{ nfiles = 100, memory = \"{quick_memory}\" }}"
            )
        };
        let full = plan(&m("96M"), false).unwrap();
        assert!(full.measurements[0]
            .params
            .contains(&("memory".into(), "2G".into())));
        plan(&m("96M"), true).unwrap();
        let e = plan(&m("1M"), true).unwrap_err();
        assert!(e.0.contains("memory \"1M\" is below"), "{e}");
        plan(&m("1M"), false).unwrap();
    }

    #[test]
    fn levels() {
        assert_eq!(parse_level("none").unwrap(), None);
        assert_eq!(parse_level("256M").unwrap(), Some(256 << 20));
        assert!(parse_level("64").unwrap_err().contains("at least 1M"));
        assert!(parse_level("lots").is_err());
    }
}
