//! Keeping a thread on one CPU for a while, and letting it go again.
//!
//! ext4 gives small files their blocks from a preallocation of the CPU that allocates them
//! (its per-CPU "locality group"), so a writer that moves between CPUs lays small files out in
//! as many places as it visited CPUs, in an order the scheduler decides. Aging holds its
//! thread on one CPU, always the same one, while it writes.

use std::io;

/// The calling thread's CPU affinity before [`pin_to_first_cpu`]; restored on drop.
pub struct Pinned {
    before: libc::cpu_set_t,
    /// The CPU the thread runs on.
    pub cpu: usize,
}

/// Hold the calling thread on the first CPU it is allowed (the same CPU every time on one
/// machine and one affinity), until the returned guard drops.
pub fn pin_to_first_cpu() -> io::Result<Pinned> {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: a zeroed cpu_set_t is a valid empty set for sched_getaffinity to fill.
    let mut before: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `before` is a cpu_set_t of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut before) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let cpu = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: reading a bit of a valid set, within its size.
        .find(|&c| unsafe { libc::CPU_ISSET(c, &before) })
        .ok_or_else(|| io::Error::other("the thread may run on no CPU"))?;
    // SAFETY: as above; the set holds one CPU the thread is allowed.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut one) };
    // SAFETY: `one` is a valid set of `size` bytes.
    if unsafe { libc::sched_setaffinity(0, size, &one) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Pinned { before, cpu })
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: `before` was filled by sched_getaffinity.
        unsafe { libc::sched_setaffinity(0, size, &self.before) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_and_lets_go() {
        let count = || {
            let mut s: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut s) };
            unsafe { libc::CPU_COUNT(&s) }
        };
        let all = count();
        {
            let p = pin_to_first_cpu().unwrap();
            assert_eq!(count(), 1);
            assert_eq!(unsafe { libc::sched_getcpu() } as usize, p.cpu);
        }
        assert_eq!(count(), all);
    }
}
