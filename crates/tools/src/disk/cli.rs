//! `fsbench disk ...`: create, list, inspect and remove simulated disks.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};

use super::loopdev;
use super::model::{Disk, DiskParams};
use super::server;
use super::state::{self, DiskConfig, StateDir, KIND};
use fsbench_base::daemon::owned::{self, is_mounted, Detach, MountRecord};
use fsbench_base::daemon::remove::Removal;
use fsbench_base::daemon::state::{state_word, write_json_atomic};
use fsbench_base::daemon::Summary;
use fsbench_base::units::{human_bytes_u64 as human_bytes, parse_ms, parse_rate, parse_size};

/// Simulated disks: an HDD model served through FUSE under a loop device.
#[derive(clap::Args, Debug)]
pub struct DiskArgs {
    #[command(subcommand)]
    pub command: DiskCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum DiskCommand {
    /// Create a simulated disk: image, model server, loop device (prints /dev/loopN).
    Create(Box<CreateArgs>),
    /// List simulated disks.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show a disk's statistics: latency split into seek/rotation/transfer, head travel.
    Stats {
        /// The disk's name, as given to `disk create` (see `disk list`).
        name: String,
        /// Print the raw statistics as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a disk: unmount what --mount mounted, detach, stop the server, delete the image.
    Remove {
        /// The disk's name, as given to `disk create` (see `disk list`).
        name: String,
        /// Keep the image file.
        #[arg(long)]
        keep: bool,
    },
    /// List the model presets and their parameters.
    Models,
    /// Run a disk's server in the foreground (`create` starts it in the background).
    #[command(hide = true)]
    Serve {
        /// The disk's name.
        name: String,
    },
}

#[derive(clap::Args, Debug)]
pub struct CreateArgs {
    /// Name of the disk (letters, digits, '-', '_', '.').
    pub name: String,
    /// Model preset: hdd, hdd-cheetah36lp, hdd-m2694es.
    #[arg(long, default_value = "hdd")]
    pub model: String,
    /// Capacity (K, M, G, T: powers of 1024). Default 4G, or the size of an existing --image.
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    /// Image file (default /var/lib/fsbench/images/NAME.img; an existing file is reused and kept on remove).
    #[arg(long)]
    pub image: Option<PathBuf>,
    /// Spindle speed, rpm.
    #[arg(long)]
    pub rpm: Option<f64>,
    /// Average seek time (e.g. 5.2ms).
    #[arg(long, value_parser = parse_ms)]
    pub seek_avg: Option<f64>,
    /// Single-track seek time.
    #[arg(long, value_parser = parse_ms)]
    pub seek_track: Option<f64>,
    /// Full-stroke seek time.
    #[arg(long, alias = "seek-max", value_parser = parse_ms)]
    pub seek_full: Option<f64>,
    /// Media transfer rate of the outer zone (e.g. 50MB/s); the inner rate scales with it.
    #[arg(long, value_parser = parse_rate)]
    pub transfer: Option<f64>,
    /// Media transfer rate of the inner zone.
    #[arg(long, value_parser = parse_rate)]
    pub transfer_inner: Option<f64>,
    /// Number of recording zones.
    #[arg(long)]
    pub zones: Option<u32>,
    /// Number of heads (tracks per cylinder).
    #[arg(long)]
    pub heads: Option<u32>,
    /// Read-ahead cache segments (0 disables the cache).
    #[arg(long)]
    pub cache_segments: Option<u32>,
    /// Size of one cache segment (e.g. 256K).
    #[arg(long, value_parser = parse_size)]
    pub segment_size: Option<u64>,
    /// Interface rate for cache hits (e.g. 160MB/s).
    #[arg(long, value_parser = parse_rate)]
    pub bus_rate: Option<f64>,
    /// Per-command controller overhead (e.g. 0.1ms).
    #[arg(long, value_parser = parse_ms)]
    pub overhead: Option<f64>,
    /// Command queue: 1 = FIFO, N = shortest positioning time first among the N oldest.
    #[arg(long)]
    pub queue_depth: Option<u32>,
    /// Make a file system on the device (ext4, xfs, btrfs, or any mkfs.TYPE).
    #[arg(long)]
    pub mkfs: Option<String>,
    /// Mount the new file system here (needs --mkfs or an image with a file system).
    #[arg(long)]
    pub mount: Option<PathBuf>,
    /// I/O scheduler for the loop device (none, mq-deadline, kyber, bfq).
    #[arg(long)]
    pub scheduler: Option<String>,
}

fn params_from(a: &CreateArgs) -> anyhow::Result<DiskParams> {
    let mut p = DiskParams::preset(&a.model).with_context(|| {
        format!(
            "unknown model {:?}; presets: {}",
            a.model,
            DiskParams::PRESETS.join(", ")
        )
    })?;
    if let Some(v) = a.rpm {
        p.rpm = v;
    }
    if let Some(v) = a.seek_avg {
        p.seek_avg_ms = v;
    }
    if let Some(v) = a.seek_track {
        p.seek_track_ms = v;
    }
    if let Some(v) = a.seek_full {
        p.seek_full_ms = v;
    }
    if let Some(v) = a.transfer {
        let ratio = p.transfer_inner / p.transfer_outer;
        p.transfer_outer = v;
        p.transfer_inner = v * ratio;
    }
    if let Some(v) = a.transfer_inner {
        p.transfer_inner = v;
    }
    if let Some(v) = a.zones {
        p.zones = v;
    }
    if let Some(v) = a.heads {
        p.heads = v;
    }
    if let Some(v) = a.cache_segments {
        p.cache_segments = v;
    }
    if let Some(v) = a.segment_size {
        p.segment_bytes = v;
    }
    if let Some(v) = a.bus_rate {
        p.bus_rate = v;
    }
    if let Some(v) = a.overhead {
        p.overhead_ms = v;
    }
    if let Some(v) = a.queue_depth {
        p.queue_depth = v;
    }
    // A seek override that breaks the curve's other two points moves them
    // in proportion, so `--seek-avg 5.2ms` alone does what one expects.
    if a.seek_avg.is_some() && a.seek_full.is_none() {
        let base = DiskParams::preset(&a.model).expect("checked above");
        p.seek_full_ms = base.seek_full_ms * p.seek_avg_ms / base.seek_avg_ms;
        if a.seek_track.is_none() {
            p.seek_track_ms = base.seek_track_ms * p.seek_avg_ms / base.seek_avg_ms;
        }
    }
    p.validate().map_err(anyhow::Error::msg)?;
    Ok(p)
}

/// The drive a plan's disk target runs: model `model` with the `fsbench disk create`
/// options the plan gives (name without `--`, value), read as the command line reads them.
pub fn model_with(model: &str, options: &[(String, String)]) -> anyhow::Result<DiskParams> {
    use clap::{Args, FromArgMatches};
    let mut argv = vec![
        "create".to_string(),
        "estimate".into(),
        "--model".into(),
        model.into(),
    ];
    for (k, v) in options {
        argv.extend([format!("--{}", k.replace('_', "-")), v.clone()]);
    }
    let m = CreateArgs::augment_args(clap::Command::new("create")).try_get_matches_from(argv)?;
    params_from(&CreateArgs::from_arg_matches(&m)?)
}

pub fn run(args: DiskArgs) -> anyhow::Result<()> {
    match args.command {
        DiskCommand::Create(a) => create(*a),
        DiskCommand::List { json } => list(json),
        DiskCommand::Stats { name, json } => stats(&name, json),
        DiskCommand::Remove { name, keep } => remove(&name, keep),
        DiskCommand::Models => models(),
        DiskCommand::Serve { name } => server::serve(&name),
    }
}

fn describe(p: &DiskParams) -> String {
    format!(
        "{} ({} rpm, seek {}/{}/{} ms, {}-{} MB/s, {} x {} cache, queue {})",
        p.model,
        p.rpm,
        p.seek_track_ms,
        p.seek_avg_ms,
        p.seek_full_ms,
        p.transfer_outer,
        p.transfer_inner,
        p.cache_segments,
        human_bytes(p.segment_bytes),
        if p.queue_depth <= 1 {
            "FIFO".to_string()
        } else {
            format!("SPTF/{}", p.queue_depth)
        }
    )
}

fn run_cmd(cmd: &mut Command) -> anyhow::Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn create(a: CreateArgs) -> anyhow::Result<()> {
    KIND.require_root("create")?;
    let sd = StateDir::new(&a.name)?;
    KIND.refuse_taken(&sd, &a.name, sd.exists())?;
    let params = params_from(&a)?;
    let (image, size, existed) = prepare_image(&a, &params)?;

    fs::create_dir_all(&sd.dir).with_context(|| format!("creating {}", sd.dir.display()))?;
    let cfg = DiskConfig {
        name: a.name.clone(),
        image: image.canonicalize()?,
        size,
        created_image: !existed,
        params,
        mkfs: a.mkfs.clone(),
        mount: None,
        mount_record: None,
    };
    write_json_atomic(&sd.config(), &cfg)?;

    let cleanup = |sd: &StateDir| {
        let _ = remove(&a.name, !cfg.created_image);
        let _ = fsbench_base::owned::path::remove_tree(&sd.dir);
    };
    match KIND.start(&sd) {
        Ok(()) => {}
        Err(e) => {
            cleanup(&sd);
            return Err(e);
        }
    }
    let ready = sd.read_ready().context("server gave no ready.json")?;
    let dev = ready.device.clone();
    let post = after_start(&a, &sd, &dev);
    if let Err(e) = post {
        cleanup(&sd);
        return Err(e);
    }
    let cfg = sd.read_config()?;
    fsbench_base::errln!(
        "{}: {dev}, {}, {}, {} cylinders, image {}{}{}",
        a.name,
        describe(&cfg.params),
        human_bytes(size),
        ready.cylinders,
        cfg.image.display(),
        if ready.direct_io {
            ""
        } else {
            " (warning: loop direct I/O is off)"
        },
        match &cfg.mount {
            Some(m) => format!(", mounted on {}", m.display()),
            None => String::new(),
        }
    );
    fsbench_base::outln!("{dev}");
    Ok(())
}

/// The image: created (sparse) or reused, at the size asked for (or its own); returns it,
/// its size and whether it existed.
fn prepare_image(a: &CreateArgs, params: &DiskParams) -> anyhow::Result<(PathBuf, u64, bool)> {
    let image = match &a.image {
        Some(p) => p.clone(),
        None => state::image_root().join(format!("{}.img", a.name)),
    };
    let existed = image.exists();
    // An existing image must be a regular file: a device or anything else is not fsbench's
    // to resize or write (and the loop device set up on it would be on someone's data).
    if let Ok(m) = fs::metadata(&image) {
        if !m.is_file() {
            return Err(fsbench_base::exit::usage(format!(
                "--image {} is {}, not a regular file; fsbench creates or reuses image files only and does not touch it (give a path for a new or existing image file)",
                image.display(),
                fsbench_base::input::file_kind(&m)
            )));
        }
    }
    if existed && a.image.is_none() {
        bail!(
            "{} already exists: pass it with --image to reuse it, or delete it",
            image.display()
        );
    }
    let size = match (a.size, existed) {
        (Some(s), _) => s,
        (None, true) => fs::metadata(&image)?.len(),
        (None, false) => 4 << 30,
    };
    if size < (1 << 20) || size % 512 != 0 {
        return Err(fsbench_base::exit::usage(format!(
            "--size {size}: a disk is at least 1 MiB and a multiple of 512 bytes"
        )));
    }
    // A file's size is a signed 64-bit offset.
    if size > i64::MAX as u64 {
        return Err(fsbench_base::exit::usage(format!(
            "--size {size} is too large: an image file holds at most {} bytes (8 EiB), and its file system usually far less",
            i64::MAX
        )));
    }
    Disk::new(params.clone(), size).map_err(anyhow::Error::msg)?;

    if let Some(parent) = image.parent() {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        check_image_space(parent, size, existed, a.mkfs.as_deref())?;
    }
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&image)
        .with_context(|| format!("creating image {}", image.display()))?;
    let cur = f.metadata()?.len();
    if cur < size {
        // Sparse. A size the file system cannot hold (EFBIG) is said with the flag, and an
        // image this call created is removed again.
        if let Err(e) = f.set_len(size) {
            drop(f);
            if !existed {
                let _ = fsbench_base::owned::path::remove_file(&image);
            }
            bail!(
                "--size {size}: the image {} cannot be that large: {e}",
                image.display()
            );
        }
    } else if cur > size {
        bail!(
            "image {} is larger ({cur} bytes) than --size {size}",
            image.display()
        );
    }
    drop(f);
    Ok((image, size, existed))
}

/// The options `create --mkfs TYPE` gives `mkfs.TYPE` before the device: quiet, overwrite
/// without asking, and for ext2/3/4 inode tables and journal initialised now, so no lazy-init
/// thread writes to the simulated disk during measurements.
pub fn mkfs_args(fs_type: &str) -> &'static [&'static str] {
    match fs_type {
        "ext4" | "ext3" | "ext2" => &["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
        "xfs" | "btrfs" => &["-q", "-f"],
        _ => &[],
    }
}

/// What `create` does on the running disk: the scheduler, mkfs, the mount (recorded in
/// the configuration).
fn after_start(a: &CreateArgs, sd: &StateDir, dev: &str) -> anyhow::Result<()> {
    if let Some(s) = &a.scheduler {
        loopdev::set_queue_attr(dev, "scheduler", s)
            .with_context(|| format!("setting scheduler {s}"))?;
    }
    if let Some(fs_type) = &a.mkfs {
        let mut cmd = Command::new(format!("mkfs.{fs_type}"));
        cmd.args(mkfs_args(fs_type));
        run_cmd(cmd.arg(dev))?;
    }
    if let Some(m) = &a.mount {
        fs::create_dir_all(m).with_context(|| format!("creating {}", m.display()))?;
        run_cmd(Command::new("mount").arg(dev).arg(m))?;
        let mut cfg = sd.read_config()?;
        cfg.mount = Some(m.canonicalize()?);
        let backing = owned::loop_backing(dev)?;
        cfg.mount_record = Some(MountRecord::capture(m, backing)?);
        write_json_atomic(&sd.config(), &cfg)?;
    }
    Ok(())
}

fn list(json: bool) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for name in KIND.names() {
        let sd = StateDir::new(&name)?;
        let Ok(cfg) = sd.read_config() else { continue };
        let ready = sd.read_ready();
        let alive = sd.live_pid().is_some();
        let st = state_word(alive, ready.is_some());
        let stats = sd.read_stats();
        rows.push(serde_json::json!({
            "name": name,
            "device": ready.as_ref().filter(|_| alive).map(|r| r.device.clone()),
            "model": cfg.params.model,
            "size": cfg.size,
            "state": st,
            "requests": stats.as_ref().map(|s| s.requests).unwrap_or(0),
            "mount": cfg.mount,
            "image": cfg.image,
        }));
    }
    if !KIND.list_rows(&rows, json)? {
        return Ok(());
    }
    fsbench_base::outln!(
        "{:<12} {:<12} {:<16} {:>9} {:<8} {:>10}  MOUNT",
        "NAME",
        "DEVICE",
        "MODEL",
        "SIZE",
        "STATE",
        "REQUESTS"
    );
    for r in rows {
        fsbench_base::outln!(
            "{:<12} {:<12} {:<16} {:>9} {:<8} {:>10}  {}",
            r["name"].as_str().unwrap_or(""),
            r["device"].as_str().unwrap_or("-"),
            r["model"].as_str().unwrap_or(""),
            human_bytes(r["size"].as_u64().unwrap_or(0)),
            r["state"].as_str().unwrap_or(""),
            r["requests"].as_u64().unwrap_or(0),
            r["mount"].as_str().unwrap_or("-"),
        );
    }
    Ok(())
}

