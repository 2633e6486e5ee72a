//! Data verification (`--verify`): every 4 KiB block fsbench writes starts with a small
//! header naming what it is, and reads check it.
//!
//! A block is the 4 KiB at a block-aligned file offset. Its first [`HEADER`] bytes are:
//! magic `FSBV`, the write's generation (u32), the file's id (u64), the block's file offset
//! (u64), the number of bytes of the block the header vouches for (u32, from the block's
//! start), and a 32-bit checksum of those fields and of the vouched bytes; the rest is the
//! fileset's content (`compress=`/`dedupe=`). So a block read back proves itself: the right
//! file, the right place, not torn, not flipped. Staleness needs memory: each file's state
//! keeps, per block, the generation of the last write that completed and the length it
//! vouched for, and a read must find at least that generation.
//!
//! Writes that start inside a block cannot rewrite its header: when they overwrite bytes the
//! header vouches for, the block is no longer checkable and is marked so until a write from
//! its start covers it again; writes past the vouched bytes (appends to a short last block)
//! leave it checkable. Asynchronous writes stamp a copy of their data and count as in flight
//! (a read of their bytes is not judged) until they are reaped.

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Which data a run verifies: a value of the run's options, handed to the layout, the
/// workers and the results (not a process-wide switch, so two runs in one process, or a
/// run after another command, each verify as they were asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Nothing is stamped or checked.
    #[default]
    Off,
    /// Every write is stamped; only the reads of flowops with `verify` are checked.
    Flowops,
    /// Every write is stamped and every read checked (`--verify`).
    AllReads,
}

impl Mode {
    /// The mode of a run: `--verify` checks every read; a flowop's `verify` attribute checks
    /// its own reads. Either way every write is stamped.
    pub fn of(all_reads: bool, has_verify_flowop: bool) -> Mode {
        match (all_reads, has_verify_flowop) {
            (true, _) => Mode::AllReads,
            (false, true) => Mode::Flowops,
            (false, false) => Mode::Off,
        }
    }

    /// Whether writes are stamped (and the results carry verification counts).
    pub fn on(self) -> bool {
        self != Mode::Off
    }

    /// Whether a read of a flowop (whose own `verify` is `flowop`) is checked.
    pub fn checks(self, flowop: bool) -> bool {
        self == Mode::AllReads || (flowop && self.on())
    }
}

/// Mismatches kept per flowop (all are counted).
pub const KEEP: usize = 1000;

/// A flowop's verification in the results.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VerifyResult {
    /// Blocks whose header and checksum were checked.
    pub blocks_checked: u64,
    pub mismatches: u64,
    /// Reads not checked because another write to the same file ran meanwhile.
    pub reads_skipped: u64,
    /// The first mismatches (up to 1,000 per flowop).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first: Vec<Mismatch>,
}

/// Bytes per verified block.
pub const BLOCK: u64 = 4096;
/// Bytes of the header at the start of every block.
pub const HEADER: usize = 32;
const MAGIC: [u8; 4] = *b"FSBV";

/// A file's id in headers: fileset index and entry index.
pub fn file_id(fileset: u32, entry: u32) -> u64 {
    ((fileset as u64) << 32) | entry as u64
}

fn sum(gen: u32, id: u64, off: u64, len: u32, payload: &[u8]) -> u32 {
    // Four independent lanes of multiply-xorshift over 8-byte words, so the CPU overlaps
    // them: checking a block costs a fraction of copying it.
    const K: u64 = 0xff51_afd7_ed55_8ccd;
    let mut h = [
        0x9e37_79b9_7f4a_7c15 ^ gen as u64,
        0xc2b2_ae3d_27d4_eb4f ^ ((len as u64) << 32),
        0x1656_67b1_9e37_79f9 ^ id,
        0x27d4_eb2f_1656_67c5 ^ off,
    ];
    let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
    let mut chunks = payload.chunks_exact(32);
    for c in &mut chunks {
        for (l, w) in h.iter_mut().zip(c.chunks_exact(8)) {
            *l = (*l ^ word(w)).wrapping_mul(K);
            *l ^= *l >> 29;
        }
    }
    let rest = chunks.remainder();
    let mut tail = [0u8; 32];
    tail[..rest.len()].copy_from_slice(rest);
    for (l, w) in h.iter_mut().zip(tail.chunks_exact(8)) {
        *l = (*l ^ word(w) ^ rest.len() as u64).wrapping_mul(K);
        *l ^= *l >> 29;
    }
    let mut x = h[0] ^ h[1].rotate_left(17) ^ h[2].rotate_left(31) ^ h[3].rotate_left(47);
    x = (x ^ (x >> 33)).wrapping_mul(K);
    (x ^ (x >> 32)) as u32
}

