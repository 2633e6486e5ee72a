//! The `[[target]]` tables: each kind's own keys, checked, and the overlays' chains.

use super::check::{check_network, device_of, lookaside_of, typed, Ctx};
use super::schema::RawTarget;
use super::{Device, PlanError, RemoteServer, Target, TargetKind, Ty, DISK_PARAMS, SOURCE_PARAMS};
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

const FILESYSTEMS: [&str; 3] = ["ext4", "xfs", "btrfs"];

/// Every target of the plan, checked, in the plan's order.
pub(super) fn targets(
    ctx: &Ctx,
    raw: &[Spanned<RawTarget>],
    base_dir: &Path,
    quick: bool,
) -> Result<Vec<Target>, PlanError> {
    let mut targets: Vec<Target> = Vec::new();
    let mut target_spans = Vec::new();
    for t in raw {
        let target = target(ctx, t, base_dir, quick, &targets)?;
        targets.push(target);
        target_spans.push(t.span());
    }
    check_overlays(ctx, &targets, &target_spans)?;
    Ok(targets)
}

/// Which keys each kind takes; any other key given is refused.
fn allowed_keys(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "dir" => &["path", "device", "age"],
        "image" => &[
            "size",
            "fs",
            "mkfs_options",
            "mount_options",
            "device",
            "age",
        ],
        "overlay" => &["over", "merged", "age"],
        "disk" => &[
            "size",
            "fs",
            "model",
            "disk",
            "mkfs_options",
            "mount_options",
            "device",
            "age",
        ],
        "remote" => &[
            "server",
            "source",
            "network",
            "protocol",
            "cache_size",
            "lookaside",
            "writable",
        ],
        "nfs" => &["size", "fs", "version"],
        _ => return None,
    })
}