fn stats(name: &str, json: bool) -> anyhow::Result<()> {
    let sd = StateDir::new(name)?;
    if !sd.exists() {
        return Err(KIND.no_such(name));
    }
    let cfg = sd.read_config()?;
    let st = super::lateness::stats_now(&sd, false).unwrap_or_default();
    if json {
        fsbench_base::outln!("{}", serde_json::to_string_pretty(&st)?);
        return Ok(());
    }
    let ready = sd.read_ready();
    let alive = sd.live_pid().is_some();
    fsbench_base::outln!(
        "{name}: {}, {}, {}, {}",
        match (&ready, alive) {
            (Some(r), true) => r.device.clone(),
            _ => "stopped".into(),
        },
        describe(&cfg.params),
        human_bytes(cfg.size),
        ready
            .map(|r| format!("{} cylinders", r.cylinders))
            .unwrap_or_default()
    );
    let busy_pct = if st.uptime_s > 0.0 {
        100.0 * st.busy_s / st.uptime_s
    } else {
        0.0
    };
    fsbench_base::outln!(
        "uptime {:.1} s, busy {:.2} s ({busy_pct:.1}%)",
        st.uptime_s,
        st.busy_s
    );
    fsbench_base::outln!(
        "requests {}: reads {} ({}), writes {} ({}), fsyncs {}",
        st.requests,
        st.reads,
        human_bytes(st.read_bytes),
        st.writes,
        human_bytes(st.write_bytes),
        st.fsyncs
    );
    let per = |x: u64| {
        if st.requests > 0 {
            x as f64 / st.requests as f64
        } else {
            0.0
        }
    };
    fsbench_base::outln!(
        "cache hits {}, read-ahead continuations {}, seeks {}, head travel {} cylinders ({:.1} per request)",
        st.cache_hits,
        st.streamed,
        st.seeks,
        st.head_travel_cylinders,
        per(st.head_travel_cylinders)
    );
    fsbench_base::outln!();
    fsbench_base::outln!(
        "{:<22} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "per request (us)",
        "mean",
        "p50",
        "p90",
        "p99",
        "max"
    );
    let row = |label: &str, s: &Summary| {
        fsbench_base::outln!(
            "{label:<22} {:>10.1} {:>10.0} {:>10.0} {:>10.0} {:>10.0}",
            s.mean,
            s.p50,
            s.p90,
            s.p99,
            s.max
        );
    };
    row("service (modelled)", &st.service_us);
    row("  command overhead", &st.overhead_us);
    row("  seek", &st.seek_us);
    row("  rotation", &st.rotation_us);
    row("  transfer", &st.transfer_us);
    row("queue wait in drive", &st.queue_us);
    row("server: reply late by", &st.server_late_us);
    row("server: woke late by", &st.server_wake_us);
    row("server: image I/O", &st.server_io_us);
    if st.requests > 0 && st.service_us.mean > 0.0 {
        fsbench_base::outln!();
        fsbench_base::outln!(
            "server overhead: replies leave {:.1} us (p99 {:.0} us) after the modelled completion, \
             {:.2}% of the mean modelled service time",
            st.server_late_us.mean,
            st.server_late_us.p99,
            100.0 * st.server_late_us.mean / st.service_us.mean
        );
    }
    Ok(())
}

