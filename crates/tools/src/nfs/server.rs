//! Starting, finding and stopping an NFS server: the library API (`start`, `open`, `stop`,
//! `list`) that `fsbench nfs`, experiment plans and tests call.
//!
//! Start: the state directory, rpcbind (started if none runs), a check that no server but
//! fsbench's own has NFS programs registered with rpcbind (NFS-Ganesha would remove those
//! registrations), the export (image or directory), two free loopback ports, ganesha's
//! configuration, ganesha, and a wait until the export answers a real NFS client (`nfs-ls`).
//! Each step is recorded before the next; a failure or a signal undoes them all, newest
//! first, and says what ganesha logged. Starting and stopping hold one lock
//! (`/run/fsbench/nfs.lock`): rpcbind and its registrations are the machine's, so two starts
//! must not interleave.

use std::fs::{self, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::backing::Backing;
use super::backing::{self, Undone};
use super::ganesha;
use super::rpcbind;
use super::state::{self, NfsConfig, StateDir, Version};

/// What to start.
#[derive(Debug, Clone)]
pub struct Options {
    /// The server's name (letters, digits, '-', '_', '.'): its state directory and the
    /// export's path in the URL (`/NAME`).
    pub name: String,
    pub backing: Backing,
    pub version: Version,
    /// How long to wait for the export to answer.
    pub timeout: Duration,
}

impl Options {
    pub fn new(name: &str, backing: Backing, version: Version) -> Options {
        Options {
            name: name.to_string(),
            backing,
            version,
            timeout: Duration::from_secs(30),
        }
    }
}

/// A running NFS server fsbench started. Dropping it leaves it running (it is a daemon,
/// stopped by [`Server::stop`], [`stop`] or `fsbench nfs remove`); [`Server::scoped`] makes
/// one that stops when dropped.
#[derive(Debug, Clone)]
pub struct Server {
    config: NfsConfig,
}

impl Server {
    pub fn name(&self) -> &str {
        &self.config.name
    }
    /// The URL a libnfs client opens: `nfs://127.0.0.1/NAME?nfsport=P&mountport=M&version=3`
    /// (`mountport` only for NFSv3).
    pub fn url(&self) -> String {
        self.config.url()
    }
    /// The exported directory on this machine (the server's side of the files).
    pub fn export_dir(&self) -> &Path {
        &self.config.export
    }
    pub fn version(&self) -> Version {
        self.config.version
    }
    pub fn nfs_port(&self) -> u16 {
        self.config.nfs_port
    }
    pub fn mount_port(&self) -> Option<u16> {
        self.config.mount_port
    }
    /// ganesha's pid.
    pub fn pid(&self) -> Option<i32> {
        self.config.ganesha.map(|g| g.pid)
    }
    /// Stop it and undo everything its start made; what was done, for the user.
    pub fn stop(self) -> Result<String> {
        stop(&self.config.name)
    }
    /// This server, stopped when the returned guard is dropped.
    pub fn scoped(self) -> Scoped {
        Scoped(Some(self))
    }
}

/// A server stopped (everything undone) when dropped; what could not be undone is reported
/// with [`fsbench_base::exit::left_behind`].
#[derive(Debug)]
pub struct Scoped(Option<Server>);

impl std::ops::Deref for Scoped {
    type Target = Server;
    fn deref(&self) -> &Server {
        self.0.as_ref().expect("held until dropped")
    }
}

impl Drop for Scoped {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            let name = s.name().to_string();
            if let Err(e) = s.stop() {
                fsbench_base::exit::left_behind(format!("NFS server {name}: {e:#}"));
            }
        }
    }
}

/// The lock every start and stop holds (see the module comment).
struct Lock {
    _held: fs::File,
}

fn lock() -> Result<Lock> {
    let dir = state::shared_dir();
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("nfs.lock");
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    loop {
        // SAFETY: flock on a descriptor this function holds open.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(Lock { _held: f });
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).with_context(|| format!("locking {}", path.display()));
        }
        fsbench_base::cancel::check()?;
    }
}

fn require_root(what: &str) -> Result<()> {
    fsbench_base::daemon::require_root(what, "loop devices, mounts, rpcbind and NFS-Ganesha")
}

