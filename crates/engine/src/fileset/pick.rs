//! Picking fileset entries as Filebench's `fileset_pick` (fileset.c) does, without its lock.
//!
//! Filebench keeps a fileset's files in two sorted lists (existing, not existing) and picks
//! under one mutex: `fileset_find_entry` takes the entry of the wanted list with the
//! smallest index at or after the rotor, else the list's first; the rotor becomes that
//! entry's index + 1; then busy entries are skipped along the list, wrapping, and a full
//! turn without an idle one is "no resource". Here the lists are the entries' state bits,
//! the rotor moves by compare-and-swap (a pick that lost the race to another looks again
//! from where that one left it, as it would have after waiting for the lock) and an entry
//! is taken by compare-and-swap on its state. A single thread's picks are exactly
//! Filebench's; concurrent picks differ only when two race for the same entry.

use super::{Entry, FilesetRt, List, BUSY, EXISTS};
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a pick asks for: Filebench's FILESET_PICKEXISTS or FILESET_PICKNOEXIST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Exists,
    Absent,
}

/// Where a pick starts looking.
#[derive(Debug, PartialEq, Eq)]
pub enum Start<'r> {
    /// The fileset's rotor for the list and wanted state, shared by every thread:
    /// Filebench's `fs_file_exrotor[0]` (what `openfile`, `deletefile` and `statfile` pass),
    /// `fs_file_nerotor`, `fs_leafdir_exrotor`, `fs_leafdir_nerotor`.
    Rotor,
    /// A rotor of the caller's own: `fs_file_exrotor[tf_utid]`, which `openfile` uses only
    /// with `opennext` (flowop_library.c `flowoplib_openfile_common`).
    Own(&'r mut usize),
    /// `indexed=`: that entry or, when it is not in the wanted state, the next one that is
    /// (FILESET_PICKBYINDEX); no rotor moves.
    Index(usize),
}

/// Why a pick found no entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// No entry in the wanted state, or all of them busy, while some entry of the list was
    /// idle: Filebench's "no resource".
    Empty,
    /// Every entry of the list was busy in other threads (Filebench waits for one).
    AllBusy,
}

/// Whether an entry with state `s` is on the wanted list (busy or not).
#[inline]
fn listed(s: u8, want: Want) -> bool {
    (s & EXISTS != 0) == (want == Want::Exists)
}

/// Mark `e` busy if it is idle and on the wanted list; otherwise the state it was found in.
#[inline]
fn claim(e: &Entry, want: Want) -> Result<(), u8> {
    let idle = match want {
        Want::Exists => EXISTS,
        Want::Absent => 0,
    };
    // Looked at first: a failed compare-and-swap would still take the cache line.
    let cur = e.state.load(Ordering::Relaxed);
    if cur != idle {
        return Err(cur);
    }
    e.state
        .compare_exchange(idle, idle | BUSY, Ordering::AcqRel, Ordering::Relaxed)
        .map(|_| ())
}

impl FilesetRt {
    /// The shared rotor of list `l` for `want`.
    fn rotor(&self, l: List, want: Want) -> &AtomicUsize {
        &self.rotors[(l as usize) * 2 + (want as usize)]
    }

    /// Pick an entry of list `l` in the wanted state and mark it busy, as Filebench's
    /// `fileset_pick`. Every entry of the list busy is `Miss::AllBusy` (Filebench waits for
    /// one to be released: the caller waits and asks again); none in the wanted state, or
    /// all of those busy, is `Miss::Empty` (no resource: the flowop ends its thread).
    pub fn pick(&self, l: List, want: Want, mut start: Start<'_>) -> Result<usize, Miss> {
        let n = self.list(l).len();
        if n == 0 {
            return Err(Miss::Empty);
        }
        loop {
            let have = self.existing[l as usize].load(Ordering::Acquire);
            let some = match want {
                Want::Exists => have > 0,
                Want::Absent => have < n,
            };
            if some {
                match self.pick_listed(l, want, &mut start) {
                    Ok(i) => return Ok(i),
                    Err(Some(miss)) => return Err(miss),
                    // Gone since the count was read: decide as for an empty list.
                    Err(None) => {}
                }
            }
            // Filebench waits for an idle entry before it looks at the wanted list.
            if self.all_busy(l) {
                return Err(Miss::AllBusy);
            }
            // Nothing was created or deleted while we looked: the wanted list was empty
            // throughout. Otherwise look again.
            if self.existing[l as usize].load(Ordering::Acquire) == have {
                return Err(Miss::Empty);
            }
        }
    }