fn remove(name: &str, keep: bool) -> anyhow::Result<()> {
    KIND.require_root("remove")?;
    let sd = StateDir::new(name)?;
    if !sd.dir.exists() {
        return Err(KIND.no_such(name));
    }
    let cfg = sd.read_config().ok();
    // Read before the server stops (a server that stops removes it): the file its loop
    // device was attached to.
    let ready = sd.read_ready();
    let mut r = Removal::default();
    // 0. Nothing at all while fsbench's mount is buried under another: it stays retryable.
    if let Some(rec) = cfg.as_ref().and_then(|c| c.mount_record.as_ref()) {
        owned::refuse_buried(rec, "disk", name)?;
    }
    // 1. The file system fsbench mounted, if it is still that mount.
    if let Some(c) = &cfg {
        match (&c.mount, &c.mount_record) {
            (_, Some(rec)) => r.unmount(rec),
            (Some(m), None) if is_mounted(m) => r.left.push(format!(
                "{} is mounted, but no record of the mount fsbench made there survives; not unmounting it (left alone)",
                m.display()
            )),
            _ => {}
        }
    }
    // 2. The server: it detaches the loop device, sets it back as it found it and unmounts
    // FUSE itself (and removes its ready file once it has).
    r.stop_server(&sd, Duration::from_secs(40));
    // 3. Whatever a dead (or killed) server left: loop devices, their settings and the FUSE
    // mount.
    detach_left_loops(&sd, ready.as_ref(), &mut r);
    if sd.read_ready().is_some() {
        set_back_found(ready.as_ref(), &mut r);
    }
    let fuse_dir = sd.fuse_dir();
    if is_mounted(&fuse_dir) {
        if owned::is_own_fuse(&fuse_dir, "fsbench-disk") {
            fsbench_base::fuse::lazy_unmount(&fuse_dir)
                .with_context(|| format!("unmounting {}", fuse_dir.display()))?;
        } else {
            bail!(
                "{} holds a mount that is not the disk server's; not unmounting it, and keeping the state directory {}",
                fuse_dir.display(),
                sd.dir.display()
            );
        }
    }
    // 4. Files.
    if let Some(c) = &cfg {
        if c.created_image && !keep {
            match fsbench_base::owned::path::remove_file(&c.image) {
                Ok(true) => r.done.push(format!("deleted image {}", c.image.display())),
                Ok(false) => {}
                Err(e) => fsbench_base::errln!("removing {}: {e}", c.image.display()),
            }
        } else {
            fsbench_base::errln!("kept image {}", c.image.display());
        }
    }
    r.finish(&sd, &["fuse"])
}

