//! Block-device settings under /sys/block/DEV/queue: I/O scheduler and its tunables,
//! read-ahead, request queue depth, rotational flag. Each old value is registered for
//! restoring before the new one is written; every value is read back afterwards.

use super::{Journal, QueueValue, Ready};
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

use fsbench_base::sys::iosched::active_scheduler;

/// Write `value` to setting `knob` of queue directory `q`, registering the old value (with
/// the device's identity) for restoring.
fn set(q: &Path, knob: &str, value: &str, j: &mut Journal) -> Result<()> {
    let path = q.join(knob);
    let old = read(&path)?;
    let old = if knob == "scheduler" {
        active_scheduler(&old).unwrap_or("none").to_string()
    } else {
        old
    };
    // The first value seen is the one to restore; later changes (device settings varied as
    // factors) register nothing more.
    j.push_restore(QueueValue::new(q, knob, old)?)?;
    std::fs::write(&path, value).with_context(|| format!("writing {value} to {}", path.display()))
}

/// The settings a block device has now: scheduler, read-ahead, queue depth, rotational.
pub fn current(dev: &str) -> Result<Device> {
    let q = queue_dir(dev)?;
    let num = |k: &str| -> Result<u64> {
        let v = read(&q.join(k))?;
        v.parse()
            .with_context(|| format!("{dev}: {k} reads {v:?}, not a number"))
    };
    Ok(Device {
        scheduler: Some(
            active_scheduler(&read(&q.join("scheduler"))?)
                .unwrap_or("none")
                .to_string(),
        ),
        tunables: Vec::new(),
        read_ahead_kb: Some(num("read_ahead_kb")?),
        nr_requests: Some(num("nr_requests")?),
        rotational: Some(num("rotational")? != 0),
    })
}

/// Bring the device under `ready` to `want` (at set-up, or before a cell's measurement),
/// writing only the fields `want` sets and only where they differ. `last` is what the previous cell asked for: when
/// the scheduler stays but its tunables change, the scheduler is selected afresh first (by
/// way of `none`), so that tunables a previous level set and this one does not are back at
/// their defaults. Everything is read back into `ready.applied`.
pub fn apply_cell(
    want: &Device,
    last: Option<&Device>,
    ready: &mut Ready,
    j: &mut Journal,
) -> Result<()> {
    let dev = ready.device.clone().with_context(|| {
        format!(
            "{} is on no block device, so its device settings cannot be set",
            ready.dir.display()
        )
    })?;
    let q = queue_dir(&dev)?;
    let now = current(&dev)?;
    set_scheduler(&dev, &q, &now, want, last, j)?;
    // After the scheduler: selecting one resets the queue depth.
    let now = current(&dev)?;
    for (key, w, n) in [
        ("read_ahead_kb", want.read_ahead_kb, now.read_ahead_kb),
        ("nr_requests", want.nr_requests, now.nr_requests),
        (
            "rotational",
            want.rotational.map(u64::from),
            now.rotational.map(u64::from),
        ),
    ] {
        if let Some(v) = w.filter(|v| Some(*v) != n) {
            set(&q, key, &v.to_string(), j)?;
        }
    }
    read_back(&dev, &q, want, ready)
}

/// Select the scheduler `want` names (afresh when its tunables change) and write its
/// tunables.
fn set_scheduler(
    dev: &str,
    q: &Path,
    now: &Device,
    want: &Device,
    last: Option<&Device>,
    j: &mut Journal,
) -> Result<()> {
    if let Some(s) = &want.scheduler {
        let avail = read(&q.join("scheduler"))?;
        if !avail
            .split_whitespace()
            .any(|w| w.trim_matches(|c| c == '[' || c == ']') == s)
        {
            bail!("{dev}: scheduler {s} is not available (the kernel offers: {avail})");
        }
        let same = now.scheduler.as_deref() == Some(s.as_str());
        let tunables_changed = last.is_some_and(|l| l.tunables != want.tunables);
        if same && tunables_changed && s != "none" {
            set(q, "scheduler", "none", j)?;
        }
        if !same || tunables_changed {
            set(q, "scheduler", s, j)?;
        }
        for (k, v) in &want.tunables {
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
            set(q, &format!("iosched/{k}"), v, j)?;
        }
    }
    Ok(())
}

