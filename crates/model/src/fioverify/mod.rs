//! fio's `verify=` on disk: the block format of fio 3.33 to 3.40 (`verify.h`, `verify.c`),
//! so that a file a fio job file writes in fsbench checks in fio and one fio writes checks
//! in fsbench. fio 3.41 changed the header (a version byte, a 64-bit `numberio`): blocks of
//! that fio do not check here, nor these there.
//!
//! A verifying write is filled with data (random from a seed of its own, or
//! `verify_pattern`), then every `verify_interval` bytes of it (the write's length when
//! larger) start with a 40-byte header and the named checksum of the rest of the interval;
//! `verify_offset` swaps the header and checksum with the bytes that far in. A read checks
//! each interval: header (magic, length, offset, seed, write number, its own CRC-32C), then
//! checksum or pattern, failures worded as fio words them.

pub mod pattern;
pub mod sums;

/// Bytes of fio's `struct verify_header`.
pub const HEADER: usize = 40;
/// `FIO_HDR_MAGIC`.
pub const MAGIC: u16 = 0xacca;

/// fio's verify types (`verify.h`'s enum: the numbers go into headers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `meta`: the header alone (and `verify_pattern` when given).
    Meta,
    Md5,
    Crc64,
    Crc32,
    /// `crc32c` and `crc32c-intel` (one type in fio 3.33's headers).
    Crc32c,
    Crc16,
    Crc7,
    Sha256,
    Sha512,
    /// `sha3-224`, `-256`, `-384`, `-512`: the digest's bits.
    Sha3(u16),
    Xxhash,
    Sha1,
    /// `verify_pattern` without `verify=`: a header, then the pattern checked.
    Pattern,
    /// `verify=pattern`: the pattern alone, no header.
    PatternNoHdr,
    /// `null`: written as plain writes, nothing checked.
    Null,
}

impl Kind {
    /// The type `verify=` names (fio's option values), if fio has it.
    pub fn parse(v: &str) -> Option<Kind> {
        Some(match v {
            "md5" => Kind::Md5,
            "crc64" => Kind::Crc64,
            "crc32" => Kind::Crc32,
            "crc32c" | "crc32c-intel" => Kind::Crc32c,
            "crc16" => Kind::Crc16,
            "crc7" => Kind::Crc7,
            "sha1" => Kind::Sha1,
            "sha256" => Kind::Sha256,
            "sha512" => Kind::Sha512,
            "sha3-224" => Kind::Sha3(224),
            "sha3-256" => Kind::Sha3(256),
            "sha3-384" => Kind::Sha3(384),
            "sha3-512" => Kind::Sha3(512),
            "xxhash" => Kind::Xxhash,
            "meta" => Kind::Meta,
            "pattern" => Kind::PatternNoHdr,
            "null" => Kind::Null,
            _ => return None,
        })
    }

    /// Its number in a header (`verify_type`).
    pub fn code(self) -> u16 {
        match self {
            Kind::Meta => 1,
            Kind::Md5 => 2,
            Kind::Crc64 => 3,
            Kind::Crc32 => 4,
            Kind::Crc32c => 5,
            Kind::Crc16 => 7,
            Kind::Crc7 => 8,
            Kind::Sha256 => 9,
            Kind::Sha512 => 10,
            Kind::Sha3(224) => 11,
            Kind::Sha3(256) => 12,
            Kind::Sha3(384) => 13,
            Kind::Sha3(_) => 14,
            Kind::Xxhash => 15,
            Kind::Sha1 => 16,
            Kind::Pattern => 17,
            Kind::PatternNoHdr => 18,
            Kind::Null => 19,
        }
    }

    /// The type a header's number names (`crc32c-intel`'s 6 reads as `crc32c`).
    pub fn of_code(c: u16) -> Option<Kind> {
        Some(match c {
            1 => Kind::Meta,
            2 => Kind::Md5,
            3 => Kind::Crc64,
            4 => Kind::Crc32,
            5 | 6 => Kind::Crc32c,
            7 => Kind::Crc16,
            8 => Kind::Crc7,
            9 => Kind::Sha256,
            10 => Kind::Sha512,
            11 => Kind::Sha3(224),
            12 => Kind::Sha3(256),
            13 => Kind::Sha3(384),
            14 => Kind::Sha3(512),
            15 => Kind::Xxhash,
            16 => Kind::Sha1,
            17 => Kind::Pattern,
            18 => Kind::PatternNoHdr,
            19 => Kind::Null,
            _ => return None,
        })
    }

