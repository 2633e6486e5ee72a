//! The I/O scheduler of each target, and the rule that cells run under one scheduler unless
//! the plan says otherwise.
//!
//! fsbench sets the scheduler of every block device it makes (an image's loop device, a
//! simulated disk's): the one the target's `[target.device]` names, else `none`. A device
//! left as it was found runs under whatever the last user chose (a `bfq` left behind by
//! another experiment), so a fresh and an aged target could run under different schedulers
//! without anyone choosing it. A plan whose targets would differ in scheduler must name
//! each one that differs (or make the scheduler a factor): otherwise it is refused with the
//! place of the target that does not name its own.

use super::check::Ctx;
use super::schema::RawTarget;
use super::{Device, PlanError, Target, TargetKind};
use std::collections::BTreeMap;
use toml::Spanned;

/// The scheduler fsbench sets on the devices it makes when the plan names none.
pub const DEFAULT_SCHEDULER: &str = "none";

/// Where a target's I/O scheduler comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// The plan names it (for an overlay: the target under it does). The name of the
    /// target whose table names it comes with it.
    Named(String, String),
    /// Not named, on a device fsbench makes: [`DEFAULT_SCHEDULER`]; the target whose table
    /// could name it.
    Default(String),
    /// Not named, an existing directory: whatever its device has (known at set-up).
    Device(String),
    /// No block device (a remote).
    NoDevice,
}

impl Source {
    /// The scheduler when the plan decides it.
    pub fn known(&self) -> Option<&str> {
        match self {
            Source::Named(s, _) => Some(s),
            Source::Default(_) => Some(DEFAULT_SCHEDULER),
            _ => None,
        }
    }

    /// The target whose `[target.device]` names (or could name) the scheduler.
    pub fn owner(&self) -> Option<&str> {
        match self {
            Source::Named(_, t) | Source::Default(t) | Source::Device(t) => Some(t),
            Source::NoDevice => None,
        }
    }
}

/// Where target `t`'s scheduler comes from.
pub fn source(targets: &[Target], t: &Target) -> Source {
    if let Some(s) = &t.device.scheduler {
        return Source::Named(s.clone(), t.name.clone());
    }
    match &t.kind {
        TargetKind::Image { .. } | TargetKind::Disk { .. } => Source::Default(t.name.clone()),
        TargetKind::Dir { .. } => Source::Device(t.name.clone()),
        TargetKind::Remote { .. } | TargetKind::Nfs { .. } => Source::NoDevice,
        TargetKind::Overlay { over, .. } => match targets.iter().find(|o| &o.name == over) {
            Some(lower) if lower.name != t.name => source(targets, lower),
            _ => Source::NoDevice,
        },
    }
}

/// Whether the plan varies the scheduler itself: a `scheduler` factor, or `device`
/// profiles of which one names a scheduler.
pub fn varied(
    setting_levels: &[(String, Vec<String>)],
    devices: &BTreeMap<String, Device>,
) -> bool {
    setting_levels.iter().any(|(k, levels)| {
        k == "scheduler"
            || (k == "device"
                && levels
                    .iter()
                    .any(|l| devices.get(l).is_some_and(|d| d.scheduler.is_some())))
    })
}

/// Why targets running under `actual` schedulers (target, scheduler) break the rule, naming
/// the first target that does not name its own scheduler; `None` when they keep it.
pub fn mixed(targets: &[Target], actual: &[(String, String)]) -> Option<(String, String)> {
    let first = actual.first()?;
    let other = actual.iter().find(|(_, s)| *s != first.1)?;
    for (name, sched) in actual {
        let t = targets.iter().find(|t| &t.name == name)?;
        let src = source(targets, t);
        if matches!(src, Source::Named(..)) {
            continue;
        }
        let owner = src.owner().unwrap_or(name);
        let owner_at = targets
            .iter()
            .find(|t| t.name == owner)
            .map_or(t.at.clone(), |o| o.at.clone());
        let (them, theirs) = if sched == &first.1 { other } else { first };
        let how = match src {
            Source::Default(_) => format!(
                "fsbench's default for the devices it makes, as target {owner} names no scheduler"
            ),
            _ => format!("what its device had, as target {owner} names no scheduler"),
        };
        return Some((
            owner_at,
            format!(
                "target {name} would run under the I/O scheduler `{sched}` ({how}) while target {them} runs under `{theirs}`: the cells would differ in scheduler without the plan saying so; name {owner}'s scheduler (`[target.device] scheduler = \"...\"`), or make `scheduler` a factor"
            ),
        ));
    }
    None
}

