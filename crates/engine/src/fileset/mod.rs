//! Filesets at run time: the tree shape, per-entry state shared by the worker threads, picking
//! entries round-robin (or by index), and laying the tree out on disk.
//!
//! Per-entry state is compact (20 bytes: directory index, name number, planned size, state
//! bits and an open count), planned in place and moved, never copied, into the run; names and
//! paths are derived from indices, never stored, so a fileset of ten million files needs
//! about 200 MB.

pub mod dirs;
pub mod layout;
mod pick;
pub mod remote;
mod tree;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering};

use dirs::{DirRef, DirTable};
pub use pick::{Miss, Start, Want};
pub use tree::{Shape, Tree};

/// Append `/NNNNNNNN` (the name number, zero-padded to eight digits as Filebench names
/// entries) without the formatting machinery: this runs for every path-based operation.
#[inline]
fn push_name(buf: &mut Vec<u8>, n: u32) {
    let mut digits = [b'0'; 10];
    let mut v = n;
    let mut i = digits.len();
    while v > 0 {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    let start = i.min(digits.len() - 8);
    buf.push(b'/');
    buf.extend_from_slice(&digits[start..]);
}

/// The entry exists on disk.
pub const EXISTS: u8 = 1;
/// A thread is creating, deleting or opening the entry right now.
pub const BUSY: u8 = 2;

/// One file or leaf directory of a fileset: 20 bytes, so that a hundred million entries fit
/// in about 2 GB.
#[derive(Debug)]
pub struct Entry {
    pub dir: u32,
    pub name: u32,
    /// Planned size (Filebench's `fse_size`), sampled once when the fileset is planned: the
    /// low 32 bits and the next 16 (sizes up to 256 TiB, past any file system's limit).
    size_lo: u32,
    size_hi: u16,
    pub state: AtomicU8,
    pub opens: AtomicU32,
}

/// The largest planned size an entry holds (2^48 - 1 bytes).
pub const MAX_SIZE: u64 = (1 << 48) - 1;

impl Entry {
    pub fn new(dir: u32, name: u32) -> Entry {
        Entry {
            dir,
            name,
            size_lo: 0,
            size_hi: 0,
            state: AtomicU8::new(0),
            opens: AtomicU32::new(0),
        }
    }

    pub fn exists(&self) -> bool {
        self.state.load(Ordering::Acquire) & EXISTS != 0
    }

    /// The planned size.
    #[inline]
    pub fn size(&self) -> u64 {
        self.size_lo as u64 | (self.size_hi as u64) << 32
    }

    /// Plan the size (capped at [`MAX_SIZE`]).
    pub fn set_size(&mut self, size: u64) {
        let s = size.min(MAX_SIZE);
        self.size_lo = s as u32;
        self.size_hi = (s >> 32) as u16;
    }
}

impl PartialEq for Entry {
    /// Same place, same planned size (state and opens are run-time, not plan).
    fn eq(&self, o: &Entry) -> bool {
        (self.dir, self.name, self.size()) == (o.dir, o.name, o.size())
    }
}

/// One bit per entry: which entries a plan preallocates.
#[derive(Debug, Clone, Default)]
pub struct Bits {
    words: Vec<u64>,
    len: usize,
    ones: usize,
}

impl Bits {
    pub fn from_fn(len: usize, mut f: impl FnMut(usize) -> bool) -> Bits {
        let mut words = vec![0u64; len.div_ceil(64)];
        let mut ones = 0;
        for i in 0..len {
            if f(i) {
                words[i / 64] |= 1 << (i % 64);
                ones += 1;
            }
        }
        Bits { words, len, ones }
    }

    #[inline]
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] >> (i % 64) & 1 != 0
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many bits are set.
    pub fn count(&self) -> usize {
        self.ones
    }

    /// The first set bit at or after `i`, skipping clear words whole.
    pub fn next_set(&self, i: usize) -> Option<usize> {
        if i >= self.len {
            return None;
        }
        let mut w = i / 64;
        let mut word = self.words[w] & (!0u64 << (i % 64));
        loop {
            if word != 0 {
                let at = w * 64 + word.trailing_zeros() as usize;
                return (at < self.len).then_some(at);
            }
            w += 1;
            if w >= self.words.len() {
                return None;
            }
            word = self.words[w];
        }
    }
}

