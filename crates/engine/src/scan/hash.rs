//! Content hashes of regular files for `scan --hash` and `diff`.
//!
//! BLAKE3 is the default: it runs at several GB/s per core, so hashing is
//! limited by reading, not by the hash. SHA-1 is offered because published
//! commonality studies (lookaside caching of source trees) used it, and
//! because `sha1sum` can check it.

use std::ffi::CStr;
use std::io::{self, Read};
use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd};

use sha1::Digest;

/// A content hash algorithm.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum HashAlgo {
    Blake3,
    Sha1,
}

impl HashAlgo {
    pub fn name(self) -> &'static str {
        match self {
            HashAlgo::Blake3 => "blake3",
            HashAlgo::Sha1 => "sha1",
        }
    }

    pub fn parse(s: &str) -> Option<HashAlgo> {
        match s {
            "blake3" => Some(HashAlgo::Blake3),
            "sha1" => Some(HashAlgo::Sha1),
            _ => None,
        }
    }

    /// Hash everything `r` yields, reading through `buf`.
    pub fn hash_reader(self, r: &mut impl Read, buf: &mut [u8]) -> io::Result<(Vec<u8>, u64)> {
        self.hash_bounded(r, u64::MAX, buf)
    }

    /// Hash at most `size` bytes of `r`; an `r` that holds more is refused (see
    /// [`fsbench_base::input::read_bounded`]).
    fn hash_bounded(
        self,
        r: &mut impl Read,
        size: u64,
        buf: &mut [u8],
    ) -> io::Result<(Vec<u8>, u64)> {
        match self {
            HashAlgo::Blake3 => {
                let mut h = blake3::Hasher::new();
                let n = fsbench_base::input::read_bounded(r, size, buf, &mut |b| {
                    h.update(b);
                })?;
                Ok((h.finalize().as_bytes().to_vec(), n))
            }
            HashAlgo::Sha1 => {
                let mut h = sha1::Sha1::new();
                let n = fsbench_base::input::read_bounded(r, size, buf, &mut |b| h.update(b))?;
                Ok((h.finalize().to_vec(), n))
            }
        }
    }

    /// Hash the regular file `name` inside `dir` (opened without following a
    /// symbolic link). Returns the hash and the number of bytes read. A file on a pseudo
    /// file system (`/proc`, `/sys` ...), or one holding more than its size says, is refused
    /// (an error, so the scan stores it without a hash and says why): reading
    /// `/proc/self/pagemap` or `/proc/kcore` would not end.
    pub fn hash_at(
        self,
        dir: BorrowedFd<'_>,
        name: &CStr,
        buf: &mut [u8],
    ) -> io::Result<(Vec<u8>, u64)> {
        use std::os::fd::AsRawFd;
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // The entry may have been replaced since the walk's stat: hash only a regular file.
        let mut f = std::fs::File::from(fd);
        let size = fsbench_base::input::regular_size(&f)?;
        self.hash_bounded(&mut f, size, buf)
    }
}

/// Lower-case hexadecimal, as `sha1sum` and `b3sum` print.
pub fn hex(h: &[u8]) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        let mut buf = [0u8; 7];
        let (h, n) = HashAlgo::Sha1
            .hash_reader(&mut &b"abc"[..], &mut buf)
            .unwrap();
        assert_eq!(n, 3);
        assert_eq!(hex(&h), "a9993e364706816aba3e25717850c26c9cd0d89d");
        let (h, _) = HashAlgo::Blake3
            .hash_reader(&mut &b""[..], &mut buf)
            .unwrap();
        assert_eq!(
            hex(&h),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
        // A buffer smaller than the input still hashes all of it.
        let data = vec![7u8; 100];
        let (a, _) = HashAlgo::Blake3
            .hash_reader(&mut &data[..], &mut buf)
            .unwrap();
        assert_eq!(a, blake3::hash(&data).as_bytes().to_vec());
    }
}
