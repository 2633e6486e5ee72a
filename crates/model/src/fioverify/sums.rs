//! The checksums of fio's `verify=` types, computed over the same bytes and stored in the
//! same byte order as fio 3.33 stores them (`crc/*.c`, `verify.c`'s `fill_*`), so that a
//! block either tool wrote checks in the other. Where fio's function is not the textbook
//! one, the difference is fio's and is kept:
//!
//! - `crc32c` is CRC-32C without the final inversion (fio's `crc32c_sw` and the SSE4.2
//!   loop both return the register as it stands);
//! - `crc32` is the non-reflected CRC of POSIX `cksum` (poly 0x04C11DB7), from 0 and with
//!   nothing appended or inverted; `crc64` the reflected CRC with poly 0x95AC9329AC4BC9B5
//!   from 0 (CRC-64/REDIS); `crc16` CRC-16/ARC; `crc7` CRC-7/MMC;
//! - `sha1` stores its five state words in host order (the digest's words byte-swapped on
//!   a little-endian host);
//! - `sha256` appends the message length in host order, not big-endian, and leaves in its
//!   64-byte field the last padded block with its first 8 bytes replaced by the low byte
//!   of each state word (fio's `sha256_final` copies the words into a byte array);
//! - `sha512` (fio 3.33 to 3.38) never finalizes: its 128-byte field is what the update
//!   left in its buffer, the message's last bytes (fio 3.39 added the final step);
//! - `md5`, `sha3-*` and `xxhash` (XXH32, seed 1) are the textbook functions.

use sha2::digest::generic_array::GenericArray;

