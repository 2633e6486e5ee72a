//! The state directory of a simulated remote file system and the files in it.
//!
//! `$FSBENCH_REMOTE_STATE_DIR/NAME/` (default `/run/fsbench/remotes/NAME/`) holds:
//!
//! | file              | written by | content                                            |
//! |-------------------|------------|----------------------------------------------------|
//! | `config.json`     | create     | [`RemoteConfig`]: server tree, mount, network      |
//! | `lookaside.json`  | create     | the lookaside index: (size, hash) of local files   |
//! | `server.pid`      | server     | the server's pid while it runs                     |
//! | `ready.json`      | server     | [`Ready`], once the file system is mounted         |
//! | `stats.json`      | server     | [`RemoteStats`], rewritten every second and at exit |
//! | `stats.base.json` | stats      | the statistics at the last `stats --reset`         |
//! | `server.log`      | server     | its stdout/stderr                                  |
//! | `cache/`          | server     | the client cache (whole-file copies)               |

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use fsbench_base::daemon::owned::MountRecord;
use fsbench_base::daemon::state::read_json;
use fsbench_base::daemon::{DaemonDir, Kind, Summary};

use super::model::Net;

/// Simulated remotes among fsbench's daemons.
pub const KIND: Kind = Kind {
    word: "remote",
    plural: "simulated remotes",
    env: "FSBENCH_REMOTE_STATE_DIR",
    default_root: "/run/fsbench/remotes",
    root_needs: "FUSE mount",
};

/// How the client moves file data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// AFS-like: the first open fetches the whole file, close sends a written file back.
    WholeFile,
    /// NFS-like: reads and writes in 64 KiB chunks, each one a round trip.
    Block,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::WholeFile => "whole-file",
            Protocol::Block => "block",
        }
    }
}

/// Paths of one remote's state.
#[derive(Debug, Clone)]
pub struct StateDir(DaemonDir);

impl std::ops::Deref for StateDir {
    type Target = DaemonDir;
    fn deref(&self) -> &DaemonDir {
        &self.0
    }
}

impl StateDir {
    pub fn new(name: &str) -> anyhow::Result<StateDir> {
        KIND.dir(name).map(StateDir)
    }
    pub fn lookaside(&self) -> PathBuf {
        self.dir.join("lookaside.json")
    }
    pub fn stats_base(&self) -> PathBuf {
        self.dir.join("stats.base.json")
    }
    /// A request to the running server ([`Control`]), signalled with SIGUSR1.
    pub fn control(&self) -> PathBuf {
        self.dir.join("control.json")
    }
    /// The server's answer: the `seq` of the last request it carried out.
    pub fn control_ack(&self) -> PathBuf {
        self.dir.join("control.ack")
    }
    pub fn cache(&self) -> PathBuf {
        self.dir.join("cache")
    }
    pub fn read_config(&self) -> anyhow::Result<RemoteConfig> {
        read_json(&self.config())
    }
    pub fn read_stats(&self) -> Option<RemoteStats> {
        read_json(&self.stats()).ok()
    }
    pub fn read_ready(&self) -> Option<Ready> {
        read_json(&self.ready()).ok()
    }
}

/// What `remote create` decided; the server reads it at start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RemoteConfig {
    pub name: String,
    /// The tree served (canonical).
    pub server: PathBuf,
    /// Where the file system is mounted (canonical).
    pub mount: PathBuf,
    pub net: Net,
    /// The preset the network parameters started from, if any.
    pub preset: Option<String>,
    pub protocol: Protocol,
    /// Client cache budget, bytes.
    pub cache_size: u64,
    /// Lookaside trees indexed at create time.
    pub lookaside: Vec<PathBuf>,
    pub writable: bool,
    /// Seed of the jitter and loss draws.
    #[serde(default)]
    pub seed: u64,
}

