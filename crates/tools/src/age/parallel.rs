//! Profile aging over several threads (`age --threads N`).
//!
//! The planner stays one: it decides every operation in order from its model and its seed,
//! exactly as with one thread, so the plan does not depend on N. What is split is the
//! system calls. Each file operation goes to thread `d % N`, where d is the number of the
//! file's directory (so all operations on one file go to one thread, in plan order, and
//! two threads do not wait on one directory's lock); directories are made by the planning thread itself,
//! before any operation in them is handed out, and profile aging never removes one. The
//! written bytes depend only on the file's offset and the seed. So the final tree (names,
//! sizes, content) is the same whatever N; the layout on disk is what differs, as it
//! differs between two runs of one thread.
//!
//! The exception is a full file system: a write cut short reaches the planner some
//! operations later than with one thread, and the plan after it may differ.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::args::AgeArgs;
use super::exec::{self, Exec, ExecCounts};
use super::plan::{Op, Planner};

/// Operations handed to a thread at once.
const BATCH: usize = 64;
/// Batches queued per thread before the planner waits.
const QUEUE: usize = 8;

enum Kind {
    Create { write: u64 },
    Append { off: u64, len: u64 },
    Overwrite { off: u64, len: u64 },
    Delete,
}

/// One file operation for a thread, its path resolved by the planner.
struct Job {
    id: u64,
    rel: Vec<u8>,
    kind: Kind,
}

/// What a thread tells the planner.
enum Feedback {
    /// The file system took only `written` bytes of file `id` (its length now).
    Short {
        id: u64,
        written: u64,
    },
    Error(io::Error),
}

/// The threads that issue the operations, and their queues.
pub struct Pool {
    queues: Vec<SyncSender<Vec<Job>>>,
    batches: Vec<Vec<Job>>,
    feedback: Receiver<Feedback>,
    threads: Vec<JoinHandle<ExecCounts>>,
    written: Arc<AtomicU64>,
    errors: Vec<io::Error>,
}

impl Pool {
    /// `None` with one thread (the operations run in the planning thread, as always).
    pub fn start(root: &Path, args: &AgeArgs) -> io::Result<Option<Pool>> {
        if args.threads <= 1 {
            return Ok(None);
        }
        let (fb, feedback) = mpsc::channel();
        let written = Arc::new(AtomicU64::new(0));
        let mut pool = Pool {
            queues: Vec::new(),
            batches: Vec::new(),
            feedback,
            threads: Vec::new(),
            written: written.clone(),
            errors: Vec::new(),
        };
        for i in 0..args.threads {
            // The same seed as the planning thread's executor: the same bytes at each offset.
            let ex = Exec::new(root, args.seed, args.writeback(), None)?;
            let (tx, rx) = mpsc::sync_channel(QUEUE);
            let (fb, written) = (fb.clone(), written.clone());
            let t = std::thread::Builder::new()
                .name(format!("age-{i}"))
                .spawn(move || work(ex, rx, fb, written))?;
            pool.queues.push(tx);
            pool.batches.push(Vec::with_capacity(BATCH));
            pool.threads.push(t);
        }
        Ok(Some(pool))
    }

    /// Bytes the threads have written so far.
    pub fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Log `op` and hand it to its thread (a mkdir runs here, before anything is handed out
    /// that needs it). An error returned is one a thread met earlier.
    pub fn submit(
        &mut self,
        pl: &mut Planner,
        ex: &mut Exec,
        op: &Op,
        clock: u64,
        rel: &mut String,
    ) -> io::Result<()> {
        self.drain(pl);
        // Sets `rel` to the file's path for file operations.
        exec::log_op(pl, ex, op, clock, rel)?;
        let dir_of = |id: u64| pl.file(id).map_or(0, |f| f.dir);
        let (id, dir, kind) = match *op {
            Op::Mkdir { dir } => return ex.mkdir(pl.dirs[dir as usize].path.as_bytes()),
            Op::Create { id, dir, write, .. } => (id, dir, Kind::Create { write }),
            Op::Append { id, off, len } => (id, dir_of(id), Kind::Append { off, len }),
            Op::Overwrite { id, off, len } => (id, dir_of(id), Kind::Overwrite { off, len }),
            Op::Delete { id, dir } => (id, dir, Kind::Delete),
        };
        // By directory: a file never moves, and two threads do not queue on one directory's
        // lock.
        let t = dir as usize % self.queues.len();
        self.batches[t].push(Job {
            id,
            rel: rel.as_bytes().to_vec(),
            kind,
        });
        if self.batches[t].len() >= BATCH {
            self.flush(t)?;
        }
        match self.errors.pop() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn flush(&mut self, t: usize) -> io::Result<()> {
        let batch = std::mem::replace(&mut self.batches[t], Vec::with_capacity(BATCH));
        self.queues[t]
            .send(batch)
            .map_err(|_| io::Error::other(format!("aging thread {t} stopped")))
    }

    /// Short writes go into the plan; errors are kept to be counted.
    fn drain(&mut self, pl: &mut Planner) {
        while let Ok(f) = self.feedback.try_recv() {
            match f {
                Feedback::Short { id, written } => pl.short_write(id, written),
                Feedback::Error(e) => self.errors.push(e),
            }
        }
    }

    /// Hand out what is left, wait for the threads, add their counts to `ex`'s; the errors
    /// not yet returned.
    pub fn finish(mut self, pl: &mut Planner, ex: &mut Exec) -> io::Result<Vec<io::Error>> {
        for t in 0..self.queues.len() {
            if !self.batches[t].is_empty() {
                self.flush(t)?;
            }
        }
        self.queues.clear();
        for t in std::mem::take(&mut self.threads) {
            let c = t
                .join()
                .map_err(|_| io::Error::other("an aging thread panicked"))?;
            ex.counts.add(&c);
        }
        self.drain(pl);
        Ok(std::mem::take(&mut self.errors))
    }
}

/// A thread: run each batch in order; report short writes and errors.
fn work(
    mut ex: Exec,
    rx: Receiver<Vec<Job>>,
    fb: Sender<Feedback>,
    written: Arc<AtomicU64>,
) -> ExecCounts {
    for batch in rx {
        let before = ex.counts.bytes_written;
        for j in batch {
            if let Some(f) = run(&mut ex, &j) {
                let _ = fb.send(f);
            }
        }
        written.fetch_add(ex.counts.bytes_written - before, Ordering::Relaxed);
    }
    ex.counts
}

/// One operation, as the one-thread path applies it.
fn run(ex: &mut Exec, j: &Job) -> Option<Feedback> {
    let short = |ex: &mut Exec, r: Result<(), exec::ShortWrite>, base: u64| match r {
        Ok(()) => None,
        Err(s) if exec::is_enospc(&s.error) => {
            ex.counts.enospc += 1;
            Some(Feedback::Short {
                id: j.id,
                written: base + s.written,
            })
        }
        Err(s) => Some(Feedback::Error(s.error)),
    };
    match j.kind {
        Kind::Create { write } => {
            let r = ex.create(&j.rel, write);
            short(ex, r, 0)
        }
        Kind::Append { off, len } => {
            let r = ex.write(&j.rel, off, len, true);
            short(ex, r, off)
        }
        Kind::Overwrite { off, len } => ex
            .write(&j.rel, off, len, false)
            .err()
            .map(|s| Feedback::Error(s.error)),
        Kind::Delete => ex.delete(&j.rel).err().map(Feedback::Error),
    }
}
