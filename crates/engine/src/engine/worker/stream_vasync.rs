//! fio's `verify_async=N`: the blocks a stream reads are checked by N threads of their own
//! instead of the stream's thread (fio's `verify_async_thread`), so that the stream issues
//! its next I/O meanwhile. What a check finds is taken back by the stream's thread (at each
//! of its calls, and all of it before a verify phase or the stream ends) and counted there
//! as an inline check is: a bad block still ends the job, a little later, as in fio.

use super::{Fail, Worker};
use fsbench_model::fioverify::{Bad, Read, Spec, Want};
use fsbench_model::model::stream::Stream;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

/// A read to check: file, offset, its bytes, what a verify-phase read expects.
struct Task {
    fi: usize,
    off: u64,
    data: Vec<u8>,
    want: Option<Want>,
}

/// A checked read: the task back, with the blocks checked and the bad ones.
pub(super) struct Done {
    pub(super) fi: usize,
    pub(super) off: u64,
    pub(super) data: Vec<u8>,
    pub(super) blocks: u64,
    pub(super) bad: Vec<Bad>,
}

/// The verifying threads of one stream; joined when dropped.
pub(super) struct Verifiers {
    tasks: Option<mpsc::Sender<Task>>,
    done: mpsc::Receiver<Done>,
    threads: Vec<std::thread::JoinHandle<()>>,
    outstanding: usize,
}

/// What the stream's check of a block needs, copied for a thread.
struct Checker {
    spec: Spec,
    names: Vec<String>,
    fatal: bool,
}

impl Checker {
    fn check(&self, t: Task) -> Done {
        let mut data = t.data;
        let r = Read {
            file: &self.names[t.fi],
            off: t.off,
            want: t.want.unwrap_or_default(),
            fatal: self.fatal,
            flags: super::stream_verify::flags(t.want.is_some()),
        };
        let (blocks, bad) = fsbench_model::fioverify::check(&self.spec, &mut data, &r);
        Done {
            fi: t.fi,
            off: t.off,
            data,
            blocks,
            bad,
        }
    }
}

impl Verifiers {
    /// `n` threads checking the reads of stream `s` (which verifies).
    pub(super) fn new(s: &Stream, v: &Spec, n: u32) -> Result<Verifiers, String> {
        let (tx, rx) = mpsc::channel::<Task>();
        let rx = Arc::new(Mutex::new(rx));
        let (dtx, drx) = mpsc::channel();
        let checker = Arc::new(Checker {
            spec: v.clone(),
            names: s.files.iter().map(|f| f.name.clone()).collect(),
            fatal: s.verify_fatal,
        });
        let mut threads = Vec::new();
        for i in 0..n {
            let (rx, dtx, c) = (rx.clone(), dtx.clone(), checker.clone());
            let t = std::thread::Builder::new()
                .name(format!("verify-{i}"))
                .spawn(move || loop {
                    let task = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok(t) = task else { return };
                    if dtx.send(c.check(t)).is_err() {
                        return;
                    }
                })
                .map_err(|e| format!("verify_async: starting a verifying thread: {e}"))?;
            threads.push(t);
        }
        Ok(Verifiers {
            tasks: Some(tx),
            done: drx,
            threads,
            outstanding: 0,
        })
    }

    /// Hand a read over to the threads.
    fn submit(&mut self, fi: usize, off: u64, data: Vec<u8>, want: Option<Want>) {
        if let Some(tx) = &self.tasks {
            if tx
                .send(Task {
                    fi,
                    off,
                    data,
                    want,
                })
                .is_ok()
            {
                self.outstanding += 1;
            }
        }
    }

    /// The checks finished so far; with `all`, every one handed over.
    fn take(&mut self, all: bool) -> Vec<Done> {
        let mut out = Vec::new();
        while self.outstanding > 0 {
            let got = if all {
                self.done.recv().ok()
            } else {
                self.done.try_recv().ok()
            };
            let Some(d) = got else { break };
            self.outstanding -= 1;
            out.push(d);
        }
        out
    }
}

impl Drop for Verifiers {
    fn drop(&mut self) {
        self.tasks = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Worker<'_> {
    /// With `verify_async`: hand the read over and say it is fine for now (false: no
    /// threads, the caller checks it itself).
    pub(super) fn stream_check_async(
        &mut self,
        fi: usize,
        off: u64,
        data: &[u8],
        want: Option<Want>,
    ) -> bool {
        let Some(p) = self.stream.as_mut().and_then(|st| st.verifiers.as_mut()) else {
            return false;
        };
        p.submit(fi, off, data.to_vec(), want);
        true
    }

    /// Count what the threads found (`all`: wait for every read handed over), as an
    /// inline check counts it; a bad block stops the stream at its next call.
    pub(super) fn stream_verified(&mut self, s: &Stream, all: bool) -> Result<(), Fail> {
        let Some(p) = self.stream.as_mut().and_then(|st| st.verifiers.as_mut()) else {
            return Ok(());
        };
        for mut d in p.take(all) {
            let bad = std::mem::take(&mut d.bad);
            self.stream_judge(s, (d.fi, d.off), &mut d.data, d.blocks, bad);
        }
        Ok(())
    }
}
