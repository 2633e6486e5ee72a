//! Checks shared by the sections of a plan: errors located in the file, scalar values,
//! device settings, networks and lookaside trees.

use super::schema::RawDevice;
use super::{line_col, Device, Lookaside, PlanError, Ty};
use std::path::Path;
use toml::Spanned;

pub(super) struct Ctx<'a> {
    pub(super) file: &'a Path,
    pub(super) text: &'a str,
}

impl Ctx<'_> {
    /// `file:line:col` of a place in the plan.
    pub(super) fn at(&self, span: std::ops::Range<usize>) -> String {
        let (line, col) = line_col(self.text, span.start);
        format!("{}:{line}:{col}", self.file.display())
    }

    pub(super) fn err(
        &self,
        span: std::ops::Range<usize>,
        msg: impl std::fmt::Display,
    ) -> PlanError {
        let (line, col) = line_col(self.text, span.start);
        let (src, caret) = window(self.text.lines().nth(line - 1).unwrap_or(""), col);
        PlanError(format!(
            "{}:{line}:{col}: {msg}\n  {src}\n  {}^",
            self.file.display(),
            " ".repeat(caret)
        ))
    }
}

/// The part of a line shown under a message, and the caret's place in it: a long line (a
/// generated plan, nesting past the TOML parser's limit) by the 60 characters each side of
/// column `col` (from 1, in characters).
fn window(src: &str, col: usize) -> (String, usize) {
    const SIDE: usize = 60;
    let chars: Vec<char> = src.chars().collect();
    let at = col.saturating_sub(1).min(chars.len());
    let (from, to) = (at.saturating_sub(SIDE), (at + SIDE).min(chars.len()));
    let mut shown = String::new();
    let mut caret = at - from;
    if from > 0 {
        shown.push_str("...");
        caret += 3;
    }
    shown.extend(&chars[from..to]);
    if to < chars.len() {
        shown.push_str("...");
    }
    (shown, caret)
}

/// Check a network level: a preset of `fsbench remote` or "BANDWIDTH/RTT".
pub(super) fn check_network(s: &str) -> Result<(), String> {
    if fsbench_tools::remote::model::Net::preset(s).is_some() {
        return Ok(());
    }
    let presets = fsbench_tools::remote::model::PRESETS
        .iter()
        .map(|p| p.0)
        .collect::<Vec<_>>()
        .join(", ");
    let Some((b, r)) = s.split_once('/') else {
        return Err(format!(
            "network {s:?}: expected a preset ({presets}) or \"BANDWIDTH/RTT\" such as \"10mbit/20ms\""
        ));
    };
    fsbench_base::units::parse_bandwidth(b).map_err(|e| format!("network {s:?}: {e}"))?;
    fsbench_base::units::parse_rtt(r).map_err(|e| format!("network {s:?}: {e}"))?;
    Ok(())
}

/// A lookaside level from the plan: "none", a share from 0 to 1, or a directory
/// (relative to the plan).
pub(super) fn lookaside_of(
    ctx: &Ctx,
    v: &Spanned<toml::Value>,
    base_dir: &Path,
) -> Result<Option<Lookaside>, PlanError> {
    match v.get_ref() {
        toml::Value::String(s) if s == "none" => Ok(None),
        toml::Value::String(s) if Lookaside::pair(s).is_some() => {
            let Some(Lookaside::Common(f, Some(b))) = Lookaside::pair(s) else {
                unreachable!("a pair")
            };
            if !(0.0..=1.0).contains(&f) || !(0.0..=1.0).contains(&b) {
                return Err(ctx.err(
                    v.span(),
                    format!("lookaside {s:?}: shares of files and bytes in common, each from 0 to 1"),
                ));
            }
            Ok(Some(Lookaside::Common(f, Some(b))))
        }
        toml::Value::String(s) => {
            let p = base_dir.join(s);
            if !p.is_dir() {
                return Err(ctx.err(
                    v.span(),
                    format!("lookaside {}: not an existing directory", p.display()),
                ));
            }
            Ok(Some(Lookaside::Dir(p)))
        }
        toml::Value::Float(_) | toml::Value::Integer(_) => {
            let f = match v.get_ref() {
                toml::Value::Float(f) => *f,
                toml::Value::Integer(i) => *i as f64,
                _ => unreachable!(),
            };
            if !(0.0..=1.0).contains(&f) {
                return Err(ctx.err(
                    v.span(),
                    "lookaside: a share of files in common, from 0 to 1",
                ));
            }
            Ok(Some(Lookaside::Common(f, None)))
        }
        _ => Err(ctx.err(
            v.span(),
            "lookaside: expected \"none\", a share of files in common (0 to 1), shares of files and bytes in common (\"0.9/0.79\") or a directory",
        )),
    }
}