/// A fileset as the workers see it.
#[derive(Debug)]
pub struct FilesetRt {
    pub name: String,
    /// `<run dir>/<fileset name>` (for messages: operations go through `dirs`).
    pub root: PathBuf,
    /// Open handles of the fileset's root and directories: every operation on an entry is a
    /// `*at()` call on its parent's handle, never following a link.
    pub dirs: DirTable,
    /// Over NFS: the root's path on the export (`/run dir/fileset`), from which entries'
    /// paths are built (there are no local handles then).
    pub remote_root: Option<String>,
    pub dir_paths: Vec<String>,
    pub files: Vec<Entry>,
    pub leafdirs: Vec<Entry>,
    /// The fileset's data content and the seed its generator uses (writes during the run
    /// follow it when it is not plain random, or when a flowop sets its own).
    pub content: fsbench_model::content::Content,
    pub content_seed: u64,
    /// With `--verify`: what is known of each file's content (parallel to `files`).
    pub verify: Vec<fsbench_model::verify::FileState>,
    pub readonly: bool,
    pub writeonly: bool,
    /// Filebench's shared rotors, one per (list, wanted state): the index after the entry
    /// the last pick found (see `pick`).
    rotors: [AtomicUsize; 4],
    /// The rotor over directories for `listdir`, and which directories are being listed.
    rotor_dirs: AtomicUsize,
    dir_busy: Vec<AtomicBool>,
    /// How many entries of each list exist, so that a pick with nothing to find fails at
    /// once instead of scanning every entry (a create on a full fileset, a delete on an
    /// empty one).
    existing: [AtomicUsize; 2],
}

/// Which list of a fileset a pick draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    Files,
    LeafDirs,
}

impl FilesetRt {
    /// The run-time fileset over a planned tree, taking its entries (not copying them); the
    /// tree keeps its directories.
    pub fn new(
        name: &str,
        root: PathBuf,
        root_fd: std::os::fd::OwnedFd,
        tree: &mut Tree,
    ) -> FilesetRt {
        FilesetRt::with_dirs(name, root, DirTable::new(root_fd, tree.dirs.len()), tree)
    }

    /// Keep what is known of each file's content, for a run that verifies its data (every
    /// block written carries a header that reads check).
    pub fn track_verify(&mut self) {
        self.verify = (0..self.files.len()).map(|_| Default::default()).collect();
    }

    /// The run-time fileset over a planned tree laid out on an NFS export at `remote_root`;
    /// `root` is its place for messages.
    pub fn remote(name: &str, root: PathBuf, remote_root: String, tree: &mut Tree) -> FilesetRt {
        let mut rt = FilesetRt::with_dirs(name, root, DirTable::remote(tree.dirs.len()), tree);
        rt.remote_root = Some(remote_root);
        rt
    }

    fn with_dirs(name: &str, root: PathBuf, dirs: DirTable, tree: &mut Tree) -> FilesetRt {
        let dir_paths = tree.dir_paths();
        let files = std::mem::take(&mut tree.files);
        let leafdirs = std::mem::take(&mut tree.leafdirs);
        FilesetRt {
            name: name.to_string(),
            root,
            dirs,
            remote_root: None,
            dir_paths,
            verify: Vec::new(),
            files,
            leafdirs,
            content: fsbench_model::content::Content::RANDOM,
            content_seed: 0,
            readonly: false,
            writeonly: false,
            rotors: Default::default(),
            existing: Default::default(),
            rotor_dirs: AtomicUsize::new(0),
            dir_busy: (0..tree.dirs.len())
                .map(|_| AtomicBool::new(false))
                .collect(),
        }
    }