/// A request to a running server: write the statistics now, and optionally empty the
/// client's caches, take a new network, reload the lookaside index.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Control {
    /// Answered by writing it to `control.ack` once done.
    pub seq: u64,
    /// Empty the client's caches (files or chunks not open, names, attributes, listings).
    #[serde(default)]
    pub drop_cache: bool,
    /// The network from now on.
    #[serde(default)]
    pub net: Option<Net>,
    /// Read `lookaside.json` again.
    #[serde(default)]
    pub reload_lookaside: bool,
}

/// Written by the server once the file system is mounted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ready {
    pub pid: i32,
    /// The FUSE mount the server made, as /proc/self/mountinfo listed it then: only that
    /// mount is ever unmounted at the mount point.
    #[serde(default)]
    pub mount: Option<MountRecord>,
}

/// One file of a lookaside tree.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LookasideEntry {
    pub path: PathBuf,
    pub size: u64,
    pub mtime_ns: i128,
    /// BLAKE3, hexadecimal.
    pub hash: String,
}

/// Counters of a remote, written by the server. Times in seconds unless named `_us`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RemoteStats {
    pub uptime_s: f64,
    /// FUSE requests received, all types.
    pub requests: u64,
    /// FUSE requests by type (lookup, getattr, readdir, open, read, write...).
    pub requests_by_type: BTreeMap<String, u64>,
    /// Round trips charged by the model.
    pub round_trips: u64,
    /// File data moved from the server to the client over the modelled network.
    pub bytes_fetched: u64,
    /// File data moved from the client to the server over the modelled network.
    pub bytes_sent: u64,
    pub lookaside_hits: u64,
    pub lookaside_misses: u64,
    /// File data copied from lookaside trees instead of fetched.
    pub lookaside_bytes: u64,
    /// Requests lost and sent again (`--loss`).
    #[serde(default)]
    pub lost_requests: u64,
    /// Times the client cache was emptied (`stats --reset`, `set --drop-cache`, cold runs).
    #[serde(default)]
    pub cache_drops: u64,
    /// Metadata requests answered from the client's attribute cache.
    pub attr_cache_hits: u64,
    /// Whole-file opens served by a valid cached copy / that fetched the file.
    pub file_cache_hits: u64,
    pub file_cache_misses: u64,
    /// Block protocol chunks found in / missing from the client cache.
    pub chunk_cache_hits: u64,
    pub chunk_cache_misses: u64,
    /// Cache entries (files or chunks) evicted to stay within the cache size.
    pub cache_evictions: u64,
    /// Bytes the client cache holds now.
    pub cache_bytes: u64,
    /// Replies the model delayed, and the sum of their modelled delays: the time
    /// requests spent waiting on the modelled network.
    pub delayed_replies: u64,
    pub network_wait_s: f64,
    /// Sum of the delayed replies' lateness past their modelled time.
    pub late_sum_s: f64,
    /// Reply lateness per delayed reply, us.
    pub late_us: Summary,
    /// The lateness histogram as (value in us, count) pairs of its non-empty buckets.
    pub late_hist_us: Vec<(u64, u64)>,
    /// How the reply path is scheduled: "SCHED_FIFO priority N" or why not.
    pub scheduling: String,
    pub memory_locked: String,
}

/// Lateness of the replies in a stretch of statistics.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Lateness {
    pub mean_us: f64,
    pub p99_us: f64,
    /// Mean lateness as a percentage of the mean modelled delay.
    pub pct: f64,
}

/// Above this share of the mean modelled delay, `stats` warns (as the disk does).
pub const WARN_PCT: f64 = 5.0;