/// The keys a target table gives, with their places.
fn given_keys(t: &RawTarget) -> [(&'static str, Option<Range<usize>>); 21] {
    [
        ("version", t.version.as_ref().map(|v| v.span())),
        ("merged", t.merged.as_ref().map(|v| v.span())),
        ("server", t.server.as_ref().map(|v| v.span())),
        ("source", t.source.as_ref().map(|v| v.span())),
        ("source", t.quick_source.as_ref().map(|v| v.span())),
        ("network", t.network.as_ref().map(|v| v.span())),
        ("protocol", t.protocol.as_ref().map(|v| v.span())),
        ("cache_size", t.cache_size.as_ref().map(|v| v.span())),
        ("lookaside", t.lookaside.as_ref().map(|v| v.span())),
        ("writable", t.writable.as_ref().map(|v| v.span())),
        ("path", t.path.as_ref().map(|v| v.span())),
        ("size", t.size.as_ref().map(|v| v.span())),
        ("size", t.quick_size.as_ref().map(|v| v.span())),
        ("fs", t.fs.as_ref().map(|v| v.span())),
        ("mkfs_options", t.mkfs_options.as_ref().map(|v| v.span())),
        ("mount_options", t.mount_options.as_ref().map(|v| v.span())),
        ("over", t.over.as_ref().map(|v| v.span())),
        ("model", t.model.as_ref().map(|v| v.span())),
        ("disk", t.disk.as_ref().map(|v| v.span())),
        ("device", t.device.as_ref().map(|v| v.span())),
        ("age", t.age.as_ref().map(|v| v.span())),
    ]
}

fn target(
    ctx: &Ctx,
    t: &Spanned<RawTarget>,
    base_dir: &Path,
    quick: bool,
    before: &[Target],
) -> Result<Target, PlanError> {
    let t_span = t.span();
    let t = t.get_ref();
    let tname = t.name.get_ref().clone();
    if tname.is_empty()
        || !tname
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
    {
        return Err(ctx.err(
            t.name.span(),
            "target name: use letters, digits, '-' and '_'",
        ));
    }
    if before.iter().any(|o| o.name == tname) {
        return Err(ctx.err(t.name.span(), format!("target {tname:?} is defined twice")));
    }
    let kind_s = t.kind.get_ref().as_str();
    let Some(allowed) = allowed_keys(kind_s) else {
        return Err(ctx.err(
            t.kind.span(),
            format!("target kind {kind_s:?}: expected dir, image, overlay, disk, remote or nfs"),
        ));
    };
    for (k, s) in given_keys(t) {
        if let Some(s) = s {
            if !allowed.contains(&k) {
                return Err(ctx.err(
                    s,
                    format!(
                        "`{k}` does not apply to a target of kind {kind_s} (it takes: {})",
                        allowed.join(", ")
                    ),
                ));
            }
        }
    }
    let cx = TargetCx {
        ctx,
        t,
        span: t_span.clone(),
        name: &tname,
        kind: kind_s,
        base_dir,
        quick,
    };
    let mount_options = match &t.mount_options {
        Some(m) => {
            crate::experiment::options::check_mount(m.get_ref())
                .map_err(|e| ctx.err(m.span(), e))?;
            m.get_ref().clone()
        }
        None => String::new(),
    };
    let kind = match kind_s {
        "dir" => cx.dir()?,
        "image" => cx.image(mount_options)?,
        "overlay" => TargetKind::Overlay {
            over: cx.need(&t.over, "over")?.get_ref().clone(),
            merged: t.merged.as_ref().is_some_and(|m| *m.get_ref()),
        },
        "disk" => cx.disk(mount_options)?,
        "remote" => cx.remote()?,
        "nfs" => cx.nfs()?,
        _ => unreachable!(),
    };
    let device = match &t.device {
        Some(d) => device_of(ctx, d.get_ref())?,
        None => Device::default(),
    };
    let age = match &t.age {
        None => None,
        Some(a) => Some(super::age::age_of(ctx, a, base_dir, quick)?),
    };
    if let (TargetKind::Overlay { merged: true, .. }, Some(a)) = (&kind, &t.age) {
        return Err(ctx.err(
            a.span(),
            "a merged overlay is mounted after its trees are made in its lower layer, and aging runs before them: age the target under it instead",
        ));
    }
    // Checked with the plan's other memory values (super::memory::check).
    let memory = match t.memory.as_ref().map(|v| v.get_ref()) {
        Some(toml::Value::String(s)) => super::memory::parse_level(s).ok().flatten(),
        _ => None,
    };
    Ok(Target {
        name: tname,
        kind,
        device,
        age,
        memory,
        at: ctx.at(t_span),
    })
}

/// One target table being read.
struct TargetCx<'a> {
    ctx: &'a Ctx<'a>,
    t: &'a RawTarget,
    span: Range<usize>,
    name: &'a str,
    kind: &'a str,
    base_dir: &'a Path,
    quick: bool,
}

