//! The NFS client side: fsbench's file operations sent to an NFS server through libnfs
//! (user space, no kernel mount), for `fsbench run --nfs URL` and fio's `ioengine=nfs`.
//!
//! The protocol is libnfs's: this module binds the handful of its synchronous calls fsbench
//! uses ([`ffi`], loaded at run time so that nothing needs libnfs unless NFS is asked for),
//! wraps them in a [`Client`] that turns their results into `io::Result`s, and keeps the run
//! directory on the export ([`rundir`]). A libnfs context is not thread-safe: each worker
//! thread mounts with a client of its own.

mod ffi;
pub mod relay;
pub mod rpc;
pub mod rundir;

use std::ffi::{c_int, CStr, CString};
use std::io;

pub use ffi::Stat64 as Stat;
pub use ffi::{NF3DIR, NF3LNK, NF3REG};

/// An open file on the server (libnfs's `struct nfsfh`), valid until its client closes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handle(*mut ffi::Fh);

// SAFETY: a handle is an address libnfs gave; it is used only with the client that opened
// it, on that client's thread.
unsafe impl Send for Handle {}

/// Seconds an RPC may take before libnfs gives up on it (so a server that went away fails
/// the operation instead of hanging the run).
const TIMEOUT_MS: c_int = 60_000;

/// Whether `url` has the shape libnfs parses (`nfs://server/export[?arg=value&...]`), said
/// before anything is connected, so a typo fails at once with what to write.
pub fn check_url(url: &str) -> Result<(), String> {
    let Some(rest) = url.strip_prefix("nfs://") else {
        return Err(format!(
            "`{url}` is not an NFS URL: write nfs://SERVER/EXPORT[?nfsport=P&mountport=M&version=3]"
        ));
    };
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    if host.is_empty() || path.split('?').next().unwrap_or("").is_empty() {
        return Err(format!(
            "`{url}` names no server or no export: write nfs://SERVER/EXPORT[?nfsport=P&mountport=M&version=3]"
        ));
    }
    if url.contains('\0') {
        return Err(format!("`{url}` holds a NUL byte"));
    }
    Ok(())
}

/// Where a run's operations go over NFS: the URL every worker mounts (a client of its
/// own), and the run directory's path on the export.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub run_path: String,
    /// Each worker's client goes through a relay of its own on this network, which counts
    /// its calls per flowop ([`relay`]); `None`: straight to the server.
    pub relay: Option<std::sync::Arc<relay::Network>>,
}

/// One libnfs context mounted on an export: every call goes through it, on one thread.
pub struct Client {
    lib: &'static ffi::Lib,
    ctx: *mut ffi::Context,
    /// What was mounted, for messages: `nfs://server/export`.
    pub origin: String,
    readmax: usize,
    writemax: usize,
}

// SAFETY: a context is used by one thread at a time (the one holding the client); libnfs
// keeps no thread-local state for it.
unsafe impl Send for Client {}

impl Client {
    /// Mount the export `url` names (libnfs's URL syntax, its arguments applied to the
    /// context).
    pub fn connect(url: &str) -> Result<Client, String> {
        check_url(url)?;
        let lib = ffi::lib()?;
        let curl = CString::new(url).map_err(|_| format!("`{url}` holds a NUL byte"))?;
        // SAFETY: no arguments; a null result is checked.
        let ctx = unsafe { (lib.init_context)() };
        if ctx.is_null() {
            return Err("libnfs could not create a context (out of memory?)".into());
        }
        let mut c = Client {
            lib,
            ctx,
            origin: url.split('?').next().unwrap_or(url).to_string(),
            readmax: 0,
            writemax: 0,
        };
        if let Some(t) = lib.set_timeout {
            // SAFETY: a live context.
            unsafe { t(ctx, TIMEOUT_MS) };
        }
        c.mount(url, &curl)?;
        // SAFETY: a mounted context.
        let (r, w) = unsafe { ((lib.get_readmax)(ctx), (lib.get_writemax)(ctx)) };
        c.readmax = (r as usize).clamp(4096, 64 << 20);
        c.writemax = (w as usize).clamp(4096, 64 << 20);
        Ok(c)
    }

