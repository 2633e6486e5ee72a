//! The network model of the simulated remote file system: a round-trip time and
//! one link of fixed bandwidth shared by every transfer in FIFO order.
//!
//! Pure arithmetic on modelled times (seconds since the server started), so it
//! is unit-tested here and the server only asks it when a reply is due.

use serde::{Deserialize, Serialize};

/// Size of a block-protocol transfer unit and client-cache chunk.
pub const CHUNK: u64 = 64 * 1024;

/// How long the client trusts cached attributes and names (NFS's `acregmin`-like
/// window), seconds.
pub const ATTR_TTL: f64 = 3.0;

/// Network parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Net {
    /// Link bandwidth, bits per second.
    pub bandwidth_bps: f64,
    /// Round-trip time, seconds.
    pub rtt_s: f64,
    /// Each round trip varies uniformly by up to this much either way (never below zero),
    /// seconds; as netem's `delay RTT JITTER`.
    #[serde(default)]
    pub jitter_s: f64,
    /// Probability that a request or its reply is lost: it is sent again after a
    /// retransmission timeout (see [`Net::rto`]), doubled at each further loss.
    #[serde(default)]
    pub loss: f64,
}

/// Presets: name, bandwidth (bit/s), round-trip time (s). docs/remote.md says
/// why these round-trip times go with these bandwidths.
pub const PRESETS: [(&str, f64, f64); 4] = [
    ("100mbit", 100e6, 0.001),
    ("10mbit", 10e6, 0.010),
    ("1mbit", 1e6, 0.050),
    ("100kbit", 100e3, 0.300),
];

/// The preset used when neither `--preset` nor both of `--bandwidth`/`--rtt` are given.
pub const DEFAULT_PRESET: &str = "10mbit";

impl Net {
    pub fn preset(name: &str) -> Option<Net> {
        PRESETS
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|&(_, bandwidth_bps, rtt_s)| Net {
                bandwidth_bps,
                rtt_s,
                jitter_s: 0.0,
                loss: 0.0,
            })
    }

    /// The first retransmission timeout: twice the round trip, at least 200 ms (TCP's
    /// minimum on Linux).
    pub fn rto(&self) -> f64 {
        (2.0 * self.rtt_s).max(0.2)
    }

    /// One round trip's duration and how many times it was lost, from `u` uniform draws
    /// in [0, 1): the first decides each loss in turn, the next the jitter.
    pub fn round_trip(&self, mut draw: impl FnMut() -> f64) -> (f64, u32) {
        let mut wait = 0.0;
        let mut lost = 0u32;
        let mut rto = self.rto();
        // At most 8 losses in a row (a 1.0 loss would never deliver).
        while self.loss > 0.0 && lost < 8 && draw() < self.loss {
            wait += rto;
            rto *= 2.0;
            lost += 1;
        }
        let jitter = if self.jitter_s > 0.0 {
            (draw() * 2.0 - 1.0) * self.jitter_s
        } else {
            0.0
        };
        (wait + (self.rtt_s + jitter).max(0.0), lost)
    }

    /// Seconds to move `bytes` over the link alone.
    pub fn wire_time(&self, bytes: u64) -> f64 {
        bytes as f64 * 8.0 / self.bandwidth_bps
    }
}

/// The single modelled link: transfers go in FIFO order, each one starting when
/// both it has been issued and the previous transfer has finished.
#[derive(Debug, Clone, Default)]
pub struct Link {
    /// Modelled time at which the link is next free.
    pub free_at: f64,
}

impl Link {
    /// Put `bytes` on the link at `now`; returns when the last byte has crossed:
    /// `max(now, free_at) + bytes / bandwidth`.
    pub fn transfer(&mut self, net: &Net, now: f64, bytes: u64) -> f64 {
        let start = now.max(self.free_at);
        let end = start + net.wire_time(bytes);
        self.free_at = end;
        end
    }

    /// A request moving `bytes` of data issued at `now`: the data crosses the
    /// link, plus one round trip (`rtt`, as drawn) for the request and its answer.
    /// Returns when the reply reaches the client.
    pub fn data_request(&mut self, net: &Net, now: f64, bytes: u64, rtt: f64) -> f64 {
        self.transfer(net, now, bytes) + rtt
    }
}

