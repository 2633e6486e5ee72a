//! The few functions of libnfs's synchronous API that fsbench calls, found at run time.
//!
//! Why at run time: a build, and a run that does not ask for NFS, must not need libnfs at
//! all (no link-time dependency, no headers, no libclang). The library is opened once, the
//! first time a run asks for NFS, by the sonames of the releases whose synchronous API has
//! the shapes declared here (libnfs 4.x is soname 13, 5.x is 14; 6.x changed the argument
//! order of the read and write calls, so its soname is not tried). The declarations follow
//! `nfsc/libnfs.h` of libnfs 4.0.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// `struct nfs_context`, `struct nfsfh` and `struct nfsdir`: opaque.
#[repr(C)]
pub struct Context {
    _p: [u8; 0],
}
#[repr(C)]
pub struct Fh {
    _p: [u8; 0],
}
#[repr(C)]
pub struct Dir {
    _p: [u8; 0],
}

/// `struct nfs_url`.
#[repr(C)]
pub struct Url {
    pub server: *mut c_char,
    pub path: *mut c_char,
    pub file: *mut c_char,
}

/// The leading fields of `struct nfsdirent` (only read through a pointer libnfs owns).
#[repr(C)]
pub struct Dirent {
    pub next: *mut Dirent,
    pub name: *mut c_char,
    pub inode: u64,
    /// `NF3REG`, `NF3DIR`, ... (see [`NF3DIR`], [`NF3LNK`]).
    pub kind: u32,
    pub mode: u32,
}

/// `ftype3` values of `Dirent::kind`.
pub const NF3REG: u32 = 1;
pub const NF3DIR: u32 = 2;
pub const NF3LNK: u32 = 5;

/// `struct nfs_stat_64`: seventeen 64-bit fields in 4.0; room is left for more.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Stat64 {
    pub dev: u64,
    pub ino: u64,
    pub mode: u64,
    pub nlink: u64,
    pub uid: u64,
    pub gid: u64,
    pub rdev: u64,
    pub size: u64,
    pub blksize: u64,
    pub blocks: u64,
    pub atime: u64,
    pub mtime: u64,
    pub ctime: u64,
    rest: [u64; 16],
}

impl Default for Stat64 {
    fn default() -> Stat64 {
        // SAFETY: plain integers; all zeroes is a valid value.
        unsafe { std::mem::zeroed() }
    }
}

/// The functions, resolved from the library.
pub struct Lib {
    pub init_context: unsafe extern "C" fn() -> *mut Context,
    pub destroy_context: unsafe extern "C" fn(*mut Context),
    pub get_error: unsafe extern "C" fn(*mut Context) -> *mut c_char,
    pub parse_url_dir: unsafe extern "C" fn(*mut Context, *const c_char) -> *mut Url,
    pub destroy_url: unsafe extern "C" fn(*mut Url),
    pub mount: unsafe extern "C" fn(*mut Context, *const c_char, *const c_char) -> c_int,
    pub umount: unsafe extern "C" fn(*mut Context) -> c_int,
    pub open: unsafe extern "C" fn(*mut Context, *const c_char, c_int, *mut *mut Fh) -> c_int,
    pub create:
        unsafe extern "C" fn(*mut Context, *const c_char, c_int, c_int, *mut *mut Fh) -> c_int,
    pub close: unsafe extern "C" fn(*mut Context, *mut Fh) -> c_int,
    pub pread: unsafe extern "C" fn(*mut Context, *mut Fh, u64, u64, *mut c_void) -> c_int,
    pub pwrite: unsafe extern "C" fn(*mut Context, *mut Fh, u64, u64, *const c_void) -> c_int,
    pub fsync: unsafe extern "C" fn(*mut Context, *mut Fh) -> c_int,
    pub fstat64: unsafe extern "C" fn(*mut Context, *mut Fh, *mut Stat64) -> c_int,
    pub lstat64: unsafe extern "C" fn(*mut Context, *const c_char, *mut Stat64) -> c_int,
    pub unlink: unsafe extern "C" fn(*mut Context, *const c_char) -> c_int,
    pub mkdir2: unsafe extern "C" fn(*mut Context, *const c_char, c_int) -> c_int,
    pub rmdir: unsafe extern "C" fn(*mut Context, *const c_char) -> c_int,
    pub opendir: unsafe extern "C" fn(*mut Context, *const c_char, *mut *mut Dir) -> c_int,
    pub readdir: unsafe extern "C" fn(*mut Context, *mut Dir) -> *mut Dirent,
    pub closedir: unsafe extern "C" fn(*mut Context, *mut Dir),
    pub get_readmax: unsafe extern "C" fn(*mut Context) -> u64,
    pub get_writemax: unsafe extern "C" fn(*mut Context) -> u64,
    pub set_timeout: Option<unsafe extern "C" fn(*mut Context, c_int)>,
}