/// Read every setting back into `ready.applied`, and fail when one asked for did not
/// take.
fn read_back(dev: &str, q: &Path, want: &Device, ready: &mut Ready) -> Result<()> {
    let got = current(dev)?;
    let a = &mut ready.applied;
    a.retain(|k, _| !k.starts_with("iosched/"));
    a.insert(
        "scheduler".into(),
        got.scheduler.clone().unwrap_or_default().into(),
    );
    a.insert(
        "read_ahead_kb".into(),
        got.read_ahead_kb.unwrap_or(0).to_string().into(),
    );
    a.insert(
        "nr_requests".into(),
        got.nr_requests.unwrap_or(0).to_string().into(),
    );
    a.insert(
        "rotational".into(),
        (got.rotational.unwrap_or(false) as u8).to_string().into(),
    );
    for (k, want_v) in &want.tunables {
        let v = read(&q.join("iosched").join(k))?;
        if &v != want_v {
            bail!("{dev}: iosched/{k} reads back {v} after writing {want_v}");
        }
    }
    // Every tunable of the scheduler now active, asked for or not.
    if let Ok(rd) = std::fs::read_dir(q.join("iosched")) {
        for e in rd.flatten() {
            if let Ok(v) = read(&e.path()) {
                a.insert(
                    format!("iosched/{}", e.file_name().to_string_lossy()),
                    v.into(),
                );
            }
        }
    }
    for (k, w, g) in [
        ("scheduler", want.scheduler.clone(), got.scheduler.clone()),
        (
            "read_ahead_kb",
            want.read_ahead_kb.map(|v| v.to_string()),
            got.read_ahead_kb.map(|v| v.to_string()),
        ),
        (
            "nr_requests",
            want.nr_requests.map(|v| v.to_string()),
            got.nr_requests.map(|v| v.to_string()),
        ),
        (
            "rotational",
            want.rotational.map(|v| v.to_string()),
            got.rotational.map(|v| v.to_string()),
        ),
    ] {
        if w.is_some() && w != g {
            bail!(
                "{dev}: {k} reads back {} after writing {}",
                g.unwrap_or_default(),
                w.unwrap_or_default()
            );
        }
    }
    Ok(())
}

/// The settings a cell asks for: the target's as set up (`base`, read back), with the
/// cell's device-setting factor levels over them.
pub fn for_cell(
    base: &Device,
    settings: &[(String, String)],
    profiles: &std::collections::BTreeMap<String, Device>,
) -> Device {
    let mut d = base.clone();
    for (k, v) in settings {
        match k.as_str() {
            "device" => {
                let p = &profiles[v];
                if let Some(s) = &p.scheduler {
                    if Some(s) != d.scheduler.as_ref() || !p.tunables.is_empty() {
                        d.tunables = p.tunables.clone();
                    }
                    d.scheduler = Some(s.clone());
                }
                if p.read_ahead_kb.is_some() {
                    d.read_ahead_kb = p.read_ahead_kb;
                }
                if p.nr_requests.is_some() {
                    d.nr_requests = p.nr_requests;
                }
                if p.rotational.is_some() {
                    d.rotational = p.rotational;
                }
            }
            "scheduler" => {
                if d.scheduler.as_deref() != Some(v.as_str()) {
                    d.tunables.clear();
                }
                d.scheduler = Some(v.clone());
            }
            "read_ahead_kb" => d.read_ahead_kb = v.parse().ok(),
            "nr_requests" => d.nr_requests = v.parse().ok(),
            "rotational" => d.rotational = Some(v == "true"),
            _ => {}
        }
    }
    d
}

/// Apply a target's own device settings at set-up: only what `d` sets is written.
pub fn apply(d: &Device, ready: &mut Ready, j: &mut Journal) -> Result<()> {
    apply_cell(d, None, ready, j)?;
    let dev = ready.device.clone().expect("checked by apply_cell");
    ready.applied.insert("device".into(), dev.into());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_settings_lay_over_the_base() {
        let base = Device {
            scheduler: Some("bfq".into()),
            tunables: vec![("low_latency".into(), "0".into())],
            read_ahead_kb: Some(128),
            nr_requests: Some(64),
            rotational: Some(true),
        };
        let mut profiles = std::collections::BTreeMap::new();
        profiles.insert(
            "dl".to_string(),
            Device {
                scheduler: Some("mq-deadline".into()),
                ..Default::default()
            },
        );
        let s = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        // A profile with another scheduler drops the base's tunables, keeps the rest.
        let d = for_cell(
            &base,
            &s(&[("device", "dl"), ("read_ahead_kb", "512")]),
            &profiles,
        );
        assert_eq!(d.scheduler.as_deref(), Some("mq-deadline"));
        assert!(d.tunables.is_empty());
        assert_eq!((d.read_ahead_kb, d.nr_requests), (Some(512), Some(64)));
        // The same scheduler as a single-setting factor keeps the base's tunables.
        let d = for_cell(
            &base,
            &s(&[("scheduler", "bfq"), ("rotational", "false")]),
            &profiles,
        );
        assert_eq!(d.tunables, base.tunables);
        assert_eq!(d.rotational, Some(false));
    }
}
