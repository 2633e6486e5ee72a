//! `fsbench run --nfs URL`: the run directory, the filesets and the fio jobs' files on an
//! NFS export, through libnfs. What NFS cannot do is refused before anything is created
//! ([`fsbench_model::model::Workload::nfs_refusals`]); the run directory is marked and removed as a
//! local one is (see [`fsbench_base::libnfs::rundir`]).

use super::{
    add_layout, announce, interrupted, preflight, run_actions, run_seconds, EngineError, Laid,
    Prepared, RunOptions,
};
use crate::fileset::layout::{self, LayoutError, Plan};
use fsbench_base::libnfs::{self as nfs, rundir::RemoteRunDir};
use fsbench_model::model::{Action, Workload};
use fsbench_results::stats::{self, LayoutResult};
use std::path::PathBuf;

/// The remote side of a prepared run.
pub(super) struct Remote {
    /// `None` once removed or kept.
    dir: Option<RemoteRunDir>,
    /// What every worker mounts and where the run directory is on the export.
    pub(super) target: nfs::Target,
    /// The run directory for messages and results (`nfs://server/export/name`).
    pub(super) shown: PathBuf,
}

impl Remote {
    /// The run is over: remove the run directory unless it is kept.
    pub(super) fn finish(mut self, keep: bool, quiet: bool) {
        let Some(dir) = self.dir.take() else { return };
        if keep {
            if !quiet {
                fsbench_base::errln!("fsbench: kept {}", self.shown.display());
            }
        } else {
            match dir.remove() {
                Ok(()) if !quiet => {
                    fsbench_base::errln!("fsbench: removed {}", self.shown.display())
                }
                Ok(()) => {}
                Err(e) => fsbench_base::exit::left_behind(e),
            }
        }
    }

    /// What the workers' relays did, for the results' notes.
    pub(super) fn relay_note(&self) -> Option<String> {
        let net = self.target.relay.as_ref()?;
        let how = match net.link {
            Some(l) => format!(
                "over a dialled network ({}; one link each way shared by the workers)",
                l.describe()
            ),
            None => "with no network dialled".into(),
        };
        Some(format!(
            "each worker's NFS client went through a relay in fsbench {how}, which counted its calls per flowop and procedure (rpcs); the layout went straight to the server"
        ))
    }

    /// Host facts: this machine's, with the export in place of a local file system.
    pub(super) fn host(&self) -> stats::Host {
        let (origin, args) = self
            .target
            .url
            .split_once('?')
            .unwrap_or((&self.target.url, ""));
        stats::Host {
            target_dir: self.shown.display().to_string(),
            fs_type: "nfs (libnfs, user space)".into(),
            mount_point: origin.to_string(),
            mount_options: args.replace('&', ","),
            // As the kernel's mount table names an NFS mount: `server:/export`.
            device: (origin.strip_prefix("nfs://"))
                .and_then(|r| r.split_once('/'))
                .map(|(host, path)| format!("{host}:/{path}"))
                .unwrap_or_default(),
            io_scheduler: String::new(),
            free_bytes: 0,
            ..stats::host::collect(&std::env::temp_dir())
        }
    }
}

/// Check, connect, create the run directory on the export and lay the workload out there.
pub(super) fn prepare(
    wl: &Workload,
    opts: &RunOptions,
    url: &str,
) -> Result<Prepared, EngineError> {
    refuse(wl, opts)?;
    nfs::check_url(url).map_err(EngineError::Nfs)?;
    if opts.nfs_rpcs || opts.nfs_link.is_some() {
        nfs::relay::ports(url).map_err(EngineError::Nfs)?;
    }
    let est = preflight::check_remote(wl)?;
    if !opts.quiet {
        fsbench_base::errln!("fsbench: {}", est.describe());
    }
    let plans: Vec<Plan> = (wl.filesets.iter().enumerate())
        .map(|(i, f)| layout::plan(i, f, &wl.randvars, opts.seed))
        .collect();
    if interrupted() {
        return Err(EngineError::Interrupted);
    }
    let (remote, laid) = make_and_lay_out(wl, opts, url, plans)?;
    let create_only = !wl.has_run
        && opts.duration.is_none()
        && wl.actions.iter().any(|a| matches!(a, Action::CreateFiles));
    let seconds = run_seconds(wl, opts);
    if !create_only {
        announce(wl, opts, seconds);
    }
    Ok(Prepared {
        rd: None,
        remote: Some(remote),
        laid,
        keep: opts.keep,
        create_only,
        seconds,
        _devices: Vec::new(),
    })
}