/// The sonames tried, in order.
const SONAMES: [&CStr; 2] = [c"libnfs.so.13", c"libnfs.so.14"];

/// What to tell a user whose machine lacks the library.
pub const INSTALL: &str =
    "install libnfs 4 or 5 (Debian and Ubuntu: `apt-get install libnfs13`, or libnfs-utils)";

/// The library, opened once; the error says what is missing and what to install.
pub fn lib() -> Result<&'static Lib, String> {
    static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(|e| e.clone())
}

fn load() -> Result<Lib, String> {
    let mut handle = std::ptr::null_mut();
    for name in SONAMES {
        // SAFETY: a NUL-terminated name; the handle is kept for the life of the process.
        handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if !handle.is_null() {
            break;
        }
    }
    if handle.is_null() {
        return Err(format!(
            "NFS needs libnfs, which is not installed here (looked for {}): {INSTALL}",
            SONAMES
                .iter()
                .map(|s| s.to_string_lossy())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // SAFETY: each symbol is declared with the signature of libnfs 4.0's header.
    unsafe { resolve(handle) }
}

/// Look up `name` in `h` as a function of type `T` (a function pointer type).
///
/// # Safety
/// `T` must be the function's true type.
unsafe fn sym<T: Copy>(h: *mut c_void, name: &CStr) -> Result<T, String> {
    let p = libc::dlsym(h, name.as_ptr());
    if p.is_null() {
        return Err(format!(
            "the libnfs found here has no `{}`; {INSTALL}",
            name.to_string_lossy()
        ));
    }
    debug_assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    Ok(std::mem::transmute_copy::<*mut c_void, T>(&p))
}

/// # Safety
/// `h` is a handle of libnfs 4 or 5.
unsafe fn resolve(h: *mut c_void) -> Result<Lib, String> {
    Ok(Lib {
        init_context: sym(h, c"nfs_init_context")?,
        destroy_context: sym(h, c"nfs_destroy_context")?,
        get_error: sym(h, c"nfs_get_error")?,
        parse_url_dir: sym(h, c"nfs_parse_url_dir")?,
        destroy_url: sym(h, c"nfs_destroy_url")?,
        mount: sym(h, c"nfs_mount")?,
        umount: sym(h, c"nfs_umount")?,
        open: sym(h, c"nfs_open")?,
        create: sym(h, c"nfs_create")?,
        close: sym(h, c"nfs_close")?,
        pread: sym(h, c"nfs_pread")?,
        pwrite: sym(h, c"nfs_pwrite")?,
        fsync: sym(h, c"nfs_fsync")?,
        fstat64: sym(h, c"nfs_fstat64")?,
        lstat64: sym(h, c"nfs_lstat64")?,
        unlink: sym(h, c"nfs_unlink")?,
        mkdir2: sym(h, c"nfs_mkdir2")?,
        rmdir: sym(h, c"nfs_rmdir")?,
        opendir: sym(h, c"nfs_opendir")?,
        readdir: sym(h, c"nfs_readdir")?,
        closedir: sym(h, c"nfs_closedir")?,
        get_readmax: sym(h, c"nfs_get_readmax")?,
        get_writemax: sym(h, c"nfs_get_writemax")?,
        set_timeout: sym(h, c"nfs_set_timeout").ok(),
    })
}