    pub fn list(&self, l: List) -> &[Entry] {
        match l {
            List::Files => &self.files,
            List::LeafDirs => &self.leafdirs,
        }
    }

    /// Release a picked entry, recording whether it now exists.
    pub fn release(&self, l: List, i: usize, exists: bool) {
        let old = self.list(l)[i]
            .state
            .swap(if exists { EXISTS } else { 0 }, Ordering::AcqRel);
        match (old & EXISTS != 0, exists) {
            (false, true) => {
                self.existing[l as usize].fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                self.existing[l as usize].fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    /// Recount existing entries after the layout set their states directly.
    pub fn recount(&self) {
        for l in [List::Files, List::LeafDirs] {
            self.existing[l as usize].store(self.existing(l), Ordering::Relaxed);
        }
    }

    /// The handle of entry `i`'s parent directory and, in `buf`, the entry's NUL-terminated
    /// name within it.
    #[inline]
    pub fn entry_at<'b>(
        &self,
        l: List,
        i: usize,
        buf: &'b mut Vec<u8>,
    ) -> std::io::Result<(DirRef, &'b std::ffi::CStr)> {
        let e = &self.list(l)[i];
        let dir = self.dir_handle(e.dir)?;
        buf.clear();
        push_name(buf, e.name);
        buf.push(0);
        // SAFETY: one NUL, at the end, after a slash and digits; skip the slash.
        let name = unsafe { std::ffi::CStr::from_bytes_with_nul_unchecked(&buf[1..]) };
        Ok((dir, name))
    }

    /// The open handle of directory `d`.
    #[inline]
    pub fn dir_handle(&self, d: u32) -> std::io::Result<DirRef> {
        self.dirs.get(d, &self.dir_paths[d as usize])
    }

    /// Over NFS: the NUL-terminated path of entry `i` of list `l` on the export, in `buf`.
    #[inline]
    pub fn remote_path<'b>(&self, l: List, i: usize, buf: &'b mut Vec<u8>) -> &'b std::ffi::CStr {
        let e = &self.list(l)[i];
        self.remote_into(Some(e.dir), Some(e.name), buf)
    }