    /// The name fio's failure lines give it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Md5 => "md5",
            Kind::Crc64 => "crc64",
            Kind::Crc32 => "crc32",
            Kind::Crc32c => "crc32c",
            Kind::Crc16 => "crc16",
            Kind::Crc7 => "crc7",
            Kind::Sha256 => "sha256",
            Kind::Sha512 => "sha512",
            Kind::Sha3(224) => "sha3-224",
            Kind::Sha3(256) => "sha3-256",
            Kind::Sha3(384) => "sha3-384",
            Kind::Sha3(_) => "sha3-512",
            Kind::Xxhash => "xxhash",
            Kind::Sha1 => "sha1",
            Kind::Meta => "meta",
            Kind::Pattern | Kind::PatternNoHdr => "pattern",
            Kind::Null => "null",
        }
    }

    /// Bytes of its checksum field after the header (fio's `struct vhdr_*`).
    pub fn sum_len(self) -> usize {
        match self {
            Kind::Md5 => 16,
            Kind::Crc64 => 8,
            Kind::Crc32 | Kind::Crc32c | Kind::Xxhash => 4,
            Kind::Crc16 => 2,
            Kind::Crc7 => 1,
            Kind::Sha256 => 64,
            Kind::Sha512 => 128,
            Kind::Sha3(b) => b as usize / 8,
            Kind::Sha1 => 20,
            Kind::Meta | Kind::Pattern | Kind::PatternNoHdr | Kind::Null => 0,
        }
    }

    /// Header and checksum field (fio's `__hdr_size`): the checksummed bytes start here.
    pub fn hdr_size(self) -> usize {
        match self {
            Kind::PatternNoHdr => 0,
            k => HEADER + k.sum_len(),
        }
    }

    /// Whether the pattern is checked (not a checksum).
    fn checks_pattern(self) -> bool {
        matches!(self, Kind::Meta | Kind::Pattern | Kind::PatternNoHdr)
    }
}

/// How a job verifies: settled from its options as fio settles them.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub kind: Kind,
    /// `verify_interval` after fio's fixups: a header every so many bytes of a write.
    pub interval: u64,
    /// `verify_offset`: where in each interval the header and checksum go.
    pub offset: u64,
    /// `verify_pattern`'s bytes (empty: random data).
    pub pattern: Vec<u8>,
    /// `buffer_compress_percentage`: the zero share at the end of each write's data.
    pub compress: u8,
    /// fio's `thread_number` (1 for the first job's first clone), into each header.
    pub thread: u16,
    /// Whether a read checks the header's write number (a job that writes, with one
    /// block size and not time based, as fio) and seed (a job that reads and writes,
    /// without `verify_backlog`).
    pub check_numberio: bool,
    pub check_seed: bool,
}

impl Spec {
    /// The header spacing in an I/O of `len` bytes (fio's `get_hdr_inc`).
    pub fn hdr_inc(&self, len: usize) -> usize {
        if self.interval > 0 && self.interval as usize <= len {
            self.interval as usize
        } else {
            len
        }
    }
}

/// fio's `struct verify_header` (host byte order, as fio writes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    pub magic: u16,
    pub verify_type: u16,
    pub len: u32,
    pub rand_seed: u64,
    pub offset: u64,
    pub time_sec: u32,
    pub time_nsec: u32,
    pub thread: u16,
    pub numberio: u16,
    /// CRC-32C (fio's, uninverted) of the 36 bytes before it.
    pub crc32: u32,
}

impl Header {
    /// The 40 bytes, with `crc32` computed over the fields (the field is ignored).
    pub fn encode(&self, out: &mut [u8]) {
        out[0..2].copy_from_slice(&self.magic.to_ne_bytes());
        out[2..4].copy_from_slice(&self.verify_type.to_ne_bytes());
        out[4..8].copy_from_slice(&self.len.to_ne_bytes());
        out[8..16].copy_from_slice(&self.rand_seed.to_ne_bytes());
        out[16..24].copy_from_slice(&self.offset.to_ne_bytes());
        out[24..28].copy_from_slice(&self.time_sec.to_ne_bytes());
        out[28..32].copy_from_slice(&self.time_nsec.to_ne_bytes());
        out[32..34].copy_from_slice(&self.thread.to_ne_bytes());
        out[34..36].copy_from_slice(&self.numberio.to_ne_bytes());
        let crc = sums::crc32c(&out[..36]);
        out[36..40].copy_from_slice(&crc.to_ne_bytes());
    }

    pub fn decode(b: &[u8]) -> Header {
        let u16_at = |i: usize| u16::from_ne_bytes(b[i..i + 2].try_into().expect("2 bytes"));
        let u32_at = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_ne_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Header {
            magic: u16_at(0),
            verify_type: u16_at(2),
            len: u32_at(4),
            rand_seed: u64_at(8),
            offset: u64_at(16),
            time_sec: u32_at(24),
            time_nsec: u32_at(28),
            thread: u16_at(32),
            numberio: u16_at(34),
            crc32: u32_at(36),
        }
    }
}

/// fio's `GOLDEN_RATIO_64` (`__hash_u64`).
const GOLDEN: u64 = 0x61C8_8646_80B5_83EB;

