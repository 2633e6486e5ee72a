//! File data and the client cache: opening (a whole-file fetch or the block protocol),
//! reads, writes, storing back, and eviction.

use super::encode::{errno, open_bytes, Out};
use super::{copy_into, h_meta, version, Cached, Fs, Handle};
use crate::remote::model::CHUNK;
use crate::remote::state::Protocol;
use fsbench_base::fuse::abi::WriteOut;
use fsbench_base::fuse::read_full_at;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use zerocopy::IntoBytes;

impl Fs {
    pub(super) fn open(&mut self, now: f64, ino: u64, flags: u32) -> Out {
        let write = (flags as i32 & libc::O_ACCMODE) != libc::O_RDONLY;
        if write && !self.writable {
            return Out::err(libc::EROFS);
        }
        let Ok(rel) = self.path_of(ino) else {
            return Out::err(libc::ENOENT);
        };
        let path = self.abs(&rel);
        let m = match fs::metadata(&path) {
            Ok(m) => m,
            Err(e) => return Out::at(Some(self.round_trip(now)), Err(errno(&e))),
        };
        if !m.is_file() {
            return Out::at(Some(self.round_trip(now)), Err(libc::EISDIR));
        }
        match self.protocol {
            Protocol::Block => {
                let due = Some(self.round_trip(now));
                let v = version(&m);
                if self.chunk_versions.get(&ino) != Some(&v) {
                    self.drop_chunks(ino);
                    self.chunk_versions.insert(ino, v);
                }
                self.attrs.insert(ino, now);
                let mode = if write { libc::O_RDWR } else { libc::O_RDONLY };
                let file = match self.open_beneath(&rel, mode) {
                    Ok(f) => f,
                    Err(e) => return Out::at(due, Err(errno(&e))),
                };
                let fh = self.new_fh();
                self.files.insert(fh, Handle { ino, file, write });
                Out::at(due, Ok(open_bytes(fh)))
            }
            Protocol::WholeFile => {
                let (due, r) = self.whole_file_fetch(now, ino, &path, &m);
                if let Err(e) = r {
                    return Out::at(due, Err(e));
                }
                let c = self.cached.get_mut(&ino).expect("just cached");
                let file = match OpenOptions::new().read(true).write(write).open(&c.path) {
                    Ok(f) => f,
                    Err(e) => return Out::at(due, Err(errno(&e))),
                };
                c.open += 1;
                let fh = self.new_fh();
                self.files.insert(fh, Handle { ino, file, write });
                self.evict_files();
                Out::at(due, Ok(open_bytes(fh)))
            }
        }
    }

    /// Make sure the client cache holds a valid copy of `ino`: a hit costs nothing;
    /// otherwise the file comes from a lookaside tree (one round trip to ask the
    /// server for its hash) or over the network (round trip + size / bandwidth).
    pub(super) fn whole_file_fetch(
        &mut self,
        now: f64,
        ino: u64,
        path: &Path,
        m: &fs::Metadata,
    ) -> (Option<f64>, Result<(), i32>) {
        self.tick += 1;
        let tick = self.tick;
        if self.cached_valid(ino, m) {
            let c = self.cached.get_mut(&ino).expect("valid entry");
            c.last_used = tick;
            self.shared.count(|s| s.file_cache_hits += 1);
            return (None, Ok(()));
        }
        self.shared.count(|s| s.file_cache_misses += 1);
        if let Some(old) = self.cached.remove(&ino) {
            self.cached_bytes -= old.size;
        }
        let size = m.size();
        let dst = self.cache_dir.join(ino.to_string());
        let mut t = now;
        let mut from_lookaside = false;
        if !self.lookaside.is_empty() {
            // Ask the server for the file's hash.
            t = self.round_trip(t);
            if let Some(hash) = self.server_hash(path, m) {
                if let Some(bytes) = self.copy_from_lookaside(size, &hash, &dst) {
                    from_lookaside = true;
                    self.shared.count(|s| {
                        s.lookaside_hits += 1;
                        s.lookaside_bytes += bytes;
                    });
                }
            }
            if !from_lookaside {
                self.shared.count(|s| s.lookaside_misses += 1);
            }
        }
        if !from_lookaside {
            t = {
                let rtt = self.rtt();
                self.link.data_request(&self.net, t, size, rtt)
            };
            self.shared.count(|s| {
                s.round_trips += 1;
                s.bytes_fetched += size;
            });
            if let Err(e) = copy_into(path, &dst) {
                return (Some(t), Err(errno(&e)));
            }
        }
        self.cached.insert(
            ino,
            Cached {
                path: dst,
                size,
                version: version(m),
                last_used: tick,
                open: 0,
                dirty: false,
            },
        );
        self.cached_bytes += size;
        self.attrs.insert(ino, now);
        (Some(t), Ok(()))
    }

