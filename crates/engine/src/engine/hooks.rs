//! What benchmarks above the engine add to every measurement, registered at start-up (the
//! way [`fsbench_base::cluster`] is installed) so that the engine knows nothing of them: emptying
//! the client caches of simulated remotes when caches are dropped, and watching the
//! simulated disk under a measured directory.

use fsbench_results::stats::Results;
use std::path::Path;
use std::sync::RwLock;

/// A watch on the device or remote under a measured directory, started right before the
/// measured window and read right after it.
pub trait Probe {
    /// What the device or remote did during the window, into `r` (its notes too).
    fn record(&self, r: &mut Results);
}

/// A device setting changed for a run; dropping it sets the old one back.
pub trait Restore {}

/// One registrant's additions; every method has a default that does nothing.
pub trait Hooks: Send + Sync {
    /// After the kernel's caches were dropped: drop caches the kernel does not know of.
    fn drop_caches(&self) -> Result<(), String> {
        Ok(())
    }
    /// Start watching the device or remote under `dir`, if this registrant knows it.
    fn probe(&self, _dir: &Path) -> Option<Box<dyn Probe>> {
        None
    }
    /// Set the I/O scheduler of block device `dev` (major, minor) to `name` for a run, if
    /// this registrant made the device (fsbench changes no other device's settings).
    fn scheduler(&self, _dev: (u32, u32), _name: &str) -> Option<Result<Box<dyn Restore>, String>> {
        None
    }
}

/// Process-wide: registrants are kinds of device fsbench can make (simulated disks and
/// remotes), registered once at start-up by the binary, not options of a run.
static HOOKS: RwLock<Vec<&'static dyn Hooks>> = RwLock::new(Vec::new());

/// Add a registrant (once per kind, at start-up).
pub fn register(h: &'static dyn Hooks) {
    HOOKS.write().unwrap_or_else(|p| p.into_inner()).push(h);
}

fn all() -> Vec<&'static dyn Hooks> {
    HOOKS.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Drop every registered cache; the first failure is returned after all were tried.
pub fn drop_caches() -> Result<(), String> {
    let mut first = Ok(());
    for h in all() {
        if let Err(e) = h.drop_caches() {
            first = first.and(Err(e));
        }
    }
    first
}

/// Every registrant's watch on what lies under `dir`.
pub fn probes(dir: &Path) -> Vec<Box<dyn Probe>> {
    all().into_iter().filter_map(|h| h.probe(dir)).collect()
}

/// Switch the I/O scheduler of device `dev` for a run (fio's `ioscheduler`), through the
/// registrant that made it; `None` when none did.
pub fn scheduler(dev: (u32, u32), name: &str) -> Option<Result<Box<dyn Restore>, String>> {
    all().into_iter().find_map(|h| h.scheduler(dev, name))
}
