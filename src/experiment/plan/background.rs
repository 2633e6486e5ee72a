//! The `[[background]]` tables: a load started before a measurement and stopped after it
//! (or let run to its end), at a chosen `nice` and `ionice`, chosen per cell as the level of a
//! measurement's factor (`factors = { cleaner = ["none", "low", "normal"] }`).
//!
//! A background is a command (run in the target's directory, `{target}` in its arguments
//! replaced by it) or any measurement kind with its parameters, run in the target as a
//! measurement of that kind would be.

use super::check::Ctx;
use super::measurements::measurement;
use super::schema::{RawBackground, RawMeasurement};
use super::{Kind, Measurement, PlanError, REMOTE_FACTORS, SETTING_FACTORS};
use std::collections::BTreeMap;
use std::path::Path;
use toml::Spanned;

/// What a background runs.
#[derive(Debug, Clone, serde::Serialize)]
pub enum BgKind {
    /// A command line, run in the target's directory.
    Command(Vec<String>),
    /// `fsbench KIND` with the parameters of a measurement of that kind.
    Measure(Measurement),
}

/// The I/O priority class and level (`ionice -c CLASS -n LEVEL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct IoPrio {
    /// 1 realtime, 2 best-effort, 3 idle (the kernel's IOPRIO_CLASS_*).
    pub class: u32,
    /// 0 (highest) to 7 (lowest); 0 for idle.
    pub level: u32,
}

impl IoPrio {
    /// The value `ioprio_set` takes.
    pub fn raw(self) -> u32 {
        (self.class << 13) | self.level
    }

    /// The text of a raw value as `ioprio_get` returns it: "idle", "best-effort:4", ... ("none"
    /// for class 0, the kernel's default from the CPU nice level).
    pub fn text(raw: u32) -> String {
        match (raw >> 13, raw & 0x1fff) {
            (0, _) => "none".into(),
            (1, l) => format!("realtime:{l}"),
            (2, l) => format!("best-effort:{l}"),
            (3, _) => "idle".into(),
            (c, l) => format!("class{c}:{l}"),
        }
    }

    /// Parse "none", "idle", "best-effort[:N]" or "realtime[:N]" (N from 0 to 7, 4 unless
    /// given); `None` for "none".
    pub fn parse(s: &str) -> Result<Option<IoPrio>, String> {
        let (class, level) = match s.split_once(':') {
            Some((c, l)) => (c, Some(l)),
            None => (s, None),
        };
        let class = match class {
            "none" if level.is_none() => return Ok(None),
            "realtime" => 1,
            "best-effort" => 2,
            "idle" if level.is_none() => 3,
            _ => {
                return Err(format!(
                    "ionice {s:?}: expected \"none\", \"idle\", \"best-effort\" or \"realtime\", with \":LEVEL\" (0 to 7) for the last two"
                ))
            }
        };
        let level = match level {
            None => 4 * (class != 3) as u32,
            Some(l) => match l.parse::<u32>() {
                Ok(n) if n <= 7 => n,
                _ => {
                    return Err(format!(
                        "ionice {s:?}: the level is 0 (highest) to 7 (lowest)"
                    ))
                }
            },
        };
        Ok(Some(IoPrio { class, level }))
    }
}

/// When a background ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum BgStop {
    /// Interrupted (SIGINT, then SIGKILL after 15 s) when the measurement has ended.
    After,
    /// Waited for after the measurement (within the plan's time limit).
    End,
}

/// A `[[background]]` table, checked.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Background {
    pub name: String,
    /// The factor whose level names it.
    pub factor: String,
    pub kind: BgKind,
    pub nice: Option<i32>,
    pub ionice: Option<IoPrio>,
    pub stop: BgStop,
    /// Started again each time it ends, until the measurement has ended (`restart = true`).
    pub restart: bool,
    /// Its window waits for the measurement's (`start = "with"`): it prepares, then does its
    /// work only once the measurement has prepared and started measuring.
    pub with_measurement: bool,
}