/// fio's `__fill_random_buf` (its default four seed buckets): 64-bit words from four
/// multiplicative chains, in host order; the last words and bytes from the first chain.
pub fn fill_random(buf: &mut [u8], seed: u64) {
    const PRIMES: [u64; 4] = [1, 2, 3, 5];
    let grouped = buf.len() / 32 * 32;
    let mut s = PRIMES.map(|p| seed.wrapping_mul(p));
    let (head, tail) = buf.split_at_mut(grouped);
    for group in head.chunks_exact_mut(32) {
        for (w, sp) in group.chunks_exact_mut(8).zip(s.iter_mut()) {
            w.copy_from_slice(&sp.to_ne_bytes());
            *sp = sp.wrapping_mul(GOLDEN);
        }
    }
    let mut seed = s[0];
    for w in tail.chunks_mut(8) {
        let n = w.len();
        w.copy_from_slice(&seed.to_ne_bytes()[..n]);
        seed = seed.wrapping_mul(GOLDEN);
    }
}

/// What one verifying write puts in its headers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Write {
    /// The seed of its random data (fio's `rand_seed`).
    pub seed: u64,
    /// When it was issued (s, ns), and its number among the job's writes (`numberio`).
    pub time: (u32, u32),
    pub numberio: u16,
}

/// Fill `buf`, written at file offset `off`, as fio's `populate_verify_io_u`: the data,
/// then each interval's header and checksum (and `verify_offset`'s swap).
pub fn fill(spec: &Spec, buf: &mut [u8], off: u64, w: Write) {
    if spec.kind == Kind::Null {
        return;
    }
    if spec.pattern.is_empty() {
        // fio's `__fill_random_buf_percentage` with the write as one segment.
        let random = buf.len() * (100 - spec.compress.min(100) as usize) / 100;
        let random = if buf.len() - random <= 8 {
            buf.len()
        } else {
            random
        };
        let (r, z) = buf.split_at_mut(random);
        fill_random(r, w.seed);
        z.fill(0);
    } else {
        pattern::fill(&spec.pattern, buf);
    }
    let inc = spec.hdr_inc(buf.len());
    for (n, chunk) in buf.chunks_mut(inc).enumerate() {
        stamp(spec, chunk, off + n as u64 * spec.interval, &w);
    }
}

/// One interval: header, checksum, swap.
fn stamp(spec: &Spec, chunk: &mut [u8], off: u64, w: &Write) {
    let hs = spec.kind.hdr_size();
    if hs == 0 || chunk.len() <= hs {
        return;
    }
    Header {
        magic: MAGIC,
        verify_type: spec.kind.code(),
        len: chunk.len() as u32,
        rand_seed: w.seed,
        offset: off,
        time_sec: w.time.0,
        time_nsec: w.time.1,
        thread: spec.thread,
        numberio: w.numberio,
        crc32: 0,
    }
    .encode(&mut chunk[..HEADER]);
    let (head, data) = chunk.split_at_mut(hs);
    sum_into(spec.kind, data, &mut head[HEADER..]);
    let o = spec.offset as usize;
    if o > 0 && o + hs <= chunk.len() {
        swap(chunk, o, hs);
    }
}

/// fio's `memswp` of the first `n` bytes with the `n` at `at`.
fn swap(chunk: &mut [u8], at: usize, n: usize) {
    let (a, b) = chunk.split_at_mut(at);
    a[..n].swap_with_slice(&mut b[..n]);
}

/// The checksum field of `kind` over `data` into `out` (its `sum_len` bytes; `sha512`
/// keeps what `out` held where fio's update leaves its buffer alone).
fn sum_into(kind: Kind, data: &[u8], out: &mut [u8]) {
    match kind {
        Kind::Md5 => out.copy_from_slice(&sums::md5(data)),
        Kind::Crc64 => out.copy_from_slice(&sums::crc64(data).to_ne_bytes()),
        Kind::Crc32 => out.copy_from_slice(&sums::crc32(data).to_ne_bytes()),
        Kind::Crc32c => out.copy_from_slice(&sums::crc32c(data).to_ne_bytes()),
        Kind::Crc16 => out.copy_from_slice(&sums::crc16(data).to_ne_bytes()),
        Kind::Crc7 => out[0] = sums::crc7(data),
        Kind::Sha256 => out.copy_from_slice(&sums::sha256(data)),
        Kind::Sha512 => {
            let o: &mut [u8; 128] = out.try_into().expect("128 bytes");
            sums::sha512_into(data, o);
        }
        Kind::Sha3(bits) => sums::sha3(u32::from(bits), data, out),
        Kind::Xxhash => out.copy_from_slice(&sums::xxhash(data).to_ne_bytes()),
        Kind::Sha1 => out.copy_from_slice(&sums::sha1(data)),
        Kind::Meta | Kind::Pattern | Kind::PatternNoHdr | Kind::Null => {}
    }
}

mod check;
pub use check::{check, Bad, Read, Want};

#[cfg(test)]
mod tests;
