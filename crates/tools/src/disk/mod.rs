//! Simulated disks: an HDD model under a real block device.
//!
//! Modern test machines (SSDs, VMs) hide the cost of seeks and rotation, so
//! effects that depend on them (fragmentation, I/O scheduler idling) cannot be
//! measured there. `fsbench disk create` makes them measurable anywhere:
//!
//! ```text
//!  mkfs / mount / benchmark
//!          │
//!   /dev/loopN  (rotational=1, direct I/O, any I/O scheduler)
//!          │     O_DIRECT reads/writes of the backing file
//!   STATE/fuse/disk  ── FUSE ──▶  fsbench disk serve  (this module)
//!                                   │ model.rs: seek + rotation + transfer,
//!                                   │ read-ahead cache, FIFO or SPTF queue
//!                                   ▼
//!                              image file (pread/pwrite, fdatasync on fsync)
//! ```
//!
//! The server answers each READ/WRITE only when the modelled drive would have
//! finished it, so everything above the loop device (page cache, file system,
//! scheduler) sees the timing of a disk. See docs/disk.md.
//!
//! * [`model`] — the pure drive model, unit-tested.
//! * [`server`] — the FUSE server (kernel protocol spoken directly, no libfuse)
//!   and its lifecycle: mount, loop device, signals, statistics.
//! * [`loopdev`] — loop-device ioctls and sysfs knobs.
//! * [`state`] — the state directory: configuration, pid, statistics (what every
//!   daemon's holds, and what fsbench mounted or attached, in [`fsbench_base::daemon`]).
//! * [`cli`] — `fsbench disk create|list|stats|remove|models`.

pub mod cli;
pub mod lateness;
pub mod loopdev;
pub mod model;
pub mod sched;
pub mod server;
pub mod state;

/// What simulated disks add to every measurement: a watch on the disk under the measured
/// directory.
struct DiskHooks;

impl fsbench_engine::engine::hooks::Hooks for DiskHooks {
    fn probe(
        &self,
        dir: &std::path::Path,
    ) -> Option<Box<dyn fsbench_engine::engine::hooks::Probe>> {
        lateness::Probe::start(dir)
            .map(|p| Box::new(p) as Box<dyn fsbench_engine::engine::hooks::Probe>)
    }
    fn scheduler(
        &self,
        dev: (u32, u32),
        name: &str,
    ) -> Option<Result<Box<dyn fsbench_engine::engine::hooks::Restore>, String>> {
        let r = sched::switch(dev, name)?;
        Some(r.map(|g| Box::new(g) as Box<dyn fsbench_engine::engine::hooks::Restore>))
    }
}

/// Register the simulated disks' hooks with the engine (once, at start-up).
pub fn register_hooks() {
    fsbench_engine::engine::hooks::register(&DiskHooks);
}
