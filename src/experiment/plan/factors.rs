//! The plan-wide `[factors]` and the `[devices.NAME]` profiles that are levels of one.

use super::check::{check_network, device_of, lookaside_of, Ctx};
use super::schema::{RawDevice, RawFactors};
use super::{Device, Lookaside, PlanError, Target, TargetKind};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

/// Device profiles by name, with their places in the file.
pub(super) type Profiles = BTreeMap<String, (Device, Range<usize>)>;

/// Levels of the `target` factor: the targets named, or the one target of the plan.
pub(super) fn target_levels(
    ctx: &Ctx,
    f: &RawFactors,
    targets: &[Target],
) -> Result<Vec<String>, PlanError> {
    let Some(l) = &f.target else {
        if targets.len() != 1 {
            return Err(PlanError(format!(
                "{}: with {} targets, [factors] needs `target = [...]` naming the ones to measure in",
                ctx.file.display(),
                targets.len()
            )));
        }
        return Ok(vec![targets[0].name.clone()]);
    };
    if l.get_ref().is_empty() {
        return Err(ctx.err(l.span(), "factor `target` needs at least one level"));
    }
    let mut v = Vec::new();
    for n in l.get_ref() {
        if !targets.iter().any(|t| &t.name == n.get_ref()) {
            return Err(ctx.err(n.span(), format!("no target named {:?}", n.get_ref())));
        }
        if v.contains(n.get_ref()) {
            return Err(ctx.err(n.span(), "level listed twice"));
        }
        v.push(n.get_ref().clone());
    }
    Ok(v)
}

/// Levels of the `cache` factor ("warm" when the plan does not vary it).
pub(super) fn cache_levels(
    ctx: &Ctx,
    f: &RawFactors,
    targets: &[Target],
    target_levels: &[String],
) -> Result<Vec<String>, PlanError> {
    let Some(l) = &f.cache else {
        return Ok(vec!["warm".into()]);
    };
    let mut v = Vec::new();
    for c in l.get_ref() {
        if !["cold", "warm", "remount"].contains(&c.get_ref().as_str()) {
            return Err(ctx.err(c.span(), format!("cache {:?}: expected \"cold\" (sync and drop caches before each measurement), \"remount\" (unmount and mount the target's file system) or \"warm\"", c.get_ref())));
        }
        if c.get_ref() == "remount" {
            // Only what fsbench mounted can be unmounted and mounted again.
            for tn in target_levels {
                let t = targets
                    .iter()
                    .find(|t| &t.name == tn)
                    .expect("checked level");
                if let TargetKind::Dir { path } = &t.kind {
                    return Err(ctx.err(c.span(), format!("cache \"remount\": target {tn} is an existing directory ({}), which fsbench does not mount; remount needs image, disk or overlay targets (or use \"cold\")", path.display())));
                }
                if let TargetKind::Remote { .. } = &t.kind {
                    return Err(ctx.err(c.span(), format!("cache \"remount\": target {tn} is a remote; use \"cold\", which empties its client cache")));
                }
            }
        }
        v.push(c.get_ref().clone());
    }
    if v.is_empty() {
        return Err(ctx.err(l.span(), "factor `cache` needs at least one level"));
    }
    Ok(v)
}

/// The `[devices.NAME]` profiles.
pub(super) fn devices(
    ctx: &Ctx,
    raw: &BTreeMap<String, Spanned<RawDevice>>,
) -> Result<Profiles, PlanError> {
    let mut devices = BTreeMap::new();
    for (dn, d) in raw {
        if dn.is_empty()
            || !dn
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(ctx.err(
                d.span(),
                format!("device profile name {dn:?}: use letters, digits, '-', '_' and '.'"),
            ));
        }
        let dev = device_of(ctx, d.get_ref())?;
        if dev.is_empty() {
            return Err(ctx.err(d.span(), format!("device profile {dn} sets nothing")));
        }
        devices.insert(dn.clone(), (dev, d.span()));
    }
    Ok(devices)
}

/// The plan-wide factors over device and remote settings, each with its levels.
pub(super) struct Settings<'a> {
    pub(super) ctx: &'a Ctx<'a>,
    pub(super) f: &'a RawFactors,
    pub(super) devices: &'a Profiles,
    pub(super) levels: Vec<(String, Vec<String>)>,
}

