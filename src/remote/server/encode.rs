//! The replies' encoding: attributes, entries, open replies, names, and what a reply is
//! (its due time, error and payload).

use crate::fuse::FOPEN_DIRECT_IO;
use std::os::unix::fs::MetadataExt;
use std::{fs, io};

/// What a request's reply is: its modelled due time (None: at once), error, payload.
pub(super) struct Out {
    pub(super) due: Option<f64>,
    pub(super) error: i32,
    pub(super) data: Vec<u8>,
}

impl Out {
    pub(super) fn now(data: Vec<u8>) -> Out {
        Out {
            due: None,
            error: 0,
            data,
        }
    }
    pub(super) fn err(errno: i32) -> Out {
        Out {
            due: None,
            error: errno,
            data: Vec::new(),
        }
    }
    pub(super) fn at(due: Option<f64>, r: Result<Vec<u8>, i32>) -> Out {
        match r {
            Ok(data) => Out {
                due,
                error: 0,
                data,
            },
            Err(error) => Out {
                due,
                error,
                data: Vec::new(),
            },
        }
    }
}

pub(super) fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

pub(super) fn attr_bytes(ino: u64, m: &fs::Metadata, size: u64) -> Vec<u8> {
    let mut a = Vec::with_capacity(88);
    a.extend_from_slice(&ino.to_le_bytes());
    a.extend_from_slice(&size.to_le_bytes());
    a.extend_from_slice(&size.div_ceil(512).max(m.blocks()).to_le_bytes());
    for t in [m.atime(), m.mtime(), m.ctime()] {
        a.extend_from_slice(&(t as u64).to_le_bytes());
    }
    for n in [m.atime_nsec(), m.mtime_nsec(), m.ctime_nsec()] {
        a.extend_from_slice(&(n as u32).to_le_bytes());
    }
    for v in [
        m.mode(),
        m.nlink() as u32,
        m.uid(),
        m.gid(),
        m.rdev() as u32,
        m.blksize() as u32,
        0,
    ] {
        a.extend_from_slice(&v.to_le_bytes());
    }
    debug_assert_eq!(a.len(), 88);
    a
}

pub(super) fn entry_bytes(ino: u64, attr: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(&ino.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes()); // generation
    out.extend_from_slice(&0u64.to_le_bytes()); // entry_valid: the kernel caches nothing
    out.extend_from_slice(&0u64.to_le_bytes()); // attr_valid
    out.extend_from_slice(&[0u8; 8]);
    out.extend_from_slice(attr);
    out
}

pub(super) fn open_bytes(fh: u64) -> Vec<u8> {
    let mut out = vec![0u8; 16];
    out[0..8].copy_from_slice(&fh.to_le_bytes());
    // Every read and write reaches the server: the client cache is modelled here.
    out[8..12].copy_from_slice(&FOPEN_DIRECT_IO.to_le_bytes());
    out
}

pub(super) fn cname(b: &[u8]) -> &[u8] {
    b.split(|&c| c == 0).next().unwrap_or(&[])
}

pub(super) fn valid_name(n: &[u8]) -> bool {
    !n.is_empty() && n != b"." && n != b".." && !n.contains(&b'/')
}
