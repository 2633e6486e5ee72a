//! File flowops: create, open, close, delete, stat, fsync, fsyncset.

use super::remote::EntryOp;
use super::{Fail, Flow, Worker, MAX_FD};
use crate::fileset::{List, Want};
use fsbench_model::model::{Flowop, FlowopKind};
use std::sync::atomic::Ordering;
use FlowopKind::*;

impl Worker<'_> {
    pub(super) fn op_createfile(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let slot = self.fdnum(f);
        let ns = self.open_into(f, slot, f.kind == CreateFile)?;
        self.done(f, ns, 0);
        Ok(Flow::Continue)
    }

    pub(super) fn op_closefile(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let slot = f.fd.unwrap_or(0);
        let s = self.slots[slot];
        if s.fd < 0 {
            return Err(self.closed(slot, "closefile"));
        }
        // As Filebench's closefile: the file is busy while it is closed (a pick passes it
        // over), once no other thread has it busy.
        let held = s
            .entry
            .map(|(fs, e)| (&self.sh.filesets[fs as usize], e as usize));
        if let Some((fs, e)) = held {
            if !fs.hold(List::Files, e, || self.sh.ctl.stopping()) {
                return Ok(Flow::Stop);
            }
        }
        // A descriptor another slot shares (`opennext` onto one file) stays open for it.
        let shared = self.fd_shared(slot);
        let t0 = self.clock.now();
        let r = if shared { Ok(()) } else { self.close_fd(s.fd) };
        let ns = self.clock.since(t0);
        self.forget_open(slot);
        if let Some((fs, e)) = held {
            fs.unhold(List::Files, e);
        }
        match r {
            Ok(()) => {
                self.done(f, ns, 0);
                Ok(Flow::Continue)
            }
            Err(e) => Err(Fail::Error(format!("close: {e}"))),
        }
    }

    pub(super) fn op_deletefile(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let slot = f.fd.unwrap_or(0);
        let (fsi, e, own_open) = match (f.fd, self.slots[slot].last) {
            (Some(n), Some((fs, e))) if n > 0 => {
                self.slots[slot].last = None;
                let fsr = &self.sh.filesets[fs as usize];
                // As Filebench: wait while another thread has the entry busy, then take it.
                if !fsr.hold(List::Files, e as usize, || self.sh.ctl.stopping()) {
                    return Ok(Flow::Stop);
                }
                if fsr.files[e as usize].exists() {
                    (fs as usize, e as usize, self.slots[slot].fd >= 0)
                } else {
                    // Another thread deleted the slot's file first: nothing is left to
                    // delete, and asking again cannot help (the slot's file is spent), so
                    // it is skipped and counted, as a file open elsewhere is below. (As
                    // "no free entry" it was retried, and the retry found the slot empty
                    // and failed with an error.)
                    fsr.release(List::Files, e as usize, false);
                    self.rec.ops[f.stat].skipped += 1;
                    return Ok(Flow::Continue);
                }
            }
            _ => {
                let Some(fsi) = f.fileset else {
                    // The open that would have filled the slot found no file.
                    return Err(if self.slots[slot].starved {
                        Fail::NoResource
                    } else {
                        Fail::Error(format!("fd {slot} has no file to delete"))
                    });
                };
                let fs = &self.sh.filesets[fsi];
                let start = self.start(f, fs.files.len());
                (fsi, fs.pick(List::Files, Want::Exists, start)?, false)
            }
        };
        let fs = &self.sh.filesets[fsi];
        let opens = fs.files[e].opens.load(Ordering::Relaxed);
        if opens > u32::from(own_open) {
            // Open in another thread: skipped, as in Filebench (flowop_library.c
            // `flowoplib_deletefile`: no operation), but counted, not silent.
            fs.release(List::Files, e, true);
            self.rec.ops[f.stat].skipped += 1;
            return Ok(Flow::Continue);
        }
        let (r, ns) = self.entry_call(fsi, List::Files, e, EntryOp::Unlink);
        match r {
            Ok(()) => {
                // As Filebench: a deleted entry has no opens; our own still-open slot
                // stops counting (its close will not decrement a later file's count).
                fs.files[e].opens.store(0, Ordering::Relaxed);
                if let Some(v) = fs.verify.get(e) {
                    v.reset(0);
                }
                if own_open {
                    self.slots[slot].entry = None;
                }
                fs.release(List::Files, e, false);
                self.done(f, ns, 0);
                Ok(Flow::Continue)
            }
            Err(err) => {
                fs.release(List::Files, e, true);
                Err(Fail::Error(format!(
                    "unlink {}: {err}",
                    fs.entry_pathbuf(List::Files, e).display()
                )))
            }
        }
    }

    pub(super) fn op_statfile(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let slot = f.fd.unwrap_or(0);
        if f.fd.is_some_and(|n| n > 0) && self.slots[slot].fd >= 0 {
            let t0 = self.clock.now();
            let r = self.fd_size(self.slots[slot].fd);
            let ns = self.clock.since(t0);
            return match r {
                Ok(_) => {
                    self.done(f, ns, 0);
                    Ok(Flow::Continue)
                }
                Err(e) => Err(Fail::Error(format!("fstat: {e}"))),
            };
        }
        let Some(fsi) = f.fileset else {
            return Err(Fail::Error(format!(
                "fd {slot} is not open and no fileset is named"
            )));
        };
        let fs = &self.sh.filesets[fsi];
        let start = self.start(f, fs.files.len());
        let e = fs.pick(List::Files, Want::Exists, start)?;
        let (r, ns) = self.entry_call(fsi, List::Files, e, EntryOp::Stat);
        fs.release(List::Files, e, true);
        match r {
            Ok(_) => {
                self.done(f, ns, 0);
                Ok(Flow::Continue)
            }
            Err(err) => Err(Fail::Error(format!(
                "stat {}: {err}",
                fs.entry_pathbuf(List::Files, e).display()
            ))),
        }
    }

    pub(super) fn op_fsync(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let slot = f.fd.unwrap_or(0);
        let fd = self.slots[slot].fd;
        if fd < 0 {
            return Err(self.closed(slot, "fsync"));
        }
        let t0 = self.clock.now();
        let r = self.sync_fd(fd);
        let ns = self.clock.since(t0);
        match r {
            Ok(()) => {
                self.done(f, ns, 0);
                Ok(Flow::Continue)
            }
            Err(e) => Err(Fail::Error(format!("fsync: {e}"))),
        }
    }

    pub(super) fn op_fsyncset(&mut self, f: &Flowop) -> Result<Flow, Fail> {
        let target = f.fileset.map(|i| i as u32);
        for slot in 0..MAX_FD {
            let s = self.slots[slot];
            if s.fd < 0 || s.last.map(|(fs, _)| fs) != target {
                continue;
            }
            let t0 = self.clock.now();
            let r = self.sync_fd(s.fd);
            let ns = self.clock.since(t0);
            match r {
                Ok(()) => self.done(f, ns, 0),
                Err(e) => self.rec.ops[f.stat].error(|| format!("fsync: {e}")),
            }
        }
        Ok(Flow::Continue)
    }
}