/// Loop devices a dead server left bound to its FUSE file (found by the file's path),
/// detached only while the file the server attached backs them (by device and inode).
fn detach_left_loops(sd: &StateDir, ready: Option<&state::Ready>, r: &mut Removal) {
    let fuse_file = sd.fuse_file();
    for dev in loopdev::devices_backed_by(&fuse_file) {
        let Some(backing) = ready.and_then(|x| x.backing) else {
            r.left.push(format!(
                "{dev} is attached to {}, but no record of the file the server attached survives; not detaching it (left alone)",
                fuse_file.display()
            ));
            continue;
        };
        match owned::detach_if_backed_by(&dev, backing) {
            Ok(Detach::Detached) => r.done.push(format!("detached {dev}")),
            Ok(Detach::Gone) => {}
            Ok(Detach::Foreign(have)) => r.left.push(format!(
                "not detaching {dev}: another file backs it now ({have}, not {backing}); left alone"
            )),
            Err(e) => fsbench_base::errln!("detaching {dev}: {e}"),
        }
    }
}

/// The device of a server that did not shut down, detached by the kernel when its last
/// handle went or by [`detach_left_loops`]: back as the server found it, unless someone has
/// attached it since (a server that stops does this itself, then removes its ready file).
fn set_back_found(ready: Option<&state::Ready>, r: &mut Removal) {
    let Some((dev, found)) = ready.and_then(|x| Some((&x.device, x.found_queue.as_ref()?))) else {
        return;
    };
    match found.restore_detached(dev) {
        Ok(Some(set)) if !set.is_empty() => {
            r.done.push(format!("set {dev} back: {}", set.join(", ")))
        }
        Ok(_) => {}
        Err(e) => fsbench_base::errln!("setting {dev} back as it was found: {e}"),
    }
}

