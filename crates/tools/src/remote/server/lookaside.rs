//! The lookaside trees: an index of local files by size and content hash, and the
//! server's side of a lookup in it.

use super::{copy_into, version, Fs};
use crate::remote::state::{LookasideEntry, StateDir};
use anyhow::Context;
use fsbench_base::daemon::state::read_json;
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::{fs, io};

/// Hash a file's content (BLAKE3, hexadecimal): a regular file, read no further than its
/// size (one replaced by a FIFO since it was listed is refused, not waited on).
pub fn hash_file(path: &Path) -> io::Result<String> {
    let f = fsbench_base::input::open(path)?;
    let size = fsbench_base::input::regular_size(&f)?;
    let mut buf = vec![0u8; 1 << 20];
    let (h, _) = fsbench_engine::scan::hash::HashAlgo::Blake3
        .hash_reader(&mut io::Read::take(f, size), &mut buf)?;
    Ok(fsbench_engine::scan::hash::hex(&h))
}

/// Read the lookaside index written by `remote create`.
pub(super) fn load_lookaside(sd: &StateDir) -> HashMap<(u64, String), Vec<LookasideEntry>> {
    let mut map: HashMap<(u64, String), Vec<LookasideEntry>> = HashMap::new();
    let entries: Vec<LookasideEntry> = read_json(&sd.lookaside()).unwrap_or_default();
    for e in entries {
        map.entry((e.size, e.hash.clone())).or_default().push(e);
    }
    map
}

/// Index every regular file below `dirs` by (size, BLAKE3 hash).
pub fn index_lookaside(dirs: &[PathBuf]) -> anyhow::Result<Vec<LookasideEntry>> {
    let mut out = Vec::new();
    for d in dirs {
        if d.is_file() {
            out.extend(index_of_snapshot(d)?);
            continue;
        }
        let mut stack = vec![d.clone()];
        while let Some(dir) = stack.pop() {
            let rd = fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
            for e in rd.flatten() {
                let Ok(t) = e.file_type() else { continue };
                let p = e.path();
                if t.is_dir() {
                    stack.push(p);
                } else if t.is_file() {
                    let Ok(m) = fs::metadata(&p) else { continue };
                    let Ok(hash) = hash_file(&p) else { continue };
                    out.push(LookasideEntry {
                        path: p,
                        size: m.size(),
                        mtime_ns: version(&m).0,
                        hash,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// The lookaside entries of a `scan --hash` snapshot (BLAKE3): its regular files, at
/// their place below the scanned directory. A relative scan root is looked for beside the
/// snapshot file, then in the current directory.
pub fn index_of_snapshot(snap: &Path) -> anyhow::Result<Vec<LookasideEntry>> {
    use fsbench_engine::scan::snapshot::{Kind, Snapshot};
    let stream = Snapshot::open(snap)
        .with_context(|| format!("reading the lookaside snapshot {}", snap.display()))?;
    let h = stream.header().clone();
    if h.hash.as_deref() != Some("blake3") {
        anyhow::bail!(
            "lookaside snapshot {} has {}: write it with `fsbench scan DIR --hash -o FILE` (BLAKE3)",
            snap.display(),
            match &h.hash {
                Some(a) => format!("{a} hashes, not BLAKE3"),
                None => "no content hashes".into(),
            }
        );
    }
    let given = PathBuf::from(&h.root);
    let root = if given.is_absolute() {
        given
    } else {
        let beside = snap.parent().unwrap_or(Path::new(".")).join(&given);
        if beside.is_dir() {
            beside
        } else {
            given
        }
    };
    let root = root.canonicalize().with_context(|| {
        format!(
            "the tree {} that lookaside snapshot {} describes is not here",
            h.root,
            snap.display()
        )
    })?;
    let mut out = Vec::new();
    for e in stream {
        let e = e.with_context(|| format!("reading {}", snap.display()))?;
        let (Kind::File, Some(hash)) = (e.kind, &e.hash) else {
            continue;
        };
        out.push(LookasideEntry {
            path: root.join(std::ffi::OsStr::from_bytes(&e.path)),
            size: e.size,
            mtime_ns: e.mtime.sec as i128 * 1_000_000_000 + e.mtime.nsec as i128,
            hash: fsbench_engine::scan::hash::hex(hash),
        });
    }
    Ok(out)
}

impl Fs {
    /// The server's hash of a file, computed once per (inode, mtime, size).
    pub(super) fn server_hash(&mut self, path: &Path, m: &fs::Metadata) -> Option<String> {
        let key = (m.dev(), m.ino(), version(m));
        if let Some(h) = self.hashes.get(&key) {
            return Some(h.clone());
        }
        let h = hash_file(path).ok()?;
        self.hashes.insert(key, h.clone());
        Some(h)
    }

    /// Whether a lookaside file with this size and hash is still as it was indexed.
    pub(super) fn lookaside_has(&self, size: u64, hash: &str) -> bool {
        self.lookaside
            .get(&(size, hash.to_string()))
            .is_some_and(|cands| {
                cands.iter().any(|e| {
                    fs::metadata(&e.path)
                        .is_ok_and(|m| m.size() == e.size && version(&m).0 == e.mtime_ns)
                })
            })
    }

    /// Block protocol: does a lookaside tree hold this version of the file? Asked of
    /// the server once per version (one round trip for the hash, from `t`).
    pub(super) fn block_lookaside_hit(&mut self, t: &mut f64, ino: u64, m: &fs::Metadata) -> bool {
        if self.lookaside.is_empty() {
            return false;
        }
        let v = version(m);
        if let Some(&(ver, hit)) = self.block_lookaside.get(&ino) {
            if ver == v {
                return hit;
            }
        }
        *t = self.round_trip(*t);
        let hit = match self.path_of(ino) {
            Ok(rel) => {
                let p = self.abs(&rel);
                self.server_hash(&p, m)
                    .is_some_and(|h| self.lookaside_has(m.size(), &h))
            }
            Err(_) => false,
        };
        self.shared.count(|s| {
            if hit {
                s.lookaside_hits += 1
            } else {
                s.lookaside_misses += 1
            }
        });
        self.block_lookaside.insert(ino, (v, hit));
        hit
    }

    /// Copy a lookaside file with this size and hash into `dst`, if one is still
    /// as it was indexed; the bytes copied.
    pub(super) fn copy_from_lookaside(&self, size: u64, hash: &str, dst: &Path) -> Option<u64> {
        let cands = self.lookaside.get(&(size, hash.to_string()))?;
        for e in cands {
            let Ok(m) = fs::metadata(&e.path) else {
                continue;
            };
            if m.size() != e.size || version(&m).0 != e.mtime_ns {
                continue;
            }
            if let Ok(n) = copy_into(&e.path, dst) {
                if n == size {
                    return Some(n);
                }
            }
        }
        None
    }
}
