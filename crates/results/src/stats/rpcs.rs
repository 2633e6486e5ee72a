//! A flowop's NFS calls per procedure (`--nfs-rpcs`, or a dialled network: the relay of
//! [`fsbench_base::libnfs::relay`] counted them), as a recorder keeps them and as results show
//! them.

use super::OpRecorder;
use fsbench_base::libnfs::rpc::{self, ProcCount, Table, NPROCS};
use serde::{Deserialize, Serialize};

/// One procedure's calls made by a flowop.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct RpcResult {
    /// NFSv3's name (GETATTR, LOOKUP, READ, WRITE, CREATE ...), or MOUNT.MNT and the like.
    pub procedure: String,
    pub calls: u64,
    /// Calls per operation of the flowop.
    pub per_op: f64,
    /// Mean time from the call reaching the relay to its reply leaving it, microseconds
    /// (the dialled network's delays included).
    pub mean_us: f64,
    /// Their total time, seconds.
    pub time_s: f64,
    /// Bytes of calls and replies (RPC record marks included).
    pub bytes: u64,
}

impl OpRecorder {
    /// Add the calls of a relay's table.
    pub fn add_rpcs(&mut self, t: &Table) {
        if t.iter().all(|p| p.calls == 0) {
            return;
        }
        if self.rpcs.is_empty() {
            self.rpcs = vec![ProcCount::default(); NPROCS];
        }
        for (a, b) in self.rpcs.iter_mut().zip(t) {
            a.add(b);
        }
    }

    /// Add the calls of another recorder (merging threads).
    pub(super) fn merge_rpcs(&mut self, o: &[ProcCount]) {
        if let Ok(t) = <&Table>::try_from(o) {
            self.add_rpcs(t);
        }
    }

    /// Add the calls of a result row (merging ranks or repetitions).
    pub fn add_rpc_results(&mut self, rows: &[RpcResult]) {
        let mut t = [ProcCount::default(); NPROCS];
        for r in rows {
            let id = rpc::id_of(&r.procedure).unwrap_or(NPROCS - 1);
            t[id].add(&ProcCount {
                calls: r.calls,
                ns: (r.time_s * 1e9).round() as u64,
                bytes: r.bytes,
            });
        }
        self.add_rpcs(&t);
    }
}

/// The procedures a flowop called, most called first, for `ops` operations.
pub fn results(counts: &[ProcCount], ops: u64) -> Vec<RpcResult> {
    let mut v: Vec<RpcResult> = (counts.iter().enumerate())
        .filter(|(_, c)| c.calls > 0)
        .map(|(i, c)| RpcResult {
            procedure: rpc::PROCS[i].to_string(),
            calls: c.calls,
            per_op: if ops > 0 {
                c.calls as f64 / ops as f64
            } else {
                0.0
            },
            mean_us: c.ns as f64 / c.calls as f64 / 1e3,
            time_s: c.ns as f64 / 1e9,
            bytes: c.bytes,
        })
        .collect();
    v.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.procedure.cmp(&b.procedure)));
    v
}

/// The calls of `rows` (one flowop over ranks or repetitions) summed, for `ops` operations.
pub fn combine(rows: &[&[RpcResult]], ops: u64) -> Vec<RpcResult> {
    let mut o = OpRecorder::default();
    for r in rows {
        o.add_rpc_results(r);
    }
    results(&o.rpcs, ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_merge_and_read_back() {
        let mut t = [ProcCount::default(); NPROCS];
        t[8] = ProcCount {
            calls: 4,
            ns: 4_000_000,
            bytes: 800,
        };
        t[1] = ProcCount {
            calls: 8,
            ns: 800_000,
            bytes: 900,
        };
        let mut a = OpRecorder::default();
        a.add_rpcs(&t);
        let mut b = OpRecorder::default();
        b.merge_rpcs(&a.rpcs);
        b.merge_rpcs(&a.rpcs);
        let r = results(&b.rpcs, 8);
        assert_eq!(r[0].procedure, "GETATTR");
        assert_eq!((r[0].calls, r[0].per_op), (16, 2.0));
        assert_eq!((r[1].procedure.as_str(), r[1].mean_us), ("CREATE", 1000.0));
        let back = combine(&[&r, &r], 16);
        assert_eq!(back[1].calls, 16);
        assert_eq!(back[1].bytes, 3200);
        assert!(results(&OpRecorder::default().rpcs, 1).is_empty());
    }
}
