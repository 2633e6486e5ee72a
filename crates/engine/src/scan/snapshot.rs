//! The snapshot file written by `fsbench scan -o` and read back by aging.
//!
//! # Format (version 2; version 1 is still read)
//!
//! ```text
//! fsbench-snapshot 2\n                  magic line (so `head -1` identifies the file)
//! {"root": ..., "created_unix": ...}\n  one JSON line: SnapshotHeader
//! record*                               binary, see below
//! 0x00 varint(entry_count)              end marker: a file without it was cut short
//! ```
//!
//! A record (all integers are LEB128 varints, signed ones zigzag-encoded):
//!
//! ```text
//! u8 kind (1 file, 2 dir, 3 symlink, 4 fifo, 5 socket, 6 char dev, 7 block dev, 8 other)
//! shared   bytes of the previous record's path this path starts with
//! len      length of the rest of the path, then that many bytes
//! size     st_size
//! blocks   st_blocks (512-byte units)
//! mode     permission bits (st_mode & 0o7777)
//! mtime    zigzag seconds, nanoseconds
//! atime    zigzag (seconds - mtime seconds), nanoseconds
//! ctime    zigzag (seconds - mtime seconds), nanoseconds
//! nlink uid gid
//! hashlen  (version 2 only) length of the content hash, then that many bytes;
//!          0 when the snapshot has no hashes or the file could not be read
//! ```
//!
//! Version 1 is version 2 without `hashlen`; its header has no `hash` field.
//!
//! Paths are relative to the root, `/`-separated raw bytes (not necessarily
//! UTF-8). Records come grouped by directory in no particular directory order
//! (the walk is parallel); path front coding makes an entry cost about 30–40
//! bytes (mostly timestamps) plus the unshared tail of its name. The stream is written and read in
//! one pass, so millions of entries never sit in memory.

use std::ffi::OsStr;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub const MAGIC: &str = "fsbench-snapshot 2";
/// The magic line of version 1 snapshots (no content hashes), still read.
pub const MAGIC_V1: &str = "fsbench-snapshot 1";

/// Errors reading a snapshot.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("I/O error reading snapshot: {0}")]
    Io(#[from] io::Error),
    #[error("not an fsbench snapshot (first line is not \"{MAGIC}\")")]
    BadMagic,
    #[error("bad snapshot header: {0}")]
    BadHeader(#[from] serde_json::Error),
    #[error("corrupt snapshot record {record}: {what}")]
    Corrupt { record: u64, what: &'static str },
    #[error("snapshot is truncated after {0} records (no end marker)")]
    Truncated(u64),
}

/// The JSON header line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SnapshotHeader {
    /// The scanned directory as given on the command line.
    pub root: String,
    /// When the scan started (seconds since the epoch).
    pub created_unix: i64,
    /// Whether mount points were crossed.
    pub cross_mounts: bool,
    /// fsbench version that wrote the file.
    pub tool_version: String,
    /// Content hash algorithm of regular files (`blake3`, `sha1`), if hashed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

/// Entry type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    File = 1,
    Dir = 2,
    Symlink = 3,
    Fifo = 4,
    Socket = 5,
    CharDev = 6,
    BlockDev = 7,
    Other = 8,
}

impl Kind {
    pub fn from_mode(mode: libc::mode_t) -> Kind {
        match mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File,
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Symlink,
            libc::S_IFIFO => Kind::Fifo,
            libc::S_IFSOCK => Kind::Socket,
            libc::S_IFCHR => Kind::CharDev,
            libc::S_IFBLK => Kind::BlockDev,
            _ => Kind::Other,
        }
    }
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::File,
            2 => Kind::Dir,
            3 => Kind::Symlink,
            4 => Kind::Fifo,
            5 => Kind::Socket,
            6 => Kind::CharDev,
            7 => Kind::BlockDev,
            8 => Kind::Other,
            _ => return None,
        })
    }
}

/// A timestamp as stored by the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct Timestamp {
    pub sec: i64,
    pub nsec: u32,
}

/// One scanned entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Path relative to the scan root, raw bytes.
    pub path: Vec<u8>,
    pub kind: Kind,
    pub size: u64,
    /// Allocated 512-byte blocks (`st_blocks`).
    pub blocks: u64,
    /// Permission bits.
    pub mode: u32,
    pub mtime: Timestamp,
    pub atime: Timestamp,
    pub ctime: Timestamp,
    pub nlink: u64,
    pub uid: u32,
    pub gid: u32,
    /// Content hash of a regular file (snapshots written with `scan --hash`).
    pub hash: Option<Vec<u8>>,
}

