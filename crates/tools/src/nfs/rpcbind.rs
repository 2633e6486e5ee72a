//! rpcbind, which NFS-Ganesha needs to start (it registers its programs there and exits when
//! it cannot), and the registrations in it.
//!
//! fsbench starts `rpcbind -w -f` only when none runs, records which process it started
//! (`/run/fsbench/rpcbind.json`: pid and start time), and stops it only when that record
//! still names the running rpcbind, no NFS-Ganesha runs at all, and rpcbind holds no
//! registration but its own and stale ones (on ports nothing listens on): an rpcbind someone
//! else started, or one another program has come to use since, is left running.
//!
//! NFS-Ganesha removes every registration of the NFS, MOUNT, NLM and RQUOTA programs when it
//! starts and when it stops, whoever made them. So before starting one, fsbench looks at what
//! rpcbind lists for those programs and refuses when a registration belongs to a server that
//! is not one of fsbench's (the kernel's nfsd, another NFS-Ganesha): starting would cut that
//! server off from its clients.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::state::{shared_dir, ProcId, CONF_MARK};
use fsbench_base::daemon::state::{read_json, write_json_atomic};

/// The programs NFS-Ganesha unregisters: NFS, MOUNT, NLM, RQUOTA, NFS_ACL.
const NFS_PROGRAMS: [(u32, &str); 5] = [
    (100003, "nfs"),
    (100005, "mountd"),
    (100021, "nlockmgr"),
    (100011, "rquotad"),
    (100227, "nfs_acl"),
];
const PORTMAPPER: u32 = 100000;

/// The record of the rpcbind fsbench started.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    rpcbind: ProcId,
}

fn record_path() -> PathBuf {
    shared_dir().join("rpcbind.json")
}

/// A program found in PATH or the system's sbin directories (`rpcbind` lives in /usr/sbin,
/// which a user's PATH may lack).
pub fn locate(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// Live processes whose command name is `comm`.
pub fn processes_named(comm: &str) -> Vec<ProcId> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(ProcId::of)
        .filter(|p| p.comm() == comm)
        .collect()
}

/// Make sure an rpcbind runs: start `rpcbind -w -f` when none does (no process of that
/// name, and nothing answering on port 111, as a socket systemd holds for it would). What was
/// done, for the user, when fsbench started it.
pub fn ensure() -> Result<Option<String>> {
    if !processes_named("rpcbind").is_empty() || registrations().is_ok() {
        return Ok(None);
    }
    let exe = locate("rpcbind")
        .context("rpcbind is not installed (NFS-Ganesha needs it): install the rpcbind package")?;
    std::fs::create_dir_all(shared_dir())?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(shared_dir().join("rpcbind.log"))?;
    let mut cmd = Command::new(&exe);
    cmd.args(["-w", "-f"])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid between fork and exec: rpcbind runs on after this command.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(fsbench_base::daemon::process::pre_exec);
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let id = ProcId::of(child.id() as i32).context("rpcbind exited at once")?;
    write_json_atomic(&record_path(), &Record { rpcbind: id })?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while registrations().is_err() {
        if let Some(st) = child.try_wait()? {
            let _ = fsbench_base::owned::path::remove_file(record_path());
            bail!(
                "rpcbind exited ({st}) right after starting; see its log in {}",
                shared_dir().join("rpcbind.log").display()
            );
        }
        if Instant::now() > deadline {
            bail!("rpcbind (pid {}) did not answer within 10 s", id.pid);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Some(format!("started rpcbind (pid {})", id.pid)))
}

/// Stop the rpcbind fsbench started, when nothing needs it any more (see the module
/// comment). What was done or why it stays, for the user.
pub fn release() -> Option<String> {
    let rec: Record = read_json(&record_path()).ok()?;
    let id = rec.rpcbind;
    if !id.alive() || id.comm() != "rpcbind" {
        let _ = fsbench_base::owned::path::remove_file(record_path());
        return None;
    }
    if let Some(g) = processes_named("ganesha.nfsd").first() {
        return Some(format!(
            "kept the rpcbind fsbench started (pid {}): NFS-Ganesha (pid {}) still runs",
            id.pid, g.pid
        ));
    }
    // A registration whose port nothing listens on is stale (a server killed before it could
    // unregister): it needs no rpcbind.
    let in_use = |r: &Registration| {
        r.program != PORTMAPPER && !matches!(socket_holder(&r.proto, r.port), Holder::Nobody)
    };
    if registrations().is_ok_and(|r| r.iter().any(in_use)) {
        return Some(format!(
            "kept the rpcbind fsbench started (pid {}): other programs registered with it since",
            id.pid
        ));
    }
    // SAFETY: the process fsbench started, checked by pid and start time just now.
    unsafe { libc::kill(id.pid, libc::SIGTERM) };
    if !fsbench_base::daemon::process::wait_gone(id.pid, Duration::from_secs(5)) {
        return Some(format!(
            "rpcbind (pid {}) did not stop on SIGTERM; left running",
            id.pid
        ));
    }
    let _ = fsbench_base::owned::path::remove_file(record_path());
    Some(format!("stopped rpcbind (pid {})", id.pid))
}

/// One line of `rpcinfo -p`.
#[derive(Debug, Clone, PartialEq)]
pub struct Registration {
    pub program: u32,
    pub version: u32,
    pub proto: String,
    pub port: u16,
}

/// What rpcbind lists now (`rpcinfo -p 127.0.0.1`); an error when it does not answer.
pub fn registrations() -> Result<Vec<Registration>> {
    let exe = locate("rpcinfo").context("rpcinfo is not installed (install rpcbind)")?;
    let out = Command::new(exe)
        .args(["-p", "127.0.0.1"])
        .stdin(Stdio::null())
        .output()?;
    if !out.status.success() {
        bail!(
            "rpcbind does not answer: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(parse_rpcinfo(&String::from_utf8_lossy(&out.stdout)))
}

fn parse_rpcinfo(text: &str) -> Vec<Registration> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some(Registration {
                program: f.first()?.parse().ok()?,
                version: f.get(1)?.parse().ok()?,
                proto: f.get(2)?.to_string(),
                port: f.get(3)?.parse().ok()?,
            })
        })
        .collect()
}

