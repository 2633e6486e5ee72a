//! Who dropped the kernel's caches: the kernel counts every write to
//! `/proc/sys/vm/drop_caches` (`drop_pagecache` in `/proc/vmstat`, Linux 4.1 and later),
//! and this process counts its own, so a measurement can tell whether another process
//! dropped them while it ran (a warm run that ran partly cold).

use std::sync::atomic::{AtomicU64, Ordering};

static OWN: AtomicU64 = AtomicU64::new(0);

/// Count one drop made by this process (after its write to `drop_caches` succeeded).
pub fn note_own() {
    OWN.fetch_add(1, Ordering::SeqCst);
}

/// The machine's and this process's drop counts at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    machine: u64,
    own: u64,
}

impl Count {
    /// Now; `None` where the kernel does not count drops (no `/proc/vmstat`, or too old).
    pub fn now() -> Option<Count> {
        let text = std::fs::read_to_string("/proc/vmstat").ok()?;
        Some(Count {
            machine: machine_drops(&text)?,
            own: OWN.load(Ordering::SeqCst),
        })
    }

    /// How many drops other processes made since `self` (`later` taken after it).
    pub fn others_since(self, later: Count) -> u64 {
        let machine = later.machine.saturating_sub(self.machine);
        let own = later.own.saturating_sub(self.own);
        machine.saturating_sub(own)
    }
}

/// The `drop_pagecache` count of a `/proc/vmstat` text.
fn machine_drops(vmstat: &str) -> Option<u64> {
    vmstat.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == "drop_pagecache").then(|| v.trim().parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_drop_count() {
        let t = "nr_free_pages 123\ndrop_pagecache 7231\ndrop_slab 7232\n";
        assert_eq!(machine_drops(t), Some(7231));
        assert_eq!(machine_drops("nr_free_pages 1\n"), None);
        assert_eq!(machine_drops("drop_pagecache x\n"), None);
    }

    #[test]
    fn own_drops_are_not_others() {
        let a = Count {
            machine: 10,
            own: 2,
        };
        assert_eq!(
            a.others_since(Count {
                machine: 11,
                own: 3
            }),
            0
        );
        assert_eq!(
            a.others_since(Count {
                machine: 13,
                own: 3
            }),
            2
        );
        assert_eq!(
            a.others_since(Count {
                machine: 10,
                own: 2
            }),
            0
        );
    }
}
