//! The run directory on an NFS export: created and marked by fsbench at the top of the
//! export, and the only place on the server where fsbench deletes anything.
//!
//! The rules are those of local run directories (docs/safety.md), kept through the
//! protocol: the directory is made by this run (a fresh name, `mkdir` fails if it exists),
//! carries the marker, is writable by its owner alone, and is removed only after the marker
//! is found again (a regular file with one link, owned by the user the server sees us as,
//! starting with the marker's header). The walk that empties it goes by the types the
//! server reports: a symbolic link is removed, never followed; it never leaves the run
//! directory, whose every path it builds from the names it read. What NFS cannot give is a
//! descriptor-relative walk: libnfs resolves each path from the export's root, so the
//! guarantee rests on the run directory being writable by its owner alone.

use super::{cpath, Client, Stat, NF3DIR};
use crate::owned::trust::{MARKER, MARKER_HEADER};
use std::io;

/// How deep the removal walk goes before it stops (fsbench's trees are far shallower).
const MAX_DEPTH: usize = 256;

/// A run directory fsbench made on the export, with the client that made it.
pub struct RemoteRunDir {
    client: Client,
    /// Its name at the top of the export.
    pub name: String,
}

impl RemoteRunDir {
    /// Make `/<base>-<pid>-<stamp><n>` at the top of the export and mark it.
    pub fn create(mut client: Client, base: &str) -> Result<RemoteRunDir, String> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros())
            .unwrap_or(0);
        for n in 0..1000u32 {
            let name = format!("{base}-{}-{stamp:x}{n}", std::process::id());
            let p = cpath(&format!("/{name}")).map_err(|e| e.to_string())?;
            match client.mkdir(&p, 0o755) {
                Ok(()) => {
                    let mut rd = RemoteRunDir { client, name };
                    if let Err(e) = rd.mark() {
                        // Just made and holding at most a partial marker: nothing else.
                        let m = rd.marker();
                        let _ = rd.client.unlink(&m);
                        let _ = rd.client.rmdir(&p);
                        return Err(format!(
                            "cannot mark the run directory {}: {e}",
                            rd.display()
                        ));
                    }
                    return Ok(rd);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(format!(
                        "cannot create the run directory {}/{name}: {e}",
                        client.origin
                    ))
                }
            }
        }
        Err(format!("no free run directory name on {}", client.origin))
    }

    /// Its path on the export (`/name`).
    pub fn path(&self) -> String {
        format!("/{}", self.name)
    }

    /// Its place for messages: `nfs://server/export/name`.
    pub fn display(&self) -> String {
        format!("{}/{}", self.client.origin.trim_end_matches('/'), self.name)
    }

    /// The client that made it (the layout writes through it).
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    fn marker(&self) -> std::ffi::CString {
        cpath(&format!("/{}/{MARKER}", self.name)).expect("no NUL in fsbench's names")
    }

    fn mark(&mut self) -> io::Result<()> {
        let text = format!(
            "{MARKER_HEADER}\npid {}\nversion {}\nThis directory and everything in it was created by fsbench and may be deleted by it.\n",
            std::process::id(),
            env!("CARGO_PKG_VERSION")
        );
        let m = self.marker();
        let h = self
            .client
            .create(&m, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o644)?;
        let w = self.client.pwrite(h, text.as_bytes(), 0);
        let c = self.client.close(h);
        w.and(c)
    }

    /// Why the run directory is not (or no longer) fsbench's, if it is not.
    fn untrusted(&mut self) -> Option<String> {
        // SAFETY: geteuid has no preconditions.
        let me = u64::from(unsafe { libc::geteuid() });
        let dir = cpath(&self.path()).ok()?;
        let d = match self.client.lstat(&dir) {
            Ok(d) => d,
            Err(e) => return Some(format!("cannot look at it: {e}")),
        };
        if d.mode as u32 & libc::S_IFMT != libc::S_IFDIR {
            return Some("it is not a directory".into());
        }
        if d.mode & 0o022 != 0 || d.uid != me {
            return Some(format!(
                "it is owned by uid {} with mode {:o} (fsbench's are its user's own, closed to others; a server that squashes root maps fsbench's files to another user)",
                d.uid,
                d.mode & 0o7777
            ));
        }
        let m = self.marker();
        let st: Stat = match self.client.lstat(&m) {
            Ok(st) => st,
            Err(e) => return Some(format!("its marker {MARKER} is missing ({e})")),
        };
        let regular = st.mode as u32 & libc::S_IFMT == libc::S_IFREG;
        if !regular || st.nlink != 1 || st.uid != me {
            return Some(format!(
                "its marker {MARKER} is not a regular file of this user's own"
            ));
        }
        let mut head = [0u8; MARKER_HEADER.len()];
        let ok = self
            .client
            .open(&m, libc::O_RDONLY | libc::O_NOFOLLOW)
            .and_then(|h| {
                let r = self.client.pread(h, &mut head, 0);
                let _ = self.client.close(h);
                r
            })
            .is_ok_and(|n| n == head.len() && head == *MARKER_HEADER.as_bytes());
        (!ok).then(|| format!("its marker {MARKER} is not fsbench's"))
    }

    /// Delete the run directory and everything in it, after checking it is still fsbench's
    /// marked directory; the marker goes last.
    pub fn remove(mut self) -> Result<(), String> {
        if let Some(why) = self.untrusted() {
            return Err(format!(
                "refusing to remove {}: {why}; remove it yourself if it is yours",
                self.display()
            ));
        }
        let top = self.path();
        let err = |e: io::Error, at: &str| format!("cannot remove {at}: {e}");
        let keep = |n: &[u8]| n == MARKER.as_bytes();
        empty(&mut self.client, &top, 0, &keep).map_err(|(e, at)| err(e, &at))?;
        let m = self.marker();
        self.client
            .unlink(&m)
            .map_err(|e| err(e, &self.display()))?;
        let dir = cpath(&top).map_err(|e| err(e, &top))?;
        self.client.rmdir(&dir).map_err(|e| err(e, &self.display()))
    }
}

/// Remove everything in directory `dir` (on the export) except, at the top, what `keep`
/// names; directories are walked into, everything else (links included) unlinked. The
/// error names the path that failed.
fn empty(
    c: &mut Client,
    dir: &str,
    depth: usize,
    keep: &dyn Fn(&[u8]) -> bool,
) -> Result<(), (io::Error, String)> {
    if depth > MAX_DEPTH {
        return Err((
            io::Error::other("deeper than fsbench makes its trees"),
            dir.into(),
        ));
    }
    let cdir = cpath(dir).map_err(|e| (e, dir.to_string()))?;
    let mut found: Vec<(String, u32)> = Vec::new();
    c.list(&cdir, |n, kind| {
        let b = n.to_bytes();
        if b != b"." && b != b".." && !(depth == 0 && keep(b)) {
            found.push((n.to_string_lossy().into_owned(), kind));
        }
    })
    .map_err(|e| (e, dir.to_string()))?;
    for (name, kind) in found {
        if name.contains('/') {
            continue;
        }
        let p = format!("{dir}/{name}");
        let cp = cpath(&p).map_err(|e| (e, p.clone()))?;
        if kind == NF3DIR {
            empty(c, &p, depth + 1, keep)?;
            c.rmdir(&cp).map_err(|e| (e, p.clone()))?;
        } else {
            c.unlink(&cp).map_err(|e| (e, p.clone()))?;
        }
    }
    Ok(())
}
