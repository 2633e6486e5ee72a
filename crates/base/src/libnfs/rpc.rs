//! ONC RPC as the relay ([`super::relay`]) sees it: the record marking that frames each
//! message on TCP (RFC 5531 §11), the few header fields that name a call (xid, program,
//! version, procedure), the names of NFSv3's and MOUNT's procedures, and the counts per
//! flowop and procedure that a worker and its relay share.

use serde::{Deserialize, Serialize};
use std::io::{self, Read};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The largest message the relay forwards: libnfs's requests and replies are at most its
/// read and write sizes (1 MiB with Ganesha) plus headers.
pub const MAX_MESSAGE: usize = 64 << 20;

const NFS: u32 = 100_003;
const MOUNT: u32 = 100_005;
const PORTMAP: u32 = 100_000;

/// Every procedure counted, by id: NFSv3's (ids 0-21 are its procedure numbers), MOUNT
/// v3's, NFSv4's two, the portmapper's, and anything else.
pub const PROCS: [&str; 32] = [
    "NULL",
    "GETATTR",
    "SETATTR",
    "LOOKUP",
    "ACCESS",
    "READLINK",
    "READ",
    "WRITE",
    "CREATE",
    "MKDIR",
    "SYMLINK",
    "MKNOD",
    "REMOVE",
    "RMDIR",
    "RENAME",
    "LINK",
    "READDIR",
    "READDIRPLUS",
    "FSSTAT",
    "FSINFO",
    "PATHCONF",
    "COMMIT",
    "MOUNT.NULL",
    "MOUNT.MNT",
    "MOUNT.DUMP",
    "MOUNT.UMNT",
    "MOUNT.UMNTALL",
    "MOUNT.EXPORT",
    "NFS4.NULL",
    "NFS4.COMPOUND",
    "PORTMAP",
    "OTHER",
];

/// Number of procedure ids.
pub const NPROCS: usize = PROCS.len();

/// The id (index into [`PROCS`]) of a call to `proc` of `prog` version `vers`.
pub fn proc_id(prog: u32, vers: u32, proc: u32) -> usize {
    let p = proc as usize;
    match (prog, vers) {
        (NFS, 3) if p < 22 => p,
        (MOUNT, _) if p < 6 => 22 + p,
        (NFS, 4) if p < 2 => 28 + p,
        (PORTMAP, _) => 30,
        _ => NPROCS - 1,
    }
}

/// The id of a procedure's name, for results read back (a rank's JSON).
pub fn id_of(name: &str) -> Option<usize> {
    PROCS.iter().position(|p| *p == name)
}

/// What the start of a message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// A call: its xid and procedure id.
    Call {
        xid: u32,
        proc: usize,
    },
    Reply {
        xid: u32,
    },
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The header of a message `body` (its first fragment's bytes, without the record mark).
pub fn header(body: &[u8]) -> Option<Header> {
    let xid = be32(body, 0)?;
    match be32(body, 4)? {
        0 => {
            // rpcvers, prog, vers, proc follow the message type.
            let (prog, vers, proc) = (be32(body, 12)?, be32(body, 16)?, be32(body, 20)?);
            Some(Header::Call {
                xid,
                proc: proc_id(prog, vers, proc),
            })
        }
        1 => Some(Header::Reply { xid }),
        _ => None,
    }
}

/// The header of a whole record as [`read_record`] returns it (record marks included),
/// read across fragments.
pub fn head(wire: &[u8]) -> Option<Header> {
    let mut body = [0u8; 24];
    let (mut have, mut at) = (0, 0);
    while have < body.len() && at + 4 <= wire.len() {
        let len = (be32(wire, at)? & 0x7fff_ffff) as usize;
        let frag = wire.get(at + 4..(at + 4 + len).min(wire.len()))?;
        let n = frag.len().min(body.len() - have);
        body[have..have + n].copy_from_slice(&frag[..n]);
        have += n;
        at += 4 + len;
    }
    header(&body[..have])
}

/// Read one whole record (every fragment, record marks included, as it goes on the
/// wire); `None` at a clean end of stream before a record starts.
pub fn read_record(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut msg = Vec::new();
    loop {
        let mut mark = [0u8; 4];
        if let Err(e) = r.read_exact(&mut mark) {
            if msg.is_empty() && e.kind() == io::ErrorKind::UnexpectedEof {
                return Ok(None);
            }
            return Err(e);
        }
        let m = u32::from_be_bytes(mark);
        let len = (m & 0x7fff_ffff) as usize;
        if msg.len() + 4 + len > MAX_MESSAGE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("an RPC record of more than {MAX_MESSAGE} bytes"),
            ));
        }
        let at = msg.len();
        msg.resize(at + 4 + len, 0);
        msg[at..at + 4].copy_from_slice(&mark);
        r.read_exact(&mut msg[at + 4..])?;
        if m & 0x8000_0000 != 0 {
            return Ok(Some(msg));
        }
    }
}

