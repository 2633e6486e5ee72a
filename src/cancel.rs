//! Interruption: SIGINT, SIGTERM and SIGHUP all mean "stop, report, clean up".
//!
//! The first signal sets [`interrupted`]: a run stops its workers, prints what it measured and
//! removes what it created. A second signal sets [`hurried`] as well: clean-up that would take
//! long (deleting a large run directory) stops at once, and the command says what it left and
//! how to remove it; undoing system state (unmounting, detaching a loop device) still runs. A
//! third signal ends the process the default way, for a user who wants out at any cost.
//!
//! The handler only counts signals in an atomic, which is all a signal handler may safely do.

use std::sync::atomic::{AtomicU32, Ordering};

/// How many interrupting signals have arrived.
static SIGNALS: AtomicU32 = AtomicU32::new(0);

const CAUGHT: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_signal(sig: libc::c_int) {
    let n = SIGNALS.fetch_add(1, Ordering::SeqCst) + 1;
    if n >= 3 {
        // SAFETY: signal(2) and raise(3) are async-signal-safe; the default action ends
        // the process.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// Route SIGINT, SIGTERM and SIGHUP to the counter.
pub fn install_signal_handlers() {
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
