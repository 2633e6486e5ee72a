//! The bytes a stream writes: its content generator's data at a position, and fio's
//! per-sector scramble.

use fsbench_model::model::stream::Stream;

/// Fill `out`, about to be written at `off` of file `fi`, with the stream's content there.
pub(super) fn shape_into(s: &Stream, seed: u64, fi: usize, off: u64, out: &mut [u8]) {
    if let Some(c) = s.content {
        fsbench_model::content::Generator::new(c, seed)
            .with_chunk(s.compress_chunk as usize)
            .fill_at(fi as u64, off, out);
    }
}

/// fio's `small_content_scramble`: in each 512-byte sector of a write at `off`, the
/// sector's offset at the start of one of its first eight 64-byte lines (picked by the
/// time and offset), and the time (seconds, nanoseconds) at the end of its first line.
pub(super) fn scramble(out: &mut [u8], off: u64, stamp_ns: u64) {
    let (sec, nsec) = (stamp_ns / 1_000_000_000, stamp_ns % 1_000_000_000);
    let line = (((nsec ^ off) & 7) << 6) as usize;
    for (i, sector) in out.chunks_exact_mut(512).enumerate() {
        let at = off + 512 * i as u64;
        sector[line..line + 8].copy_from_slice(&at.to_ne_bytes());
        sector[48..56].copy_from_slice(&sec.to_ne_bytes());
        sector[56..64].copy_from_slice(&nsec.to_ne_bytes());
    }
}