fn models() -> anyhow::Result<()> {
    for name in DiskParams::PRESETS {
        let p = DiskParams::preset(name).expect("preset exists");
        fsbench_base::outln!("{name}");
        fsbench_base::outln!(
            "  rpm {}  seek track/avg/full {}/{}/{} ms (sqrt up to {:.0}% of the stroke)",
            p.rpm,
            p.seek_track_ms,
            p.seek_avg_ms,
            p.seek_full_ms,
            p.seek_boundary * 100.0
        );
        fsbench_base::outln!(
            "  media {}-{} MB/s in {} zones, {} heads, cache {} x {}, bus {} MB/s, overhead {} ms",
            p.transfer_outer,
            p.transfer_inner,
            p.zones,
            p.heads,
            p.cache_segments,
            human_bytes(p.segment_bytes),
            p.bus_rate,
            p.overhead_ms
        );
    }
    Ok(())
}

/// The image is sparse, so a disk larger than the free space of the file system holding the
/// image is created at once and fails later, with ENOSPC from the backing file under the
/// simulated disk. Warn when the capacity exceeds the free space; refuse when even the file
/// system `--mkfs` makes could not be written: ext4 and xfs set aside about 1/64 of the
/// capacity for inode tables and the journal, which they write (ext4 zeroes its inode tables
/// in the background after mounting).
fn check_image_space(
    dir: &Path,
    size: u64,
    existed: bool,
    mkfs: Option<&str>,
) -> anyhow::Result<()> {
    if existed {
        return Ok(());
    }
    let Some(free) = fsbench_engine::engine::free_space(dir) else {
        return Ok(());
    };
    let human = |n: u64| fsbench_base::units::human_bytes(n as f64);
    if mkfs.is_some() && size / 64 > free {
        bail!(
            "--size {} needs about {} for the metadata of its file system alone, but {} has {} free; lower --size or pass --image on a larger file system",
            human(size),
            human(size / 64),
            dir.display(),
            human(free)
        );
    }
    if size > free {
        fsbench_base::errln!(
            "fsbench: warning: --size {} is more than the {} free in {}: the image is sparse, and writes past that will fail with ENOSPC",
            human(size),
            human(free),
            dir.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_rates_durations() {
        assert_eq!(parse_size("4G").unwrap(), 4 << 30);
        assert_eq!(parse_size("256MiB").unwrap(), 256 << 20);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert!(parse_size("4X").is_err());
        assert_eq!(parse_ms("5.2ms").unwrap(), 5.2);
        assert_eq!(parse_ms("500us").unwrap(), 0.5);
        assert_eq!(parse_ms("0.01s").unwrap(), 10.0);
        assert_eq!(parse_rate("50MB/s").unwrap(), 50.0);
        assert_eq!(parse_rate("1GB/s").unwrap(), 1000.0);
        assert!((parse_rate("100MiB/s").unwrap() - 104.8576).abs() < 1e-9);
    }
}
