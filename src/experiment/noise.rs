//! The noise guard: how busy the host was with other work while a measurement ran.
//!
//! Before and after each measurement the runner reads every process's CPU time from
//! /proc/PID/stat. CPU time of processes outside fsbench's own tree (the runner and its
//! children) and outside the plan's simulated-disk servers, divided by the measurement's
//! wall time and the CPU count, is the fraction of the machine other work took. Kernel
//! threads are left out: they include the I/O work the measurement itself causes
//! (writeback, loop devices). The 1-minute load average is recorded beside it.

use std::collections::HashMap;
use std::time::Instant;

/// Per process: parent pid and CPU ticks (user + system).
pub struct Sample {
    at: Instant,
    procs: HashMap<i32, (i32, u64)>,
    pub load1: Option<f64>,
}

const PF_KTHREAD: u64 = 0x0020_0000;

fn parse_stat(text: &str) -> Option<(i32, u64, u64)> {
    // pid (comm) state ppid ... ; comm may hold spaces and parentheses: split at the last ')'.
    let close = text.rfind(')')?;
    let rest: Vec<&str> = text[close + 2..].split(' ').collect();
    // rest[0] = state (field 3); ppid is field 4, flags 9, utime 14, stime 15.
    let ppid = rest.get(1)?.parse().ok()?;
    let flags: u64 = rest.get(6)?.parse().ok()?;
    let ut: u64 = rest.get(11)?.parse().ok()?;
    let st: u64 = rest.get(12)?.parse().ok()?;
    Some((ppid, flags, ut + st))
}

pub fn sample() -> Sample {
    let mut procs = HashMap::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if let Some((ppid, flags, ticks)) = parse_stat(&text) {
                if flags & PF_KTHREAD == 0 {
                    procs.insert(pid, (ppid, ticks));
                }
            }
        }
    }
    let load1 = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()));
    Sample {
        at: Instant::now(),
        procs,
        load1,
    }
}

/// Fraction of the machine's CPU time used by other processes between two samples.
pub fn other_fraction(before: &Sample, after: &Sample, exclude: &[i32]) -> f64 {
    let me = std::process::id() as i32;
    let parent_of = |pid: i32| {
        after
            .procs
            .get(&pid)
            .or_else(|| before.procs.get(&pid))
            .map(|p| p.0)
    };
    let ours = |pid: i32| {
        let mut p = pid;
        for _ in 0..64 {
            if p == me || exclude.contains(&p) {
                return true;
            }
            match parent_of(p) {
                Some(pp) if pp > 1 => p = pp,
                _ => return false,
            }
        }
        false
    };
    let mut ticks = 0u64;
    for (pid, (_, t1)) in &after.procs {
        if ours(*pid) {
            continue;
        }
        let t0 = before.procs.get(pid).map_or(0, |p| p.1);
        ticks += t1.saturating_sub(t0);
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let wall = after.at.duration_since(before.at).as_secs_f64().max(1e-3);
    ticks as f64 / hz / (wall * cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields() {
        let s = "123 (a b) c) S 45 1 1 0 -1 4194560 10 0 0 0 7 3 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_stat(s), Some((45, 4194560, 10)));
    }
}