/// Write the header of a block whose bytes are `block` (from its start; `block.len()` is the
/// length vouched for, at least [`HEADER`]).
fn put_header(gen: u32, id: u64, off: u64, block: &mut [u8]) {
    let len = block.len() as u32;
    let s = sum(gen, id, off, len, &block[HEADER..]);
    block[0..4].copy_from_slice(&MAGIC);
    block[4..8].copy_from_slice(&gen.to_le_bytes());
    block[8..16].copy_from_slice(&id.to_le_bytes());
    block[16..24].copy_from_slice(&off.to_le_bytes());
    block[24..28].copy_from_slice(&len.to_le_bytes());
    block[28..32].copy_from_slice(&s.to_le_bytes());
}

/// Stamp `buf`, about to be written at file offset `off`, for file `id` and generation
/// `gen`: the payload bytes stay what the caller put there (the fileset's content), and
/// every block that the write covers from its start gets its header.
pub fn stamp(gen: u32, id: u64, off: u64, buf: &mut [u8]) {
    let end = off + buf.len() as u64;
    let mut b = off.div_ceil(BLOCK) * BLOCK;
    while b + HEADER as u64 <= end {
        let e = (b + BLOCK).min(end);
        let s = (b - off) as usize;
        put_header(gen, id, b, &mut buf[s..(e - off) as usize]);
        b += BLOCK;
    }
}

/// What a block's header says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Header {
    pub gen: u32,
    pub id: u64,
    pub off: u64,
    pub len: u32,
}

/// Why a block failed its check.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Mismatch {
    pub path: String,
    pub offset: u64,
    pub expected: String,
    pub found: String,
}

/// Check one block read back from offset `off` (`data` from the block's start, as much as
/// was read). `floor` is the generation the block must have at least (0: any).
/// Returns `Ok(true)` when checked (a read shorter than the block checks its header only),
/// `Ok(false)` when too little was read to check it.
pub fn check_block(data: &[u8], id: u64, off: u64, floor: u32) -> Result<bool, (String, String)> {
    if data.len() < HEADER {
        return Ok(false);
    }
    if data[0..4] != MAGIC {
        return Err((
            format!("a block header of file {id:#x} at offset {off}"),
            format!("no header (bytes {:02x?})", &data[0..8]),
        ));
    }
    let u32_at = |i: usize| u32::from_le_bytes(data[i..i + 4].try_into().expect("4"));
    let u64_at = |i: usize| u64::from_le_bytes(data[i..i + 8].try_into().expect("8"));
    let h = Header {
        gen: u32_at(4),
        id: u64_at(8),
        off: u64_at(16),
        len: u32_at(24),
    };
    if h.id != id || h.off != off {
        return Err((
            format!("file {id:#x} offset {off}"),
            format!("the block of file {:#x} offset {} (misplaced)", h.id, h.off),
        ));
    }
    if (h.len as usize) < HEADER || h.len as u64 > BLOCK {
        return Err((
            "a vouched length of 32 to 4096 bytes".into(),
            format!("{} (corrupt header)", h.len),
        ));
    }
    if data.len() < h.len as usize {
        // A read shorter than the block (2 KiB random reads): the header still says which
        // file, where and how old; the checksum needs the whole block.
        if h.gen < floor {
            return Err((
                format!("generation {floor} or later"),
                format!("generation {} (stale data)", h.gen),
            ));
        }
        return Ok(floor > 0);
    }
    let s = sum(h.gen, h.id, h.off, h.len, &data[HEADER..h.len as usize]);
    if s != u32_at(28) {
        return Err((
            format!("checksum {:08x}", u32_at(28)),
            format!("{s:08x} (the block's bytes changed)"),
        ));
    }
    if h.gen < floor {
        return Err((
            format!("generation {floor} or later"),
            format!("generation {} (stale data)", h.gen),
        ));
    }
    Ok(true)
}

/// Per-block state: generation (high 32 bits) and vouched length; 0 = not checkable.
type BlockState = u64;