impl TargetCx<'_> {
    fn need(&self, v: &Option<Spanned<String>>, k: &str) -> Result<Spanned<String>, PlanError> {
        v.clone().ok_or_else(|| {
            self.ctx.err(
                self.span.clone(),
                format!("target {:?} of kind {} needs `{k}`", self.name, self.kind),
            )
        })
    }

    fn size(&self) -> Result<u64, PlanError> {
        let ctx = self.ctx;
        let s = match (&self.t.quick_size, self.quick) {
            (Some(q), true) => q.clone(),
            _ => self.need(&self.t.size, "size")?,
        };
        let v = fsbench_base::units::parse_size(s.get_ref()).map_err(|e| ctx.err(s.span(), e))?;
        if v < (16 << 20) {
            return Err(ctx.err(s.span(), "size: at least 16M (mkfs needs room)"));
        }
        Ok(v)
    }

    fn fs(&self) -> Result<String, PlanError> {
        let f = self.need(&self.t.fs, "fs")?;
        if !FILESYSTEMS.contains(&f.get_ref().as_str()) {
            return Err(self.ctx.err(
                f.span(),
                format!(
                    "fs {:?}: expected one of {}",
                    f.get_ref(),
                    FILESYSTEMS.join(", ")
                ),
            ));
        }
        Ok(f.get_ref().clone())
    }

    fn dir(&self) -> Result<TargetKind, PlanError> {
        let ctx = self.ctx;
        let p = self.need(&self.t.path, "path")?;
        let path = self.base_dir.join(p.get_ref());
        if let Err(e) = fsbench_base::input::check_dir(&path) {
            return Err(ctx.err(
                p.span(),
                format!("{} is not an existing directory: {e}", path.display()),
            ));
        }
        // The refusal `run --dir` applies: measurements and overlays write there.
        if let Some(what) = fsbench_engine::engine::rundir::system_dir(&path) {
            return Err(ctx.err(
                p.span(),
                format!(
                    "{} is a system directory ({what}); fsbench does not measure or stack overlays there; choose a directory of your own or a mounted test file system",
                    path.display()
                ),
            ));
        }
        Ok(TargetKind::Dir { path })
    }

    /// `mkfs_options`, checked as options of `mkfs.FS` (the same table for images and
    /// simulated disks).
    fn mkfs_options(&self, fs: &str) -> Result<Vec<String>, PlanError> {
        let raw: &[Spanned<String>] = self.t.mkfs_options.as_ref().map_or(&[], |m| m.get_ref());
        let mkfs_options: Vec<String> = raw.iter().map(|o| o.get_ref().clone()).collect();
        crate::experiment::options::check_mkfs(fs, &mkfs_options)
            .map_err(|(i, why)| self.ctx.err(raw[i].span(), format!("mkfs_options: {why}")))?;
        Ok(mkfs_options)
    }

    fn image(&self, mount_options: String) -> Result<TargetKind, PlanError> {
        let fs = self.fs()?;
        let mkfs_options = self.mkfs_options(&fs)?;
        Ok(TargetKind::Image {
            size: self.size()?,
            fs,
            mkfs_options,
            mount_options,
        })
    }

    fn disk(&self, mount_options: String) -> Result<TargetKind, PlanError> {
        let ctx = self.ctx;
        let params = self.disk_params()?;
        let model = self
            .t
            .model
            .as_ref()
            .map_or("hdd".to_string(), |m| m.get_ref().clone());
        if fsbench_tools::disk::model::DiskParams::preset(&model).is_none() {
            let s = self
                .t
                .model
                .as_ref()
                .map(|m| m.span())
                .unwrap_or(self.span.clone());
            return Err(ctx.err(
                s,
                format!(
                    "disk model {model:?}: presets are {}",
                    fsbench_tools::disk::model::DiskParams::PRESETS.join(", ")
                ),
            ));
        }
        let fs = self.fs()?;
        let mkfs_options = self.mkfs_options(&fs)?;
        Ok(TargetKind::Disk {
            size: self.size()?,
            fs,
            model,
            params,
            mkfs_options,
            mount_options,
        })
    }

    /// The `disk` table: options of `fsbench disk create`.
    fn disk_params(&self) -> Result<Vec<(String, String)>, PlanError> {
        let ctx = self.ctx;
        let mut params = Vec::new();
        let Some(d) = &self.t.disk else {
            return Ok(params);
        };
        for (k, v) in d.get_ref() {
            if !DISK_PARAMS.contains(&k.as_str()) {
                return Err(ctx.err(
                    v.span(),
                    format!(
                        "disk parameter `{k}`: expected one of {}",
                        DISK_PARAMS.join(", ")
                    ),
                ));
            }
            let s = super::check::scalar(v.get_ref()).ok_or_else(|| {
                ctx.err(v.span(), "expected a number or a string such as \"5.2ms\"")
            })?;
            // Passed on as `--KEY VALUE`: a value, never another option.
            if s.starts_with('-') || (s.contains('/') && !s.ends_with("/s")) {
                return Err(ctx.err(
                    v.span(),
                    format!("disk parameter `{k}`: {s:?} is not a value (a number or a string such as \"5.2ms\" or \"50MB/s\")"),
                ));
            }
            params.push((k.clone(), s));
        }
        Ok(params)
    }

    fn remote(&self) -> Result<TargetKind, PlanError> {
        let (ctx, t) = (self.ctx, self.t);
        let server = self.remote_server()?;
        let network = t
            .network
            .as_ref()
            .map_or("10mbit".to_string(), |n| n.get_ref().clone());
        if let Some(n) = &t.network {
            check_network(n.get_ref()).map_err(|e| ctx.err(n.span(), e))?;
        }
        let protocol = t
            .protocol
            .as_ref()
            .map_or("whole-file".to_string(), |p| p.get_ref().clone());
        if let Some(p) = &t.protocol {
            if !["whole-file", "block"].contains(&p.get_ref().as_str()) {
                return Err(ctx.err(p.span(), "protocol: expected \"whole-file\" or \"block\""));
            }
        }
        let cache_size = match &t.cache_size {
            None => 256 << 20,
            Some(c) => {
                fsbench_base::units::parse_size(c.get_ref()).map_err(|e| ctx.err(c.span(), e))?
            }
        };
        let lookaside = match &t.lookaside {
            None => None,
            Some(v) => lookaside_of(ctx, v, self.base_dir)?,
        };
        Ok(TargetKind::Remote {
            server,
            network,
            protocol,
            cache_size,
            lookaside,
            writable: t.writable.as_ref().is_some_and(|w| *w.get_ref()),
        })
    }

    /// An NFS server's export: on an image (`size` and `fs` together) or under OUTDIR, and
    /// its protocol version.
    fn nfs(&self) -> Result<TargetKind, PlanError> {
        let (ctx, t) = (self.ctx, self.t);
        let image = match (&t.size, &t.fs) {
            (None, None) => None,
            (Some(_), None) | (None, Some(_)) => {
                return Err(ctx.err(
                    self.span.clone(),
                    format!(
                        "nfs target {:?}: give `size` and `fs` together (the export on a new image), or neither (a directory under OUTDIR)",
                        self.name
                    ),
                ))
            }
            (Some(_), Some(_)) => Some((self.size()?, self.fs()?)),
        };
        let version = t.version.as_ref().map_or(3, |v| *v.get_ref());
        if let Some(v) = &t.version {
            if ![3, 4].contains(v.get_ref()) {
                return Err(ctx.err(v.span(), "version: expected 3 or 4"));
            }
        }
        Ok(TargetKind::Nfs { image, version })
    }

    /// What a remote serves: `server` (a directory) or `source` (a generated tree).
    fn remote_server(&self) -> Result<RemoteServer, PlanError> {
        let ctx = self.ctx;
        match (&self.t.server, &self.t.source) {
            (Some(_), Some(s)) => Err(ctx.err(
                s.span(),
                "a remote target serves either `server` (a directory) or `source` (a generated tree), not both",
            )),
            (None, None) => Err(ctx.err(
                self.span.clone(),
                format!("remote target {:?} needs `server` (an existing directory) or `source` (a generated source tree)", self.name),
            )),
            (Some(p), None) => {
                let path = self.base_dir.join(p.get_ref());
                if !path.is_dir() {
                    return Err(ctx.err(
                        p.span(),
                        format!("{} is not an existing directory", path.display()),
                    ));
                }
                Ok(RemoteServer::Dir(path))
            }
            (None, Some(src)) => self.source(src),
        }
    }

    /// A generated source tree's parameters, the quick scale's over the full ones.
    fn source(
        &self,
        src: &Spanned<std::collections::BTreeMap<String, Spanned<toml::Value>>>,
    ) -> Result<RemoteServer, PlanError> {
        let ctx = self.ctx;
        let mut params: Vec<(String, u64)> = Vec::new();
        let mut tables = vec![src];
        if self.quick {
            tables.extend(self.t.quick_source.as_ref());
        }
        for tab in tables {
            for (k, v) in tab.get_ref() {
                if !SOURCE_PARAMS.contains(&k.as_str()) {
                    return Err(ctx.err(
                        v.span(),
                        format!("source `{k}`: expected one of {}", SOURCE_PARAMS.join(", ")),
                    ));
                }
                let n = typed(ctx, v, Ty::Int, k)?.parse::<u64>().unwrap_or(0);
                if n == 0 && k != "seed" && k != "heavy_tail" {
                    return Err(ctx.err(v.span(), format!("{k}: at least 1")));
                }
                params.retain(|(pk, _)| pk != k);
                params.push((k.clone(), n));
            }
        }
        Ok(RemoteServer::Source(params))
    }
}