    /// The rotor step and the busy skip of `fileset_pick`: the entry taken, or why none
    /// was (`None`: the wanted list is empty).
    fn pick_listed(
        &self,
        l: List,
        want: Want,
        start: &mut Start<'_>,
    ) -> Result<usize, Option<Miss>> {
        let c = match start {
            Start::Index(i) => self.find_entry(l, want, *i).ok_or(None)?,
            Start::Own(r) => {
                let c = self.find_entry(l, want, **r).ok_or(None)?;
                **r = c + 1;
                c
            }
            Start::Rotor => {
                let rotor = self.rotor(l, want);
                loop {
                    let r = rotor.load(Ordering::Acquire);
                    let c = self.find_entry(l, want, r).ok_or(None)?;
                    // Filebench sets the rotor past the entry found before it skips busy
                    // ones, under its lock: another pick that moved the rotor meanwhile
                    // went first, so look again from where it left the rotor.
                    if rotor
                        .compare_exchange(r, c + 1, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        break c;
                    }
                }
            }
        };
        self.claim_from(l, want, c).map_err(Some)
    }

    /// `fileset_find_entry`: the entry on the wanted list with the smallest index at or
    /// after `from`, else the list's first (busy or not); `None` when the list is empty.
    pub fn find_entry(&self, l: List, want: Want, from: usize) -> Option<usize> {
        let list = self.list(l);
        let from = from.min(list.len());
        let listed_at = |i: &usize| listed(list[*i].state.load(Ordering::Acquire), want);
        (from..list.len()).chain(0..from).find(listed_at)
    }

    /// Take the first idle entry on the wanted list from `c` on, wrapping. After a full
    /// turn without one (`fileset_pick`: "All files are busy", no resource) the turn has
    /// looked at every entry of the list: if each was busy when looked at, no entry was
    /// idle, and Filebench would have waited before looking (`Miss::AllBusy`). Decided
    /// from what the turn saw, as Filebench decides under its lock, not by a second look
    /// that a release may overtake.
    fn claim_from(&self, l: List, want: Want, c: usize) -> Result<usize, Miss> {
        let list = self.list(l);
        let n = list.len();
        let mut all_busy = true;
        for i in (c..n).chain(0..c) {
            match claim(&list[i], want) {
                Ok(()) => return Ok(i),
                Err(seen) => all_busy &= seen & BUSY != 0,
            }
        }
        Err(if all_busy { Miss::AllBusy } else { Miss::Empty })
    }

    /// Whether every entry of list `l` is busy (picked by some thread and not yet released).
    pub(super) fn all_busy(&self, l: List) -> bool {
        let list = self.list(l);
        !list.is_empty()
            && list
                .iter()
                .all(|e| e.state.load(Ordering::Acquire) & BUSY != 0)
    }

    /// Mark entry `i` busy for an operation on a file the caller already holds (Filebench's
    /// `closefile` and `deletefile fd=N`: wait while another thread has it busy, then take
    /// it), whatever its state. False if `stop` says to give up while waiting.
    pub fn hold(&self, l: List, i: usize, stop: impl Fn() -> bool) -> bool {
        let e = &self.list(l)[i];
        loop {
            let cur = e.state.load(Ordering::Acquire);
            if cur & BUSY == 0
                && e.state
                    .compare_exchange(cur, cur | BUSY, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                return true;
            }
            if stop() {
                return false;
            }
            std::thread::yield_now();
        }
    }

    /// Release entry `i` taken by [`Self::hold`] without changing whether it exists.
    pub fn unhold(&self, l: List, i: usize) {
        self.list(l)[i].state.fetch_and(!BUSY, Ordering::AcqRel);
    }