/// Connect, make and mark the run directory on the export and lay the workload out in it;
/// on an error (or a panic) the run directory is removed again unless kept.
fn make_and_lay_out(
    wl: &Workload,
    opts: &RunOptions,
    url: &str,
    plans: Vec<Plan>,
) -> Result<(Remote, Laid), EngineError> {
    let client = nfs::Client::connect(url).map_err(EngineError::Nfs)?;
    let base = format!("fsbench-{}", super::rundir::safe_name(&wl.name));
    let mut dir = RemoteRunDir::create(client, &base).map_err(EngineError::Nfs)?;
    let shown = PathBuf::from(dir.display());
    if !opts.quiet {
        fsbench_base::errln!("fsbench: run directory {}", shown.display());
    }
    let laid = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lay_out_all(wl, opts, &mut dir, plans)
    }));
    // The layout above went straight to the server; the workers go through the relays.
    let target = nfs::Target {
        url: url.to_string(),
        run_path: dir.path(),
        relay: (opts.nfs_rpcs || opts.nfs_link.is_some())
            .then(|| nfs::relay::Network::new(opts.nfs_link)),
    };
    let remote = Remote {
        dir: Some(dir),
        target,
        shown,
    };
    match laid {
        Ok(Ok(laid)) => Ok((remote, laid)),
        Ok(Err(e)) => {
            remote.finish(opts.keep, opts.quiet);
            Err(e)
        }
        Err(p) => {
            remote.finish(opts.keep, true);
            std::panic::resume_unwind(p);
        }
    }
}

/// What an NFS run refuses before anything is made: the workload's flowops and jobs that
/// need the kernel, and the options that would.
fn refuse(wl: &Workload, opts: &RunOptions) -> Result<(), EngineError> {
    let mut why: Vec<String> = (wl.unsupported().iter())
        .chain(&wl.nfs_refusals())
        .map(|d| d.to_string())
        .collect();
    if opts.allow_system && wl.actions.iter().any(|a| matches!(a, Action::System(_))) {
        why.push(
            "--allow-system runs the workload's `system` commands in the run directory, which is on the NFS server; leave out --allow-system, or run without --nfs".into(),
        );
    }
    if opts.verify.on() {
        why.push("data verification (--verify, or a flowop's `verify`) does not run over NFS yet; leave it out, or run without --nfs".into());
    }
    if opts.cold && !super::is_root() {
        why.push(
            "--cold drops the page cache, which needs root; run as root or leave out --cold".into(),
        );
    }
    if why.is_empty() {
        return Ok(());
    }
    Err(EngineError::Unsupported(why.join("\n\n")))
}

/// The script's commands, the filesets and the fio jobs' files, in the run directory.
fn lay_out_all(
    wl: &Workload,
    opts: &RunOptions,
    dir: &mut RemoteRunDir,
    plans: Vec<Plan>,
) -> Result<Laid, EngineError> {
    let mut plans = Some(plans);
    let here = std::env::temp_dir();
    let laid = run_actions(wl, opts, &here, &mut plans, &mut |p| {
        lay_out(wl, opts, dir, p)
    })?;
    let mut laid = match (laid, plans) {
        (Some(l), _) => l,
        (None, Some(plans)) => lay_out(wl, opts, dir, plans)?,
        (None, None) => unreachable!("the plans are used only by the layout"),
    };
    let (run_path, shown) = (dir.path(), dir.display());
    let streamed = super::streamfiles::lay_out_remote(wl, dir.client(), &run_path, opts.quiet)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::Interrupted => EngineError::Interrupted,
            _ => EngineError::Nfs(format!("laying out the files of {shown}: {e}")),
        })?;
    laid.layout.files_written += streamed.files;
    laid.layout.bytes_written += streamed.bytes_written;
    if interrupted() {
        return Err(EngineError::Interrupted);
    }
    Ok(laid)
}

/// Every fileset, through the run directory's client.
fn lay_out(
    wl: &Workload,
    opts: &RunOptions,
    dir: &mut RemoteRunDir,
    plans: Vec<Plan>,
) -> Result<Laid, EngineError> {
    let mut out = Vec::new();
    let mut total = LayoutResult::default();
    let (run_path, shown) = (dir.path(), dir.display());
    for plan in plans {
        let fs = &wl.filesets[plan.index];
        if !opts.quiet {
            fsbench_base::errln!(
                "fsbench: laying out fileset {} over NFS ({}, {})",
                fs.name,
                fsbench_base::units::count(plan.prealloc_files.count() as u64, "file"),
                fsbench_base::units::human_bytes(plan.bytes() as f64)
            );
        }
        let where_ = (run_path.as_str(), shown.as_str());
        let (rt, st) = crate::fileset::remote::create(plan, fs, dir.client(), where_, opts.seed)
            .map_err(|e| match e {
                LayoutError::Interrupted => EngineError::Interrupted,
                other => EngineError::Layout {
                    fileset: fs.name.clone(),
                    source: other,
                },
            })?;
        add_layout(&mut total, st);
        out.push(rt);
    }
    Ok(Laid {
        filesets: out,
        layout: total,
    })
}
