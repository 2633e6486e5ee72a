//! Checking a read of verified blocks as fio's `verify_io_u` does, and saying what failed in
//! fio's words (`verify_header`, `log_verify_failure`, `verify_io_u_pattern`).

use super::{sum_into, swap, Header, Kind, Spec, MAGIC};

/// What a read expects beyond the block itself: the seed and write number of the write
/// that put it there, where the job knows them (its verify phase).
#[derive(Debug, Clone, Copy, Default)]
pub struct Want {
    pub seed: Option<u64>,
    pub numberio: Option<u16>,
}

/// One read to check.
#[derive(Debug, Clone, Copy)]
pub struct Read<'a> {
    /// The file's name as the job names it, and the read's offset.
    pub file: &'a str,
    pub off: u64,
    pub want: Want,
    /// `verify_fatal`: stop at the first bad interval.
    pub fatal: bool,
    /// fio's `io_u->flags` as its failure line prints them.
    pub flags: u32,
}

/// A bad interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Bad {
    /// Its file offset.
    pub offset: u64,
    pub expected: String,
    pub found: String,
    /// What fio prints for it, a line each.
    pub lines: Vec<String>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Check the intervals of `buf`, read at `r.off`: how many were checked, and the bad ones
/// (a bad header ends the check, as in fio). `buf` is changed (`verify_offset` is undone
/// in place, as fio does).
pub fn check(spec: &Spec, buf: &mut [u8], r: &Read) -> (u64, Vec<Bad>) {
    let mut bad: Vec<Bad> = Vec::new();
    if spec.kind == Kind::Null {
        return (0, bad);
    }
    let len = buf.len();
    let inc = spec.hdr_inc(len);
    let hs = spec.kind.hdr_size();
    let mut blocks = 0;
    for (n, chunk) in buf.chunks_mut(inc).enumerate() {
        if (!bad.is_empty() && r.fatal) || chunk.len() < inc || chunk.len() <= hs {
            break;
        }
        let o = spec.offset as usize;
        if o > 0 && hs > 0 && o + hs <= chunk.len() {
            swap(chunk, o, hs);
        }
        blocks += 1;
        let at = r.off + (n * inc) as u64;
        let tail = format!(
            " at file {} offset {at}, length {inc} (requested block: offset={}, length={len})",
            r.file, r.off
        );
        let h = Header::decode(chunk);
        if spec.kind != Kind::PatternNoHdr {
            let want_off = r.off + n as u64 * spec.interval;
            if let Err((line, expected, found)) = header(spec, &h, inc, want_off, r) {
                let lines = vec![format!("{line}{tail}")];
                bad.push(Bad {
                    offset: at,
                    expected,
                    found,
                    lines,
                });
                return (blocks, bad);
            }
        }
        let failed = if spec.kind == Kind::Meta && spec.pattern.is_empty() {
            None
        } else if spec.kind.checks_pattern() {
            pattern(spec, chunk, n)
        } else {
            sum(spec.kind, chunk)
        };
        if let Some((mut lines, expected, found)) = failed {
            let hlen = if spec.kind == Kind::PatternNoHdr {
                inc as u32
            } else {
                h.len
            };
            let name = spec.kind.name();
            let name = &name[..name.len().min(8)];
            // fio prints a pattern's own lines first, a checksum's after.
            let place = if spec.kind.checks_pattern() {
                lines.len()
            } else {
                0
            };
            lines.insert(
                place,
                format!(
                    "{name}: verify failed at file {} offset {at}, length {hlen} (requested block: offset={}, length={len}, flags={:x})",
                    r.file, r.off, r.flags
                ),
            );
            if spec.kind != Kind::PatternNoHdr && h.verify_type != spec.kind.code() {
                lines.push(format!(
                    "fio: verify type mismatch ({} media, {} given)",
                    h.verify_type,
                    spec.kind.code()
                ));
            }
            bad.push(Bad {
                offset: at,
                expected,
                found,
                lines,
            });
        }
    }
    (blocks, bad)
}