/// The rule, as far as the plan decides the schedulers (existing directories' are checked
/// when they are set up).
pub(super) fn check(
    ctx: &Ctx,
    raw: &[Spanned<RawTarget>],
    targets: &[Target],
    target_levels: &[String],
    setting_levels: &[(String, Vec<String>)],
    devices: &BTreeMap<String, Device>,
) -> Result<(), PlanError> {
    if varied(setting_levels, devices) {
        return Ok(());
    }
    let actual: Vec<(String, String)> = target_levels
        .iter()
        .filter_map(|n| {
            let t = targets.iter().find(|t| &t.name == n)?;
            Some((n.clone(), source(targets, t).known()?.to_string()))
        })
        .collect();
    let Some((at, why)) = mixed(targets, &actual) else {
        return Ok(());
    };
    let span = targets
        .iter()
        .position(|t| t.at == at)
        .map_or(0..0, |i| raw[i].span());
    Err(ctx.err(span, why))
}

#[cfg(test)]
mod tests {
    use crate::experiment::plan::parse;
    use std::path::Path;

    const PLAN: &str = r#"[experiment]
name = "s"
repetitions = 1

[[target]]
name = "a"
kind = "image"
size = "64M"
fs = "ext4"
[target.device]
scheduler = "bfq"

[[target]]
name = "b"
kind = "image"
size = "64M"
fs = "ext4"

[[target]]
name = "ob"
kind = "overlay"
over = "b"

[factors]
target = ["a", "b"]

[[measurement]]
name = "f"
kind = "find"
"#;

    fn err(text: &str) -> String {
        parse(Path::new("s.toml"), text, false).unwrap_err().0
    }

    /// Targets that would run under different schedulers, one of them by default, are
    /// refused at the table of the target that names none.
    #[test]
    fn a_plan_mixing_schedulers_is_refused_where_one_is_not_named() {
        let e = err(PLAN);
        assert!(
            e.starts_with(
                "s.toml:13:1: target b would run under the I/O scheduler `none` (fsbench's default"
            ),
            "{e}"
        );
        assert!(e.contains("while target a runs under `bfq`"), "{e}");
        // An overlay runs under the scheduler of the target under it: named there.
        let e = err(&PLAN.replace("target = [\"a\", \"b\"]", "target = [\"a\", \"ob\"]"));
        assert!(
            e.starts_with("s.toml:13:1: target ob would run under"),
            "{e}"
        );
        assert!(e.contains("name b's scheduler"), "{e}");
    }

    #[test]
    fn named_schedulers_or_a_scheduler_factor_may_differ() {
        let named = PLAN.replace(
            "fs = \"ext4\"\n\n[[target]]\nname = \"ob\"",
            "fs = \"ext4\"\n[target.device]\nscheduler = \"none\"\n\n[[target]]\nname = \"ob\"",
        );
        parse(Path::new("s.toml"), &named, false).unwrap();
        let factor = PLAN.replace(
            "target = [\"a\", \"b\"]",
            "target = [\"a\", \"b\"]\nscheduler = [\"none\", \"bfq\"]",
        );
        parse(Path::new("s.toml"), &factor, false).unwrap();
        // The same scheduler everywhere: named or not, nothing to refuse.
        let same = PLAN.replace("scheduler = \"bfq\"", "scheduler = \"none\"");
        parse(Path::new("s.toml"), &same, false).unwrap();
    }
}
