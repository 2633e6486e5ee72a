//! What the machine can give, asked before anything is planned, allocated or spawned.
//!
//! A workload or a command line can ask for a trillion files or a hundred thousand threads in
//! a dozen characters. Finding out by trying costs minutes of planning, gigabytes of memory, a
//! visit from the kernel's OOM killer, or a panic deep inside the thread library (the
//! alternative signal stack of a new thread is mapped after the thread exists, and Rust's
//! runtime aborts when that fails). So every consumer estimates what it will need from its
//! parameters first and asks here; the answer is an error that gives the numbers and names
//! the value to lower.

use std::fs;

/// Memory mappings a thread costs: its stack and guard page, its alternative signal stack
/// and guard page, and one to spare for allocator arenas.
const MAPS_PER_THREAD: u64 = 5;
/// Stack a thread touches in practice (its virtual stack is larger but never resident).
pub const THREAD_STACK_TOUCHED: u64 = 64 << 10;
/// Share of the available memory a run may plan to use.
const MEMORY_SHARE: f64 = 0.9;

/// Limits read from the kernel, once per question.
#[derive(Debug, Clone)]
pub struct Machine {
    /// MemAvailable, bounded by what RLIMIT_AS still allows this process.
    pub mem_available: u64,
    /// Where the memory figure comes from (for messages).
    pub mem_source: &'static str,
    /// Threads that may still be created, and the limit that decides it.
    pub threads_left: u64,
    pub threads_reason: String,
    /// Address space left under RLIMIT_AS, when it is set: every thread's stack and signal
    /// stack are mapped from it whether touched or not.
    pub as_left: Option<u64>,
}

/// Address space a thread maps: its stack (2 MiB at most for fsbench's threads) and its
/// alternative signal stack with guard pages.
const THREAD_VIRTUAL: u64 = (2 << 20) + (64 << 10);

fn read_u64(path: &str) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn meminfo(key: &str) -> Option<u64> {
    let text = fs::read_to_string("/proc/meminfo").ok()?;
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    })
}

fn rlimit(res: libc::__rlimit_resource_t) -> Option<u64> {
    // SAFETY: getrlimit writes the struct.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(res, &mut r) != 0 || r.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        Some(r.rlim_cur)
    }
}

/// This process's virtual size, from /proc/self/statm (pages).
fn vm_size() -> u64 {
    let page = 4096;
    fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map(|p| p * page)
        .unwrap_or(0)
}

impl Machine {
    pub fn probe() -> Machine {
        let (mut mem, mut src) = match meminfo("MemAvailable") {
            Some(m) => (m, "available memory (MemAvailable)"),
            None => (u64::MAX, "memory"),
        };
        let as_left = rlimit(libc::RLIMIT_AS).map(|l| l.saturating_sub(vm_size()));
        if let Some(as_limit) = rlimit(libc::RLIMIT_AS) {
            let left = as_limit.saturating_sub(vm_size());
            if left < mem {
                mem = left;
                src = "address space left under RLIMIT_AS";
            }
        }
        // Tasks on the whole system: the fourth field of /proc/loadavg is running/total.
        let tasks = fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|s| s.split_whitespace().nth(3)?.split('/').nth(1)?.parse().ok())
            .unwrap_or(0u64);
        let mut limits: Vec<(u64, String)> = Vec::new();
        if let Some(tm) = read_u64("/proc/sys/kernel/threads-max") {
            limits.push((
                tm.saturating_sub(tasks),
                format!("kernel.threads-max is {tm} with {tasks} tasks running"),
            ));
        }
        if let Some(pm) = read_u64("/proc/sys/kernel/pid_max") {
            limits.push((
                pm.saturating_sub(tasks),
                format!("kernel.pid_max is {pm} with {tasks} tasks running"),
            ));
        }
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if let (false, Some(np)) = (root, rlimit(libc::RLIMIT_NPROC)) {
            limits.push((
                np.saturating_sub(tasks),
                format!("RLIMIT_NPROC (ulimit -u) is {np}"),
            ));
        }
        if let Some(mm) = read_u64("/proc/sys/vm/max_map_count") {
            let maps = fs::read_to_string("/proc/self/maps")
                .map(|s| s.lines().count() as u64)
                .unwrap_or(0);
            limits.push((
                mm.saturating_sub(maps) / MAPS_PER_THREAD,
                format!(
                    "vm.max_map_count is {mm} and each thread needs {MAPS_PER_THREAD} mappings"
                ),
            ));
        }
        if let Some(left) = as_left {
            limits.push((
                left / THREAD_VIRTUAL / 2,
                format!(
                    "RLIMIT_AS (ulimit -v) leaves {} of address space and each thread maps {}",
                    crate::units::human_bytes(left as f64),
                    crate::units::human_bytes(THREAD_VIRTUAL as f64)
                ),
            ));
        }
        let (threads_left, threads_reason) = limits
            .into_iter()
            .min_by_key(|(n, _)| *n)
            .unwrap_or((u64::MAX, "no limit found".into()));
        Machine {
            mem_available: mem,
            mem_source: src,
            threads_left,
            threads_reason,
            as_left,
        }
    }

    /// Memory a plan may use.
    pub fn memory_budget(&self) -> u64 {
        (self.mem_available as f64 * MEMORY_SHARE) as u64
    }

    /// Refuse `n` threads (asked for by `what`, e.g. `--clients 100000`) when the machine
    /// cannot create them, or cannot hold `per_thread` bytes for each.
    pub fn check_threads(&self, n: u64, per_thread: u64, what: &str) -> Result<(), String> {
        if n > self.threads_left {
            return Err(format!(
                "{what} asks for {n} threads, but this machine can start at most {} more ({}); lower it",
                self.threads_left, self.threads_reason
            ));
        }
        let need = n.saturating_mul(per_thread.saturating_add(THREAD_STACK_TOUCHED));
        self.check_memory(need, &format!("{n} threads ({what})"))
    }

    /// Refuse to go on when `need` bytes exceed what the machine has.
    pub fn check_memory(&self, need: u64, what: &str) -> Result<(), String> {
        if need > self.memory_budget() {
            return Err(format!(
                "{what} would need {} of memory, but this machine has {} of {}; lower it",
                crate::units::human_bytes(need as f64),
                crate::units::human_bytes(self.mem_available as f64),
                self.mem_source
            ));
        }
        Ok(())
    }
}

/// Spawn a scoped thread, turning the standard library's panic on failure into an error that
/// says what could not be started.
pub fn spawn_scoped<'scope, 'env, F, T>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    name: String,
    f: F,
) -> Result<std::thread::ScopedJoinHandle<'scope, T>, String>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    std::thread::Builder::new()
        .name(name.clone())
        .stack_size(2 << 20)
        .spawn_scoped(s, f)
        .map_err(|e| format!("cannot start thread {name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_finds_limits() {
        let m = Machine::probe();
        assert!(m.mem_available > 0);
        assert!(m.threads_left > 0, "{}", m.threads_reason);
    }

    #[test]
    fn absurd_requests_are_refused_with_the_numbers() {
        let m = Machine::probe();
        let e = m
            .check_threads(u64::MAX, 0, "--clients 18446744073709551615")
            .unwrap_err();
        assert!(e.contains("--clients 18446744073709551615"), "{e}");
        assert!(e.contains("at most"), "{e}");
        let e = m.check_memory(u64::MAX, "memsize=16e").unwrap_err();
        assert!(e.contains("memsize=16e") && e.contains("of memory"), "{e}");
        m.check_threads(1, 4096, "one").unwrap();
    }
}