    fn mount(&mut self, url: &str, curl: &CStr) -> Result<(), String> {
        // SAFETY: a live context and a NUL-terminated URL; the parsed URL is freed below.
        let u = unsafe { (self.lib.parse_url_dir)(self.ctx, curl.as_ptr()) };
        if u.is_null() {
            return Err(format!(
                "cannot parse the NFS URL `{url}`: {}",
                self.error()
            ));
        }
        // SAFETY: libnfs filled both strings (NUL-terminated) in the URL it returned.
        let r = unsafe { (self.lib.mount)(self.ctx, (*u).server, (*u).path) };
        // SAFETY: returned by parse_url_dir, freed once.
        unsafe { (self.lib.destroy_url)(u) };
        if r != 0 {
            return Err(format!(
                "cannot mount {url}: {} (check that the server runs and exports that path, and the URL's nfsport and mountport)",
                self.error()
            ));
        }
        Ok(())
    }

    /// libnfs's text for the last error on this context.
    pub fn error(&self) -> String {
        // SAFETY: a live context; the text (if any) is owned by it.
        let p = unsafe { (self.lib.get_error)(self.ctx) };
        if p.is_null() {
            return "unknown error".into();
        }
        // SAFETY: a NUL-terminated string libnfs keeps while the context lives.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// A libnfs status as an `io::Result`: negative values are errno values.
    #[inline]
    fn status(&self, r: c_int) -> io::Result<usize> {
        if r >= 0 {
            return Ok(r as usize);
        }
        let errno = r.checked_neg().unwrap_or(libc::EIO);
        if (1..4096).contains(&errno) {
            Err(io::Error::from_raw_os_error(errno))
        } else {
            Err(io::Error::other(self.error()))
        }
    }

    /// Open an existing file (`flags`: `O_RDONLY`, `O_WRONLY` or `O_RDWR`, with `O_SYNC`).
    pub fn open(&mut self, path: &CStr, flags: c_int) -> io::Result<Handle> {
        let mut fh = std::ptr::null_mut();
        // SAFETY: a live context, a NUL-terminated path and a place for the handle.
        let r = unsafe { (self.lib.open)(self.ctx, path.as_ptr(), flags, &mut fh) };
        self.status(r).map(|_| Handle(fh))
    }

    /// Create (or open, as `O_CREAT` without `O_EXCL` does) a file with `mode`.
    pub fn create(&mut self, path: &CStr, flags: c_int, mode: u32) -> io::Result<Handle> {
        let mut fh = std::ptr::null_mut();
        // SAFETY: as for open.
        let r =
            unsafe { (self.lib.create)(self.ctx, path.as_ptr(), flags, mode as c_int, &mut fh) };
        self.status(r).map(|_| Handle(fh))
    }

    pub fn close(&mut self, h: Handle) -> io::Result<()> {
        // SAFETY: a handle this client opened, closed once (the caller forgets it).
        let r = unsafe { (self.lib.close)(self.ctx, h.0) };
        self.status(r).map(|_| ())
    }

    /// Read up to `buf.len()` bytes at `off`, in requests no larger than the server takes;
    /// short only at the end of the file.
    pub fn pread(&mut self, h: Handle, buf: &mut [u8], off: u64) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            let n = (buf.len() - done).min(self.readmax);
            let p = buf[done..].as_mut_ptr().cast();
            // SAFETY: `p` is valid for writes of `n` bytes; a live handle of this client.
            let r = unsafe { (self.lib.pread)(self.ctx, h.0, off + done as u64, n as u64, p) };
            let got = self.status(r)?;
            done += got;
            if got < n {
                break;
            }
        }
        Ok(done)
    }

    /// Write `buf` at `off`, in requests no larger than the server takes.
    pub fn pwrite(&mut self, h: Handle, buf: &[u8], off: u64) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            let n = (buf.len() - done).min(self.writemax);
            let p = buf[done..].as_ptr().cast();
            // SAFETY: `p` is valid for reads of `n` bytes; a live handle of this client.
            let r = unsafe { (self.lib.pwrite)(self.ctx, h.0, off + done as u64, n as u64, p) };
            let put = self.status(r)?;
            if put == 0 {
                return Err(io::Error::other("the server wrote 0 bytes"));
            }
            done += put;
        }
        Ok(done)
    }

    /// COMMIT what was written through `h` (stable on the server's storage).
    pub fn fsync(&mut self, h: Handle) -> io::Result<()> {
        // SAFETY: a live handle of this client.
        let r = unsafe { (self.lib.fsync)(self.ctx, h.0) };
        self.status(r).map(|_| ())
    }

    pub fn fstat(&mut self, h: Handle) -> io::Result<Stat> {
        let mut st = Stat::default();
        // SAFETY: a live handle and a place of the struct's size (and more).
        let r = unsafe { (self.lib.fstat64)(self.ctx, h.0, &mut st) };
        self.status(r).map(|_| st)
    }

    /// The attributes of `path` itself (a link is not followed).
    pub fn lstat(&mut self, path: &CStr) -> io::Result<Stat> {
        let mut st = Stat::default();
        // SAFETY: a NUL-terminated path and a place of the struct's size (and more).
        let r = unsafe { (self.lib.lstat64)(self.ctx, path.as_ptr(), &mut st) };
        self.status(r).map(|_| st)
    }

    pub fn unlink(&mut self, path: &CStr) -> io::Result<()> {
        // SAFETY: a NUL-terminated path.
        let r = unsafe { (self.lib.unlink)(self.ctx, path.as_ptr()) };
        self.status(r).map(|_| ())
    }

    pub fn mkdir(&mut self, path: &CStr, mode: u32) -> io::Result<()> {
        // SAFETY: a NUL-terminated path.
        let r = unsafe { (self.lib.mkdir2)(self.ctx, path.as_ptr(), mode as c_int) };
        self.status(r).map(|_| ())
    }

    pub fn rmdir(&mut self, path: &CStr) -> io::Result<()> {
        // SAFETY: a NUL-terminated path.
        let r = unsafe { (self.lib.rmdir)(self.ctx, path.as_ptr()) };
        self.status(r).map(|_| ())
    }

    /// Read the directory `path` (READDIRPLUS), calling `each` with every entry's name and
    /// type (`NF3REG`, `NF3DIR`, `NF3LNK`, ...), "." and ".." included.
    pub fn list(&mut self, path: &CStr, mut each: impl FnMut(&CStr, u32)) -> io::Result<()> {
        let mut d = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path and a place for the directory handle.
        let r = unsafe { (self.lib.opendir)(self.ctx, path.as_ptr(), &mut d) };
        self.status(r)?;
        loop {
            // SAFETY: a directory this client opened; entries live until closedir.
            let e = unsafe { (self.lib.readdir)(self.ctx, d) };
            if e.is_null() {
                break;
            }
            // SAFETY: libnfs's entry, its name NUL-terminated.
            let (name, kind) = unsafe { (CStr::from_ptr((*e).name), (*e).kind) };
            each(name, kind);
        }
        // SAFETY: opened above, closed once.
        unsafe { (self.lib.closedir)(self.ctx, d) };
        Ok(())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // SAFETY: the context is live; unmounting tells a v3 server the mount ended, and the
        // context (with every handle left open on it) is freed once.
        unsafe {
            (self.lib.umount)(self.ctx);
            (self.lib.destroy_context)(self.ctx);
        }
    }
}

/// A path on the export as a C string (paths fsbench builds hold no NUL).
pub fn cpath(p: &str) -> io::Result<CString> {
    CString::new(p).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

#[cfg(test)]
mod tests {
    use super::check_url;

    #[test]
    fn urls_are_checked_before_connecting() {
        assert!(check_url("nfs://127.0.0.1/export?nfsport=2049&version=3").is_ok());
        assert!(check_url("nfs://server/a/b").is_ok());
        for bad in [
            "/mnt/x",
            "nfs://",
            "nfs:///export",
            "nfs://host",
            "nfs://host/?v=3",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
