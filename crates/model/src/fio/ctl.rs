//! fio's options about how a job runs rather than what it reads and writes, read here to
//! keep `job.rs` short: buffer refills (`refill_buffers`), timing left out of the reports
//! (`gtod_reduce`, `disable_lat`, `disable_clat`, `disable_slat`, `disable_bw_measurement`),
//! how jobs and errors end (`exitall`, `continue_on_error`), the queue's low-water mark
//! (`iodepth_low`), the device's scheduler (`ioscheduler`), the thread's CPUs and priorities
//! (`cpus_allowed`, `cpus_allowed_policy`, `nice`, `prio`, `prioclass`) and the verify
//! phase's (`verify_only`, `verify_backlog_batch`). Each as fio 3.33's `options.c` reads it.

use super::ini::Opt;
use super::value;

/// fio's `continue_on_error` kinds (its `ERROR_TYPE_*` bits).
pub const ON_READ: u8 = 1;
pub const ON_WRITE: u8 = 2;
pub const ON_VERIFY: u8 = 4;

/// A job's run options, as fio's defaults have them until given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobCtl {
    /// `refill_buffers`, when given (fio turns it on itself for verify and compression).
    pub refill: Option<bool>,
    /// `disable_lat`, `disable_clat`, `disable_slat`, `disable_bw_measurement` (all four
    /// with `gtod_reduce`).
    pub no_lat: bool,
    pub no_clat: bool,
    pub no_slat: bool,
    pub no_bw: bool,
    /// `gtod_reduce=1` was given (it also turns every percentile off, as fio's callback).
    pub gtod_reduce: bool,
    pub exitall: bool,
    /// `continue_on_error`: [`ON_READ`], [`ON_WRITE`], [`ON_VERIFY`] bits.
    pub continue_on: u8,
    /// `iodepth_low` (0: not given, the depth).
    pub depth_low: u32,
    pub ioscheduler: Option<String>,
    /// `cpus_allowed` (sorted, each once), and `cpus_allowed_policy=split`.
    pub cpus: Option<Vec<usize>>,
    pub cpus_split: bool,
    /// `nice` (an increment, -20 to 19), `prio` (0 to 7) and `prioclass` (0 to 3), when
    /// given.
    pub nice: i32,
    pub prio: Option<u32>,
    pub prioclass: Option<u32>,
    pub verify_only: bool,
    /// `verify_backlog_batch` (0: not given, the backlog).
    pub verify_batch: u64,
    pub verify_dump: bool,
    /// `verify_async` (threads; 0: none).
    pub verify_async: u32,
}

/// fio's `continue_on_error` values.
fn continue_on(v: &str) -> Result<u8, String> {
    Ok(match v.trim() {
        "none" | "0" => 0,
        "read" => ON_READ,
        "write" => ON_WRITE,
        "io" => ON_READ | ON_WRITE,
        "verify" => ON_VERIFY,
        "all" | "1" => ON_READ | ON_WRITE | ON_VERIFY,
        _ => {
            return Err(format!(
                "`{v}` (none, read, write, io, verify, all, 0 or 1)"
            ))
        }
    })
}

/// fio's `set_cpus_allowed`: `N`, `A-B` ranges and `,` between; each CPU below the
/// number this machine has configured (`max`), as fio's "CPU N too large".
pub fn cpu_list(v: &str, max: usize) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in v.trim().split(',') {
        let part = part.trim();
        if part.is_empty() {
            break;
        }
        let num = |t: &str| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| format!("`{t}` is not a CPU number (`0,5,8-15`)"))
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(part)?, num(part)?),
        };
        for c in lo..=hi {
            if c >= max {
                return Err(format!("CPU {c} too large (max={})", max.saturating_sub(1)));
            }
            out.push(c);
        }
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return Err(format!("`{v}` names no CPU"));
    }
    Ok(out)
}

/// The CPUs this machine has configured (fio's `cpus_configured`).
pub fn cpus_configured() -> usize {
    // SAFETY: sysconf reads a constant of the system.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    n.max(1) as usize
}

fn flag(o: &Opt) -> Result<bool, String> {
    match o.value.as_deref() {
        None => Ok(true),
        Some(v) => value::boolean(v),
    }
}

fn int_in(o: &Opt, lo: i64, hi: i64) -> Result<i64, String> {
    let v = o.value.as_deref().ok_or("needs a value")?.trim();
    let n: i64 = v
        .parse()
        .map_err(|_| format!("`{v}` is not a whole number"))?;
    if n < lo || n > hi {
        return Err(format!("{n} ({lo} to {hi})"));
    }
    Ok(n)
}