/// Start a server: see the module comment. On failure everything made is undone (what could
/// not be is reported with [`fsbench_base::exit::left_behind`]) and the error says why, with the end
/// of ganesha's log when ganesha ran.
pub fn start(o: &Options) -> Result<Server> {
    require_root("starting an NFS server")?;
    let sd = StateDir::new(&o.name)?;
    if fs::symlink_metadata(&sd.dir).is_ok() {
        bail!(
            "an NFS server named {} exists already (state {}; see `fsbench nfs list`, or `fsbench nfs remove {}`)",
            o.name,
            sd.dir.display(),
            o.name
        );
    }
    for (prog, pkg) in [
        ("ganesha.nfsd", "nfs-ganesha and nfs-ganesha-vfs"),
        ("rpcinfo", "rpcbind"),
    ] {
        if rpcbind::locate(prog).is_none() {
            bail!("{prog} is not installed: install {pkg} (fsbench runs NFS-Ganesha, which needs rpcbind)");
        }
    }
    client()?;
    let (backing, export) = backing::plan(&o.name, &o.backing, &sd)?;
    let _lock = lock()?;
    fs::create_dir_all(state::state_root())?;
    fs::create_dir(&sd.dir).with_context(|| format!("creating {}", sd.dir.display()))?;
    let mut c = NfsConfig {
        name: o.name.clone(),
        version: o.version,
        backing,
        export,
        pseudo: format!("/{}", o.name),
        nfs_port: 0,
        mount_port: None,
        ganesha: None,
        ready: false,
    };
    let up = sd.write_config(&c).and_then(|_| bring_up(&sd, &mut c, o));
    if let Err(e) = up {
        let u = tear_down(&sd, &c);
        for l in u.left {
            fsbench_base::exit::left_behind(l);
        }
        return Err(e);
    }
    Ok(Server { config: c })
}

/// The directory a server started with `o` will export (nothing is made; refusals of what
/// cannot be made come here too).
pub fn planned_export(o: &Options) -> Result<PathBuf> {
    let sd = StateDir::new(&o.name)?;
    Ok(backing::plan(&o.name, &o.backing, &sd)?.1)
}

/// The steps of [`start`] after the state directory, each recorded in `c` as it is done.
fn bring_up(sd: &StateDir, c: &mut NfsConfig, o: &Options) -> Result<()> {
    if let Some(m) = rpcbind::ensure()? {
        fsbench_base::errln!("fsbench: {m}");
    }
    let foreign = rpcbind::foreign_nfs_registrations()?;
    if !foreign.is_empty() {
        bail!(
            "rpcbind lists an NFS server that fsbench did not start:\n  {}\nNFS-Ganesha removes those registrations when it starts and stops, which would cut that server off from its clients; stop it first, or run fsbench's NFS server on another machine",
            foreign.join("\n  ")
        );
    }
    backing::set_up(sd, c)?;
    fsbench_base::cancel::check()?;
    let ports = free_ports(if c.version == Version::V3 { 2 } else { 1 })?;
    c.nfs_port = ports[0];
    c.mount_port = ports.get(1).copied();
    fsbench_base::owned::path::write_atomic(
        &sd.ganesha_conf(),
        ganesha::config_text(c, sd)?.as_bytes(),
    )
    .with_context(|| format!("writing {}", sd.ganesha_conf().display()))?;
    sd.write_config(c)?;
    let (mut child, id) = ganesha::spawn(sd)?;
    c.ganesha = Some(id);
    sd.write_config(c)?;
    wait_answer(sd, c, &mut child, o.timeout)?;
    c.ready = true;
    sd.write_config(c)
}

/// `n` distinct TCP ports free on 127.0.0.1 now (bound together, then released).
fn free_ports(n: usize) -> Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .context("finding free ports on 127.0.0.1")?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr()?.port()))
        .collect()
}