impl Background {
    pub fn kind_name(&self) -> &'static str {
        match &self.kind {
            BgKind::Command(_) => "command",
            BgKind::Measure(m) => m.kind.name(),
        }
    }

    /// Whether it needs root: a negative nice, a realtime I/O class.
    pub fn needs_root(&self) -> bool {
        self.nice.is_some_and(|n| n < 0) || self.ionice.is_some_and(|p| p.class == 1)
    }
}

/// `start`: "before" (the default: the load's window starts, then the measurement prepares
/// and measures) or "with" (the load prepares, then waits for the measurement's window):
/// only a load that marks its window (an fsbench measurement other than scan and layout).
fn start_of(ctx: &Ctx, b: &RawBackground, kind: &BgKind) -> Result<bool, PlanError> {
    let Some(s) = &b.start else {
        return Ok(false);
    };
    match s.get_ref().as_str() {
        "before" => Ok(false),
        "with" => match kind {
            BgKind::Measure(m) if !matches!(m.kind, Kind::Scan | Kind::Layout) => Ok(true),
            _ => Err(ctx.err(
                s.span(),
                "start = \"with\" waits for the load's own measured window, which only an fsbench measurement other than scan and layout marks",
            )),
        },
        other => Err(ctx.err(
            s.span(),
            format!("start {other:?}: expected \"before\" (the load starts, then the measurement prepares) or \"with\" (the load waits for the measurement's window)"),
        )),
    }
}

/// Background factors, each with the names of its backgrounds.
pub(super) type BgFactors = Vec<(String, Vec<String>)>;

/// Every background of the plan, and the factors they make (each with its backgrounds'
/// names, in the plan's order).
pub(super) fn backgrounds(
    ctx: &Ctx,
    raw: &[Spanned<RawBackground>],
    base_dir: &Path,
    quick: bool,
) -> Result<(Vec<Background>, BgFactors), PlanError> {
    let mut out: Vec<Background> = Vec::new();
    let mut factors: Vec<(String, Vec<String>)> = Vec::new();
    for b in raw {
        let span = b.span();
        let b = b.get_ref();
        let name = b.name.get_ref().clone();
        if name.is_empty() || name == "none" || out.iter().any(|o| o.name == name) {
            return Err(ctx.err(
                b.name.span(),
                format!(
                    "background name {name:?}: each background needs its own name, not \"none\""
                ),
            ));
        }
        let factor = factor_of(ctx, b)?;
        let kind = if b.kind.get_ref() == "command" {
            command_of(ctx, b, &span)?
        } else {
            if let Some(c) = &b.command {
                return Err(ctx.err(c.span(), "`command` is for kind = \"command\""));
            }
            if let Some(v) = b.params.get("tree_files").or(b.params.get("memory")) {
                return Err(ctx.err(v.span(), "a background runs in the target as it is: no generated tree (tree_files) and no memory limit; give `path`, e.g. the tree a find measurement makes (fsbench-tree-NAME)"));
            }
            let raw = RawMeasurement {
                name: b.name.clone(),
                kind: b.kind.clone(),
                params: b.params.clone(),
                quick: b.quick.clone(),
                factors: BTreeMap::new(),
                quick_factors: BTreeMap::new(),
                figures: None,
                memory: None,
                device_work: None,
            };
            BgKind::Measure(measurement(ctx, &raw, span.clone(), base_dir, quick, &[])?)
        };
        let nice = match &b.nice {
            Some(n) if !(-20..=19).contains(n.get_ref()) => {
                return Err(ctx.err(
                    n.span(),
                    format!(
                        "nice {}: expected -20 (highest) to 19 (lowest)",
                        n.get_ref()
                    ),
                ))
            }
            Some(n) => Some(*n.get_ref() as i32),
            None => None,
        };
        let ionice = match &b.ionice {
            Some(s) => IoPrio::parse(s.get_ref()).map_err(|e| ctx.err(s.span(), e))?,
            None => None,
        };
        let stop = match b.stop.as_ref().map(|s| (s.get_ref().as_str(), s.span())) {
            None | Some(("after", _)) => BgStop::After,
            Some(("end", _)) => BgStop::End,
            Some((s, sp)) => {
                return Err(ctx.err(sp, format!("stop {s:?}: expected \"after\" (stopped after the measurement) or \"end\" (runs to its end)")))
            }
        };
        let restart = b.restart.as_ref().is_some_and(|r| *r.get_ref());
        if let (true, BgStop::End, Some(r)) = (restart, stop, &b.restart) {
            return Err(ctx.err(r.span(), "restart = true starts it again until the measurement ends: it needs stop = \"after\""));
        }
        let with_measurement = start_of(ctx, b, &kind)?;
        match factors.iter_mut().find(|(f, _)| *f == factor) {
            Some(f) => f.1.push(name.clone()),
            None => factors.push((factor.clone(), vec![name.clone()])),
        }
        out.push(Background {
            name,
            factor,
            kind,
            nice,
            ionice,
            stop,
            restart,
            with_measurement,
        });
    }
    Ok((out, factors))
}

