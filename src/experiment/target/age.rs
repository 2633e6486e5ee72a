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
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&json).with_context(|| format!("reading {}", json.display()))?,
    )
    .with_context(|| format!("parsing {}", json.display()))?;
    let mut facts = serde_json::Map::new();
    for k in [
        "profile",
        "seed",
        "ops",
        "churn_ops",
        "fullness_end",
        "live_files",
        "converged",
    ] {
        if let Some(v) = report.get(k) {
            facts.insert(k.into(), v.clone());
        }
    }
    for k in ["layout_before", "layout_after"] {
        if let Some(s) = report.get(k).and_then(|l| l.get("score")) {
            facts.insert(format!("{k}_score"), s.clone());
        }
    }
    facts.insert("report".into(), json.display().to_string().into());
    ready
        .applied
        .insert("age".into(), serde_json::Value::Object(facts));
    Ok(())
}