/// Read one run option into `c`; `None` when `key` is not one.
pub fn apply(c: &mut JobCtl, key: &str, o: &Opt, kb: u64) -> Option<Result<(), String>> {
    let need = || {
        o.value
            .as_deref()
            .ok_or_else(|| "needs a value".to_string())
    };
    let r = match key {
        "refill_buffers" => flag(o).map(|v| c.refill = Some(v)),
        "gtod_reduce" => flag(o).map(|v| {
            // fio's str_gtod_reduce_cb: only `1` changes anything.
            if v {
                (c.no_lat, c.no_clat, c.no_slat, c.no_bw) = (true, true, true, true);
                c.gtod_reduce = true;
            }
        }),
        "disable_lat" => flag(o).map(|v| c.no_lat = v),
        "disable_clat" => flag(o).map(|v| c.no_clat = v),
        "disable_slat" => flag(o).map(|v| c.no_slat = v),
        "disable_bw_measurement" | "disable_bw" => flag(o).map(|v| c.no_bw = v),
        "exitall" => flag(o).map(|v| c.exitall = v),
        "continue_on_error" => need().and_then(continue_on).map(|v| c.continue_on = v),
        "iodepth_low" => need()
            .and_then(|v| value::int(v, kb))
            .map(|v| c.depth_low = v.min(16384) as u32),
        "ioscheduler" => need().map(|v| c.ioscheduler = Some(v.trim().to_string())),
        "cpus_allowed" => need()
            .and_then(|v| cpu_list(v, cpus_configured()))
            .map(|v| c.cpus = Some(v)),
        "cpus_allowed_policy" => need().and_then(|v| {
            c.cpus_split = match v {
                "shared" => false,
                "split" => true,
                _ => return Err(format!("`{v}` (shared or split)")),
            };
            Ok(())
        }),
        "nice" => int_in(o, -20, 19).map(|v| c.nice = v as i32),
        "prio" => int_in(o, 0, 7).map(|v| c.prio = Some(v as u32)),
        "prioclass" => int_in(o, 0, 3).map(|v| c.prioclass = Some(v as u32)),
        "verify_only" => flag(o).map(|v| c.verify_only = v),
        "verify_dump" => flag(o).map(|v| c.verify_dump = v),
        "verify_async" => int_in(o, 0, 1024).map(|v| c.verify_async = v as u32),
        // fio saves a binary state at a writing verify job's end (for `--trigger` crash
        // tests) and can load it; fsbench does neither: saying so is what it does.
        "verify_state_save" | "verify_state_load" => flag(o).and_then(|v| {
            if v {
                Err(format!("fsbench neither saves nor loads fio's verify state file (fio's crash tests with --trigger); `{key}=0` is what it does"))
            } else {
                Ok(())
            }
        }),
        "verify_backlog_batch" => need()
            .and_then(|v| value::int(v, kb))
            .map(|v| c.verify_batch = v),
        _ => return None,
    };
    Some(r)
}

impl JobCtl {
    /// The I/O priority value fio's `ioprio_value` makes of `prioclass` and `prio` (no
    /// class: best effort), when either is given.
    pub fn ioprio(&self) -> Option<(u32, u32)> {
        if self.prio.is_none() && self.prioclass.is_none() {
            return None;
        }
        let class = match self.prioclass.unwrap_or(0) {
            0 => 2,
            c => c,
        };
        Some((class, self.prio.unwrap_or(0)))
    }

    /// fio's `fio_cpus_split`: clone `index` (its `thread_number - 1`) gets the one CPU
    /// at that place in the set, round robin; with `shared`, the whole set.
    pub fn cpus_of(&self, index: usize) -> Vec<usize> {
        match &self.cpus {
            None => Vec::new(),
            Some(set) if self.cpus_split => vec![set[index % set.len()]],
            Some(set) => set.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_as_fio_reads_them() {
        assert_eq!(cpu_list("0,5,8-10", 16).unwrap(), vec![0, 5, 8, 9, 10]);
        assert_eq!(cpu_list("1-1, 0", 2).unwrap(), vec![0, 1]);
        assert!(cpu_list("4", 2)
            .unwrap_err()
            .contains("CPU 4 too large (max=1)"));
        assert!(cpu_list("x", 2).is_err());
        let c = JobCtl {
            cpus: Some(vec![1, 3]),
            cpus_split: true,
            ..Default::default()
        };
        assert_eq!(c.cpus_of(0), vec![1]);
        assert_eq!(c.cpus_of(3), vec![3]);
    }

    #[test]
    fn io_priorities_are_fios_values() {
        let mut c = JobCtl::default();
        assert_eq!(c.ioprio(), None);
        c.prio = Some(4);
        assert_eq!(c.ioprio(), Some((2, 4)));
        c.prioclass = Some(3);
        assert_eq!(c.ioprio(), Some((3, 4)));
        assert_eq!(continue_on("io").unwrap(), ON_READ | ON_WRITE);
        assert!(continue_on("some").is_err());
    }
}