fn pack(gen: u32, len: u64) -> BlockState {
    ((gen as u64) << 32) | len
}

fn gen_of(s: BlockState) -> u32 {
    (s >> 32) as u32
}

fn len_of(s: BlockState) -> u64 {
    s & 0xffff_ffff
}

/// Writes remembered after they end, for reads that started before (see `disturbed`).
const LOG: usize = 64;

#[derive(Debug, Default)]
struct Inner {
    /// The size the file has after the writes that completed.
    size: u64,
    blocks: Vec<BlockState>,
    next_gen: u32,
    /// Writes under way: generation and byte range.
    flights: Vec<(u32, u64, u64)>,
    /// Counts writes ended; `log` holds the ranges of the last [`LOG`] of them.
    ended: u64,
    log: std::collections::VecDeque<(u64, u64, u64)>,
}

impl Inner {
    fn land(&mut self, gen: u32) {
        if let Some(i) = self.flights.iter().position(|f| f.0 == gen) {
            let (_, off, end) = self.flights.swap_remove(i);
            self.ended += 1;
            if self.log.len() == LOG {
                self.log.pop_front();
            }
            self.log.push_back((self.ended, off, end));
        }
    }
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// What fsbench knows about one file's content.
#[derive(Debug, Default)]
pub struct FileState {
    inner: Mutex<Inner>,
}

/// A read's view of a file's state, taken before the read.
pub struct Snapshot {
    /// Writes ended before the read, and the bytes it reads.
    ended: u64,
    range: (u64, u64),
    busy: bool,
    size: u64,
    first_block: u64,
    blocks: Vec<BlockState>,
}

impl FileState {
    /// Laid out whole at generation 1 (`size` bytes).
    pub fn laid_out(&self, size: u64) {
        let mut g = self.inner.lock().unwrap();
        g.size = size;
        g.next_gen = 1;
        // A last block shorter than a header has none: not checkable.
        g.blocks = (0..size.div_ceil(BLOCK))
            .map(|b| match (size - b * BLOCK).min(BLOCK) {
                n if n >= HEADER as u64 => pack(1, n),
                _ => 0,
            })
            .collect();
    }

    /// Nothing known (a file kept from before, or one being recreated).
    pub fn reset(&self, size: u64) {
        let mut g = self.inner.lock().unwrap();
        g.size = size;
        g.blocks.clear();
        g.blocks.resize(size.div_ceil(BLOCK) as usize, 0);
    }

    /// A write of the bytes `off..end` is about to start (reads of other bytes are still
    /// checked while it runs): its generation.
    pub fn begin_write_at(&self, off: u64, end: u64) -> u32 {
        let mut g = self.inner.lock().unwrap();
        g.next_gen = g.next_gen.wrapping_add(1).max(2);
        let gen = g.next_gen;
        g.flights.push((gen, off, end));
        gen
    }

    /// The write begun with [`FileState::begin_write_at`] wrote `n` bytes at `off` (0 when
    /// it failed).
    pub fn end_write(&self, gen: u32, off: u64, n: u64) {
        {
            let mut g = self.inner.lock().unwrap();
            let end = off + n;
            if n > 0 {
                let need = end.div_ceil(BLOCK) as usize;
                if g.blocks.len() < need {
                    g.blocks.resize(need, 0);
                }
                let mut b = off / BLOCK * BLOCK;
                while b < end {
                    let i = (b / BLOCK) as usize;
                    let s = off.max(b);
                    let e = end.min(b + BLOCK);
                    let prev = g.blocks[i];
                    g.blocks[i] = if s == b && e - b >= HEADER as u64 {
                        // Header rewritten: checkable at this generation.
                        pack(gen, e - b)
                    } else if gen_of(prev) != 0 && s < b + len_of(prev) {
                        // Bytes the old header vouched for changed under it.
                        0
                    } else {
                        prev
                    };
                    b += BLOCK;
                }
                g.size = g.size.max(end);
            }
            g.land(gen);
        }
    }

    /// A write begun with [`FileState::begin_write_at`] landed `n` bytes at `off`, where
    /// its stamps do not belong (an append after another writer moved the end): those
    /// blocks are not checked until rewritten.
    pub fn forget(&self, gen: u32, off: u64, n: u64) {
        {
            let mut g = self.inner.lock().unwrap();
            let end = off + n;
            let need = end.div_ceil(BLOCK) as usize;
            if g.blocks.len() < need {
                g.blocks.resize(need, 0);
            }
            let mut b = off / BLOCK * BLOCK;
            while b < end {
                g.blocks[(b / BLOCK) as usize] = 0;
                b += BLOCK;
            }
            g.size = g.size.max(end);
            g.land(gen);
        }
    }