/// Overlays name an existing target, without cycles.
fn check_overlays(ctx: &Ctx, targets: &[Target], spans: &[Range<usize>]) -> Result<(), PlanError> {
    for (i, t) in targets.iter().enumerate() {
        if let TargetKind::Overlay { over, .. } = &t.kind {
            let mut seen = vec![t.name.clone()];
            let mut cur = over.clone();
            loop {
                if seen.contains(&cur) {
                    return Err(ctx.err(
                        spans[i].clone(),
                        format!(
                            "overlay {:?}: `over` makes a cycle ({} -> {cur})",
                            t.name,
                            seen.join(" -> ")
                        ),
                    ));
                }
                let Some(o) = targets.iter().find(|o| o.name == cur) else {
                    return Err(ctx.err(
                        spans[i].clone(),
                        format!("overlay {:?}: `over` names no target {cur:?}", t.name),
                    ));
                };
                seen.push(cur.clone());
                if let TargetKind::Overlay { merged: true, .. } = &o.kind {
                    return Err(ctx.err(
                        spans[i].clone(),
                        format!("overlay {:?}: `over` names the merged overlay {cur:?}, which is mounted only after its trees are made: stack on the target under it", t.name),
                    ));
                }
                match &o.kind {
                    TargetKind::Overlay { over, .. } => cur = over.clone(),
                    _ => break,
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::experiment::plan::{parse, TargetKind};
    use std::path::Path;

    const PLAN: &str = r#"[experiment]
name = "o"
repetitions = 1

[[target]]
name = "a"
kind = "dir"
path = "/tmp"

[[target]]
name = "m"
kind = "overlay"
over = "a"
merged = true

[factors]
target = ["m"]

[[measurement]]
name = "f"
kind = "find"
params = { tree_files = 10 }
"#;

    fn err(text: &str) -> String {
        parse(Path::new("o.toml"), text, false).unwrap_err().0
    }

    #[test]
    fn merged_overlays_are_read_and_their_limits_located() {
        let p = parse(Path::new("o.toml"), PLAN, false).unwrap();
        assert!(matches!(
            p.targets[1].kind,
            TargetKind::Overlay { merged: true, .. }
        ));
        let e = err(&PLAN.replace("merged = true", "merged = true\n[target.age]\nops = 5"));
        assert!(
            e.starts_with("o.toml:15:1: a merged overlay is mounted after"),
            "{e}"
        );
        let e = err(&PLAN.replace(
            "[factors]",
            "[[target]]\nname = \"s\"\nkind = \"overlay\"\nover = \"m\"\n\n[factors]",
        ));
        assert!(
            e.contains("o.toml:16:1: overlay \"s\": `over` names the merged overlay \"m\""),
            "{e}"
        );
        let e = err(&PLAN.replace("path = \"/tmp\"", "path = \"/tmp\"\nmerged = true"));
        assert!(
            e.contains("`merged` does not apply to a target of kind dir"),
            "{e}"
        );
    }
}