/// The factor a background is a level of: not a plan-wide factor's name.
fn factor_of(ctx: &Ctx, b: &RawBackground) -> Result<String, PlanError> {
    let Some(f) = &b.factor else {
        return Ok("background".into());
    };
    let s = f.get_ref();
    let plan_wide = ["target", "cache", "measurement", "memory"].contains(&s.as_str())
        || SETTING_FACTORS.contains(&s.as_str())
        || REMOTE_FACTORS.contains(&s.as_str());
    let param = Kind::ALL.iter().any(|(_, k)| k.param(s).is_some());
    if s.is_empty()
        || plan_wide
        || param
        || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(ctx.err(
            f.span(),
            format!("factor {s:?}: a name of its own (letters, digits, _), not a plan-wide factor or a measurement parameter"),
        ));
    }
    Ok(s.clone())
}

fn command_of(
    ctx: &Ctx,
    b: &RawBackground,
    span: &std::ops::Range<usize>,
) -> Result<BgKind, PlanError> {
    let Some(c) = &b.command else {
        return Err(ctx.err(
            span.clone(),
            "a background of kind \"command\" needs `command = [\"PROGRAM\", \"ARG\", ...]`",
        ));
    };
    if c.get_ref().is_empty() || c.get_ref()[0].get_ref().is_empty() {
        return Err(ctx.err(c.span(), "command: name the program to run"));
    }
    if let Some((k, v)) = b.params.iter().chain(b.quick.iter()).next() {
        return Err(ctx.err(
            v.span(),
            format!("`{k}`: a command takes no params (put its arguments in `command`)"),
        ));
    }
    Ok(BgKind::Command(
        c.get_ref().iter().map(|a| a.get_ref().clone()).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ionice_levels() {
        assert_eq!(IoPrio::parse("none"), Ok(None));
        assert_eq!(
            IoPrio::parse("idle"),
            Ok(Some(IoPrio { class: 3, level: 0 }))
        );
        assert_eq!(
            IoPrio::parse("best-effort"),
            Ok(Some(IoPrio { class: 2, level: 4 }))
        );
        assert_eq!(
            IoPrio::parse("best-effort:7").unwrap().unwrap().raw(),
            (2 << 13) | 7
        );
        assert_eq!(IoPrio::text((2 << 13) | 7), "best-effort:7");
        assert_eq!(IoPrio::text(3 << 13), "idle");
        assert!(IoPrio::parse("best-effort:8")
            .unwrap_err()
            .contains("0 (highest) to 7"));
        assert!(IoPrio::parse("idle:3").is_err());
        assert!(IoPrio::parse("low").unwrap_err().contains("expected"));
    }
}