    /// The state of the blocks a read of `len` bytes at `off` covers.
    pub fn snapshot(&self, off: u64, len: u64) -> Snapshot {
        let g = self.inner.lock().unwrap();
        let range = (off, off.saturating_add(len));
        let busy = g.flights.iter().any(|f| overlaps(range, (f.1, f.2)));
        let first = off.div_ceil(BLOCK);
        let last = (off + len).div_ceil(BLOCK).min(g.blocks.len() as u64);
        Snapshot {
            ended: g.ended,
            range,
            busy,
            size: g.size,
            first_block: first,
            blocks: if first < last {
                g.blocks[first as usize..last as usize].to_vec()
            } else {
                Vec::new()
            },
        }
    }

    /// Whether a write to the bytes a read covers ran while the read did (the read
    /// started at `s`): one under way at either end, or one that ended in between.
    pub fn disturbed(&self, s: &Snapshot) -> bool {
        if s.busy {
            return true;
        }
        let g = self.inner.lock().unwrap();
        if g.flights.iter().any(|f| overlaps(s.range, (f.1, f.2))) {
            return true;
        }
        if g.ended - s.ended > LOG as u64 {
            return true; // more ended than remembered: assume the worst
        }
        g.log
            .iter()
            .any(|&(n, off, end)| n > s.ended && overlaps(s.range, (off, end)))
    }
}

/// The outcome of checking one read.
#[derive(Debug, Default, Clone, Copy)]
pub struct Checked {
    pub blocks: u64,
    pub mismatches: u64,
    /// Reads not checked because a write to the same file ran meanwhile.
    pub skipped: u64,
}

/// Check `data`, what the read that `snap` was taken for returned: the snapshot holds the
/// bytes the read asked for (offset and length), so the two cannot disagree. Mismatches go
/// to `out`.
pub fn check_read(
    st: &FileState,
    snap: &Snapshot,
    id: u64,
    path: &dyn Fn() -> String,
    data: &[u8],
    out: &mut dyn FnMut(Mismatch),
) -> Checked {
    let mut c = Checked::default();
    if st.disturbed(snap) {
        c.skipped = 1;
        return c;
    }
    let (off, end) = snap.range;
    let asked = end - off;
    let got = data.len() as u64;
    if got < asked && off + got < snap.size {
        c.mismatches += 1;
        out(Mismatch {
            path: path(),
            offset: off + got,
            expected: format!(
                "{} bytes (the file's size after the writes fsbench made)",
                snap.size
            ),
            found: format!("the file ends at {} (truncated)", off + got),
        });
    }
    for (k, &s) in snap.blocks.iter().enumerate() {
        let b = (snap.first_block + k as u64) * BLOCK;
        if gen_of(s) == 0 || b >= off + got {
            continue;
        }
        let from = (b - off) as usize;
        let to = ((b + BLOCK).min(off + got) - off) as usize;
        match check_block(&data[from..to], id, b, gen_of(s)) {
            Ok(true) => c.blocks += 1,
            Ok(false) => {}
            Err((expected, found)) => {
                c.mismatches += 1;
                out(Mismatch {
                    path: path(),
                    offset: b,
                    expected,
                    found,
                });
            }
        }
    }
    c
}

/// Check a whole file on its own (no state: `--verify-only`): every block must carry a
/// header of this file (the id of its first block) at its own offset, with a valid checksum.
/// Only a regular file is read, never past its size and never on a pseudo file system
/// (see [`fsbench_base::input`]): `/proc/self/pagemap` would read for ever.
pub fn check_file(path: &std::path::Path, out: &mut dyn FnMut(Mismatch)) -> std::io::Result<u64> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let size = fsbench_base::input::regular_size(&file)?;
    let mut f = (&file).take(size.saturating_add(1));
    const CHUNK: usize = 256 * BLOCK as usize;
    let mut buf = vec![0u8; CHUNK];
    let mut id = None;
    let mut blocks = 0;
    let mut base = 0u64;
    loop {
        // Fill the chunk (short reads happen) so blocks never straddle two reads.
        let mut n = 0;
        while n < CHUNK {
            match f.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if n == 0 {
            break;
        }
        let end = base + n as u64;
        if end > size {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("holds more than its size ({size} bytes) says: it grows; not checked"),
            ));
        }
        for (i, chunk) in buf[..n].chunks(BLOCK as usize).enumerate() {
            let off = base + i as u64 * BLOCK;
            if chunk.len() < HEADER {
                continue;
            }
            let want = *id.get_or_insert_with(|| {
                u64::from_le_bytes(chunk[8..16].try_into().expect("8 bytes"))
            });
            match check_block(chunk, want, off, 0) {
                Ok(true) => blocks += 1,
                Ok(false) => out(Mismatch {
                    path: path.display().to_string(),
                    offset: off,
                    expected: "the bytes the block's header vouches for".into(),
                    found: format!("the file ends at {end} (truncated)"),
                }),
                Err((expected, found)) => out(Mismatch {
                    path: path.display().to_string(),
                    offset: off,
                    expected,
                    found,
                }),
            }
        }
        base = end;
        if n < CHUNK {
            break;
        }
    }
    Ok(blocks)
}

