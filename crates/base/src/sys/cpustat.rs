//! The machine's CPU time (`/proc/stat`, its `cpu` line: every CPU together), so that a
//! measurement can say how busy the machine was over its window: a throughput curve that
//! flattens with the CPUs busy is the machine's limit, not the file system's.

/// The machine's CPU time so far, in clock ticks: busy (user, nice, system, irq, softirq,
/// steal) and in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    pub busy: u64,
    pub total: u64,
}

impl CpuTimes {
    /// The busy CPU seconds (summed over the CPUs) between `earlier` and `self`.
    pub fn busy_s_since(self, earlier: CpuTimes) -> f64 {
        // SAFETY: sysconf takes no pointer.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        self.busy.saturating_sub(earlier.busy) as f64 / hz
    }
}

/// Parse the `cpu` line of `/proc/stat`.
fn parse(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal (guest time is counted in user).
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
    Some(CpuTimes {
        busy,
        total: busy + at(3) + at(4),
    })
}

/// The machine's CPU time now; `None` where there is no `/proc/stat`.
pub fn now() -> Option<CpuTimes> {
    parse(&std::fs::read_to_string("/proc/stat").ok()?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_cpu_line_splits_into_busy_and_idle() {
        let t = super::parse("cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!(t.busy, 161);
        assert_eq!(t.total, 1181);
        assert!(super::parse("intr 1 2\n").is_none());
        let now = super::now().unwrap();
        assert!(now.total >= now.busy);
    }
}