/// Calls of one procedure: how many, their time from the call reaching the relay to the
/// reply leaving it for the client, and the bytes of both (record marks included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcCount {
    pub calls: u64,
    pub ns: u64,
    pub bytes: u64,
}

impl ProcCount {
    pub fn add(&mut self, o: &ProcCount) {
        self.calls += o.calls;
        self.ns += o.ns;
        self.bytes += o.bytes;
    }
}

/// A table of counts per procedure id.
pub type Table = [ProcCount; NPROCS];

/// The counts a worker and its relay share. The worker names the flowop it runs
/// ([`Counts::begin`]) before its calls; its libnfs calls are synchronous, so every RPC the
/// relay sees until the next flowop begins is that flowop's. The relay adds each answered
/// call to that flowop's table. One relaxed store per flowop is all the worker pays.
#[derive(Debug, Default)]
pub struct Counts {
    /// The flowop's statistic + 1; 0 outside any flowop (mount, layout, closing).
    current: AtomicUsize,
    /// Per statistic, grown as statistics appear.
    table: Mutex<Vec<Table>>,
}

impl Counts {
    /// The worker starts flowop statistic `stat`.
    #[inline]
    pub fn begin(&self, stat: usize) {
        self.current.store(stat + 1, Ordering::Release);
    }

    /// Outside any flowop: what follows is not counted.
    pub fn end(&self) {
        self.current.store(0, Ordering::Release);
    }

    /// The statistic a call arriving now belongs to (+ 1; 0 for none).
    pub fn current(&self) -> usize {
        self.current.load(Ordering::Acquire)
    }

    /// Add an answered call to statistic `stat1 - 1` (none when `stat1` is 0).
    pub fn add(&self, stat1: usize, proc: usize, c: ProcCount) {
        let Some(stat) = stat1.checked_sub(1) else {
            return;
        };
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if t.len() <= stat {
            t.resize(stat + 1, [ProcCount::default(); NPROCS]);
        }
        t[stat][proc.min(NPROCS - 1)].add(&c);
    }

    /// Everything counted so far, per statistic, leaving the table empty.
    pub fn take(&self) -> Vec<Table> {
        std::mem::take(&mut *self.table.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(frags: &[&[u8]]) -> Vec<u8> {
        let mut v = Vec::new();
        for (i, f) in frags.iter().enumerate() {
            let last = if i + 1 == frags.len() { 0x8000_0000 } else { 0 };
            v.extend_from_slice(&(f.len() as u32 | last).to_be_bytes());
            v.extend_from_slice(f);
        }
        v
    }

    #[test]
    fn records_are_read_whole_and_calls_named() {
        // A call: xid 7, CALL, rpcvers 2, NFS v3, procedure 8 (CREATE), split in two.
        let mut call = Vec::new();
        for w in [7u32, 0, 2, NFS, 3, 8] {
            call.extend_from_slice(&w.to_be_bytes());
        }
        let wire = [
            record(&[&call[..10], &call[10..]]),
            record(&[&[0, 0, 0, 7, 0, 0, 0, 1]]),
        ]
        .concat();
        let mut r = &wire[..];
        let m = read_record(&mut r).unwrap().unwrap();
        assert_eq!(m.len(), call.len() + 8);
        assert_eq!(head(&m), Some(Header::Call { xid: 7, proc: 8 }));
        assert_eq!(PROCS[8], "CREATE");
        let m = read_record(&mut r).unwrap().unwrap();
        assert_eq!(head(&m), Some(Header::Reply { xid: 7 }));
        assert!(read_record(&mut r).unwrap().is_none());
        // A stream cut inside a record is an error, not an end.
        let mut cut = &wire[..12];
        assert!(read_record(&mut cut).is_err());
    }

    #[test]
    fn procedures_map_to_their_names() {
        assert_eq!(PROCS[proc_id(NFS, 3, 17)], "READDIRPLUS");
        assert_eq!(PROCS[proc_id(NFS, 3, 21)], "COMMIT");
        assert_eq!(PROCS[proc_id(MOUNT, 3, 1)], "MOUNT.MNT");
        assert_eq!(PROCS[proc_id(NFS, 4, 1)], "NFS4.COMPOUND");
        assert_eq!(PROCS[proc_id(NFS, 3, 99)], "OTHER");
        assert_eq!(id_of("WRITE"), Some(7));
    }

    #[test]
    fn calls_go_to_the_flowop_begun() {
        let c = Counts::default();
        let one = ProcCount {
            calls: 1,
            ns: 10,
            bytes: 100,
        };
        c.add(c.current(), 1, one);
        c.begin(2);
        c.add(c.current(), 7, one);
        c.add(c.current(), 7, one);
        c.end();
        c.add(c.current(), 7, one);
        let t = c.take();
        assert_eq!(t.len(), 3);
        assert_eq!(t[2][7].calls, 2);
        assert_eq!(t[2][7].bytes, 200);
        assert_eq!(t.iter().flatten().map(|p| p.calls).sum::<u64>(), 2);
        assert!(c.take().is_empty());
    }
}
