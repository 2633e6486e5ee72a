//! The aging step: `fsbench age` on a target before measuring, once per set-up or once per
//! repetition. Its report (layout score before and after, fullness, distances) is recorded
//! with every result measured on the aged target.

use super::{Journal, Ready, Undo};
use crate::experiment::plan::Age;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

pub fn run(a: &Age, ready: &mut Ready, outdir: &Path, tag: &str, j: &mut Journal) -> Result<()> {
    let aged = ready.dir.join(crate::age::cli::AGED_DIR);
    if !aged.exists() {
        // fsbench age creates and marks it; it goes with the target's teardown.
        j.push(Undo::RemoveMarkedTree {
            dir: aged.clone(),
            id: None,
            marker: crate::engine::rundir::MARKER.into(),
        })?;
    }
    let logs = outdir.join("age");
    std::fs::create_dir_all(&logs)?;
    let json = logs.join(format!("{}-{tag}.json", ready.name));
    let exe = crate::experiment::self_exe()?;
    let out = Command::new(exe)
        .arg("age")
        .arg(&ready.dir)
        .args(["--profile", &a.profile])
        .args(["--fill", &a.fill.to_string()])
        .args(["--ops", &a.ops.to_string()])
        .args(["--seed", &a.seed.to_string()])
        .arg("--json")
        .arg(&json)
        .arg("-q")
        .output()
        .context("running fsbench age")?;
    if !out.status.success() {
        bail!(
            "target {}: fsbench age failed: {}",
            ready.name,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let report: crate::age::cli::AgeReport = serde_json::from_str(
        &crate::input::read_text(&json, crate::input::RESULTS)
            .with_context(|| format!("reading {}", json.display()))?,
    )
    .with_context(|| format!("{} is not an aging report", json.display()))?;
    let mut facts = age_facts(&report);
    facts.insert("report".into(), json.display().to_string().into());
    ready
        .applied
        .insert("age".into(), serde_json::Value::Object(facts));
    Ok(())
}

/// What the target records of its aging step, from the report `fsbench age` wrote.
fn age_facts(r: &crate::age::cli::AgeReport) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::json;
    let mut facts = serde_json::Map::new();
    facts.insert("profile".into(), json!(r.profile));
    facts.insert("seed".into(), json!(r.seed));
    facts.insert("ops".into(), json!(r.ops));
    facts.insert("churn_ops".into(), json!(r.churn_ops));
    facts.insert("fullness_end".into(), json!(r.fullness_end));
    facts.insert("live_files".into(), json!(r.live_files));
    facts.insert("converged".into(), json!(r.converged));
    for (k, l) in [
        ("layout_before_score", &r.layout_before),
        ("layout_after_score", &r.layout_after),
    ] {
        if let Some(l) = l {
            facts.insert(k.into(), json!(l.score));
        }
    }
    facts
}
