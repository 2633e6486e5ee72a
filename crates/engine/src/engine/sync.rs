//! Run-wide synchronisation and pacing: semaphores (`semblock`/`sempost`), condition
//! variables (`block`/`wakeup`), the event generator (`eventgen` with `eventlimit`,
//! `iopslimit`, `opslimit`, `bwlimit`) and the run-wide counters the limits read.
//!
//! Everything here is created before the workers start and shared by reference. Every wait
//! checks the run's stop flag under its mutex, and [`Pacing::shutdown`] takes each mutex and
//! notifies after the flag is set, so no worker can sleep through the end of a run.
//!
//! Semantics follow Filebench (`flowop_library.c`):
//! - Each *instance* of a `semblock` flowop (one per thread that runs it) owns a pair of
//!   counters, as Filebench's pair of SysV semaphores: `lw` (posts received, starts at 0) and
//!   `hw` (room for posts, starts at `highwater`). `semblock value=V` adds V to `hw`, then
//!   waits until `lw >= V` and takes V from it. `sempost value=V target=T` adds V to `lw` of
//!   **every** instance of `T`; with `blocking` it first waits until that instance's
//!   `hw >= V` and takes V from it, so posters cannot run more than `highwater` ahead.
//! - `block` waits for the next `wakeup target=<block>` broadcast (a wakeup with nobody
//!   waiting is lost, as with Filebench's condition variable).
//! - The event generator is a token clock rather than a thread: event *n* (counted from the
//!   start of the run) becomes available at `n / rate` seconds. A consumer claims its events
//!   under a mutex, in arrival order, and sleeps until the last one is due. Events are thus
//!   spread evenly (Filebench's generator posts them in bursts), waiting threads are served
//!   first come first served, nothing spins, and `rate=0` (or no `eventgen`) costs nothing.
//!   Events nobody consumed stay available, as in Filebench's queue.

use super::Control;
use fsbench_model::model::{Flowop, FlowopKind, Num, Workload};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// One `semblock` instance's pair of counters.
#[derive(Debug, Default)]
pub struct Sem {
    /// (lw: posts available, hw: room for blocking posts)
    st: Mutex<(i64, i64)>,
    cv: Condvar,
}

impl Sem {
    /// `semblock`: make room for `v` more posts, then take `v` posts. False when stopping.
    pub fn block(&self, v: i64, ctl: &Control) -> bool {
        let mut g = self.st.lock().unwrap();
        g.1 += v;
        self.cv.notify_all();
        while g.0 < v {
            if ctl.stopping() {
                return false;
            }
            g = self.cv.wait(g).unwrap();
        }
        g.0 -= v;
        true
    }

    /// `sempost`: add `v` posts; with `blocking`, first wait for room. False when stopping.
    pub fn post(&self, v: i64, blocking: bool, ctl: &Control) -> bool {
        let mut g = self.st.lock().unwrap();
        if blocking {
            while g.1 < v {
                if ctl.stopping() {
                    return false;
                }
                g = self.cv.wait(g).unwrap();
            }
            g.1 -= v;
        }
        g.0 += v;
        self.cv.notify_all();
        true
    }

    fn wake(&self) {
        let _g = self.st.lock().unwrap();
        self.cv.notify_all();
    }
}

/// A `block` flowop's condition: a generation number bumped by each `wakeup`.
#[derive(Debug, Default)]
pub struct Cond {
    gen: Mutex<u64>,
    cv: Condvar,
}

impl Cond {
    /// Wait for the next wakeup. False when stopping.
    pub fn wait(&self, ctl: &Control) -> bool {
        let mut g = self.gen.lock().unwrap();
        let seen = *g;
        while *g == seen {
            if ctl.stopping() {
                return false;
            }
            g = self.cv.wait(g).unwrap();
        }
        true
    }

    pub fn broadcast(&self) {
        let mut g = self.gen.lock().unwrap();
        *g += 1;
        self.cv.notify_all();
    }
}

/// The run's event generator, as a token clock (see the module comment).
#[derive(Debug)]
pub struct EventGen {
    rate: f64,
    /// (start of the run, events claimed so far)
    st: Mutex<(Instant, u64)>,
    cv: Condvar,
}

impl EventGen {
    pub fn new(rate: f64) -> EventGen {
        EventGen {
            rate,
            st: Mutex::new((Instant::now(), 0)),
            cv: Condvar::new(),
        }
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Start the clock (when the workers are released).
    pub fn start(&self) {
        *self.st.lock().unwrap() = (Instant::now(), 0);
    }

    /// Take `n` events, sleeping until the last is due. False when stopping.
    pub fn take(&self, n: u64, ctl: &Control) -> bool {
        let mut g = self.st.lock().unwrap();
        g.1 += n;
        let due = g.0 + Duration::from_secs_f64(g.1 as f64 / self.rate);
        loop {
            if ctl.stopping() {
                return false;
            }
            let now = Instant::now();
            if now >= due {
                return true;
            }
            g = self.cv.wait_timeout(g, due - now).unwrap().0;
        }
    }

    fn wake(&self) {
        let _g = self.st.lock().unwrap();
        self.cv.notify_all();
    }
}

/// Run-wide totals read by `iopslimit`/`opslimit`/`bwlimit` without `target=` (Filebench's
/// per-process `controlstats`; here global to the run). Kept only when such a flowop exists.
#[derive(Debug, Default)]
pub struct RunCounts {
    /// Operations of flowops that do I/O or metadata operations.
    pub ops: AtomicU64,
    /// Reads and writes.
    pub rw_ops: AtomicU64,
    /// Bytes read and written.
    pub rw_bytes: AtomicU64,
}

/// Every synchronisation and pacing object of a run.
#[derive(Debug, Default)]
pub struct Pacing {
    sems: Vec<Sem>,
    /// semblock name → its instances (indices into `sems`).
    sem_targets: HashMap<String, Vec<usize>>,
    /// semblock name → worker index → that worker's instance.
    sem_own: HashMap<String, HashMap<u64, usize>>,
    conds: HashMap<String, Cond>,
    /// `None`: no eventgen, or rate 0: limit flowops return at once.
    pub events: Option<EventGen>,
    /// Whether workers must add to `counts` (a limit flowop without target, and a rate).
    pub count_run: bool,
    pub counts: RunCounts,
}

fn walk<'a>(f: &'a Flowop, out: &mut Vec<&'a Flowop>) {
    out.push(f);
    for c in &f.children {
        walk(c, out);
    }
}