/// A 256-entry table for a CRC of `W` bits, by the bitwise step `step` over a byte.
const fn table<const W: u32>(reflected: bool, poly: u64) -> [u64; 256] {
    let mut t = [0u64; 256];
    let top = 1u64 << (W - 1);
    let mask = if W == 64 { u64::MAX } else { (1u64 << W) - 1 };
    let mut i = 0;
    while i < 256 {
        let mut c = if reflected {
            i as u64
        } else {
            (i as u64) << (W - 8)
        };
        let mut k = 0;
        while k < 8 {
            c = if reflected {
                if c & 1 != 0 {
                    (c >> 1) ^ poly
                } else {
                    c >> 1
                }
            } else if c & top != 0 {
                ((c << 1) ^ poly) & mask
            } else {
                (c << 1) & mask
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC32: [u64; 256] = table::<32>(false, 0x04C1_1DB7);
static CRC64: [u64; 256] = table::<64>(true, 0x95AC_9329_AC4B_C9B5);
static CRC16: [u64; 256] = table::<16>(true, 0xA001);
/// CRC-7 in the top seven bits of a byte (poly 0x09 shifted up), as fio's
/// `crc7_syndrome_table` indexes it: `table[(crc << 1) ^ byte]`.
static CRC7: [u64; 256] = table::<8>(false, 0x12);

/// fio's `fio_crc32c`: CRC-32C, not inverted at the end.
pub fn crc32c(d: &[u8]) -> u32 {
    !crc32c::crc32c(d)
}

/// fio's `fio_crc32`.
pub fn crc32(d: &[u8]) -> u32 {
    d.iter().fold(0u32, |c, &b| {
        (c << 8) ^ CRC32[((c >> 24) as u8 ^ b) as usize] as u32
    })
}

/// fio's `fio_crc64`.
pub fn crc64(d: &[u8]) -> u64 {
    d.iter()
        .fold(0u64, |c, &b| CRC64[((c as u8) ^ b) as usize] ^ (c >> 8))
}

/// fio's `fio_crc16`.
pub fn crc16(d: &[u8]) -> u16 {
    d.iter().fold(0u16, |c, &b| {
        (c >> 8) ^ CRC16[((c as u8) ^ b) as usize] as u16
    })
}

/// fio's `fio_crc7`: seven bits.
pub fn crc7(d: &[u8]) -> u8 {
    d.iter()
        .fold(0u8, |c, &b| (CRC7[((c << 1) ^ b) as usize] as u8) >> 1)
}

/// fio's `sha1` field: the state words in host order.
pub fn sha1(d: &[u8]) -> [u8; 20] {
    use sha1::Digest;
    let be: [u8; 20] = sha1::Sha1::digest(d).into();
    let mut out = [0u8; 20];
    for (o, w) in out.chunks_exact_mut(4).zip(be.chunks_exact(4)) {
        let v = u32::from_be_bytes(w.try_into().expect("4 bytes"));
        o.copy_from_slice(&v.to_ne_bytes());
    }
    out
}

/// fio's `md5` field: the textbook digest.
pub fn md5(d: &[u8]) -> [u8; 16] {
    use md5::Digest;
    md5::Md5::digest(d).into()
}

const SHA256_H: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// fio's `sha256` field (64 bytes): see the module's comment.
pub fn sha256(d: &[u8]) -> [u8; 64] {
    let mut st = SHA256_H;
    let full = d.len() / 64 * 64;
    for b in d[..full].chunks_exact(64) {
        sha2::compress256(&mut st, &[*GenericArray::from_slice(b)]);
    }
    let rest = &d[full..];
    let mut last = [0u8; 128];
    last[..rest.len()].copy_from_slice(rest);
    last[rest.len()] = 0x80;
    let n = if rest.len() < 56 { 64 } else { 128 };
    // fio counts bytes in 32 bits and appends the bit count in host order.
    let bits = u64::from(d.len() as u32) << 3;
    last[n - 8..n].copy_from_slice(&bits.to_ne_bytes());
    for b in last[..n].chunks_exact(64) {
        sha2::compress256(&mut st, &[*GenericArray::from_slice(b)]);
    }
    let mut out = [0u8; 64];
    out.copy_from_slice(&last[n - 64..n]);
    for (o, w) in out.iter_mut().zip(st) {
        *o = w as u8;
    }
    out
}

const SHA512_H: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

/// fio 3.33's `sha512` field: `out` is the update's buffer (fio hashes in place, in the
/// block's own field), holding what the update left there; the block function runs as in
/// fio, its result unused.
pub fn sha512_into(d: &[u8], out: &mut [u8; 128]) {
    if d.len() < 128 {
        out[..d.len()].copy_from_slice(d);
        return;
    }
    let mut st = SHA512_H;
    out.copy_from_slice(&d[..128]);
    sha2::compress512(&mut st, &[*GenericArray::from_slice(&out[..])]);
    let mut i = 128;
    while i + 127 < d.len() {
        sha2::compress512(&mut st, &[*GenericArray::from_slice(&d[i..i + 128])]);
        i += 128;
    }
    out[..d.len() - i].copy_from_slice(&d[i..]);
    std::hint::black_box(st);
}

/// XXH32 with seed 1, as fio's `XXH32_init(1)`.
pub fn xxhash(d: &[u8]) -> u32 {
    xxhash_rust::xxh32::xxh32(d, 1)
}

/// The SHA3 digest of `bits` (224, 256, 384 or 512) into `out`.
pub fn sha3(bits: u32, d: &[u8], out: &mut [u8]) {
    use sha3::Digest;
    match bits {
        224 => out.copy_from_slice(&sha3::Sha3_224::digest(d)),
        256 => out.copy_from_slice(&sha3::Sha3_256::digest(d)),
        384 => out.copy_from_slice(&sha3::Sha3_384::digest(d)),
        _ => out.copy_from_slice(&sha3::Sha3_512::digest(d)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn crc_tables_are_fios() {
        // Entries of fio's own tables (crc/crc32.c, crc64.c, crc16.c, crc7.c).
        assert_eq!(CRC32[1], 0x04C11DB7);
        assert_eq!(CRC32[128], 0x690CE0EE);
        assert_eq!(CRC64[1], 0x7ad870c830358979);
        assert_eq!(CRC64[2], 0xf5b0e190606b12f2);
        assert_eq!(CRC16[1], 0xC0C1);
        assert_eq!(CRC16[2], 0xC181);
        // fio's CRC-7 table holds the register shifted down to its seven bits.
        let crc7: Vec<u64> = CRC7.iter().map(|v| v >> 1).collect();
        assert_eq!(
            &crc7[..9],
            &[0x00, 0x09, 0x12, 0x1b, 0x24, 0x2d, 0x36, 0x3f, 0x48]
        );
        assert_eq!(crc7[16], 0x19);
    }

    #[test]
    fn crcs_match_the_catalogued_check_values() {
        // The check value of "123456789" for each CRC's catalogued parameters.
        let d = b"123456789";
        assert_eq!(crc32c(d), !0xE306_9283); // CRC-32C, uninverted
        assert_eq!(crc32(d), !0x765E_7680); // CRC-32/POSIX without its final inversion
        assert_eq!(crc64(d), 0xe9c6_d914_c4b8_d9ca); // CRC-64/REDIS
        assert_eq!(crc16(d), 0xBB3D); // CRC-16/ARC
        assert_eq!(crc7(d), 0x75); // CRC-7/MMC
        assert_eq!(crc32c(b""), !0);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn digests_match_known_vectors_in_fios_byte_order() {
        assert_eq!(hex(&md5(b"abc")), "900150983cd24fb0d6963f7d28e17f72");
        // SHA-1 a9993e36 4706816a ba3e2571 7850c26c 9cd0d89d, each word in host order.
        assert_eq!(
            hex(&sha1(b"abc")),
            "363e99a96a81064771253eba6cc250789dd8d09c"
        );
        assert_eq!(xxhash(b""), 0x0b2c_b792); // XXH32("", 1)
        let d: Vec<u8> = (0..100u8).collect();
        assert_eq!(xxhash(&d), 0x858a_fcd2);
        let mut s = [0u8; 32];
        sha3(256, b"abc", &mut s);
        assert_eq!(
            hex(&s),
            "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"
        );
    }

    #[test]
    fn sha256_keeps_fios_padding_and_field() {
        // "abc" padded as fio pads it (length in host order), through the textbook block
        // function: an independent implementation of fio's steps gave this field.
        let f = sha256(b"abc");
        assert_eq!(hex(&f[..8]), "ecd746f40a9bf568");
        // The rest of the field is the last padded block: "abc", 0x80, zeros, the bit
        // count (24) in host order.
        assert_eq!(&f[8..56], &[0u8; 48][..]);
        assert_eq!(&f[56..], &24u64.to_ne_bytes());
        // A message of 3,952 bytes (a 4 KiB block less fio's header and field) ends in
        // a block holding its last 48 bytes, 0x80 and the count: one padded block.
        let d: Vec<u8> = (0..3952u32).map(|i| (i * 7) as u8).collect();
        let f = sha256(&d);
        assert_eq!(&f[8..48], &d[3952 - 40..]);
        assert_eq!(f[48], 0x80);
        assert_eq!(&f[56..], &(3952u64 * 8).to_ne_bytes());
    }

    #[test]
    fn sha512_leaves_the_update_buffer_as_fio_3_33() {
        let d: Vec<u8> = (0..3928u32).map(|i| (i * 13) as u8).collect();
        let mut out = [0u8; 128];
        sha512_into(&d, &mut out);
        // 3928 = 30 × 128 + 88: the last 88 bytes, then bytes 88..128 of the first copy.
        assert_eq!(&out[..88], &d[3840..]);
        assert_eq!(&out[88..], &d[88..128]);
    }
}
