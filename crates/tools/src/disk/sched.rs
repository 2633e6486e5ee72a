//! fio's `ioscheduler` on a simulated disk: a run's jobs may switch the I/O scheduler of
//! the device under their files only when fsbench made that device (a running simulated
//! disk's loop device, `fsbench disk create`); any other device's settings are not
//! fsbench's to change (docs/safety.md). The old scheduler is set back when the run ends.

use super::loopdev;
use super::state::{self, StateDir};
use std::os::unix::fs::MetadataExt;

use fsbench_base::sys::iosched::active_scheduler as current;

/// The loop device of the running simulated disk whose device number is `dev`.
fn disk_device(dev: (u32, u32)) -> Option<String> {
    let want = libc::makedev(dev.0, dev.1);
    state::KIND.names().into_iter().find_map(|name| {
        let sd = StateDir::new(&name).ok()?;
        let ready = sd.read_ready()?;
        sd.live_pid()?;
        let m = std::fs::metadata(&ready.device).ok()?;
        (m.rdev() == want && loopdev_name(&ready.device)).then_some(ready.device)
    })
}

fn loopdev_name(dev: &str) -> bool {
    fsbench_base::daemon::owned::is_loop_path(dev)
}

/// The scheduler set for a run, set back to `old` when dropped.
pub struct Switched {
    dev: String,
    old: String,
}

impl fsbench_engine::engine::hooks::Restore for Switched {}

impl Drop for Switched {
    fn drop(&mut self) {
        if let Err(e) = loopdev::set_queue_attr(&self.dev, "scheduler", &self.old) {
            fsbench_base::errln!(
                "fsbench: warning: setting the I/O scheduler of {} back to {}: {e}",
                self.dev,
                self.old
            );
        }
    }
}

/// Switch the scheduler of the simulated disk `dev` to `name` as fio's
/// `switch_ioscheduler` does (write it, read it back: it must be the one in brackets);
/// `None` when `dev` is no simulated disk fsbench runs.
pub fn switch(dev: (u32, u32), name: &str) -> Option<Result<Switched, String>> {
    let path = disk_device(dev)?;
    Some((|| {
        let list = loopdev::get_queue_attr(&path, "scheduler")
            .ok_or_else(|| format!("{path}: no I/O scheduler to read"))?;
        let old = current(&list)
            .ok_or_else(|| format!("{path}: no scheduler in effect in `{list}`"))?
            .to_string();
        loopdev::set_queue_attr(&path, "scheduler", name).map_err(|e| {
            format!("setting the I/O scheduler of {path} to {name}: {e} (it offers: {list})")
        })?;
        let guard = Switched {
            dev: path.clone(),
            old,
        };
        let now = loopdev::get_queue_attr(&path, "scheduler").unwrap_or_default();
        if current(&now) != Some(name) {
            return Err(format!(
                "{path}: the I/O scheduler is `{now}` after setting {name} (fio: unable to set io scheduler)"
            ));
        }
        Ok(guard)
    })())
}