/// Parse a loss share: "0.01", "1%".
pub fn parse_loss(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("loss {s:?}: expected a share such as 0.01 or 1%"))?;
    if !(0.0..1.0).contains(&v) {
        return Err(format!("loss {s:?}: must be at least 0 and below 1 (100%)"));
    }
    Ok(v)
}

/// "10 Mbit/s, RTT 20 ms".
pub fn describe_net(n: &Net) -> String {
    let mut s = format!(
        "{}, RTT {} ms",
        fsbench_base::units::human_bps(n.bandwidth_bps),
        n.rtt_s * 1e3
    );
    if n.jitter_s > 0.0 {
        s.push_str(&format!(" ± {} ms", n.jitter_s * 1e3));
    }
    if n.loss > 0.0 {
        s.push_str(&format!(", {}% loss", n.loss * 100.0));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_exist() {
        for (name, bw, rtt) in PRESETS {
            let n = Net::preset(name).unwrap();
            assert_eq!(n.bandwidth_bps, bw);
            assert_eq!(n.rtt_s, rtt);
        }
        assert!(Net::preset(DEFAULT_PRESET).is_some());
        assert!(Net::preset("56k").is_none());
    }

    #[test]
    fn one_transfer_costs_rtt_plus_size_over_bandwidth() {
        let net = Net {
            jitter_s: 0.0,
            loss: 0.0,
            bandwidth_bps: 10e6,
            rtt_s: 0.02,
        };
        let mut link = Link::default();
        let done = link.data_request(&net, 1.0, 2 << 20, net.rtt_s);
        let want = 1.0 + 0.02 + (2u64 << 20) as f64 * 8.0 / 10e6;
        assert!((done - want).abs() < 1e-12, "{done} vs {want}");
    }

    #[test]
    fn concurrent_transfers_share_the_link_in_fifo_order() {
        let net = Net {
            jitter_s: 0.0,
            loss: 0.0,
            bandwidth_bps: 8e6, // 1 MB/s
            rtt_s: 0.0,
        };
        let mut link = Link::default();
        // Two 1 MB transfers issued together: the second waits for the first.
        let a = link.transfer(&net, 0.0, 1_000_000);
        let b = link.transfer(&net, 0.0, 1_000_000);
        assert!((a - 1.0).abs() < 1e-12);
        assert!((b - 2.0).abs() < 1e-12);
        // One issued after the link went idle starts at once.
        let c = link.transfer(&net, 5.0, 500_000);
        assert!((c - 5.5).abs() < 1e-12);
    }

    #[test]
    fn jitter_and_loss_follow_the_draws() {
        let net = Net {
            bandwidth_bps: 1e6,
            rtt_s: 0.05,
            jitter_s: 0.01,
            loss: 0.5,
        };
        assert_eq!(net.rto(), 0.2);
        // Not lost (0.7 >= 0.5), jitter draw 0.75: +0.005.
        let mut d = [0.7, 0.75].into_iter();
        let (t, lost) = net.round_trip(|| d.next().unwrap());
        assert_eq!(lost, 0);
        assert!((t - 0.055).abs() < 1e-12, "{t}");
        // Lost twice (0.1, 0.2 < 0.5): 0.2 + 0.4 of timeouts, then jitter draw 0: -0.01.
        let mut d = [0.1, 0.2, 0.9, 0.0].into_iter();
        let (t, lost) = net.round_trip(|| d.next().unwrap());
        assert_eq!(lost, 2);
        assert!((t - (0.6 + 0.04)).abs() < 1e-12, "{t}");
        // A long round trip's timeout is twice it; jitter never makes it negative.
        let slow = Net {
            rtt_s: 0.3,
            jitter_s: 1.0,
            loss: 0.0,
            ..net
        };
        assert_eq!(slow.rto(), 0.6);
        assert_eq!(slow.round_trip(|| 0.0), (0.0, 0));
        assert_eq!(parse_loss("1%"), Ok(0.01));
        assert_eq!(parse_loss("0.25"), Ok(0.25));
        assert!(parse_loss("100%").is_err());
        assert!(parse_loss("-0.1").is_err());
    }
}