type Failed = (String, String, String);

/// fio's `verify_header`: the first failed field in fio's words, with what was expected
/// and found.
fn header(spec: &Spec, h: &Header, inc: usize, want_off: u64, r: &Read) -> Result<(), Failed> {
    let fail = |line: String, e: String, f: String| Err((line, e, f));
    if h.magic != MAGIC {
        return fail(
            format!("verify: bad magic header {:x}, wanted {MAGIC:x}", h.magic),
            format!("magic {MAGIC:x}"),
            format!("{:x} (no fio verify header)", h.magic),
        );
    }
    if h.len as usize != inc {
        return fail(
            format!("verify: bad header length {}, wanted {inc}", h.len),
            format!("length {inc}"),
            format!(
                "{} (written with another block size or verify_interval)",
                h.len
            ),
        );
    }
    if let Some(s) = r.want.seed.filter(|_| spec.check_seed) {
        if h.rand_seed != s {
            return fail(
                format!("verify: bad header rand_seed {}, wanted {s}", h.rand_seed),
                format!("rand_seed {s}"),
                format!("{} (another write's data)", h.rand_seed),
            );
        }
    }
    if h.offset != want_off {
        return fail(
            format!("verify: bad header offset {}, wanted {}", h.offset, r.off),
            format!("offset {want_off}"),
            format!("{} (a block of another place)", h.offset),
        );
    }
    if let Some(n) = r.want.numberio.filter(|_| spec.check_numberio) {
        if h.numberio != n {
            return fail(
                format!("verify: bad header numberio {}, wanted {n}", h.numberio),
                format!("numberio {n}"),
                format!("{} (another write: stale data)", h.numberio),
            );
        }
    }
    let mut b = [0u8; super::HEADER];
    h.encode(&mut b);
    let crc = u32::from_ne_bytes(b[36..40].try_into().expect("4 bytes"));
    if crc != h.crc32 {
        return fail(
            format!("verify: bad header crc {:x}, calculated {crc:x}", h.crc32),
            format!("header crc {:x}", h.crc32),
            format!("{crc:x} (the header changed)"),
        );
    }
    Ok(())
}

/// The checksum of an interval against its field: fio's Expected / Received lines.
fn sum(kind: Kind, chunk: &[u8]) -> Option<(Vec<String>, String, String)> {
    let hs = kind.hdr_size();
    let stored = &chunk[super::HEADER..hs];
    let mut got = vec![0u8; kind.sum_len()];
    sum_into(kind, &chunk[hs..], &mut got);
    if got == stored {
        return None;
    }
    let (e, g) = (hex(stored), hex(&got));
    let lines = vec![
        format!("       Expected CRC: {e}"),
        format!("       Received CRC: {g}"),
    ];
    Some((lines, format!("{} {e}", kind.name()), g))
}

/// fio's `verify_io_u_pattern`: the first byte after the header that is not the pattern's.
fn pattern(spec: &Spec, chunk: &[u8], n: usize) -> Option<(Vec<String>, String, String)> {
    let p = &spec.pattern;
    let hs = spec.kind.hdr_size();
    let start = (chunk.len() * n + hs) % p.len();
    let data = &chunk[hs..];
    let i = data
        .iter()
        .enumerate()
        .position(|(i, &b)| b != p[(start + i) % p.len()])?;
    let want = p[(start + i) % p.len()];
    let lines = vec![
        format!(
            "fio: got pattern '{:02x}', wanted '{want:02x}'. Bad bits {}",
            data[i],
            (data[i] ^ want).count_ones()
        ),
        format!("fio: bad pattern block offset {i}"),
    ];
    Some((
        lines,
        format!("pattern byte {want:02x}"),
        format!("{:02x}", data[i]),
    ))
}
