//! The simulated disk's reply lateness during one run.
//!
//! A run on a simulated disk measures the model only as well as the server keeps to the
//! model's times: a reply sent late (the server was not scheduled in time) adds to what the
//! run measures. So a run whose directory lies on a simulated disk reads the server's
//! statistics before and after, and records the lateness of the replies in between: the
//! mean from the cumulative sum, the percentiles from the difference of the two histograms.

use super::state::{self, DiskStats, StateDir};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Above this share of the mean modelled service time, a run warns that its figures include
/// the server's own delays.
pub const WARN_PCT: f64 = 5.0;

/// Seconds a run usually waits after its end for the server's statistics that include it:
/// the server writes them at once when asked (SIGUSR1), so this is a signal's and a file's
/// round trip (what estimates count).
pub const STATS_WAIT_S: f64 = 0.05;
/// Seconds a run waits at most for them: a loaded machine delays the server's write. (A
/// server of an older fsbench, which cannot be asked, writes them every second while busy
/// and a second after going idle.)
pub const STATS_DEADLINE_S: f64 = 5.0;

/// Lateness of the replies between two statistics snapshots.
#[derive(Debug, Clone, PartialEq)]
pub struct Lateness {
    pub requests: u64,
    pub service_mean_us: f64,
    pub late_mean_us: f64,
    pub late_p99_us: f64,
    /// Mean lateness as a percentage of the mean modelled service time.
    pub pct: f64,
}

/// Lateness of the requests served between `before` and `after` (None when there were none).
pub fn between(before: &DiskStats, after: &DiskStats) -> Option<Lateness> {
    let n = after.requests.checked_sub(before.requests)?;
    if n == 0 {
        return None;
    }
    let service_mean_us = (after.busy_s - before.busy_s) / n as f64 * 1e6;
    let late_mean_us = (after.server_late_sum_s - before.server_late_sum_s) / n as f64 * 1e6;
    // Bucket-wise difference of the two histograms, then the 99th percentile of it.
    let mut diff: Vec<(u64, u64)> = Vec::with_capacity(after.server_late_hist_us.len());
    let mut b = before.server_late_hist_us.iter().peekable();
    for &(v, c) in &after.server_late_hist_us {
        let mut prev = 0;
        while let Some(&&(bv, bc)) = b.peek() {
            if bv < v {
                b.next();
            } else {
                if bv == v {
                    prev = bc;
                    b.next();
                }
                break;
            }
        }
        if c > prev {
            diff.push((v, c - prev));
        }
    }
    let total: u64 = diff.iter().map(|(_, c)| c).sum();
    let want = (total as f64 * 0.99).ceil() as u64;
    let mut seen = 0;
    let mut late_p99_us = 0.0;
    for (v, c) in diff {
        seen += c;
        if seen >= want {
            late_p99_us = v as f64;
            break;
        }
    }
    Some(Lateness {
        requests: n,
        service_mean_us,
        late_mean_us,
        late_p99_us,
        pct: if service_mean_us > 0.0 {
            late_mean_us / service_mean_us * 100.0
        } else {
            0.0
        },
    })
}

/// The disk's statistics as of now, with every request replied to so far: the server is
/// asked to write them at once (SIGUSR1) and waited for, at most [`STATS_DEADLINE_S`]. A
/// server of an older fsbench cannot be asked (the signal would end it): its last
/// statistics, or with `wait_old` the first it writes after now (it writes every second
/// while busy and a second after going idle).
pub fn stats_now(sd: &StateDir, wait_old: bool) -> Option<DiskStats> {
    use fsbench_base::daemon::process::{ask, wait_until, Asked};
    use std::time::{Duration, SystemTime};
    let now = SystemTime::now();
    let within = Duration::from_secs_f64(STATS_DEADLINE_S);
    let askable = sd.read_ready().is_some_and(|r| r.stats_on_request);
    if let Some(pid) = sd.live_pid().filter(|_| askable) {
        let seen = sd.read_stats().map_or(0, |s| s.written_on_request);
        let written = || sd.read_stats().is_some_and(|s| s.written_on_request > seen);
        // Not sent to a server of another user (a run that is not root, on a root's disk):
        // then as an older server's.
        if ask(pid, libc::SIGUSR1, within, written) != Asked::NotSent {
            return sd.read_stats();
        }
    }
    if wait_old {
        let stats = sd.stats();
        let written =
            || (std::fs::metadata(&stats).and_then(|m| m.modified())).is_ok_and(|t| t > now);
        wait_until(within, Duration::from_millis(50), written);
    }
    sd.read_stats()
}

