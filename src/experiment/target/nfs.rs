//! An NFS server target (`kind = "nfs"`): NFS-Ganesha on 127.0.0.1, started through
//! [`fsbench_tools::nfs::server`], exporting a new directory under OUTDIR (`OUTDIR/nfs/TARGET/`,
//! marked) or on a new image's file system (`size` and `fs`). Measurements run in the
//! exported directory; the URL a client opens is in the target's settings (`url`) and in the
//! measured child's environment (`FSBENCH_NFS_URL`). Torn down as `fsbench nfs remove` does.

use super::{make_marked_dir, Ctx, Journal, Ready, Undo};
use crate::experiment::plan::{Target, TargetKind};
use anyhow::{Context, Result};
use fsbench_tools::nfs::backing::Backing;
use fsbench_tools::nfs::server::{self, Options};
use fsbench_tools::nfs::state::Version;
use serde_json::json;
use std::collections::BTreeMap;

/// The environment variable that carries an NFS target's URL to the measured child.
pub const URL_ENV: &str = "FSBENCH_NFS_URL";

pub fn set_up(t: &Target, ctx: &Ctx, j: &mut Journal) -> Result<Ready> {
    let TargetKind::Nfs { image, version } = &t.kind else {
        unreachable!("nfs target")
    };
    let name = format!("fsbx-{}-{}", t.name, std::process::id());
    let backing = match image {
        Some((size, fs)) => Backing::Image {
            size: *size,
            fs: fs.clone(),
        },
        None => {
            let base = ctx.outdir.join("nfs").join(&t.name);
            make_marked_dir(&base, j)?;
            Backing::Dir(base)
        }
    };
    let version = if *version == 4 {
        Version::V4
    } else {
        Version::V3
    };
    let o = Options::new(&name, backing, version);
    // Registered before it starts: a half-started server is stopped too (start undoes its
    // own steps on failure; the step then finds nothing).
    j.push(Undo::RemoveNfs {
        name: name.clone(),
        export: server::planned_export(&o)
            .with_context(|| format!("target {}: the NFS export", t.name))?,
    })?;
    let s =
        server::start(&o).with_context(|| format!("target {}: starting NFS-Ganesha", t.name))?;
    let mut applied = BTreeMap::new();
    applied.insert("nfs".into(), json!(name));
    applied.insert("url".into(), json!(s.url()));
    applied.insert("nfs_version".into(), json!(s.version().number()));
    applied.insert("nfs_port".into(), json!(s.nfs_port()));
    applied.insert("mount_port".into(), json!(s.mount_port()));
    applied.insert("export".into(), json!(s.export_dir().display().to_string()));
    Ok(Ready {
        name: t.name.clone(),
        dir: s.export_dir().to_path_buf(),
        device: None,
        disk: None,
        applied,
        mounts: Vec::new(),
        pending: None,
    })
}

/// The dry run's lines for an NFS target.
pub fn steps(t: &Target) -> Vec<(String, bool)> {
    let TargetKind::Nfs { image, version } = &t.kind else {
        return Vec::new();
    };
    let export = match image {
        Some((size, fs)) => format!(
            "a new {} MiB image with mkfs.{fs}, loop-mounted under fsbench's NFS state directory",
            size >> 20
        ),
        None => format!("a new directory under OUTDIR/nfs/{}", t.name),
    };
    vec![
        (
            format!("fsbench nfs create fsbx-{}-PID: NFS-Ganesha (NFSv{version}) on 127.0.0.1 exporting {export}; rpcbind started if none runs", t.name),
            true,
        ),
        (
            format!("measure in the exported directory; the client URL (nfs://127.0.0.1/fsbx-{}-PID?nfsport=..) in the settings and in {URL_ENV}", t.name),
            false,
        ),
    ]
}