/// Wait until the export answers a listing by `nfs-ls`, ganesha exits, the time is up, or a
/// signal comes.
fn wait_answer(sd: &StateDir, c: &NfsConfig, child: &mut Child, timeout: Duration) -> Result<()> {
    let nfs_ls = client()?;
    let deadline = Instant::now() + timeout;
    loop {
        fsbench_base::cancel::check()?;
        if let Some(st) = child.try_wait()? {
            bail!(
                "ganesha.nfsd exited ({st}) before the export answered; the end of its log {}:\n{}",
                sd.log().display(),
                ganesha::log_tail(sd)
            );
        }
        let last = match probe(&nfs_ls, &c.url()) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if Instant::now() > deadline {
            bail!(
                "the export {} did not answer within {} s ({}: {last}); the end of ganesha's log {}:\n{}",
                c.url(),
                timeout.as_secs(),
                nfs_ls.display(),
                sd.log().display(),
                ganesha::log_tail(sd)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The client that checks the export: `$FSBENCH_NFS_LS` when set (any program taking the
/// URL and exiting 0 once the export answered), else libnfs's `nfs-ls`.
fn client() -> Result<PathBuf> {
    match std::env::var_os("FSBENCH_NFS_LS") {
        Some(p) if !p.is_empty() => Ok(PathBuf::from(p)),
        _ => rpcbind::locate("nfs-ls").context(
            "nfs-ls is not installed: install libnfs-utils (fsbench checks the export with it)",
        ),
    }
}

/// One listing of the export's root by `nfs-ls URL`, given 5 s; why it failed, if it did.
fn probe(nfs_ls: &Path, url: &str) -> std::result::Result<(), String> {
    let mut cmd = Command::new(nfs_ls);
    cmd.arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    fsbench_base::created::own(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let _slot = fsbench_base::cancel::forward_to(child.id() as i32);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(st)) if st.success() => return Ok(()),
            Ok(Some(st)) => {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut err);
                }
                return Err(format!("{st}: {}", err.trim()));
            }
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("no answer within 5 s".into());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Undo what `c` records, newest first: ganesha, the export, rpcbind if fsbench started it
/// and nothing needs it, and the state directory (kept when something was left, so that
/// `remove` can finish the job later).
fn tear_down(sd: &StateDir, c: &NfsConfig) -> Undone {
    let mut u = Undone::default();
    match ganesha::stop(c, sd) {
        Ok(Some(w)) => u.done.push(w),
        Ok(None) => {}
        Err(e) => u.left.push(format!("{e:#}")),
    }
    backing::tear_down(c, &mut u);
    if let Some(w) = rpcbind::release() {
        u.done.push(w);
    }
    if !u.left.is_empty() {
        u.left.push(format!(
            "kept the state {}: once the above is dealt with, `fsbench nfs remove {}` finishes",
            sd.dir.display(),
            c.name
        ));
        return u;
    }
    let removed = fsbench_base::daemon::remove::refuse_mounts_inside(&sd.dir).and_then(|_| {
        fsbench_base::owned::path::remove_tree(&sd.dir)
            .with_context(|| format!("removing {}", sd.dir.display()))
    });
    match removed {
        Ok(()) => u.done.push(format!("removed state {}", sd.dir.display())),
        Err(e) => u.left.push(format!("{e:#}")),
    }
    u
}

/// The server named `name`, as its state records it.
pub fn open(name: &str) -> Result<Server> {
    let sd = StateDir::new(name)?;
    if !sd.config().exists() {
        bail!("no NFS server named {name} (see `fsbench nfs list`)");
    }
    Ok(Server {
        config: sd.read_config()?,
    })
}

/// Stop server `name` and undo everything its start made (see [`tear_down`]); what was
/// done, for the user. Nothing at all is done while the image's file system is buried under
/// a mount made on top of it since.
pub fn stop(name: &str) -> Result<String> {
    require_root("stopping an NFS server")?;
    let sd = StateDir::new(name)?;
    if fs::symlink_metadata(&sd.dir).is_err() {
        bail!("no NFS server named {name} (see `fsbench nfs list`)");
    }
    let c = sd.read_config().with_context(|| {
        format!(
            "{} has no configuration fsbench can read; nothing was done (look at what is in it, and remove it by hand)",
            sd.dir.display()
        )
    })?;
    backing::refuse_buried(&c)?;
    let _lock = lock()?;
    let u = tear_down(&sd, &c);
    let done = format!("NFS server {name} removed: {}", u.done.join("; "));
    if !u.left.is_empty() {
        fsbench_base::errln!("{done}");
        bail!("{}", u.left.join("\n"));
    }
    Ok(done)
}

/// One server as `list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Entry {
    pub name: String,
    pub url: String,
    pub pid: Option<i32>,
    /// "running" (ganesha runs and the export answered), "starting", or "dead".
    pub state: &'static str,
    pub version: u32,
    pub export: PathBuf,
}

/// Every server with a state directory, by name.
pub fn list() -> Vec<Entry> {
    let mut out = Vec::new();
    for name in fsbench_base::daemon::names_in(&state::state_root()) {
        let Ok(sd) = StateDir::new(&name) else {
            continue;
        };
        let Ok(c) = sd.read_config() else { continue };
        let alive = c.ganesha.is_some_and(|g| ganesha::is_ours(&g, &sd));
        out.push(Entry {
            url: c.url(),
            pid: c.ganesha.filter(|_| alive).map(|g| g.pid),
            state: match (alive, c.ready) {
                (true, true) => "running",
                (true, false) => "starting",
                (false, _) => "dead",
            },
            version: c.version.number(),
            export: c.export.clone(),
            name,
        });
    }
    out
}