    pub(super) fn evict_files(&mut self) {
        while self.cached_bytes > self.cache_size {
            let victim = self
                .cached
                .iter()
                .filter(|(_, c)| c.open == 0 && !c.dirty)
                .min_by_key(|(_, c)| c.last_used)
                .map(|(&i, _)| i);
            let Some(ino) = victim else { break };
            let c = self.cached.remove(&ino).expect("victim exists");
            let _ = fsbench_base::owned::path::remove_file(&c.path);
            self.cached_bytes -= c.size;
            self.shared.count(|s| s.cache_evictions += 1);
        }
    }

    /// Empty the client's caches, as a client whose machine restarted: every cached file
    /// not open or waiting to be sent back, every chunk, every name, attribute and listing.
    pub(super) fn drop_client_cache(&mut self) {
        self.names.clear();
        self.attrs.clear();
        self.listings.clear();
        let victims: Vec<u64> = self
            .cached
            .iter()
            .filter(|(_, c)| c.open == 0 && !c.dirty)
            .map(|(&i, _)| i)
            .collect();
        for ino in victims {
            let c = self.cached.remove(&ino).expect("victim exists");
            let _ = fsbench_base::owned::path::remove_file(&c.path);
            self.cached_bytes -= c.size;
        }
        self.chunks.clear();
        self.chunk_lru.clear();
        self.chunk_versions.clear();
        self.block_lookaside.clear();
    }

    pub(super) fn drop_chunks(&mut self, ino: u64) {
        let keys: Vec<(u64, u64)> = self
            .chunks
            .keys()
            .filter(|(i, _)| *i == ino)
            .copied()
            .collect();
        for k in keys {
            if let Some(t) = self.chunks.remove(&k) {
                self.chunk_lru.remove(&t);
            }
        }
    }

    /// Is the chunk cached? Marks it used (and cached) either way.
    pub(super) fn touch_chunk(&mut self, key: (u64, u64)) -> bool {
        self.tick += 1;
        let hit = match self.chunks.insert(key, self.tick) {
            Some(old) => {
                self.chunk_lru.remove(&old);
                true
            }
            None => false,
        };
        self.chunk_lru.insert(self.tick, key);
        while self.chunks.len() as u64 * CHUNK > self.cache_size {
            let Some((_, k)) = self.chunk_lru.pop_first() else {
                break;
            };
            self.chunks.remove(&k);
            self.shared.count(|s| s.cache_evictions += 1);
        }
        hit
    }

    pub(super) fn read(&mut self, now: f64, fh: u64, off: u64, size: u32) -> Out {
        let Some(h) = self.files.get(&fh) else {
            return Out::err(libc::EBADF);
        };
        let ino = h.ino;
        let meta = match h.file.metadata() {
            Ok(m) => m,
            Err(e) => return Out::err(errno(&e)),
        };
        let len = meta.len();
        let n = (size as u64).min(len.saturating_sub(off)) as usize;
        let mut buf = vec![0u8; n];
        let got = match read_full_at(&h.file, &mut buf, off) {
            Ok(g) => g,
            Err(e) => return Out::err(errno(&e)),
        };
        buf.truncate(got);
        match self.protocol {
            Protocol::WholeFile => {
                self.tick += 1;
                let tick = self.tick;
                if let Some(c) = self.cached.get_mut(&ino) {
                    c.last_used = tick;
                }
                Out::now(buf)
            }
            Protocol::Block => {
                let mut t = now;
                let mut waited = false;
                if got > 0 {
                    for chunk in off / CHUNK..=(off + got as u64 - 1) / CHUNK {
                        if self.touch_chunk((ino, chunk)) {
                            self.shared.count(|s| s.chunk_cache_hits += 1);
                        } else if self.block_lookaside_hit(&mut t, ino, &meta) {
                            // The chunk is read from the local copy: nothing crosses the link.
                            let bytes = CHUNK.min(len - chunk * CHUNK);
                            waited |= t > now;
                            self.shared.count(|s| {
                                s.chunk_cache_misses += 1;
                                s.lookaside_bytes += bytes;
                            });
                        } else {
                            let bytes = CHUNK.min(len - chunk * CHUNK);
                            t = {
                                let rtt = self.rtt();
                                self.link.data_request(&self.net, t, bytes, rtt)
                            };
                            waited = true;
                            self.shared.count(|s| {
                                s.chunk_cache_misses += 1;
                                s.round_trips += 1;
                                s.bytes_fetched += bytes;
                            });
                        }
                    }
                }
                Out::at(waited.then_some(t), Ok(buf))
            }
        }
    }

