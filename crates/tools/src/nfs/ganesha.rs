//! NFS-Ganesha as fsbench runs it: its configuration, starting it, knowing it again, stopping
//! it.
//!
//! One ganesha per server, in the foreground of its own session (`-F`), with its
//! configuration, pid file, log and NFSv4 recovery directory in the server's state
//! directory. It listens on 127.0.0.1 only, on ports fsbench picked, over TCP only, with
//! NLM and RQUOTA off, and with no NFSv4 grace period (`Graceless`), so that it answers as
//! soon as it has started. The export is the VFS FSAL over the directory fsbench made.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::state::{NfsConfig, ProcId, StateDir, Version, CONF_MARK};

/// Quote a path for ganesha's configuration language (double quotes; the paths are fsbench's
/// own and hold no quote, checked).
fn quoted(p: &Path) -> Result<String> {
    let s = p.to_str().context("a path that is not UTF-8")?;
    if s.contains(['"', '\\', '\n']) {
        bail!("{s:?}: a path with a quote, backslash or newline cannot go into ganesha's configuration");
    }
    Ok(format!("\"{s}\""))
}

/// The configuration file fsbench writes for server `c`.
pub fn config_text(c: &NfsConfig, sd: &StateDir) -> Result<String> {
    let protocols = c.version.number();
    let mount = match (c.version, c.mount_port) {
        (Version::V3, Some(p)) => format!("    MNT_Port = {p};\n"),
        _ => String::new(),
    };
    Ok(format!(
        "{CONF_MARK} {name}: written by `fsbench nfs create`, removed by `fsbench nfs remove {name}`\n\
         NFS_CORE_PARAM {{\n\
         \x20   Bind_addr = 127.0.0.1;\n\
         \x20   NFS_Port = {nfs};\n\
         {mount}\
         \x20   Protocols = {protocols};\n\
         \x20   Enable_NLM = false;\n\
         \x20   Enable_RQUOTA = false;\n\
         \x20   Enable_UDP = false;\n\
         \x20   mount_path_pseudo = true;\n\
         }}\n\
         NFSv4 {{\n\
         \x20   Graceless = true;\n\
         \x20   Only_Numeric_Owners = true;\n\
         \x20   RecoveryRoot = {recovery};\n\
         }}\n\
         NFS_KRB5 {{\n\
         \x20   Active_krb5 = false;\n\
         \x20   CCacheDir = {ccache};\n\
         }}\n\
         EXPORT {{\n\
         \x20   Export_Id = 1;\n\
         \x20   Path = {export};\n\
         \x20   Pseudo = {pseudo};\n\
         \x20   Protocols = {protocols};\n\
         \x20   Transports = TCP;\n\
         \x20   Access_Type = RW;\n\
         \x20   Squash = No_Root_Squash;\n\
         \x20   SecType = sys;\n\
         \x20   FSAL {{\n\
         \x20       Name = VFS;\n\
         \x20   }}\n\
         }}\n",
        name = c.name,
        nfs = c.nfs_port,
        recovery = quoted(&sd.recovery())?,
        ccache = quoted(&sd.dir.join("ccache"))?,
        export = quoted(&c.export)?,
        pseudo = quoted(Path::new(&c.pseudo))?,
    ))
}

/// Start `ganesha.nfsd` for the server in `sd` (its configuration written), in its own
/// session so that it runs on after `fsbench nfs create` ends.
pub fn spawn(sd: &StateDir) -> Result<(Child, ProcId)> {
    let exe = super::rpcbind::locate("ganesha.nfsd").context(
        "ganesha.nfsd is not installed: install the nfs-ganesha and nfs-ganesha-vfs packages",
    )?;
    std::fs::create_dir_all(sd.recovery())?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(sd.log())
        .with_context(|| format!("creating {}", sd.log().display()))?;
    let mut cmd = Command::new(&exe);
    cmd.arg("-F")
        .arg("-f")
        .arg(sd.ganesha_conf())
        .arg("-L")
        .arg(sd.log())
        .arg("-p")
        .arg(sd.pid_file())
        .args(["-N", "NIV_EVENT"])
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(fsbench_base::daemon::process::pre_exec);
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    match ProcId::of(child.id() as i32) {
        Some(id) => Ok((child, id)),
        None => {
            let st = child.wait()?;
            bail!("ganesha.nfsd exited at once ({st})")
        }
    }
}

/// Whether the recorded process is still the ganesha fsbench started for `sd`: same pid and
/// start time, named ganesha.nfsd, started with this server's configuration file.
pub fn is_ours(id: &ProcId, sd: &StateDir) -> bool {
    let conf = sd.ganesha_conf();
    id.alive()
        && id.comm() == "ganesha.nfsd"
        && id
            .args()
            .windows(2)
            .any(|w| w[0] == "-f" && Path::new(&w[1]) == conf)
}

/// Stop the ganesha recorded in `c` if it is still the one fsbench started: SIGTERM, and
/// SIGKILL after 15 s. What was done, for the user; an error when the pid now names another
/// process (left alone).
pub fn stop(c: &NfsConfig, sd: &StateDir) -> Result<Option<String>> {
    let Some(id) = c.ganesha else {
        return Ok(None);
    };
    if !id.alive() {
        return Ok(None);
    }
    if !is_ours(&id, sd) {
        bail!(
            "not signalling pid {}: it is {} now, not the ganesha.nfsd fsbench started with {}; left alone",
            id.pid,
            id.comm(),
            sd.ganesha_conf().display()
        );
    }
    // SAFETY: the process fsbench started, checked just now by pid, start time and arguments.
    unsafe { libc::kill(id.pid, libc::SIGTERM) };
    if fsbench_base::daemon::process::wait_gone(id.pid, Duration::from_secs(15)) {
        return Ok(Some(format!("stopped ganesha.nfsd (pid {})", id.pid)));
    }
    if is_ours(&id, sd) {
        // SAFETY: as above, checked again.
        unsafe { libc::kill(id.pid, libc::SIGKILL) };
        fsbench_base::daemon::process::wait_gone(id.pid, Duration::from_secs(5));
    }
    Ok(Some(format!(
        "killed ganesha.nfsd (pid {}): it did not stop within 15 s of SIGTERM",
        id.pid
    )))
}

/// The last lines of ganesha's log, to say why it failed.
pub fn log_tail(sd: &StateDir) -> String {
    let text = fsbench_base::input::read_tail(&sd.log(), fsbench_base::input::LOG_TAIL);
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return "(nothing logged)".into();
    }
    lines[lines.len().saturating_sub(25)..].join("\n")
}
