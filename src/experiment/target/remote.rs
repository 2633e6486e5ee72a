//! A simulated remote file system (`fsbench remote create`) serving an existing directory or
//! a source tree generated under OUTDIR, with lookaside trees made from the served tree
//! (`fsbench age --next-version`); removed with `fsbench remote remove`.
//!
//! The `network` and `lookaside` factors change a running remote between measurements
//! (`fsbench remote set`), so every level measures the same served files.

use super::{image::mount_point, make_marked_dir, Ctx, Journal, Ready, Undo};
use crate::experiment::plan::{Lookaside, RemoteServer, Target, TargetKind};
use anyhow::{bail, Context, Result};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The options of `fsbench remote create`/`set` for a network level (a preset or
/// "BANDWIDTH/RTT").
pub fn network_args(level: &str) -> Vec<String> {
    match level.split_once('/') {
        Some((b, r)) => vec![
            "--bandwidth".into(),
            b.to_string(),
            "--rtt".into(),
            r.to_string(),
        ],
        None => vec!["--preset".into(), level.to_string()],
    }
}

/// The modelled network of a level (a preset or "BANDWIDTH/RTT").
pub fn net_of(level: &str) -> Option<fsbench_tools::remote::model::Net> {
    match level.split_once('/') {
        Some((b, r)) => Some(fsbench_tools::remote::model::Net {
            bandwidth_bps: fsbench_base::units::parse_bandwidth(b).ok()?,
            rtt_s: fsbench_base::units::parse_rtt(r).ok()?,
            jitter_s: 0.0,
            loss: 0.0,
        }),
        None => fsbench_tools::remote::model::Net::preset(level),
    }
}

/// Every lookaside level the target may take: its own and the plan's `lookaside` factor's.
fn lookaside_levels(t: &Target, ctx: &Ctx) -> Vec<Lookaside> {
    let TargetKind::Remote { lookaside, .. } = &t.kind else {
        return Vec::new();
    };
    let mut v: Vec<Lookaside> = lookaside.iter().cloned().collect();
    if let Some((_, levels)) = ctx
        .plan
        .setting_levels
        .iter()
        .find(|(k, _)| k == "lookaside")
    {
        for l in levels {
            if let Some(la) = Lookaside::from_level(l) {
                if !v.contains(&la) {
                    v.push(la);
                }
            }
        }
    }
    v
}

/// The lookaside trees of every level the target takes, by level: a next version of the
/// served tree per share of files in common, or a directory.
fn lookaside_trees(
    t: &Target,
    ctx: &Ctx,
    served: &Path,
    base: &Path,
) -> Result<BTreeMap<String, PathBuf>> {
    let mut trees: BTreeMap<String, PathBuf> = BTreeMap::new();
    for la in lookaside_levels(t, ctx) {
        let dir = match &la {
            Lookaside::Dir(p) => p
                .canonicalize()
                .with_context(|| format!("target {}: lookaside {}", t.name, p.display()))?,
            Lookaside::Common(files, bytes) => {
                let share = fsbench_tools::age::nextver::Share {
                    files: *files,
                    bytes: *bytes,
                };
                let r = fsbench_tools::age::nextver::next_version(
                    served,
                    base,
                    share,
                    0.5,
                    ctx.plan.seed,
                )
                .with_context(|| {
                    format!(
                        "target {}: making a lookaside tree with {} of the files in common",
                        t.name,
                        Lookaside::level(Some(&la))
                    )
                })?;
                PathBuf::from(r.out)
            }
        };
        trees.insert(Lookaside::level(Some(&la)), dir);
    }
    Ok(trees)
}

pub fn set_up(t: &Target, ctx: &Ctx, j: &mut Journal) -> Result<Ready> {
    let TargetKind::Remote {
        server,
        network,
        protocol,
        cache_size,
        lookaside,
        writable,
    } = &t.kind
    else {
        unreachable!("remote target")
    };
    // Everything this target writes outside the served directory lives here.
    let base = ctx.outdir.join("remote").join(&t.name);
    std::fs::create_dir_all(ctx.outdir.join("remote"))?;
    make_marked_dir(&base, j)?;
    let mut applied = BTreeMap::new();
    let served: PathBuf = match server {
        RemoteServer::Dir(p) => p
            .canonicalize()
            .with_context(|| format!("target {}: server {}", t.name, p.display()))?,
        RemoteServer::Source(params) => {
            let root = base.join("server");
            std::fs::create_dir(&root)?;
            let spec = fsbench_tools::apps::build::TreeSpec::with(params);
            fsbench_tools::apps::build::generate_tree(&spec, &root)
                .with_context(|| format!("target {}: generating the served tree", t.name))?;
            applied.insert("source".into(), json!(format!("{spec:?}")));
            root
        }
    };
    let trees = lookaside_trees(t, ctx, &served, &base)?;
    let mnt = mount_point(ctx, &t.name, j)?;
    let name = format!("fsbx-{}-{}", t.name, std::process::id());
    let exe = crate::experiment::self_exe()?;
    let mut cmd = Command::new(exe);
    cmd.args(["remote", "create", &name])
        .arg("--server")
        .arg(&served)
        .arg("--mount")
        .arg(&mnt)
        .args(network_args(network))
        .args(["--protocol", protocol])
        .args(["--cache-size", &cache_size.to_string()]);
    if *writable {
        cmd.arg("--writable");
    }
    let own = Lookaside::level(lookaside.as_ref());
    if let Some(d) = trees.get(&own) {
        cmd.arg("--lookaside").arg(d);
    }
    // Registered before it runs: a half-made remote is removed too.
    j.push(Undo::RemoveRemote {
        name: name.clone(),
        mount: mnt.clone(),
    })?;
    let out = cmd.output().context("running fsbench remote create")?;
    if !out.status.success() {
        bail!(
            "target {}: fsbench remote create failed: {}",
            t.name,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    applied.insert("remote".into(), json!(name));
    applied.insert("server".into(), json!(served.display().to_string()));
    applied.insert("network".into(), json!(network));
    applied.insert("protocol".into(), json!(protocol));
    applied.insert("cache_size".into(), json!(cache_size));
    applied.insert("writable".into(), json!(writable));
    applied.insert("lookaside".into(), json!(own));
    applied.insert(
        "lookaside_trees".into(),
        json!(trees
            .iter()
            .map(|(k, v)| (k.clone(), v.display().to_string()))
            .collect::<BTreeMap<_, _>>()),
    );
    Ok(Ready {
        name: t.name.clone(),
        mounts: Vec::new(),
        dir: mnt,
        device: None,
        disk: None,
        applied,
        pending: None,
    })
}

/// Bring a remote target to a cell's `network` and `lookaside` levels (those the cell does
/// not set stay as the target declares them). Changes only what differs from `ready`'s
/// record of the running remote, which it updates.
pub fn apply_cell(t: &Target, settings: &[(String, String)], ready: &mut Ready) -> Result<()> {
    let TargetKind::Remote {
        network, lookaside, ..
    } = &t.kind
    else {
        return Ok(());
    };
    let want_net = settings
        .iter()
        .find(|(k, _)| k == "network")
        .map_or(network.clone(), |(_, v)| v.clone());
    let want_la = settings
        .iter()
        .find(|(k, _)| k == "lookaside")
        .map_or(Lookaside::level(lookaside.as_ref()), |(_, v)| v.clone());
    let cur_net = ready.applied.get("network").and_then(|v| v.as_str());
    let cur_la = ready.applied.get("lookaside").and_then(|v| v.as_str());
    if cur_net == Some(want_net.as_str()) && cur_la == Some(want_la.as_str()) {
        return Ok(());
    }
    let name = ready
        .applied
        .get("remote")
        .and_then(|v| v.as_str())
        .context("remote target without a remote")?
        .to_string();
    let mut a = fsbench_tools::remote::cli::SetArgs {
        name,
        ..Default::default()
    };
    if cur_net != Some(want_net.as_str()) {
        let args = network_args(&want_net);
        if args[0] == "--preset" {
            a.preset = Some(args[1].clone());
        } else {
            a.bandwidth =
                Some(fsbench_base::units::parse_bandwidth(&args[1]).map_err(anyhow::Error::msg)?);
            a.rtt = Some(fsbench_base::units::parse_rtt(&args[3]).map_err(anyhow::Error::msg)?);
        }
    }
    if cur_la != Some(want_la.as_str()) {
        if want_la == "none" {
            a.no_lookaside = true;
        } else {
            let dir = ready
                .applied
                .get("lookaside_trees")
                .and_then(|m| m.get(&want_la))
                .and_then(|v| v.as_str())
                .with_context(|| format!("no lookaside tree made for level {want_la}"))?;
            a.lookaside = vec![Path::new(dir).to_path_buf()];
        }
    }
    fsbench_tools::remote::cli::apply_set(&a)
        .with_context(|| format!("target {}: network {want_net}, lookaside {want_la}", t.name))?;
    ready.applied.insert("network".into(), json!(want_net));
    ready.applied.insert("lookaside".into(), json!(want_la));
    Ok(())
}

/// The remote's statistics since `remote stats --reset`-like `base` (the counts a run
/// caused), as figures: bytes fetched and sent, round trips, lookaside hits, misses and
/// bytes, time waited on the modelled network, mean reply lateness in percent.
pub fn stats_now(ready: &Ready) -> Option<fsbench_tools::remote::state::RemoteStats> {
    let name = ready.applied.get("remote")?.as_str()?;
    let sd = fsbench_tools::remote::state::StateDir::new(name).ok()?;
    fsbench_tools::remote::cli::request(&sd, Default::default()).ok()?;
    sd.read_stats()
}