/// The registrations of NFS programs that NFS-Ganesha would remove and that are not
/// fsbench's, each said for the user. A registration is fsbench's when the process
/// listening on its port is an NFS-Ganesha whose configuration fsbench wrote; one whose port
/// nothing listens on any more is stale, and removing it harms no one.
pub fn foreign_nfs_registrations() -> Result<Vec<String>> {
    let mut out = Vec::new();
    for r in registrations()? {
        let Some((_, pname)) = NFS_PROGRAMS.iter().find(|(p, _)| *p == r.program) else {
            continue;
        };
        let what = format!(
            "program {} ({pname}) version {} on {} port {}",
            r.program, r.version, r.proto, r.port
        );
        match socket_holder(&r.proto, r.port) {
            Holder::Nobody => {}
            Holder::Process(p) if is_fsbench_ganesha(&p) => {}
            Holder::Process(p) => {
                out.push(format!("{what}, served by {} (pid {})", p.comm(), p.pid))
            }
            Holder::Kernel => out.push(format!("{what}, served by the kernel (nfsd)")),
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Who holds the socket bound to a local port.
enum Holder {
    Nobody,
    Kernel,
    Process(ProcId),
}

/// The socket inodes bound to `port` (TCP listening, or UDP) for `proto` ("tcp"/"udp").
fn socket_inodes(proto: &str, port: u16) -> Vec<String> {
    let tables = match proto {
        "udp" => ["/proc/net/udp", "/proc/net/udp6"],
        _ => ["/proc/net/tcp", "/proc/net/tcp6"],
    };
    let want_state = if proto == "udp" { "07" } else { "0A" };
    let mut out = Vec::new();
    for t in tables {
        let text = std::fs::read_to_string(t).unwrap_or_default();
        for l in text.lines().skip(1) {
            let f: Vec<&str> = l.split_whitespace().collect();
            let local_port = f
                .get(1)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) && f.get(3) == Some(&want_state) {
                if let Some(ino) = f.get(9) {
                    out.push(ino.to_string());
                }
            }
        }
    }
    out
}

fn socket_holder(proto: &str, port: u16) -> Holder {
    let inodes = socket_inodes(proto, port);
    if inodes.is_empty() {
        return Holder::Nobody;
    }
    let links: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Holder::Kernel;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|l| links.iter().any(|s| l.as_os_str() == s.as_str()))
        });
        if holds {
            if let Some(p) = ProcId::of(pid) {
                return Holder::Process(p);
            }
        }
    }
    Holder::Kernel
}

/// Whether `p` is an NFS-Ganesha started with a configuration fsbench wrote.
pub fn is_fsbench_ganesha(p: &ProcId) -> bool {
    if p.comm() != "ganesha.nfsd" {
        return false;
    }
    let args = p.args();
    let conf = args
        .iter()
        .position(|a| a == "-f")
        .and_then(|i| args.get(i + 1));
    conf.is_some_and(|c| starts_with_mark(Path::new(c)))
}

/// Whether the file at `p` (a regular file, opened without waiting) starts with [`CONF_MARK`].
fn starts_with_mark(p: &Path) -> bool {
    let Ok(f) = fsbench_base::input::open(p) else {
        return false;
    };
    let mut head = vec![0u8; CONF_MARK.len()];
    let mut r = f.take(CONF_MARK.len() as u64);
    let mut n = 0;
    while n < head.len() {
        match r.read(&mut head[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    head[..n] == *CONF_MARK.as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpcinfo_lines_are_parsed() {
        let text = "   program vers proto   port  service\n    100000    4   tcp    111  portmapper\n    100003    3   tcp   2049  nfs\n";
        let r = parse_rpcinfo(text);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[1],
            Registration {
                program: 100003,
                version: 3,
                proto: "tcp".into(),
                port: 2049
            }
        );
    }

    #[test]
    fn a_port_nobody_holds_is_stale() {
        // Port 1 is never bound by a test machine's services.
        assert!(matches!(socket_holder("tcp", 1), Holder::Nobody));
    }
}
