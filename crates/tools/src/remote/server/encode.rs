//! The replies' encoding: attributes, entries, open replies, names, and what a reply is
//! (its due time, error and payload).

use fsbench_base::fuse::abi::{Attr, EntryOut, OpenOut};
use fsbench_base::fuse::FOPEN_DIRECT_IO;
use std::os::unix::fs::MetadataExt;
use std::{fs, io};
use zerocopy::IntoBytes;

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

pub(super) fn attr(ino: u64, m: &fs::Metadata, size: u64) -> Attr {
    Attr {
        ino,
        size,
        blocks: size.div_ceil(512).max(m.blocks()),
        atime: m.atime() as u64,
        mtime: m.mtime() as u64,
        ctime: m.ctime() as u64,
        atimensec: m.atime_nsec() as u32,
        mtimensec: m.mtime_nsec() as u32,
        ctimensec: m.ctime_nsec() as u32,
        mode: m.mode(),
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        rdev: m.rdev() as u32,
        blksize: m.blksize() as u32,
        flags: 0,
    }
}

/// An entry reply: the kernel caches nothing (entry and attribute timeouts 0).
pub(super) fn entry_bytes(ino: u64, attr: Attr) -> Vec<u8> {
    let e = EntryOut {
        nodeid: ino,
        attr,
        ..Default::default()
    };
    e.as_bytes().to_vec()
}

pub(super) fn open_bytes(fh: u64) -> Vec<u8> {
    let o = OpenOut {
        fh,
        // Every read and write reaches the server: the client cache is modelled here.
        open_flags: FOPEN_DIRECT_IO,
        padding: 0,
    };
    o.as_bytes().to_vec()
}

pub(super) fn cname(b: &[u8]) -> &[u8] {
    b.split(|&c| c == 0).next().unwrap_or(&[])
}

pub(super) fn valid_name(n: &[u8]) -> bool {
    !n.is_empty() && n != b"." && n != b".." && !n.contains(&b'/')
}