/// `fsbench verify DIR` and `run --verify-only`: check every regular file below the
/// directories (no link followed) on its own.
pub fn check_dirs(dirs: &[PathBuf], json: Option<&Path>) -> anyhow::Result<()> {
    // A signal stops the reading (status 130); nothing is written before the end.
    fsbench_base::cancel::install_signal_handlers();
    fsbench_base::export::check::outputs(&[(json, "--json")])?;
    let mut files = 0u64;
    let mut blocks = 0u64;
    let mut found: Vec<Mismatch> = Vec::new();
    let mut count = 0u64;
    let mut stack: Vec<PathBuf> = Vec::new();
    for d in dirs {
        let m = std::fs::symlink_metadata(d).with_context(|| format!("{}", d.display()))?;
        if m.file_type().is_symlink() {
            anyhow::bail!("{} is a symbolic link; not following it", d.display());
        }
        if !m.is_dir() && !m.is_file() {
            anyhow::bail!(
                "{}: {}; give a directory or a regular file",
                d.display(),
                fsbench_base::input::file_kind(&m)
            );
        }
        stack.push(d.clone());
    }
    while let Some(p) = stack.pop() {
        fsbench_base::cancel::check()?;
        let m = std::fs::symlink_metadata(&p).with_context(|| format!("{}", p.display()))?;
        if m.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&p)
                .with_context(|| format!("listing {}", p.display()))?
                .flatten()
                .map(|e| e.path())
                .collect();
            entries.sort();
            stack.extend(entries.into_iter().rev());
        } else if m.is_file() {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with(".fsbench") {
                continue;
            }
            files += 1;
            blocks += check_file(&p, &mut |mm| {
                count += 1;
                if found.len() < 10_000 {
                    found.push(mm);
                }
            })
            .with_context(|| format!("reading {}", p.display()))?;
        }
    }
    fsbench_base::errln!(
        "fsbench: verify: {} checked, {} in {}",
        fsbench_base::units::count(blocks, "block"),
        fsbench_base::units::count(count, "mismatch"),
        fsbench_base::units::count(files, "file"),
    );
    for m in found.iter().take(5) {
        fsbench_base::errln!(
            "fsbench: verify: {} at offset {}: expected {}, found {}",
            m.path,
            m.offset,
            m.expected,
            m.found
        );
    }
    if let Some(j) = json {
        let v = serde_json::json!({"files": files, "blocks_checked": blocks, "mismatches": count, "first": found});
        let text = serde_json::to_string_pretty(&v)? + "\n";
        fsbench_base::export::write_text(j, &text, "JSON file")?;
    }
    if count > 0 {
        anyhow::bail!("verify: {}", fsbench_base::units::count(count, "mismatch"));
    }
    if blocks == 0 && files > 0 {
        anyhow::bail!(
            "verify: none of the {} carries fsbench's block headers (written without --verify?)",
            fsbench_base::units::count(files, "file")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_mode_says_which_reads_are_checked() {
        assert_eq!(Mode::of(false, false), Mode::Off);
        assert!(!Mode::Off.on() && !Mode::Off.checks(true));
        let flowops = Mode::of(false, true);
        assert!(flowops.on() && flowops.checks(true) && !flowops.checks(false));
        let all = Mode::of(true, false);
        assert!(all.on() && all.checks(false) && all.checks(true));
    }

    fn written(id: u64, gen: u32, off: u64, len: usize) -> Vec<u8> {
        let mut buf: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        stamp(gen, id, off, &mut buf);
        buf
    }

    #[test]
    fn stamped_blocks_check_and_corruption_is_caught() {
        let buf = written(5, 2, 0, 3 * 4096 + 100);
        for b in 0..4u64 {
            let s = (b * BLOCK) as usize;
            let e = (s + BLOCK as usize).min(buf.len());
            assert_eq!(check_block(&buf[s..e], 5, b * BLOCK, 2), Ok(true));
        }
        // A flipped byte, a swapped block, another file, a stale generation.
        let mut flip = buf.clone();
        flip[4096 + 900] ^= 0x40;
        assert!(check_block(&flip[4096..8192], 5, 4096, 0).is_err());
        assert!(check_block(&buf[0..4096], 5, 4096, 0)
            .unwrap_err()
            .1
            .contains("misplaced"));
        assert!(check_block(&buf[0..4096], 6, 0, 0).is_err());
        assert!(check_block(&buf[0..4096], 5, 0, 3)
            .unwrap_err()
            .1
            .contains("stale"));
        // Too little read for the checksum: the header is still checked.
        assert_eq!(check_block(&buf[0..100], 5, 0, 2), Ok(true));
        assert!(check_block(&buf[0..100], 5, 0, 3).is_err());
        assert_eq!(check_block(&buf[0..20], 5, 0, 2), Ok(false));
    }

    #[test]
    fn only_writes_to_the_bytes_read_disturb_a_read() {
        let st = FileState::default();
        st.laid_out(65536);
        // In flight elsewhere: the read of other bytes is checked.
        let g = st.begin_write_at(0, 4096);
        let snap = st.snapshot(8192, 4096);
        assert!(!st.disturbed(&snap));
        // In flight over the bytes read.
        let snap2 = st.snapshot(0, 8192);
        assert!(st.disturbed(&snap2));
        st.end_write(g, 0, 4096);
        // Began and ended during the read, over its bytes.
        let snap3 = st.snapshot(8192, 4096);
        let g2 = st.begin_write_at(10_000, 10_100);
        st.end_write(g2, 10_000, 100);
        assert!(st.disturbed(&snap3));
        // ... and elsewhere: not.
        let snap4 = st.snapshot(8192, 4096);
        let g3 = st.begin_write_at(30_000, 30_100);
        st.end_write(g3, 30_000, 100);
        assert!(!st.disturbed(&snap4));
        // An append in flight covers everything from the end on.
        let g4 = st.begin_write_at(65536, u64::MAX);
        assert!(st.disturbed(&st.snapshot(60_000, 8192)));
        assert!(!st.disturbed(&st.snapshot(0, 8192)));
        st.forget(g4, 65536, 10);
    }

    #[test]
    fn unaligned_writes_make_blocks_uncheckable_until_rewritten() {
        let st = FileState::default();
        st.laid_out(10_000);
        let g = st.begin_write_at(0, u64::MAX);
        // Overwrites bytes of block 1 that its header vouches for.
        st.end_write(g, 4096 + 50, 100);
        let snap = st.snapshot(0, 10_000);
        assert_eq!(gen_of(snap.blocks[0]), 1);
        assert_eq!(snap.blocks[1], 0);
        // An append past the short last block's vouched bytes keeps it checkable.
        let g2 = st.begin_write_at(0, u64::MAX);
        st.end_write(g2, 10_000, 500);
        let snap = st.snapshot(0, 10_500);
        assert_eq!(gen_of(snap.blocks[2]), 1);
        assert_eq!(snap.size, 10_500);
        // A laid-out last block shorter than a header is not checkable, nor after an
        // append to it.
        let t = FileState::default();
        t.laid_out(4096 + 20);
        assert_eq!(t.snapshot(0, 8192).blocks[1], 0);
        let g = t.begin_write_at(0, u64::MAX);
        t.end_write(g, 4096 + 20, 100);
        assert_eq!(t.snapshot(0, 8192).blocks[1], 0);
        // A write from the block's start makes it checkable at its generation.
        let g3 = st.begin_write_at(0, u64::MAX);
        st.end_write(g3, 4096, 4096);
        assert_eq!(gen_of(st.snapshot(4096, 4096).blocks[0]), g3);
    }
}
