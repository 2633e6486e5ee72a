//! Interruption: SIGINT, SIGTERM and SIGHUP all mean "stop, report, clean up".
//!
//! The first signal sets [`interrupted`]: a run stops its workers, prints what it measured and
//! removes what it created. A second signal sets [`hurried`] as well: clean-up that would take
//! long (deleting a large run directory) stops at once, and the command says what it left and
//! how to remove it; undoing system state (unmounting, detaching a loop device) still runs. A
//! third signal ends the process the default way, for a user who wants out at any cost.
//!
//! The handler counts signals in an atomic and passes them on to what this process started
//! (see [`crate::created`]): each signal goes on as SIGTERM to the process groups of the
//! children registered with [`forward_to`], so a child fsbench stops and cleans up as its
//! parent does; the third kills those groups and every cgroup registered with
//! [`kill_on_exit`] before the process ends, so nothing it started outlives it. Only
//! async-signal-safe calls (`kill`, `write`, `signal`, `raise`) run in the handler, on
//! process groups and descriptors stored in atomics beforehand.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

/// How many interrupting signals have arrived.
static SIGNALS: AtomicU32 = AtomicU32::new(0);

const CAUGHT: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Process groups that get each signal passed on (0: a free slot).
static GROUPS: [AtomicI32; 32] = [const { AtomicI32::new(0) }; 32];
/// Open `cgroup.kill` files written on the third signal (-1: a free slot).
static KILLS: [AtomicI32; 16] = [const { AtomicI32::new(-1) }; 16];
static INSTALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    let n = SIGNALS.fetch_add(1, Ordering::SeqCst) + 1;
    let pass = if n >= 3 { libc::SIGKILL } else { libc::SIGTERM };
    for g in &GROUPS {
        let g = g.load(Ordering::SeqCst);
        if g > 0 {
            // SAFETY: kill(2) is async-signal-safe; the group is a child's we started.
            unsafe { libc::kill(-g, pass) };
        }
    }
    if n >= 3 {
        for k in &KILLS {
            let fd = k.load(Ordering::SeqCst);
            if fd >= 0 {
                // SAFETY: write(2) is async-signal-safe; the descriptor is held open by the
                // registration.
                unsafe { libc::write(fd, b"1".as_ptr().cast(), 1) };
            }
        }
        // SAFETY: signal(2) and raise(3) are async-signal-safe; the default action ends
        // the process.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// Take a free slot of `slots` for `value` (`free` marks a free slot): its index, or `None`
/// when all are taken (the value then gets no signal passed on; its guard still acts).
fn take_slot(slots: &[AtomicI32], free: i32, value: i32) -> Option<usize> {
    slots.iter().position(|s| {
        s.compare_exchange(free, value, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    })
}

/// A registration of [`forward_to`] or [`kill_on_exit`]; dropping it ends it.
#[derive(Debug)]
pub struct Slot {
    slots: &'static [AtomicI32],
    index: Option<usize>,
    free: i32,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(i) = self.index {
            self.slots[i].store(self.free, Ordering::SeqCst);
        }
    }
}

/// Pass every interrupting signal on to process group `pgid` (a child started in its own
/// group) while the returned slot lives. A signal that came before the registration is
/// passed on now.
pub fn forward_to(pgid: i32) -> Slot {
    let index = take_slot(&GROUPS, 0, pgid);
    if interrupted() {
        // SAFETY: signalling the group of a child this process started.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
    }
    Slot {
        slots: &GROUPS,
        index,
        free: 0,
    }
}

/// On the third signal, write `1` to `fd` (an open `cgroup.kill`) before the process ends;
/// the descriptor must stay open while the returned slot lives.
pub fn kill_on_exit(fd: i32) -> Slot {
    Slot {
        slots: &KILLS,
        index: take_slot(&KILLS, -1, fd),
        free: -1,
    }
}

/// What a command returns when a signal stopped it; `exit` turns it into status 130.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// `Err(Interrupted)` once a signal has arrived: the check long loops make between steps.
pub fn check() -> Result<(), Interrupted> {
    if interrupted() {
        Err(Interrupted)
    } else {
        Ok(())
    }
}

/// [`check`] as an I/O error, for loops whose errors are I/O errors (not of kind
/// `Interrupted`, which the standard library's readers and writers retry).
pub fn check_io() -> std::io::Result<()> {
    check().map_err(std::io::Error::other)
}

/// Route SIGINT, SIGTERM and SIGHUP to the counter (once; later calls do nothing).
pub fn install_signal_handlers() {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    // SAFETY: the handler only touches an atomic and async-signal-safe calls.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = 0;
        libc::sigemptyset(&mut sa.sa_mask);
        for s in CAUGHT {
            libc::sigaction(s, &sa, std::ptr::null_mut());
        }
    }
}

/// Whether the user asked the command to stop (one signal or more).
pub fn interrupted() -> bool {
    SIGNALS.load(Ordering::Relaxed) >= 1
}

/// Whether the user asked twice: long clean-up is cut short.
pub fn hurried() -> bool {
    SIGNALS.load(Ordering::Relaxed) >= 2
}

/// Act as if a signal had arrived (used by tests and by code that stops on its own).
pub fn interrupt() {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}
