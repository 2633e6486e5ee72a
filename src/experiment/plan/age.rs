//! A target's `[target.age]` table: the aging step `fsbench age` takes on the target before
//! it is measured. Its keys are `fsbench age`'s own options, by long name (`day_ops` for
//! `--day-ops`), from the same clap definitions as the command line, so every aging option
//! is a plan key; `quick = { ... }` overrides any of them at `--quick` (`quick_ops` is the
//! same as `quick = { ops = ... }`). Besides: `per` (age once per set-up, or before every
//! repetition) and `from_scan` (a real tree, scanned read-only by the runner, whose
//! population the target is aged towards, its own layout measured beside).

use super::check::{typed, Ctx};
use super::kinds::{cmd, value_type};
use super::{Age, AgePer, Arg, PlanError, Ty};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use toml::Spanned;

type Table = BTreeMap<String, Spanned<toml::Value>>;

/// `fsbench age` options the runner sets itself or that do not age a target in place.
const NOT_PLAN_KEYS: &[&str] = &[
    "dir",
    "json",
    "quiet",
    "log",
    "replay_snapshots",
    "short_lived",
    "next_version",
    "keep",
    "keep_bytes",
    "edit_share",
    "help",
];

/// One aging option: plan key, flag, how it is passed, type.
pub struct AgeParam {
    pub name: String,
    pub flag: String,
    pub arg: Arg,
    pub ty: Ty,
    /// The values an enumerated option takes (`writeback`).
    pub choices: Vec<String>,
}

/// Every plan key of `[target.age]` but `per`, `quick`, `quick_ops` and `from_scan`.
pub fn age_params() -> &'static [AgeParam] {
    static TABLE: OnceLock<Vec<AgeParam>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let c = cmd::<fsbench_tools::age::args::AgeArgs>();
        c.get_arguments()
            .filter(|a| !a.is_positional() && !a.is_hide_set())
            .filter_map(|a| {
                let long = a.get_long()?;
                let name = long.replace('-', "_");
                if NOT_PLAN_KEYS.contains(&name.as_str()) {
                    return None;
                }
                let switch = matches!(a.get_action(), clap::ArgAction::SetTrue);
                let (arg, ty) = if switch {
                    (Arg::Switch, Ty::Bool)
                } else {
                    (Arg::Value, value_type(a))
                };
                let choices = a
                    .get_possible_values()
                    .iter()
                    .filter(|p| !p.is_hide_set())
                    .map(|p| p.get_name().to_string())
                    .collect();
                Some(AgeParam {
                    name,
                    flag: format!("--{long}"),
                    arg,
                    ty,
                    choices,
                })
            })
            .collect()
    })
}

/// One key's value as `fsbench age` takes it, checked against its option.
fn value_of(ctx: &Ctx, key: &str, v: &Spanned<toml::Value>) -> Result<String, PlanError> {
    let Some(p) = age_params().iter().find(|p| p.name == key) else {
        let mut keys: Vec<&str> = age_params().iter().map(|p| p.name.as_str()).collect();
        keys.extend(["per", "quick", "quick_ops", "from_scan"]);
        return Err(ctx.err(
            v.span(),
            format!("age `{key}`: expected one of {}", keys.join(", ")),
        ));
    };
    let s = typed(ctx, v, p.ty, key)?;
    if !p.choices.is_empty() && !p.choices.contains(&s) {
        return Err(ctx.err(
            v.span(),
            format!(
                "age `{key}` = {s:?}: expected one of {}",
                p.choices.join(", ")
            ),
        ));
    }
    Ok(s)
}

/// The plan's aging options with the quick scale's over them, checked.
fn options(
    ctx: &Ctx,
    a: &Table,
    quick: bool,
) -> Result<BTreeMap<String, (String, std::ops::Range<usize>)>, PlanError> {
    let mut out = BTreeMap::new();
    for (k, v) in a {
        if !["per", "quick", "quick_ops", "from_scan"].contains(&k.as_str()) {
            out.insert(k.clone(), (value_of(ctx, k, v)?, v.span()));
        }
    }
    let quick_table = match a.get("quick").map(|q| (q.get_ref(), q.span())) {
        None => None,
        Some((toml::Value::Table(t), _)) => Some(t),
        Some((_, span)) => {
            return Err(ctx.err(span, "age `quick`: expected a table of aging options"))
        }
    };
    if quick {
        if let Some(q) = a.get("quick_ops") {
            out.insert("ops".into(), (value_of(ctx, "ops", q)?, q.span()));
        }
        for (k, v) in quick_table.into_iter().flatten() {
            let v = Spanned::new(a["quick"].span(), v.clone());
            out.insert(k.clone(), (value_of(ctx, k, &v)?, v.span()));
        }
    }
    Ok(out)
}

