//! `fsbench remote ...`: create, list, inspect and remove simulated remote file systems.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};

use super::model::{self, Net};
use super::server;
use super::state::{self, Protocol, RemoteConfig, RemoteStats, StateDir, KIND, WARN_PCT};
use fsbench_base::daemon::owned::{mount_points, refuse_buried};
use fsbench_base::daemon::process::{ask, Asked};
use fsbench_base::daemon::remove::Removal;
use fsbench_base::daemon::state::{read_json, state_word, write_json_atomic};
use fsbench_base::units::human_bytes_u64 as human_bytes;

/// Simulated remote file systems: a server tree behind a modelled network, through FUSE.
#[derive(clap::Args, Debug)]
pub struct RemoteArgs {
    #[command(subcommand)]
    pub command: RemoteCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum RemoteCommand {
    /// Mount a server tree at MNT as a remote file system behind a modelled network.
    Create(Box<CreateArgs>),
    /// List simulated remotes.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show a remote's statistics: requests, round trips, bytes moved, lookaside, reply lateness.
    Stats {
        /// The remote's name, as given to `remote create` (see `remote list`).
        name: String,
        /// After printing, start counting afresh (later `stats` show only what came after)
        /// and empty the client cache (the next accesses are cold).
        #[arg(long)]
        reset: bool,
        /// Print the statistics as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Change a running remote: its network, its lookaside trees, or empty its client cache.
    Set(Box<SetArgs>),
    /// Remove a remote: unmount it, stop its server, delete its state and client cache.
    Remove {
        /// The remote's name, as given to `remote create` (see `remote list`).
        name: String,
    },
    /// Run a remote's server in the foreground (`create` starts it in the background).
    #[command(hide = true)]
    Serve {
        /// The remote's name.
        name: String,
    },
}

#[derive(clap::Args, Debug)]
pub struct CreateArgs {
    /// Name of the remote (letters, digits, '-', '_', '.').
    pub name: String,
    /// The tree the server exports.
    #[arg(long)]
    pub server: PathBuf,
    /// Where to mount it (an empty directory, not inside --server).
    #[arg(long)]
    pub mount: PathBuf,
    /// Network preset: 100mbit (1 ms), 10mbit (10 ms), 1mbit (50 ms), 100kbit (300 ms).
    #[arg(long)]
    pub preset: Option<String>,
    /// Link bandwidth (e.g. 10mbit, 100kbit, 1gbit, 12.5MB/s); overrides the preset's.
    #[arg(long, value_parser = fsbench_base::units::parse_bandwidth)]
    pub bandwidth: Option<f64>,
    /// Round-trip time (e.g. 20ms, 0.3s); overrides the preset's.
    #[arg(long, value_parser = fsbench_base::units::parse_rtt)]
    pub rtt: Option<f64>,
    /// whole-file (AFS-like: fetch on open, send back on close) or block (64 KiB chunks).
    #[arg(long, value_enum, default_value = "whole-file")]
    pub protocol: Protocol,
    /// Client cache size (K, M, G: powers of 1024), LRU-evicted.
    #[arg(long, default_value = "256M", value_parser = fsbench_base::units::parse_size)]
    pub cache_size: u64,
    /// A local tree whose files, when identical by content, are copied instead of fetched, or a
    /// `scan --hash` snapshot of one (its index, so the tree is not hashed now); repeatable.
    #[arg(long)]
    pub lookaside: Vec<PathBuf>,
    /// Allow writes (otherwise every modification fails with EROFS and the server tree is never changed).
    #[arg(long)]
    pub writable: bool,
    /// Vary every round trip uniformly by up to this much either way (e.g. 5ms).
    #[arg(long, value_parser = fsbench_base::units::parse_rtt)]
    pub jitter: Option<f64>,
    /// Share of requests lost and sent again after a retransmission timeout (0..1, or e.g. 1%).
    #[arg(long, value_parser = model::parse_loss)]
    pub loss: Option<f64>,
    /// Seed of the jitter and loss draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(clap::Args, Debug, Default)]
pub struct SetArgs {
    /// The remote's name, as given to `remote create` (see `remote list`).
    pub name: String,
    /// Network preset: 100mbit, 10mbit, 1mbit, 100kbit (see `remote create`).
    #[arg(long)]
    pub preset: Option<String>,
    /// Link bandwidth; overrides the preset's (or changes only the bandwidth).
    #[arg(long, value_parser = fsbench_base::units::parse_bandwidth)]
    pub bandwidth: Option<f64>,
    /// Round-trip time; overrides the preset's (or changes only the RTT).
    #[arg(long, value_parser = fsbench_base::units::parse_rtt)]
    pub rtt: Option<f64>,
    /// Round-trip jitter from now on (see `remote create --jitter`).
    #[arg(long, value_parser = fsbench_base::units::parse_rtt)]
    pub jitter: Option<f64>,
    /// Share of requests lost from now on (see `remote create --loss`).
    #[arg(long, value_parser = model::parse_loss)]
    pub loss: Option<f64>,
    /// Replace the lookaside trees with these (indexed now; repeatable).
    #[arg(long, conflicts_with = "no_lookaside")]
    pub lookaside: Vec<PathBuf>,
    /// Use no lookaside tree from now on.
    #[arg(long)]
    pub no_lookaside: bool,
    /// Empty the client cache (files, chunks, names, attributes): the next accesses are cold.
    #[arg(long)]
    pub drop_cache: bool,
}

pub fn run(args: RemoteArgs) -> anyhow::Result<()> {
    match args.command {
        RemoteCommand::Create(a) => create(*a),
        RemoteCommand::List { json } => list(json),
        RemoteCommand::Stats { name, reset, json } => stats(&name, reset, json),
        RemoteCommand::Set(a) => set(&a),
        RemoteCommand::Remove { name } => remove(&name),
        RemoteCommand::Serve { name } => server::serve(&name),
    }
}

/// The network from the preset and the overrides.
/// A preset's network, or an error listing the presets.
fn preset_net(p: &str) -> anyhow::Result<Net> {
    Net::preset(p).with_context(|| {
        format!(
            "unknown preset {p:?}; presets: {}",
            model::PRESETS
                .iter()
                .map(|(n, _, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// The lookaside trees or snapshots given, canonical; none may lie inside the mount point.
fn lookaside_paths(given: &[PathBuf], mount: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for d in given {
        if !d.is_dir() && !d.is_file() {
            bail!(
                "lookaside {} is neither a directory nor a `scan --hash` snapshot",
                d.display()
            );
        }
        let c = d.canonicalize()?;
        if c.starts_with(mount) {
            bail!("lookaside tree {} is inside the mount point", d.display());
        }
        out.push(c);
    }
    Ok(out)
}

pub fn net_from(a: &CreateArgs) -> anyhow::Result<(Net, Option<String>)> {
    let preset = match (&a.preset, a.bandwidth, a.rtt) {
        (Some(p), _, _) => Some(p.clone()),
        (None, Some(_), Some(_)) => None,
        (None, _, _) => Some(model::DEFAULT_PRESET.to_string()),
    };
    let mut net = match &preset {
        Some(p) => preset_net(p)?,
        None => Net {
            bandwidth_bps: 0.0,
            rtt_s: 0.0,
            jitter_s: 0.0,
            loss: 0.0,
        },
    };
    if let Some(b) = a.bandwidth {
        net.bandwidth_bps = b;
    }
    if let Some(r) = a.rtt {
        net.rtt_s = r;
    }
    net.jitter_s = a.jitter.unwrap_or(0.0);
    net.loss = a.loss.unwrap_or(0.0);
    Ok((net, preset))
}

/// Mount points listed in /proc/self/mounts, compared as strings: no stat of a
/// FUSE mount whose server may be gone.
fn listed_as_mounted(path: &Path) -> bool {
    mount_points().iter().any(|m| m == path)
}

/// The mount point, canonical: an existing empty directory, outside the server tree and
/// not a mount point already.
fn checked_mount(mount_arg: &Path, server_dir: &Path) -> anyhow::Result<PathBuf> {
    let mnt_md = fs::metadata(mount_arg)
        .with_context(|| format!("mount point {} does not exist", mount_arg.display()))?;
    if !mnt_md.is_dir() {
        bail!("mount point {} is not a directory", mount_arg.display());
    }
    let mount = mount_arg.canonicalize()?;
    if fs::read_dir(&mount)?.next().is_some() {
        bail!("mount point {} is not empty", mount.display());
    }
    if mount.starts_with(server_dir) {
        bail!(
            "mount point {} is inside the server tree {}",
            mount.display(),
            server_dir.display()
        );
    }
    if listed_as_mounted(&mount) {
        bail!("{} is already a mount point", mount.display());
    }
    Ok(mount)
}

fn create(a: CreateArgs) -> anyhow::Result<()> {
    KIND.require_root("create")?;
    let sd = StateDir::new(&a.name)?;
    KIND.refuse_taken(&sd, &a.name, sd.exists() || sd.dir.exists())?;
    let (net, preset) = net_from(&a)?;
    if !a.server.is_dir() {
        bail!(
            "server tree {} does not exist or is not a directory",
            a.server.display()
        );
    }
    let server_dir = a.server.canonicalize()?;
    let mount = checked_mount(&a.mount, &server_dir)?;
    let lookaside = lookaside_paths(&a.lookaside, &mount)?;

    fs::create_dir_all(&sd.dir).with_context(|| format!("creating {}", sd.dir.display()))?;
    let cleanup = |sd: &StateDir| {
        let _ = fsbench_base::owned::path::remove_tree(&sd.dir);
    };
    let index = match server::index_lookaside(&lookaside) {
        Ok(i) => i,
        Err(e) => {
            cleanup(&sd);
            return Err(e);
        }
    };
    let cfg = RemoteConfig {
        name: a.name.clone(),
        server: server_dir,
        mount: mount.clone(),
        net,
        preset,
        protocol: a.protocol,
        cache_size: a.cache_size,
        lookaside,
        writable: a.writable,
        seed: a.seed,
    };
    let written = write_json_atomic(&sd.lookaside(), &index)
        .and_then(|_| write_json_atomic(&sd.config(), &cfg));
    if let Err(e) = written {
        cleanup(&sd);
        return Err(e);
    }
    if let Err(e) = KIND.start(&sd) {
        let _ = remove(&a.name);
        if sd.dir.exists() && !listed_as_mounted(&mount) {
            cleanup(&sd);
        }
        return Err(e);
    }
    fsbench_base::errln!(
        "{}: {} on {}, {}, {} protocol, cache {}{}{}",
        a.name,
        cfg.server.display(),
        cfg.mount.display(),
        model::describe_net(&cfg.net),
        cfg.protocol.name(),
        human_bytes(cfg.cache_size),
        if cfg.writable {
            ", writable"
        } else {
            ", read-only"
        },
        if cfg.lookaside.is_empty() {
            String::new()
        } else {
            format!(
                ", lookaside {} files in {} trees",
                index.len(),
                cfg.lookaside.len()
            )
        }
    );
    fsbench_base::outln!("{}", cfg.mount.display());
    Ok(())
}

fn list(json: bool) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for name in KIND.names() {
        let sd = StateDir::new(&name)?;
        let Ok(cfg) = sd.read_config() else { continue };
        let alive = sd.live_pid().is_some();
        let st = state_word(alive, sd.ready().exists());
        let stats = sd.read_stats();
        rows.push(serde_json::json!({
            "name": name,
            "state": st,
            "server": cfg.server,
            "mount": cfg.mount,
            "protocol": cfg.protocol.name(),
            "bandwidth_bps": cfg.net.bandwidth_bps,
            "rtt_s": cfg.net.rtt_s,
            "requests": stats.as_ref().map(|s| s.requests).unwrap_or(0),
        }));
    }
    if !KIND.list_rows(&rows, json)? {
        return Ok(());
    }
    fsbench_base::outln!(
        "{:<12} {:<8} {:<11} {:>14} {:>9} {:>10}  MOUNT <- SERVER",
        "NAME",
        "STATE",
        "PROTOCOL",
        "BANDWIDTH",
        "RTT",
        "REQUESTS"
    );
    for r in rows {
        fsbench_base::outln!(
            "{:<12} {:<8} {:<11} {:>14} {:>7} ms {:>10}  {} <- {}",
            r["name"].as_str().unwrap_or(""),
            r["state"].as_str().unwrap_or(""),
            r["protocol"].as_str().unwrap_or(""),
            fsbench_base::units::human_bps(r["bandwidth_bps"].as_f64().unwrap_or(0.0)),
            r["rtt_s"].as_f64().unwrap_or(0.0) * 1e3,
            r["requests"].as_u64().unwrap_or(0),
            r["mount"].as_str().unwrap_or("-"),
            r["server"].as_str().unwrap_or("-"),
        );
    }
    Ok(())
}

/// The statistics since the last `stats --reset`.
pub fn current_stats(sd: &StateDir) -> RemoteStats {
    let now = sd.read_stats().unwrap_or_default();
    match read_json::<RemoteStats>(&sd.stats_base()) {
        Ok(base) => now.since(&base),
        Err(_) => now,
    }
}

fn stats(name: &str, reset: bool, json: bool) -> anyhow::Result<()> {
    let sd = StateDir::new(name)?;
    if !sd.exists() {
        return Err(KIND.no_such(name));
    }
    let cfg = sd.read_config()?;
    if sd.live_pid().is_some() {
        // Counts as of now, not as of the server's last periodic write.
        if let Err(e) = request(&sd, state::Control::default()) {
            fsbench_base::errln!("fsbench: warning: {e:#}; showing the statistics it last wrote");
        }
    }
    let st = current_stats(&sd);
    let late = st.lateness();
    if json {
        let mut v = serde_json::to_value(&st)?;
        v["lateness"] = serde_json::to_value(&late)?;
        fsbench_base::outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print_stats(name, &cfg, &st, &late, sd.live_pid().is_some());
    }
    if late.pct > WARN_PCT {
        fsbench_base::errln!(
            "fsbench: warning: the simulated remote {name} replied {:.1}% of the mean modelled delay late on average (more than {WARN_PCT}%): measurements include the server's own delays",
            late.pct
        );
    }
    if reset {
        if sd.live_pid().is_some() {
            request(
                &sd,
                state::Control {
                    drop_cache: true,
                    ..Default::default()
                },
            )?;
        }
        let raw = sd.read_stats().unwrap_or_default();
        write_json_atomic(&sd.stats_base(), &raw)?;
    }
    Ok(())
}

/// `remote stats` for people: the server, the requests, the caches, the network's waits
/// and the server's own lateness.
fn print_stats(
    name: &str,
    cfg: &RemoteConfig,
    st: &RemoteStats,
    late: &state::Lateness,
    alive: bool,
) {
    fsbench_base::outln!(
        "{name}: {} on {} ({}), {}, {} protocol",
        cfg.server.display(),
        cfg.mount.display(),
        if alive { "running" } else { "stopped" },
        model::describe_net(&cfg.net),
        cfg.protocol.name()
    );
    fsbench_base::outln!(
        "requests {}: {}",
        st.requests,
        st.requests_by_type
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    fsbench_base::outln!(
        "round trips {}, fetched {}, sent {}, attribute cache hits {}",
        st.round_trips,
        human_bytes(st.bytes_fetched),
        human_bytes(st.bytes_sent),
        st.attr_cache_hits
    );
    match cfg.protocol {
        Protocol::WholeFile => fsbench_base::outln!(
            "file cache: hits {}, misses {}, evictions {}, holding {}",
            st.file_cache_hits,
            st.file_cache_misses,
            st.cache_evictions,
            human_bytes(st.cache_bytes)
        ),
        Protocol::Block => fsbench_base::outln!(
            "chunk cache: hits {}, misses {}, evictions {}, holding {}",
            st.chunk_cache_hits,
            st.chunk_cache_misses,
            st.cache_evictions,
            human_bytes(st.cache_bytes)
        ),
    }
    if !cfg.lookaside.is_empty() {
        fsbench_base::outln!(
            "lookaside: hits {}, misses {}, {} copied locally",
            st.lookaside_hits,
            st.lookaside_misses,
            human_bytes(st.lookaside_bytes)
        );
    }
    fsbench_base::outln!(
        "waited on the modelled network {:.3} s ({} delayed replies)",
        st.network_wait_s,
        st.delayed_replies
    );
    if st.lost_requests > 0 {
        fsbench_base::outln!("lost and sent again: {} requests", st.lost_requests);
    }
    if st.delayed_replies > 0 {
        fsbench_base::outln!(
            "server overhead: replies leave {:.1} us (p99 {:.0} us) after the modelled time, \
             {:.2}% of the mean modelled delay; server {}, memory {}",
            late.mean_us,
            late.p99_us,
            late.pct,
            if st.scheduling.is_empty() {
                "scheduling unknown"
            } else {
                &st.scheduling
            },
            if st.memory_locked.is_empty() {
                "unknown"
            } else {
                &st.memory_locked
            }
        );
    }
}

/// Send a request to the remote's running server and wait until it has been carried out
/// (the server writes its statistics, then acknowledges).
pub fn request(sd: &StateDir, mut c: state::Control) -> anyhow::Result<()> {
    let Some(pid) = sd.live_pid() else {
        bail!("the server of {} is not running", sd.dir.display());
    };
    let last: u64 = read_json(&sd.control_ack()).unwrap_or(0);
    c.seq = last.max(c.seq) + 1;
    write_json_atomic(&sd.control(), &c)?;
    // The server waits for SIGUSR1 to read its request.
    let answered = || read_json::<u64>(&sd.control_ack()).ok() == Some(c.seq);
    match ask(pid, libc::SIGUSR1, Duration::from_secs(10), answered) {
        Asked::Answered => Ok(()),
        Asked::Unanswered | Asked::NotSent => bail!(
            "the server of {} did not answer a request within 10 s (see {})",
            sd.dir.display(),
            sd.log().display()
        ),
    }
}

/// Empty the client cache of every running simulated remote. Dropping the kernel's
/// caches for a cold run calls this: a remote's client cache stands for the client
/// machine's own (an NFS or AFS client's), which a cold start would not have either.
pub fn drop_all_client_caches() -> anyhow::Result<usize> {
    let mut n = 0;
    for name in KIND.names() {
        let sd = StateDir::new(&name)?;
        if sd.live_pid().is_none() || !sd.ready().exists() {
            continue;
        }
        // A remote that does not answer must not stop a cold run elsewhere: say so.
        match request(
            &sd,
            state::Control {
                drop_cache: true,
                ..Default::default()
            },
        ) {
            Ok(()) => n += 1,
            Err(e) => fsbench_base::errln!(
                "fsbench: warning: could not empty the client cache of remote {name}: {e:#}"
            ),
        }
    }
    Ok(n)
}

/// The network `set` asks for (with the preset it is, if exactly one), or `None` when it
/// leaves the network alone. A preset sets bandwidth and RTT; what is not given stays.
fn net_for_set(a: &SetArgs, cur: &Net) -> anyhow::Result<Option<(Net, Option<String>)>> {
    if a.preset.is_none()
        && a.bandwidth.is_none()
        && a.rtt.is_none()
        && a.jitter.is_none()
        && a.loss.is_none()
    {
        return Ok(None);
    }
    let mut net = match &a.preset {
        Some(p) => preset_net(p)?,
        None => *cur,
    };
    net.jitter_s = a.jitter.unwrap_or(cur.jitter_s);
    net.loss = a.loss.unwrap_or(cur.loss);
    if let Some(b) = a.bandwidth {
        net.bandwidth_bps = b;
    }
    if let Some(r) = a.rtt {
        net.rtt_s = r;
    }
    let preset = match (&a.preset, a.bandwidth, a.rtt) {
        (Some(p), None, None) => Some(p.clone()),
        _ => None,
    };
    Ok(Some((net, preset)))
}

/// `fsbench remote set`: change a running remote.
pub fn set(a: &SetArgs) -> anyhow::Result<()> {
    fsbench_base::outln!("{}", apply_set(a)?);
    Ok(())
}

/// Change a running remote; returns what it is now.
pub fn apply_set(a: &SetArgs) -> anyhow::Result<String> {
    KIND.require_root("set")?;
    let sd = StateDir::new(&a.name)?;
    if !sd.exists() {
        return Err(KIND.no_such(&a.name));
    }
    if sd.live_pid().is_none() {
        bail!("the server of remote {} is not running", a.name);
    }
    let mut cfg = sd.read_config()?;
    let mut c = state::Control {
        drop_cache: a.drop_cache,
        ..Default::default()
    };
    if let Some((net, preset)) = net_for_set(a, &cfg.net)? {
        cfg.preset = preset;
        cfg.net = net;
        c.net = Some(net);
    }
    if !a.lookaside.is_empty() || a.no_lookaside {
        let dirs = lookaside_paths(&a.lookaside, &cfg.mount)?;
        let index = server::index_lookaside(&dirs)?;
        write_json_atomic(&sd.lookaside(), &index)?;
        cfg.lookaside = dirs;
        c.reload_lookaside = true;
    }
    write_json_atomic(&sd.config(), &cfg)?;
    request(&sd, c)?;
    Ok(format!(
        "{}: {}, lookaside {}{}",
        a.name,
        model::describe_net(&cfg.net),
        if cfg.lookaside.is_empty() {
            "none".to_string()
        } else {
            cfg.lookaside
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        },
        if a.drop_cache {
            ", client cache emptied"
        } else {
            ""
        }
    ))
}

fn remove(name: &str) -> anyhow::Result<()> {
    KIND.require_root("remove")?;
    let sd = StateDir::new(name)?;
    if !sd.dir.exists() {
        return Err(KIND.no_such(name));
    }
    let cfg = sd.read_config().ok();
    // Read before the server stops (a server that stops removes it): the record of the
    // mount it made, the only one unmounted at the mount point.
    let made = sd.read_ready().and_then(|r| r.mount);
    // 0. Nothing at all while the server's mount is buried under another: it stays
    //    retryable (the server would leave it behind on a dead connection).
    if let Some(m) = &made {
        refuse_buried(m, "remote", name)?;
    }
    let mut r = Removal::default();
    // 1. The server unmounts the file system itself and exits.
    r.stop_server(&sd, Duration::from_secs(15));
    // 2. Whatever a dead server left mounted, if it is still the server's mount.
    if let Some(c) = &cfg {
        if listed_as_mounted(&c.mount) {
            match &made {
                Some(m) => r.unmount(m),
                None => r.left.push(format!(
                    "{} is mounted, but no record of the mount the server made survives; not unmounting it (left alone)",
                    c.mount.display()
                )),
            }
        }
    }
    // 3. State and client cache (the mount point is never below the state dir's
    //    files: it was an empty directory given by the user, and it is unmounted).
    if let Some(c) = &cfg {
        if c.mount.starts_with(&sd.dir) && listed_as_mounted(&c.mount) {
            bail!("{} is still mounted; not removing state", c.mount.display());
        }
    }
    r.finish(&sd, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(preset: Option<&str>, bw: Option<f64>, rtt: Option<f64>) -> CreateArgs {
        CreateArgs {
            name: "r".into(),
            server: "/".into(),
            mount: "/mnt".into(),
            preset: preset.map(String::from),
            bandwidth: bw,
            rtt,
            protocol: Protocol::WholeFile,
            cache_size: 1 << 20,
            lookaside: vec![],
            writable: false,
            jitter: None,
            loss: None,
            seed: 1,
        }
    }

    #[test]
    fn presets_and_overrides() {
        let (n, p) = net_from(&args(None, None, None)).unwrap();
        assert_eq!(p.as_deref(), Some(model::DEFAULT_PRESET));
        assert_eq!(n, Net::preset(model::DEFAULT_PRESET).unwrap());
        let (n, p) = net_from(&args(Some("1mbit"), None, Some(0.02))).unwrap();
        assert_eq!(p.as_deref(), Some("1mbit"));
        assert_eq!(n.bandwidth_bps, 1e6);
        assert_eq!(n.rtt_s, 0.02);
        let (n, p) = net_from(&args(None, Some(5e6), Some(0.001))).unwrap();
        assert!(p.is_none());
        assert_eq!(n.bandwidth_bps, 5e6);
        assert!(net_from(&args(Some("9600baud"), None, None)).is_err());
    }
}