/// A device-settings table (a target's `device`, or a `[devices.NAME]` profile).
pub(super) fn device_of(ctx: &Ctx, d: &RawDevice) -> Result<Device, PlanError> {
    let mut device = Device {
        scheduler: d.scheduler.as_ref().map(|s| s.get_ref().clone()),
        ..Default::default()
    };
    if let Some(s) = &d.scheduler {
        if !["none", "mq-deadline", "bfq", "kyber"].contains(&s.get_ref().as_str()) {
            return Err(ctx.err(
                s.span(),
                "scheduler: expected none, mq-deadline, bfq or kyber",
            ));
        }
    }
    for (k, v) in &d.tunables {
        if device.scheduler.is_none() {
            return Err(ctx.err(
                v.span(),
                "tunables need `scheduler` (they belong to one scheduler)",
            ));
        }
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(ctx.err(
                v.span(),
                format!("tunable name {k:?}: expected a file name under queue/iosched/"),
            ));
        }
        let s = scalar(v.get_ref())
            .ok_or_else(|| ctx.err(v.span(), "expected a number, a string or a boolean"))?;
        let s = match s.as_str() {
            "true" => "1".into(),
            "false" => "0".into(),
            _ => s,
        };
        device.tunables.push((k.clone(), s));
    }
    device.read_ahead_kb = d.read_ahead_kb.as_ref().map(|v| *v.get_ref());
    device.nr_requests = d.nr_requests.as_ref().map(|v| *v.get_ref());
    device.rotational = d.rotational.as_ref().map(|v| *v.get_ref());
    Ok(device)
}

/// Canonical text of a scalar TOML value: a factor level as the cells' factors hold it.
pub(crate) fn scalar(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(super) fn typed(
    ctx: &Ctx,
    v: &Spanned<toml::Value>,
    ty: Ty,
    what: &str,
) -> Result<String, PlanError> {
    let ok = match (ty, v.get_ref()) {
        (Ty::Int, toml::Value::Integer(i)) => *i >= 0,
        (Ty::Float, toml::Value::Float(f)) => f.is_finite() && *f >= 0.0,
        (Ty::Float, toml::Value::Integer(i)) => *i >= 0,
        (Ty::Str, toml::Value::String(_)) => true,
        (Ty::Bool, toml::Value::Boolean(_)) => true,
        _ => false,
    };
    if !ok {
        let want = match ty {
            Ty::Int => "a non-negative integer",
            Ty::Float => "a non-negative number",
            Ty::Str => "a string",
            Ty::Bool => "true or false",
        };
        return Err(ctx.err(v.span(), format!("{what}: expected {want}")));
    }
    Ok(scalar(v.get_ref()).expect("scalar checked above"))
}

#[cfg(test)]
mod tests {
    use super::window;

    #[test]
    fn long_lines_are_shown_around_the_column() {
        assert_eq!(window("a = 1", 5), ("a = 1".to_string(), 4));
        let long = format!("x = {}{}", "[".repeat(1000), "]".repeat(1000));
        let (shown, caret) = window(&long, 300);
        assert!(
            shown.starts_with("...[") && shown.ends_with("[..."),
            "{shown}"
        );
        assert_eq!(shown.chars().count(), 126);
        assert_eq!(caret, 63);
    }
}