/// A target's `age` table.
pub(super) fn age_of(
    ctx: &Ctx,
    a: &Spanned<Table>,
    base_dir: &Path,
    quick: bool,
) -> Result<Age, PlanError> {
    let (span, table) = (a.span(), a.get_ref());
    let opts = options(ctx, table, quick)?;
    let get = |k: &str| opts.get(k).map(|(v, _)| v.as_str());
    if get("ops").is_none() {
        return Err(ctx.err(
            span,
            "age needs `ops` (operations after the target fullness)",
        ));
    }
    if let Some((f, s)) = opts.get("fill") {
        let f: f64 = f.parse().unwrap_or(-1.0);
        if !(f > 0.0 && f < 1.0) {
            return Err(ctx.err(s.clone(), "fill: expected a fraction between 0 and 1"));
        }
    }
    let per = match table.get("per").map(|p| (p.get_ref(), p.span())) {
        None => AgePer::Target,
        Some((toml::Value::String(p), _)) if p == "target" => AgePer::Target,
        Some((toml::Value::String(p), _)) if p == "repetition" => AgePer::Repetition,
        Some((p, s)) => {
            return Err(ctx.err(s, format!("per {p}: expected \"target\" or \"repetition\"")))
        }
    };
    let from_scan = from_scan(ctx, table, base_dir)?;
    let towards = [get("from_snapshot").is_some(), from_scan.is_some()];
    if towards.iter().filter(|t| **t).count() + get("profile").is_some() as usize > 1 {
        return Err(ctx.err(
            span,
            "age: give one of `profile`, `from_snapshot` and `from_scan` (what to age towards)",
        ));
    }
    if let Some((p, s)) = opts.get("profile") {
        if fsbench_tools::age::profile::Profile::builtin(p).is_err() {
            return Err(ctx.err(s.clone(), format!("age profile {p:?} is not built in")));
        }
    }
    let mut args: Vec<(String, String)> = opts.into_iter().map(|(k, (v, _))| (k, v)).collect();
    if let Some(i) = args.iter().position(|(k, _)| k == "from_snapshot") {
        let p = Path::new(&args[i].1);
        args[i].1 = base_dir.join(p).display().to_string();
    }
    Ok(Age {
        args,
        per,
        from_scan,
    })
}

/// `from_scan`: an existing directory (relative to the plan's directory), only read.
fn from_scan(ctx: &Ctx, a: &Table, base_dir: &Path) -> Result<Option<PathBuf>, PlanError> {
    let Some(v) = a.get("from_scan") else {
        return Ok(None);
    };
    let s = typed(ctx, v, Ty::Str, "from_scan")?;
    let p = base_dir.join(&s);
    if !p.is_dir() {
        return Err(ctx.err(
            v.span(),
            format!(
                "from_scan {s:?}: {} is not a directory (the tree to scan, read only, and age towards)",
                p.display()
            ),
        ));
    }
    Ok(Some(p))
}

impl Age {
    /// An option's value as the plan gives it (quick scale applied).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.args
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The command-line arguments of `fsbench age` for these options.
    pub fn flags(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (k, v) in &self.args {
            let Some(p) = age_params().iter().find(|p| &p.name == k) else {
                continue;
            };
            match p.arg {
                Arg::Switch if v == "true" => out.push(p.flag.clone()),
                Arg::Switch => {}
                _ => out.extend([p.flag.clone(), v.clone()]),
            }
        }
        out
    }

    /// What the aging does, in a few words.
    pub fn describe(&self) -> String {
        let towards = match (&self.from_scan, self.get("from_snapshot")) {
            (Some(p), _) => format!(
                "the population of {} (scanned read only, its layout measured beside)",
                p.display()
            ),
            (None, Some(s)) => format!("the snapshot {s}"),
            (None, None) => format!("profile {}", self.get("profile").unwrap_or("agrawal")),
        };
        format!(
            "{towards} to {}% then {} operations, seed {}, writeback {}",
            self.get("fill")
                .and_then(|f| f.parse::<f64>().ok())
                .map_or("80".into(), |f| format!("{:.0}", f * 100.0)),
            self.get("ops").unwrap_or("?"),
            self.get("seed").unwrap_or("1"),
            self.get("writeback").unwrap_or("range"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_aging_option_is_a_plan_key() {
        let names: Vec<&str> = age_params().iter().map(|p| p.name.as_str()).collect();
        for k in [
            "fill",
            "seed",
            "profile",
            "from_snapshot",
            "ops",
            "writeback",
            "commit_every",
            "day_ops",
            "layout_every",
            "threads",
            "until_converged",
        ] {
            assert!(names.contains(&k), "{k} missing from {names:?}");
        }
        for k in ["dir", "json", "quiet", "log", "next_version"] {
            assert!(!names.contains(&k), "{k} is the runner's");
        }
        let w = age_params().iter().find(|p| p.name == "writeback").unwrap();
        assert!(w.choices.contains(&"range".to_string()), "{:?}", w.choices);
        let u = age_params()
            .iter()
            .find(|p| p.name == "until_converged")
            .unwrap();
        assert_eq!(u.arg, Arg::Switch);
    }
}