fn const_or_mean(n: &Num, wl: &Workload) -> i64 {
    match n {
        Num::Const(v) => *v,
        Num::Rand(_) => n.mean(&wl.randvars).round() as i64,
    }
}

impl Pacing {
    /// Create the objects for `wl`. Workers are numbered in the order `measure` spawns them.
    pub fn new(wl: &Workload) -> Pacing {
        let mut p = Pacing::default();
        let mut widx = 0u64;
        for proc in &wl.processes {
            for _ in 0..proc.instances {
                for t in &proc.threads {
                    let mut fl = Vec::new();
                    for f in &t.flowops {
                        walk(f, &mut fl);
                    }
                    for _ in 0..t.instances {
                        for f in &fl {
                            match f.kind {
                                FlowopKind::SemBlock => {
                                    let own = p.sem_own.entry(f.name.clone()).or_default();
                                    if own.contains_key(&widx) {
                                        continue;
                                    }
                                    let hw = const_or_mean(&f.highwater, wl);
                                    let i = p.sems.len();
                                    p.sems.push(Sem {
                                        st: Mutex::new((0, hw)),
                                        cv: Condvar::new(),
                                    });
                                    own.insert(widx, i);
                                    p.sem_targets.entry(f.name.clone()).or_default().push(i);
                                }
                                FlowopKind::Block => {
                                    p.conds.entry(f.name.clone()).or_default();
                                }
                                _ => {}
                            }
                        }
                        widx += 1;
                    }
                }
            }
        }
        let rate = wl
            .eventgen_rate
            .as_ref()
            .map(|r| r.mean(&wl.randvars))
            .unwrap_or(0.0);
        if rate > 0.0 {
            p.events = Some(EventGen::new(rate));
            p.count_run = wl.all_flowops().iter().any(|f| {
                matches!(
                    f.kind,
                    FlowopKind::IopsLimit | FlowopKind::OpsLimit | FlowopKind::BwLimit
                ) && f.target.is_none()
            });
        }
        p
    }

    /// The calling worker's instance of semblock `name`.
    pub fn own_sem(&self, name: &str, worker: u64) -> Option<&Sem> {
        let i = *self.sem_own.get(name)?.get(&worker)?;
        Some(&self.sems[i])
    }

    /// Every instance of semblock `name`.
    pub fn sem_targets(&self, name: &str) -> impl Iterator<Item = &Sem> {
        self.sem_targets
            .get(name)
            .into_iter()
            .flatten()
            .map(|i| &self.sems[*i])
    }

    pub fn cond(&self, name: &str) -> Option<&Cond> {
        self.conds.get(name)
    }

    /// Start the event clock when the workers are released.
    pub fn start(&self) {
        if let Some(e) = &self.events {
            e.start();
        }
    }

    /// Wake every waiter; call after setting the stop flag.
    pub fn shutdown(&self) {
        for s in &self.sems {
            s.wake();
        }
        for c in self.conds.values() {
            let _g = c.gen.lock().unwrap();
            c.cv.notify_all();
        }
        if let Some(e) = &self.events {
            e.wake();
        }
    }

    #[inline]
    pub fn count(&self, rw: bool, bytes: u64) {
        self.counts.ops.fetch_add(1, Ordering::Relaxed);
        if rw {
            self.counts.rw_ops.fetch_add(1, Ordering::Relaxed);
            self.counts.rw_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semaphore_highwater_and_stop() {
        let ctl = Control::default();
        let s = Sem {
            st: Mutex::new((0, 2)),
            cv: Condvar::new(),
        };
        assert!(s.post(1, true, &ctl));
        assert!(s.post(1, true, &ctl));
        // No room left: a blocking post waits; a stop releases it.
        std::thread::scope(|sc| {
            let h = sc.spawn(|| s.post(1, true, &ctl));
            std::thread::sleep(Duration::from_millis(50));
            assert!(!h.is_finished());
            assert!(s.block(3, &ctl));
            assert!(h.join().unwrap());
        });
        let g = s.st.lock().unwrap();
        assert_eq!(*g, (0, 2), "block made room for 3, the waiting post used 1");
        drop(g);
        std::thread::scope(|sc| {
            let h = sc.spawn(|| s.block(5, &ctl));
            std::thread::sleep(Duration::from_millis(30));
            ctl.stop();
            s.wake();
            assert!(!h.join().unwrap());
        });
    }

    #[test]
    fn eventgen_paces_evenly() {
        let ctl = Control::default();
        let e = EventGen::new(1000.0);
        e.start();
        let t0 = Instant::now();
        for _ in 0..100 {
            assert!(e.take(1, &ctl));
        }
        let dt = t0.elapsed().as_secs_f64();
        assert!((0.09..0.2).contains(&dt), "{dt}");
    }
}