    pub(super) fn write(&mut self, now: f64, fh: u64, off: u64, data: &[u8]) -> Out {
        let Some(h) = self.files.get(&fh) else {
            return Out::err(libc::EBADF);
        };
        if !h.write {
            return Out::err(libc::EBADF);
        }
        let ino = h.ino;
        if let Err(e) = h.file.write_all_at(data, off) {
            return Out::err(errno(&e));
        }
        let out = WriteOut {
            size: data.len() as u32,
            padding: 0,
        };
        let out = out.as_bytes().to_vec();
        match self.protocol {
            Protocol::WholeFile => {
                let size = h.file.metadata().map(|m| m.len()).unwrap_or(0);
                self.tick += 1;
                let tick = self.tick;
                if let Some(c) = self.cached.get_mut(&ino) {
                    c.dirty = true;
                    c.last_used = tick;
                    self.cached_bytes = self.cached_bytes - c.size + size;
                    c.size = size;
                }
                Out::now(out)
            }
            Protocol::Block => {
                // Write-through, one request per chunk touched.
                let mut t = now;
                let end = off + data.len() as u64;
                let mut pos = off;
                while pos < end {
                    let chunk = pos / CHUNK;
                    let stop = ((chunk + 1) * CHUNK).min(end);
                    t = {
                        let rtt = self.rtt();
                        self.link.data_request(&self.net, t, stop - pos, rtt)
                    };
                    let bytes = stop - pos;
                    self.shared.count(|s| {
                        s.round_trips += 1;
                        s.bytes_sent += bytes;
                    });
                    self.touch_chunk((ino, chunk));
                    pos = stop;
                }
                if let Ok(m) = h_meta(&self.files, fh) {
                    self.own_change(ino, &m);
                }
                Out::at(Some(t), Ok(out))
            }
        }
    }

    /// Whole-file: send a written copy back whole (round trip + size / bandwidth).
    pub(super) fn store_back(&mut self, now: f64, ino: u64) -> Result<Option<f64>, i32> {
        let Some(c) = self.cached.get(&ino) else {
            return Ok(None);
        };
        if !c.dirty {
            return Ok(None);
        }
        let rel = self.path_of(ino)?;
        let path = self.abs(&rel);
        let size = fs::metadata(&c.path).map(|m| m.len()).unwrap_or(c.size);
        let cache_path = c.path.clone();
        let t = {
            let rtt = self.rtt();
            self.link.data_request(&self.net, now, size, rtt)
        };
        self.shared.count(|s| {
            s.round_trips += 1;
            s.bytes_sent += size;
        });
        // In place, so the server file keeps its inode.
        let r = (|| -> io::Result<()> {
            let mut src = File::open(&cache_path)?;
            let mut dst = self.open_beneath(&rel, libc::O_WRONLY)?;
            io::copy(&mut src, &mut dst)?;
            dst.set_len(size)?;
            Ok(())
        })();
        if let Err(e) = r {
            return Err(errno(&e));
        }
        let v = fs::metadata(&path).map(|m| version(&m)).ok();
        let c = self.cached.get_mut(&ino).expect("checked");
        c.dirty = false;
        if let Some(v) = v {
            c.version = v;
        }
        self.attrs.insert(ino, now);
        Ok(Some(t))
    }

    pub(super) fn flush_or_fsync(&mut self, now: f64, fh: u64, fsync: bool) -> Out {
        let Some(h) = self.files.get(&fh) else {
            return Out::err(libc::EBADF);
        };
        let ino = h.ino;
        match self.protocol {
            Protocol::WholeFile => match self.store_back(now, ino) {
                Ok(due) => Out::at(due, Ok(Vec::new())),
                Err(e) => Out::err(e),
            },
            Protocol::Block if fsync => {
                // A commit: one round trip.
                let due = Some(self.round_trip(now));
                let r = self.files[&fh].file.sync_data();
                Out::at(due, r.map(|_| Vec::new()).map_err(|e| errno(&e)))
            }
            Protocol::Block => Out::now(Vec::new()),
        }
    }

    pub(super) fn release(&mut self, now: f64, fh: u64) -> Out {
        let Some(h) = self.files.remove(&fh) else {
            return Out::now(Vec::new());
        };
        let mut due = None;
        if self.protocol == Protocol::WholeFile {
            due = self.store_back(now, h.ino).unwrap_or(None);
            if let Some(c) = self.cached.get_mut(&h.ino) {
                c.open = c.open.saturating_sub(1);
            }
            self.evict_files();
        }
        Out::at(due, Ok(Vec::new()))
    }
}