impl Entry {
    pub fn from_stat(path: &[u8], st: &libc::stat) -> Entry {
        Entry {
            path: path.to_vec(),
            kind: Kind::from_mode(st.st_mode),
            size: st.st_size as u64,
            blocks: st.st_blocks as u64,
            mode: st.st_mode & 0o7777,
            mtime: Timestamp {
                sec: st.st_mtime,
                nsec: st.st_mtime_nsec as u32,
            },
            atime: Timestamp {
                sec: st.st_atime,
                nsec: st.st_atime_nsec as u32,
            },
            ctime: Timestamp {
                sec: st.st_ctime,
                nsec: st.st_ctime_nsec as u32,
            },
            nlink: st.st_nlink,
            uid: st.st_uid,
            gid: st.st_gid,
            hash: None,
        }
    }

    pub fn path(&self) -> &Path {
        Path::new(OsStr::from_bytes(&self.path))
    }

    /// Directories between the root and this entry (0: directly in the root).
    pub fn depth(&self) -> u32 {
        self.path.iter().filter(|&&b| b == b'/').count() as u32
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_hash(out: &mut Vec<u8>, hash: Option<&[u8]>) {
    match hash {
        Some(h) => {
            put_varint(out, h.len() as u64);
            out.extend_from_slice(h);
        }
        None => out.push(0),
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Encodes records into a byte buffer with path front coding relative to the
/// previous record in the same buffer. A buffer starts with no previous path,
/// so independently encoded buffers can be appended to one stream in any order
/// (each parallel scan worker fills its own and appends it whole).
#[derive(Default)]
pub struct RecordEncoder {
    pub buf: Vec<u8>,
    prev: Vec<u8>,
    pub records: u64,
}

impl RecordEncoder {
    /// Encode an entry straight from `fstatat` output, without building an [`Entry`].
    pub fn push_stat(&mut self, path: &[u8], st: &libc::stat, hash: Option<&[u8]>) {
        let shared = common_prefix(&self.prev, path);
        let out = &mut self.buf;
        out.push(Kind::from_mode(st.st_mode) as u8);
        put_varint(out, shared as u64);
        put_varint(out, (path.len() - shared) as u64);
        out.extend_from_slice(&path[shared..]);
        put_varint(out, st.st_size as u64);
        put_varint(out, st.st_blocks as u64);
        put_varint(out, (st.st_mode & 0o7777) as u64);
        put_varint(out, zigzag(st.st_mtime));
        put_varint(out, st.st_mtime_nsec as u64);
        put_varint(out, zigzag(st.st_atime.wrapping_sub(st.st_mtime)));
        put_varint(out, st.st_atime_nsec as u64);
        put_varint(out, zigzag(st.st_ctime.wrapping_sub(st.st_mtime)));
        put_varint(out, st.st_ctime_nsec as u64);
        put_varint(out, st.st_nlink);
        put_varint(out, st.st_uid as u64);
        put_varint(out, st.st_gid as u64);
        put_hash(out, hash);
        self.prev.truncate(shared);
        self.prev.extend_from_slice(&path[shared..]);
        self.records += 1;
    }

    /// Encode an owned entry.
    pub fn push(&mut self, e: &Entry) {
        let shared = common_prefix(&self.prev, &e.path);
        let out = &mut self.buf;
        out.push(e.kind as u8);
        put_varint(out, shared as u64);
        put_varint(out, (e.path.len() - shared) as u64);
        out.extend_from_slice(&e.path[shared..]);
        put_varint(out, e.size);
        put_varint(out, e.blocks);
        put_varint(out, e.mode as u64);
        put_varint(out, zigzag(e.mtime.sec));
        put_varint(out, e.mtime.nsec as u64);
        put_varint(out, zigzag(e.atime.sec.wrapping_sub(e.mtime.sec)));
        put_varint(out, e.atime.nsec as u64);
        put_varint(out, zigzag(e.ctime.sec.wrapping_sub(e.mtime.sec)));
        put_varint(out, e.ctime.nsec as u64);
        put_varint(out, e.nlink);
        put_varint(out, e.uid as u64);
        put_varint(out, e.gid as u64);
        put_hash(out, e.hash.as_deref());
        self.prev.clear();
        self.prev.extend_from_slice(&e.path);
        self.records += 1;
    }

    /// Take the encoded bytes and start a fresh buffer (no previous path).
    pub fn take(&mut self) -> Vec<u8> {
        self.prev.clear();
        std::mem::take(&mut self.buf)
    }
}

/// Write the magic line and header.
pub fn write_header<W: Write>(w: &mut W, header: &SnapshotHeader) -> io::Result<()> {
    writeln!(w, "{MAGIC}")?;
    serde_json::to_writer(&mut *w, header)?;
    w.write_all(b"\n")
}

/// Write the end marker after `entries` records.
pub fn write_end<W: Write>(w: &mut W, entries: u64) -> io::Result<()> {
    let mut b = vec![0u8];
    put_varint(&mut b, entries);
    w.write_all(&b)
}

/// Write a whole snapshot from entries (for tests and for tools that build
/// snapshots without scanning).
pub fn write_snapshot<W: Write>(
    w: &mut W,
    header: &SnapshotHeader,
    entries: impl IntoIterator<Item = Entry>,
) -> io::Result<u64> {
    write_header(w, header)?;
    let mut enc = RecordEncoder::default();
    for e in entries {
        enc.push(&e);
        if enc.buf.len() > 1 << 16 {
            w.write_all(&enc.buf)?;
            enc.buf.clear(); // keep `prev`: front coding continues across writes
        }
    }
    w.write_all(&enc.buf)?;
    write_end(w, enc.records)?;
    Ok(enc.records)
}

/// The longest header line read.
const HEADER_MAX: u64 = 1 << 20;

/// Namespace for reading snapshots.
pub struct Snapshot;

impl Snapshot {
    /// Start reading a snapshot: parses the header and returns an iterator
    /// over its entries, one record at a time.
    pub fn read_stream<R: Read>(reader: R) -> Result<SnapshotStream<BufReader<R>>, SnapshotError> {
        Self::read_buffered(BufReader::with_capacity(1 << 16, reader))
    }

    /// Open a snapshot file (`-`: standard input) through the bounded reader
    /// ([`fsbench_base::input::open_stream`]: a regular file read no further than its size; `diff
    /// /dev/zero` read its first line without end).
    pub fn open(
        path: &Path,
    ) -> Result<SnapshotStream<BufReader<fsbench_base::input::Stream>>, SnapshotError> {
        Self::read_stream(fsbench_base::input::open_stream(path)?)
    }

    /// Like [`Snapshot::read_stream`] for a reader that is already buffered.
    pub fn read_buffered<R: BufRead>(mut reader: R) -> Result<SnapshotStream<R>, SnapshotError> {
        let mut line = Vec::new();
        (&mut reader)
            .take(MAGIC.len() as u64 + 1)
            .read_until(b'\n', &mut line)?;
        let magic = line.strip_suffix(b"\n").unwrap_or(&line);
        let version = if magic == MAGIC.as_bytes() {
            2
        } else if magic == MAGIC_V1.as_bytes() {
            1
        } else {
            return Err(SnapshotError::BadMagic);
        };
        line.clear();
        // The header is a line of JSON of a few hundred bytes.
        (&mut reader)
            .take(HEADER_MAX)
            .read_until(b'\n', &mut line)?;
        if !line.ends_with(b"\n") {
            return Err(SnapshotError::Corrupt {
                record: 0,
                what: "header line missing or longer than 1 MiB",
            });
        }
        let header: SnapshotHeader = serde_json::from_slice(&line)?;
        Ok(SnapshotStream {
            reader,
            header,
            version,
            prev: Vec::new(),
            records: 0,
            done: false,
        })
    }
}

/// Iterator over the entries of a snapshot.
pub struct SnapshotStream<R> {
    reader: R,
    header: SnapshotHeader,
    version: u32,
    prev: Vec<u8>,
    records: u64,
    done: bool,
}

impl<R: BufRead> SnapshotStream<R> {
    pub fn header(&self) -> &SnapshotHeader {
        &self.header
    }

    /// Format version of the file being read (1 or 2).
    pub fn version(&self) -> u32 {
        self.version
    }

    fn byte(&mut self) -> Result<Option<u8>, SnapshotError> {
        let mut b = [0u8; 1];
        match self.reader.read_exact(&mut b) {
            Ok(()) => Ok(Some(b[0])),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn varint(&mut self) -> Result<u64, SnapshotError> {
        let mut v: u64 = 0;
        let mut shift = 0;
        loop {
            let b = self.byte()?.ok_or(SnapshotError::Truncated(self.records))?;
            if shift >= 64 {
                return Err(self.corrupt("varint too long"));
            }
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    fn corrupt(&self, what: &'static str) -> SnapshotError {
        SnapshotError::Corrupt {
            record: self.records,
            what,
        }
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, SnapshotError> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| self.corrupt(what))
    }

    fn time(&mut self, base: i64) -> Result<Timestamp, SnapshotError> {
        let sec = base.wrapping_add(unzigzag(self.varint()?));
        let nsec = self.u32("nanoseconds out of range")?;
        Ok(Timestamp { sec, nsec })
    }

    fn next_entry(&mut self) -> Result<Option<Entry>, SnapshotError> {
        let kind = match self.byte()? {
            None => return Err(SnapshotError::Truncated(self.records)),
            Some(0) => {
                let n = self.varint()?;
                if n != self.records {
                    return Err(self.corrupt("end marker count differs from records read"));
                }
                return Ok(None);
            }
            Some(b) => Kind::from_u8(b).ok_or_else(|| self.corrupt("unknown entry kind"))?,
        };
        let shared = self.varint()? as usize;
        if shared > self.prev.len() {
            return Err(self.corrupt("shared prefix longer than previous path"));
        }
        let len = self.varint()? as usize;
        // The whole path, not only its new part: a path that grew by a megabyte per record
        // would take memory without bound.
        if shared + len > 1 << 20 {
            return Err(self.corrupt("path too long"));
        }
        let mut path = Vec::with_capacity(shared + len);
        path.extend_from_slice(&self.prev[..shared]);
        path.resize(shared + len, 0);
        self.reader
            .read_exact(&mut path[shared..])
            .map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => SnapshotError::Truncated(self.records),
                _ => e.into(),
            })?;
        let size = self.varint()?;
        let blocks = self.varint()?;
        let mode = self.u32("mode out of range")?;
        let mtime = self.time(0)?;
        let atime = self.time(mtime.sec)?;
        let ctime = self.time(mtime.sec)?;
        let nlink = self.varint()?;
        let uid = self.u32("uid out of range")?;
        let gid = self.u32("gid out of range")?;
        let hash = if self.version >= 2 {
            let n = self.varint()? as usize;
            if n > 64 {
                return Err(self.corrupt("hash too long"));
            }
            if n == 0 {
                None
            } else {
                let mut h = vec![0u8; n];
                self.reader.read_exact(&mut h).map_err(|e| match e.kind() {
                    io::ErrorKind::UnexpectedEof => SnapshotError::Truncated(self.records),
                    _ => e.into(),
                })?;
                Some(h)
            }
        } else {
            None
        };
        self.prev.clear();
        self.prev.extend_from_slice(&path);
        self.records += 1;
        Ok(Some(Entry {
            path,
            kind,
            size,
            blocks,
            mode,
            mtime,
            atime,
            ctime,
            nlink,
            uid,
            gid,
            hash,
        }))
    }
}

impl<R: BufRead> Iterator for SnapshotStream<R> {
    type Item = Result<Entry, SnapshotError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_entry() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> SnapshotHeader {
        SnapshotHeader {
            root: "/data".into(),
            created_unix: 1_700_000_000,
            cross_mounts: false,
            tool_version: "test".into(),
            hash: None,
        }
    }

    fn entry(path: &str, kind: Kind, size: u64) -> Entry {
        Entry {
            path: path.as_bytes().to_vec(),
            kind,
            size,
            blocks: size.div_ceil(4096) * 8,
            mode: 0o644,
            mtime: Timestamp {
                sec: 1_600_000_000,
                nsec: 123_456_789,
            },
            atime: Timestamp {
                sec: 1_600_000_100,
                nsec: 5,
            },
            ctime: Timestamp {
                sec: -3,
                nsec: 999_999_999,
            },
            nlink: 1,
            uid: 1000,
            gid: u32::MAX,
            hash: None,
        }
    }

    #[test]
    fn a_path_growing_past_a_megabyte_is_refused() {
        // Each record's new part is under the bound; the whole path is not.
        let a = "d/".repeat(300_000);
        let b = format!("{a}{}", "e".repeat(600_000));
        let mut buf = Vec::new();
        write_snapshot(
            &mut buf,
            &header(),
            [entry(&a, Kind::Dir, 0), entry(&b, Kind::File, 0)],
        )
        .unwrap();
        let got: Vec<_> = Snapshot::read_stream(&buf[..]).unwrap().collect();
        assert!(got[0].is_ok());
        let e = got[1].as_ref().unwrap_err().to_string();
        assert!(e.contains("path too long"), "{e}");
    }

    #[test]
    fn header_lines_are_bounded() {
        let mut buf = format!("{MAGIC}\n").into_bytes();
        buf.extend(std::iter::repeat_n(b'x', 2 << 20));
        let Err(e) = Snapshot::read_stream(&buf[..]) else {
            panic!("read")
        };
        assert!(e.to_string().contains("header line"), "{e}");
        let Err(e) = Snapshot::read_stream(&vec![b'f'; 1 << 20][..]) else {
            panic!("read")
        };
        assert!(matches!(e, SnapshotError::BadMagic), "{e}");
    }

    fn sample() -> Vec<Entry> {
        let mut v = vec![
            entry("dir", Kind::Dir, 4096),
            entry("dir/a.txt", Kind::File, 0),
            entry("dir/abc.txt", Kind::File, 1 << 40),
            entry("dir/sub", Kind::Dir, 4096),
            entry("dir/sub/x", Kind::Symlink, 7),
            entry("other", Kind::Fifo, 0),
        ];
        v.push(Entry {
            path: b"bin\xff\n name".to_vec(),
            hash: Some(vec![0xab; 32]),
            ..entry("", Kind::File, 3)
        });
        v
    }

    #[test]
    fn version_1_still_reads() {
        // A version 1 file: same records without the hash length byte.
        let mut buf = Vec::new();
        writeln!(buf, "{MAGIC_V1}").unwrap();
        serde_json::to_writer(&mut buf, &header()).unwrap();
        buf.push(b'\n');
        let mut v1 = sample();
        v1.pop();
        for e in &v1 {
            let mut enc = RecordEncoder::default();
            enc.push(e);
            // Drop the trailing hashlen byte (0: no hash) of the version 2 encoding.
            assert_eq!(enc.buf.pop(), Some(0));
            buf.extend(enc.buf);
        }
        write_end(&mut buf, v1.len() as u64).unwrap();
        let s = Snapshot::read_stream(&buf[..]).unwrap();
        assert_eq!(s.version(), 1);
        let back: Vec<Entry> = s.collect::<Result<_, _>>().unwrap();
        assert_eq!(back, v1);
    }

    #[test]
    fn round_trip() {
        let mut buf = Vec::new();
        let n = write_snapshot(&mut buf, &header(), sample()).unwrap();
        assert_eq!(n, 7);
        let s = Snapshot::read_stream(&buf[..]).unwrap();
        assert_eq!(s.header(), &header());
        let back: Vec<Entry> = s.collect::<Result<_, _>>().unwrap();
        assert_eq!(back, sample());
        assert_eq!(back[2].depth(), 1);
        assert_eq!(back[4].depth(), 2);
    }

    #[test]
    fn front_coding_is_compact() {
        let entries: Vec<Entry> = (0..1000)
            .map(|i| entry(&format!("some/deep/directory/file{i:05}"), Kind::File, i))
            .collect();
        let mut buf = Vec::new();
        write_snapshot(&mut buf, &header(), entries).unwrap();
        // Fixed fields (three nanosecond stamps cost 4-5 bytes each) plus
        // the 2-3 byte name tail and the hash length byte; the 27-byte
        // directory part is shared.
        assert!(buf.len() < 1000 * 41, "{} bytes", buf.len());
    }

    #[test]
    fn independent_buffers_concatenate() {
        let mut a = RecordEncoder::default();
        let mut b = RecordEncoder::default();
        let s = sample();
        for e in &s[..3] {
            a.push(e);
        }
        for e in &s[3..] {
            b.push(e);
        }
        let mut out = Vec::new();
        write_header(&mut out, &header()).unwrap();
        out.extend(a.take());
        out.extend(b.take());
        write_end(&mut out, 7).unwrap();
        let back: Vec<Entry> = Snapshot::read_stream(&out[..])
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn stat_encoding_matches_entry_encoding() {
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        st.st_mode = libc::S_IFREG | 0o640;
        st.st_size = 12345;
        st.st_blocks = 32;
        st.st_mtime = 100;
        st.st_mtime_nsec = 7;
        st.st_atime = 90;
        st.st_ctime = 110;
        st.st_nlink = 2;
        st.st_uid = 3;
        st.st_gid = 4;
        let mut a = RecordEncoder::default();
        a.push_stat(b"x/y", &st, Some(b"0123"));
        let mut b = RecordEncoder::default();
        b.push(&Entry {
            hash: Some(b"0123".to_vec()),
            ..Entry::from_stat(b"x/y", &st)
        });
        assert_eq!(a.buf, b.buf);
    }

    #[test]
    fn truncation_and_garbage_are_errors() {
        let mut buf = Vec::new();
        write_snapshot(&mut buf, &header(), sample()).unwrap();
        let cut = &buf[..buf.len() - 2];
        let res: Result<Vec<Entry>, _> = Snapshot::read_stream(cut).unwrap().collect();
        assert!(matches!(res, Err(SnapshotError::Truncated(_))), "{res:?}");
        assert!(matches!(
            Snapshot::read_stream(&b"hello\n{}\n"[..]),
            Err(SnapshotError::BadMagic)
        ));
    }
}
