//! Block-device settings under /sys/block/DEV/queue: I/O scheduler and its tunables,
//! read-ahead, request queue depth, rotational flag. Each old value is registered for
//! restoring before the new one is written; every value is read back afterwards.

use super::{Journal, Ready, Undo};
use crate::experiment::plan::Device;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The queue directory of a device such as /dev/loop3 or /dev/vda1 (its disk's for a
/// partition).
pub fn queue_dir(dev: &str) -> Result<PathBuf> {
    let name = dev
        .strip_prefix("/dev/")
        .with_context(|| format!("{dev} is not a block device path"))?;
    let name = name.rsplit('/').next().unwrap_or(name);
    let q = PathBuf::from(format!("/sys/class/block/{name}/queue"));
    if q.is_dir() {
        return Ok(q);
    }
    // A partition: /sys/class/block/vda1 -> .../vda/vda1.
    let real = std::fs::canonicalize(format!("/sys/class/block/{name}"))
        .with_context(|| format!("{dev}: no entry in /sys/class/block"))?;
    let parent = real.parent().map(|p| p.join("queue"));
    match parent {
        Some(p) if p.is_dir() => Ok(p),
        _ => bail!("{dev}: no queue directory in sysfs"),
    }
}

fn read(p: &Path) -> Result<String> {
    Ok(std::fs::read_to_string(p)
        .with_context(|| format!("reading {}", p.display()))?
        .trim()
        .to_string())
}

/// The active scheduler from `none [mq-deadline] kyber bfq`.
pub fn active_scheduler(text: &str) -> Option<&str> {
    text.split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']'))
}

fn set(path: PathBuf, value: &str, j: &mut Journal) -> Result<()> {
    let old = read(&path)?;
    let old = if path.ends_with("scheduler") {
        active_scheduler(&old).unwrap_or("none").to_string()
    } else {
        old
    };
    j.push(Undo::Restore {
        path: path.clone(),
        value: old,
    })?;
    std::fs::write(&path, value).with_context(|| format!("writing {value} to {}", path.display()))
}

pub fn apply(d: &Device, ready: &mut Ready, j: &mut Journal) -> Result<()> {
    let dev = ready
        .device
        .clone()
        .with_context(|| format!("{} is on no block device", ready.dir.display()))?;
    let q = queue_dir(&dev)?;
    if let Some(s) = &d.scheduler {
        let avail = read(&q.join("scheduler"))?;
        if !avail
            .split_whitespace()
            .any(|w| w.trim_matches(|c| c == '[' || c == ']') == s)
        {
            bail!("{dev}: scheduler {s} is not available (the kernel offers: {avail})");
        }
        set(q.join("scheduler"), s, j)?;
        for (k, v) in &d.tunables {
            let p = q.join("iosched").join(k);
            if !p.exists() {
                let have: Vec<String> = std::fs::read_dir(q.join("iosched"))
                    .map(|r| {
                        r.flatten()
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                bail!(
                    "{dev}: scheduler {s} has no tunable {k} (it has: {})",
                    have.join(", ")
                );
            }
            set(p, v, j)?;
        }
    }
    if let Some(v) = d.read_ahead_kb {
        set(q.join("read_ahead_kb"), &v.to_string(), j)?;
    }
    if let Some(v) = d.nr_requests {
        set(q.join("nr_requests"), &v.to_string(), j)?;
    }
    if let Some(v) = d.rotational {
        set(q.join("rotational"), if v { "1" } else { "0" }, j)?;
    }
    // Read back what the kernel holds now, asked for or not.
    let a = &mut ready.applied;
    a.insert("device".into(), dev.clone().into());
    for k in ["scheduler", "read_ahead_kb", "nr_requests", "rotational"] {
        if let Ok(v) = read(&q.join(k)) {
            let v = if k == "scheduler" {
                active_scheduler(&v).unwrap_or("none").to_string()
            } else {
                v
            };
            a.insert(k.into(), v.into());
        }
    }
    for (k, want) in &d.tunables {
        let got = read(&q.join("iosched").join(k))?;
        if &got != want {
            bail!("{dev}: iosched/{k} reads back {got} after writing {want}");
        }
        a.insert(format!("iosched/{k}"), got.into());
    }
    let check = |k: &str, want: Option<String>| -> Result<()> {
        if let Some(w) = want {
            let got = a_get(ready_applied(a), k);
            if got.as_deref() != Some(w.as_str()) {
                bail!(
                    "{dev}: {k} reads back {:?} after writing {w}",
                    got.unwrap_or_default()
                );
            }
        }
        Ok(())
    };
    check("scheduler", d.scheduler.clone())?;
    check("read_ahead_kb", d.read_ahead_kb.map(|v| v.to_string()))?;
    check("rotational", d.rotational.map(|v| (v as u8).to_string()))?;
    Ok(())
}

fn ready_applied(
    a: &std::collections::BTreeMap<String, serde_json::Value>,
) -> &std::collections::BTreeMap<String, serde_json::Value> {
    a
}

fn a_get(a: &std::collections::BTreeMap<String, serde_json::Value>, k: &str) -> Option<String> {
    a.get(k).and_then(|v| v.as_str()).map(String::from)
}

#[cfg(test)]
mod tests {
    #[test]
    fn active_scheduler_is_bracketed() {
        assert_eq!(
            super::active_scheduler("none [mq-deadline] kyber bfq"),
            Some("mq-deadline")
        );
        assert_eq!(super::active_scheduler("[none] mq-deadline"), Some("none"));
    }
}