    /// Next directory for `listdir`, marked busy: Filebench's FILESET_PICKDIR rotates over
    /// `fs_dirs`, which holds every directory of the fileset in the order the tree made
    /// them, its root first (fileset.c `fileset_populate_subdir`), skipping busy ones; every
    /// directory busy is a wait. Release it with [`Self::release_dir`].
    pub fn pick_dir(&self) -> Result<u32, Miss> {
        let n = self.dir_busy.len();
        if n == 0 {
            return Err(Miss::Empty);
        }
        let c = loop {
            let r = self.rotor_dirs.load(Ordering::Acquire);
            // Every directory is on the list: the one at the rotor, else the first.
            let c = if r < n { r } else { 0 };
            if self
                .rotor_dirs
                .compare_exchange(r, c + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                break c;
            }
        };
        let take = |d: &usize| {
            self.dir_busy[*d]
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        };
        match (c..n).chain(0..c).find(take) {
            Some(d) => Ok(d as u32),
            None => Err(Miss::AllBusy),
        }
    }

    /// Release a directory picked by [`Self::pick_dir`].
    pub fn release_dir(&self, d: u32) {
        self.dir_busy[d as usize].store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fileset::{Shape, Tree};
    use fsbench_model::dist::rng;
    use rand::Rng as _;
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    fn fileset(n: usize) -> FilesetRt {
        let mut tree = Tree::build(
            Shape {
                entries: n as u64,
                leafdirs: 0,
                dirwidth: 4,
                dirgamma: 0.0,
            },
            &mut rng(1, 1),
        );
        let root: std::os::fd::OwnedFd = std::fs::File::open(std::env::temp_dir()).unwrap().into();
        FilesetRt::new("fs", PathBuf::from("/r"), root, &mut tree)
    }

    /// Filebench's `fileset_pick` for files, written as fileset.c has it: sorted lists of
    /// existing and absent indices, busy flags, rotors.
    struct Reference {
        exist: BTreeSet<usize>,
        noex: BTreeSet<usize>,
        busy: Vec<bool>,
        exrotor: usize,
        nerotor: usize,
    }

    impl Reference {
        fn find_entry(list: &BTreeSet<usize>, from: usize) -> Option<usize> {
            list.range(from..).next().or(list.iter().next()).copied()
        }

        /// `None` is "no resource" (the reference is single-threaded: it never waits).
        fn pick(
            &mut self,
            want: Want,
            index: Option<usize>,
            own: Option<&mut usize>,
        ) -> Option<usize> {
            let list = match want {
                Want::Exists => &self.exist,
                Want::Absent => &self.noex,
            };
            let start = match (index, own) {
                (Some(i), _) => Self::find_entry(list, i)?,
                (None, Some(r)) => {
                    let e = Self::find_entry(list, *r)?;
                    *r = e + 1;
                    e
                }
                (None, None) => {
                    let rotor = match want {
                        Want::Exists => &mut self.exrotor,
                        Want::Absent => &mut self.nerotor,
                    };
                    let e = Self::find_entry(list, *rotor)?;
                    *rotor = e + 1;
                    e
                }
            };
            // AVL_NEXT, wrapping to avl_first, until back at the start.
            let order: Vec<usize> = list
                .range(start..)
                .chain(list.range(..start))
                .copied()
                .collect();
            let e = order.into_iter().find(|&i| !self.busy[i])?;
            self.busy[e] = true;
            Some(e)
        }

        fn release(&mut self, i: usize, exists: bool) {
            self.busy[i] = false;
            self.exist.remove(&i);
            self.noex.remove(&i);
            if exists {
                self.exist.insert(i);
            } else {
                self.noex.insert(i);
            }
        }
    }

    #[test]
    fn one_thread_picks_exactly_as_filebench() {
        // Random picks (rotor, own rotor, indexed; existing and absent), creates, deletes
        // and holds over a fileset whose entries start 80% existing: every pick, and every
        // "no resource", is the reference's.
        let n = 97;
        let fs = fileset(n);
        let mut r = rng(7, 7);
        let mut reference = Reference {
            exist: BTreeSet::new(),
            noex: BTreeSet::new(),
            busy: vec![false; n],
            exrotor: 0,
            nerotor: 0,
        };
        for i in 0..n {
            let exists = r.random_bool(0.8);
            fs.files[i]
                .state
                .store(if exists { EXISTS } else { 0 }, Ordering::Relaxed);
            reference.release(i, exists);
        }
        fs.recount();
        let (mut own, mut own_ref) = (0usize, 0usize);
        let mut held: Vec<usize> = Vec::new();
        let (mut taken, mut none) = (0, 0);
        for pick in 0..20_000 {
            let want = if r.random_bool(0.5) {
                Want::Exists
            } else {
                Want::Absent
            };
            let how = r.random_range(0..10);
            let index = (how == 0).then(|| r.random_range(0..n + 3));
            let got = match (index, how) {
                (Some(i), _) => fs.pick(List::Files, want, Start::Index(i)),
                (None, 1) => fs.pick(List::Files, want, Start::Own(&mut own)),
                _ => fs.pick(List::Files, want, Start::Rotor),
            };
            let want_ref = reference.pick(want, index, (how == 1).then_some(&mut own_ref));
            assert_eq!(
                got.ok(),
                want_ref,
                "pick {pick}: {want:?} index {index:?} how {how}"
            );
            assert_eq!(own, own_ref);
            match got {
                Ok(e) => {
                    held.push(e);
                    taken += 1;
                }
                Err(_) => none += 1,
            }
            // Release some held entries: flip existence half the time (a create or delete).
            while held.len() > r.random_range(0..8) {
                let e = held.swap_remove(r.random_range(0..held.len()));
                let exists = fs.files[e].state.load(Ordering::Relaxed) & EXISTS != 0;
                let now = if r.random_bool(0.5) { !exists } else { exists };
                fs.release(List::Files, e, now);
                reference.release(e, now);
            }
        }
        // Both outcomes were exercised.
        assert!(taken > 10_000 && none > 100, "{taken} taken, {none} none");
    }

    #[test]
    fn the_rotor_moves_past_the_entry_found_before_busy_ones_are_skipped() {
        // fileset.c: the rotor becomes the found entry's index + 1, then busy entries are
        // skipped; the next pick starts after the found entry, not after the one taken.
        let fs = fileset(6);
        for e in &fs.files {
            e.state.store(EXISTS, Ordering::Relaxed);
        }
        fs.recount();
        assert!(fs.hold(List::Files, 0, || false));
        assert!(fs.hold(List::Files, 1, || false));
        assert_eq!(fs.pick(List::Files, Want::Exists, Start::Rotor), Ok(2));
        // The rotor is 1: entry 1 is found, busy, then 2 (busy), 3 is taken.
        assert_eq!(fs.pick(List::Files, Want::Exists, Start::Rotor), Ok(3));
        fs.unhold(List::Files, 1);
        // The rotor is 2: entry 2 is busy, 3 busy, 4 taken; entry 1 is idle again but
        // behind the rotor.
        assert_eq!(fs.pick(List::Files, Want::Exists, Start::Rotor), Ok(4));
        assert_eq!(fs.pick(List::Files, Want::Exists, Start::Rotor), Ok(5));
        // The rotor is 4: 4 is found (busy), 5 busy, wrap to 0 (busy), 1 taken.
        assert_eq!(fs.pick(List::Files, Want::Exists, Start::Rotor), Ok(1));
        // Everything busy: a wait, not exhaustion.
        assert_eq!(
            fs.pick(List::Files, Want::Exists, Start::Rotor),
            Err(Miss::AllBusy)
        );
        // An absent entry idle: nothing existing is free, which is no resource.
        fs.release(List::Files, 3, false);
        assert_eq!(
            fs.pick(List::Files, Want::Exists, Start::Rotor),
            Err(Miss::Empty)
        );
        assert_eq!(fs.pick(List::Files, Want::Absent, Start::Rotor), Ok(3));
    }

    #[test]
    fn directories_rotate_and_busy_ones_are_skipped() {
        let fs = fileset(64);
        let n = fs.dir_busy.len() as u32;
        assert!(n >= 3, "{n}");
        assert_eq!(fs.pick_dir(), Ok(0));
        assert_eq!(fs.pick_dir(), Ok(1));
        fs.release_dir(1);
        // 0 is still busy: the rotation goes on at 2, and after the last wraps to 0 (busy)
        // and takes 1.
        for d in 2..n {
            assert_eq!(fs.pick_dir(), Ok(d));
            fs.release_dir(d);
        }
        assert_eq!(fs.pick_dir(), Ok(1));
        for d in 2..n {
            assert_eq!(fs.pick_dir(), Ok(d));
        }
        assert_eq!(fs.pick_dir(), Err(Miss::AllBusy));
    }
}