    /// Over NFS: the NUL-terminated path of directory `d` on the export, in `buf`.
    pub fn remote_dir<'b>(&self, d: u32, buf: &'b mut Vec<u8>) -> &'b std::ffi::CStr {
        self.remote_into(Some(d), None, buf)
    }

    fn remote_into<'b>(
        &self,
        dir: Option<u32>,
        name: Option<u32>,
        buf: &'b mut Vec<u8>,
    ) -> &'b std::ffi::CStr {
        buf.clear();
        buf.extend_from_slice(self.remote_root.as_deref().unwrap_or("").as_bytes());
        self.finish_path(dir, name, buf)
    }

    /// Write the NUL-terminated path of entry `i` of list `l` into `buf` (for messages).
    pub fn entry_path<'b>(&self, l: List, i: usize, buf: &'b mut Vec<u8>) -> &'b std::ffi::CStr {
        let e = &self.list(l)[i];
        self.path_into(Some(e.dir), Some(e.name), buf)
    }

    /// Write the NUL-terminated path of directory `d` into `buf` (for messages).
    pub fn dir_path<'b>(&self, d: u32, buf: &'b mut Vec<u8>) -> &'b std::ffi::CStr {
        self.path_into(Some(d), None, buf)
    }

    fn path_into<'b>(
        &self,
        dir: Option<u32>,
        name: Option<u32>,
        buf: &'b mut Vec<u8>,
    ) -> &'b std::ffi::CStr {
        use std::os::unix::ffi::OsStrExt;
        buf.clear();
        buf.extend_from_slice(self.root.as_os_str().as_bytes());
        self.finish_path(dir, name, buf)
    }

    /// Append directory `dir`'s path and entry `name` to the root already in `buf`, and a NUL.
    fn finish_path<'b>(
        &self,
        dir: Option<u32>,
        name: Option<u32>,
        buf: &'b mut Vec<u8>,
    ) -> &'b std::ffi::CStr {
        if let Some(d) = dir {
            let p = &self.dir_paths[d as usize];
            if !p.is_empty() {
                buf.push(b'/');
                buf.extend_from_slice(p.as_bytes());
            }
        }
        if let Some(n) = name {
            push_name(buf, n);
        }
        buf.push(0);
        debug_assert!(!buf[..buf.len() - 1].contains(&0));
        // SAFETY: one NUL, at the end: the root is a path (no NUL in it), directory paths and
        // names are digits and slashes.
        unsafe { std::ffi::CStr::from_bytes_with_nul_unchecked(buf) }
    }

    /// Path of entry `i` as a `PathBuf` (for messages and tests; not for the hot path).
    pub fn entry_pathbuf(&self, l: List, i: usize) -> PathBuf {
        let mut b = Vec::new();
        let c = self.entry_path(l, i, &mut b);
        PathBuf::from(c.to_string_lossy().into_owned())
    }

    /// Path of directory `d` as a `PathBuf` (for messages).
    pub fn dir_pathbuf(&self, d: u32) -> PathBuf {
        let mut b = Vec::new();
        let c = self.dir_path(d, &mut b);
        PathBuf::from(c.to_string_lossy().into_owned())
    }

    pub fn existing(&self, l: List) -> usize {
        self.list(l).iter().filter(|e| e.exists()).count()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_model::dist::rng;

    fn small() -> FilesetRt {
        let tree = Tree::build(
            Shape {
                entries: 10,
                leafdirs: 2,
                dirwidth: 4,
                dirgamma: 0.0,
            },
            &mut rng(1, 1),
        );
        let mut tree = tree;
        for e in &mut tree.files {
            e.set_size(100);
        }
        let root: std::os::fd::OwnedFd = std::fs::File::open(std::env::temp_dir()).unwrap().into();
        FilesetRt::new("fs", PathBuf::from("/r"), root, &mut tree)
    }

    #[test]
    fn a_pick_tells_all_busy_from_exhausted() {
        // As Filebench's fileset_pick: every entry busy is a wait; no free entry in the
        // wanted state while some entry is idle is no resource.
        let fs = small();
        let all: Vec<usize> = (0..10)
            .map(|_| fs.pick(List::Files, Want::Absent, Start::Rotor).unwrap())
            .collect();
        assert_eq!(
            fs.pick(List::Files, Want::Absent, Start::Rotor),
            Err(Miss::AllBusy)
        );
        assert_eq!(
            fs.pick(List::Files, Want::Exists, Start::Rotor),
            Err(Miss::AllBusy)
        );
        assert_eq!(
            fs.pick(List::Files, Want::Exists, Start::Index(3)),
            Err(Miss::AllBusy)
        );
        // One idle, absent entry: nothing exists to open (no resource), and the absent
        // one can be created.
        fs.release(List::Files, all[0], false);
        assert_eq!(
            fs.pick(List::Files, Want::Exists, Start::Rotor),
            Err(Miss::Empty)
        );
        assert_eq!(
            fs.pick(List::Files, Want::Absent, Start::Index(7)),
            Ok(all[0])
        );
        // Created: it exists now, and nothing else is free to create.
        fs.release(List::Files, all[0], true);
        assert_eq!(
            fs.pick(List::Files, Want::Absent, Start::Rotor),
            Err(Miss::Empty)
        );
        assert_eq!(fs.pick(List::Files, Want::Exists, Start::Rotor), Ok(all[0]));
    }

    #[test]
    fn pick_round_robin_and_busy() {
        let fs = small();
        let a = fs.pick(List::Files, Want::Absent, Start::Rotor).unwrap();
        let b = fs.pick(List::Files, Want::Absent, Start::Rotor).unwrap();
        assert_ne!(a, b);
        assert_eq!(
            fs.pick(List::Files, Want::Exists, Start::Rotor),
            Err(Miss::Empty)
        );
        fs.release(List::Files, a, true);
        assert_eq!(fs.pick(List::Files, Want::Exists, Start::Rotor), Ok(a));
        // Busy entries are not picked twice.
        assert_eq!(
            fs.pick(List::Files, Want::Exists, Start::Rotor),
            Err(Miss::Empty)
        );
        fs.release(List::Files, a, true);
        assert_eq!(
            fs.pick(List::Files, Want::Exists, Start::Index(a + 10)),
            Ok(a)
        );
        fs.release(List::Files, a, true);
        // As Filebench: an index naming an absent entry takes the next existing one
        // (wrapping), and a busy one the next free one; none at all is exhaustion.
        assert_eq!(fs.pick(List::Files, Want::Exists, Start::Index(b)), Ok(a));
        assert_eq!(
            fs.pick(List::Files, Want::Exists, Start::Index(b)),
            Err(Miss::Empty)
        );
        fs.release(List::Files, a, true);
        let c = fs.pick(List::Files, Want::Absent, Start::Index(a)).unwrap();
        // `b` is still busy from its pick above: skipped as well.
        let want = (1..10).map(|k| (a + k) % 10).find(|&j| j != b).unwrap();
        assert_eq!(
            c, want,
            "the next absent, free entry after the existing one"
        );
        fs.release(List::Files, c, false);
        // All absent entries can be picked exactly once.
        let mut n = 0;
        while fs.pick(List::Files, Want::Absent, Start::Rotor).is_ok() {
            n += 1;
        }
        assert_eq!(n, 8);
    }

    #[test]
    fn entries_are_twenty_bytes_and_keep_large_sizes() {
        assert_eq!(std::mem::size_of::<Entry>(), 20);
        let mut e = Entry::new(1, 2);
        for s in [0, 1, u32::MAX as u64, 5 << 40, MAX_SIZE] {
            e.set_size(s);
            assert_eq!(e.size(), s);
        }
        e.set_size(u64::MAX);
        assert_eq!(e.size(), MAX_SIZE);
    }

    #[test]
    fn bits_count_and_read_back() {
        let b = Bits::from_fn(130, |i| i % 3 == 0);
        assert_eq!(b.len(), 130);
        assert_eq!(b.count(), 44);
        assert!(b.get(0) && b.get(129) && !b.get(128) && !b.get(130));
        assert_eq!(b.next_set(1), Some(3));
        assert_eq!(b.next_set(129), Some(129));
        assert_eq!(b.next_set(130), None);
        let sparse = Bits::from_fn(1000, |i| i == 700);
        assert_eq!(sparse.next_set(0), Some(700));
        assert_eq!(sparse.next_set(701), None);
    }

    #[test]
    fn names_are_eight_digits_or_more() {
        for (n, want) in [
            (0u32, "/00000000"),
            (7, "/00000007"),
            (12345678, "/12345678"),
            (123456789, "/123456789"),
            (u32::MAX, "/4294967295"),
        ] {
            let mut b = Vec::new();
            push_name(&mut b, n);
            assert_eq!(String::from_utf8(b).unwrap(), want);
            assert_eq!(want, format!("/{n:08}"));
        }
    }

    #[test]
    fn paths_from_indices() {
        let fs = small();
        let p = fs.entry_pathbuf(List::Files, 0);
        let s = p.to_string_lossy();
        assert!(s.starts_with("/r/"), "{s}");
        assert_eq!(s.matches('/').count() as u32, 2 + fs.dirs_depth_of(0));
    }

    impl FilesetRt {
        fn dirs_depth_of(&self, i: usize) -> u32 {
            self.dir_paths[self.files[i].dir as usize]
                .matches('/')
                .count() as u32
                + 1
        }
    }
}