/// A simulated disk under a run directory, with its statistics when the run started.
pub struct Probe {
    pub name: String,
    sd: StateDir,
    before: DiskStats,
}

impl Probe {
    /// The simulated disk holding `path`, if any: the device of the path's file system is
    /// the loop device a running disk server reported.
    pub fn start(path: &Path) -> Option<Probe> {
        let dev = std::fs::metadata(path).ok()?.dev();
        let entries = std::fs::read_dir(state::KIND.state_root()).ok()?;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(sd) = StateDir::new(&name) else {
                continue;
            };
            let Some(ready) = sd.read_ready() else {
                continue;
            };
            if sd.live_pid().is_none() {
                continue;
            }
            let Ok(m) = std::fs::metadata(&ready.device) else {
                continue;
            };
            if m.rdev() == dev {
                let before = stats_now(&sd, false).unwrap_or_default();
                return Some(Probe { name, sd, before });
            }
        }
        None
    }

    /// The lateness since `start`, from statistics the server wrote after the run's end
    /// ([`stats_now`]; a fixed wait of 1.1 s had read the statistics from before a short
    /// run's requests on a loaded machine, and the run was left without its record).
    pub fn finish(&self) -> Option<(Lateness, DiskStats)> {
        let after = stats_now(&self.sd, true)?;
        between(&self.before, &after).map(|l| (l, after))
    }

    /// Finish the probe: the lateness as a result field, its note added to `notes`, and a
    /// warning printed when it is above [`WARN_PCT`]. None when no request was served.
    pub fn record(&self, notes: &mut Vec<String>) -> Option<fsbench_results::stats::DiskLateness> {
        let (l, after) = self.finish()?;
        let (note, warn) = self.describe(&l, &after);
        if let Some(w) = warn {
            fsbench_base::errln!("fsbench: warning: {w}");
        }
        notes.push(note);
        Some(fsbench_results::stats::DiskLateness {
            name: self.name.clone(),
            requests: l.requests,
            service_mean_us: l.service_mean_us,
            late_mean_us: l.late_mean_us,
            late_p99_us: l.late_p99_us,
            late_pct: l.pct,
            scheduling: after.scheduling.clone(),
        })
    }

    /// The run's note, and a warning when the lateness is above [`WARN_PCT`].
    pub fn describe(&self, l: &Lateness, after: &DiskStats) -> (String, Option<String>) {
        let note = format!(
            "simulated disk {}: {} requests during the run, mean modelled service {:.0} us, reply lateness mean {:.1} us, p99 {:.0} us ({:.2}% of the mean service time); server {}, memory {}",
            self.name,
            l.requests,
            l.service_mean_us,
            l.late_mean_us,
            l.late_p99_us,
            l.pct,
            if after.scheduling.is_empty() { "scheduling unknown" } else { &after.scheduling },
            if after.memory_locked.is_empty() { "unknown" } else { &after.memory_locked },
        );
        let warn = (l.pct > WARN_PCT).then(|| {
            format!(
                "the simulated disk {} replied {:.1}% of the mean service time late on average (more than {WARN_PCT}%): the results include the server's own delays; reduce the CPU load on this machine{}",
                self.name,
                l.pct,
                if after.scheduling.starts_with("SCHED_FIFO") { "" } else { " or run the disk server as root (real-time scheduling)" }
            )
        });
        (note, warn)
    }
}

impl fsbench_engine::engine::hooks::Probe for Probe {
    fn record(&self, r: &mut fsbench_results::stats::Results) {
        r.disk = Probe::record(self, &mut r.notes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(req: u64, busy: f64, late: f64, hist: &[(u64, u64)]) -> DiskStats {
        DiskStats {
            requests: req,
            busy_s: busy,
            server_late_sum_s: late,
            server_late_hist_us: hist.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn lateness_of_a_stretch() {
        let a = stats(100, 1.0, 0.001, &[(5, 90), (100, 10)]);
        let b = stats(200, 2.0, 0.0015, &[(5, 189), (7, 1), (100, 10)]);
        let l = between(&a, &b).unwrap();
        assert_eq!(l.requests, 100);
        assert!((l.service_mean_us - 10_000.0).abs() < 1e-6);
        assert!((l.late_mean_us - 5.0).abs() < 1e-6);
        // The earlier 100 us replies are not part of this stretch.
        assert_eq!(l.late_p99_us, 5.0);
        assert!((l.pct - 0.05).abs() < 1e-9);
        assert!(between(&b, &b).is_none());
    }
}