impl Settings<'_> {
    /// Every setting factor, in the order cells list them.
    pub(super) fn read(
        mut self,
        targets: &[Target],
        target_levels: &[String],
        base_dir: &Path,
    ) -> Result<Vec<(String, Vec<String>)>, PlanError> {
        self.device_levels()?;
        self.remote_levels(targets, target_levels, base_dir)?;
        if let Some(l) = &self.f.memory {
            // Values are checked against each measurement's start estimate later
            // (super::memory::check); here they become the factor's levels.
            let v = l
                .get_ref()
                .iter()
                .map(|x| {
                    (
                        super::check::scalar(x.get_ref()).unwrap_or_default(),
                        x.span(),
                    )
                })
                .collect();
            self.add("memory", l.span(), v)?;
        }
        self.varied_once()?;
        Ok(self.levels)
    }

    fn add(
        &mut self,
        key: &str,
        span: Range<usize>,
        levels: Vec<(String, Range<usize>)>,
    ) -> Result<(), PlanError> {
        if levels.is_empty() {
            return Err(self
                .ctx
                .err(span, format!("factor `{key}` needs at least one level")));
        }
        let mut v: Vec<String> = Vec::new();
        for (l, sp) in levels {
            if v.contains(&l) {
                return Err(self.ctx.err(sp, "level listed twice"));
            }
            v.push(l);
        }
        self.levels.push((key.to_string(), v));
        Ok(())
    }

    /// `device` (profiles), `scheduler`, `read_ahead_kb`, `nr_requests`, `rotational`.
    fn device_levels(&mut self) -> Result<(), PlanError> {
        let (ctx, f, devices) = (self.ctx, self.f, self.devices);
        if let Some(l) = &f.device {
            let mut v = Vec::new();
            for d in l.get_ref() {
                if !devices.contains_key(d.get_ref()) {
                    return Err(ctx.err(d.span(), no_profile(d.get_ref(), devices)));
                }
                v.push((d.get_ref().clone(), d.span()));
            }
            self.add("device", l.span(), v)?;
        } else if let Some((dn, (_, sp))) = devices.iter().next() {
            return Err(ctx.err(
                sp.clone(),
                format!("[devices.{dn}] is a level of the `device` factor, which the plan does not have: add `device = [\"{dn}\", ...]` under [factors]"),
            ));
        }
        if let Some(l) = &f.scheduler {
            let mut v = Vec::new();
            for x in l.get_ref() {
                if !["none", "mq-deadline", "bfq", "kyber"].contains(&x.get_ref().as_str()) {
                    return Err(ctx.err(
                        x.span(),
                        "scheduler: expected none, mq-deadline, bfq or kyber",
                    ));
                }
                v.push((x.get_ref().clone(), x.span()));
            }
            self.add("scheduler", l.span(), v)?;
        }
        for (key, l) in [
            ("read_ahead_kb", &f.read_ahead_kb),
            ("nr_requests", &f.nr_requests),
        ] {
            if let Some(l) = l {
                self.add(key, l.span(), texts(l.get_ref()))?;
            }
        }
        if let Some(l) = &f.rotational {
            self.add("rotational", l.span(), texts(l.get_ref()))?;
        }
        Ok(())
    }

    /// `network` and `lookaside`: every target measured must be a remote.
    fn remote_levels(
        &mut self,
        targets: &[Target],
        target_levels: &[String],
        base_dir: &Path,
    ) -> Result<(), PlanError> {
        let (ctx, f) = (self.ctx, self.f);
        let remote_factor_span = f
            .network
            .as_ref()
            .map(|l| l.span())
            .or(f.lookaside.as_ref().map(|l| l.span()));
        if let Some(span) = remote_factor_span {
            for tn in target_levels {
                let t = targets
                    .iter()
                    .find(|t| &t.name == tn)
                    .expect("checked level");
                if !matches!(t.kind, TargetKind::Remote { .. }) {
                    return Err(ctx.err(
                        span,
                        format!("`network` and `lookaside` factors apply to remote targets, and target {tn} is of kind {}", t.kind_name()),
                    ));
                }
            }
        }
        if let Some(l) = &f.network {
            let mut v = Vec::new();
            for x in l.get_ref() {
                check_network(x.get_ref()).map_err(|e| ctx.err(x.span(), e))?;
                v.push((x.get_ref().clone(), x.span()));
            }
            self.add("network", l.span(), v)?;
        }
        if let Some(l) = &f.lookaside {
            let mut v = Vec::new();
            for x in l.get_ref() {
                let la = lookaside_of(ctx, x, base_dir)?;
                v.push((Lookaside::level(la.as_ref()), x.span()));
            }
            self.add("lookaside", l.span(), v)?;
        }
        Ok(())
    }

    /// A setting is varied in one place: a single-setting factor or the profiles.
    fn varied_once(&self) -> Result<(), PlanError> {
        let f = self.f;
        for (key, span) in [
            ("scheduler", f.scheduler.as_ref().map(|l| l.span())),
            ("read_ahead_kb", f.read_ahead_kb.as_ref().map(|l| l.span())),
            ("nr_requests", f.nr_requests.as_ref().map(|l| l.span())),
            ("rotational", f.rotational.as_ref().map(|l| l.span())),
        ] {
            let Some(span) = span else { continue };
            for (dn, (d, _)) in self.devices {
                let sets = match key {
                    "scheduler" => d.scheduler.is_some(),
                    "read_ahead_kb" => d.read_ahead_kb.is_some(),
                    "nr_requests" => d.nr_requests.is_some(),
                    _ => d.rotational.is_some(),
                };
                if sets {
                    return Err(self.ctx.err(
                        span,
                        format!("`{key}` is a factor and device profile {dn} sets it too: vary it in one place"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Levels as text, with their places.
fn texts<T: ToString>(l: &[Spanned<T>]) -> Vec<(String, Range<usize>)> {
    l.iter()
        .map(|x| (x.get_ref().to_string(), x.span()))
        .collect()
}

fn no_profile(name: &str, devices: &Profiles) -> String {
    let have: Vec<&String> = devices.keys().collect();
    format!(
        "device {:?}: no [devices.{}] table in the plan{}",
        name,
        name,
        if have.is_empty() {
            String::new()
        } else {
            format!(
                " (profiles: {})",
                have.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    )
}