impl RemoteStats {
    /// The counters accumulated since `base` (a `stats --reset` snapshot).
    pub fn since(&self, base: &RemoteStats) -> RemoteStats {
        let mut s = self.clone();
        s.requests = s.requests.saturating_sub(base.requests);
        for (k, v) in s.requests_by_type.iter_mut() {
            *v = v.saturating_sub(*base.requests_by_type.get(k).unwrap_or(&0));
        }
        s.requests_by_type.retain(|_, v| *v > 0);
        macro_rules! sub {
            ($($f:ident),*) => { $( s.$f = s.$f.saturating_sub(base.$f); )* };
        }
        sub!(
            round_trips,
            bytes_fetched,
            bytes_sent,
            lookaside_hits,
            lookaside_misses,
            lookaside_bytes,
            lost_requests,
            cache_drops,
            attr_cache_hits,
            file_cache_hits,
            file_cache_misses,
            chunk_cache_hits,
            chunk_cache_misses,
            cache_evictions,
            delayed_replies
        );
        s.network_wait_s = (s.network_wait_s - base.network_wait_s).max(0.0);
        s.late_sum_s = (s.late_sum_s - base.late_sum_s).max(0.0);
        let mut diff = Vec::with_capacity(s.late_hist_us.len());
        for &(v, c) in &s.late_hist_us {
            let prev = base
                .late_hist_us
                .iter()
                .find(|(bv, _)| *bv == v)
                .map(|(_, c)| *c)
                .unwrap_or(0);
            if c > prev {
                diff.push((v, c - prev));
            }
        }
        s.late_hist_us = diff;
        s.late_us = Summary {
            mean: if s.delayed_replies > 0 {
                s.late_sum_s / s.delayed_replies as f64 * 1e6
            } else {
                0.0
            },
            p50: quantile(&s.late_hist_us, 0.5),
            p90: quantile(&s.late_hist_us, 0.9),
            p99: quantile(&s.late_hist_us, 0.99),
            max: s.late_hist_us.last().map(|(v, _)| *v as f64).unwrap_or(0.0),
        };
        s
    }

    /// Reply lateness against the model: mean, p99, and the mean as a share of
    /// the mean modelled delay.
    pub fn lateness(&self) -> Lateness {
        if self.delayed_replies == 0 {
            return Lateness::default();
        }
        let mean_delay_us = self.network_wait_s / self.delayed_replies as f64 * 1e6;
        let mean_us = self.late_sum_s / self.delayed_replies as f64 * 1e6;
        Lateness {
            mean_us,
            p99_us: self.late_us.p99,
            pct: if mean_delay_us > 0.0 {
                100.0 * mean_us / mean_delay_us
            } else {
                0.0
            },
        }
    }
}

/// The `q` quantile of a (value, count) histogram sorted by value.
fn quantile(hist: &[(u64, u64)], q: f64) -> f64 {
    let total: u64 = hist.iter().map(|(_, c)| c).sum();
    if total == 0 {
        return 0.0;
    }
    let want = ((total as f64 * q).ceil() as u64).max(1);
    let mut seen = 0;
    for &(v, c) in hist {
        seen += c;
        if seen >= want {
            return v as f64;
        }
    }
    hist.last().map(|(v, _)| *v as f64).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_subtracts_the_baseline() {
        let base = RemoteStats {
            requests: 10,
            round_trips: 4,
            bytes_fetched: 100,
            delayed_replies: 4,
            network_wait_s: 0.4,
            late_sum_s: 0.0004,
            late_hist_us: vec![(100, 4)],
            requests_by_type: [("lookup".to_string(), 10)].into_iter().collect(),
            ..Default::default()
        };
        let now = RemoteStats {
            requests: 15,
            round_trips: 6,
            bytes_fetched: 300,
            delayed_replies: 6,
            network_wait_s: 0.6,
            late_sum_s: 0.0006,
            late_hist_us: vec![(100, 6)],
            requests_by_type: [("lookup".to_string(), 12), ("open".to_string(), 3)]
                .into_iter()
                .collect(),
            ..Default::default()
        };
        let d = now.since(&base);
        assert_eq!(d.requests, 5);
        assert_eq!(d.round_trips, 2);
        assert_eq!(d.bytes_fetched, 200);
        assert_eq!(d.requests_by_type["lookup"], 2);
        assert_eq!(d.requests_by_type["open"], 3);
        let l = d.lateness();
        assert!((l.mean_us - 100.0).abs() < 1e-6);
        assert_eq!(l.p99_us, 100.0);
        assert!((l.pct - 0.1).abs() < 1e-9);
    }
}
